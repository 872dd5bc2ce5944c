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

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import math
import numbers
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from river import base, compose

from okoco import metrics as okoco_metrics
from okoco import persistence
from okoco._io import atomic_write, to_json_ready
from okoco.learners import BinaryClassifier
from okoco.losses import Squared

__all__ = ["iter_progressive_val", "Step", "replay", "ReplayResult", "ReplayInterrupted",
           "plot_runs", "atomic_write", "checkpoint_grid"]

#: Columns every result has, in order (metric columns come after ``t``).
BASE_COLUMNS = (
    "cumulative_loss",
    "regret",
    "dictionary_size",
    "us_per_sample",
    "elapsed_s",
    "memory_bytes",
)

_CHUNK = 1024


# -- checkpoints ----------------------------------------------------------------------------------


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


# -- data -----------------------------------------------------------------------------------------


def _rows_from_arrays(X: Any, y: Any) -> tuple[Iterator[tuple[dict, Any]], int, str]:
    if hasattr(X, "columns"):  # a DataFrame: its column names
        names = list(X.columns)
        values = X.to_numpy()
    else:
        values = np.asarray(X)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        names = list(range(values.shape[1]))  # as river.stream.iter_array names them
    if values.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {values.shape}")
    targets = np.asarray(y).ravel()
    if targets.shape[0] != values.shape[0]:
        raise ValueError(f"X has {values.shape[0]} rows but y has {targets.shape[0]} targets")

    def rows() -> Iterator[tuple[dict, Any]]:
        for lo in range(0, values.shape[0], _CHUNK):
            block = values[lo:lo + _CHUNK].tolist()
            for row, target in zip(block, targets[lo:lo + _CHUNK].tolist()):
                yield dict(zip(names, row)), target

    return rows(), int(values.shape[0]), "arrays"


def _stream(data: Any) -> tuple[Iterator[tuple[dict, Any]], int | None, str]:
    if isinstance(data, tuple) and len(data) == 2 and not isinstance(data[0], Mapping):
        return _rows_from_arrays(*data)
    n = None
    try:
        n = len(data)
    except TypeError:
        pass
    return iter(data), n, str(getattr(data, "name", type(data).__name__))


# -- looking inside models ------------------------------------------------------------------------


def _children(obj: Any) -> list[Any]:
    out = []
    steps = getattr(obj, "steps", None)
    if isinstance(steps, Mapping):
        out.extend(steps.values())
    for attr in ("regressor", "classifier", "learner", "model"):
        child = getattr(obj, attr, None)
        if child is not None and not isinstance(child, (str, numbers.Number)):
            out.append(child)
    return out


def _find(model: Any, attr: str) -> Any:
    """The first object in the model (depth first: wrappers, pipeline steps) having ``attr``."""
    todo, seen = [model], set()
    while todo:
        obj = todo.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if hasattr(type(obj), attr) or attr in getattr(obj, "__dict__", {}):
            return obj
        todo.extend(_children(obj))
    return None


#: Attributes that count the rows in use of an object's growing buffers (okoco's point stores,
#: factorizations and dictionaries keep spare capacity, doubled as they grow).
_COUNTS = ("n", "_m", "_size")


def _nbytes(obj: Any, depth: int = 4, seen: set | None = None,
            used: tuple[int, int | None] | None = None) -> int:
    """Bytes in use in the numpy arrays reachable from ``obj`` (attributes, lists, dicts).

    Spare capacity is not counted: the arrays of an object that counts its rows (``n``,
    ``_m`` or ``_size``) count those leading rows only, and a packed triangle of capacity
    ``_cap`` its ``m (m + 1) / 2`` leading entries. (Untouched capacity costs no resident
    memory either: numpy's zeros come from pages the system maps on first write.)
    """
    seen = set() if seen is None else seen
    if id(obj) in seen or depth < 0:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.base is not None and id(obj.base) in seen:
            return 0
        return _used_bytes(obj, used)
    if isinstance(obj, (str, bytes, numbers.Number, type)) or obj is None:
        return 0
    if isinstance(obj, Mapping):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        items, used = list(obj), None
    else:
        state = getattr(obj, "__dict__", {})
        items = list(state.values())
        if hasattr(obj, "__slots__"):
            items += [getattr(obj, s, None) for s in obj.__slots__]
        count = next((state[k] for k in _COUNTS if isinstance(state.get(k), int)
                      and not isinstance(state.get(k), bool)), None)
        cap = state.get("_cap")
        used = None if count is None else (count, cap if isinstance(cap, int) else None)
    if len(items) > 10_000:
        return 0  # a data buffer of Python objects; not the model's arrays
    return sum(_nbytes(item, depth - 1, seen, used) for item in items)


