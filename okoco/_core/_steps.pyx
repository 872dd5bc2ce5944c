"""Whole learner steps and their loops over the rows of an array, on the learners' buffers.

A learner (``okoco.learners``) validates its input, makes room in its buffers (``Rows`` and
the factorizations grow by doubling in Python) and then calls these functions on views of
them. The kernels and losses with a compiled form are coded by an integer (``KERNELS``,
``LOSSES`` in ``okoco.learners``); anything else stays on the Python path.
"""

import numpy as np

from libc.math cimport exp, fabs, isfinite, pow, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from okoco._core._kernels cimport rows_dot, sq_dists
from okoco._core._linalg cimport axpy, dot

# kernels
cdef enum:
    RBF = 0
    LAPLACIAN = 1
    LINEAR = 2
    POLYNOMIAL = 3

# losses
cdef enum:
    SQUARED = 0
    LOGISTIC = 1
    SQUARED_HINGE = 2

# statuses
cdef enum:
    OK = 0
    OVERFLOW = 1


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


# From this many values numpy's vectorized exp (its own SIMD loops), called with the GIL, is
# faster than a call of libm's exp per value.
cdef Py_ssize_t NUMPY_EXP = 64
_np_exp = np.exp


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


cdef inline double clip_excess(double z, double C) noexcept nogil:
    """The paper's h(z): how far z lies outside [-C, C] (signed), else 0."""
    if z > C:
        return z - C
    if z < -C:
        return z + C
    return 0.0


cdef inline double clip(double z, double C) noexcept nogil:
    return z - clip_excess(z, C)


cdef Py_ssize_t row_stride(const double[:, :] X) except -1:
    if X.shape[0] and X.shape[1] > 1 and X.strides[1] != sizeof(double):
        raise ValueError("the rows must be contiguous")
    return X.strides[0] // sizeof(double) if X.shape[0] > 1 else X.shape[1]


# ------------------------------------------------------------------------------ FunctionalGD
def fgd_value(tuple kernel, const double[:, :] X, const double[::1] sq,
              const double[::1] coef, const double[::1] x):
    """``f(x) = sum_i c_i k(X_i, x)`` over the stored rows ``X`` (a view of the buffer)."""
    cdef Kernel k = make_kernel(kernel)
    cdef Py_ssize_t n = X.shape[0], ld = row_stride(X)
    cdef bint exponents
    if n == 0:
        return 0.0
    buffer = np.empty(n)
    cdef double[::1] row = buffer
    with nogil:
        exponents = kernel_row(&k, &X[0, 0], ld, n, <int>X.shape[1], &sq[0], &x[0],
                               <int>x.shape[0], &row[0])
    if exponents:
        kernel_exp(buffer, &row[0], n)
    return dot(<int>n, &row[0], &coef[0])


def fgd_run(tuple kernel, double[:, ::1] data, double[::1] coef, double[::1] sq,
            Py_ssize_t n, Py_ssize_t n_added, Py_ssize_t max_size, const double[:, ::1] V,
            const double[::1] y, const double[::1] eta, double lam, double C, int loss,
            double[::1] predictions):
    """Test-then-train over the rows of ``V`` (FunctionalGD's step, okoco.learners.fgd): for
    each row, the clipped prediction into ``predictions``, then the projection, the step and
    the new term appended to the buffers (a ring of ``max_size`` rows if ``max_size > 0``).

    The buffers must hold ``min(n + len(V), max_size)`` rows of ``V``'s width. Returns
    ``(n, n_added, rows learned, status)``: ``status`` is ``OVERFLOW`` if the row after the
    last learned one gave a non-finite value (nothing of it was learned).
    """
    cdef Kernel k = make_kernel(kernel)
    cdef Py_ssize_t ld = data.shape[1], t, i, slot, rows = V.shape[0], learned = V.shape[0]
    cdef int d = <int>V.shape[1], status = OK
    cdef double ybar, excess, gdot, kappa, c_new, shrink, norm
    buffer = np.empty(n + rows + 1)
    cdef double[::1] krow_view = buffer
    cdef double* krow = &krow_view[0]
    with nogil:
        for t in range(rows):
            if kernel_row(&k, &data[0, 0], ld, n, d, &sq[0], &V[t, 0], d, krow):
                with gil:
                    kernel_exp(buffer, krow, n)
            ybar = dot(<int>n, krow, &coef[0])
            predictions[t] = clip(ybar, C)
            shrink = 1.0 - eta[t] * lam
            excess = clip_excess(ybar, C)
            gdot = derivative(loss, y[t], ybar - excess)
            kappa = self_similarity(&k, &V[t, 0], d)
            c_new = -eta[t] * gdot - (shrink * excess / kappa if excess != 0.0 else 0.0)
            if not (isfinite(c_new) and isfinite(ybar) and isfinite(kappa)):
                status = OVERFLOW
                learned = t
                break
            if shrink != 1.0:  # NORMA's decay (lam > 0)
                for i in range(n):
                    coef[i] *= shrink
            slot = n_added % max_size if max_size > 0 and n == max_size else n
            memcpy(&data[slot, 0], &V[t, 0], d * sizeof(double))
            if ld > d:
                memset(&data[slot, d], 0, (ld - d) * sizeof(double))
            coef[slot] = c_new
            sq[slot] = dot(d, &V[t, 0], &V[t, 0])
            if slot >= n:
                n = slot + 1
            n_added += 1
    return n, n_added, learned, status


