"""okoco's scalers take one call at a time (issue 40): ``okoco.save`` of a pipeline while other
threads use its ``StandardScaler`` or ``TargetStandardScaler`` writes a whole snapshot, never
raises "dictionary changed size during iteration", and every file loads.

Each thread's first ``CYCLE`` learns add features no other learn has (so the scaler's
dictionaries grow while a save iterates them), all learns the feature ``"s"``: a snapshot taken
between two whole learns has the same features in each statistic and counts every learn in
``"s"`` and in each feature of the learn's group. Around a regressor, the
target scaler's count of targets equals its regressor's ``n_seen`` in a whole snapshot.
"""

from __future__ import annotations

import copy
import pickle
import threading

import pytest
from racing import run_threads

import okoco
from okoco.learners import FunctionalGD
from okoco.preprocessing import StandardScaler, TargetStandardScaler

THREADS, SAVES = 4, 20


def run_with_saves(model, learn, tmp_path) -> tuple[list, int]:
    """``learn(k, i)`` on three threads for as long as the fourth saves ``model`` (``SAVES``
    times); the loaded files (every save must succeed) and the count of learns."""
    files, errors, learns, saving = [], [], [0] * THREADS, threading.Event()
    saving.set()

    def work(k: int) -> None:
        try:
            if k == 0:
                for i in range(SAVES):
                    files.append(okoco.save(model, tmp_path / f"snap{i}.npz"))
                return
            while saving.is_set():
                learn(k, learns[k])
                learns[k] += 1
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
        finally:
            if k == 0:
                saving.clear()

    run_threads(work, THREADS)
    assert not errors, errors[:3]
    return [okoco.load(path) for path in files], sum(learns)


FRESH, CYCLE = 5, 100  # features a row adds; a thread's rows repeat after CYCLE (bounded saves)


def fresh_row(k: int, i: int) -> dict:
    """Thread k's i-th row: ``"s"`` and the FRESH features of its group ``(k, i % CYCLE)``."""
    group = f"f{k}_{i % CYCLE}"
    return {"s": float(k + i % 7), **{f"{group}_{j}": 0.5 * i - k + j for j in range(FRESH)}}


def assert_whole(scaler: StandardScaler) -> None:
    """The state of some number of whole learns of ``fresh_row`` rows: the same features in
    each statistic, and every learn counted in ``"s"`` and in each feature of its group."""
    assert set(scaler.counts) == set(scaler.means) == set(scaler.vars)
    groups = {name.rpartition("_")[0] for name in scaler.counts if name != "s"}
    for group in groups:
        assert len({scaler.counts[f"{group}_{j}"] for j in range(FRESH)}) == 1, group
    assert scaler.counts.get("s", 0) == sum(scaler.counts[f"{g}_0"] for g in groups)


def test_pipeline_save_while_its_scaler_learns(tmp_path):
    model = StandardScaler() | FunctionalGD()
    scaler = model["StandardScaler"]
    loaded, learns = run_with_saves(model, lambda k, i: scaler.learn_one(fresh_row(k, i)),
                                    tmp_path)
    assert len(loaded) == SAVES
    for snapshot in loaded:
        assert_whole(snapshot["StandardScaler"])
    assert_whole(scaler)
    assert scaler.counts["s"] == learns


def test_pipeline_save_while_the_target_scaler_learns(tmp_path):
    model = TargetStandardScaler(StandardScaler() | FunctionalGD(budget=40))

    def learn(k: int, i: int) -> None:
        x = fresh_row(k, i)
        model.learn_one(x, 10.0 * x["s"] + i)

    loaded, learns = run_with_saves(model, learn, tmp_path)
    for snapshot in loaded:
        assert snapshot.var.n == snapshot.regressor["FunctionalGD"].n_seen
        assert_whole(snapshot.regressor["StandardScaler"])
    assert model.var.n == model.regressor["FunctionalGD"].n_seen == learns


@pytest.mark.parametrize("make", [StandardScaler, lambda: TargetStandardScaler(FunctionalGD())],
                         ids=["StandardScaler", "TargetStandardScaler"])
def test_copies_get_a_lock_of_their_own(make):
    scaler = make()
    for twin in (copy.deepcopy(scaler), pickle.loads(pickle.dumps(scaler)), scaler.clone()):
        assert isinstance(twin._lock, type(threading.Lock()))
        assert twin._lock is not scaler._lock


def test_clone_with_attributes_copies_the_state_and_not_the_lock():
    """river's ``TransformerUnion`` clones its transformers with their attributes (a lock
    cannot be deep-copied: ``encode_text`` raised TypeError)."""
    scaler = StandardScaler()
    scaler.learn_one({"a": 1.0, "b": 2.0})
    scaler.learn_one({"a": 3.0})
    twin = scaler.clone(include_attributes=True)
    assert (twin.counts, twin.means, twin.vars) == (scaler.counts, scaler.means, scaler.vars)
    assert twin.means is not scaler.means and twin._lock is not scaler._lock
    assert scaler.clone({"with_std": False}, include_attributes=True).with_std is False
    target = TargetStandardScaler(FunctionalGD())
    target.learn_one({"a": 1.0}, 5.0)
    copied = target.clone(include_attributes=True)
    assert copied.var.n == 1 and copied.var is not target.var
    assert copied.func.__self__ is copied and copied.inverse_func.__self__ is copied
    copied.learn_one({"a": 2.0}, 9.0)
    assert (copied.var.n, target.var.n) == (2, 1)
