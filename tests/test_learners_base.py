import copy
import pickle

import numpy as np
import pandas as pd
import pytest
from streams import as_dicts, unit_rows

from okoco import BinaryClassifier, MulticlassClassifier, kernels, losses
from okoco._input import FeatureMap
from okoco.learners import KONS, KRLS, FunctionalGD
from okoco.learners.base import clip_excess
from okoco.linalg import Rows
from okoco.losses import Logistic

LEARNERS = [
    lambda: FunctionalGD(eta=0.3),
    lambda: FunctionalGD(kernel=kernels.Laplacian(gamma=0.5), budget=10, lam=0.01),
]


def trained(factory, n=20):
    model = factory()
    for x, y in zip(as_dicts(unit_rows(n, 3)), np.linspace(-1, 1, n)):
        model.learn_one(x, y)
    return model


BAD_X = [
    ({"x0": float("nan")}, ValueError, "x0"),
    ({"x1": float("inf")}, ValueError, "x1"),
    ({"x2": -float("inf")}, ValueError, "x2"),
    ({"x0": None}, TypeError, "x0"),
    ({"x0": "3.1"}, TypeError, "x0"),
    ({"x0": [1.0]}, TypeError, "x0"),
    ({"x0": 1e300}, ValueError, "x0"),
    ({"x0": 0.1, "new": float("nan")}, ValueError, "new"),
]


@pytest.mark.parametrize("factory", LEARNERS)
@pytest.mark.parametrize(("x", "error", "name"), BAD_X)
def test_bad_features_raise_and_leave_state_unchanged(factory, x, error, name):
    model = trained(factory)
    probe = {"x0": 0.2, "x1": -0.4, "x2": 0.1}
    before, state = model.predict_one(probe), pickle.dumps(model)
    with pytest.raises(error, match=name):
        model.learn_one(x, 0.5)
    with pytest.raises(error, match=name):
        model.predict_one(x)
    assert pickle.dumps(model) == state
    assert model.predict_one(probe) == before


@pytest.mark.parametrize("factory", LEARNERS)
@pytest.mark.parametrize("y", [float("nan"), float("inf"), None, "1.0", True])
def test_bad_targets_raise_and_leave_state_unchanged(factory, y):
    model = trained(factory)
    state = pickle.dumps(model)
    with pytest.raises((TypeError, ValueError), match="target"):
        model.learn_one({"x0": 0.1}, y)
    assert pickle.dumps(model) == state


def test_not_a_dict_is_a_type_error():
    with pytest.raises(TypeError, match="dict"):
        FunctionalGD().learn_one([1.0, 2.0], 1.0)


def test_target_outside_the_loss_domain():
    model = trained(lambda: FunctionalGD(loss=losses.Logistic()), n=0)
    with pytest.raises(ValueError, match="BinaryClassifier"):
        model.learn_one({"a": 1.0}, 0.5)
    assert model.n_seen == 0


def test_bad_batch_is_rejected_whole():
    model = trained(LEARNERS[0])
    state = pickle.dumps(model)
    X = np.array([[0.1, 0.2], [0.3, np.nan]])
    with pytest.raises(ValueError, match="row 1"):
        model.learn_many(X, [0.0, 1.0])
    with pytest.raises(ValueError, match="rows"):
        model.learn_many(X[:1], [0.0, 1.0])
    assert pickle.dumps(model) == state


class NaNDiagonal(kernels.RBF):
    """An RBF whose k(x, x) is NaN where the first feature is negative (a broken kernel)."""

    def diag(self, X):
        return np.where(np.asarray(X)[:, 0] < 0, np.nan, 1.0)


@pytest.mark.parametrize("rows", [1, 2, 3, 6])
def test_a_row_whose_k_x_x_is_not_finite_fails_small_and_large_batches(rows):
    model = FunctionalGD(kernel=NaNDiagonal(gamma=1.0))
    model.learn_one({0: 0.5, 1: 0.5}, 0.1)
    state = pickle.dumps(model)
    X = np.full((rows, 2), 0.5)
    X[rows - 1, 0] = -0.5  # the last row, after rows that are fine
    with pytest.raises(ValueError, match=f"row {rows - 1}: .*NaN"):
        model.learn_many(X, [0.0] * rows)
    assert pickle.dumps(model) == state


