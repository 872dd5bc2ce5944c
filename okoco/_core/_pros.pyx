"""PROS-N-KONS / CON-KONS's step and its loop over the rows of an array (okoco.learners.pros).

Its own module so that it builds and changes apart from the other learners' steps
(``_steps``); the kernels and losses it shares with them come from ``_kernels.pxd`` and
``_losses.pxd``.
"""

import numpy as np

from libc.math cimport isfinite, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from okoco._core._kernels cimport Kernel, kernel_exp, kernel_row, make_kernel, self_similarity
from okoco._core._leverage cimport kors_probability
from okoco._core._linalg cimport dot, tp_half_solve
from okoco._core._ons cimport ONS_OK, OnsState

# the row at which pros_run stopped: OK at the end, else it needs the Python step, or the
# coins drawn for it ran out
cdef enum:
    OK = 0
    PYTHON_STEP = 2
    NEED_COINS = 3

#: pros_run's status when its coins ran out (draw more and call again)
STATUS_NEED_COINS = NEED_COINS

# a point whose residual k(x, x) - h.h is below SPAN_TOL k(x, x) lies in the span of the
# dictionary to working precision and is not offered to KORS. Its one home: the Python step
# (okoco.learners.embedding) reads it from here.
cdef double SPAN_TOL = 1e-10
SPAN_TOLERANCE = SPAN_TOL

def pros_run(tuple kernel, tuple atoms, OnsState head, tuple kors, const double[::1] coins,
             const double[::1] eta, Py_ssize_t max_size, tuple counters, tuple rows):
    """PROS-N-KONS / CON-KONS's test-then-train over rows ``begin ..`` of ``V``
    (okoco.learners.pros) while the dictionary does not change: the kernel row against the
    ``head.m`` atoms (``atoms``: their ``data``, squared norms ``sq``, the embedding's packed
    factor ``L`` and ``d_atoms``, the number of features they have), ``h = L^{-1} k``, the
    clipped prediction into ``predictions``, the KORS score and its coin (``kors``: its
    weights, packed factor, alpha, eps, beta and p_min; ``coins``, uniforms drawn beforehand
    from KORS's generator), then the head's step (``_ons.OnsState``: the one ONS step; ``eta``
    per row, ignored by the ``hessian`` policy). ``max_size`` 0 means none; ``counters`` the
    head's online effective dimension, log det and noise sum before the first row; ``rows``
    is ``(V, y, begin, predictions)``. The rows of ``V`` may be wider than the atoms (their
    other features are 0 in the atoms).

    Stops before a row that needs the Python step: a point whose coin lands (it joins: the
    factors and buffers grow), a value that is not finite or a step the head refuses (the
    Python step words the error), or no coin left. Returns ``(row, status, coins used, KORS
    points seen, last q, last tau, last p, counters)`` (the counters summed in row order as
    the Python step does); the coins used are those of the rows learned.
    """
    cdef const double[:, ::1] data = atoms[0], V = rows[0]
    cdef const double[::1] sq = atoms[1], L = atoms[2], y = rows[1]
    cdef double[::1] predictions = rows[3]
    cdef int d_atoms = atoms[3]
    cdef Py_ssize_t begin = rows[2]
    cdef Kernel k = make_kernel(kernel)
    cdef const double[::1] kors_weights = kors[0], kors_L = kors[1]
    cdef double kors_alpha = kors[2], eps = kors[3], beta = kors[4], p_min = kors[5]
    cdef double oed = counters[0], log_det = counters[1], noise_sum = counters[2]
    cdef Py_ssize_t m = head.m
    cdef Py_ssize_t ld = data.shape[1], t = begin, n_rows = V.shape[0], i, used = 0, n_coins
    cdef Py_ssize_t kors_seen = 0
    cdef int d = <int>V.shape[1], status = OK
    cdef double kappa, ybar, s, residual, q, tau, p
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
    cdef const double* u = &head.u[0]
    if work == NULL:
        raise MemoryError()
    with nogil:
        while t < n_rows:
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
            ybar = dot(<int>m, h, u)
            if head.differentiate(y[t], ybar, eta[t]) != ONS_OK:
                status = PYTHON_STEP
                break
            s = head.product(h, Pz)
            # a point that could join gets a coordinate of value at most sqrt(kappa): the
            # Python step checks that plan too, so a weight that would overflow it goes there
            if not (isfinite(head.weight * (s + (kappa if kappa > 1.0 else 1.0) / head.alpha))
                    and head.admits(Pz, s, NULL, 0) == ONS_OK):
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
            predictions[t] = head.yhat
            head.take(Pz, s, NULL, 0, y[t], residual)
            noise_sum += head.noise
            oed += head.gained_dimension
            log_det += head.gained_log_det
            t += 1
    free(work)
    return (t, status, used, kors_seen, last_q, last_tau, last_p, (oed, log_det, noise_sum))
