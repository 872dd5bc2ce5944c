"""PROS-N-KONS and CON-KONS against explicit references (dense Nyström features, primal ONS)."""

import json
import math
import pickle
import runpy
import time
from pathlib import Path

import numpy as np
import pytest
from primal import h as primal_h
from primal import primal_ons
from river import checks
from streams import as_dicts, check_gp_posterior, run, unit_rows

import okoco
from okoco import BinaryClassifier, kernels, losses
from okoco.experiment import learner_registry
from okoco.learners import CONKONS, PROSNKONS


def nystrom_features(kernel, atoms, X):
    """Rows ``L^{-1} k_I(x)`` with ``L`` numpy's Cholesky factor of ``K_I`` (the reference)."""
    L = np.linalg.cholesky(kernel(atoms, atoms))
    return np.linalg.solve(L, kernel(atoms, X)).T


def wavy(X):
    return np.clip(1.5 * np.sin(3 * X @ np.arange(1.0, X.shape[1] + 1)), -1, 1)


@pytest.mark.parametrize("eta", [0.5, lambda t: 2.0 / math.sqrt(t), "hessian"])
@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
def test_con_kons_keeping_every_point_is_primal_ons_on_nystrom_features(eta, loss):
    X = unit_rows(40, 3, seed=1)
    y = wavy(X)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1.0, -1.0)
    kernel, C, alpha = kernels.RBF(0.5), 0.1, 0.7
    model = CONKONS(kernel=kernel, loss=loss, C=C, alpha=alpha, eta=eta, p_min=1.0, seed=0)
    got = run(model, X, y)
    assert model.dictionary_size == len(X)  # every point joined, in order
    Phi = nystrom_features(kernel, X, X)
    expected, active, _ = primal_ons(Phi, y, loss, C, alpha, eta)
    assert active >= 0.2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_linear_kernel_full_rank_dictionary_is_primal_ons_on_x():
    d, n = 5, 200
    X = unit_rows(n, d, seed=3)
    y = wavy(X)
    C, alpha, eta = 0.1, 0.7, 0.5
    model = CONKONS(kernel=kernels.Linear(), C=C, alpha=alpha, eta=eta, p_min=1.0, max_size=d,
                    seed=0)
    got = run(model, X, y)
    assert model.dictionary_size == d
    np.testing.assert_allclose(model.atoms, X[:d])
    expected, active, _ = primal_ons(X, y, losses.Squared(), C, alpha, eta)
    assert active >= 0.2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_hessian_step_on_the_linear_kernel_is_primal_ons_with_loss_curvature():
    d, n = 5, 150
    X = unit_rows(n, d, seed=6)
    y = np.where(wavy(X) >= 0, 1.0, -1.0)
    loss, C, alpha = losses.Logistic(), 0.1, 0.05
    model = CONKONS(kernel=kernels.Linear(), loss=loss, C=C, alpha=alpha, eta="hessian",
                    p_min=1.0, max_size=d, seed=0)
    got = run(model, X, y)
    expected, active, _ = primal_ons(X, y, loss, C, alpha, "hessian")
    assert active >= 0.2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_con_kons_with_sampling_is_primal_ons_on_the_growing_embedding():
    """With KORS sampling, step t sees the final dictionary's Nyström features truncated to the
    atoms present at t (bordering keeps the leading coordinates)."""
    X = np.random.default_rng(2).uniform(-1, 1, size=(300, 2))
    y = np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1])
    kernel, C, alpha, eta = kernels.RBF(1.0), 0.3, 0.5, 0.4
    model = CONKONS(kernel=kernel, C=C, alpha=alpha, eta=eta, dictionary_alpha=0.5, beta=1.0,
                    seed=4)
    got, sizes = [], []
    for x, target in zip(as_dicts(X), y):
        got.append(model.predict_one(x))
        model.learn_one(x, target)
        sizes.append(model.dictionary_size)
    m = model.dictionary_size
    assert 5 < m < 100
    Phi = nystrom_features(kernel, model.atoms, X)
    Phi[np.arange(m)[None, :] >= np.array(sizes)[:, None]] = 0.0
    expected, active, _ = primal_ons(Phi, y, losses.Squared(), C, alpha, eta)
    assert active >= 0.2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_pros_n_kons_restarts_at_every_join():
    X = unit_rows(120, 3, seed=5)
    y = wavy(X)
    kernel, C, alpha, eta, cap = kernels.RBF(0.5), 0.1, 0.7, 0.5, 6
    model = PROSNKONS(kernel=kernel, C=C, alpha=alpha, eta=eta, p_min=1.0, max_size=cap, seed=0)
    got = run(model, X, y)
    assert model.dictionary_size == cap and model.n_restarts == cap
    # the last phase starts after the last join: fresh primal ONS on the final embedding
    expected, active, _ = primal_ons(nystrom_features(kernel, X[:cap], X[cap:]), y[cap:],
                                     losses.Squared(), C, alpha, eta)
    assert active >= 0.2
    np.testing.assert_allclose(got[cap:], expected, rtol=0, atol=1e-9)
    # during the first phases every prediction is the restarted 0
    np.testing.assert_array_equal(got[1:cap], 0.0)


