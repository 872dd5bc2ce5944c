"""Tests of okoco.distributed on a real Dask LocalCluster (two worker processes on loopback).

Grids are checked against the serial path (identical metrics for the same seeds) and against an
independently built river model; merge-tree dictionaries against the dense references of
tests/test_dictionary.py (literal Eq. 5, the two-sided Psi-norm accuracy test) and against
sequential SQUEAK, of which a merge with a fresh point is the special case.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from river import evaluate as river_evaluate
from river import metrics, preprocessing
from test_dictionary import nystrom_dense, psi_error, weights_vector
from typer.testing import CliRunner

from okoco import datasets
from okoco import preprocessing as okp
from okoco.cli import app
from okoco.dictionary import SQUEAK, effective_dimension
from okoco.distributed import grid, merge_tree, nystrom_krr
from okoco.distributed._tasks import make_tasks
from okoco.distributed.merge import plan
from okoco.kernels import RBF
from okoco.learners import KONS

distributed = pytest.importorskip("distributed")

TIMING_KEYS = {"elapsed_s", "us_per_sample", "wall_s", "worker"}


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():  # port 8787 taken by another cluster: a random one is fine
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
    try:
        with distributed.Client(cluster) as c:
            yield c
    finally:
        cluster.close()


def same_numbers(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k not in TIMING_KEYS} == {
        k: v for k, v in b.items() if k not in TIMING_KEYS}


# ---------------------------------------------------------------------------- grids
GRID = dict(params={"alpha": [0.5, 1.0]}, seeds=2, data_params={"n": 120})


def test_grid_on_cluster_equals_serial_and_river(client):
    serial = grid(["kons", "fgd"], "sinc", **GRID)
    dask = grid(["kons", "fgd"], "sinc", scheduler=client, **GRID)
    # alpha is a KONS parameter only: fgd runs once per seed
    assert [(r["learner"], r["params"], r["seed"]) for r in dask.records] == [
        ("kons", {"alpha": 0.5}, 0), ("kons", {"alpha": 0.5}, 1), ("kons", {"alpha": 1.0}, 0),
        ("kons", {"alpha": 1.0}, 1), ("fgd", {}, 0), ("fgd", {}, 1)]
    assert all(r["status"] == "ok" for r in dask.records)
    for a, b in zip(serial.records, dask.records):
        assert same_numbers(a, b), (a, b)  # metrics, losses, sizes: exactly equal
    addresses = set(client.scheduler_info()["workers"])
    assert {r["worker"] for r in dask.records} <= addresses
    assert {r["worker"] for r in serial.records} == {"local"}
    assert dask.n_workers == 2 and "2 workers" in repr(dask)
    # an independent reference: the model the grid promises, built by hand, through river
    ref = preprocessing.TargetStandardScaler(
        okp.StandardScaler() | KONS(C=3.0, alpha=1.0))  # the CLI's scaler
    expected = river_evaluate.progressive_val_score(datasets.load("sinc", n=120, seed=1), ref,
                                                    metrics.MAE()).get()
    assert dask.records[3]["metrics"] == {"MAE": expected}
    assert dask.results[3].final["MAE"] == expected and dask.records[3]["n_samples"] == 120


def test_failing_task_is_reported_with_its_parameters(client):
    seen = []
    res = grid({"kons": {"alpha": [1.0, -1.0]}}, ["sinc", "no-such-dataset"], seeds=[3],
               data_params={"n": 40}, scheduler=client,
               progress=lambda done, total, rec: seen.append((done, total, rec["index"])))
    status = [(r["dataset"], r["params"]["alpha"], r["status"]) for r in res.records]
    assert status == [("sinc", 1.0, "ok"), ("sinc", -1.0, "error"),
                      ("no-such-dataset", 1.0, "error"), ("no-such-dataset", -1.0, "error")]
    bad = res.records[1]
    assert bad["seed"] == 3 and bad["learner"] == "kons" and bad["data_params"] == {"n": 40}
    assert "alpha must be a real number > 0" in bad["error"] and bad["error_type"] == "UserError"
    assert "unknown dataset 'no-such-dataset'" in res.records[2]["error"]
    assert res.results[1] is None and res.results[0].n_samples == 40
    assert len(res.ok) == 1 and len(res.failed) == 3
    assert sorted(i for _, _, i in seen) == [0, 1, 2, 3]
    assert [d for d, _, _ in seen] == [1, 2, 3, 4] and {t for _, t, _ in seen} == {4}


def test_dataset_objects_are_shipped_once_and_shuffled_per_seed(client):
    ds = datasets.load("friedman", n=80, seed=5)
    kw = dict(seeds=2, shuffle=True, metrics=["mae", "rmse"])
    serial = grid("fgd", ds, **kw)
    dask = grid("fgd", ds, scheduler=client, **kw)
    assert [r["status"] for r in dask.records] == ["ok", "ok"]
    for a, b in zip(serial.records, dask.records):
        assert same_numbers(a, b)
    assert set(dask.records[0]["metrics"]) == {"MAE", "RMSE"}
    # the two seeds replay two orders of the same rows
    assert dask.records[0]["metrics"] != dask.records[1]["metrics"]
    assert dask.records[0]["dataset"] == "friedman"


def test_progress_lines_on_stderr(capsys):
    grid("fgd", "sinc", seeds=2, data_params={"n": 20}, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[1/2] ok") and "fgd on sinc(n=20) seed=0" in lines[0]
    grid("fgd", "sinc", seeds=1, data_params={"n": 20})
    assert capsys.readouterr().err == ""


def test_task_list_summary_and_best():
    tasks = make_tasks(["kons", "fgd"], [("sinc", {"n": 30}), "trump-approval"],
                       params={"alpha": [1, 2], "eta": 0.5}, seeds=1)
    # each learner gets the keys it has (FunctionalGD has no alpha), without duplicates
    assert [(t.dataset, t.learner, t.params) for t in tasks][:3] == [
        ("sinc", "kons", {"alpha": 1, "eta": 0.5}), ("sinc", "kons", {"alpha": 2, "eta": 0.5}),
        ("sinc", "fgd", {"eta": 0.5})]
    assert len(tasks) == 6 and [t.index for t in tasks] == list(range(6))
    assert tasks[3].dataset == "trump-approval" and tasks[3].data_params == {}
    res = grid({"kons": {"alpha": [0.1, 10.0]}}, "sinc", seeds=2, data_params={"n": 60})
    rows = res.summary()
    assert [r["params"] for r in rows] == [{"alpha": 0.1}, {"alpha": 10.0}]
    for row, recs in zip(rows, (res.records[:2], res.records[2:])):
        values = [r["metrics"]["MAE"] for r in recs]
        assert row["runs"] == 2 and row["MAE"]["mean"] == pytest.approx(np.mean(values))
        assert row["MAE"]["std"] == pytest.approx(np.std(values))
    best = min(rows, key=lambda r: r["MAE"]["mean"])
    assert res.best() == best and res.best("MAE") == best
    acc = grid("fgd", "phishing", max_samples=60, metrics=["accuracy"], params={"C": [0.5, 3]})
    rows = acc.summary()
    assert acc.best()["Accuracy"]["mean"] == max(r["Accuracy"]["mean"] for r in rows)
    doc = json.loads(json.dumps(res.to_dict()))
    assert len(doc["records"]) == 4 and doc["scheduler"] == "serial"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(learners="svm"), ValueError, "unknown learner 'svm'"),
        (dict(params={"zeta": [1]}), ValueError, "no learner takes parameter 'zeta'"),
        (dict(learners={"fgd": {"alpha": [1]}}), ValueError, "'fgd' has no parameter 'alpha'"),
        (dict(learners={"fgd": {}}, params={"eta": [1]}), ValueError, "not both"),
        (dict(seeds=0), ValueError, "seeds must be >= 1"),
        (dict(C=0.0), ValueError, "C must be finite and > 0"),
        (dict(metrics=["auc2"]), ValueError, "unknown metric 'auc2'"),
        (dict(workers=0), ValueError, "workers must be a positive integer"),
        (dict(scheduler=3), TypeError, "scheduler must be"),
        (dict(datasets=[3]), TypeError, "datasets must be"),
    ],
)
def test_grid_mistakes_are_caught_before_running(kwargs, error, message):
    args = {"learners": ["kons", "fgd"], "datasets": "sinc", **kwargs}
    with pytest.raises(error, match=message):
        grid(args.pop("learners"), args.pop("datasets"), **args)


def test_scheduler_address_connection_and_workers(client):
    res = grid("fgd", "sinc", data_params={"n": 20}, scheduler=client.scheduler.address,
               workers=2)
    assert res.records[0]["status"] == "ok" and res.scheduler == client.scheduler.address
    with pytest.raises(ConnectionError, match="has 2 workers; waited 0.5 s for 3"):
        grid("fgd", "sinc", scheduler=client.scheduler.address, workers=3, timeout=0.5)
    with pytest.raises(ConnectionError, match="cannot connect to the Dask scheduler"):
        grid("fgd", "sinc", scheduler="tcp://127.0.0.1:9", timeout=0.5)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install okoco\[distributed\]"):
        grid("fgd", "sinc", scheduler="local")
    code = ("import sys; sys.modules['dask'] = sys.modules['distributed'] = None\n"
            "import okoco, okoco.distributed\n"
            "r = okoco.distributed.grid('fgd', 'sinc', data_params={'n': 10})\n"
            "print(r.records[0]['status'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ---------------------------------------------------------------------------- CLI
runner = CliRunner()
COMPARE = ["compare", "sinc", "-d", "n=60", "-l", "kons", "-l", "fgd", "--seeds", "2"]


def summary(result) -> list:
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["summary"]
    return [{k: v for k, v in row.items() if k not in ("us_per_sample", "memory_bytes")}
            for row in rows]


def test_cli_compare_on_local_cluster_and_on_an_address(client):
    serial = summary(runner.invoke(app, [*COMPARE, "--json"]))
    local = runner.invoke(app, [*COMPARE, "--json", "--scheduler", "local", "--workers", "2"])
    assert summary(local) == serial
    address = runner.invoke(app, [*COMPARE, "--scheduler", client.scheduler.address])
    assert address.exit_code == 0, address.stderr
    assert "kons" in address.stdout and "±" in address.stdout
    progress = address.stderr.splitlines()
    assert len(progress) == 4 and all(line.startswith("[") for line in progress)
    assert "[4/4] ok" in address.stderr
    quiet = runner.invoke(app, [*COMPARE, "--json", "-q", "--scheduler",
                                client.scheduler.address])
    assert summary(quiet) == serial and quiet.stderr == ""


def test_cli_compare_reports_failed_runs(client, tmp_path):
    out = tmp_path / "r.csv"
    result = runner.invoke(app, [*COMPARE, "-p", "alpha=-1", "-q", "-o", str(out),
                                 "--scheduler", client.scheduler.address])
    assert result.exit_code == 1
    failed = result.stderr.strip().splitlines()
    assert len(failed) == 2 and all(line.startswith("failed: kons alpha=-1") for line in failed)
    assert "alpha must be a real number > 0" in failed[0]
    assert "fgd" in result.stdout and "kons" not in result.stdout
    assert [r.split(",")[:2] for r in out.read_text().splitlines()[1:]] == [
        ["fgd", "0"], ["fgd", "1"]]
    every = ["compare", "sinc", "-d", "n=20", "-l", "kons", "-p", "alpha=-1", "-q"]
    here = runner.invoke(app, every)
    there = runner.invoke(app, [*every, "--scheduler", client.scheduler.address])
    assert here.exit_code == there.exit_code == 2
    assert there.stderr == here.stderr and "alpha must be a real number" in here.stderr


# ---------------------------------------------------------------------------- SQUEAK.merge
def fresh(x: np.ndarray, qbar: int) -> SQUEAK:
    """A dictionary holding one new point with qbar copies at probability 1: the new material
    of one sequential SQUEAK step (not reachable through update, hence the internals)."""
    d = SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=qbar)
    d._commit(*d._features.encode(x))
    d._K, d._p, d._Q = np.array([[1.0]]), np.array([1.0]), np.array([qbar])
    d._store(0, 1.0, x)
    d.n_seen = 1
    return d


def test_sequential_squeak_is_merging_one_fresh_point_at_a_time():
    X = np.random.default_rng(3).normal(size=(150, 2))
    seq = SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=10, seed=7)
    seq.update(X[0])
    merged = copy.deepcopy(seq)
    for x in X[1:]:
        seq.update(x)
        merged = merged.merge(fresh(x, 10), seed=merged._rng)  # same generator, continued
    np.testing.assert_array_equal(merged.indices, seq.indices)
    np.testing.assert_array_equal(merged.copies, seq.copies)
    np.testing.assert_array_equal(merged.probabilities, seq.probabilities)
    np.testing.assert_array_equal(merged.weights, seq.weights)
    np.testing.assert_array_equal(merged.atoms, seq.atoms)
    assert merged.n_seen == seq.n_seen == 150 and seq.size < 150


def merged_eq5_literal(K, a, b, eps, gamma, qbar):
    """Eq. 5 with every copy of both dictionaries as its own column of S-bar."""
    members = [(i, Q, p) for i, Q, p in zip(a.indices, a.copies, a.probabilities)]
    members += [(i + a.n_seen, Q, p) for i, Q, p in zip(b.indices, b.copies, b.probabilities)]
    cols = np.array([i for i, Q, _ in members for _ in range(Q)])
    s = np.array([(qbar * p) ** -0.5 for _, Q, p in members for _ in range(Q)])
    Sbar = np.zeros((K.shape[0], cols.size))
    Sbar[cols, np.arange(cols.size)] = s
    M = Sbar.T @ K @ Sbar + gamma * np.eye(cols.size)
    return np.array([(1 - eps) / gamma * (K[i, i] - K[:, i] @ Sbar @ np.linalg.solve(
        M, Sbar.T @ K[:, i])) for i, _, _ in members])


def test_merge_scores_equal_literal_eq5_and_invariants():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(160, 2))
    K = RBF(gamma=0.5)(X, X)
    eps, gamma, qbar = 0.5, 2.0, 6
    a = SQUEAK(RBF(gamma=0.5), alpha=gamma, eps=eps, qbar=qbar, seed=1)
    b = SQUEAK(RBF(gamma=0.5), alpha=gamma, eps=eps, qbar=qbar, seed=2)
    a.update_many(X[:90])
    b.update_many(X[90:])
    before = [copy.deepcopy(vars(d)) for d in (a, b)]
    ab = a.merge(b, seed=0)
    np.testing.assert_allclose(ab.last_scores, merged_eq5_literal(K, a, b, eps, gamma, qbar),
                               rtol=1e-8, atol=1e-12)
    union = np.r_[a.indices, b.indices + 90]
    p_old = dict(zip(union, np.r_[a.probabilities, b.probabilities]))
    Q_old = dict(zip(union, np.r_[a.copies, b.copies]))
    assert set(ab.indices) <= set(union) and ab.size < union.size
    for i, p, Q in zip(ab.indices, ab.probabilities, ab.copies):
        assert p <= p_old[i] and 1 <= Q <= Q_old[i]
    np.testing.assert_allclose(ab.weights, ab.copies / (qbar * ab.probabilities))
    np.testing.assert_array_equal(ab.atoms, X[ab.indices])
    np.testing.assert_allclose(ab._K, K[np.ix_(ab.indices, ab.indices)])
    assert ab.n_seen == 160
    for d, state in zip((a, b), before):  # the inputs are untouched
        np.testing.assert_array_equal(d.indices, state["_indices"][: state["_size"]])
        assert d._rng.bit_generator.state == state["_rng"].bit_generator.state
    ab.update(X[0] + 0.01)  # the merged dictionary goes on as a sequential one
    assert ab.n_seen == 161


def test_merge_unites_dict_features_like_zero_padded_arrays():
    X = np.random.default_rng(5).normal(size=(80, 3))
    X[:40, 2] = 0.0
    X[40:, 0] = 0.0
    names = ["a", "b", "c"]

    def build(rows, keys, seed, as_dict):
        d = SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=8, seed=seed)
        for row in rows:
            d.update({k: row[names.index(k)] for k in keys} if as_dict else row)
        return d

    da = build(X[:40], ["a", "b"], 1, True).merge(build(X[40:], ["b", "c"], 2, True), seed=3)
    ar = build(X[:40], names, 1, False).merge(build(X[40:], names, 2, False), seed=3)
    assert da.feature_names == names
    np.testing.assert_array_equal(da.indices, ar.indices)
    np.testing.assert_array_equal(da.atoms, ar.atoms)
    np.testing.assert_allclose(da.weights, ar.weights)


def test_merge_rejects_what_cannot_be_merged():
    k = RBF(gamma=0.5)
    a = SQUEAK(k, alpha=2.0, qbar=5, seed=0)
    a.update_many(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="different alpha"):
        a.merge(SQUEAK(k, alpha=3.0, qbar=5))
    with pytest.raises(ValueError, match="different kernels"):
        a.merge(SQUEAK(RBF(gamma=1.0), alpha=2.0, qbar=5))
    with pytest.raises(TypeError, match="another SQUEAK"):
        a.merge(object())
    wide = SQUEAK(k, alpha=2.0, qbar=5)
    wide.update(np.zeros(3))
    with pytest.raises(ValueError, match="different numbers of features"):
        a.merge(wide)
    dicts = SQUEAK(k, alpha=2.0, qbar=5)
    dicts.update({"x": 1.0})
    with pytest.raises(TypeError, match="arrays with one fed dicts"):
        a.merge(dicts)
    empty = a.merge(SQUEAK(k, alpha=2.0, qbar=5), seed=0)  # an empty side is allowed
    assert empty.n_seen == 3 and set(empty.indices) <= {0, 1, 2}


# ---------------------------------------------------------------------------- merge tree
def test_plan_pairs_adjacent_blocks():
    assert plan(4) == [[(0, 1), (2, 3)], [(0, 1)]]
    assert plan(3) == [[(0, 1)], [(0, 1)]]
    assert [len(level) for level in plan(8)] == [4, 2, 1]


def accuracy_check(d, K, n, qbar=50, eps=0.5, gamma=2.0) -> bool:
    """The end-of-stream conditions of tests/test_dictionary.py::squeak_check."""
    d_eff = effective_dimension(K, gamma)
    return bool(psi_error(K, gamma, weights_vector(d, n)) <= eps
                and d.probabilities.sum() <= d_eff
                and qbar * d_eff * 0.2 <= d.n_copies <= qbar * d_eff + 3 * np.sqrt(qbar * d_eff)
                and d.size < n)


def squeak_problem(seed: int, n: int = 400) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, 3))
    X[: n // 10] *= 4.0
    return X


def test_merge_tree_on_cluster_is_accurate_and_equals_serial(client):
    X = squeak_problem(0)
    K = RBF(gamma=0.5)(X, X)
    timings: dict = {}
    d = merge_tree(X, RBF(gamma=0.5), partitions=4, seed=0, scheduler=client, timings=timings)
    assert d.n_seen == 400 and accuracy_check(d, K, 400)
    assert set(timings) == {"build_s", "merge_s", "total_s"}
    serial = merge_tree(X, RBF(gamma=0.5), partitions=4, seed=0)
    np.testing.assert_array_equal(d.indices, serial.indices)
    np.testing.assert_array_equal(d.weights, serial.weights)
    assert merge_tree(X, RBF(gamma=0.5), partitions=4, seed=1).weights.tolist() != \
        serial.weights.tolist()


def test_one_partition_is_sequential_squeak():
    X = squeak_problem(1, n=150)
    d = merge_tree(X, RBF(gamma=0.5), partitions=1, qbar=10, seed=9)
    seq = SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=10,
                 seed=np.random.SeedSequence(9).spawn(1)[0])
    seq.update_many(X)
    np.testing.assert_array_equal(d.indices, seq.indices)
    np.testing.assert_array_equal(d.weights, seq.weights)
    with pytest.raises(ValueError, match="partitions"):
        merge_tree(X, RBF(), partitions=0)
    with pytest.raises(ValueError, match="eps"):
        merge_tree(X, RBF(), eps=2.0)


@pytest.mark.slow
def test_merge_tree_accuracy_over_seeds():
    """Sequential SQUEAK passes this check on 8 of these 10 problems; the trees must too."""
    for partitions in (2, 4, 8):
        passed = 0
        for seed in range(10):
            X = squeak_problem(seed)
            d = merge_tree(X, RBF(gamma=0.5), partitions=partitions, seed=seed)
            passed += accuracy_check(d, RBF(gamma=0.5)(X, X), 400)
        assert passed >= 8, (partitions, passed)


def test_nystrom_krr_on_merged_dictionary_matches_dense_formula(client):
    rng = np.random.default_rng(6)
    X = rng.uniform(-3, 3, size=(240, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=240)
    T = rng.uniform(-3, 3, size=(30, 2))
    k, alpha, dictionary_alpha = RBF(gamma=0.5), 0.3, 2.0
    model = nystrom_krr(X, y, k, alpha=alpha, dictionary_alpha=dictionary_alpha, qbar=10,
                        partitions=3, seed=2, scheduler=client)
    d = model.dictionary_
    assert d.n_seen == 240 and d.size < 240
    Z = np.vstack([X, T])
    Kt = nystrom_dense(k(Z, Z), d.indices, d.weights, dictionary_alpha)  # K~, train and test
    dual = np.linalg.solve(Kt[:240, :240] + alpha * np.eye(240), y)
    np.testing.assert_allclose(model.fitted_, Kt[:240, :240] @ dual, atol=1e-8)
    np.testing.assert_allclose(model.predict(T), Kt[240:, :240] @ dual, atol=1e-8)
