"""okoco.persistence: state by declaration, crafted and damaged files, and where saves land.

Every malformed file is one ``ValueError`` naming the file (and the field, where there is one);
what a file may allocate is bounded by its own size, checked before allocating.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest
from river import preprocessing

import okoco
from okoco import kernels, persistence
from okoco.learners import KONS, KRLS, Auto, FunctionalGD, SketchedKONS


def rewrite(path, edit, extra=None, compress=False):
    """Rewrite an okoco file with its metadata edited by ``edit(meta)`` (and ``extra`` arrays)."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
        meta = json.loads(str(archive["__okoco__"]))
    edit(meta)
    arrays.update(extra or {})
    saver = np.savez_compressed if compress else np.savez
    saver(path, __okoco__=np.array(json.dumps(meta)), **arrays)


def learned(model, n=30):
    rng = np.random.default_rng(0)
    for i in range(n):
        model.learn_one({"a": float(rng.normal()), "b": float(rng.normal())}, float(np.sin(i)))
    return model


@pytest.fixture
def kons_file(tmp_path):
    return learned(KONS()).save(tmp_path / "m.npz")


def refused(path, *match):
    with pytest.raises(ValueError) as info:
        okoco.load(path)
    assert type(info.value) is ValueError
    text = str(info.value)
    assert str(path) in text and len(text) < 1000, text
    for m in match:
        assert m in text, text
    return text


def find(meta, key):
    """The JSON node of the ``__padded__``/``__array__`` entry under ``meta['state'][key]``."""
    return meta["state"][key]


# -- the findings of the probe -------------------------------------------------------------------


def test_a_padded_entry_asking_for_a_billion_rows_is_refused_before_allocating(kons_file):
    rewrite(kons_file, lambda meta: find(meta, "whitened_gradient").update(rows=1_000_000_000))
    tracemalloc.start()
    try:
        refused(kons_file, "state.whitened_gradient", "more than a file of this size")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50e6


def test_deeply_nested_json_is_a_value_error(kons_file):
    deep = 0
    for _ in range(900):
        deep = [deep]
    rewrite(kons_file, lambda meta: meta["state"].update(log_det=deep))
    refused(kons_file, "nested")


