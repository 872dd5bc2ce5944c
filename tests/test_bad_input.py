"""The bad-input catalogue (docs/guide/reliability.md) for every learner, dictionary, the regret
tracker and ``okoco.load``.

Each bad row gets a clear error naming the feature (or the target / label), and afterwards the
learner's state is byte-for-byte what it was (pickled) and it predicts exactly as before.
``tests/test_learners_base.py`` covers FunctionalGD on the basic cases; this file covers every
learner, the documented handlings (bools, numpy and fraction numbers, empty rows) and the cases
it does not (a feature that changes type, overflow, targets out of the loss's domain).
"""

from __future__ import annotations

import decimal
import fractions
import json
import math
import os
import pickle

import numpy as np
import pandas as pd
import pytest

import okoco
from okoco import BinaryClassifier, kernels, losses
from okoco.dictionary import ALD, KORS, SQUEAK, INKEstimate
from okoco.learners import KONS, KRLS, Auto, FunctionalGD, SketchedKONS
from okoco.regret import KernelRidge, RegretTracker

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
    (None, TypeError, "is None, a missing value; leave the feature out"),
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
    with pytest.raises(TypeError, match="label cannot be None"):
        model.learn_one({"a": 0.1}, None)
    # NaN never equals itself: a NaN label can never be matched again, so it is refused
    # (okoco._checks.check_label: the classifiers' one rule)
    with pytest.raises(ValueError, match="not equal to itself"):
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


# -- the catalogue: every kind of bad input, against every object that reads input ---------------
#
# Each kind raises its documented error, and afterwards the object's pickled state (every array,
# bit for bit) and its answers on fixed probes are exactly what they were. The kinds are grouped
# by what they corrupt; each group runs against every learner, dictionary, the tracker or load.

INF = float("inf")
FEATURE_VALUES = [  # a bad value of one feature in a dict row
    ("nan", float("nan"), ValueError, "not finite"),
    ("float32-nan", np.float32("nan"), ValueError, "not finite"),
    ("inf", INF, ValueError, "not finite"),
    ("minus-inf", -INF, ValueError, "not finite"),
    ("float64-inf", np.float64(INF), ValueError, "not finite"),
    ("1e300", 1e300, ValueError, "too large"),
    ("minus-1e151", -1e151, ValueError, "too large"),
    ("int-10**400", 10**400, ValueError, "too large"),
    ("minus-int-10**400", -(10**400), ValueError, "too large"),
    ("fraction-10**400", fractions.Fraction(10**400), ValueError, "too large"),
    ("None", None, TypeError, "is None, a missing value"),
    ("str", "3.1", TypeError, "non-numeric"),
    ("numpy-str", np.str_("1"), TypeError, "non-numeric"),
    ("bytes", b"1", TypeError, "non-numeric"),
    ("list", [1.0], TypeError, "non-numeric"),
    ("tuple", (1.0,), TypeError, "non-numeric"),
    ("dict", {}, TypeError, "non-numeric"),
    ("set", {1.0}, TypeError, "non-numeric"),
    ("complex", 1j, TypeError, "non-numeric"),
    ("numpy-complex", np.complex128(1.0), TypeError, "non-numeric"),
    ("decimal", decimal.Decimal("1.5"), TypeError, "non-numeric"),
    ("array-1", np.array([1.0]), TypeError, "non-numeric"),
    ("array-0d", np.array(1.0), TypeError, "non-numeric"),
    ("datetime64", np.datetime64("2020-01-01"), TypeError, "non-numeric"),
    ("object", object(), TypeError, "non-numeric"),
]
TARGETS = [  # a bad regression target (also the tracker's y and y_pred)
    ("nan", float("nan"), ValueError, "finite"),
    ("inf", INF, ValueError, "finite"),
    ("minus-inf", -INF, ValueError, "finite"),
    ("1e300", 1e300, ValueError, "too large"),
    ("int-10**400", 10**400, ValueError, "too large"),
    ("minus-int-10**400", -(10**400), ValueError, "too large"),
    ("None", None, TypeError, "real number"),
    ("str", "1.5", TypeError, "real number"),
    ("bool", True, TypeError, "real number"),
    ("numpy-bool", np.bool_(False), TypeError, "real number"),
    ("complex", 1j, TypeError, "real number"),
    ("decimal", decimal.Decimal("0.5"), TypeError, "real number"),
    ("list", [0.5], TypeError, "real number"),
    ("array-1", np.array([0.5]), TypeError, "real number"),
]
NOT_ROWS = [  # what is not a row at all (learners take dicts only)
    ("list", [1.0, 2.0]), ("None", None), ("str", "a=1"), ("bytes", b"a"),
    ("array", np.array([1.0])), ("pairs", (("a", 1.0),)), ("set", {"a"}), ("int", 3),
]
ARRAY_ROWS = [  # bad 1-D array rows, for the objects fed arrays (dictionaries, tracker)
    ("wrong-width", np.zeros(3), ValueError, "3 features, expected 2"),
    ("nan", np.array([0.0, np.nan]), ValueError, "feature 1 is not finite"),
    ("inf", np.array([INF, 0.0]), ValueError, "feature 0 is not finite"),
    ("1e300", np.array([0.0, 1e300]), ValueError, "feature 1 .* too large"),
    ("strings", np.array(["1", "2"]), TypeError, "feature 0 has a non-numeric value"),
    ("complex", np.array([1j, 0j]), TypeError, "feature 0 has a non-numeric value"),
    ("object-None", np.array([0.5, None], dtype=object), TypeError, "feature 1 is None, a missing"),
    ("2-D", np.zeros((1, 2)), ValueError, "1-D"),
    ("a-dict", {"a": 1.0}, TypeError, "fed arrays; got a dict"),
]


