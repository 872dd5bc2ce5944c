"""Write model files of the running okoco's file format beside the tests, with what they predict:

    python tests/data/make_format_files.py 10 tests/data/format-v10  # with okoco of format 10
    python tests/data/make_format_files.py 9 tests/data/format-v9   # with okoco of format 9
    python tests/data/make_format_files.py 8 tests/data/format-v8   # with okoco of format 8
    python tests/data/make_format_files.py 7 tests/data/format-v7   # with okoco of format 7
    python tests/data/make_format_files.py 6 tests/data/format-v6   # with okoco of format 6
    python tests/data/make_format_files.py 5 tests/data/format-v5   # with okoco of format 5
    python tests/data/make_format_files.py 4 tests/data/format-v4   # with okoco of format 4
    python tests/data/make_format_files.py 3 tests/data/format-v3   # with okoco of format 3

``tests/test_persistence_formats.py`` checks that this okoco loads each file and predicts what
the saved model predicted (``expected.json``), before and after one more learning step. The
format-3 files were written by the okoco of commit 05521b5^ (pure Python), the format-4 files by
the okoco of commit 3151f03, the format-5 files by the okoco of commit 9611523, the format-6
files by the okoco of commit 24a686f, the format-7 files by the okoco of commit 59509cb, the
format-8 files by the okoco of commit ef1cab2, the format-9 files by the okoco of commit
f31db3a, the format-10 files by the okoco of commit 110cd74 (the first to rebuild the
factorizations on load). Run it with ``PYTHONPATH`` set to the okoco tree meant (the script's
folder, not the working directory, comes first on ``sys.path``).
"""

import json
import sys

import numpy as np

from okoco import BinaryClassifier, kernels, losses, persistence
from okoco import learners as L


def models() -> dict:
    # each built if this okoco has it (format 3 had no windowed KONS nor multiclass)
    makers = {
        "kons": lambda: L.KONS(kernel=kernels.RBF(0.7), C=2.0, alpha=0.5),
        "kons-window": lambda: L.KONS(kernel=kernels.RBF(0.7), C=2.0, alpha=0.5, max_size=8),
        "sketched": lambda: L.SketchedKONS(kernel=kernels.Laplacian(0.5), C=2.0, beta=2.0,
                                           p_min=0.1, seed=3),
        "fgd": lambda: L.FunctionalGD(kernel=kernels.Polynomial(degree=2, coef0=1.0), C=2.0,
                                      eta=0.1, lam=0.01, budget=7),
        "krls": lambda: L.KRLS(kernel=kernels.RBF(0.5), nu=1e-3, max_size=6, alpha=1e-4, C=3.0),
        "pros": lambda: L.PROSNKONS(kernel=kernels.RBF(0.5), C=2.0, beta=2.0, seed=1),
        "con": lambda: L.CONKONS(kernel=kernels.RBF(0.5), C=2.0, beta=2.0, seed=2),
        "auto": lambda: L.Auto(C=3.0),
        "binary": lambda: BinaryClassifier(L.KONS(loss=losses.Logistic(), C=2.0)),
        "multiclass": lambda: L.MulticlassClassifier(L.KONS(loss=losses.Logistic(), C=2.0)),
    }
    out = {}
    for name, make in makers.items():
        try:
            out[name] = make()
        except (TypeError, AttributeError):
            pass
    return out


def label(name: str, y: float):
    if name == "binary":
        return "yes" if y > 0 else "no"
    if name == "multiclass":
        return "lo" if y < -0.3 else ("mid" if y < 0.3 else "hi")
    return y


def predictions(name: str, model, probes: list) -> list:
    if name == "binary":
        return [model.learner.predict_one(x) for x in probes]
    if name == "multiclass":
        return [model.predict_proba_one(x) for x in probes]
    return [model.predict_one(x) for x in probes]


def main() -> None:
    version, out = int(sys.argv[1]), sys.argv[2]
    assert persistence.FORMAT_VERSION == version, persistence.FORMAT_VERSION
    rng = np.random.default_rng(0)
    rows = [{"a": float(rng.normal()), "b": float(rng.normal())} for _ in range(30)]
    for i, row in enumerate(rows):
        if i % 5 == 0:
            row["c"] = float(rng.normal())
    probes = [{"a": 0.2, "b": -0.4}, {"a": 1.5}, {"b": 0.3, "c": 2.0, "new": 1.0}]
    expected = {}
    for name, model in models().items():
        for row in rows:
            model.learn_one(row, label(name, float(np.tanh(row["a"] - row["b"]))))
        persistence.save(model, f"{out}/{name}.npz", compress=True)
        expected[name] = predictions(name, model, probes)
        # one more step after loading must also match: record it
        model.learn_one({"a": 0.1, "d": 0.5}, label(name, 0.3))
        expected[name + "+step"] = predictions(name, model, probes)
    with open(f"{out}/expected.json", "w") as f:
        json.dump({"format_version": version, "probes": probes, "expected": expected}, f,
                  indent=1)


if __name__ == "__main__":
    main()
