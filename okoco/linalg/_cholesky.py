"""The bordered, packed Cholesky factor (:class:`IncrementalCholesky`) and its rank-one
modification (:func:`cholesky_rank_one`); see :mod:`okoco.linalg`."""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.linalg import LinAlgError, cholesky, solve_triangular

from okoco._blas import all_one_thread
from okoco._core import _linalg, _swap


def _packed_len(m: int) -> int:
    return m * (m + 1) // 2


def cholesky_rank_one(L: np.ndarray, x: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """Cholesky factor of ``L L^T + sign * x x^T`` for a dense lower-triangular ``L``.

    The update (``sign = +1``) or downdate (``-1``) of LINPACK's ``dchud`` / ``dchdd``: one
    rotation per column, applied row by row, ``O(k^2)``, in the compiled core that
    :meth:`IncrementalCholesky.remove` and :meth:`IncrementalCholesky.rescale` run in place.

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
    x = np.array(x, dtype=float)  # a copy: the core overwrites it
    k = x.shape[0]
    packed = np.ascontiguousarray(L[np.tril_indices(k)])
    if k and _linalg.rank_one(packed, 0, k, x, float(sign)) != 0:
        raise np.linalg.LinAlgError("rank-one downdate makes the matrix indefinite")
    return IncrementalCholesky._unpack(packed, k)


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
    _saved_state = {"refresh_tol": "number", "min_pivot": "number", "_cap": "int[0,] as capacity",
                    "_L": "rebuilt array(capacity * (capacity + 1) // 2) float64 as factor",
                    # (an owner that can compute A from its points may rebuild it: KRLS's
                    # ALD, whose L must then stay, its weights being in L's coordinates)
                    "_A": "rebuilt array(capacity * (capacity + 1) // 2) float64 as matrix",
                    "_m": "int[0,capacity] as size",
                    "_ops_since_check": "int[0,] as ops_since_check",
                    "_rebuilding": "bool as rebuilding", "n_clamped": "int[0,]",
                    "n_refreshes": "int[0,]", "last_residual": "float"}

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

    def factor_storage(self) -> np.ndarray:
        """The packed buffer of ``L`` itself, not a copy: its rows in order, over the
        capacity (``capacity (capacity + 1) / 2`` numbers), for a compiled step that reads
        it or borders it in place. An append past the capacity replaces it by a larger one."""
        return self._L

    @property
    def has_factor(self) -> bool:
        """Whether ``L`` is held (a load leaves it out when its owner rebuilds it)."""
        return self._L is not None

    @property
    def has_matrix(self) -> bool:
        """Whether ``A`` is held (a load leaves it out when its owner rebuilds it)."""
        return self._A is not None

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
        v = self._vector(v)
        if v.ndim == 2:
            return solve_triangular(self.factor(), v, lower=True, check_finite=False)
        h = v.copy()
        if m:
            _linalg.half_solve(self._L, m, h)
        return h

    def back_solve(self, h) -> np.ndarray:
        """``L^{-T} h`` by back substitution, ``O(m^2)``."""
        m = self._m
        h = self._vector(h, "h")
        if h.ndim == 2:
            return solve_triangular(self.factor(), h, lower=True, trans="T", check_finite=False)
        a = h.copy()
        if m:
            _linalg.back_solve(self._L, m, a)
        return a

    def leading_back_solve(self, h: np.ndarray) -> np.ndarray:
        """``L_k^{-T} h`` with ``L_k`` the leading ``k x k`` block of ``L``, ``k = len(h)``:
        the factor as it was before the last ``m - k`` appends (bordering keeps it), ``O(k^2)``.
        """
        k = h.shape[0]
        a = np.array(h, dtype=float)
        if k:
            _linalg.back_solve(self._L, k, a)
        return a

    def solve(self, v) -> np.ndarray:
        """``A^{-1} v``, ``O(m^2)`` per right-hand side."""
        return self.back_solve(self.half_solve(v))

    def quad(self, v) -> float:
        """Quadratic form ``v^T A^{-1} v = ||L^{-1} v||^2``, ``O(m^2)``."""
        h = self.half_solve(v)
        return float(h.dot(h))

    def logdet(self) -> float:
        """``log det A = 2 sum_j log L_jj``, ``O(m)`` (``0.0`` for the empty matrix)."""
        return 2.0 * _linalg.sum_log_diagonal(self._L, self._m)

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
        if not (math.isfinite(diagonal) and _linalg.all_finite(column)):
            raise ValueError("append: column and diagonal must be finite")
        if half is not None:
            half = np.ascontiguousarray(half, dtype=float)
            if half.shape != (m,):
                raise ValueError(f"half must have length {m}, got shape {half.shape}")
        self._grow(m + 1)
        schur, clamped = _linalg.append(self._L, self._A, m, column, diagonal, half,
                                        self.min_pivot)
        self.n_clamped += clamped
        self._m = m + 1
        self._after_modification()
        return schur

    def remove(self, i: int, rotations: np.ndarray | None = None) -> None:
        """Delete atom ``i`` (row and column ``i`` of ``A``), ``O(m^2)``.

        Rows above ``i`` are untouched; the trailing factor ``L_33`` becomes the factor of
        ``L_33 L_33^T + l l^T`` with ``l = L[i+1:, i]`` (a rank-one *update*, always stable).
        Later atoms shift down by one position.

        Parameters
        ----------
        i
            Atom position.
        rotations
            ``None``, or a C-ordered float64 array of shape ``(m - i - 1, 2)`` that receives
            the Givens rotations ``(c, s)`` taking coordinate ``i`` out of the embeddings
            ``L^{-1} k`` (``okoco._core._swap``: ``[l, L_33] G = [0, L_33']``), ``O(m^2)``
            more; an embedding over the factor after the removal is the rotated one without
            coordinate ``i``.
        """
        i = self._index(i)
        k = self._m - i - 1
        if rotations is not None:
            if not (isinstance(rotations, np.ndarray) and rotations.dtype == np.float64
                    and rotations.shape == (k, 2) and rotations.flags.c_contiguous
                    and rotations.flags.writeable):
                raise ValueError(f"rotations must be a writable C-ordered float64 array of "
                                 f"shape ({k}, 2), got {getattr(rotations, 'shape', rotations)!r}")
            rows = i + 1 + np.arange(k)
            start = rows * (rows + 1) // 2
            column, pivots = self._L[start + i], self._L[start + rows]  # l and L_33's diagonal
        _linalg.remove(self._L, self._A, self._m, i)
        self._m -= 1
        if rotations is not None:
            _swap.rotations_after_drop(self._L, i, column, pivots, rotations)
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
        # a downdate (factor > 1) may fail part-way through the trailing rows: keep them
        tail = slice(_packed_len(i), _packed_len(m))
        downdate = ridge > 0 and factor > 1 and i < m - 1
        saved = (self._L[tail].copy(), self._A[tail].copy()) if downdate else None
        status = _linalg.rescale(self._L, self._A, m, i, factor, ridge)
        if status == 2:
            self._L[tail], self._A[tail] = saved
        if status:
            raise np.linalg.LinAlgError(
                f"rescale({i}, {factor}) makes the matrix indefinite"
                + (" (its pivot would not be positive)" if status == 1 else "")
            )
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
        self.n_refreshes += 1
        self._ops_since_check = 0
        self._factorize()

    def rebuild_factor(self, charge=None) -> None:
        """Rebuild ``L`` after a load, from the stored ``A`` (the model: ``L`` is its Cholesky
        factor, which bordering kept up to rounding); ``charge(nbytes, what)`` is called before
        anything is allocated. The counters are kept."""
        m = self._m
        if charge is not None:
            charge(8 * (self._A.shape[0] + 3 * m * m), "a Cholesky factor")
        self._L = np.zeros(self._A.shape[0])
        self._factorize()

    def restore_matrix(self, M: np.ndarray) -> None:
        """After a load that left ``A`` out: ``A`` from the dense symmetric ``(m, m)`` matrix
        ``M`` its owner rebuilt from the model (the lower triangle, packed over the
        capacity). The factor and the counters are kept."""
        m = self._m
        if M.shape != (m, m):
            raise ValueError(f"a matrix of shape {M.shape} for a factor of {m} atoms")
        A = np.zeros(self._cap * (self._cap + 1) // 2)
        A[: _packed_len(m)] = M[np.tril_indices(m)]
        self._A = A

    def _factorize(self) -> None:
        """``L`` from ``A`` (the work of :meth:`refresh`)."""
        m = self._m
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
