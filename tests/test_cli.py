"""Tests of the okoco command line: CliRunner and a real subprocess, outputs and error paths."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import metrics, preprocessing
from typer.testing import CliRunner

from okoco import preprocessing as okp
from okoco.cli import app, learner_registry, parse_value
from okoco.learners import KONS, Auto

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def csv_file(tmp_path):
    def make(text: str, name: str = "data.csv"):
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return make


def test_quick_start_default_replay_is_auto_as_in_python():
    result = run("replay", "trump-approval", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    # Auto standardizes the targets itself: the CLI does not wrap it in TargetStandardScaler
    model = okp.StandardScaler() | Auto()
    expected = river_evaluate.progressive_val_score(river_datasets.TrumpApproval(), model,
                                                    metrics.MAE()).get()
    assert summary["learner"] == "auto" and summary["metrics"]["MAE"] == expected
    assert summary["n_samples"] == 1001


def test_exact_kons_still_matches_river():
    result = run("replay", "trump-approval", "-l", "kons", "-n", "300", "--json")
    model = preprocessing.TargetStandardScaler(okp.StandardScaler() | KONS(C=3.0))
    expected = river_evaluate.progressive_val_score(
        river_datasets.TrumpApproval().take(300), model, metrics.MAE()).get()
    assert json.loads(result.stdout)["metrics"]["MAE"] == expected


def test_auto_is_the_same_learner_by_default_by_name_and_in_compare():
    default = json.loads(run("replay", "sinc", "-d", "n=200", "--json").stdout)
    named = json.loads(run("replay", "sinc", "-d", "n=200", "-l", "auto", "--json").stdout)
    assert default["learner"] == named["learner"] == "auto"
    assert default["metrics"] == named["metrics"]
    compared = json.loads(run("compare", "sinc", "-d", "n=200", "-l", "auto", "--json").stdout)
    assert compared["summary"][0]["MAE"]["mean"] == default["metrics"]["MAE"]
    plain = run("replay", "sinc", "-d", "n=50", "-l", "fgd")
    assert "learner     fgd (FunctionalGD())" in plain.stdout  # the class defaults
    assert "unknown kernel 'rfb' in 'rbf+rfb'" in error_line(
        run("replay", "sinc", "-l", "kons", "-k", "rbf+rfb"))


def test_learners_lists_the_exact_model_each_name_runs():
    rows = {r["name"]: r for r in json.loads(run("learners", "--json").stdout)}
    assert rows["auto"]["default"] and not rows["fgd"]["default"]
    assert rows["auto"]["runs"]["regression"] == "Auto()"
    assert rows["auto"]["runs"]["binary"] == "BinaryClassifier(Auto(loss=Logistic()))"
    assert rows["krls"]["runs"]["regression"] == "KRLS(C=3.0)"  # the CLI's C, not the class's
    text = run("learners").stdout
    assert text.splitlines()[0].startswith("auto (default)")


def test_replay_text_summary():
    result = run("replay", "sinc", "-d", "n=60", "-l", "fgd", "-p", "eta=0.3")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for word in ("dataset", "sinc (60 samples, d=1, regression)",
                 "FunctionalGD(eta=0.3)",  # kernel and C: the learner defaults
                 "features standardised online; targets standardised online", "MAE",
                 "cum. loss", "dictionary", "us/sample", "memory"):
        assert word in out


def test_summary_says_what_scales_the_targets():
    """--no-scale-target drops the pipeline's target scaler and tells Auto, which standardizes
    its targets itself, not to (it changed nothing before: the summary said "standardised")."""
    def scaling(*args):
        result = run("replay", "sinc", "-d", "n=30", *args)
        assert result.exit_code == 0, result.stderr
        return next(line for line in result.stdout.splitlines() if line.startswith("scaling"))

    assert scaling().endswith("targets standardised online")
    assert scaling("--no-scale-target").endswith("targets raw")
    default = json.loads(run("replay", "sinc", "-d", "n=60", "--json").stdout)["metrics"]
    raw = json.loads(run("replay", "sinc", "-d", "n=60", "--json", "--no-scale-target").stdout)
    learner = run("replay", "sinc", "-d", "n=60", "--no-scale-target").stdout
    assert raw["metrics"] != default and "Auto(scale_target=False)" in learner
    assert scaling("--no-scale-target", "-p", "scale_target=false").endswith("targets raw")
    assert scaling("-l", "kons", "--no-scale-target").endswith("targets raw")


def test_replay_binary_and_options():
    result = run("replay", "phishing", "-n", "100", "-l", "sketched-kons", "--seed", "1",
                 "-k", "laplacian", "--gamma", "0.5", "--no-scale", "-m", "accuracy",
                 "-m", "logloss", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["n_samples"] == 100 and set(summary["metrics"]) == {"Accuracy", "LogLoss"}
    assert summary["task"] == "binary"


def test_quiet_prints_nothing_but_writes_the_outputs(tmp_path):
    out = tmp_path / "r.json"
    result = run("replay", "sinc", "-d", "n=6000", "-n", "30", "-l", "kons", "-q", "-o",
                 str(out))
    assert result.exit_code == 0
    assert result.stdout == "" and result.stderr == ""
    assert json.loads(out.read_text())["final"]["t"] == 30
    long = run("replay", "sinc", "-d", "n=6000", "-l", "kons", "-q", "--checkpoints", "0")
    assert long.exit_code == 2 and "--checkpoints" in long.stderr  # errors still show


def test_version():
    from okoco import __version__

    result = run("--version")
    assert result.exit_code == 0 and result.stdout == f"okoco {__version__}\n"


def test_no_scaling_flags_are_honoured():
    scaled = json.loads(run("replay", "sinc", "-d", "n=40", "--json").stdout)
    raw = json.loads(run("replay", "sinc", "-d", "n=40", "--no-scale", "--no-scale-target",
                         "--json").stdout)
    assert scaled["metrics"]["MAE"] != raw["metrics"]["MAE"]


def test_replay_outputs_parse(tmp_path):
    out_json, out_csv, png = tmp_path / "run.json", tmp_path / "run.csv", tmp_path / "run.png"
    assert run("replay", "sinc", "-d", "n=50", "-q", "-o", str(out_json), "--plot",
               str(png), "--checkpoints", "5").exit_code == 0
    assert run("replay", "sinc", "-d", "n=50", "-q", "-o", str(out_csv)).exit_code == 0
    doc = json.loads(out_json.read_text())
    assert doc["columns"]["t"][-1] == 50 and doc["meta"]["learner"] == "auto"
    rows = list(csv.DictReader(out_csv.open()))
    assert rows[-1]["t"] == "50" and float(rows[-1]["MAE"]) == pytest.approx(doc["final"]["MAE"])
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.json", "run.png"]


def test_csv_file_with_target_column(csv_file):
    path = csv_file("y,a,b\n" + "".join(f"{i % 3},{i},{i * 0.5}\n" for i in range(20)))
    result = run("replay", path, "--target", "y", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["d"] == 2
    assert run("replay", path, "--target", "0", "-q").exit_code == 0


def test_compare_table_outputs_and_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    result = run("compare", "sinc", "-d", "n=40", "-l", "kons", "-l", "sketched-kons",
                 "-l", "fgd", "--seeds", "2", "-o", str(out), "--plot", str(png),
                 "-p", "alpha=0.5")
    assert result.exit_code == 0, result.stderr
    assert "kons" in result.stdout and "±" in result.stdout
    doc = json.loads(out.read_text())
    assert [row["learner"] for row in doc["summary"]] == ["kons", "sketched-kons", "fgd"]
    assert len(doc["runs"]["fgd"]) == 2 and doc["summary"][0]["runs"] == 2
    assert set(doc["summary"][0]["MAE"]) == {"mean", "std"}
    assert png.exists()
    csv_out = tmp_path / "r.csv"
    assert run("compare", "sinc", "-d", "n=30", "-l", "fgd", "--seeds", "3", "-o",
               str(csv_out), "-q").exit_code == 0
    rows = list(csv.DictReader(csv_out.open()))
    assert [r["seed"] for r in rows] == ["0", "1", "2"] and rows[0]["n_samples"] == "30"
    # different seeds give different synthetic data
    assert len({r["MAE"] for r in rows}) == 3


def test_compare_json_and_shuffle():
    result = run("compare", "chick-weights", "-l", "fgd", "--seeds", "2", "--shuffle",
                 "-n", "50", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)["summary"][0]
    assert summary["MAE"]["std"] > 0  # two orders, two results


def test_datasets_and_learners_listings():
    result = run("datasets")
    assert result.exit_code == 0 and "trump-approval" in result.stdout and "a9a" in result.stdout
    rows = json.loads(run("datasets", "--json").stdout)
    assert {"name": "phishing", "n": 1250, "d": 9, "task": "binary"}.items() <= rows[1].items()
    listing = run("learners")
    assert listing.exit_code == 0 and "alpha = 0.1" in listing.stdout
    learners = {row["name"]: row for row in json.loads(run("learners", "--json").stdout)}
    assert set(learners) == set(learner_registry())
    assert learners["sketched-kons"]["parameters"]["beta"] == 10.0
    assert learners["fgd"]["parameters"]["eta"] == 0.5


def test_parse_value():
    assert parse_value("1e-3") == 0.001 and parse_value("True") is True
    assert parse_value("'exp-concave'") == "exp-concave" and parse_value("exp-concave")


def test_help_documents_preprocessing():
    result = run("replay", "--help")
    assert result.exit_code == 0
    assert "--no-scale" in result.stdout and "StandardScaler" in result.stdout
    assert "TargetStandardScaler" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "no-such-dataset"], "unknown dataset 'no-such-dataset'"),
        (["replay", "missing/file.csv"], "no such file"),
        (["replay", "sinc", "-l", "svm"], "unknown learner 'svm'"),
        (["replay", "sinc", "-p", "foo=1"], "has no parameter 'foo'"),
        (["replay", "sinc", "-p", "alpha"], "must look like key=value"),
        (["replay", "sinc", "-l", "kons", "-p", "alpha=-1"], "alpha must be a real number > 0"),
        (["replay", "sinc", "-p", "kernel=rbf"], "set kernel with --kernel"),
        (["replay", "sinc", "-l", "kons", "-k", "sigmoid"], "unknown kernel 'sigmoid'"),
        (["replay", "sinc", "-l", "kons", "-k", "rbf", "--degree", "3"], "takes no --degree"),
        (["replay", "sinc", "--gamma", "-1"], "gamma"),
        (["replay", "sinc", "--loss", "hinge"], "unknown loss 'hinge'"),
        (["replay", "sinc", "--loss", "logistic"], "regression task"),
        (["replay", "sinc", "-m", "accuracy"], "does not fit a regression task"),
        (["replay", "sinc", "-m", "auc2"], "unknown metric"),
        (["replay", "sinc", "--C", "0"], "--C must be finite and > 0"),
        (["replay", "sinc", "-n", "0"], "--max-samples"),
        (["replay", "sinc", "-d", "bogus=1"], "bogus"),
        (["replay", "sinc", "-t", "y"], "--target applies to CSV files"),
        (["replay", "sinc", "-o", "run.txt"], "must end in .json or .csv"),
        (["replay", "sinc", "-o", "no/such/dir/run.json"], "no such directory"),
        (["replay", "sinc", "--plot", "run.gif"], "must end in .png"),
        (["compare", "sinc", "-l", "fgd", "--seeds", "0"], "--seeds"),
        (["compare", "sinc", "-l", "nope"], "unknown learner 'nope'"),
        (["compare", "sinc", "-l", "fgd", "-d", "n=5", "-p", "zeta=1"], "no learner takes"),
    ],
)
def test_user_errors_exit_2_with_one_line(args, message):
    assert message in error_line(run(*args))


def test_file_errors_name_the_line(csv_file):
    bad = csv_file("a,b,y\n1,2,0.5\n3,x,1.5\n5,6,2.5\n")
    strict = ("-d", "non_numeric=error")
    assert "line 3" in error_line(run("replay", bad, *strict))
    assert "'x'" in error_line(run("replay", bad, *strict))
    nan = csv_file("a,b,y\n1,2,0.5\n3,nan,1.5\n5,6,2.5\n", "nan.csv")
    assert run("replay", nan, "-q").exit_code == 0  # the cell is left out of its sample
    assert "line 3" in error_line(run("replay", nan, "-d", "na=error"))
    assert run("replay", nan, "-d", "na=drop", "-q").exit_code == 0
    missing_target = csv_file("a,b\n1,2\n", "t.csv")
    assert "zzz" in error_line(run("replay", missing_target, "--target", "zzz"))


def test_labels_that_do_not_fit(csv_file):
    three = csv_file("a,y\n1,a\n2,b\n3,c\n", "three.csv")
    assert run("replay", three, "-l", "fgd").exit_code == 0  # a multiclass task now runs
    # a binary file whose third class appears only later in the stream
    path = csv_file("a,y\n1,a\n2,b\n3,c\n", "later.csv")
    line = error_line(run("replay", path, "-d", "task=binary"))
    assert "third class" in line or "binary" in line


def test_subprocess_real_command(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "okoco.cli", "replay", "sinc", "-d", "n=40",
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "MAE" in proc.stdout and proc.stderr == ""  # no progress bar: stderr is not a TTY
    assert json.loads(out.read_text())["final"]["t"] == 40
    bad = subprocess.run([sys.executable, "-m", "okoco.cli", "replay", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown dataset 'nope'")
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_compare_scheduler_options_are_documented_and_checked():
    """The cluster paths themselves run in tests/test_distributed.py (a real LocalCluster)."""
    helped = run("compare", "--help")
    assert helped.exit_code == 0
    assert "--scheduler" in helped.stdout and "--workers" in helped.stdout
    assert "workers must be a positive integer" in error_line(
        run("compare", "sinc", "-l", "fgd", "--workers", "0"))
    assert "cannot connect to the Dask scheduler at 'nonsense:::'" in error_line(
        run("compare", "sinc", "-l", "fgd", "-d", "n=10", "--scheduler", "nonsense:::"))


def test_kernel_sums_and_products_on_the_command_line():
    result = run("replay", "sinc", "-d", "n=40", "-l", "fgd", "-k", "rbf+linear*laplacian",
                 "--gamma", "0.5")
    assert result.exit_code == 0, result.stderr
    assert ("Sum(left=RBF(gamma=0.5), right=Product(left=Linear(), right=Laplacian(gamma=0.5)))"
            in result.stdout)
    assert "kernel 'linear+linear' takes no --gamma" in error_line(
        run("replay", "sinc", "-l", "kons", "-k", "linear+linear", "--gamma", "1"))
    assert "unknown kernel 'rfb' in 'rbf+rfb'" in error_line(
        run("replay", "sinc", "-l", "kons", "-k", "rbf+rfb"))


# -- a new user's first hour: long streams, Ctrl-C, rough edges ---------------------------------


def test_long_stream_note_once_for_growing_learners_only(monkeypatch):
    import okoco.cli

    monkeypatch.setattr(okoco.cli, "LONG_STREAM", 100)
    # only a learner configured to keep every sample is named: KONS and FunctionalGD are
    # bounded at their defaults (max_size=500, budget=1000), which the note said they were not
    noted = run("replay", "sinc", "-d", "n=150", "-l", "kons", "-p", "max_size=None")
    assert noted.exit_code == 0
    notes = [line for line in noted.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "kons with max_size=None" in notes[0] and "150 samples" in notes[0]
    assert "-p max_size=500" in notes[0]
    for args in (["-l", "fgd", "-p", "budget=50"], ["-l", "krls"], [], ["-l", "kons"],
                 ["-l", "fgd"], ["-l", "kons", "-p", "max_size=None", "-n", "99"],
                 ["-l", "kons", "-p", "max_size=None", "--json"]):
        quiet = run("replay", "sinc", "-d", "n=150", *args)
        assert quiet.exit_code == 0 and "note:" not in quiet.stderr, args
    fgd = run("replay", "sinc", "-d", "n=150", "-l", "fgd", "-p", "budget=None").stderr
    notes = [line for line in fgd.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "-p budget=1000" in notes[0] and "-l fgd" not in notes[0]


def test_krls_on_bananas_gets_no_growing_cost_note():
    # KRLS's ALD dictionary stays small on a smooth stream (54 atoms on bananas): no note
    out = run("replay", "bananas", "-l", "krls", "--loss", "squared", "-n", "5000")
    assert out.exit_code == 0 and "note:" not in out.stderr, out.stderr


def test_sigint_stops_a_replay_with_the_summary_so_far(tmp_path):
    """A real Ctrl-C (SIGINT) sent to a running `okoco replay` in a subprocess."""
    import signal
    import time

    from conftest import sigint_as_in_a_terminal

    ckpt, out = tmp_path / "run.ckpt.npz", tmp_path / "run.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "okoco.cli", "replay", "sinc", "-d", "n=200000", "-l", "kons",
         "-o", str(out), "--checkpoint", str(ckpt), "--checkpoint-every", "25"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ckpt.exists(), proc.stderr.read() if proc.poll() is not None else "no checkpoint"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    message = [line for line in stderr.splitlines() if line.startswith("interrupted")]
    assert len(message) == 1 and message[0].endswith("of 200,000 samples; the summary so far:")
    done = int(message[0].split()[2].replace(",", ""))
    assert 25 <= done < 200000
    assert f"dataset     sinc ({done} samples, d=1, regression)" in stdout
    assert "MAE" in stdout and "cum. loss" in stdout
    doc = json.loads(out.read_text())
    assert doc["final"]["t"] == done and doc["meta"]["interrupted"] is True
    # the checkpoint is written at the interruption, not left at the last multiple of 25
    from okoco.persistence import read_metadata

    assert read_metadata(ckpt)["progress"]["t"] == done


def test_binary_task_with_a_squared_loss_only_learner_suggests_the_loss():
    line = error_line(run("replay", "phishing", "-l", "krls", "-n", "20"))
    assert "--loss squared" in line
    assert run("replay", "phishing", "-l", "krls", "-n", "20", "--loss", "squared",
               "-q").exit_code == 0


def test_csv_string_labels_point_to_the_target_option(csv_file):
    rows = "".join(f"{'cat' if i % 2 else 'dog'},{i},{i * 3 % 7}\n" for i in range(30))
    path = csv_file("label,a,b\n" + rows, "labels.csv")
    line = error_line(run("replay", path, "-d", "non_numeric=error"))
    assert "-t label" in line and "non_numeric='drop'" in line
    # encoded by default, the run says so, names the target and how to choose another
    encoded = run("replay", path)
    assert encoded.exit_code == 0 and "text columns encoded: one-hot 'label'" in encoded.stderr
    assert "the target is 'b' (choose it with -t COLUMN)" in encoded.stderr
    # following the drop hint must not silently regress b on a
    line = error_line(run("replay", path, "-d", "non_numeric=drop"))
    assert "'label' holds text labels" in line and "-t label" in line
    assert json.loads(run("replay", path, "-t", "label", "--json").stdout)["task"] == "binary"
    kept = run("replay", path, "-t", "b", "-d", "non_numeric=drop")
    assert kept.exit_code == 0 and "dropped non-numeric columns 'label'" in kept.stderr


def test_messages_keep_their_quotes_and_name_bad_dataset_parameters(csv_file):
    path = csv_file("a,y\n1,2\n3,x\n", "t.csv")
    line = error_line(run("replay", path, "-d", "task=regression"))
    assert line.endswith("non-numeric target value 'x' in column 'y'")  # closing quote kept
    line = error_line(run("replay", "sinc", "-d", "nosuch=3"))
    assert line == ("error: dataset 'sinc' has no parameter 'nosuch'; it takes n, noise, low, "
                    "high, seed")


def test_replay_without_seed_is_reproducible():
    # beta=0.2: KORS keeps a handful of points drawn at random, so the seed shows in the MAE
    args = ["replay", "sinc", "-d", "n=300", "-l", "sketched-kons", "-p", "beta=0.2", "--json"]
    first, second = (json.loads(run(*args).stdout) for _ in range(2))
    assert first["metrics"] == second["metrics"]
    seeded = json.loads(run(*args, "--seed", "0").stdout)
    assert seeded["metrics"] == first["metrics"]
    assert json.loads(run(*args, "--seed", "1").stdout)["metrics"] != first["metrics"]


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_help_documents_every_option_within_80_columns(command):
    proc = subprocess.run([sys.executable, "-m", "okoco.cli", command, "--help"],
                          capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "COLUMNS": "80", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    options = [line for line in lines if line.lstrip().startswith("-")]
    for flag in ("--kernel", "--gamma", "--metric", "--data-param", "--max-samples"):
        line = next(line for line in options if flag in line)
        assert len(line.split("  ")) > 1 and line.split("  ")[-1].strip(), line  # has help
    assert "okoco[distributed]" in proc.stdout or command == "replay"


def test_cli_imports_no_heavy_module_for_help():
    code = ("import sys; from okoco.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('scipy', 'river', 'matplotlib', 'sklearn', 'pandas', "
            "'dask', 'rich') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


HEAVY = ("river.preprocessing", "river.metrics", "river.datasets", "scipy.stats", "sklearn",
         "pandas", "scipy.sparse")


def test_replay_and_compare_import_no_heavy_module(tmp_path):
    """A replay's start-up: the CLI's scalers, metrics and river's CSV datasets come without
    river.preprocessing / river.metrics / river.datasets, hence without scipy.stats, scikit-learn
    and pandas (about a second of imports); dense data do not import scipy.sparse (20 ms,
    once counted in the first sample's time). Checked on the modules, not on a clock."""
    runs = [
        ["replay", "trump-approval", "-n", "20", "-q"],
        ["replay", "phishing", "-n", "20", "-q"],
        ["replay", "trump-approval", "-n", "20", "-q", "-m", "mae", "-m", "mse", "-m", "rmse",
         "-m", "r2"],
        ["replay", "phishing", "-n", "20", "-q", "-m", "accuracy", "-m", "f1", "-m", "logloss",
         "--checkpoint", str(tmp_path / "c.npz")],
        ["compare", "trump-approval", "-n", "20", "-l", "fgd", "-l", "kons"],
        ["compare", "phishing", "-n", "20", "-l", "fgd", "-m", "accuracy", "-m", "f1"],
    ]
    # all the runs in one interpreter: a module any of them imports stays in sys.modules
    code = ("import json, sys\nfrom okoco.cli import app\n"
            "for args in json.loads(sys.argv[1]):\n"
            "    try:\n        app(args)\n    except SystemExit as e:\n"
            "        assert not e.code, (args, e.code)\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")

    def loaded(runs):
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(runs)], capture_output=True,
                              text=True, cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().splitlines()[-1]

    assert loaded(runs) == "[]"
    # and the check can fail: rocauc is river's, and brings river.metrics
    assert "river.metrics" in loaded([["replay", "phishing", "-n", "20", "-q", "-m", "rocauc"]])


