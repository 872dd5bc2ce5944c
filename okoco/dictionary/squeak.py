"""SQUEAK, sequential RLS sampling (Calandriello et al. 2017, "Pack only the essentials")."""

from __future__ import annotations

import numpy as np

from okoco._blas import all_one_thread
from okoco.dictionary._base import Dictionary, _integer, _real

__all__ = ["SQUEAK"]


class SQUEAK(Dictionary):
    """SQUEAK (Algorithm 1 of seed 002): anytime ridge-leverage-score dictionary with shrinking.

    Each new point is offered ``qbar`` copies. At step ``t + 1`` the scores of the current atoms and
    of the new point are estimated from the dictionary alone (Eq. 5, in the stable compressed form
    of ``spec/ink-estimate-squeak.md`` §B.2): with ``D`` the atoms plus the new point, weights
    ``w_j = Q_j / (qbar p~_j)`` (old probabilities and copies) and ``w_new = 1``,

    ``tau~_j = (1 - eps) / w_j [A (A + gamma I)^{-1}]_jj``,  ``A = W^{1/2} K_DD W^{1/2}``.

    Probabilities follow ``p~_j <- min(tau~_j, p~_j)`` (``rule="min"``, the rule the analysis
    uses; a fresh point has previous probability 1) or the printed
    ``max(min(tau~_j, p~_j), p~_j / 2)`` (``rule="max"``). Copies shrink by binomial thinning
    ``Q_j <- Binomial(Q_j, p~_new / p~_old)``; the new point enters with
    ``Binomial(qbar, p~_new)`` copies. An atom with no copy left is dropped forever. Copies of an
    atom are merged into one column of weight ``Q_j / (qbar p~_j)`` (same ``K~``), so ``size`` is
    the number of distinct atoms and :attr:`n_copies` the paper's ``|I_t|``.

    Theorem 1 (seed 002): with ``qbar = O(alpha / eps^2 log(n / delta))``,
    ``alpha = (1 + eps) / (1 - eps)``, w.p. ``1 - delta`` the dictionary is ``gamma``-accurate at
    every ``t`` and ``|I_t| = O(qbar d_eff(gamma)_t)``. Cost: ``O(m^3)`` per step (one
    eigendecomposition of the ``(m + 1) x (m + 1)`` weighted Gram), ``O(m^2)`` memory; kernel
    values are only ever evaluated among the atoms and the new point.

    Parameters
    ----------
    kernel
        Kernel object.
    gamma
        Nyström / RLS regularizer ``> 0`` (the theory assumes ``gamma > 1``).
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
    >>> sq = SQUEAK(RBF(gamma=0.5), gamma=2.0, eps=0.5, qbar=20, seed=0)
    >>> _ = sq.update_many(X)
    >>> sq.size < 200
    True
    >>> bool(np.all(sq.probabilities <= 1.0))
    True
    """

    def __init__(
        self,
        kernel,
        gamma: float = 2.0,
        eps: float = 0.5,
        qbar: int = 50,
        rule: str = "min",
        seed=None,
    ):
        if kernel is None:
            raise TypeError("SQUEAK needs a kernel")
        super().__init__(kernel)
        self.gamma = _real("gamma", gamma, low=0.0, low_open=True)
        self.eps = _real("eps", eps, low=0.0, high=1.0, low_open=True, high_open=True)
        self.qbar = _integer("qbar", qbar)
        if rule not in ("min", "max"):
            raise ValueError(f"rule must be 'min' or 'max', got {rule!r}")
        self.rule = rule
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._K = np.zeros((0, 0))
        self._p = np.zeros(0)
        self._Q = np.zeros(0, dtype=np.int64)
        self.last_scores = np.zeros(0)
        self.last_added = False

    @property
    def _nystrom_gamma(self) -> float:  # type: ignore[override]
        return self.gamma

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
        vec, _ = self._vectorize(x)
        return self._scores(vec)[0]

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
        """Eq. 5, compressed: ``(1 - eps) / w_j [A (A + gamma I)^{-1}]_jj``, ``A = W^.5 K W^.5``."""
        sw = np.sqrt(w)
        s, V = np.linalg.eigh(sw[:, None] * KD * sw[None, :])
        s = np.clip(s, 0.0, None)
        hat = (V * V) @ (s / (s + self.gamma))
        return (1.0 - self.eps) * hat / w

    @all_one_thread
    def update(self, x) -> bool:
        """Process one point; return whether at least one of its ``qbar`` copies was kept."""
        vec, new = self._vectorize(x)
        tau, k, kxx = self._scores(vec)
        self._commit(x, vec, new)
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

        An **extension**, not from the papers: seed 002 only remarks that dictionaries built in
        parallel on disjoint data can be merged recursively (``spec/ink-estimate-squeak.md``,
        "Distributed variant"). The merge is a Dict-Update whose new material is the other
        dictionary: with ``D`` the atoms of both and their current weights
        ``w_j = Q_j / (qbar p~_j)``, the scores of Eq. 5 (compressed form) are
        ``tau~_j = (1 - eps) / w_j [A (A + gamma I)^{-1}]_jj``, ``A = W^{1/2} K_DD W^{1/2}``;
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
            A SQUEAK dictionary with the same kernel, ``gamma``, ``eps``, ``qbar`` and ``rule``.
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
        >>> a = SQUEAK(RBF(gamma=0.5), gamma=2.0, qbar=20, seed=1); _ = a.update_many(X[:100])
        >>> b = SQUEAK(RBF(gamma=0.5), gamma=2.0, qbar=20, seed=2); _ = b.update_many(X[100:])
        >>> ab = a.merge(b, seed=3)
        >>> ab.n_seen, ab.size <= a.size + b.size
        (200, True)
        >>> bool(np.all(np.isin(ab.indices, np.r_[a.indices, b.indices + 100])))
        True
        """
        if not isinstance(other, SQUEAK):
            raise TypeError(f"can only merge with another SQUEAK, got {type(other).__name__}")
        for name in ("gamma", "eps", "qbar", "rule"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                raise ValueError(f"cannot merge SQUEAK dictionaries with different {name}: "
                                 f"{mine!r} and {theirs!r}")
        if type(self.kernel) is not type(other.kernel) or (
            type(self.kernel).__eq__ is not object.__eq__ and self.kernel != other.kernel
        ):
            raise ValueError(f"cannot merge SQUEAK dictionaries with different kernels: "
                             f"{self.kernel!r} and {other.kernel!r}")
        modes = {self._mode, other._mode} - {None}
        if len(modes) > 1:
            raise TypeError("cannot merge a dictionary fed arrays with one fed dicts")
        mode = modes.pop() if modes else None
        A, B = self._atoms.view(), other._atoms.view()
        index: dict = {}
        if mode == "dict":
            index = dict(self._feature_index)
            for name in other._feature_index:
                index.setdefault(name, len(index))
            d = len(index)
            B_aligned = np.zeros((B.shape[0], d))
            B_aligned[:, [index[n] for n in other._feature_index]] = B
            A, B = self._padded(A, d), B_aligned
        elif mode == "array":
            dims = {dct._atoms.d for dct in (self, other) if dct._mode is not None}
            if len(dims) > 1:
                raise ValueError(f"cannot merge dictionaries over different numbers of "
                                 f"features: {sorted(dims)}")
            d = dims.pop()
            A, B = self._padded(A, d), self._padded(B, d)
        else:
            d = 0

        out = SQUEAK(self.kernel, gamma=self.gamma, eps=self.eps, qbar=self.qbar,
                     rule=self.rule, seed=seed)
        out._mode, out._feature_index = mode, index
        if mode is not None:
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