def _frame(column):
    return pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": column})


BATCHES = [  # bad batches: (X, y or None for "the right targets"), error, message
    ("nan-row-3", np.array([[0.1, 0.2]] * 3 + [[np.nan, 0.0]]), None, ValueError,
     "row 3: feature 0 is not finite"),
    ("inf-row-2", np.array([[0.1, 0.2], [0.3, 0.4], [0.0, -INF], [0.5, 0.5]]), None, ValueError,
     "row 2: feature 1 is not finite"),
    ("1e300-row-1", np.array([[0.1, 0.2], [1e300, 0.0], [0.0, 0.0], [0.5, 0.5]]), None,
     ValueError, "row 1: feature 0 .* too large"),
    ("object-str-row-1", np.array([[0.1, 0.2], ["x", 1.0], [0.0, 0.0], [0.5, 0.5]],
                                  dtype=object), None, TypeError, "row 1: feature 0 .*'x'"),
    ("object-10**400-row-2", np.array([[0.1, 0.2], [0.1, 0.2], [10**400, 1.0], [0.5, 0.5]],
                                      dtype=object), None, ValueError, "row 2: .*too large"),
    ("numpy-strings", np.array([["0.1", "0.2"]] * 4), None, TypeError, "row 0: .*non-numeric"),
    ("complex-array", np.ones((4, 2), dtype=complex), None, TypeError, "row 0: .*non-numeric"),
    ("frame-object-str-row-2", _frame([0.1, 0.2, "red", 0.4]), None, TypeError,
     "row 2: feature 'b' .*'red'"),
    ("frame-complex", _frame([1j, 2j, 3j, 4j]), None, TypeError, "row 0: feature 'b'"),
    ("frame-inf-row-1", _frame([0.1, INF, 0.3, 0.4]), None, ValueError,
     "row 1: feature 'b' is not finite"),
    ("dicts-nan-row-3", [{"a": 0.1}, {"a": 0.2}, {"b": 0.3}, {"a": np.nan}], None, ValueError,
     "row 3: feature 'a' is not finite"),
    ("dicts-str-row-1", [{"a": 0.1}, {"a": "0.2"}, {"b": 0.3}, {"a": 0.0}], None, TypeError,
     "row 1: feature 'a' .*non-numeric"),
    ("3-D", np.zeros((4, 2, 1)), None, ValueError, "2-D"),
    ("1-D", np.zeros(4), None, ValueError, "2-D"),
]
TARGET_BATCHES = [  # bad targets of a good batch (learners' learn_many)
    ("too-few-targets", [0.1, 0.2, 0.3], ValueError, "4 rows but y has 3"),
    ("nan-target-row-2", [0.1, 0.2, np.nan, 0.3], ValueError, "row 2: the target is nan"),
    ("str-target-row-1", [0.1, "0.2", 0.3, 0.4], TypeError, "row 1: the target must be"),
    ("huge-target-row-3", [0.1, 0.2, 0.3, 10**400], ValueError, "row 3: the target .*too large"),
]
LABELS = [  # bad labels of a BinaryClassifier that has seen 'yes' and 'no'
    ("third-class", "maybe", ValueError, "'maybe' is a third class"),
    ("None", None, TypeError, "label cannot be None"),
    ("nan-label", float("nan"), ValueError, "not equal to itself"),
    ("list", ["yes"], TypeError, "hashable"),
    ("dict", {"y": 1}, TypeError, "hashable"),
    ("array", np.array([1]), TypeError, "hashable"),
]
FIRST_LABELS = [  # bad labels of a BinaryClassifier that has seen one label
    ("nan-after-one-label", float("nan"), ValueError, "not equal to itself"),
    ("set", {"yes"}, TypeError, "hashable"),
]
TRACKER_ONLY = [  # y_pred is checked like a target; mixing row kinds is refused
    ("y_pred-nan", lambda t: t.update({"a": 0.1}, 0.2, float("nan")), ValueError,
     "y_pred is nan"),
    ("y_pred-str", lambda t: t.update({"a": 0.1}, 0.2, "0.1"), TypeError,
     "y_pred must be a real number"),
    ("array-after-dicts", lambda t: t.update(np.zeros(2), 0.2, 0.1), TypeError,
     "fed dicts; got an array"),
]
N_KINDS = (len(FEATURE_VALUES) + len(TARGETS) + len(NOT_ROWS) + len(ARRAY_ROWS) + len(BATCHES)
           + len(TARGET_BATCHES) + len(LABELS) + len(FIRST_LABELS) + len(TRACKER_ONLY))


