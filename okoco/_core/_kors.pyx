"""KORS's score in its Cholesky form (``kors_score``) and its step in its inverse form
(``inverse_step``: okoco.dictionary.KORS, Sketched-KONS's window), compiled; Eq. 4's
probability itself is ``_leverage.kors_probability``.

KORS keeps ``S K_II S + alpha I`` by its inverse over slots (okoco.linalg.SlotInverse) when its
atoms leave in a window; a step scores the new point by Eq. 4 of Calandriello, Lazaric & Valko
(2017) against it and, if the coin keeps the point, borders the inverse (a pending term of
``SlotInverse``). The dictionary's bookkeeping (indices, weights, slots) stays in Python.
"""

import numpy as np

from libc.math cimport sqrt
from libc.string cimport memcpy

from okoco._core._leverage cimport kors_probability
from okoco._core._linalg cimport dot, tp_half_solve
from okoco._core._slots cimport append_to, solve_into


def inverse_step(window, const Py_ssize_t[::1] slots, const double[::1] weights,
                 const double[::1] k_col, double k_diag, double u, tuple score):
    """Score the point whose kernel column against the atoms (storage order) is ``k_col``
    and diagonal ``k_diag``: ``v = S k_col`` over the atoms' ``slots`` (``S`` the square roots
    of their ``weights``) in the inverse ``window`` (``okoco.linalg.SlotInverse``),
    ``h = P v``, the residual ``q = max(k_diag - v.h, 0) / alpha``,
    ``tau = (1 + eps) q / (1 + q)`` and ``p = max(min(beta tau, 1), p_min)``
    (``score = (alpha, eps, beta, p_min)``, ``_leverage.kors_probability``); the coin is
    ``u < p`` (``u`` uniform in [0, 1), drawn by the caller). If it keeps the point, the
    inverse is bordered with it at the lowest free slot (``SlotInverse.make_room`` first).

    Returns ``(added, q, tau, p, slot)`` (``slot`` -1 if not added)."""
    cdef Py_ssize_t m = k_col.shape[0], n = 0, j, slot = -1
    cdef double alpha, eps, beta, p_min
    cdef double hv = 0.0, q, tau, p, scale, diagonal
    alpha, eps, beta, p_min = score
    for j in range(m):
        if slots[j] + 1 > n:
            n = slots[j] + 1
    window.make_room(n + 1)  # (the new atom's slot is at most n)
    work = np.zeros(4 * n + 2)
    cdef double[::1] w = work  # v, h, then the solve's workspace (2 n)
    if m:
        for j in range(m):
            w[slots[j]] = sqrt(weights[j]) * k_col[j]
        solve_into(window, &w[0], &w[n], n, &w[2 * n])
        hv = dot(<int>n, &w[n], &w[0])
    p = kors_probability(k_diag, hv, alpha, eps, beta, p_min, &q, &tau)
    if not u < p:
        return False, q, tau, p, -1
    free = np.ones(n + 1, dtype=bool)
    free[np.asarray(slots[:m])] = False
    slot = int(np.argmax(free))  # the lowest free slot
    scale = 1.0 / sqrt(p)  # the new atom's weight is 1 / p
    diagonal = k_diag / p + alpha
    for j in range(n):
        w[n + j] *= scale  # scale h
        w[j] *= scale      # scale v
    append_to(window, slot, &w[n], n, diagonal - scale * scale * hv, &w[0], diagonal,
              n if n > slot + 1 else slot + 1)
    return True, q, tau, p, slot


def kors_score(const double[::1] weights, const double[::1] k_col, const double[::1] L,
               double k_diag, double alpha, double eps, double beta, double p_min,
               double[::1] a, double[::1] h):
    """KORS's estimate of a point (Calandriello et al. 2017, Eq. 4) against ``m = len(k_col)``
    atoms: ``a = sqrt(w) * k_col``, ``h = L^{-1} a`` (into ``a`` and ``h``) and Eq. 4's
    probability from the explained part ``h.h`` (``_leverage.kors_probability``). Returns
    ``(q, tau, p)``."""
    cdef Py_ssize_t m = k_col.shape[0], j
    cdef double q, tau, p
    with nogil:
        for j in range(m):
            a[j] = sqrt(weights[j]) * k_col[j]
        if m:
            memcpy(&h[0], &a[0], m * sizeof(double))
            tp_half_solve(&L[0], <int>m, &h[0])
        p = kors_probability(k_diag, dot(<int>m, &h[0] if m else NULL, &h[0] if m else NULL),
                             alpha, eps, beta, p_min, &q, &tau)
    return q, tau, p
