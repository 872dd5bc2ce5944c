"""The bad-input catalogue (docs/guide/reliability.md) for every learner.

Each bad row gets a clear error naming the feature (or the target / label), and afterwards the
learner's state is byte-for-byte what it was (pickled) and it predicts exactly as before.
``tests/test_learners_base.py`` covers FunctionalGD on the basic cases; this file covers every
learner, the documented handlings (bools, numpy and fraction numbers, empty rows) and the cases
it does not (a feature that changes type, overflow, targets out of the loss's domain).
"""

from __future__ import annotations

import decimal
import fractions
import pickle

import numpy as np
import pandas as pd
import pytest

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

REGRESSORS = {
    "kons": lambda: KONS(C=2.0),
    "sketched": lambda: SketchedKONS(C=2.0, beta=2.0, seed=0),
    "fgd": lambda: FunctionalGD(C=2.0, eta=0.3),
    "krls": lambda: KRLS(nu=1e-3, C=2.0),
}
CLASSIFIER = {"binary": lambda: BinaryClassifier(KONS(loss=losses.Logistic()))}
ALL = {**REGRESSORS, **CLASSIFIER}
PROBES = [{"a": 0.2, "b": -0.4}, {"a": 1.5}, {"b": 0.3, "new": 2.0}]


def trained(name, n=25):
    model = ALL[name]()
    rng = np.random.default_rng(0)
    for _ in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        y = float(np.tanh(x["a"]))
        model.learn_one(x, ("yes" if y > 0 else "no") if name == "binary" else y)
    return model


def snapshot(model):
    return pickle.dumps(model), [model.predict_one(x) for x in PROBES]


def assert_unchanged(model, snap):
    state, preds = snap
    assert pickle.dumps(model) == state
    assert [model.predict_one(x) for x in PROBES] == preds


def target_for(name):
    return "yes" if name == "binary" else 0.5


BAD_VALUES = [
    (float("nan"), ValueError, "not finite|nan"),
    (np.float32("nan"), ValueError, "nan"),
    (float("inf"), ValueError, "inf"),
    (-float("inf"), ValueError, "inf"),
    (1e300, ValueError, "too large"),
    (-1e151, ValueError, "too large"),
    (None, TypeError, "non-numeric"),
    ("3.1", TypeError, "non-numeric"),
    (b"1", TypeError, "non-numeric"),
    ([1.0], TypeError, "non-numeric"),
    ({}, TypeError, "non-numeric"),
    (1j, TypeError, "non-numeric"),
    (decimal.Decimal("1.5"), TypeError, "non-numeric"),
]


@pytest.mark.parametrize(("value", "error", "message"), BAD_VALUES, ids=repr)
@pytest.mark.parametrize("name", sorted(ALL))
def test_bad_feature_values(name, value, error, message):
    model = trained(name)
    snap = snapshot(model)
    for x in ({"a": value}, {"a": 0.1, "weird": value}):
        bad = next(k for k, v in x.items() if v is value)
        with pytest.raises(error, match=f"(?s)'{bad}'.*({message})"):
            model.learn_one(x, target_for(name))
        with pytest.raises(error, match=f"'{bad}'"):
            model.predict_one(x)
        assert_unchanged(model, snap)


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_feature_that_changes_type_between_steps(name):
    model = trained(name)
    model.learn_one({"colour": 1.0, "a": 0.3}, target_for(name))
    snap = snapshot(model)
    with pytest.raises(TypeError, match="'colour'.*'red'"):
        model.learn_one({"colour": "red", "a": 0.3}, target_for(name))
    assert_unchanged(model, snap)
    model.learn_one({"colour": 2.0, "a": 0.3}, target_for(name))  # and it carries on


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("x", [[1.0, 2.0], None, "a=1", np.array([1.0]), (("a", 1.0),)],
                         ids=["list", "None", "str", "array", "pairs"])
def test_rows_that_are_not_dicts(name, x):
    model = trained(name)
    snap = snapshot(model)
    with pytest.raises(TypeError, match="dict"):
        model.learn_one(x, target_for(name))
    with pytest.raises(TypeError, match="dict"):
        model.predict_one(x)
    assert_unchanged(model, snap)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
@pytest.mark.parametrize(("y", "error", "message"), [
    (float("nan"), ValueError, "finite"),
    (float("inf"), ValueError, "finite"),
    (-float("inf"), ValueError, "finite"),
    (1e300, ValueError, "too large"),
    (None, TypeError, "real number"),
    ("1.0", TypeError, "real number"),
    (True, TypeError, "real number"),
    (np.bool_(False), TypeError, "real number"),
    (1j, TypeError, "real number"),
], ids=repr)
def test_bad_targets(name, y, error, message):
    model = trained(name)
    snap = snapshot(model)
    with pytest.raises(error, match=f"target.*{message}|{message}.*target"):
        model.learn_one({"a": 0.1}, y)
    assert_unchanged(model, snap)


