import numpy as np
import pytest
from sklearn.metrics import pairwise

from okoco import kernels


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(30, 4)), rng.normal(size=(20, 4))


@pytest.mark.parametrize(
    ("kernel", "reference"),
    [
        (kernels.RBF(gamma=0.3), lambda X, Y: pairwise.rbf_kernel(X, Y, gamma=0.3)),
        (kernels.Laplacian(gamma=0.7), lambda X, Y: pairwise.laplacian_kernel(X, Y, gamma=0.7)),
        (
            kernels.Polynomial(degree=3, gamma=0.5, coef0=2.0),
            lambda X, Y: pairwise.polynomial_kernel(X, Y, degree=3, gamma=0.5, coef0=2.0),
        ),
        (kernels.Linear(), pairwise.linear_kernel),
    ],
)
def test_kernels_match_sklearn_and_are_psd(kernel, reference, data):
    X, Y = data
    np.testing.assert_allclose(kernel(X, Y), reference(X, Y), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), np.diag(reference(X, X)), rtol=1e-12)
    K = kernel(X)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-8 * np.abs(K).max()


def test_single_row_is_a_row(data):
    X, _ = data
    k = kernels.RBF(gamma=0.2)
    np.testing.assert_allclose(k(X, X[3])[:, 0], k(X, X)[:, 3])
    assert k(X[0], X[1]).shape == (1, 1)


@pytest.mark.parametrize(
    "kernel", [kernels.Polynomial(degree=2, gamma=1.0, coef0=1.0, normalize=True),
               kernels.Linear(normalize=True)]
)
def test_normalize_gives_unit_diagonal(kernel, data):
    X, Y = data
    np.testing.assert_allclose(np.diag(kernel(X)), 1.0)
    np.testing.assert_allclose(kernel.diag(X), 1.0)
    raw = type(kernel)(**{k: v for k, v in vars(kernel).items() if k != "normalize"})
    expected = raw(X, Y) / np.sqrt(np.outer(raw.diag(X), raw.diag(Y)))
    np.testing.assert_allclose(kernel(X, Y), expected, rtol=1e-12)
    assert np.linalg.eigvalsh(kernel(X)).min() > -1e-10


@pytest.mark.parametrize(
    ("factory", "error"),
    [
        (lambda: kernels.RBF(gamma=0), ValueError),
        (lambda: kernels.RBF(gamma=-1.0), ValueError),
        (lambda: kernels.RBF(gamma=float("nan")), ValueError),
        (lambda: kernels.RBF(gamma="1"), TypeError),
        (lambda: kernels.Laplacian(gamma=0.0), ValueError),
        (lambda: kernels.Polynomial(degree=0), ValueError),
        (lambda: kernels.Polynomial(degree=2.5), TypeError),
        (lambda: kernels.Polynomial(coef0=-1.0), ValueError),
        (lambda: kernels.Polynomial(coef0=0.0, normalize=True), ValueError),
    ],
)
def test_bad_parameters_are_rejected(factory, error):
    with pytest.raises(error):
        factory()


def test_shape_mismatch_and_repr():
    with pytest.raises(ValueError, match="features"):
        kernels.RBF()(np.zeros((2, 3)), np.zeros((2, 4)))
    assert repr(kernels.Polynomial(degree=2)) == "Polynomial(degree=2, gamma=1.0, coef0=1.0)"
    assert kernels.RBF(gamma=2.0) == kernels.RBF(gamma=2.0) != kernels.RBF(gamma=1.0)


def test_normalized_kernel_refuses_a_point_with_zero_self_similarity():
    kernel = kernels.Linear(normalize=True)
    zero, x = np.zeros((1, 2)), np.array([[1.0, 2.0]])
    for call in (lambda: kernel(zero, x), lambda: kernel(x, zero), lambda: kernel.diag(zero)):
        with pytest.raises(ValueError, match="normalize=True is undefined"):
            call()
    np.testing.assert_allclose(kernel.diag(x), [1.0])


