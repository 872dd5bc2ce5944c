"""Long streams: error per block of steps, CPU per step and memory, test-then-train, defaults.

Every learner is replayed as a user runs it with no tuning (public API only): features
standardized online (okoco's ``StandardScaler``; ``--scaler river``: river's; river's for LR), raw
regression targets for ``Auto`` (it standardizes them inside) and a ``TargetStandardScaler``
around the other regressors, binary tasks through :class:`okoco.BinaryClassifier` with the
logistic loss (KRLS with its own squared loss). Streams (river ``datasets.synth``):

- ``friedman``: ``Friedman(seed=s)``, d = 10, noise N(0, 1) (Bayes MAE 0.80), stationary;
- ``rbf``: ``RandomRBF(seed_model=s, seed_sample=s, n_classes=2, n_features=10,
  n_centroids=50)``, stationary;
- ``hyperplane`` / ``hyperplane-drift``: ``Hyperplane(n_features=10, mag_change=0 / 0.001)``;
- ``sea-switch``: ``ConceptDriftStream(SEA(variant=0), SEA(variant=2), position=steps/2,
  width=max(50, steps/100))`` (river's transition overflows ``math.exp`` farther than 700
  widths from it);
- ``friedman-gra``: ``FriedmanDrift(drift_type="gra", position=(steps/3, 2 steps/3))``;
- ``friedman-shift``: covariate shift, ``Friedman(seed=s)`` whose inputs all move from ``[0, 1)``
  to ``[1, 2)`` after 30% of the steps (Friedman #1's target there, plus the generator's noise).

For each learner: the error (MAE, or the error rate) over every block of ``--block`` steps, the
whole stream's, CPU microseconds per step (``time.process_time``, the learner's predict and
learn only) and the process's resident memory at the end of each block (run one learner per
process when memory matters), and the swaps of ``Auto``'s full dictionaries.

Usage::

    python -m benchmarks.bench_long_streams --stream rbf --learners auto,krls,conkons --seeds 0
    python -m benchmarks.bench_long_streams --stream sea-switch --auto switch_rate=0  # Auto(...)
    python -m benchmarks.bench_long_streams --stream friedman-shift --dictionary 1,500,none

Run from a checkout's root (the header prints which okoco). ``--out``: the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from river import linear_model, preprocessing
from river.datasets import synth

import okoco
from benchmarks.harness import as_user, status_kb
from okoco.learners import CONKONS, KONS, KRLS, Auto, FunctionalGD, SketchedKONS


def friedman_one(x: dict) -> float:
    """Friedman #1's noiseless target at ``x`` (river's ``synth.Friedman``)."""
    return 10 * np.sin(np.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3] + 5 * x[4]


def shifted(rows, at: int):
    """``rows`` of Friedman #1 whose inputs move by +1 from step ``at`` on (the target
    recomputed at the moved inputs, the noise kept)."""
    for t, (x, y) in enumerate(rows):
        if t >= at:
            moved = {i: v + 1.0 for i, v in x.items()}
            x, y = moved, y - friedman_one(x) + friedman_one(moved)
        yield x, float(y)