@pytest.mark.parametrize("learner", [KONS, SketchedKONS, FunctionalGD])
@pytest.mark.parametrize("loss", [losses.Logistic(), losses.SquaredHinge()], ids=repr)
@pytest.mark.parametrize("y", [0.5, 0.0, 2.0, -1.5])
def test_targets_outside_the_loss_domain(learner, loss, y):
    model = learner(loss=loss)
    for i in range(5):
        model.learn_one({"a": i / 5}, 1.0 if i % 2 else -1.0)
    snap = snapshot(model)
    with pytest.raises(ValueError, match=r"\{-1, \+1\}.*BinaryClassifier"):
        model.learn_one({"a": 0.1}, y)
    assert_unchanged(model, snap)


def test_a_third_label_and_odd_labels():
    model = trained("binary")
    snap = snapshot(model)
    with pytest.raises(ValueError, match="'maybe' is a third class"):
        model.learn_one({"a": 0.1}, "maybe")
    assert_unchanged(model, snap)
    with pytest.raises(ValueError, match="third class"):
        model.learn_one({"a": 0.1}, None)
    # NaN never equals itself: a NaN label can never be matched again, so it is refused
    # as a new class once two labels are known
    with pytest.raises(ValueError, match="third class"):
        model.learn_one({"a": 0.1}, float("nan"))
    assert_unchanged(model, snap)
    # a bad feature in a classifier's row leaves the label list alone too
    fresh = BinaryClassifier(KONS(loss=losses.Logistic()))
    with pytest.raises(ValueError, match="'a'"):
        fresh.learn_one({"a": float("nan")}, "first")
    assert fresh._labels == [] and fresh.learner.n_seen == 0


@pytest.mark.parametrize("name", sorted(ALL))
def test_documented_conversions(name):
    """Bools are 0/1, numpy and Fraction numbers are their float value, {} is the zero row."""
    rows = [
        ({"a": True, "b": np.float32(0.5)}, {"a": 1.0, "b": 0.5}),
        ({"a": np.int64(-2), "b": fractions.Fraction(1, 4)}, {"a": -2.0, "b": 0.25}),
        ({}, {"a": 0.0, "b": 0.0}),
        ({"a": False, "b": np.bool_(True)}, {"a": 0.0, "b": 1.0}),
    ]
    odd, plain = trained(name), trained(name)
    for (x_odd, x_plain), y in zip(rows, [0.5, -0.5, 0.25, -0.25]):
        y = ("yes" if y > 0 else "no") if name == "binary" else y
        assert odd.predict_one(x_odd) == plain.predict_one(x_plain)
        odd.learn_one(x_odd, y)
        plain.learn_one(x_plain, y)
    assert [odd.predict_one(x) for x in PROBES] == [plain.predict_one(x) for x in PROBES]


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_feature_names_of_any_hashable_type(name):
    model = ALL[name]()
    model.learn_one({0: 0.5, ("pos", 1): -0.2, "s": 1.0}, 0.3)
    assert np.isfinite(model.predict_one({("pos", 1): -0.2, 0: 0.5}))


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_bad_batches_are_rejected_whole(name):
    model = trained(name)
    snap = snapshot(model)
    X = np.array([[0.1, 0.2], [0.3, 0.4], [np.inf, 0.0]])
    with pytest.raises(ValueError, match="row 2"):
        model.learn_many(X, [0.0, 0.1, 0.2])
    with pytest.raises(ValueError, match="row 2"):
        model.predict_many(X)
    with pytest.raises(TypeError, match="row 0"):
        model.learn_many(np.array([["x", 1.0]], dtype=object), [0.0])
    with pytest.raises(ValueError, match="target"):
        model.learn_many(X[:2], [0.0, float("nan")])
    assert_unchanged(model, snap)


@pytest.mark.parametrize("name", ["kons", "sketched", "fgd", "krls"])
def test_kernel_overflow_is_an_error_not_a_nan(name):
    """Features within the 1e150 limit can still overflow a polynomial kernel."""
    make = {"kons": KONS, "sketched": lambda **k: SketchedKONS(seed=0, **k),
            "fgd": FunctionalGD, "krls": KRLS}[name]
    model = make(kernel=kernels.Polynomial(degree=3))
    for i in range(10):
        model.learn_one({"a": i / 10}, 0.1 * i)
    snap = snapshot(model)
    huge = {"a": 1e120}
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(ValueError, match="not finite|non-finite|overflow"):
            model.learn_one(huge, 0.5)
        with pytest.raises(ValueError, match="overflow"):
            model.predict_one(huge)
        with pytest.raises(ValueError, match="row 1.*overflow"):
            model.predict_many(pd.DataFrame({"a": [0.5, 1e120]}))
    assert_unchanged(model, snap)


@pytest.mark.parametrize("learner", [KONS, SketchedKONS])
def test_a_target_too_large_for_a_second_order_step(learner):
    # eta="exp-concave": d_t = gdot sqrt(eta) grows with the target (the hessian step's
    # d_t = sqrt(loss'') does not, so it needs no such refusal)
    model = learner(alpha=1e-3, eta="exp-concave")
    for i in range(10):
        model.learn_one({"a": i / 10}, 0.5)
    snap = snapshot(model)
    with pytest.raises(ValueError, match="target 1e\\+100 .*too large for a second-order step"):
        model.learn_one({"a": 0.3}, 1e100)
    assert_unchanged(model, snap)
