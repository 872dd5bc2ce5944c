"""Names: the registries of learners, kernels, losses and metrics, and the one rule that
resolves a name a user typed."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from okoco import kernels, learners, losses

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


class _CommandLineNames(Mapping):
    """Command-line name -> class name of the kernels (or losses) whose class declares a
    ``cli_name`` (``okoco.kernels.Kernel``, ``okoco.losses.Loss``), read from their registry at
    each use: a class registered after this import is named too.

    Examples
    --------
    >>> KERNELS["rbf"], KERNELS.class_of("rbf"), "squared-hinge" in LOSSES
    ('RBF', <class 'okoco.kernels.RBF'>, True)
    """

    def __init__(self, registry):
        self._registry = registry

    def _classes(self) -> dict[str, type]:
        return {name_key(name): cls for name, cls in self._registry.by_cli_name().items()}

    def class_of(self, key: str) -> type:
        """The class named ``key`` (a name of this mapping)."""
        return self._classes()[key]

    def __getitem__(self, key: str) -> str:
        return self.class_of(key).__name__

    def __iter__(self):
        return iter(self._classes())

    def __len__(self) -> int:
        return len(self._classes())

    def __repr__(self) -> str:
        return repr(dict(self))


KERNELS = _CommandLineNames(kernels._REGISTRY)


LOSSES = _CommandLineNames(losses._REGISTRY)


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
