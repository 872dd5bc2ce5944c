"""Sketched-KONS (Calandriello, Lazaric & Valko, ICML 2017, Algorithm 3): KONS whose
preconditioner keeps only the points KORS samples; the shared core is
:mod:`okoco.learners._newton` (KONS), and :mod:`okoco.learners.kons` re-exports
:class:`SketchedKONS` (its public and saved path)."""

from __future__ import annotations

import math

import numpy as np

from okoco.dictionary import KORS
from okoco.learners._newton import DEFAULT_MAX_SIZE, KONS
from okoco.learners.base import overflow_message
from okoco.linalg import SlotInverse

__all__ = ["SketchedKONS"]


class SketchedKONS(KONS):
    r"""Sketched-KONS (Algorithm 3): KONS whose preconditioner keeps only KORS-sampled points.

    Each step draws one coin :math:`z_t \sim \mathrm{Bernoulli}(\tilde p_t)` with
    :math:`\tilde p_t = \max(\min(\beta\tilde\tau_{t,t}, 1), p_{\min})`, where
    :math:`\tilde\tau_{t,t}` is KORS's ridge-leverage-score estimate on the rescaled kernel
    (``okoco.dictionary.KORS``). The preconditioner
    :math:`\tilde A_t = \tilde A_{t-1} + \eta_t z_t g_t g_t^\top` is unweighted, KORS's is
    weighted by :math:`1/\tilde p`, and the two share the coin. The coefficient uses the
    corrected Lemma 4 (with the :math:`z_t` factor), so the coin is drawn first.

    Per step: :math:`O(n)` for the kernel row and the running ``K c`` over the ``n`` stored
    points, plus :math:`O(|\mathcal I|^2)` for KORS and the preconditioner. A point outside
    the dictionary whose coefficient is 0 adds nothing to any prediction and is not stored:
    with :class:`okoco.losses.SquaredHinge` every point beyond the margin (zero gradient and
    curvature), much as a kernel SVM keeps only its support vectors; with a loss whose
    gradient is never 0 (logistic, squared) every point is stored. ``p_min=1`` is exactly KONS;
    ``beta=p_min=0`` is projected kernel gradient descent with step :math:`1/\alpha`.

    The window ``max_size`` bounds the *store* (not only the dictionary: with the logistic or
    the squared loss every point gets a coefficient): once ``max_size`` points are stored, each
    new one makes the oldest leave, from the running ``K c``, and from the preconditioner and
    KORS if it was an atom (``KORS.remove``), as for :class:`KONS`. Both matrices are then kept
    by their inverses (KORS's too, in its inverse form), so that a step's new atom and the
    oldest one's removal are one pass over each, in one array (the preconditioner's inverse
    in its lower triangle, KORS's in its upper one: ``SlotInverse.pair``; each matrix itself
    is recomputed from the stored points when its inverse is, every ``16 n`` changes), so
    that the memory is about KONS's at the same window. Theorem 3's statement holds
    until the first removal; afterwards the window is a heuristic that bounds the cost and
    forgets (KORS's accuracy statement then holds for the points of the window at best: the
    weights of the remaining atoms were drawn against points that have left). On a long
    stationary stream its error stops falling, as KONS's does (100,000 steps at the defaults,
    seed 1, test-then-train, ``benchmarks/bench_long_streams.py``: river's Friedman #1 MAE
    1.351 over steps 10,000-20,000 and 1.348 over the last 10,000, where :class:`CONKONS`,
    bounded by a dictionary of the whole stream, went from 0.99 to 0.98 (its coins unseeded);
    RandomRBF, ``d = 10``, two classes, error 0.056 and 0.065, against :class:`KRLS`'s 0.035
    and 0.037). ``max_size=None`` is the
    paper's learner, every point kept.

    Parameters
    ----------
    kernel, loss, C, alpha, eta, max_size
        As for :class:`KONS` (``max_size`` bounds the stored points).
    eps
        KORS accuracy :math:`\varepsilon \in (0, 1]`.
    beta
        KORS oversampling; ``okoco.dictionary`` has helpers for the theoretical value.
    p_min
        Floor of the sampling probability, in ``[0, 1]`` (the paper's :math:`\gamma`).
    seed
        Seed of the coin's random generator.

    Examples
    --------
    >>> from okoco import kernels
    >>> from okoco.learners import SketchedKONS
    >>> model = SketchedKONS(kernel=kernels.RBF(1.0), beta=2.0, p_min=0.0, seed=0)
    >>> for i in range(200):  # 20 distinct points, seen 10 times each
    ...     model.learn_one({"x": (i % 20) / 20}, 0.5)
    >>> model.dictionary_size < 60
    True
    """

    _parameter_constraints = {
        "eps": KORS._parameter_constraints["eps"],
        "beta": KORS._parameter_constraints["beta"],
        "p_min": KORS._parameter_constraints["p_min"],
        "seed": ["seed"],
    }

    _drops_null_points = True
    _least_coin = 0  # a point KORS does not keep

    _saved_state = {"eps": "number", "beta": "number", "p_min": "number",
                    "seed": "int|none|rng", "_kors": "obj:KORS as kors"}
    # KORS's inverse shares the window's array (a pair): rebuilt with it
    _rebuilt_parts = {**KONS._rebuilt_parts, "kors.inverse": None}

    def __init__(self, kernel=None, loss=None, C: float = 3.0, alpha: float = 0.1,
                 eta="hessian", eps: float = 0.5, beta: float = 10.0, p_min: float = 0.0,
                 seed: int | None = None, max_size: int | None = DEFAULT_MAX_SIZE):
        self.eps = eps
        self.beta = beta
        self.p_min = p_min
        self.seed = seed
        super().__init__(kernel, loss, C, alpha, eta, max_size)

    def _reset_state(self) -> None:
        super()._reset_state()
        self._kors = KORS(kernel=None, alpha=self.alpha, eps=self.eps, beta=self.beta,
                          p_min=self.p_min, seed=self._rng)
        if self.max_size is not None:  # its atoms leave with the window's oldest point
            ring = self.max_size + 1  # (+1: a step's atom, then the oldest out)
            # the preconditioner's inverse over slots of its own, as many as atoms are held
            # (KORS keeps a part of the window): its products then cost the atoms', not the
            # window's (okoco.linalg.SlotInverse's compact form, grown 16 at a time); KORS's
            # inverse over the same atoms is its pair, in the same array (neither keeps M)
            self._window = SlotInverse(ring, atoms=min(16, ring))
            self._kors._use_inverse(ring, pair_of=self._window)
            self._link()

    def _step_core(self):
        core = self._core
        if core is None or core[0] is not self._kernel:  # (after a load or a copy too)
            self._link()
        return super()._step_core()

    def _link(self) -> None:
        """Link the pair of inverses (the preconditioner's and KORS's share one array) and
        give each its ``M`` from the stored points; a model saved before the pair keeps two."""
        first, second = self._window, self._kors._inverse
        if second is None or not second._upper:
            return
        first._partner, second._partner = second, first
        second.P = first.P
        first._source, second._source = self._preconditioner_matrix, self._kors_matrix

    def _kors_matrix(self, own: np.ndarray) -> np.ndarray:
        """KORS's ``S D K D S + alpha I`` over its atoms at its slots ``own``."""
        kors = self._kors
        m = kors._size
        position = np.empty(int(kors._slots[:m].max()) + 1, dtype=np.intp)
        position[kors._slots[:m]] = np.arange(m)  # atom j (in KORS's order) at slot _slots[j]
        atoms = position[own]
        slots = self._selected[atoms]  # the same atoms' store slots, in the same order
        M = self._points_matrix(slots, np.sqrt(kors.weight_storage()[atoms])
                                * self._store.fields["d"][slots])
        M[np.diag_indices(own.shape[0])] = kors._inverse.diagonal[own]
        return M

    def _rebuild_now(self, charge) -> None:
        super()._rebuild_now(charge)  # the window's inverse and, in its array, KORS's (a pair)
        inverse = self._kors._inverse
        if inverse is not None and inverse.P is None:  # unbounded: KORS keeps a factor, and
            inverse.rebuild(self._kors_matrix, self._store.size, charge)  # this one empty

    def _gather(self, v: np.ndarray) -> np.ndarray:
        return v[self._selected[: self._chol.size]]

    def _coin(self, e: np.ndarray, kappa: float, d_t: float) -> int:
        if d_t == 0.0:  # a zero gradient (a point beyond the squared hinge's margin)
            return int(self._kors._update_null())
        column = d_t * self._atom_column(e)  # kappa, d_t and d_t^2 kappa + alpha were checked
        total = float(column.sum())
        if not math.isfinite(total):  # finite iff every entry is (or refused)
            raise ValueError(overflow_message(self._kernel, total))
        added, _, _ = self._kors._update_checked_column(column, d_t * d_t * kappa)
        return int(added)

    def _forget_atom(self) -> None:
        self._kors.remove(0)

    def _settle(self) -> None:
        super()._settle()
        self._kors._flush()

    @property
    def coins(self) -> np.ndarray:
        """The coin :math:`z_t` of every step (1 at the steps KORS kept and still holds)."""
        coins = np.zeros(self.n_seen)
        coins[self._kors.indices] = 1.0
        return coins


SketchedKONS.__module__ = "okoco.learners.kons"  # its public path (files: "SketchedKONS")