def test_multiclass_datasets_run(csv_file):
    out = json.loads(run("replay", "image-segments", "-l", "fgd", "-n", "200", "--json").stdout)
    assert out["task"] == "multiclass" and out["n_samples"] == 200
    assert 0.5 < out["metrics"]["Accuracy"] <= 1.0
    rows = "".join(f"{i % 7},{i % 5},{('cat', 'dog', 'bird')[i % 3]}\n" for i in range(60))
    path = csv_file("a,b,kind\n" + rows, "three.csv")
    text = run("replay", path, "-l", "kons")
    assert text.exit_code == 0, text.stderr
    # KONS keeps its squared loss on a multiclass task: its classes share one preconditioner
    assert "learner     kons (MulticlassClassifier(KONS()))" in text.stdout
    text = run("replay", path, "-l", "kons", "--loss", "logistic")
    assert "learner     kons (MulticlassClassifier(KONS(loss=Logistic())))" in text.stdout
    # a step size other than the curvature step shares nothing: the logistic loss, as binary
    text = run("replay", path, "-l", "kons", "-p", "eta=0.5")
    assert "(MulticlassClassifier(KONS(loss=Logistic(), eta=0.5)))" in text.stdout
    rows = {r["name"]: r for r in json.loads(run("learners", "--json").stdout)}
    # so does Auto's (one preconditioner per expert): the default learner keeps its loss too
    assert rows["auto"]["runs"]["multiclass"] == "MulticlassClassifier(Auto())"
    assert rows["kons"]["runs"]["multiclass"] == "MulticlassClassifier(KONS())"
    assert rows["kons"]["runs"]["binary"] == "BinaryClassifier(KONS(loss=Logistic()))"