def _used_bytes(a: np.ndarray, used: tuple[int, int | None] | None) -> int:
    if used is None or a.ndim == 0 or a.shape[0] == 0:
        return int(a.nbytes)
    m, cap = used
    if a.ndim == 1 and cap is not None and a.shape[0] == cap * (cap + 1) // 2:
        return min(m * (m + 1) // 2, a.shape[0]) * a.itemsize
    return min(m, a.shape[0]) * (a.nbytes // a.shape[0])


def _memory(model: Any) -> int:
    core = _find(model, "dictionary_size")
    return _nbytes(core if core is not None else model)


def _dictionary_size(core: Any) -> float:
    if core is None:
        return math.nan
    try:
        return float(core.dictionary_size)
    except Exception:  # noqa: BLE001 - a diagnostic must never stop the run
        return math.nan


def _model_loss(model: Any) -> Any:
    owner = _find(model, "loss")
    loss = getattr(owner, "_loss", None) or getattr(owner, "loss", None)
    if loss is None or not hasattr(loss, "value"):
        return Squared()
    return loss


# -- the result -----------------------------------------------------------------------------------


class ReplayResult:
    """Checkpointed curves of one :func:`replay` run.

    Attributes
    ----------
    columns
        ``{name: list}``: ``t`` (samples seen), one column per metric (by class name), then
        ``cumulative_loss``, ``regret`` (NaN without a tracker), ``dictionary_size`` (NaN when the
        model has none), ``us_per_sample`` (wall time of the loop since the previous checkpoint,
        per sample), ``elapsed_s`` and ``memory_bytes`` (bytes of the numpy arrays the learner
        holds).
    metrics
        The metric column names; the first is the main one.
    meta
        Free-form facts about the run (dataset, learner, parameters, ...), saved with it.

    Examples
    --------
    >>> r = ReplayResult({"t": [1, 2], "MAE": [0.5, 0.25]}, metrics=["MAE"])
    >>> r.final
    {'t': 2, 'MAE': 0.25}
    >>> r["MAE"]
    array([0.5 , 0.25])
    """

    def __init__(self, columns: Mapping[str, Sequence], metrics: Sequence[str],
                 meta: Mapping[str, Any] | None = None):
        self.columns = {k: list(v) for k, v in columns.items()}
        self.metrics = list(metrics)
        self.meta = dict(meta or {})

    def __getitem__(self, name: str) -> np.ndarray:
        return np.asarray(self.columns[name], dtype=float if name != "t" else int)

    def __len__(self) -> int:
        return len(self.columns.get("t", []))

    @property
    def final(self) -> dict[str, Any]:
        """The last checkpoint's values (the end of the stream)."""
        return {k: v[-1] for k, v in self.columns.items() if v}

    @property
    def interrupted(self) -> bool:
        """Whether the run was stopped by Ctrl-C before the end (see :class:`ReplayInterrupted`)."""
        return bool(self.meta.get("interrupted", False))

    @property
    def n_samples(self) -> int:
        """Samples replayed."""
        return int(self.columns["t"][-1]) if self.columns.get("t") else 0

    def __repr__(self) -> str:
        final = self.final
        shown = ", ".join(f"{m}={final[m]:.6g}" for m in self.metrics if m in final)
        return f"ReplayResult(n_samples={self.n_samples}, {shown})"

    # -- serialisation ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``meta``, ``metrics``, ``final`` and ``columns`` (NaN as null)."""
        return to_json_ready({"meta": self.meta, "metrics": self.metrics, "final": self.final,
                       "columns": self.columns})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReplayResult:
        """Inverse of :meth:`to_dict` (nulls come back as NaN)."""
        cols = {k: [math.nan if v is None else v for v in vs] for k, vs in d["columns"].items()}
        return cls(cols, d["metrics"], d.get("meta"))

    def to_json(self, path: str | os.PathLike) -> Path:
        """Save as JSON, atomically. Returns the path.

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "run.json")
        >>> r = ReplayResult({"t": [1], "MAE": [float("nan")]}, ["MAE"])
        >>> _ = r.to_json(p)
        >>> ReplayResult.from_json(p).columns
        {'t': [1], 'MAE': [nan]}
        """
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        return atomic_write(path, lambda f: f.write(text + "\n"))

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> ReplayResult:
        """Load a result saved by :meth:`to_json`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def to_csv(self, path: str | os.PathLike | None = None) -> str:
        """The checkpoint table as CSV (one row per checkpoint); saved atomically if ``path``.

        Examples
        --------
        >>> print(ReplayResult({"t": [1, 2], "MAE": [0.5, 0.25]}, ["MAE"]).to_csv().strip())
        t,MAE
        1,0.5
        2,0.25
        """
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        names = list(self.columns)
        writer.writerow(names)
        for row in zip(*(self.columns[k] for k in names)):
            writer.writerow(["" if _isnan(v) else repr(v) if isinstance(v, float) else v
                             for v in row])
        text = buf.getvalue()
        if path is not None:
            atomic_write(path, lambda f: f.write(text))
        return text

    def plot(self, target: Any = None, *, label: str | None = None):
        """Plot the curves against ``t``.

        ``target`` may be ``None`` (return a new figure: metric, regret or cumulative loss,
        dictionary size and µs/sample), a path (save that figure there, atomically, format from
        the suffix) or a matplotlib ``Axes`` (draw the main metric on it). Returns the figure.
        """
        return plot_runs({label or self.meta.get("learner", "run"): [self]}, target,
                         title=self.title())

    def title(self) -> str:
        """What the run is, for a plot: dataset, model, and where an interrupted run stopped.

        Examples
        --------
        >>> ReplayResult({"t": [5]}, [], {"dataset": "sinc", "model": "KONS()",
        ...                               "interrupted": True}).title()
        'sinc: KONS() (interrupted at t = 5)'
        """
        meta = self.meta
        what = meta.get("model") or meta.get("learner") or "run"
        text = f"{meta['dataset']}: {what}" if meta.get("dataset") else str(what)
        return text + (f" (interrupted at t = {self.n_samples:,})" if self.interrupted else "")


def _isnan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


# -- plotting -------------------------------------------------------------------------------------

#: Line styles by group, so that a learner whose curve equals another's stays visible.
_STYLES = ("-", "--", "-.", ":")


def plot_runs(groups: Mapping[str, Sequence[ReplayResult]], target: Any = None, *,
              title: str | None = None):
    """Plot several groups of runs (e.g. one learner over seeds): mean curve and ±1 std band.

    One panel per metric, then the regret (or the cumulative loss), the dictionary size and the
    time per sample. Each group has its own line style, so identical curves stay visible; a
    band of a column that is never negative stops at zero; and when the first samples dwarf the
    rest (a metric averaged over one sample), the panel's range is that of the last 95% of the
    stream, so the spike does not flatten the curve.

    Parameters
    ----------
    groups
        ``{label: [ReplayResult, ...]}``; runs of a group should share checkpoints (those that
        do not are cut to the shortest).
    target
        ``None``, a path (saved atomically) or an ``Axes`` (main metric only); see
        :meth:`ReplayResult.plot`.
    title
        The figure's title (default: the dataset, and "interrupted" when a run was).

    Examples
    --------
    >>> r = ReplayResult({"t": [1, 2], "MAE": [0.5, 0.25], "dictionary_size": [1, 2]}, ["MAE"])
    >>> fig = plot_runs({"a": [r], "b": [r]})
    >>> len(fig.axes)
    4
    """
    from matplotlib.figure import Figure  # deferred: matplotlib is slow to import; no pyplot

    runs = [r for rs in groups.values() for r in rs]
    if not runs:
        raise ValueError("nothing to plot")
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics)) or ["cumulative_loss"]
    has_regret = any(np.isfinite(r["regret"]).any() for r in runs if "regret" in r.columns)
    panels = [(m, m) for m in metrics]
    if has_regret or "cumulative_loss" not in metrics:
        panels.append(("regret", "regret") if has_regret else
                      ("cumulative_loss", "cumulative loss"))
    panels += [("dictionary_size", "dictionary size"), ("us_per_sample", "µs per sample")]

    if target is not None and not isinstance(target, (str, os.PathLike)):
        axes, fig = [target], target.figure
        panels = panels[:1]
    else:
        rows = (len(panels) + 1) // 2
        fig = Figure(figsize=(10, 3.5 * rows), layout="constrained")
        axes = list(fig.subplots(rows, 2, squeeze=False).ravel())
        for ax in axes[len(panels):]:
            fig.delaxes(ax)
    for ax, (col, name) in zip(axes, panels):
        _draw(ax, groups, col)
        ax.set_title(name)
        ax.set_xlabel("t (samples seen)")
        ax.grid(True, alpha=0.3)
    if len(groups) > 1 or target is None or isinstance(target, (str, os.PathLike)):
        axes[0].legend(fontsize="small")
    if title is None:
        datasets_ = sorted({str(r.meta["dataset"]) for r in runs if r.meta.get("dataset")})
        title = ", ".join(datasets_)
        stopped = [r for r in runs if r.interrupted]
        if stopped:
            title += f" (interrupted at t = {min(r.n_samples for r in stopped):,})"
    if title and (target is None or isinstance(target, (str, os.PathLike))):
        fig.suptitle(title)  # (a caller's own Axes keep the caller's titles)
    if isinstance(target, (str, os.PathLike)):
        fmt = Path(target).suffix.lstrip(".").lower() or "png"
        if fmt not in fig.canvas.get_supported_filetypes():
            raise ValueError(f"cannot save a plot as {fmt!r}; use .png, .pdf or .svg")
        atomic_write(target, lambda f: fig.savefig(f, format=fmt, dpi=120), binary=True)
    return fig


def _draw(ax: Any, groups: Mapping[str, Sequence[ReplayResult]], col: str) -> None:
    """Mean curve and ±1 std band of column ``col`` for each group, then the y-range."""
    drawn = []
    for i, (label, rs) in enumerate(groups.items()):
        rs = [r for r in rs if col in r.columns]
        if not rs:
            continue
        k = min(len(r) for r in rs)
        t = rs[0]["t"][:k]
        Y = np.array([r[col][:k] for r in rs], dtype=float)
        if not np.isfinite(Y).any():
            continue
        mean = np.nanmean(Y, axis=0)
        (line,) = ax.plot(t, mean, label=label, linestyle=_STYLES[i % len(_STYLES)],
                          linewidth=max(2.0 - 0.5 * (i // len(_STYLES)), 0.5))
        low, high = mean, mean
        if len(rs) > 1:
            std = np.nanstd(Y, axis=0)
            low, high = mean - std, mean + std
            if np.nanmin(Y) >= 0:
                low = np.maximum(low, 0.0)  # times, sizes, losses: a band never goes below 0
            ax.fill_between(t, low, high, alpha=0.2, color=line.get_color())
        drawn.append((t, low, high))
    if drawn:
        _keep_the_tail_in_view(ax, drawn)


def _keep_the_tail_in_view(ax: Any, drawn: list) -> None:
    """Limit the y-range to the last 95% of the stream when the first samples would dwarf it."""
    t_end = max(t[-1] for t, _, _ in drawn)
    every = np.concatenate([np.concatenate([lo, hi]) for _, lo, hi in drawn])
    tail = np.concatenate([np.concatenate([lo[t >= 0.05 * t_end], hi[t >= 0.05 * t_end]])
                           for t, lo, hi in drawn])
    every, tail = every[np.isfinite(every)], tail[np.isfinite(tail)]
    if tail.size == 0:
        return
    lo, hi = float(tail.min()), float(tail.max())
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    # each side is cut only where the early values stray far beyond the tail's range
    cut_top, cut_bottom = every.max() > hi + 2 * span, every.min() < lo - 2 * span
    if not (cut_top or cut_bottom):
        return
    top = hi + 0.15 * span if cut_top else float(every.max())
    bottom = lo - 0.15 * span if cut_bottom else float(every.min())
    pad = 0.05 * (top - bottom)
    top, bottom = top + (0 if cut_top else pad), bottom - (0 if cut_bottom else pad)
    if every.min() >= 0:
        bottom = max(bottom, 0.0)
    ax.set_ylim(bottom, top)


# -- progressive validation -----------------------------------------------------------------------


class Step(NamedTuple):
    """One test-then-train step of :func:`iter_progressive_val`."""

    #: Samples learned so far, this one included (1, 2, ...).
    t: int
    #: The sample's target.
    y: Any
    #: The prediction made before learning it (for a classifier, ``predict_one``'s label when a
    #: metric needs labels, else ``None``).
    y_pred: Any
    #: The prediction's loss: the regressor's loss ``value(y, y_pred)``, or for a classifier the
    #: log loss of ``predict_proba_one`` (probabilities clipped below at 1e-15).
    loss: float
    #: Wall time of the step, fetching the sample included, in seconds.
    seconds: float


def iter_progressive_val(model: Any, data: Any, metrics: Any, *, loss: Any = None,
                         regret: Any = None, start: int = 0) -> Iterator[Step]:
    r"""Test-then-train ``model`` over ``data``, yielding a :class:`Step` after every sample.

    At each step :math:`t`: predict :math:`\hat y_t`, update ``metrics`` (in place) and the
    regret tracker, then ``learn_one(x_t, y_t)``. Classifiers are asked ``predict_proba_one``
    for metrics that take probabilities and ``predict_one`` otherwise, as river's
    ``iter_progressive_val_score`` does, so the metric values are river's. The time the caller
    spends between two steps is not counted in :attr:`Step.seconds`.

    Parameters
    ----------
    model
        A river regressor or classifier (an okoco learner, a ``BinaryClassifier``, a pipeline
        around one), trained in place.
    data
        As for :func:`replay`.
    metrics
        A river metric or a list of them, updated in place.
    loss
        The regressor's loss (an object with ``value(y, z)``); default the model's own loss,
        found through pipelines and wrappers (squared loss if it has none).
    regret
        Optional tracker with ``update(x, y, y_pred)``.
    start
        Samples already learned (when resuming): the count of :attr:`Step.t` starts there.

    Raises
    ------
    ValueError, TypeError
        What the model raises on a bad sample, with the sample's number (counting from 1).

    Examples
    --------
    >>> from river import metrics
    >>> from okoco import datasets
    >>> from okoco.learners import FunctionalGD
    >>> mae = metrics.MAE()
    >>> for step in iter_progressive_val(FunctionalGD(), datasets.load("sinc", n=50), mae):
    ...     if step.t % 20 == 0:
    ...         print(step.t, f"{mae.get():.3f}")
    20 ...
    40 ...
    >>> step.t, step.loss == (step.y - step.y_pred) ** 2  # FunctionalGD: the squared loss
    (50, True)
    """
    loop = _Loop(model, _as_metrics(metrics, model), loss=loss, regret=regret, start=start)
    stream, _, _ = _stream(data)
    seconds = 0.0
    while loop.run(stream, loop.t + 1):
        y, y_pred, cost = loop.last
        yield Step(loop.t, y, y_pred, cost, loop.seconds - seconds)
        seconds = loop.seconds


class _Loop:
    """The test-then-train steps, run in stretches: the engine of both :func:`replay` and
    :func:`iter_progressive_val`.

    ``run(stream, stop)`` predicts, scores and learns the samples of ``stream`` until ``t``
    reaches ``stop`` (or the stream ends), with no Python work between two steps but the steps
    themselves: a replay's time per sample is the model's, not its bookkeeping's. The sample
    count ``t``, the sum of the losses (added one sample at a time, in order) and the seconds
    spent in ``run`` carry over from one stretch to the next; after any exception, Ctrl-C
    included, they count the samples whose step finished (a Ctrl-C that lands as ``learn_one``
    returns leaves that sample learned but not counted).
    """

    def __init__(self, model: Any, metrics: list, *, loss: Any, regret: Any, start: int = 0,
                 cumulative_loss: float = 0.0):
        self.classifier = isinstance(model, base.Classifier)
        self.model, self.regret = model, regret
        self.predict = _predictor(model, metrics)
        self.value = None if self.classifier else (
            loss if loss is not None else _model_loss(model)).value
        # (update, wants probabilities); a regressor's metrics all take its prediction
        self.updates = [(m.update, self.classifier and not m.requires_labels) for m in metrics]
        self.labels = [update for update, _ in self.updates]  # a regressor's updates
        self.t, self.cumulative_loss, self.seconds = start, cumulative_loss, 0.0
        #: ``(y, y_pred, loss)`` of the sample a stretch stopped at.
        self.last: tuple | None = None

    def run(self, stream: Iterator, stop: int | None = None) -> bool:
        """Learn from ``stream`` until ``t == stop`` (``None``: to its end); False once the
        stream is exhausted before ``stop``."""
        classifier, predict, value, regret = self.classifier, self.predict, self.value, self.regret
        predict_one, learn_one = self.model.predict_one, self.model.learn_one
        updates, labels = self.updates, self.labels
        log = math.log
        t, cumulative_loss = self.t, self.cumulative_loss
        clock = time.perf_counter()
        try:
            for x, y in stream:
                try:
                    if classifier:
                        y_label, proba = predict(x)
                        for update, wants_proba in updates:
                            y_pred = proba if wants_proba else y_label
                            if y_pred is not None and y_pred != {}:
                                update(y_true=y, y_pred=y_pred)
                        cost = -log(min(max(proba.get(y, 0.0) if proba else 0.0, 1e-15), 1.0))
                    else:
                        y_label = predict_one(x)
                        if y_label is not None:
                            if y_label != {}:
                                for update in labels:
                                    update(y_true=y, y_pred=y_label)
                            cost = float(value(y, y_label))
                        else:
                            cost = 0.0
                    if regret is not None:
                        regret.update(x, y, y_label)
                    learn_one(x, y)
                except (ValueError, TypeError) as error:
                    raise type(error)(f"sample {t + 1}: {error}") from error
                # no call between these two: Ctrl-C cannot land between them
                cumulative_loss += cost
                t += 1
                if t == stop:
                    self.last = (y, y_label, cost)
                    return True
            return False
        finally:
            self.seconds += time.perf_counter() - clock
            self.t, self.cumulative_loss = t, cumulative_loss


def _predictor(model: Any, metrics: list):
    """``x -> (label, probabilities)`` as river's progressive validation asks for them."""
    if not isinstance(model, base.Classifier):
        return lambda x: (model.predict_one(x), None)
    need_labels = any(m.requires_labels for m in metrics)
    label_from_proba = _label_is_argmax(model)

    def predict(x: dict) -> tuple[Any, dict]:
        proba = model.predict_proba_one(x)
        if not need_labels:
            return None, proba
        if label_from_proba:
            return (max(proba, key=proba.get) if proba else None), proba
        return model.predict_one(x), proba

    return predict


def _label_is_argmax(model: Any) -> bool:
    """Whether ``predict_one`` is the argmax of ``predict_proba_one`` (river's default rule)."""
    if isinstance(model, compose.Pipeline):
        return _label_is_argmax(list(model.steps.values())[-1])
    return type(model).predict_one in (base.Classifier.predict_one, BinaryClassifier.predict_one)


def _as_metrics(metrics: Any, model: Any) -> list:
    """The metrics as a list, each checked to be a river metric that works with ``model``."""
    Metric, Metrics = _metric_types()
    if isinstance(metrics, Metrics):
        items = list(metrics)
    elif isinstance(metrics, Metric):
        items = [metrics]
    elif isinstance(metrics, Iterable) and not isinstance(metrics, (str, Mapping)):
        items = list(metrics)
    else:
        raise TypeError(f"metrics must be a river metric or a list of them, got {metrics!r}")
    if not items:
        raise ValueError("give at least one metric")
    for m in items:
        if not isinstance(m, Metric):
            raise TypeError(f"{m!r} is not a river metric")
        if not m.works_with(model):
            raise ValueError(f"metric {type(m).__name__} does not work with {model!r}")
    return items


def _metric_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(metric classes, metric-collection classes): okoco's, and river's when loaded."""
    # river.metrics takes up to a second to import (scipy.stats): a river metric passed here
    # has loaded it already, so it is looked up, never imported
    river_base = sys.modules.get("river.metrics.base")
    if river_base is None:
        return (okoco_metrics.Metric,), ()
    return (okoco_metrics.Metric, river_base.Metric), (river_base.Metrics,)


def _names(metrics: list) -> list[str]:
    names: list[str] = []
    for m in metrics:
        base_name, k, name = type(m).__name__, 1, type(m).__name__
        while name in names:
            k += 1
            name = f"{base_name}_{k}"
        names.append(name)
    return names


# -- replay: checkpointed curves ------------------------------------------------------------------


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
        self.columns: dict[str, list] = {"t": [], **{k: [] for k in names},
                                         **{k: [] for k in BASE_COLUMNS}}
        self.t = self.last_t = 0
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
               **{k: float(v) if isinstance(v, numbers.Real) else v
                  for k, v in zip(self.names, values)},
               "cumulative_loss": self.cumulative_loss,
               "regret": _last(getattr(self.regret, "regret", None)) if self.regret else math.nan,
               "dictionary_size": _dictionary_size(self.core),
               "us_per_sample": 1e6 * self.pending / max(self.t - self.last_t, 1),
               "elapsed_s": self.elapsed,
               "memory_bytes": _memory(self.model)}
        for k, v in row.items():
            self.columns[k].append(v)
        self.last_t, self.pending = self.t, 0.0

    def progress(self, fingerprint: dict) -> dict:
        """What a checkpoint file keeps besides the model and the metrics."""
        return {"t": self.t, "last_t": self.last_t, "cum_loss": self.cumulative_loss,
                "elapsed": self.elapsed, "pending": self.pending, "columns": self.columns,
                "fingerprint": fingerprint}

    def restore(self, progress: dict) -> None:
        self.t, self.last_t = progress["t"], progress["last_t"]
        self.cumulative_loss, self.elapsed = progress["cum_loss"], progress["elapsed"]
        self.pending, self.columns = progress["pending"], progress["columns"]
        self.core = _find(self.model, "dictionary_size")


#: What a checkpoint must share with the run that resumes it. The length of the run
#: (``max_samples``, the stream's ``n``) and its checkpoint grid may differ: a resumed run may
#: extend a shorter one, its new rows following the grid of the new run.
_SAME_RUN = ("dataset", "metrics", "learner")


def _same_run(path: Any, fingerprint: dict, progress: dict) -> None:
    saved = progress.get("fingerprint") or {}
    diff = [k for k in _SAME_RUN if saved.get(k) != fingerprint.get(k)]
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
    _check_replay_arguments(regret, max_samples, checkpoint, checkpoint_every, resume)
    names = _names(metric_list)
    stream, n, data_name = _stream(data)
    if max_samples is not None:
        n = max_samples if n is None else min(n, max_samples)
    points = _checkpoints(checkpoints, n)
    fingerprint = {"dataset": data_name, "n": n, "metrics": names, "checkpoints": points,
                   "max_samples": max_samples, "learner": _describe(learner)}
    curves = _Curves(learner, metric_list, names, regret)
    if checkpoint is not None:
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
                 cumulative_loss=curves.cumulative_loss)
    bar = _Progress(n, data_name, curves.t) if progress else None
    # the loop runs in stretches, stopping where something is due: a checkpoint, the bar's
    # update (every 64 samples), a checkpoint file
    periods = [k for k in (64 if bar is not None else None, checkpoint_every) if k is not None]
    interrupt = _Interrupt() if checkpoint is not None else None
    first_loss = None
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
            if loop.t == 1 and first_loss is None:
                first_loss = loop.cumulative_loss
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
                                        first_loss)) from None
    finally:
        if interrupt is not None:
            interrupt.__exit__()
        if bar is not None:
            bar.close(curves.t)
    return _result(curves, data_name, learner, meta, False, first_loss)


def _result(curves: _Curves, data_name: str, learner: Any, meta: Mapping | None,
            interrupted: bool, first_loss: float | None = None) -> ReplayResult:
    info = {"dataset": data_name, "n_samples": curves.t, "learner": _describe(learner)}
    if first_loss is not None:  # the loss of sample 1, predicted before any target was seen
        info["first_loss"] = first_loss
    if interrupted:
        info["interrupted"] = True
    info.update(meta or {})
    return ReplayResult(curves.columns, curves.names, info)


def _check_replay_arguments(regret, max_samples, checkpoint, checkpoint_every, resume) -> None:
    if max_samples is not None and (isinstance(max_samples, bool) or max_samples < 1):
        raise ValueError(f"max_samples must be a positive integer, got {max_samples!r}")
    if regret is not None and not callable(getattr(regret, "update", None)):
        raise TypeError(f"regret must have an update(x, y, y_pred) method, got {regret!r}")
    if checkpoint_every is not None and (
        isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, numbers.Integral)
        or checkpoint_every < 1
    ):
        raise ValueError(f"checkpoint_every must be a positive integer, got {checkpoint_every!r}")
    if checkpoint is None and (checkpoint_every is not None or resume):
        raise ValueError("checkpoint_every and resume need a checkpoint path")
    if checkpoint is not None and regret is not None:
        raise ValueError("a replay with a regret tracker cannot be checkpointed")


def _skip(stream: Iterator, t: int, checkpoint: Any) -> None:
    """Consume the ``t`` samples a checkpoint already learned (they are not learned again)."""
    for _ in range(t):
        if next(stream, None) is None:
            raise ValueError(f"the checkpoint {str(checkpoint)!r} consumed {t} samples but the "
                             "stream is shorter")


def _last(values: Any) -> float:
    if values is None:
        return math.nan
    try:
        return float(values[-1]) if len(values) else math.nan
    except (TypeError, IndexError):
        return math.nan


def _describe(model: Any) -> str:
    core = _find(model, "dictionary_size")
    return type(core if core is not None else model).__name__


class _Progress:
    """A rich progress bar on stderr, with samples per second."""

    def __init__(self, total: int | None, name: str, done: int = 0):
        # deferred: rich is only needed when a bar is shown
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._start, self._done = time.perf_counter(), done
        self._task = self._progress.add_task(name, total=total, rate="", completed=done)
        self._progress.start()

    def update(self, t: int) -> None:
        dt = time.perf_counter() - self._start
        rate = f"{(t - self._done) / dt:,.0f} samples/s" if dt > 0 else ""
        self._progress.update(self._task, completed=t, rate=rate)

    def close(self, t: int) -> None:
        self.update(t)
        self._progress.stop()
