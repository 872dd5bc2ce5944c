"""Building a run from names: the kernel, the model (scalers, wrappers), the dataset, the
metrics; and describing what was built."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence
from functools import reduce
from operator import add, mul
from pathlib import Path
from typing import Any

import numpy as np

from okoco import datasets, losses, metrics, preprocessing
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
           "note_leader", "describe", "positive_label", "binary_labels", "text_encoding",
           "POSITIVE_WORDS", "CSV_DEFAULTS"]

#: The CSV options (:func:`okoco.datasets.load_csv`) of a run unless its dataset options say
#: otherwise: text columns kept as text (encoded in the model's pipeline, see
#: :func:`build_model`), a missing feature cell left out of its sample (0 after online
#: standardisation: its column's running mean); a row whose target is missing is an error.
CSV_DEFAULTS = {"non_numeric": "encode", "na": "absent"}

#: Labels taken as the positive class by name (any case) when a binary task's labels are
#: text, by the rule of :func:`positive_label`.
POSITIVE_WORDS = ("1", "+1", "true", "t", "yes", "y", "positive", "pos")

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
        accepted = parameters(KERNELS.class_of(part))
        used |= accepted.keys() & given.keys()
        parts.append((part, {k: v for k, v in given.items() if k in accepted}))
    for key in [k for k in given if k not in used]:
        raise UserError(f"kernel {name!r} takes no --{key}")
    built = iter(KERNELS.class_of(part)(**kwargs) for part, kwargs in parts)
    kernel = reduce(add, [reduce(mul, [next(built) for _ in term]) for term in terms])
    if normalize:
        if "normalize" not in parameters(type(kernel)):
            raise UserError(f"kernel {name!r} has no normalize option")
        kwargs = {k: v for k, v in vars(kernel).items() if k != "normalize"}
        kernel = type(kernel)(**kwargs, normalize=True)
    return kernel


def build_model(name: str, task: str, *, loss: str | None, kernel: Any, C: float,
                params: dict[str, Any], seed: int | None, scale: bool, scale_target: bool,
                text_columns: dict[str, int] | None = None):
    """The model the CLI replays: ``TargetStandardScaler(StandardScaler() | learner)``.

    Each wrapper is optional (``scale_target``, ``scale``). The scalers are okoco's
    (:mod:`okoco.preprocessing`: river's statistics, without importing ``river.preprocessing``;
    a row is predicted as it is learned, one analysis a step).
    With ``text_columns`` (a text column's name and its number of distinct values, as
    :func:`okoco.datasets.load_csv` gives them in ``info["text_columns"]``), the first step is
    :func:`okoco.preprocessing.encode_text` instead of the scaler: river's ``OneHotEncoder``
    for a column of at most :data:`okoco.preprocessing.MAX_ONE_HOT` values, river's
    ``FeatureHasher`` for the others (see :func:`text_encoding`).

    An option the learner has no use for is refused, not ignored: a kernel for a learner that
    picks its own (``Auto``), ``scale_target=False`` is given to a learner that standardizes
    its targets itself (``Auto(scale_target=False)``).

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
    elif kernel is not None:
        raise UserError(f"learner {name!r} takes no kernel (it chooses its own); drop "
                        "-k/--gamma/--degree/--coef0/--normalize, or choose a learner with a "
                        "kernel (-l kons, fgd, ...)")
    if (task == "regression" and "scale_target" in accepted and not scale_target
            and "scale_target" not in kwargs):
        kwargs["scale_target"] = False  # Auto standardizes its targets unless told not to
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
        kwargs["loss"] = LOSSES.class_of(loss)()
    if seed is not None and "seed" in accepted and "seed" not in kwargs:
        kwargs["seed"] = seed
    try:
        learner = cls(**kwargs)
    except (TypeError, ValueError) as error:
        if loss_defaulted and _builds(cls, {**kwargs, "loss": losses.Squared()}):
            raise UserError(f"learner {name!r} cannot use the logistic loss {task} tasks get "
                            "by default; add --loss squared (it then regresses the ±1 labels"
                            + (")" if task == "binary" else " of each class, one-vs-rest)")
                            ) from None
        raise UserError(f"learner {name!r}: {error}") from None
    if task == "binary":
        learner = BinaryClassifier(learner)
    elif task == "multiclass":
        learner = MulticlassClassifier(learner)
    if text_columns:
        one_hot, hashed = text_encoding(text_columns)
        model = preprocessing.encode_text(one_hot, hashed, scale=scale) | learner
    else:
        model = preprocessing.StandardScaler() | learner if scale else learner
    # a learner that standardizes its targets itself (Auto) is not wrapped a second time
    if task == "regression" and scale_target and not getattr(learner, "scale_target", False):
        model = preprocessing.TargetStandardScaler(model)
    return model, learner


