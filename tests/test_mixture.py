"""Fixed share in Auto's mixture (okoco.learners._mixture): the weights against a direct
recursion, the mix loss against the mixture over every switching path, and the bound on the
regret to the best switching sequence of experts, checked at every step."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from streams import as_dicts

import okoco
from okoco import losses
from okoco.learners import Auto
from okoco.learners._mixture import ExpertMixture


class Owner(ExpertMixture):
    """The least owner of the mixin: N experts, losses given by the test."""

    def __init__(self, n, rate, switch_rate, fast_rate=1.0, fast_discount=0.99):
        self.experts = [object()] * n
        self.rate, self.switch_rate = rate, switch_rate
        self.fast_rate, self.fast_discount = fast_rate, fast_discount
        self.cumulative_losses, self.recent_losses = np.zeros(n), np.zeros(n)
        self.cumulative_loss, self.log_weights, self.mix_loss = 0.0, np.zeros(0), 0.0
        self._mixture = None


def fixed_share_reference(losses_by_step, rate, alpha):
    """Herbster & Warmuth's fixed share written directly (weights, not logarithms): the
    weights before every step and the mix loss after every step."""
    n = losses_by_step.shape[1]
    w, mix, weights, mixes = np.full(n, 1.0 / n), 0.0, [], []
    for loss in losses_by_step:
        weights.append(w.copy())
        v = w * np.exp(-rate * loss)
        mix += -math.log(v.sum()) / rate
        mixes.append(mix)
        w = (1 - alpha) * v / v.sum() + alpha / n
    return weights, mixes


def path_cost(n, t, k, alpha):
    r"""-log of the prior of one path of ``t`` steps with ``k`` switches over ``n`` experts:
    :math:`\log N + k\log(N/\alpha) + (t-1-k)\log\frac1{1-\alpha+\alpha/N}`."""
    stay = 1 - alpha + alpha / n
    return math.log(n) + k * math.log(n / alpha) - (t - 1 - k) * math.log(stay)


@pytest.mark.parametrize("alpha", [0.0, 1e-3, 0.2])
def test_fixed_share_weights_and_mix_loss_match_a_direct_recursion(alpha):
    rng = np.random.default_rng(0)
    steps = rng.uniform(0, 5, size=(300, 5))
    steps[150:, 2] *= 0.1  # a switch of the best expert
    rate = 0.3
    owner = Owner(5, rate, alpha)
    weights, mixes = fixed_share_reference(steps, rate, alpha)
    own = 0.0
    for loss, w, mix in zip(steps, weights, mixes):
        np.testing.assert_allclose(owner.weights, w, rtol=1e-10, atol=1e-300)
        own += float(loss @ w)  # any own loss: the slack is the mix loss minus it
        owner._record(loss, float(loss @ w))
        assert owner.slack == pytest.approx(mix - own, rel=1e-10, abs=1e-9)
    if alpha == 0.0:  # the closed form on the cumulative losses
        logits = -rate * owner.cumulative_losses
        np.testing.assert_allclose(owner.weights, np.exp(logits - logits.max())
                                   / np.exp(logits - logits.max()).sum(), rtol=1e-10)


def test_the_mix_loss_is_the_mixture_over_every_switching_path():
    """Phi_T = -1/eta log sum over paths of prior(path) exp(-eta L(path)), the prior a Markov
    chain that stays with probability 1 - alpha + alpha/N: the identity the bound follows
    from (every path enumerated)."""
    rng = np.random.default_rng(1)
    n, t, rate, alpha = 3, 6, 0.7, 0.1
    steps = rng.uniform(0, 3, size=(t, n))
    owner = Owner(n, rate, alpha)
    for loss in steps:
        owner._record(loss, 0.0)
    total = 0.0
    for path in itertools.product(range(n), repeat=t):
        switches = sum(a != b for a, b in zip(path, path[1:]))
        loss = sum(steps[s, i] for s, i in enumerate(path))
        total += math.exp(-path_cost(n, t, switches, alpha) - rate * loss)
    assert owner.mix_loss == pytest.approx(-math.log(total) / rate, rel=1e-12)


def best_loss_by_switches(steps, most):
    """The smallest cumulative loss of a sequence of experts with exactly k switches, for
    k = 0..most (dynamic programming over (expert, switches))."""
    n = steps.shape[1]
    best = np.full((most + 1, n), np.inf)
    best[0] = steps[0]
    for loss in steps[1:]:
        leave = np.array([[min(np.delete(best[k - 1], i), default=np.inf) for i in range(n)]
                          if k else np.full(n, np.inf) for k in range(most + 1)])
        best = np.minimum(best, leave) + loss
    return best.min(axis=1)


def adversarial_stream(n, C, seed):
    """Inputs whose target follows one function, then its negative, then another, every 50
    steps: the best expert switches."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    phase = (np.arange(n) // 50) % 3
    y = np.select([phase == 0, phase == 1], [np.tanh(X[:, 0]), -np.tanh(X[:, 0])],
                  np.tanh(X[:, 1]))
    return X, C * y


