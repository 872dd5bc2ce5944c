"""A griffe extension for the API reference: a parameter default written as a module constant
(``max_size: int | None = DEFAULT_MAX_SIZE``) is shown as its value (``= 500``)."""

from __future__ import annotations

import importlib
from typing import Any

import griffe


class DefaultValues(griffe.Extension):
    """Replace a default that names a module-level number, string, bool or None by its repr."""

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        for parameter in func.parameters:
            default = parameter.default
            if not isinstance(default, griffe.ExprName):
                continue
            try:
                module = importlib.import_module(func.module.path)
            except ImportError:
                continue
            value = getattr(module, default.name, ...)
            if value is None or isinstance(value, (bool, int, float, str)):
                parameter.default = repr(value)