# ------------------------------------------------------------------------------ KRLS
from okoco._core._linalg cimport sym_matvec, sym_rank_one, tp_append, tp_half_solve

cdef inline Py_ssize_t start(Py_ssize_t r) noexcept nogil:
    return r * (r + 1) // 2

# the row at which krls_run stopped needs the Python step
cdef enum:
    PYTHON_STEP = 2


cdef bint analyse(const Kernel* k, Py_ssize_t m, const double* L, const double* w,
                  const double* x, int wx, const double* g, double* h, double* out) noexcept nogil:
    """KRLS's shared analysis of x given its kernel column g = k_D(x): h = L^{-1} g, and
    out = [k(x, x), the ALD residual k(x, x) - h.h, the prediction h.w]. False if a value is
    not finite or k(x, x) < 0 (the Python step then words the error)."""
    cdef Py_ssize_t i
    cdef double kxx
    kxx = self_similarity(k, x, wx)
    if k.kind != RBF and k.kind != LAPLACIAN:
        if not (isfinite(kxx) and kxx >= 0.0):
            return False
        for i in range(m):
            if not isfinite(g[i]):
                return False
    if m:
        memcpy(h, g, m * sizeof(double))
        tp_half_solve(L, <int>m, h)
    out[0] = kxx
    out[1] = kxx - dot(<int>m, h, h)
    out[2] = dot(<int>m, h, w)
    return True


cdef void weights_step(double* P, int m, bint dense, const double* h, double* w, double error,
                       double* u) noexcept nogil:
    """KRLS's step when the point does not join: u = M h, s = 1 / (1 + h.u),
    M <- M - s u u^T, w <- w + s e u."""
    cdef double s
    sym_matvec(P, m, dense, h, u)
    s = 1.0 / (1.0 + dot(m, h, u))
    sym_rank_one(P, m, dense, -s, u)
    axpy(m, s * error, u, w)


def krls_analyse(tuple kernel, const double[:, :] X, const double[::1] sq,
                 const double[::1] L, const double[::1] w, const double[::1] x,
                 double[::1] g, double[::1] h):
    """KRLS's analysis of ``x`` against the ``m = len(X)`` atoms into ``g`` and ``h``: returns
    ``(k(x, x), delta, prediction)``, or ``None`` if a value is not finite."""
    cdef Kernel k = make_kernel(kernel)
    cdef Py_ssize_t m = X.shape[0], ld = row_stride(X) if X.shape[0] else 1
    cdef double out[3]
    cdef bint ok
    if m and kernel_row(&k, &X[0, 0], ld, m, <int>X.shape[1], &sq[0], &x[0],
                        <int>x.shape[0], &g[0]):
        kernel_exp(g.base if g.base is not None else np.asarray(g), &g[0], m)
    with nogil:
        ok = analyse(&k, m, &L[0], &w[0], &x[0], <int>x.shape[0], &g[0] if m else NULL,
                     &h[0] if m else NULL, out)
    return (out[0], out[1], out[2]) if ok else None


def krls_weights_step(double[::1] P, int m, bint dense, const double[::1] h, double[::1] w,
                      double error):
    """:c:func:`weights_step` on KRLS's ``M`` (its flat storage) and ``w``."""
    cdef double* u
    if m <= 0:
        return
    u = <double*>malloc(m * sizeof(double))
    if u == NULL:
        raise MemoryError()
    with nogil:
        weights_step(&P[0], m, dense, &h[0], &w[0], error, u)
    free(u)


