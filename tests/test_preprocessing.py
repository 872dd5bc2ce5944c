"""okoco.preprocessing against river's StandardScaler and TargetStandardScaler, step by step."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from river import compose, linear_model, preprocessing

from okoco import preprocessing as okp
from okoco.learners import KONS, KRLS, Auto


def _stream(seed: int, n: int = 300):
    """Dicts with features that appear late, vanish, stay constant, and wild scales."""
    rng = np.random.default_rng(seed)
    for t in range(n):
        x = {"a": float(rng.normal(5.0, 3.0)), "const": 2.5}
        if t >= 40:
            x["late"] = float(rng.normal(-1e3, 1e2))
        if rng.random() < 0.5:
            x["sometimes"] = float(rng.uniform(-1e-6, 1e-6))
        if t % 7 == 0:
            x["int"] = int(rng.integers(0, 5))
        yield x, float(rng.normal(100.0, 20.0) + 3 * x["a"])


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=1e-12, abs=1e-12), k


def _learned(scaler, x: dict) -> dict:
    """river's scaling of ``x`` once ``scaler`` (river's) has learned it."""
    scaler.learn_one(x)
    return scaler.transform_one(x)


@pytest.mark.parametrize("with_std", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_standard_scaler_matches_river(seed, with_std):
    ours, theirs = okp.StandardScaler(with_std=with_std), preprocessing.StandardScaler(
        with_std=with_std)
    for t, (x, _) in enumerate(_stream(seed)):
        predicted = ours.transform_one(x) if t % 3 == 0 else None  # predict-then-learn too
        as_learned = _learned(theirs, x)
        if predicted is not None:  # the row counted in: as river scales it once learned
            _close(predicted, as_learned)
        ours.learn_one(x)
        _close(ours.transform_one(x), as_learned)
        assert ours.counts == theirs.counts
    unseen = {"const": 2.5, "new": 1.0}
    _close(ours.transform_one(unseen), _learned(copy.deepcopy(theirs), unseen))
    assert ours.transform_one(unseen)["const"] == 0.0


@pytest.mark.parametrize("with_std", [True, False])
def test_standard_scaler_is_exactly_rivers_arithmetic(with_std):
    ours = okp.StandardScaler(with_std=with_std)
    theirs = preprocessing.StandardScaler(with_std=with_std)
    for x, _ in _stream(5, 100):
        predicted = ours.transform_one(x)
        as_learned = _learned(theirs, x)
        assert predicted == as_learned  # bit for bit
        ours.learn_one(x)
        assert ours.transform_one(x) == as_learned
    # the statistics too, and the features each has, in the same order
    for name in ("counts", "means", "vars"):
        assert list(getattr(ours, name).items()) == list(getattr(theirs, name).items()), name


def test_standard_scaler_against_explicit_formula():
    rng = np.random.default_rng(3)
    values = rng.normal(2.0, 5.0, size=50)
    scaler = okp.StandardScaler()
    for i, v in enumerate(values):
        seen = values[: i + 1]  # the row's statistics include it, before and after learning it
        expected = (v - seen.mean()) / seen.std() if i else 0.0
        assert scaler.transform_one({"v": float(v)})["v"] == pytest.approx(expected, abs=1e-12)
        scaler.learn_one({"v": float(v)})
        assert scaler.transform_one({"v": float(v)})["v"] == pytest.approx(expected, abs=1e-12)
    # a row not learned is counted in once: the statistics of the learned rows and it
    row = 40.0
    seen = np.append(values, row)
    assert scaler.transform_one({"v": row})["v"] == pytest.approx(
        (row - seen.mean()) / seen.std(), abs=1e-12)


def test_a_transform_changes_nothing():
    scaler = okp.StandardScaler()
    for x, _ in _stream(6, 60):
        scaler.learn_one(x)
    state = copy.deepcopy((scaler.counts, scaler.means, scaler.vars))
    for x, _ in _stream(8, 30):
        scaler.transform_one({**x, "never": 1.0})
    assert (scaler.counts, scaler.means, scaler.vars) == state
    assert "never" not in scaler.means and "never" not in scaler.vars


def test_only_the_row_learned_last_is_scaled_by_the_statistics_as_they_are():
    ours, theirs = okp.StandardScaler(), preprocessing.StandardScaler()
    for x in ({"a": 1.0, "b": 2.0}, {"a": 4.0, "b": -1.0}, {"a": 0.5, "b": 3.0}):
        ours.learn_one(x)
        theirs.learn_one(x)
    row = {"a": 2.0, "b": 7.0}
    ours.learn_one(row)
    theirs.learn_one(row)
    assert ours.transform_one(row) == theirs.transform_one(row)
    assert ours.transform_one(dict(row)) == theirs.transform_one(row)  # equal rows are the row
    for other in ({"a": 2.0, "b": 7.5}, {"a": 2.0}, {"a": 2.0, "b": 7.0, "c": 0.0}):
        assert ours.transform_one(other) == _learned(copy.deepcopy(theirs), other)
    row["b"] = 8.0  # the caller's dict changed after learning: another row
    assert ours.transform_one(row) == _learned(copy.deepcopy(theirs), row)


def test_a_pipeline_learns_the_rows_it_predicted():
    """Behind okoco's scaler a learner predicts each row as it then learns it, learns exactly
    what it learns behind river's scaler, and computes its analysis once a step (twice behind
    river's, whose prediction is of the row scaled without it)."""
    def counted(pipeline):
        learner = pipeline.steps[list(pipeline.steps)[-1]]
        calls, compute = [], learner._analyse_now
        learner._analyse_now = lambda v: calls.append(1) or compute(v)
        return learner, calls

    ours, river_scaled = okp.StandardScaler() | Auto(), preprocessing.StandardScaler() | Auto()
    scaler, by_hand = preprocessing.StandardScaler(), Auto()
    (ours_auto, ours_calls), (river_auto, river_calls) = counted(ours), counted(river_scaled)
    steps = 0
    for x, y in _stream(7, 120):
        x = {k: float(v) for k, v in x.items()}
        scaled = _learned(scaler, x)
        assert ours.predict_one(x) == by_hand.predict_one(scaled)
        river_scaled.predict_one(x)
        ours.learn_one(x, y)
        by_hand.learn_one(scaled, y)
        river_scaled.learn_one(x, y)
        steps += 1
    # one analysis a step (the first prediction, before any expert exists, needs none)
    assert len(ours_calls) == steps
    assert len(river_calls) == 2 * steps - 1
    assert list(ours_auto.cumulative_losses) == list(river_auto.cumulative_losses)
    probe = {k: 0.5 for k in scaler.means}
    assert ours_auto.predict_one(probe) == river_auto.predict_one(probe)


