"""The compiled per-step work of Auto's mixture (okoco._core._mixture.Mixture), of the usage
rule and of the embedding's solve (okoco._core._embedding): against direct numpy references of
the formulas in okoco.learners.auto's and okoco.learners._mixture's docstrings (fixed share in
weights, not logarithms; the mix loss in closed form; the usages step by step; dense solves),
the slack bound A_t <= Phi_t at every step on random losses, and the state's contract with its
owner (the saved arrays are the state's, a reset or a load is adopted, a refused call changes
nothing)."""

import math
import pickle

import numpy as np
import pytest
from okoco._core._embedding import embed, usage_step
from okoco._core._mixture import Mixture

from okoco import losses
from okoco.learners import Auto
from okoco.learners._mixture import ExpertMixture

C = 3.0
SQUARED = losses.Squared()
ENDS = np.array([-C, C])


class Owner(ExpertMixture):
    """The least owner of the mixin, spending the slack as Auto does on the squared loss of
    targets in [-C, C] (the worst case over the two ends)."""

    def __init__(self, n, switch_rate, fast_rate=1.0, fast_discount=0.99):
        self.experts = [object()] * n
        self.rate = float(SQUARED.exp_concavity(C))
        self.switch_rate, self.fast_rate, self.fast_discount = switch_rate, fast_rate, fast_discount
        self.cumulative_losses, self.recent_losses = np.zeros(n), np.zeros(n)
        self.cumulative_loss, self.log_weights, self.mix_loss = 0.0, np.zeros(0), 0.0
        self._mixture = None

    def _share(self, safe, fast):
        return self._spend(float(np.max((ENDS - fast) ** 2 - (ENDS - safe) ** 2)))


class Reference:
    """The mixture written directly from the docstrings: fixed share's weights (not their
    logarithms) and mix loss, or the cumulative losses' weights and closed-form mix loss; the
    fast weights of the discounted losses."""

    def __init__(self, n, rate, switch_rate, fast_rate=1.0, fast_discount=0.99):
        self.rate, self.alpha, self.fast_rate, self.discount = (rate, switch_rate, fast_rate,
                                                                fast_discount)
        self.w, self.mix = np.full(n, 1.0 / n), 0.0
        self.L, self.R, self.A = np.zeros(n), np.zeros(n), 0.0

    def weights(self):
        fast = np.exp(-self.fast_rate * self.R)
        if self.alpha:
            return self.w.copy(), fast / fast.sum(), self.mix
        safe = np.exp(-self.rate * self.L)
        mix = -math.log(np.mean(np.exp(-self.rate * self.L))) / self.rate
        return safe / safe.sum(), fast / fast.sum(), mix

    def record(self, loss, own):
        if self.alpha:
            v = self.w * np.exp(-self.rate * loss)
            self.mix += -math.log(v.sum()) / self.rate
            self.w = (1 - self.alpha) * v / v.sum() + self.alpha / v.size
        self.L, self.R, self.A = self.L + loss, self.discount * self.R + loss, self.A + own


