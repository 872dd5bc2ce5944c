"""okoco._io: atomic writes (permissions from the umask, nothing left on failure), JSON values."""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np
import pytest
from river import metrics

from okoco import datasets
from okoco._io import atomic_write, to_json_ready
from okoco.evaluate import replay
from okoco.learners import KONS, FunctionalGD


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")

    def boom(f):
        f.write("partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, boom)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
    with pytest.raises(FileNotFoundError, match="no such directory"):
        atomic_write(tmp_path / "missing" / "x.json", lambda f: None)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o022, 0o002, 0o077])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_files_get_the_permissions_of_an_ordinary_open(tmp_path, umask):
    """Every output (results, plots, saved models, checkpoints) goes through atomic_write; its
    mode is what ``open(path, "w")`` gives, not the temporary file's owner-only 0o600."""
    with open(tmp_path / "plain.txt", "w") as f:
        f.write("x")
    expected = _mode(tmp_path / "plain.txt")
    assert expected == 0o666 & ~umask
    data = datasets.load("sinc", n=40, seed=0)
    result = replay(FunctionalGD(), data, metrics=metrics.MAE(),
                    checkpoint=tmp_path / "run.ckpt.npz")
    written = [
        atomic_write(tmp_path / "a.txt", lambda f: f.write("a")),
        result.to_json(tmp_path / "r.json"),
        tmp_path / "r.csv",
        KONS().save(tmp_path / "m.npz"),
        tmp_path / "run.ckpt.npz",
        tmp_path / "r.png",
    ]
    result.to_csv(tmp_path / "r.csv")
    result.plot(tmp_path / "r.png")
    assert {p.name: oct(_mode(p)) for p in written} == {p.name: oct(expected) for p in written}


def test_an_existing_file_is_replaced_keeping_its_permissions(tmp_path, umask):
    target = tmp_path / "out.txt"
    target.write_text("old")
    os.chmod(target, 0o600)
    atomic_write(target, lambda f: f.write("new"))
    assert target.read_text() == "new" and _mode(target) == 0o600


def test_json_ready_values():
    value = {"nan": math.nan, "inf": np.float64(np.inf), 3: [np.int32(4), (1.5, None)],
             "obj": KONS}
    ready = to_json_ready(value)
    assert ready == {"nan": None, "inf": None, "3": [4, [1.5, None]], "obj": repr(KONS)}
    json.dumps(ready, allow_nan=False)
