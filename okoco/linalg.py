"""Incremental factorizations of a growing symmetric positive-definite matrix.

Every learner of okoco that keeps a kernel matrix over a growing set of *atoms* (KONS,
Sketched-KONS, KRLS, the KORS / ALD / SQUEAK / INK-Estimate dictionaries) factorizes it with
:class:`IncrementalCholesky`: a lower Cholesky factor ``L`` (``A = L L^T``) that is *bordered*
when an atom arrives, updated by a rank-one modification when an atom leaves or is re-weighted,
and refreshed from scratch when a residual check detects drift.

Storage is *packed*: row ``r`` of ``L`` occupies ``r + 1`` consecutive slots of a flat buffer
(``L`` row-major lower packed, which is ``L^T`` column-major upper packed, the BLAS ``tp`` layout).
Appending an atom therefore writes ``m + 1`` numbers at the end of the buffer, the factor of the
leading ``m x m`` block is always one contiguous slice, and triangular solves call BLAS ``dtpsv`` on
it without any copy: ``O(m^2)`` per solve and per append, with the buffer doubling its capacity.

Complexities (``m`` atoms)
--------------------------
======================  ==============  =====================================================
operation               cost            how
======================  ==============  =====================================================
``half_solve``          ``O(m^2)``      ``L^{-1} v`` by packed forward substitution
``back_solve``          ``O(m^2)``      ``L^{-T} h``
``solve``, ``quad``     ``O(m^2)``      two / one triangular solves
``append``              ``O(m^2)``      bordering: ``h = L^{-1} c``, pivot ``sqrt(d - h.h)``
``remove``              ``O(m^2)``      delete row/column, rank-one *update* of the trailing block
``rescale``             ``O(m^2)``      scale row/column, rank-one update or downdate
``logdet``              ``O(m)``        ``2 sum log diag(L)``
residual check          ``O(m^3)``      every ``max(m, 16)`` modifications: ``O(m^2)`` amortised
======================  ==============  =====================================================

The rank-one modification of a Cholesky factor uses the closed form of
``chol(I + s p p^T)`` (Gill, Golub, Murray & Saunders 1974, method C1), which vectorizes into
``O(m^2)`` array operations with no Python loop over atoms.

Examples
--------
>>> import numpy as np
>>> from okoco.linalg import IncrementalCholesky
>>> A = np.array([[4.0, 2.0, 0.4], [2.0, 3.0, 0.5], [0.4, 0.5, 2.0]])
>>> chol = IncrementalCholesky()
>>> for j in range(3):
...     _ = chol.append(A[:j, j], A[j, j])
>>> bool(np.allclose(chol.solve([1.0, 2.0, 3.0]), np.linalg.solve(A, [1.0, 2.0, 3.0])))
True
>>> bool(np.isclose(chol.logdet(), np.linalg.slogdet(A)[1]))
True
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.linalg import LinAlgError, cholesky, solve_triangular
from scipy.linalg.blas import dger, dspmv, dspr, dtpsv

from okoco._blas import all_one_thread, dot, scipy_one_thread

__all__ = ["IncrementalCholesky", "PackedSymmetric", "cholesky_rank_one"]


def _packed_len(m: int) -> int:
    return m * (m + 1) // 2


def _tail_indices(m: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """(row - i, col) of the packed entries of rows ``i..m-1`` of an ``m x m`` lower matrix."""
    lengths = np.arange(i + 1, m + 1)
    rows = np.repeat(np.arange(m - i), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    cols = np.arange(rows.shape[0]) - starts
    return rows, cols


def cholesky_rank_one(L: np.ndarray, x: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """Cholesky factor of ``L L^T + sign * x x^T`` for a dense lower-triangular ``L``.

    Uses ``L L^T + s x x^T = L (I + s p p^T) L^T`` with ``p = L^{-1} x`` and the closed form of the
    factor ``M`` of ``I + s p p^T`` (Gill, Golub, Murray & Saunders 1974, method C1): with
    ``beta_0 = 1``, ``beta_j = 1 + s sum_{k<=j} p_k^2``,
    ``M_jj = sqrt(beta_j / beta_{j-1})`` and ``M_ij = s p_i p_j / sqrt(beta_{j-1} beta_j)`` for
    ``i > j``. The product ``L M`` is a scaled ``L`` plus a cumulative sum along rows, so the whole
    update costs ``O(k^2)`` vectorized operations.

    Parameters
    ----------
    L
        Lower-triangular ``(k, k)`` factor with a positive diagonal.
    x
        Update vector of length ``k``.
    sign
        ``+1`` for an update, ``-1`` for a downdate.

    Returns
    -------
    numpy.ndarray
        The new lower factor (a new array).

    Raises
    ------
    numpy.linalg.LinAlgError
        If a downdate would make the matrix indefinite.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import cholesky_rank_one
    >>> A = np.array([[2.0, 0.5], [0.5, 1.0]]); x = np.array([0.3, -0.4])
    >>> L1 = cholesky_rank_one(np.linalg.cholesky(A), x)
    >>> bool(np.allclose(L1 @ L1.T, A + np.outer(x, x)))
    True
    """
    L = np.asarray(L, dtype=float)
    x = np.asarray(x, dtype=float)
    k = x.shape[0]
    if k == 0:
        return L.copy()
    p = solve_triangular(L, x, lower=True, check_finite=False)
    beta = np.empty(k + 1)
    beta[0] = 1.0
    np.cumsum(p * p, out=beta[1:])
    beta[1:] *= sign
    beta[1:] += 1.0
    if not np.all(beta[1:] > 0.0):
        raise np.linalg.LinAlgError("rank-one downdate makes the matrix indefinite")
    d = np.sqrt(beta[1:] / beta[:-1])
    q = sign * p / np.sqrt(beta[:-1] * beta[1:])
    W = L * p[None, :]
    T = np.cumsum(W, axis=1)
    out = L * d[None, :] + (T[:, -1:] - T) * q[None, :]
    return np.tril(out)


class IncrementalCholesky:
    """Lower Cholesky factor ``L`` of a growing SPD matrix ``A`` (``m x m``) in a doubling buffer.

    The matrix is built atom by atom with :meth:`append` (bordering, ``O(m^2)``), shrunk with
    :meth:`remove` and re-weighted with :meth:`rescale`. A copy of ``A`` is kept (packed, ``m^2/2``
    numbers) so that the factor can be checked and refreshed from scratch: after every
    ``max(m, 16)`` modifications the relative residual ``||L L^T - A||_F / ||A||_F`` is computed
    and, if it exceeds ``refresh_tol``, ``L`` is recomputed from ``A`` (``O(m^3)``, so ``O(m^2)``
    amortised per modification). The period is the current ``m``, so a factor that only grows by
    appends (bordering is backward stable; ALD's, KRLS's) is checked once, at ``m = 16``; updates,
    removals and rescalings bring the next check. It can also be run at any time with
    :meth:`check`.

    Near-duplicate atoms make the Schur complement ``d - ||L^{-1} c||^2`` of a new atom vanish or go
    negative through cancellation. Such pivots are clamped to ``min_pivot`` and counted in
    :attr:`n_clamped`; the stored ``A`` then holds the diagonal entry actually factorized
    (``||h||^2 + min_pivot``), so a refresh reproduces the same matrix.

    Parameters
    ----------
    capacity
        Initial number of atoms the buffers can hold; doubled whenever exceeded.
    refresh_tol
        Relative residual above which the factor is recomputed from the stored matrix.
        ``numpy.inf`` disables refreshes.
    min_pivot
        Smallest Schur complement accepted by :meth:`append`; smaller ones are clamped.

    Attributes
    ----------
    n_clamped : int
        Number of Schur complements clamped to ``min_pivot``.
    n_refreshes : int
        Number of refactorizations triggered by the residual check.
    last_residual : float
        Relative residual found by the last check (``nan`` before the first one).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import IncrementalCholesky
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5, 3)); A = X @ X.T + np.eye(5)
    >>> chol = IncrementalCholesky(capacity=2)
    >>> for j in range(5):
    ...     _ = chol.append(A[:j, j], A[j, j])
    >>> chol.remove(1)
    >>> B = np.delete(np.delete(A, 1, 0), 1, 1)
    >>> bool(np.allclose(chol.factor(), np.linalg.cholesky(B)))
    True
    >>> v = np.arange(4.0)
    >>> bool(np.isclose(chol.quad(v), v @ np.linalg.solve(B, v)))
    True
    """

    _MIN_CHECK_PERIOD = 16

    #: Saved state (okoco.persistence): packed buffers of ``capacity * (capacity + 1) / 2``.
    _saved_state = {"refresh_tol": "number", "min_pivot": "number", "_cap": "int[0,]",
                    "_L": "array(_cap * (_cap + 1) // 2) float64",
                    "_A": "array(_cap * (_cap + 1) // 2) float64", "_m": "int[0,_cap]",
                    "_ops_since_check": "int[0,]", "_rebuilding": "bool",
                    "n_clamped": "int[0,]", "n_refreshes": "int[0,]", "last_residual": "float"}

    def __init__(self, capacity: int = 16, refresh_tol: float = 1e-8, min_pivot: float = 1e-12):
        if isinstance(capacity, bool) or not isinstance(capacity, numbers.Integral) or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        refresh_tol = float(refresh_tol)
        if not refresh_tol > 0:
            raise ValueError(f"refresh_tol must be > 0 (numpy.inf disables), got {refresh_tol!r}")
        min_pivot = float(min_pivot)
        if not (np.isfinite(min_pivot) and min_pivot > 0):
            raise ValueError(f"min_pivot must be finite and > 0, got {min_pivot!r}")
        self.refresh_tol = refresh_tol
        self.min_pivot = min_pivot
        self._cap = int(capacity)
        self._L = np.zeros(_packed_len(self._cap))
        self._A = np.zeros(_packed_len(self._cap))
        self._m = 0
        self._ops_since_check = 0
        self._rebuilding = False
        self.n_clamped = 0
        self.n_refreshes = 0
        self.last_residual = float("nan")

    # ------------------------------------------------------------------ basic properties
    @property
    def size(self) -> int:
        """Number of atoms ``m`` (the order of ``A``)."""
        return self._m

    def __len__(self) -> int:
        return self._m

    @property
    def capacity(self) -> int:
        """Number of atoms the current buffers can hold before doubling."""
        return self._cap

    def __repr__(self) -> str:
        return (
            f"IncrementalCholesky(size={self._m}, capacity={self._cap}, "
            f"n_clamped={self.n_clamped}, n_refreshes={self.n_refreshes})"
        )

    def _packed(self) -> np.ndarray:
        return self._L[: _packed_len(self._m)]

    def diagonal(self) -> np.ndarray:
        """Diagonal of ``L`` (a copy), ``O(m)``."""
        idx = np.arange(self._m)
        return self._L[idx * (idx + 3) // 2].copy()

    def factor(self) -> np.ndarray:
        """Dense lower factor ``L`` (a new ``(m, m)`` array)."""
        return self._unpack(self._L, self._m)

    def matrix(self) -> np.ndarray:
        """The stored matrix ``A`` (a new symmetric ``(m, m)`` array)."""
        A = self._unpack(self._A, self._m)
        return A + np.tril(A, -1).T

    @staticmethod
    def _unpack(buf: np.ndarray, m: int) -> np.ndarray:
        out = np.zeros((m, m))
        out[np.tril_indices(m)] = buf[: _packed_len(m)]
        return out

    # ------------------------------------------------------------------ solves
    def _vector(self, v, name: str = "v") -> np.ndarray:
        v = np.ascontiguousarray(v, dtype=float)
        if v.shape[:1] != (self._m,) or v.ndim > 2:
            raise ValueError(f"{name} must have length {self._m} (the size), got shape {v.shape}")
        return v

    def half_solve(self, v) -> np.ndarray:
        """``L^{-1} v`` by forward substitution, ``O(m^2)``.

        ``v`` may be a vector of length ``m`` or an ``(m, k)`` array of right-hand sides.
        """
        m = self._m
        if type(v) is np.ndarray and v.shape == (m,) and m:  # the learners' case, one call
            return dtpsv(m, self._L[: m * (m + 1) // 2], v, 1, 0, 0, 1)  # incx, offx, lower, trans
        v = self._vector(v)
        if self._m == 0:
            return v.copy()
        if v.ndim == 2:
            return solve_triangular(self.factor(), v, lower=True, check_finite=False)
        return dtpsv(self._m, self._packed(), v, lower=0, trans=1)

    def back_solve(self, h) -> np.ndarray:
        """``L^{-T} h`` by back substitution, ``O(m^2)``."""
        m = self._m
        if type(h) is np.ndarray and h.shape == (m,) and m:
            return dtpsv(m, self._L[: m * (m + 1) // 2], h, 1, 0, 0, 0)  # incx, offx, lower, trans
        h = self._vector(h, "h")
        if self._m == 0:
            return h.copy()
        if h.ndim == 2:
            return solve_triangular(self.factor(), h, lower=True, trans="T", check_finite=False)
        return dtpsv(self._m, self._packed(), h, lower=0, trans=0)

    def leading_back_solve(self, h: np.ndarray) -> np.ndarray:
        """``L_k^{-T} h`` with ``L_k`` the leading ``k x k`` block of ``L``, ``k = len(h)``:
        the factor as it was before the last ``m - k`` appends (bordering keeps it), ``O(k^2)``.
        """
        k = h.shape[0]
        if not k:
            return np.zeros(0)
        return dtpsv(k, self._L[: k * (k + 1) // 2], h, 1, 0, 0, 0)  # incx, offx, lower, trans

    def solve(self, v) -> np.ndarray:
        """``A^{-1} v``, ``O(m^2)`` per right-hand side."""
        return self.back_solve(self.half_solve(v))

    def quad(self, v) -> float:
        """Quadratic form ``v^T A^{-1} v = ||L^{-1} v||^2``, ``O(m^2)``."""
        h = self.half_solve(v)
        return dot(h, h)

    def logdet(self) -> float:
        """``log det A = 2 sum_j log L_jj``, ``O(m)`` (``0.0`` for the empty matrix)."""
        return float(2.0 * np.sum(np.log(self.diagonal())))

    def inverse(self) -> np.ndarray:
        """Explicit ``A^{-1}`` (``O(m^3)``; prefer :meth:`solve`)."""
        if self._m == 0:
            return np.zeros((0, 0))
        Linv = solve_triangular(self.factor(), np.eye(self._m), lower=True, check_finite=False)
        return Linv.T @ Linv

    # ------------------------------------------------------------------ modifications
    def _grow(self, needed: int) -> None:
        cap = self._cap
        while cap < needed:
            cap *= 2
        if cap == self._cap:
            return
        n = _packed_len(self._m)
        for name in ("_L", "_A"):
            new = np.zeros(_packed_len(cap))
            new[:n] = getattr(self, name)[:n]
            setattr(self, name, new)
        self._cap = cap

    def append(self, column, diagonal: float, half=None) -> float:
        """Border ``A`` with a new atom: ``A <- [[A, c], [c^T, d]]``, ``O(m^2)``.

        Parameters
        ----------
        column
            The new off-diagonal column ``c`` (length ``m``).
        diagonal
            The new diagonal entry ``d``.
        half
            ``L^{-1} c`` if the caller already computed it (the solve is then skipped).

        Returns
        -------
        float
            The Schur complement ``d - ||L^{-1} c||^2`` actually used, i.e. the new pivot squared,
            after clamping to ``min_pivot``.
        """
        m = self._m
        column = self._vector(column, "column")
        if column.ndim != 1:
            raise ValueError(f"column must be 1-D, got shape {column.shape}")
        diagonal = float(diagonal)
        if not (math.isfinite(diagonal) and np.isfinite(column).all()):
            raise ValueError("append: column and diagonal must be finite")
        if half is None:
            h = self.half_solve(column)
        else:
            h = np.asarray(half, dtype=float)
            if h.shape != (m,):
                raise ValueError(f"half must have length {m}, got shape {h.shape}")
        hh = dot(h, h)
        schur = diagonal - hh
        if not schur >= self.min_pivot:
            schur = self.min_pivot
            diagonal = hh + self.min_pivot
            self.n_clamped += 1
        self._grow(m + 1)
        start = _packed_len(m)
        self._L[start : start + m] = h
        self._L[start + m] = math.sqrt(schur)
        self._A[start : start + m] = column
        self._A[start + m] = diagonal
        self._m = m + 1
        self._after_modification()
        return schur

    def remove(self, i: int) -> None:
        """Delete atom ``i`` (row and column ``i`` of ``A``), ``O(m^2)``.

        Rows above ``i`` are untouched; the trailing factor ``L_33`` becomes the factor of
        ``L_33 L_33^T + l l^T`` with ``l = L[i+1:, i]`` (a rank-one *update*, always stable).
        Later atoms shift down by one position.
        """
        m = self._m
        i = self._index(i)
        off, end = _packed_len(i), _packed_len(m)
        rows, cols = _tail_indices(m, i)
        # Row-major packed order of the reduced matrix is the old order minus row/column i.
        keep = (rows != 0) & (cols != i)
        new_end = _packed_len(m - 1)
        self._A[off:new_end] = self._A[off:end][keep]
        self._A[new_end:end] = 0.0
        tail = self._L[off:end]
        l = tail[(cols == i) & (rows > 0)]
        new_tail = tail[keep]
        k = m - i - 1
        if k > 0:
            nr, nc = _tail_indices(m - 1, i)
            sel = nc >= i
            T = np.zeros((k, k))
            T[nr[sel], nc[sel] - i] = new_tail[sel]
            T = cholesky_rank_one(T, l, 1.0)
            new_tail[sel] = T[nr[sel], nc[sel] - i]
        self._L[off:new_end] = new_tail
        self._L[new_end:end] = 0.0
        self._m = m - 1
        self._after_modification()

    def rescale(self, i: int, factor: float, ridge: float = 0.0) -> None:
        """Re-weight atom ``i``: ``A - ridge I <- D (A - ridge I) D``, ``D = I + (f-1) e_i e_i^T``.

        This is the update needed when ``A = S K S + ridge I`` (KORS, INK-Estimate, SQUEAK with
        weights ``S = diag(sqrt(w))``) and the weight of atom ``i`` changes from ``w_i`` to
        ``w_i'``: call ``rescale(i, sqrt(w_i' / w_i), ridge)``. Row ``i`` of ``L`` is scaled,
        its pivot recomputed, the column below it scaled by ``factor L_ii / L'_ii`` and the
        trailing block receives the rank-one term
        ``ridge (1 - factor^2) / L'_ii^2 * l l^T`` (an update if ``factor < 1``, a downdate
        otherwise), ``O(m^2)``.

        Parameters
        ----------
        i
            Atom position.
        factor
            Positive multiplier of row and column ``i`` of ``A - ridge I``.
        ridge
            The part of the diagonal that is not re-weighted (``>= 0``).
        """
        m = self._m
        i = self._index(i)
        factor, ridge = float(factor), float(ridge)
        if not (np.isfinite(factor) and factor > 0):
            raise ValueError(f"factor must be finite and > 0, got {factor!r}")
        if not (np.isfinite(ridge) and ridge >= 0):
            raise ValueError(f"ridge must be finite and >= 0, got {ridge!r}")
        off = _packed_len(i)
        rows, cols = _tail_indices(m, i)
        # stored matrix
        TA = np.zeros((m - i, m))
        TA[rows, cols] = self._A[off : _packed_len(m)]
        TA[0, :i] *= factor
        TA[0, i] = factor * factor * (TA[0, i] - ridge) + ridge
        TA[1:, i] *= factor
        # factor
        T = np.zeros((m - i, m))
        T[rows, cols] = self._L[off : _packed_len(m)]
        lii = T[0, i]
        new_sq = factor * factor * lii * lii + ridge * (1.0 - factor * factor)
        if not new_sq > 0:
            raise np.linalg.LinAlgError(
                f"rescale({i}, {factor}) makes the matrix indefinite (pivot^2 = {new_sq:.3g})"
            )
        new_lii = math.sqrt(new_sq)
        T[0, :i] *= factor
        T[0, i] = new_lii
        l_old = T[1:, i].copy()
        T[1:, i] = l_old * (factor * lii / new_lii)
        coef = ridge * (1.0 - factor * factor) / new_sq
        if m - i - 1 > 0 and coef != 0.0:
            T[1:, i + 1 :] = cholesky_rank_one(
                T[1:, i + 1 :], math.sqrt(abs(coef)) * l_old, math.copysign(1.0, coef)
            )
        self._L[off : _packed_len(m)] = T[rows, cols]
        self._A[off : _packed_len(m)] = TA[rows, cols]
        self._after_modification()

    def _index(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"atom index must be an integer, got {i!r}")
        i = int(i)
        if not -self._m <= i < self._m:
            raise IndexError(f"atom index {i} out of range for size {self._m}")
        return i % self._m

    # ------------------------------------------------------------------ drift control
    def _after_modification(self) -> None:
        self._ops_since_check += 1
        if self._rebuilding:
            return
        if self._ops_since_check >= max(self._m, self._MIN_CHECK_PERIOD):
            self.check()

    def check_due(self) -> bool:
        """Whether the next modification runs the residual check (and so may refresh ``L``)."""
        return (not self._rebuilding
                and self._ops_since_check + 1 >= max(self._m + 1, self._MIN_CHECK_PERIOD))

    def residual(self) -> float:
        """Relative residual ``||L L^T - A||_F / ||A||_F`` (``O(m^3)``)."""
        if self._m == 0:
            return 0.0
        L = self.factor()
        A = self.matrix()
        return float(np.linalg.norm(L @ L.T - A) / max(np.linalg.norm(A), np.finfo(float).tiny))

    def check(self) -> float:
        """Compute the residual and refresh the factor if it exceeds ``refresh_tol``.

        Returns the residual measured before any refresh. Called automatically once the
        modifications since the last check reach ``max(m, 16)``, ``m`` the current size (see
        the class docstring for a factor that only grows).
        """
        self._ops_since_check = 0
        with all_one_thread:  # O(m^3) but at a learner's sizes one thread is faster (module doc)
            res = self.residual()
            self.last_residual = res
            if not res <= self.refresh_tol:
                self.refresh()
        return res

    def refresh(self) -> None:
        """Recompute ``L`` from the stored ``A`` (``O(m^3)``), clamping pivots if it is singular."""
        m = self._m
        self.n_refreshes += 1
        self._ops_since_check = 0
        if m == 0:
            return
        A = self.matrix()
        try:
            L = cholesky(A, lower=True, check_finite=False)
            if not np.all(np.isfinite(L)):
                raise LinAlgError("non-finite factor")
            self._L[: _packed_len(m)] = L[np.tril_indices(m)]
        except LinAlgError:
            # Rebuild by bordering, clamping pivots exactly as append does.
            self._m = 0
            self._L[:] = 0.0
            self._A[:] = 0.0
            self._rebuilding = True
            try:
                for j in range(m):
                    self.append(A[:j, j], A[j, j])
            finally:
                self._rebuilding = False
                self._ops_since_check = 0


class PackedSymmetric:
    """A growing symmetric ``(m, m)`` matrix updated in place by BLAS: dense while small, then
    packed.

    Up to ``DENSE_MAX`` rows the matrix is a full dense C-contiguous array: :meth:`matvec` is
    numpy's matrix-vector product and :meth:`rank_one` one ``dger`` on it, two calls that
    OpenBLAS never hands to its thread pool at these sizes (``m * m <= 8192``, its threshold for
    both), so no one-thread scope is needed and a step makes fewer calls. Bordering reallocates
    the ``(m + 1, m + 1)`` array (``O(m^2)``, like the append of the factor beside it, and at
    most ``DENSE_MAX`` times). When the matrix outgrows ``DENSE_MAX`` it switches, once, to
    :class:`IncrementalCholesky`'s layout (row-major lower packed in a doubling buffer):
    bordering writes ``m + 1`` numbers at the end, :meth:`matvec` is BLAS ``dspmv`` and
    :meth:`rank_one` is ``dspr``, on one thread, with half the memory. KRLS keeps its
    ``P = (A^T A)^{-1}`` here.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import PackedSymmetric
    >>> P = PackedSymmetric()
    >>> P.append(np.zeros(0), 2.0); P.append(np.array([0.5]), 1.0)
    >>> P.rank_one(-1.0, np.array([1.0, 0.0]))
    >>> P.matrix()
    array([[1. , 0.5],
           [0.5, 1. ]])
    >>> P.matvec(np.array([1.0, 1.0]))
    array([1.5, 1.5])
    """

    #: Largest order kept dense: OpenBLAS runs ``dger`` and ``dgemv`` on one thread up to
    #: ``m * m = 8192`` elements (interface/ger.c, interface/gemv.c).
    DENSE_MAX = 90
    # The dense matrix, or None once packed. A file saved before the dense form existed has no
    # such attribute: the class default makes it packed, as it was.
    _dense: np.ndarray | None = None

    #: Saved state (okoco.persistence): dense ``(m, m)`` up to DENSE_MAX, else packed.
    _saved_state = {"_cap": "int[0,]", "_m": "int[0,]",
                    "_buf": "array(0) float64|array(_cap * (_cap + 1) // 2) float64",
                    "_dense": "array(_m, _m) float64|none"}

    def __init__(self, capacity: int = 16):
        self._cap = int(capacity)
        self._buf = np.zeros(0)
        self._m = 0
        self._dense = np.zeros((0, 0))

    @property
    def size(self) -> int:
        """The order ``m``."""
        return self._m

    @classmethod
    def from_matrix(cls, A: np.ndarray) -> PackedSymmetric:
        """A matrix holding the symmetric ``A`` (its lower triangle is read), ``O(m^2)``.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.linalg import PackedSymmetric
        >>> PackedSymmetric.from_matrix(np.array([[2.0, 1.0], [1.0, 3.0]])).matrix()
        array([[2., 1.],
               [1., 3.]])
        """
        A = np.asarray(A, dtype=float)
        m = A.shape[0]
        out = cls(capacity=max(m, 16))
        if m <= cls.DENSE_MAX:
            lower = np.tril(A)
            out._dense = lower + np.tril(A, -1).T
        else:
            out._dense = None
            out._buf = np.zeros(_packed_len(out._cap))
            out._buf[: _packed_len(m)] = A[np.tril_indices(m)]
        out._m = m
        return out

    @property
    def is_dense(self) -> bool:
        """Whether the matrix is held dense (``m <= DENSE_MAX``) rather than packed."""
        return self._dense is not None

    def _packed(self) -> np.ndarray:
        return self._buf[: _packed_len(self._m)]

    def append(self, column: np.ndarray, diagonal: float) -> None:
        """Border the matrix: ``P <- [[P, c], [c^T, d]]``."""
        m = self._m
        D = self._dense
        if D is not None:
            if m + 1 <= self.DENSE_MAX:
                grown = np.empty((m + 1, m + 1))
                grown[:m, :m] = D
                grown[m, :m] = column
                grown[:m, m] = column
                grown[m, m] = diagonal
                self._dense, self._m = grown, m + 1
                return
            # outgrown: to the packed layout, once (rows of the lower triangle, in order)
            self._cap = max(self._cap, 2 * (m + 1))
            self._buf = np.zeros(_packed_len(self._cap))
            self._buf[: _packed_len(m)] = D[np.tril_indices(m)]
            self._dense = None
        if m + 1 > self._cap:
            cap = max(2 * self._cap, m + 1)
            grown = np.zeros(_packed_len(cap))
            grown[: _packed_len(m)] = self._packed()
            self._buf, self._cap = grown, cap
        start = _packed_len(m)
        self._buf[start : start + m] = column
        self._buf[start + m] = diagonal
        self._m = m + 1

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``P v`` (numpy's product while dense, else BLAS ``dspmv``; on one thread)."""
        if self._m == 0:
            return np.zeros(0)
        if self._dense is not None:
            return self._dense.dot(v)
        with scipy_one_thread:
            return dspmv(self._m, 1.0, self._packed(), v, lower=0)

    def rank_one(self, alpha: float, x: np.ndarray) -> None:
        """``P <- P + alpha x x^T`` in place (``dger`` while dense, else ``dspr``; one thread)."""
        if not self._m:
            return
        if self._dense is not None:
            # both triangles, so (i, j) and (j, i) may differ in the last bit (OpenBLAS's kernel
            # fuses some multiply-adds and not others); products read the whole matrix
            dger(alpha, x, x, 1, 1, self._dense.T, 1, 1, 1)  # incx, incy, a, overwrite x, y, a
            return
        with scipy_one_thread:
            dspr(self._m, alpha, x, self._packed(), lower=0, overwrite_ap=1)

    def inverse_update(self, a: np.ndarray) -> tuple[np.ndarray, float]:
        """``P <- (P^{-1} + a a^T)^{-1}`` by Sherman-Morrison; return ``(P a, s)`` (old ``P``).

        ``s = 1 / (1 + a^T P a)``, so the update is ``P <- P - s (P a)(P a)^T``: a
        matrix-vector product and a rank-one update (``dspmv`` and ``dspr`` under a single
        one-thread scope once packed), ``O(m^2)``.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.linalg import PackedSymmetric
        >>> P = PackedSymmetric(); P.append(np.zeros(0), 2.0); P.append(np.array([0.5]), 1.0)
        >>> M, a = P.matrix(), np.array([1.0, -1.0])
        >>> Pa, s = P.inverse_update(a)
        >>> bool(np.allclose(P.matrix(), np.linalg.inv(np.linalg.inv(M) + np.outer(a, a))))
        True
        """
        m = self._m
        if m == 0:
            return np.zeros(0), 1.0
        D = self._dense
        if D is not None:
            Pa = D.dot(a)  # numpy's gemv without matmul's generalized-ufunc dispatch
            s = 1.0 / (1.0 + dot(a, Pa))
            dger(-s, Pa, Pa, 1, 1, D.T, 1, 1, 1)  # as rank_one: incx, incy, a, overwrite x, y, a
            return Pa, s
        with scipy_one_thread:
            Pa = dspmv(m, 1.0, self._packed(), a, lower=0)
            s = 1.0 / (1.0 + dot(a, Pa))
            dspr(m, -s, Pa, self._packed(), lower=0, overwrite_ap=1)
        return Pa, s

    def matrix(self) -> np.ndarray:
        """A dense copy of ``P``."""
        if self._dense is not None:
            return self._dense.copy()
        A = IncrementalCholesky._unpack(self._buf, self._m)
        return A + np.tril(A, -1).T