@pytest.mark.parametrize(("loss", "labels"), [(losses.Squared(), False),
                                              (losses.Logistic(), True)])
@pytest.mark.parametrize("alpha", [1e-3, 0.05])
@pytest.mark.parametrize("adversary", [False, True])
def test_regret_to_every_switching_sequence_is_within_the_bound_at_every_step(
        loss, labels, alpha, adversary):
    """A_t - (the best sequence with k switches) <= (log N + k log(N/alpha) + (t-1-k)
    log(1/(1-alpha+alpha/N))) / eta for every k at every step; the adversary picks the end of
    the target range farther from Auto's prediction."""
    C, n = 1.0, 240
    X, y = adversarial_stream(n, C, seed=2)
    model = Auto(loss=loss, C=C, switch_rate=alpha, max_size=40, scale_target=False)
    total, history = 0.0, []
    for t, (x, target) in enumerate(zip(as_dicts(X), y), 1):
        guess = model.predict_one(x)
        if adversary:
            target = -C if guess > 0 else C
        if labels:
            target = 1.0 if target > 0 else -1.0
        total += float(loss.value(target, guess))
        before = model.cumulative_losses.copy()
        model.learn_one(x, target)
        history.append(model.cumulative_losses - (before if before.size else 0.0))
        if t % 10 and t != n:
            continue
        steps, N = np.array(history), len(model.experts)
        for k, best in enumerate(best_loss_by_switches(steps, min(6, t - 1))):
            assert total - best <= path_cost(N, t, k, alpha) / model.rate + 1e-9
    assert model.slack >= -1e-9


def test_the_shared_weights_follow_a_switch_and_the_cumulative_ones_do_not():
    """Expert 0 is better for 3,000 steps, expert 1 after: with a switch rate the weights move
    to expert 1 (above 0.9) within 2 log(N / alpha) / (eta * gap) steps; without one they stay on
    expert 0 until expert 1's cumulative loss is the lower (another 3,000 steps)."""
    rate, gap, alpha = 0.05, 0.5, 1e-3
    shared, cumulative = Owner(3, rate, alpha), Owner(3, rate, 0.0)
    good, bad = np.array([0.0, gap, 1.0]), np.array([gap, 0.0, 1.0])
    for _ in range(3000):
        shared._record(good, 0.0)
        cumulative._record(good, 0.0)
    within = math.ceil(2 * math.log(3 / alpha) / (rate * gap))  # 641 steps (242 needed)
    for _ in range(within):
        shared._record(bad, 0.0)
        cumulative._record(bad, 0.0)
    assert shared.weights[1] > 0.9
    assert cumulative.weights[0] > 0.99


def test_save_load_mid_stream_keeps_the_shared_weights(tmp_path):
    rng = np.random.default_rng(3)
    X, y = adversarial_stream(120, 1.0, seed=3)
    rows = list(zip(as_dicts(X), y + 0.1 * rng.normal(size=len(y))))
    model = Auto(switch_rate=0.01, max_size=40)
    for x, target in rows[:70]:
        model.learn_one(x, target)
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    assert loaded.switch_rate == 0.01 and loaded.mix_loss == model.mix_loss
    np.testing.assert_array_equal(loaded.log_weights, model.log_weights)
    for x, target in rows[70:]:
        assert loaded.predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9, abs=1e-12)
        model.learn_one(x, target)
        loaded.learn_one(x, target)
    np.testing.assert_allclose(loaded.weights, model.weights, rtol=1e-9)
    assert loaded.slack == pytest.approx(model.slack, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0])
def test_a_bad_switch_rate_is_refused(bad):
    with pytest.raises(ValueError, match="switch_rate"):
        Auto(switch_rate=bad)


def test_a_switch_rate_of_another_type_is_refused():
    with pytest.raises(TypeError, match="switch_rate"):
        Auto(switch_rate="often")


def test_an_auto_saved_before_fixed_share_keeps_the_weights_of_its_losses():
    """A format-10 file of the day before (tests/data) has no switch rate: it loads with
    ``switch_rate=0`` and goes on with the closed-form weights it was saved with."""
    model = okoco.load(Path(__file__).parent / "data" / "format-v10" / "auto.npz")
    assert model.switch_rate == 0.0 and model.log_weights.size == 0
    logits = -model.rate * model.cumulative_losses
    np.testing.assert_allclose(model.weights, np.exp(logits - logits.max())
                               / np.exp(logits - logits.max()).sum(), rtol=1e-12)
    model.learn_one({"x0": 0.3, "x1": -0.2}, 0.5)
    assert model.switch_rate == 0.0 and model.log_weights.size == 0
