"""Tests of okoco.regret: comparators against independent references, the tracker, the bounds."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
from scipy.optimize import minimize

from okoco import kernels, losses
from okoco.regret import (
    BestConstant,
    ClippedKernelERM,
    KernelERM,
    KernelRidge,
    NystromKernelERM,
    RegretTracker,
    bounds,
    log_checkpoints,
)

matplotlib.use("Agg")


def _data(n=150, seed=0, noise=0.3, C=1.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = np.clip(np.sin(3 * X[:, 0]) + X[:, 1] + noise * rng.standard_normal(n), -C, C)
    return X, y


class Zero:
    """The comparator w = 0 (follows the fit/predict protocol)."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.zeros(len(X))


# ----------------------------------------------------------------------------- comparators


def test_kernel_ridge_matches_sklearn():
    from sklearn.kernel_ridge import KernelRidge as SkKRR

    X, y = _data()
    for alpha in (0.01, 1.0, 10.0):
        ours = KernelRidge(kernels.RBF(gamma=2.0), alpha=alpha).fit(X, y)
        ref = SkKRR(alpha=alpha, kernel="rbf", gamma=2.0).fit(X, y)
        Xt = np.random.default_rng(1).uniform(-1, 1, size=(20, 2))
        np.testing.assert_allclose(ours.predict(Xt), ref.predict(Xt), atol=1e-10)
        np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-8)


def test_clipped_erm_equals_kernel_ridge_for_large_C():
    X, y = _data()
    krr = KernelRidge(kernels.RBF(2.0), alpha=0.5).fit(X, y)
    erm = ClippedKernelERM(kernels.RBF(2.0), losses.Squared(), C=100.0, alpha=0.5).fit(X, y)
    assert not erm.active_.any()
    np.testing.assert_allclose(erm.predict(X), krr.predict(X), atol=1e-7)
    assert erm.objective_ == pytest.approx(krr.objective_, rel=1e-8)


def _reference_clipped(K, y, loss, C, alpha):
    """Independent reference: L-BFGS-B on the coefficients of a full-rank explicit feature
    map f = L v (K = L L^T), with the box handled by a smooth exact penalty continuation."""
    n = len(y)
    L = np.linalg.cholesky(K + 1e-10 * np.eye(n))

    def obj(v, rho):
        f = L @ v
        viol = np.maximum(np.abs(f) - C, 0.0)
        val = np.sum(loss.value(y, f)) + alpha * v @ v + rho * np.sum(viol**2)
        grad = L.T @ (loss.derivative(y, f) + 2 * rho * viol * np.sign(f)) + 2 * alpha * v
        return val, grad

    v = np.zeros(n)
    for rho in (1e2, 1e4, 1e6):
        v = minimize(obj, v, args=(rho,), jac=True, method="L-BFGS-B",
                     options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15}).x
    f = L @ v
    return np.clip(f, -C, C), float(np.sum(loss.value(y, np.clip(f, -C, C))) + alpha * v @ v)


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
def test_clipped_erm_small_C_active_kkt_and_reference(loss):
    X, y = _data(n=60, noise=0.5)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1, -1)
    C = 0.3
    k = kernels.RBF(3.0)
    erm = ClippedKernelERM(k, loss, C=C, alpha=0.05).fit(X, y)
    assert erm.converged_
    assert erm.active_.sum() >= 5  # the constraints bind
    assert np.max(np.abs(erm.fitted_values_)) <= C
    assert erm.kkt_residual() <= 1e-8
    # multipliers have the right signs (nu >= 0 at +C, <= 0 at -C)
    up, lo = erm.fitted_values_ >= C * (1 - 1e-9), erm.fitted_values_ <= -C * (1 - 1e-9)
    assert np.all(erm.multipliers_[up] >= -1e-8) and np.all(erm.multipliers_[lo] <= 1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
def test_clipped_erm_matches_an_independent_solver(loss):
    X, y = _data(n=60, noise=0.5)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1, -1)
    C = 0.3
    k = kernels.RBF(3.0)
    erm = ClippedKernelERM(k, loss, C=C, alpha=0.05).fit(X, y)
    f_ref, obj_ref = _reference_clipped(k(X, X), y.astype(float), loss, C, 0.05)
    assert erm.objective_ <= obj_ref + 1e-6 * (1 + abs(obj_ref))
    np.testing.assert_allclose(erm.fitted_values_, f_ref, atol=2e-3)


