import copy
import math
import pickle

import numpy as np
import pytest
from primal import (
    feasible_linear_stream,
    h,
    poly2_features,
    primal_ons,
    regret_inequality_slack,
)
from river import checks, datasets, evaluate, metrics, preprocessing
from streams import as_dicts, check_gp_posterior, run, unit_rows

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS


def squared_stream(n=250, d=4, seed=0, C=0.25):
    X = unit_rows(n, d, seed=seed)
    y = np.clip(1.5 * np.sin(3 * X @ np.arange(1.0, d + 1)), -1, 1)
    return X, y


@pytest.mark.parametrize("eta", [0.5, lambda t: 2.0 / math.sqrt(t)])
@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic()])
def test_linear_kons_equals_primal_ons(eta, loss):
    X, y = squared_stream()
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1.0, -1.0)
    C, alpha = 0.1, 0.7
    expected, active, _ = primal_ons(X, y, loss, C, alpha, eta)
    got = run(KONS(kernel=kernels.Linear(), loss=loss, C=C, alpha=alpha, eta=eta), X, y)
    assert active >= 0.2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert np.all(np.abs(got) <= C)


def test_polynomial_kons_equals_primal_ons_on_explicit_features():
    X, y = squared_stream(n=150, d=3, seed=4)
    kernel = kernels.Polynomial(degree=2, gamma=0.8, coef0=0.5)
    Phi = poly2_features(X, 0.8, 0.5)
    np.testing.assert_allclose(Phi @ Phi.T, kernel(X), rtol=1e-12, atol=1e-14)
    expected, active, _ = primal_ons(Phi, y, losses.Squared(), 0.4, 1.0, 0.3)
    got = run(KONS(kernel=kernel, C=0.4, alpha=1.0, eta=0.3), X, y)
    assert active > 0.1
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def printed_lemma2_predictions(X, y, loss, C, alpha, eta):
    """The paper's printed Lemma 2 (b-form with k_ii and -1/eta inside the bracket)."""
    K = X @ X.T
    preds, b, dvec = [], [], []
    for t in range(len(X)):
        if t == 0:
            ybar, sbar = 0.0, None
        D = np.array(dvec)
        Kbar = D[:, None] * K[:t, :t] * D[None, :]
        kbar_col = D * K[:t, t]
        Mb = np.linalg.solve(Kbar + alpha * np.eye(t), np.array(b)) if t else np.zeros(0)
        ybar = K[:t, t] @ (D * Mb) if t else 0.0
        yhat = ybar - h(ybar, C)
        gdot = float(loss.derivative(y[t], yhat))
        d_t = gdot * math.sqrt(eta)
        kb = d_t * kbar_col
        quad = kb @ np.linalg.solve(Kbar + alpha * np.eye(t), kb) if t else 0.0
        sbar = K[t, t] - quad  # printed: k_ii instead of kbar_ii
        b.append(d_t * (yhat - alpha * h(ybar, C) / sbar - 1.0 / eta))  # printed -1/eta inside
        dvec.append(d_t)
        preds.append(yhat)
    return np.array(preds)


def test_printed_lemma2_is_wrong_once_projections_are_active():
    X, y = squared_stream(n=120)
    C, alpha, eta = 0.1, 0.7, 0.5
    expected, active, _ = primal_ons(X, y, losses.Squared(), C, alpha, eta)
    printed = printed_lemma2_predictions(X, y, losses.Squared(), C, alpha, eta)
    got = run(KONS(kernel=kernels.Linear(), C=C, alpha=alpha, eta=eta), X, y)
    assert active > 0.2
    assert np.max(np.abs(printed - expected)) > 0.1
    assert np.max(np.abs(got - expected)) < 1e-9


