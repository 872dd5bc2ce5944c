"""okoco.persistence: learners saved and loaded bit for bit, no pickle; replay checkpoints."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from river import metrics, preprocessing
from typer.testing import CliRunner

import okoco
from okoco import BinaryClassifier, datasets, kernels, losses, persistence
from okoco import metrics as okm
from okoco import preprocessing as okp
from okoco.cli import app
from okoco.evaluate import ReplayResult, replay
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

REGRESSORS = {
    "kons": lambda: KONS(kernel=kernels.RBF(0.7), C=2.0, alpha=0.5),
    "kons-linear": lambda: KONS(kernel=kernels.Linear(), eta="sqrt"),
    "kons-algebra": lambda: KONS(kernel=kernels.Sum(0.5 * kernels.RBF(0.7) * kernels.Laplacian(1.0),
                                                    kernels.Linear(), normalize=True),
                                 eta="hessian"),
    "sketched": lambda: SketchedKONS(kernel=kernels.Laplacian(0.5), beta=2.0, p_min=0.1, seed=3),
    "sketched-gen": lambda: SketchedKONS(beta=1.0, seed=np.random.default_rng(5)),
    "fgd-budget": lambda: FunctionalGD(kernel=kernels.Polynomial(2, 0.5, 1.0, normalize=True),
                                       eta=0.3, lam=0.01, budget=7),
    "fgd": lambda: FunctionalGD(C=1.5),
    "krls": lambda: KRLS(nu=0.05, C=2.0),
    "krls-max": lambda: KRLS(nu=1e-4, max_size=5, alpha=1e-6),
}
CLASSIFIERS = {
    "bin-kons": lambda: BinaryClassifier(KONS(loss=losses.Logistic())),
    "bin-sketched": lambda: BinaryClassifier(SketchedKONS(loss=losses.SquaredHinge(), seed=1,
                                                          beta=1.0), pos_label="b"),
    "bin-fgd": lambda: BinaryClassifier(FunctionalGD(loss=losses.Logistic(), budget=5)),
    "bin-krls": lambda: BinaryClassifier(KRLS(nu=0.1)),
}


def stream(n, seed, labels=None):
    """Rows whose features appear and vanish (a, b always; c sometimes; d late)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.uniform(-1, 1))}
        if i % 3 == 0:
            x["c"] = float(rng.normal())
        if i > n // 2 and i % 2:
            x["d"] = float(rng.normal())
        y = float(np.tanh(x["a"] - x["b"]))
        rows.append((x, y if labels is None else labels[int(y > 0)]))
    return rows


PROBES = [{"a": 0.3, "b": -0.2}, {"a": -1.0, "c": 2.0}, {"d": 0.5, "zz": 1.0}, {}]


def predictions(model):
    return [model.predict_one(x) for x in PROBES]


def same(values):
    """What a loaded model answers: its saved model's answers to 1e-9 (a model file holds the
    model, and a load rebuilds its factorizations from it: the same model up to rounding);
    labels (a classifier's ``predict_one``) exactly."""
    items = values.values() if isinstance(values, dict) else \
        values if isinstance(values, list) else [values]
    if all(_is_number(v) for v in items):
        return pytest.approx(values, rel=1e-9, abs=1e-9)
    return values


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def continue_together(saved, loaded, rows, classifier):
    for x, y in rows:
        if classifier:
            assert loaded.predict_proba_one(x) == same(saved.predict_proba_one(x))
        assert loaded.predict_one(x) == same(saved.predict_one(x))
        saved.learn_one(x, y)
        loaded.learn_one(x, y)
    assert predictions(loaded) == same(predictions(saved))


@pytest.mark.parametrize("name", sorted(REGRESSORS) + sorted(CLASSIFIERS))
def test_round_trip_is_the_same_model_and_continues_as_it(name, tmp_path):
    classifier = name in CLASSIFIERS
    model = (CLASSIFIERS if classifier else REGRESSORS)[name]()
    rows = stream(40, seed=0, labels=("a", "b") if classifier else None)
    for x, y in rows[:20]:
        model.learn_one(x, y)
    path = model.save(tmp_path / "model.npz")
    assert path == tmp_path / "model.npz" and os.listdir(tmp_path) == ["model.npz"]
    loaded = okoco.load(path)
    assert type(loaded) is type(model)
    assert predictions(loaded) == same(predictions(model))
    core, lcore = (model.learner, loaded.learner) if classifier else (model, loaded)
    assert lcore.n_seen == core.n_seen == 20
    assert lcore.dictionary_size == core.dictionary_size
    assert repr(lcore) == repr(core)
    X = np.random.default_rng(1).normal(size=(5, 2))
    np.testing.assert_allclose(lcore.predict_many(X), core.predict_many(X), rtol=1e-9, atol=1e-9)
    continue_together(model, loaded, rows[20:], classifier)