def test_kkt_check_detects_a_non_optimal_point():
    X, y = _data(n=60)
    erm = ClippedKernelERM(kernels.RBF(3.0), losses.Squared(), C=0.3, alpha=0.05).fit(X, y)
    assert erm.kkt_residual() < 1e-9
    erm.dual_coef_ = 0.9 * erm.dual_coef_  # no longer optimal
    assert erm.kkt_residual() > 1e-3


def test_kernel_logistic_and_squared_hinge_stationary_and_better_than_perturbations():
    X, y = _data()
    y = np.where(y >= 0, 1, -1)
    k = kernels.RBF(2.0)
    for m in (KernelERM(k, losses.Logistic(), alpha=0.3),
              KernelERM(k, losses.SquaredHinge(), alpha=0.3)):
        m.fit(X, y)
        assert m.kkt_residual() < 1e-8
        K = k(X, X)
        rng = np.random.default_rng(0)
        for _ in range(5):
            a = m.dual_coef_ + 1e-3 * rng.standard_normal(len(y))
            f = K @ a
            assert m.objective_ <= np.sum(m.loss.value(y, f)) + 0.3 * a @ f


def test_kernel_erm_squared_equals_kernel_ridge():
    X, y = _data()
    a = KernelERM(kernels.Laplacian(1.0), losses.Squared(), alpha=0.2).fit(X, y)
    b = KernelRidge(kernels.Laplacian(1.0), alpha=0.2).fit(X, y)
    np.testing.assert_allclose(a.fitted_values_, b.fitted_values_, atol=1e-9)


def test_best_constant():
    y = np.array([1, 1, 1, -1])
    c = BestConstant(losses.Logistic(), C=5.0).fit(np.zeros((4, 1)), y).constant_
    assert c == pytest.approx(math.log(3), abs=1e-6)  # p = 3/4 = sigmoid(c)
    c = BestConstant(losses.Logistic(), C=0.5).fit(np.zeros((4, 1)), y).constant_
    assert c == pytest.approx(0.5, abs=1e-6)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="alpha"):
        KernelRidge(kernels.RBF(1.0), alpha=0.0)
    with pytest.raises(ValueError, match="finite"):
        KernelRidge(kernels.RBF(1.0)).fit(np.array([[np.nan]]), [1.0])
    with pytest.raises(ValueError):
        KernelERM(kernels.RBF(1.0), losses.Logistic()).fit(np.zeros((2, 1)), [0.5, 1.0])
    with pytest.raises(TypeError, match="fit"):
        RegretTracker(losses.Squared(), object())


def test_nystrom_reports_its_approximation():
    X, y = _data(n=400)
    k = kernels.RBF(2.0)
    exact = KernelRidge(k, alpha=0.5).fit(X, y)
    full = NystromKernelERM(k, alpha=0.5, n_components=400).fit(X, y)  # all points
    assert full.residual_trace_ < 1e-8
    np.testing.assert_allclose(full.fitted_values_, exact.fitted_values_, atol=1e-5)
    small = NystromKernelERM(k, losses.Squared(), alpha=0.5, n_components=5).fit(X, y)
    assert small.residual_trace_ > 1e-3
    assert small.objective_ > exact.objective_  # feasible for the exact problem, so worse
    gap = small.objective_gap(X, y, n_sub=200)
    assert gap["relative_gap"] > 0
    clipped = NystromKernelERM(k, losses.Squared(), alpha=0.05, n_components=60,
                               C=0.3).fit(X, y)
    ex = ClippedKernelERM(k, losses.Squared(), C=0.3, alpha=0.05).fit(X, y)
    assert np.max(np.abs(clipped.fitted_values_)) <= 0.3
    assert ex.objective_ <= clipped.objective_ <= 1.05 * ex.objective_