def test_the_catalogue_has_at_least_60_kinds():
    assert N_KINDS + len(LOAD_CASES) >= 60


# -- the objects and their state --------------------------------------------------------------

DICTIONARIES = {
    "kors": lambda: KORS(kernels.RBF(0.5), beta=2.0, seed=0),
    "ald": lambda: ALD(kernels.RBF(0.5), nu=0.05),
    "squeak": lambda: SQUEAK(kernels.RBF(0.5), qbar=10, seed=0),
    "ink": lambda: INKEstimate(kernels.RBF(0.5), qbar=50.0, seed=0),
}
ROWS = [{"a": float(v), "b": float(w)} for v, w in np.random.default_rng(1).normal(size=(20, 2))]


def fed(name, arrays=False):
    """A dictionary, or the tracker, after 20 rows (dicts, or arrays of the same numbers)."""
    obj = (DICTIONARIES[name]() if name != "tracker" else
           RegretTracker(losses.Squared(), KernelRidge(kernels.RBF(0.5)), checkpoints=[10]))
    for row in ROWS:
        x = np.array([row["a"], row["b"]]) if arrays else row
        obj.update(x, row["a"], 0.0) if name == "tracker" else obj.update(x)
    return obj


def answers(obj):
    """What the object tells about fixed probes (and its own summaries)."""
    if isinstance(obj, RegretTracker):
        return obj.X.tolist(), obj.features, obj.regret.tolist(), obj.n_seen
    if hasattr(obj, "update"):  # a dictionary
        arrays = obj.feature_names == [0, 1]
        probes = ([np.array([0.2, -0.4]), np.array([1.5, 0.0])] if arrays else
                  [{"a": 0.2, "b": -0.4}, {"a": 1.5}])
        return ([obj.kernel_column(p).tolist() for p in probes],
                obj.nystrom_features(probes).tolist(), obj.indices.tolist())
    if isinstance(obj, BinaryClassifier):
        return [obj.predict_proba_one(x) for x in PROBES]
    return [obj.predict_one(x) for x in PROBES]


def state(obj):
    return pickle.dumps(obj), answers(obj)