def paper_pros_n_kons(kernel, X, y, joined, loss, C, alpha, eta):
    """PROS-N-KONS in the order of the paper's box, given the KORS coins ``joined``.

    Step t embeds x_t over the dictionary *before* KORS sees x_t, with the eigendecomposition
    ``Sigma^{-1/2} U^T k_I(x)`` of ``K_I``; if the previous coin landed (z_{t-1} = 1) the phase
    restarts (``A = alpha I``, ``w = 0``, no projection); otherwise ``v = w - A^{-1} g`` and the
    oblique projection. Then ``A += eta g g^T`` (dense) and the coin decides whether x_t joins.
    Independent of okoco's bordered Cholesky, packed inverse and join-then-restart ordering.
    """
    atoms, preds, restart, active, g = [], [], True, 0, None
    for t in range(len(X)):
        if restart:
            lam, U = np.linalg.eigh(kernel(X[atoms], X[atoms])) if atoms else (np.ones(0), None)
            E = (U / np.sqrt(lam)).T if atoms else np.zeros((0, X.shape[1]))
            m = len(atoms)
            A, w = alpha * np.eye(m), np.zeros(m)
        phi = E @ kernel(X[atoms], X[t:t + 1])[:, 0] if atoms else np.zeros(0)
        if not restart and atoms:
            v = w - np.linalg.solve(A, g)
            Ainv_phi = np.linalg.solve(A, phi)
            excess = primal_h(phi @ v, C)
            active += excess != 0
            w = v - excess / (phi @ Ainv_phi) * Ainv_phi
        preds.append(phi @ w)
        g = float(loss.derivative(y[t], preds[-1])) * phi
        A = A + eta * np.outer(g, g)
        restart = bool(joined[t])
        if restart:
            atoms.append(t)
    return np.array(preds), active / len(X)


def test_pros_n_kons_with_sampling_is_the_papers_restarted_ons():
    """KORS sampling (not every point), long and short phases: the predictions are those of an
    independent implementation of the paper's box fed the same coins."""
    X = np.random.default_rng(8).uniform(-1, 1, size=(400, 2))
    y = np.where(np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) >= 0, 1.0, -1.0)
    kernel, loss, C, alpha, eta = kernels.RBF(1.0), losses.Logistic(), 0.5, 0.3, 0.4
    model = PROSNKONS(kernel=kernel, loss=loss, C=C, alpha=alpha, eta=eta,
                      dictionary_alpha=0.05, beta=1.0, seed=3)
    got, sizes = [], [0]
    for x, target in zip(as_dicts(X), y):
        got.append(model.predict_one(x))
        model.learn_one(x, target)
        sizes.append(model.dictionary_size)
    joined = np.diff(sizes) > 0
    assert 10 < joined.sum() < 100 and model.n_restarts == joined.sum()
    expected, active = paper_pros_n_kons(kernel, X, y, joined, loss, C, alpha, eta)
    assert active >= 0.2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(model.atoms, X[joined])


