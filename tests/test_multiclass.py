"""MulticlassClassifier: one-vs-rest over okoco learners, classes sharing inputs and points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from river import checks, datasets, multiclass

import okoco
from okoco import losses
from okoco.learners import KONS, Auto, BinaryClassifier, FunctionalGD, MulticlassClassifier


def rows(n: int, seed: int = 0, classes=("a", "b", "c")):
    """Three Gaussian blobs in 2-D, the label of each row drawn uniformly."""
    rng = np.random.default_rng(seed)
    centres = {c: rng.normal(scale=2.0, size=2) for c in classes}
    out = []
    for _ in range(n):
        label = classes[rng.integers(len(classes))]
        v = centres[label] + rng.normal(size=2)
        out.append(({"u": float(v[0]), "v": float(v[1])}, label))
    return out


LEARNERS = {
    "fgd": lambda: FunctionalGD(loss=losses.Logistic(), eta=0.5),
    "kons": lambda: KONS(loss=losses.Logistic()),  # shares the points and the kernel rows
    "kons-squared": lambda: KONS(loss=losses.Squared(), C=1.0),
    # windows shorter than the stream: the classes share one ring and forget in it
    "kons-window": lambda: KONS(loss=losses.Logistic(), max_size=12),
    "kons-window-squared": lambda: KONS(loss=losses.Squared(), C=1.0, max_size=7),
    "kons-unbounded-squared": lambda: KONS(loss=losses.Squared(), C=0.8, max_size=None),
    "kons-default": KONS,  # squared loss, curvature step, a window of 500
}
# squared loss and curvature step: the classes share one preconditioner, and a class first seen
# at sample t is the KONS that learned the target 0 on the samples before it
SHARED = {"kons-squared", "kons-window-squared", "kons-unbounded-squared", "kons-default"}


@pytest.mark.parametrize("model", [MulticlassClassifier(**p)
                                   for p in MulticlassClassifier._unit_test_params()],
                         ids=["fgd", "kons", "kons-squared-shared"])
def test_river_check_estimator(model):
    checks.check_estimator(model)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_each_class_is_the_standalone_learner_of_its_one_vs_rest_targets(name):
    # Independent reference: one plain learner per class, each fed its own +1/-1 targets from
    # the sample at which its class first appears (river's OneVsRestClassifier does the same),
    # or, for the shared squared-loss form, from the first sample (the target 0 until its
    # class appears: it knew nothing of the class).
    data = rows(60, seed=1, classes=("a", "b", "c", "d"))
    # "d" joins late, after the windows of "kons-window*" have wrapped
    data = [(x, "a" if i < 5 else ("b" if y == "d" and i < 25 else y))
            for i, (x, y) in enumerate(data)]
    model = MulticlassClassifier(LEARNERS[name]())
    assert (model._shared is not None) == (name in SHARED)
    everyone = {c: LEARNERS[name]() for c in "abcd"}
    alone: dict = {}
    clipped = 0
    for x, y in data:
        if alone:
            scores = {c: m.predict_one(x) for c, m in alone.items()}
            clipped += any(abs(s) == m.C for s, m in zip(scores.values(), alone.values()))
            np.testing.assert_allclose(model._scores(x), list(scores.values()), rtol=0,
                                       atol=1e-8)
            proba = model.predict_proba_one(x)
            assert list(proba) == list(scores)
            assert model.predict_one(x) == max(scores, key=scores.get)
            logistic = isinstance(model.learner._loss, losses.Logistic)
            p = {c: (1 / (1 + math.exp(-s)) if logistic
                     else min(max((1 + s) / 2, 0.0), 1.0)) for c, s in scores.items()}
            total = sum(p.values())
            for c in p:
                assert proba[c] == pytest.approx(p[c] / total, rel=1e-9, abs=1e-12)
        if y not in alone:
            alone[y] = everyone[y] if name in SHARED else LEARNERS[name]()
        for c, m in (everyone if name in SHARED else alone).items():
            m.learn_one(x, (1.0 if c == y else -1.0) if c in alone else 0.0)
        model.learn_one(x, y)
    assert model.classes == list(alone) and len(alone) == 4 and model.n_seen == 60
    if name in ("kons-squared", "kons-window-squared", "kons-unbounded-squared"):
        assert clipped > 5  # the projection (each class's own) was exercised


@pytest.mark.parametrize("window", [None, 9])
def test_shared_squared_form_is_kernel_ridge_regression_on_the_window(window):
    # Without clipping, squared-loss KONS with the curvature step is follow-the-leader kernel
    # ridge regression with ridge alpha / 2 on the window: class c's score is
    # k^T (K + alpha/2 I)^{-1} y_c over the last `window` samples, y_c their +1/-1 targets (0
    # before c was first seen). A dense solve, independent of the incremental inverse.
    data = rows(40, seed=7, classes=("a", "b", "c", "d"))
    data = [(x, "a" if i < 3 else ("b" if y == "d" and i < 20 else y))
            for i, (x, y) in enumerate(data)]
    gamma, alpha = 0.7, 0.3
    model = MulticlassClassifier(KONS(kernel=okoco.kernels.RBF(gamma), C=1e6, alpha=alpha,
                                      max_size=window))
    X = np.array([[x["u"], x["v"]] for x, _ in data])
    for t, (x, y) in enumerate(data):
        if t:
            lo = 0 if window is None else max(0, t - window)
            W, labels = X[lo:t], [label for _, label in data[lo:t]]
            K = np.exp(-gamma * ((W[:, None, :] - W[None, :, :]) ** 2).sum(-1))
            k = np.exp(-gamma * ((W - X[t]) ** 2).sum(-1))
            first = {c: next(i for i, (_, label) in enumerate(data) if label == c)
                     for c in model.classes}
            Y = np.array([[(1.0 if label == c else -1.0) if lo + i >= first[c] else 0.0
                           for c in model.classes] for i, label in enumerate(labels)])
            dense = k @ np.linalg.solve(K + 0.5 * alpha * np.eye(len(W)), Y)
            np.testing.assert_allclose(model._scores(x), dense, rtol=0, atol=1e-8)
        model.learn_one(x, y)
    assert model.dictionary_size == (40 if window is None else window)


def test_shared_form_holds_one_preconditioner_and_two_columns_per_class():
    model = MulticlassClassifier(KONS(max_size=20))
    for x, y in rows(50, seed=2, classes=("a", "b", "c", "d", "e")):
        model.learn_one(x, y)
    shared = model._shared
    assert model.learners == [] and model._points is None
    assert shared.coef.shape == shared.Kc.shape and shared.coef.shape[1] == 6  # 1 + 5 classes
    assert shared.coef.shape[0] >= 21  # the ring of 21 slots
    assert shared.inverse.size == model.dictionary_size == 20
    proba = model.predict_proba_one(rows(1, seed=9)[0][0])
    assert sum(proba.values()) == pytest.approx(1.0) and min(proba.values()) >= 0.0


def inverse_of(model) -> np.ndarray:
    """The shared preconditioner's inverse over the store's slots (public solve only)."""
    n = model._shared.points.n
    return model._shared.inverse.solve(np.eye(n))


def test_shared_form_refuses_an_overflowing_step_and_changes_nothing():
    model = MulticlassClassifier(KONS(kernel=okoco.kernels.Linear(), max_size=5))
    data = rows(8, seed=3)
    for x, y in data:
        model.learn_one(x, y)
    before = (list(model.classes), model.n_seen, model._shared.coef.copy(),
              model._shared.Kc.copy(), inverse_of(model))
    probe = data[0][0]
    scores = model._scores(probe)
    for label in ("a", "new class"):
        with pytest.raises(ValueError):
            model.learn_one({"u": 1e200, "v": 1e200}, label)
    after = (model.classes, model.n_seen, model._shared.coef, model._shared.Kc,
             inverse_of(model))
    assert before[:2] == after[:2]
    for a, b in zip(before[2:], after[2:]):
        assert np.array_equal(a, b)
    assert np.array_equal(model._scores(probe), scores)


def test_shared_form_words_why_a_step_is_refused():
    """The compiled check's statuses become the learner's messages (as KONS words them)."""
    model = MulticlassClassifier(KONS(kernel=okoco.kernels.Linear(), max_size=5))
    model.learn_one({"u": 1e6, "v": 0.0}, "a")
    model.learn_one({"u": 0.0, "v": 1e6}, "b")
    with pytest.raises(ValueError, match="lies in the span of the stored points"):
        model.learn_one({"u": 1e6, "v": 0.0}, "a")  # again: k(x, x) = 1e12 dwarfs the ridge
    model = MulticlassClassifier(KONS(kernel=okoco.kernels.Polynomial(degree=3), max_size=5))
    model.learn_one({"u": 1.0, "v": 0.0}, "a")
    model.learn_one({"u": 0.0, "v": 1.0}, "b")
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="not a number|overflowed"):
        model.learn_one({"u": 1e120, "v": 0.0}, "a")  # k(x, x) overflows
    assert model.n_seen == 2


def test_same_accuracy_as_rivers_one_vs_rest_on_image_segments():
    data = list(datasets.ImageSegments().take(300))
    # the unbounded KONS, whose classes share one store (classes arrive late in this stream)
    ours = MulticlassClassifier(KONS(loss=losses.Logistic(), max_size=None))
    theirs = multiclass.OneVsRestClassifier(
        BinaryClassifier(KONS(loss=losses.Logistic(), max_size=None)))
    scale = {k: max(abs(x[k]) for x, _ in data) or 1.0 for k in data[0][0]}
    agree = 0
    for x, y in data:
        x = {k: v / scale[k] for k, v in x.items()}
        agree += ours.predict_one(x) == theirs.predict_one(x) or not ours.classes
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
    assert agree == len(data)


@pytest.mark.parametrize("max_size", [None, 500, 12])
def test_kons_classes_share_one_store_of_points(max_size):
    # unbounded or windowed, the classes share one store (a ring of max_size + 1 slots)
    model = MulticlassClassifier(KONS(loss=losses.Logistic(), max_size=max_size))
    for x, y in rows(30):
        model.learn_one(x, y)
    stores = {id(m._store.points) for m in model.learners}
    assert stores == {id(model._points)}
    assert model.dictionary_size == min(30, max_size or 30)
    assert model._points.rows.n == min(30, (max_size or 30) + 1)
    assert len({id(m._kernel) for m in model.learners}) == 1
    assert len({id(m._features) for m in model.learners}) == 1


@pytest.mark.parametrize("name", ["fgd", "kons", "kons-window", "kons-window-squared",
                                  "kons-unbounded-squared"])
def test_save_load_round_trip_continues_identically(name, tmp_path):
    data = rows(50, seed=3)
    model = MulticlassClassifier(LEARNERS[name]())
    for x, y in data[:25]:
        model.learn_one(x, y)
    loaded = okoco.load(model.save(tmp_path / "mc.npz"))
    assert type(loaded) is MulticlassClassifier and loaded.classes == model.classes
    for x, y in data[25:]:  # (KONS's inverses are rebuilt on load: equal to rounding)
        assert loaded.predict_proba_one(x) == pytest.approx(model.predict_proba_one(x),
                                                            rel=1e-9, abs=1e-12)
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    assert loaded.predict_one(data[0][0]) == model.predict_one(data[0][0])


@pytest.mark.parametrize("learner", [FunctionalGD(loss=losses.Logistic()), None],
                         ids=["fgd", "default-shared"])
def test_bad_labels_and_parameters_raise_and_change_nothing(learner):
    model = MulticlassClassifier(learner)
    model.learn_one({"u": 1.0}, "a")
    scores = model._scores({"u": 0.5})
    with pytest.raises(TypeError, match="hashable"):
        model.learn_one({"u": 1.0}, ["a"])
    with pytest.raises(ValueError, match="not equal to itself"):
        model.learn_one({"u": 1.0}, float("nan"))
    with pytest.raises(ValueError):
        model.learn_one({"u": float("nan")}, "b")
    assert model.classes == ["a"] and model.n_seen == 1
    assert np.array_equal(model._scores({"u": 0.5}), scores)
    with pytest.raises(TypeError, match="learner"):
        MulticlassClassifier(learner="kons")


@pytest.mark.parametrize("make", [lambda: FunctionalGD(loss=losses.Logistic(), eta=0.5),
                                  lambda: None], ids=["fgd", "default-shared"])
def test_many_rows_from_arrays_lists_and_dataframes(make):
    pd = pytest.importorskip("pandas")
    data = rows(40, seed=4)
    X = pd.DataFrame([x for x, _ in data])
    y = pd.Series([label for _, label in data])
    model = MulticlassClassifier(make())
    model.learn_many(X, y)
    one = MulticlassClassifier(make())
    for x, label in data:
        one.learn_one(x, label)
    assert model.predict_many(X).tolist() == [one.predict_one(x) for x, _ in data]
    proba = model.predict_proba_many(X)
    assert list(proba.columns) == one.classes
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_default_learner_is_squared_loss_kons_sharing_one_preconditioner():
    model = MulticlassClassifier()
    assert type(model.learner) is KONS and repr(model.learner) == repr(KONS())
    assert model._shared is not None and model._points is None
    assert okoco.MulticlassClassifier is MulticlassClassifier
    # other learners and losses keep one preconditioner per class
    # (Auto() shares one per expert: tests/test_multiclass_auto.py)
    for learner in (KONS(loss=losses.Logistic()), KONS(eta=0.5), Auto(loss=losses.Logistic()),
                    FunctionalGD()):
        assert MulticlassClassifier(learner)._shared is None


def test_predict_many_takes_a_list_of_dicts():
    # a list has an .index method: it must not be taken for a pandas object
    data = rows(20, seed=5)
    X = [x for x, _ in data]
    regressor = KONS()
    binary = BinaryClassifier(FunctionalGD(loss=losses.Logistic()))
    multi = MulticlassClassifier(FunctionalGD(loss=losses.Logistic()))
    for x, y in data:
        regressor.learn_one(x, 1.0 if y == "a" else -1.0)
        binary.learn_one(x, y == "a")
        multi.learn_one(x, y)
    np.testing.assert_allclose(regressor.predict_many(X), [regressor.predict_one(x) for x in X],
                               rtol=1e-10)
    assert binary.predict_many(X).tolist() == [binary.predict_one(x) for x in X]
    assert multi.predict_many(X).tolist() == [multi.predict_one(x) for x in X]


def test_the_other_start_a_new_class_as_the_kons_that_learned_minus_one_before_it():
    # the start measured against the default (benchmarks/bench_multiclass.py at commit f31db3a):
    # a class first
    # seen at t is the KONS that learned -1 on every sample before it (a copy of column 0)
    data = rows(45, seed=6, classes=("a", "b", "c"))
    data = [(x, "a" if i < 4 else ("b" if y == "c" and i < 30 else y))
            for i, (x, y) in enumerate(data)]
    model = MulticlassClassifier(KONS(C=0.7, max_size=10))
    model._shared._start = "rest"
    everyone = {c: KONS(C=0.7, max_size=10) for c in "abc"}
    for x, y in data:
        if model.classes:
            expected = [everyone[c].predict_one(x) for c in model.classes]
            np.testing.assert_allclose(model._scores(x), expected, rtol=0, atol=1e-8)
        for c, m in everyone.items():
            m.learn_one(x, 1.0 if c == y else -1.0)
        model.learn_one(x, y)
    assert model.classes == ["a", "b", "c"]