def test_shared_objects_stay_shared_and_arrays_are_owned(tmp_path):
    model = SketchedKONS(kernel=kernels.RBF(0.5), seed=0)
    for x, y in stream(30, seed=2):
        model.learn_one(x, y)
    loaded = okoco.load(model.save(tmp_path / "m.npz"))
    # one generator draws both the coins of KORS and anything else the learner samples
    assert loaded._kors._rng is loaded._rng
    assert loaded._rng.bit_generator.state == model._rng.bit_generator.state
    assert loaded.kernel is loaded._kernel
    assert loaded._chol._L.flags.writeable and loaded._chol._L.base is None
    # the whole buffers are kept, spare capacity included
    assert loaded._chol._L.shape == model._chol._L.shape
    assert loaded._store.data.shape == model._store.data.shape


def test_metadata_documents_the_format(tmp_path):
    model = KONS(kernel=kernels.Polynomial(3, 0.5, 2.0), C=2.5)
    model.learn_one({"x": 1.0}, 0.5)
    path = model.save(tmp_path / "m.npz")
    meta = persistence.read_metadata(path)
    assert meta["format"] == "okoco-model" and meta["format_version"] == 13
    assert meta["okoco_version"] == okoco.__version__
    assert meta["class"] == "KONS"  # its stable name, not its module (format 10)
    assert meta["params"]["C"] == 2.5
    assert meta["params"]["kernel"]["__kernel__"] == "Polynomial"
    assert meta["params"]["kernel"]["params"] == {"degree": 3, "gamma": 0.5, "coef0": 2.0,
                                                  "normalize": False}
    with np.load(path, allow_pickle=False) as archive:
        assert all(archive[name].dtype != object for name in archive.files)
        assert json.loads(str(archive["__okoco__"])) == meta
    # saving the loaded model writes the same document
    again = okoco.load(path).save(tmp_path / "again.npz")
    assert persistence.read_metadata(again) == meta


def test_compressed_file_loads_the_same(tmp_path):
    model = FunctionalGD()
    for x, y in stream(50, seed=1):
        model.learn_one(x, y)
    plain = model.save(tmp_path / "p.npz")
    packed = model.save(tmp_path / "c.npz", compress=True)
    assert packed.stat().st_size < plain.stat().st_size
    assert predictions(okoco.load(packed)) == predictions(model)


def rewrite(path, edit):
    """Rewrite an okoco file with its metadata edited by ``edit(meta)``."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
        meta = json.loads(str(archive["__okoco__"]))
    edit(meta)
    np.savez(path, __okoco__=np.array(json.dumps(meta)), **arrays)


def saved_kons(tmp_path):
    model = KONS()
    model.learn_one({"a": 1.0}, 0.5)
    return model.save(tmp_path / "m.npz")


V1 = os.path.join(os.path.dirname(__file__), "data", "format-v1")


@pytest.mark.parametrize("name", ["kons", "sketched", "fgd", "krls", "binary"])
def test_version_1_files_load_and_predict_as_saved(name, tmp_path):
    """Files of okoco 0.1.0 (``tests/data/format-v1/make.py``): renamed parameters are mapped
    (``gamma`` -> ``p_min``, ``ridge`` -> ``alpha``) and the loaded model predicts what the
    saved one did, before and after one more learning step: to 1e-12, since the RBF row is now
    computed from cached norms (okoco.kernels.rbf_row), not by scipy's cdist."""
    with open(os.path.join(V1, "expected.json")) as f:
        reference = json.load(f)
    assert persistence.read_metadata(os.path.join(V1, f"{name}.npz"))["format_version"] == 1
    model = okoco.load(os.path.join(V1, f"{name}.npz"))
    learner = model.learner if name == "binary" else model
    assert [learner.predict_one(x) for x in reference["probes"]] == pytest.approx(
        reference["expected"][name], rel=1e-12, abs=1e-12)
    model.learn_one({"a": 0.1, "d": 0.5}, "no" if name == "binary" else 0.3)
    assert [learner.predict_one(x) for x in reference["probes"]] == pytest.approx(
        reference["expected"][name + "+step"], rel=1e-12, abs=1e-12)
    if name == "sketched":
        assert model.p_min == 0.1 and model._kors.p_min == 0.1
    if name == "krls":
        assert model.alpha == 1e-4 and model._ald.alpha == 1e-4
    again = okoco.load(model.save(tmp_path / "now.npz"))  # and it saves in today's version
    assert persistence.read_metadata(tmp_path / "now.npz")["format_version"] == \
        persistence.FORMAT_VERSION
    assert [learner.predict_one(x) for x in reference["probes"]] == same(
        [(again.learner if name == "binary" else again).predict_one(x)
         for x in reference["probes"]])


