"""Adaptive conformal intervals: the recursion against an independent reference, the long-run
coverage bound of Gibbs & Candès (2021, Prop. 4.1) on adversarial sequences, and the wrapper."""

import importlib
import math
import pickle

import numpy as np
import pytest
from river import checks, datasets, linear_model, preprocessing, proba

from okoco.intervals import AdaptiveConformal, IntervalRegressor, interval_score


def reference_aci(scores, misses, coverage, gamma, window):
    """ACI written from the paper's update, with numpy's sorted array for the quantile."""
    a = 1.0 - coverage
    gap, quantiles, kept = a, [], []
    for score, missed in zip(scores, misses):
        ordered = np.sort(np.array(kept))
        n = ordered.size
        if gap >= 1:
            q = 0.0
        elif gap <= 0 or n == 0:
            q = math.inf
        else:
            rank = math.ceil((1 - gap) * (n + 1))
            q = ordered[rank - 1] if rank <= n else math.inf
        quantiles.append(q)
        gap = gap + gamma * (a - missed)
        kept.append(score)
        if window is not None:
            kept = kept[-window:]
    return quantiles, gap


@pytest.mark.parametrize("window", [None, 7, 50])
def test_recursion_matches_reference(window):
    rng = np.random.default_rng(3)
    scores = rng.exponential(size=300)
    misses = rng.random(300) < 0.3
    calibrator = AdaptiveConformal(coverage=0.8, gamma=0.05, window=window)
    got = []
    for score, missed in zip(scores, misses):
        got.append(calibrator.quantile())
        calibrator.update(score, bool(missed))
    want, gap = reference_aci(scores, misses.astype(float), 0.8, 0.05, window)
    assert got == want
    assert calibrator.level_gap == pytest.approx(gap, abs=1e-12)
    assert calibrator.n_missed == int(misses.sum())


@pytest.mark.parametrize("gamma", [0.005, 0.02, 0.1])
def test_long_run_coverage_bound_on_a_shifting_stream(gamma):
    # the noise scale jumps by 20x every 500 steps and the scores are never exchangeable:
    # the miss rate still meets Proposition 4.1's bound, for every T
    rng = np.random.default_rng(0)
    coverage, T = 0.9, 4000
    calibrator = AdaptiveConformal(coverage=coverage, gamma=gamma, window=200)
    misses = 0
    a = 1 - coverage
    for t in range(1, T + 1):
        scale = 20.0 if (t // 500) % 2 else 1.0
        score = abs(rng.standard_t(2)) * scale
        missed = score > calibrator.quantile()
        calibrator.update(score, missed)
        misses += missed
        bound = (max(a, 1 - a) + gamma) / (gamma * t)
        assert abs(misses / t - a) <= bound + 1e-12


def test_bad_scores_and_parameters():
    calibrator = AdaptiveConformal()
    with pytest.raises(ValueError, match="score"):
        calibrator.update(float("nan"), False)
    assert calibrator.n_seen == 0
    with pytest.raises(ValueError, match="coverage"):
        AdaptiveConformal(coverage=1.0)
    with pytest.raises(TypeError, match="window"):
        AdaptiveConformal(window=2.5)
    with pytest.raises(TypeError, match="regressor"):
        IntervalRegressor("not a model")


def test_interval_score_closed_form():
    # Gneiting & Raftery (2007), Eq. 43, with alpha = 1 - coverage = 0.2
    assert interval_score(0.5, 0.0, 1.0, 0.8) == 1.0
    assert interval_score(-1.0, 0.0, 1.0, 0.8) == pytest.approx(1.0 + 10.0 * 1.0)
    assert interval_score(3.0, 0.0, 1.0, 0.8) == pytest.approx(1.0 + 10.0 * 2.0)


def run(model, stream):
    for x, y in stream:
        model.learn_one(x, y)
    return model


def test_wrapper_uses_the_models_spread_and_meets_coverage():
    wrapper = IntervalRegressor(linear_model.BayesianLinearRegression(), coverage=0.9)
    run(preprocessing.StandardScaler() | wrapper, datasets.TrumpApproval())
    assert wrapper._with_dist is True
    n = wrapper.calibrator.n_seen
    bound = (0.9 + 0.02) / (0.02 * n)
    assert abs(wrapper.coverage_seen - 0.9) <= bound
    assert 0 < wrapper.mean_width < math.inf
    assert wrapper.mean_interval_score >= wrapper.mean_width


def test_wrapper_without_a_spread_uses_absolute_residuals():
    wrapper = IntervalRegressor(linear_model.LinearRegression(), coverage=0.8, gamma=0.05)
    model = preprocessing.StandardScaler() | wrapper
    run(model, datasets.TrumpApproval().take(600))
    assert wrapper._with_dist is False
    x, _ = next(iter(datasets.TrumpApproval()))
    centre = model.predict_one(x)
    low, high = model.predict_one(x, with_interval=True)
    # the half-width is the calibrated quantile of the absolute residuals
    assert high - centre == pytest.approx(wrapper.calibrator.quantile())
    assert centre - low == pytest.approx(high - centre)


def test_gaussian_shares_the_interval():
    wrapper = IntervalRegressor(linear_model.LinearRegression(), coverage=0.9)
    run(wrapper, [({"x": float(i % 7)}, float(i % 7) + math.sin(i)) for i in range(300)])
    x = {"x": 2.0}
    low, high = wrapper.predict_one(x, with_interval=True)
    dist = wrapper.predict_one(x, with_dist=True)
    assert isinstance(dist, proba.Gaussian)
    assert dist.mu == pytest.approx(wrapper.predict_one(x))
    # the Gaussian's central 90% interval is the calibrated one
    assert dist.mu + 1.6448536269514722 * dist.sigma == pytest.approx(high)


def test_a_refused_target_changes_nothing():
    wrapper = IntervalRegressor(linear_model.LinearRegression())
    wrapper.learn_one({"x": 1.0}, 1.0)
    with pytest.raises(ValueError, match="target"):
        wrapper.learn_one({"x": 1.0}, float("inf"))
    assert wrapper.calibrator.n_seen == 1


def test_river_check_estimator():
    checks.check_estimator(IntervalRegressor(linear_model.LinearRegression()))


def test_spread_false_calibrates_absolute_residuals():
    wrapper = IntervalRegressor(linear_model.BayesianLinearRegression(), spread=False)
    run(wrapper, [({"x": float(i % 7)}, float(i % 7) + math.sin(i)) for i in range(100)])
    assert wrapper._with_dist is False
    low, high = wrapper.predict_one({"x": 2.0}, with_interval=True)
    assert (high - low) / 2 == pytest.approx(wrapper.calibrator.quantile())


@pytest.mark.parametrize("name", ["PROSNKONS", "CONKONS"])
def test_wrapper_uses_the_spread_of_pros_n_kons_and_con_kons(name):
    from okoco import learners

    wrapper = IntervalRegressor(getattr(learners, name)(seed=0), coverage=0.9)
    model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | wrapper)
    run(model, datasets.TrumpApproval())
    assert wrapper._with_dist is True
    n = wrapper.calibrator.n_seen
    assert abs(wrapper.coverage_seen - 0.9) <= (0.9 + 0.02) / (0.02 * n)
    assert 0 < wrapper.mean_width < math.inf


