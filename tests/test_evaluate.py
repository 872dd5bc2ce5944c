"""Tests of okoco.evaluate: replay against river's progressive_val_score, checkpoints, files."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import metrics, preprocessing, stream

from okoco import BinaryClassifier, datasets, losses
from okoco.evaluate import (
    ReplayInterrupted,
    ReplayResult,
    checkpoint_grid,
    iter_progressive_val,
    plot_runs,
    replay,
)
from okoco.learners import KONS, FunctionalGD, SketchedKONS


def _regressor():
    return preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | FunctionalGD(C=3.0, eta=0.2))


def _classifier():
    return preprocessing.StandardScaler() | BinaryClassifier(
        FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))


def _river_value(data, model, metric):
    return river_evaluate.progressive_val_score(data, model, metric).get()


def test_regression_matches_progressive_val_score():
    data = list(river_datasets.TrumpApproval().take(300))
    ours = replay(_regressor(), data, metrics=[metrics.MAE(), metrics.RMSE()])
    assert ours.final["MAE"] == _river_value(data, _regressor(), metrics.MAE())
    assert ours.final["RMSE"] == _river_value(data, _regressor(), metrics.RMSE())


@pytest.mark.parametrize("metric", [metrics.Accuracy, metrics.LogLoss, metrics.ROCAUC])
def test_classification_matches_progressive_val_score(metric):
    data = list(river_datasets.Phishing().take(250))
    ours = replay(_classifier(), data, metrics=metric())
    assert ours.final[metric.__name__] == _river_value(data, _classifier(), metric())


def test_second_order_learners_match_progressive_val_score():
    ds = datasets.load("sinc", n=150, seed=3)
    for make in (lambda: KONS(C=2.0), lambda: SketchedKONS(C=2.0, seed=1)):
        ours = replay(make(), ds, metrics=metrics.MAE())
        assert ours.final["MAE"] == _river_value(ds, make(), metrics.MAE())


def test_array_path_matches_dict_path_and_river():
    X, y, _ = datasets.load("friedman", n=120, seed=0).to_arrays()
    from_arrays = replay(FunctionalGD(C=3.0, eta=0.1), (X, y), metrics=metrics.MAE())
    river_value = _river_value(stream.iter_array(X, y), FunctionalGD(C=3.0, eta=0.1),
                               metrics.MAE())
    assert from_arrays.final["MAE"] == river_value
    assert from_arrays.meta["dataset"] == "arrays"


def test_dataframe_keeps_column_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 1.0]})
    model = FunctionalGD()
    replay(model, (X, [0.1, 0.2, 0.3]), metrics=metrics.MAE())
    assert model.predict_one({"a": 1.0, "b": 0.0}) == model.predict_many(X.iloc[[1]])[1]


def test_columns_checkpoints_and_diagnostics():
    ds = datasets.load("sinc", n=100, seed=0)
    r = replay(FunctionalGD(budget=30), ds, metrics=metrics.MAE(), checkpoints=[10, 50, 500])
    assert r["t"].tolist() == [10, 50, 100]
    assert list(r.columns) == ["t", "MAE", "cumulative_loss", "regret", "dictionary_size",
                               "us_per_sample", "elapsed_s", "memory_bytes"]
    assert r["dictionary_size"].tolist() == [10, 30, 30]
    assert np.all(np.isnan(r["regret"]))
    assert np.all(r["us_per_sample"] > 0) and np.all(np.diff(r["elapsed_s"]) > 0)
    assert np.all(r["memory_bytes"] > 0)
    assert np.all(np.diff(r["cumulative_loss"]) >= 0)
    assert len(r) == 3 and r.n_samples == 100


def test_cumulative_loss_is_the_learners_loss():
    ds = datasets.load("sinc", n=60, seed=2)
    model, reference = FunctionalGD(C=1.0, eta=0.3), FunctionalGD(C=1.0, eta=0.3)
    total = 0.0
    for x, y in ds:
        total += (reference.predict_one(x) - y) ** 2
        reference.learn_one(x, y)
    r = replay(model, ds, metrics=metrics.MAE())
    assert r.final["cumulative_loss"] == pytest.approx(total, rel=1e-12)
    assert losses.Squared().value(1.0, 0.0) == 1.0  # the convention used above


def test_classifier_cumulative_loss_is_logistic_loss_of_margin():
    data = list(river_datasets.Phishing().take(80))
    # bool labels: both classes are known from the start, so every probability is the margin's
    clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=2.0, eta=0.5))
    ref = FunctionalGD(loss=losses.Logistic(), C=2.0, eta=0.5)
    total = 0.0
    for x, y in data:
        s = 1.0 if y else -1.0
        total += math.log1p(math.exp(-s * ref.predict_one(x)))
        ref.learn_one(x, s)
    r = replay(clf, data, metrics=metrics.Accuracy())
    assert r.final["cumulative_loss"] == pytest.approx(total, rel=1e-9)


def test_duck_typed_regret_tracker():
    class Tracker:
        def __init__(self):
            self.calls, self.regret = [], []

        def update(self, x, y, y_pred):
            self.calls.append((x, y, y_pred))
            self.regret.append(float(len(self.calls)))

    tracker = Tracker()
    ds = datasets.load("sinc", n=30, seed=0)
    r = replay(FunctionalGD(), ds, metrics=metrics.MAE(), regret=tracker, checkpoints=[10])
    assert r["regret"].tolist() == [10.0, 30.0]
    assert len(tracker.calls) == 30 and tracker.calls[0][0] == ds.take(1)[0][0]
    with pytest.raises(TypeError, match="update"):
        replay(FunctionalGD(), ds, metrics=metrics.MAE(), regret=object())


def test_max_samples_and_generator_input():
    gen = ((x, y) for x, y in datasets.load("sinc", n=100, seed=0))
    r = replay(FunctionalGD(), gen, metrics=metrics.MAE(), max_samples=25)
    assert r.n_samples == 25


def test_bad_sample_names_its_position_and_bad_arguments():
    data = [({"a": 1.0}, 0.5), ({"a": float("nan")}, 0.5)]
    with pytest.raises(ValueError, match="sample 2"):
        replay(FunctionalGD(), data, metrics=metrics.MAE())
    with pytest.raises(TypeError, match="river metric"):
        replay(FunctionalGD(), data, metrics="mae")
    with pytest.raises(ValueError, match="does not work"):
        replay(FunctionalGD(), data, metrics=metrics.Accuracy())
    with pytest.raises(ValueError, match="rows"):
        replay(FunctionalGD(), (np.zeros((3, 2)), np.zeros(2)), metrics=metrics.MAE())


def test_checkpoint_grid():
    grid = checkpoint_grid(1000, 20)
    assert grid[0] == 1 and grid[-1] == 1000 and grid == sorted(set(grid))
    assert checkpoint_grid(0) == []


def test_json_and_csv_round_trip(tmp_path):
    r = replay(FunctionalGD(), datasets.load("sinc", n=40, seed=0), metrics=metrics.MAE(),
               checkpoints=4, meta={"note": "x"})
    r.to_json(tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["meta"]["note"] == "x" and doc["final"]["MAE"] == r.final["MAE"]
    assert doc["columns"]["regret"][0] is None  # NaN is saved as null: strict JSON
    back = ReplayResult.from_json(tmp_path / "r.json")
    assert back.columns["MAE"] == r.columns["MAE"] and math.isnan(back.columns["regret"][0])
    r.to_csv(tmp_path / "r.csv")
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert len(rows) == len(r) and float(rows[-1]["MAE"]) == r.final["MAE"]
    assert rows[0]["regret"] == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json"]


def test_plot_to_file_and_axes(tmp_path):
    import matplotlib.pyplot as plt

    r = replay(FunctionalGD(), datasets.load("sinc", n=40, seed=0), metrics=metrics.MAE())
    r.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig, ax = plt.subplots()
    assert r.plot(ax) is fig and len(ax.lines) == 1
    plt.close(fig)
    with pytest.raises(ValueError, match="cannot save"):
        r.plot(tmp_path / "r.xyz")
    assert not (tmp_path / "r.xyz").exists()


def test_progress_bar_runs():
    r = replay(FunctionalGD(), datasets.load("sinc", n=200, seed=0), metrics=metrics.MAE(),
               progress=True)
    assert r.n_samples == 200


def test_where_the_loop_stops_changes_no_number(tmp_path):
    """replay runs the steps in stretches between the points where it has work (checkpoints,
    the bar's updates, checkpoint files): the columns are the per-step sums of the generator,
    in order, bit for bit, wherever those points fall."""
    ds = datasets.load("sinc", n=200, seed=1)
    points = [1, 7, 64, 65, 130, 200]
    mae = metrics.MAE()
    expected, total = {}, 0.0
    for step in iter_progressive_val(FunctionalGD(budget=40), ds, mae):
        total += step.loss
        if step.t in points:
            expected[step.t] = (mae.get(), total)
    for options in ({}, {"progress": True},
                    {"checkpoint": tmp_path / "c.npz", "checkpoint_every": 9}):
        r = replay(FunctionalGD(budget=40), ds, metrics=metrics.MAE(), checkpoints=points,
                   **options)
        assert r["t"].tolist() == points
        assert list(zip(r.columns["MAE"], r.columns["cumulative_loss"])) == [
            expected[t] for t in points]
        assert np.all(r["us_per_sample"] > 0)


# -- plots that show every curve ------------------------------------------------------------------


def _result(mae, us=None, metrics_=("MAE",), extra=None):
    t = list(range(1, len(mae) + 1))
    cols = {"t": t, "MAE": list(mae), "cumulative_loss": [float(i) for i in t],
            "dictionary_size": [float(i) for i in t],
            "us_per_sample": list(us) if us is not None else [10.0] * len(t)}
    cols.update(extra or {})
    return ReplayResult(cols, list(metrics_))


def _axis(fig, title):
    return next(ax for ax in fig.axes if ax.get_title() == title)


def test_the_first_sample_spike_does_not_flatten_the_metric_panel():
    mae = [43.0] + [1.0 - 0.002 * i for i in range(199)]
    fig = plot_runs({"a": [_result(mae)]})
    low, high = _axis(fig, "MAE").get_ylim()
    assert 1.0 <= high < 2.0 and low <= mae[-1]


def test_one_learners_line_does_not_hide_another():
    r = _result([1.0, 0.5, 0.4, 0.3])
    fig = plot_runs({"a": [r], "b": [r], "c": [r]})
    for ax in fig.axes:
        styles = {(line.get_linestyle(), line.get_linewidth()) for line in ax.lines}
        assert len(styles) == len(ax.lines) == 3, ax.get_title()


def test_bands_of_nonnegative_columns_stay_at_or_above_zero():
    runs = [_result([1.0, 0.5, 0.4], us=[1.0, 100.0, 5.0]),
            _result([1.0, 0.5, 0.4], us=[1.0, 0.01, 5.0]),
            _result([1.0, 0.5, 0.4], us=[1.0, 0.01, 5.0])]  # mean - std < 0 at t = 2
    fig = plot_runs({"a": runs})
    bands = _axis(fig, "µs per sample").collections
    assert bands and all(path.vertices[:, 1].min() >= 0 for band in bands
                         for path in band.get_paths())


def test_every_metric_gets_a_panel(tmp_path):
    r = _result([1.0, 0.5, 0.4], metrics_=("MAE", "RMSE"), extra={"RMSE": [2.0, 1.0, 0.7]})
    fig = plot_runs({"a": [r]})
    assert {"MAE", "RMSE"} <= {ax.get_title() for ax in fig.axes}
    assert _axis(fig, "RMSE").lines[0].get_ydata().tolist() == [2.0, 1.0, 0.7]


# -- interruption (Ctrl-C) ------------------------------------------------------------------------


def _interrupted_stream(data, at):
    """The stream of ``data`` with a real SIGINT delivered while fetching sample ``at``."""
    import signal

    for i, (x, y) in enumerate(data, start=1):
        if i == at:
            signal.raise_signal(signal.SIGINT)
        yield x, y


def test_ctrl_c_gives_the_result_so_far(sigint_raises):
    data = datasets.load("sinc", n=300, seed=0)
    with pytest.raises(KeyboardInterrupt) as info:
        replay(FunctionalGD(), _interrupted_stream(data, 121), metrics=metrics.MAE(),
               checkpoints=[50, 100, 200])
    assert isinstance(info.value, ReplayInterrupted)
    partial = info.value.result
    assert partial.interrupted and partial.meta["interrupted"] is True
    assert partial["t"].tolist() == [50, 100, 120]
    whole = replay(FunctionalGD(), data, metrics=metrics.MAE(), max_samples=120,
                   checkpoints=[50, 100])
    assert not whole.interrupted
    assert partial.columns["MAE"] == whole.columns["MAE"]
    assert partial.columns["cumulative_loss"] == whole.columns["cumulative_loss"]


def test_ctrl_c_keeps_the_last_checkpoint_and_resume_finishes_the_run(tmp_path, sigint_raises):
    data = datasets.load("sinc", n=200, seed=0)
    path = tmp_path / "run.ckpt.npz"
    kwargs = {"metrics": metrics.MAE(), "checkpoints": [50, 150], "checkpoint": path,
              "checkpoint_every": 40}
    with pytest.raises(ReplayInterrupted):
        replay(FunctionalGD(), _interrupted_stream(data, 101), **kwargs)
    kwargs["metrics"] = metrics.MAE()
    resumed = replay(FunctionalGD(), _interrupted_stream(data, None), resume=True, **kwargs)
    whole = replay(FunctionalGD(), data, metrics=metrics.MAE(), checkpoints=[50, 150])
    assert resumed.columns["MAE"] == whole.columns["MAE"]
    assert resumed["t"].tolist() == [50, 150, 200]


# -- the generator --------------------------------------------------------------------------------


def test_generator_steps_match_rivers_iter_progressive_val_score():
    ours_metric, theirs_metric = metrics.MAE(), metrics.MAE()
    ours = iter_progressive_val(_regressor(), river_datasets.TrumpApproval(), ours_metric)
    theirs = river_evaluate.iter_progressive_val_score(
        river_datasets.TrumpApproval(), _regressor(), theirs_metric, step=1,
        yield_predictions=True)
    for step, ref, _ in zip(ours, theirs, range(200)):
        assert step.t == ref["Step"]
        assert step.y_pred == ref["Prediction"]
        assert ref["MAE"].get() == ours_metric.get()
    assert step.t == 200


def test_generator_counts_from_start_and_names_the_bad_sample():
    data = [({"a": 1.0}, 0.5), ({"a": 2.0}, 0.1), ({"a": float("nan")}, 0.5)]
    steps = iter_progressive_val(FunctionalGD(), data, metrics.MAE(), start=10)
    assert [next(steps).t, next(steps).t] == [11, 12]
    with pytest.raises(ValueError, match="sample 13"):
        next(steps)
    with pytest.raises(ValueError, match="does not work"):
        next(iter_progressive_val(FunctionalGD(), data, metrics.Accuracy()))


def test_sigint_to_a_running_replay_process_leaves_the_result_so_far(tmp_path):
    """A real SIGINT sent by another process to a replay running in a subprocess."""
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(
        "import itertools, json, sys\n"
        "from river import metrics\n"
        "from okoco import datasets\n"
        "from okoco.evaluate import ReplayInterrupted, replay\n"
        "from okoco.learners import FunctionalGD\n"
        "def rows():  # an endless stream\n"
        "    data = list(datasets.load('sinc', n=1000, seed=0))\n"
        "    for i in itertools.count(1):\n"
        "        if i == 200:\n"
        "            print('running', flush=True)\n"
        "        yield data[i % 1000]\n"
        "try:\n"
        "    replay(FunctionalGD(budget=50), rows(), metrics=metrics.MAE(), checkpoints=[100])\n"
        "except ReplayInterrupted as stop:\n"
        "    r = stop.result\n"
        "    print(json.dumps({'n': r.n_samples, 'interrupted': r.interrupted,\n"
        "                      't': r.columns['t'], 'mae': r.final['MAE']}))\n"
        "    sys.exit(130)\n"
    )
    from conftest import sigint_as_in_a_terminal

    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env=os.environ.copy(), preexec_fn=sigint_as_in_a_terminal)
    try:
        assert proc.stdout.readline().strip() == "running"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130
    report = json.loads(out)
    assert report["interrupted"] and report["n"] >= 199
    assert report["t"][0] == 100 and report["t"][-1] == report["n"]
    assert math.isfinite(report["mae"])


def test_a_replay_plot_names_the_dataset_and_the_learner_and_marks_an_interruption():
    r = ReplayResult({"t": [1, 2], "MAE": [0.5, 0.25], "dictionary_size": [1, 2]}, ["MAE"],
                     {"dataset": "sinc", "learner": "kons", "model": "KONS(alpha=1)"})
    assert r.plot()._suptitle.get_text() == "sinc: KONS(alpha=1)"
    r.meta["interrupted"] = True
    assert r.plot()._suptitle.get_text() == "sinc: KONS(alpha=1) (interrupted at t = 2)"


def test_the_first_samples_loss_is_kept_in_the_meta():
    data = list(river_datasets.TrumpApproval().take(50))
    model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler()
                                               | FunctionalGD(C=3.0))
    r = replay(model, data, metrics=metrics.MAE())
    y0 = data[0][1]
    assert r.meta["first_loss"] == losses.Squared().value(y0, 0.0) > 0.5 * r.final[
        "cumulative_loss"]


def test_memory_counts_the_rows_in_use_not_the_spare_capacity():
    n = 300  # KONS's buffers then have a capacity of 512 points
    # the unbounded KONS (its window keeps another factorization)
    r = replay(KONS(max_size=None), datasets.load("sinc", n=n, seed=0), metrics=metrics.MAE())
    factor = 2 * (n * (n + 1) // 2) * 8  # the packed Cholesky factor and matrix, float64
    assert factor <= r.final["memory_bytes"] <= factor + 64 * 1024


def test_memory_reaches_the_experts_of_each_class():
    """MulticlassClassifier(Auto): every class's Auto and every dictionary's factor is counted
    (a depth limit once stopped at the experts and reported a few KiB)."""
    from okoco.learners import Auto, MulticlassClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    data = [({"a": a, "b": b}, int(a > 0) + int(b > 0)) for a, b in X]
    model = MulticlassClassifier(Auto(loss=losses.Logistic()))
    r = replay(model, data, metrics=metrics.Accuracy())
    factors = sum(e._embed._L.nbytes for learner in model.learners
                  for e in learner._embeddings)  # each class's two dictionaries
    assert factors > 0
    assert len(model.learners) == 3 and factors <= r.final["memory_bytes"]


def test_a_sketch_is_no_larger_than_exact_kons():
    """Issue 31: the replay summary reported Sketched-KONS at twice KONS (its preconditioner's
    inverse and KORS's, each with its matrix, in two arrays). They share one array now, sized
    by the atoms held: on Bananas' first 1,500 points (a sketch of about half the window)
    the sketch is smaller than exact KONS at the same window."""
    from okoco.learners import SketchedKONS

    data = datasets.load("bananas")
    exact = replay(BinaryClassifier(KONS(loss=losses.Logistic())), data,
                   metrics=metrics.Accuracy(), max_samples=1500)
    sketch_model = BinaryClassifier(SketchedKONS(loss=losses.Logistic(), seed=0))
    sketch = replay(sketch_model, data, metrics=metrics.Accuracy(), max_samples=1500)
    learner = sketch_model.learner
    assert learner._window.P is learner._kors._inverse.P
    assert learner.dictionary_size < 0.9 * 500
    assert sketch.final["memory_bytes"] < 0.8 * exact.final["memory_bytes"]


def test_replay_checks_its_arguments_with_the_house_validator():
    data = datasets.load("sinc", n=10)
    with pytest.raises(TypeError, match=r"^replay: max_samples must be None or an integer >= 1"):
        replay(FunctionalGD(), data, metrics=metrics.MAE(), max_samples="x")
    with pytest.raises(ValueError, match=r"^replay: checkpoint_every must be"):
        replay(FunctionalGD(), data, metrics=metrics.MAE(), checkpoint="c.npz",
               checkpoint_every=0)


# -- prediction intervals (issue 30) ------------------------------------------------------------


def test_replay_of_an_interval_regressor_records_coverage_and_the_last_band():
    from okoco.evaluate import BAND_SAMPLES, INTERVAL_COLUMNS
    from okoco.intervals import IntervalRegressor

    def make():
        return IntervalRegressor(preprocessing.StandardScaler() | FunctionalGD(C=3.0, eta=0.2),
                                 coverage=0.8)

    data = datasets.load("sinc", n=700, seed=1)
    result = replay(make(), data, metrics=metrics.MAE(), checkpoints=[350])
    # the same stream in a plain loop, every interval scored by hand
    model, inside, lows = make(), [], []
    for x, y in data:
        low, high = model.predict_one(x, with_interval=True)
        inside.append(low <= y <= high)
        lows.append(low)
        model.learn_one(x, y)
    assert result["t"].tolist() == [350, 700]
    assert result.columns["coverage"] == [sum(inside[:350]) / 350, sum(inside) / 700]
    assert set(INTERVAL_COLUMNS) <= set(result.columns)
    band = result.meta["band"]
    assert band["t"] == list(range(700 - BAND_SAMPLES + 1, 701))
    assert band["low"] == lows[-BAND_SAMPLES:]
    assert band["y"] == [float(y) for _, y in data][-BAND_SAMPLES:]
    # the plot has the coverage, the interval score and the band
    titles = [ax.get_title() for ax in result.plot().axes]
    assert {"coverage of the intervals", "mean interval score",
            "prediction and interval, last samples"} <= set(titles)
    # a model without intervals has none of it
    plain = replay(FunctionalGD(), data, metrics=metrics.MAE())
    assert "coverage" not in plain.columns and "band" not in plain.meta
    assert "prediction and interval, last samples" not in [a.get_title()
                                                           for a in plain.plot().axes]


def test_replay_band_of_a_stream_of_unknown_length_keeps_the_last_samples():
    from okoco.evaluate import BAND_SAMPLES
    from okoco.intervals import IntervalRegressor

    rows = list(datasets.load("sinc", n=BAND_SAMPLES + 40, seed=2))
    result = replay(IntervalRegressor(FunctionalGD()), iter(rows), metrics=metrics.MAE())
    assert result.meta["band"]["t"] == list(range(41, BAND_SAMPLES + 41))
    assert json.loads(json.dumps(result.to_dict(), allow_nan=False))["meta"]["band"]["t"][0] == 41
