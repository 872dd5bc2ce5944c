"""The tasks of a grid: what one task is (:class:`Task`), how it runs (:func:`run_task`, a
:class:`~okoco.experiment.RunSpec` given to :func:`okoco.experiment.run`), and how the grid's
tasks are built from learners, parameters, datasets and seeds (:func:`make_tasks`)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from okoco._io import to_json_ready
from okoco.distributed._cluster import (
    one_blas_thread,
    worker_name,
)
from okoco.evaluate import INTERVAL_COLUMNS
from okoco.experiment import (
    RunSpec,
    learner_registry,
    load_dataset,
    parameters,
    run,
    shuffled,
)

__all__ = ["Task", "run_task", "make_tasks", "RECORD_VALUES"]


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
    >>> from okoco.distributed._tasks import run_task
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
                           scale_target=settings["scale_target"], seed=task.seed,
                           interval=settings.get("interval"),
                           pos_label=settings.get("pos_label"))
            result = run(spec, data=ds)
    except Exception as error:  # a bad task must not stop the grid: report it
        _failed(record, error)
    else:
        final = result.final
        n = result.n_samples
        record.update(status="ok", model=result.meta.get("model"), n_samples=n,
                      metrics=to_json_ready({m: final[m] for m in result.metrics}),
                      **to_json_ready({k: final.get(k) for k in RECORD_VALUES}),
                      # a run with --interval: its coverage, mean width and interval score
                      **to_json_ready({k: final[k] for k in INTERVAL_COLUMNS if k in final}))
        record["us_per_sample"] = 1e6 * final["elapsed_s"] / n if n else None
    record["wall_s"] = time.perf_counter() - start
    record["worker"] = worker_name()
    return record, result


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