def test_zero_derivative_with_active_projection():
    # Targets exactly at +-C: whenever ybar is clipped onto the target, gdot = 0.
    X = unit_rows(200, 3, seed=7)
    C = 0.5
    y = C * np.sign(X[:, 0] + 0.3 * X[:, 1])
    expected, _, records = primal_ons(X, y, losses.Squared(), C, 1.0, 2.0)
    zero_and_projected = sum(
        1 for t, r in enumerate(records) if r["gdot"] == 0.0 and abs(expected[t]) == C
    )
    got = run(KONS(kernel=kernels.Linear(), C=C, alpha=1.0, eta=2.0), X, y)
    assert zero_and_projected >= 10
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def ftl_kernel_ridge(K, y, alpha):
    """Follow-the-leader kernel ridge: k_t^T (K_{<t} + (alpha/2) I)^{-1} y_{<t}, dense solves."""
    preds = np.zeros(len(y))
    for t in range(1, len(y)):
        preds[t] = K[t, :t] @ np.linalg.solve(K[:t, :t] + alpha / 2 * np.eye(t), y[:t])
    return preds


def regression_stream(n=300, d=4, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X @ np.array([1.0, -0.5, 0.3, 0.8])) + 0.1 * rng.normal(size=n)
    y[0] = 0.0  # the first prediction is 0, so gdot_1 = 0: the step must not divide by it
    return X, y


@pytest.mark.parametrize("kernel", [kernels.RBF(gamma=0.7), kernels.Linear()])
def test_hessian_step_is_follow_the_leader_kernel_ridge(kernel):
    X, y = regression_stream()
    alpha = 0.3
    expected = ftl_kernel_ridge(kernel(X), y, alpha)
    got = run(KONS(kernel=kernel, C=1e6, alpha=alpha, eta="hessian"), X, y)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)
    assert np.abs(expected).max() > 0.5  # the reference is not trivially small


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
def test_hessian_step_equals_primal_ons_with_curvature_weights(loss):
    X, y = squared_stream(n=200, d=4, seed=6)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1.0, -1.0)
    C, alpha = 0.1, 0.5
    expected, active, records = primal_ons(X, y, loss, C, alpha, "hessian")
    model = KONS(kernel=kernels.Linear(), loss=loss, C=C, alpha=alpha, eta="hessian")
    got = run(model, X, y)
    assert active > 0.1
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert model.rg_sum == pytest.approx(sum(r["g_Ainv_g"] for r in records), rel=1e-9)


def test_hessian_step_needs_a_second_derivative():
    class NoHessian:
        def derivative(self, y, z):
            return 2.0 * (z - y)

    with pytest.raises(TypeError, match="second_derivative"):
        KONS(loss=NoHessian(), eta="hessian")
    with pytest.raises(ValueError, match="eta must be a policy name .*'hessian'.*got 'hesian'"):
        KONS(eta="hesian")


def test_first_two_steps_in_closed_form():
    kernel = kernels.RBF(gamma=0.5)
    x1, x2 = {"a": 0.1, "b": 0.3}, {"a": -0.4, "b": 0.2}
    model = KONS(kernel=kernel, C=2.0, alpha=1.5, eta=0.3)
    assert model.predict_one(x1) == 0.0
    model.learn_one(x1, 1.2)
    gdot1 = losses.Squared().derivative(1.2, 0.0)
    k12 = math.exp(-0.5 * (0.5**2 + 0.1**2))
    assert model.predict_one(x2) == pytest.approx(-gdot1 * k12 / (1.5 + 0.3 * gdot1**2), rel=1e-12)


