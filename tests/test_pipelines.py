"""okoco.save / okoco.load of river pipelines holding okoco learners, without pickle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from river import compose, datasets, preprocessing

import okoco
from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS


def trained(model, stream, k):
    for x, y in stream.take(k) if hasattr(stream, "take") else list(stream)[:k]:
        model.learn_one(x, y)
    return model


def regression_models():
    return [
        preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | KONS(C=3.0)),
        preprocessing.StandardScaler() | FunctionalGD(C=3.0, eta=0.2, budget=50),
        preprocessing.TargetStandardScaler(
            preprocessing.StandardScaler() | SketchedKONS(kernel=kernels.RBF(0.5), C=3.0,
                                                          beta=1.0, seed=3)),
        preprocessing.StandardScaler() | KRLS(C=3.0, max_size=40),
    ]


@pytest.mark.parametrize("model", regression_models(), ids=lambda m: str(m)[:40])
def test_pipeline_round_trip_predicts_and_learns_identically(model, tmp_path):
    stream = list(datasets.TrumpApproval().take(160))
    trained(model, stream, 120)
    again = okoco.load(okoco.save(model, tmp_path / "m.npz"))
    assert type(again) is type(model)
    for x, y in stream[120:]:
        assert again.predict_one(x) == model.predict_one(x)
        again.learn_one(x, y)
        model.learn_one(x, y)


def test_classifier_pipeline_round_trip(tmp_path):
    model = preprocessing.StandardScaler() | BinaryClassifier(
        FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))
    stream = list(datasets.Phishing().take(200))
    trained(model, stream, 150)
    again = okoco.load(okoco.save(model, tmp_path / "c.npz", compress=True))
    assert list(again.steps) == list(model.steps)
    for x, _ in stream[150:]:
        assert again.predict_proba_one(x) == model.predict_proba_one(x)


def test_named_steps_keep_their_names(tmp_path):
    model = compose.Pipeline(("scale", preprocessing.StandardScaler()),
                             ("kons", KONS(C=2.0)))
    model.learn_one({"a": 1.0}, 0.5)
    assert list(okoco.load(okoco.save(model, tmp_path / "n.npz")).steps) == ["scale", "kons"]


def test_bare_learners_still_go_through_the_learner_format(tmp_path):
    model = trained(KONS(C=2.0), datasets.TrumpApproval(), 30)
    path = okoco.save(model, tmp_path / "k.npz")
    assert okoco.persistence.read_metadata(path)["class"] == "KONS"
    assert okoco.load(path).predict_one({"x": 1.0}) == model.predict_one({"x": 1.0})


def test_the_file_holds_no_pickle(tmp_path):
    model = trained(preprocessing.StandardScaler() | KONS(C=3.0), datasets.TrumpApproval(), 20)
    path = okoco.save(model, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as archive:  # would raise on any object array
        assert all(archive[name].dtype != object for name in archive.files)


@pytest.mark.parametrize("step", [preprocessing.MinMaxScaler(), compose.FuncTransformer(abs)])
def test_steps_outside_the_allow_list_are_refused_by_name(step, tmp_path):
    model = step | FunctionalGD()
    with pytest.raises(TypeError, match=r"cannot save model\["):
        okoco.save(model, tmp_path / "x.npz")
    assert not (tmp_path / "x.npz").exists()


def test_a_non_model_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="not an okoco learner|allow-list|not dict"):
        okoco.save({"a": 1}, tmp_path / "x.npz")


def test_tampered_files_are_refused(tmp_path):
    model = trained(preprocessing.StandardScaler() | KONS(C=3.0), datasets.TrumpApproval(), 10)
    path = okoco.save(model, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["__okoco__"]))
    step = meta["model"]["__pipeline__"][0][1]
    step["__obj__"] = "os.system"
    arrays["__okoco__"] = np.array(json.dumps(meta))
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match="never loads"):
        okoco.load(bad)
    meta = json.loads(str(np.load(path)["__okoco__"]))
    meta["model"]["__pipeline__"][0][1]["attrs"]["extra"] = 1
    arrays["__okoco__"] = np.array(json.dumps(meta))
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match=r"does not match .*unexpected \['extra'\]"):
        okoco.load(bad)
