"""A loaded file is checked against itself before the compiled core sees it (issue 40): sizes
against the arrays they describe, indices in range, a one-to-one column map, finite numbers,
and no more archive members than the metadata refers to."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest
from load_fuzz import (
    MODELS,
    _builders,
    answers,
    read_archive,
    save_model,
    write_archive,
)

import okoco


def _edit(path, tmp_path, edit_meta=None, edit_arrays=None, raw=None):
    meta, arrays = read_archive(path)
    if edit_meta is not None:
        edit_meta(meta)
    if edit_arrays is not None:
        edit_arrays(meta, arrays)
    target = tmp_path / "edited.npz"
    write_archive(target, meta, arrays, raw)
    return target


@pytest.fixture(scope="module")
def sketched(tmp_path_factory):
    """A windowed Sketched-KONS (capacity 501: max_size 500), 40 rows learned."""
    from load_fuzz import _rows

    from okoco.learners import SketchedKONS

    model = SketchedKONS(max_size=500, seed=1)
    for x, y in _rows(40, seed=0):
        model.learn_one(x, y)
    return okoco.save(model, tmp_path_factory.mktemp("sk") / "sketched.npz")


@pytest.mark.parametrize("size", [10**6, 600, 41])
def test_a_window_size_beyond_its_arrays_is_refused(sketched, tmp_path, size):
    """Today's main: 10**6 loads, and the 16th learn_one is a SIGSEGV; 600 asks for 410 PiB."""
    def edit(meta):
        meta["state"]["window_inverse"]["attrs"]["size"] = size

    with pytest.raises(ValueError, match=r"window_inverse \(SlotInverse\) breaks its invariant"):
        okoco.load(_edit(sketched, tmp_path, edit))


def test_two_features_on_one_column_are_refused(sketched, tmp_path):
    def edit(meta):
        meta["state"]["features"]["attrs"]["columns"] = {"a": 0, "b": 0, "c": 2}

    with pytest.raises(ValueError, match=r"features \(FeatureMap\).*permutation\(columns\)"):
        okoco.load(_edit(sketched, tmp_path, edit))


def test_an_array_member_cut_to_one_row_is_refused(sketched, tmp_path):
    def edit(meta, arrays):
        member = meta["state"]["window_inverse"]["attrs"]["outer"]["__array__"]
        arrays[member] = arrays[member][:1]

    with pytest.raises(ValueError, match="window_inverse"):
        okoco.load(_edit(sketched, tmp_path, edit_arrays=edit))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_numbers_okoco_never_writes_in_the_json_are_refused(sketched, tmp_path, literal):
    def edit(meta):
        meta["state"]["log_det"] = "@RAW@"

    with pytest.raises(ValueError, match=f"holds the number {literal}"):
        okoco.load(_edit(sketched, tmp_path, edit, raw={"@RAW@": literal}))


@pytest.mark.parametrize("field", ["noise_scale_sum", "log_det", "rg_sum"])
def test_a_non_finite_statistic_is_refused(sketched, tmp_path, field):
    def edit(meta):
        meta["state"][field] = {"__float__": "inf"}

    with pytest.raises(ValueError, match=f"state.{field} must hold finite numbers only"):
        okoco.load(_edit(sketched, tmp_path, edit))


def test_an_index_out_of_its_range_is_refused(sketched, tmp_path):
    """Today's main: a slot of 10**6 in the window's map is a SIGSEGV at the next step."""
    def edit(meta, arrays):
        member = meta["state"]["window_inverse"]["attrs"]["outer"]["__array__"]
        arrays[member] = arrays[member].copy()
        arrays[member][3] = 10**6

    with pytest.raises(ValueError, match="within"):
        okoco.load(_edit(sketched, tmp_path, edit_arrays=edit))


def test_an_archive_of_50000_unreferenced_members_is_refused_at_once(sketched, tmp_path):
    """Today's main: 18.9 s (every member's header opened); now the zip's end record is
    compared with the metadata's references before the zip directory is read."""
    def edit(meta, arrays):
        arrays.update({f"z{i}": np.zeros(0, dtype=np.uint8) for i in range(50_000)})

    path = _edit(sketched, tmp_path, edit_arrays=edit)
    okoco.load(sketched)  # everything imported and warm
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"holds 500\d\d archive members, but its metadata "
                                         r"refers to \d\d arrays"):
        okoco.load(path)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 0.1 and peak < 50 << 20, (seconds, peak)


def test_a_few_unreferenced_members_are_still_refused(sketched, tmp_path):
    def edit(meta, arrays):
        arrays["extra"] = np.zeros(3)

    with pytest.raises(ValueError, match="does not refer to"):
        okoco.load(_edit(sketched, tmp_path, edit_arrays=edit))


@pytest.mark.parametrize("name", MODELS)
def test_valid_files_of_every_model_load_and_answer_as_saved(name, tmp_path):
    """The checks refuse no file okoco wrote: every model, at several lengths of training
    (before the first row, one row, a few, past the windows and budgets)."""
    build, classifies = _builders()[name]
    for n in (0, 1, 17, 90):
        path = save_model(name, tmp_path / f"{n}.npz", n)
        again = okoco.load(path)
        assert answers(again, classifies, name == "BinaryClassifier") == \
            answers(okoco.load(path), classifies, name == "BinaryClassifier")


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_the_file_after_every_step_loads(name, tmp_path):
    """The same after each of the first 200 rows (pending terms of every count, grown and
    compacted windows, rings wrapping)."""
    from load_fuzz import LABELS, _rows

    build, classifies = _builders()[name]
    model = build()
    labels = (LABELS[:2] if name == "BinaryClassifier" else LABELS) if classifies else None
    for x, y in _rows(200, seed=0, labels=labels):
        model.learn_one(x, y)
        okoco.load(okoco.save(model, tmp_path / "m.npz"))