# -- issue 40: the wrapper keeps the learners' rule; intervals stay finite on duplicates --------


def reference_finite_aci(scores, coverage, gamma, window):
    """The finite variant written from the module's formula: the paper's quantile where it is
    finite, else (after the warm-up) the window's largest score doubled per gamma of shortfall."""
    a = 1.0 - coverage
    gap, quantiles, kept = a, [], []
    for score in scores:
        ordered = np.sort(np.array(kept))
        n = ordered.size
        rank = math.ceil((1 - gap) * (n + 1))
        if gap >= 1:
            q = 0.0
        elif n and gap > 0 and rank <= n:
            q = ordered[rank - 1]
        elif n == 0 or math.ceil(coverage * (n + 1)) > n or ordered[-1] == 0:
            q = math.inf
        else:
            q = ordered[-1] * 2.0 ** (1 + math.floor((1 / (n + 1) - gap) / gamma))
        quantiles.append(q)
        gap += gamma * (a - (score > q))
        kept = (kept + [score])[-window:]
    return quantiles


def test_the_finite_recursion_matches_its_reference_and_its_bound():
    # scores that keep growing (every new one the window's largest, as on a duplicated
    # point) and jump: the paper's quantile is infinite most of the time, the finite one
    # never after the warm-up, and the miss rate meets the bound with log2 of the range
    rng = np.random.default_rng(1)
    T, coverage, gamma, window = 3000, 0.9, 0.02, 200
    scores = np.exp(np.linspace(0.0, 3.0, T)) * np.where(np.arange(T) % 700 < 350, 1.0, 30.0)
    scores *= 1.0 + 0.01 * rng.random(T)
    calibrator = AdaptiveConformal(coverage, gamma, window, finite=True)
    paper = AdaptiveConformal(coverage, gamma, window)
    got, misses, infinite_paper = [], 0, 0
    a = 1 - coverage
    spread = math.log2(scores.max() / scores.min())
    for t, score in enumerate(scores, start=1):
        q = calibrator.quantile()
        got.append(q)
        infinite_paper += math.isinf(paper.quantile())
        paper.update(score, score > paper.quantile())
        calibrator.update(score, score > q)
        misses += score > q
        bound = (max(a, 1 - a) + gamma * (1 + spread)) / (gamma * t)
        assert abs(misses / t - a) <= bound + 1e-12
    assert got == reference_finite_aci(scores, coverage, gamma, window)
    assert all(math.isfinite(q) for q in got[9:])  # finite once 9 scores allow the 90% rank
    assert infinite_paper > T // 2  # what the paper's recursion does on this stream