def test_embedding_inner_products_are_the_nystrom_approximation():
    kernel = kernels.RBF(1.0)
    model = CONKONS(kernel=kernel, dictionary_alpha=0.01, beta=2.0, seed=0)
    rng = np.random.default_rng(0)
    probes = as_dicts(rng.normal(size=(6, 3)))
    before, m_before = None, 0
    for x in as_dicts(rng.normal(size=(400, 3))):
        model.learn_one(x, float(np.tanh(x["x0"])))
        if model.dictionary_size > m_before:  # an append: the old coordinates must not move
            Z = np.array([model.embed(p) for p in probes])
            if before is not None:
                np.testing.assert_allclose(Z[:, :m_before], before, rtol=0, atol=1e-12)
            before, m_before = Z, model.dictionary_size
    assert model.dictionary_size > 10
    atoms, P = model.atoms, np.array([[p[f"x{j}"] for j in range(3)] for p in probes])
    kIP = kernel(atoms, P)
    expected = kIP.T @ np.linalg.solve(kernel(atoms, atoms), kIP)
    Z = np.array([model.embed(p) for p in probes])
    np.testing.assert_allclose(Z @ Z.T, expected, rtol=0, atol=1e-9)


def state_arrays_nbytes(model):
    """Bytes of every numpy array the model holds (its memory, all buffers included)."""
    blob = pickle.dumps(model)
    return len(blob)


def test_memory_and_work_stop_growing_once_the_dictionary_is_full():
    """With the dictionary full, the state (every buffer) is the same size at t = 2,000 and
    t = 6,000: nothing is kept per step. The operations of a step only touch that state."""
    rng = np.random.default_rng(0)
    model = CONKONS(kernel=kernels.RBF(0.5), dictionary_alpha=0.01, max_size=30, seed=0)
    rows = rng.normal(size=(6000, 4))
    sizes = {}
    for t, row in enumerate(rows, 1):
        model.learn_one({f"x{j}": float(v) for j, v in enumerate(row)}, float(np.sin(row[0])))
        if t in (2000, 6000):
            sizes[t] = (state_arrays_nbytes(model), model.dictionary_size)
    assert sizes[2000] == sizes[6000] and sizes[2000][1] == 30


@pytest.mark.slow
def test_per_step_time_does_not_grow_with_t():
    """Steps 1,001-2,000 against 19,001-20,000 with the same dictionary size (``max_size``
    reached early): the time per step must not grow with t (generous margin, shared machine).
    Without ``max_size`` the cost follows m, which grows with d_eff (see the docs)."""
    rng = np.random.default_rng(0)
    model = CONKONS(kernel=kernels.RBF(0.2), max_size=100, seed=0)
    rows = as_dicts(rng.normal(size=(20_000, 5)))
    ys = [float(np.tanh(x["x0"] + x["x1"])) for x in rows]
    elapsed = {}
    for t, (x, y) in enumerate(zip(rows, ys), 1):
        if t in (1_001, 19_001):
            assert model.dictionary_size == 100
            start = time.perf_counter()
        model.predict_one(x)
        model.learn_one(x, y)
        if t in (2_000, 20_000):
            elapsed[t] = time.perf_counter() - start
    assert elapsed[20_000] < 2.0 * elapsed[2_000]


@pytest.mark.parametrize("model", [PROSNKONS(seed=0), CONKONS(seed=0),
                                   BinaryClassifier(CONKONS(loss=losses.Logistic(), seed=0))])
def test_river_check_estimator(model):
    checks.check_estimator(model)