def test_diagnostics_match_dense_references():
    X, y = squared_stream(n=120, d=3, seed=2)
    kernel, alpha, C = kernels.RBF(gamma=2.0), 0.5, 0.6
    eta = lambda t: 0.8 / math.sqrt(t)  # noqa: E731
    model = KONS(kernel=kernel, C=C, alpha=alpha, eta=eta)
    run(model, X, y)
    _, _, records = primal_ons(np.linalg.cholesky(kernel(X) + 1e-13 * np.eye(120)), y,
                               losses.Squared(), C, alpha, eta)
    d = np.array([r["gdot"] * math.sqrt(r["eta"]) for r in records])
    Kbar = d[:, None] * kernel(X) * d[None, :]
    taus = [np.linalg.solve(Kbar[: t + 1, : t + 1] + alpha * np.eye(t + 1), Kbar[: t + 1, t])[t]
            for t in range(len(X))]
    assert model.online_effective_dimension == pytest.approx(sum(taus), rel=1e-8)
    assert model.rg_sum == pytest.approx(sum(r["g_Ainv_g"] for r in records), rel=1e-6)
    sign, logdet = np.linalg.slogdet(Kbar / alpha + np.eye(len(X)))
    assert model.log_det == pytest.approx(logdet, rel=1e-9)
    # Lemma 3, deterministically
    lam = np.linalg.eigvalsh(Kbar)
    d_eff = np.sum(lam / (lam + alpha))
    assert model.online_effective_dimension <= model.log_det + 1e-9
    assert model.log_det <= d_eff * (1 + math.log(lam.max() / alpha + 1)) + 1e-9


def test_regret_inequality_holds_deterministically():
    # Spec section 7 item 12: 2 R_T(w) <= alpha ||w||^2 + R_G + R_D for every feasible w.
    C, alpha = 1.0, 1.0
    X, y, w_true = feasible_linear_stream(C=C)
    loss = losses.Squared()
    sigma = loss.curvature(C)
    for eta in (sigma, 4 * sigma):
        model = KONS(kernel=kernels.Linear(), C=C, alpha=alpha, eta=eta)
        preds = run(model, X, y)
        _, _, records = primal_ons(X, y, loss, C, alpha, eta)
        for w in (np.zeros(4), w_true, np.linalg.lstsq(X, y, rcond=None)[0]):
            slack = regret_inequality_slack(X, y, preds, records, w, loss=loss, C=C,
                                            alpha=alpha, sigma=sigma, rg_sum=model.rg_sum)
            assert slack >= -1e-9


def test_regret_inequality_holds_for_the_hessian_step_with_its_own_r_d():
    # The telescoping inequality needs no monotone eta: it holds for eta_t = loss''/gdot^2 too,
    # but R_D >= 0 there (eta_t >= sigma), so Theorem 1's log T rate does not follow.
    C, alpha = 1.0, 1.0
    X, y, w_true = feasible_linear_stream(C=C)
    loss = losses.Squared()
    sigma = loss.curvature(C)
    model = KONS(kernel=kernels.Linear(), C=C, alpha=alpha, eta="hessian")
    preds = run(model, X, y)
    _, _, records = primal_ons(X, y, loss, C, alpha, "hessian")
    assert all(r["weight"] >= sigma * r["gdot"] ** 2 for r in records)  # every R_D term >= 0
    for w in (np.zeros(4), w_true, np.linalg.lstsq(X, y, rcond=None)[0]):
        slack = regret_inequality_slack(X, y, preds, records, w, loss=loss, C=C,
                                        alpha=alpha, sigma=sigma, rg_sum=model.rg_sum)
        assert slack >= -1e-9


def test_predict_many_matches_predict_one_and_pickle_roundtrip():
    X, y = squared_stream(n=80, d=3, seed=3)
    model = KONS(kernel=kernels.RBF(1.0), C=0.5)
    run(model, X, y)
    Q = unit_rows(7, 3, seed=11)
    one = [model.predict_one(x) for x in as_dicts(Q)]
    many = model.predict_many(np.asarray(Q))  # int column names are new features here
    assert not np.allclose(one, many)
    import pandas as pd

    frame = pd.DataFrame(as_dicts(Q))
    np.testing.assert_allclose(model.predict_many(frame).to_numpy(), one, rtol=1e-10)
    clone = pickle.loads(pickle.dumps(model))
    assert [clone.predict_one(x) for x in as_dicts(Q)] == one


class FlatLoss(losses.Squared):
    def curvature(self, C, y_max=None):
        return 0.0


