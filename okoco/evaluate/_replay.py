"""Replay: the loop run in stretches between checkpoints, curves recorded, checkpoint files
written and resumed, Ctrl-C turned into the result so far."""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import os
import signal
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from okoco import persistence
from okoco._validation import Interval, Protocol, check_param
from okoco.evaluate._loop import _as_metrics, _Loop, _names, _stream
from okoco.evaluate._probe import _describe, _dictionary_size, _find, _last, _memory
from okoco.evaluate._progress import _Progress
from okoco.evaluate._results import BASE_COLUMNS, INTERVAL_COLUMNS, ReplayResult

__all__ = ["checkpoint_grid", "replay", "ReplayInterrupted", "BAND_SAMPLES"]


#: How many of the last samples of a run with intervals keep their band (``meta["band"]``).
BAND_SAMPLES = 500


def checkpoint_grid(n: int | None, k: int = 50) -> list[int]:
    """About ``k`` checkpoints over ``1..n``: half spaced geometrically, half evenly; ``n`` last.

    With ``n`` unknown (``None``), the 1-2-5 series up to ``10**12``; :func:`replay` always adds
    the last sample.

    Examples
    --------
    >>> checkpoint_grid(1000, 6)
    [1, 32, 333, 667, 1000]
    >>> checkpoint_grid(None)[:7]
    [1, 2, 5, 10, 20, 50, 100]
    """
    if n is None:
        return [m * 10**e for e in range(13) for m in (1, 2, 5)]
    if n < 1:
        return []
    half = max(k // 2, 1)
    geo = np.geomspace(1, n, half)
    lin = np.linspace(n / half, n, half)
    return sorted({int(round(v)) for v in np.concatenate([geo, lin]) if 1 <= round(v) <= n} | {n})


def _checkpoints(spec: int | Sequence[int] | None, n: int | None) -> list[int]:
    if spec is None:
        return checkpoint_grid(n)
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool):
        if spec < 1:
            raise ValueError(f"checkpoints must be >= 1, got {spec}")
        return checkpoint_grid(n, int(spec))
    try:
        points = sorted({int(c) for c in spec})
    except (TypeError, ValueError):
        raise TypeError(
            f"checkpoints must be a number of checkpoints or a list of sample counts, got {spec!r}"
        ) from None
    if points and points[0] < 1:
        raise ValueError(f"checkpoints are sample counts >= 1, got {points[0]}")
    return points


class ReplayInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`replay`: a ``KeyboardInterrupt`` that carries the result so far.

    ``result`` is a :class:`ReplayResult` whose last row is the last sample learned in full,
    with ``result.interrupted`` true. A caller that does not look for it stops as on any
    Ctrl-C; the command line prints its summary and writes the requested files. A checkpoint
    file keeps its last complete state (it is not written on an interrupt, as the model may be
    half-way through a step), so ``resume=True`` continues from there.
    """

    def __init__(self, result: ReplayResult):
        super().__init__(f"replay interrupted after {result.n_samples} samples")
        self.result = result


class _Curves:
    """The columns of a :class:`ReplayResult`, filled one checkpoint at a time."""

    def __init__(self, model: Any, metrics: list, names: list[str], regret: Any):
        self.model, self.metrics, self.names, self.regret = model, metrics, names, regret
        self.core = _find(model, "dictionary_size")
        # a model with calibrated intervals (okoco.intervals.IntervalRegressor, found through
        # pipelines and wrappers) adds its running coverage, mean width and interval score
        self.interval = _find(model, "coverage_seen")
        self.columns: dict[str, list] = {"t": [], **{k: [] for k in names},
                                         **{k: [] for k in BASE_COLUMNS},
                                         **{k: [] for k in (INTERVAL_COLUMNS if self.interval
                                                            is not None else ())}}
        #: (t, y, prediction, low, high) of the last samples (runs with intervals only)
        self.band: deque | None = None if self.interval is None else deque(maxlen=BAND_SAMPLES)
        self.t = self.last_t = 0
        self.first_loss: float | None = None  # the loss of sample 1 (see replay)
        self.cumulative_loss = self.elapsed = self.pending = self.seen = 0.0

    def follow(self, loop: _Loop) -> None:
        """Catch up with the loop: its sample count, loss sum and the seconds since last time."""
        self.t, self.cumulative_loss = loop.t, loop.cumulative_loss
        self.pending += loop.seconds - self.seen
        self.seen = loop.seconds

    def record(self) -> None:
        """Append the current values as a row; the time since the last row is its µs/sample."""
        self.elapsed += self.pending
        values = [m.get() for m in self.metrics]
        row = {"t": self.t,
               # + 0.0: river's -0.0 (ROCAUC before both classes were seen) is 0
               **{k: float(v) + 0.0 if isinstance(v, numbers.Real) else v
                  for k, v in zip(self.names, values)},
               "cumulative_loss": self.cumulative_loss,
               "regret": _last(getattr(self.regret, "regret", None)) if self.regret else math.nan,
               "dictionary_size": _dictionary_size(self.core),
               "us_per_sample": 1e6 * self.pending / max(self.t - self.last_t, 1),
               "elapsed_s": self.elapsed,
               "memory_bytes": _memory(self.model)}
        if self.interval is not None:
            row.update(coverage=float(self.interval.coverage_seen),
                       mean_width=float(self.interval.mean_width),
                       interval_score=float(self.interval.mean_interval_score))
        for k, v in row.items():
            self.columns[k].append(v)
        self.last_t, self.pending = self.t, 0.0

    def progress(self, fingerprint: dict) -> dict:
        """What a checkpoint file keeps besides the model and the metrics."""
        return {"t": self.t, "last_t": self.last_t, "cum_loss": self.cumulative_loss,
                "elapsed": self.elapsed, "pending": self.pending, "columns": self.columns,
                "fingerprint": fingerprint, "first_loss": self.first_loss,
                **({} if self.band is None else {"band": [list(b) for b in self.band]})}

    def restore(self, progress: dict) -> None:
        self.t, self.last_t = progress["t"], progress["last_t"]
        self.cumulative_loss, self.elapsed = progress["cum_loss"], progress["elapsed"]
        self.pending, self.columns = progress["pending"], progress["columns"]
        self.first_loss = progress.get("first_loss")  # (files before it was kept: None)
        self.core = _find(self.model, "dictionary_size")
        self.interval = _find(self.model, "coverage_seen")  # (the restored wrapper)
        if self.band is not None:
            self.band.extend(tuple(b) for b in progress.get("band", ()))

    def band_meta(self) -> dict | None:
        """The band as columns (non-finite bounds, before any finite interval, as NaN)."""
        if not self.band:
            return None
        t, y, pred, low, high = zip(*self.band)
        finite = [[float(v) if math.isfinite(v) else math.nan for v in col]
                  for col in (low, high)]
        return {"t": list(t), "y": [float(v) for v in y], "prediction": [float(v) for v in pred],
                "low": finite[0], "high": finite[1]}


#: What a checkpoint must share with the run that resumes it. The length of the run
#: (``max_samples``, the stream's ``n``) and its checkpoint grid may differ: a resumed run may
#: extend a shorter one, its new rows following the grid of the new run.
_SAME_RUN = ("dataset", "metrics", "learner", "interval")


def _same_run(path: Any, fingerprint: dict, progress: dict) -> None:
    saved = progress.get("fingerprint") or {}
    # the caller's own facts (replay's same_run), compared where the file records them
    extra = [k for k in fingerprint.get("same_run", {}) if k in saved.get("same_run", {})]
    saved = {**saved, **saved.get("same_run", {})}
    fingerprint = {**fingerprint, **fingerprint.get("same_run", {})}
    diff = [k for k in (*_SAME_RUN, *extra) if saved.get(k) != fingerprint.get(k)]
    if diff:
        what = ", ".join(f"{k} {_plain(saved.get(k))}, not {_plain(fingerprint.get(k))}"
                         for k in diff)
        raise ValueError(f"the checkpoint {str(path)!r} is from another run ({what})")


def _plain(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


class _Interrupt:
    """Ctrl-C deferred to the end of the current sample, while a checkpoint file is kept: the
    model is then whole (no sample half learned) and its state can be written at the
    interruption. A second Ctrl-C stops at once, as usual."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self) -> _Interrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def guard(self, stream: Iterator) -> Iterator:
        """The stream, stopping with ``KeyboardInterrupt`` before the sample after a Ctrl-C."""
        for item in stream:
            if self.requested:
                raise KeyboardInterrupt
            yield item