def trained(cls, n=40):
    model = cls(C=2.0, dictionary_alpha=0.05, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        model.learn_one(x, float(np.tanh(x["a"])))
    return model


@pytest.mark.parametrize("cls", [PROSNKONS, CONKONS])
@pytest.mark.parametrize(("x", "y", "error"), [
    ({"a": float("nan")}, 0.5, ValueError),
    ({"a": "1.0"}, 0.5, TypeError),
    ({"a": 1e200}, 0.5, ValueError),
    ({"a": 0.3}, float("inf"), ValueError),
    ({"a": 0.3}, "0.5", TypeError),
    ({"a": 0.3, "new": None}, 0.5, TypeError),
])
def test_bad_input_raises_and_leaves_the_state_unchanged(cls, x, y, error):
    model = trained(cls)
    probes = [{"a": 0.2, "b": -0.4}, {"a": 1.5}]
    state, preds = pickle.dumps(model), [model.predict_one(p) for p in probes]
    with pytest.raises(error):
        model.learn_one(x, y)
    assert pickle.dumps(model) == state
    assert [model.predict_one(p) for p in probes] == preds


def test_a_target_too_large_for_a_second_order_step_is_refused_before_any_change():
    model = CONKONS(kernel=kernels.Linear(), C=1.0, alpha=1e-300, eta=1.0, seed=0)
    model.learn_one({"a": 1.0}, 0.5)
    state = pickle.dumps(model)
    with pytest.raises(ValueError, match="too large for a second-order step"):
        model.learn_one({"a": 1e100}, 1e150)
    assert pickle.dumps(model) == state


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"alpha": 0.0}, ValueError, "alpha"),
    ({"alpha": "1"}, TypeError, "alpha"),
    ({"dictionary_alpha": -1.0}, ValueError, "dictionary_alpha"),
    ({"dictionary_alpha": True}, TypeError, "dictionary_alpha"),
    ({"max_size": 0}, ValueError, "max_size"),
    ({"max_size": 2.5}, TypeError, "max_size"),
    ({"eps": 1.5}, ValueError, "eps"),
    ({"beta": -1.0}, ValueError, "beta"),
    ({"p_min": 2.0}, ValueError, "p_min"),
    ({"C": 0.0}, ValueError, "C"),
    ({"eta": "fast"}, ValueError, "eta"),
])
def test_bad_parameters_are_named(params, error, match):
    with pytest.raises(error, match=match):
        CONKONS(**params)


@pytest.mark.parametrize("cls", [PROSNKONS, CONKONS])
def test_save_load_is_exact_and_continues_identically(cls, tmp_path):
    model = trained(cls, n=60)
    loaded = okoco.load(model.save(tmp_path / "m.npz"))
    assert type(loaded) is cls and loaded.dictionary_size == model.dictionary_size
    assert loaded._kors._rng is loaded._rng
    rng = np.random.default_rng(7)
    for _ in range(60):  # same predictions, same coins, same updates
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        assert loaded.predict_one(x) == model.predict_one(x)
        loaded.learn_one(x, 0.3)
        model.learn_one(x, 0.3)
    assert loaded.dictionary_size == model.dictionary_size
    assert pickle.dumps(loaded.weights) == pickle.dumps(model.weights)


def test_predict_many_and_learn_many_match_the_one_row_methods():
    X = np.random.default_rng(3).normal(size=(80, 3))
    y = np.tanh(X[:, 0])
    one, many = CONKONS(dictionary_alpha=0.05, seed=1), CONKONS(dictionary_alpha=0.05, seed=1)
    run(one, X, y)
    many.learn_many(X, y)
    probe = np.random.default_rng(4).normal(size=(10, 3))
    np.testing.assert_allclose(many.predict_many(probe),
                               [one.predict_one(x) for x in as_dicts(probe)], rtol=0, atol=1e-12)