def test_nystrom_any_loss_against_a_direct_minimisation_over_the_landmarks_span():
    """min over beta of sum l(y, K_XZ beta) + alpha beta' K_ZZ beta, by BFGS (independent)."""
    X, y = _data(n=120, seed=3)
    y = np.where(y >= 0, 1.0, -1.0)
    k, alpha = kernels.RBF(2.0), 0.3
    for loss in (losses.Logistic(), losses.SquaredHinge()):
        model = NystromKernelERM(k, loss, alpha=alpha, n_components=15, seed=4).fit(X, y)
        Z = model.landmarks_
        Kxz, Kzz = k(X, Z), k(Z, Z)

        def objective(beta, loss=loss, Kxz=Kxz, Kzz=Kzz):
            return float(np.sum(loss.value(y, Kxz @ beta)) + alpha * beta @ Kzz @ beta)

        ref = minimize(objective, np.zeros(len(Z)), method="BFGS", options={"gtol": 1e-10})
        assert model.objective_ == pytest.approx(ref.fun, rel=1e-6)
        assert model.objective_ <= ref.fun + 1e-9
        np.testing.assert_allclose(model.predict(X), model.fitted_values_, atol=1e-9)


def test_leverage_landmarks_find_the_points_the_pilot_misses():
    """Ten isolated points have ridge leverage 1/2 each (k = 1, alpha = 1), 190 clustered ones
    share about 2.5: the leverage rule draws the isolated ones far more often than uniform."""
    k = kernels.RBF(1.0)
    found = {"rls": [], "uniform": []}
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = np.vstack([10.0 * np.arange(1, 11)[:, None] * np.ones((1, 2)),
                       0.05 * rng.standard_normal((190, 2))])
        y = np.sin(X[:, 0])
        for rule in found:
            model = NystromKernelERM(k, alpha=1.0, n_components=20, landmarks=rule, seed=seed)
            found[rule].append(int(np.isin(np.arange(10), model.fit(X, y).landmark_indices_).sum()))
    assert min(found["rls"]) >= 4, found
    assert sum(found["rls"]) >= 2.5 * sum(found["uniform"]), found


def test_nystrom_parameters_are_checked():
    with pytest.raises(TypeError, match="n_components"):
        NystromKernelERM(kernels.RBF(1.0), n_components=2.5)
    with pytest.raises(ValueError, match="n_components"):
        NystromKernelERM(kernels.RBF(1.0), n_components=0)
    with pytest.raises(ValueError, match="landmarks"):
        NystromKernelERM(kernels.RBF(1.0), landmarks="greedy")
    with pytest.raises(ValueError, match="C"):
        NystromKernelERM(kernels.RBF(1.0), C=-1.0)


# ----------------------------------------------------------------------------- tracker


def test_log_checkpoints():
    cps = log_checkpoints(10**4)
    assert cps[0] == 10 and cps[-1] == 10**4
    assert np.all(np.diff(np.log10(cps)) <= 0.26)


def test_comparator_predictions_have_zero_regret_against_themselves():
    X, y = _data(n=120)
    comp = ClippedKernelERM(kernels.RBF(2.0), losses.Squared(), C=0.5, alpha=0.1)
    f_T = comp.fit(X, y).predict(X)
    tr = RegretTracker(losses.Squared(), comp, checkpoints=[120])
    for x, yt, p in zip(X, y, f_T, strict=True):
        tr.update(x, yt, p)
    assert tr.regret[-1] <= 1e-9
    assert abs(tr.regret[-1]) <= 1e-9
    # BestConstant minimises the loss alone: any constant has regret >= 0 on every prefix,
    # and its own full-stream constant has regret 0 at T.
    bc = BestConstant(losses.Squared(), C=1.0)
    c_T = bc.fit(X, y).constant_
    tr = RegretTracker(losses.Squared(), bc, checkpoints=[10, 40, 120])
    for x, yt in zip(X, y, strict=True):
        tr.update(x, yt, c_T)
    assert np.all(tr.regret >= -1e-12)
    assert abs(tr.regret[-1]) <= 1e-9


