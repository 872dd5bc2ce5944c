"""The inverse of a symmetric positive-definite matrix over a ring of slots
(:class:`SlotInverse`, the windowed KONS's preconditioner); see :mod:`okoco.linalg`."""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.blas import dger

from okoco._blas import scipy_one_thread
from okoco._core import _linalg


class SlotInverse:
    r"""The inverse :math:`P = M^{-1}` of a symmetric positive-definite matrix over a ring of
    slots (zero rows and columns for the slots that hold no atom), and :math:`M` itself for the
    periodic recomputation. The windowed KONS keeps its preconditioner
    :math:`M = \bar K_I + \alpha I` here, indexed by its store's slots.

    The window adds an atom at the end and removes the oldest, which a Cholesky factor can
    only do by updating the whole trailing factor; the inverse does both by one rank-one
    update (bordering, and the Schur complement of a removed atom), ``O(m^2)`` in BLAS. Every
    ``4 n`` modifications (``n`` slots) ``P`` is recomputed from ``M`` (``O(n^3)``, ``O(n^2)``
    amortised), so rounding does not accumulate over an unbounded stream.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import SlotInverse
    >>> M = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> inverse = SlotInverse()
    >>> inverse.append(0, np.zeros(0), 2.0, np.zeros(0), 2.0, 1)
    >>> a = inverse.solve(M[:1, 1])  # P c over the slots so far
    >>> inverse.append(1, a, M[1, 1] - M[:1, 1] @ a, M[:1, 1], M[1, 1], 2)
    >>> bool(np.allclose(inverse.solve(np.eye(2)), np.linalg.inv(M)))
    True
    >>> bool(np.isclose(inverse.remove(0, 2), np.log(np.linalg.inv(M)[0, 0])))  # log P_00
    True
    >>> float(inverse.solve(np.eye(2))[1, 1])  # slot 1 alone: 1 / M[1, 1]
    1.0
    """

    _saved_state = {"capacity": "int[1,]|none", "P": "array(*, *) float64",
                    "M": "array(*, *) float64", "size": "int[0,]",
                    "_mods": "int[0,] as modifications", "n_refreshes": "int[0,]"}

    def __init__(self, capacity: int | None = None):
        self.capacity = capacity  # slots at most (None: any number, for a caller's ring)
        self.P = np.zeros((16, 16))
        self.M = np.zeros((16, 16))
        self.size = 0  # atoms
        self._mods = 0
        self.n_refreshes = 0

    def _rank_one(self, n: int, a: np.ndarray, scale: float) -> None:
        """``P[:n, :n] += scale a a^T``: in place by BLAS once the buffer is exactly full (the
        ring's steady state), by numpy on the leading block while it grows."""
        P = self.P
        if n == P.shape[0]:
            with scipy_one_thread:  # OpenBLAS threads dger at any size: under load, ms
                dger(scale, a, a, a=P.T, overwrite_a=1)  # P is symmetric: P.T is P, F-ordered
        else:
            P[:n, :n] += np.multiply.outer(a, scale * a)

    def solve(self, e: np.ndarray) -> np.ndarray:
        """``P e`` over the first ``len(e)`` slots (``e`` a vector or a matrix of columns)."""
        n = e.shape[0]
        return self.P[:n, :n] @ e

    def _reserve(self, n: int) -> None:
        if n > self.P.shape[0]:
            size = max(n, 2 * self.P.shape[0])
            if self.capacity is not None:
                size = min(size, self.capacity)
            P, M = np.zeros((size, size)), np.zeros((size, size))
            m = self.P.shape[0]
            P[:m, :m], M[:m, :m] = self.P, self.M
            self.P, self.M = P, M

    def append(self, slot: int, a: np.ndarray, sigma: float, column: np.ndarray,
               diagonal: float, n: int) -> None:
        """Border with the atom at ``slot``: ``a = P c`` over the old slots (``c`` its column
        of ``M``), ``sigma = diagonal - c^T P c`` the Schur complement (``> 0``)."""
        self._reserve(n)
        m = a.shape[0]
        P = self.P
        self._rank_one(m, a, 1.0 / sigma)
        P[slot, :m] = P[:m, slot] = -a / sigma
        P[slot, slot] = 1.0 / sigma
        self.M[slot, :m] = self.M[:m, slot] = column
        self.M[slot, slot] = diagonal
        self.size += 1
        self._modified(n)

    def remove(self, slot: int, n: int) -> float:
        """Remove the atom at ``slot`` of the first ``n``; returns ``log P_jj``, the change of
        ``log det M`` (the Schur complement of the other atoms)."""
        P = self.P
        pivot = float(P[slot, slot])
        # exactly, P_jj = 1 / (M_jj - the part the other atoms explain) >= 1 / M_jj: a pivot
        # below half of that is rounding (the downdate would divide by it): recompute instead
        usable = math.isfinite(pivot) and pivot * float(self.M[slot, slot]) >= 0.5
        self.M[slot, :n] = self.M[:n, slot] = 0.0
        self.size -= 1
        if not usable:
            self.refresh()
            return 0.0  # (log_det then misses this removal's term: a statistic only)
        p = P[:n, slot].copy()
        self._rank_one(n, p, -1.0 / pivot)
        P[slot, :n] = P[:n, slot] = 0.0
        self._modified(n)
        return math.log(pivot)

    def _modified(self, n: int) -> None:
        self._mods += 1
        if self._mods >= max(4 * n, 64):
            self.refresh()

    def refresh(self) -> None:
        """``P`` recomputed from ``M`` over the atoms (``O(m^3)``).

        If ``M`` is numerically singular (its Cholesky factorization fails: a condition number
        near ``1 / eps``), ``P`` is the inverse of ``M`` with its eigenvalues raised to the
        rounding level ``m eps lambda_max``: finite and positive definite, never an error.
        """
        self._mods = 0
        self.n_refreshes += 1
        atoms = np.flatnonzero(np.diagonal(self.M))
        inverse = None
        if atoms.size:
            sub = self.M[np.ix_(atoms, atoms)]
            try:
                inverse = cho_solve(cho_factor(sub, lower=True, check_finite=False),
                                    np.eye(atoms.size), check_finite=False)
            except LinAlgError:
                pass
            if inverse is None or not _linalg.all_finite(inverse.reshape(-1)):
                values, vectors = np.linalg.eigh(sub)
                floor = atoms.size * np.finfo(float).eps * max(float(values[-1]), 0.0)
                values = np.maximum(values, floor if floor > 0.0 else 1.0)
                inverse = (vectors / values) @ vectors.T
        self.P[:] = 0.0
        if inverse is not None:
            self.P[np.ix_(atoms, atoms)] = 0.5 * (inverse + inverse.T)
