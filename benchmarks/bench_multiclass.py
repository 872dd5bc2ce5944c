"""Multiclass: okoco's MulticlassClassifier against river's one-vs-rest and river's defaults.

Every model runs test-then-train (river's ``progressive_val_score``, accuracy) behind river's
``StandardScaler``, in the same process, one after the other, on

- river's ImageSegments (2,310 samples, 18 features, 7 classes), in river's order;
- scikit-learn's digits (1,797 samples, 64 features, 10 classes) and wine (178 samples,
  13 features, 3 classes), both bundled with scikit-learn, in the order of a fixed permutation
  (seed 0: wine's file is sorted by class).

Models: ``MulticlassClassifier(L)`` and river's ``OneVsRestClassifier(BinaryClassifier(L))`` for
the same okoco learner ``L`` (KONS, FunctionalGD and Auto, logistic loss), and river's
``ARFClassifier``, ``KNNClassifier`` and ``HoeffdingTreeClassifier`` at their defaults.

Run: ``python -m benchmarks.bench_multiclass [--only NAME ...]``; prints a markdown table of
accuracy and µs/sample (wall time of the whole pass divided by the samples).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from river import evaluate, forest, metrics, multiclass, neighbors, preprocessing, stream, tree

from okoco import losses
from okoco.learners import KONS, Auto, BinaryClassifier, FunctionalGD, MulticlassClassifier


def _sklearn(loader) -> list:
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return list(stream.iter_array(X[order], y[order].tolist()))


def data_sets() -> dict[str, list]:
    from river import datasets
    from sklearn.datasets import load_digits, load_wine

    return {"image-segments": list(datasets.ImageSegments()), "digits": _sklearn(load_digits),
            "wine": _sklearn(load_wine)}


LEARNERS = {
    "kons": lambda: KONS(loss=losses.Logistic()),
    "fgd": lambda: FunctionalGD(loss=losses.Logistic(), eta=0.5),
    "auto": lambda: Auto(loss=losses.Logistic()),
}


def models() -> dict[str, callable]:
    out = {}
    for name, make in LEARNERS.items():
        out[f"okoco MulticlassClassifier({name})"] = lambda make=make: MulticlassClassifier(make())
        out[f"river OvR(BinaryClassifier({name}))"] = (
            lambda make=make: multiclass.OneVsRestClassifier(BinaryClassifier(make())))
    out["river ARFClassifier()"] = lambda: forest.ARFClassifier(seed=0)
    out["river KNNClassifier()"] = neighbors.KNNClassifier
    out["river HoeffdingTreeClassifier()"] = tree.HoeffdingTreeClassifier
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="substrings of the model names to run")
    args = parser.parse_args()
    sets = data_sets()
    print(f"load {os.getloadavg()[0]:.2f} at start")
    print("| model | " + " | ".join(f"{n} acc. | µs/sample" for n in sets) + " |")
    print("|---|" + "---|---|" * len(sets))
    for label, make in models().items():
        if args.only and not any(s in label for s in args.only):
            continue
        cells = []
        for data in sets.values():
            model = preprocessing.StandardScaler() | make()
            start = time.perf_counter()
            acc = evaluate.progressive_val_score(data, model, metrics.Accuracy()).get()
            us = 1e6 * (time.perf_counter() - start) / len(data)
            cells += [f"{acc:.4f}", f"{us:,.0f}"]
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
