"""okoco's steps stay off BLAS thread pools, and okoco never changes the user's BLAS settings.

The checks run in fresh processes with the threading a user gets by default (no pinning
variables), because that is where OpenBLAS hands small calls to its pool.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so blas_threads() sees both libraries)
from racing import run_threads
from threadpoolctl import threadpool_info, threadpool_limits

from okoco._blas import DOT_BLOCK, OneThread, all_one_thread, axpy, dot, scipy_one_thread

HERE = Path(__file__).parent
PINNING = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
           "OPENBLAS_DEFAULT_NUM_THREADS", "BLIS_NUM_THREADS")
WORKLOADS = ["SketchedKONS", "KONS", "FunctionalGD", "FunctionalGD-budget", "KRLS",
             "KRLS-max_size", "CONKONS", "KORS", "ALD"]


def default_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PINNING}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    return env


def run_python(args: list, timeout: float = 300) -> dict:
    proc = subprocess.run([sys.executable, *args], env=default_env(), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def probe() -> dict:
    if not Path("/proc/self/task").is_dir():
        pytest.skip("the probe reads Linux's /proc/self/task")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS uses one thread by default on a single core: nothing to check")
    return run_python([str(HERE / "blas_probe.py"), *WORKLOADS])


def test_probe_sees_the_thread_pool(probe):
    """The control calls (a packed rank-one update, a long dot product) wake the workers, so
    a zero below means the step did not use the pool, not that the probe is blind."""
    assert all(n > 1 for n in probe["threads"]), probe["threads"]
    assert probe["control"] > 0


@pytest.mark.parametrize("workload", WORKLOADS)
def test_step_does_not_enter_a_threaded_blas_region(probe, workload):
    """predict_one + learn_one (or a dictionary update) at sizes above OpenBLAS's threading
    thresholds (> 10,000 points for the O(t) products, > 100 atoms for the packed updates)."""
    assert probe[workload] == 0, f"BLAS workers woke {probe[workload]} times during {workload}"


IMPORT_CHECK = """
import json
import numpy, scipy.linalg
from threadpoolctl import threadpool_info
def info():  # keyed by library: threadpool_info's order is not stable across calls
    return {i["filepath"]: i["num_threads"] for i in threadpool_info()}
before = info()
import okoco, okoco.learners, okoco.dictionary, okoco.evaluate, okoco.cli, okoco.regret
after_import = info()
from okoco import _blas
searched_at_import = _blas._LIBRARIES is not None
from okoco.learners import KRLS, SketchedKONS
models = (KRLS(nu=1e-6), SketchedKONS(seed=0))
searched_at_build, after_build = _blas._LIBRARIES is not None, info()
for model in models:
    for i in range(200):
        x = {"a": (i % 37) / 37, "b": (i % 11) / 11}
        model.predict_one(x); model.learn_one(x, 0.5)
print(json.dumps({"before": before, "after_import": after_import, "after_build": after_build,
                  "after_steps": info(), "searched_at_import": searched_at_import,
                  "searched_at_build": searched_at_build}))