@pytest.mark.parametrize("option", ["-o", "--checkpoint", "--plot"])
def test_outputs_that_cannot_be_written_are_named_in_the_users_words(option, tmp_path):
    line = error_line(run("replay", "sinc", "-d", "n=20", option, str(tmp_path)))
    assert line == f"error: cannot write {str(tmp_path)!r}: it is a directory"
    target = "/proc/run.png" if option == "--plot" else "/proc/run.json"
    line = error_line(run("replay", "sinc", "-d", "n=20", option, target))
    assert f"cannot write {target!r}" in line and ".tmp" not in line


def test_a_directory_is_not_a_dataset_and_names_get_one_rule(tmp_path):
    assert "is a directory" in error_line(run("replay", str(tmp_path)))
    assert "did you mean 'bananas'" in error_line(run("replay", "bananass"))
    assert "did you mean 'kons'" in error_line(run("replay", "sinc", "-l", "kosn"))
    assert "did you mean 'linear'" in error_line(
        run("replay", "sinc", "-l", "kons", "-k", "rbf+lnear"))
    assert "did you mean 'squared'" in error_line(run("replay", "sinc", "--loss", "sqared"))
    upper = json.loads(run("replay", "sinc", "-d", "n=30", "-l", "KONS", "--json").stdout)
    lower = json.loads(run("replay", "sinc", "-d", "n=30", "-l", "kons", "--json").stdout)
    assert upper["learner"] == "kons" and upper["metrics"] == lower["metrics"]


