import math

import numpy as np
import pytest
import scipy.linalg
from river import checks, datasets, evaluate, metrics, multiclass, preprocessing
from streams import as_dicts
from typer.testing import CliRunner

import okoco
from okoco import BinaryClassifier, kernels, losses
from okoco import datasets as okoco_datasets
from okoco.cli import app
from okoco.intervals import IntervalRegressor
from okoco.learners import CONKONS, KONS, Auto
from okoco.learners.auto import SharedPoints
from okoco.linalg import Rows


class DenseLinearONS:
    """The Online Newton Step on ``[1, x]`` with dense matrices (features in order of first
    appearance, 0 where absent; a new feature's coordinate starts at u = 0 and A = alpha),
    projecting onto |z.u| <= bound, its predictions clipped to ``[-C, C]``: the reference for
    Auto's linear experts (``curved=False``: A stays alpha I, gradient descent with step
    1/alpha)."""

    def __init__(self, loss, C, alpha, bound, curved=True):
        self.loss, self.C, self.alpha, self.bound, self.curved = loss, C, alpha, bound, curved
        self.names, self.u, self.A = [], np.zeros(1), alpha * np.eye(1)

    def _z(self, x):
        return np.array([1.0, *(x.get(name, 0.0) for name in self.names)])

    def predict_one(self, x):
        return float(np.clip(self._z(x) @ self.u, -self.C, self.C))

    def learn_one(self, x, y):
        for name in x:
            if name not in self.names:
                self.names.append(name)
                m = len(self.u)
                self.u = np.append(self.u, 0.0)
                grown = self.alpha * np.eye(m + 1)
                grown[:m, :m] = self.A
                self.A = grown
        z = self._z(x)
        ybar = z @ self.u
        excess = float(np.sign(ybar) * max(abs(ybar) - self.bound, 0.0))
        Pz = np.linalg.solve(self.A, z)
        w = self.u - excess / (z @ Pz) * Pz
        yhat = ybar - excess
        gdot = float(self.loss.derivative(y, yhat))
        if self.curved:
            self.A = self.A + float(self.loss.second_derivative(y, yhat)) * np.outer(z, z)
        self.u = w - gdot * np.linalg.solve(self.A, z)


class DenseDriftHead:
    """A first-order head on a dictionary (``eta=0``: :math:`A = \\alpha I` for ever), with dense
    matrices: the reference for Auto's drift experts. Its atoms are those of a CON-KONS twin
    (the same KORS coins as Auto's dictionary: seed 0); its coordinates are
    :math:`z = L^{-1}k_J(x)`, :math:`L` the Cholesky factor of the RBF matrix of the atoms,
    computed here from them (features in order of first appearance, 0 where absent). A step
    takes the coordinates after the twin's coin (a point that joins adds its own, ``u = 0``
    there), projects onto :math:`|z^\\top u| \\le C` (``u -= excess z / z.z``) and moves
    ``u -= loss'(y, clip(z.u)) z / alpha``."""

    def __init__(self, twin, gamma, loss, C, alpha):
        self.twin, self.gamma, self.loss, self.C, self.alpha = twin, gamma, loss, C, alpha
        self.names, self.atoms, self.u, self._L = [], [], np.zeros(0), None

    def _vector(self, x):
        self.names += [name for name in x if name not in self.names]
        return np.array([x.get(name, 0.0) for name in self.names])

    def _z(self, v):
        if not self.atoms:
            return np.zeros(0)
        atoms = np.array([np.pad(a, (0, v.shape[0] - a.shape[0])) for a in self.atoms])
        if self._L is None or self._L.shape[0] != len(self.atoms):  # (the atoms changed)
            K = np.exp(-self.gamma * ((atoms[:, None, :] - atoms[None, :, :]) ** 2).sum(-1))
            self._L = np.linalg.cholesky(K)
        k = np.exp(-self.gamma * ((atoms - v) ** 2).sum(-1))
        return scipy.linalg.solve_triangular(self._L, k, lower=True)

    def predict_one(self, x):
        return float(np.clip(self._z(self._vector(x)) @ self.u, -self.C, self.C))

    def learn_one(self, x, y):
        v = self._vector(x)
        ybar = float(self._z(v) @ self.u)
        size = self.twin.dictionary_size
        self.twin.learn_one(x, y)
        if self.twin.dictionary_size > size:
            self.atoms.append(v)
            self.u = np.append(self.u, 0.0)
        z = self._z(v)
        yhat = min(max(ybar, -self.C), self.C)
        gdot = float(self.loss.derivative(y, yhat))
        self.u = self.u - (ybar - yhat) * z / max(z @ z, 1e-300) - gdot * z / self.alpha

    @property
    def dictionary_size(self):
        return len(self.atoms)


