import numpy as np
import pandas as pd
import pytest
from river import checks, datasets, evaluate, metrics, preprocessing, proba
from streams import as_dicts, check_copies_go_on, run

from okoco import kernels, losses
from okoco.learners import KRLS, FunctionalGD
from okoco.persistence import _migrations


def batch_krls_weights(X, y, kernel, nu, ridge=0.0):
    """Spec B.2.3 batch identity, built with dense solves and an independent ALD replay."""
    D, rows = [], []
    for x in X:
        if D:
            G = kernel(np.array(D)) + ridge * np.eye(len(D))
            g = kernel(np.array(D), x)[:, 0]
            a = np.linalg.solve(G, g)
            delta = kernel.diag(x)[0] - g @ a  # the ridge-regularized ALD residual
        else:
            a, delta = np.zeros(0), kernel.diag(x)[0]
        if delta > nu:
            D.append(x)
            a = np.eye(len(D))[-1]
        rows.append(a)
    m = len(D)
    A = np.array([np.pad(r, (0, m - len(r))) for r in rows])
    G = kernel(np.array(D)) + ridge * np.eye(m)
    return np.linalg.solve(G, np.linalg.solve(A.T @ A, A.T @ y)), np.array(D)


def sinc_stream(n, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-4, 4, size=(n, 1))
    return X, np.sinc(X[:, 0]) + noise * rng.normal(size=n)


@pytest.mark.parametrize(("nu", "ridge"), [(0.05, 0.0), (0.01, 1e-3), (0.2, 0.0)])
def test_weights_equal_the_batch_least_squares_solution(nu, ridge):
    X, y = sinc_stream(300)
    kernel = kernels.RBF(gamma=0.7)
    model = KRLS(kernel=kernel, nu=nu, alpha=ridge)
    for t, (x, target) in enumerate(zip(as_dicts(X), y), start=1):
        model.learn_one(x, target)
        if t in (50, 300):
            expected, D = batch_krls_weights(X[:t], y[:t], kernel, nu, ridge)
            assert model.dictionary_size == len(D)
            np.testing.assert_allclose(model.atoms, D)
            np.testing.assert_allclose(model.weights, expected, rtol=1e-10,
                                       atol=1e-10 * np.abs(expected).max())


def test_tiny_nu_on_distinct_points_is_kernel_ridge_regression():
    X, y = sinc_stream(120, seed=1)
    kernel, ridge = kernels.RBF(gamma=0.5), 1e-3
    model = KRLS(kernel=kernel, nu=1e-12, alpha=ridge)
    for x, target in zip(as_dicts(X), y):
        model.learn_one(x, target)
    assert model.dictionary_size == len(X)
    krr = np.linalg.solve(kernel(X) + ridge * np.eye(len(X)), y)
    np.testing.assert_allclose(model.weights, krr, rtol=1e-7, atol=1e-7 * np.abs(krr).max())
    Q = np.linspace(-4, 4, 9)[:, None]
    np.testing.assert_allclose([model.predict_one(q) for q in as_dicts(Q)], kernel(Q, X) @ krr,
                               rtol=1e-7, atol=1e-9)


def sizes(law, checkpoints, seed=0):
    rng = np.random.default_rng(seed)
    draw = {"uniform": lambda n: rng.uniform(0, 1, n), "normal": lambda n: rng.normal(size=n),
            "cauchy": lambda n: rng.standard_cauchy(n)}[law]
    X = draw(max(checkpoints))
    model = KRLS(kernel=kernels.RBF(gamma=1.0), nu=0.01)
    out = []
    for t, x in enumerate(X, start=1):
        model.learn_one({"x": x}, float(np.sin(x)))
        if t in checkpoints:
            out.append(model.dictionary_size)
    return np.array(out)


def test_dictionary_growth_rates_follow_the_input_law():
    # Spec B.6: saturates on U[0,1], ~log n on N(0,1), ~sqrt(n) on Cauchy (Gaussian kernel).
    cps = [250, 1000, 4000]
    uni, nor, cau = sizes("uniform", cps), sizes("normal", cps), sizes("cauchy", cps)
    assert uni[-1] == uni[1] and uni[-1] <= 10  # saturated
    assert nor[-1] - nor[0] <= 8  # log growth: a few atoms per 16x more points
    assert cau[-1] >= 1.8 * cau[0]  # polynomial growth (sqrt(16) = 4 in expectation)
    assert cau[-1] > 2 * nor[-1]