@pytest.mark.parametrize("switch_rate", [0.0, 1e-3, 0.1])
@pytest.mark.parametrize("n", [1, 6, 11])
def test_the_compiled_mixture_is_the_direct_formulas_and_keeps_the_slack(switch_rate, n):
    """On random predictions and targets (a leader that changes halfway): the weights at both
    rates, the slack, the two averages and the prediction are the reference's at every step
    (1e-12 relative), and the slack Phi_t - A_t never goes below zero (A_t <= Phi_t)."""
    rng = np.random.default_rng(n)
    owner = Owner(n, switch_rate)
    ref = Reference(n, owner.rate, switch_rate)
    for t in range(400):
        y = rng.uniform(-C, C)
        best = 0 if t < 200 else n - 1
        preds = np.clip(y + rng.normal(0.0, 1.5, size=n), -C, C)
        preds[best] = np.clip(y + rng.normal(0.0, 0.2), -C, C)
        safe_w, fast_w, mix = ref.weights()
        np.testing.assert_allclose(owner.weights, safe_w, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(owner.fast_weights, fast_w, rtol=1e-12, atol=1e-300)
        assert owner.slack == pytest.approx(mix - ref.A, rel=1e-10, abs=1e-10)
        safe, fast = owner._averages(preds.tolist())
        assert safe == pytest.approx(safe_w @ preds, rel=1e-12, abs=1e-14)
        assert fast == pytest.approx(fast_w @ preds, rel=1e-12, abs=1e-14)
        worst = float(np.max((ENDS - fast) ** 2 - (ENDS - safe) ** 2))
        share = 1.0 if worst <= max(mix - ref.A, 0.0) else max(mix - ref.A, 0.0) / worst
        own = owner._combine(preds.tolist())
        assert own == pytest.approx(safe + share * (fast - safe), rel=1e-12, abs=1e-14)
        expert_losses = (preds - y) ** 2
        own_loss = (own - y) ** 2
        owner._record(expert_losses, own_loss)
        ref.record(expert_losses, own_loss)
        assert owner.cumulative_loss <= ref.weights()[2] + 1e-9  # A_t <= Phi_t
        assert owner.slack >= -1e-9
    np.testing.assert_allclose(owner.cumulative_losses, ref.L, rtol=1e-13)
    np.testing.assert_allclose(owner.recent_losses, ref.R, rtol=1e-13)
    if switch_rate:
        np.testing.assert_allclose(np.exp(owner.log_weights), ref.w, rtol=1e-11)
        assert owner.mix_loss == pytest.approx(ref.mix, rel=1e-12)


def test_the_averages_of_class_scores_are_the_weighted_sums():
    """The multiclass form's predictions (a score a class): each average is the weighted sum
    of the experts' score vectors."""
    rng = np.random.default_rng(1)
    owner = Owner(4, 0.0)
    owner._record(rng.uniform(0, 2, size=4), 1.0)
    preds = [rng.normal(size=3) for _ in range(4)]
    safe, fast = owner._averages(preds)
    np.testing.assert_allclose(safe, owner.weights @ np.array(preds), rtol=1e-13)
    np.testing.assert_allclose(fast, owner.fast_weights @ np.array(preds), rtol=1e-13)
    with pytest.raises(ValueError, match="expert 2 gives 2 scores"):
        owner._averages([preds[0], preds[1], preds[2][:2], preds[3]])


def test_the_state_owns_the_saved_arrays_and_adopts_new_ones():
    """The owner's loss arrays are the state's (updated in place, not replaced); arrays the
    owner is given (a reset, a load) are adopted as copies; a pickled state is a fresh cache."""
    owner = Owner(3, 0.01)
    owner._record(np.array([1.0, 2.0, 3.0]), 1.5)
    arrays = (owner.cumulative_losses, owner.recent_losses, owner.log_weights)
    owner._record(np.array([0.5, 0.5, 0.5]), 0.5)
    assert all(a is b for a, b in zip(arrays, (owner.cumulative_losses, owner.recent_losses,
                                               owner.log_weights)))
    np.testing.assert_array_equal(owner.cumulative_losses, [1.5, 2.5, 3.5])
    given = np.array([10.0, 0.0, 0.0])
    owner.cumulative_losses = given  # (as a load sets it)
    owner._record(np.array([1.0, 1.0, 1.0]), 1.0)
    np.testing.assert_array_equal(given, [10.0, 0.0, 0.0])  # a copy was adopted
    np.testing.assert_array_equal(owner.cumulative_losses, [11.0, 1.0, 1.0])
    state = pickle.loads(pickle.dumps(owner._mixture))
    assert isinstance(state, Mixture)
    np.testing.assert_array_equal(state.weights(owner)[0], owner.weights)


def test_a_refused_record_changes_nothing():
    owner = Owner(3, 0.01)
    assert owner.slack == 0.0 and owner._combine([0.0, 1.0, 2.0]) == pytest.approx(1.0)
    assert owner.log_weights.size == 0  # (a prediction keeps the uniform prior implicit)
    owner._record(np.array([1.0, 2.0, 3.0]), 1.5)
    before = (owner.cumulative_losses.copy(), owner.recent_losses.copy(),
              owner.log_weights.copy(), owner.mix_loss, owner.cumulative_loss, owner.slack)
    with pytest.raises(ValueError, match="record: 2 losses for 3 experts"):
        owner._record(np.array([1.0, 2.0]), 1.0)
    after = (owner.cumulative_losses, owner.recent_losses, owner.log_weights,
             owner.mix_loss, owner.cumulative_loss, owner.slack)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="averages: 2 predictions for 3 experts"):
        owner._averages([0.0, 1.0])