def test_compare_says_when_a_learner_is_given_twice():
    out = run("compare", "sinc", "-d", "n=30", "-l", "fgd", "-l", "FGD")
    assert out.exit_code == 0 and "-l fgd is given more than once" in out.stderr


def test_an_empty_sketch_is_noted():
    out = run("replay", "sinc", "-d", "n=30", "-l", "sketched-kons", "-p", "beta=0")
    assert out.exit_code == 0 and "keeps no point in its sketch" in out.stderr
    assert "note:" not in run("replay", "sinc", "-d", "n=30", "-l", "sketched-kons").stderr


def test_resume_extends_a_shorter_run_and_refuses_another_run_before_resuming(tmp_path):
    ckpt = tmp_path / "c.npz"
    base = ["replay", "sinc", "-d", "n=300", "-l", "fgd", "--checkpoint", str(ckpt)]
    assert run(*base, "-n", "100", "-q").exit_code == 0
    longer = run(*base, "-n", "250", "--resume", "--json")
    assert longer.exit_code == 0, longer.stderr
    whole = run("replay", "sinc", "-d", "n=300", "-l", "fgd", "-n", "250", "--json")
    assert json.loads(longer.stdout)["metrics"] == json.loads(whole.stdout)["metrics"]
    assert json.loads(longer.stdout)["n_samples"] == 250
    other = run("replay", "friedman", "-d", "n=300", "-l", "fgd", "--checkpoint", str(ckpt),
                "--resume")
    assert other.exit_code == 2 and "resuming" not in other.stderr
    assert "is from another run (dataset sinc, not friedman)" in error_line(other)


