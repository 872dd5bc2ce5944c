"""Reading a file holds the garbage collector off (issue 40: refusing any file takes < 0.1 s).

A full collection costs the whole heap's size (80-160 ms once okoco and river are imported),
and the containers a load builds used to start one now and then inside the load: the fuzz of
``okoco.load`` found refusals of 0.10-0.13 s whose own checks took a few milliseconds. The
first test failed before: a refused load ran collections (hundreds, with the threshold at 1).
"""

import gc
import io
import json
import os
import sys
import threading
import zipfile

import numpy as np
import pytest

import okoco
from okoco import persistence
from okoco.learners import KONS


class Collections:
    """Counts the collections that start inside okoco's reading of a file (a frame of
    ``okoco.persistence`` or ``okoco.pipelines`` on the stack) while it is active."""

    def __init__(self):
        self.count = 0

    def _note(self, phase, info):
        if phase == "start" and _reading():
            self.count += 1

    def __enter__(self):
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._note)


def _reading() -> bool:
    """Whether okoco is reading a file (but in the frames that turn the collector off and on,
    before and after the reading)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename.replace(os.sep, "/")
        pausing = frame.f_code.co_qualname.startswith(("_CollectorPause", "collector_paused"))
        if ("okoco/persistence/" in name or name.endswith("okoco/pipelines.py")) and \
                not pausing:
            return True
        frame = frame.f_back
    return False


@pytest.fixture
def eager_collector():
    """A collection at every new container (as a large heap makes them frequent)."""
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    gc.set_threshold(1, 1, 1)
    yield
    gc.set_threshold(*before)
    (gc.enable if enabled else gc.disable)()


def _files(tmp_path):
    """A valid KONS file and a copy whose saved size says more points than it holds."""
    model = KONS(max_size=20)
    for i in range(40):
        model.learn_one({"a": i / 40, "b": (i % 7) / 7}, (i % 3) - 1.0)
    good = okoco.save(model, tmp_path / "good.npz")
    with zipfile.ZipFile(good) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    meta = persistence.read_metadata(good)
    meta["state"]["store"]["attrs"]["n"] += 5
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.array(json.dumps(meta)), allow_pickle=False)
    members["__okoco__.npy"] = buffer.getvalue()
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return good, bad


def test_a_refused_file_starts_no_collection(tmp_path, eager_collector):
    good, bad = _files(tmp_path)
    with Collections() as seen, pytest.raises(ValueError, match="store"):
        okoco.load(bad)
    assert seen.count == 0
    with Collections() as seen:
        okoco.load(good)
        persistence.read_metadata(good)
    assert seen.count == 0
    assert gc.isenabled()  # on again after each load


def test_the_collector_is_left_as_the_user_set_it(tmp_path):
    good, bad = _files(tmp_path)
    enabled = gc.isenabled()
    try:
        gc.disable()
        okoco.load(good)
        with pytest.raises(ValueError):
            okoco.load(bad)
        assert not gc.isenabled()  # the user's choice is kept
        gc.enable()
        okoco.load(good)
        with pytest.raises(ValueError):
            okoco.load(bad)
        assert gc.isenabled()
    finally:
        (gc.enable if enabled else gc.disable)()


def test_threads_loading_at_once_leave_the_collector_on(tmp_path):
    good, bad = _files(tmp_path)
    errors, start = [], threading.Barrier(4)
    probe = okoco.load(good).predict_one({"a": 0.3, "b": 0.2})

    def work(path):
        start.wait()
        for _ in range(15):
            try:
                model = okoco.load(path)
                assert model.predict_one({"a": 0.3, "b": 0.2}) == probe
            except ValueError:
                assert path == bad
            except AssertionError as error:  # noqa: PERF203
                errors.append(error)

    threads = [threading.Thread(target=work, args=(p,)) for p in (good, bad, good, bad)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert gc.isenabled()