def test_parameter_validation():
    with pytest.raises(ValueError, match="alpha"):
        KONS(alpha=0.0)
    with pytest.raises(ValueError, match="curved"):
        KONS(loss=FlatLoss(), eta="exp-concave")
    KONS(loss=FlatLoss(), eta="sqrt")


@pytest.mark.parametrize(
    "model",
    [KONS(), BinaryClassifier(KONS(loss=losses.Logistic())),
     BinaryClassifier(KONS(loss=losses.SquaredHinge()))],
)
def test_river_check_estimator(model):
    checks.check_estimator(model)


def test_progressive_validation_and_classification():
    reg = preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | KONS(kernel=kernels.RBF(0.1), C=3.0)
    )
    mae = evaluate.progressive_val_score(datasets.TrumpApproval(), reg, metrics.MAE())
    assert mae.get() < 1.0
    clf = preprocessing.StandardScaler() | BinaryClassifier(
        KONS(kernel=kernels.RBF(0.05), loss=losses.Logistic(), C=3.0, alpha=1.0)
    )
    acc = evaluate.progressive_val_score(datasets.Phishing(), clf, metrics.Accuracy())
    assert acc.get() > 0.85


# -- the window (max_size) ------------------------------------------------------------------


def windowed_krr_predictions(X, y, kernel, alpha, window):
    """Kernel ridge regression with ridge alpha/2 on the last ``window`` points, densely."""
    K = kernel(X)
    preds = []
    for t in range(len(X)):
        lo = max(0, t - window)
        if t == 0:
            preds.append(0.0)
            continue
        Kw = K[lo:t, lo:t]
        coef = np.linalg.solve(Kw + 0.5 * alpha * np.eye(t - lo), y[lo:t])
        preds.append(float(K[t, lo:t] @ coef))
    return np.array(preds)


@pytest.mark.parametrize("window", [1, 7, 30])
def test_window_with_the_squared_loss_is_sliding_window_kernel_ridge_regression(window):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(120, 3))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] * X[:, 2]
    kernel = kernels.RBF(0.4)
    model = KONS(kernel=kernel, C=1e6, alpha=0.2, eta="hessian", max_size=window)
    got = run(model, X, y)
    expected = windowed_krr_predictions(X, y, kernel, 0.2, window)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert model.dictionary_size == window and model._store.n <= window + 1


def test_window_pending_terms_travel_with_copies_and_files(tmp_path):
    """The window's inverse keeps its rank-one changes pending (applied 16 at a time); a
    pickled or copied model holds them and goes on exactly as the model does (a saved one
    rebuilds its inverse from the model on load: the same model to rounding)."""
    import okoco

    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    y = np.sin(X[:, 0])
    model = KONS(kernel=kernels.RBF(0.5), alpha=0.2, max_size=12)
    for x, target in zip(X[:30], y[:30]):
        model.learn_one(dict(enumerate(x)), float(target))
    assert model._window.pending_terms[:2].all()  # additions and removals pending
    twins = [pickle.loads(pickle.dumps(model)), copy.deepcopy(model),
             okoco.load(model.save(tmp_path / "kons.okoco"))]
    for x, target in zip(X[30:], y[30:]):
        xd = dict(enumerate(x))
        expected = model.predict_one(xd)
        assert [twin.predict_one(xd) for twin in twins[:2]] == [expected] * 2
        assert twins[2].predict_one(xd) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        for m in (model, *twins):
            m.learn_one(xd, float(target))


