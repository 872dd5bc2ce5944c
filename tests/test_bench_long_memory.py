"""benchmarks/bench_long_memory.py: a candidate expert recorded alone and appended to a pool
is scored as an ``Auto`` holding it as one more expert would score, against real replays."""

import importlib

import numpy as np
import pytest

from okoco import kernels
from okoco.learners import KONS, Auto

lm = importlib.import_module("benchmarks.bench_long_memory")
families = importlib.import_module("benchmarks.bench_families")

WINDOW = 30
GRID = ((0.2, 0.1, "hessian", 1.0), (3.0, 0.1, "hessian", 1.0), (0.5, 0.03, "hessian", 0.2))
EXTRA = (1.0, 0.3, "hessian", 1.0)  # a candidate Auto can hold: a KONS over the same window


def _candidate(loss, d):
    return KONS(kernel=kernels.RBF(1.0 / d), loss=loss, alpha=0.3, eta="hessian",
                max_size=WINDOW)


def _real(task, rows, mode, subset):
    """A real replay of Auto with the experts ``subset`` of GRID + (EXTRA,)."""
    grid = GRID + (EXTRA,)

    def make(loss):
        model = Auto(max_size=WINDOW) if loss is None else Auto(loss=loss, max_size=WINDOW)
        model._build_experts = lambda d: Auto._build_experts(model, d, [grid[i] for i in subset])
        return model
    return families.run_one(lambda task_, d: lm._pipeline(make, task_, mode), task, rows)[0]


@pytest.mark.parametrize(("name", "mode"), [("sea-v0/0", "own"), ("friedman/0", "own"),
                                            ("friedman/0", "tss")])
def test_a_recorded_candidate_is_scored_as_an_auto_holding_it(tmp_path, name, mode):
    task, loader = families.training_families(120, [0])[name]
    rows = loader(120)
    pool = lm.record_auto_experts(name, task, rows, mode, grid=GRID, window=WINDOW,
                                  directory=tmp_path)
    inside = lm.record_auto_experts(name, task, rows, mode, grid=GRID + (EXTRA,),
                                    window=WINDOW, directory=tmp_path)
    alone = lm.record_expert(name, task, rows, _candidate, "extra", mode, directory=tmp_path)
    # the candidate alone predicts what it predicts inside Auto, on the same targets
    k = len(GRID) + 1
    np.testing.assert_allclose(alone[:, 0], inside[:, k - 1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(alone[:, 1], inside[:, 2 * k - 1], rtol=0, atol=1e-9)
    merged = lm.merge(pool, [0, 1, 2], [alone])
    if mode == "tss":
        merged = lm.in_target_units(merged, [y for _, y in rows])
    for subset in ([0, 1, 2, 3], [0, 3], [3], [0, 2]):
        offline = families.mixture_error(merged, task, np.array([subset]))[0]
        assert offline == pytest.approx(_real(task, rows, mode, subset), rel=1e-9, abs=1e-12)


def test_score_streams_and_merge_checks(tmp_path):
    task, loader = families.training_families(80, [0])["friedman/0"]
    rows = loader(80)
    grid = GRID + ((0.2, 0.3, "hessian", 1.0), (0.5, 0.1, "hessian", 0.5))  # five experts
    pool = lm.record_auto_experts("friedman/0", task, rows, "own", grid=grid, window=WINDOW,
                                  directory=tmp_path)
    alone = lm.record_expert("friedman/0", task, rows, _candidate, "extra", "own",
                             directory=tmp_path)
    merged = lm.merge(pool, list(range(5)), [alone, alone])
    row = lm.score_streams({"s": (task, merged)}, ["a", "b"])["s"]
    assert row["auto"] == families.mixture_error(pool, task, np.array([list(range(5))]))[0]
    assert row["a"]["alone"] == pytest.approx(np.mean(np.abs(
        pool[:, -4] + pool[:, -3] * alone[:, 0] - alone[:, 2])), rel=1e-12)
    assert row["a"] == row["b"]
    assert set(row["pairs"]) == {"a + b"}
    other = lm.record_expert("friedman/0", task, loader(60), _candidate, "extra", "own",
                             directory=tmp_path)
    with pytest.raises(ValueError, match="not of the pool's stream"):
        lm.merge(pool, [0], [other])


def test_the_summary_reads_each_auto_plus_set_as_a_real_auto_scores_it(tmp_path):
    """``plus_error`` over ``score_streams`` (a candidate added, swapped in for one of the five,
    or two added) is the error of ``long_auto``, the real Auto holding them (a Sketched-KONS
    among them, run by Auto's step as its own KONS are)."""
    task, loader = families.training_families(80, [0])["sea-v0/0"]
    rows = loader(80)
    names = ["SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)", "KONS(rbf=3/d, alpha=0.1, W=1000)"]
    build = lm.candidates()
    pool = lm.record_auto_experts("sea-v0/0", task, rows, directory=tmp_path)
    merged = lm.merge(pool, list(range(5)), [lm.record_expert(
        "sea-v0/0", task, rows, build[k], k, directory=tmp_path) for k in names])
    row = lm.score_streams({"s": (task, merged)}, names)["s"]
    for dropped, extras in (((), (names[0],)), ((1,), (names[0],)), ((), tuple(names))):
        real = families.run_one(lambda task_, d, e=extras, x=dropped: lm._pipeline(
            lambda loss: lm.long_auto(e, loss, x), task_, "own"), task, rows)[0]
        assert lm.plus_error(row, names, dropped, extras) == pytest.approx(real, abs=1e-12)