#: name -> (task, the river generator of ``(steps, seed)``) (module docstring).
STREAMS = {
    "friedman": ("regression", lambda n, s: synth.Friedman(seed=s)),
    "rbf": ("binary", lambda n, s: synth.RandomRBF(seed_model=s, seed_sample=s, n_classes=2,
                                                   n_features=10, n_centroids=50)),
    "hyperplane": ("binary", lambda n, s: synth.Hyperplane(seed=s, n_features=10)),
    "hyperplane-drift": ("binary", lambda n, s: synth.Hyperplane(seed=s, n_features=10,
                                                                 mag_change=0.001)),
    "sea-switch": ("binary", lambda n, s: synth.ConceptDriftStream(
        synth.SEA(variant=0, seed=s), synth.SEA(variant=2, seed=s + 100), position=n // 2,
        width=max(50, n // 100), seed=s)),
    "friedman-gra": ("regression", lambda n, s: synth.FriedmanDrift(
        drift_type="gra", position=(n // 3, 2 * n // 3), seed=s)),
    "friedman-shift": ("regression", lambda n, s: synth.Friedman(seed=s)),
}


def stream(name: str, steps: int, seed: int):
    """The stream ``name``'s first ``steps`` rows (an iterator of ``(x, y)``)."""
    if name not in STREAMS:
        raise ValueError(f"unknown stream {name!r}; one of {', '.join(STREAMS)}")
    rows = STREAMS[name][1](steps, seed).take(steps)
    return shifted(rows, 3 * steps // 10) if name == "friedman-shift" else rows


def learner(name: str, task: str, auto: dict | None = None, scaler: str = "okoco"):
    """A learner at its defaults for ``task`` as a user builds it (``harness.as_user``)."""
    if name == "lr" and task != "regression":
        return preprocessing.StandardScaler() | linear_model.LogisticRegression()
    plain = {"conkons": CONKONS, "kons": KONS, "sketched": SketchedKONS, "fgd": FunctionalGD}
    factory = {"auto": lambda loss: Auto(loss=loss, **(auto or {})), "krls": lambda loss: KRLS(),
               "lr": lambda loss: linear_model.LinearRegression()}.get(
                   name, lambda loss: plain[name](loss=loss))
    return as_user(factory, task, own_scaling=name == "auto", scaler=scaler)


BUILT: list = []  # the SharedEmbedding objects Auto built here (the replay reports their swaps)


def set_dictionary(text: str = "") -> None:
    """Record the dictionaries ``Auto`` builds (:data:`BUILT`); from ``ALPHA,SIZE,MARGIN[,RULE]``
    (``MARGIN`` ``none``: frozen; ``RULE`` ``usage`` unless given) set ``Auto``'s DICTIONARY."""
    import okoco.learners.auto as auto_module
    from okoco.learners.embedding import SharedEmbedding

    auto_module.SharedEmbedding = lambda *a, **kw: BUILT.append(SharedEmbedding(*a, **kw)) or \
        BUILT[-1]
    if text:
        alpha, size, margin, *rule = text.split(",")
        auto_module.DICTIONARY = (float(alpha), int(size), None if margin.lower() == "none"
                                  else float(margin), rule[0] if rule else "usage")


def replay(model, task: str, rows, block: int, progress: bool = False) -> dict:
    """Test-then-train: per block of steps the error, RSS and swaps of the dictionaries the model
    built (replays run one at a time); CPU us per step (each block printed with ``progress``)."""
    errors, out, cpu, n, total = [], {"blocks": [], "rss_mib": [], "swaps": []}, 0.0, 0, 0.0
    first = len(BUILT)

    def close_block():
        for key, value in zip(out, (float(np.mean(errors)), status_kb("VmRSS") / 1024,
                                    [e.n_swaps for e in BUILT[first:]])):
            out[key].append(value)
        errors.clear()

    wall = time.perf_counter()
    for x, y in rows:
        start = time.process_time()
        pred = model.predict_one(x)
        model.learn_one(x, y)
        cpu += time.process_time() - start
        errors.append(abs(y - (pred if pred is not None else 0.0)) if task == "regression"
                      else float(pred != y))
        total, n = total + errors[-1], n + 1
        if n % block == 0:
            close_block()
            if progress:
                print(f"  step {n}: block error {out['blocks'][-1]:.4f}, CPU "
                      f"{1e6 * cpu / n:.0f} us/step, RSS {out['rss_mib'][-1]:.0f} MiB, swaps "
                      f"{out['swaps'][-1]}, wall {time.perf_counter() - wall:.0f} s", flush=True)
    if errors:
        close_block()
    return {**out, "error": total / max(n, 1), "us_per_step": 1e6 * cpu / max(n, 1),
            "wall_s": time.perf_counter() - wall, "steps": n}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stream", default="friedman", choices=list(STREAMS))
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--block", type=int, default=10_000)
    parser.add_argument("--seeds", default="0", help="comma-separated seeds")
    parser.add_argument("--learners", default="auto,krls,conkons",
                        help="comma-separated: auto, krls, conkons, kons, sketched, fgd, lr")
    parser.add_argument("--auto", default="", help="Auto's keyword arguments, comma-separated "
                        "NAME=VALUE (numbers), e.g. switch_rate=0.001")
    parser.add_argument("--dictionary", default="", help="Auto's DICTIONARY for this run, "
                        "ALPHA,SIZE,MARGIN[,RULE] (MARGIN none: frozen), e.g. 1,500,10,usage")
    parser.add_argument("--scaler", default="okoco", choices=["okoco", "river"])
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--progress", action="store_true", help="print every block as it ends")
    args = parser.parse_args(argv)
    task = STREAMS[args.stream][0]
    auto = {k: float(v) for k, v in (kv.split("=") for kv in args.auto.split(",") if kv)}
    set_dictionary(args.dictionary)
    print(f"# okoco from {os.path.dirname(okoco.__file__)}; stream {args.stream}, "
          f"{args.steps} steps, blocks of {args.block}; load {os.getloadavg()[0]:.2f}"
          f"{'; dictionary ' + args.dictionary if args.dictionary else ''}",
          flush=True)
    results = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        for name in args.learners.split(","):
            out = replay(learner(name, task, auto, args.scaler), task,
                         stream(args.stream, args.steps, seed), args.block, args.progress)
            out["load_end"] = os.getloadavg()[0]
            results[f"{name}/{seed}"] = out
            blocks = " ".join(f"{b:.4f}" for b in out["blocks"])
            print(f"| {name} | {seed} | {out['error']:.4f} | {blocks} | "
                  f"{out['us_per_step']:.0f} | {out['wall_s']:.0f} s | "
                  f"{out['rss_mib'][0]:.0f}->{out['rss_mib'][-1]:.0f} MiB | "
                  f"swaps {' '.join(','.join(map(str, s)) for s in out['swaps'])} |", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
