"""Files of older okoco file formats load and predict as the models that wrote them did.

The files are in ``tests/data/format-v3`` to ``format-v10``, written by
``tests/data/make_format_files.py`` with the okoco of each format (its docstring names the
commits); ``expected.json`` beside them holds what each saved model predicted at three probes,
before and after one more learning step.
"""

import json
import os

import numpy as np
import pytest

import okoco
from okoco import kernels, persistence

DATA = os.path.join(os.path.dirname(__file__), "data")


def _files(version: int) -> list[tuple[int, str]]:
    folder = os.path.join(DATA, f"format-v{version}")
    return [(version, name[:-4]) for name in sorted(os.listdir(folder)) if name.endswith(".npz")]


CASES = [case for version in range(3, 11) for case in _files(version)]


def _label(name: str, y: float):
    if name == "binary":
        return "yes" if y > 0 else "no"
    if name == "multiclass":
        return "lo" if y < -0.3 else ("mid" if y < 0.3 else "hi")
    return y


def _predictions(name: str, model, probes: list) -> list:
    if name == "binary":
        return [model.learner.predict_one(x) for x in probes]
    if name == "multiclass":
        return [model.predict_proba_one(x) for x in probes]
    return [model.predict_one(x) for x in probes]


def _close(got: list, want: list, tol: float = 1e-12) -> None:
    if want and isinstance(want[0], dict):  # class probabilities
        assert [sorted(g) for g in got] == [sorted(w) for w in want]
        got = [g[k] for g in got for k in sorted(g)]
        want = [w[k] for w in want for k in sorted(w)]
    # 1e-12: a loaded model's kernel rows may be computed on another code path than the saving
    # okoco's (cached norms, the compiled core), rounding differently
    assert got == pytest.approx(want, rel=tol, abs=tol)


@pytest.mark.parametrize(("version", "name"), CASES, ids=[f"v{v}-{n}" for v, n in CASES])
def test_older_files_load_and_predict_as_saved(version, name, tmp_path):
    folder = os.path.join(DATA, f"format-v{version}")
    with open(os.path.join(folder, "expected.json")) as f:
        reference = json.load(f)
    path = os.path.join(folder, f"{name}.npz")
    assert persistence.read_metadata(path)["format_version"] == version
    model = okoco.load(path)
    probes = reference["probes"]
    # (since format 10 the file holds the model and a load rebuilds its factorizations: the
    # same model to rounding, 1e-9)
    _close(_predictions(name, model, probes), reference["expected"][name],
           1e-12 if version < 10 else 1e-9)
    # and it saves in today's format, which loads to the same model
    again = okoco.load(model.save(tmp_path / "again.npz"))
    assert persistence.read_metadata(tmp_path / "again.npz")["format_version"] == \
        persistence.FORMAT_VERSION
    # (the same model: a load rebuilds the factorizations from it, equal to rounding)
    _close(_predictions(name, again, probes), _predictions(name, model, probes), 1e-9)
    for m in (model, again):
        m.learn_one({"a": 0.1, "d": 0.5}, _label(name, 0.3))
        # 1e-10: the step itself may round otherwise than the saving okoco's (since format 9
        # the window inverse's changes are applied 16 at a time, in another order)
        _close(_predictions(name, m, probes), reference["expected"][name + "+step"],
               1e-10 if version < 10 else 1e-9)


