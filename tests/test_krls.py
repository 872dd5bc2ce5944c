import numpy as np
import pytest
from river import checks, datasets, evaluate, metrics, preprocessing
from streams import as_dicts

from okoco import kernels, losses
from okoco.learners import KRLS


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
