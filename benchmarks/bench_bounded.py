"""Bounded at the defaults: time per step and peak memory of every learner along a long stream.

Each learner runs at its defaults in a forked process of its own (its peak resident set its
own), test-then-train (:func:`benchmarks.harness.prequential`) on river's ``synth.RandomRBF``
(10 features, 2 classes, 50 centroids), features standardized online, labels through
:class:`okoco.BinaryClassifier` with the logistic loss (KRLS with its squared loss), at the
default BLAS threading. Every ``--every`` steps it records the µs per step over the last
``--window`` steps, the peak RSS and the error rate so far: a bounded learner's figures stay
flat once its budget is full (``docs/defaults.md``, "Bounded")::

    python -m benchmarks.bench_bounded --n 100000            # every learner
    python -m benchmarks.bench_bounded --n 1000000 --output benchmarks/results/bounded_million.json
    python -m benchmarks.bench_bounded --n 20000 --only "Auto(),KONS()"

Writes ``benchmarks/results/bounded.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.harness import in_child, load, prequential, select, table

RESULTS = Path(__file__).resolve().parent / "results" / "bounded.json"


def learners() -> dict:
    """name -> build(task): each learner at its defaults (a seeded one's coins from 0), as the
    defaults study builds it."""
    from benchmarks.bench_defaults import candidates

    known = candidates()
    return {name: known[name] for name in ("Auto()", "KONS()", "SketchedKONS()",
                                           "FunctionalGD()", "KRLS()", "PROSNKONS()", "CONKONS()")}


def run(name: str, n: int, every: int, window: int) -> dict:
    from river.datasets import synth

    stream = synth.RandomRBF(seed_model=7, seed_sample=11, n_classes=2, n_features=10,
                             n_centroids=50)
    model = learners()[name]("binary")
    return prequential(model, stream.take(n), "binary", every=every, window=window)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="steps per learner")
    parser.add_argument("--every", type=int, default=10_000, help="record every this many")
    parser.add_argument("--window", type=int, default=1_000, help="steps timed per record")
    parser.add_argument("--only", default="",
                        help="comma-separated names (a full name selects it alone) or parts")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not 0 < args.window <= args.every <= args.n:
        parser.error("need 0 < --window <= --every <= --n")
    report = {"n": args.n, "every": args.every, "window": args.window, "learners": {},
              "load_before": load()}
    for name in select(list(learners()), [o for o in args.only.split(",") if o]):
        before = load()
        child = in_child(lambda name=name: {"run": run(name, args.n, args.every, args.window)})
        if "error" in child:
            raise RuntimeError(f"{name}: {child['error']}")
        result = child["run"]
        report["learners"][name] = {"marks": result.pop("records"), **result,
                                    "load_before": before, "load_after": load()}
        print(name, json.dumps(report["learners"][name]["marks"][-1:]), flush=True)
    report["load_after"] = load()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1))
    print("\n".join(markdown(report)))
    return report


def markdown(report: dict) -> list[str]:
    """Per learner: steps, wall time, µs/step and peak RSS at each record, final error rate."""
    return table(["learner", "steps", "wall (s)", "µs/step at each record",
                  "peak RSS (MB) at each record", "error rate"],
                 [[name, r["steps"], f"{r['seconds']:.0f}",
                   ", ".join(f"{m['us']:.0f}" for m in r["marks"]),
                   ", ".join(f"{m['rss_mb']:.0f}" for m in r["marks"]),
                   f"{r['marks'][-1]['error']:.4f}" if r["marks"] else "–"]
                  for name, r in report["learners"].items()])


if __name__ == "__main__":
    main()