def test_max_size_stops_growth_but_keeps_learning():
    X, y = sinc_stream(600, seed=2)
    grid = np.linspace(-4, 4, 50)[:, None]

    def grid_mse(model):
        return np.mean([(model.predict_one(q) - np.sinc(q["x0"])) ** 2 for q in as_dicts(grid)])

    model = KRLS(kernel=kernels.RBF(gamma=0.5), nu=1e-4, max_size=8)
    when_full = None
    for x, target in zip(as_dicts(X), y):
        model.learn_one(x, target)
        if when_full is None and model.dictionary_size == 8:
            when_full = grid_mse(model)
    assert model.dictionary_size == 8
    assert grid_mse(model) < 0.5 * when_full


def test_clipping_and_loss_validation():
    with pytest.raises(ValueError, match="squared loss"):
        KRLS(loss=losses.Logistic())
    model = KRLS(C=0.1, nu=1e-3)
    model.learn_one({"x": 0.0}, 5.0)
    assert model.predict_one({"x": 0.0}) == 0.1
    unclipped = KRLS(nu=1e-3)
    unclipped.learn_one({"x": 0.0}, 5.0)
    assert unclipped.predict_one({"x": 0.0}) == pytest.approx(5.0)
    assert np.isfinite(unclipped.last_residual) and unclipped.log_det == pytest.approx(0.0)
    with pytest.raises(ValueError):
        KRLS(nu=0.0)
    with pytest.raises(ValueError, match="alpha"):
        KRLS(alpha=-1.0)


def test_river_check_estimator_and_progressive_validation():
    checks.check_estimator(KRLS())
    model = preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | KRLS(kernel=kernels.RBF(0.05), nu=0.05, alpha=1e-2)
    )
    mae = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    assert mae.get() < 1.0


def test_a_ridge_below_nu_does_not_inflate_the_dictionary():
    # Loading the diagonal used to add ridge to every ALD residual, so any ridge >= nu made
    # KRLS keep every point; the regularized residual keeps the dictionary near its ridge-0 size.
    X, y = sinc_stream(2000, seed=2)
    sizes = {}
    for ridge in (0.0, 1e-4, 1e-2):
        model = KRLS(kernel=kernels.RBF(gamma=1.0), nu=1e-3, alpha=ridge)
        for x, target in zip(as_dicts(X), y):
            model.learn_one(x, target)
        sizes[ridge] = model.dictionary_size
    assert sizes[0.0] <= sizes[1e-4] <= 1.5 * sizes[0.0]
    assert sizes[1e-2] < len(X) / 5  # was every point before the fix


def test_a_refresh_of_the_ald_factor_carries_w_and_m_over():
    """KRLS keeps w = L^{-1} beta and M = L^{-1} P L^{-T} in the coordinates of the ALD factor;
    forcing the factor's drift check to refresh it at every check must not change the model:
    the weights stay the batch least-squares solution and every prediction matches a model
    whose factor is never refreshed."""
    X, y = sinc_stream(300, seed=3)
    kernel = kernels.RBF(gamma=3.0)
    plain, forced = KRLS(kernel=kernel, nu=0.001), KRLS(kernel=kernel, nu=0.001)
    forced._ald.cholesky.refresh_tol = 1e-300  # every check refreshes (its residual is > 0)
    plain._ald.cholesky.refresh_tol = np.inf
    for x, target in zip(as_dicts(X), y):
        assert forced.predict_one(x) == pytest.approx(plain.predict_one(x), abs=1e-10)
        plain.learn_one(x, target)
        forced.learn_one(x, target)
        np.testing.assert_allclose(forced._ald.last_coefficients, plain._ald.last_coefficients,
                                   rtol=1e-8, atol=1e-10)
    assert forced._ald.cholesky.n_refreshes > 0 and plain._ald.cholesky.n_refreshes == 0
    expected, _ = batch_krls_weights(X, y, kernel, 0.001)
    np.testing.assert_allclose(forced.weights, expected, rtol=1e-10,
                               atol=1e-10 * np.abs(expected).max())


