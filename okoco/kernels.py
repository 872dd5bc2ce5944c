"""Positive-definite kernels, vectorised over rows.

Every kernel is a small immutable object with two methods:

- ``k(X, Y)`` returns the ``(n, m)`` Gram block between the rows of ``X`` and ``Y``;
- ``k.diag(X)`` returns ``k(x_i, x_i)`` for every row, without forming the block.

Kernels combine: ``k1 + k2`` (:class:`Sum`), ``k1 * k2`` (:class:`Product`, elementwise) and
``c * k`` for ``c > 0`` (:class:`Scaled`) are kernels again, positive semi-definite because sums,
Schur products and positive multiples of PSD matrices are (Schur 1911). ``RBF(0.1) + Linear()``
lets an RBF fit the shape while the linear part extrapolates a trend.

A 1-D argument is treated as a single row. ``normalize=True`` turns any kernel into
``k(x, y) / sqrt(k(x, x) k(y, y))`` so that ``k(x, x) = 1``, the assumption under which the
KONS bounds are stated (Calandriello et al. 2017, Sect. 2). RBF and Laplacian kernels are
normalised already.

Examples
--------
>>> import numpy as np
>>> from okoco import kernels
>>> k = kernels.RBF(gamma=0.5)
>>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
>>> np.round(k(X, X), 4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])
>>> k.diag(X)
array([1., 1.])
>>> trend = 2.0 * kernels.RBF(gamma=0.5) + kernels.Linear()
>>> trend
Sum(left=Scaled(scale=2.0, kernel=RBF(gamma=0.5)), right=Linear())
>>> np.round(trend(X, X), 4)
array([[2.    , 1.2131],
       [1.2131, 3.    ]])
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from okoco._core import _kernels
from okoco._validation import Interval, check_params

__all__ = ["Kernel", "RBF", "Laplacian", "Polynomial", "Linear", "Sum", "Product", "Scaled"]

def _as_rows(X) -> np.ndarray:
    if type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64:
        return X  # the learners' hot path
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        return X[None, :]
    if X.ndim != 2:
        raise ValueError(f"expected a 1-D or 2-D array, got shape {X.shape}")
    return X


#: The constraint of every kernel scale ``gamma``.
SCALE = [Interval(Real, 0, None, closed="neither")]


# -- squared distances: the norm expansion, exact where it could lose digits -------------------
#
# ||x - y||^2 = ||x||^2 + ||y||^2 - 2 x.y costs one matrix-vector product (or matrix product)
# with the squared norms of the stored points cached, where direct differences cost a pass over
# an (n, d) temporary. Its rounding error is at most c eps S with c = 2d + 4 and S the entry's
# ||x||^2 + ||y||^2 (each of ||x||^2, ||y||^2 and x.y is a d-term sum: Higham 2002, "Accuracy
# and Stability of Numerical Algorithms", Sect. 3.1, with |x_j y_j| <= (x_j^2 + y_j^2) / 2);
# a kernel row takes each entry's own S, a matrix the largest (one scalar bound).
# Distances D <= tau S, tau = c eps / (e TOL), are recomputed from direct differences (near and
# coincident points, and everything when the features are huge); above it the relative error of
# D is below c eps / tau, so an RBF value exp(-gamma D) is off by at most
# (c eps / tau) gamma D exp(-gamma D) <= c eps / (e tau) = TOL, whatever gamma. No distance is
# negative and coincident points are exactly 0 apart. The choice of entries does not depend on
# gamma: the rows of several RBF kernels can share one distance row (okoco.learners.auto).

_EPS = float(np.finfo(float).eps)
#: Largest error of an RBF value computed through the norm expansion.
_RBF_TOL = 2e-13
# A kernel row over at most this many stored numbers (m * d) is computed from direct
# differences, exact, and then no dearer than the expansion's product.
_DIRECT_SIZE = 1024


_NEAR_FACTOR = _EPS / (math.e * _RBF_TOL)


def _near_limit(d: int, scale: float) -> float:
    """Squared distances at or below this are recomputed exactly (see above)."""
    return (2 * d + 4) * _NEAR_FACTOR * scale


def _fix_near(D: np.ndarray, X: np.ndarray, Y: np.ndarray, limit: float) -> None:
    """Recompute from direct differences the entries of ``D`` (n, m) not above ``limit``."""
    rows, cols = np.nonzero(~(D > limit))  # NaN (an overflowed norm) included
    if rows.size:
        Z = X[rows] - Y[cols]
        D[rows, cols] = np.einsum("ij,ij->i", Z, Z)


def _row_operands(X: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``X`` and ``x`` as the compiled row functions take them: float64, each row of ``X``
    contiguous (a row view of a wider buffer is), ``x`` contiguous and as wide as ``X``."""
    if X.dtype != np.float64 or (X.shape[0] and X.shape[1] > 1 and X.strides[1] != X.itemsize):
        X = np.ascontiguousarray(X, dtype=float)
    x = np.ascontiguousarray(x, dtype=float)
    if x.shape != (X.shape[1],):
        raise ValueError(f"x must have {X.shape[1]} features (X's columns), got shape {x.shape}")
    return X, x


