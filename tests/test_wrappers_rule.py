"""Issue 40 (deliverable 4) and issue 43 (deliverable 5): the wrappers keep the learners' rule.

- every dict-fed object takes a dict subclass (``OrderedDict``, ``defaultdict``) or any
  ``Mapping`` as it takes a dict, with the same answers (the compiled encoder was typed
  ``dict`` and refused them);
- ``MulticlassClassifier`` and ``BinaryClassifier`` take one rule for labels (None,
  containers, unhashable values, NaN), and a refused label changes nothing;
- ``MulticlassClassifier.learn_many`` is all or nothing and names the row, as the learners'
  batches; it bounds its classes (``max_classes``);
- one input rule: NaN / None / a missing cell means the same in dicts, DataFrames and arrays,
  for ``learn_one``, ``learn_many`` and ``predict_many`` of every learner class; a renamed or
  missing column in ``predict_many`` is a new or an absent feature, as in a dict.
"""

from __future__ import annotations

import math
import pickle
from collections import OrderedDict, defaultdict
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

from okoco import BinaryClassifier, kernels, losses
from okoco.dictionary import ALD, KORS
from okoco.intervals import IntervalRegressor
from okoco.learners import (
    CONKONS,
    KONS,
    KRLS,
    PROSNKONS,
    Auto,
    FunctionalGD,
    MulticlassClassifier,
    SketchedKONS,
)
from okoco.preprocessing import TargetStandardScaler
from okoco.regret import KernelRidge, RegretTracker

LEARNERS = {
    "kons": lambda: KONS(),
    "sketched": lambda: SketchedKONS(seed=0),
    "fgd": lambda: FunctionalGD(),
    "krls": lambda: KRLS(),
    "pros": lambda: PROSNKONS(seed=0),
    "con": lambda: CONKONS(seed=0),
    "auto": lambda: Auto(),
}
MULTICLASS = {
    "multi-default": lambda: MulticlassClassifier(),
    "multi-kons-window": lambda: MulticlassClassifier(KONS(max_size=8)),
    "multi-kons-logistic": lambda: MulticlassClassifier(KONS(loss=losses.Logistic())),
    "multi-fgd": lambda: MulticlassClassifier(FunctionalGD(loss=losses.Logistic())),
    "multi-auto": lambda: MulticlassClassifier(Auto()),
}
CLASSIFIERS = {**MULTICLASS,
               "binary": lambda: BinaryClassifier(KONS(loss=losses.Logistic()))}
WRAPPERS = {"interval-krls": lambda: IntervalRegressor(KRLS()),
            "interval-fgd": lambda: IntervalRegressor(FunctionalGD()),
            "target-scaler": lambda: TargetStandardScaler(KONS())}
ALL = {**LEARNERS, **CLASSIFIERS, **WRAPPERS}


def stream(name: str, n: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    for i in range(n):
        v = rng.normal(size=2)
        x = {"a": float(v[0]), "b": float(v[1])}
        if name.startswith("multi"):
            y = ("red", "green", "blue")[i % 3]
        elif name == "binary":
            y = "yes" if v[0] > 0 else "no"
        else:
            y = float(np.tanh(v[0]))
        yield x, y


class Row(Mapping):
    """A mapping that is no dict (river's rows may be any mapping of names to numbers)."""

    def __init__(self, data):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


def ordered(x):
    return OrderedDict(x)


def default(x):
    row = defaultdict(float)
    row.update(x)
    return row


def answer(model, x):
    if isinstance(model, IntervalRegressor):
        return model.predict_one(x, with_interval=True)
    if hasattr(model, "predict_proba_one"):
        return model.predict_proba_one(x)
    return model.predict_one(x)


# -- dict subclasses ------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", [ordered, default, Row], ids=["OrderedDict", "defaultdict",
                                                             "Mapping"])
@pytest.mark.parametrize("name", sorted(ALL))
def test_dict_subclasses_and_mappings_are_rows(name, wrap):
    # "Argument 'x' has incorrect type (expected dict, got collections.OrderedDict)" before
    plain, other = ALL[name](), ALL[name]()
    probes = [x for x, _ in stream(name, 3, seed=9)]
    for x, y in stream(name):
        assert answer(other, wrap(x)) == answer(plain, x)
        plain.learn_one(x, y)
        other.learn_one(wrap(x), y)
    assert [answer(other, wrap(x)) for x in probes] == [answer(plain, x) for x in probes]


def test_dictionaries_and_the_regret_tracker_take_dict_subclasses():
    for make in (lambda: ALD(kernels.RBF(0.5), nu=0.05),
                 lambda: KORS(kernels.RBF(0.5), beta=2.0, seed=0)):
        plain, other = make(), make()
        for x, _ in stream("kons"):
            assert other.update(ordered(x)) == plain.update(x)
        assert other.size == plain.size
    plain, other = (RegretTracker(losses.Squared(), KernelRidge(kernels.RBF(0.5)),
                                  checkpoints=[10]) for _ in range(2))
    for x, y in stream("kons"):
        plain.update(x, y, 0.0)
        other.update(default(x), y, 0.0)
    assert other.regret == plain.regret