def test_okoco_save_takes_interval_regressors_bare_and_in_pipelines(tmp_path):
    """Issue 43: okoco.save refused a pipeline with an IntervalRegressor (CLI checkpoints
    saved it). Round trip: the same intervals, then the same after more learning."""
    from load_fuzz import _rows
    from river import preprocessing

    from okoco.intervals import IntervalRegressor
    from okoco.learners import KRLS, Auto

    models = [IntervalRegressor(KRLS(nu=0.05), coverage=0.8),
              preprocessing.StandardScaler() | IntervalRegressor(Auto(), window=30),
              IntervalRegressor(preprocessing.StandardScaler() | KRLS(), spread=False)]
    for i, model in enumerate(models):
        for x, y in _rows(60, seed=i):
            model.learn_one(x, y)
        again = okoco.load(okoco.save(model, tmp_path / f"m{i}.npz"))
        for x, y in _rows(20, seed=10 + i):
            assert again.predict_one(x, with_interval=True) == \
                model.predict_one(x, with_interval=True)
            again.learn_one(x, y)
            model.learn_one(x, y)
        assert again.predict_one({"a": 0.1}) == model.predict_one({"a": 0.1})


def test_a_wrappers_lock_is_not_saved_and_comes_back_new(tmp_path):
    """okoco.save holds a wrapper's ``_lock`` and leaves it out of the file; loading builds
    the wrapper through its constructor, which makes its own (as IntervalRegressor's will)."""
    import threading

    from load_fuzz import _rows

    from okoco.intervals import IntervalRegressor
    from okoco.learners import KRLS

    model = IntervalRegressor(KRLS(nu=0.05))
    model._lock = threading.Lock()
    for x, y in _rows(20, seed=0):
        model.learn_one(x, y)
    again = okoco.load(okoco.save(model, tmp_path / "m.npz"))
    assert "_lock" not in vars(again) or again._lock is not model._lock
    assert again.predict_one({"a": 0.2}, with_interval=True) == \
        model.predict_one({"a": 0.2}, with_interval=True)
    assert not model._lock.locked()


@pytest.fixture(scope="module")
def auto_file(tmp_path_factory):
    """Auto (two shared dictionaries with a head each, a linear expert, two windows), 60 rows."""
    from load_fuzz import _rows

    from okoco.learners import Auto

    model = Auto()
    for x, y in _rows(60, seed=0):
        model.learn_one(x, y)
    return okoco.save(model, tmp_path_factory.mktemp("auto") / "auto.npz")


def _dictionary_heads(meta) -> list:
    return [e for e in meta["state"]["experts"] if "dictionary" in e["attrs"]]


def test_a_dictionary_head_moved_to_the_other_dictionary_is_refused(auto_file, tmp_path):
    """The issue-42 Auto's files (the fuzz over them: a head's dictionary index edited loaded as
    another model): a head must sit on the dictionary its kernel and size say."""
    def edit(meta):
        first, second = _dictionary_heads(meta)[:2]
        first["attrs"]["dictionary"], second["attrs"]["dictionary"] = 1, 0

    assert okoco.load(auto_file)  # the file as saved loads
    with pytest.raises(ValueError, match=r"heads_on\(experts, embeddings\)"):
        okoco.load(_edit(auto_file, tmp_path, edit))


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_shared_dictionarys_size_edited_is_refused(auto_file, tmp_path, delta):
    def edit(meta):
        factor = meta["state"]["embeddings"][0]["attrs"]["embedding"]["attrs"]
        factor["size"] += delta

    with pytest.raises(ValueError, match=r"SharedEmbedding\) breaks its invariant"):
        okoco.load(_edit(auto_file, tmp_path, edit))


@pytest.mark.parametrize("field, value", [("max_size", 9), ("nu", 0.5), ("alpha", 0.25)])
def test_a_krls_whose_bound_or_test_differs_from_its_dictionarys_is_refused(tmp_path, field,
                                                                            value):
    """The fuzz over format 10: KRLS(max_size=8) edited to 9 in one place loaded, and every
    prediction after was -inf (the step let a point join that the ALD would not take)."""
    from load_fuzz import _rows

    from okoco.learners import KRLS

    model = KRLS(nu=1e-3, max_size=8)
    for x, y in _rows(60, seed=0):
        model.learn_one(x, y)
    path = okoco.save(model, tmp_path / "krls.npz")

    def edit(meta):
        meta["state"][field] = value

    assert okoco.load(path).predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9)
    with pytest.raises(ValueError, match=r"KRLS\) breaks its invariant"):
        okoco.load(_edit(path, tmp_path, edit))


def test_fixed_shares_weights_of_another_length_are_refused(auto_file, tmp_path):
    """Auto's fixed-share log-weights (``switch_rate``) are one an expert: a file with one
    more loaded and broke at the next step with numpy's broadcast error."""
    def edit(meta, arrays):
        key = meta["state"]["log_weights"]["__array__"]
        arrays[key] = np.append(arrays[key], 0.0)

    with pytest.raises(ValueError, match=r"shape\(log_weights, 0\)"):
        okoco.load(_edit(auto_file, tmp_path, edit_arrays=edit))
