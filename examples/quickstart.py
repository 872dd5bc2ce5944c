"""Quick start: Sketched-KONS against exact KONS on river's Bananas, test-then-train.

Run: python examples/quickstart.py [--small]
"""

from __future__ import annotations

import sys
import time

from river import datasets, metrics

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, SketchedKONS


def main(n: int | None = None) -> dict:
    learners = {
        "KONS": BinaryClassifier(KONS(kernel=kernels.RBF(2.0), loss=losses.Logistic(), C=3.0)),
        "SketchedKONS": BinaryClassifier(
            SketchedKONS(kernel=kernels.RBF(2.0), loss=losses.Logistic(), C=3.0, beta=1.0,
                         seed=0)
        ),
    }
    results = {}
    for name, model in learners.items():
        accuracy, start = metrics.Accuracy(), time.perf_counter()
        for x, y in datasets.Bananas().take(n) if n else datasets.Bananas():
            accuracy.update(y, model.predict_one(x))
            model.learn_one(x, y)
        seconds = time.perf_counter() - start
        results[name] = accuracy.get()
        print(f"{name:<13} accuracy {accuracy.get():.4f}  {seconds:6.2f} s  "
              f"dictionary {model.learner.dictionary_size}")
    return results


if __name__ == "__main__":
    main(500 if "--small" in sys.argv else None)
