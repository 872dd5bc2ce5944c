"""Bounded at the defaults: time per step and peak memory of every learner along a long stream.

Each learner runs at its defaults, in a fresh process of its own (so that the peak resident set
size is its own), test-then-train on river's ``synth.RandomRBF`` (10 features, 2 classes, 50
centroids), features standardized online (river ``StandardScaler``), labels through
:class:`okoco.BinaryClassifier` (the logistic loss; KRLS, a least-squares method, with its own
squared loss). Default BLAS threading. Every ``--every`` steps it records the microseconds per
step over the last ``--window`` steps and the peak RSS so far: a bounded learner's figures stay
flat once its budget is full.

Usage::

    python -m benchmarks.bench_bounded --n 100000            # every learner
    python -m benchmarks.bench_bounded --n 20000 --only Auto

Writes ``benchmarks/results/bounded.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "bounded.json"

LEARNERS = {
    "Auto()": "BinaryClassifier(Auto(loss=losses.Logistic()))",
    "KONS()": "BinaryClassifier(KONS(loss=losses.Logistic()))",
    "SketchedKONS()": "BinaryClassifier(SketchedKONS(loss=losses.Logistic(), seed=0))",
    "FunctionalGD()": "BinaryClassifier(FunctionalGD(loss=losses.Logistic()))",
    "KRLS()": "BinaryClassifier(KRLS())",
    "PROSNKONS()": "BinaryClassifier(PROSNKONS(loss=losses.Logistic(), seed=0))",
    "CONKONS()": "BinaryClassifier(CONKONS(loss=losses.Logistic(), seed=0))",
}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def run_child(expression: str, n: int, every: int, window: int, seconds: float) -> dict:
    """One learner's replay in this process (called in a fresh subprocess)."""
    from river import preprocessing
    from river.datasets import synth

    from okoco import BinaryClassifier, losses  # noqa: F401 (used by the expression)
    from okoco.learners import (  # noqa: F401
        CONKONS,
        KONS,
        KRLS,
        PROSNKONS,
        Auto,
        FunctionalGD,
        SketchedKONS,
    )

    model = preprocessing.StandardScaler() | eval(expression)  # noqa: S307 (our own table)
    stream = synth.RandomRBF(seed_model=7, seed_sample=11, n_classes=2, n_features=10,
                             n_centroids=50)
    marks, mistakes = [], 0
    start = time.perf_counter()
    window_start = start
    for t, (x, y) in enumerate(stream.take(n), start=1):
        mistakes += model.predict_one(x) != y
        model.learn_one(x, y)
        if t % every == every - window:  # time the last `window` steps before each record
            window_start = time.perf_counter()
        elif t % every == 0:
            now = time.perf_counter()
            marks.append({"t": t, "us": 1e6 * (now - window_start) / window,
                          "rss_mb": _peak_rss_mb(), "error": mistakes / t,
                          "elapsed": now - start})
            print(json.dumps(marks[-1]), file=sys.stderr, flush=True)
        if t % window == 0 and time.perf_counter() - start > seconds:
            break  # out of time: the steps made are reported
    return {"marks": marks, "steps": t, "seconds": time.perf_counter() - start}