def expert_grid(d, loss, C, window=None):
    """The documented grid, built independently of Auto (each expert with kernels of its own):
    CON-KONS (the curvature step) with RBF(0.2/d) and with RBF(3/d), ridge 0.1, its KORS
    dictionary of ridge 1 capped at 500 atoms (none without a window; not reached here, so the
    swap rule never acts, nor the sharp head's switch to first-order steps), coins of seed 0;
    the curvature ONS on [1, x] with ridge 1 and gradient descent on [1, x] with step 1/100,
    both projected onto |z.u| <= 10 C (dense references); the drift experts, gradient descent
    with step 1/3 on each dictionary (dense references on twin dictionaries)."""
    g = 1.0 / d
    cap = None if window is None else 500

    def twin(c):
        return CONKONS(kernel=kernels.RBF(c * g), loss=loss, C=C, alpha=0.1,
                       dictionary_alpha=1.0, max_size=cap, seed=0)

    grid = [twin(c) for c in (0.2, 3.0)]
    grid += [DenseLinearONS(loss, C, 1.0, 10 * C),
             DenseLinearONS(loss, C, 100.0, 10 * C, curved=False)]
    grid += [DenseDriftHead(twin(c), c * g, loss, C, 3.0) for c in (0.2, 3.0)]
    return grid


def bounded_stream(n=150, d=3, C=1.0, seed=0, labels=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sign(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n)) if labels else \
        rng.uniform(-C, C, size=n)  # arbitrary bounded targets: the bound holds on any of them
    return X, y


def softmax(logits):
    w = np.exp(logits - logits.max())
    return w / w.sum()


def closed_form(preds, weights, mix, recent, own, loss, C, fast_rate, labels):
    """Auto's prediction from its definition: the weighted average with the guaranteed
    ``weights`` moved toward the one at ``fast_rate`` on the recent losses by the largest share
    whose worst case the slack (the mix loss ``mix`` minus ``own``) covers."""
    safe = weights @ preds
    fast = softmax(-fast_rate * recent) @ preds
    slack = mix - own
    ends = [-1.0, 1.0] if labels else [-C, C]
    worst = max(float(loss.value(y, fast) - loss.value(y, safe)) for y in ends)
    share = 1.0 if worst <= max(slack, 0.0) else max(slack, 0.0) / worst
    return safe + share * (fast - safe), slack


def fixed_share(weights, step_losses, rate, alpha):
    """Fixed share's step written directly (Herbster & Warmuth 1998): the mix loss's
    increment and the next weights."""
    v = weights * np.exp(-rate * step_losses)
    return -math.log(v.sum()) / rate, (1 - alpha) * v / v.sum() + alpha / len(v)


@pytest.mark.parametrize(("loss", "labels"), [(losses.Squared(), False),
                                              (losses.Logistic(), True)])