def test_the_summary_says_when_sample_one_makes_most_of_the_cumulative_loss():
    out = run("replay", "trump-approval", "-l", "fgd", "-n", "200").stdout
    line = next(x for x in out.splitlines() if x.startswith("cum. loss"))
    assert "from sample 1, predicted before any target was seen" in line
    quiet = run("replay", "sinc", "-d", "n=200", "-l", "fgd").stdout
    assert "from sample 1" not in quiet


# -- prediction intervals (issue 30) ------------------------------------------------------------


def _interval_figures(n: int, coverage: float):
    """Coverage, width and Winkler score of the run's intervals, recomputed in a plain loop
    over the same stream (the model okoco replay builds, wrapped by hand)."""
    import math

    from okoco import datasets, preprocessing
    from okoco.intervals import IntervalRegressor
    from okoco.learners import KRLS

    model = IntervalRegressor(preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | KRLS(C=3.0)), coverage=coverage)
    inside, widths, scores = 0, [], []
    for x, y in datasets.load("sinc", n=n, seed=0):
        low, high = model.predict_one(x, with_interval=True)
        inside += low <= y <= high
        if math.isfinite(high - low):
            miss = max(low - y, 0.0) + max(y - high, 0.0)
            widths.append(high - low)
            scores.append(high - low + 2 / (1 - coverage) * miss)
        model.learn_one(x, y)
    return inside / n, sum(widths) / len(widths), sum(scores) / len(scores)