@pytest.mark.parametrize("rows", [1, 2, 3, 5])
@pytest.mark.parametrize("make", [*LEARNERS, lambda: KRLS(nu=1e-3)])
def test_small_and_large_dataframe_batches_equal_row_by_row(make, rows):
    """A DataFrame's rows (column-major from pandas: strided rows) through the compiled step
    objects (fewer than 4 rows) or loop, as test-then-train row by row on dicts."""
    one, many = trained(make), trained(make)
    X = pd.DataFrame(unit_rows(2 * rows, 3, seed=9), columns=["x0", "x1", "x2"])
    y = np.linspace(-0.5, 0.5, 2 * rows)
    expected = []
    for x, target in zip(X.to_dict("records"), y):
        expected.append(one.predict_one(x))
        one.learn_one(x, target)
    got = [*many.predict_learn_many(X[:rows], y[:rows]),
           *many.predict_learn_many(X[rows:], y[rows:])]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert many.n_seen == one.n_seen


@pytest.mark.parametrize("make", [*LEARNERS, lambda: KRLS(nu=1e-3), KONS])
def test_learn_many_copies_nothing_and_equals_learn_one(make, monkeypatch):
    """learn_many validates the batch, then learns: the model is never copied (a deep copy
    of a large model cost 25x a step), and one row is exactly learn_one of it."""
    one, many = trained(make), trained(make)
    x = {"x0": 0.3, "x1": -0.1, "x2": 0.2}
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: pytest.fail("learn_many copied"))
    one.learn_one(x, 0.4)
    many.learn_many(pd.DataFrame([x]), [0.4])
    q = {"x0": -0.2, "x1": 0.5, "x2": 0.0}
    assert many.predict_one(q) == pytest.approx(one.predict_one(q), rel=1e-12, abs=1e-14)
    assert many.n_seen == one.n_seen


def test_bools_are_zero_one_and_key_order_does_not_matter():
    a, b = FunctionalGD(eta=0.5), FunctionalGD(eta=0.5)
    a.learn_one({"p": True, "q": 2.0}, 1.0)
    b.learn_one({"q": 2.0, "p": 1.0}, 1.0)
    assert a.predict_one({"q": 1.0, "p": False}) == b.predict_one({"p": 0.0, "q": 1.0})


def test_emerging_and_vanishing_features_are_zero():
    model = FunctionalGD(kernel=kernels.RBF(gamma=0.5), eta=0.5)
    model.learn_one({"a": 1.0}, 1.0)
    model.learn_one({"b": 2.0}, -1.0)
    # f(x) = c1 k((1,0), x) + c2 k((0,2), x) for x = (a, b, c) with c unseen
    c1 = -0.5 * losses.Squared().derivative(1.0, 0.0)
    ybar2 = c1 * np.exp(-0.5 * 5.0)
    c2 = -0.5 * losses.Squared().derivative(-1.0, np.clip(ybar2, -1, 1))
    x = np.array([0.3, -0.2, 0.7])
    expected = c1 * np.exp(-0.5 * np.sum((x - [1, 0, 0]) ** 2)) + c2 * np.exp(
        -0.5 * np.sum((x - [0, 2, 0]) ** 2)
    )
    assert model.predict_one({"c": 0.7, "b": -0.2, "a": 0.3}) == pytest.approx(expected, rel=1e-12)
    assert "c" not in model._features.columns  # prediction registers nothing


def test_clip_excess_and_point_store_ring():
    assert clip_excess(2.0, 1.0) == 1.0 and clip_excess(-0.5, 1.0) == 0.0
    store = Rows(fields=("c",), max_size=3)
    for i in range(5):
        store.append(np.array([float(i)] * (1 + i % 2)), c=float(i))
    assert store.size == 3 and store.n_added == 5
    assert sorted(store.field("c")) == [2.0, 3.0, 4.0]
    assert sorted(store.view()[:, 0]) == [2.0, 3.0, 4.0]
    fm = FeatureMap()
    vec, new = fm.encode({"a": 1, "b": 2})
    fm.add(new)
    np.testing.assert_array_equal(vec, [1, 2])
    np.testing.assert_array_equal(fm.encode({"c": 3, "a": 1})[0], [1, 0, 3])
    assert fm.width == 2