def windowed_kons_reference(X, y, kernel, loss, C, alpha, window, coins=None):
    """Windowed KONS (curvature step) from its definition, with dense solves: w = A^{-1} b over
    the points of the window, A = alpha I + sum_I d_s^2 phi_s phi_s^T, b = sum_s c_s phi_s,
    the oblique projection onto |f(x_t)| <= C and the coefficient of the step."""
    pts, ds, cs, zs, preds = [], [], [], [], []
    for t, (x, target) in enumerate(zip(X, y)):
        if pts:
            P = np.array(pts)
            k = kernel(P, x[None, :])[:, 0]
            c, dv, I = np.array(cs), np.array(ds), np.flatnonzero(zs)
            KI = kernel(P[I], P)
            M = alpha * np.eye(len(I)) + dv[I, None] * KI[:, I] * dv[None, I]
            e = dv[I] * k[I]
            ybar = (k @ c - e @ np.linalg.solve(M, dv[I] * (KI @ c))) / alpha
            s = 1.0 - e @ np.linalg.solve(M, e)
        else:
            ybar, s = 0.0, 1.0
        excess = float(h(ybar, C))
        yhat = ybar - excess
        preds.append(yhat)
        gdot = float(loss.derivative(target, yhat))
        weight = float(loss.second_derivative(target, yhat))
        z = 1 if coins is None else coins[t]
        c_t = z * weight * yhat - gdot - alpha * excess / max(s, 1e-12)
        pts.append(x)
        ds.append(math.sqrt(weight))
        cs.append(c_t)
        zs.append(z)
        if len(pts) > window:
            del pts[0], ds[0], cs[0], zs[0]
    return np.array(preds)


@pytest.mark.parametrize("loss", [losses.Logistic(), losses.Squared()])
def test_window_equals_a_dense_windowed_kons_with_active_projections(loss):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 2))
    y = np.sign(X[:, 0] * X[:, 1] + 0.2) if isinstance(loss, losses.Logistic) else \
        np.tanh(2 * X[:, 0]) * 1.5
    kernel, C = kernels.RBF(0.7), 0.8
    model = KONS(kernel=kernel, loss=loss, C=C, alpha=0.3, max_size=25)
    got = run(model, X, y)
    expected = windowed_kons_reference(X, y, kernel, loss, C, 0.3, 25)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert np.mean(np.abs(expected) >= C - 1e-12) > 0.1  # the projection was active


def test_window_none_is_the_unbounded_learner_and_large_windows_never_remove():
    X, y = squared_stream(n=80)
    unbounded = run(KONS(kernel=kernels.RBF(1.0), C=1.0, max_size=None), X, y)
    large = run(KONS(kernel=kernels.RBF(1.0), C=1.0, max_size=80), X, y)
    np.testing.assert_allclose(large, unbounded, rtol=0, atol=1e-9)  # the inverse form
    short = KONS(kernel=kernels.RBF(1.0), C=1.0, max_size=10)
    assert not np.array_equal(run(short, X, y), unbounded)


def test_window_keeps_memory_flat():
    X, y = squared_stream(n=300)
    model = KONS(max_size=20)
    run(model, X, y)
    assert model.dictionary_size == 20
    assert model._store.n == 21 and model._store.data.shape[0] <= 42  # a ring of 21 slots
    assert model._chol.capacity <= 64


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10"])
def test_max_size_is_checked(bad):
    with pytest.raises((TypeError, ValueError), match="max_size"):
        KONS(max_size=bad)


@pytest.mark.parametrize("gamma", [1e-6, 1.0])
def test_window_stays_finite_with_a_tiny_ridge_and_near_duplicate_points(gamma):
    """The window's inverse with alpha = 1e-6 on points repeated up to 1e-13 (near the
    conditioning of the unbounded learner's stability tests, which use 1e-8: there the window
    refuses steps, documented), across many removals."""
    rng = np.random.default_rng(1)
    base = rng.uniform(-1, 1, size=(15, 2))
    X = np.concatenate([base] * 20) + 1e-13 * rng.standard_normal((300, 2))
    y = np.sin(3 * X[:, 0]) + 0.3 * X[:, 1]
    model = KONS(kernel=kernels.RBF(gamma), C=1.0, alpha=1e-6, max_size=40)
    preds = run(model, X, y)
    assert np.all(np.isfinite(preds)) and np.all(np.abs(preds) <= 1.0)
    assert model.dictionary_size == 40 and np.all(np.isfinite(model._window.P))


