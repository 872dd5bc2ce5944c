"""Squared distances for kernel rows: the norm expansion, exact where it could lose digits."""

from __future__ import annotations

import math

import numpy as np

from okoco._core import _kernels


def _as_rows(X) -> np.ndarray:
    if type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64:
        return X  # the learners' hot path
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        return X[None, :]
    if X.ndim != 2:
        raise ValueError(f"expected a 1-D or 2-D array, got shape {X.shape}")
    return X


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
