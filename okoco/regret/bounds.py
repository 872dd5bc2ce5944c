r"""Regret bounds of KONS and Sketched-KONS as computable curves (Calandriello, Lazaric & Valko
2017, "Second-Order Kernel Online Convex Optimization with Adaptive Sketching").

All bounds use the effective dimension of the **raw** kernel matrix
:math:`d_{\rm eff}^T(\lambda) = \mathrm{Tr}(K_T(K_T + \lambda I)^{-1})` and
assume a normalised kernel (:math:`k(x, x) = 1`), as the paper does.

Corrections relative to the printed statements (found by re-deriving the proofs):

- Theorem 1, exp-concave case: the proof yields :math:`\log(2\sigma L^2 T/\alpha)`; the printed
  :math:`\log(2\sigma L^2 T)` agrees only for :math:`\alpha \ge 1`. We use the proof's form.
- Theorem 1, :math:`\sigma = 0` with :math:`\eta_t = 1/(LC\sqrt t)`: the printed bound assumes
  :math:`\eta_1 = 1`. We evaluate the general statement
  :math:`\alpha\lVert w\rVert^2 + \bar d_{\rm onl}/\eta_T + 4C^2L^2\sum_t\eta_t` with Lemma 3,
  :math:`\bar d_{\rm eff}(\alpha) \le d_{\rm eff}(\alpha/(L^2\eta_1)) = d_{\rm eff}(\alpha C/L)`
  and :math:`\lVert\bar K_T\rVert \le L^2\sum_t\eta_t \le 2L\sqrt T/C`.
- Theorem 3: the sampling floor is :math:`\tilde p_{\min} \ge \max\{p_{\min}, \min(1,
  \beta\bar\tau_{\min})\}`, and the proof's :math:`R_G` bound carries a :math:`1/(1-\varepsilon)`
  that the printed Eq. 5 drops (pass ``eps`` to include it).

Examples
--------
>>> import numpy as np
>>> from okoco.regret import bounds
>>> bounds.effective_dimension(np.eye(3), alpha=1.0)  # 3 orthogonal unit points: 3/(1+1)
1.5
>>> round(bounds.theorem1_exp_concave(T=100, d_eff=2.0, alpha=1.0, sigma=0.125, L=4.0), 2)
191.7
"""

from __future__ import annotations

import math

import numpy as np

from okoco.dictionary import effective_dimension

__all__ = [
    "effective_dimension",
    "theorem1_exp_concave",
    "theorem1_sqrt",
    "theorem3",
    "kons_bound",
    "regret_inequality_terms",
]


def theorem1_exp_concave(T: int, d_eff: float, *, alpha: float, sigma: float, L: float,
                         w_norm2: float = 0.0) -> float:
    r"""KONS, :math:`\eta_t = \sigma > 0`: :math:`\alpha\lVert w\rVert^2 + 2\,d_{\rm eff}^T
    (\alpha/(\sigma L^2))\log(2\sigma L^2T/\alpha)/\sigma` (Theorem 1, proof's log argument).

    ``d_eff`` must be :math:`d_{\rm eff}^T(\alpha/(\sigma L^2))` of the raw kernel.

    Examples
    --------
    >>> import math
    >>> from okoco.regret.bounds import theorem1_exp_concave
    >>> b = theorem1_exp_concave(T=1000, d_eff=5.0, alpha=1.0, sigma=0.125, L=4.0)
    >>> math.isclose(b, 2 * 5.0 * math.log(4 * 1000) / 0.125)  # sigma L^2 = 2
    True
    """
    if not (sigma > 0 and L > 0 and alpha > 0):
        raise ValueError("sigma, L and alpha must be > 0")
    return alpha * w_norm2 + 2.0 * d_eff * math.log(2.0 * sigma * L**2 * T / alpha) / sigma


