"""INK-Estimate and Shrink-Expand (Calandriello, Lazaric & Valko 2016, "Analysis of Nyström
Method with Sequential Ridge Leverage Score Sampling", Algorithm 3 and Subroutine 2)."""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from okoco._blas import all_one_thread
from okoco._input import reserve
from okoco._validation import Interval
from okoco.dictionary._base import KERNEL, Dictionary
from okoco.linalg import Rows

__all__ = ["INKEstimate", "shrink_expand"]


def shrink_expand(b, p, qbar: float, rng: np.random.Generator) -> np.ndarray:
    """Shrink-Expand (Subroutine 2 of the INK-Estimate paper) for integer weights ``b`` and new
    probabilities ``p``.

    The printed loop ``while b p <= 1/qbar and b != 0: b <- b + 1 w.p. b/(b+1) else b <- 0`` (with
    the guard on the *updated* ``b``; the printed guard on the old weight never terminates after a
    failure) moves ``b`` to the smallest integer ``b' > 1 / (qbar p)`` with probability
    ``prod_{k=b}^{b'-1} k / (k + 1) = b / b'`` and to ``0`` otherwise. This function draws that
    outcome directly, one uniform per entry, so ``E[b_new] = b`` (a martingale). Entries with
    ``b p > 1/qbar`` are left unchanged; ``p = 0`` drops the entry.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import shrink_expand
    >>> rng = np.random.default_rng(0)
    >>> draws = np.array([shrink_expand([1], [0.05], 10.0, rng)[0] for _ in range(20000)])
    >>> sorted(set(draws.tolist()))          # target = smallest integer > 1 / (10 * 0.05) = 3
    [0, 3]
    >>> bool(abs(draws.mean() - 1.0) < 0.05)
    True
    """
    b = np.asarray(b, dtype=np.int64)
    p = np.asarray(p, dtype=float)
    out = b.copy()
    u = rng.random(b.shape[0])
    need = (b != 0) & (b * p * qbar <= 1.0)
    with np.errstate(divide="ignore"):
        thresh = np.where(p > 0, 1.0 / (qbar * np.where(p > 0, p, 1.0)), np.inf)
    idx = np.flatnonzero(need)
    if idx.size:
        dead = ~np.isfinite(thresh[idx])
        target = np.where(dead, 1.0, np.floor(np.where(dead, 0.0, thresh[idx])) + 1.0)
        target = np.maximum(target, b[idx] + 1)
        survive = ~dead & (u[idx] < b[idx] / target)
        out[idx] = np.where(survive, target, 0).astype(np.int64)
    return out


