"""Exact ridge leverage scores and effective dimensions, and seed 003's fast approximate scores.

Conventions: ``alpha`` is the ridge *added to the kernel matrix*, ``K + alpha I``. Calandriello
et al. (KONS, SQUEAK, INK-Estimate) write ``alpha`` or ``gamma`` for it; El Alaoui & Mahoney
(seed 003) write ``K + n lambda I``, i.e. ``alpha = n * lambda``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cholesky

from okoco.dictionary._base import _check_kernel, _integer, _real

__all__ = [
    "ridge_leverage_scores",
    "effective_dimension",
    "max_degrees_of_freedom",
    "online_ridge_leverage_scores",
    "online_effective_dimension",
    "log_det",
    "approximate_ridge_leverage_scores",
]


def _square(K) -> np.ndarray:
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square matrix, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("K contains non-finite values")
    return K


def _alpha(alpha) -> float:
    return _real("alpha", alpha, low=0.0, low_open=True)


def _spectrum(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, U = np.linalg.eigh((K + K.T) / 2.0)
    return np.clip(s, 0.0, None), U


def ridge_leverage_scores(K, alpha: float) -> np.ndarray:
    """Ridge leverage scores ``tau_i(alpha) = [K (K + alpha I)^{-1}]_ii``.

    Computed from the eigendecomposition ``K = U diag(s) U^T`` as
    ``tau_i = sum_j s_j / (s_j + alpha) U_ij^2`` (El Alaoui & Mahoney 2015, Def. 1; Calandriello
    et al. 2017, Eq. 2), which has no cancellation for small scores. ``O(n^3)``.

    Parameters
    ----------
    K
        Symmetric PSD kernel matrix ``(n, n)``.
    alpha
        Ridge ``> 0`` added to ``K`` (``n * lambda`` in seed 003's notation).

    Returns
    -------
    numpy.ndarray
        Scores in ``[0, 1)``; they sum to :func:`effective_dimension`.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import ridge_leverage_scores
    >>> ridge_leverage_scores(np.eye(3), alpha=1.0)  # orthogonal unit points: 1 / (1 + alpha)
    array([0.5, 0.5, 0.5])
    >>> np.round(ridge_leverage_scores(np.ones((4, 4)), alpha=1.0), 6)  # 4 copies: 1/(4 + alpha)
    array([0.2, 0.2, 0.2, 0.2])
    """
    K = _square(K)
    alpha = _alpha(alpha)
    s, U = _spectrum(K)
    return (U * U) @ (s / (s + alpha))


def effective_dimension(K, alpha: float) -> float:
    """Effective dimension ``d_eff(alpha) = Tr(K (K + alpha I)^{-1}) = sum_j s_j / (s_j + alpha)``.

    Calandriello et al. 2017, Eq. 3; El Alaoui & Mahoney 2015, Sect. 2. At most ``rank(K)`` and
    decreasing in ``alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import effective_dimension
    >>> effective_dimension(np.diag([3.0, 1.0, 0.0]), alpha=1.0)
    1.25
    """
    K = _square(K)
    alpha = _alpha(alpha)
    s = np.clip(np.linalg.eigvalsh((K + K.T) / 2.0), 0.0, None)
    return float(np.sum(s / (s + alpha)))


def max_degrees_of_freedom(K, alpha: float) -> float:
    """Maximal degrees of freedom ``d_mof(alpha) = n max_i tau_i(alpha)`` (El Alaoui & Mahoney).

    ``d_mof >= d_eff``, with equality iff all scores are equal; uniform Nyström sampling needs
    ``O(d_mof)`` columns where leverage sampling needs ``O(d_eff)``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import max_degrees_of_freedom
    >>> max_degrees_of_freedom(np.diag([3.0, 1.0, 0.0]), alpha=1.0)
    2.25
    """
    tau = ridge_leverage_scores(K, alpha)
    return float(tau.shape[0] * tau.max()) if tau.size else 0.0


def _online_pivots(K: np.ndarray, alpha: float) -> np.ndarray:
    """Squared Cholesky pivots of ``K + alpha I``: ``alpha (1 + q_t)``, ``q_t`` as in KONS §3."""
    n = K.shape[0]
    A = (K + K.T) / 2.0 + alpha * np.eye(n)
    try:
        L = cholesky(A, lower=True, check_finite=False)
        return np.diag(L) ** 2
    except LinAlgError:  # pragma: no cover - K + alpha I is PD; only round-off can land here
        s, U = _spectrum(K)
        L = np.linalg.cholesky(U @ np.diag(s + alpha) @ U.T)
        return np.diag(L) ** 2


def online_ridge_leverage_scores(K, alpha: float) -> np.ndarray:
    """Online scores ``tau_{t,t}``: the score of point ``t`` among points ``1..t`` only.

    ``tau_{t,t} = [K_t (K_t + alpha I)^{-1}]_{tt} = q_t / (1 + q_t)`` with
    ``q_t = (k_tt - k^T (K_{t-1} + alpha I)^{-1} k) / alpha`` (Calandriello et al. 2017, Sect. 5).
    The squared pivot of the ``t``-th row of the Cholesky factor of ``K + alpha I`` is exactly
    ``alpha (1 + q_t)``, so all ``n`` scores come from one ``O(n^3 / 3)`` factorization.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import online_ridge_leverage_scores
    >>> np.round(online_ridge_leverage_scores(np.ones((3, 3)), alpha=1.0), 6)  # 1/(t + alpha)
    array([0.5     , 0.333333, 0.25    ])
    """
    K = _square(K)
    alpha = _alpha(alpha)
    return 1.0 - alpha / _online_pivots(K, alpha)


def online_effective_dimension(K, alpha: float) -> float:
    """Online effective dimension ``d_onl(alpha) = sum_t tau_{t,t}`` (Calandriello et al. 2017).

    Lemma 3 of that paper:
    ``d_onl <= log det(K / alpha + I) <= d_eff (1 + log(||K|| / alpha + 1))``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import online_effective_dimension
    >>> round(online_effective_dimension(np.eye(4), alpha=1.0), 6)
    2.0
    """
    return float(np.sum(online_ridge_leverage_scores(K, alpha)))


def log_det(K, alpha: float) -> float:
    """``log det(K / alpha + I) = sum_t log(1 + q_t)`` from one Cholesky factorization.

    The GP information gain; bounds the online effective dimension (KONS Lemma 3).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.dictionary import log_det
    >>> bool(np.isclose(log_det(np.diag([1.0, 3.0]), alpha=1.0), np.log(2.0 * 4.0)))
    True
    """
    K = _square(K)
    alpha = _alpha(alpha)
    return float(np.sum(np.log(_online_pivots(K, alpha) / alpha)))


def approximate_ridge_leverage_scores(
    X,
    kernel,
    alpha: float,
    n_columns: int,
    *,
    probabilities=None,
    seed=None,
    return_indices: bool = False,
):
    """Fast approximate ridge leverage scores (El Alaoui & Mahoney 2015, Sect. 3.5, Eq. 9).

    Samples ``p = n_columns`` columns i.i.d. with replacement (default: squared-length
    probabilities ``K_ii / Tr K``, uniform for stationary kernels), builds ``B`` with
    ``B B^T = L = C W^+ C^T`` from the sampled columns ``C`` and their overlap ``W``, and returns
    ``l~_i = B_i^T (B^T B + alpha I)^{-1} B_i``, which are exactly the ridge leverage scores of
    the Nyström matrix ``L`` (App. D). ``L <= K`` makes ``l~_i <= tau_i(alpha)`` for every draw.
    Only the ``n x |unique columns|`` kernel block is evaluated: ``O(n p^2 + p^3)`` time and
    ``O(n p)`` memory.

    Parameters
    ----------
    X
        Data ``(n, d)``.
    kernel
        Kernel object (``kernel(X, Y)``, ``kernel.diag(X)``).
    alpha
        Ridge ``> 0`` (``n * lambda`` in the paper's notation).
    n_columns
        Number of sampled columns ``p``.
    probabilities
        Sampling distribution over the ``n`` points (default squared-length).
    seed
        Seed or ``numpy.random.Generator``.
    return_indices
        Also return the distinct sampled column indices.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        The ``n`` approximate scores (and the sampled indices).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import approximate_ridge_leverage_scores, ridge_leverage_scores
    >>> X = np.random.default_rng(0).normal(size=(200, 2)); k = RBF(gamma=0.5)
    >>> approx = approximate_ridge_leverage_scores(X, k, alpha=1.0, n_columns=60, seed=0)
    >>> bool(np.all(approx <= ridge_leverage_scores(k(X, X), alpha=1.0) + 1e-10))
    True
    """
    _check_kernel(kernel)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n = X.shape[0]
    alpha = _alpha(alpha)
    n_columns = _integer("n_columns", n_columns)
    if probabilities is None:
        diag = np.asarray(kernel.diag(X), dtype=float)
        probabilities = diag / diag.sum()
    else:
        probabilities = np.asarray(probabilities, dtype=float)
        if probabilities.shape != (n,) or np.any(probabilities < 0) or probabilities.sum() <= 0:
            raise ValueError("probabilities must be n non-negative numbers with a positive sum")
        probabilities = probabilities / probabilities.sum()
    rng = np.random.default_rng(seed)
    J = np.unique(rng.choice(n, size=n_columns, replace=True, p=probabilities))
    C = np.asarray(kernel(X, X[J]), dtype=float)
    W = C[J]
    e, V = np.linalg.eigh((W + W.T) / 2.0)
    keep = e > 1e-12 * e.max()
    B = C @ (V[:, keep] / np.sqrt(e[keep]))
    M = B.T @ B + alpha * np.eye(B.shape[1])
    scores = np.einsum("ij,ji->i", B, np.linalg.solve(M, B.T))
    return (scores, J) if return_indices else scores