@pytest.mark.parametrize("cls", [PROSNKONS, CONKONS])
@pytest.mark.parametrize("params", [
    {"kernel": kernels.RBF(0.5), "dictionary_alpha": 0.3, "seed": 0},
    {"kernel": kernels.Laplacian(0.3), "loss": losses.Logistic(), "eta": 0.3, "max_size": 25,
     "seed": 1},
    {"kernel": kernels.Polynomial(degree=2, gamma=0.5, coef0=1.0), "C": 1.0,
     "loss": losses.SquaredHinge(), "eta": lambda t: 1.0 / math.sqrt(t), "seed": 2},
    {"kernel": kernels.Linear(), "p_min": 0.2, "beta": 0.5, "seed": 3},
])
def test_compiled_test_then_train_matches_row_by_row(cls, params):
    """predict_learn_many (the compiled loop, Python steps at joins) is predict_one then
    learn_one row by row: the same predictions, dictionary, KORS coins and ONS state."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 3))
    y = np.sign(np.sin(X.sum(1))) if "loss" in params else np.sin(X.sum(1))
    compiled, rows = cls(**params), cls(**params)
    predictions = compiled.predict_learn_many(X[:250], y[:250])
    predictions = np.append(predictions, compiled.predict_learn_many(X[250:], y[250:]))
    expected = []
    for x, target in zip(as_dicts(X), y):
        expected.append(rows.predict_one(x))
        rows.learn_one(x, target)
    np.testing.assert_allclose(predictions, expected, rtol=0, atol=1e-12)
    assert compiled.dictionary_size == rows.dictionary_size > 1
    assert compiled.n_restarts == rows.n_restarts and compiled.n_seen == rows.n_seen == 400
    assert compiled._kors.n_seen == rows._kors.n_seen
    assert compiled._kors.last_p == rows._kors.last_p
    np.testing.assert_allclose(compiled.weights, rows.weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled._P.matrix(), rows._P.matrix(), rtol=1e-12, atol=1e-12)
    assert compiled.log_det == pytest.approx(rows.log_det, rel=1e-12)
    assert compiled.online_effective_dimension == pytest.approx(
        rows.online_effective_dimension, rel=1e-12)
    assert compiled._rng.random() == rows._rng.random()  # the same stream of coins
    assert compiled.noise_scale_sum == pytest.approx(rows.noise_scale_sum, rel=1e-12)
    probe = [0.2, -0.4, 0.1]  # the array path names the columns 0, 1, 2
    assert compiled.predict_one(dict(enumerate(probe)), with_dist=True).sigma == pytest.approx(
        rows.predict_one(as_dicts([probe])[0], with_dist=True).sigma, rel=1e-12)


def test_cli_names_and_learning_quality():
    registry = learner_registry()
    assert registry["pros-n-kons"] is PROSNKONS and registry["con-kons"] is CONKONS
    X = np.random.default_rng(0).uniform(-3, 3, size=(1500, 1))
    y = np.sin(X[:, 0])
    for cls in (PROSNKONS, CONKONS):
        model = cls(kernel=kernels.RBF(1.0), seed=0)
        preds = run(model, X, y)
        assert np.mean((preds[-300:] - y[-300:]) ** 2) < 1e-3
        assert model.dictionary_size < 60


def test_regret_example_runs_and_con_kons_does_not_forget(tmp_path, monkeypatch, capsys):
    examples = Path(__file__).parent.parent / "examples"
    monkeypatch.syspath_prepend(str(examples))
    result = runpy.run_path(str(examples / "regret_pros.py"))["main"](
        ["--small", "--out", str(tmp_path)])
    assert Path(result["figures"][0]).stat().st_size > 0
    assert "regret_pros.png" in capsys.readouterr().out
    regret, sizes = result["regret"], result["dictionary_size"]
    assert sizes["CON-KONS"] == sizes["PROS-N-KONS"] < result["T"]
    assert regret["CON-KONS"] < regret["PROS-N-KONS"]  # restarts forget what was learned


def test_con_kons_with_every_point_gives_the_dense_gaussian_process_posterior():
    # squared loss, curvature step, no clipping, every point joins: CON-KONS is kernel ridge
    # regression with ridge alpha/2, and with_dist its GP posterior (noise ratio alpha/2) with
    # the scale estimated from the a-priori errors over their spreads, from dense solves
    kernel, alpha = kernels.RBF(0.5), 0.3

    def every_point_joined(model):
        assert model.dictionary_size == 30

    check_gp_posterior(CONKONS(kernel=kernel, C=1e6, alpha=alpha, p_min=1.0, seed=0), kernel,
                       alpha, np.random.default_rng(0), after=every_point_joined)


def nystrom_posterior(Z, y, alpha, z, residual):
    """Mean and spread + alpha/2 of ridge regression (ridge alpha/2) on the feature rows ``Z``
    at the features ``z`` (residual: k(x, x) - z.z), from dense solves."""
    A = alpha * np.eye(len(z)) + 2.0 * Z.T @ Z
    mean = z @ np.linalg.solve(0.5 * A, Z.T @ y)
    return mean, alpha * z @ np.linalg.solve(A, z) + max(residual, 0.0) + 0.5 * alpha


@pytest.mark.parametrize("cls", [PROSNKONS, CONKONS])
@pytest.mark.parametrize("max_size", [None, 12])
def test_with_dist_is_the_posterior_of_ridge_on_the_nystrom_features(cls, max_size):
    """With KORS sampling: step t sees the final dictionary's Nyström features truncated to the
    atoms present at t; its A is that of the points since the last restart (PROS-N-KONS) or of
    all the points (CON-KONS). Predictions, the online noise scale and the final with_dist
    from dense solves on those features."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.05 * rng.normal(size=200)
    kernel, alpha = kernels.RBF(1.0), 0.2
    model = cls(kernel=kernel, C=1e6, alpha=alpha, dictionary_alpha=0.1, max_size=max_size,
                beta=1.0, seed=3)  # a sampled dictionary (not every point): beta below default
    got, sizes = [], [0]
    for x, target in zip(as_dicts(X), y):
        got.append(model.predict_one(x))
        model.learn_one(x, target)
        sizes.append(model.dictionary_size)
    m = model.dictionary_size
    assert 5 < m < 100 and (max_size is None or m == max_size)
    assert (model.n_restarts > 3) == (cls is PROSNKONS)
    Phi = nystrom_features(kernel, model.atoms, X)
    before, after = np.array(sizes[:-1]), np.array(sizes[1:])
    Phi[np.arange(m)[None, :] >= after[:, None]] = 0.0  # step t's own features
    joins = np.flatnonzero(after > before)

    def phase(t):  # the steps whose terms are in A at step t
        last = joins[joins < t]
        start = last[-1] + 1 if cls is PROSNKONS and last.size else 0
        return np.arange(start, t)

    terms = []
    for t in range(len(X)):
        S, mt = phase(t), before[t]
        z = nystrom_features(kernel, model.atoms[:mt], X[t : t + 1])[0] if mt else np.zeros(0)
        mean, spread = nystrom_posterior(Phi[S, :mt], y[S], alpha, z, 1.0 - z @ z)
        assert got[t] == pytest.approx(mean, abs=1e-8)
        terms.append((y[t] - mean) ** 2 / spread)
    scale = (1.0 + np.sum(terms)) / (1.0 + len(X))
    assert model.noise_scale_sum == pytest.approx(np.sum(terms), rel=1e-9)
    S = phase(len(X))
    for point in rng.uniform(-1, 1, size=(5, 2)):
        z = nystrom_features(kernel, model.atoms, point[None, :])[0]
        mean, spread = nystrom_posterior(Phi[S], y[S], alpha, z, 1.0 - z @ z)
        dist = model.predict_one({"x0": point[0], "x1": point[1]}, with_dist=True)
        assert dist.mu == pytest.approx(mean, abs=1e-8)
        assert dist.sigma ** 2 == pytest.approx(scale * spread, rel=1e-8)