def _recent_interval_figures(n: int, coverage: float, last: int = 500):
    """Median width and mean Winkler score of the finite intervals of the last ``last`` samples,
    recomputed in a plain loop as in _interval_figures."""
    import math
    import statistics

    from okoco import datasets, preprocessing
    from okoco.intervals import IntervalRegressor
    from okoco.learners import KRLS

    model = IntervalRegressor(preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | KRLS(C=3.0)), coverage=coverage)
    widths, scores = [], []
    for t, (x, y) in enumerate(datasets.load("sinc", n=n, seed=0)):
        low, high = model.predict_one(x, with_interval=True)
        if t >= n - last and math.isfinite(high - low):
            miss = max(low - y, 0.0) + max(y - high, 0.0)
            widths.append(high - low)
            scores.append(high - low + 2 / (1 - coverage) * miss)
        model.learn_one(x, y)
    return statistics.median(widths), sum(scores) / len(scores)


def test_interval_width_and_score_past_the_warm_up():
    """The summary's width and score are those of the last 500 intervals (median width), so
    the first, widest intervals cannot dominate them; the means over all stay beside them,
    labelled."""
    median, score = _recent_interval_figures(700, 0.9)
    out = json.loads(run("replay", "sinc", "-l", "krls", "-d", "n=700", "--interval", "0.9",
                         "--json").stdout)
    assert out["recent_samples"] == 500
    assert out["median_width"] == pytest.approx(median, rel=1e-12)
    assert out["recent_interval_score"] == pytest.approx(score, rel=1e-12)
    text = run("replay", "sinc", "-l", "krls", "-d", "n=700", "--interval", "0.9").stdout
    width = next(line for line in text.splitlines() if line.startswith("width"))
    assert width.startswith(f"width       {median:.6g} (median of the last 500 intervals")
    assert "warm-up included" in width


