import math

import numpy as np
import pytest
from primal import feasible_linear_stream, primal_ons, regret_inequality_slack
from river import checks, datasets, evaluate, metrics, preprocessing
from streams import as_dicts, run, unit_rows
from test_kons import ftl_kernel_ridge, regression_stream

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, FunctionalGD, SketchedKONS


def stream(n=300, d=3, seed=0):
    X = unit_rows(n, d, seed=seed)
    y = np.clip(1.5 * np.sin(3 * X @ np.arange(1.0, d + 1)), -1, 1)
    return X, y


@pytest.mark.parametrize("beta", [0.0, 3.0])
def test_p_min_one_is_bit_identical_to_kons(beta):
    X, y = stream()
    kw = dict(kernel=kernels.RBF(gamma=1.5), C=0.3, alpha=0.5, eta=0.4)
    sketched = SketchedKONS(**kw, beta=beta, p_min=1.0, seed=1)
    exact = KONS(**kw)
    assert run(sketched, X, y).tolist() == run(exact, X, y).tolist()
    assert sketched.dictionary_size == exact.dictionary_size == len(X)
    assert sketched.log_det == exact.log_det


def test_hessian_step_keeping_every_point_is_follow_the_leader_kernel_ridge():
    X, y = regression_stream()
    kernel, alpha = kernels.RBF(gamma=0.7), 0.3
    model = SketchedKONS(kernel=kernel, C=1e6, alpha=alpha, eta="hessian", beta=1.0,
                         p_min=1.0, seed=0)
    got = run(model, X, y)
    assert model.dictionary_size == len(X)
    np.testing.assert_allclose(got, ftl_kernel_ridge(kernel(X), y, alpha), rtol=0, atol=1e-8)


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic()])
def test_hessian_step_equals_primal_sketched_ons_replaying_the_coins(loss):
    X, y = stream(n=250, d=4, seed=8)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1.0, -1.0)
    C, alpha = 0.3, 0.6
    model = SketchedKONS(kernel=kernels.Linear(), loss=loss, C=C, alpha=alpha, eta="hessian",
                         beta=1.0, eps=0.5, seed=4)
    got = run(model, X, y)
    coins = model.coins
    assert 0 < coins.sum() < len(X)
    expected, active, _ = primal_ons(X, y, loss, C, alpha, "hessian", coins=coins)
    assert active > 0.05
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_beta_p_min_zero_is_projected_kernel_gd_with_step_one_over_alpha():
    X, y = stream(seed=2)
    alpha = 2.0
    sketched = SketchedKONS(kernel=kernels.RBF(1.0), C=0.2, alpha=alpha, beta=0.0, p_min=0.0)
    gd = FunctionalGD(kernel=kernels.RBF(1.0), C=0.2, eta=1.0 / alpha)
    got, expected = run(sketched, X, y), run(gd, X, y)
    assert sketched.dictionary_size == 0
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("loss", [losses.Squared(), losses.SquaredHinge()])
def test_equals_primal_sketched_ons_replaying_the_coins(loss):
    X, y = stream(n=250, d=4, seed=3)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1.0, -1.0)
    C, alpha, eta = 0.15, 0.6, 0.8
    model = SketchedKONS(kernel=kernels.Linear(), loss=loss, C=C, alpha=alpha, eta=eta,
                         beta=1.0, eps=0.5, seed=4)
    got = run(model, X, y)
    coins = model.coins
    assert 0 < coins.sum() < len(X)  # the sketch really drops points
    expected, active, _ = primal_ons(X, y, loss, C, alpha, eta, coins=coins)
    assert active > 0.1
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert model.dictionary_size == coins.sum()


def test_sketched_regret_inequality_holds_deterministically():
    C, alpha = 1.0, 1.0
    X, y, w_true = feasible_linear_stream(C=C)
    loss = losses.Squared()
    sigma = loss.curvature(C)
    model = SketchedKONS(kernel=kernels.Linear(), C=C, alpha=alpha, eta=sigma, beta=1.0, seed=0)
    preds = run(model, X, y)
    _, _, records = primal_ons(X, y, loss, C, alpha, sigma, coins=model.coins)
    for w in (np.zeros(4), w_true):
        slack = regret_inequality_slack(X, y, preds, records, w, loss=loss, C=C, alpha=alpha,
                                        sigma=sigma, rg_sum=model.rg_sum, coins=model.coins)
        assert slack >= -1e-9
    assert model.rg_sum == pytest.approx(sum(r["g_Ainv_g"] for r in records), rel=1e-8)


def test_seeds_reproduce_and_differ():
    X, y = stream(n=200, seed=5)
    make = lambda seed: SketchedKONS(kernel=kernels.RBF(2.0), C=0.5, beta=1.0, seed=seed)  # noqa: E731
    a, b, c = make(7), make(7), make(8)
    pa, pb = run(a, X, y), run(b, X, y)
    run(c, X, y)
    assert pa.tolist() == pb.tolist() and a.coins.tolist() == b.coins.tolist()
    assert a.coins.tolist() != c.coins.tolist()