def replay(
    learner: Any,
    data: Any,
    *,
    metrics: Any,
    regret: Any = None,
    checkpoints: int | Sequence[int] | None = None,
    progress: bool = False,
    loss: Any = None,
    max_samples: int | None = None,
    meta: Mapping[str, Any] | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    on_resume: Any = None,
    same_run: Mapping[str, Any] | None = None,
) -> ReplayResult:
    r"""Test-then-train ``learner`` over ``data``; record the curves at checkpoints.

    A wrapper around :func:`iter_progressive_val`: at each step :math:`t` predict
    :math:`\hat y_t`, update the metrics and the cumulative loss (and the regret tracker), then
    ``learn_one(x_t, y_t)``. The metric values equal those of
    :func:`river.evaluate.progressive_val_score` on the same model and stream.

    Parameters
    ----------
    learner
        Any river regressor or classifier: an okoco learner, a ``BinaryClassifier``, a river
        pipeline around one. It is trained in place.
    data
        A :class:`~okoco.datasets.Dataset`, an iterable of ``(dict, target)`` pairs, or a tuple
        ``(X, y)`` of arrays (rows become dicts keyed ``0..d-1`` as in
        ``river.stream.iter_array``; a DataFrame keeps its column names).
    metrics
        A river metric, a list of them or a ``river.metrics.base.Metrics``. They are updated in
        place; the first is the main one (summaries).
    regret
        Optional regret tracker, any object with ``update(x, y, y_pred)`` and an array attribute
        ``regret`` (e.g. ``okoco.regret.RegretTracker``). It sees the stream's ``x`` and ``y`` and
        the model's prediction, so give the model the tracker's learner unwrapped (no pipeline)
        for the regret of the paper.
    checkpoints
        ``None`` (about 50), a number of checkpoints, or a list of sample counts. The last
        sample is always a checkpoint.
    progress
        Show a rich progress bar with samples per second on stderr.
    loss
        Loss for the ``cumulative_loss`` column of a regressor, an object with ``value(y, z)``;
        default the learner's own loss (found through pipelines and wrappers), on the stream's
        scale. For a classifier the cumulative loss is the log loss of ``predict_proba_one``
        (probabilities clipped below at 1e-15). For a ``BinaryClassifier`` with the logistic loss
        this is the logistic loss of the margin, except that a label the classifier has not seen
        yet has probability 0 in river's convention and costs :math:`\log 10^{15}` once.
    max_samples
        Stop after this many samples.
    meta
        Extra facts stored in the result's ``meta``.
    checkpoint
        Path of a checkpoint file (one ``.npz``, see :mod:`okoco.persistence`): the
        model graph (okoco learners, river pipelines, ``StandardScaler``,
        ``TargetStandardScaler``), the metric states, the samples consumed and the result
        columns so far. It is written atomically (temporary file, then ``os.replace``) every
        ``checkpoint_every`` samples, at the end of the stream, and on Ctrl-C: a Ctrl-C then
        takes effect once the current sample is learned, so the file holds every sample done
        (a second Ctrl-C stops at once and keeps the last file). A run with a regret tracker
        cannot be checkpointed.
    checkpoint_every
        Write the checkpoint after every this many samples (``None``: only at the end).
    resume
        If ``checkpoint`` exists, restore the model and the metrics from it (in place), skip the
        samples it consumed without learning them, and continue: the result equals that of an
        uninterrupted run, except for the timing columns. Without a checkpoint file the run
        starts from the beginning. The checkpoint must come from the same run (dataset,
        metrics, learner), else ``ValueError`` naming what differs, checked before anything is
        restored; a longer ``max_samples`` extends a shorter run.
    on_resume
        Called with the number of samples done once a checkpoint is restored (the CLI says
        "resuming" then, not before the checkpoint is found to fit).
    same_run
        Further facts a resumed checkpoint must share with this run, by name (JSON values;
        :func:`okoco.experiment.run` gives the learner's parameters, the dataset's options,
        the scaling): a checkpoint that records another value is refused, naming the fact.

    Returns
    -------
    ReplayResult

    Raises
    ------
    ValueError, TypeError
        Bad arguments, or what the learner raises on a bad sample (the message then says which
        sample, counting from 1).
    ReplayInterrupted
        On Ctrl-C (a ``KeyboardInterrupt``); its ``result`` holds the curves so far, the last
        row being the last sample learned in full.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco.learners import FunctionalGD
    >>> def make():
    ...     return preprocessing.TargetStandardScaler(
    ...         preprocessing.StandardScaler() | FunctionalGD(C=3.0, eta=0.2))
    >>> r = replay(make(), datasets.TrumpApproval(), metrics=metrics.MAE())
    >>> r.final["MAE"]
    0.349477...
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), make(), metrics.MAE())
    MAE: 0.349478
    """
    metric_list = _as_metrics(metrics, learner)
    _check_replay_arguments(max_samples=max_samples, regret=regret, checkpoint=checkpoint,
                            checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                            on_resume=on_resume)
    names = _names(metric_list)
    stream, n, data_name = _stream(data)
    if max_samples is not None:
        n = max_samples if n is None else min(n, max_samples)
    points = _checkpoints(checkpoints, n)
    curves = _Curves(learner, metric_list, names, regret)
    fingerprint = {"dataset": data_name, "n": n, "metrics": names, "checkpoints": points,
                   "max_samples": max_samples, "learner": _describe(learner),
                   "interval": None if curves.interval is None else curves.interval.coverage,
                   "same_run": dict(same_run or {})}
    if checkpoint is not None:
        if curves.interval is not None:
            _register_intervals()
        persistence.check_checkpointable(learner, metric_list)
        if resume and Path(checkpoint).exists():
            # the run is compared first: another run's model would fail to load with a
            # message about its structure, not about the run
            saved = persistence.read_metadata(checkpoint)["progress"]
            _same_run(checkpoint, fingerprint, saved)
            if n is not None and saved["t"] > n:
                raise ValueError(f"the checkpoint {str(checkpoint)!r} holds {saved['t']} samples "
                                 f"done, more than the {n} of this run")
            curves.restore(persistence.load_checkpoint(
                checkpoint, learner, metric_list,
                check=functools.partial(_same_run, checkpoint, fingerprint)))
            _skip(stream, curves.t, checkpoint)
            if on_resume is not None:
                on_resume(curves.t)
    if max_samples is not None:
        stream = itertools.islice(stream, max(max_samples - curves.t, 0))
    todo = [p for p in points if p > curves.t][::-1]  # next checkpoint last
    loop = _Loop(learner, metric_list, loss=loss, regret=regret, start=curves.t,
                 cumulative_loss=curves.cumulative_loss, band=curves.band,
                 band_from=0 if n is None else max(n - BAND_SAMPLES, 0))
    bar = _Progress(n, data_name, curves.t) if progress else None
    # the loop runs in stretches, stopping where something is due: a checkpoint, the bar's
    # update (every 64 samples), a checkpoint file
    periods = [k for k in (64 if bar is not None else None, checkpoint_every) if k is not None]
    interrupt = _Interrupt() if checkpoint is not None else None
    if interrupt is not None:
        interrupt.__enter__()
        stream = interrupt.guard(stream)
    try:
        while True:
            due = [loop.t - loop.t % k + k for k in periods] + todo[-1:]
            if loop.t == 0:  # stop after the first sample too: its loss goes in the meta
                due.append(1)
            reached = loop.run(stream, min(due, default=None))
            curves.follow(loop)
            if loop.t == 1 and curves.first_loss is None:
                curves.first_loss = loop.cumulative_loss
            if not reached:
                break
            if todo and loop.t == todo[-1]:
                curves.record()
                todo.pop()
            if bar is not None and (loop.t % 64 == 0 or loop.t == curves.last_t):
                bar.update(loop.t)
            if checkpoint_every is not None and loop.t % checkpoint_every == 0:
                persistence.save_checkpoint(checkpoint, learner, metric_list,
                                            curves.progress(fingerprint))
        if curves.t != curves.last_t:
            curves.record()
        if checkpoint is not None:
            persistence.save_checkpoint(checkpoint, learner, metric_list,
                                        curves.progress(fingerprint))
    except KeyboardInterrupt:
        curves.follow(loop)
        if interrupt is not None and interrupt.requested:  # stopped between two samples
            # saved before the interrupted row is added: a resumed run's rows follow its grid
            persistence.save_checkpoint(checkpoint, learner, metric_list,
                                        curves.progress(fingerprint))
        if curves.t != curves.last_t:
            curves.record()
        raise ReplayInterrupted(_result(curves, data_name, learner, meta, True,
                                        curves.first_loss)) from None
    finally:
        if interrupt is not None:
            interrupt.__exit__()
        if bar is not None:
            bar.close(curves.t)
    return _result(curves, data_name, learner, meta, False, curves.first_loss)


