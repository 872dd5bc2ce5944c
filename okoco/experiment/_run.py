"""A run: its typed description (:class:`RunSpec`), its checkpoint file (:class:`Checkpoint`)
and :func:`run`, the one way a run happens."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from okoco._validation import Interval, Protocol, check_params
from okoco.evaluate import replay
from okoco.experiment._build import (
    binary_labels,
    build_model,
    describe,
    load_dataset,
    make_kernel,
    make_metrics,
    note_leader,
)
from okoco.experiment._names import UserError, learner_registry, resolve

__all__ = ["RunSpec", "Checkpoint", "run", "run_one", "check_pos_label"]


_NAME = Protocol("a name (str)", "lower")


@dataclass(frozen=True)
class RunSpec:
    """One run, described by plain values: what the CLI, :func:`run` and the Dask grids pass.

    A frozen dataclass: the CLI fills it from its options, :mod:`okoco.distributed` builds one
    per task, and :func:`run` turns it into a model, a dataset and a
    :class:`~okoco.evaluate.ReplayResult`. Its fields are checked when it is built (a wrong type
    is a ``TypeError``, a wrong value a ``ValueError``, worded as for the learners).

    Attributes
    ----------
    dataset
        A built-in dataset name or a file path (see :func:`okoco.datasets.load`).
    learner
        A name of :func:`learner_registry` (default ``"auto"``).
    params
        The learner's other parameters (``{"alpha": 0.5}``).
    kernel
        A kernel name (``"rbf"``, ``"rbf+linear"``, ..., see :func:`make_kernel`, with
        ``gamma``, ``degree``, ``coef0`` and ``normalize``) or a kernel object.
    loss, C
        The loss name (``None``: squared, logistic for classification) and the clipping level.
    metrics
        Metric names (empty: MAE for regression, accuracy otherwise).
    max_samples, checkpoints
        Stop after this many samples; record the curves at about this many points (or these).
    scale, scale_target
        Standardise the features, and regression targets, online.
    seed, shuffle, target, data_params
        The learner's (and a synthetic dataset's) seed, a shuffled order, a CSV target column,
        the dataset's parameters.
    pos_label
        A binary task's positive class (``None``: inferred by
        :func:`~okoco.experiment.positive_label`); the run relabels it ``True`` and the other
        ``False`` (:func:`~okoco.experiment.binary_labels`), so F1, LogLoss and ROCAUC score it.
    interval
        ``None``, or a coverage in ``(0, 1)``: the whole model (scalers included, so intervals
        are on the targets' own scale) is wrapped in
        :class:`okoco.intervals.IntervalRegressor` with that coverage, and the replay records
        the online coverage, mean width and mean interval score (regression tasks only).

    Examples
    --------
    >>> spec = RunSpec("sinc", "fgd", params={"eta": 0.5}, data_params={"n": 40})
    >>> run(spec).n_samples
    40
    >>> RunSpec("sinc", C=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: RunSpec: C must be a real number > 0, got -1.0
    """

    dataset: Any
    learner: str = "auto"
    params: Mapping[str, Any] = field(default_factory=dict)
    kernel: Any = "rbf"
    gamma: float | None = None
    degree: int | None = None
    coef0: float | None = None
    normalize: bool = False
    loss: str | None = None
    C: float = 3.0
    metrics: tuple[str, ...] = ()
    max_samples: int | None = None
    checkpoints: int | tuple[int, ...] = 50
    scale: bool = True
    scale_target: bool = True
    seed: int | None = 0
    shuffle: bool = False
    target: str | None = None
    data_params: Mapping[str, Any] = field(default_factory=dict)
    interval: float | None = None
    pos_label: Any = None

    _parameter_constraints = {
        "learner": [_NAME],
        "params": [Protocol("a mapping of parameter names to values", "items")],
        "gamma": [None, Interval(Real, 0, None, closed="neither")],
        "degree": [None, Interval(Integral, 1, None)],
        "coef0": [None, Interval(Real, None, None)],
        "normalize": ["boolean"],
        "loss": [None, _NAME],
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_samples": [None, Interval(Integral, 1, None)],
        "scale": ["boolean"],
        "scale_target": ["boolean"],
        "seed": [None, Interval(Integral, 0, None)],
        "shuffle": ["boolean"],
        "target": [None, _NAME],
        "data_params": [Protocol("a mapping of parameter names to values", "items")],
        "interval": [None, Interval(Real, 0, 1, closed="neither")],
    }

    def __post_init__(self):
        check_params(self, convert=False)
        metrics = (self.metrics,) if isinstance(self.metrics, str) else tuple(self.metrics)
        object.__setattr__(self, "metrics", metrics)
        for name in metrics:
            if not isinstance(name, str):
                raise TypeError(f"RunSpec: metrics must be names (str), got {name!r}")
        if isinstance(self.checkpoints, bool) or not isinstance(
                self.checkpoints, (numbers.Integral, Sequence)):
            raise TypeError(f"RunSpec: checkpoints must be an integer >= 1 or a list of sample "
                            f"counts, got {self.checkpoints!r}")
        if isinstance(self.checkpoints, numbers.Integral) and self.checkpoints < 1:
            raise ValueError(f"RunSpec: checkpoints must be >= 1, got {self.checkpoints}")


@dataclass(frozen=True)
class Checkpoint:
    """Where a run keeps its checkpoint file, how often it writes it, whether it resumes.

    ``on_resume`` is called with the samples done once a checkpoint is found to fit the run and
    restored (the CLI says "resuming" then).
    """

    path: Any
    every: int | None = None
    resume: bool = False
    on_resume: Any = None


def run(spec: RunSpec, checkpoint: Checkpoint | None = None, *, data: Any = None,
        progress: bool = False):
    """The one way a run happens: build ``spec``'s model and replay its dataset through it.

    ``data`` is the dataset already loaded (the CLI loads it first, to report on it); by default
    :func:`load_dataset` loads ``spec.dataset``. Returns the
    :class:`~okoco.evaluate.ReplayResult`, its ``meta`` naming the dataset, the learner, the
    model and the seed; ``KeyboardInterrupt`` carries the result so far (``.result``).

    Examples
    --------
    >>> run(RunSpec("sinc", "kons", data_params={"n": 30})).meta["model"]
    'KONS()'
    """
    if not isinstance(spec, RunSpec):
        raise TypeError(f"run takes a RunSpec, got {spec!r}")
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise TypeError(f"checkpoint must be a Checkpoint or None, got {checkpoint!r}")
    learner = resolve("learner", spec.learner, learner_registry())
    ds = data if data is not None else load_dataset(
        spec.dataset, target=spec.target, data_params=dict(spec.data_params), seed=spec.seed,
        shuffle=spec.shuffle)
    check_pos_label(ds, spec.pos_label)
    labels = {}
    if ds.task == "binary":
        ds, pos, rule = binary_labels(ds, spec.pos_label)
        labels = {"pos_label": pos, "pos_rule": rule}
    kernel = spec.kernel
    if isinstance(kernel, str):
        kernel = make_kernel(kernel.lower(), spec.gamma, spec.degree, spec.coef0, spec.normalize)
    info = getattr(ds, "info", None) or {}
    text = info.get("text_columns") or {}
    model, core = build_model(learner, ds.task, loss=spec.loss, kernel=kernel, C=spec.C,
                              params=dict(spec.params), seed=spec.seed, scale=spec.scale,
                              scale_target=spec.scale_target, text_columns=text)
    # a learner that standardizes its own targets (Auto) is told --no-scale-target too
    self_scaling = bool(getattr(core, "scale_target", False))
    meta = {"dataset": ds.name, "task": ds.task, "d": ds.d, "learner": learner,
            "model": describe(core), "seed": spec.seed, "scale_features": spec.scale,
            "scale_target": ds.task == "regression" and (spec.scale_target or self_scaling),
            "data_params": dict(spec.data_params), "target": spec.target,
            "shuffle": spec.shuffle, **labels,
            **({"text_columns": dict(text)} if text else {})}
    if spec.interval is not None:
        if ds.task != "regression":
            raise UserError(f"prediction intervals need a regression dataset; {ds.name!r} is a "
                            f"{ds.task} task")
        # a run without intervals does without okoco.intervals (river's linear_model, scipy)
        # deferred: imported only for a run with intervals
        from okoco.intervals import IntervalRegressor

        # around the whole model: the intervals are on the targets' own scale
        model = IntervalRegressor(model, coverage=spec.interval)
        meta["interval"] = spec.interval
    files = {} if checkpoint is None else {
        "checkpoint": checkpoint.path, "checkpoint_every": checkpoint.every,
        "resume": checkpoint.resume, "on_resume": checkpoint.on_resume}
    checkpoints = spec.checkpoints if isinstance(spec.checkpoints, numbers.Integral) else list(
        spec.checkpoints)
    result = replay(model, ds, metrics=make_metrics(list(spec.metrics), ds.task),
                    checkpoints=checkpoints, progress=progress, max_samples=spec.max_samples,
                    meta=meta, same_run=_same_run_facts(spec, meta), **files)
    note_leader(result, core)
    return result


def check_pos_label(ds, pos_label) -> None:
    """A :class:`UserError` for a positive label named for a task that is not binary."""
    if pos_label is not None and ds.task != "binary":
        raise UserError(f"--pos-label names the positive class of a binary task; "
                        f"{ds.name!r} is a {ds.task} task")


def _same_run_facts(spec: RunSpec, meta: dict) -> dict:
    """What a checkpoint must share with the run that resumes it, besides what the replay
    itself checks (dataset, metrics, the model's structure): the learner as built (its
    parameters), the dataset's options and the scaling."""
    return {"model": meta["model"], "data options": _plain_options(spec.data_params),
            "target": spec.target, "shuffle": spec.shuffle, "seed": spec.seed,
            "scaling": f"features {spec.scale}, targets {meta['scale_target']}",
            "positive label": meta.get("pos_label")}


def _plain_options(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(options.items())) or "none"


def run_one(dataset, learner: str, *, options: Mapping[str, Any], seed: int | None,
            progress: bool = False, label: str | None = None):
    """The options dict of earlier versions as a :class:`RunSpec`, run on ``dataset`` (loaded).

    ``options`` holds ``kernel`` (with ``gamma``, ``degree``, ``coef0``, ``normalize``),
    ``loss``, ``C``, ``params``, ``metric``, ``max_samples``, ``checkpoints``, ``scale`` and
    ``scale_target``. New code builds a :class:`RunSpec` and calls :func:`run`.

    Examples
    --------
    >>> from okoco import datasets
    >>> options = {"kernel": "rbf", "loss": None, "C": 3.0, "params": {"eta": 0.5},
    ...            "metric": ["mae"], "max_samples": None, "checkpoints": 5, "scale": True,
    ...            "scale_target": True}
    >>> run_one(datasets.load("sinc", n=40), "fgd", options=options, seed=0).n_samples
    40
    """
    spec = RunSpec(dataset.name, learner, params=dict(options["params"]),
                   kernel=options["kernel"], gamma=options.get("gamma"),
                   degree=options.get("degree"), coef0=options.get("coef0"),
                   normalize=options.get("normalize", False), loss=options["loss"],
                   C=options["C"], metrics=tuple(options["metric"]),
                   max_samples=options["max_samples"], checkpoints=options["checkpoints"],
                   scale=options["scale"], scale_target=options["scale_target"], seed=seed)
    return run(spec, data=dataset, progress=progress)
