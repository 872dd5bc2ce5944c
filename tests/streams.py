import numpy as np


def unit_rows(n, d, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def as_dicts(X):
    return [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]


def run(model, X, y):
    """Test-then-train over the rows of ``X``: the predictions made before each update."""
    preds = []
    for x, target in zip(as_dicts(X), y):
        preds.append(model.predict_one(x))
        model.learn_one(x, target)
    return np.array(preds)
