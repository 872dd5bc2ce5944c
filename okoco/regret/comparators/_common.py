"""What every comparator shares: parameter constraints, input checks and the fitted-state check."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from okoco._input import check_array
from okoco._validation import Interval, Options, Protocol

#: The comparators' parameter constraints (checked by okoco._validation.check_params).
_POSITIVE = [Interval(Real, 0, None, closed="neither")]

_BOUND = [*_POSITIVE, Options({math.inf}, "math.inf")]  # C = inf: no constraint

_COUNT = [Interval(Integral, 1, None, closed="left")]

_KERNEL = [Protocol("a kernel (callable, with a diag method)", "diag", callable_object=True)]

_LOSS = [Protocol("an okoco loss (with value and derivative methods)", "value", "derivative")]


def _check_Xy(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = check_array(X, "X")
    if X.ndim == 1:
        X = X[:, None]
    y = check_array(y, "y").ravel()
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X has shape {X.shape} but y has {y.shape[0]} values")
    if X.shape[0] == 0:
        raise ValueError("cannot fit a comparator on zero samples")
    return X, y


def _as_rows(X) -> np.ndarray:
    X = check_array(X, "X")
    return X[:, None] if X.ndim == 1 else X


def _second_derivative(loss, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """:math:`\\partial^2 \\ell/\\partial z^2`: the loss's own ``second_derivative`` (every
    okoco loss has one, a generalised one for the squared hinge), else central differences."""
    if hasattr(loss, "second_derivative"):
        return np.asarray(loss.second_derivative(y, z), dtype=float)
    # A user loss without a second derivative: central differences of its derivative.
    h = 1e-5 * np.maximum(1.0, np.abs(z))
    return np.maximum((loss.derivative(y, z + h) - loss.derivative(y, z - h)) / (2 * h), 0.0)


def _check_targets(loss, y: np.ndarray) -> None:
    check = getattr(loss, "check_target", None)
    if check is not None:
        for v in np.unique(y):
            check(float(v) if v not in (-1.0, 1.0) else int(v))


class _Comparator:
    """Shared ``repr`` and the fitted-state check."""

    _params: tuple[str, ...] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{p}={getattr(self, p)!r}" for p in self._params)
        return f"{type(self).__name__}({args})"

    def _check_fitted(self) -> None:
        if not hasattr(self, "fitted_values_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit(X, y) first")