@pytest.mark.parametrize("discount", [0.99, 0.8, 1.0])
@pytest.mark.parametrize("alpha", [0.0, 1e-3, 0.1])
def test_predictions_and_weights_match_the_closed_form(loss, labels, discount, alpha):
    """With ``switch_rate=0`` the weights are those of the cumulative losses, the mix loss
    :math:`-\\frac1\\eta\\log\\frac1N\\sum_i e^{-\\eta L_i}`; with one, fixed share's."""
    C = 2.0
    X, y = bounded_stream(C=C, labels=labels)
    model = Auto(loss=loss, C=C, switch_rate=alpha, fast_discount=discount, max_size=None,
                 scale_target=False)
    experts = expert_grid(X.shape[1], loss, C)
    cumulative, recent, own = np.zeros(len(experts)), np.zeros(len(experts)), 0.0
    weights, mix = np.full(len(experts), 1 / len(experts)), 0.0
    rate = loss.exp_concavity(C)
    for x, target in zip(as_dicts(X), y):
        preds = np.array([e.predict_one(x) for e in experts])
        expected, slack = closed_form(preds, weights, mix, recent, own, loss, C, 1.0, labels)
        if not model.n_seen:
            expected, slack = 0.0, 0.0
        got = model.predict_one(x)
        assert got == pytest.approx(expected, abs=1e-12)
        assert model.slack == pytest.approx(slack, abs=1e-9) and slack >= -1e-9
        model.learn_one(x, target)
        for e in experts:
            e.learn_one(x, target)
        own += float(loss.value(target, got))
        step = loss.value(target, preds)
        cumulative += step
        recent = discount * recent + step
        increment, weights = fixed_share(weights, step, rate, alpha)
        mix += increment
    if alpha == 0.0:
        np.testing.assert_allclose(weights, softmax(-rate * cumulative), rtol=1e-10)
        assert mix == pytest.approx(-math.log(np.mean(np.exp(-rate * cumulative))) / rate)
    np.testing.assert_allclose(model.weights, weights, rtol=1e-10)
    np.testing.assert_allclose(model.fast_weights, softmax(-1.0 * recent), rtol=1e-10)
    np.testing.assert_allclose(model.recent_losses, recent, rtol=1e-10)
    np.testing.assert_allclose(model.cumulative_losses, cumulative, rtol=1e-10)
    assert model.cumulative_loss == pytest.approx(own, rel=1e-10)


def test_fast_rate_equal_to_the_rate_is_the_plain_weighted_average():
    X, y = bounded_stream(n=80)
    model = Auto(C=1.0, switch_rate=0.0, fast_rate=1 / 8, fast_discount=1.0, max_size=None,
                 scale_target=False)
    experts = expert_grid(X.shape[1], losses.Squared(), 1.0)
    cumulative = np.zeros(len(experts))
    for x, target in zip(as_dicts(X), y):
        preds = np.array([e.predict_one(x) for e in experts])
        expected = softmax(-cumulative / 8) @ preds if model.n_seen else 0.0
        assert model.predict_one(x) == pytest.approx(expected, abs=1e-12)
        model.learn_one(x, target)
        for e in experts:
            e.learn_one(x, target)
        cumulative += losses.Squared().value(target, preds)


