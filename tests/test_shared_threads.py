"""A river pipeline shared between threads (issue 40): ``okoco.pipelines.shared`` takes one
lock around every call of the whole pipeline, so a pipeline of river's own ``StandardScaler``
(which has no lock) and an okoco learner is always in the state of some sequential order of
whole calls, and ``okoco.save`` of it writes a snapshot between two calls.

The harness is ``tests/test_save_threads.py``'s: four threads learn their own rows (each with
a feature no other thread has, so the scaler's mappings grow during the race), predict and save
every few steps; the wrapper's lock records the order of the learns; every file must load and
equal, bit for bit, the file of a fresh pipeline that learned the first ``n_seen`` of those
rows in that order, and the final pipeline the whole replay. Without the wrapper, the same race
on the bare pipeline raised "dictionary changed size during iteration" in ``okoco.save`` of
river's scaler, or saved files whose scaler had counted rows its learner had not learned (see
the report of issue 40's branch ``robust``).
"""

from __future__ import annotations

import copy

import pytest
from river import preprocessing
from test_save_threads import STEPS, THREADS, assert_sequential, learned, race, row, same_file

import okoco
from okoco import BinaryClassifier, losses
from okoco.learners import KONS
from okoco.pipelines import SharedClassifier, SharedRegressor, shared

MODELS = {
    "regressor": (lambda: preprocessing.StandardScaler() | KONS(), None),
    "classifier": (lambda: preprocessing.StandardScaler()
                   | BinaryClassifier(KONS(loss=losses.Logistic())), ("no", "yes")),
    "target-scaled": (lambda: preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | KONS(max_size=20)), None),
}


def _learner(model):
    """The okoco learner at the end of a (loaded) shared pipeline."""
    inner = model.model
    inner = getattr(inner, "regressor", inner)
    return list(inner.steps.values())[-1]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_shared_pipeline_is_saved_whole_amid_threads(name, tmp_path):
    make, labels = MODELS[name]
    model = shared(make())
    assert isinstance(model, SharedClassifier if labels else SharedRegressor)
    template = copy.deepcopy(model)
    log, files = race(model, tmp_path, labels, learner_save=False)
    assert len(log) == THREADS * STEPS
    replays = {}
    for path in files:
        loaded = okoco.load(path)  # every file loads, as the shared wrapper
        assert type(loaded) is type(model)
        n = learned(_learner(loaded))
        if name == "target-scaled":
            assert loaded.model.var.n == n  # the target scaler counted what the learner learned
        assert_sequential(path, n, replays, template, log, labels, tmp_path)
    whole = copy.deepcopy(template)
    for k, i in log:
        whole.learn_one(*row(k, i, labels))
    assert same_file(okoco.save(model, tmp_path / "final.npz"),
                     okoco.save(whole, tmp_path / "whole.npz"))


def test_a_shared_model_answers_as_the_model_it_wraps():
    plain, wrapped = MODELS["classifier"][0](), shared(MODELS["classifier"][0]())
    for i in range(30):
        x, y = row(i % 3, i, ("no", "yes"))
        plain.learn_one(x, y)
        wrapped.learn_one(x, y)
    x, _ = row(1, 99)
    assert wrapped.predict_proba_one(x) == plain.predict_proba_one(x)
    assert wrapped.predict_one(x) == plain.predict_one(x)
    clone = wrapped.clone()
    assert clone._lock is not wrapped._lock and learned(_learner(clone)) == 0
