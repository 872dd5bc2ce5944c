import numpy as np
import pytest
from river import checks, datasets, evaluate, metrics, preprocessing
from streams import as_dicts, check_copies_go_on, run, unit_rows

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import FunctionalGD


def primal_projected_ogd(X, y, loss, C, eta, lam=0.0, budget=None):
    """Projected OGD with explicit features: the reference FunctionalGD must reproduce."""
    d = X.shape[1]
    w = np.zeros(d)
    terms = []  # (x, coef) pairs, for the budget variant
    preds, active = [], 0
    for t, (x, target) in enumerate(zip(X, y), start=1):
        w = sum((c * xi for xi, c in terms), np.zeros(d)) if budget else w
        ybar = w @ x
        excess = np.sign(ybar) * max(abs(ybar) - C, 0.0)
        active += excess != 0
        yhat = ybar - excess
        preds.append(yhat)
        e = eta(t) if callable(eta) else eta
        g = loss.derivative(target, yhat)
        if budget:
            terms = [(xi, (1 - e * lam) * c) for xi, c in terms]
            terms.append((x, -(1 - e * lam) * excess / (x @ x) - e * g))
            terms = terms[-budget:]
        else:
            w = (1 - e * lam) * (w - excess / (x @ x) * x) - e * g * x
    return np.array(preds), active / len(X)


@pytest.mark.parametrize(
    ("loss", "eta", "lam", "budget"),
    [
        (losses.Squared(), 0.3, 0.0, None),
        (losses.Squared(), lambda t: 0.8 / np.sqrt(t), 0.05, None),
        (losses.Logistic(), 0.7, 0.0, None),
        (losses.Squared(), 0.3, 0.1, 25),
    ],
)
def test_linear_kernel_equals_primal_projected_ogd(loss, eta, lam, budget):
    X = unit_rows(400, 6, seed=3)
    y = np.sign(X @ np.arange(1.0, 7.0))
    if isinstance(loss, losses.Squared):
        y = 2.0 * np.sin(4 * X[:, 0])
    C = 0.3
    expected, active = primal_projected_ogd(X, y, loss, C, eta, lam, budget)
    model = FunctionalGD(kernel=kernels.Linear(), loss=loss, C=C, eta=eta, lam=lam, budget=budget)
    got = []
    for x, target in zip(as_dicts(X), y):
        got.append(model.predict_one(x))
        model.learn_one(x, target)
    assert active > 0.2  # the projection must be exercised
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    assert model.dictionary_size == (budget or len(X))
    assert np.all(np.abs(got) <= C)


def test_step_size_policies():
    model = FunctionalGD(loss=losses.Squared(), C=2.0, eta="sqrt")
    assert model._eta(4) == pytest.approx(1 / (losses.Squared().lipschitz(2.0) * 2.0 * 2))
    model = FunctionalGD(loss=losses.Logistic(), C=2.0, eta="exp-concave")
    assert model._eta(10) == pytest.approx(np.exp(-2.0))
    with pytest.raises(ValueError, match="policy"):
        FunctionalGD(eta="fast")
    with pytest.raises(ValueError, match="eta must be a policy name .*got 'hessian'"):
        FunctionalGD(eta="hessian")  # a first-order step has no curvature weight
    with pytest.raises(ValueError):
        FunctionalGD(eta=-1.0)
    with pytest.raises(ValueError, match="C must"):
        FunctionalGD(C=0.0)
    with pytest.raises(ValueError, match="budget"):
        FunctionalGD(budget=0)


def test_callable_eta_failing_leaves_state_untouched():
    model = FunctionalGD(eta=lambda t: 0.1 if t < 3 else float("nan"))
    model.learn_one({"a": 1.0}, 0.5)
    model.learn_one({"a": 0.0}, 0.5)
    before = model.predict_one({"a": 0.3, "b": 1.0})
    with pytest.raises(ValueError, match="eta"):
        model.learn_one({"b": 1.0}, 0.1)
    assert model.n_seen == 2 and model.dictionary_size == 2
    assert model.predict_one({"a": 0.3, "b": 1.0}) == before
    assert "b" not in model._features.columns


