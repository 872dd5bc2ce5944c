"""Checkpoints of replays whose samples hold text features (issue 43): the command line's
pipeline encodes them with river's ``OneHotEncoder`` and ``FeatureHasher`` in a
``TransformerUnion`` (:func:`okoco.preprocessing.encode_text`); a checkpoint saves that union
and its encoders' categories, and a resumed run equals the uninterrupted one. Every test
failed before: ``save_checkpoint`` refused the union ("TransformerUnion objects are not in
okoco's allow-list") and the command line refused ``--checkpoint`` with a text column."""

import csv
import json

import numpy as np
import pytest
from load_fuzz import read_archive, write_archive
from river import metrics
from typer.testing import CliRunner

import okoco
from okoco import kernels, persistence
from okoco.cli import app
from okoco.evaluate import replay
from okoco.experiment import build_model, load_dataset


def houses(path, n=300, seed=0):
    """Prices of about 500k from a surface, a city (5 values: one-hot) and a street (200
    values: hashed); a few cells empty."""
    rng = np.random.default_rng(seed)
    cities = {"Paris": 2.0, "Lyon": 1.3, "Nice": 1.5, "Lille": 0.9, "Nantes": 1.1}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["m2", "city", "street", "price"])
        for i in range(n):
            city = list(cities)[rng.integers(len(cities))]
            m2 = rng.uniform(20, 200)
            price = cities[city] * 3000 * m2 + rng.normal(0, 20000)
            row = [f"{m2:.1f}", city, f"street {rng.integers(200)}", f"{price:.0f}"]
            if i % 17 == 5:
                row[1] = ""
            w.writerow(row)
    return str(path)


def _cli_model(ds, learner="kons"):
    """The command line's model for ``ds`` (its text columns encoded)."""
    text = ds.info["text_columns"]
    model, _ = build_model(learner, ds.task, loss=None, kernel=kernels.RBF(), C=3.0, params={},
                           seed=0, scale=True, scale_target=True, text_columns=text)
    return model


@pytest.fixture
def dataset(tmp_path):
    ds = load_dataset(houses(tmp_path / "houses.csv"), target="price", data_params={}, seed=0,
                      shuffle=False)
    assert set(ds.info["text_columns"]) == {"city", "street"}  # one-hot and hashed
    return ds


def test_the_cli_pipeline_of_text_columns_resumes_as_the_whole_run(dataset, tmp_path):
    ckpt = tmp_path / "run.ckpt.npz"
    whole = replay(_cli_model(dataset), dataset, metrics=metrics.MAE(), checkpoints=[100, 300])
    first = replay(_cli_model(dataset), dataset, metrics=metrics.MAE(), checkpoints=[100, 300],
                   max_samples=120, checkpoint=ckpt, checkpoint_every=40)
    assert first.n_samples == 120
    model = _cli_model(dataset)
    resumed = replay(model, dataset, metrics=metrics.MAE(), checkpoints=[100, 300],
                     checkpoint=ckpt, resume=True)
    for column in ("MAE", "cumulative_loss"):
        assert resumed.final[column] == whole.final[column]  # bit for bit
    union = model.regressor["TransformerUnion"]
    encoder = union.transformers["Pipeline1"]["OneHotEncoder"]
    assert set(encoder.values["city"]) == {"Paris", "Lyon", "Nice", "Lille", "Nantes"}


def test_a_checkpoint_restores_the_encoders_categories_in_place(dataset, tmp_path):
    rows = list(dataset)
    model = _cli_model(dataset)
    for x, y in rows[:50]:
        model.learn_one(x, y)
    path = persistence.save_checkpoint(tmp_path / "c.npz", model, [], {"n": 50})
    again = _cli_model(dataset)
    assert persistence.load_checkpoint(path, again, []) == {"n": 50}
    for x, y in rows[50:80]:
        model.learn_one(x, y)
        again.learn_one(x, y)
    probe = {"m2": 80.0, "city": "Lille", "street": "street 7"}
    assert again.predict_one(probe) == model.predict_one(probe)
    assert again.predict_one({"m2": 80.0, "city": "Nowhere"}) == model.predict_one(
        {"m2": 80.0, "city": "Nowhere"})  # a category first met now: read as 0 by both


