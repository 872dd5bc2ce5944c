"""The result of a replay: its checkpointed curves, saved as JSON or CSV, plotted."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from okoco._io import atomic_write, to_json_ready
from okoco.evaluate._plots import plot_runs

__all__ = ["BASE_COLUMNS", "INTERVAL_COLUMNS", "ReplayResult"]


#: Columns every result has, in order (metric columns come after ``t``).
BASE_COLUMNS = (
    "cumulative_loss",
    "regret",
    "dictionary_size",
    "us_per_sample",
    "elapsed_s",
    "memory_bytes",
)


#: Columns a run with calibrated intervals adds (:class:`okoco.intervals.IntervalRegressor`):
#: the share of targets inside their interval so far, the mean width and the mean interval
#: (Winkler) score of the finite intervals so far.
INTERVAL_COLUMNS = ("coverage", "mean_width", "interval_score")


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