# -- labels ---------------------------------------------------------------------------------


BAD_LABELS = [
    ("None", None, TypeError, "cannot be None"),
    ("list-in-tuple", ([1],), TypeError, r"single hashable value .*\(\[1\],\) \(tuple\)"),
    ("nan-in-tuple", (math.nan,), TypeError, "single hashable value"),
    ("list", ["a"], TypeError, "single hashable value"),
    ("array", np.array([1]), TypeError, "single hashable value"),
    ("nan", math.nan, ValueError, "not equal to itself"),
    ("numpy-nan", np.float64("nan"), ValueError, "not equal to itself"),
]


@pytest.mark.parametrize(("case", "label", "error", "match"), BAD_LABELS, ids=[c[0] for c in
                                                                                BAD_LABELS])
@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_one_rule_for_unusual_labels(name, case, label, error, match):
    # before: None became a class, ([1],) a class that broke predict_proba_one for good, and
    # two (nan,) labels two classes
    model = CLASSIFIERS[name]()
    for x, y in stream(name, 6):
        model.learn_one(x, y)
    state = pickle.dumps(model)
    with pytest.raises(error, match=match):
        model.learn_one({"a": 0.1}, label)
    with pytest.raises(error, match=f"row 1: .*{match}"):
        model.learn_many(pd.DataFrame([{"a": 0.1}, {"a": 0.2}]),
                         pd.Series(["red" if name != "binary" else "yes", label],
                                   dtype=object))
    assert pickle.dumps(model) == state


def test_two_nan_tuples_never_become_two_classes():
    model = MulticlassClassifier(FunctionalGD(loss=losses.Logistic()))
    for label in [(math.nan,), (math.nan,)]:
        with pytest.raises(TypeError):
            model.learn_one({"a": 0.1}, label)
    assert model.classes == []


# -- MulticlassClassifier's batches ---------------------------------------------------------


BAD_BATCHES = [
    ("dict-text-cell", lambda X: [*X[:2], {"a": "x"}, *X[3:]], TypeError, "row 2: feature 'a'"),
    ("dict-nan-cell", lambda X: [*X[:2], {"a": math.nan}, *X[3:]], ValueError,
     "row 2: feature 'a'"),
    ("frame-nan-cell", lambda X: pd.DataFrame([*X[:2], {"a": math.nan, "b": 0.1}, *X[3:]]),
     ValueError, "row 2: feature 'a'"),
    ("array-inf-cell", lambda X: np.array([[r["a"], r["b"]] for r in X[:2]]
                                          + [[math.inf, 0.0]]
                                          + [[r["a"], r["b"]] for r in X[3:]]),
     ValueError, "row 2: feature 0"),
]


@pytest.mark.parametrize(("case", "make_batch", "error", "match"), BAD_BATCHES,
                         ids=[c[0] for c in BAD_BATCHES])
@pytest.mark.parametrize("name", sorted(MULTICLASS))
def test_multiclass_batches_are_all_or_nothing(name, case, make_batch, error, match):
    # before: rows 0 and 1 were learned, then the error, without the row
    model = MULTICLASS[name]()
    if case.startswith("array"):  # a model fed arrays names features by position
        model.learn_many(np.array([[0.1, 0.2], [0.3, 0.4]]), ["red", "green"])
    else:
        for x, y in stream(name, 6):
            model.learn_one(x, y)
    state = pickle.dumps(model)
    X = [x for x, _ in stream(name, 5, seed=3)]
    with pytest.raises(error, match=match):
        model.learn_many(make_batch(X), ["red", "green", "new", "blue", "red"])
    assert pickle.dumps(model) == state
    with pytest.raises(error, match=match):
        model.predict_many(make_batch(X))
    with pytest.raises(error, match=match):
        model.predict_proba_many(make_batch(X))
    assert pickle.dumps(model) == state


def test_max_classes_bounds_the_classes_and_a_refusal_changes_nothing():
    model = MulticlassClassifier(KONS(loss=losses.Logistic()), max_classes=2)
    model.learn_one({"a": 0.1}, "x")
    model.learn_one({"a": 0.2}, "y")
    state = pickle.dumps(model)
    with pytest.raises(ValueError, match=r"'z' would be class 3, beyond max_classes=2"):
        model.learn_one({"a": 0.3}, "z")
    with pytest.raises(ValueError, match=r"row 2: the label 'z' would be class 3"):
        model.learn_many([{"a": 0.1}, {"a": 0.2}, {"a": 0.3}], ["x", "y", "z"])
    assert pickle.dumps(model) == state
    model.learn_many([{"a": 0.1}, {"a": 0.2}], ["y", "x"])  # known classes are fine
    assert model.classes == ["x", "y"] and model.n_seen == 4
    assert MulticlassClassifier().max_classes == 500
    assert MulticlassClassifier(max_classes=None).max_classes is None
    with pytest.raises(ValueError, match="max_classes"):
        MulticlassClassifier(max_classes=0)