def text_encoding(text_columns: dict[str, int]) -> tuple[list[str], list[str]]:
    """The text columns to one-hot encode and those to hash: a column of at most
    :data:`okoco.preprocessing.MAX_ONE_HOT` distinct values is one-hot encoded.

    Examples
    --------
    >>> text_encoding({"city": 12, "street": 4000})
    (['city'], ['street'])
    """
    one_hot = [c for c, k in text_columns.items() if k <= preprocessing.MAX_ONE_HOT]
    return one_hot, [c for c in text_columns if c not in one_hot]


def positive_label(labels: Sequence, pos_label: Any = None) -> tuple[Any, str]:
    """The positive class of a binary task's ``labels``, and the rule that chose it.

    ``pos_label`` names it (compared as text: ``"1"`` names the label ``1``). Otherwise:
    ``True`` for boolean labels; the larger of two numbers (1 of 0/1 and of -1/1); for text,
    the one label that is a yes/true word (:data:`POSITIVE_WORDS`, any case), else the less
    frequent label (the event a binary task usually predicts; on a tie, the last in sorted
    order).

    Examples
    --------
    >>> positive_label(["no", "yes", "no"])
    ('yes', 'a yes/true word')
    >>> positive_label(["stay", "churn", "stay"])
    ('churn', 'the less frequent label')
    >>> positive_label([0, 1, 1])
    (1, 'the larger label')
    >>> positive_label(["no", "yes"], pos_label="no")
    ('no', 'named with --pos-label')
    """
    values, counts = np.unique(np.asarray(labels), return_counts=True)
    found = values.tolist()
    if len(found) > 2:
        raise UserError(f"a binary task has two labels, but these are {len(found)}: "
                        f"{', '.join(map(repr, found[:10]))}; drop task=binary to run it as "
                        "multiclass")
    if pos_label is not None:
        named = [v for v in found if v == pos_label or str(v) == str(pos_label).strip()]
        if not named:
            raise UserError(f"--pos-label {pos_label!r} is not a label of this dataset; its "
                            f"labels are {', '.join(map(repr, found))}")
        return named[0], "named with --pos-label"
    if values.dtype.kind == "b":
        return True, "True"
    if values.dtype.kind in "iuf":
        return found[-1], "the larger label"
    words = [v for v in found if str(v).strip().lower() in POSITIVE_WORDS]
    if len(words) == 1:
        return words[0], "a yes/true word"
    rarest = min(range(len(found)), key=lambda i: (counts[i], -i))
    return found[rarest], "the less frequent label"


def binary_labels(ds, pos_label: Any = None):
    """A binary dataset with labels ``True`` (the positive class of :func:`positive_label`)
    and ``False``, river's convention, which its F1, LogLoss and ROCAUC count on; and the
    positive label with its rule. A dataset whose labels are booleans already is returned as
    it is (``pos_label`` may then name ``True`` or ``False``).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.datasets import Dataset
    >>> ds = Dataset("churn", "binary", X=np.eye(3), y=np.array(["no", "yes", "no"]))
    >>> relabelled, pos, rule = binary_labels(ds)
    >>> [y for _, y in relabelled], pos, rule
    ([False, True, False], 'yes', 'a yes/true word')
    """
    X, y, names = ds.to_arrays(sparse=getattr(ds, "is_sparse", False))
    pos, rule = positive_label(y, pos_label)
    if y.dtype.kind == "b" and pos is True:
        return ds, pos, rule
    info = {**getattr(ds, "info", {}), "positive_label": pos}
    return datasets.Dataset(ds.name, ds.task, X=X, y=y == pos, feature_names=names,
                            description=ds.description, info=info), pos, rule


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

    A CSV file is read with :data:`CSV_DEFAULTS` unless ``data_params`` says otherwise: text
    columns kept for the model's encoder, a missing cell left out of its sample.

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
    if is_file and Path(dataset).is_file() and datasets.file_loader(dataset) is datasets.load_csv:
        for option, value in CSV_DEFAULTS.items():
            kwargs.setdefault(option, value)
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
                            description=ds.description, info=getattr(ds, "info", None))


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