def test_auto_saves_and_loads_the_compiled_mixture(tmp_path):
    """Auto's file holds the loss arrays and scalars as before; the loaded model rebuilds the
    state (the same weights and slack, bit for bit) and predicts and learns as the live one
    (to 1e-9: the experts' rebuilt factors differ in the last bits)."""
    import okoco

    rng = np.random.default_rng(2)
    rows = [({i: float(v) for i, v in enumerate(x)}, float(np.sin(x[0]) + x[1]))
            for x in rng.normal(size=(160, 3))]
    model = Auto(max_size=20)
    for x, y in rows[:120]:
        model.learn_one(x, y)
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    assert loaded._mixture is None
    for mine, theirs in zip(model._mix(), loaded._mix()):
        np.testing.assert_array_equal(mine, theirs)
    for x, y in rows[120:]:
        assert loaded.predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9)
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    np.testing.assert_allclose(loaded.log_weights, model.log_weights, rtol=1e-9)
    np.testing.assert_allclose(loaded.cumulative_losses, model.cumulative_losses, rtol=1e-9)
    assert loaded.mix_loss == pytest.approx(model.mix_loss, rel=1e-9)


def usage_reference(usage, count, mean, k, residual, horizon, margin):
    """The usage rule's step written directly: ``(usage, count, mean, j)``."""
    decay = 1.0 - 1.0 / horizon
    usage = decay * usage + (k / k.sum() if k.sum() > 0 else 0.0)
    count = decay * count + 1.0
    mean = mean + (residual - mean) / min(count, horizon)
    j = int(np.argmin(usage)) if margin else -1
    if j >= 0 and not (usage[j] < count / (margin * usage.size) and residual > mean):
        j = -1
    return usage, count, mean, j


def test_the_usage_step_is_the_direct_formulas():
    """Random kernel rows (some zero, some atoms unused for long): the compiled step's usages
    (bit for bit: numpy's pairwise sum written out), count, mean residual and pick are the
    reference's at every step, and some picks are made."""
    rng = np.random.default_rng(3)
    m, horizon, margin = 37, 25, 3.0
    usage, count, mean = np.full(m, 0.0), 0.0, 0.0
    want = (usage.copy(), count, mean)
    picks = 0
    for t in range(600):
        k = rng.exponential(size=m) * (rng.uniform(size=m) < 0.5)
        k[: m // 3] *= 1e-3 if t > 100 else 1.0  # atoms the later points barely use
        if t % 97 == 0:
            k[:] = 0.0
        residual = rng.uniform()
        count, mean, j = usage_step(usage, k, residual, count, mean, horizon, margin)
        *want, wj = usage_reference(*want, k, residual, horizon, margin)
        np.testing.assert_array_equal(usage, want[0])
        assert (count, mean, j) == (want[1], want[2], wj)
        picks += j >= 0
    assert picks > 10


def test_a_refused_usage_step_changes_nothing():
    usage = np.ones(4)
    with pytest.raises(ValueError, match="a kernel row of 3 entries for 4 atoms"):
        usage_step(usage, np.ones(3), 0.5, 1.0, 0.0, 10, 2.0)
    with pytest.raises(ValueError, match="horizon must be at least 1"):
        usage_step(usage, np.ones(4), 0.5, 1.0, 0.0, 0.5, 2.0)
    np.testing.assert_array_equal(usage, np.ones(4))


def test_embed_is_the_dense_solve_and_residual():
    """h = L^{-1} k and k(x, x) - h.h of a point against the atoms: the dense triangular solve
    over the factor of K_I, and the residual of the dense projection k(x,x) - k K^{-1} k."""
    from okoco import kernels
    from okoco.linalg import IncrementalCholesky

    rng = np.random.default_rng(4)
    kernel, atoms = kernels.RBF(0.5), rng.normal(size=(9, 3))
    K = kernel(atoms, atoms)
    chol = IncrementalCholesky()
    for i in range(len(atoms)):
        chol.append(K[i, :i], K[i, i])
    x = rng.normal(size=3)
    k = kernel(x[None, :], atoms)[0]
    h, residual = embed(chol.factor_storage(), chol.size, k, 1.0)
    np.testing.assert_allclose(h, np.linalg.solve(np.linalg.cholesky(K), k), rtol=1e-10)
    assert residual == pytest.approx(1.0 - k @ np.linalg.solve(K, k), rel=1e-9)
    with pytest.raises(ValueError, match="a kernel row of 8 entries for 9 atoms"):
        embed(chol.factor_storage(), chol.size, k[:8], 1.0)
    assert embed(np.zeros(0), 0, np.zeros(0), 2.0)[1] == 2.0