def check(obj, action, error, message):
    """``action(obj)`` raises ``error`` matching ``message`` and changes nothing."""
    before = state(obj)
    with pytest.raises(error, match=message):
        action(obj)
    assert state(obj) == before


LEARNER_NAMES = sorted(ALL)
DICT_NAMES = sorted(DICTIONARIES)


# -- feature values ------------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "value", "error", "message"), FEATURE_VALUES,
                         ids=[k[0] for k in FEATURE_VALUES])
def test_catalogue_feature_values(kind, value, error, message):
    for name in LEARNER_NAMES:
        model, y = trained(name), target_for(name)
        for x in ({"a": value}, {"a": 0.1, "new": value}):
            bad = "a" if "new" not in x else "new"
            match = f"feature '{bad}' .*({message})"
            check(model, lambda m, x=x, y=y: m.learn_one(x, y), error, match)
            check(model, lambda m, x=x: m.predict_one(x), error, match)
        if name != "binary":
            X = np.empty((3, 2), dtype=object)  # the bad value as a cell of a batch
            X[:] = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
            X[2, 1] = value
            check(model, lambda m, X=X: m.learn_many(X, [0.1, 0.2, 0.3]), error,
                  f"row 2: feature 1 .*({message})")
            check(model, lambda m, X=X: m.predict_many(X), error, f"row 2: feature 1 .*({message})")
    for name in [*DICT_NAMES, "tracker"]:
        obj = fed(name)
        for x in ({"a": value}, {"a": 0.1, "new": value}):
            bad = "a" if "new" not in x else "new"
            match = f"feature '{bad}' .*({message})"
            step = ((lambda o, x=x: o.update(x, 0.1, 0.2)) if name == "tracker" else
                    (lambda o, x=x: o.update(x)))
            check(obj, step, error, match)
        if name != "tracker":
            rows = [{"a": 0.1}, {"a": 0.2}, {"b": 0.3}, {"a": 0.4, "c": value}]
            check(obj, lambda o, rows=rows: o.update_many(rows), error,
                  f"row 3: feature 'c' .*({message})")
            check(obj, lambda o: o.kernel_column({"a": value}), error, "feature 'a'")


# -- rows that are not rows ----------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "x"), NOT_ROWS, ids=[k[0] for k in NOT_ROWS])
def test_catalogue_not_rows(kind, x):
    for name in LEARNER_NAMES:
        model, y = trained(name), target_for(name)
        check(model, lambda m, y=y: m.learn_one(x, y), TypeError, "must be a dict")
        check(model, lambda m: m.predict_one(x), TypeError, "must be a dict")
    if kind in ("list", "array"):  # arrays are rows for the dictionaries and the tracker ...
        return
    for name in [*DICT_NAMES, "tracker"]:  # ... the rest is not
        obj = fed(name)
        step = ((lambda o: o.update(x, 0.1, 0.2)) if name == "tracker" else
                (lambda o: o.update(x)))
        check(obj, step, TypeError, "got")


@pytest.mark.parametrize(("kind", "x", "error", "message"), ARRAY_ROWS,
                         ids=[k[0] for k in ARRAY_ROWS])
def test_catalogue_array_rows(kind, x, error, message):
    for name in [*DICT_NAMES, "tracker"]:
        obj = fed(name, arrays=True)
        step = ((lambda o: o.update(x, 0.1, 0.2)) if name == "tracker" else
                (lambda o: o.update(x)))
        check(obj, step, error, message)
    for name in DICT_NAMES:
        check(fed(name), lambda o: o.update(np.zeros(2)), TypeError, "fed dicts; got an array")


# -- targets and labels --------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "y", "error", "message"), TARGETS, ids=[k[0] for k in TARGETS])
def test_catalogue_targets(kind, y, error, message):
    for name in sorted(REGRESSORS):
        check(trained(name), lambda m: m.learn_one({"a": 0.1}, y), error,
              f"the target.*{message}")
    tracker = fed("tracker")
    check(tracker, lambda t: t.update({"a": 0.1}, y, 0.2), error, f"the target.*{message}")
    check(tracker, lambda t: t.update({"a": 0.1}, 0.2, y), error, f"y_pred.*{message}")


