"""Numerical stability on hostile streams: duplicates, tiny ridge, extreme bandwidths, constant
targets, targets on the clipping boundary and long streams.

Every test asserts properties that a broken implementation violates: predictions finite and in
[-C, C], every float of the state finite, the incremental factorizations within 1e-8 (relative)
of the matrix rebuilt densely from the stored points, and dictionary sizes bounded.
"""

from __future__ import annotations

import numpy as np
import pytest

from okoco import kernels, losses
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS
from okoco.persistence import _Encoder

DRIFT = 1e-8


def rows_of(X):
    return [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]


def run(model, X, y):
    """Test-then-train; the predictions made before each update."""
    preds = []
    for x, target in zip(rows_of(X), y):
        preds.append(model.predict_one(x))
        model.learn_one(x, target)
    return np.array(preds)


def unclipped(model, x: dict) -> float:
    return model._predict_vec(model._features.encode(x)[0])


def assert_state_finite(model):
    """Every float array and float scalar reachable from the learner is finite."""
    enc = _Encoder()
    tree = enc.encode(model, "model")
    bad = [name for name, a in enc.arrays.items() if a.dtype.kind == "f" and
           not np.all(np.isfinite(a))]
    assert not bad, bad
    assert non_finite_scalars(tree) <= {"last_residual"}  # NaN there: "not checked yet"


def non_finite_scalars(tree, name="") -> set:
    """Names of the attributes the encoder wrote as NaN or infinite floats."""
    if isinstance(tree, list):
        return set().union(*(non_finite_scalars(v, name) for v in tree))
    if not isinstance(tree, dict):
        return set()
    if "__float__" in tree:
        return {name}
    return set().union(*(non_finite_scalars(v, k if k != "attrs" else name)
                         for k, v in tree.items()))


def assert_predictions_sane(model, preds, probes):
    C = model.C
    assert np.all(np.isfinite(preds))
    if C is not None:
        assert np.all(np.abs(preds) <= C)
    for x in rows_of(probes):
        f = unclipped(model, x)
        assert np.isfinite(f)
        p = model.predict_one(x)
        assert np.isfinite(p) and (C is None or abs(p) <= C)


def relative_drift(chol, A) -> float:
    L = chol.factor()
    return float(np.linalg.norm(L @ L.T - A) / np.linalg.norm(A))


def kons_matrix(model, X):
    """``D K D + alpha I`` over the preconditioner's points, rebuilt from the stream."""
    store = model._store
    idx = np.arange(store.size) if type(model) is KONS else model._selected[: model._chol.size]
    d = store.field("d")[idx]
    pts = X[idx]
    return d[:, None] * model._kernel(pts, pts) * d[None, :] + model.alpha * np.eye(idx.size)


def kors_matrix(model, X):
    """``S Kbar S + alpha I`` of Sketched-KONS's KORS over its atoms, rebuilt from the stream."""
    kors = model._kors
    idx, w = kors.indices, kors.weights
    d = model._store.field("d")[idx] * np.sqrt(w)
    pts = X[idx]
    return d[:, None] * model._kernel(pts, pts) * d[None, :] + model.alpha * np.eye(idx.size)


def assert_factorizations_hold(model, X):
    """Compare every incremental factor with its dense reference (the shared refresh's job)."""
    if isinstance(model, KONS):
        if model._chol.size:
            assert relative_drift(model._chol, kons_matrix(model, X)) < DRIFT
        if isinstance(model, SketchedKONS) and model._kors.size:
            kors = model._kors
            if kors._slots is None:  # the factor's form
                assert relative_drift(kors.cholesky, kors_matrix(model, X)) < DRIFT
            else:  # the inverse form (a window): P over the atoms' slots inverts the matrix
                slots = kors._slots[: kors.size]
                P = kors._inverse.inverse()[np.ix_(slots, slots)]
                A = kors_matrix(model, X)
                assert np.linalg.norm(P @ A - np.eye(len(A))) / np.sqrt(len(A)) < DRIFT
    elif isinstance(model, KRLS) and model.dictionary_size:
        ald = model._ald
        pts = X[ald.indices]
        G = model._kernel(pts, pts) + model.alpha * np.eye(len(pts))
        assert relative_drift(ald.cholesky, G) < DRIFT


