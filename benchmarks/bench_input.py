"""Per-call cost of the input boundary: a river dict row to a validated float64 vector.

``okoco._input.FeatureMap.encode`` runs on every ``predict_one`` and ``learn_one``; this measures
it on the rows of river's Phishing (9 features) and of a wider synthetic stream (100 features):

- "predict (new row)": a row the map has not seen last (the full validation loop);
- "predict + learn (same row)": test-then-train, where ``learn_one`` reuses the vector of the
  ``predict_one`` just before (the same dict object, unchanged) and registers nothing new.

CPU time (``time.process_time``) of the best of 15 repeats, so that other processes on a shared
machine distort it less than wall time would.

Run: ``python benchmarks/bench_input.py``.
"""

from __future__ import annotations

import time
import timeit

import numpy as np
from river import datasets

from okoco._input import FeatureMap


def per_row(rows: list[dict]) -> tuple[float, float]:
    """Seconds per row of (predict on a new row, predict + learn on the same row)."""
    fm = FeatureMap()
    for x in rows[:10]:
        fm.add(fm.encode(x, arrays=False)[1])

    def predict():
        for x in rows:
            fm.encode(x, arrays=False)

    def pair():
        for x in rows:
            fm.encode(x, arrays=False)
            fm.add(fm.encode(x, arrays=False)[1])

    out = []
    for fn in (predict, pair):
        best = min(timeit.repeat(fn, number=5, repeat=15, timer=time.process_time))
        out.append(best / 5 / len(rows))
    return out[0], out[1]


def main() -> None:
    phishing = [x for x, _ in datasets.Phishing().take(1000)]
    rng = np.random.default_rng(0)
    wide = [{f"x{j}": float(v) for j, v in enumerate(row)} for row in rng.normal(size=(1000, 100))]
    print("| rows | features | predict (new row) | predict + learn (same row) |")
    print("|---|---|---|---|")
    for name, rows in (("river Phishing", phishing), ("synthetic", wide)):
        new, same = per_row(rows)
        print(f"| {name} | {len(rows[0])} | {new * 1e6:.2f} us | {same * 1e6:.2f} us |")


if __name__ == "__main__":
    main()
