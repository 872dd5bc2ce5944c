"""SQUEAK, sequential RLS sampling (Calandriello et al. 2017, "Pack only the essentials")."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from okoco._blas import all_one_thread
from okoco._input import FeatureMap
from okoco._validation import Interval, Options
from okoco.dictionary._base import KERNEL, Dictionary

__all__ = ["SQUEAK"]


class SQUEAK(Dictionary):
    """SQUEAK: anytime ridge-leverage-score dictionary with shrinking (Calandriello, Lazaric &
    Valko 2017, "Pack only the essentials: Adaptive dictionary learning for kernel ridge
    regression", Algorithm 1).

    Each new point is offered ``qbar`` copies. At step ``t + 1`` the scores of the current atoms and
    of the new point are estimated from the dictionary alone (Eq. 5, in a numerically stable
    compressed form): with ``D`` the atoms plus the new point, weights
    ``w_j = Q_j / (qbar p~_j)`` (old probabilities and copies) and ``w_new = 1``,

    ``tau~_j = (1 - eps) / w_j [A (A + alpha I)^{-1}]_jj``,  ``A = W^{1/2} K_DD W^{1/2}``.

    Probabilities follow ``p~_j <- min(tau~_j, p~_j)`` (``rule="min"``, the rule the analysis
    uses; a fresh point has previous probability 1) or the printed
    ``max(min(tau~_j, p~_j), p~_j / 2)`` (``rule="max"``). Copies shrink by binomial thinning
    ``Q_j <- Binomial(Q_j, p~_new / p~_old)``; the new point enters with
    ``Binomial(qbar, p~_new)`` copies. An atom with no copy left is dropped forever. Copies of an
    atom are merged into one column of weight ``Q_j / (qbar p~_j)`` (same ``K~``), so ``size`` is
    the number of distinct atoms and :attr:`n_copies` the paper's ``|I_t|``.

    Theorem 1 of the paper: with ``qbar = O(rho / eps^2 log(n / delta))``,
    ``rho = (1 + eps) / (1 - eps)``, w.p. ``1 - delta`` the dictionary is ``alpha``-accurate at
    every ``t`` and ``|I_t| = O(qbar d_eff(alpha)_t)`` (the paper writes ``gamma`` for the
    regularizer ``alpha`` and ``alpha`` for ``rho``). Cost: ``O(m^3)`` per step (one
    eigendecomposition of the ``(m + 1) x (m + 1)`` weighted Gram), ``O(m^2)`` memory; kernel
    values are only ever evaluated among the atoms and the new point.

    Parameters
    ----------
    kernel
        Kernel object.
    alpha
        Nyström / RLS regularizer ``> 0`` (the theory assumes ``alpha > 1``).
    eps
        Accuracy ``in (0, 1)``.
    qbar
        Copies offered to each new point (integer ``>= 1``).
    rule
        ``"min"`` (default) or ``"max"`` (the printed line 5, halving at most per step).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import SQUEAK, effective_dimension
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> sq = SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=20, seed=0)
    >>> _ = sq.update_many(X)
    >>> sq.size < 200
    True
    >>> bool(np.all(sq.probabilities <= 1.0))
    True
    """

    _parameter_constraints = {
        "kernel": [KERNEL],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "eps": [Interval(Real, 0, 1, closed="neither")],
        "qbar": [Interval(Integral, 1, 10**9)],  # copies are drawn as int64 binomials
        "rule": [Options({"min", "max"})],
        "seed": ["seed"],
    }

    #: Saved state (okoco.persistence): the atoms' Gram matrix, probabilities and copies.
    _saved_state = {"alpha": "number", "eps": "number", "qbar": "int[1,]", "rule": "str",
                    "seed": "int|none|rng", "_rng": "rng as rng",
                    "_K": "array(size, size) float64 as gram",
                    "_p": "array(size) float64 as probabilities",
                    "_Q": "array(size) int64 as copies", "last_scores": "array(*) float64",
                    "last_added": "bool"}

    def __init__(self, kernel, alpha: float = 2.0, eps: float = 0.5, qbar: int = 50,
                 rule: str = "min", seed=None):
        super().__init__(kernel, alpha=alpha, eps=eps, qbar=qbar, rule=rule, seed=seed)
        self._K = np.zeros((0, 0))
        self._p = np.zeros(0)
        self._Q = np.zeros(0, dtype=np.int64)
        self.last_scores = np.zeros(0)
        self.last_added = False

    @property
    def probabilities(self) -> np.ndarray:
        """Current ``p~_j`` of the atoms."""
        return self._p.copy()

    @property
    def copies(self) -> np.ndarray:
        """Current number of copies ``Q_j`` of the atoms."""
        return self._Q.copy()

    @property
    def n_copies(self) -> int:
        """``|I_t| = sum_j Q_j``, the multiset size used in Theorem 1."""
        return int(self._Q.sum())

    def estimate_scores(self, x) -> np.ndarray:
        """Eq. 5 estimates for the atoms and ``x`` (last entry), without changing anything."""
        return self._scores(self._features.encode(x)[0])[0]

    def _scores(self, vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        m = self.size
        k = self._kernel_column(vec)
        kxx = float(np.asarray(self.kernel.diag(vec[None, :]))[0])
        KD = np.empty((m + 1, m + 1))
        KD[:m, :m] = self._K
        KD[:m, m] = KD[m, :m] = k
        KD[m, m] = kxx
        w = np.empty(m + 1)
        w[:m] = self._weights[:m]
        w[m] = 1.0
        return self._estimate(KD, w), k, kxx

    def _estimate(self, KD: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Eq. 5, compressed: ``(1 - eps) / w_j [A (A + alpha I)^{-1}]_jj``, ``A = W^.5 K W^.5``."""
        sw = np.sqrt(w)
        s, V = np.linalg.eigh(sw[:, None] * KD * sw[None, :])
        s = np.clip(s, 0.0, None)
        hat = (V * V) @ (s / (s + self.alpha))
        return (1.0 - self.eps) * hat / w

    @all_one_thread
    def _update_vec(self, vec: np.ndarray, new: list) -> bool:
        """One point; whether at least one of its ``qbar`` copies was kept."""
        tau, k, kxx = self._scores(vec)
        self._commit(vec, new)
        m = self.size
        p_old = np.append(self._p, 1.0)
        p_new = np.minimum(tau, p_old)
        if self.rule == "max":
            p_new = np.maximum(p_new, p_old / 2.0)
        p_new = np.clip(p_new, 0.0, 1.0)
        ratio = np.clip(p_new[:m] / p_old[:m], 0.0, 1.0) if m else np.zeros(0)
        Q_old = self._rng.binomial(self._Q, ratio) if m else np.zeros(0, dtype=np.int64)
        Q_new = int(self._rng.binomial(self.qbar, p_new[m]))
        keep = Q_old > 0
        self._p, self._Q = p_new[:m][keep], Q_old[keep]
        self._K = self._K[np.ix_(keep, keep)]
        self._keep(keep)
        self._weights[: self.size] = self._Q / (self.qbar * self._p)
        added = Q_new > 0
        if added:
            mk = self.size
            K = np.empty((mk + 1, mk + 1))
            K[:mk, :mk] = self._K
            K[:mk, mk] = K[mk, :mk] = k[keep]
            K[mk, mk] = kxx
            self._K = K
            self._p = np.append(self._p, p_new[m])
            self._Q = np.append(self._Q, Q_new)
            self._store(self.n_seen, Q_new / (self.qbar * p_new[m]), vec)
        self.n_seen += 1
        self.last_scores, self.last_added = tau, added
        return added

    def merge(self, other: SQUEAK, seed=None) -> SQUEAK:
        """A dictionary for the union of two streams: this one's points, then ``other``'s.

        An **extension**, not from the papers: the SQUEAK paper only remarks that dictionaries
        built in parallel on disjoint data can be merged recursively. The merge is a Dict-Update
        whose new material is the other dictionary: with ``D`` the atoms of both and their
        current weights ``w_j = Q_j / (qbar p~_j)``, the scores of Eq. 5 (compressed form) are
        ``tau~_j = (1 - eps) / w_j [A (A + alpha I)^{-1}]_jj``, ``A = W^{1/2} K_DD W^{1/2}``;
        then ``p~_j <- min(tau~_j, p~_j)`` (or the ``"max"`` rule) and every atom is thinned,
        ``Q_j <- Binomial(Q_j, p~_new / p~_old)``. Sequential SQUEAK is the special case where
        ``other`` holds one fresh point with ``qbar`` copies at probability 1. No theorem covers
        the merge; ``tests/test_distributed.py`` checks the merged dictionary with the same
        two-sided (Psi-norm) accuracy test as the sequential one.

        Neither dictionary changes. Indices of ``other`` are shifted by ``self.n_seen`` (the
        union stream is this stream followed by the other), dict features are united (this
        dictionary's order first), and the result can go on with :meth:`update`. Cost: kernel
        values between the two atom sets and one ``(m_a + m_b)`` eigendecomposition.

        Parameters
        ----------
        other
            A SQUEAK dictionary with the same kernel, ``alpha``, ``eps``, ``qbar`` and ``rule``.
        seed
            Seed or ``numpy.random.Generator`` of the merged dictionary (the thinning and any
            later update).

        Returns
        -------
        SQUEAK
            The merged dictionary; :attr:`last_scores` holds the ``tau~`` of every input atom
            (this dictionary's first).

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.kernels import RBF
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> a = SQUEAK(RBF(gamma=0.5), alpha=2.0, qbar=20, seed=1); _ = a.update_many(X[:100])
        >>> b = SQUEAK(RBF(gamma=0.5), alpha=2.0, qbar=20, seed=2); _ = b.update_many(X[100:])
        >>> ab = a.merge(b, seed=3)
        >>> ab.n_seen, ab.size <= a.size + b.size
        (200, True)
        >>> bool(np.all(np.isin(ab.indices, np.r_[a.indices, b.indices + 100])))
        True
        """
        if not isinstance(other, SQUEAK):
            raise TypeError(f"can only merge with another SQUEAK, got {type(other).__name__}")
        for name in ("alpha", "eps", "qbar", "rule"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                raise ValueError(f"cannot merge SQUEAK dictionaries with different {name}: "
                                 f"{mine!r} and {theirs!r}")
        if type(self.kernel) is not type(other.kernel) or (
            type(self.kernel).__eq__ is not object.__eq__ and self.kernel != other.kernel
        ):
            raise ValueError(f"cannot merge SQUEAK dictionaries with different kernels: "
                             f"{self.kernel!r} and {other.kernel!r}")
        modes = {self._features.mode, other._features.mode} - {None}
        if len(modes) > 1:
            raise TypeError("cannot merge a dictionary fed arrays with one fed dicts")
        mode = modes.pop() if modes else None
        features = FeatureMap()
        features.mode = mode
        if mode == "dict":
            features.add(self._features.columns)
            features.add([n for n in other._features.columns if n not in features.columns])
        elif mode == "array":
            dims = {len(dct._features.columns) for dct in (self, other) if dct._features.mode}
            if len(dims) > 1:
                raise ValueError(f"cannot merge dictionaries over different numbers of "
                                 f"features: {sorted(dims)}")
            features.add(range(dims.pop()))
        d = features.width
        A = self._atoms.padded(d)
        B = np.zeros((other.size, d))
        if other.size and mode is not None:  # other's columns, placed by feature name
            B[:, [features.columns[n] for n in other._features.columns]] = \
                other._atoms.view()

        out = SQUEAK(self.kernel, alpha=self.alpha, eps=self.eps, qbar=self.qbar,
                     rule=self.rule, seed=seed)
        out._features = features
        out._atoms.add_columns(d)
        ma, mb = self.size, other.size
        m = ma + mb
        KD = np.empty((m, m))
        KD[:ma, :ma] = self._K
        KD[ma:, ma:] = other._K
        if ma and mb:
            cross = np.asarray(self.kernel(A, B))
            KD[:ma, ma:] = cross
            KD[ma:, :ma] = cross.T
        p_old = np.concatenate([self._p, other._p])
        Q_old = np.concatenate([self._Q, other._Q])
        tau = self._estimate(KD, Q_old / (self.qbar * p_old)) if m else np.zeros(0)
        p_new = np.minimum(tau, p_old)
        if self.rule == "max":
            p_new = np.maximum(p_new, p_old / 2.0)
        p_new = np.clip(p_new, 0.0, 1.0)
        Q_new = out._rng.binomial(Q_old, np.clip(p_new / p_old, 0.0, 1.0)) if m else Q_old
        keep = Q_new > 0
        out._K = KD[np.ix_(keep, keep)]
        out._p, out._Q = p_new[keep], Q_new[keep]
        indices = np.concatenate([self.indices, other.indices + self.n_seen])[keep]
        atoms = np.concatenate([A, B])[keep] if m else np.zeros((0, d))
        for j in range(int(keep.sum())):
            out._store(int(indices[j]), out._Q[j] / (self.qbar * out._p[j]), atoms[j])
        out.n_seen = self.n_seen + other.n_seen
        out.last_scores, out.last_added = tau, False
        return out