def test_a_learner_with_a_normalized_linear_kernel_refuses_an_all_zero_first_row():
    from okoco.learners import KONS

    model = KONS(kernel=kernels.Linear(normalize=True))
    with pytest.raises(ValueError, match="normalize=True is undefined"):
        model.learn_one({"a": 0.0}, 0.5)
    assert model.n_seen == 0 and model.dictionary_size == 0
    model.learn_one({"a": 1.0}, 0.5)
    assert np.isfinite(model.predict_one({"a": 2.0}))


def explicit_rbf(X, Y, gamma):
    return np.exp(-gamma * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))


@pytest.mark.parametrize(
    ("kernel", "formula"),
    [
        (kernels.RBF(0.3) + kernels.Linear(), lambda X, Y: explicit_rbf(X, Y, 0.3) + X @ Y.T),
        (kernels.RBF(0.3) * kernels.Linear(), lambda X, Y: explicit_rbf(X, Y, 0.3) * (X @ Y.T)),
        (2.5 * kernels.Laplacian(0.7),
         lambda X, Y: 2.5 * np.exp(-0.7 * np.abs(X[:, None, :] - Y[None, :, :]).sum(-1))),
        (kernels.Linear() * 0.5 + kernels.Polynomial(degree=2, gamma=0.5, coef0=1.0)
         * kernels.RBF(1.2),
         lambda X, Y: 0.5 * X @ Y.T + (0.5 * X @ Y.T + 1.0) ** 2 * explicit_rbf(X, Y, 1.2)),
        (kernels.Sum(kernels.RBF(0.3), kernels.Linear(), normalize=True),
         lambda X, Y: (explicit_rbf(X, Y, 0.3) + X @ Y.T)
         / np.sqrt(np.outer(1 + (X * X).sum(1), 1 + (Y * Y).sum(1)))),
    ],
)
def test_kernel_algebra_matches_explicit_formulas_and_stays_psd(kernel, formula, data):
    X, Y = data
    np.testing.assert_allclose(kernel(X, Y), formula(X, Y), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), np.diag(formula(X, X)), rtol=1e-12)
    np.testing.assert_allclose(kernel(X, X[4])[:, 0], formula(X, X)[:, 4], rtol=1e-12)
    K = kernel(np.vstack([X, Y]))
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()


def test_kernel_algebra_types_and_errors():
    rbf, lin = kernels.RBF(0.5), kernels.Linear()
    assert rbf + lin == kernels.Sum(rbf, lin) != lin + rbf
    assert rbf * 2 == 2 * rbf == kernels.Scaled(2.0, rbf)
    assert isinstance(rbf * lin, kernels.Product)
    for bad, error in [(lambda: 0 * rbf, ValueError), (lambda: -1.0 * rbf, ValueError),
                       (lambda: rbf + 1.0, TypeError), (lambda: True * rbf, TypeError),
                       (lambda: rbf * "2", TypeError), (lambda: kernels.Sum(rbf, "rbf"), TypeError),
                       (lambda: kernels.Scaled(float("inf"), rbf), ValueError)]:
        with pytest.raises(error):
            bad()


def test_a_learner_with_a_kernel_sum_extrapolates_a_trend():
    from okoco.learners import KONS

    # y = x on [0, 1], asked at x = 3: an RBF alone decays to 0, RBF + Linear follows the line.
    preds = {}
    choices = {"rbf": kernels.RBF(1.0), "sum": 0.1 * kernels.RBF(1.0) + kernels.Linear()}
    for name, kernel in choices.items():
        model = KONS(kernel=kernel, C=10.0, alpha=0.01, eta="hessian")
        for x in np.linspace(0, 1, 50):
            model.learn_one({"x": x}, x)
        preds[name] = model.predict_one({"x": 3.0})
    assert abs(preds["sum"] - 3.0) < 0.5 and abs(preds["rbf"]) < 0.1


# -- the RBF's norm expansion (kernels.rbf_row, RBF._gram) against direct differences ----------


