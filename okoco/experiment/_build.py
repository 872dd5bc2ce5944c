"""Building a run from names: the kernel, the model (scalers, wrappers), the dataset, the
metrics; and describing what was built."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence
from functools import reduce
from operator import add, mul
from typing import Any

import numpy as np

from okoco import datasets, kernels, losses, metrics, preprocessing
from okoco.experiment._names import (
    KERNELS,
    LOSSES,
    METRICS,
    REGRESSION_METRICS,
    UserError,
    learner_registry,
    name_key,
    parameters,
    resolve,
)
from okoco.learners import BinaryClassifier, MulticlassClassifier

__all__ = ["make_kernel", "build_model", "load_dataset", "shuffled", "make_metrics",
           "note_leader", "describe"]


def make_kernel(name: str, gamma: float | None = None, degree: int | None = None,
                coef0: float | None = None, normalize: bool = False):
    """A kernel from its CLI name (``rbf``, ``laplacian``, ``polynomial``, ``linear``) and options.

    ``rbf`` without ``gamma`` gives ``None``, the learners' default: an RBF kernel with
    ``gamma = 1/d`` fixed at the first learn, as in Python. ``+`` sums kernels and ``*``
    multiplies them (``*`` binds first): ``rbf+linear`` is ``RBF() + Linear()``. In a
    combination each option goes to every part that takes it, and ``normalize`` applies to the
    whole.

    Examples
    --------
    >>> make_kernel("rbf", gamma=0.5)
    RBF(gamma=0.5)
    >>> make_kernel("rbf") is None
    True
    >>> make_kernel("rbf+linear", gamma=0.5)
    Sum(left=RBF(gamma=0.5), right=Linear())
    """
    given = {"gamma": gamma, "degree": degree, "coef0": coef0}
    given = {k: v for k, v in given.items() if v is not None}
    if name_key(name) == "rbf" and not given and not normalize:
        return None
    terms = [[part.strip() for part in term.split("*")] for term in name.split("+")]
    parts, used = [], set()
    for i, term in enumerate(terms):
        for j, part in enumerate(term):
            if name_key(part) not in KERNELS:
                close = difflib.get_close_matches(name_key(part), list(KERNELS), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise UserError(f"unknown kernel {part!r} in {name!r}; {hint}choose from "
                                f"{', '.join(KERNELS)}, joined by + or *")
            terms[i][j] = name_key(part)
    for part in (p for term in terms for p in term):
        accepted = parameters(getattr(kernels, KERNELS[part]))
        used |= accepted.keys() & given.keys()
        parts.append((part, {k: v for k, v in given.items() if k in accepted}))
    for key in [k for k in given if k not in used]:
        raise UserError(f"kernel {name!r} takes no --{key}")
    built = iter(getattr(kernels, KERNELS[part])(**kwargs) for part, kwargs in parts)
    kernel = reduce(add, [reduce(mul, [next(built) for _ in term]) for term in terms])
    if normalize:
        if "normalize" not in parameters(type(kernel)):
            raise UserError(f"kernel {name!r} has no normalize option")
        kwargs = {k: v for k, v in vars(kernel).items() if k != "normalize"}
        kernel = type(kernel)(**kwargs, normalize=True)
    return kernel


def build_model(name: str, task: str, *, loss: str | None, kernel: Any, C: float,
                params: dict[str, Any], seed: int | None, scale: bool, scale_target: bool):
    """The model the CLI replays: ``TargetStandardScaler(StandardScaler() | learner)``.

    Each wrapper is optional (``scale_target``, ``scale``). The scalers are okoco's
    (:mod:`okoco.preprocessing`: river's numbers, without importing ``river.preprocessing``).

    Binary tasks wrap the learner in :class:`okoco.BinaryClassifier`, multiclass tasks in
    :class:`okoco.MulticlassClassifier` (one-vs-rest); both default to the logistic loss, but a
    learner whose multiclass classes share one preconditioner with its own loss keeps it, as in
    Python: KONS's squared loss (``MulticlassClassifier(KONS())``; on ImageSegments accuracy
    0.919 against 0.897 with the logistic loss, at a fifth of the time), and ``Auto``'s, the
    default learner (``MulticlassClassifier(Auto())``: one mixture of experts for all classes,
    each expert one preconditioner; docs/guide/evaluation.md).
    Returns ``(model, learner)``: the whole pipeline and the bare okoco learner inside it.

    Examples
    --------
    >>> from okoco import kernels
    >>> from okoco.experiment import build_model
    >>> model, learner = build_model("kons", "regression", loss=None, kernel=kernels.RBF(),
    ...                              C=3.0, params={}, seed=0, scale=True, scale_target=True)
    >>> type(model).__name__, type(learner).__name__, learner.C
    ('TargetStandardScaler', 'KONS', 3.0)
    """
    registry = learner_registry()
    name = resolve("learner", name, registry)
    cls = registry[name]
    accepted = parameters(cls)
    for key in params:
        if key in ("kernel", "loss", "C"):
            flag = {"kernel": "--kernel", "loss": "--loss", "C": "--C"}[key]
            raise UserError(f"set {key} with {flag}, not -p")
        if key not in accepted:
            raise UserError(f"learner {name!r} has no parameter {key!r}; it takes "
                            f"{', '.join(k for k in accepted if k not in ('kernel', 'loss'))}")
    kwargs = dict(params)
    if "kernel" in accepted:
        kwargs["kernel"] = kernel
    kwargs["C"] = C
    # a multiclass task keeps the learner's own loss when its classes then share one
    # preconditioner (KONS's and Auto's squared loss: MulticlassClassifier(KONS()), as in Python)
    shared = (task == "multiclass" and loss is None and "loss" in accepted
              and _shares_classes(cls, kwargs))
    loss_defaulted = loss is None and task != "regression" and "loss" in accepted and not shared
    if loss_defaulted:
        loss = "logistic"
    if loss is not None:
        loss = resolve("loss", loss, LOSSES)
        if "loss" not in accepted:
            raise UserError(f"learner {name!r} takes no loss (it is squared-loss only)")
        if task == "regression" and loss != "squared":
            raise UserError(f"loss {loss!r} needs two class labels, but this dataset is a "
                            "regression task; use --loss squared")
        kwargs["loss"] = getattr(losses, LOSSES[loss])()
    if seed is not None and "seed" in accepted and "seed" not in kwargs:
        kwargs["seed"] = seed
    try:
        learner = cls(**kwargs)
    except (TypeError, ValueError) as error:
        if loss_defaulted and _builds(cls, {**kwargs, "loss": losses.Squared()}):
            raise UserError(f"learner {name!r} cannot use the logistic loss binary tasks get by "
                            "default; add --loss squared (it then regresses the ±1 labels)"
                            ) from None
        raise UserError(f"learner {name!r}: {error}") from None
    if task == "binary":
        learner = BinaryClassifier(learner)
    elif task == "multiclass":
        learner = MulticlassClassifier(learner)
    model = preprocessing.StandardScaler() | learner if scale else learner
    # a learner that standardizes its targets itself (Auto) is not wrapped a second time
    if task == "regression" and scale_target and not getattr(learner, "scale_target", False):
        model = preprocessing.TargetStandardScaler(model)
    return model, learner


def _shares_classes(cls: type, kwargs: dict[str, Any]) -> bool:
    """Whether the learner built from ``kwargs`` (its own loss) would have its multiclass
    classes share one preconditioner."""
    return (_builds(cls, kwargs)
            and MulticlassClassifier(cls(**kwargs)).shares_preconditioner)


def _builds(cls: type, kwargs: dict[str, Any]) -> bool:
    try:
        cls(**kwargs)
    except (TypeError, ValueError):
        return False
    return True


def load_dataset(dataset: str, *, target: str | None, data_params: dict[str, Any],
                 seed: int | None, shuffle: bool):
    """Load DATASET (name or path) with the CLI's options; shuffle the order with ``seed``.

    A synthetic generator that takes a ``seed`` gets this one unless ``data_params`` sets it.
    The rows are read here, so that a replay's time per sample does not count reading the file.

    Examples
    --------
    >>> from okoco.experiment import load_dataset
    >>> ds = load_dataset("sinc", target=None, data_params={"n": 30}, seed=0, shuffle=False)
    >>> ds.n, ds.task
    (30, 'regression')
    """
    kwargs = dict(data_params)
    if target is not None:
        kwargs["target"] = int(target) if target.lstrip("-").isdigit() else target
    key = dataset.strip().lower().replace("_", "-")
    if key in datasets.SYNTHETIC and seed is not None and "seed" not in kwargs:
        if "seed" in inspect.signature(datasets.SYNTHETIC[key][0]).parameters:
            kwargs["seed"] = seed
    is_file = key not in {r.name for r in datasets.available()}
    if target is not None and not is_file:
        raise UserError(f"--target applies to CSV files, not to the built-in {dataset!r}")
    ds = datasets.load(dataset, **kwargs)
    return (shuffled(ds, seed) if shuffle else ds).read()


def shuffled(ds, seed: int | None):
    """The dataset with its rows in the order of ``default_rng(seed).permutation(n)``.

    Examples
    --------
    >>> from okoco import datasets
    >>> from okoco.experiment import shuffled
    >>> ds = datasets.load("adversarial", n=4, x=[0.0])
    >>> [y for _, y in shuffled(ds, seed=0)] != [y for _, y in ds]
    True
    """
    X, y, names = ds.to_arrays(sparse=getattr(ds, "is_sparse", False))
    order = np.random.default_rng(seed).permutation(X.shape[0])
    return datasets.Dataset(ds.name, ds.task, X=X[order], y=y[order], feature_names=names,
                            description=ds.description)


def make_metrics(names: Sequence[str], task: str) -> list:
    """Metrics from CLI names; the task's default (MAE or accuracy) if ``names`` is empty.

    They are okoco's (:mod:`okoco.metrics`: river's values, without importing
    ``river.metrics``), except ``rocauc``: river's ``ROCAUC``, whose import (river.metrics,
    with scipy.stats) adds about a second to the start of the run.

    Examples
    --------
    >>> from okoco.experiment import make_metrics
    >>> make_metrics([], "regression"), make_metrics(["rmse", "r2"], "regression")
    ([MAE: 0.], [RMSE: 0., R2: 0.])
    """
    if not names:
        names = ["mae"] if task == "regression" else ["accuracy"]
    out = []
    for name in names:
        key = resolve("metric", name, METRICS)
        if (key in REGRESSION_METRICS) != (task == "regression"):
            raise UserError(f"metric {name!r} does not fit a {task} task")
        out.append(_metric(METRICS[key]))
    return out


def _metric(name: str):
    if hasattr(metrics, name):
        return getattr(metrics, name)()
    # deferred: river.metrics (for ROCAUC only) imports scipy.stats, about a second
    from river import metrics as river_metrics

    return getattr(river_metrics, name)()


def note_leader(result, learner: Any) -> None:
    """Add ``meta["leader"]`` for a learner that follows one of its experts (``Auto``)."""
    inner = getattr(learner, "learner", learner)  # a BinaryClassifier wraps the learner
    # MulticlassClassifier(Auto()): one mixture for all classes, not the template's
    leader = getattr(getattr(learner, "_shared", None), "leader", None)
    leader = leader if leader is not None else getattr(inner, "leader", None)
    if leader is not None:
        result.meta["leader"] = leader


def describe(learner: Any) -> str:
    """A one-line constructor call showing the parameters that differ from the defaults.

    Examples
    --------
    >>> from okoco.learners import FunctionalGD
    >>> describe(FunctionalGD(C=2.0, eta=0.2))
    'FunctionalGD(C=2.0, eta=0.2)'
    """
    inner = getattr(learner, "learner", None)
    if inner is not None and not isinstance(inner, str):
        return f"{type(learner).__name__}({describe(inner)})"
    parts = []
    for key, p in parameters(type(learner)).items():
        value = getattr(learner, key, p.default)
        if p.default is inspect.Parameter.empty or value is not p.default and value != p.default:
            parts.append(f"{key}={value!r}")
    return f"{type(learner).__name__}({', '.join(parts)})"