@pytest.mark.parametrize("max_size", [None, 50])
def test_with_dist_is_the_dense_gaussian_process_posterior(max_size):
    # squared loss, curvature step, no clipping: KONS is kernel ridge regression with ridge
    # alpha/2, and with_dist its GP posterior (noise ratio alpha/2) with the scale estimated
    # from the a-priori errors over their spreads (docs/guide/intervals.md), from dense solves;
    # a window of 50 holds all 30 points
    kernel, alpha = kernels.RBF(0.5), 0.3
    check_gp_posterior(KONS(kernel=kernel, C=1e6, alpha=alpha, max_size=max_size), kernel, alpha,
                       np.random.default_rng(0))


def test_sketched_kons_keeps_its_public_and_saved_path():
    """Sketched-KONS lives in its own module; okoco.learners.kons re-exports it, and files and
    pickles still name it okoco.learners.kons.SketchedKONS (as every saved model does)."""
    import okoco.learners
    import okoco.learners.kons
    import okoco.learners.sketched_kons

    cls = okoco.learners.sketched_kons.SketchedKONS
    assert okoco.learners.kons.SketchedKONS is cls and okoco.learners.SketchedKONS is cls
    assert f"{cls.__module__}.{cls.__qualname__}" == "okoco.learners.kons.SketchedKONS"
    model = cls(seed=0)
    model.learn_one({"a": 0.5}, 0.2)
    again = pickle.loads(pickle.dumps(model))
    assert type(again) is cls and again.predict_one({"a": 0.5}) == model.predict_one({"a": 0.5})


def test_the_window_step_asks_for_room_and_leaves_the_counters_and_statistics_to_the_learner():
    """Issue 41: the compiled window step (``okoco._core._kons.KONSCore``) calls nothing of the
    learner: with buffers too small it returns ``STEP_NEED_ROOM`` and changes nothing; after
    the learner grows them it writes the point and leaves the store's counters and the
    statistics' terms (``tau``, ``rg_term``, ``log_det_term``) to the learner, which adds
    them as the unbounded learner's Python step does (a dense check of ``tau`` below)."""
    from okoco._blas import scipy_one_thread
    from okoco._core import _steps

    model = KONS(kernel=kernels.RBF(0.5), alpha=0.5, max_size=4)
    v, y = np.array([0.3, -0.2]), 0.7
    core, store, window = model._step_core(), model._store, model._window
    with scipy_one_thread:
        analysis = model._analyse(v)
        step = model.check(y, analysis)
        before = (store.n, store.n_added, store.data.shape, window.size)
        status = core.apply(store, window, model._selected, v, analysis, step, 1, model.alpha)
        assert status == _steps.STEP_NEED_ROOM and core.needed == 1
        assert (store.n, store.n_added, store.data.shape, window.size) == before
        model._make_room(v, core.needed)
        status = core.apply(store, window, model._selected, v, analysis, step, 1, model.alpha)
    assert status == _steps.STEP_OK and core.wrote_row and core.slot == 0
    assert store.n_added == 0 and window.size == 1  # the counters wait for the learner
    s, d_t = step[0], step[5]
    q = d_t * d_t * s / model.alpha  # the first point: s = kappa = 1, tau = q / (1 + q)
    assert s == pytest.approx(1.0) and core.tau == pytest.approx(q / (1.0 + q))
    assert core.log_det_term == pytest.approx(math.log1p(q))
    assert core.row_norm == pytest.approx(float(v @ v))
    np.testing.assert_array_equal(store.data[0, :2], v)
    # the learner's own step: the same point, counters and statistics written back
    other = KONS(kernel=kernels.RBF(0.5), alpha=0.5, max_size=4)
    other.learn_one({"a": 0.3, "b": -0.2}, y)
    assert (other._store.n, other._store.n_added) == (1, 1)
    assert other.online_effective_dimension == core.tau
    assert other.log_det == core.log_det_term and other.rg_sum == core.rg_term