def _rbf_direct(X, Y, gamma):
    """exp(-gamma ||x - y||^2) from explicit differences, one pair at a time."""
    return np.array([[np.exp(-gamma * np.sum((x - y) ** 2)) for y in Y] for x in X])


def _hard_points(seed=0):
    """Rows far from the origin with near-duplicates (||x||^2 >> ||x - y||^2), duplicates and
    the zero vector: where the expansion ||x||^2 + ||y||^2 - 2 x.y cancels."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(40, 5)) + 30.0
    near = base[:10] + rng.normal(size=(10, 5)) * np.logspace(-12, -3, 10)[:, None]
    return np.vstack([base, near, base[:5], np.zeros((1, 5))])


@pytest.mark.parametrize("gamma", [1e-3, 0.2, 5.0])
def test_rbf_row_matches_the_explicit_formula_and_cdist(gamma):
    from scipy.spatial.distance import cdist

    X = _hard_points()
    sq = np.einsum("ij,ij->i", X, X)
    for i in (0, 3, 42, 49, 52, 55):  # stored rows, near-duplicates, duplicates, zero
        x = X[i].copy()
        k = kernels.rbf_row(gamma, X, sq, float(sq.max()), x)
        exact = _rbf_direct(X, x[None, :], gamma)[:, 0]
        np.testing.assert_allclose(k, exact, rtol=0, atol=1e-12)
        np.testing.assert_allclose(k, np.exp(-gamma * cdist(X, x[None, :], "sqeuclidean"))[:, 0],
                                   rtol=0, atol=1e-12)
        assert k[i] == 1.0  # the point itself: distance exactly 0
        assert np.all(k <= 1.0)  # no negative distance
        same = np.flatnonzero((X == x).all(axis=1))
        assert np.all(k[same] == 1.0)
    # a point that is not stored, shifted by less than the expansion's rounding
    x = X[7] + 1e-9
    k = kernels.rbf_row(gamma, X, sq, float(sq.max()), x)
    np.testing.assert_allclose(k, _rbf_direct(X, x[None, :], gamma)[:, 0], rtol=0, atol=1e-12)


def test_rbf_gram_matches_the_explicit_formula_with_an_exact_diagonal():
    from scipy.spatial.distance import cdist

    X = _hard_points(1)
    k = kernels.RBF(gamma=0.3)
    K = k(X)
    np.testing.assert_allclose(K, _rbf_direct(X, X, 0.3), rtol=0, atol=1e-12)
    np.testing.assert_allclose(K, np.exp(-0.3 * cdist(X, X, "sqeuclidean")), rtol=0, atol=1e-12)
    assert np.all(np.diag(K) == 1.0) and np.all(K <= 1.0)
    Y = X[::3] + 1e-10
    np.testing.assert_allclose(k(X, Y), _rbf_direct(X, Y, 0.3), rtol=0, atol=1e-12)
    # each column of a block is the row a learner computes
    sq = np.einsum("ij,ij->i", X, X)
    for j in range(Y.shape[0]):
        row = kernels.rbf_row(0.3, X, sq, float(sq.max()), Y[j])
        np.testing.assert_allclose(row, k(X, Y)[:, j], rtol=0, atol=1e-12)


def test_rbf_with_huge_features_takes_direct_differences():
    """Features of magnitude 1e100: the expansion would lose every digit, the result must not."""
    rng = np.random.default_rng(2)
    X = 1e100 * (1.0 + rng.normal(size=(6, 3)) * 1e-100)  # differences of order 1
    X[1] = X[0] + np.array([1e84, 0.0, 0.0])
    gamma = 1e-168
    sq = np.einsum("ij,ij->i", X, X)
    k = kernels.rbf_row(gamma, X, sq, float(sq.max()), X[0])
    direct = _rbf_direct(X, X[:1], gamma)[:, 0]
    np.testing.assert_allclose(k, direct, rtol=0, atol=1e-12)
    assert k[0] == 1.0 and 0.0 < k[1] < 1.0
    np.testing.assert_allclose(kernels.RBF(gamma)(X), _rbf_direct(X, X, gamma), rtol=0,
                               atol=1e-12)


def test_importing_okoco_does_not_import_scipy_spatial():
    import subprocess
    import sys

    code = ("import sys, okoco, okoco.learners, okoco.kernels, okoco.cli; "
            "print('scipy.spatial' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("extra", [0, 400])  # 280 stored numbers: direct; 2,280: the expansion
@pytest.mark.parametrize("gamma", [1e-3, 0.2, 5.0])
def test_rbf_row_is_exact_on_both_sides_of_the_direct_size(gamma, extra):
    """Below ``_DIRECT_SIZE`` stored numbers the row comes from direct differences, above it
    from the expansion with its near-point fix: both the explicit formula to 1e-12, duplicates
    exactly 1, and the same for one feature (its two-call form)."""
    rng = np.random.default_rng(5)
    X = np.vstack([_hard_points(), rng.normal(size=(extra, 5)) + 30.0])
    assert (X.size <= kernels._DIRECT_SIZE) == (extra == 0)
    sq = np.einsum("ij,ij->i", X, X)
    for i in (0, 3, 42, 49, 52, 55):
        x = X[i].copy()
        k = kernels.rbf_row(gamma, X, sq, float(sq.max()), x)
        np.testing.assert_allclose(k, _rbf_direct(X, x[None, :], gamma)[:, 0], rtol=0,
                                   atol=1e-12)
        assert np.all(k[np.flatnonzero((X == x).all(axis=1))] == 1.0) and np.all(k <= 1.0)
    for m in (50, 2000):  # one feature, both sides
        X1 = np.round(rng.uniform(-3, 3, size=(m, 1)), 2)  # many exact duplicates
        sq1 = np.einsum("ij,ij->i", X1, X1)
        x1 = X1[7].copy()
        D = kernels.sq_dist_row(X1, sq1, float(sq1.max()), x1)
        np.testing.assert_allclose(D, ((X1 - x1) ** 2)[:, 0], rtol=1e-12, atol=1e-12)
        assert np.all(D[X1[:, 0] == x1[0]] == 0.0) and np.all(D >= 0.0)


def test_rbf_row_bounds_each_entry_by_its_own_norms():
    """One far-out stored point (as Shuttle has) must not make every entry "near": each entry is
    recomputed only below its own bound tau (||X_i||^2 + ||x||^2), and the row stays within the
    RBF tolerance of the direct formula for a narrow kernel, where a skipped near entry shows."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=9)
    near = x + rng.normal(size=(300, 9)) * 3e-3  # squared distances about 1e-4
    far = rng.normal(size=(100, 9)) + 3.0
    X = np.vstack([near, far, 60.0 * np.ones((1, 9))])  # squared norm 32,400
    sq = np.einsum("ij,ij->i", X, X)
    assert X.size > kernels._DIRECT_SIZE  # the expansion path
    D = kernels.sq_dist_row(X, sq, float(sq.max()), x)
    np.testing.assert_allclose(D, ((X - x) ** 2).sum(axis=1), rtol=1e-9, atol=0)
    gamma = 1e4  # exp(-gamma D) moves by gamma * dD: a near entry's expansion error shows
    k = kernels.rbf_row(gamma, X, sq, float(sq.max()), x)
    np.testing.assert_allclose(k, _rbf_direct(X, x[None, :], gamma)[:, 0], rtol=0, atol=2e-13)
    tau = (2 * X.shape[1] + 4) * kernels._NEAR_FACTOR
    shared = D <= tau * (sq.max() + x @ x)
    own = D <= tau * (sq + x @ x)
    assert own.sum() == 300 and shared.sum() == 400  # the far point made the others all "near"