@pytest.mark.parametrize(("kind", "label", "error", "message"), LABELS,
                         ids=[k[0] for k in LABELS])
def test_catalogue_labels(kind, label, error, message):
    check(trained("binary"), lambda m: m.learn_one({"a": 0.1}, label), error, message)


@pytest.mark.parametrize(("kind", "label", "error", "message"), FIRST_LABELS,
                         ids=[k[0] for k in FIRST_LABELS])
def test_catalogue_labels_after_one_label(kind, label, error, message):
    model = BinaryClassifier(KONS(loss=losses.Logistic()))
    model.learn_one({"a": 0.3}, "yes")
    check(model, lambda m: m.learn_one({"a": 0.1}, label), error, message)
    assert model.predict_one({"a": 0.1}) == "yes"  # predictions stay labels, never NaN


# -- batches -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "X", "y", "error", "message"), BATCHES,
                         ids=[k[0] for k in BATCHES])
def test_catalogue_batches(kind, X, y, error, message):
    targets = [0.1, 0.2, 0.3, 0.4]
    for name in sorted(REGRESSORS):
        model = trained(name)
        check(model, lambda m: m.learn_many(X, targets), error, message)
        check(model, lambda m: m.predict_many(X), error, message)
    for name in DICT_NAMES:
        arrays = isinstance(X, np.ndarray)
        obj = fed(name, arrays=arrays)
        check(obj, lambda o: o.update_many(X), error, message)


@pytest.mark.parametrize(("kind", "y", "error", "message"), TARGET_BATCHES,
                         ids=[k[0] for k in TARGET_BATCHES])
def test_catalogue_target_batches(kind, y, error, message):
    X = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]])
    for name in sorted(REGRESSORS):
        check(trained(name), lambda m: m.learn_many(X, y), error, message)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_a_batch_that_fails_midway_is_undone_and_names_the_row(name):
    """Valid cells, but row 2 overflows a polynomial kernel while learning: rows 0-1 are undone."""
    make = {"kons": KONS, "sketched": lambda **k: SketchedKONS(seed=0, **k),
            "fgd": FunctionalGD, "krls": KRLS}[name]
    model = make(kernel=kernels.Polynomial(degree=3))
    for i in range(5):
        model.learn_one({"0": i / 5, "1": 0.0}, 0.1 * i)
    with np.errstate(over="ignore", invalid="ignore"):
        check(model, lambda m: m.learn_many(pd.DataFrame({"0": [0.1, 0.2, 1e120],
                                                          "1": [0.0, 0.0, 0.0]}),
                                            [0.1, 0.2, 0.3]),
              ValueError, "row 2: .*(overflow|too large|not finite)")


# -- the tracker ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "action", "error", "message"), TRACKER_ONLY,
                         ids=[k[0] for k in TRACKER_ONLY])
def test_catalogue_tracker(kind, action, error, message):
    check(fed("tracker"), action, error, message)


# -- load ----------------------------------------------------------------------------------------

def _write_text(path):
    path.write_text("not a model")


def _write_plain_npz(path):
    np.savez(path, a=np.zeros(2))


def _write_pickled(path):
    np.savez(path, __okoco__=np.array("{}"), a=np.array([{"x": 1}], dtype=object))


def _edit_meta(edit):
    def write(path):
        model = KONS()
        model.learn_one({"a": 1.0}, 0.5)
        model.save(path)
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
            meta = json.loads(str(archive["__okoco__"]))
        edit(meta)
        np.savez(path, __okoco__=np.array(json.dumps(meta)), **arrays)
    return write


