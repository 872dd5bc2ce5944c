"""Calibrated 90% intervals on the bundled regression streams: coverage, width, interval score.

Every model runs as ``TargetStandardScaler(StandardScaler() | IntervalRegressor(model))``, one
pass, test-then-train, so that widths and scores are in the same units for every model;
okoco's learners and river's ``BayesianLinearRegression`` give their own spread, river's
``KNNRegressor`` none (absolute residuals); beside them, ``BayesianLinearRegression``'s own 90%
band, uncalibrated; then the CPU cost of ``predict_one(x, with_dist=True)`` over
``predict_one(x)`` at the stream's end (``docs/guide/intervals.md``)::

    python -m benchmarks.bench_intervals            # all five streams
    python -m benchmarks.bench_intervals --streams sinc friedman --models "KRLS()"
    python -m benchmarks.bench_intervals --duplicates    # only the duplicated-point table

``--duplicates``: every other sample one fixed point and target, else a noisy sine (issue 40):
``AdaptiveConformal``'s finite recursion against Gibbs & Candès's (infinite intervals after
step 100, coverage, mean finite width).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from river import linear_model, neighbors, preprocessing

from benchmarks.harness import load, prequential, table
from okoco import datasets
from okoco.intervals import IntervalRegressor
from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto

STREAMS = ["trump-approval", "friedman", "chick-weights", "sinc", "mackey-glass"]
MODELS = {
    "KRLS()": KRLS,
    "KONS()": KONS,
    "Auto()": Auto,
    "PROSNKONS()": PROSNKONS,
    "CONKONS()": CONKONS,
    "river BayesianLinearRegression": linear_model.BayesianLinearRegression,
    "river KNNRegressor": neighbors.KNNRegressor,
}


def run_one(stream: str, make) -> dict:
    wrapper = IntervalRegressor(make(), coverage=0.9)
    model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | wrapper)
    rows = list(datasets.load(stream))
    run = prequential(model, rows, "regression")  # CPU time: what other load inflates less
    return {"coverage": wrapper.coverage_seen, "width": wrapper.mean_width,
            "score": wrapper.mean_interval_score, "us": run["cpu_us"],
            "spread": own_spread(wrapper.regressor, rows[-1][0])}


def own_spread(regressor, x: dict) -> bool:
    """Whether ``regressor`` gives a predictive spread: ``predict_one(x, with_dist=True)``."""
    try:
        dist = regressor.predict_one(x, with_dist=True)
    except TypeError:
        return False
    return hasattr(dist, "sigma") and hasattr(dist, "mu")


def raw_blr(stream: str) -> float:
    """Coverage of BayesianLinearRegression's own 90% Gaussian band, uncalibrated, on the same
    standardized targets (river's TargetStandardScaler's own scaling, before it learns)."""
    blr = linear_model.BayesianLinearRegression()
    model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | blr)
    scaler = model.regressor["StandardScaler"]
    inside = n = 0
    for x, y in datasets.load(stream):
        dist = blr.predict_one(scaler.transform_one(x), with_dist=True)
        sd = model.var.get() ** 0.5  # the scaler's statistics of the targets before y
        scaled = (y - model.var.mean.get()) / sd if sd else 0.0
        inside += abs(scaled - dist.mu) <= 1.6448536269514722 * dist.sigma
        model.learn_one(x, y)
        n += 1
    return inside / n


def dist_cost(make, stream: str = "friedman", calls: int = 300) -> float:
    """CPU time of predict_one(with_dist=True) over predict_one, at the stream's end state."""
    scaler = preprocessing.StandardScaler()
    learner = make()
    rows = []
    for x, y in datasets.load(stream):
        scaler.learn_one(x)
        x = scaler.transform_one(x)
        learner.learn_one(x, y / 10.0)
        rows.append(x)
    rows = rows[-calls:]

    def timed(**kwargs) -> float:  # the best of 3 rounds, CPU time
        best = math.inf
        for _ in range(3):
            start = time.process_time()
            for x in rows:
                learner.predict_one(x, **kwargs)
            best = min(best, time.process_time() - start)
        return best

    return timed(with_dist=True) / timed()


def duplicated(n: int = 2000, seed: int = 0):
    """Every other sample the point {a: 0.5, b: 0.1} with target 1, else a noisy sine."""
    rng = np.random.default_rng(seed)
    for t in range(n):
        if t % 2:
            yield {"a": 0.5, "b": 0.1}, 1.0
        else:
            v = rng.normal(size=2)
            yield {"a": float(v[0]), "b": float(v[1])}, float(np.sin(v[0]) + 0.1 * rng.normal())


def run_duplicates(make, finite: bool, only_duplicates: bool) -> dict:
    wrapper = IntervalRegressor(make(), coverage=0.9)
    wrapper.calibrator.finite = finite
    infinite = 0
    stream = [({"a": 0.5}, 1.0)] * 2000 if only_duplicates else duplicated()
    for t, (x, y) in enumerate(stream):
        low, high = wrapper.predict_one(x, with_interval=True)
        infinite += t >= 100 and not math.isfinite(high - low)
        wrapper.learn_one(x, y)
    return {"infinite": infinite, "coverage": wrapper.coverage_seen, "width": wrapper.mean_width}


def duplicates_table(models: dict) -> list[str]:
    rows = []
    for stream, only in (("one point repeated", True), ("every other sample", False)):
        for name in (n for n in models if not n.startswith("river")):
            for finite in (False, True):
                r = run_duplicates(models[name], finite, only)
                rows.append([stream, name, "finite" if finite else "paper", r["infinite"],
                             f"{r['coverage']:.3f}", f"{r['width']:.4f}"])
    return table(["stream", "model", "recursion", "infinite after step 100", "coverage",
                  "mean width"], rows)


def intervals_table(streams: list[str], models: dict) -> list[str]:
    rows = []
    for stream in streams:
        for name, make in models.items():
            r = run_one(stream, make)
            rows.append([stream, name, "yes" if r["spread"] else "no", f"{r['coverage']:.3f}",
                         f"{r['width']:.3f}", f"{r['score']:.3f}", f"{r['us']:.0f}"])
        if "river BayesianLinearRegression" in models:
            rows.append([stream, "river BayesianLinearRegression, own 90% band uncalibrated",
                         "yes", f"{raw_blr(stream):.3f}", "", "", ""])
    return table(["stream", "model", "own spread", "coverage", "mean width", "interval score",
                  "µs/sample"], rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", nargs="+", default=STREAMS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                        metavar="MODEL", help="names as in the table (default: all)")
    parser.add_argument("--duplicates", action="store_true",
                        help="only the duplicated-point table (issue 40)")
    args = parser.parse_args(argv)
    models = {name: MODELS[name] for name in args.models}
    print(f"load average {load()}")
    if args.duplicates:
        lines = duplicates_table(models)
    else:
        lines = intervals_table(args.streams, models) + ["", *table(
            ["learner", "with_dist / plain predict_one (CPU time)"],
            [[n, f"{dist_cost(MODELS[n]):.2f}x"] for n in models if not n.startswith("river")])]
    print("\n".join(lines))
    print(f"load average {load()}")


if __name__ == "__main__":
    main()
