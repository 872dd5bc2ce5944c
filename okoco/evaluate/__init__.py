r"""Progressive validation (test-then-train): one loop, a generator and a replay around it.

The loop predicts each sample, scores the prediction, then learns the true target. Around it:

- :func:`iter_progressive_val`, in the shape of river's ``iter_progressive_val_score``, yields a
  :class:`Step` after every sample (the sample count, the target, the prediction, its loss and
  the seconds the step took);
- :func:`replay` records curves at checkpoints (the metrics, the cumulative loss, the regret when
  a tracker is given, the dictionary size, the time per sample and the memory held by the
  model's arrays) into a :class:`ReplayResult`, writes and resumes checkpoint files, shows a
  progress bar, and on Ctrl-C raises :class:`ReplayInterrupted` carrying the result so far. It
  runs the loop in stretches from one of these points to the next, so that between two samples
  nothing runs but the step itself;
- :class:`ReplayResult` saves to JSON and CSV (atomically: a temporary file renamed into place)
  and plots its curves (:func:`plot_runs`).

The package has one module per job: ``_loop`` (the test-then-train loop and the generator),
``_replay`` (checkpoints, curves, resuming, Ctrl-C), ``_results`` (:class:`ReplayResult`),
``_plots`` (:func:`plot_runs`), ``_progress`` (the progress bar) and ``_probe`` (what a model
holds: its loss, dictionary size and memory, found through pipelines and wrappers).

The metric values are the ones :func:`river.evaluate.progressive_val_score` reports.

The data may be an :class:`okoco.datasets.Dataset`, any iterable of ``(dict, target)`` pairs,
or a tuple ``(X, y)`` of arrays (or a DataFrame and targets). For arrays, rows are turned into
dicts chunk by chunk with one precomputed list of column names (``X.tolist()`` and
``dict(zip(names, row))``, about half a microsecond a row). That measured faster than feeding
``predict_many`` / ``learn_many`` one row at a time, whose batch validation costs more than the
dict: on Friedman data (d = 10), 243 µs against 612 µs per sample for ``FunctionalGD`` (t = 2000)
and 383 µs against 4.3 ms for ``KONS`` (t = 800).

Examples
--------
>>> from river import metrics
>>> from okoco import datasets
>>> from okoco.learners import FunctionalGD
>>> result = replay(FunctionalGD(C=2.0), datasets.load("sinc", n=200, seed=0),
...                 metrics=metrics.MAE(), checkpoints=[50, 100])
>>> result["t"].tolist()
[50, 100, 200]
>>> result.columns["dictionary_size"]  # FunctionalGD keeps every point
[50.0, 100.0, 200.0]
"""

from okoco._io import atomic_write
from okoco.evaluate._loop import Step, iter_progressive_val
from okoco.evaluate._plots import plot_runs
from okoco.evaluate._replay import BAND_SAMPLES, ReplayInterrupted, checkpoint_grid, replay
from okoco.evaluate._results import BASE_COLUMNS, INTERVAL_COLUMNS, ReplayResult

__all__ = ["iter_progressive_val", "Step", "replay", "ReplayResult", "ReplayInterrupted",
           "plot_runs", "atomic_write", "checkpoint_grid", "BASE_COLUMNS", "INTERVAL_COLUMNS",
           "BAND_SAMPLES"]