"""


def test_import_leaves_threadpool_info_unchanged():
    report = run_python(["-c", IMPORT_CHECK])
    assert report["before"], "no BLAS found"
    before = report["before"]
    # an import may load further libraries; it must not change a count the user already had
    assert {k: report["after_import"][k] for k in before} == before
    assert {k: report["after_build"][k] for k in before} == before
    assert {k: report["after_steps"][k] for k in before} == before  # every scope restored it
    # the libraries are searched (~10 ms) when a learner is built, not by the import and not
    # at the first scope, which may fall in the middle of a timed replay
    assert not report["searched_at_import"] and report["searched_at_build"]


def blas_threads() -> dict:
    return {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_one_thread_scope_limits_and_restores():
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with all_one_thread:
            with scipy_one_thread:  # nested: only the outermost scope touches a library
                assert set(blas_threads().values()) == {1}
            assert set(blas_threads().values()) == {1}
        assert blas_threads() == before


def test_one_thread_scope_restores_after_an_error():
    scope = OneThread("scipy")
    before = blas_threads()
    with pytest.raises(RuntimeError):
        with scope:
            raise RuntimeError("boom")
    assert blas_threads() == before


@pytest.mark.parametrize("n", [0, 1, DOT_BLOCK, DOT_BLOCK + 1, 3 * DOT_BLOCK + 5])
def test_dot_matches_a_plain_sum(n):
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=n), rng.normal(size=n)
    assert dot(a, b) == pytest.approx(float(np.sum(a * b)), rel=1e-12, abs=1e-12)


def test_dot_refuses_vectors_of_different_lengths():
    with pytest.raises(ValueError):
        dot(np.ones(3), np.ones(4))
    with pytest.raises(ValueError):
        dot(np.ones(DOT_BLOCK + 2), np.ones(DOT_BLOCK + 1))


@pytest.mark.parametrize("n", [0, 1, 57, DOT_BLOCK, DOT_BLOCK + 1, 3 * DOT_BLOCK + 5])
def test_axpy_updates_the_prefix_in_place(n):
    rng = np.random.default_rng(n)
    x, y = rng.normal(size=n), rng.normal(size=n + 3)
    expected = y.copy()
    expected[:n] += -0.75 * x
    buffer = y
    axpy(-0.75, x, y)
    assert y is buffer
    np.testing.assert_allclose(y, expected, rtol=1e-15, atol=1e-15)
    assert (y[n:] == expected[n:]).all()  # beyond x's length nothing changes


def test_axpy_refuses_a_buffer_it_would_copy():
    y = np.zeros(8)
    with pytest.raises(ValueError, match="contiguous float64"):
        axpy(1.0, np.ones(3), y[::2])  # f2py would update a copy and leave y unchanged
    assert (y == 0).all()


# -- a learner shared between threads (issue 32) ----------------------------------------------
# The promise: a learner (and a BinaryClassifier) takes one call at a time; threads sharing it
# are serialized by a lock per object, so its state stays that of some sequential order of the
# calls. The probe's case: two threads learning rows with features new to the model.


def _race(model, n_per_thread=150, threads=2, predict=True):
    import threading

    errors: list = []
    start = threading.Barrier(threads)

    def work(k):
        try:
            start.wait()
            for i in range(n_per_thread):
                uid = k * n_per_thread + i
                x = {"id": uid / 1000.0, f"t{k}_{i % 9}": 0.1 * (i % 5) - 0.25}  # never 0
                if predict:
                    model.predict_one(x)
                model.learn_one(x, float(np.sin(uid)))
        except Exception as error:  # noqa: BLE001  (reported by the test)
            errors.append(error)

    run_threads(work, threads)
    return errors


@pytest.mark.parametrize("name", ["KONS", "SketchedKONS", "Auto", "KRLS", "FunctionalGD"])
def test_threads_sharing_a_learner_leave_it_consistent(name):
    from okoco import learners

    model = getattr(learners, name)()
    errors = _race(model)
    assert errors == []
    assert model.n_seen == 300 and len(model._features.columns) == 1 + 2 * 9
    probe = {"id": 0.05, "t0_1": 0.1, "t1_3": -0.1}
    assert np.isfinite(model.predict_one(probe))
    model.learn_one(probe, 0.5)  # and it keeps learning
    assert np.isfinite(model.predict_one(probe))


def test_threads_sharing_kons_equal_the_same_rows_learned_in_the_order_they_were_taken():
    """KONS keeps every row, in the order learned: replaying that order in one thread gives
    the same model, bit for bit (the threads only chose the order)."""
    from okoco.learners import KONS

    model = KONS()
    assert _race(model) == []
    names = list(model._features.columns)
    rows = model._store.view()[: model.n_seen]
    replay = KONS()
    for row in rows:
        x = {name: float(v) for name, v in zip(names, row) if v != 0.0 or name == "id"}
        uid = round(x["id"] * 1000)
        replay.learn_one(x, float(np.sin(uid)))
    assert list(replay._features.columns) == names
    probes = [{"id": 0.01 * i, "t0_2": 0.1, "t1_4": -0.2} for i in range(5)]
    assert [replay.predict_one(x) for x in probes] == [model.predict_one(x) for x in probes]


def test_a_binary_classifier_shared_by_threads_keeps_two_labels():
    from okoco import BinaryClassifier, losses
    from okoco.learners import KONS

    clf = BinaryClassifier(KONS(loss=losses.Logistic()))
    import threading

    errors: list = []

    def work(label):
        try:
            for i in range(100):
                clf.learn_one({"a": 0.01 * i}, label)
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    workers = [threading.Thread(target=work, args=(label,)) for label in ("yes", "no")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == [] and sorted(clf._labels) == ["no", "yes"] and clf.learner.n_seen == 200


def test_copies_and_loaded_learners_get_locks_of_their_own(tmp_path):
    import copy
    import pickle

    import okoco
    from okoco.learners import Auto

    model = Auto()
    model.learn_one({"a": 1.0}, 0.5)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)),
                  okoco.load(model.save(tmp_path / "m.npz"))):
        assert other._lock is not model._lock
        assert all(e._lock is not m._lock for e, m in zip(other.experts, model.experts))
        other.learn_one({"a": 0.5}, 0.1)


def test_the_lock_wrapper_keeps_warnings_pointing_at_the_callers_line():
    from okoco.learners import KONS

    model = KONS(C=1.0)
    with pytest.warns(UserWarning, match="standardize") as caught:
        model.learn_one({"a": 1.0}, 100.0)
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning, match="standardize") as caught:
        KONS(C=1.0).learn_many(np.array([[1.0], [2.0]]), [100.0, 200.0])
    assert caught[0].filename == __file__