def _sq_dist_row_reference(X, sq, sq_max, x):
    """sq_dist_row in plain numpy (``@``, ``np.einsum``, ``ndarray.min``), as it was written
    before the compiled core."""
    if X.size <= kernels._DIRECT_SIZE:
        if X.shape[1] == 1:
            Z = X[:, 0] - x[0]
            return Z * Z
        Z = X - x
        return np.einsum("ij,ij->i", Z, Z)
    xx = float(x @ x)
    D = X @ (x * -2.0)
    D += sq
    D += xx
    tau = (2 * X.shape[1] + 4) * kernels._NEAR_FACTOR
    if D.shape[0] and not D.min() > tau * (sq_max + xx):
        near = np.flatnonzero(~(D > tau * (sq + xx)))
        if near.size:
            Z = X[near] - x
            D[near] = np.einsum("ij,ij->i", Z, Z)
    return D


@pytest.mark.parametrize("m, d", [(40, 1), (60, 9), (100, 9), (600, 9), (300, 40), (3000, 1)])
def test_sq_dist_row_matches_the_plain_numpy_formula(m, d):
    """The compiled row is the numpy formula within 1e-12 of each entry's scale
    (``||X_i||^2 + ||x||^2``) on both paths, with duplicates exactly 0, near points, a far-out
    point and a row view of a wider buffer (as ``Rows`` hands out)."""
    from okoco._blas import dot

    rng = np.random.default_rng(m + d)
    buffer = np.zeros((m + 7, d + 3))
    buffer[:m, :d] = np.round(rng.normal(size=(m, d)), 1)  # many exact duplicates
    buffer[m - 1, :d] = 40.0
    X = buffer[:m, :d]
    sq = np.einsum("ij,ij->i", X, X)
    for x in (X[3].copy(), X[3] + 1e-9, rng.normal(size=d)):
        got = kernels.sq_dist_row(X, sq, float(sq.max()), x)
        want = _sq_dist_row_reference(X, sq, float(sq.max()), x)
        assert np.all(np.abs(got - want) <= 1e-12 * (sq + x @ x))
        assert np.all(got[(X == x).all(axis=1)] == 0.0) and np.all(got >= 0.0)
        assert dot(x, X[5]) == float(x @ X[5])
    long = rng.normal(size=20_000)  # dot's blocks: the bits of the blocked sum of ``@``
    blocks = sum(long[i:i + 8192] @ long[i:i + 8192] for i in range(0, 20_000, 8192))
    assert dot(long, long) == float(blocks)


