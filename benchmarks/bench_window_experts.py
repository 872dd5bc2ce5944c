"""``Auto()``'s forgetting experts at steady state (issue 42, "winpath"), at the default BLAS
threading: ``Auto()`` warmed on river's Friedman #1 (``d = 10``, standardized), then

- ``auto``: its CPU us/step (``predict_one`` + ``learn_one``) over the next rows, and ``KONS()``'s
  (its window of 500 full) on the same stream;
- ``window``: the step of its windowed KONS experts alone (over its shared ring: their
  ``analyse``, ``check``, ``apply``, the point stored, ``forget``), on a copy, the best of
  three passes;
- ``calls``: Python calls a step (cProfile) of ``Auto()`` and ``KONS()``.

Compare two trees by alternating them, several rounds, with the load beside each figure:
``PYTHONPATH=<tree> python -m benchmarks.bench_window_experts [--warm 20000] [--rows 3000]``.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import os
import pstats
import time


def friedman(n: int, seed: int = 1) -> list[tuple[dict, float]]:
    from river import preprocessing
    from river.datasets import synth

    scaler, rows = preprocessing.StandardScaler(), []
    for x, y in synth.Friedman(seed=seed).take(n):
        scaler.learn_one(x)
        rows.append((scaler.transform_one(x), (y - 14.4) / 5.0))
    return rows


def step_us(model, rows, calls: bool = False) -> float:
    """CPU us/step of test-then-train over ``rows`` (or Python calls a step, ``calls``)."""
    profile = cProfile.Profile() if calls else None
    if profile:
        profile.enable()
    start = time.process_time()
    for x, y in rows:
        model.predict_one(x)
        model.learn_one(x, y)
    spent = time.process_time() - start
    if profile:
        profile.disable()
        return pstats.Stats(profile).total_calls / len(rows)
    return spent / len(rows) * 1e6


def window_step_us(auto, rows) -> float:
    """The windowed experts' step alone, us/step, best of three passes on copies."""
    from okoco._blas import scipy_one_thread
    from okoco.learners import KONS
    from okoco.learners.shared import StepShared

    best = float("inf")
    for _ in range(3):
        model = copy.deepcopy(auto)
        experts = [e for e in model.experts if isinstance(e, KONS)]
        encoded = [(model._features.encode(x, arrays=False)[0], y) for x, y in rows]
        start = time.perf_counter()
        with scipy_one_thread:
            for v, y in encoded:
                shared = StepShared(v, model._points)
                analyses = [e.analyse(v, shared) for e in experts]
                steps = [e.check(y, a) for e, a in zip(experts, analyses)]
                for e, a, s in zip(experts, analyses, steps):
                    e.apply(v, a, s)
                shared.store_point()
                for e in experts:
                    e.forget()
        best = min(best, (time.perf_counter() - start) / len(encoded) * 1e6)
    return best


def main() -> None:
    from okoco.learners import KONS, Auto

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", type=int, default=20000)
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    print(f"load {os.getloadavg()}")
    rows = friedman(args.warm + args.rows)
    warm, timed = rows[: args.warm], rows[args.warm :]
    auto = Auto()
    step_us(auto, warm)
    kons = KONS()
    step_us(kons, warm[-1500:])
    window = window_step_us(auto, timed[:1500])
    calls = (step_us(copy.deepcopy(auto), timed[:500], calls=True),
             step_us(copy.deepcopy(kons), timed[:500], calls=True))
    print(f"Auto {step_us(auto, timed):.1f} us/step, KONS {step_us(kons, timed):.1f} us/step, "
          f"window experts' step {window:.1f} us; Python calls a step: Auto {calls[0]:.1f}, "
          f"KONS {calls[1]:.1f}")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