def test_krls_state_with_beta_and_p_is_migrated_to_w_and_m():
    """A KRLS saved before w and M (state ``_beta = G alpha~``, ``_P = (A^T A)^{-1}``) is
    rebuilt into the current layout by the migrations and predicts as the model it came from:
    checked against ``w = L^{-1} beta`` and ``M = L^{-1} P L^{-T}`` built here densely."""
    from okoco.learners import KRLS
    from okoco.linalg import PackedSymmetric
    from okoco.persistence import _migrations

    rng = np.random.default_rng(4)
    model = KRLS(kernel=kernels.RBF(gamma=0.7), nu=0.01, alpha=1e-3)
    rows = [{"x": float(v)} for v in rng.uniform(-3, 3, 200)]
    for x in rows:
        model.learn_one(x, float(np.sinc(x["x"])))
    L = model._ald.cholesky.factor()
    m = model.dictionary_size
    state = dict(vars(model))
    w, M = state.pop("_w"), state.pop("_M")
    state["_beta"] = np.concatenate([L @ w[:m], np.zeros(3)])  # the old layout, densely
    state["_P"] = PackedSymmetric.from_matrix(L @ M.matrix() @ L.T)
    del state["noise_scale_sum"]  # and from before the predictive variance
    upgraded = _migrations._migrate_state(KRLS, state)
    assert set(upgraded) == set(vars(model))
    np.testing.assert_allclose(upgraded["_w"][:m], np.linalg.solve(L, L @ w[:m]), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(upgraded["_M"].matrix(), M.matrix(), rtol=1e-9, atol=1e-12)
    assert upgraded["noise_scale_sum"] == float(model.n_seen)
    old = KRLS.__new__(KRLS)
    old.__dict__.update(upgraded)
    for x in rows[:20]:
        assert old.predict_one(x) == pytest.approx(model.predict_one(x), abs=1e-10)


# -- format 5: stable public field names ----------------------------------------------------------


def _trained() -> dict:
    """A trained object of every class ``okoco.save`` accepts, by class path."""
    from okoco import BinaryClassifier, losses
    from okoco import learners as L
    from okoco.dictionary import SQUEAK, INKEstimate, NystromKRR
    from okoco.regret import NystromKernelERM, RegretTracker

    rng = np.random.default_rng(0)
    rows = [{"a": float(rng.normal()), "b": float(rng.normal())} for _ in range(30)]
    for i in range(0, 30, 4):
        rows[i]["c"] = float(rng.normal())
    ys = [float(np.tanh(x["a"] - x["b"])) for x in rows]
    X = rng.normal(size=(40, 2))
    out = {}
    for model in (L.KONS(max_size=10), L.SketchedKONS(seed=0), L.FunctionalGD(budget=8),
                  L.KRLS(max_size=6), L.PROSNKONS(seed=1), L.CONKONS(seed=2), L.Auto(),
                  BinaryClassifier(L.KONS(loss=losses.Logistic())),
                  L.MulticlassClassifier(L.KONS(loss=losses.Logistic()))):
        for x, y in zip(rows, ys):
            if isinstance(model, BinaryClassifier):
                y = y > 0
            elif isinstance(model, L.MulticlassClassifier):
                y = "lo" if y < -0.3 else ("mid" if y < 0.3 else "hi")
            model.learn_one(x, y)
        out[type(model)] = model
    for model in (SQUEAK(kernels.RBF(1.0), seed=0), INKEstimate(kernels.RBF(1.0), seed=0)):
        model.update_many(X)
        out[type(model)] = model
    out[NystromKRR] = NystromKRR(kernels.RBF(1.0), alpha=0.5).fit(X, X[:, 0], indices=[0, 3, 7])
    tracker = RegretTracker(losses.Squared(), NystromKernelERM(kernels.RBF(1.0), losses.Squared(),
                                                               n_components=6),
                            checkpoints=[10, 20])
    for x, y in zip(rows[:25], ys):
        tracker.update(x, y, 0.5 * y)
    out[RegretTracker] = tracker
    return {f"{cls.__module__}.{cls.__qualname__}": model for cls, model in out.items()}


TRAINED = _trained()


def test_the_table_covers_every_class_okoco_save_accepts():
    assert sorted(TRAINED) == sorted(persistence.registered(learners=True))


def _objects(tree, where="state"):
    """Every saved object of a metadata tree: (where, class path, its saved field names)."""
    if isinstance(tree, list):
        for i, item in enumerate(tree):
            yield from _objects(item, f"{where}[{i}]")
    elif isinstance(tree, dict):
        if isinstance(tree.get("__obj__"), str):
            yield where, tree["__obj__"], set(tree["attrs"])
            for key, sub in tree["attrs"].items():
                yield from _objects(sub, f"{where}.{key}")
        else:
            for key, sub in tree.items():
                yield from _objects(sub, f"{where}[{key!r}]")


def _declared_names(cls) -> tuple[set, set]:
    """The names a ``cls`` object must and may save (the optional fields may be absent)."""
    fields = [f for f in persistence.declared_state(cls).values() if not f.cache]
    return {f.name for f in fields if not f.optional}, {f.name for f in fields}


@pytest.mark.parametrize("path", sorted(TRAINED))
def test_a_file_holds_exactly_the_declared_public_field_names(path, tmp_path):
    """Format 5 names every field by its declared public name: every object in the file
    saves exactly its class's declared fields (no cache, nothing undeclared), and no field
    name in the file starts with an underscore, so renaming a private attribute cannot
    change the format."""
    from okoco.persistence._registry import _resolve

    model = TRAINED[path]
    meta = persistence.read_metadata(okoco.save(model, tmp_path / "m.npz"))
    assert meta["format_version"] == persistence.FORMAT_VERSION == 13
    # nested objects sit in the state or, when a parameter (BinaryClassifier's learner), there
    objects = [("state", path, set(meta["state"])), *_objects(meta["state"]),
               *_objects(meta["params"], "params")]
    for where, cls_path, names in objects:
        must, may = _declared_names(_resolve(cls_path))
        assert must <= names <= may, (where, cls_path, names ^ must)
        assert not [n for n in names if n.startswith("_")], (where, names)
    assert not [n for n in meta["params"] if n.startswith("_")]


@pytest.mark.parametrize("path", sorted(TRAINED))
def test_every_saved_class_round_trips_to_the_same_file(path, tmp_path):
    """Saving a loaded object writes the same document and the same arrays: nothing is lost
    or renamed on the way through the declarations."""
    model = TRAINED[path]
    first = okoco.save(model, tmp_path / "a.npz")
    again = okoco.load(first)
    assert type(again) is type(model)
    second = okoco.save(again, tmp_path / "b.npz")
    assert persistence.read_metadata(first) == persistence.read_metadata(second)
    with np.load(first) as a, np.load(second) as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            assert a[name].dtype == b[name].dtype
            np.testing.assert_array_equal(a[name], b[name])


@pytest.mark.parametrize(("version", "name"), CASES, ids=[f"v{v}-{n}" for v, n in CASES])
def test_an_older_file_saves_again_under_public_names(version, name, tmp_path):
    model = okoco.load(os.path.join(DATA, f"format-v{version}", f"{name}.npz"))
    meta = persistence.read_metadata(model.save(tmp_path / "m.npz"))
    names = set(meta["state"]) | {n for part in ("state", "params")
                                  for _, _, ns in _objects(meta[part]) for n in ns}
    assert not [n for n in names if n.startswith("_")]


def test_a_private_field_name_is_refused_by_the_declaration():
    class Private:
        _saved_state = {"_x": "int", "y": "int as _y"}

    with pytest.raises(TypeError, match=r"Private\._saved_state saves _x, _y under a private"):
        persistence.declared_state(Private)


@pytest.mark.parametrize("version", [5, 6, 7, 8])
def test_version_4_names_are_not_read_from_a_version_5_file(tmp_path, version):
    """The old (attribute) names are the migrations' business only: in a file of format 5 or
    later they are fields the class does not declare."""
    path = os.path.join(DATA, "format-v4", "kons.npz")
    meta = persistence.read_metadata(path)
    assert "_chol" in meta["state"] and "cholesky" not in meta["state"]
    meta["format_version"] = version
    target = tmp_path / "renumbered.npz"
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
    np.savez(target, __okoco__=np.array(json.dumps(meta)), **arrays)
    with pytest.raises(ValueError, match=r"is not a field of KONS"):
        okoco.load(target)


def test_a_format_4_replay_checkpoint_resumes_as_saved():
    """A checkpoint of format 4 (``tests/data/make_format_checkpoint.py``: a river pipeline of
    okoco's scalers around a windowed KONS, okoco's MAE and R2) restores into a fresh,
    identically built run through the old field names: same metrics, and the same predictions
    of the probes scaled as the scaler then scaled them (by the statistics as they are; it now
    counts a row it predicts in)."""
    from okoco import metrics, preprocessing
    from okoco.learners import KONS

    folder = os.path.join(DATA, "format-v4-checkpoint")
    with open(os.path.join(folder, "expected.json")) as f:
        reference = json.load(f)
    path = os.path.join(folder, "checkpoint.npz")
    assert persistence.read_metadata(path)["format_version"] == 4
    model = preprocessing.StandardScaler() | preprocessing.TargetStandardScaler(
        KONS(kernel=kernels.RBF(0.7), C=2.0, max_size=20))
    metric_list = [metrics.MAE(), metrics.R2()]
    progress = persistence.load_checkpoint(path, model, metric_list)
    assert progress == {"t": 40}
    assert [m.get() for m in metric_list] == reference["metrics"]
    scaler, rest = model["StandardScaler"], model["TargetStandardScaler"]

    def as_then(x: dict) -> dict:
        return {i: (xi - scaler.means[i]) / v**0.5 if (v := scaler.vars[i]) else 0.0
                for i, xi in x.items()}

    assert [rest.predict_one(as_then(x)) for x in reference["probes"]] == pytest.approx(
        reference["predictions"], rel=1e-12, abs=1e-12)