def test_binary_classifier_label_mapping_and_third_label():
    clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), eta=0.5))
    assert set(clf.predict_proba_one({"a": 1.0})) == {False, True}
    clf.learn_one({"a": 1.0}, "spam")
    assert clf.predict_proba_one({"a": 1.0}) == {"spam": 1.0}
    clf.learn_one({"a": -1.0}, "ham")
    proba = clf.predict_proba_one({"a": 1.0})
    assert set(proba) == {"spam", "ham"} and proba["spam"] > 0.5  # first label seen is +1
    assert clf.predict_one({"a": 1.0}) == "spam" and clf.predict_one({"a": -1.0}) == "ham"
    state = pickle.dumps(clf)
    with pytest.raises(ValueError, match="third"):
        clf.learn_one({"a": 0.0}, "eggs")
    assert pickle.dumps(clf) == state

    natural = BinaryClassifier(FunctionalGD(loss=losses.SquaredHinge(), eta=0.5))
    natural.learn_one({"a": 1.0}, 0)
    natural.learn_one({"a": -1.0}, 1)
    assert natural.predict_one({"a": -1.0}) == 1 and natural.predict_one({"a": 1.0}) == 0
    f = natural.learner.predict_one({"a": -1.0})
    assert natural.predict_proba_one({"a": -1.0})[1] == pytest.approx(np.clip((1 + f) / 2, 0, 1))

    pinned = BinaryClassifier(FunctionalGD(loss=losses.Logistic()), pos_label="b")
    pinned.learn_one({"a": 1.0}, "a")
    assert pinned.learner.predict_one({"a": 1.0}) < 0


def _rbf_rows(store, x, gamma):
    """The kernel row from the stored rows by explicit differences (features beyond a row's
    width are 0)."""
    X = store.view()
    width = max(X.shape[1], x.shape[0])
    X = np.pad(X, ((0, 0), (0, width - X.shape[1])))
    x = np.pad(x, (0, width - x.shape[0]))
    return np.exp(-gamma * ((X - x) ** 2).sum(axis=1))


def test_rows_rbf_row_keeps_its_norms_through_rings_keeps_widening_and_restores():
    """Rows caches the squared norms the RBF row uses: after ring overwrites, keep(), new
    columns, narrower and wider query rows and a state round trip, the row is still the
    explicit formula."""
    rng = np.random.default_rng(0)
    k = kernels.RBF(gamma=0.4)
    ring = Rows(fields=("c",), max_size=5)
    for i in range(12):
        ring.append(rng.normal(size=2 + (i % 2)) * 3.0, c=float(i))
        for x in (rng.normal(size=2), rng.normal(size=4), ring.view()[0].copy()):
            np.testing.assert_allclose(ring.kernel_row(k, x), _rbf_rows(ring, x, 0.4),
                                       rtol=0, atol=1e-12)
    grown = Rows()
    for _ in range(40):
        grown.append(rng.normal(size=3))
    grown.keep(np.arange(40) % 3 == 0)
    grown.add_columns(2)
    x = rng.normal(size=5)
    np.testing.assert_allclose(grown.kernel_row(k, x), _rbf_rows(grown, x, 0.4), atol=1e-12)
    restored = Rows.__new__(Rows)  # as okoco.persistence restores a file without the norms
    restored.__dict__.update({k: v for k, v in vars(grown).items() if not k.startswith("_sq")})
    np.testing.assert_allclose(restored.kernel_row(k, x), grown.kernel_row(k, x), atol=1e-15)
    restored.append(x)
    np.testing.assert_allclose(restored.kernel_row(k, x), _rbf_rows(restored, x, 0.4),
                               atol=1e-12)
    assert restored.kernel_row(k, x)[-1] == 1.0


def test_feature_map_vectors_are_read_only():
    """A dict's vector is handed out again for the same unchanged dict (and the learners'
    predict/learn cache is keyed on the vector object), so nobody may change it in place."""
    fm = FeatureMap()
    fm.add(fm.encode({"a": 1.0, "b": 2.0})[1])
    x = {"a": 3.0, "b": 4.0}
    for row in (x, {"b": 4.0, "a": 3.0}, {"a": 3, "b": 4.0}):  # fast and cell-by-cell paths
        vec = fm.encode(row)[0]
        with pytest.raises(ValueError, match="read-only"):
            vec[0] = 0.0
    assert fm.encode(x)[0] is fm.encode(x)[0]
    x["a"] = 5.0  # the same dict, changed: a new vector
    np.testing.assert_array_equal(fm.encode(x)[0], [5.0, 4.0])


