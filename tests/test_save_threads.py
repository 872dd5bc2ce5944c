"""Consistent snapshots (issue 40): ``okoco.save`` and ``learner.save`` called while other
threads learn and predict write a state that some sequential order of the calls produced.

Four threads share one model; each learns its own rows, predicts, and every few steps saves it
(``okoco.save`` and ``learner.save`` in turn). The model's lock is replaced by one that records
which learn took it, in order, so the order the threads' learns were applied is known. Every
file must load, and equal, bit for bit, the file of a fresh model that learned the first
``n_seen`` of those rows in that order (``n_seen`` read from the file).
"""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
from load_fuzz import read_archive
from racing import run_threads

import okoco
from okoco import BinaryClassifier, MulticlassClassifier, losses
from okoco.intervals import IntervalRegressor
from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto, FunctionalGD, SketchedKONS

THREADS, STEPS, SAVE_EVERY = 4, 24, 4

MODELS = {
    "KONS": lambda: KONS(),
    "KONS-window": lambda: KONS(max_size=20),
    "SketchedKONS": lambda: SketchedKONS(seed=1),
    "FunctionalGD": lambda: FunctionalGD(budget=30),
    "KRLS": lambda: KRLS(nu=0.05),
    "PROSNKONS": lambda: PROSNKONS(seed=2),
    "CONKONS": lambda: CONKONS(seed=2),
    "Auto": lambda: Auto(),
    "BinaryClassifier": lambda: BinaryClassifier(KONS(loss=losses.Logistic())),
    "MulticlassClassifier": lambda: MulticlassClassifier(),
    "IntervalRegressor": lambda: IntervalRegressor(KRLS(nu=0.05)),
}
CLASSIFIERS = {"BinaryClassifier": ("no", "yes"), "MulticlassClassifier": ("p", "q", "r")}


def row(k: int, i: int, labels=None):
    """Thread k's i-th row: features unique to it, a target from them."""
    x = {"a": np.sin(7 * k + i), "b": np.cos(3 * k - 2 * i), f"t{k}": 0.1 * (i % 5) - 0.2}
    y = float(np.tanh(x["a"] - x["b"]))
    return x, (y if labels is None else labels[int(3 * (y + 1)) % len(labels)])


class RecordingLock:
    """A lock that appends, when it is taken, the learn the taking thread is about to run."""

    def __init__(self, log: list, current: threading.local):
        self._lock, self.log, self.current = threading.Lock(), log, current

    def acquire(self, *args) -> bool:
        taken = self._lock.acquire(*args)
        op = getattr(self.current, "op", None)
        if taken and op is not None:
            self.log.append(op)
        return taken

    def release(self) -> None:
        self._lock.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def learned(model) -> int:
    """How many rows a (loaded) model has learned."""
    for path in ("n_seen", "learner.n_seen", "calibrator.n_seen"):
        obj = model
        try:
            for name in path.split("."):
                obj = getattr(obj, name)
        except AttributeError:
            continue
        return obj
    raise AssertionError(f"no count of learned rows in {model!r}")


def race(model, tmp_path, labels, learner_save: bool):
    """The threads' run; returns the learns in the order applied and the files written."""
    log: list = []
    current = threading.local()
    model._lock = RecordingLock(log, current)
    files: list = []
    errors: list = []
    start = threading.Barrier(THREADS)

    def work(k: int) -> None:
        try:
            start.wait()
            for i in range(STEPS):
                x, y = row(k, i, labels)
                current.op = (k, i)
                model.learn_one(x, y)
                current.op = None
                model.predict_one(x)
                if i % SAVE_EVERY == SAVE_EVERY - 1:
                    path = tmp_path / f"t{k}-{i}.npz"
                    if learner_save and (k + i) % 2:
                        model.save(path)
                    else:
                        okoco.save(model, path)
                    files.append(path)
        except Exception as error:  # noqa: BLE001  (reported by the test)
            errors.append(error)

    run_threads(work, THREADS)
    assert errors == []
    return log, files


