"""okoco.experiment: the typed run description (RunSpec), run(), and the one rule for names."""

from __future__ import annotations

import dataclasses
import json

import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import metrics, preprocessing
from typer.testing import CliRunner

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
    model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | KONS(C=3.0))
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