def switching_stream(n=300, C=1.0, seed=1):
    """Targets that follow one expert, then flip sign: where a fast average overreacts."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(np.arange(n) < n // 2, 1.0, -1.0) * np.tanh(X[:, 0]) * C
    return X, y


@pytest.mark.parametrize(("loss", "labels", "stream"), [
    (losses.Squared(), False, "uniform"), (losses.Squared(), False, "switching"),
    (losses.Logistic(), True, "uniform"), (losses.SquaredHinge(), True, "uniform")])
@pytest.mark.parametrize(("fast_rate", "discount"), [(1.0, 0.99), (50.0, 0.5), (1.0, 1.0)])
@pytest.mark.parametrize(("window", "alpha"), [(None, 0.0), (40, 0.0), (40, 1e-3)])
def test_regret_to_the_best_expert_is_within_the_bound_at_every_step(loss, labels, stream,
                                                                      fast_rate, discount,
                                                                      window, alpha):
    """log N / eta with no switch rate; with one, fixed share's bound for a sequence with no
    switch, (log N + (t-1) log(1 / (1 - alpha + alpha/N))) / eta (unbounded or windowed
    experts: the bound does not depend on what the experts are)."""
    C = 1.0
    X, y = (switching_stream(C=C) if stream == "switching"
            else bounded_stream(n=200, C=C, seed=3, labels=labels))
    model = Auto(loss=loss, C=C, switch_rate=alpha, fast_rate=fast_rate,
                 fast_discount=discount, max_size=window, scale_target=False)
    total = 0.0
    for t, (x, target) in enumerate(zip(as_dicts(X), y), 1):
        total += float(loss.value(target, model.predict_one(x)))
        model.learn_one(x, target)
        regret = total - model.cumulative_losses.min()
        n = len(model.experts)
        stay = 1 - alpha + alpha / n
        assert regret <= (math.log(n) - (t - 1) * math.log(stay)) / model.rate + 1e-9
    assert model.rate == loss.exp_concavity(C)
    assert model.slack >= -1e-9


@pytest.mark.parametrize("loss", [None, losses.Logistic()])
@pytest.mark.parametrize("window", [None, 60])
def test_every_expert_computes_what_a_standalone_learner_computes(loss, window):
    """The shared dictionary, the shared ring and kernel rows change no expert's arithmetic:
    each head on the dictionary is CON-KONS with its settings, the linear expert the dense ONS
    on [1, x], each windowed expert KONS (a feature that appears late exercises the padding
    of the stored points and the linear expert's new coordinate)."""
    rng = np.random.default_rng(5)
    n = 300
    X = rng.normal(size=(n, 4))
    X[: n // 3, 3] = 0.0
    y = np.sign(X[:, 0] + 0.2 * rng.normal(size=n)) if loss else np.tanh(X[:, 0] * X[:, 1])
    rows = [{f"x{j}": float(v) for j, v in enumerate(row) if not (j == 3 and i < n // 3)}
            for i, row in enumerate(X)]
    model = Auto(loss=loss, max_size=window, scale_target=False)
    model.learn_one(rows[0], y[0])
    alone = expert_grid(3, model._loss, model.C, window)  # d = 3 at the first learn
    for e in alone:
        e.learn_one(rows[0], y[0])
    for x, target in zip(rows[1:], y[1:]):
        shared = model._analyse(model._features.encode(x, arrays=False)[0])[1]
        np.testing.assert_allclose(shared, [e.predict_one(x) for e in alone], rtol=0, atol=1e-9)
        model.learn_one(x, target)
        for e in alone:
            e.learn_one(x, target)
    assert [e.size for e in model._embeddings] == [a.dictionary_size for a in alone[:2]]
    assert [e.size for e in model._embeddings] == [a.dictionary_size for a in alone[4:]]
    assert min(e.size for e in model._embeddings) > 10
    # no expert keeps a window: the ring of points stays empty
    assert not any(isinstance(e, KONS) for e in model.experts) and model._points.rows.n == 0


def test_shared_rows_equal_each_kernels_own_rows():
    rng = np.random.default_rng(2)
    points, rows = SharedPoints(), Rows()
    for x in rng.normal(size=(30, 3)):
        points.append(x)
        rows.append(x)
    rbf, lin = kernels.RBF(0.4), kernels.Linear()
    family = [rbf, kernels.RBF(0.1), rbf + 0.3 * lin, rbf * kernels.Polynomial(degree=2),
              2.0 * kernels.Laplacian(0.5), kernels.Sum(rbf, lin, normalize=True)]
    for v in (rng.normal(size=3), rng.normal(size=2)):  # the second is narrower: padded
        for kernel in family:
            np.testing.assert_array_equal(points.kernel_row(kernel, v), rows.kernel_row(kernel, v))
    v = rng.normal(size=3)
    first = points.kernel_row(rbf, v)
    points.append(v)  # a new point: the memo is stale
    assert points.kernel_row(rbf, v).shape == (first.shape[0] + 1,)


@pytest.mark.parametrize("model", [Auto(), BinaryClassifier(Auto(loss=losses.Logistic()))])
def test_river_check_estimator(model):
    checks.check_estimator(model)


def test_save_load_is_exact_and_continues_identically(tmp_path):
    X, y = bounded_stream(n=60)
    model = Auto()
    rows = list(zip(as_dicts(X), y))
    for x, target in rows[:30]:
        model.learn_one(x, target)
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    assert [e.describe() for e in loaded.experts] == [e.describe() for e in model.experts]
    assert [e.size for e in loaded._embeddings] == [e.size for e in model._embeddings]
    assert len(loaded._embeddings) == 2 and loaded._embeddings[0].size > 0
    # (a load rebuilds the dictionaries' factors from the model: equal to rounding)
    for x, target in rows[30:]:
        assert loaded.predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9, abs=1e-12)
        model.learn_one(x, target)
        loaded.learn_one(x, target)
    np.testing.assert_allclose(loaded.weights, model.weights, rtol=1e-9, atol=1e-12)
    assert loaded.leader == model.leader
    assert loaded.slack == pytest.approx(model.slack, rel=1e-9, abs=1e-12)


def test_a_saved_auto_keeps_its_own_experts(tmp_path):
    """A model saved with another grid (the four experts before the pool selection) loads with
    its own experts and windows, not today's EXPERTS, and goes on exactly as before."""
    from okoco.learners.auto import EXPERTS

    earlier = ((0.2, 0.1, "hessian", 1.0), (3.0, 0.1, "hessian", 1.0),
               (0.2, 0.1, "hessian", 0.2), (1.0, 0.1, "hessian", 0.2))
    assert EXPERTS != earlier
    X, y = bounded_stream(n=60)
    rows = list(zip(as_dicts(X), y))
    model = Auto(max_size=20)
    model._build_experts = lambda d: Auto._build_experts(model, d, earlier)
    for x, target in rows[:30]:
        model.learn_one(x, target)
    del model._build_experts  # built at the first learn; not state
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    assert [(e.alpha, e.max_size) for e in loaded.experts] == [(0.1, 20), (0.1, 20), (0.1, 4),
                                                               (0.1, 4)]
    for x, target in rows[30:]:  # (the same model: its inverses rebuilt, equal to rounding)
        assert loaded.predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9, abs=1e-12)
        model.learn_one(x, target)
        loaded.learn_one(x, target)
    np.testing.assert_allclose(loaded.cumulative_losses, model.cumulative_losses, rtol=1e-9,
                               atol=1e-12)


def test_shared_store_keeps_its_saved_path_and_an_old_auto_upgrades():
    """The shared store moved to okoco.learners.shared but okoco files still name it
    okoco.learners.auto.SharedPoints; an Auto saved before windows (no max_size) loads as the
    unbounded Auto on raw targets, and a store's own state is left as it is."""
    from okoco.learners import shared

    assert SharedPoints is shared.SharedPoints
    assert f"{SharedPoints.__module__}.{SharedPoints.__qualname__}" == \
        "okoco.learners.auto.SharedPoints"
    from okoco.persistence import _migrations

    old = _migrations._migrate_state(Auto, {"C": 3.0})
    assert old["max_size"] is None and old["scale_target"] is False
    assert _migrations._migrate_state(Auto, {"max_size": 7}) == {"max_size": 7}
    assert _migrations._migrate_state(SharedPoints, {"n": 1}) == {"n": 1}


def test_a_failed_batch_changes_nothing():
    X, y = bounded_stream(n=20)
    model = Auto()
    model.learn_many(X[:10], y[:10])
    before = model.predict_one(as_dicts(X[10:11])[0])
    with pytest.raises(ValueError):
        model.learn_many(X[10:], [*y[10:-1], 1e200])
    assert model.n_seen == 10
    assert all(e.n_seen == 10 for e in model.experts)
    assert all(e.size <= 10 for e in model._embeddings)
    assert model.predict_one(as_dicts(X[10:11])[0]) == before


def test_a_refused_step_changes_nothing():
    """A target too large for the exp-concave expert's step (the hessian experts would take
    it): every expert's step is checked before any is taken, so no expert moves. The default
    grid has no exp-concave expert: this Auto adds the task's expert (as a grid may)."""
    from okoco.learners.auto import EXPERTS

    model = Auto(scale_target=False)
    model._build_experts = lambda d: Auto._build_experts(model, d, (*EXPERTS, "task"))
    for i in range(5):
        model.learn_one({"a": i / 5}, 0.1 * i)
    before = model.predict_one({"a": 0.2})
    with pytest.raises(ValueError, match="too large for a second-order step"):
        model.learn_one({"a": 0.3}, 1e100)
    assert model.n_seen == 5 and model._points.rows.n == 5
    assert len(model.experts) == 6 and model.experts[-1].eta == "exp-concave"
    assert [(e.n_seen, e._store.n, e.dictionary_size) for e in model.experts] == [(5, 5, 5)] * 6
    assert model.predict_one({"a": 0.2}) == before
    model.learn_one({"a": 0.3}, 0.5)  # and it goes on
    assert model.n_seen == 6


def test_classifiers_binary_and_one_vs_rest():
    clf = preprocessing.StandardScaler() | BinaryClassifier(Auto(loss=losses.Logistic()))
    acc = evaluate.progressive_val_score(datasets.Phishing().take(300), clf, metrics.Accuracy())
    assert acc.get() > 0.8
    ovr = preprocessing.StandardScaler() | multiclass.OneVsRestClassifier(
        BinaryClassifier(Auto(loss=losses.Logistic())))
    acc = evaluate.progressive_val_score(datasets.ImageSegments().take(150), ovr,
                                         metrics.Accuracy())
    assert acc.get() > 0.5  # 7 classes: chance is about 0.14


def test_leader_and_bad_parameters():
    model = Auto()
    assert model.leader is None and model.weights.size == 0 and model.predict_one({"a": 1}) == 0
    X, y = bounded_stream(n=40, d=2)
    for x, target in zip(as_dicts(X), y):
        model.learn_one(x, target)
    best = model.experts[int(np.argmin(model.cumulative_losses))]
    expected = best.describe() if hasattr(best, "describe") else (
        f"KONS(kernel={best.kernel!r}, alpha={best.alpha:g}, eta={best.eta!r}, "
        f"max_size={best.max_size!r})")
    assert model.leader == expected
    assert model.dictionary_size == best.dictionary_size > 0
    heads = [e.describe() for e in model.experts if hasattr(e, "describe")]
    assert heads == [f"DictionaryExpert(kernel=RBF(gamma={gamma}), alpha=0.1, eta='hessian', "
                     "max_size=500)" for gamma in (0.1, 1.5)] + [
        "LinearExpert(alpha=1, eta='hessian', bound=30.0)",
        "LinearExpert(alpha=100, eta=0.0, bound=30.0)"] + [
        f"DictionaryExpert(kernel=RBF(gamma={gamma}), alpha=3, eta=0.0, max_size=500)"
        for gamma in (0.1, 1.5)]

    class NoRate(losses.Squared):
        exp_concavity = None

    with pytest.raises(TypeError, match="exp_concavity"):
        Auto(loss=NoRate())
    with pytest.raises(ValueError, match="fast_rate"):
        Auto(fast_rate=0.0)
    with pytest.raises(TypeError, match="fast_rate"):
        Auto(fast_rate="fast")
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="fast_discount"):
            Auto(fast_discount=bad)
    for bad in (0, 4, -1):
        with pytest.raises(ValueError, match="max_size"):
            Auto(max_size=bad)
    with pytest.raises(TypeError, match="max_size"):
        Auto(max_size=10.5)
    with pytest.raises(TypeError, match="scale_target"):
        Auto(scale_target="yes")


@pytest.mark.parametrize("checkpoint", [False, True])
def test_cli_replay_summary_names_the_leader(tmp_path, checkpoint):
    extra = ["--checkpoint", str(tmp_path / "run.ckpt.npz")] if checkpoint else []
    result = CliRunner().invoke(app, ["replay", "sinc", "-d", "n=80", "-l", "auto", *extra])
    assert result.exit_code == 0, result.output
    line = next(s for s in result.stdout.splitlines() if s.startswith("leader"))
    model = preprocessing.StandardScaler() | Auto()  # Auto scales its targets itself
    for x, target in okoco_datasets.load("sinc", n=80):
        model.predict_one(x)
        model.learn_one(x, target)
    assert line.split(None, 1)[1] == model["Auto"].leader
    other = CliRunner().invoke(app, ["replay", "sinc", "-d", "n=30", "-l", "kons"])
    assert "leader" not in other.stdout


def test_raw_targets_are_standardized_inside_as_river_does_it():
    """Auto on raw targets = mean + std * (Auto on targets standardized by the running mean and
    standard deviation, ddof 1, including the current target), with the statistics of the
    targets seen so far at each prediction: an independent numpy reference."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 3))
    y = 40.0 + 5.0 * np.sin(X[:, 0]) + 2.0 * X[:, 1] + np.linspace(0, 10, 150)
    raw = Auto(max_size=50)
    scaled = Auto(max_size=50, scale_target=False)
    for t, (x, target) in enumerate(zip(as_dicts(X), y)):
        mean = y[:t].mean() if t else 0.0
        std = y[:t].std(ddof=1) if t > 1 else 0.0
        assert raw.predict_one(x) == pytest.approx(mean + std * scaled.predict_one(x),
                                                   rel=1e-9, abs=1e-9)
        seen = y[: t + 1]
        z = (target - seen.mean()) / seen.std(ddof=1) if t else 0.0
        raw.learn_one(x, target)
        scaled.learn_one(x, z)
    assert raw.target_count == 150 and raw.target_mean == pytest.approx(y.mean())
    assert raw.target_std == pytest.approx(y.std(ddof=1))


def test_raw_trump_approval_is_within_5_percent_of_the_scaled_result_without_a_warning():
    import warnings

    rows = list(datasets.TrumpApproval())  # (1,001 rows; over the first 400, 0.363 vs 0.338)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raw = evaluate.progressive_val_score(
            rows, preprocessing.StandardScaler() | Auto(), metrics.MAE()).get()
    scaled = evaluate.progressive_val_score(
        rows, preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | Auto()),
        metrics.MAE()).get()
    assert raw <= 1.05 * scaled


def test_the_forgetting_experts_follow_a_switch():
    """After the target function flips, an expert that forgets leads: the constant-step linear
    expert or a drift head (first-order, constant step, on a dictionary); no point is kept for
    a window."""
    rng = np.random.default_rng(6)
    n = 600
    X = rng.normal(size=(n, 2))
    y = np.where(np.arange(n) < 300, 1.0, -1.0) * np.tanh(2 * X[:, 0])
    model = Auto(scale_target=False, C=1.0)
    for x, target in zip(as_dicts(X), y):
        model.learn_one(x, target)
    assert [e.eta for e in model.experts[3:]] == [0.0, 0.0, 0.0]
    assert np.argmax(model.fast_weights) in (3, 4, 5)
    assert model._points.rows.n == 0


def test_a_windowed_grid_bounds_memory():
    """A grid of windowed KONS (``KONS_EXPERTS``, ``MulticlassClassifier(Auto())``'s):
    the shared ring and every expert's state stop growing."""
    from okoco.learners.auto import KONS_EXPERTS

    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 2))
    model = Auto(max_size=100, scale_target=False, C=1.0)
    model._build_experts = lambda d: Auto._build_experts(model, d, KONS_EXPERTS)
    for x, target in zip(as_dicts(X), np.tanh(2 * X[:, 0])):
        model.learn_one(x, target)
    # the ring holds the longest window (100 points); the forgetting KONS keep their inverse
    # over slots of their own (51 and 21 for 50 and 20 points)
    assert model._points.rows.n == 101 and model._points.rows.data.shape[0] <= 202
    assert [e.dictionary_size for e in model.experts] == [100, 100, 100, 50, 20]
    assert [e._window.P.shape for e in model.experts[3:]] == [(51, 51), (21, 21)]


