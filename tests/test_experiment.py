"""okoco.experiment: the typed run description (RunSpec), run(), and the one rule for names."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import metrics, preprocessing
from typer.testing import CliRunner

from okoco import preprocessing as okp
from okoco.cli import app
from okoco.experiment import Checkpoint, RunSpec, UserError, resolve, run
from okoco.learners import KONS


def test_a_run_spec_is_frozen_and_checked_by_the_house_validator():
    spec = RunSpec("sinc", "kons")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.C = 2.0  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"^RunSpec: C must be a real number > 0, got -1.0$"):
        RunSpec("sinc", C=-1.0)
    with pytest.raises(TypeError, match=r"^RunSpec: max_samples must be .*, got 'x' \(str\)$"):
        RunSpec("sinc", max_samples="x")
    with pytest.raises(TypeError, match="RunSpec: learner"):
        RunSpec("sinc", learner=3)
    with pytest.raises(ValueError, match="RunSpec: checkpoints must be >= 1"):
        RunSpec("sinc", checkpoints=0)
    with pytest.raises(TypeError, match="run takes a RunSpec"):
        run({"dataset": "sinc"})


def test_run_is_what_the_cli_runs_and_what_river_computes():
    spec = RunSpec("trump-approval", "kons", max_samples=300)
    result = run(spec)
    # river's evaluation of the pipeline the CLI builds (okoco's feature scaler)
    model = preprocessing.TargetStandardScaler(okp.StandardScaler() | KONS(C=3.0))
    expected = river_evaluate.progressive_val_score(
        river_datasets.TrumpApproval().take(300), model, metrics.MAE()).get()
    assert result.final["MAE"] == expected
    cli = json.loads(CliRunner().invoke(app, ["replay", "trump-approval", "-l", "kons", "-n",
                                              "300", "--json"]).stdout)
    assert cli["metrics"]["MAE"] == expected
    assert result.meta["learner"] == "kons" and result.meta["model"] == "KONS()"


def test_run_with_a_checkpoint_resumes_to_the_same_result(tmp_path):
    spec = RunSpec("sinc", "fgd", data_params={"n": 200}, checkpoints=(50, 150))
    whole = run(spec)
    path = tmp_path / "c.npz"
    run(dataclasses.replace(spec, max_samples=120), Checkpoint(path, every=40))
    seen = []
    resumed = run(spec, Checkpoint(path, resume=True, on_resume=seen.append))
    assert seen == [120]
    # the shorter run's last row (t = 120) stays; the rows of the longer run follow its grid
    assert resumed["t"].tolist() == [50, 120, 150, 200]
    at = dict(zip(resumed["t"].tolist(), resumed.columns["MAE"]))
    assert [at[t] for t in (50, 150, 200)] == whole.columns["MAE"]


def test_names_resolve_by_one_rule_with_suggestions():
    assert resolve("learner", " Sketched_KONS ", ["kons", "sketched-kons"]) == "sketched-kons"
    with pytest.raises(UserError, match="did you mean 'kons'"):
        resolve("learner", "kosn", ["kons", "fgd"])
    with pytest.raises(UserError, match=r"unknown learner 3; choose from"):
        resolve("learner", 3, ["kons"])


# -- prediction intervals (issue 30) ------------------------------------------------------------


def _interval_loop(dataset: str, coverage: float, n: int, make_learner):
    """Coverage, mean width and mean Winkler score recomputed by hand: the same stream through
    ``IntervalRegressor`` around the model ``okoco replay`` builds, scored in a plain loop."""
    import math

    from okoco import datasets, preprocessing
    from okoco.intervals import IntervalRegressor

    model = IntervalRegressor(preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | make_learner()), coverage=coverage)
    inside, widths, scores, band = 0, [], [], []
    a = 1.0 - coverage
    for x, y in datasets.load(dataset, n=n, seed=0):
        low, high = model.predict_one(x, with_interval=True)
        inside += low <= y <= high
        if math.isfinite(high - low):
            widths.append(high - low)
            scores.append(high - low + 2 / a * max(low - y, 0.0) + 2 / a * max(y - high, 0.0))
        band.append((low, high))
        model.learn_one(x, y)
    return inside / n, sum(widths) / len(widths), sum(scores) / len(scores), band


def test_a_run_with_intervals_reports_what_a_plain_loop_computes():
    from okoco.learners import KRLS

    spec = RunSpec("sinc", "krls", data_params={"n": 300}, interval=0.9, checkpoints=(100,))
    result = run(spec)
    coverage, width, score, band = _interval_loop("sinc", 0.9, 300, lambda: KRLS(C=3.0))
    final = result.final
    assert final["coverage"] == coverage and abs(coverage - 0.9) < 0.05
    assert final["mean_width"] == pytest.approx(width, rel=1e-12)
    assert final["interval_score"] == pytest.approx(score, rel=1e-12)
    assert result["t"].tolist() == [100, 300] and len(result.columns["coverage"]) == 2
    assert result.meta["interval"] == 0.9
    # the band of the last samples is the interval each was predicted with (an infinite
    # bound, before the calibration has enough scores, is kept as NaN: JSON has no inf)
    assert result.meta["band"]["t"] == list(range(1, 301))
    expected = [lo if math.isfinite(lo) else math.nan for lo, _ in band]
    assert sum(not math.isfinite(lo) for lo, _ in band) > 0
    assert result.meta["band"]["low"] == pytest.approx(expected, rel=1e-12, nan_ok=True)


def test_intervals_need_a_regression_task_and_a_coverage_in_0_1():
    with pytest.raises(UserError, match="regression dataset; 'phishing' is a binary task"):
        run(RunSpec("phishing", "fgd", interval=0.9, max_samples=20))
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="interval"):
            RunSpec("sinc", interval=bad)
    with pytest.raises(TypeError, match="interval"):
        RunSpec("sinc", interval="0.9")


def test_a_run_with_intervals_resumes_to_the_same_result(tmp_path):
    path = tmp_path / "run.ckpt.npz"
    spec = RunSpec("sinc", "krls", data_params={"n": 400}, interval=0.8,
                   checkpoints=(100, 200, 300))
    whole = run(spec)
    run(dataclasses.replace(spec, max_samples=250), Checkpoint(path, every=50))
    resumed = run(spec, Checkpoint(path, every=50, resume=True))
    # the stopped run's last row (t = 250) stays in the curves; every other row is the same
    rows = [i for i, t in enumerate(resumed.columns["t"]) if t != 250]
    for col in ("t", "MAE", "coverage", "mean_width", "interval_score"):
        assert [resumed.columns[col][i] for i in rows] == whole.columns[col], col
    assert resumed.meta["band"] == whole.meta["band"]
    # another coverage (or none) is another run: refused before anything is restored
    with pytest.raises(ValueError, match="interval 0.8, not 0.9"):
        run(RunSpec("sinc", "krls", data_params={"n": 400}, interval=0.9),
            Checkpoint(path, resume=True))
    with pytest.raises(ValueError, match="interval 0.8, not None"):
        run(RunSpec("sinc", "krls", data_params={"n": 400}), Checkpoint(path, resume=True))


def test_a_grid_with_intervals_runs_the_same_spec():
    from okoco import distributed

    res = distributed.grid(["krls"], [("sinc", {"n": 200})], interval=0.9, checkpoints=(100,))
    alone = run(RunSpec("sinc", "krls", data_params={"n": 200}, interval=0.9,
                        checkpoints=(100,)))
    (result,), (record,) = res.results, res.records
    assert result.columns["coverage"] == alone.columns["coverage"]
    assert record["coverage"] == alone.final["coverage"]
    assert record["interval_score"] == alone.final["interval_score"]
    with pytest.raises(ValueError, match="interval must be None or a coverage in"):
        distributed.grid(["krls"], "sinc", interval=1.5)
