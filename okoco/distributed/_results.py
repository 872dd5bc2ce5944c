"""The result of a grid (:class:`GridResult`): one record per task, their summary and the
replays' curves."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from okoco import metrics as okoco_metrics
from okoco._io import atomic_write, to_json_ready
from okoco.distributed._tasks import Task

__all__ = ["GridResult"]


class GridResult:
    """What :func:`grid` returns: one record per task, in task order.

    Attributes
    ----------
    tasks
        The :class:`Task` list.
    records
        One dict per task: ``index``, ``learner``, ``params``, ``dataset``, ``data_params``,
        ``seed``, ``status`` (``"ok"`` or ``"error"``), ``error`` and ``error_type`` (for a
        failed task), ``model`` (the learner's constructor call), ``n_samples``, ``metrics``
        (final value of each metric), ``cumulative_loss``, ``regret`` (``None`` without a
        tracker: NaN and infinities are stored as ``None``), ``dictionary_size``,
        ``elapsed_s`` (replay time), ``memory_bytes``, ``us_per_sample`` (mean over the run),
        ``wall_s`` (the task's whole time, loading included) and ``worker`` (the Dask worker
        address, or ``"local"``).
    results
        The :class:`~okoco.evaluate.ReplayResult` of each task (``None`` if it failed).
    wall_s
        Wall time of the whole grid, cluster start and stop included.
    scheduler, n_workers
        Where it ran.

    Examples
    --------
    >>> from okoco.distributed import grid
    >>> res = grid(["fgd", "kons"], "sinc", seeds=2, data_params={"n": 40})
    >>> len(res), len(res.ok), len(res.failed)
    (4, 4, 0)
    >>> res.best("MAE")["learner"] in ("fgd", "kons")
    True
    """

    def __init__(self, tasks: list[Task], outputs: list[tuple[dict, Any]], *, wall_s: float,
                 scheduler: str, n_workers: int):
        self.tasks = tasks
        self.records = [rec for rec, _ in outputs]
        self.results = [res for _, res in outputs]
        self.wall_s = wall_s
        self.scheduler = scheduler
        self.n_workers = n_workers

    @property
    def ok(self) -> list[dict[str, Any]]:
        """Records of the tasks that succeeded."""
        return [r for r in self.records if r["status"] == "ok"]

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Records of the tasks that failed (with their parameters and error)."""
        return [r for r in self.records if r["status"] != "ok"]

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (f"GridResult({len(self.records)} tasks, {len(self.ok)} ok, "
                f"{len(self.failed)} failed, {self.wall_s:.2f} s, {self.scheduler}"
                f"{f' x {self.n_workers} workers' if self.n_workers else ''})")

    def summary(self) -> list[dict[str, Any]]:
        """Mean and standard deviation over seeds of each configuration's final values.

        One row per (dataset, data parameters, learner, parameters), in task order, with
        ``runs`` (successful seeds), ``failed`` and ``{"mean", "std"}`` for every metric and for
        ``cumulative_loss``, ``dictionary_size`` and ``us_per_sample``.
        """
        groups: dict[str, dict[str, Any]] = {}
        for rec in self.records:
            key = json.dumps([rec["dataset"], rec["data_params"], rec["learner"], rec["params"]],
                             sort_keys=True, default=repr)
            row = groups.setdefault(key, {"dataset": rec["dataset"],
                                          "data_params": rec["data_params"],
                                          "learner": rec["learner"], "params": rec["params"],
                                          "runs": 0, "failed": 0, "_recs": []})
            if rec["status"] == "ok":
                row["runs"] += 1
                row["_recs"].append(rec)
            else:
                row["failed"] += 1
        rows = []
        for row in groups.values():
            recs = row.pop("_recs")
            names = list(dict.fromkeys(m for r in recs for m in r["metrics"]))
            for name in names:
                row[name] = _mean_std([r["metrics"].get(name) for r in recs])
            for name in ("cumulative_loss", "dictionary_size", "us_per_sample"):
                row[name] = _mean_std([r[name] for r in recs])
            rows.append(row)
        return rows

    def best(self, metric: str | None = None) -> dict[str, Any]:
        """The :meth:`summary` row with the best mean ``metric`` (default: the first metric).

        "Best" is the smallest value, or the largest for metrics where river says bigger is
        better (accuracy, R2, F1, ROC AUC).
        """
        rows = [r for r in self.summary() if r["runs"]]
        if not rows:
            raise ValueError("no task succeeded")
        if metric is None:
            metric = next(iter(self.ok[0]["metrics"]))
        if not any(metric in r for r in rows):
            raise ValueError(f"no run has metric {metric!r}")
        cls = getattr(okoco_metrics, metric, None)
        if cls is None:  # river's, e.g. ROCAUC
            # deferred: river.metrics imports scipy.stats, about a second
            from river import metrics as river_metrics

            cls = getattr(river_metrics, metric, None)
        try:
            bigger = bool(cls().bigger_is_better)
        except TypeError:  # not a metric class: smaller is better
            bigger = False
        scored = [r for r in rows if metric in r and math.isfinite(r[metric]["mean"])]
        return (max if bigger else min)(scored, key=lambda r: r[metric]["mean"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``records``, ``summary``, ``wall_s``, ``scheduler``, ``n_workers``."""
        return to_json_ready({"records": self.records, "summary": self.summary(),
                       "wall_s": self.wall_s, "scheduler": self.scheduler,
                       "n_workers": self.n_workers})

    def to_json(self, path) -> Any:
        """Save :meth:`to_dict` as JSON, atomically (no curves; see :attr:`results`)."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        return atomic_write(path, lambda f: f.write(text + "\n"))


def _mean_std(values: Sequence[Any]) -> dict[str, float]:
    ok = np.array([v for v in values if v is not None], dtype=float)
    ok = ok[np.isfinite(ok)]
    return {"mean": float(ok.mean()) if ok.size else math.nan,
            "std": float(ok.std()) if ok.size else math.nan}