def _duplicated_stream(n, seed=0):
    """Every other sample the same point and target (a duplicate), else a noisy sine: the
    stream of ``python -m benchmarks.bench_intervals --duplicates``."""
    return importlib.import_module("benchmarks.bench_intervals").duplicated(n, seed)


@pytest.mark.parametrize("factory", ["KONS", "KRLS"])
@pytest.mark.parametrize("duplicate_only", [True, False])
def test_intervals_stay_finite_and_calibrated_on_duplicated_points(factory, duplicate_only):
    # the exact duplicate made 269 of 1,400 KONS intervals infinite after step 100 before the
    # finite recursion (the learner's spread shrinks while its residual does not)
    from okoco import learners

    wrapper = IntervalRegressor(getattr(learners, factory)(), coverage=0.9)
    n, infinite = 2000, 0
    stream = ([({"a": 0.5}, 1.0)] * n) if duplicate_only else _duplicated_stream(n)
    for t, (x, y) in enumerate(stream):
        low, high = wrapper.predict_one(x, with_interval=True)
        infinite += t >= 100 and not math.isfinite(high - low)
        wrapper.learn_one(x, y)
    assert infinite == 0
    # within 3 binomial standard deviations of the requested coverage (above it only where
    # the learner predicts the duplicate exactly: KRLS's zero residuals are never missed)
    tolerance = 3 * math.sqrt(0.9 * 0.1 / n)
    assert -tolerance <= wrapper.coverage_seen - 0.9 <= (
        0.1 if duplicate_only and factory == "KRLS" else tolerance)
    assert 0 < wrapper.mean_width < math.inf


@pytest.mark.parametrize("y", ["1.5", True, b"1", None, 10**400, float("inf"), 1e200, [1.0]])
def test_targets_are_checked_as_the_learners_check_them(y):
    from okoco._checks import check_target
    from okoco.learners import KRLS

    with pytest.raises((TypeError, ValueError)) as expected:
        check_target(y)
    wrapper = IntervalRegressor(KRLS())
    wrapper.learn_one({"a": 0.1}, 0.2)
    state = pickle.dumps(wrapper)
    with pytest.raises(type(expected.value)) as got:
        wrapper.learn_one({"a": 0.1}, y)
    assert str(got.value) == str(expected.value)
    assert pickle.dumps(wrapper) == state


def test_a_refused_first_call_does_not_switch_to_absolute_residuals():
    from okoco.learners import KRLS

    refused, fresh = IntervalRegressor(KRLS()), IntervalRegressor(KRLS())
    with pytest.raises(TypeError, match="'a'"):
        refused.learn_one({"a": "text"}, 0.5)
    with pytest.raises(TypeError, match="'a'"):
        refused.predict_one({"a": "text"}, with_interval=True)
    assert refused._with_dist is None
    for wrapper in (refused, fresh):
        run(wrapper, ((x, y) for x, y in _duplicated_stream(300, seed=2)))
    assert refused._with_dist is True
    x = {"a": 0.3, "b": -0.2}
    assert refused.predict_one(x, with_interval=True) == fresh.predict_one(x, with_interval=True)


def test_a_regressor_that_refuses_the_step_leaves_the_calibration_unchanged():
    from okoco.learners import KRLS

    wrapper = IntervalRegressor(KRLS())
    run(wrapper, [({"a": 0.1 * i}, 0.1) for i in range(20)])
    state = pickle.dumps(wrapper)
    with pytest.raises(ValueError, match="'b'"):
        wrapper.learn_one({"a": 0.1, "b": float("nan")}, 0.3)
    assert pickle.dumps(wrapper) == state


def test_the_wrapper_is_locked_and_pickles_without_its_lock():
    wrapper = IntervalRegressor(linear_model.LinearRegression())
    assert hasattr(wrapper._lock, "acquire")
    copy = pickle.loads(pickle.dumps(wrapper))
    assert copy._lock is not wrapper._lock and "_lock" not in wrapper.__getstate__()


@pytest.mark.parametrize(("score", "missed", "error"), [
    ("1.5", False, TypeError), (True, False, TypeError), (b"1", False, TypeError),
    (None, False, TypeError), (1.0, "no", TypeError), (1.0, 1, TypeError),
    (-0.5, False, ValueError), (float("nan"), False, ValueError)])
def test_the_calibrator_refuses_what_is_no_score_and_changes_nothing(score, missed, error):
    # before: float("1.5") and float(True) were taken as scores
    calibrator = AdaptiveConformal()
    calibrator.update(0.5, False)
    state = pickle.dumps(calibrator)
    with pytest.raises(error):
        calibrator.update(score, missed)
    assert pickle.dumps(calibrator) == state
    calibrator.update(math.inf, np.bool_(True))  # no finite interval covered it: a score
    assert calibrator.n_missed == 1