def theorem1_sqrt(T: int, d_eff: float, *, alpha: float, L: float, C: float,
                  w_norm2: float = 0.0) -> float:
    r"""KONS, :math:`\sigma = 0`, :math:`\eta_t = 1/(LC\sqrt t)` (Theorem 1, general form).

    .. math:: \alpha\lVert w\rVert^2 + LC\sqrt T\, d_{\rm eff}(\alpha C/L)
              \bigl(1 + \log(2L\sqrt T/(C\alpha) + 1)\bigr) + 8CL\sqrt T

    ``d_eff`` must be :math:`d_{\rm eff}^T(\alpha C/L)` of the raw kernel. This is the
    statement the printed :math:`4LC\sqrt T d_{\rm eff}(\alpha/L^2)\log(2L^2T)` simplifies
    under :math:`\eta_1 = 1`; it is evaluated without that assumption.

    Examples
    --------
    >>> from okoco.regret.bounds import theorem1_sqrt
    >>> b100 = theorem1_sqrt(T=100, d_eff=5.0, alpha=1.0, L=2.0, C=1.0)
    >>> b400 = theorem1_sqrt(T=400, d_eff=5.0, alpha=1.0, L=2.0, C=1.0)
    >>> 2.0 < b400 / b100 < 3.0  # about sqrt(T), times a log
    True
    """
    if not (L > 0 and C > 0 and alpha > 0):
        raise ValueError("L, C and alpha must be > 0")
    sq = math.sqrt(T)
    r_g = L * C * sq * d_eff * (1.0 + math.log(2.0 * L * sq / (C * alpha) + 1.0))
    return alpha * w_norm2 + r_g + 8.0 * C * L * sq


def theorem3(T: int, d_eff: float, *, alpha: float, sigma: float, L: float, beta: float,
             p_min: float, tau_min: float, eps: float = 0.0, w_norm2: float = 0.0) -> float:
    r"""Sketched-KONS (Theorem 3): the Theorem 1 term divided by
    :math:`(1-\varepsilon)\max\{p_{\min}, \min(1, \beta\bar\tau_{\min})\}`, where
    ``p_min`` is the sampling-probability floor (the paper's :math:`\gamma`).

    Holds with probability :math:`1-\delta` when
    :math:`\beta \ge 3\log(4T^2/\delta)/\varepsilon^2` (the proof's condition; the printed
    :math:`3\log(T/\delta)/\varepsilon^2` is too small); ``tau_min`` is
    :math:`\min_t \bar\tau_{t,t}` (exact rescaled ridge leverage scores).

    Examples
    --------
    >>> from okoco.regret.bounds import theorem1_exp_concave, theorem3
    >>> args = dict(T=1000, d_eff=5.0, alpha=1.0, sigma=0.125, L=4.0)
    >>> theorem3(**args, beta=1.0, p_min=0.1, tau_min=0.01) / theorem1_exp_concave(**args)
    10.0
    """
    floor = max(p_min, min(1.0, beta * tau_min))
    if not floor > 0:
        raise ValueError("max(p_min, beta * tau_min) must be > 0")
    if not 0 <= eps < 1:
        raise ValueError(f"eps must be in [0, 1), got {eps!r}")
    term = theorem1_exp_concave(T, d_eff, alpha=alpha, sigma=sigma, L=L)
    return alpha * w_norm2 + term / ((1.0 - eps) * floor)