def test_the_row_checks_read_the_bounded_flag_of_the_class():
    """A kernel declaring ``bounded`` (issue 41: the flag is the class's, not a list of types)
    has k(x, x) = 1 taken without a call and its rows' finiteness check skipped, by
    ``self_similarity``, ``finite_row`` and the learners' row check; a subclass of RBF, which
    may change the values, declares its own (none) and is looked at."""
    from okoco.kernels import finite_row, self_similarity
    from okoco.learners import KONS

    class Unit(kernels.Kernel, bounded=True):
        def _gram(self, X, Y):
            return np.exp(-((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))

        def _diag(self, X):
            raise AssertionError("a bounded kernel's diag is never called")

    class Doubled(kernels.RBF):
        def _diag(self, X):
            return 2.0 * super()._diag(X)

    class InBody(Unit):  # the class body's attribute counts as the keyword
        bounded = True

    class Below(Unit):  # never inherited
        pass

    assert InBody.bounded and not Below.bounded
    x = np.array([3.0, 4.0])
    assert self_similarity(Unit(), x) == 1.0 and finite_row(Unit(), np.array([np.inf]))
    assert self_similarity(Doubled(1.0), x) == 2.0
    assert not finite_row(Doubled(1.0), np.array([np.inf]))
    user, builtin = KONS(kernel=Unit()), KONS(kernel=kernels.RBF(1.0))
    for v in (0.0, 1.0, 2.5):
        for model in (user, builtin):
            model.learn_one({"x": v}, np.sin(v))
    assert user.predict_one({"x": 1.5}) == pytest.approx(builtin.predict_one({"x": 1.5}),
                                                         rel=1e-9)