def sq_dist_row(X: np.ndarray, sq: np.ndarray, sq_max: float, x: np.ndarray) -> np.ndarray:
    """``||X_i - x||^2`` for every row of ``X``, given ``sq[i] = ||X_i||^2``: the norm
    expansion (one BLAS product, in blocks that stay on one thread), each entry at or below its
    own bound ``tau (||X_i||^2 + ||x||^2)`` recomputed from direct differences (module source).
    Up to ``_DIRECT_SIZE`` elements of ``X`` every entry comes from direct differences. Compiled
    (``okoco._core``); ``X`` may be a row view of a wider buffer. ``sq_max``, an upper bound of
    ``sq``, is accepted for the callers that have it (each entry uses its own bound).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> sq_dist_row(X, np.array([0.0, 5.0]), 5.0, np.array([1.0, 2.0]))
    array([5., 0.])
    """
    X, x = _row_operands(X, x)
    out = np.empty(X.shape[0])
    tau = (2 * X.shape[1] + 4) * _NEAR_FACTOR
    _kernels.sq_dist_row(X, np.ascontiguousarray(sq, dtype=float), x, tau, _DIRECT_SIZE, out)
    return out


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


def _sq_dists(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``||x_i - y_j||^2``, ``(n, m)``: the RBF's distances (a row of one ``Y`` is exactly
    :func:`sq_dist_row`'s, as a learner's stored points give it)."""
    sx = np.einsum("ij,ij->i", X, X)
    sx_max = float(sx.max(initial=0.0))
    if Y.shape[0] == 1:
        return sq_dist_row(X, sx, sx_max, Y[0])[:, None]
    sy = sx if Y is X else np.einsum("ij,ij->i", Y, Y)
    D = X @ Y.T  # a block: level 3, BLAS threads welcome
    D *= -2.0
    D += sx[:, None]
    D += sy[None, :]
    if D.size:
        _fix_near(D, X, Y, _near_limit(X.shape[1], sx_max + float(sy.max(initial=0.0))))
    return D


def finite_row(kernel, k: np.ndarray) -> bool:
    """Whether every value of a kernel row is finite: true without a look for RBF and Laplacian
    kernels (values in ``[0, 1]`` for finite inputs; an infinite distance gives 0), else one
    sum (finite iff every value is, short of an overflow of the sum, then reported too).

    Examples
    --------
    >>> import numpy as np
    >>> finite_row(RBF(1.0), np.ones(3)), finite_row(Linear(), np.array([1.0, np.inf]))
    (True, False)
    """
    if type(kernel) in (RBF, Laplacian):
        return True
    return math.isfinite(k.sum())


def self_similarity(kernel, x: np.ndarray) -> float:
    """``k(x, x)`` of one 1-D row as a float: 1 for an RBF or Laplacian kernel without a call,
    else ``kernel.diag`` (any object with the kernel protocol).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([3.0, 4.0])
    >>> self_similarity(RBF(0.5), x), self_similarity(Linear(), x)
    (1.0, 25.0)
    """
    if type(kernel) in (RBF, Laplacian):
        return 1.0
    return float(np.asarray(kernel.diag(x[None, :]))[0])


class Kernel:
    """Base class: subclasses implement ``_gram`` and ``_diag``; this adds normalisation.

    A user kernel may subclass this (implementing ``_gram(X, Y)`` and ``_diag(X)``) or be any
    object with the same ``__call__`` and ``diag`` methods.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import Kernel
    >>> class Cosine(Kernel):
    ...     def _gram(self, X, Y):
    ...         return X @ Y.T
    ...     def _diag(self, X):
    ...         return np.einsum("ij,ij->i", X, X)
    >>> k = Cosine()
    >>> k.normalize = True
    >>> np.round(k(np.array([[1.0, 0.0], [1.0, 1.0]])), 4)
    array([[1.    , 0.7071],
           [0.7071, 1.    ]])
    """

    normalize: bool = False

    def __call__(self, X, Y=None) -> np.ndarray:
        X = _as_rows(X)
        Y = X if Y is None else _as_rows(Y)
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
        K = self._gram(X, Y)
        if self.normalize:
            K = K / np.sqrt(np.outer(self._self_similarity(X), self._self_similarity(Y)))
        return K

    def diag(self, X) -> np.ndarray:
        X = _as_rows(X)
        if self.normalize:
            self._self_similarity(X)  # validates
            return np.ones(X.shape[0])
        return self._diag(X)

    def _self_similarity(self, X: np.ndarray) -> np.ndarray:
        """``k(x, x)`` before normalisation; 0 (e.g. the zero vector, linear kernel) is an error."""
        d = self._diag(X)
        bad = np.flatnonzero(~(d > 0))
        if bad.size:
            raise ValueError(
                f"normalize=True is undefined for row {int(bad[0])}: its k(x, x) is "
                f"{float(d[bad[0]])!r} (e.g. the zero vector under a linear kernel)"
            )
        return d

    def _gram(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _diag(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _params(self) -> dict:
        return {}

    def __repr__(self) -> str:
        params = dict(self._params())
        if self.normalize:
            params["normalize"] = True
        inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    # -- kernel algebra: k1 + k2, k1 * k2, c * k --------------------------------------------

    def __add__(self, other):
        return Sum(self, other) if isinstance(other, Kernel) else NotImplemented

    def __mul__(self, other):
        if isinstance(other, Kernel):
            return Product(self, other)
        if isinstance(other, Real) and not isinstance(other, bool):
            return Scaled(other, self)
        return NotImplemented

    def __rmul__(self, other):
        if isinstance(other, Real) and not isinstance(other, bool):
            return Scaled(other, self)
        return NotImplemented


class RBF(Kernel):
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


class Laplacian(Kernel):
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


class Polynomial(Kernel):
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


class Linear(Kernel):
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


class _OkocoKernel:
    """The constraint on the parts of a kernel sum, product or multiple: okoco kernels."""

    def accepts_type(self, value) -> bool:
        return isinstance(value, Kernel)

    def convert(self, value):
        return value

    def __str__(self) -> str:
        return "an okoco kernel"


_PARTS = {"left": [_OkocoKernel()], "right": [_OkocoKernel()], "normalize": ["boolean"]}


class _Pair(Kernel):
    """Two kernels combined entrywise (the shared part of :class:`Sum` and :class:`Product`)."""

    _parameter_constraints = _PARTS

    def __init__(self, left: Kernel, right: Kernel, normalize: bool = False):
        self.left = left
        self.right = right
        self.normalize = normalize
        check_params(self)
        self.normalize = bool(normalize)

    def _params(self):
        return {"left": self.left, "right": self.right}


class Sum(_Pair):
    """Sum of two kernels, ``k(x, y) = left(x, y) + right(x, y)``; usually written ``left + right``.

    Parameters
    ----------
    left, right
        okoco kernels (their own ``normalize`` applies first).
    normalize
        Divide the sum by ``sqrt(k(x, x) k(y, y))``.

    Examples
    --------
    >>> from okoco.kernels import RBF, Linear
    >>> k = RBF(gamma=1.0) + Linear()
    >>> float(k([1.0, 0.0], [1.0, 2.0])[0, 0]) == float(__import__("numpy").exp(-4.0)) + 1.0
    True
    >>> float(k.diag([[1.0, 2.0]])[0])  # 1 + ||x||^2
    6.0
    """


    def _gram(self, X, Y):
        return self.left(X, Y) + self.right(X, Y)  # new arrays: a user kernel may cache its own

    def _diag(self, X):
        return self.left.diag(X) + self.right.diag(X)


class Product(_Pair):
    """Elementwise product of two kernels, ``k(x, y) = left(x, y) * right(x, y)``;
    usually written ``left * right``. PSD by the Schur product theorem.

    Parameters
    ----------
    left, right
        okoco kernels (their own ``normalize`` applies first).
    normalize
        Divide the product by ``sqrt(k(x, x) k(y, y))``.

    Examples
    --------
    >>> from okoco.kernels import Linear
    >>> k = Linear() * Linear()  # the homogeneous quadratic kernel <x, y>^2
    >>> float(k([1.0, 2.0], [3.0, 4.0])[0, 0])
    121.0
    """


    def _gram(self, X, Y):
        return self.left(X, Y) * self.right(X, Y)

    def _diag(self, X):
        return self.left.diag(X) * self.right.diag(X)


class Scaled(Kernel):
    """A kernel times a positive constant, ``k(x, y) = scale * kernel(x, y)``; usually written
    ``scale * kernel``.

    Parameters
    ----------
    scale
        The factor, finite and > 0.
    kernel
        An okoco kernel.

    Examples
    --------
    >>> from okoco.kernels import RBF
    >>> k = 0.5 * RBF(gamma=2.0)
    >>> k
    Scaled(scale=0.5, kernel=RBF(gamma=2.0))
    >>> k.diag([[3.0], [4.0]])
    array([0.5, 0.5])
    """

    _parameter_constraints = {"scale": SCALE, "kernel": [_OkocoKernel()]}

    def __init__(self, scale: float, kernel: Kernel):
        self.scale = scale
        self.kernel = kernel
        check_params(self)

    def _gram(self, X, Y):
        return self.scale * self.kernel(X, Y)

    def _diag(self, X):
        return self.scale * self.kernel.diag(X)

    def _params(self):
        return {"scale": self.scale, "kernel": self.kernel}