@pytest.mark.parametrize(
    "model", [FunctionalGD(), FunctionalGD(budget=30, lam=0.1),
              BinaryClassifier(FunctionalGD(loss=losses.Logistic()))],
)
def test_river_check_estimator(model):
    checks.check_estimator(model)


def test_progressive_validation_on_river_datasets():
    reg = preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | FunctionalGD(C=3.0, eta=0.2)
    )
    mae = evaluate.progressive_val_score(datasets.TrumpApproval(), reg, metrics.MAE())
    clf = preprocessing.StandardScaler() | BinaryClassifier(
        FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5)
    )
    acc = evaluate.progressive_val_score(datasets.Phishing(), clf, metrics.Accuracy())
    # Predicting the running mean scores MAE ~ 1.3 on TrumpApproval and Phishing is ~55/45.
    assert mae.get() < 1.0
    assert acc.get() > 0.8


def test_predict_many_and_learn_many_match_one_at_a_time():
    X = unit_rows(60, 3, seed=5)
    y = X[:, 0] - X[:, 1]
    one, many = FunctionalGD(eta=0.5), FunctionalGD(eta=0.5)
    for x, target in zip(as_dicts(X), y):
        one.learn_one(x, target)
    many.learn_many(X, y)
    Q = unit_rows(10, 3, seed=6)
    np.testing.assert_allclose(many.predict_many(Q), [one.predict_one(x) for x in as_dicts(Q)],
                               rtol=1e-12)


def dense_fgd(rows, y, gamma, loss, C, eta, lam, budget):
    """NORMA with an explicit list of terms and the RBF kernel computed directly: rows are dicts
    whose features come and go (a missing one is 0)."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    X = np.array([[row.get(name, 0.0) for name in names] for row in rows])
    terms, preds = [], []
    for x, target in zip(X, y):
        ybar = sum(c * np.exp(-gamma * np.sum((xi - x) ** 2)) for xi, c in terms)
        excess = np.sign(ybar) * max(abs(ybar) - C, 0.0)
        preds.append(ybar - excess)
        shrink = 1.0 - eta * lam
        terms = [(xi, shrink * c) for xi, c in terms]
        terms.append((x, -shrink * excess - eta * loss.derivative(target, ybar - excess)))
        terms = terms[-budget:] if budget else terms
    return np.array(preds)


@pytest.mark.parametrize(("loss", "lam", "budget"), [(losses.Squared(), 0.0, None),
                                                     (losses.Logistic(), 0.05, 30),
                                                     (losses.Squared(), 0.1, 7)])
def test_compiled_step_equals_dense_norma_as_features_come_and_go(loss, lam, budget):
    """The compiled step object (one call per learn_one) through buffers that grow, widen
    and wrap around, rows narrower and wider than the stored ones."""
    rng = np.random.default_rng(4)
    rows = []
    for t in range(150):
        width = 1 + min(t // 20, 6)
        row = {f"x{j}": float(v) for j, v in enumerate(rng.normal(size=width))}
        if t % 3 == 0:
            row.pop("x0")  # a feature vanishes from this row
        rows.append(row)
    y = np.array([np.sin(sum(r.values())) for r in rows])
    if isinstance(loss, losses.Logistic):
        y = np.where(y > 0, 1.0, -1.0)
    model = FunctionalGD(kernel=kernels.RBF(gamma=0.3), loss=loss, C=0.4, eta=0.5, lam=lam,
                         budget=budget)
    got = []
    for x, target in zip(rows, y):
        got.append(model.predict_one(x))
        model.learn_one(x, target)
    np.testing.assert_allclose(got, dense_fgd(rows, y, 0.3, loss, 0.4, 0.5, lam, budget),
                               rtol=0, atol=1e-12)


def test_copies_pickles_and_loaded_models_go_on_like_the_original(tmp_path):
    """The compiled step object is a cache on the learner's own buffers: a copy learns on
    its own buffers, the original is unchanged by it, and all go on alike."""
    rows = as_dicts(unit_rows(60, 4, seed=2))
    check_copies_go_on(FunctionalGD(eta=0.4, budget=25), rows, np.sin(np.arange(60.0)), 30,
                       tmp_path / "m.npz")


class UserPolynomial:
    """A kernel written outside okoco, by the protocol only (``k(X, Y)``, ``diag(X)``): it has
    no compiled form, so the learner computes its rows in Python and feeds them to the step."""

    def __init__(self, gamma, coef0):
        self.gamma, self.coef0 = gamma, coef0

    def __call__(self, X, Y):
        return (self.gamma * np.atleast_2d(X) @ np.atleast_2d(Y).T + self.coef0) ** 2

    def diag(self, X):
        return (self.gamma * np.einsum("ij,ij->i", X, X) + self.coef0) ** 2


class HalfSquared(losses.Squared):
    """``(y - z)^2 / 2``: a loss without a compiled form (its derivative comes from Python)."""

    def derivative(self, y, z):
        return z - y


def norma(X, y, gamma, coef0, derivative, C, eta, lam, budget, shrink_projection=True):
    """NORMA written out over an explicit list of terms, with ``k(a, b) = (gamma a.b +
    coef0)^2``: project ``f`` onto ``|f(x)| <= C`` (the term ``-h(ybar) / k(x, x)``), then
    shrink every term, the projection's included, by ``1 - eta lam`` and add the gradient's
    term ``-eta l'(y, clip(ybar))``; keep the last ``budget`` terms. ``shrink_projection=False``
    leaves the projection's term unshrunk (a wrong variant, to show the test would see it)."""
    def k(a, b):
        return (gamma * a @ b + coef0) ** 2

    terms, preds, clipped = [], [], 0
    for x, target in zip(X, y):
        ybar = sum(c * k(xi, x) for xi, c in terms)
        yhat = min(max(ybar, -C), C)
        clipped += yhat != ybar
        preds.append(yhat)
        shrink = 1.0 - eta * lam
        projection = -(ybar - yhat) / k(x, x)
        terms = [(xi, shrink * c) for xi, c in terms]
        terms.append((x, (shrink if shrink_projection else 1.0) * projection
                      - eta * derivative(target, yhat)))
        terms = terms[-budget:]
    return np.array(preds), clipped / len(X)