def test_with_dist_mixes_the_experts_in_the_targets_units():
    wrapper = IntervalRegressor(Auto(), coverage=0.9)
    model = preprocessing.StandardScaler() | wrapper
    for x, target in datasets.TrumpApproval().take(400):
        model.learn_one(x, target)
    auto, scaler = wrapper.regressor, model["StandardScaler"]
    assert wrapper._with_dist is True  # the calibration uses Auto's own spread
    x = scaler.transform_one(next(iter(datasets.TrumpApproval()))[0])
    dist = auto.predict_one(x, with_dist=True)
    assert dist.mu == pytest.approx(auto.predict_one(x), rel=1e-12)  # raw target units
    # the mixture's variance, in standardized units, with the weights the prediction uses
    analyses, preds, own, _ = auto._analyse(auto._features.encode(x, arrays=False)[0])
    safe, fast, _ = auto._mix()
    share = auto._share(*auto._averages(preds))
    w = np.array(safe) + share * (np.array(fast) - np.array(safe))
    variances = np.array([e._variance_of(a) for e, a in zip(auto.experts, analyses)])
    mixture = w @ (variances + np.square(preds)) - (w @ preds) ** 2
    assert own == pytest.approx(w @ preds, rel=1e-12)
    assert dist.sigma == pytest.approx(auto.target_std * math.sqrt(mixture), rel=1e-9)
    bound = (0.9 + 0.02) / (0.02 * 400)
    assert abs(wrapper.coverage_seen - 0.9) <= bound


