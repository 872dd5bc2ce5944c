"""Names: the registries of learners, kernels, losses and metrics, and the one rule that
resolves a name a user typed."""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from okoco import learners

__all__ = ["UserError", "name_key", "resolve", "learner_registry", "KERNELS", "LOSSES",
           "METRICS", "REGRESSION_METRICS", "parameters"]


class UserError(Exception):
    """A mistake in the command line or the data: reported in one line, exit code 2.

    Examples
    --------
    >>> from okoco.experiment import UserError, make_metrics
    >>> try:
    ...     make_metrics(["nope"], "regression")
    ... except UserError:
    ...     print("user error")
    user error
    """


def name_key(name: str) -> str:
    """The one rule for names (learners, kernels, losses, metrics, datasets): case, spaces and
    ``_`` / ``-`` do not matter.

    Examples
    --------
    >>> name_key(" Sketched_KONS ")
    'sketched-kons'
    """
    return name.strip().lower().replace("_", "-")


def resolve(kind: str, name: Any, choices) -> str:
    """The key of ``choices`` that ``name`` names under :func:`name_key`, else a
    :class:`UserError` with the closest names ("did you mean") and the full list.

    Examples
    --------
    >>> resolve("learner", "KONS", ["fgd", "kons"])
    'kons'
    >>> resolve("learner", "kosn", ["fgd", "kons"])
    Traceback (most recent call last):
    ...
    okoco.experiment.UserError: unknown learner 'kosn'; did you mean 'kons'? choose from fgd, kons
    """
    choices = list(choices)
    if isinstance(name, str):
        key = name_key(name)
        if key in choices:
            return key
        close = difflib.get_close_matches(key, choices, n=2, cutoff=0.6)
    else:
        close = []
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ";"
    raise UserError(f"unknown {kind} {name!r}{hint} choose from {', '.join(choices)}")


def learner_registry() -> dict[str, type]:
    """CLI name -> learner class; ``krls`` appears once ``okoco.learners`` provides ``KRLS``.

    Examples
    --------
    >>> sorted(learner_registry())[:3]
    ['auto', 'con-kons', 'fgd']
    """
    names = {"auto": "Auto", "fgd": "FunctionalGD", "kons": "KONS",
             "sketched-kons": "SketchedKONS", "krls": "KRLS", "pros-n-kons": "PROSNKONS",
             "con-kons": "CONKONS"}
    return {k: getattr(learners, v) for k, v in names.items() if hasattr(learners, v)}


KERNELS = {"rbf": "RBF", "laplacian": "Laplacian", "polynomial": "Polynomial", "linear": "Linear"}


LOSSES = {"squared": "Squared", "logistic": "Logistic", "squared-hinge": "SquaredHinge"}


METRICS = {"mae": "MAE", "mse": "MSE", "rmse": "RMSE", "r2": "R2", "accuracy": "Accuracy",
           "f1": "F1", "logloss": "LogLoss", "rocauc": "ROCAUC"}


REGRESSION_METRICS = {"mae", "mse", "rmse", "r2"}


def parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The named constructor parameters of ``cls`` (no ``self``, no ``*args``/``**kwargs``).

    Examples
    --------
    >>> from okoco.experiment import parameters
    >>> from okoco.learners import KONS
    >>> list(parameters(KONS))
    ['kernel', 'loss', 'C', 'alpha', 'eta', 'max_size']
    """
    return {k: p for k, p in inspect.signature(cls.__init__).parameters.items()
            if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