def kons_bound(K, *, loss, C: float, alpha: float, eta="exp-concave", y_max=None,
               w_norm2: float = 0.0, beta=None, p_min: float = 0.0, tau_min=None,
               eps: float = 0.0) -> float:
    r"""The regret bound at :math:`T = ` ``len(K)`` from the raw kernel matrix ``K``.

    ``eta="exp-concave"`` gives Theorem 1 with :math:`\sigma =` ``loss.curvature(C, y_max)``,
    :math:`L =` ``loss.lipschitz(C, y_max)``; ``eta="sqrt"`` the :math:`\sigma = 0` case; passing
    ``beta`` and ``tau_min`` gives Theorem 3 (Sketched-KONS, exp-concave step).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import losses
    >>> from okoco.regret.bounds import kons_bound
    >>> b = kons_bound(np.eye(10), loss=losses.Squared(), C=1.0, alpha=1.0)
    >>> round(b, 1)  # sigma L^2 = 2: 2 * 10/(1 + 1/2) * log(40) / (1/8)
    393.5
    """
    K = np.asarray(K, dtype=float)
    T = K.shape[0]
    L = loss.lipschitz(C, y_max)
    if eta == "sqrt":
        return theorem1_sqrt(T, effective_dimension(K, alpha * C / L), alpha=alpha, L=L, C=C,
                             w_norm2=w_norm2)
    if eta != "exp-concave":
        raise ValueError(f"eta must be 'exp-concave' or 'sqrt', got {eta!r}")
    sigma = loss.curvature(C, y_max)
    d = effective_dimension(K, alpha / (sigma * L**2))
    if beta is not None or tau_min is not None:
        if beta is None or tau_min is None:
            raise ValueError("Theorem 3 needs both beta and tau_min")
        return theorem3(T, d, alpha=alpha, sigma=sigma, L=L, beta=beta, p_min=p_min,
                        tau_min=tau_min, eps=eps, w_norm2=w_norm2)
    return theorem1_exp_concave(T, d, alpha=alpha, sigma=sigma, L=L, w_norm2=w_norm2)


def regret_inequality_terms(K, y, y_hat, f, *, loss, eta, sigma, alpha: float,
                            w_norm2: float) -> dict:
    r"""Both sides of the deterministic regret inequality of the proof of Theorem 1.

    .. math:: 2R_T(w) \le \alpha\lVert w\rVert^2 + \underbrace{\sum_t\bar\tau_{t,t}/\eta_t}_{R_G}
              + \underbrace{\sum_t(\eta_t - \sigma_t)\dot g_t^2(\hat y_t - f_t)^2}_{R_D}

    for any comparator :math:`w \in \mathcal S` with values ``f`` on the stream and
    :math:`\lVert w\rVert^2 =` ``w_norm2``, where :math:`\dot g_t = \ell'(y_t, \hat y_t)`.
    :math:`\bar\tau_{t,t}` are the online ridge leverage scores of
    :math:`\bar K = DKD` (:math:`D = \mathrm{Diag}(\dot g_t\sqrt{\eta_t})`), computed here
    independently of any learner from a Cholesky factor of :math:`\bar K + \alpha I`:
    the :math:`t`-th pivot is :math:`\alpha + d_t^2 s_t`, so :math:`\bar\tau_{t,t} = 1 -
    \alpha/L_{tt}^2`. (Exact KONS only; the Sketched-KONS variant is not implemented.)

    Returns a dict with ``lhs`` (:math:`2R_T(w)`), ``regret``, ``norm_term``, ``R_G``, ``R_D``
    and ``rhs``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import losses
    >>> from okoco.regret.bounds import regret_inequality_terms
    >>> r = regret_inequality_terms(np.eye(2), [1.0, -1.0], [0.0, 0.0], [0.0, 0.0],
    ...                             loss=losses.Squared(), eta=0.125, sigma=0.125, alpha=1.0,
    ...                             w_norm2=0.0)
    >>> r["lhs"] <= r["rhs"]
    True
    """
    K = np.asarray(K, dtype=float)
    y = np.asarray(y, dtype=float)
    y_hat = np.asarray(y_hat, dtype=float)
    f = np.asarray(f, dtype=float)
    T = len(y)
    eta = np.broadcast_to(np.asarray(eta, dtype=float), (T,))
    sigma = np.broadcast_to(np.asarray(sigma, dtype=float), (T,))
    g = loss.derivative(y, y_hat)
    d = g * np.sqrt(eta)
    piv = np.diag(np.linalg.cholesky(d[:, None] * K * d[None, :] + alpha * np.eye(T))) ** 2
    R_G = float(np.sum((1.0 - alpha / piv) / eta))
    R_D = float(np.sum((eta - sigma) * g**2 * (y_hat - f) ** 2))
    regret = float(np.sum(loss.value(y, y_hat)) - np.sum(loss.value(y, f)))
    norm_term = alpha * float(w_norm2)
    return {"lhs": 2.0 * regret, "regret": regret, "norm_term": norm_term, "R_G": R_G,
            "R_D": R_D, "rhs": norm_term + R_G + R_D}