def test_an_unreferenced_compressed_member_is_refused_without_reading_it(kons_file):
    bomb = np.zeros(300_000_000 // 8)  # 300 MB of zeros, ~300 kB compressed
    rewrite(kons_file, lambda meta: None, extra={"a99": bomb}, compress=True)
    del bomb
    assert os.path.getsize(kons_file) < 2_000_000
    tracemalloc.start()
    try:
        refused(kons_file)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50e6


def test_a_referenced_compressed_bomb_is_refused_before_decompressing(kons_file):
    def edit(meta):
        meta["state"]["whitened_gradient"] = {"__array__": "a99", "id": 9999}

    rewrite(kons_file, edit, extra={"a99": np.zeros(300_000_000 // 8)}, compress=True)
    tracemalloc.start()
    try:
        refused(kons_file, "state.whitened_gradient")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50e6


@pytest.mark.parametrize("scalar", [
    {"__np__": "V8", "v": 1}, {"__np__": "|V16", "v": [1, 2]}, {"__np__": "int8", "v": 1000},
    {"__np__": "<M8[s]", "v": 3}, {"__np__": "f8" * 100, "v": 1.0},
])
def test_numpy_scalars_other_than_numbers_are_refused(kons_file, scalar):
    rewrite(kons_file, lambda meta: meta["state"].update(log_det=scalar))
    refused(kons_file)


@pytest.mark.parametrize(("field", "value", "words"), [
    ("n_seen", "abc", ["state.n_seen", "int"]),
    ("n_seen", -3, ["state.n_seen", "below"]),
    ("log_det", None, ["state.log_det", "float"]),
    ("warned_unscaled", 1, ["state.warned_unscaled", "bool"]),
    ("rng", 5, ["state.rng", "random generator"]),
])
def test_a_scalar_of_the_wrong_kind_is_refused_naming_the_field(kons_file, field, value, words):
    rewrite(kons_file, lambda meta: meta["state"].update({field: value}))
    refused(kons_file, *words)


def test_an_array_of_the_wrong_dtype_is_refused(kons_file):
    with np.load(kons_file) as archive:
        meta = json.loads(str(archive["__okoco__"]))
        name = meta["state"]["whitened_gradient"]["__padded__"]
        as_int = archive[name].astype(np.int64)
    rewrite(kons_file, lambda meta: None, extra={name: as_int})
    refused(kons_file, "state.whitened_gradient", "int64", "float64")


def test_an_array_with_fewer_rows_than_its_rule_is_refused(kons_file):
    # the Cholesky factor's matrix of m = 30 atoms needs cap (cap + 1) / 2 packed entries
    def edit(meta):
        meta["state"]["cholesky"]["attrs"]["matrix"]["rows"] = 1

    with np.load(kons_file) as archive:
        meta = json.loads(str(archive["__okoco__"]))
        name = meta["state"]["cholesky"]["attrs"]["matrix"]["__padded__"]
    rewrite(kons_file, edit, extra={name: np.zeros(1)})
    refused(kons_file, "state.cholesky.matrix", "capacity * (capacity + 1) // 2")


def test_a_size_beyond_its_capacity_is_refused(kons_file):
    rewrite(kons_file, lambda meta: meta["state"]["cholesky"]["attrs"].update(size=10**6))
    refused(kons_file, "state.cholesky.size", "above capacity")


def test_an_undeclared_field_is_refused_naming_it(kons_file):
    rewrite(kons_file, lambda meta: meta["state"]["cholesky"]["attrs"].update(payload=[1, 2]))
    refused(kons_file, "state.cholesky.'payload'", "not a field of IncrementalCholesky")


def test_format_version_true_is_not_version_1(kons_file):
    rewrite(kons_file, lambda meta: meta.update(format_version=True))
    refused(kons_file, "format version True")


def test_a_huge_version_string_makes_a_short_message(kons_file):
    rewrite(kons_file, lambda meta: meta.update(format_version="9" * 10_000_000))
    text = refused(kons_file, "format version")
    assert len(text) < 1000


def test_an_unexpected_archive_member_is_refused(kons_file):
    with zipfile.ZipFile(kons_file, "a") as z:
        z.writestr("notes.txt", b"hello")
    refused(kons_file, "unexpected")


def test_byte_flips_of_a_compressed_pipeline_are_value_errors_or_load(tmp_path):
    model = preprocessing.StandardScaler() | FunctionalGD(budget=20)
    learned(model, 60)
    path = okoco.save(model, tmp_path / "p.npz", compress=True)
    data = path.read_bytes()
    rng = np.random.default_rng(1)
    outcomes = {"loaded": 0, "refused": 0}
    for at in rng.integers(0, len(data), 300):
        flipped = bytearray(data)
        flipped[at] ^= 0xFF
        path.write_bytes(bytes(flipped))
        try:
            okoco.load(path)
            outcomes["loaded"] += 1
        except ValueError as error:
            assert type(error) is ValueError and str(path) in str(error)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100, outcomes


# -- declarations ---------------------------------------------------------------------------------


def test_every_registered_class_declares_its_state():
    import okoco.learners  # noqa: F401  (registers)
    import okoco.metrics  # noqa: F401
    import okoco.preprocessing  # noqa: F401

    undeclared = [path for path, cls in persistence._OBJECTS.items()
                  if persistence.declared_state(cls) is None]
    assert undeclared == []


@pytest.mark.parametrize("make", [KONS, SketchedKONS, KRLS, Auto,
                                  lambda: FunctionalGD(budget=5)])
def test_a_trained_learners_attributes_are_exactly_its_declared_fields(make):
    """Every attribute of every object of a trained learner is declared (a new attribute
    without a declaration fails here, naming it, before it fails a user's save)."""
    model = learned(make(), 40)
    model.predict_one({"a": 0.1})
    seen, stack = set(), [model]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        declared = persistence.declared_state(type(obj))
        assert declared is not None, type(obj)
        assert set(vars(obj)) <= set(declared), (type(obj).__name__,
                                                 set(vars(obj)) - set(declared))
        for value in vars(obj).values():
            items = value if isinstance(value, list) else [value]
            stack.extend(v for v in items if type(v).__module__.startswith("okoco.")
                         and hasattr(v, "__dict__") and not type(v).__module__.endswith(
                             ("kernels", "losses")))


def test_state_the_class_does_not_declare_cannot_be_saved(tmp_path):
    model = learned(KONS(), 5)
    model._novelty = np.zeros(3)  # what a new attribute without a declaration looks like
    with pytest.raises(TypeError, match=r"KONS holds state its _saved_state does not declare: "
                                        r"'_novelty'"):
        model.save(tmp_path / "m.npz")
    assert os.listdir(tmp_path) == []


def test_the_file_holds_the_declared_fields_and_no_caches(tmp_path):
    model = learned(KONS(), 5)
    model.predict_one({"a": 0.3})  # fills the prediction cache
    meta = persistence.read_metadata(model.save(tmp_path / "m.npz"))
    fields = persistence.declared_state(KONS)
    assert set(meta["state"]) == {f.name for f in fields.values() if not f.cache}
    assert "_cache" not in meta["state"] and "_last" not in meta["state"]["features"]["attrs"]


def test_a_declaration_with_a_stable_name_saves_under_it(tmp_path):
    class Renamed(KONS):
        # the attribute _g was renamed _half: the file keeps calling it whitened_gradient
        _saved_state = {"_g": None,
                        "_half": "array(>=cholesky.size) float64 as whitened_gradient"}

        @property
        def _g(self):
            return self._half

        @_g.setter
        def _g(self, value):
            self._half = value

    persistence.register(Renamed, learner=True)
    try:
        model = Renamed()
        model.learn_one({"a": 1.0}, 0.5)
        path = persistence.save(model, tmp_path / "m.npz")
        assert "whitened_gradient" in persistence.read_metadata(path)["state"]
        again = okoco.load(path)
        assert np.array_equal(again._half, model._half) and "_g" not in vars(again)
    finally:
        path = f"{Renamed.__module__}.{Renamed.__qualname__}"
        persistence._LEARNERS.pop(path)
        persistence._OBJECTS.pop(path)


@pytest.mark.parametrize("spec", ["array(n) float32x", "int[", "frobnicate",
                                  "array(__import__('os')) float64"])
def test_a_malformed_declaration_is_a_type_error_naming_it(spec):
    class Broken:
        _saved_state = {"x": spec}

    with pytest.raises(TypeError, match=r"Broken\._saved_state\['x'\]"):
        persistence.declared_state(Broken)


# -- where saves land -----------------------------------------------------------------------------


def test_the_next_save_removes_the_temporary_file_a_killed_save_left(tmp_path):
    target = tmp_path / "m.npz"
    learned(KONS(), 3).save(target)
    code = ("import os, sys, numpy as np\n"
            "from okoco._io import atomic_write\n"
            "def write(f):\n"
            "    f.write(b'x' * 1000); f.flush(); os.kill(os.getpid(), 9)\n"
            f"atomic_write({str(target)!r}, write, binary=True)\n")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(__file__))}
    proc = subprocess.run([sys.executable, "-c", code], env=env)
    assert proc.returncode == -signal.SIGKILL
    legacy = tmp_path / ".m.npz.abcd1234.tmp"  # the pattern of okoco before the process id
    legacy.write_bytes(b"x")
    os.utime(legacy, (0, 0))
    assert len(os.listdir(tmp_path)) == 3
    learned(KONS(), 3).save(target)
    assert os.listdir(tmp_path) == ["m.npz"]


def test_a_save_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = learned(KONS(), 3).save(tmp_path / "m.npz")
    os.chmod(target, 0o640)
    learned(KONS(), 4).save(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_a_read_only_file_is_not_replaced(tmp_path):
    target = learned(KONS(), 3).save(tmp_path / "m.npz")
    before = target.read_bytes()
    os.chmod(target, 0o444)
    with pytest.raises(PermissionError, match="read-only"):
        learned(KONS(), 4).save(target)
    assert target.read_bytes() == before and stat.S_IMODE(os.stat(target).st_mode) == 0o444
    assert os.listdir(tmp_path) == ["m.npz"]


def test_saving_to_a_symlink_writes_its_target(tmp_path):
    (tmp_path / "models").mkdir()
    real = tmp_path / "models" / "real.npz"
    learned(KONS(), 3).save(real)
    link = tmp_path / "current.npz"
    link.symlink_to(real)
    model = learned(KONS(), 7)
    assert model.save(link) == link
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert okoco.load(real).n_seen == 7
    assert sorted(os.listdir(tmp_path / "models")) == ["real.npz"]


def test_polynomial_kernel_files_round_trip(tmp_path):
    model = learned(KONS(kernel=kernels.Polynomial(2, 0.5, 1.0)), 10)
    again = okoco.load(model.save(tmp_path / "m.npz"))
    assert again.predict_one({"a": 0.2}) == pytest.approx(model.predict_one({"a": 0.2}), rel=1e-9)


def test_squeak_ink_and_nystrom_krr_round_trip_and_continue_identically(tmp_path):
    from okoco.dictionary import SQUEAK, INKEstimate, NystromKRR

    X = np.random.default_rng(0).normal(size=(80, 2))
    for model in (SQUEAK(kernels.RBF(1.0), seed=0), INKEstimate(kernels.RBF(1.0), seed=0)):
        model.update_many(X[:60])
        again = okoco.load(okoco.save(model, tmp_path / "d.npz"))
        assert [again.update(x) for x in X[60:]] == [model.update(x) for x in X[60:]]
        assert np.array_equal(again.indices, model.indices)
        assert np.array_equal(again.weights, model.weights)
    krr = NystromKRR(kernels.RBF(1.0), alpha=0.5).fit(X, X[:, 0], indices=[0, 3, 3, 7])
    again = okoco.load(okoco.save(krr, tmp_path / "n.npz"))
    assert np.array_equal(again.predict(X), krr.predict(X))


def test_a_squeak_file_with_a_gram_matrix_of_the_wrong_size_is_refused(tmp_path):
    from okoco.dictionary import SQUEAK

    model = SQUEAK(kernels.RBF(1.0), seed=0)
    model.update_many(np.random.default_rng(0).normal(size=(20, 2)))
    path = okoco.save(model, tmp_path / "d.npz")
    with np.load(path) as archive:
        meta = json.loads(str(archive["__okoco__"]))
        name = meta["state"]["gram"]["__array__"]
    rewrite(path, lambda meta: None, extra={name: np.zeros((2, 2))})
    refused(path, "state.gram", "size")


@pytest.mark.parametrize("max_size, form", [(None, "cholesky"), (500, "inverse")])
def test_a_dictionary_size_that_disagrees_with_its_factor_is_refused(tmp_path, max_size, form):
    # KORS keeps its matrix by a factor (unbounded) or, for a window, by its inverse
    path = learned(SketchedKONS(seed=0, max_size=max_size), 30).save(tmp_path / "m.npz")
    rewrite(path, lambda meta: meta["state"]["kors"]["attrs"].update(size=1))
    refused(path, "state.kors.size", f"below {form}.size")


@pytest.mark.parametrize("comparator", [
    lambda: __import__("okoco.regret", fromlist=["x"]).KernelRidge(kernels.RBF(1.0), alpha=0.5),
    lambda: __import__("okoco.regret", fromlist=["x"]).ClippedKernelERM(
        kernels.RBF(1.0), okoco.losses.Squared(), C=1.0),
    lambda: __import__("okoco.regret", fromlist=["x"]).BestConstant(okoco.losses.Squared()),
    lambda: __import__("okoco.regret", fromlist=["x"]).NystromKernelERM(
        kernels.RBF(1.0), okoco.losses.Squared(), n_components=8),
], ids=["ridge", "clipped", "constant", "nystrom"])
def test_a_regret_tracker_round_trips_with_its_comparator(tmp_path, comparator):
    from okoco.regret import RegretTracker

    rng = np.random.default_rng(0)
    rows = [({"a": float(rng.normal()), "b": float(rng.normal())}, float(rng.uniform(-1, 1)),
             float(rng.uniform(-1, 1))) for _ in range(40)]
    tracker = RegretTracker(okoco.losses.Squared(), comparator(), checkpoints=[10, 20, 30, 40])
    for x, y, p in rows[:25]:
        tracker.update(x, y, p)
    again = okoco.load(okoco.save(tracker, tmp_path / "t.npz"))
    for x, y, p in rows[25:]:
        tracker.update(x, y, p)
        again.update(x, y, p)
    assert again.t.tolist() == [10, 20, 30, 40]
    assert np.array_equal(again.regret, tracker.regret)
    assert np.array_equal(again.X, tracker.X)


@pytest.mark.parametrize(("edit", "words"), [
    (lambda m: m["state"].update(n_seen=10**30), ["state.n_seen", "beyond int64"]),
    (lambda m: m["state"]["features"]["attrs"]["columns"].update(a=-1),
     ["state.features.columns", "below 0"]),
    (lambda m: m["state"]["features"]["attrs"].update(columns=[1, 2]),
     ["state.features.columns"]),
    (lambda m: m["state"].update(features={"__ref__": m["state"]["step_size"]["id"]}),
     ["state.features", "StepSize, not a FeatureMap"]),
    (lambda m: m["state"]["step_size"]["attrs"].update(decreasing="yes"),
     ["state.step_size.decreasing", "bool"]),
    (lambda m: m["state"].update(alpha=-1.0), ["alpha must be a real number > 0"]),
])
def test_fields_other_than_arrays_are_checked_too(kons_file, edit, words):
    rewrite(kons_file, edit)
    refused(kons_file, *words)


_EDITS = [None, -1, 0, 10**30, 2**63, 1.5, float("inf"), "x", [], {}, [1, 2], {"a": 1},
          {"__ref__": 0}, {"__ref__": 3}, {"__array__": "a0", "id": 999},
          {"__padded__": "a1", "id": 998, "rows": 3}, {"__np__": "<i8", "v": 2**70},
          {"__tuple__": [1]}, {"__dict__": [[1, 2]]}, {"__float__": "nan"},
          {"__generator__": "PCG64", "id": 997, "state": {}},
          {"__kernel__": "RBF", "id": 996, "params": {"gamma": -1}},
          {"__obj__": "okoco._input.Rows", "id": 995, "attrs": {}}, True, {"__bytes__": "zz"}]


@pytest.mark.parametrize("make", [KONS, Auto, lambda: SketchedKONS(seed=0)])
def test_any_single_edit_of_the_metadata_loads_or_is_one_value_error(tmp_path, make):
    """120 random edits (one JSON node replaced by a value of another kind) per learner."""
    import random

    path = learned(make(), 20).save(tmp_path / "m.npz")
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
        original = str(archive["__okoco__"])

    def places(tree, at=()):
        yield at
        items = tree.items() if isinstance(tree, dict) else enumerate(tree) \
            if isinstance(tree, list) else ()
        for key, sub in items:
            yield from places(sub, at + (key,))

    spots = [at for at in places(json.loads(original)) if at]
    pick = random.Random(0)
    for _ in range(120):
        meta = json.loads(original)
        at = pick.choice(spots)
        node = meta
        for key in at[:-1]:
            node = node[key]
        node[at[-1]] = pick.choice(_EDITS)
        np.savez(path, __okoco__=np.array(json.dumps(meta)), **arrays)
        try:
            okoco.load(path)
        except ValueError as error:
            assert type(error) is ValueError and str(path) in str(error), at
