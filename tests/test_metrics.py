"""okoco.metrics against river's metrics of the same names, after every update."""

from __future__ import annotations

import numpy as np
import pytest
from river import metrics as rm

from okoco import metrics as om
from okoco.experiment import METRICS

NATIVE = ["MAE", "MSE", "RMSE", "R2", "Accuracy", "F1", "LogLoss"]


def _pairs(name: str, seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    if name in ("MAE", "MSE", "RMSE", "R2"):
        y = rng.normal(3.0, 10.0, n)
        if seed == 2:
            y[:50] = 4.0  # a constant start: R2's zero-variance branch
        return list(zip(y.tolist(), (y + rng.normal(0, 5.0, n)).tolist()))
    truth = rng.random(n) < 0.3
    if name == "LogLoss":
        p = rng.random(n)
        p[:5] = [0.0, 1.0, 1.0, 0.0, 0.5]  # clipped ends
        return [(bool(t), float(q) if i % 2 else {True: float(q), False: 1 - float(q)})
                for i, (t, q) in enumerate(zip(truth, p))]
    guess = np.where(rng.random(n) < 0.7, truth, ~truth)
    if seed == 2:
        guess[:] = False  # no positive prediction: precision undefined
    return [(bool(t), bool(g)) for t, g in zip(truth, guess)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", NATIVE)
def test_same_values_as_river_after_every_update(name, seed):
    ours, theirs = getattr(om, name)(), getattr(rm, name)()
    assert ours.get() == theirs.get() and repr(ours) == repr(theirs)
    for y_true, y_pred in _pairs(name, seed):
        ours.update(y_true, y_pred)
        theirs.update(y_true, y_pred)
        assert ours.get() == pytest.approx(theirs.get(), rel=1e-12, abs=1e-12)
        assert repr(ours) == repr(theirs)
    assert ours.bigger_is_better == theirs.bigger_is_better
    assert getattr(ours, "requires_labels", None) == getattr(theirs, "requires_labels", None)


@pytest.mark.parametrize("name", NATIVE)
def test_weights_and_revert_as_river(name):
    rng = np.random.default_rng(7)
    ours, theirs = getattr(om, name)(), getattr(rm, name)()
    pairs = _pairs(name, 1, 100)
    weights = rng.uniform(0.1, 3.0, len(pairs)).tolist()
    for (y_true, y_pred), w in zip(pairs, weights):
        ours.update(y_true, y_pred, w)
        theirs.update(y_true, y_pred, w)
        assert ours.get() == pytest.approx(theirs.get(), rel=1e-12, abs=1e-12)
    for (y_true, y_pred), w in list(zip(pairs, weights))[:-30:-1]:
        ours.revert(y_true, y_pred, w)
        theirs.revert(y_true, y_pred, w)
        assert ours.get() == pytest.approx(theirs.get(), rel=1e-9, abs=1e-9)


def test_explicit_values():
    y, p = np.array([3.0, -0.5, 2.0, 7.0]), np.array([2.5, 0.0, 2.0, 8.0])
    ms = {name: getattr(om, name)() for name in ("MAE", "MSE", "RMSE", "R2")}
    for m in ms.values():
        for a, b in zip(y, p):
            m.update(float(a), float(b))
    assert ms["MAE"].get() == pytest.approx(np.abs(y - p).mean())
    assert ms["MSE"].get() == pytest.approx(((y - p) ** 2).mean())
    assert ms["RMSE"].get() == pytest.approx(np.sqrt(((y - p) ** 2).mean()))
    assert ms["R2"].get() == pytest.approx(1 - ((y - p) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    f1 = om.F1()
    for t, g in [(1, 1), (1, 0), (0, 1), (1, 1), (0, 0)]:
        f1.update(bool(t), bool(g))
    precision, recall = 2 / 3, 2 / 3
    assert f1.get() == pytest.approx(2 * precision * recall / (precision + recall))


def test_cli_names_cover_native_metrics_and_rocauc_stays_rivers():
    assert sorted(NATIVE + ["ROCAUC"]) == sorted(METRICS.values())
    from okoco.experiment import make_metrics

    assert type(make_metrics(["rocauc"], "binary")[0]) is rm.ROCAUC
    assert all(type(m).__module__ == "okoco.metrics"
               for m in make_metrics([k for k in METRICS if k != "rocauc" and k not in
                                      ("mae", "mse", "rmse", "r2")], "binary"))


def test_works_with_and_repr_style():
    from okoco.learners import KONS, BinaryClassifier

    assert om.MAE().works_with(KONS()) and not om.MAE().works_with(BinaryClassifier(KONS()))
    assert om.Accuracy().works_with(BinaryClassifier(KONS()))
    assert not om.LogLoss().works_with(KONS())
    assert repr(om.MAE()) == "MAE: 0." and repr(om.Accuracy()) == "Accuracy: 0.00%"
    a, b = om.MAE(), om.MAE()
    a.update(1.0, 1.5)
    b.update(1.0, 3.0)
    assert a.is_better_than(b) and not b.is_better_than(a)
    assert om.MAE().clone().get() == 0.0
