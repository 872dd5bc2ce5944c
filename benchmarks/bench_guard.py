"""What the numerical guard of KONS, Sketched-KONS and KRLS costs per step (issues 32, 40: <= 2%).

    python -m benchmarks.bench_guard                  # phishing and trump-approval, 9 repeats
    python -m benchmarks.bench_guard --repeat 21 --n 600

The guard lives in ``KONS._check_step`` (``okoco.learners._newton``; the windowed learners run
its compiled form, ``okoco._core._kons.KONSCore.check``): at every step one product
and one comparison (``d_t^2 kappa * _MIN_RIDGE_RATIO > alpha``; past it, a dot ``|e|^2`` and a
comparison of ``s_t`` with its rounding level), and, only at a step whose prediction lies
outside ``[-C, C]``, the same dot to bound the projection's divisor; since issue 40, the sum
of the running statistics and a bound of the step's terms (a few products, one comparison).
Three variants, switched inside this process only:

``on``
    as shipped;
``off``
    ``_check_step`` as it was before the guard (commit 3151f03, copied below, returning the
    step in today's layout): the same code without the new checks;
``worst``
    as shipped with ``_MIN_RIDGE_RATIO = inf``: the dot and the second comparison at every
    step with ``d_t != 0``, as for a stream whose every point were beyond the ridge (none is
    refused here: the counts say so).

Each repeat replays the stream test-then-train (``predict_one`` then ``learn_one``) on a fresh
learner at its defaults, the variants interleaved within each repeat (no drift between them);
per-step CPU time (``process_time``: the machine may be shared), min and median over the
repeats, the median wall time beside it, and the load average before and after. The streams
are those of ``benchmarks.data`` (features and targets standardized online as for every
benchmark; phishing's labels learned as targets +-1).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
import timeit

import numpy as np

VARIANTS = ("on", "off", "worst")


def _unguarded_check_step(self, y, eta, analysis):
    """``KONS._check_step`` before the guard (commit 3151f03), verbatim but for its last line:
    the step in today's layout (the projection's term instead of the excess)."""
    from okoco.kernels import finite_row
    from okoco.learners.base import clip_excess, overflow_message
    from okoco.learners.kons import _MAX_D, _MIN_S

    k, kappa, e, h, ybar, kc, hh = analysis
    alpha = self.alpha
    s = kappa - hh
    if _MIN_S > s:
        s = _MIN_S
    excess = clip_excess(ybar, self.C)
    yhat = ybar - excess
    gdot = float(self._loss.derivative(y, yhat))
    if eta is None:
        weight = float(self._loss.second_derivative(y, yhat))
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(f"loss.second_derivative returned {weight!r}; it must be >= 0")
        d_t = math.sqrt(weight)
    else:
        weight = eta * gdot * gdot
        d_t = gdot * math.sqrt(eta)
    if not (math.isfinite(ybar) and math.isfinite(kappa) and finite_row(self._kernel, k)):
        raise ValueError(overflow_message(self._kernel, ybar))
    worst = weight * abs(yhat) + abs(gdot) + alpha * abs(excess) / s
    if not (abs(d_t) <= _MAX_D and math.isfinite(worst)
            and math.isfinite(d_t * d_t * kappa + alpha)):
        raise ValueError(f"the target {y!r} gives the loss derivative {gdot:g}")
    noise = (y - yhat) ** 2 / (s + 0.5 * alpha)
    return s, (alpha * excess / s if excess else 0.0), yhat, gdot, weight, d_t, noise


def _rows(name: str, n: int | None):
    from benchmarks.data import load_stream

    stream = load_stream(name, n=n)
    if isinstance(stream, str):
        raise SystemExit(f"{name}: {stream}")
    y = (np.where(stream.y, 1.0, -1.0) if stream.task == "binary"
         else np.asarray(stream.y, dtype=float))
    return list(zip(stream.dicts(), y.tolist()))


def _replay(make, rows) -> tuple[float, float, int]:
    """CPU and wall seconds per step of a test-then-train replay, and the steps refused."""
    model = make()
    refused = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for x, y in rows:
        model.predict_one(x)
        try:
            model.learn_one(x, y)
        except ValueError:
            refused += 1
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return cpu / len(rows), wall / len(rows), refused


def guard_cost(streams, repeat: int, n: int | None) -> None:
    import sys

    from okoco.learners import KONS, SketchedKONS

    kons = sys.modules[KONS._check_step.__module__]  # the module whose constants it reads
    shipped, guarded = kons._MIN_RIDGE_RATIO, KONS._check_step
    makers = {"KONS": KONS, "SketchedKONS": lambda: SketchedKONS(seed=0)}
    for stream in streams:
        rows = _rows(stream, n)
        for name, make in makers.items():
            times = {v: [] for v in VARIANTS}  # CPU seconds a step (the machine is shared)
            walls = {v: [] for v in VARIANTS}
            refused = dict.fromkeys(VARIANTS, 0)
            _replay(make, rows[:100])  # warm-up (imports, caches)
            for r in range(repeat):
                order = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))
                for variant in order:
                    if variant == "off":
                        KONS._check_step = _unguarded_check_step
                    elif variant == "worst":
                        kons._MIN_RIDGE_RATIO = math.inf
                    try:
                        seconds, wall, count = _replay(make, rows)
                    finally:
                        KONS._check_step, kons._MIN_RIDGE_RATIO = guarded, shipped
                    times[variant].append(seconds)
                    walls[variant].append(wall)
                    refused[variant] += count
            off_min, off_med = min(times["off"]), statistics.median(times["off"])
            for variant in VARIANTS:
                t = times[variant]
                lo, med = min(t), statistics.median(t)
                print(f"{stream:15s} {name:13s} {variant:6s} CPU min {lo * 1e6:7.1f} us/step "
                      f"({100 * (lo - off_min) / off_min:+6.2f}% vs off), median "
                      f"{med * 1e6:7.1f} ({100 * (med - off_med) / off_med:+6.2f}%); wall "
                      f"median {statistics.median(walls[variant]) * 1e6:7.1f}; "
                      f"refused {refused[variant]}/{repeat * len(rows)}")


def krls_cost(streams, repeat: int, n: int | None) -> None:
    """KRLS's step with its guard (issue 40: the noise scale's sum checked finite), in its two
    compiled paths: ``learn_one`` after ``predict_one`` (``KRLSStep``) and
    ``predict_learn_many`` on the array (``krls_run``). No variant without the guard here: run
    this script on the code before the guard for the comparison."""
    from okoco.learners import KRLS

    for stream in streams:
        rows = _rows(stream, n)
        X = np.array([[x[k] for k in rows[0][0]] for x, _ in rows])
        y = [t for _, t in rows]
        _replay(KRLS, rows[:100])  # warm-up
        one, many = [], []
        for _ in range(repeat):
            one.append(_replay(KRLS, rows)[0])
            model = KRLS()
            c0 = time.process_time()
            model.predict_learn_many(X, y)
            many.append((time.process_time() - c0) / len(rows))
        for path, times in (("learn_one", one), ("learn_many", many)):
            print(f"{stream:15s} KRLS          {path:10s} CPU min {min(times) * 1e6:7.2f} us/step,"
                  f" median {statistics.median(times) * 1e6:7.2f}")


def _baseline_module(tree: str, name: str):
    """The compiled module ``okoco._core.<name>`` of another build (``tree``: a checkout whose
    ``okoco/_core`` holds its ``.so`` files), loaded beside this one as ``baseline.<name>``."""
    import glob
    import importlib.machinery
    import importlib.util

    path = glob.glob(f"{tree}/okoco/_core/{name}.cpython-*.so")[0]
    loader = importlib.machinery.ExtensionFileLoader(f"baseline.{name}", path)
    module = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location(f"baseline.{name}", path, loader=loader))
    loader.exec_module(module)
    return module


def compiled_cost(baseline: str, repeat: int) -> None:
    """The compiled guards against another build's, in this process (issue 40's checks of the
    running statistics): ``KONSCore.check`` on one analysis, and KRLS's replay (``predict_one``
    then ``learn_one``, ``max_size=50``: most steps in ``KRLSStep.learn``) on 3,000 rows."""
    from okoco._core import _kons, _steps
    from okoco.learners import KONS, KRLS
    from okoco.learners._codes import compiled_kernel

    rng = np.random.default_rng(0)
    rows = [({"a": float(rng.normal()), "b": float(rng.normal())}, float(rng.normal()))
            for _ in range(3000)]
    model = KONS()
    for x, y in rows[:300]:
        model.learn_one(x, y)
    analysis = model._analyse(model._features.encode(rows[0][0], arrays=False)[0])
    guards = model._window_core()  # this build's; its guards for the baseline's
    spec, loss = compiled_kernel(model._kernel), guards.loss
    checks = {build: module.KONSCore(spec, model._kernel, loss, (1e-12, 1e-10, 1e-10, 1e75),
                                     False).check
              for build, module in (("baseline", _baseline_module(baseline, "_kons")),
                                    ("this", _kons))}

    def check_time(check) -> float:
        t0 = time.process_time()
        for _ in range(100_000):
            check(model, analysis, 0.4, math.nan)
        return (time.process_time() - t0) / 100_000

    def krls_time(module) -> float:
        krls = KRLS(max_size=50)
        krls.learn_one(*rows[0])
        kernel = krls._kernel
        krls._core = (kernel, module.KRLSStep(compiled_kernel(kernel), kernel, float(krls.nu),
                                              krls.max_size, krls._noise_ratio))
        t0 = time.process_time()
        for x, y in rows:
            krls.predict_one(x)
            krls.learn_one(x, y)
        return (time.process_time() - t0) / len(rows)

    steps = {"baseline": _baseline_module(baseline, "_steps"), "this": _steps}
    best = {key: math.inf for key in ("check baseline", "check this", "krls baseline",
                                      "krls this")}
    for r in range(repeat):
        for build in ("baseline", "this") if r % 2 == 0 else ("this", "baseline"):
            best[f"check {build}"] = min(best[f"check {build}"], check_time(checks[build]))
            best[f"krls {build}"] = min(best[f"krls {build}"], krls_time(steps[build]))
    for part, unit, scale in (("check", "ns", 1e9), ("krls", "us/step", 1e6)):
        old, new = best[f"{part} baseline"], best[f"{part} this"]
        name = "KONSCore.check" if part == "check" else "KRLS replay   "
        print(f"{name} CPU min: baseline {old * scale:7.2f} {unit}, this build "
              f"{new * scale:7.2f} {unit} ({new - old:+.1e} s, {100 * (new / old - 1):+.2f}%)")


def expression_cost() -> None:
    """The guard's always-run part alone: one product and one comparison of floats."""
    setup = "d_t, kappa, ratio, alpha = 1.4142, 1.0, 1e-10, 0.1"
    number = 2_000_000
    guarded = min(timeit.repeat("d_t * d_t * kappa * ratio > alpha", setup=setup,
                                number=number, repeat=7)) / number
    empty = min(timeit.repeat("pass", setup=setup, number=number, repeat=7)) / number
    print(f"the guard's always-run test: {(guarded - empty) * 1e9:.0f} ns a step")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", nargs="+", default=["phishing", "trump-approval"])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--n", type=int, default=None, help="rows of each stream (default all)")
    parser.add_argument("--baseline", default=None,
                        help="a checkout built before the guard: its compiled steps measured "
                             "against this build's, in this process (compiled_cost)")
    args = parser.parse_args(argv)
    print("load average before:", os.getloadavg())
    if args.baseline:
        compiled_cost(args.baseline, args.repeat)
    expression_cost()
    guard_cost(args.streams, args.repeat, args.n)
    krls_cost(args.streams, args.repeat, args.n)
    print("load average after:", os.getloadavg())


if __name__ == "__main__":
    main()
