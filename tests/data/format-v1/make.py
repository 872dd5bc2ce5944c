"""Writes the version-1 model files beside it; run it with okoco 0.1.0 (file format version 1):

    python tests/data/format-v1/make.py tests/data/format-v1

``tests/test_persistence.py`` checks that this okoco loads them and predicts what the saved models
predicted (``expected.json``), before and after one more learning step.
"""

import json
import sys

import numpy as np

from okoco import BinaryClassifier, kernels, losses, persistence
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS


def main() -> None:
    out = sys.argv[1]
    assert persistence.FORMAT_VERSION == 1
    models = {
        "kons": KONS(kernel=kernels.RBF(0.7), C=2.0, alpha=0.5),
        "sketched": SketchedKONS(kernel=kernels.Laplacian(0.5), C=2.0, beta=2.0, gamma=0.1, seed=3),
        "fgd": FunctionalGD(kernel=kernels.Polynomial(degree=2, coef0=1.0), C=2.0, eta=0.1,
                            lam=0.01, budget=7),
        "krls": KRLS(kernel=kernels.RBF(0.5), nu=1e-3, max_size=6, ridge=1e-4, C=3.0),
        "binary": BinaryClassifier(KONS(loss=losses.Logistic(), C=2.0)),
    }
    rng = np.random.default_rng(0)
    rows = [{"a": float(rng.normal()), "b": float(rng.normal())} for _ in range(30)]
    for i, row in enumerate(rows):
        if i % 5 == 0:
            row["c"] = float(rng.normal())
    probes = [{"a": 0.2, "b": -0.4}, {"a": 1.5}, {"b": 0.3, "c": 2.0, "new": 1.0}]
    expected = {}
    for name, model in models.items():
        for row in rows:
            y = float(np.tanh(row["a"] - row["b"]))
            model.learn_one(row, ("yes" if y > 0 else "no") if name == "binary" else y)
        persistence.save(model, f"{out}/{name}.npz", compress=True)
        learner = model.learner if name == "binary" else model
        expected[name] = [learner.predict_one(x) for x in probes]
        # one more step after loading must also match: record it
        model.learn_one({"a": 0.1, "d": 0.5}, "no" if name == "binary" else 0.3)
        expected[name + "+step"] = [learner.predict_one(x) for x in probes]
    json.dump({"probes": probes, "expected": expected}, open(f"{out}/expected.json", "w"), indent=1)


if __name__ == "__main__":
    main()