def _result(curves: _Curves, data_name: str, learner: Any, meta: Mapping | None,
            interrupted: bool, first_loss: float | None = None) -> ReplayResult:
    info = {"dataset": data_name, "n_samples": curves.t, "learner": _describe(learner)}
    if first_loss is not None:  # the loss of sample 1, predicted before any target was seen
        info["first_loss"] = first_loss
    if interrupted:
        info["interrupted"] = True
    band = curves.band_meta()
    if band is not None:
        info["band"] = band
        recent = _recent_intervals(band, curves.interval.coverage)
        if recent is not None:
            info["recent_intervals"] = recent
    info.update(meta or {})
    return ReplayResult(curves.columns, curves.names, info)


def _recent_intervals(band: dict, coverage: float) -> dict | None:
    """The intervals of the last samples, which the warm-up cannot dominate: their number,
    the median width of the finite ones and their mean interval score (``None`` if none is
    finite yet)."""
    # deferred: a band exists only for a model with intervals, which loaded okoco.intervals
    from okoco.intervals import interval_score

    finite = [(y, low, high) for y, low, high in zip(band["y"], band["low"], band["high"])
              if math.isfinite(low) and math.isfinite(high)]
    if not finite:
        return None
    return {"samples": len(finite),
            "median_width": float(np.median([high - low for _, low, high in finite])),
            "interval_score": float(np.mean([interval_score(y, low, high, coverage)
                                             for y, low, high in finite]))}