def _without_generators(tree):
    """The metadata but random generators' states: Auto draws its KONS experts' (unused)
    generators from fresh entropy, which no replay repeats. (A generator a model draws from
    leaves its draws in the rest of its state.)"""
    if isinstance(tree, dict):
        if "__generator__" in tree:
            return "generator"
        return {k: _without_generators(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_without_generators(v) for v in tree]
    return tree


def same_file(a, b) -> bool:
    meta_a, arrays_a = read_archive(a)
    meta_b, arrays_b = read_archive(b)
    same_arrays = arrays_a.keys() == arrays_b.keys() and all(
        arrays_a[k].dtype == arrays_b[k].dtype and np.array_equal(arrays_a[k], arrays_b[k])
        for k in arrays_a)
    return same_arrays and _without_generators(meta_a) == _without_generators(meta_b)


def assert_sequential(path, n, replays, template, log, labels, tmp_path) -> None:
    """The file at ``path`` (``n`` learns) equals a copy of ``template`` that learned the
    first ``n`` rows of ``log`` in order (saved once per ``n`` in ``replays``)."""
    if n not in replays:
        replay = copy.deepcopy(template)
        for k, i in log[:n]:
            replay.learn_one(*row(k, i, labels))
        replays[n] = okoco.save(replay, tmp_path / f"replay-{n}.npz")
    assert same_file(path, replays[n]), f"{path.name} (n_seen {n}) is no sequential state"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_saves_amid_threads_are_snapshots_of_a_sequential_order(name, tmp_path):
    model = MODELS[name]()
    assert getattr(model, "_lock", None) is not None  # every saveable object has its lock
    labels = CLASSIFIERS.get(name)
    template = copy.deepcopy(model)  # the same random state (seed=None draws one) for replays
    log, files = race(model, tmp_path, labels, learner_save=hasattr(model, "save"))
    assert len(log) == THREADS * STEPS and len(files) == THREADS * STEPS // SAVE_EVERY
    replays = {}
    for path in files:
        n = learned(okoco.load(path))  # every file loads
        assert_sequential(path, n, replays, template, log, labels, tmp_path)


def test_a_pipelines_learner_is_saved_whole_amid_threads(tmp_path):
    """A river pipeline has no lock of its own: the threads serialise their pipeline calls
    (a lock of theirs), ``okoco.save`` does not take it but holds each step's lock, so the
    learner step is a state of its own learns in the order applied. (The scaler before it has
    no lock: its snapshot is not checked, and its mappings get every feature before the race,
    since a mapping that grows while it is saved raises RuntimeError.)"""
    from river import compose

    from okoco import preprocessing as okp

    pipeline = compose.Pipeline(("scale", okp.StandardScaler()), ("kons", KONS()))
    scaler, learner = pipeline["scale"], pipeline["kons"]
    template = copy.deepcopy(learner)
    log: list = []  # the learner's rows (scaled) in the order learned: the guard's
    guard = threading.Lock()
    files, errors = [], []
    for k in range(THREADS):  # every feature known first: the scaler's mappings keep their keys
        x, y = row(k, STEPS)
        pipeline.learn_one(x, y)
        log.append((scaler.transform_one(x), y))

    def work(k: int) -> None:
        try:
            for i in range(STEPS):
                x, y = row(k, i)
                with guard:
                    pipeline.learn_one(x, y)
                    log.append((scaler.transform_one(x), y))  # what the learner was given
                    pipeline.predict_one(x)
                if i % SAVE_EVERY == SAVE_EVERY - 1:
                    files.append(okoco.save(pipeline, tmp_path / f"p{k}-{i}.npz"))
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    run_threads(work, THREADS)
    assert errors == [] and len(log) == THREADS * (STEPS + 1)
    for path in files:
        saved = okoco.load(path)["kons"]
        replay = copy.deepcopy(template)
        for x, y in log[: saved.n_seen]:
            replay.learn_one(x, y)
        assert same_file(okoco.save(saved, tmp_path / "a.npz"),
                         okoco.save(replay, tmp_path / "b.npz")), path.name
