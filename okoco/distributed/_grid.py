"""Experiment grids: learner x parameters x dataset x seed, serially or on a Dask cluster.

Each task is one test-then-train replay, a :class:`okoco.experiment.RunSpec` given to
:func:`okoco.experiment.run`, the function behind ``okoco replay`` and ``okoco compare``, so a
grid task, a CLI run and a serial loop with the same seed give the same model on the same data
and the same metrics. Tasks are independent: there is no communication between them, only the
task description going out and a record (plus the checkpointed
:class:`~okoco.evaluate.ReplayResult`, a few kB) coming back.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from okoco.distributed._cluster import (
    check_scheduler,
    import_distributed,
    open_client,
)
from okoco.distributed._results import GridResult
from okoco.distributed._tasks import (
    Task,
    _failed,
    _record,
    make_tasks,
    run_task,
)
from okoco.experiment import (
    METRICS,
    make_kernel,
)

__all__ = ["Task", "GridResult", "grid", "run_task"]


# -- running --------------------------------------------------------------------------------------


def _reporter(progress: Any, total: int) -> Callable[[dict[str, Any], Task], None]:
    done = 0
    width = len(str(total))

    def report(record: dict[str, Any], task: Task) -> None:
        nonlocal done
        done += 1
        if callable(progress):
            progress(done, total, record)
            return
        status = "ok" if record["status"] == "ok" else "FAILED"
        wall = record.get("wall_s")
        tail = f": {record['error']}" if record["status"] != "ok" else (
            f" ({wall:.2f} s)" if wall is not None else "")
        print(f"[{done:>{width}}/{total}] {status:<6} {task.label()}{tail}", file=sys.stderr,
              flush=True)

    if not progress:
        return lambda record, task: None
    return report


def _settings(kernel: Any, loss: str | None, C: float, metrics: Any, max_samples: int | None,
              checkpoints: Any, scale: bool, scale_target: bool, shuffle: bool,
              target: str | None, interval: float | None = None,
              pos_label: Any = None) -> dict[str, Any]:
    if kernel is None:
        kernel = make_kernel("rbf")
    elif isinstance(kernel, str):
        kernel = make_kernel(kernel.lower())
    if isinstance(C, bool) or not isinstance(C, (int, float)) or not (math.isfinite(C) and C > 0):
        raise ValueError(f"C must be finite and > 0, got {C!r}")
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    for name in names:
        if not isinstance(name, str) or name.lower() not in METRICS:
            raise ValueError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")
    if max_samples is not None and (isinstance(max_samples, bool) or max_samples < 1):
        raise ValueError(f"max_samples must be >= 1, got {max_samples!r}")
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, float)
                                 or not 0.0 < interval < 1.0):
        raise ValueError(f"interval must be None or a coverage in (0, 1), got {interval!r}")
    return {"kernel": kernel, "loss": None if loss is None else loss.lower(), "C": float(C),
            "metric": names, "max_samples": max_samples, "checkpoints": checkpoints,
            "scale": bool(scale), "scale_target": bool(scale_target), "shuffle": bool(shuffle),
            "target": target, "interval": interval, "pos_label": pos_label}


def grid(
    learners: str | Sequence[str] | Mapping[str, Any],
    datasets: Any,
    *,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    seeds: int | Sequence[int] = 1,
    data_params: Mapping[str, Any] | None = None,
    kernel: Any = None,
    loss: str | None = None,
    C: float = 3.0,
    metrics: str | Sequence[str] = (),
    max_samples: int | None = None,
    checkpoints: int | Sequence[int] | None = 50,
    scale: bool = True,
    scale_target: bool = True,
    shuffle: bool = False,
    target: str | None = None,
    interval: float | None = None,
    pos_label: Any = None,
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool | Callable[[int, int, dict], None] = False,
    timeout: float = 10.0,
) -> GridResult:
    """Run learner x parameters x dataset x seed, test-then-train, serially or on Dask.

    Every task builds its model exactly as ``okoco replay`` does (features standardised online,
    regression targets too, binary tasks through :class:`~okoco.BinaryClassifier` with the
    logistic loss, ``C = 3``) and replays its dataset with :func:`okoco.evaluate.replay`. Tasks
    run with BLAS pinned to one thread, so a task's numbers do not depend on where it ran: the
    serial path and any cluster give identical metrics for the same seeds.

    Parameters
    ----------
    learners
        A learner name (``"fgd"``, ``"kons"``, ``"sketched-kons"``, ``"krls"``), a list of them
        sharing ``params``, or ``{name: parameter grid}`` with one grid per learner.
    datasets
        A dataset name or path, a ``(name, data_params)`` pair, a
        :class:`~okoco.datasets.Dataset`, or a list of those. Names are loaded by the task (the
        file must be readable where it runs); a Dataset object is sent to the workers once.
    params
        Shared learner parameters: ``{key: [values]}`` (Cartesian product; a single value is a
        list of one) or a list of dicts (taken as they are). Each learner gets the keys it has;
        a key no learner has is an error. ``kernel`` (a kernel object, e.g. to tune the
        bandwidth), ``loss`` and ``C`` may be swept too.
    seeds
        A number of seeds (``0 .. n-1``) or the seeds themselves. The seed goes to the learner,
        to a synthetic dataset's generator and to the ``shuffle`` order.
    data_params
        Loader parameters for every named dataset (``{"n": 500}``).
    kernel, loss, C, metrics, max_samples, checkpoints, scale, scale_target, shuffle, target
        As the ``okoco compare`` options: a kernel object or name (default ``RBF(gamma=1)``), a
        loss name, the clipping bound, metric names (default MAE or accuracy), a sample limit,
        the checkpoints of each curve, online scaling of features and targets, a shuffled order
        per seed, the CSV target column.
    interval
        ``None``, or a coverage in ``(0, 1)``: each run's model is wrapped in
        :class:`okoco.intervals.IntervalRegressor` (see :class:`okoco.experiment.RunSpec`) and
        its result has the columns ``coverage``, ``mean_width`` and ``interval_score``.
    pos_label
        The positive label of binary datasets (``okoco compare --pos-label``; see
        :class:`okoco.experiment.RunSpec`); ``None`` infers it by the documented rule.
    scheduler
        ``None`` / ``"serial"`` (in this process), ``"local"`` (a LocalCluster started and
        stopped for this call), a scheduler address, or a ``distributed.Client``.
    workers
        ``"local"``: the number of worker processes (default: CPUs, at most the task count).
        An address: wait until that many workers are connected.
    progress
        ``True`` prints one line per finished task on stderr; a callable is called as
        ``progress(done, total, record)``.
    timeout
        Seconds to connect to a scheduler address (and to wait for ``workers``).

    Returns
    -------
    GridResult
        Records in task order; a failed task's record has ``status="error"`` and the message.

    Raises
    ------
    ValueError, TypeError
        A mistake in the grid itself (unknown learner, a parameter no learner takes, bad
        ``seeds``, ``C``, metric names), before any task runs.
    ConnectionError
        The scheduler address cannot be reached.
    ImportError
        A cluster was asked for and Dask is not installed.

    Examples
    --------
    >>> from okoco.kernels import RBF
    >>> res = grid({"kons": {"alpha": [0.5, 1.0]}, "fgd": {"kernel": [RBF(0.5), RBF(2.0)]}},
    ...            "sinc", data_params={"n": 60}, seeds=[0, 1])
    >>> res
    GridResult(8 tasks, 8 ok, 0 failed, ... s, serial)
    >>> best = res.best("MAE")
    >>> sorted(best) == sorted(["dataset", "data_params", "learner", "params", "runs", "failed",
    ...                         "MAE", "cumulative_loss", "dictionary_size", "us_per_sample"])
    True
    """
    settings = _settings(kernel, loss, C, metrics, max_samples, checkpoints, scale,
                         scale_target, shuffle, target, interval, pos_label)
    tasks = make_tasks(learners, datasets, params=params, seeds=seeds, data_params=data_params)
    check_scheduler(scheduler, workers)
    report = _reporter(progress, len(tasks))
    start = time.perf_counter()
    outputs: dict[int, tuple[dict, Any]] = {}
    with open_client(scheduler, workers, n_tasks=len(tasks), timeout=timeout) as client:
        if client is None:
            where, n_workers = "serial", 0
            for task in tasks:
                outputs[task.index] = run_task(task, settings)
                report(outputs[task.index][0], task)
        else:
            where = scheduler if isinstance(scheduler, str) else str(client.scheduler.address)
            n_workers = len(client.scheduler_info().get("workers", {}))
            _run_on_dask(client, tasks, settings, report, outputs)
    wall = time.perf_counter() - start
    return GridResult(tasks, [outputs[t.index] for t in tasks], wall_s=wall, scheduler=where,
                      n_workers=n_workers)


def _run_on_dask(client: Any, tasks: list[Task], settings: dict[str, Any],
                 report: Callable[[dict[str, Any], Task], None],
                 outputs: dict[int, tuple[dict, Any]]) -> None:
    distributed = import_distributed()
    shipped: dict[int, Any] = {}  # Dataset objects go to the cluster once, not once per task
    futures = {}
    for task in tasks:
        data = None
        if not isinstance(task.dataset, str):
            key = id(task.dataset)
            if key not in shipped:
                shipped[key] = client.scatter(task.dataset, hash=False)
            data = shipped[key]
            task = replace(task, dataset=task.dataset_name)
        future = client.submit(run_task, task, settings, data, pure=False,
                               key=f"okoco-grid-{os.getpid()}-{time.time_ns()}-{task.index}")
        futures[future] = task
    try:
        for future in distributed.as_completed(futures):
            task = futures[future]
            try:
                out = future.result()
            except Exception as error:  # the worker died, or the task could not run at all
                out = (_failed(_record(task), error), None)
                out[0]["worker"] = "unknown"
            outputs[task.index] = out
            report(out[0], task)
    finally:  # on an interruption, stop what has not run; finished futures just go away
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