@pytest.mark.slow
def test_the_dictionary_experts_keep_learning_on_a_long_stationary_stream():
    """river's Friedman #1 (Bayes MAE 0.80), 30,000 steps: Auto's error over the last 10,000
    is below its error over steps 10,000-20,000 (a window would be flat by then)."""
    from river.datasets import synth

    model = preprocessing.StandardScaler() | Auto()
    errors = []
    for x, target in synth.Friedman(seed=1).take(30_000):
        errors.append(abs(target - model.predict_one(x)))
        model.learn_one(x, target)
    blocks = np.array(errors).reshape(3, -1).mean(axis=1)
    assert blocks[2] < blocks[1] < blocks[0] and blocks[2] < 0.93


def test_with_dist_refuses_a_variance_that_overflows_in_the_targets_units():
    """The standardized variance is finite, its value in the targets' units (times std^2) is
    not: with_dist raises ValueError (as every learner's with_dist does) instead of returning an
    infinite sigma, and a plain prediction still works. The running statistics are set to the
    largest spread float64 holds (targets within 1e150 keep std^2 below 1e300 otherwise)."""
    from okoco.learners import Auto

    model = Auto()
    rng = np.random.default_rng(0)
    for _ in range(30):
        x = float(rng.normal())
        model.learn_one({"x": x}, x + rng.normal())
    far = {"x": 40.0}  # away from the data: the standardized sigma is above 1
    assert model.predict_one(far, with_dist=True).sigma > 1.0
    model.target_count, model._target_m2 = 2, 1.7e308  # std^2 = 1.7e308
    assert np.isfinite(model.predict_one(far))
    with pytest.raises(ValueError, match="predictive variance"):
        model.predict_one(far, with_dist=True)


@pytest.mark.parametrize("kept", ["DictionaryExpert", "LinearExpert"])
def test_a_model_whose_feature_map_lost_a_column_is_refused(kept):
    """Auto's file invariant: every column its dictionaries' atoms or its linear heads hold is
    a feature it knows (the windows' ring said so once; the default grid keeps no window).
    Either kind of expert alone tells."""
    from okoco.persistence._invariants import check_model

    model = Auto()
    for x, target in zip(as_dicts(np.random.default_rng(0).normal(size=(30, 3))), range(30)):
        model.learn_one(x, float(target % 3))
    check_model(model, "state")
    model.experts = [e for e in model.experts if type(e).__name__ == kept]
    model._features.columns = {"x0": 0, "x1": 1}
    with pytest.raises(ValueError, match="features.columns"):
        check_model(model, "state")
