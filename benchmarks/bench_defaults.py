"""Defaults chosen by measurement: every candidate setting on every stream, as a user runs it.

Each candidate is replayed test-then-train (river's ``progressive_val_score``) the way a user
with no tuning budget would run it: features standardized online (river ``StandardScaler``),
regression targets standardized online (``TargetStandardScaler``) and scored in their own units
(MAE), binary tasks through :class:`okoco.BinaryClassifier` with the logistic loss (error rate).
No setting is tuned per stream: a default is good if it is close to the best candidate on
*every* stream, so each candidate is summarised by the geometric mean over streams of its error
divided by the best error any candidate reached on that stream (1.0 = always the best).

Streams: river TrumpApproval, ChickWeights, Bananas, Phishing, Shuttle (first rows), river
``synth.Friedman(seed=42)``, okoco's synthetic sinc, and the LIBSVM german / housing sets as
published with Lu et al. (2016), "Large Scale Online Kernel Learning" (first stored
permutation), each cut at ``--n`` rows.

Usage::

    python -m benchmarks.bench_defaults                 # full grid, ~1,000 rows per stream
    python -m benchmarks.bench_defaults --n 300         # quicker
    python -m benchmarks.bench_defaults --only KONS     # candidates whose name contains KONS

It prints the markdown tables (per-stream errors, then the summary) and writes them with every
figure to ``benchmarks/results/defaults.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

from river import ensemble, evaluate, forest, linear_model, metrics, neighbors, preprocessing, tree
from river.datasets import synth

from okoco import BinaryClassifier, datasets, kernels, losses
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lsokl"
RESULTS = Path(__file__).resolve().parent / "results" / "defaults.json"


# -- streams ----------------------------------------------------------------------------------


def _okoco(name: str, **kwargs) -> Callable[[int], list]:
    return lambda n: list(datasets.load(name, **kwargs).take(n))


def _mat(name: str) -> Callable[[int], list]:
    # german's raw integer features are standardized online like every other stream
    return lambda n: list(datasets.load_mat(DATA / f"{name}.mat", permutation=0).take(n))


STREAMS: dict[str, tuple[str, Callable[[int], list]]] = {
    "trump-approval": ("regression", _okoco("trump-approval")),
    "friedman": ("regression", lambda n: list(synth.Friedman(seed=42).take(n))),
    "sinc": ("regression", _okoco("sinc")),
    "chick-weights": ("regression", _okoco("chick-weights")),
    "housing": ("regression", _mat("housing")),
    "bananas": ("binary", _okoco("bananas")),
    "phishing": ("binary", _okoco("phishing")),
    "german": ("binary", _mat("german")),
    "shuttle": ("binary", _okoco("shuttle")),
}


# -- candidates -------------------------------------------------------------------------------


def _okoco_model(factory: Callable[[object], object]) -> Callable[[str], object]:
    """Regression: the learner with its squared loss; binary: BinaryClassifier(logistic)."""
    def build(task: str):
        if task == "regression":
            return preprocessing.TargetStandardScaler(
                preprocessing.StandardScaler() | factory(None))
        return preprocessing.StandardScaler() | BinaryClassifier(factory(losses.Logistic()))
    return build


def _kons_grid() -> dict:
    grid = {}
    etas, alphas, Cs = ("exp-concave", "hessian"), (0.1, 1.0, 10.0), (1.0, 3.0)
    for eta, alpha, C in itertools.product(etas, alphas, Cs):
        grid[f"KONS(eta={eta}, alpha={alpha:g}, C={C:g})"] = _okoco_model(
            lambda loss, eta=eta, alpha=alpha, C=C: KONS(loss=loss, eta=eta, alpha=alpha, C=C))
    grid["KONS v0.1 defaults (RBF(1), C=1, exp-concave)"] = _okoco_model(
        lambda loss: KONS(kernel=kernels.RBF(1.0), loss=loss, C=1.0, eta="exp-concave"))
    return grid


def _sketched_grid() -> dict:
    grid = {}
    for eta, beta, floor in itertools.product(("exp-concave", "hessian"), (1.0, 3.0, 10.0),
                                              (0.0, 0.1)):
        grid[f"SketchedKONS(eta={eta}, beta={beta:g}, gamma={floor:g})"] = _okoco_model(
            lambda loss, eta=eta, beta=beta, floor=floor: SketchedKONS(
                loss=loss, eta=eta, beta=beta, gamma=floor, seed=0))
    return grid


def _krls_grid() -> dict:
    return {f"KRLS(nu={nu:g})": _okoco_model(lambda loss, nu=nu: KRLS(nu=nu))
            for nu in (1e-3, 1e-2, 1e-1)}


def _fgd_grid() -> dict:
    return {"FunctionalGD()": _okoco_model(lambda loss: FunctionalGD(loss=loss))}


def _river(regressor: Callable[[], object], classifier: Callable[[], object] | None):
    def build(task: str):
        if task == "regression" or classifier is None:
            return preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | regressor())
        return preprocessing.StandardScaler() | classifier()
    return build


def _river_grid() -> dict:
    return {
        "river Linear/LogisticRegression": _river(linear_model.LinearRegression,
                                                  linear_model.LogisticRegression),
        "river KNN": _river(neighbors.KNNRegressor, neighbors.KNNClassifier),
        "river HoeffdingAdaptiveTree": _river(tree.HoeffdingAdaptiveTreeRegressor,
                                              tree.HoeffdingAdaptiveTreeClassifier),
        "river ARF": _river(lambda: forest.ARFRegressor(seed=0),
                            lambda: forest.ARFClassifier(seed=0)),
        "river EWARegressor(KONS hessian alpha 0.1/1/10)": _river(
            lambda: ensemble.EWARegressor([KONS(eta="hessian", alpha=a) for a in (0.1, 1, 10)]),
            None),  # river has no classifier counterpart
    }


def candidates() -> dict:
    return {**_kons_grid(), **_sketched_grid(), **_krls_grid(), **_fgd_grid(), **_river_grid()}


# -- running ----------------------------------------------------------------------------------


def run_one(build: Callable[[str], object], task: str, rows: list) -> tuple[float, float]:
    """Error (MAE or error rate) and microseconds per sample of one test-then-train replay."""
    model = build(task)
    metric = metrics.MAE() if task == "regression" else metrics.Accuracy()
    start = time.perf_counter()
    evaluate.progressive_val_score(rows, model, metric)
    elapsed = time.perf_counter() - start
    error = metric.get() if task == "regression" else 1.0 - metric.get()
    return float(error), 1e6 * elapsed / len(rows)


def summarise(results: dict, names: list[str], streams: list[str]) -> dict:
    """Per candidate: geometric mean over streams of error / best error on that stream."""
    best = {s: min(results[n][s][0] for n in names if s in results[n]) for s in streams}
    out = {}
    for name in names:
        ratios = [results[name][s][0] / best[s] for s in streams
                  if s in results[name] and best[s] > 0]
        if ratios:
            out[name] = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return out


def markdown(results: dict, streams: list[str]) -> str:
    names = list(results)
    lines = ["| candidate | " + " | ".join(streams) + " | geo-mean ratio to best |",
             "|---|" + "---:|" * (len(streams) + 1)]
    score = summarise(results, names, streams)
    for name in sorted(names, key=lambda n: score.get(n, math.inf)):
        cells = [f"{results[name][s][0]:.4g}" if s in results[name] else "" for s in streams]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {score.get(name, math.nan):.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="rows per stream")
    parser.add_argument("--only", default="", help="candidates whose name contains this")
    parser.add_argument("--streams", default=",".join(STREAMS), help="comma-separated streams")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    streams = [s for s in args.streams.split(",") if s]
    chosen = {k: v for k, v in candidates().items() if args.only in k}
    stored = json.loads(args.output.read_text()) if args.output.exists() else {}
    results = stored.get("results", {})
    load = os.getloadavg()
    for stream in streams:
        task, loader = STREAMS[stream]
        rows = loader(args.n)
        for name, build in chosen.items():
            if "EWARegressor" in name and task != "regression":  # regression only
                continue
            error, us = run_one(build, task, rows)
            results.setdefault(name, {})[stream] = [error, us, len(rows)]
            print(f"{stream:15s} {name:60s} {error:.4g} {us:8.0f} us/sample", flush=True)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"results": results, "n": args.n}, indent=1))
    report = {"results": results, "n": args.n, "load_start": load, "load_end": os.getloadavg()}
    args.output.write_text(json.dumps(report, indent=1))
    for task in ("regression", "binary"):
        names_streams = [s for s in streams if STREAMS[s][0] == task]
        subset = {k: {s: v[s] for s in names_streams if s in v} for k, v in results.items()
                  if any(s in v for s in names_streams)}
        print(f"\n### {task} (error: {'MAE' if task == 'regression' else 'error rate'})\n")
        print(markdown(subset, names_streams))
    print(f"\nload average at start {load}, at end {os.getloadavg()}")
    return report


if __name__ == "__main__":
    main()
