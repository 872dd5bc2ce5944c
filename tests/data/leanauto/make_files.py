"""Write ``auto.npy`` and ``binary.npy`` here with main's okoco at commit 2b8e97b (before the
leanauto step): the predictions, each made before its row is learned, of ``Auto()`` (squared)
on 2,000 rows of Friedman's function (a covariate shift half-way) and of
``BinaryClassifier(Auto(loss=Logistic()))`` on labels of it, both with dictionaries of 30 atoms
(``DICTIONARY``), so that they fill, the sharp head turns first-order and its atoms swap (30
times). ``tests/test_leanauto.py`` replays them on the same ``rows`` and asserts equal bits.
Run with that okoco importable first (not a worktree of a later one):
``PYTHONPATH=/work/main python make_files.py``."""

import os

import numpy as np

import okoco.learners.auto as auto_module
from okoco.learners import Auto, BinaryClassifier
from okoco.losses import Logistic

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 2000
DICTIONARY = (1.0, 30, 3.0, "usage")  # small, and a lax usage rule: the sharp one swaps


def rows(seed: int = 3, n: int = STEPS) -> tuple[list[dict], np.ndarray, list[bool]]:
    """Friedman's #1 inputs as dicts (shifted half-way), its noisy targets and labels."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 10))
    X[n // 2 :, :5] += 1.5  # a covariate shift half-way: the full dictionaries swap atoms
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + rng.normal(size=n))
    labels = [bool(t > np.median(y)) for t in y]
    return [{f"x{i}": float(v) for i, v in enumerate(x)} for x in X], y, labels


def replay(model, xs, targets, predict) -> np.ndarray:
    """``predict(model, x)`` before each ``learn_one(x, target)``."""
    out = []
    for x, target in zip(xs, targets):
        out.append(predict(model, x))
        model.learn_one(x, target)
    return np.array(out, dtype=float)


def regression(xs, y) -> np.ndarray:
    return replay(Auto(), xs, [float(t) for t in y], lambda m, x: m.predict_one(x))


def classification(xs, labels) -> np.ndarray:
    return replay(BinaryClassifier(Auto(loss=Logistic())), xs, labels,
                  lambda m, x: m.predict_proba_one(x)[True])


def main() -> None:
    auto_module.DICTIONARY = DICTIONARY
    xs, y, labels = rows()
    np.save(os.path.join(HERE, "auto.npy"), regression(xs, y))
    np.save(os.path.join(HERE, "binary.npy"), classification(xs, labels))


if __name__ == "__main__":
    main()