LOAD_CASES = [  # damaged or foreign files: okoco.load raises and the file is left as it was
    ("text-file", _write_text, ValueError, "not an okoco file"),
    ("plain-npz", _write_plain_npz, ValueError, "not an okoco file"),
    ("pickled-arrays", _write_pickled, ValueError, "object arrays"),
    ("version-99", _edit_meta(lambda m: m.update(format_version=99)), ValueError, "version 99"),
    ("unknown-format", _edit_meta(lambda m: m.update(format="zip")), ValueError,
     "not an okoco file"),
    ("not-a-learner", _edit_meta(lambda m: m.update({"class": "os.system"})), ValueError,
     "not an okoco learner"),
    ("bad-parameter", _edit_meta(lambda m: m["params"].update(alpha=-1.0)), ValueError,
     "KONS: alpha must be"),
    ("missing-state", _edit_meta(lambda m: m["state"].pop("rg_sum")), ValueError,
     "does not match"),
    ("truncated", lambda p: (_edit_meta(lambda m: None)(p),
                             p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])),
     ValueError, "not an okoco file|not a readable okoco file"),
    ("state-a-list", _edit_meta(lambda m: m.update(state=[1, 2])), ValueError, "model.npz"),
    ("dangling-reference", _edit_meta(lambda m: m["state"].update(log_det={"__ref__": 12345})),
     ValueError, "model.npz"),
    ("foreign-object", _edit_meta(lambda m: m["state"].update(
        features={"__obj__": "subprocess.Popen", "id": 99, "attrs": {}})), ValueError,
     "never loads"),
]


@pytest.mark.parametrize(("kind", "write", "error", "message"), LOAD_CASES,
                         ids=[k[0] for k in LOAD_CASES])
def test_catalogue_load(kind, write, error, message, tmp_path):
    path = tmp_path / "model.npz"
    write(path)
    before = path.read_bytes()
    with pytest.raises(error, match=message):
        okoco.load(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.npz"]


def test_load_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        okoco.load(tmp_path / "absent.npz")
    assert os.listdir(tmp_path) == []


# -- issue 32: labels, values, feature names, constructors -----------------------------------


def _state(model):
    """A fingerprint of a model's whole saved state (its file's metadata and arrays)."""
    import tempfile

    path = okoco.save(model, os.path.join(tempfile.mkdtemp(), "m.npz"))
    with np.load(path) as archive:
        meta = json.loads(str(archive["__okoco__"]))
        return json.dumps(meta, sort_keys=True), {k: archive[k].tobytes()
                                                  for k in archive.files if k != "__okoco__"}


def test_binary_classifier_refuses_none_as_a_label():
    clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic()))
    clf.learn_one({"a": 1.0}, "yes")
    before = _state(clf)
    with pytest.raises(TypeError, match="label cannot be None"):
        clf.learn_one({"a": 0.0}, None)
    with pytest.raises(TypeError, match="label cannot be None"):
        clf.learn_many(np.array([[0.0], [1.0]]), ["no", None])
    assert _state(clf) == before


class _FloatFails(fractions.Fraction):
    def __float__(self):
        raise RuntimeError("no float for you")


def test_a_number_whose_float_raises_is_a_worded_type_error():
    model = KONS()
    with pytest.raises(TypeError, match=r"feature 'a' = .* has no float value \(float\(\) "
                                        r"raised RuntimeError"):
        model.learn_one({"a": _FloatFails(1, 2)}, 0.5)
    with pytest.raises(TypeError, match=r"the target .* has no float value"):
        model.learn_one({"a": 1.0}, _FloatFails(1, 2))
    assert model.n_seen == 0


def test_timedelta_values_are_refused_naming_the_feature():
    import pandas as pd

    model = KONS()
    with pytest.raises(TypeError, match=r"feature 'wait' has a non-numeric value"):
        model.learn_one({"wait": np.timedelta64(3, "D")}, 0.5)
    with pytest.raises(TypeError, match=r"feature 'wait'"):
        model.learn_many(pd.DataFrame({"wait": pd.to_timedelta([1, 2], unit="D")}), [0.1, 0.2])
    with pytest.raises(TypeError, match="target must be a real number"):
        model.learn_one({"a": 1.0}, np.timedelta64(3, "D"))
    assert model.n_seen == 0


def test_bytes_feature_names_and_labels_are_saved_and_loaded(tmp_path):
    clf = BinaryClassifier(KONS(loss=losses.Logistic()))
    clf.learn_one({b"a": 1.0, "b": 2.0}, b"yes")
    clf.learn_one({b"a": -1.0}, b"no")
    again = okoco.load(clf.save(tmp_path / "m.npz"))
    assert again.learner._features.columns == {b"a": 0, "b": 1}
    want = clf.predict_proba_one({b"a": 0.5})  # (its inverse rebuilt on load: to rounding)
    assert again.predict_proba_one({b"a": 0.5}) == pytest.approx(want, rel=1e-9)