def learners(C=1.0, kernel=None, alpha=1.0):
    kernel = kernel or kernels.RBF(1.0)
    return {
        # the unbounded learners: these checks read their factorizations (max_size=None)
        "kons": lambda: KONS(kernel=kernel, C=C, alpha=alpha, max_size=None),
        "sketched": lambda: SketchedKONS(kernel=kernel, C=C, alpha=alpha, beta=2.0, p_min=0.05,
                                         seed=0, max_size=None),
        "fgd": lambda: FunctionalGD(kernel=kernel, C=C, eta=0.5),
        "krls": lambda: KRLS(kernel=kernel, C=C, nu=1e-6),
    }


NAMES = ["kons", "sketched", "fgd", "krls"]
rng0 = np.random.default_rng(0)
BASE = rng0.uniform(-1, 1, size=(15, 2))
PROBES = np.concatenate([BASE[:3], rng0.uniform(-2, 2, size=(3, 2))])


def duplicated(noise: float, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = np.concatenate([BASE] * 8)
    X = X + noise * rng.standard_normal(X.shape) * (np.arange(len(X)) % 2)[:, None]
    return X, np.sin(3 * X[:, 0]) + 0.3 * X[:, 1]


@pytest.mark.parametrize("noise", [0.0, 1e-13, 1e-7], ids=["exact", "1e-13", "1e-7"])
@pytest.mark.parametrize("name", NAMES)
def test_exact_and_near_duplicate_points(name, noise):
    model = learners()[name]()
    X, y = duplicated(noise)
    preds = run(model, X, y)
    assert_predictions_sane(model, preds, PROBES)
    assert_state_finite(model)
    assert_factorizations_hold(model, X)
    if name == "kons":
        # the pivot of a KONS atom is alpha + d^2 s >= alpha: duplicates never need clamping
        assert model._chol.n_clamped == 0 and model.dictionary_size == len(X)
    if name == "krls":
        # ALD never admits a point (nearly) in the span of the dictionary: at most the 15 bases
        assert model.dictionary_size <= len(BASE)
    if name == "sketched":
        assert model.dictionary_size <= len(X)


@pytest.mark.parametrize("name", ["kons", "sketched"])
@pytest.mark.parametrize("gamma", [1e-6, 1.0, 1e6])
def test_alpha_as_small_as_1e_8(name, gamma):
    model = learners(alpha=1e-8, kernel=kernels.RBF(gamma))[name]()
    X, y = duplicated(1e-13)
    preds = run(model, X, y)
    assert_predictions_sane(model, preds, PROBES)
    assert_state_finite(model)
    assert_factorizations_hold(model, X)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kernel", [kernels.RBF(1e-8), kernels.RBF(1e8), kernels.Laplacian(1e-8),
                                    kernels.Laplacian(1e8)], ids=repr)
def test_very_small_and_very_large_bandwidths(name, kernel):
    model = learners(kernel=kernel, C=2.0)[name]()
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(120, 3))
    y = np.cos(2 * X[:, 0]) - X[:, 2]
    preds = run(model, X, y)
    assert_predictions_sane(model, preds, PROBES[:, :2])
    assert_state_finite(model)
    assert_factorizations_hold(model, X)
    far = {"x0": 50.0, "x1": -50.0, "x2": 50.0}
    if kernel.gamma == 1e8:
        # every pair of distinct points has k = 0: nothing is known away from the points
        assert model.predict_one(far) == 0.0
        if name == "krls":
            assert model.dictionary_size == len(X)  # each point is orthogonal to the others
    if name == "krls" and kernel.gamma == 1e-8:
        # k = 1 everywhere: one atom, and the least-squares constant is the targets' mean
        assert model.dictionary_size == 1
        assert model.predict_one(far) == pytest.approx(y.mean(), abs=1e-3)


@pytest.mark.parametrize("name", NAMES)
def test_constant_targets_are_learned(name):
    model = learners()[name]()
    X = np.random.default_rng(3).uniform(-1, 1, size=(600, 2))
    preds = run(model, X, np.full(len(X), 0.7))
    assert_predictions_sane(model, preds, PROBES)
    assert_state_finite(model)
    assert_factorizations_hold(model, X)
    tolerance = 5e-3 if name == "krls" else 0.1
    assert np.max(np.abs(preds[-100:] - 0.7)) < tolerance


