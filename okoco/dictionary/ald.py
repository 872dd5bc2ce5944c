"""ALD: approximate-linear-dependence dictionary (Engel, Mannor & Meir 2004; Sun et al. 2012)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from okoco._core import _krls
from okoco._input import reserve
from okoco._validation import Interval
from okoco.dictionary._base import Dictionary, _real
from okoco.linalg import IncrementalCholesky

__all__ = ["ALD"]


class ALD(Dictionary):
    """Online kernel sparsification by approximate linear dependence (the OKS / KRLS dictionary).

    A point ``x`` joins the dictionary ``D`` iff its squared distance to ``span{phi(d): d in D}``

    ``delta = k(x, x) - g^T G_D^{-1} g = det G_{D + x} / det G_D``,  ``g = k_D(x)``

    exceeds the threshold ``nu`` (Engel, Mannor & Meir 2004, "The Kernel Recursive Least-Squares
    Algorithm"; Sun, Gomez & Schmidhuber 2012, "On the Size of the Online Kernel Sparsification
    Dictionary", Sect. 2, who call it ``alpha``). The ALD coefficients ``a = G_D^{-1} g`` and
    ``delta`` are what KRLS needs at every step, so both are left in ``last_coefficients`` and
    ``last_residual``, and :meth:`project` computes them for any point without changing anything.
    The Gram matrix ``G_D`` is kept as an :class:`okoco.linalg.IncrementalCholesky` (``O(m^2)`` per
    step), so ``log det G_D = sum_j log delta_j`` (the insertion residuals) and
    ``det G_D > nu^m``.

    With ``max_size`` the dictionary stops growing once full (Engel et al.'s budget): later points
    are only projected.

    Parameters
    ----------
    kernel
        Kernel object (``kernel(X, Y)``, ``kernel.diag(X)``); ``None`` when the caller feeds
        kernel columns through :meth:`update_column`.
    nu
        ALD threshold ``> 0``.
    max_size
        Optional maximum number of atoms.
    alpha
        Ridge (diagonal loading) ``alpha >= 0``: the factored Gram is ``G_D + alpha I`` and the
        residual is the regularized ``delta = k(x, x) - g^T (G_D + alpha I)^{-1} g`` (at least the
        exact one, and equal to it as ``alpha -> 0``); the Schur complement of the loaded Gram, its
        new pivot, is ``delta + alpha``, so :meth:`gram`, :meth:`logdet` and :attr:`cholesky` are
        those of ``G_D + alpha I`` (``log det = sum_j log(delta_j + alpha)``). ``0`` is the
        paper's exact ALD.

    Attributes
    ----------
    last_coefficients : numpy.ndarray
        ``a_t = G_D^{-1} g`` against the dictionary *before* the last point (so, if the point was
        added, its own ALD row afterwards is the unit vector ``e_m``, Engel et al.).
    last_residual : float
        ``delta_t`` of the last point.
    last_kernel_column : numpy.ndarray
        ``g = k_D(x_t)`` of the last point (before it was added).
    last_added : bool

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import ALD
    >>> ald = ALD(RBF(gamma=0.5), nu=0.01)
    >>> _ = ald.update_many(np.random.default_rng(0).uniform(size=(1000, 1)))
    >>> ald.size
    3
    >>> bool(np.isclose(ald.logdet(), np.sum(np.log(ald.residuals))))
    True
    >>> a, delta = ald.project(np.array([0.5]))
    >>> bool(delta <= 0.01)
    True
    """

    _parameter_constraints = {
        "nu": [Interval(Real, 0, None, closed="neither")],
        "max_size": [None, Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
    }

    _saved_state = {"nu": "number", "max_size": "int|none", "alpha": "number",
                    "_column_mode": "bool as column_mode",
                    "_chol": "obj:IncrementalCholesky as cholesky",
                    "_residuals": "array(>=size) float64 as residuals",
                    "_last_a": "array(*) float64|none as last_a",
                    "_last_h": "array(*) float64|none as last_h", "last_residual": "float",
                    "last_kernel_column": "array(*) float64", "last_added": "bool",
                    "_last_pivot": "opt float as last_pivot",
                    "_size": "int[cholesky.size,cholesky.size] as size"}

    def __init__(self, kernel, nu: float, max_size: int | None = None, alpha: float = 0.0):
        super().__init__(kernel, nu=nu, max_size=max_size, alpha=alpha)
        self._column_mode = False
        self._chol = IncrementalCholesky()
        self._residuals = np.zeros(16)
        self._last_a: np.ndarray | None = np.zeros(0)
        self._last_h: np.ndarray | None = None
        self.last_residual = float("nan")
        self.last_kernel_column = np.zeros(0)
        self.last_added = False

    @property
    def cholesky(self) -> IncrementalCholesky:
        """Incremental Cholesky factor of the dictionary Gram matrix ``G_D`` (read-only use)."""
        return self._chol

    @property
    def last_coefficients(self) -> np.ndarray:
        """``a_t = G_D^{-1} g`` of the last point, against the dictionary before it (see the
        class docstring); computed on first read when the caller passed only ``h`` (KRLS's
        step needs ``h`` alone, :meth:`half_project`)."""
        a = self._last_a
        if a is None:
            h = self._last_h
            if h is None:  # a file saved when this was a plain attribute
                return self.__dict__.get("last_coefficients", np.zeros(0))
            # the factor the point was projected on is the leading block of the current one
            # (an append borders it; a refresh at that append solved a before it)
            a = self._last_a = self._chol.leading_back_solve(h)
        return a

    @property
    def residuals(self) -> np.ndarray:
        """Insertion residuals ``delta_j`` of the atoms (each ``> nu``)."""
        return self._residuals[: self.size].copy()

    def gram(self) -> np.ndarray:
        """The dictionary Gram matrix ``G_D`` (a copy)."""
        return self._chol.matrix()

    def gram_inverse(self) -> np.ndarray:
        """Explicit ``G_D^{-1}`` (``O(m^3)``; prefer ``cholesky.solve``)."""
        return self._chol.inverse()

    def logdet(self) -> float:
        """``log det G_D``, ``O(m)``."""
        return self._chol.logdet()

    def project_column(self, k_col: np.ndarray, k_diag: float) -> tuple[np.ndarray, float,
                                                                         np.ndarray]:
        """ALD projection of a point given its kernel column (no state change), ``O(m^2)``.

        Returns ``(a, delta, h)``: ``a = G_D^{-1} k_col``, ``delta = k_diag - k_col^T a`` and
        ``h = L^{-1} k_col`` (``G_D = L L^T``). Pass the tuple to :meth:`update_column` to
        learn the same point without solving again.
        """
        h, delta = self.half_project(k_col, k_diag)
        return self._chol.back_solve(h), delta, h

    def half_project(self, k_col: np.ndarray, k_diag: float) -> tuple[np.ndarray, float]:
        """``(h, delta)`` of :meth:`project_column`, without the solve that gives ``a``: one
        triangular solve. Pass ``(None, delta, h)`` as the projection to :meth:`update_column`
        (``a`` is then solved when :attr:`last_coefficients` is read). The analysis KRLS's
        compiled step makes (``okoco._core._krls.ald_residual``)."""
        k_col = np.ascontiguousarray(k_col, dtype=float)
        if k_col.shape != (self.size,):
            raise ValueError(f"k_col must have length {self.size} (the size), got shape "
                             f"{k_col.shape}")
        return _krls.ald_project(self._chol.factor_storage(), k_col, float(k_diag))

    def _diag(self, vec: np.ndarray) -> float:
        return float(np.asarray(self.kernel.diag(vec[None, :]))[0])

    def project(self, x) -> tuple[np.ndarray, float]:
        """ALD coefficients and residual of ``x`` against the current dictionary (no state change).

        Returns ``(a, delta)`` with ``a = G_D^{-1} k_D(x)`` and ``delta = k(x, x) - k_D(x)^T a``.
        """
        self._require_kernel()
        vec, _ = self._features.encode(x)
        a, delta, _ = self.project_column(self._kernel_column(vec), self._diag(vec))
        return a, delta

    def _update_vec(self, vec: np.ndarray, new: list) -> bool:
        if self.size and self._column_mode:
            raise RuntimeError("this ALD is driven by update_column; do not mix with update(x)")
        self._require_kernel()
        g, kxx = self._kernel_column(vec), self._diag(vec)
        self._commit(vec, new)
        return self._step(g, kxx, vec)

    def update_column(self, k_col, k_diag: float, projection=None) -> bool:
        """Process one point given its kernel column against the atoms and ``k(x, x)``.

        The entry point for a caller that keeps the points itself and already has the column
        (KRLS computes it once per step for its prediction). The dictionary then stores no
        points (:attr:`atoms` is empty): only indices, the factor and the residuals.

        Parameters
        ----------
        k_col
            ``k(d_j, x)`` for the atoms in storage order (length :attr:`size`).
        k_diag
            ``k(x, x)``.
        projection
            What :meth:`project_column` returned for this column against the current dictionary,
            if the caller has it (the solves are then skipped).

        Returns
        -------
        bool
            Whether the point joined the dictionary; ``last_coefficients``, ``last_residual`` and
            ``last_kernel_column`` are set as by :meth:`update`.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.kernels import RBF
        >>> from okoco.dictionary import ALD
        >>> k, X = RBF(gamma=1.0), np.array([[0.0], [0.05], [2.0]])
        >>> ald = ALD(None, nu=0.01)
        >>> [ald.update_column(k(X[ald.indices], X[[t]])[:, 0], 1.0) for t in range(3)]
        [True, False, True]
        """
        if self.size and not self._column_mode:
            raise RuntimeError("this ALD is driven by update(x); do not mix with update_column")
        g = np.asarray(k_col, dtype=float).reshape(-1)
        if g.shape[0] != self.size:
            raise ValueError(f"k_col must have length {self.size} (the size), got {g.shape[0]}")
        if not np.isfinite(g).all():
            raise ValueError("k_col contains non-finite values")
        kxx = _real("k_diag", k_diag, low=0.0)
        return self._update_checked_column(g, kxx, projection)

    def _update_checked_column(self, g: np.ndarray, kxx: float, projection=None) -> bool:
        """:meth:`update_column` for a caller that has checked the column (float64, length
        ``size``, finite) and ``kxx`` (finite, ``>= 0``) itself: KRLS's step."""
        if self.size and not self._column_mode:
            raise RuntimeError("this ALD is driven by update(x); do not mix with update_column")
        self._column_mode = True
        return self._step(g, kxx, None, projection)

    def _reserve(self, size: int) -> None:
        """Room for ``size`` atoms in the per-atom arrays (a compiled loop appends in place)."""
        self._residuals = reserve(self._residuals, size)
        self._indices = reserve(self._indices, size)
        self._weights = reserve(self._weights, size)

    def _step(self, g: np.ndarray, kxx: float, vec: np.ndarray | None, projection=None) -> bool:
        a, delta, h = self.project_column(g, kxx) if projection is None else projection
        added = _krls.ald_admits(delta, self.nu, self.size, self.max_size)
        if added:
            m = self.size
            if a is None and self._chol.check_due():  # a refresh may replace the factor
                a = self._chol.back_solve(h)
            self._last_pivot = self._chol.append(g, kxx + self.alpha, half=h)  # squared
            self._residuals = reserve(self._residuals, m + 1)
            self._residuals[m] = delta
            self._store(self.n_seen, 1.0, vec)
        self.n_seen += 1
        self._remember(g, a, h, delta, added)
        return added

    def _remember(self, g: np.ndarray, a: np.ndarray | None, h: np.ndarray, delta: float,
                  added: bool) -> None:
        """The record of the last point: its column, ALD coefficients (or ``None`` and its
        ``h``, solved when read), residual and whether it joined."""
        self._last_a, self._last_h, self.last_residual = a, h, delta
        self.last_kernel_column, self.last_added = g, added

    def _note_outside(self, g: np.ndarray, h: np.ndarray, delta: float, steps: int) -> None:
        """``steps`` points fed as kernel columns that did not join, the caller having made
        the analysis and the test (KRLS's compiled step, ``okoco._core._krls``): the count,
        and the record of the last one (its column ``g``, ``h`` and residual)."""
        self._column_mode = True
        self.n_seen += steps
        self._remember(g, None, h, delta, False)