def test_tracker_dict_stream_matches_array_stream_and_handles_new_features():
    X, y = _data(n=60)
    comp = KernelRidge(kernels.RBF(1.0), alpha=1.0)
    a = RegretTracker(losses.Squared(), comp, checkpoints=[30, 60])
    d = RegretTracker(losses.Squared(), KernelRidge(kernels.RBF(1.0), alpha=1.0),
                      checkpoints=[30, 60])
    for i, (x, yt) in enumerate(zip(X, y, strict=True)):
        a.update(x, yt, 0.1)
        # the second feature only appears at step 5, and is omitted when it is zero
        xd = {"u": x[0]} if i < 5 else {"u": x[0], "v": x[1]}
        d.update(xd, yt, 0.1)
    Xa = X.copy()
    Xa[:5, 1] = 0.0
    ref = KernelRidge(kernels.RBF(1.0), alpha=1.0).fit(Xa, y)
    assert d.features == ["u", "v"]
    np.testing.assert_allclose(d.X, Xa)
    expected = np.sum((y - 0.1) ** 2) - np.sum((y - ref.predict(Xa)) ** 2)
    assert d.regret[-1] == pytest.approx(expected, rel=1e-10)
    np.testing.assert_allclose(a.learner_loss, d.learner_loss)
    assert a.t.tolist() == [30, 60]
    with pytest.raises(ValueError, match="non-finite"):
        d.update({"u": np.inf}, 0.0, 0.0)
    assert d.n_seen == 60


def test_plot_agg():
    X, y = _data(n=40)
    tr = RegretTracker(losses.Squared(), KernelRidge(kernels.RBF(1.0), alpha=1.0),
                       checkpoints=[10, 20, 40])
    for x, yt in zip(X, y, strict=True):
        tr.update(x, yt, 0.0)
    ax = tr.plot(bound={"C": 1.0, "alpha": 1.0})
    assert len(ax.get_lines()) == 2
    assert ax.get_xscale() == "log"


# ----------------------------------------------------------------------------- bounds


def test_effective_dimension_against_definition():
    X, _ = _data(n=50)
    K = kernels.RBF(1.0)(X, X)
    direct = np.trace(K @ np.linalg.inv(K + 0.3 * np.eye(50)))
    assert bounds.effective_dimension(K, 0.3) == pytest.approx(direct, rel=1e-9)


def test_theorem1_log_argument_typo_pinned():
    # The proof bounds the R_G term by d_eff (1 + log(||Kbar||/alpha + 1)) / sigma with
    # ||Kbar|| <= sigma L^2 T. The corrected log(2 sigma L^2 T / alpha) covers it; the printed
    # log(2 sigma L^2 T) does not when alpha < 1.
    sigma, L, T, alpha, d = 1 / 8, 4.0, 10, 0.01, 3.0
    proof = d * (1 + math.log(sigma * L**2 * T / alpha + 1)) / sigma
    corrected = bounds.theorem1_exp_concave(T, d, alpha=alpha, sigma=sigma, L=L)
    printed = 2 * d * math.log(2 * sigma * L**2 * T) / sigma
    assert corrected >= proof > printed