@pytest.mark.parametrize("loss", [losses.Squared(), losses.SquaredHinge()], ids=repr)
@pytest.mark.parametrize("name", ["kons", "sketched", "fgd"])
def test_targets_exactly_at_the_clip_boundary(name, loss):
    """y = +-C: once the prediction overshoots, gdot = 0 while the projection is active.

    Then the step is the projection alone, which puts f(x_t) exactly on the boundary: after
    learning, the unclipped prediction at x_t is y_t (the b-form of the paper divides by zero
    there; the c-form used by okoco must not).
    """
    C = 1.0
    factories = {
        "kons": lambda: KONS(loss=loss, C=C, alpha=0.1, eta=0.01),
        "sketched": lambda: SketchedKONS(loss=loss, C=C, alpha=0.1, eta=0.01, beta=2.0,
                                         p_min=0.2, seed=0),
        "fgd": lambda: FunctionalGD(loss=loss, C=C, eta=2.0),
    }
    model = factories[name]()
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(150, 2))
    y = np.where(X[:, 0] > 0, C, -C)
    projections = 0
    for x, target in zip(rows_of(X), y):
        before = unclipped(model, x)
        model.learn_one(x, target)
        if abs(before) > C and np.sign(before) == target:  # yhat = y: gdot = 0, projection on
            projections += 1
            assert unclipped(model, x) == pytest.approx(target, abs=1e-9)
    assert projections >= 10
    assert_predictions_sane(model, np.array([model.predict_one(x) for x in rows_of(X)]), PROBES)
    assert_state_finite(model)
    assert_factorizations_hold(model, X)


# -- long streams -------------------------------------------------------------------------------


def long_stream(T, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=T)
    X = np.column_stack([x, np.round(x, 1)])  # the second feature repeats: near duplicates
    return X, np.sinc(x) + 0.1 * rng.standard_normal(T)


LONG = {
    "sketched": lambda: SketchedKONS(kernel=kernels.RBF(1.0), C=1.5, eta=1.0, beta=1.0, seed=0,
                                     max_size=None),
    "krls": lambda: KRLS(kernel=kernels.RBF(1.0), nu=1e-3, C=1.5),
    "fgd": lambda: FunctionalGD(kernel=kernels.RBF(1.0), C=1.5, eta=0.2, budget=200),
}


def check_long_run(name, T):
    model = LONG[name]()
    X, y = long_stream(T)
    sizes, ald_rows = [], []
    preds = np.empty(T)
    for t, (x, target) in enumerate(zip(rows_of(X), y)):
        preds[t] = model.predict_one(x)
        model.learn_one(x, target)
        if name == "krls":
            ald_rows.append((model._ald.last_added, model._ald.last_coefficients))
        if (t + 1) % (T // 10) == 0:
            sizes.append(model.dictionary_size)
    assert_predictions_sane(model, preds, X[:5])
    assert_state_finite(model)
    assert_factorizations_hold(model, X)
    if name == "fgd":
        assert sizes == [200] * 10  # the ring keeps exactly the budget
    else:
        # a 1-D input set is covered by a few dozen atoms, whatever T
        assert sizes[-1] <= 60 and sizes[-1] - sizes[4] <= 10
    # the learner actually learns: the last tenth is fitted to about the noise level
    assert np.sqrt(np.mean((preds[-T // 10:] - y[-T // 10:]) ** 2)) < 0.2
    if name == "krls":
        assert_krls_is_least_squares(model, X, y, ald_rows)


def assert_krls_is_least_squares(model, X, y, ald_rows):
    """The weights equal the batch least-squares solution ``G^-1 (A^T A)^-1 A^T y`` that the
    recursion tracks (Engel et al. 2004); ``A`` is rebuilt from the historical ALD coefficients
    (a new atom's own row is the unit vector)."""
    m = model.dictionary_size
    A = np.zeros((len(ald_rows), m))
    size = 0
    for i, (added, a) in enumerate(ald_rows):
        if added:
            A[i, size] = 1.0
            size += 1
        else:
            A[i, :size] = a
    pts = X[model._ald.indices]
    G = model._kernel(pts, pts)
    expected = np.linalg.solve(G, np.linalg.lstsq(A, y, rcond=None)[0])
    np.testing.assert_allclose(model.weights, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(LONG))
def test_ten_thousand_steps(name):
    check_long_run(name, 10_000)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LONG))
def test_hundred_thousand_steps(name):
    check_long_run(name, 100_000)