def test_feature_map_fast_path_agrees_with_the_cell_by_cell_path():
    """Rows with the known keys in the known order take one numpy conversion; anything it
    cannot vouch for (another order, new keys, a bad value) takes the full path, with the same
    vectors and the same errors."""
    fm = FeatureMap()
    vec, new = fm.encode({"a": 1.0, "b": 2.0, "c": 3.0})
    fm.add(new)
    for x, expected in [({"a": 4.0, "b": 5.0, "c": 6.0}, [4, 5, 6]),
                        ({"c": 6.0, "a": 4.0, "b": 5.0}, [4, 5, 6]),  # another order
                        ({"c": 6.0, "a": 4.0, "b": 5.0}, [4, 5, 6]),  # that order, again
                        ({"a": 1, "b": True, "c": np.float32(0.5)}, [1, 1, 0.5]),
                        ({"a": 1.0, "c": 2.0}, [1, 0, 2]),  # a missing key
                        ({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, [1, 2, 3, 4])]:
        got, new_names = fm.encode(x)
        np.testing.assert_array_equal(got, expected)
        assert new_names == (["d"] if "d" in x else [])
    for bad, error in [({"a": float("nan"), "b": 0.0, "c": 0.0}, ValueError),
                       ({"a": 1e200, "b": 0.0, "c": 0.0}, ValueError),
                       ({"a": "1.5", "b": 0.0, "c": 0.0}, TypeError),
                       ({"a": None, "b": 0.0, "c": 0.0}, TypeError),
                       ({"a": 1.0, "b": float("inf"), "c": 0.0}, ValueError)]:
        with pytest.raises(error, match="feature 'a'|feature 'b'"):
            fm.encode(bad)
    # the last good order is still the fast one, and its vectors are fresh arrays
    first = fm.encode({"a": 7.0, "b": 8.0, "c": 9.0})[0]
    second = fm.encode({"a": 1.0, "b": 2.0, "c": 3.0})[0]
    np.testing.assert_array_equal(first, [7, 8, 9])
    np.testing.assert_array_equal(second, [1, 2, 3])
    restored = pickle.loads(pickle.dumps(fm))
    np.testing.assert_array_equal(restored.encode({"c": 1.0, "b": 2.0, "a": 3.0})[0], [3, 2, 1])


@pytest.mark.parametrize("make", [
    lambda: KONS(), lambda: FunctionalGD(), lambda: KRLS(),
    lambda: BinaryClassifier(KONS(loss=Logistic())),
    lambda: MulticlassClassifier(),
])
def test_clone_with_attributes_is_a_copy_with_its_own_lock(make):
    # river's clone(include_attributes=True) (TransformerUnion asks for it) deep-copied the
    # lock attribute by attribute: "cannot pickle '_thread.lock' object"
    model = make()
    rng = np.random.default_rng(3)
    data = [({"a": float(u), "b": float(v)}, float(np.sin(3 * u)))
            for u, v in rng.uniform(-1, 1, size=(30, 2))]
    classify = isinstance(model, (BinaryClassifier, MulticlassClassifier))
    label = (lambda y: y > 0) if classify else (lambda y: y)
    for x, y in data[:20]:
        model.learn_one(x, label(y))
    twin = model.clone(include_attributes=True)
    assert twin._lock is not model._lock
    ask = (lambda m, x: m.predict_proba_one(x)) if classify else (lambda m, x: m.predict_one(x))
    for x, _ in data[20:]:
        assert ask(twin, x) == ask(model, x)
    before = [ask(model, x) for x, _ in data[20:]]
    for x, y in data[20:]:
        twin.learn_one(x, label(y))
    assert [ask(model, x) for x, _ in data[20:]] == before  # the copy shares no state


def test_share_features_reads_another_learners_columns_before_the_first_step():
    """A learner sharing another's FeatureMap sees the columns the other registered (in the
    other's order); a learner that has learned refuses to share (its coefficients are over its
    own columns), and the refusal changes nothing."""
    first, second = KONS(), KONS()
    second.share_features(first._features)
    first.learn_one({"b": 1.0, "a": 2.0}, 1.0)
    v, new = second._features.encode({"a": 5.0, "b": 7.0}, arrays=False)
    assert not new and v.tolist() == [7.0, 5.0]  # b first, as the first learner saw it
    with pytest.raises(ValueError, match="before the first step"):
        first.share_features(FeatureMap())
    assert first._features is second._features