def test_multiclass_learn_many_equals_learn_one_on_the_same_rows():
    X = [x for x, _ in stream("multi", 20)]
    y = [label for _, label in stream("multi", 20)]
    for make in MULTICLASS.values():
        batch, one = make(), make()
        batch.learn_many(pd.DataFrame(X), pd.Series(y))
        for x, label in zip(X, y):
            one.learn_one(x, label)
        assert [batch.predict_proba_one(x) for x in X] == [one.predict_proba_one(x) for x in X]


# -- one input rule: NaN / None / missing ----------------------------------------------------


ROWS = [{"a": 0.1, "b": 0.2}, {"a": 0.3, "b": -0.1}, {"a": -0.2, "b": 0.4}]


def containers(bad, error):
    """The same three rows, the second's feature 'b' ``bad``, as dicts, a DataFrame and an
    array (features by position there: 'b' is feature 1), with the error each must raise:
    ``error``, except that pandas stores a missing cell of a numeric column as NaN."""
    rows = [dict(r) for r in ROWS]
    rows[1]["b"] = bad
    frame = pd.DataFrame(rows)
    array = np.array([[r["a"], r["b"]] for r in rows], dtype=float if bad is math.nan else object)
    nan_frame = frame["b"].dtype == np.float64
    return {"dicts": (rows, "'b'", error),
            "frame": (frame, "'b'", ValueError if nan_frame else error),
            "array": (array, "feature 1", error)}


def targets(name, n=3):
    if name.startswith("multi"):
        return ["red", "green", "blue"][:n]
    if name == "binary":
        return ["yes", "no", "yes"][:n]
    return [0.1, -0.2, 0.3][:n]


@pytest.mark.parametrize(("bad", "error"), [(math.nan, ValueError), (None, TypeError),
                                            (pd.NA, ValueError)], ids=["NaN", "None", "NA"])
@pytest.mark.parametrize("name", sorted({**LEARNERS, **CLASSIFIERS}))
def test_a_missing_value_means_the_same_in_dicts_frames_and_arrays(name, bad, error):
    # before: a DataFrame's NaN was an absent feature (0) while the same row as a dict or an
    # array was refused: KONS().learn_many(df_with_nan, y) learned silently
    for kind, (X, feature, expected) in containers(bad, error).items():
        model = ALL[name]()
        if kind == "array":  # positions name the features
            model.learn_many(np.array([[0.0, 0.1]]), targets(name, 1))
        else:
            model.learn_one({"a": 0.0, "b": 0.1}, targets(name, 1)[0])
        state = pickle.dumps(model)
        with pytest.raises(expected, match=f"row 1: .*{feature}"):
            model.learn_many(X, targets(name))
        with pytest.raises(expected, match=f"row 1: .*{feature}"):
            model.predict_many(X)
        if kind == "dicts":
            with pytest.raises(expected, match=feature):
                model.learn_one(X[1], targets(name)[1])
        assert pickle.dumps(model) == state, kind


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_a_renamed_or_missing_column_in_predict_many_is_a_new_or_absent_feature(name):
    # documented in docs/guide/reliability.md: columns are features by name, as dict keys
    model = LEARNERS[name]()
    model.learn_many(pd.DataFrame(ROWS), [0.1, -0.2, 0.3])
    missing = pd.DataFrame([{"a": 0.3}, {"a": -0.1}])
    renamed = pd.DataFrame([{"a": 0.3, "B": 0.2}, {"a": -0.1, "B": 0.5}])
    for frame in (missing, renamed):
        dicts = frame.to_dict(orient="records")
        np.testing.assert_allclose(model.predict_many(frame).to_numpy(),
                                   [model.predict_one(x) for x in dicts], rtol=1e-12, atol=1e-15)
    # the absent feature is 0, as a dict without its key
    np.testing.assert_array_equal(model.predict_many(missing).to_numpy(),
                                  model.predict_many(pd.DataFrame([{"a": 0.3, "b": 0.0},
                                                                   {"a": -0.1, "b": 0.0}])))


def test_pos_label_follows_the_label_rule():
    # before: BinaryClassifier(pos_label=([1],)) was accepted, and no label could ever match it
    with pytest.raises(TypeError, match=r"pos_label must be None or a single hashable label"):
        BinaryClassifier(pos_label=([1],))
    with pytest.raises(ValueError, match="pos_label"):
        BinaryClassifier(pos_label=math.nan)
    assert BinaryClassifier(pos_label="yes").pos_label == "yes"
