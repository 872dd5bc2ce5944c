"""PROS-N-KONS / CON-KONS's step and its loop over the rows of an array (okoco.learners.pros).

Its own module so that it builds and changes apart from the other learners' steps
(``_steps``); the kernels and losses it shares with them come from ``_kernels.pxd`` and
``_losses.pxd``.
"""

import numpy as np

from libc.math cimport fabs, isfinite, log1p, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from okoco._core._kernels cimport Kernel, kernel_exp, kernel_row, make_kernel, self_similarity
from okoco._core._leverage cimport kors_probability
from okoco._core._losses cimport clip_excess, derivative, second_derivative
from okoco._core._linalg cimport dot, sym_matvec, sym_rank_one, tp_half_solve

# the row at which pros_run stopped: OK at the end, else it needs the Python step, or the
# coins drawn for it ran out
cdef enum:
    OK = 0
    PYTHON_STEP = 2
    NEED_COINS = 3

#: pros_run's status when its coins ran out (draw more and call again)
STATUS_NEED_COINS = NEED_COINS

# s = z^T A^{-1} z is floored before it divides the projection (a zero embedding never
# projects); a point whose residual k(x, x) - h.h is below SPAN_TOL k(x, x) lies in the span of
# the dictionary to working precision and is not offered to KORS. Their one home: the Python
# steps (okoco.learners.ons, okoco.learners.embedding) read them from here.
cdef double MIN_S = 1e-300
cdef double SPAN_TOL = 1e-10
PROJECTION_FLOOR, SPAN_TOLERANCE = MIN_S, SPAN_TOL