def test_pros_n_kons_at_a_restart_gives_the_prior():
    # p_min=1: every point joins and restarts, so A = alpha I and u = 0 at every prediction
    X = unit_rows(20, 3, seed=2)
    y = wavy(X)
    alpha = 0.4
    model = PROSNKONS(kernel=kernels.RBF(0.5), alpha=alpha, p_min=1.0, seed=0)
    run(model, X, y)
    assert model.n_restarts == 20
    dist = model.predict_one({"x0": 0.1, "x1": 0.2, "x2": 0.3}, with_dist=True)
    scale = (1.0 + np.sum(y ** 2) / (1.0 + 0.5 * alpha)) / 21.0
    assert dist.mu == 0.0
    assert dist.sigma ** 2 == pytest.approx(scale * (1.0 + 0.5 * alpha), rel=1e-12)


@pytest.mark.parametrize("cls", [PROSNKONS, CONKONS])
def test_with_dist_survives_save_and_load_and_older_files_get_the_unit_scale(cls, tmp_path):
    model = trained(cls, n=60)
    x = {"a": 0.3, "b": -0.2}
    path = model.save(tmp_path / "m.npz")
    loaded = okoco.load(path)
    assert loaded.noise_scale_sum == model.noise_scale_sum > 0
    assert loaded.predict_one(x, with_dist=True).sigma == model.predict_one(x, with_dist=True).sigma
    # a file saved before the predictive variance (no noise_scale_sum) loads with scale 1
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
        meta = json.loads(str(archive["__okoco__"]))
    del meta["state"]["noise_scale_sum"]
    np.savez(path, __okoco__=np.array(json.dumps(meta)), **arrays)
    old = okoco.load(path)
    assert old.noise_scale_sum == 60.0
    _, kappa, h, _ = old._analyse(old._features.encode(x, arrays=False)[0])
    spread = (old.alpha * h @ old._P.matvec(h) + kappa - h @ h + 0.5 * old.alpha)
    assert old.predict_one(x, with_dist=True).sigma ** 2 == pytest.approx(spread, rel=1e-12)