def test_a_state_with_beta_and_p_is_upgraded_to_w_and_m():
    """A model saved before w and M (state ``_beta = G alpha~``, ``_P = (A^T A)^{-1}``) is
    rebuilt into the current layout and predicts as the model it came from."""
    from okoco.linalg import PackedSymmetric

    X, y = sinc_stream(200, seed=4)
    model = KRLS(kernel=kernels.RBF(gamma=0.7), nu=0.01, alpha=1e-3)
    for x, target in zip(as_dicts(X), y):
        model.learn_one(x, target)
    L = model._ald.cholesky.factor()
    m = model.dictionary_size
    state = dict(vars(model))
    w, M = state.pop("_w"), state.pop("_M")
    beta = L @ w[:m]  # the old layout, from the new one
    state["_beta"] = np.concatenate([beta, np.zeros(3)])
    state["_P"] = PackedSymmetric.from_matrix(L @ M.matrix() @ L.T)
    upgraded = _migrations._krls_before_3(state)
    assert set(upgraded) == set(vars(model))
    np.testing.assert_allclose(upgraded["_w"][:m], w[:m], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(upgraded["_M"].matrix(), M.matrix(), rtol=1e-9, atol=1e-12)
    old = KRLS.__new__(KRLS)
    old.__dict__.update(upgraded)
    for x in as_dicts(X[:20]):
        assert old.predict_one(x) == pytest.approx(model.predict_one(x), abs=1e-10)


def test_a_refresh_that_changes_the_factor_keeps_beta_and_p():
    """A drifted factor (perturbed by 1e-6, as rounding would over a long run) is refreshed from
    the stored Gram at the next check. The recursion's own state, ``beta = G alpha~ = L w`` and
    ``P = (A^T A)^{-1} = L M L^T``, must be what it is for a model keeping the drifted factor
    (what the recursion in beta and P does at a refresh): ``w`` and ``M`` follow the new ``L``.
    Without the carry-over they differ by about the drift."""
    import copy

    X, y = sinc_stream(120, seed=5)
    model = KRLS(kernel=kernels.RBF(gamma=3.0), nu=0.001)
    for x, target in zip(as_dicts(X), y):
        model.learn_one(x, target)
    chol = model._ald.cholesky
    m = chol.size
    chol._L[: m * (m + 1) // 2] *= 1.0 + 1e-6 * np.random.default_rng(0).uniform(
        -1, 1, m * (m + 1) // 2)
    chol._ops_since_check = 10**6  # the next append runs the check
    kept = copy.deepcopy(model)
    kept._ald.cholesky.refresh_tol = np.inf
    new = {"x0": 9.0}  # far from every atom: it joins
    model.learn_one(new, 0.5)
    kept.learn_one(new, 0.5)
    assert model._ald.cholesky.n_refreshes == kept._ald.cholesky.n_refreshes + 1
    assert model.dictionary_size == kept.dictionary_size == m + 1

    def beta_and_p(learner):
        L = learner._ald.cholesky.factor()
        return L @ learner._w[: m + 1], L @ learner._M.matrix() @ L.T

    (b1, P1), (b2, P2) = beta_and_p(model), beta_and_p(kept)
    assert np.abs(model._ald.cholesky.factor() - kept._ald.cholesky.factor()).max() > 1e-8
    np.testing.assert_allclose(b1, b2, rtol=0, atol=1e-12 * np.abs(b2).max())
    np.testing.assert_allclose(P1, P2, rtol=0, atol=1e-12 * np.abs(P2).max())


def test_with_dist_is_the_dense_gaussian_process_posterior():
    # every point in the dictionary (nu tiny), ridge alpha: the mean is kernel ridge regression,
    # the variance tau^2 (k(x,x) - k^T (K + alpha I)^{-1} k + alpha), tau^2 the mean squared
    # a-priori error over its spread (docs/guide/intervals.md), all from dense solves
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    kernel, alpha = kernels.RBF(0.5), 0.3
    model = KRLS(kernel=kernel, nu=1e-9, alpha=alpha, max_size=None)
    for row, target in zip(X, y):
        model.learn_one({"a": row[0], "b": row[1]}, target)
    assert model.dictionary_size == 30
    G = kernel(X, X) + alpha * np.eye(30)
    # the scale: a-priori errors over their predictive spreads, each from the points before
    terms = []
    for t in range(30):
        Gt, kt = G[:t, :t], kernel(X[:t], X[t : t + 1])[:, 0]
        mean = kt @ np.linalg.solve(Gt, y[:t]) if t else 0.0
        spread = 1.0 - (kt @ np.linalg.solve(Gt, kt) if t else 0.0) + alpha
        terms.append((y[t] - mean) ** 2 / spread)
    scale = (1.0 + np.sum(terms)) / (1.0 + len(terms))  # one unit pseudo-observation
    for point in rng.normal(size=(5, 2)):
        dist = model.predict_one({"a": point[0], "b": point[1]}, with_dist=True)
        assert isinstance(dist, proba.Gaussian)
        k = kernel(X, point[None, :])[:, 0]
        assert dist.mu == pytest.approx(k @ np.linalg.solve(G, y), abs=1e-9)
        variance = scale * (1.0 - k @ np.linalg.solve(G, k) + alpha)
        assert dist.sigma ** 2 == pytest.approx(variance, rel=1e-9)
        assert dist.mu == model.predict_one({"a": point[0], "b": point[1]})


def test_with_dist_needs_an_inverse():
    model = FunctionalGD()
    model.learn_one({"x": 1.0}, 0.5)
    with pytest.raises(TypeError, match="no predictive distribution"):
        model.predict_one({"x": 1.0}, with_dist=True)


def test_noise_scale_is_the_same_on_the_array_path():
    X = np.random.default_rng(1).normal(size=(200, 3))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2
    rows = [dict(zip("abc", row)) for row in X]
    one, many = KRLS(), KRLS()
    for x, target in zip(rows, y):
        one.learn_one(x, target)
    many.learn_many(pd.DataFrame(rows), pd.Series(y))
    assert many.noise_scale_sum == pytest.approx(one.noise_scale_sum, rel=1e-12)
    x = rows[7]
    assert (many.predict_one(x, with_dist=True).sigma
            == pytest.approx(one.predict_one(x, with_dist=True).sigma, rel=1e-9))


class PlainRBF(kernels.RBF):
    """An RBF without a compiled form (a user's kernel): KRLS's Python step."""


@pytest.mark.parametrize("kernel", [kernels.RBF(gamma=0.4), kernels.Polynomial(degree=2),
                                    PlainRBF(gamma=0.4)])
def test_each_step_equals_the_batch_solution_as_features_come_and_go(kernel):
    """The compiled step object (predict_one's analysis kept for learn_one, the weights' step
    of a point that does not join), and the Python step of a kernel without a compiled form,
    through rows narrower and wider than the atoms."""
    rng = np.random.default_rng(5)
    X = np.zeros((250, 4))
    for t in range(250):
        width = 1 + min(t // 40, 3)
        X[t, :width] = rng.uniform(-1, 1, size=width)
    X[::4, 0] = 0.0  # a feature absent from these rows
    y = np.sin(2 * X.sum(1)) + 0.05 * rng.normal(size=250)
    rows = [{f"x{j}": float(v) for j, v in enumerate(row) if v != 0.0} for row in X]
    model = KRLS(kernel=kernel, nu=0.02, alpha=1e-3)
    for x, target in zip(rows, y):
        model.predict_one(x)
        model.learn_one(x, target)
    expected, D = batch_krls_weights(X, y, kernel, 0.02, 1e-3)
    assert model.dictionary_size == len(D)
    np.testing.assert_allclose(model.atoms, D)
    np.testing.assert_allclose(model.weights, expected, rtol=1e-9,
                               atol=1e-9 * np.abs(expected).max())


def test_copies_pickles_and_loaded_models_go_on_like_the_original(tmp_path):
    """The compiled step object is a cache on the learner's own buffers: a copy learns on its
    own, the original is unchanged by it, and all go on alike."""
    X, y = sinc_stream(200, seed=3)
    check_copies_go_on(KRLS(nu=0.01, max_size=12), as_dicts(X), y, 100, tmp_path / "m.npz",
                       fields=("noise_scale_sum",))


def krls_replay(X, y, gamma, nu, ridge, max_size):
    """KRLS by dense solves at every step, with ``k(a, b) = exp(-gamma |a - b|^2)`` written out:
    the ALD test of each point against the dictionary before it (joins while there is room),
    the a-priori prediction ``f_{t-1}(x_t)`` of the least-squares weights
    ``G^{-1} (A^T A)^{-1} A^T y`` (spec B.2.3) and the noise scale's sum
    ``sum_t e_t^2 / (max(delta_t, 0) + max(ridge, nu))``."""
    def k(A, B):
        return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))

    D, rows, preds, noise = [], [], [], 0.0
    weights = np.zeros(0)
    for x, target in zip(X, y):
        if D:
            G = k(np.array(D), np.array(D)) + ridge * np.eye(len(D))
            g = k(np.array(D), x[None, :])[:, 0]
            a = np.linalg.solve(G, g)
            delta = 1.0 - g @ a
        else:
            g, a, delta = np.zeros(0), np.zeros(0), 1.0
        prediction = g @ weights
        preds.append(prediction)
        noise += (target - prediction) ** 2 / (max(delta, 0.0) + max(ridge, nu))
        if delta > nu and len(D) < max_size:
            D.append(x)
            a = np.eye(len(D))[-1]
        rows.append(a)
        m = len(D)
        A = np.array([np.pad(r, (0, m - len(r))) for r in rows])
        G = k(np.array(D), np.array(D)) + ridge * np.eye(m)
        weights = np.linalg.solve(G, np.linalg.lstsq(A, y[: len(rows)], rcond=None)[0])
    return np.array(preds), weights, np.array(D), noise, delta


class UserRBF:
    """An RBF written outside okoco, by the protocol only: no compiled form (its columns are
    computed in Python and fed to the compiled step)."""

    def __init__(self, gamma):
        self.gamma = gamma

    def __call__(self, X, Y):
        X, Y = np.atleast_2d(X), np.atleast_2d(Y)
        return np.exp(-self.gamma * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))

    def diag(self, X):
        return np.ones(np.atleast_2d(X).shape[0])


