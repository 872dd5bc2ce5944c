"""KORS: Kernel Online Row Sampling (Calandriello, Lazaric & Valko, ICML 2017, Algorithm 2)."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from okoco._blas import scipy_one_thread
from okoco._core import _kors
from okoco._input import reserve
from okoco._validation import Interval
from okoco.dictionary._base import Dictionary, _integer, _real
from okoco.linalg import IncrementalCholesky, SlotInverse

__all__ = ["KORS", "beta_paper", "beta_proof"]


def _beta_args(T, delta, eps) -> tuple[int, float, float]:
    T = _integer("T", T)
    delta = _real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    eps = _real("eps", eps, low=0.0, high=1.0, low_open=True)
    return T, delta, eps


def beta_paper(T: int, delta: float, eps: float) -> float:
    """Oversampling ``beta = 3 log(T / delta) / eps^2`` as printed in Theorem 2 of KORS.

    The proof of Theorem 2 actually needs :func:`beta_proof` (union bound over ``T`` steps and
    ``2T`` martingale events).

    Examples
    --------
    >>> from okoco.dictionary import beta_paper
    >>> round(beta_paper(T=10_000, delta=0.1, eps=0.5), 2)
    138.16
    """
    T, delta, eps = _beta_args(T, delta, eps)
    return 3.0 * math.log(T / delta) / eps**2


def beta_proof(T: int, delta: float, eps: float) -> float:
    """Oversampling ``beta = 3 log(4 T^2 / delta) / eps^2`` that the proof of Theorem 2 requires.

    Step 2 of the proof needs ``2T exp(-eps^2 beta / 3) <= delta / (2T)``.

    Examples
    --------
    >>> from okoco.dictionary import beta_proof
    >>> round(beta_proof(T=10_000, delta=0.1, eps=0.5), 2)
    265.31
    """
    T, delta, eps = _beta_args(T, delta, eps)
    return 3.0 * math.log(4.0 * T * T / delta) / eps**2


class KORS(Dictionary):
    """Kernel Online Row Sampling (Calandriello et al. 2017, Algorithm 2, incremental form).

    For each new point the ridge leverage score is over-estimated against the current weighted
    dictionary ``I`` plus the point itself at weight 1 (Eq. 4):

    ``tau~_t = (1 + eps) phi_t^T (Phi S S^T Phi^T + phi_t phi_t^T + alpha I)^{-1} phi_t
    = (1 + eps) q / (1 + q)``, with
    ``q = (k_tt - a^T (S K_II S + alpha I)^{-1} a) / alpha``, ``a = S k_{I,t}`` (Sherman–Morrison),

    then ``p~_t = max(min(beta tau~_t, 1), p_min)``, a coin ``z_t ~ Bernoulli(p~_t)`` and, if it
    lands, the point joins with weight ``1 / p~_t``. Weights never change afterwards, so the
    factor of ``S K_II S + alpha I`` is only ever bordered: ``O(m^2)`` per step with
    :class:`okoco.linalg.IncrementalCholesky`.

    With probability ``1 - delta`` and ``beta >= beta_proof(T, delta, eps)`` (Theorem 2, corrected):
    ``(1 - eps) A_t <= A_t^I <= (1 + eps) A_t`` for all ``t``,
    ``tau_{t,t} <= tau~_t <= rho tau_{t,t}`` with ``rho = (1 + eps) / (1 - eps)``, and
    ``|I_t| <= 3 rho beta d_onl(alpha)`` (plus ``3 p_min t`` with the floor).

    Parameters
    ----------
    kernel
        Kernel object (``kernel(X, Y)``, ``kernel.diag(X)``), or ``None`` when the dictionary is
        driven only through :meth:`update_column` (Sketched-KONS, with the rescaled kernel).
    alpha
        Ridge ``> 0`` of ``A = Phi S S^T Phi^T + alpha I``.
    eps
        Accuracy ``in (0, 1]``.
    beta
        Oversampling ``>= 0``; see :func:`beta_paper` and :func:`beta_proof`.
    p_min
        Probability floor ``in [0, 1]`` (Sketched-KONS, Algorithm 3, where it is called
        ``gamma``); ``p_min = 1`` keeps every point.
    seed
        Seed or ``numpy.random.Generator`` for the coins.

    Attributes
    ----------
    last_tau, last_p, last_q : float
        ``tau~_t``, ``p~_t`` and ``q`` of the last point (``nan`` before any).
    last_added : bool
        Whether the last point was added.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import KORS
    >>> kors = KORS(RBF(gamma=1.0), alpha=1.0, eps=0.5, beta=2.0, seed=0)
    >>> X = np.random.default_rng(0).uniform(size=(300, 1))
    >>> added = kors.update_many(X)
    >>> int(added.sum()) == kors.size, kors.size < 300
    (True, True)
    >>> bool(np.all(kors.weights >= 1.0))
    True
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "eps": [Interval(Real, 0, 1, closed="right")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "p_min": [Interval(Real, 0, 1, closed="both")],
        "seed": ["seed"],
    }

    _saved_state = {
        "alpha": "number", "eps": "number", "beta": "number", "p_min": "number",
        "seed": "int|none|rng", "_rng": "rng as rng",
        "_chol": "obj:IncrementalCholesky as cholesky", "_column_mode": "bool as column_mode",
        "last_tau": "float", "last_p": "float", "last_q": "float", "last_added": "bool",
        # the factor's size, or the inverse form's (whose factor is then empty)
        "_size": "int[cholesky.size,cholesky.size]|int[inverse.size,inverse.size] as size",
        "_inverse": "opt obj:SlotInverse|none as inverse",
        "_slots": "opt array(*) intp|none as slots",
    }
    # The inverse form (:meth:`_use_inverse`, with the atoms' slots), for dictionaries whose
    # atoms leave; saved models from before it read None (the factor's form).
    _inverse = None
    _slots = None

    def __init__(self, kernel=None, alpha: float = 1.0, eps: float = 0.5, beta: float = 10.0,
                 p_min: float = 0.0, seed=None):
        super().__init__(kernel, alpha=alpha, eps=eps, beta=beta, p_min=p_min, seed=seed)
        self._chol = IncrementalCholesky()
        self._column_mode = False
        self._inverse = SlotInverse()  # empty unless the inverse form is used
        self._slots = None
        self.last_tau = float("nan")
        self.last_p = float("nan")
        self.last_q = float("nan")
        self.last_added = False

    @property
    def rho(self) -> float:
        """``(1 + eps) / (1 - eps)``, the over-estimation factor of Theorem 2 (``inf`` at eps=1)."""
        return math.inf if self.eps >= 1.0 else (1.0 + self.eps) / (1.0 - self.eps)

    @property
    def cholesky(self) -> IncrementalCholesky:
        """Factor of ``S K_II S + alpha I`` over the atoms (read-only use, please)."""
        return self._chol

    def _use_inverse(self, capacity: int | None = None, pair_of: SlotInverse | None = None) -> None:
        """Keep ``S K_II S + alpha I`` by its inverse over slots (:class:`SlotInverse`) instead
        of its Cholesky factor, for a dictionary whose atoms leave (Sketched-KONS's window): a
        removal is then one rank-one update, in the same pass as the bordering of the step's
        new atom, where the factor rotates its whole trailing block. The estimates are the
        same (Eq. 4). Only on an empty dictionary. ``capacity`` bounds the atoms held at once
        (a window's), so that the inverse's buffers stop there. With ``pair_of``, the inverse
        is that one's pair (``SlotInverse.pair``: Sketched-KONS's preconditioner, whose atoms
        are KORS's), in its array, and its owner gives it ``M`` at each recomputation."""
        if self._size:
            raise RuntimeError("the inverse form is chosen before the first atom")
        self._inverse = SlotInverse(capacity) if pair_of is None else pair_of.pair()
        self._slots = np.zeros(16, dtype=np.intp)  # the slot of each atom, in storage order

    def _flush(self) -> None:
        """Make a recomputation of the inverse form that waited for the end of the step (a
        paired inverse)."""
        if self._slots is not None:
            self._inverse.settle()

    def weight_storage(self) -> np.ndarray:
        """The weights' buffer itself, not a copy (over its capacity: the first :attr:`size`
        are the atoms'), for a compiled step that reads it or appends to it in place; a
        point joining past the capacity replaces it by a larger one."""
        return self._weights

    @property
    def rng(self) -> np.random.Generator:
        """The generator of the coins (a compiled step draws them ahead, and sets it back)."""
        return self._rng

    def record_rejected(self, seen: int, q: float, tau: float, p: float) -> None:
        """Count ``seen`` points a compiled step scored by their columns (as
        :meth:`update_column`) and did not keep, the last with score ``q``, ``tau``, ``p``."""
        self._column_mode = True
        self.n_seen += seen
        self.last_q, self.last_tau, self.last_p, self.last_added = q, tau, p, False

    @property
    def atoms(self) -> np.ndarray:
        if self._column_mode:
            raise RuntimeError("KORS driven by update_column stores no points; use indices")
        return super().atoms

    def _update_vec(self, vec: np.ndarray, new: list) -> bool:
        self._require_kernel()
        if self._column_mode:
            raise RuntimeError("this KORS is driven by update_column; do not mix with update")
        k_col = self._kernel_column(vec)
        k_diag = float(np.asarray(self.kernel.diag(vec[None, :]))[0])
        self._commit(vec, new)
        added, _, _ = self._step(k_col, k_diag, vec)
        return added

    def update_column(self, k_col, k_diag: float) -> tuple[bool, float, float]:
        """Process one point given its kernel column against the current atoms.

        This is the entry point of Sketched-KONS (Algorithm 3), where KORS runs on the rescaled
        kernel ``K-bar(x_i, x_j) = d_i d_j K(x_i, x_j)``: pass
        ``k_col[j] = d_t d_{i_j} K(x_{i_j}, x_t)`` for the atoms ``i_j = indices[j]`` (storage
        order, **unweighted**: KORS applies ``S`` itself) and ``k_diag = d_t^2 K(x_t, x_t)``.
        The same coin decides membership and the caller's ``z_t`` (single-coin reading of §4).

        Parameters
        ----------
        k_col
            Length-``size`` kernel column of the new point against the atoms.
        k_diag
            Kernel value of the new point with itself (``>= 0``).

        Returns
        -------
        (added, tau_tilde, p) : (bool, float, float)
            The coin ``z_t``, the estimate ``tau~_t`` (Eq. 4) and ``p~_t`` (with the floor).
            The same values are left in ``last_added``, ``last_tau`` and ``last_p``.
        """
        if self.size and not self._column_mode:
            raise RuntimeError("this KORS is driven by update(x); do not mix with update_column")
        k_col = np.asarray(k_col, dtype=float).reshape(-1)
        if k_col.shape[0] != self.size:
            raise ValueError(f"k_col must have length {self.size} (the size), got {k_col.shape[0]}")
        if not np.isfinite(k_col).all():
            raise ValueError("k_col contains non-finite values")
        k_diag = _real("k_diag", k_diag, low=0.0)
        return self._update_checked_column(k_col, k_diag)

    def _update_checked_column(self, k_col: np.ndarray, k_diag: float) -> tuple[bool, float, float]:
        """:meth:`update_column` for a caller that has checked the column (float64, length
        ``size``, finite) and ``k_diag`` (finite, ``>= 0``) itself: Sketched-KONS's step."""
        self._column_mode = True
        return self._step(k_col, k_diag, None)

    def _update_null(self) -> bool:
        """:meth:`update_column` of a point whose column and diagonal are all zero (a zero
        gradient in Sketched-KONS): ``q = 0``, so ``tau~ = 0`` and ``p~ = p_min``, without the
        ``O(m^2)`` solve; the same coin as the general step."""
        self._column_mode = True
        if self._slots is not None:
            added, _, _ = self._inverse_step(np.zeros(self._size), 0.0, None)
            return added
        none = np.zeros(0)  # Eq. 4's score with nothing explained: q = 0, so p = p_min
        _, _, p = _kors.kors_score(none, none, self._chol.factor_storage(), 0.0, self.alpha,
                                    self.eps, self.beta, self.p_min, none, none)
        added = self._rng.random() < p  # a bool: random() returns a Python float
        if added:  # the zero column joins with the diagonal 0 / p + alpha
            m = self._size
            self._chol.append(np.zeros(m), self.alpha, half=np.zeros(m))
            self._store(self.n_seen, 1.0 / p, None)
        self.n_seen += 1
        self.last_tau, self.last_p, self.last_q, self.last_added = 0.0, p, 0.0, added
        return added

    def _step(self, k_col: np.ndarray, k_diag: float, vec) -> tuple[bool, float, float]:
        if self._slots is not None:
            return self._inverse_step(k_col, k_diag, vec)
        # a = S k_col, h = L^{-1} a, q = max(k_diag - |h|^2, 0) / alpha (Eq. 4's residual),
        # tau = (1 + eps) q / (1 + q), p = max(min(beta tau, 1), p_min)
        m = self._size
        a, h = np.empty(m), np.empty(m)
        q, tau, p = _kors.kors_score(self._weights[:m], np.ascontiguousarray(k_col, dtype=float),
                                      self._chol.factor_storage(), k_diag,
                                      self.alpha, self.eps, self.beta, self.p_min, a, h)
        added = bool(self._rng.random() < p)
        if added:
            scale = 1.0 / math.sqrt(p)
            self._chol.append(a * scale, k_diag / p + self.alpha, half=h * scale)
            self._store(self.n_seen, 1.0 / p, vec)
        self.n_seen += 1
        self.last_tau, self.last_p, self.last_q, self.last_added = tau, p, q, added
        return added, tau, p

    def _inverse_step(self, k_col: np.ndarray, k_diag: float, vec) -> tuple[bool, float, float]:
        """:meth:`_step` in the inverse form: ``v = S k_col`` over the slots, ``h = P v``, the
        residual ``k_diag - v . h`` scored as in Eq. 4, and a new atom's bordering, in one
        compiled call (``okoco._core._kors``)."""
        m = self._size
        self._slots = reserve(self._slots, m + 1)
        with scipy_one_thread:
            added, q, tau, p, slot = _kors.inverse_step(
                self._inverse, self._slots[:m], self._weights[:m],
                np.ascontiguousarray(k_col, dtype=float), k_diag, self._rng.random(),
                (self.alpha, self.eps, self.beta, self.p_min))
        if added:
            self._slots[m] = slot
            self._store(self.n_seen, 1.0 / p, vec)
        self.n_seen += 1
        self.last_tau, self.last_p, self.last_q, self.last_added = tau, p, q, added
        return added, tau, p

    def remove(self, position: int) -> None:
        """Drop the atom at ``position`` (storage order) from the dictionary, ``O(m^2)``.

        Its row and column leave the factor of ``S K_II S + alpha I``; the other atoms keep
        their weights. Sketched-KONS's window calls it when the point leaves. Theorem 2's
        statement is about the dictionary built from every point seen: after a removal it no
        longer applies as stated.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.kernels import RBF
        >>> kors = KORS(RBF(gamma=1.0), alpha=1.0, beta=100.0, seed=0)
        >>> _ = kors.update_many(np.array([[0.0], [1.0], [2.0]]))
        >>> kors.remove(0)
        >>> kors.indices, kors.cholesky.size
        (array([1, 2]), 2)
        """
        m = self._size
        if isinstance(position, bool) or not isinstance(position, (int, np.integer)):
            raise TypeError(f"position must be an integer, got {position!r}")
        if not 0 <= position < m:
            raise ValueError(f"position must be in [0, {m}), got {position!r}")
        if self._slots is not None:
            slots = self._slots[:m]
            self._inverse.remove(int(slots[position]), int(slots.max()) + 1)
            slots[position : m - 1] = slots[position + 1 :]
        else:
            self._chol.remove(int(position))
        self._drop(int(position))