def test_target_standard_scaler_matches_river_in_a_pipeline():
    ours = okp.TargetStandardScaler(okp.StandardScaler() | KONS(C=3.0))
    theirs = preprocessing.TargetStandardScaler(okp.StandardScaler() | KONS(C=3.0))
    # before anything is learned (zero variance) both give the regressor's raw prediction
    assert ours.predict_one({"a": 1.0}) == theirs.predict_one({"a": 1.0})
    for x, y in _stream(4, 150):
        assert ours.predict_one(x) == pytest.approx(theirs.predict_one(x), rel=1e-12, abs=1e-12)
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
    assert ours.var.get() == theirs.var.get() and ours.var.mean.get() == theirs.var.mean.get()


def test_target_standard_scaler_constant_target_and_river_regressor():
    ours = okp.TargetStandardScaler(linear_model.LinearRegression())
    theirs = preprocessing.TargetStandardScaler(linear_model.LinearRegression())
    for t in range(30):
        x, y = {"a": float(t % 5)}, 7.0 if t < 10 else float(t)
        assert ours.predict_one(x) == theirs.predict_one(x)
        ours.learn_one(x, y)
        theirs.learn_one(x, y)


def test_target_scaler_uses_sample_variance():
    model = okp.TargetStandardScaler(KONS())
    for y in [1.0, 2.0, 6.0]:
        model.learn_one({"x": 0.0}, y)
    assert model.var.get() == pytest.approx(np.var([1.0, 2.0, 6.0], ddof=1))
    assert model._scale(6.0) == pytest.approx((6.0 - 3.0) / np.std([1.0, 2.0, 6.0], ddof=1))


def test_river_protocols():
    from river import base

    assert isinstance(okp.StandardScaler(), base.Transformer)
    model = okp.StandardScaler() | KONS()
    assert isinstance(model, compose.Pipeline) and list(model.steps) == ["StandardScaler", "KONS"]
    wrapped = okp.TargetStandardScaler(model)
    assert isinstance(wrapped, base.Regressor) and isinstance(wrapped, base.Wrapper)
    assert wrapped.clone().regressor is not model


def test_target_scaler_maps_a_predictive_distribution_to_the_targets_units():
    model = okp.TargetStandardScaler(KRLS())
    for i in range(60):
        model.learn_one({"x": i / 10}, 40.0 + 3.0 * math.sin(i / 5))
    x = {"x": 2.35}
    inner = model.regressor.predict_one(x, with_dist=True)
    dist = model.predict_one(x, with_dist=True)
    std, mean = model.var.get() ** 0.5, model.var.mean.get()
    assert dist.mu == pytest.approx(model.predict_one(x)) == pytest.approx(mean + std * inner.mu)
    assert dist.sigma == pytest.approx(std * inner.sigma)


def test_target_scaler_refuses_a_variance_that_overflows_in_the_targets_units():
    """The regressor's variance is finite, its value times the targets' variance is not (the
    targets' running variance set to the largest float64 holds): with_dist raises ValueError
    as the learners' with_dist does, instead of an OverflowError; a plain prediction works."""
    model = okp.TargetStandardScaler(KRLS())
    rng = np.random.default_rng(0)
    for _ in range(30):
        x = float(rng.normal())
        model.learn_one({"x": x}, x + float(rng.normal()))
    far = {"x": 40.0}
    assert model.regressor.predict_one(far, with_dist=True).sigma > 1.0
    model.var = model.var._from_state(n=2, m=0.0, var=1.7e308, ddof=1)
    assert math.isfinite(model.predict_one(far))
    with pytest.raises(ValueError, match="predictive variance"):
        model.predict_one(far, with_dist=True)


@pytest.mark.parametrize("x, y", [({"x": float("nan")}, 1.0), ({"x": 1.0}, float("nan")),
                                  ({"x": "text"}, 1.0)])
def test_target_scaler_refused_sample_changes_nothing(x, y):
    """The regressor refuses the sample after the target statistics were updated: they are
    restored (before, the count and mean kept the refused target, NaN for good after a NaN)."""
    model = okp.TargetStandardScaler(KONS())
    for i in range(3):
        model.learn_one({"x": float(i)}, 2.0 * i)
    before = (model.var.n, model.var.mean.get(), model.var.get())
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(x, y)
    assert (model.var.n, model.var.mean.get(), model.var.get()) == before
    assert model.regressor.n_seen == 3
