"""benchmarks/bench_mixing.py: the offline mixture scores what a real ``Auto`` scores, and each
fast-weight rule computes the weights its textbook recursion gives."""

import importlib
import json
import math

import numpy as np
import pytest

from okoco.learners import Auto

mixing = importlib.import_module("benchmarks.bench_mixing")
lm = importlib.import_module("benchmarks.bench_long_memory")
families = importlib.import_module("benchmarks.bench_families")

WINDOW = 30
GRID = ((0.2, 0.1, "hessian", 1.0), (3.0, 0.1, "hessian", 1.0), (0.5, 0.03, "hessian", 0.2))
N = 4
rng = np.random.default_rng(3)
LOSSES = rng.exponential(1.0, size=(25, N)) * np.array([1.0, 1.3, 0.8, 2.0])


def _softmax(u):
    e = np.exp(u - max(u))
    return e / e.sum()


def _run(rule):
    """The weights of ``rule`` before each step of LOSSES, from ``FastWeights``."""
    fw = mixing.FastWeights([rule], N)
    out = []
    for lp in LOSSES:
        out.append(fw.weights()[0])
        fw.update(lp)
    return np.array(out)


@pytest.mark.parametrize(("rate", "discount"), [(1.0, 0.99), (3.0, 0.9), (0.3, 1.0)])
def test_exponential_weights_on_discounted_losses(rate, discount):
    got = _run(mixing.Rule(rate=rate, discount=discount))
    for t in range(len(LOSSES)):
        R = sum(discount ** (t - 1 - s) * LOSSES[s] for s in range(t)) if t else np.zeros(N)
        np.testing.assert_allclose(got[t], _softmax(-rate * R), rtol=1e-12)


def test_the_leader_takes_every_weight():
    got = _run(mixing.Rule(leader=True, discount=0.9))
    np.testing.assert_array_equal(got[0], np.full(N, 1 / N))  # no loss yet: every expert leads
    for t in range(1, len(LOSSES)):
        R = sum(0.9 ** (t - 1 - s) * LOSSES[s] for s in range(t))
        np.testing.assert_array_equal(got[t], np.eye(N)[np.argmin(R)])


def test_fixed_share_is_herbster_and_warmuths_recursion():
    alpha, rate = 0.05, 2.0
    got = _run(mixing.Rule(rate=rate, discount=1.0, share=alpha))
    w = np.full(N, 1 / N)
    for t, lp in enumerate(LOSSES):
        np.testing.assert_allclose(got[t], w, rtol=1e-12)
        v = w * np.exp(-rate * lp)  # loss update, then a share of the uniform weights mixed in
        w = (1 - alpha) * v / v.sum() + alpha / N


def test_adahedge_rate_is_log_n_over_the_mixability_gaps():
    """de Rooij, van Erven, Grunwald & Koolen (2014), "Follow the leader if you can, hedge if
    you must", Algorithm 1 (AdaHedge): eta_t = ln N / Delta_{t-1}, w_t proportional to
    exp(-eta_t L_{t-1}) (the leaders evenly while Delta = 0), delta_t = h_t - m_t."""
    got = _run(mixing.Rule(adaptive=True, discount=1.0))
    L, delta = np.zeros(N), 0.0
    for t, lp in enumerate(LOSSES):
        if delta == 0:
            w = (L == L.min()).astype(float)
            w /= w.sum()
            m = lp[w > 0].min()
        else:
            eta = math.log(N) / delta
            w = _softmax(-eta * L)
            m = -math.log(sum(wi * math.exp(-eta * li) for wi, li in zip(w, lp))) / eta
        np.testing.assert_allclose(got[t], w, rtol=1e-9, atol=1e-15)
        delta += float(w @ lp) - m
        L = L + lp
    assert delta > 0


def _real(task, rows, fast_rate, fast_discount):
    def make(loss):
        kwargs = {"fast_rate": fast_rate, "fast_discount": fast_discount, "max_size": WINDOW}
        model = Auto(**kwargs) if loss is None else Auto(loss=loss, **kwargs)
        model._build_experts = lambda d: Auto._build_experts(model, d, GRID)
        return model
    return families.run_one(lambda task_, d: lm._pipeline(make, task_, "own"), task, rows)[0]


@pytest.mark.parametrize("name", ["sea-v0/0", "friedman/0"])
def test_the_offline_mixture_is_a_real_autos(tmp_path, name):
    task, loader = families.training_families(120, [0])[name]
    rows = loader(120)
    rec = lm.record_auto_experts(name, task, rows, "own", grid=GRID, window=WINDOW,
                                 directory=tmp_path)
    rules = [mixing.AUTO_RULE, mixing.Rule(rate=3.0, discount=0.9)]
    offline, trace = mixing.mix_errors(rec, task, rules, trace=True)
    for got, rule in zip(offline, rules):
        assert got == pytest.approx(_real(task, rows, rule.rate, rule.discount), rel=1e-9,
                                    abs=1e-12)
    assert offline[0] == pytest.approx(
        families.mixture_error(rec, task, np.array([[0, 1, 2]]))[0], rel=1e-12, abs=1e-15)
    assert np.all((trace["lambda"] >= 0) & (trace["lambda"] <= 1))
    # Auto's guarantee: its loss is at most log(N) / eta above the best expert's
    eta = (1 / 72) if task == "regression" else math.exp(-3.0)
    assert np.all(trace["regret"] * len(rows) <= math.log(3) / eta + 1e-9)


def test_decompose_splits_the_ratio_into_mixing_and_grid(tmp_path, monkeypatch):
    name = "friedman/0"
    task, loader = families.training_families(100, [0])[name]
    rows = loader(100)
    rec = lm.record_auto_experts(name, task, rows, "own", grid=GRID, window=WINDOW,
                                 directory=tmp_path)
    y, mean0, std0 = rec[:, -5], rec[:, -4], rec[:, -3]
    direct = [float(np.mean(np.abs(mean0 + std0 * rec[:, j] - y))) for j in range(3)]
    store = {"results": {f"{name}@100": {k: [0.9 + 0.01 * i] for i, k in
                                         enumerate(families.kons_names())}}}
    path = tmp_path / "families.json"
    path.write_text(json.dumps(store))
    monkeypatch.setattr(mixing, "FAMILIES", path)
    row = mixing.decompose({name: (task, rec)}, 100, {name: rec})[name]
    np.testing.assert_allclose(row["alone"], direct, rtol=1e-12)
    assert row["best_kons"] == 0.9 and row["best_kons_name"] == families.kons_names()[0]
    assert row["best_own"] == pytest.approx(min(direct), rel=1e-12)
    assert row["best_pool"] == row["best_own"]
    assert row["mixing"] * row["grid"] == pytest.approx(row["ratio"], rel=1e-12)
    assert row["settings"] == 1.0