def test_replay_interval_reports_coverage_width_and_score(tmp_path):
    coverage, width, score = _interval_figures(400, 0.9)
    out = run("replay", "sinc", "-l", "krls", "-d", "n=400", "--interval", "0.9", "--json",
              "--output", str(tmp_path / "run.csv"))
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["interval"] == 0.9 and summary["coverage"] == coverage
    assert summary["mean_width"] == pytest.approx(width, rel=1e-12)
    assert summary["interval_score"] == pytest.approx(score, rel=1e-12)
    with open(tmp_path / "run.csv") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[-1]["coverage"]) == coverage and rows[-1]["t"] == "400"
    assert float(rows[-1]["interval_score"]) == pytest.approx(score, rel=1e-12)
    text = run("replay", "sinc", "-l", "krls", "-d", "n=400", "--interval", "0.9").stdout
    assert f"coverage    {coverage:.4g} of targets inside their 90% interval" in text
    assert "int. score" in text
    # without --interval: no interval figures anywhere
    plain = json.loads(run("replay", "sinc", "-l", "krls", "-d", "n=50", "--json").stdout)
    assert "coverage" not in plain


def test_replay_interval_refuses_classification_and_bad_coverage():
    assert "--interval needs a regression dataset; 'phishing' is a binary task" in error_line(
        run("replay", "phishing", "--interval", "0.9", "-n", "20"))
    assert "--interval is a coverage in (0, 1)" in error_line(
        run("replay", "sinc", "--interval", "90"))