def pros_run(tuple kernel, const double[:, ::1] data, const double[::1] sq, Py_ssize_t m,
             const double[::1] L, double[::1] u, double[::1] P, bint dense,
             const double[::1] kors_weights, const double[::1] kors_L, double kors_alpha,
             double eps, double beta, double p_min, const double[::1] coins,
             double alpha, double C, int loss, bint hessian, const double[::1] eta,
             Py_ssize_t max_size, double oed, double log_det, double noise_sum, int d_atoms,
             const double[:, ::1] V, const double[::1] y, Py_ssize_t begin,
             double[::1] predictions):
    """PROS-N-KONS / CON-KONS's test-then-train over rows ``begin ..`` of ``V``
    (okoco.learners.pros) while the dictionary does not change: the kernel row against the
    ``m`` atoms, ``h = L^{-1} k``, the clipped prediction into ``predictions``, the KORS score
    and its coin (``coins``, uniforms drawn beforehand from KORS's generator), the a-priori
    error over the predictive spread added to ``noise_sum`` (the learner's noise scale), the
    oblique projection, the Sherman-Morrison update of ``A^{-1}`` (``P``, packed unless
    ``dense``) and the ONS step on ``u``. ``eta`` is ignored with ``hessian`` (the weight is
    ``loss''``); ``max_size`` 0 means none. The atoms are the first ``d_atoms`` columns of
    ``data``; the rows of ``V`` may be wider (their other features are 0 in the atoms).

    Stops before a row that needs the Python step: a point whose coin lands (it joins: the
    factors and buffers grow), a value that is not finite (the Python step words the error),
    or no coin left. Returns ``(row, status, coins used, KORS points seen, last q, last tau,
    last p, online effective dimension, log det, noise sum)`` (``oed``, ``log_det`` and
    ``noise_sum`` are the values before the first row, summed in row order as the Python
    step does); the coins used are those of the rows learned.
    """
    cdef Kernel k = make_kernel(kernel)
    cdef Py_ssize_t ld = data.shape[1], t = begin, rows = V.shape[0], i, used = 0, n_coins
    cdef Py_ssize_t kors_seen = 0
    cdef int d = <int>V.shape[1], status = OK
    cdef double kappa, ybar, excess, yhat, gdot, weight, s, residual, q, tau, p, c, top, big
    cdef double last_q = float("nan"), last_tau = float("nan")
    cdef double last_p = float("nan")
    n_coins = coins.shape[0]
    g_buffer = np.empty(m + 1)
    cdef double[::1] g_view = g_buffer
    cdef double* g = &g_view[0]
    cdef double* work = <double*>malloc((3 * m + 1) * sizeof(double))
    cdef double* h = work
    cdef double* Pz = work + m
    cdef double* a = work + 2 * m
    cdef const double* X = &data[0, 0] if data.shape[0] else NULL
    cdef const double* sq_p = &sq[0] if m else NULL
    if work == NULL:
        raise MemoryError()
    with nogil:
        while t < rows:
            if kernel_row(&k, X, ld, m, d_atoms, sq_p, &V[t, 0], d, g):
                with gil:
                    kernel_exp(g_buffer, g, m)
            kappa = self_similarity(&k, &V[t, 0], d)
            if not isfinite(kappa):
                status = PYTHON_STEP
                break
            for i in range(m):
                if not isfinite(g[i]):
                    status = PYTHON_STEP
                    break
            if status:
                break
            if m:
                memcpy(h, g, m * sizeof(double))
                tp_half_solve(&L[0], <int>m, h)
            ybar = dot(<int>m, h, &u[0])
            excess = clip_excess(ybar, C)
            yhat = ybar - excess
            gdot = derivative(loss, y[t], yhat)
            weight = second_derivative(loss, y[t], yhat) if hessian else eta[t] * gdot * gdot
            if m:
                sym_matvec(&P[0], <int>m, dense, h, Pz)
            s = dot(<int>m, h, Pz)
            s = s if s > 0.0 else 0.0
            if not (isfinite(ybar) and isfinite(gdot)
                    and isfinite(weight * (s + (kappa if kappa > 1.0 else 1.0) / alpha))):
                status = PYTHON_STEP
                break
            # the step's new u and A^{-1}'s update finite, or the Python step refuses it
            # (okoco.learners.embedding.OnsHead._ons_plan: the same bound)
            q = weight * s
            c = excess / (s if s > MIN_S else MIN_S) if excess != 0.0 else 0.0
            big = 0.0
            top = 0.0
            for i in range(m):
                big = big if big >= fabs(Pz[i]) else fabs(Pz[i])
                top = top if top >= fabs(u[i]) else fabs(u[i])
            if not (isfinite(1.01 * (top + (fabs(c) + fabs(gdot / (1.0 + q))) * big))
                    and isfinite(-weight / (1.0 + q) * big * big) and isfinite(q)):
                status = PYTHON_STEP
                break
            residual = kappa - dot(<int>m, h, h)
            if not (max_size > 0 and m >= max_size) and residual > SPAN_TOL * kappa:
                # KORS (okoco.dictionary.KORS): a = sqrt(w) k, Eq. 4 from |L_K^{-1} a|^2
                if used == n_coins:
                    status = NEED_COINS
                    break
                for i in range(m):
                    a[i] = sqrt(kors_weights[i]) * g[i]
                if m:
                    tp_half_solve(&kors_L[0], <int>m, a)
                p = kors_probability(kappa, dot(<int>m, a, a), kors_alpha, eps, beta, p_min, &q,
                                     &tau)
                if coins[used] < p:  # it joins: the Python step, with this same coin
                    status = PYTHON_STEP
                    break
                used += 1
                kors_seen += 1
                last_q, last_tau, last_p = q, tau, p
            predictions[t] = yhat
            # the a-priori error over the spread alpha z.A^{-1}z + residual + alpha / 2
            noise_sum += (y[t] - yhat) * (y[t] - yhat) / (
                alpha * s + (residual if residual > 0.0 else 0.0) + 0.5 * alpha)
            # oblique projection onto |z.w| <= C in the A-norm, then the Newton step
            if excess != 0.0:
                c = excess / (s if s > MIN_S else MIN_S)
                for i in range(m):
                    u[i] -= c * Pz[i]
            q = weight * s
            if m:
                sym_rank_one(&P[0], <int>m, dense, -weight / (1.0 + q), Pz)
            c = gdot / (1.0 + q)
            for i in range(m):
                u[i] -= c * Pz[i]
            oed += q / (1.0 + q)
            log_det += log1p(q)
            t += 1
    free(work)
    return t, status, used, kors_seen, last_q, last_tau, last_p, oed, log_det, noise_sum