class INKEstimate(Dictionary):
    """INK-Estimate: sequential RLS sampling with estimated ``d_eff`` (Calandriello, Lazaric &
    Valko 2016, "Analysis of Nyström Method with Sequential Ridge Leverage Score Sampling",
    Algorithm 3).

    At step ``t + 1`` (``t`` points seen) the new point's full kernel column ``k-bar`` against all
    past points is formed, the current approximation ``K~_t = Z Z^T`` (``Z = K_t S L^{-T}``,
    ``L L^T = S^T K_t S + alpha I``, ``S = diag(sqrt(b))`` on the atoms) is never formed densely
    (its resolvents are applied by Woodbury through ``Z^T Z``), and

    * the scores of the atoms and of the new point follow Eq. 14,
      ``tau~_i = (k_ii - k_i^T (K-bar_{t+1} + a alpha I)^{-1} k_i) / (a alpha)`` with the exact
      full columns ``k_i`` and ``a = (2 - eps) / (1 - eps)``, by block inversion;
    * the effective dimension follows Eqs. 15-16,
      ``d~_{t+1} = d~_t + a Delta~_t``;
    * ``p~_i <- min(tau~_i / d~_{t+1}, p~_i)`` (a fresh point has ``p~ = 1``, weight ``b = 1``) and
      :func:`shrink_expand` updates the integer weights ``b`` (the paper's ``S`` has entries
      ``sqrt(b)``; :attr:`weights` returns ``b``).

    Guards (not in the paper): a negative ``Delta~_t`` (which happens when
    ``K~_t`` is inaccurate) is clamped to 0 and counted in :attr:`n_negative_increments`; if
    ``d~`` is not positive the probabilities are left unchanged (counted in
    :attr:`n_deff_guard`).

    Unlike SQUEAK, INK-Estimate needs the full kernel column of every new point, so it stores all
    past points: ``O(t qbar^2 + qbar^3)`` time and ``O(t qbar)`` memory per step (Thm. 2).
    ``qbar`` is the *total* column budget: ``E|I_t| <= qbar``.

    Parameters
    ----------
    kernel
        Kernel object.
    alpha
        Nyström / RLS regularizer ``> 0`` (theory: ``alpha > 1``; the paper's ``gamma``).
    eps
        Accuracy ``in (0, 1)``.
    qbar
        Column budget ``> 0``.
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import INKEstimate
    >>> ink = INKEstimate(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=200.0, seed=0)
    >>> _ = ink.update_many(np.random.default_rng(0).normal(size=(100, 2)))
    >>> 0 < ink.size <= 8 * 200, ink.deff_estimate > 0
    (True, True)
    """

    _parameter_constraints = {
        "kernel": [KERNEL],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "eps": [Interval(Real, 0, 1, closed="neither")],
        "qbar": [Interval(Real, 0, None, closed="neither")],
        "seed": ["seed"],
    }

    #: Saved state (okoco.persistence): the kernel columns of the atoms over every point seen.
    _saved_state = {"alpha": "number", "eps": "number", "qbar": "number", "seed": "int|none|rng",
                    "_rng": "rng as rng", "_history": "obj:Rows as history",
                    "_C": "array(>=history.n, >=size) float64 as kernel_columns",
                    "_p": "array(size) float64 as probabilities", "deff_estimate": "float",
                    "n_negative_increments": "int[0,]", "n_deff_guard": "int[0,]",
                    "last_scores": "array(*) float64", "last_added": "bool"}

    def __init__(self, kernel, alpha: float = 2.0, eps: float = 0.5, qbar: float = 100.0,
                 seed=None):
        super().__init__(kernel, alpha=alpha, eps=eps, qbar=qbar, seed=seed)
        self._history = Rows()
        self._C = np.zeros((16, 16))  # C[:t, j] = full kernel column of atom j over all t points
        self._p = np.zeros(0)
        self.deff_estimate = 0.0
        self.n_negative_increments = 0
        self.n_deff_guard = 0
        self.last_scores = np.zeros(0)
        self.last_added = False

    @property
    def ink_alpha(self) -> float:
        """``(2 - eps) / (1 - eps)``, the estimator's accuracy factor (Lemma 2)."""
        return (2.0 - self.eps) / (1.0 - self.eps)

    @property
    def probabilities(self) -> np.ndarray:
        """Current ``p~_i`` of the atoms."""
        return self._p.copy()

    def _commit(self, vec: np.ndarray, new: list) -> None:
        super()._commit(vec, new)
        self._history.add_columns(len(new))  # every past point, not only the atoms

    def _factor(self, t: int) -> np.ndarray:
        """``Z = K_t S L^{-T}`` with ``L L^T = S^T K_t S + alpha I``, so that ``K~_t = Z Z^T``."""
        m = self.size
        if m == 0 or t == 0:
            return np.zeros((t, 0))
        C = self._C[:t, :m]
        sb = np.sqrt(self._weights[:m])
        M = sb[:, None] * C[self._indices[:m], :] * sb[None, :]
        M = (M + M.T) / 2.0
        M[np.diag_indices(m)] += self.alpha
        L = cholesky(M, lower=True, check_finite=False)
        return solve_triangular(L, (C * sb[None, :]).T, lower=True, check_finite=False).T

    @staticmethod
    def _resolvent(Z: np.ndarray, ZtZ: np.ndarray, c: float):
        """``V -> (Z Z^T + c I)^{-1} V`` by Woodbury: ``(V - Z (Z^T Z + c I)^{-1} Z^T V) / c``."""
        G = ZtZ.copy()
        G[np.diag_indices_from(G)] += c
        F = cholesky(G, lower=True, check_finite=False) if G.size else G

        def apply(V: np.ndarray) -> np.ndarray:
            if Z.shape[1] == 0:
                return V / c
            W = solve_triangular(F, Z.T @ V, lower=True, check_finite=False)
            W = solve_triangular(F, W, lower=True, trans="T", check_finite=False)
            return (V - Z @ W) / c

        return apply

    @all_one_thread
    def _update_vec(self, vec: np.ndarray, new: list) -> bool:
        """One point; whether it survived Expand."""
        t = self.n_seen
        kbar = np.asarray(self._history.kernel_row(self.kernel, vec))
        kk = float(np.asarray(self.kernel.diag(vec[None, :]))[0])
        m = self.size
        a = self.ink_alpha
        ag = a * self.alpha
        Z = self._factor(t)
        ZtZ = Z.T @ Z
        G_ag = self._resolvent(Z, ZtZ, ag)
        # Eq. 14 by block inversion of (K-bar_{t+1} + a alpha I)
        V1 = np.empty((t, m + 1))
        V1[:, :m] = self._C[:t, :m]
        V1[:, m] = kbar
        v2 = np.append(kbar[self._indices[:m]], kk)
        GV1 = G_ag(V1)
        Gk = GV1[:, m]
        s = kk + ag - float(kbar @ Gk)
        cross = kbar @ GV1
        quad = np.einsum("ij,ij->j", V1, GV1) + (v2 - cross) ** 2 / s
        kii = np.append(V1[self._indices[:m], np.arange(m)], kk)
        tau = np.clip((kii - quad) / ag, 0.0, None)
        # Eqs. 15-16: d_eff increment
        g_kbar = self._resolvent(Z, ZtZ, self.alpha)(kbar)
        k_g2_k = float(g_kbar @ g_kbar)  # kbar^T (K~_t + alpha I)^{-2} kbar
        num = kk - float(kbar @ Gk) - (1.0 - self.eps) ** 2 / 4.0 * self.alpha * k_g2_k
        den = kk + self.alpha - float(kbar @ Gk)
        increment = num / den
        # ---- commit
        self._commit(vec, new)
        if increment < 0:
            self.n_negative_increments += 1
            increment = 0.0
        self.deff_estimate += a * increment
        p_old = np.append(self._p, 1.0)
        if self.deff_estimate > 0:
            p_new = np.minimum(tau / self.deff_estimate, p_old)
        else:
            self.n_deff_guard += 1
            p_new = p_old
        b_old = np.append(self._weights[:m].astype(np.int64), 1)
        b_new = shrink_expand(b_old, p_new, self.qbar, self._rng)
        # new row of the stored columns, then drop / add columns
        self._C = reserve(self._C, t + 1, m + 1)
        self._C[t, :m] = kbar[self._indices[:m]]
        keep = b_new[:m] > 0
        kept = int(keep.sum())
        self._C[: t + 1, :kept] = self._C[: t + 1, :m][:, keep]
        self._keep(keep)
        self._weights[:kept] = b_new[:m][keep]
        self._p = p_new[:m][keep]
        added = bool(b_new[m] > 0)
        if added:
            self._C[:t, kept] = kbar
            self._C[t, kept] = kk
            self._p = np.append(self._p, p_new[m])
            self._store(t, float(b_new[m]), vec)
        self._history.append(vec)
        self.n_seen += 1
        self.last_scores, self.last_added = tau, added
        return added