def krls_run(tuple kernel, double[:, ::1] data, double[::1] sq, Py_ssize_t m,
             double[::1] L, double[::1] A, Py_ssize_t ops, Py_ssize_t min_check,
             double min_pivot, double[::1] residuals, long long[::1] indices,
             double[::1] weights, Py_ssize_t seen, double[::1] w, double[::1] P, bint dense,
             double nu, Py_ssize_t max_size, double alpha, double C,
             const double[:, ::1] V, const double[::1] y, Py_ssize_t begin,
             double[::1] predictions, object g_buffer, double[::1] h, double noise_ratio,
             double[::1] noise):
    """KRLS's test-then-train over rows ``begin ..`` of ``V`` (okoco.learners.krls), on its
    buffers (every one with room for ``min(m + len(V), max_size)`` atoms): the store's rows
    and norms, the ALD factor ``L`` of the stored Gram ``A`` with its residuals, indices and
    weights, ``w`` and ``M`` (``P``, packed unless ``dense``). ``C`` is NaN for no clipping,
    ``max_size`` 0 for none.

    Stops before a row that needs the Python step: a point that joins while ``M`` is dense
    (bordering reallocates it) or when the factor's drift check is due, or a value that is
    not finite. Returns ``(row, m, ops, n_clamped, seen, status, m_last, delta, added,
    pivot)``: the row it stopped at (``len(V)`` at the end), the new sizes and counters, and
    the last row's analysis (its ``g`` and ``h`` over ``m_last`` atoms are left in ``g``,
    ``h``).
    """
    cdef Kernel k = make_kernel(kernel)
    cdef double[::1] g = g_buffer
    cdef Py_ssize_t ld = data.shape[1], t = begin, rows = V.shape[0], j, off, m_last = m
    cdef int d = <int>V.shape[1], clamped, n_clamped = 0, status = OK
    cdef double out[3]
    cdef double delta = float("nan"), pivot = float("nan"), schur, l, error
    cdef bint added = False
    cdef double* u = <double*>malloc((m + rows + 1) * sizeof(double))
    if u == NULL:
        raise MemoryError()
    with nogil:
        while t < rows:
            if kernel_row(&k, &data[0, 0], ld, m, d, &sq[0], &V[t, 0], d, &g[0]):
                with gil:
                    kernel_exp(g_buffer, &g[0], m)
            if not analyse(&k, m, &L[0], &w[0], &V[t, 0], d, &g[0], &h[0], out):
                status = PYTHON_STEP
                break
            added = out[1] > nu and not (max_size > 0 and m >= max_size)
            if added and (dense or ops + 1 >= (m + 1 if m + 1 > min_check else min_check)):
                status = PYTHON_STEP
                break
            predictions[t] = out[2] if C != C else clip(out[2], C)
            error = y[t] - out[2]
            # the a-priori error over its predictive spread: KRLS's online noise scale
            noise[t] = error * error / ((out[1] if out[1] > 0.0 else 0.0) + noise_ratio)
            if added:
                # the factor: bordered with [h, sqrt(schur)] (A with [g, k(x, x) + alpha])
                memcpy(&A[start(m)], &g[0], m * sizeof(double))
                schur = tp_append(&L[0], &A[0], <int>m, &h[0], out[0] + alpha, True,
                                  min_pivot, &clamped)
                n_clamped += clamped
                l = sqrt(schur)
                # w <- [w; e / l], M <- [[M, -u / l], [-u^T / l, (1 + h.u) / l^2]], u = M h
                sym_matvec(&P[0], <int>m, False, &h[0], u)
                w[m] = error / l
                off = start(m)
                for j in range(m):
                    P[off + j] = -u[j] / l
                P[off + m] = (1.0 + dot(<int>m, &h[0], u)) / (l * l)
                # the point, its norm; the ALD's residual, index and weight
                memcpy(&data[m, 0], &V[t, 0], d * sizeof(double))
                if ld > d:
                    memset(&data[m, d], 0, (ld - d) * sizeof(double))
                sq[m] = dot(d, &V[t, 0], &V[t, 0])
                residuals[m] = out[1]
                indices[m] = seen
                weights[m] = 1.0
                pivot = schur
                m_last = m
                m += 1
                ops += 1
            else:
                m_last = m
                if m:
                    weights_step(&P[0], <int>m, dense, &h[0], &w[0], error, u)
            delta = out[1]
            seen += 1
            t += 1
    free(u)
    return t, m, ops, n_clamped, seen, status, m_last, delta, added, pivot


# ------------------------------------------------------------------------------ KORS
def kors_score(const double[::1] weights, const double[::1] k_col, const double[::1] L,
               double k_diag, double alpha, double eps, double beta, double p_min,
               double[::1] a, double[::1] h):
    """KORS's estimate of a point (Calandriello et al. 2017, Eq. 4) against ``m = len(k_col)``
    atoms: ``a = sqrt(w) * k_col``, ``h = L^{-1} a`` (into ``a`` and ``h``), the regularized
    residual ``q = max(k_diag - h.h, 0) / alpha``, ``tau = (1 + eps) q / (1 + q)`` and the
    inclusion probability ``p = max(min(beta tau, 1), p_min)``. Returns ``(q, tau, p)``."""
    cdef Py_ssize_t m = k_col.shape[0], j
    cdef double q, tau, p
    with nogil:
        for j in range(m):
            a[j] = sqrt(weights[j]) * k_col[j]
        if m:
            memcpy(&h[0], &a[0], m * sizeof(double))
            tp_half_solve(&L[0], <int>m, &h[0])
        q = k_diag - dot(<int>m, &h[0] if m else NULL, &h[0] if m else NULL)
        q = (q if q > 0.0 else 0.0) / alpha
        tau = (1.0 + eps) * q / (1.0 + q)
        p = beta * tau
        p = 1.0 if p > 1.0 else p
        p = p_min if p_min > p else p
    return q, tau, p