def test_nan_feature_names_are_refused():
    model = KONS()
    with pytest.raises(ValueError, match="not equal to itself"):
        model.learn_one({float("nan"): 1.0, float("nan"): 2.0}, 0.5)
    assert model.n_seen == 0 and model._features.columns == {}


def test_dataframes_with_duplicate_column_names_are_refused():
    import pandas as pd

    model = KONS()
    frame = pd.DataFrame([[1.0, 2.0]], columns=["a", "a"])
    with pytest.raises(ValueError, match=r"duplicate or NaN column names \('a'\)"):
        model.learn_many(frame, [0.5])
    with pytest.raises(ValueError, match="duplicate"):
        model.predict_many(frame)
    assert model.n_seen == 0


def test_a_nullable_int64_na_is_a_missing_value_refused_as_nan():
    # one rule for missing values (okoco._input): a frame's <NA> is refused as a dict's NaN
    # or <NA> is; filled, it is the absent feature of a dict without its key
    import pandas as pd

    frame = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": [0.5, 1.5, -1.0]})
    model, reference = KONS(), KONS()
    with pytest.raises(ValueError, match="row 1: feature 'a' is not finite \\(nan\\), a missing"):
        model.learn_many(frame, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="feature 'a' is <NA>, a missing value"):
        model.learn_one({"a": pd.NA, "b": 0.5}, 0.1)
    assert model.n_seen == 0
    model.learn_many(frame.fillna(0), [0.1, 0.2, 0.3])
    for x, y in [({"a": 1.0, "b": 0.5}, 0.1), ({"b": 1.5}, 0.2), ({"a": 3.0, "b": -1.0}, 0.3)]:
        reference.learn_one(x, y)
    assert model.predict_one({"a": 2.0, "b": 0.0}) == reference.predict_one({"a": 2.0, "b": 0.0})


@pytest.mark.parametrize("make", [FunctionalGD, Auto, KONS])
def test_a_subnormal_c_is_refused_at_construction(make):
    with pytest.raises(ValueError, match=r"C must be a real number in \[1e-150, 1e\+150\]"):
        make(C=5e-324)
    model = make(C=1e-150)  # the smallest C: steps and rates stay finite
    model.learn_one({"a": 1.0}, 0.0)
    assert math.isfinite(model.predict_one({"a": 1.0}))


@pytest.mark.parametrize(("kwargs", "name"), [({"kernel": kernels.RBF}, "RBF"),
                                              ({"loss": losses.Squared}, "Squared")])
def test_a_kernel_or_loss_class_instead_of_an_instance_is_refused(kwargs, name):
    with pytest.raises(TypeError, match=rf"got the class {name} itself; pass an instance, "
                                        rf"e.g. {name}\(\)"):
        KONS(**kwargs)


def test_huge_integer_parameters_are_refused_with_a_short_message():
    with pytest.raises(ValueError, match=r"degree must be an integer in \[1, 1000\], got "
                                         r"~1e\+400"):
        kernels.Polynomial(degree=10**400)
    with pytest.raises(ValueError, match=r"qbar must be .*got ~1e\+400"):
        SQUEAK(kernels.RBF(1.0), qbar=10**400)


class _NaNKernel(kernels.RBF):
    def __call__(self, X, Y):
        return np.full((np.atleast_2d(X).shape[0], np.atleast_2d(Y).shape[0]), np.nan)

    def diag(self, X):
        return np.full(np.atleast_2d(X).shape[0], np.nan)


@pytest.mark.parametrize("make", [lambda: KONS(kernel=_NaNKernel(1.0)),
                                  lambda: FunctionalGD(kernel=_NaNKernel(1.0)),
                                  lambda: KRLS(kernel=_NaNKernel(1.0))])
def test_a_kernel_returning_nan_is_not_reported_as_an_overflow(make):
    model = make()
    with pytest.raises(ValueError) as info:
        for i in range(3):
            model.learn_one({"a": 0.1 * i}, 0.5)
    assert "NaN" in str(info.value) and "float64 overflowed, the features" not in str(info.value)
