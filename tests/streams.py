import numpy as np


def unit_rows(n, d, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def as_dicts(X):
    return [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]


def shifted_friedman(n, seed=3):
    """Friedman's #1 inputs as dicts, shifted half-way (full dictionaries swap), its noisy
    targets and labels (above the targets' median)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 10))
    X[n // 2 :, :5] += 1.5
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + rng.normal(size=n))
    return as_dicts(X), y, [bool(t > np.median(y)) for t in y]


def run(model, X, y, path="one"):
    """Test-then-train over the rows of ``X``: the predictions made before each update, one
    row at a time (``path="one"``, as dicts) or by ``predict_learn_many`` (``"array"``)."""
    if path == "array":
        return np.asarray(model.predict_learn_many(X, y))
    preds = []
    for x, target in zip(as_dicts(X), y):
        preds.append(model.predict_one(x))
        model.learn_one(x, target)
    return np.array(preds)


def check_gp_posterior(model, kernel, alpha, rng, *, after=None):
    """Learn 30 points with ``model`` (squared loss, curvature step, no clipping: kernel ridge
    regression with ridge alpha/2) and check ``predict_one(x, with_dist=True)`` at 5 new points
    against the dense Gaussian-process posterior (noise ratio alpha/2), its scale estimated from
    the a-priori errors over their spreads, all from dense solves. ``after(model)`` runs once
    the points are learned, before the checks."""
    import pytest

    X = rng.normal(size=(30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    G = kernel(X, X) + 0.5 * alpha * np.eye(30)
    terms = []
    for t in range(30):
        Gt, kt = G[:t, :t], kernel(X[:t], X[t : t + 1])[:, 0]
        mean = kt @ np.linalg.solve(Gt, y[:t]) if t else 0.0
        spread = 1.0 - (kt @ np.linalg.solve(Gt, kt) if t else 0.0) + 0.5 * alpha
        terms.append((y[t] - mean) ** 2 / spread)
        model.learn_one({"a": X[t, 0], "b": X[t, 1]}, y[t])
    if after is not None:
        after(model)
    scale = (1.0 + np.sum(terms)) / 31.0
    for point in rng.normal(size=(5, 2)):
        dist = model.predict_one({"a": point[0], "b": point[1]}, with_dist=True)
        k = kernel(X, point[None, :])[:, 0]
        assert dist.mu == pytest.approx(k @ np.linalg.solve(G, y), abs=1e-9)
        variance = scale * (1.0 - k @ np.linalg.solve(G, k) + 0.5 * alpha)
        assert dist.sigma ** 2 == pytest.approx(variance, rel=1e-8)


def check_copies_go_on(model, rows, y, start, path, fields=()):
    """Train ``model`` test-then-train on ``rows[:start]``, then check that a deep copy, a
    pickled copy and a saved-and-loaded one each learn the rest without moving the original,
    and that all then predict (and hold ``fields``) exactly as the original does."""
    import copy
    import pickle

    from okoco import load

    for x, target in zip(rows[:start], y[:start]):
        model.predict_one(x)
        model.learn_one(x, target)
    model.save(path)
    copies = [copy.deepcopy(model), pickle.loads(pickle.dumps(model)), load(path)]
    before = model.predict_one(rows[start])
    for other in copies:
        for x, target in zip(rows[start:], y[start:]):
            other.learn_one(x, target)
        assert model.predict_one(rows[start]) == before  # the original did not move
    for x, target in zip(rows[start:], y[start:]):
        model.learn_one(x, target)
    for other in copies:
        assert [other.predict_one(x) for x in rows] == [model.predict_one(x) for x in rows]
        for field in fields:
            assert getattr(other, field) == getattr(model, field)
