"""SketchedKONS at its defaults against VW ``--ksvm`` at its best bandwidth, head to head.

Issue 28's target: SketchedKONS at its defaults with the logistic loss (what ``okoco replay`` runs
for a binary task: ``BinaryClassifier(SketchedKONS(loss=Logistic()))``, RBF(1/d), C = 3, the
bounded window) in at most half of VW ``--ksvm``'s time per sample, at VW's accuracy or better,
on Phishing, Bananas and Shuttle. The streams, their fixed orders and VW's bandwidth grid are the
benchmark suite's (``benchmarks/data.py``, ``benchmarks/learners.py``): VW runs every bandwidth of
the grid once and keeps its most accurate; then ``--rounds`` head-to-head rounds replay both, in
alternating order, each in a forked child (so a load burst falls on both alike), and the time
ratio is the median over rounds. Default BLAS threading; ``--loaded`` keeps one busy process
beside the rounds.

Usage::

    python -m benchmarks.bench_vw_defaults                  # phishing, bananas, shuttle
    python -m benchmarks.bench_vw_defaults --datasets phishing --rounds 3 --loaded
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics

import numpy as np

from benchmarks import data, learners, measure


def _pass(entry: learners.Entry, stream: data.Stream, inputs: measure.Inputs) -> dict:
    """One forked replay: accuracy and microseconds per sample."""
    rec = measure.run_entry(entry, stream, inputs, [stream.n], method="fork")
    if "error" in rec:
        raise RuntimeError(f"{entry.key} on {stream.name}: {rec['error']}")
    preds = np.asarray(rec["preds"], dtype=float)
    hits = np.nan_to_num(preds, nan=-1.0) == stream.y  # no prediction yet: a miss
    return {"accuracy": float(hits.mean()), "us": 1e6 * rec["seconds"] / stream.n}


def head_to_head(name: str, rounds: int, loaded: bool, n: int | None) -> dict:
    stream = data.load_stream(name, n=n)
    if isinstance(stream, str):
        raise SystemExit(f"{name}: {stream}")
    inputs = measure.Inputs(stream)
    entries = learners.entries(stream)
    vw = [e for e in entries if e.learner == "VW --ksvm (RBF)"]
    mine = learners.Entry("SketchedKONS (defaults, logistic)", "okoco", "okoco", {},
                          learners._okoco("SketchedKONS", None, "binary", seed=0))
    best = max(((e, _pass(e, stream, inputs)) for e in vw), key=lambda pair: pair[1]["accuracy"])
    peer = best[0]
    ratios, mine_us, peer_us, accuracy = [], [], [], None
    busy = measure.busy_process() if loaded else contextlib.nullcontext()
    with busy:
        for r in range(rounds):
            order = (mine, peer) if r % 2 == 0 else (peer, mine)
            got = {e.key: _pass(e, stream, inputs) for e in order}
            a, b = got[mine.key], got[peer.key]
            accuracy = a["accuracy"]
            mine_us.append(a["us"])
            peer_us.append(b["us"])
            ratios.append(a["us"] / b["us"])
    return {"dataset": name, "n": stream.n, "vw": peer.key, "vw_accuracy": best[1]["accuracy"],
            "accuracy": accuracy, "us": statistics.median(mine_us),
            "vw_us": statistics.median(peer_us), "ratio": statistics.median(ratios),
            "loaded": loaded, "load": os.getloadavg()[0]}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="phishing,bananas,shuttle")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=None, help="cap every stream at n rows")
    p.add_argument("--loaded", action="store_true", help="one busy process beside the rounds")
    args = p.parse_args(argv)
    if not learners.available("vowpalwabbit"):
        raise SystemExit("needs vowpalwabbit (pip install vowpalwabbit)")
    learners.preload()
    rows = [head_to_head(name, args.rounds, args.loaded, args.n)
            for name in args.datasets.split(",")]
    print("| stream | SketchedKONS accuracy | VW accuracy (setting) | SketchedKONS us/sample "
          "| VW us/sample | time ratio (median of rounds) | target <= 0.5x at VW's accuracy "
          "| load |")
    print("|---|---:|---|---:|---:|---:|---|---:|")
    for r in rows:
        met = r["ratio"] <= 0.5 and r["accuracy"] >= r["vw_accuracy"]
        print(f"| {r['dataset']} | {r['accuracy']:.4f} | {r['vw_accuracy']:.4f} ({r['vw']}) "
              f"| {r['us']:.1f} | {r['vw_us']:.1f} | {r['ratio']:.2f}x | "
              f"{'met' if met else 'not met'} | {r['load']:.1f} |")
    return rows


if __name__ == "__main__":
    main()