def test_dictionary_is_much_smaller_than_t_on_redundant_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(600, 1))
    y = np.sin(3 * X[:, 0])
    model = SketchedKONS(kernel=kernels.RBF(1.0), C=1.0, alpha=1.0, beta=3.0, seed=0)
    run(model, X, y)
    assert model.dictionary_size < 100
    assert model.n_seen == 600


@pytest.mark.parametrize(
    "model",
    [SketchedKONS(beta=2.0), BinaryClassifier(SketchedKONS(loss=losses.Logistic(), beta=2.0))],
)
def test_river_check_estimator(model):
    checks.check_estimator(model)


def test_parameter_validation():
    for bad in (dict(eps=0.0), dict(eps=1.5), dict(beta=-1.0), dict(p_min=1.5), dict(alpha=-1)):
        with pytest.raises(ValueError):
            SketchedKONS(**bad)


def test_progressive_validation_classification():
    clf = preprocessing.StandardScaler() | BinaryClassifier(
        SketchedKONS(kernel=kernels.RBF(0.05), loss=losses.Logistic(), C=3.0, beta=1.0, seed=0)
    )
    acc = evaluate.progressive_val_score(datasets.Phishing(), clf, metrics.Accuracy())
    assert acc.get() > 0.85
    assert math.isfinite(clf["BinaryClassifier"].learner.log_det)


@pytest.mark.parametrize("eta, p_min", [(0.8, 0.0), ("hessian", 0.0), ("hessian", 0.3)])
def test_points_beyond_the_margin_leave_the_store_and_nothing_else_changes(eta, p_min):
    """Squared hinge: a point beyond the margin has a zero gradient, so (unless the projection
    is active, or the floor's coin keeps it) its coefficient is 0 and it is not stored; the
    predictions are still those of primal sketched ONS replaying the coins."""
    X = unit_rows(400, 4, seed=6)
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 1.5]) >= 0, 1.0, -1.0)
    loss, C, alpha = losses.SquaredHinge(), 2.0, 0.5
    model = SketchedKONS(kernel=kernels.Linear(), loss=loss, C=C, alpha=alpha, eta=eta,
                         beta=1.0, eps=0.5, p_min=p_min, seed=4)
    got = run(model, X, y)
    coins = model.coins
    expected, active, records = primal_ons(X, y, loss, C, alpha, eta, coins=coins)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    beyond = np.array([r["gdot"] == 0.0 for r in records])
    assert beyond.mean() > 0.3 and active > 0.01
    # stored: the coefficient is nonzero (inside the margin, or projected) or the coin landed
    assert model._store.size < model.n_seen
    assert model._store.size >= (~beyond).sum()
    assert model.dictionary_size == coins.sum()
    if p_min:  # the floor's coin also keeps points with a zero gradient (a zero column)
        assert (coins[beyond] == 1).any()
    # a null step ends early: what it skips adds exactly nothing to the running sums
    assert model.rg_sum == pytest.approx(sum(r["g_Ainv_g"] for r in records), rel=1e-8)


@pytest.mark.parametrize("p_min", [0.0, 0.3])
def test_a_feature_first_seen_beyond_the_margin_is_registered_and_used_later(p_min):
    """The null step's early exit still registers the row's new feature (it is not stored, but
    the feature gets its column): the stream with the feature appearing late predicts as the
    same stream with it present, as 0, from the start."""
    X = unit_rows(300, 4, seed=3)
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 2.0]) >= 0, 1.0, -1.0)
    late = [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]
    full = [dict(row, extra=0.0) for row in late]
    kw = dict(kernel=kernels.RBF(0.7), loss=losses.SquaredHinge(), C=2.0, alpha=0.5, beta=1.0,
              p_min=p_min, seed=2)
    a, b = SketchedKONS(**kw), SketchedKONS(**kw)
    first = None
    for t, (x_late, x_full, target) in enumerate(zip(late, full, y)):
        if first is not None:
            x_late = dict(x_late, extra=-0.1 * (t % 3))
            x_full = dict(x_full, extra=-0.1 * (t % 3))
        elif t > 100 and a.predict_one(dict(x_late, extra=0.25)) * target >= 1.0:
            first = t  # beyond the margin: the feature arrives on a null step
            x_late = x_full = dict(x_late, extra=0.25)
        pa = a.predict_one(x_late)
        assert pa == pytest.approx(b.predict_one(x_full), abs=1e-12)
        if t == first:
            assert pa * target >= 1.0 and a._store.d == 4
        a.learn_one(x_late, target)
        b.learn_one(x_full, target)
    assert first is not None
    assert "extra" in a._features.columns and a._store.d == 5
    assert a._store.size == b._store.size < a.n_seen
    assert a.coins.tolist() == b.coins.tolist()