def test_replay_interval_checkpoint_and_resume(tmp_path):
    out = tmp_path / "run.json"
    whole = json.loads(run("replay", "sinc", "-l", "krls", "-d", "n=300", "--interval", "0.9",
                           "--json").stdout)
    first = run("replay", "sinc", "-l", "krls", "-d", "n=300", "--interval", "0.9", "-n", "120",
                "--output", str(out), "--checkpoint-every", "40", "-q")
    assert first.exit_code == 0, first.output
    again = run("replay", "sinc", "-l", "krls", "-d", "n=300", "--interval", "0.9", "--resume",
                "--output", str(out), "--checkpoint-every", "40", "--json")
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout)
    for key in ("coverage", "mean_width", "interval_score", "metrics"):
        assert resumed[key] == whole[key], key
    assert "is from another run (interval 0.9, not 0.8)" in error_line(
        run("replay", "sinc", "-l", "krls", "-d", "n=300", "--interval", "0.8", "--resume",
            "--output", str(out)))


def test_replay_interval_plot_has_the_band(tmp_path):
    from PIL import Image

    path = tmp_path / "run.png"
    out = run("replay", "sinc", "-l", "krls", "-d", "n=200", "--interval", "0.9", "--plot",
              str(path), "-q")
    assert out.exit_code == 0, out.output
    with Image.open(path) as image:
        assert image.format == "PNG"


def test_compare_interval_ranks_by_interval_score(tmp_path):
    out = tmp_path / "cmp.json"
    result = run("compare", "sinc", "-l", "fgd", "-l", "krls", "-d", "n=300", "--interval", "0.9",
                 "--sort", "interval-score", "--output", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    table = doc["summary"]
    scores = [row["recent_interval_score"]["mean"] for row in table]
    assert scores == sorted(scores) and {row["learner"] for row in table} == {"fgd", "krls"}
    krls = next(row for row in table if row["learner"] == "krls")
    assert krls["recent_interval_score"]["mean"] == pytest.approx(
        _recent_interval_figures(300, 0.9)[1], rel=1e-12)
    assert "int. score" in result.stdout and "coverage" in result.stdout
    csv_out = run("compare", "sinc", "-l", "krls", "-d", "n=300", "--interval", "0.9",
                  "--output", str(tmp_path / "cmp.csv"), "-q")
    assert csv_out.exit_code == 0, csv_out.output
    with open(tmp_path / "cmp.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["recent_interval_score"]) == krls["recent_interval_score"]["mean"]
    assert float(row["coverage"]) == krls["coverage"]["mean"]
    # sorted the other way by a column where larger is better
    r2 = run("compare", "sinc", "-l", "fgd", "-l", "krls", "-d", "n=300", "-m", "r2", "--sort",
             "r2", "--json")
    values = [row["R2"]["mean"] for row in json.loads(r2.stdout)["summary"]]
    assert values == sorted(values, reverse=True)
    assert "--sort 'coverage' needs --interval" in error_line(
        run("compare", "sinc", "-l", "fgd", "-d", "n=50", "--sort", "coverage"))
    assert "--sort 'nope' is not a column" in error_line(
        run("compare", "sinc", "-l", "fgd", "-d", "n=50", "--sort", "nope"))


def test_compare_prints_a_count_without_decimals():
    """A dictionary of 5 atoms is "5", not "5.000" (a size read as a measurement)."""
    result = run("compare", "sinc", "-l", "krls", "-d", "n=400")
    assert result.exit_code == 0, result.stderr
    header, row = result.stdout.splitlines()[:2]
    cells = dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", row.strip())))
    assert cells["dictionary"] == "5"