@pytest.mark.parametrize("cls", [PROSNKONS, CONKONS])
def test_a_step_after_with_dist_is_the_step_without(cls):
    """learn_one reuses the A^{-1} z that predict_one(x, with_dist=True) computed on the same
    row: the learned state is the same as without the interval, to the bit."""
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(120, 3)), rng.normal(size=120)
    with_dist, plain = cls(seed=0), cls(seed=0)
    for x, target in zip(as_dicts(X), y):
        with_dist.predict_one(x, with_dist=True)
        with_dist.learn_one(x, target)
        plain.learn_one(x, target)
    assert with_dist.dictionary_size == plain.dictionary_size > 5
    np.testing.assert_array_equal(with_dist._u, plain._u)
    np.testing.assert_array_equal(with_dist._P.matrix(), plain._P.matrix())
    assert with_dist.noise_scale_sum == plain.noise_scale_sum


def _finite_state(model):
    m = model.dictionary_size
    return bool(np.isfinite(model._u[:m]).all() and np.isfinite(model._P.matrix()).all())


@pytest.mark.parametrize("many", [False, True])
def test_a_tiny_ridge_never_stores_non_finite_numbers(many):
    """Issue 40: CONKONS(alpha=1e-30) on a constant target stored NaN in a step that returned
    normally (then refused every step, blaming the loss). Now every step either stores finite
    numbers or is refused with a ValueError that names alpha, and a refused learn_one changes
    nothing; learn_many (the compiled loop) hands such a row to the same refusal."""
    model = CONKONS(alpha=1e-30, seed=0)
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(60):
        a, b = float(rng.normal()), float(rng.normal())
        state = pickle.dumps(model)
        try:
            if many:
                model.learn_many(np.array([[a, b], [b, a]]), [1.0, 1.0])
            else:
                model.learn_one({"a": a, "b": b}, 1.0)
        except ValueError as error:
            refused += 1
            assert "alpha=1e-30" in str(error)
            if not many:
                assert pickle.dumps(model) == state
        assert _finite_state(model)
        assert math.isfinite(model.predict_one({"a": a, "b": b}))
    assert refused and model.n_seen > 10