def test_a_checkpoint_of_other_encoders_is_refused_before_anything_changes(dataset, tmp_path):
    from okoco.learners import KONS
    from okoco.preprocessing import TargetStandardScaler, encode_text

    rows = list(dataset)
    model = _cli_model(dataset)
    for x, y in rows[:30]:
        model.learn_one(x, y)
    path = persistence.save_checkpoint(tmp_path / "c.npz", model, [], {})
    other = TargetStandardScaler(encode_text(["city", "street"]) | KONS())  # nothing hashed
    for x, y in rows[100:110]:
        other.learn_one(x, y)
    probe = {"m2": 80.0, "city": "Lille", "street": "street 7"}
    before = other.predict_one(probe)
    with pytest.raises(ValueError, match=r"union at model\.regressor\['TransformerUnion'\] "
                                         r"has parts \['Pipeline', 'Pipeline1', 'Pipeline2'\], "
                                         r"the model has \['Pipeline', 'Pipeline1'\]"):
        persistence.load_checkpoint(path, other, [])
    assert other.predict_one(probe) == before


def test_the_command_line_checkpoints_and_resumes_a_csv_with_text_columns(tmp_path):
    path = houses(tmp_path / "houses.csv")
    base = ["replay", path, "-t", "price", "-l", "kons", "--checkpoint",
            str(tmp_path / "c.ckpt.npz")]
    first = CliRunner().invoke(app, [*base, "-n", "120", "--checkpoint-every", "40", "-q"])
    assert first.exit_code == 0, first.output
    resumed = CliRunner().invoke(app, [*base, "--resume", "--json"])
    assert resumed.exit_code == 0, resumed.output
    whole = CliRunner().invoke(app, ["replay", path, "-t", "price", "-l", "kons", "--json"])
    assert json.loads(resumed.stdout)["metrics"] == json.loads(whole.stdout)["metrics"]


def test_okoco_save_keeps_a_pipeline_of_text_encoders(dataset, tmp_path):
    """``okoco.save`` refused the union before ("TransformerUnion objects are not in okoco's
    allow-list"); now it saves it, and a file whose encoders disagree with themselves is
    refused."""
    rows = list(dataset)
    model = _cli_model(dataset)
    for x, y in rows[:60]:
        model.learn_one(x, y)
    path = okoco.save(model, tmp_path / "model.npz")
    again = okoco.load(path)
    for x, y in rows[60:90]:
        model.learn_one(x, y)
        again.learn_one(x, y)
    for x, _ in rows[90:100]:
        assert again.predict_one(x) == model.predict_one(x)

    def edited(change):
        meta, arrays = read_archive(path)
        union = dict(meta["model"]["regressor"]["__pipeline__"])["TransformerUnion"]
        change(dict(union["__union__"]))
        write_archive(tmp_path / "edited.npz", meta, arrays)
        return tmp_path / "edited.npz"

    def one_hot(parts):  # a category's zero feature set to 3
        zeros = dict(parts["Pipeline1"]["__pipeline__"])["OneHotEncoder"]["attrs"]["_zero_dict"]
        zeros[next(iter(zeros))] = 3

    def hashed(parts):  # the hash's seed no longer its parameter's
        dict(parts["Pipeline2"]["__pipeline__"])["FeatureHasher"]["attrs"]["_seed"] += 1

    with pytest.raises(ValueError, match=r"OneHotEncoder\) breaks its invariant zero_features"):
        okoco.load(edited(one_hot))
    with pytest.raises(ValueError, match=r"FeatureHasher\) breaks its invariant seed is None"):
        okoco.load(edited(hashed))