@pytest.mark.filterwarnings("ignore:the targets average")
@pytest.mark.parametrize("path", ["one row", "array"])
@pytest.mark.parametrize("loss", [losses.Squared(), HalfSquared()], ids=["compiled", "user"])
@pytest.mark.parametrize("kernel", [kernels.Polynomial(degree=2, gamma=0.5, coef0=1.0),
                                    UserPolynomial(0.5, 1.0)], ids=["compiled", "user"])
def test_every_path_of_the_step_equals_a_hand_written_norma_recursion(kernel, loss, path):
    """The one step (okoco._core._steps.fgd_step) through each way in: compiled kernel and
    loss, a user's kernel (rows fed from Python), a user's loss (its derivative from Python),
    one row at a time and the array loop; the projection active and lam > 0, so NORMA's
    shrink of the projection's term is checked (the unshrunk variant is far off)."""
    X = unit_rows(160, 3, seed=7)
    y = 2.0 * np.sin(3 * X[:, 0]) + X[:, 1]
    C, eta, lam, budget = 0.5, 0.3, 0.4, 40
    derivative = loss.derivative
    expected, clipped = norma(X, y, 0.5, 1.0, derivative, C, eta, lam, budget)
    wrong, _ = norma(X, y, 0.5, 1.0, derivative, C, eta, lam, budget, shrink_projection=False)
    assert clipped > 0.2  # the projection is exercised
    assert np.abs(wrong - expected).max() > 1e-2  # the shrink of the projection matters
    model = FunctionalGD(kernel=kernel, loss=loss, C=C, eta=eta, lam=lam, budget=budget)
    got = run(model, X, y, path)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    assert model.dictionary_size == budget