def selected(only: str) -> list[str]:
    """The learners ``--only`` names (comma-separated; all if empty): a learner's full name
    selects it alone (``KONS()`` is not ``CONKONS()``), a part of names every one it is in."""
    tokens = [o for o in only.split(",") if o]
    return [name for name in LEARNERS if not tokens or any(
        o == name or (o not in LEARNERS and o in name) for o in tokens)]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="steps per learner")
    parser.add_argument("--every", type=int, default=10_000, help="record every this many")
    parser.add_argument("--window", type=int, default=1_000, help="steps timed per record")
    parser.add_argument("--seconds", type=float, default=3600.0,
                        help="stop a learner after this many seconds (reported)")
    parser.add_argument("--only", default="",
                        help="comma-separated learner names (a full name, or a part of names)")
    parser.add_argument("--output", type=Path, default=None, help=f"default {RESULTS.name}")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other learners' records of --output (re-run a few)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.merge and args.output is None:  # a merge into the wrong file loses nothing loudly
        parser.error("--merge needs --output: the file whose other learners' records to keep")
    args.output = RESULTS if args.output is None else args.output
    if args.child:
        result = run_child(LEARNERS[args.child], args.n, args.every, args.window, args.seconds)
        print(json.dumps(result))
        return result
    report = {"n": args.n, "every": args.every, "window": args.window, "learners": {},
              "load_before": os.getloadavg()}
    for name in selected(args.only):
        before = os.getloadavg()
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_bounded", "--child", name, "--n",
             str(args.n), "--every", str(args.every), "--window", str(args.window),
             "--seconds", str(args.seconds)],
            capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent.parent)
        report["learners"][name] = json.loads(out.stdout.strip().splitlines()[-1])
        report["learners"][name]["load_before"] = before  # each learner's own conditions
        report["learners"][name]["load_after"] = os.getloadavg()
        print(name, json.dumps(report["learners"][name]["marks"][-1:]), flush=True)
    report["load_after"] = os.getloadavg()
    if args.merge and args.output.exists():
        old = json.loads(args.output.read_text())
        merged = {**old.get("learners", {}), **report["learners"]}
        report["learners"] = {k: merged[k] for k in LEARNERS if k in merged}
        report["load_before"], report["load_after"] = old["load_before"], old["load_after"]
        report["merged"] = True
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1))
    print(markdown(report))
    return report


def markdown(report: dict) -> str:
    lines = ["| learner | steps | wall (s) | us/step at each record | peak RSS (MB) at each "
             "record | error rate |", "|---|---:|---:|---|---|---:|"]
    for name, res in report["learners"].items():
        marks = res["marks"]
        us = ", ".join(f"{m['us']:.0f}" for m in marks)
        rss = ", ".join(f"{m['rss_mb']:.0f}" for m in marks)
        err = marks[-1]["error"] if marks else float("nan")
        lines.append(f"| {name} | {res['steps']} | {res['seconds']:.0f} | {us} | {rss} | "
                     f"{err:.4f} |")
    return "\n".join(lines)


def slow_starts(report: dict, factor: float = 1.5) -> str:
    """Which learners' first records ran over ``factor`` times their median (other work on the
    machine as the run began), as a sentence."""
    parts = []
    for name, res in report["learners"].items():
        marks = res["marks"]
        if not marks:
            continue
        median = statistics.median(m["us"] for m in marks)
        slow = factor * median
        lead = list(itertools.takewhile(lambda m, slow=slow: m["us"] > slow, marks))
        if lead:
            us = [m["us"] for m in lead]
            parts.append(f"{name}'s first {len(lead)} records (t up to {lead[-1]['t']:,}: "
                         f"{min(us):,.0f}-{max(us):,.0f} µs/step, median {median:,.0f})")
    return ("slower first records: " + "; ".join(parts) + "." if parts
            else "no learner's first records ran over 1.5x its median.")


def million_markdown(report: dict, early: int = 10_000) -> str:
    """The issue-29 targets of a long run: wall time, the us/step of the window ending at
    ``early`` against the last window (within 1.5x), and peak RSS first and last."""
    lines = ["| learner | steps | wall | us/step, steps to t = 10,000 | us/step, last steps "
             "| last / early | median us/step of the records | peak RSS (MB), first / last "
             "record | error rate |", "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for name, res in report["learners"].items():
        marks = res["marks"]
        if not marks:
            continue
        first = next((m for m in marks if m["t"] >= early), marks[0])
        last = marks[-1]
        lines.append(
            f"| {name} | {res['steps']:,} | {res['seconds'] / 60:.1f} min | {first['us']:.0f} "
            f"| {last['us']:.0f} | {last['us'] / first['us']:.2f}x | "
            f"{statistics.median(m['us'] for m in marks):.0f} | "
            f"{marks[0]['rss_mb']:.0f} / {last['rss_mb']:.0f} | {last['error']:.4f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