# -- the window (max_size) ------------------------------------------------------------------


def test_window_with_p_min_one_is_windowed_kons():
    X, y = stream(n=120, seed=5)
    kons = run(KONS(kernel=kernels.RBF(1.0), C=0.5, max_size=15), X, y)
    sketched = run(SketchedKONS(kernel=kernels.RBF(1.0), C=0.5, p_min=1.0, max_size=15,
                                seed=0), X, y)
    # equal up to rounding: at each recomputation of its inverse (every 4 n modifications),
    # Sketched-KONS takes M from the kernel over the stored points (its two inverses share
    # one array and keep no M), KONS from the columns it stored at each append
    np.testing.assert_allclose(sketched, kons, rtol=1e-10, atol=1e-12)


def test_window_equals_a_dense_windowed_sketched_kons_replaying_the_coins():
    from test_kons import windowed_kons_reference

    rng = np.random.default_rng(8)
    X = rng.normal(size=(200, 2))
    y = np.sign(X[:, 0] - X[:, 1] ** 2 + 0.5)
    kernel, loss, C, alpha, window = kernels.RBF(1.0), losses.Logistic(), 1.0, 0.5, 30
    model = SketchedKONS(kernel=kernel, loss=loss, C=C, alpha=alpha, beta=2.0, max_size=window,
                         seed=1)
    got, coins = [], []
    for x, target in zip(as_dicts(X), y):
        got.append(model.predict_one(x))
        model.learn_one(x, target)
        coins.append(int(model._kors.last_added))
        assert model.dictionary_size == model._kors.size <= window
    assert 0 < sum(coins) < len(coins)
    expected = windowed_kons_reference(X, y, kernel, loss, C, alpha, window, coins=coins)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert model._store.n == window + 1
    # KORS holds exactly the coins of the window's points
    assert set(model._kors.indices) == {t for t in range(len(X) - window, len(X)) if coins[t]}


def test_window_pairs_its_two_inverses_in_one_array_and_kors_scores_as_dense_eq4(tmp_path):
    """In the window, the preconditioner's inverse and KORS's (the same atoms) share one array
    and keep no M: KORS's estimate at every step equals Eq. 4 computed densely from the atoms
    held (weights 1/p, the rescaled kernel d_i d_j K), across the recomputations of both
    inverses (whose M then comes from the stored points); a pickled, copied or saved model
    shares the array again and goes on identically."""
    import copy
    import pickle

    import okoco

    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 2))
    y = np.sign(X[:, 0] * X[:, 1] + 0.1)
    kernel, alpha, window, eps = kernels.RBF(0.8), 0.3, 20, 0.5
    model = SketchedKONS(kernel=kernel, loss=losses.Logistic(), alpha=alpha, beta=3.0,
                         eps=eps, max_size=window, seed=4)
    K = kernel(X, X)
    rows = as_dicts(X)
    for t, (x, target) in enumerate(zip(rows, y)):
        kors, store = model._kors, model._store
        m = kors.size
        held = model._selected[:m].copy()  # the atoms' store slots, in KORS's order
        points = [int(np.flatnonzero((X == store.data[s, :2]).all(1))[0]) for s in held]
        d_held, w = store.fields["d"][held].copy(), kors._weights[:m].copy()
        model.learn_one(x, target)
        d_t = model._store.fields["d"][(model._store.n_added - 1) % (window + 1)]
        scale = np.sqrt(w) * d_held
        A = scale[:, None] * K[np.ix_(points, points)] * scale[None, :] + alpha * np.eye(m)
        c = scale * d_t * K[points, t]
        q = max(d_t * d_t * K[t, t] - c @ np.linalg.solve(A, c), 0.0) / alpha if m else (
            d_t * d_t * K[t, t] / alpha)
        assert kors.last_q == pytest.approx(q, rel=1e-8, abs=1e-10)
        assert model._window.P is model._kors._inverse.P
    assert model._window.n_refreshes > 0 and model._kors._inverse.n_refreshes > 0
    assert model._window._keeps_m is False and model._kors._inverse._upper is True

    probes = rows[:5]
    path = okoco.save(model, tmp_path / "paired.npz")
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), okoco.load(path)):
        for x, target in zip(rows[:40], y[:40]):
            clone.learn_one(x, target)
            assert clone._window.P is clone._kors._inverse.P
        twin = copy.deepcopy(model)
        for x, target in zip(rows[:40], y[:40]):
            twin.learn_one(x, target)
        # (the loaded clone rebuilt its pair of inverses from the model: equal to rounding)
        assert [clone.predict_one(x) for x in probes] == pytest.approx(
            [twin.predict_one(x) for x in probes], rel=1e-9, abs=1e-12)
