"""The classic kernels (RBF, Laplacian, polynomial, linear) and the checks the learners run
on their rows (finite, k(x, x))."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from okoco._core import _kernels
from okoco._validation import Interval, check_params
from okoco.kernels._algebra import SCALE, Kernel
from okoco.kernels._distances import _row_operands, _sq_dists, sq_dist_row


def rbf_row(gamma: float, X: np.ndarray, sq: np.ndarray, sq_max: float,
            x: np.ndarray) -> np.ndarray:
    """``exp(-gamma ||X_i - x||^2)`` for every row of ``X`` (:func:`sq_dist_row`, one ``exp``):
    within ``2e-13`` of the direct formula.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> rbf_row(0.5, X, np.array([0.0, 5.0]), 5.0, np.array([1.0, 2.0])).round(6)
    array([0.082085, 1.      ])
    """
    return RBF(gamma).row_from_norms(X, sq, sq_max, x)


def finite_row(kernel, k: np.ndarray) -> bool:
    """Whether every value of a kernel row is finite: true without a look for a ``bounded``
    kernel (RBF, Laplacian: values in ``[0, 1]`` for finite inputs; an infinite distance gives
    0), else one sum (finite iff every value is, short of an overflow of the sum, then reported
    too).

    Examples
    --------
    >>> import numpy as np
    >>> finite_row(RBF(1.0), np.ones(3)), finite_row(Linear(), np.array([1.0, np.inf]))
    (True, False)
    """
    if getattr(kernel, "bounded", False):
        return True
    return math.isfinite(k.sum())


def self_similarity(kernel, x: np.ndarray) -> float:
    """``k(x, x)`` of one 1-D row as a float: 1 for a ``bounded`` kernel (RBF, Laplacian)
    without a call, else ``kernel.diag`` (any object with the kernel protocol).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([3.0, 4.0])
    >>> self_similarity(RBF(0.5), x), self_similarity(Linear(), x)
    (1.0, 25.0)
    """
    if getattr(kernel, "bounded", False):
        return 1.0
    return float(np.asarray(kernel.diag(x[None, :]))[0])


class RBF(Kernel, name="RBF", cli_name="rbf", bounded=True,
          code=_kernels.KernelCode.RBF):
    """Gaussian kernel ``k(x, y) = exp(-gamma * ||x - y||^2)``.

    Parameters
    ----------
    gamma
        Inverse squared bandwidth, > 0.

    Examples
    --------
    >>> from okoco.kernels import RBF
    >>> float(RBF(gamma=1.0)([0.0], [1.0])[0, 0]) == float(__import__("numpy").exp(-1.0))
    True
    """

    _parameter_constraints = {"gamma": SCALE}

    def __init__(self, gamma: float = 1.0):
        self.gamma = gamma
        check_params(self)

    def _gram(self, X, Y):
        K = _sq_dists(X, Y)
        K *= -self.gamma
        return np.exp(K, out=K)

    def row_from_norms(self, X: np.ndarray, sq: np.ndarray, sq_max: float,
                       x: np.ndarray) -> np.ndarray:
        """``k(X_i, x)`` for every row, given the squared norms ``sq`` of the rows and their
        maximum (the learners' stored points keep them): :func:`rbf_row`."""
        D = sq_dist_row(X, sq, sq_max, x)
        D *= -self.gamma
        return np.exp(D, out=D)

    def _diag(self, X):
        return np.ones(X.shape[0])

    def _params(self):
        return {"gamma": self.gamma}


class Laplacian(Kernel, name="Laplacian", cli_name="laplacian", bounded=True,
                code=_kernels.KernelCode.LAPLACIAN):
    """Laplacian kernel ``k(x, y) = exp(-gamma * ||x - y||_1)`` (as scikit-learn's).

    Parameters
    ----------
    gamma
        Inverse bandwidth, > 0.

    Examples
    --------
    >>> from okoco.kernels import Laplacian
    >>> round(float(Laplacian(gamma=1.0)([0.0, 0.0], [1.0, -1.0])[0, 0]), 6)
    0.135335
    """

    _parameter_constraints = {"gamma": SCALE}

    def __init__(self, gamma: float = 1.0):
        self.gamma = gamma
        check_params(self)

    def _gram(self, X, Y):
        from scipy.spatial.distance import cdist  # imported on first use: 0.4 s at start-up

        D = cdist(X, Y, "cityblock")
        D *= -self.gamma
        return np.exp(D, out=D)

    def row_from_norms(self, X: np.ndarray, sq: np.ndarray, sq_max: float,
                       x: np.ndarray) -> np.ndarray:
        """``k(X_i, x)`` for every row (compiled L1 distances; the norms are not needed)."""
        out = np.empty(X.shape[0])
        _kernels.laplacian_row(*_row_operands(X, x), float(self.gamma), out)
        return out

    def _diag(self, X):
        return np.ones(X.shape[0])

    def _params(self):
        return {"gamma": self.gamma}


class Polynomial(Kernel, name="Polynomial", cli_name="polynomial",
                 code=_kernels.KernelCode.POLYNOMIAL):
    """Polynomial kernel ``k(x, y) = (gamma * <x, y> + coef0) ** degree``.

    Parameters
    ----------
    degree
        Positive integer degree.
    gamma
        Scale of the inner product, > 0.
    coef0
        Offset, >= 0 (keeps the kernel positive definite for every degree).
    normalize
        Divide by ``sqrt(k(x, x) k(y, y))``; requires ``coef0 > 0`` so the diagonal is never 0.

    Examples
    --------
    >>> from okoco.kernels import Polynomial
    >>> float(Polynomial(degree=2, gamma=1.0, coef0=1.0)([1.0, 2.0], [3.0, 0.5])[0, 0])
    25.0
    """

    _parameter_constraints = {
        "degree": [Interval(Integral, 1, 1000)],  # beyond, any |<x, y>| != 1 overflows
        "gamma": SCALE,
        "coef0": [Interval(Real, 0, None, closed="left")],
        "normalize": ["boolean"],
    }

    def __init__(
        self, degree: int = 2, gamma: float = 1.0, coef0: float = 1.0, normalize: bool = False
    ):
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.normalize = normalize
        check_params(self)
        self.normalize = bool(normalize)
        if normalize and self.coef0 == 0:
            raise ValueError("Polynomial: normalize=True needs coef0 > 0, else k(0, 0) = 0")

    def _gram(self, X, Y):
        return (self.gamma * (X @ Y.T) + self.coef0) ** self.degree

    def row_from_norms(self, X: np.ndarray, sq: np.ndarray, sq_max: float,
                       x: np.ndarray) -> np.ndarray:
        """``k(X_i, x)`` for every row (compiled; the norms are not needed)."""
        if self.normalize:
            return self(X, x[None, :])[:, 0]
        out = np.empty(X.shape[0])
        _kernels.polynomial_row(*_row_operands(X, x), float(self.gamma), float(self.coef0),
                                float(self.degree), out)
        return out

    def _diag(self, X):
        return (self.gamma * np.einsum("ij,ij->i", X, X) + self.coef0) ** self.degree

    def _params(self):
        return {"degree": self.degree, "gamma": self.gamma, "coef0": self.coef0}


class Linear(Kernel, name="Linear", cli_name="linear", code=_kernels.KernelCode.LINEAR):
    """Linear kernel ``k(x, y) = <x, y>``; with it KONS is the primal Online Newton Step.

    Parameters
    ----------
    normalize
        Use the cosine ``<x, y> / (||x|| ||y||)``; a zero row is then an error.

    Examples
    --------
    >>> from okoco.kernels import Linear
    >>> float(Linear()([1.0, 2.0], [3.0, 4.0])[0, 0])
    11.0
    """

    _parameter_constraints = {"normalize": ["boolean"]}

    def __init__(self, normalize: bool = False):
        self.normalize = normalize
        check_params(self)
        self.normalize = bool(normalize)

    def __call__(self, X, Y=None):
        K = super().__call__(X, Y)
        if self.normalize and not np.all(np.isfinite(K)):
            raise ValueError("the normalised linear kernel is undefined for a zero vector")
        return K

    def _gram(self, X, Y):
        return X @ Y.T

    def row_from_norms(self, X: np.ndarray, sq: np.ndarray, sq_max: float,
                       x: np.ndarray) -> np.ndarray:
        """``k(X_i, x)`` for every row (compiled; the norms are not needed)."""
        if self.normalize:
            return self(X, x[None, :])[:, 0]
        out = np.empty(X.shape[0])
        _kernels.dot_row(*_row_operands(X, x), out)
        return out

    def _diag(self, X):
        return np.einsum("ij,ij->i", X, X)