@pytest.mark.parametrize("path", ["one row", "array"])
@pytest.mark.parametrize("kernel", [kernels.RBF(gamma=0.6), UserRBF(0.6)],
                         ids=["compiled", "user"])
def test_every_path_of_the_step_equals_dense_krls_with_its_noise_scale(kernel, path):
    """The one step (okoco._core._steps.krls_step, the join through the ALD and
    ``KRLSState.border``) through each way in, with a bound on the dictionary that is reached:
    each a-priori prediction, the weights, the dictionary, the noise scale's sum and the last
    residual equal a dense replay."""
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, size=(140, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.normal(size=140)
    nu, ridge, max_size = 0.05, 1e-3, 9
    preds, weights, D, noise, delta = krls_replay(X, y, 0.6, nu, ridge, max_size)
    assert len(D) == max_size  # the bound is reached, later points only update the weights
    model = KRLS(kernel=kernel, nu=nu, alpha=ridge, max_size=max_size)
    got = run(model, X, y, path)
    np.testing.assert_allclose(got, preds, rtol=0, atol=1e-8)
    np.testing.assert_allclose(model.atoms, D)
    np.testing.assert_allclose(model.weights, weights, rtol=1e-7, atol=1e-7)
    assert model.noise_scale_sum == pytest.approx(noise, rel=1e-9)
    assert model.last_residual == pytest.approx(delta, rel=1e-9, abs=1e-12)
    assert model._ald.n_seen == len(X)


def test_a_refused_row_of_the_array_loop_leaves_the_ald_record_of_the_row_before():
    """A batch stopped by a refused row (a target whose noise term overflows: an atom of the
    full dictionary again, so a spread of ~nu = 1e-12) keeps the rows before it learned, and the
    dictionary's record of the last point is that of the last row learned, as a batch of
    those rows alone leaves it."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(60, 2))
    X[40] = X[5]
    y = np.sin(X[:, 0])
    bad = y.copy()
    bad[40] = 1e150
    model, alone = KRLS(nu=1e-12, max_size=10), KRLS(nu=1e-12, max_size=10)
    with pytest.raises(ValueError, match="row 40"):
        model.learn_many(X, bad)
    alone.learn_many(X[:40], y[:40])
    assert model.n_seen == alone.n_seen == 40
    assert model.noise_scale_sum == alone.noise_scale_sum
    ald, ref = model._ald, alone._ald
    assert (ald.n_seen, ald.last_residual, ald.last_added) == (ref.n_seen, ref.last_residual,
                                                                ref.last_added)
    np.testing.assert_array_equal(ald.last_kernel_column, ref.last_kernel_column)
    np.testing.assert_array_equal(ald.last_coefficients, ref.last_coefficients)
    np.testing.assert_array_equal(model.predict_many(X), alone.predict_many(X))
