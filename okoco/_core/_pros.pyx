"""PROS-N-KONS / CON-KONS's step and its loop over the rows of an array (okoco.learners.pros).

Its own module so that it builds and changes apart from the other learners' steps
(``_steps``). The few kernel and loss helpers it shares with them are repeated here, since
cdef functions cross modules only through a ``.pxd``; each is short, and
tests/test_pros.py holds the loop to the learner's Python step row by row, so a copy that
drifted from the Python kernels or losses fails there.
"""

import numpy as np

from libc.math cimport exp, fabs, isfinite, log1p, pow, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from okoco._core._kernels cimport rows_dot, sq_dists
from okoco._core._linalg cimport dot, sym_matvec, sym_rank_one, tp_half_solve

# kernels (okoco.learners.base.compiled_kernel)
cdef enum:
    RBF = 0
    LAPLACIAN = 1
    LINEAR = 2
    POLYNOMIAL = 3

# losses (okoco.learners.base.compiled_loss)
cdef enum:
    SQUARED = 0
    LOGISTIC = 1
    SQUARED_HINGE = 2

# the row at which pros_run stopped: OK at the end, else it needs the Python step, or the
# coins drawn for it ran out
cdef enum:
    OK = 0
    PYTHON_STEP = 2
    NEED_COINS = 3

#: pros_run's status when its coins ran out (draw more and call again)
STATUS_NEED_COINS = NEED_COINS

# s = z^T A^{-1} z is floored before it divides the projection; a residual below this fraction
# of k(x, x) is not offered to KORS (okoco.learners.pros, _MIN_S and _SPAN_TOL)
cdef double MIN_S = 1e-300
cdef double SPAN_TOL = 1e-10

# From this many values numpy's vectorized exp is faster than libm's exp per value (as _steps)
cdef Py_ssize_t NUMPY_EXP = 64
_np_exp = np.exp


cdef struct Kernel:
    int kind
    double gamma, coef0, degree
    double near_factor    # squared distances at or below (2 d + 4) near_factor (...) are exact
    Py_ssize_t direct_size


cdef Kernel make_kernel(tuple spec) except *:
    """(kind, gamma, coef0, degree, near_factor, direct_size) from okoco.learners."""
    cdef Kernel k
    k.kind, k.gamma, k.coef0, k.degree, k.near_factor, k.direct_size = spec
    return k


cdef bint kernel_row(const Kernel* k, const double* X, Py_ssize_t ld, Py_ssize_t n, int d,
                     const double* sq, const double* x, int w, double* out) noexcept nogil:
    """out_i = k(X_i, x) over n stored rows of d numbers (x has w >= d, the rows are 0 beyond),
    except that for the RBF and Laplacian kernels out holds the exponents: then it returns
    True and the caller applies exp (kernel_exp)."""
    cdef Py_ssize_t i
    cdef int j
    cdef double total
    cdef const double* row
    if n <= 0:
        return False
    if k.kind == RBF:
        sq_dists(X, ld, n, d, sq, x, w, (2 * d + 4) * k.near_factor, k.direct_size, out)
        for i in range(n):
            out[i] *= -k.gamma
        return True
    elif k.kind == LAPLACIAN:
        total = 0.0
        for j in range(d, w):
            total += fabs(x[j])
        for i in range(n):
            row = &X[i * ld]
            out[i] = total
            for j in range(d):
                out[i] += fabs(row[j] - x[j])
            out[i] *= -k.gamma
        return True
    else:
        rows_dot(X, ld, n, d, x, out)
        if k.kind == POLYNOMIAL:
            for i in range(n):
                out[i] = pow(k.gamma * out[i] + k.coef0, k.degree)
        return False


cdef int kernel_exp(object buffer, double* v, Py_ssize_t n) except -1:
    """v <- exp(v) for the first n values of the numpy array buffer (whose data v is)."""
    cdef Py_ssize_t i
    if n >= NUMPY_EXP:
        part = buffer[:n]
        _np_exp(part, out=part)
    else:
        for i in range(n):
            v[i] = exp(v[i])
    return 0


cdef double self_similarity(const Kernel* k, const double* x, int w) noexcept nogil:
    if k.kind == RBF or k.kind == LAPLACIAN:
        return 1.0
    if k.kind == LINEAR:
        return dot(w, x, x)
    return pow(k.gamma * dot(w, x, x) + k.coef0, k.degree)


cdef inline double derivative(int loss, double y, double z) noexcept nogil:
    """The loss's derivative in the prediction z (okoco.losses)."""
    cdef double yz
    if loss == SQUARED:
        return 2.0 * (z - y)
    yz = y * z
    if loss == LOGISTIC:
        yz = -700.0 if yz < -700.0 else (700.0 if yz > 700.0 else yz)
        return -y / (1.0 + exp(yz))
    return -2.0 * y * (1.0 - yz if 1.0 - yz > 0.0 else 0.0)


cdef inline double second_derivative(int loss, double y, double z) noexcept nogil:
    """The loss's second derivative in the prediction z (okoco.losses)."""
    cdef double yz, p
    if loss == SQUARED:
        return 2.0
    yz = y * z
    if loss == LOGISTIC:
        yz = -700.0 if yz < -700.0 else (700.0 if yz > 700.0 else yz)
        p = 1.0 / (1.0 + exp(-yz))
        return p * (1.0 - p)
    return 2.0 if yz < 1.0 else 0.0


cdef inline double clip_excess(double z, double C) noexcept nogil:
    """The paper's h(z): how far z lies outside [-C, C] (signed), else 0."""
    if z > C:
        return z - C
    if z < -C:
        return z + C
    return 0.0


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
    cdef double kappa, ybar, excess, yhat, gdot, weight, s, residual, q, tau, p, c
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
            residual = kappa - dot(<int>m, h, h)
            if not (max_size > 0 and m >= max_size) and residual > SPAN_TOL * kappa:
                # KORS (okoco.dictionary.KORS): a = sqrt(w) k, q = max(kappa - |L_K^{-1} a|^2,
                # 0) / alpha_K, tau = (1 + eps) q / (1 + q), p = max(min(beta tau, 1), p_min)
                if used == n_coins:
                    status = NEED_COINS
                    break
                for i in range(m):
                    a[i] = sqrt(kors_weights[i]) * g[i]
                if m:
                    tp_half_solve(&kors_L[0], <int>m, a)
                q = kappa - dot(<int>m, a, a)
                q = (q if q > 0.0 else 0.0) / kors_alpha
                tau = (1.0 + eps) * q / (1.0 + q)
                p = beta * tau
                p = 1.0 if p > 1.0 else p
                p = p_min if p_min > p else p
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
