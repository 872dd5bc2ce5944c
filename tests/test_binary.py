"""BinaryClassifier's mini-batch methods against its own one-at-a-time protocol."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from river import datasets

from okoco import BinaryClassifier, losses
from okoco.learners import KONS, FunctionalGD


def phishing(k):
    rows = list(datasets.Phishing().take(k))
    X = pd.DataFrame([x for x, _ in rows])
    y = pd.Series([label for _, label in rows])
    return rows, X, y


@pytest.mark.parametrize("make", [
    lambda: BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5)),
    lambda: BinaryClassifier(KONS(loss=losses.SquaredHinge(), C=1.0)),
])
def test_learn_many_equals_learn_one_in_order(make):
    rows, X, y = phishing(120)
    one, many = make(), make()
    for x, label in rows[:80]:
        one.learn_one(x, label)
    many.learn_many(X.iloc[:80], y.iloc[:80])
    test = X.iloc[80:]
    expected = [one.predict_one(x) for x, _ in rows[80:]]
    assert many.predict_many(test).tolist() == expected
    assert list(many.predict_many(test).index) == list(test.index)
    proba = many.predict_proba_many(test)
    for (x, _), (_, row) in zip(rows[80:], proba.iterrows()):
        reference = one.predict_proba_one(x)
        assert set(proba.columns) == set(reference)
        assert all(row[k] == pytest.approx(v, abs=1e-12) for k, v in reference.items())


def test_arrays_and_string_labels():
    clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))
    X = np.array([[0.0], [1.0], [0.1], [0.9]])
    clf.learn_many(X, np.array(["no", "yes", "no", "yes"]))
    assert clf.predict_many(np.array([[0.0], [1.0]])).tolist() == ["no", "yes"]
    proba = clf.predict_proba_many(np.array([[0.0], [1.0]]))
    assert set(proba) == {"no", "yes"} and np.allclose(proba["no"] + proba["yes"], 1.0)
    assert proba["no"][0] > 0.5 > proba["no"][1]


def test_a_third_class_in_a_batch_changes_nothing():
    clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=3.0))
    clf.learn_many(np.array([[0.0], [1.0]]), np.array(["a", "b"]))
    before = clf.predict_many(np.array([[0.5]]))
    seen = clf.learner.n_seen
    with pytest.raises(ValueError, match="third class"):
        clf.learn_many(np.array([[0.2], [0.3]]), np.array(["a", "c"]))
    assert clf.learner.n_seen == seen and clf._labels == ["a", "b"]
    assert clf.predict_many(np.array([[0.5]])) == before


def test_before_any_label_the_river_convention_holds():
    clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic()))
    assert clf.predict_many(np.array([[1.0]])).tolist() == [clf.predict_one({0: 1.0})]


def test_the_remembered_label_pair_follows_every_new_label():
    """The (negative, positive) pair is remembered between calls; it must follow the labels as
    they arrive (one label, then two), a batch, a restored classifier and a copy."""
    import copy

    for labels, pos in [(["b", "a"], "b"), ([0, 1], 1), ([False, True], True), ([-1, 1], 1)]:
        clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))
        first, second = labels
        clf.learn_one({"x": 0.0}, first)
        assert clf.predict_one({"x": 0.0}) == first  # one label seen: it is the only answer
        assert clf._pair(clf._labels) == clf._pair_of(clf._labels)
        clf.learn_one({"x": 1.0}, second)
        assert clf._pair(clf._labels) == clf._pair_of(clf._labels)
        assert clf._pair(clf._labels)[1] == pos
        proba = clf.predict_proba_one({"x": 1.0})
        assert clf.predict_one({"x": 1.0}) == max(proba, key=proba.get)
        twin = copy.deepcopy(clf)
        assert twin._pair(twin._labels) == clf._pair(clf._labels)
    batch = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))
    batch.learn_one({0: 0.0}, "yes")
    assert batch._pair(batch._labels) == (None, "yes")
    batch.learn_many(np.array([[1.0], [0.5]]), np.array(["no", "yes"]))
    assert batch._pair(batch._labels) == ("no", "yes")


def test_the_remembered_label_pair_is_not_saved(tmp_path):
    from okoco import load

    clf = BinaryClassifier(KONS(loss=losses.SquaredHinge(), C=1.0))
    for i in range(6):
        clf.learn_one({"x": i / 5}, "big" if i > 2 else "small")
    clf.predict_one({"x": 0.1})
    assert "_pair_memo" in vars(clf) and "_pair_memo" not in clf.__getstate__()
    again = load(clf.save(tmp_path / "clf.npz"))
    for x in ({"x": 0.05}, {"x": 0.95}):  # (KONS's inverse rebuilt on load: to rounding)
        assert again.predict_one(x) == clf.predict_one(x)
        assert again.predict_proba_one(x) == pytest.approx(clf.predict_proba_one(x), rel=1e-9)


def test_predict_one_breaks_a_tie_as_the_max_of_predict_proba_one():
    """P(+1) = 1/2 exactly: predict_one answers the negative label, as max() over the
    probabilities in predict_proba_one's order does."""
    clf = BinaryClassifier(KONS(loss=losses.SquaredHinge(), C=1.0))
    clf._labels = ["p", "n"]  # strings: the first label seen is +1
    proba = clf.predict_proba_one({"x": 1.0})
    assert proba == {"n": 0.5, "p": 0.5}  # f = 0: nothing learned
    assert clf.predict_one({"x": 1.0}) == max(proba, key=proba.get) == "n"