def test_unknown_version_is_refused_naming_both_versions(tmp_path):
    path = saved_kons(tmp_path)
    rewrite(path, lambda meta: meta.update(format_version=99))
    with pytest.raises(ValueError, match=r"version 99.*reads format version 1"):
        okoco.load(path)


def test_files_that_are_not_okoco_files(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not an okoco file"):
        okoco.load(text)
    other = tmp_path / "other.npz"
    np.savez(other, x=np.arange(3))
    with pytest.raises(ValueError, match="not an okoco file"):
        okoco.load(other)
    single = tmp_path / "array.npy"
    np.save(single, np.arange(3))
    with pytest.raises(ValueError, match="not an okoco file"):
        okoco.load(single)
    with pytest.raises(FileNotFoundError):
        okoco.load(tmp_path / "missing.npz")


def test_object_arrays_are_refused(tmp_path):
    path = saved_kons(tmp_path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["a0"] = np.array([{"payload": 1}], dtype=object)  # would be unpickled
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="object arrays"):
        okoco.load(path)


@pytest.mark.parametrize("entry", [
    {"__obj__": "subprocess.Popen", "id": 999, "attrs": {}},
    {"__obj__": "okoco.learners.kons.KONS.__init__", "id": 999, "attrs": {}},
    {"__kernel__": "Sigmoid", "id": 999, "params": {}},
    {"__loss__": "Hinge", "id": 999},
    {"__generator__": "os", "id": 999, "state": {}},
    {"__defaultdict__": "eval", "items": []},
])
def test_the_metadata_cannot_name_other_classes_or_functions(tmp_path, entry):
    path = saved_kons(tmp_path)
    rewrite(path, lambda meta: meta["state"].update(log_det=entry))
    with pytest.raises((ValueError, KeyError)):
        okoco.load(path)


def test_state_from_another_layout_is_refused(tmp_path):
    path = saved_kons(tmp_path)
    rewrite(path, lambda meta: meta["state"].pop("rg_sum"))
    with pytest.raises(ValueError, match=r"state\.rg_sum \(KONS\) is missing"):
        okoco.load(path)


def test_invalid_saved_parameters_are_caught_by_the_constructor(tmp_path):
    path = saved_kons(tmp_path)
    rewrite(path, lambda meta: meta["params"].update(alpha=-1.0))
    with pytest.raises(ValueError, match="alpha"):
        okoco.load(path)


class MyKernel(kernels.RBF):
    pass


class MyLoss:
    def value(self, y, z):
        return (y - z) ** 2

    def derivative(self, y, z):
        return 2 * (z - y)

    def curvature(self, C, y_max=None):
        return 0.1

    def lipschitz(self, C, y_max=None):
        return 1.0


@pytest.mark.parametrize(("model", "match"), [
    (lambda: KONS(kernel=MyKernel(1.0)), r"KONS\.kernel.*MyKernel.*not one of okoco's kernels"),
    (lambda: FunctionalGD(loss=MyLoss()), r"FunctionalGD\.loss.*MyLoss.*not one of okoco's loss"),
    (lambda: FunctionalGD(eta=lambda t: 1 / t), r"FunctionalGD\.eta.*function"),
    (lambda: BinaryClassifier(FunctionalGD(kernel=MyKernel(), loss=losses.Logistic())),
     r"BinaryClassifier\.learner\.kernel"),
])
def test_what_cannot_be_saved_raises_and_writes_nothing(tmp_path, model, match):
    with pytest.raises(TypeError, match=match):
        model().save(tmp_path / "m.npz")
    assert os.listdir(tmp_path) == []


def test_only_learners_are_saved(tmp_path):
    class MyKONS(KONS):
        pass

    with pytest.raises(TypeError, match="saves okoco learners"):
        persistence.save(MyKONS(), tmp_path / "m.npz")
    with pytest.raises(TypeError, match="saves okoco learners"):
        persistence.save(preprocessing.StandardScaler(), tmp_path / "m.npz")


def test_a_failed_save_keeps_the_previous_file(tmp_path):
    path = saved_kons(tmp_path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        persistence.save(KONS(kernel=MyKernel()), path)
    assert path.read_bytes() == before


# -- replay checkpoints ------------------------------------------------------------------------


class Interrupted(Exception):
    pass


class Failing:
    """A dataset that dies after ``k`` samples (same name and length as the original)."""

    def __init__(self, ds, k):
        self.ds, self.k, self.name = ds, k, ds.name
        self.task, self.d = ds.task, ds.d

    def __len__(self):
        return len(self.ds)

    def __iter__(self):
        for i, row in enumerate(self.ds):
            if i == self.k:
                raise Interrupted(f"killed after {i} samples")
            yield row


def without_timing(result: ReplayResult) -> dict:
    d = result.to_dict()
    for key in ("us_per_sample", "elapsed_s"):
        d["columns"].pop(key)
        d["final"].pop(key)
    return d


REPLAY_MODELS = {
    "sketched-pipeline": (
        "friedman",
        lambda: preprocessing.TargetStandardScaler(
            preprocessing.StandardScaler() | SketchedKONS(C=3.0, beta=2.0, seed=1)),
        lambda: [metrics.MAE(), metrics.R2()],
    ),
    "krls": ("sinc", lambda: KRLS(nu=0.01, C=3.0), lambda: [metrics.RMSE()]),
    "binary-fgd": (
        "phishing",
        lambda: preprocessing.StandardScaler() | BinaryClassifier(
            FunctionalGD(loss=losses.Logistic(), eta=0.5, budget=100)),
        lambda: [metrics.Accuracy(), metrics.F1(), metrics.LogLoss(), metrics.ROCAUC()],
    ),
    "okoco-scalers": (
        "friedman",
        lambda: okp.TargetStandardScaler(
            okp.StandardScaler() | SketchedKONS(C=3.0, beta=2.0, seed=1)),
        lambda: [okm.MAE(), okm.MSE(), okm.RMSE(), okm.R2()],
    ),
    "okoco-binary": (
        "phishing",
        lambda: okp.StandardScaler() | BinaryClassifier(
            FunctionalGD(loss=losses.Logistic(), eta=0.5, budget=100)),
        lambda: [okm.Accuracy(), okm.F1(), okm.LogLoss()],
    ),
}

#: the same runs built from river's classes, as checkpoints written before okoco had its own
RIVER_TWINS = {
    "okoco-scalers": (
        lambda: preprocessing.TargetStandardScaler(
            preprocessing.StandardScaler() | SketchedKONS(C=3.0, beta=2.0, seed=1)),
        lambda: [metrics.MAE(), metrics.MSE(), metrics.RMSE(), metrics.R2()],
    ),
    "okoco-binary": (
        lambda: preprocessing.StandardScaler() | BinaryClassifier(
            FunctionalGD(loss=losses.Logistic(), eta=0.5, budget=100)),
        lambda: [metrics.Accuracy(), metrics.F1(), metrics.LogLoss()],
    ),
}


def dataset(name):
    if name == "phishing":
        return datasets.load(name)
    return datasets.load(name, n=300, seed=0)


@pytest.mark.parametrize("name", sorted(REPLAY_MODELS))
def test_interrupted_replay_resumes_to_the_uninterrupted_result(tmp_path, name):
    data, make_model, make_metrics = REPLAY_MODELS[name]
    ds = dataset(data)
    n = min(len(ds), 300)
    kwargs = {"checkpoints": [1, 40, 100, 175, 260], "max_samples": n}
    full = replay(make_model(), ds, metrics=make_metrics(), **kwargs)
    ckpt = tmp_path / "run.ckpt.npz"
    with pytest.raises(Interrupted):
        replay(make_model(), Failing(ds, 137), metrics=make_metrics(), checkpoint=ckpt,
               checkpoint_every=25, **kwargs)
    assert persistence.read_metadata(ckpt)["progress"]["t"] == 125
    assert [p.name for p in tmp_path.iterdir()] == ["run.ckpt.npz"]  # no temporary files left
    model, scores = make_model(), make_metrics()
    resumed = replay(model, ds, metrics=scores, checkpoint=ckpt, checkpoint_every=25,
                     resume=True, **kwargs)
    assert without_timing(resumed) == without_timing(full)
    assert scores[0].get() == full.final[resumed.metrics[0]]  # the caller's metric objects too
    # the final checkpoint holds the finished run: resuming again learns nothing more
    assert persistence.read_metadata(ckpt)["progress"]["t"] == n
    again = replay(make_model(), ds, metrics=make_metrics(), checkpoint=ckpt, resume=True,
                   **kwargs)
    assert without_timing(again) == without_timing(full)


class _RiverUntil(okp.StandardScaler):
    """okoco's scaler predicting as river's does (a row by the statistics before it) until it
    has learned ``until`` rows: the run of a checkpoint written with river's scaler after
    ``until`` rows and resumed into okoco's."""

    def __init__(self, until: int) -> None:
        super().__init__()
        self._until = until

    def transform_one(self, x: dict) -> dict:
        if self._rows() >= self._until:
            return super().transform_one(x)
        return {i: (xi - self.means[i]) / v**0.5 if (v := self.vars[i]) else 0.0
                for i, xi in x.items()}

    def _rows(self) -> int:
        return max(self.counts.values(), default=0)


def _with_scaler(model, scaler):
    """``model`` (okoco's scalers in front of a learner) with ``scaler`` for its feature scaler."""
    pipeline = getattr(model, "regressor", model)
    pipeline.steps["StandardScaler"] = scaler
    return model


@pytest.mark.parametrize("name", sorted(RIVER_TWINS))
def test_checkpoint_of_rivers_scalers_and_metrics_resumes_into_okocos(tmp_path, name):
    """A checkpoint written when the CLI used river's StandardScaler, TargetStandardScaler and
    metrics resumes into okoco's (the same statistics): the run ends as one that scaled as
    river's scaler does up to the checkpoint and as okoco's after it."""
    data, make_model, make_metrics = REPLAY_MODELS[name]
    make_river_model, make_river_metrics = RIVER_TWINS[name]
    ds = dataset(data)
    kwargs = {"checkpoints": [1, 40, 100, 175, 260], "max_samples": 300}
    mixed = replay(_with_scaler(make_model(), _RiverUntil(125)), ds, metrics=make_metrics(),
                   **kwargs)
    river = replay(make_river_model(), ds, metrics=make_river_metrics(), **kwargs)
    before = [i for i, t in enumerate(river.columns["t"]) if t <= 125]
    ours = without_timing(mixed)["columns"]
    for key, column in without_timing(river)["columns"].items():  # river's numbers till then
        assert [column[i] for i in before] == [ours[key][i] for i in before], key
    ckpt = tmp_path / "old.ckpt.npz"
    with pytest.raises(Interrupted):
        replay(make_river_model(), Failing(ds, 137), metrics=make_river_metrics(),
               checkpoint=ckpt, checkpoint_every=25, **kwargs)
    text = json.dumps(persistence.read_metadata(ckpt))
    assert "river.preprocessing.scale.StandardScaler" in text and "okoco.metrics" not in text
    resumed = replay(make_model(), ds, metrics=make_metrics(), checkpoint=ckpt,
                     checkpoint_every=25, resume=True, **kwargs)
    assert without_timing(resumed) == without_timing(mixed)


def test_checkpoint_with_another_metric_is_refused(tmp_path):
    ds = dataset("friedman")
    ckpt = tmp_path / "c.npz"
    model = okp.TargetStandardScaler(okp.StandardScaler() | FunctionalGD(C=3.0))
    with pytest.raises(Interrupted):
        replay(model, Failing(ds, 60), metrics=[metrics.MSE()], checkpoint=ckpt,
               checkpoint_every=25, max_samples=100)
    meta = persistence.read_metadata(ckpt)
    # the fingerprint names the metric "MSE"; pretend it said "MAE" to reach the state check
    with pytest.raises(ValueError, match="MSE at metrics\\[0\\], the run a MAE"):
        persistence.load_checkpoint(ckpt, model, [okm.MAE()])
    assert meta["progress"]["t"] == 50


def test_okoco_save_load_pipeline_with_okoco_scalers(tmp_path):
    rng = np.random.default_rng(0)
    model = okp.TargetStandardScaler(okp.StandardScaler() | KONS(C=3.0))
    stream = [({"a": float(rng.normal()), "b": float(rng.normal(5, 2))}, float(rng.normal(40, 5)))
              for _ in range(80)]
    for x, y in stream[:60]:
        model.learn_one(x, y)
    again = okoco.load(okoco.save(model, tmp_path / "m.npz"))
    assert type(again) is okp.TargetStandardScaler
    assert type(again.regressor["StandardScaler"]) is okp.StandardScaler
    assert again.func.__self__ is again  # the bound methods are rebuilt around the new object
    for x, y in stream[60:]:
        assert again.predict_one(x) == model.predict_one(x)
        again.learn_one(x, y)
        model.learn_one(x, y)
    meta = persistence.read_metadata(tmp_path / "m.npz")
    assert meta["model"]["__wrapper__"] == "okoco.preprocessing.TargetStandardScaler"


def test_resumed_learner_equals_the_uninterrupted_learner(tmp_path):
    ds = dataset("friedman")
    full_model = KONS(C=3.0)
    replay(full_model, ds, metrics=metrics.MAE())
    ckpt = tmp_path / "k.npz"
    with pytest.raises(Interrupted):
        replay(KONS(C=3.0), Failing(ds, 61), metrics=metrics.MAE(), checkpoint=ckpt,
               checkpoint_every=20)
    resumed = KONS(C=3.0)
    replay(resumed, ds, metrics=metrics.MAE(), checkpoint=ckpt, resume=True)
    assert resumed.n_seen == full_model.n_seen == len(ds)
    assert predictions(resumed) == predictions(full_model)
    np.testing.assert_array_equal(resumed.coins, full_model.coins)


def test_resume_without_a_checkpoint_starts_from_the_beginning(tmp_path):
    ds = dataset("sinc")
    full = replay(FunctionalGD(), ds, metrics=metrics.MAE())
    fresh = replay(FunctionalGD(), ds, metrics=metrics.MAE(), checkpoint=tmp_path / "c.npz",
                   resume=True)
    assert without_timing(fresh) == without_timing(full)
    assert (tmp_path / "c.npz").exists()


def test_a_checkpoint_from_another_run_is_refused_and_changes_nothing(tmp_path):
    ds = dataset("sinc")
    ckpt = tmp_path / "c.npz"
    replay(FunctionalGD(), ds, metrics=metrics.MAE(), checkpoint=ckpt)
    model, mae = FunctionalGD(), metrics.MAE()
    with pytest.raises(ValueError, match=r"another run \(metrics MAE, not MSE\)"):
        replay(model, ds, metrics=metrics.MSE(), checkpoint=ckpt, resume=True)
    with pytest.raises(ValueError, match=r"another run \(learner FunctionalGD.*, not KONS"):
        replay(KONS(), ds, metrics=mae, checkpoint=ckpt, resume=True)
    assert model.n_seen == 0 and mae.get() == 0.0
    with pytest.raises(ValueError, match=r"another run \(dataset sinc, not friedman\)"):
        replay(model, dataset("friedman"), metrics=mae, checkpoint=ckpt, resume=True)
    with pytest.raises(ValueError, match="replay checkpoint"):
        okoco.load(ckpt)


def test_checkpoint_arguments_are_checked(tmp_path):
    ds = dataset("sinc")
    with pytest.raises(ValueError, match="need a checkpoint path"):
        replay(FunctionalGD(), ds, metrics=metrics.MAE(), checkpoint_every=10)
    with pytest.raises(ValueError, match="checkpoint_every"):
        replay(FunctionalGD(), ds, metrics=metrics.MAE(), checkpoint=tmp_path / "c.npz",
               checkpoint_every=0)
    with pytest.raises(TypeError, match=r"metrics\[0\]: object objects are not in"):
        persistence.check_checkpointable(FunctionalGD(), [object()])
    with pytest.raises(TypeError, match=r"model\.eta"):
        replay(FunctionalGD(eta=lambda t: 0.1), ds, metrics=metrics.MAE(),
               checkpoint=tmp_path / "c.npz")
    assert not (tmp_path / "c.npz").exists()


def test_cli_resume_equals_an_uninterrupted_cli_run(tmp_path, monkeypatch):
    runner = CliRunner()
    args = ["replay", "friedman", "-d", "n=240", "-l", "sketched-kons", "-s", "2", "-q",
            "--checkpoints", "7"]
    full = runner.invoke(app, [*args, "-o", str(tmp_path / "full.json")])
    assert full.exit_code == 0, full.stderr

    import okoco.cli as cli

    real = cli.load_dataset
    monkeypatch.setattr(cli, "load_dataset", lambda *a, **k: Failing(real(*a, **k), 150))
    out = str(tmp_path / "part.json")
    dead = runner.invoke(app, [*args, "-o", out, "--checkpoint-every", "40"])
    assert isinstance(dead.exception, Interrupted)
    assert not os.path.exists(out)
    assert persistence.read_metadata(tmp_path / "part.ckpt.npz")["progress"]["t"] == 120
    monkeypatch.setattr(cli, "load_dataset", real)
    resumed = runner.invoke(app, [*args, "-o", out, "--checkpoint-every", "40", "--resume"])
    assert resumed.exit_code == 0, resumed.stderr
    assert "resuming from" not in resumed.stderr  # -q
    a = ReplayResult.from_json(tmp_path / "full.json")
    b = ReplayResult.from_json(out)
    assert without_timing(a) == without_timing(b)


def test_cli_checkpoint_errors():
    runner = CliRunner()
    result = runner.invoke(app, ["replay", "sinc", "-d", "n=20", "--resume"])
    assert result.exit_code == 2 and "need --checkpoint PATH" in result.stderr
    result = runner.invoke(app, ["replay", "sinc", "-d", "n=20", "--checkpoint-every", "0",
                                 "--checkpoint", "c.npz"])
    assert result.exit_code == 2 and "--checkpoint-every must be >= 1" in result.stderr


# -- damaged files: one ValueError naming the file and what is wrong ---------------------------


def _cut(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_compression_method(path):
    # the zip central directory's compression method of every entry set to an unknown one (99)
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        data[at + 10:at + 12] = (99).to_bytes(2, "little")
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))


def _damage_npy_header(path):
    # an array's .npy header (a Python dict literal) cut mid-token, CRC kept consistent
    import zipfile

    with zipfile.ZipFile(path) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    name = next(n for n in entries if n != "__okoco__.npy")
    entries[name] = entries[name][:10] + b"{'descr': '<f8', 'fortran_order': Fa\n"
    with zipfile.ZipFile(path, "w") as z:
        for n, data in entries.items():
            z.writestr(n, data)


DAMAGES = {
    "truncated": _cut,
    "unknown compression": _flip_compression_method,
    "npy header": _damage_npy_header,
    "no params": lambda p: rewrite(p, lambda meta: meta.pop("params")),
    "state a list": lambda p: rewrite(p, lambda meta: meta.update(state=[1, 2])),
    "missing array": lambda p: rewrite(
        p, lambda meta: meta["state"].update(log_det={"__array__": "a99", "id": 98})),
    "dangling reference": lambda p: rewrite(
        p, lambda meta: meta["state"].update(log_det={"__ref__": 12345})),
    "tuple not a list": lambda p: rewrite(
        p, lambda meta: meta["state"].update(log_det={"__tuple__": 3})),
    "wrong parameter type": lambda p: rewrite(
        p, lambda meta: meta["params"].update(alpha={"__tuple__": [1, 2]})),
    "unknown parameter": lambda p: rewrite(p, lambda meta: meta["params"].update(nope=1)),
    "class not a string": lambda p: rewrite(p, lambda meta: meta.update({"class": [1]})),
    "padded array too short": lambda p: rewrite(
        p, lambda meta: meta["state"].update(log_det={"__padded__": "a0", "id": 97, "rows": 0})),
    "metadata not a dict": lambda p: rewrite(p, lambda meta: meta["state"].update(
        _store={"__obj__": "okoco._input.Rows", "id": 77, "attrs": 5})),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_file_raises_one_value_error_naming_the_file(tmp_path, damage):
    path = saved_kons(tmp_path)
    DAMAGES[damage](path)
    with pytest.raises(ValueError) as info:
        okoco.load(path)
    assert type(info.value) is ValueError
    assert str(path) in str(info.value)


@pytest.mark.parametrize("damage", ["truncated", "no params", "state a list"])
def test_a_damaged_checkpoint_raises_one_value_error_naming_the_file(tmp_path, damage):
    data = datasets.load("sinc", n=60, seed=0)
    path = tmp_path / "run.ckpt.npz"
    replay(FunctionalGD(), data, metrics=metrics.MAE(), checkpoint=path)
    if damage == "no params":
        rewrite(path, lambda meta: meta.pop("metrics"))
    elif damage == "state a list":
        rewrite(path, lambda meta: meta.update(model=[1, 2]))
    else:
        DAMAGES[damage](path)
    model, metric = FunctionalGD(), metrics.MAE()
    with pytest.raises(ValueError) as info:
        replay(model, data, metrics=metric, checkpoint=path, resume=True)
    assert type(info.value) is ValueError
    assert str(path) in str(info.value)
    assert model.n_seen == 0


# -- small files: the spare capacity of the buffers is not written ------------------------------


def _arrays(obj, seen=None):
    """Every numpy array reachable from ``obj`` through attributes, lists and dicts."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, (list, tuple)):
        items = obj
    elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("okoco"):
        items = vars(obj).values()
    else:
        return []
    return [a for item in items for a in _arrays(item, seen)]


def test_spare_capacity_is_not_written_and_comes_back_as_zeros(tmp_path):
    model = KONS(max_size=None)  # the unbounded learner's growing buffers
    for x, y in stream(300, seed=4):  # buffers of capacity 512 hold 300 atoms
        model.learn_one(x, y)
    held = sum(a.nbytes for a in _arrays(model))
    path = model.save(tmp_path / "m.npz")
    assert path.stat().st_size < 0.45 * held
    loaded = okoco.load(path)
    # (the factor is rebuilt from the saved matrix: the same to rounding, see test_rebuild.py)
    np.testing.assert_allclose(loaded._chol.factor(), model._chol.factor(), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(loaded._g, model._g, rtol=1e-10, atol=1e-14)  # g = L^{-1} D K c
    before = [a for a in _arrays(model) if a is not model._chol._L and a is not model._g]
    after = [a for a in _arrays(loaded) if a is not loaded._chol._L and a is not loaded._g]
    assert [(a.shape, a.dtype) for a in after] == [(a.shape, a.dtype) for a in before]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(before, after))  # -0.0 stays -0.0
    assert all(a.flags.writeable and a.flags.c_contiguous for a in after)


def test_checkpoint_size_grows_with_the_samples_not_the_capacity(tmp_path):
    data = datasets.load("sinc", n=300, seed=0)
    path = tmp_path / "run.ckpt.npz"
    model = KONS(max_size=None)  # the unbounded learner's growing buffers
    replay(model, data, metrics=metrics.MAE(), checkpoint=path)
    held = sum(a.nbytes for a in _arrays(model))
    assert path.stat().st_size < 0.45 * held


# -- the registry: how persistence knows the learners without importing them -------------------


def test_learners_register_themselves_and_a_registered_subclass_round_trips(tmp_path):
    import okoco.dictionary
    import okoco.learners

    public = [getattr(okoco.learners, name) for name in okoco.learners.__all__
              if name != "KernelLearner"]
    import okoco.regret

    whole = [okoco.dictionary.SQUEAK, okoco.dictionary.INKEstimate, okoco.dictionary.NystromKRR,
             okoco.regret.RegretTracker]
    assert {f"{c.__module__}.{c.__qualname__}" for c in public + whole} == set(
        persistence.registered(learners=True))
    assert "okoco.linalg.IncrementalCholesky" in persistence.registered()

    class TracedKONS(KONS):
        pass

    with pytest.raises(TypeError, match="saves okoco learners"):
        persistence.save(TracedKONS(), tmp_path / "m.npz")
    persistence.register(TracedKONS, learner=True)
    try:
        model = TracedKONS(C=2.0)
        for x, y in stream(15, seed=5):
            model.learn_one(x, y)
        loaded = okoco.load(model.save(tmp_path / "m.npz"))
        assert type(loaded) is TracedKONS and predictions(loaded) == same(predictions(model))
    finally:
        path = f"{TracedKONS.__module__}.{TracedKONS.__qualname__}"
        persistence._LEARNERS.pop(path)
        persistence._OBJECTS.pop(path)
    with pytest.raises(TypeError, match="classes"):
        persistence.register("okoco.learners.kons.KONS")