def test_regret_inequality_helper_against_primal_ons():
    # primal ONS with explicit features (linear kernel, unit-norm x) and its regret inequality
    rng = np.random.default_rng(3)
    T, dim, C, alpha = 80, 3, 0.5, 1.0
    X = rng.standard_normal((T, dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.array([1.0, -0.5, 0.2]) + 0.2 * rng.standard_normal(T), -C, C)
    loss = losses.Squared()
    sigma = loss.curvature(C, C)
    eta = sigma
    A = alpha * np.eye(dim)
    w = np.zeros(dim)
    y_hat = np.zeros(T)
    for t in range(T):
        phi = X[t]
        Ainv = np.linalg.inv(A)
        z = phi @ w
        h = np.sign(z) * max(abs(z) - C, 0.0)
        w = w - h / (phi @ Ainv @ phi) * (Ainv @ phi)
        y_hat[t] = phi @ w
        g = loss.derivative(y[t], y_hat[t]) * phi
        A = A + eta * np.outer(g, g)
        w = w - np.linalg.solve(A, g)
    # comparator in S: KRR rescaled into the box
    a = KernelRidge(kernels.Linear(), alpha=1.0).fit(X, y).dual_coef_
    K = X @ X.T
    a *= min(1.0, C / np.max(np.abs(K @ a)))
    terms = bounds.regret_inequality_terms(K, y, y_hat, K @ a, loss=loss, eta=eta, sigma=sigma,
                                           alpha=alpha, w_norm2=a @ K @ a)
    # R_G against the primal sum of g_t^T A_t^{-1} g_t
    A = alpha * np.eye(dim)
    rg = 0.0
    for t in range(T):
        g = loss.derivative(y[t], y_hat[t]) * X[t]
        A = A + eta * np.outer(g, g)
        rg += g @ np.linalg.solve(A, g)
    assert terms["R_G"] == pytest.approx(rg, rel=1e-9)
    assert terms["R_D"] <= 1e-12  # eta = sigma
    assert terms["lhs"] <= terms["rhs"]


# ----------------------------------------------------------------------------- learners


def test_kons_adversarial_example_log_regret():
    from okoco.learners import KONS

    C = 1.0
    model = KONS(kernel=kernels.RBF(1.0), loss=losses.Squared(), C=C, alpha=1.0,
                 eta="exp-concave", max_size=None)  # eta = sigma = 1/(8 C^2); Theorem 1's KONS
    cps = [100, 200, 500, 1000, 2000, 4000]
    tr = RegretTracker(losses.Squared(), Zero(), checkpoints=cps)
    for t in range(cps[-1]):
        x, y = {"x": 0.0}, (C if t % 2 == 0 else -C)
        tr.update(x, y, model.predict_one(x))
        model.learn_one(x, y)
    ratio = tr.regret / np.log(tr.t)
    # bounded: within 25% of its value at T = 100 up to T = 4000 (sqrt(T) would be 6x)
    assert np.all(ratio <= 1.25 * ratio[0]) and np.all(ratio >= 0.8 * ratio[0])
    assert tr.regret[-1] > tr.regret[0] > 0


def _rkhs_stream(T, seed=0, C=1.0):
    rng = np.random.default_rng(seed)
    k = kernels.RBF(2.0)
    centres = rng.uniform(-1, 1, size=(8, 2))
    coef = rng.standard_normal(8)
    X = rng.uniform(-1, 1, size=(T, 2))
    f = k(X, centres) @ coef
    f *= 0.6 * C / np.max(np.abs(f))
    y = np.clip(f + 0.2 * rng.standard_normal(T), -C, C)
    return k, X, y


def _run(model, X, y, tracker):
    for x, yt in zip(X, y, strict=True):
        xd = {"a": x[0], "b": x[1]}
        tracker.update(xd, yt, model.predict_one(xd))
        model.learn_one(xd, yt)
    return tracker


def test_kons_family_regret_per_step_decreases_and_kons_below_theorem1():
    from okoco.learners import KONS, FunctionalGD, SketchedKONS

    C, alpha, T = 1.0, 1.0, 600
    k, X, y = _rkhs_stream(T)
    cps = [75, 150, 300, 600]
    loss = losses.Squared()
    learners = {
        "kons": KONS(kernel=k, loss=loss, C=C, alpha=alpha, eta="exp-concave"),
        "sketched": SketchedKONS(kernel=k, loss=loss, C=C, alpha=alpha, eta="exp-concave",
                                 beta=2.0, eps=0.5, p_min=0.1, seed=0),
        "fgd": FunctionalGD(kernel=k, loss=loss, C=C, eta="sqrt"),
    }
    trackers = {}
    for name, model in learners.items():
        tr = RegretTracker(loss, ClippedKernelERM(k, loss, C=C, alpha=alpha), checkpoints=cps)
        trackers[name] = _run(model, X, y, tr)
        per_step = tr.regret / tr.t
        assert per_step[-1] < per_step[0], name
        assert np.all(np.diff(per_step) < 0.05 * per_step[0]), name
    kons = trackers["kons"]
    bound = kons.bound(C=C, alpha=alpha)
    assert np.all(kons.regret <= bound)
    assert np.all(kons.regret > 0)


# -- issue 32: a failing checkpoint, the loss's domain, comparator inputs -----------------------


class _FailingRidge(KernelRidge):
    """A comparator whose fit fails while ``fail`` is set (a singular system, say)."""

    fail = True

    def fit(self, X, y):
        if type(self).fail:
            raise np.linalg.LinAlgError("singular matrix")
        return super().fit(X, y)


def test_a_comparator_failing_at_a_checkpoint_commits_nothing_and_the_step_can_be_retried():
    comparator = _FailingRidge(kernels.RBF(1.0), alpha=0.1)
    tracker = RegretTracker(losses.Squared(), comparator, checkpoints=[6])
    for i in range(5):
        tracker.update({"a": 0.1 * i}, 0.1 * i, 0.0)
    before = (tracker.n_seen, tracker.X.copy(), tracker.y.copy(), tracker._cum, tracker._next)
    _FailingRidge.fail = True
    with pytest.raises(np.linalg.LinAlgError):
        tracker.update({"a": 0.5, "new": 1.0}, 0.5, 0.0)
    after = (tracker.n_seen, tracker.X, tracker.y, tracker._cum, tracker._next)
    assert after[0] == 5 and np.array_equal(after[1], before[1]) and after[3] == before[3]
    assert tracker.features == ["a"] and len(tracker.t) == 0
    _FailingRidge.fail = False
    tracker.update({"a": 0.5, "new": 1.0}, 0.5, 0.0)
    assert tracker.n_seen == 6 and tracker.t.tolist() == [6]


def test_a_logistic_tracker_refuses_a_target_outside_its_labels():
    tracker = RegretTracker(losses.Logistic(), KernelRidge(kernels.RBF(1.0)))
    with pytest.raises(ValueError, match=r"\{-1, \+1\}, got 0.5"):
        tracker.update({"a": 1.0}, 0.5, 0.0)
    assert tracker.n_seen == 0


@pytest.mark.parametrize(("X", "error", "words"), [
    (np.array([["1.5"], ["2"]]), TypeError, "strings"),
    (np.array([[b"1"], [b"2"]]), TypeError, "bytes"),
    (np.array([[1 + 2j], [2]]), TypeError, "complex"),
    (np.array(["2020-01-01", "2020-01-02"], dtype="M8[D]")[:, None], TypeError, "dates"),
    (np.array([[1.0], [np.nan]]), ValueError, r"finite, got nan at \[1, 0\]"),
    (np.array([[1.0], ["x"]], dtype=object), TypeError, r"X\[1, 0\].*non-numeric"),
])
def test_comparators_and_nystrom_refuse_what_is_not_a_real_number(X, error, words):
    from okoco.dictionary import NystromKRR

    for model in (KernelRidge(kernels.RBF(1.0)), NystromKRR(kernels.RBF(1.0))):
        with pytest.raises(error, match=words):
            model.fit(X, [0.1, 0.2])
        model.fit(np.array([[0.0], [1.0]]), [0.0, 1.0])
        with pytest.raises(error, match=words):
            model.predict(X)