#: replay's arguments, declared as the classes declare their parameters (one validator).
_REPLAY_ARGUMENTS = {
    "max_samples": [None, Interval(numbers.Integral, 1, None)],
    "regret": [None, Protocol("an object with update(x, y, y_pred)", "update")],
    "checkpoint": [None, Protocol("a path (str or os.PathLike)", "__fspath__"),
                   Protocol("a path (str or os.PathLike)", "encode")],
    "checkpoint_every": [None, Interval(numbers.Integral, 1, None)],
    "resume": ["boolean"],
    "progress": ["boolean"],
    "on_resume": [None, "callable"],
}


def _check_replay_arguments(**arguments: Any) -> None:
    for name, value in arguments.items():
        check_param(name, value, _REPLAY_ARGUMENTS[name], owner="replay")
    checkpoint, regret = arguments["checkpoint"], arguments["regret"]
    if checkpoint is None and (arguments["checkpoint_every"] is not None or arguments["resume"]):
        raise ValueError("replay: checkpoint_every and resume need a checkpoint path")
    if checkpoint is not None and regret is not None:
        raise ValueError("replay: a replay with a regret tracker cannot be checkpointed")


def _register_intervals() -> None:
    """Let checkpoint files hold okoco's interval wrapper and its calibration state."""
    # deferred: okoco.intervals imports river's linear_model, which a replay need not load
    from okoco import intervals

    persistence.register(intervals.IntervalRegressor, wrapper=True)
    persistence.register(intervals.AdaptiveConformal)


def _skip(stream: Iterator, t: int, checkpoint: Any) -> None:
    """Consume the ``t`` samples a checkpoint already learned (they are not learned again)."""
    for _ in range(t):
        if next(stream, None) is None:
            raise ValueError(f"the checkpoint {str(checkpoint)!r} consumed {t} samples but the "
                             "stream is shorter")
