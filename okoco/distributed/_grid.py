"""Experiment grids: learner x parameters x dataset x seed, serially or on a Dask cluster.

Each task is one test-then-train replay, a :class:`okoco.experiment.RunSpec` given to
:func:`okoco.experiment.run`, the function behind ``okoco replay`` and ``okoco compare``, so a
grid task, a CLI run and a serial loop with the same seed give the same model on the same data
and the same metrics. Tasks are independent: there is no communication between them, only the
task description going out and a record (plus the checkpointed
:class:`~okoco.evaluate.ReplayResult`, a few kB) coming back.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from okoco import metrics as okoco_metrics
from okoco._io import atomic_write, to_json_ready
from okoco.distributed._cluster import (
    check_scheduler,
    import_distributed,
    one_blas_thread,
    open_client,
    worker_name,
)
from okoco.experiment import (
    METRICS,
    RunSpec,
    learner_registry,
    load_dataset,
    make_kernel,
    parameters,
    run,
    shuffled,
)

__all__ = ["Task", "GridResult", "grid", "run_task"]

#: Final values copied from a run into its record (besides the metrics).
RECORD_VALUES = ("cumulative_loss", "regret", "dictionary_size", "elapsed_s", "memory_bytes")


@dataclass
class Task:
    """One cell of a grid: a learner with parameters, on a dataset, with a seed.

    Attributes
    ----------
    index
        Position in the grid (records come back in this order).
    learner
        A learner name of :func:`okoco.experiment.learner_registry` (``"kons"``, ...).
    params
        Learner parameters, plus optionally ``kernel`` (a kernel object), ``loss`` (a loss name)
        and ``C``, which override the grid's.
    dataset
        A dataset name or file path (loaded where the task runs), or a
        :class:`~okoco.datasets.Dataset` (shipped to the workers once).
    data_params
        Keyword arguments of the dataset loader (``n``, ``noise``, ...); the seed of a synthetic
        generator is the task's unless set here.
    seed
        Seed of the learner, of synthetic data and of the shuffled order.

    Examples
    --------
    >>> from okoco.distributed import Task
    >>> Task(0, "kons", {"alpha": 0.5}, "sinc", {"n": 50}, seed=1).label()
    'kons alpha=0.5 on sinc(n=50) seed=1'
    """

    index: int
    learner: str
    params: dict[str, Any]
    dataset: Any
    data_params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = 0

    @property
    def dataset_name(self) -> str:
        return self.dataset if isinstance(self.dataset, str) else str(self.dataset.name)

    def label(self) -> str:
        """A short description, e.g. ``kons alpha=0.5 on sinc(n=50) seed=1``."""
        params = " ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        data = ", ".join(f"{k}={_short(v)}" for k, v in self.data_params.items())
        return (f"{self.learner}{' ' + params if params else ''} on {self.dataset_name}"
                f"{f'({data})' if data else ''} seed={self.seed}")


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- one task -------------------------------------------------------------------------------------


def _record(task: Task) -> dict[str, Any]:
    return {"index": task.index, "learner": task.learner, "params": to_json_ready(task.params),
            "dataset": task.dataset_name, "data_params": to_json_ready(task.data_params),
            "seed": task.seed, "status": None, "error": None, "error_type": None,
            "model": None, "n_samples": None, "metrics": {},
            **{k: None for k in RECORD_VALUES}, "us_per_sample": None,
            "wall_s": None, "worker": None}


def _message(error: BaseException) -> str:
    text = str(error).strip().strip("'\"")
    return text.splitlines()[0] if text else type(error).__name__


def _failed(record: dict[str, Any], error: BaseException) -> dict[str, Any]:
    record.update(status="error", error=_message(error), error_type=type(error).__name__)
    return record


def run_task(task: Task, settings: Mapping[str, Any], data: Any = None):
    """Run one task; returns ``(record, ReplayResult or None)``. Never raises for a bad task.

    ``settings`` are the grid-wide options (see :func:`grid`); ``data`` is the task's dataset
    when the grid was given a :class:`~okoco.datasets.Dataset` rather than a name. An exception
    in loading, building or replaying becomes an error record (``status="error"``, ``error``
    the message, ``error_type`` its class) carrying the task's parameters.

    Examples
    --------
    >>> from okoco import kernels
    >>> from okoco.distributed import Task
    >>> from okoco.distributed._grid import run_task
    >>> settings = {"kernel": kernels.RBF(), "loss": None, "C": 3.0, "metric": ["mae"],
    ...             "max_samples": None, "checkpoints": 5, "scale": True, "scale_target": True,
    ...             "shuffle": False, "target": None}
    >>> record, result = run_task(Task(0, "fgd", {"eta": 0.5}, "sinc", {"n": 40}), settings)
    >>> record["status"], result.n_samples
    ('ok', 40)
    >>> record, result = run_task(Task(1, "fgd", {"nope": 1}, "sinc", {"n": 40}), settings)
    >>> record["status"], record["error"], result
    ('error', "learner 'fgd' has no parameter 'nope'; it takes C, eta, lam, budget", None)
    """
    record = _record(task)
    start = time.perf_counter()
    result = None
    try:
        with one_blas_thread():
            if data is None and isinstance(task.dataset, str):
                ds = load_dataset(task.dataset, target=settings["target"],
                                  data_params=task.data_params, seed=task.seed,
                                  shuffle=settings["shuffle"])
            else:
                ds = data if data is not None else task.dataset
                ds = shuffled(ds, task.seed) if settings["shuffle"] else ds
            params = dict(task.params)
            spec = RunSpec(ds.name, task.learner, params=params,
                           kernel=params.pop("kernel", settings["kernel"]),
                           loss=params.pop("loss", settings["loss"]),
                           C=params.pop("C", settings["C"]), metrics=tuple(settings["metric"]),
                           max_samples=settings["max_samples"],
                           checkpoints=settings["checkpoints"], scale=settings["scale"],
                           scale_target=settings["scale_target"], seed=task.seed)
            result = run(spec, data=ds)
    except Exception as error:  # a bad task must not stop the grid: report it
        _failed(record, error)
    else:
        final = result.final
        n = result.n_samples
        record.update(status="ok", model=result.meta.get("model"), n_samples=n,
                      metrics=to_json_ready({m: final[m] for m in result.metrics}),
                      **to_json_ready({k: final.get(k) for k in RECORD_VALUES}))
        record["us_per_sample"] = 1e6 * final["elapsed_s"] / n if n else None
    record["wall_s"] = time.perf_counter() - start
    record["worker"] = worker_name()
    return record, result


# -- building the grid ----------------------------------------------------------------------------


def _values(v: Any) -> list:
    if isinstance(v, (list, tuple, range, np.ndarray)):
        return list(v)
    return [v]


def _combos(params: Any, what: str) -> list[dict[str, Any]]:
    """``{key: [values]}`` -> the Cartesian product; a list of dicts is taken as it is."""
    if params is None:
        return [{}]
    if isinstance(params, Mapping):
        keys = [str(k) for k in params]
        values = [_values(v) for v in params.values()]
        for key, vals in zip(keys, values):
            if not vals:
                raise ValueError(f"{what}: parameter {key!r} has no values")
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    if isinstance(params, Iterable) and not isinstance(params, (str, bytes)):
        combos = [dict(p) if isinstance(p, Mapping) else None for p in params]
        if any(c is None for c in combos):
            raise TypeError(f"{what} must be a dict of value lists or a list of dicts")
        return combos or [{}]
    raise TypeError(f"{what} must be a dict of value lists or a list of dicts, got {params!r}")


def _accepted(name: str, registry: Mapping[str, type]) -> set[str]:
    accepted = set(parameters(registry[name])) | {"C"}
    return accepted if "kernel" in accepted else accepted - {"kernel"}


def _learner_grids(learners: Any, params: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    registry = learner_registry()

    def known(name: Any) -> str:
        if not isinstance(name, str) or name not in registry:
            raise ValueError(f"unknown learner {name!r}; choose from {', '.join(registry)}")
        return name

    if isinstance(learners, Mapping):
        if params is not None:
            raise ValueError("give parameters either per learner (learners={name: grid}) or "
                             "shared (params=...), not both")
        out = []
        for name, grid_ in learners.items():
            combos = _combos(grid_, f"parameters of {name!r}")
            accepted = _accepted(known(name), registry)
            for combo in combos:
                for key in combo:
                    if key not in accepted:
                        raise ValueError(f"learner {name!r} has no parameter {key!r}")
            out.append((name, combos))
        return out
    names = [learners] if isinstance(learners, str) else list(learners)
    if not names:
        raise ValueError("learners is empty")
    combos = _combos(params, "params")
    keys = {k for c in combos for k in c}
    accepted = {name: _accepted(known(name), registry) for name in names}
    for key in keys:
        if not any(key in acc for acc in accepted.values()):
            raise ValueError(f"no learner takes parameter {key!r}")
    out = []
    for name in names:
        mine: list[dict[str, Any]] = []
        for combo in combos:  # a shared grid: each learner gets the parameters it has
            kept = {k: v for k, v in combo.items() if k in accepted[name]}
            if kept not in mine:
                mine.append(kept)
        out.append((name, mine))
    return out


def _datasets(datasets: Any, data_params: Mapping[str, Any] | None) -> list[tuple[Any, dict]]:
    def is_pair(item: Any) -> bool:
        return (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], Mapping))

    if is_pair(datasets) or not isinstance(datasets, (list, tuple)):
        items = [datasets]
    else:
        items = list(datasets)
    out = []
    for item in items:
        if is_pair(item):
            out.append((item[0], {**(data_params or {}), **dict(item[1])}))
        elif isinstance(item, str):
            out.append((item, dict(data_params or {})))
        elif hasattr(item, "to_arrays") and hasattr(item, "task"):
            out.append((item, {}))
        else:
            raise TypeError("datasets must be names, (name, params) pairs or Dataset objects, "
                            f"got {item!r}")
    if not out:
        raise ValueError("datasets is empty")
    return out


def _seeds(seeds: Any) -> list[int | None]:
    if isinstance(seeds, bool):
        raise TypeError(f"seeds must be a count or a list of seeds, got {seeds!r}")
    if isinstance(seeds, (int, np.integer)):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {seeds}")
        return list(range(int(seeds)))
    out = list(seeds)
    if not out:
        raise ValueError("seeds is empty")
    return [None if s is None else int(s) for s in out]


def make_tasks(learners: Any, datasets: Any, *, params: Any = None, seeds: Any = 1,
               data_params: Mapping[str, Any] | None = None) -> list[Task]:
    """The grid's tasks in order: dataset, learner, parameter combination, seed (innermost)."""
    grids = _learner_grids(learners, params)
    tasks: list[Task] = []
    for ds, dparams in _datasets(datasets, data_params):
        for name, combos in grids:
            for combo in combos:
                for seed in _seeds(seeds):
                    tasks.append(Task(len(tasks), name, dict(combo), ds, dict(dparams), seed))
    return tasks


# -- the result -----------------------------------------------------------------------------------


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
              target: str | None) -> dict[str, Any]:
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
    return {"kernel": kernel, "loss": None if loss is None else loss.lower(), "C": float(C),
            "metric": names, "max_samples": max_samples, "checkpoints": checkpoints,
            "scale": bool(scale), "scale_target": bool(scale_target), "shuffle": bool(shuffle),
            "target": target}


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
                         scale_target, shuffle, target)
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
