"""Drift: Auto at its defaults against river's defaults on river's drifting generators.

Every learner is replayed test-then-train as a user runs it with no tuning: features
standardized online (river ``StandardScaler``), raw regression targets (``Auto`` standardizes
them inside; river's linear regression gets a ``TargetStandardScaler``, as its docs advise),
binary tasks through :class:`okoco.BinaryClassifier` with the logistic loss. Streams (river
``datasets.synth``; positions in samples):

- ``friedman-gra``: ``FriedmanDrift(drift_type="gra")``, global recurring abrupt drift;
- ``friedman-gsg``: ``FriedmanDrift(drift_type="gsg")``, global and slow gradual drift;
- ``sea``: ``ConceptDriftStream(SEA(variant=0), SEA(variant=2), width=50)``, a concept switch;
- ``sea-gradual``: the same with a wide transition;
- ``hyperplane``: ``Hyperplane(mag_change=0.001)``, a continuously rotating hyperplane.

For each learner: the error over the stream (MAE or error rate), the error in the 1,000 samples
before each drift point and in the 1,000 after it, the number of samples after the drift point
until the error over the last 500 is back to within 10% of its level over the 500 before the
drift (``-`` if it never is within the stream), and microseconds per sample.

Usage::

    python -m benchmarks.bench_drift                   # 5,000 samples per stream, seeds 0-2
    python -m benchmarks.bench_drift --n 3000 --seeds 0 --only Auto,ARF

Writes every figure to ``benchmarks/results/drift.json`` and prints the Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from river import forest, linear_model, preprocessing
from river.datasets import synth

from okoco import BinaryClassifier, losses
from okoco.learners import Auto

RESULTS = Path(__file__).resolve().parent / "results" / "drift.json"


def streams(n: int, seed: int) -> dict[str, tuple[str, list, list[int]]]:
    """name -> (task, rows, drift points)."""
    third = n // 3
    out = {
        "friedman-gra": ("regression", synth.FriedmanDrift(
            drift_type="gra", position=(third, 2 * third), seed=seed), [third, 2 * third]),
        "friedman-gsg": ("regression", synth.FriedmanDrift(
            drift_type="gsg", position=(third, 2 * third), transition_window=n // 20,
            seed=seed), [third, 2 * third]),
        "sea": ("binary", synth.ConceptDriftStream(
            synth.SEA(variant=0, seed=seed), synth.SEA(variant=2, seed=seed + 100),
            position=n // 2, width=50, seed=seed), [n // 2]),
        "sea-gradual": ("binary", synth.ConceptDriftStream(
            synth.SEA(variant=1, seed=seed), synth.SEA(variant=3, seed=seed + 100),
            position=n // 2, width=n // 10, seed=seed), [n // 2]),
        "hyperplane": ("binary", synth.Hyperplane(mag_change=0.001, seed=seed), []),
    }
    return {name: (task, list(gen.take(n)), points) for name, (task, gen, points) in out.items()}


def learners() -> dict[str, Callable[[str], object]]:
    def auto(task: str):
        if task == "regression":
            return preprocessing.StandardScaler() | Auto()
        return preprocessing.StandardScaler() | BinaryClassifier(Auto(loss=losses.Logistic()))

    def arf(task: str):
        return forest.ARFRegressor(seed=0) if task == "regression" else \
            forest.ARFClassifier(seed=0)

    def linear(task: str):
        if task == "regression":
            return preprocessing.TargetStandardScaler(
                preprocessing.StandardScaler() | linear_model.LinearRegression())
        return preprocessing.StandardScaler() | linear_model.LogisticRegression()

    return {"Auto()": auto, "ARF": arf, "Linear/LogisticRegression": linear}


def replay(model, task: str, rows: list) -> tuple[np.ndarray, float]:
    """Per-sample errors (absolute error or 0/1 mistake) of a test-then-train replay, and
    microseconds per sample."""
    errors = np.empty(len(rows))
    start = time.perf_counter()
    for i, (x, y) in enumerate(rows):
        pred = model.predict_one(x)
        if task == "regression":
            errors[i] = abs(y - (pred if pred is not None else 0.0))
        else:
            errors[i] = float(pred != y)
        model.learn_one(x, y)
    return errors, 1e6 * (time.perf_counter() - start) / len(rows)


def recovery(errors: np.ndarray, point: int, width: int = 500, tolerance: float = 0.1):
    """Samples after ``point`` until the mean error over the last ``width`` is within
    ``tolerance`` of its mean over the ``width`` before ``point`` (None if never)."""
    before = errors[max(0, point - width):point].mean()
    cumulative = np.concatenate([[0.0], np.cumsum(errors)])
    for end in range(point + width, len(errors) + 1):
        if (cumulative[end] - cumulative[end - width]) / width <= (1 + tolerance) * before:
            return end - point
    return None


def summarise(errors: np.ndarray, points: list[int]) -> dict:
    out = {"error": float(errors.mean()), "drifts": []}
    for p in points:
        out["drifts"].append({
            "point": p,
            "before": float(errors[max(0, p - 1000):p].mean()),
            "after": float(errors[p:p + 1000].mean()),
            "recovery": recovery(errors, p),
        })
    return out


def markdown(report: dict) -> str:
    lines = []
    names = list(report["learners"])
    lines.append("| stream | " + " | ".join(names) + " |")
    lines.append("|---|" + "---:|" * len(names))
    for stream in report["streams"]:
        cells = []
        for name in names:
            runs = report["runs"][stream].get(name)
            cells.append(f"{np.mean([r['error'] for r in runs]):.4g}" if runs else "")
        lines.append(f"| {stream} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| stream | learner | drift point | error before | error after (1,000) "
                 "| recovery (samples, per seed) | us/sample |")
    lines.append("|---|---|---:|---:|---:|---|---:|")
    for stream in report["streams"]:
        for name in names:
            runs = report["runs"][stream].get(name)
            if not runs:
                continue
            us = np.mean([r["us"] for r in runs])
            for k, drift in enumerate(runs[0]["drifts"]):
                before = np.mean([r["drifts"][k]["before"] for r in runs])
                after = np.mean([r["drifts"][k]["after"] for r in runs])
                rec = ", ".join("-" if r["drifts"][k]["recovery"] is None
                                else str(r["drifts"][k]["recovery"]) for r in runs)
                lines.append(f"| {stream} | {name} | {drift['point']} | {before:.4g} | "
                             f"{after:.4g} | {rec} | {us:.0f} |")
            if not runs[0]["drifts"]:
                lines.append(f"| {stream} | {name} | (continuous) | | | | {us:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="samples per stream")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated generator seeds")
    parser.add_argument("--only", default="", help="comma-separated learner names (substrings)")
    parser.add_argument("--streams", default="", help="comma-separated stream names")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    chosen = {k: v for k, v in learners().items()
              if not args.only or any(o in k for o in args.only.split(","))}
    report = {"n": args.n, "seeds": seeds, "learners": list(chosen), "streams": [], "runs": {},
              "load_before": os.getloadavg()}
    for seed in seeds:
        for stream, (task, rows, points) in streams(args.n, seed).items():
            if args.streams and stream not in args.streams.split(","):
                continue
            if stream not in report["streams"]:
                report["streams"].append(stream)
            for name, build in chosen.items():
                errors, us = replay(build(task), task, rows)
                run = {"seed": seed, "us": us, **summarise(errors, points)}
                report["runs"].setdefault(stream, {}).setdefault(name, []).append(run)
                print(json.dumps({"stream": stream, "learner": name, "seed": seed,
                                  "error": run["error"], "us": round(us)}), flush=True)
    report["load_after"] = os.getloadavg()
    if args.output.exists():  # keep the stored runs of learners this run did not make
        stored = json.loads(args.output.read_text())
        if stored.get("n") == report["n"] and stored.get("seeds") == report["seeds"]:
            for stream, runs in stored.get("runs", {}).items():
                for name, kept in runs.items():
                    report["runs"].setdefault(stream, {}).setdefault(name, kept)
            report["learners"] = [*report["learners"], *(
                k for k in stored["learners"] if k not in report["learners"])]
            report["streams"] = [*report["streams"], *(
                k for k in stored["streams"] if k not in report["streams"])]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1))
    text = markdown(report)
    print(text)
    return report


if __name__ == "__main__":
    main()
