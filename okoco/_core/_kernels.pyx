"""A kernel's row over stored points: ``k(X_i, x)`` for the rows ``X_i`` of a buffer.

The rows are a view of a :class:`okoco.linalg.Rows` buffer (``n`` rows of ``d`` numbers at a
row stride ``ld``); ``okoco.kernels`` checks the shapes and pads ``x`` to ``d``. Products of
rows with ``x`` are BLAS ``dgemv`` calls over blocks of rows small enough that OpenBLAS never
hands them to its thread pool (it does from ``9216`` elements), so a step needs no one-thread
scope.
"""

import numpy as np

from libc.math cimport exp, fabs, pow
from scipy.linalg.cython_blas cimport ddot, dgemv

from okoco._core._linalg cimport dot

# The kernels with a compiled form: each class of okoco.kernels names its member of this enum
# (its class keyword ``code``, exposed to Python as okoco._core._kernels.KernelCode). Declared
# here, in the one module that branches on it: a kernel's compiled form lives in this file.
cpdef enum KernelCode:
    RBF = 0
    LAPLACIAN = 1
    LINEAR = 2
    POLYNOMIAL = 3


# OpenBLAS runs dgemv and ddot on one thread below these many elements (interface/gemv.c,
# kernel/x86_64/ddot.c); a block of rows stays below.
cdef Py_ssize_t ONE_THREAD = 8192


cdef void rows_dot(const double* X, Py_ssize_t ld, Py_ssize_t n, int d, const double* x,
                   double* out) noexcept nogil:
    """out_i = X_i . x over n rows of d numbers at stride ld."""
    cdef int one = 1, lda = <int>ld, rows, part
    cdef double unit = 1.0, zero = 0.0, total
    cdef Py_ssize_t i = 0, j, block
    if d <= 0:
        for i in range(n):
            out[i] = 0.0
        return
    if d > ONE_THREAD:  # a very wide row: each dot product in blocks
        for i in range(n):
            total = 0.0
            j = 0
            while j < d:
                part = <int>(ONE_THREAD if d - j > ONE_THREAD else d - j)
                total += ddot(&part, <double*>&X[i * ld + j], &one, <double*>&x[j], &one)
                j += part
            out[i] = total
        return
    block = ONE_THREAD // d
    while i < n:
        rows = <int>(block if n - i > block else n - i)
        # the buffer is column-major (ld x n): column i is row i; A^T x over d x rows
        dgemv(b"T", &d, &rows, &unit, <double*>&X[i * ld], &lda, <double*>x, &one, &zero,
              &out[i], &one)
        i += rows


cdef inline double direct_sq(const double* row, const double* x, int d) noexcept nogil:
    cdef double total = 0.0, z
    cdef int j
    for j in range(d):
        z = row[j] - x[j]
        total += z * z
    return total


cdef void sq_dists(const double* X, Py_ssize_t ld, Py_ssize_t n, int d, const double* sq,
                   const double* x, int w, double tau, Py_ssize_t direct_size,
                   double* out) noexcept nogil:
    """out_i = ||X_i - x||^2 for rows of d numbers and x of w >= d numbers (the rows are 0
    beyond d): direct differences up to direct_size stored numbers, else the norm expansion
    sq_i + ||x||^2 - 2 X_i . x with every entry at or below its own bound tau (sq_i + ||x||^2)
    recomputed from direct differences (okoco.kernels explains tau)."""
    cdef Py_ssize_t i
    cdef double xx, D, tail = dot(w - d, &x[d], &x[d])
    if n * d <= direct_size:
        for i in range(n):
            out[i] = direct_sq(&X[i * ld], x, d) + tail
        return
    xx = dot(d, x, x) + tail
    rows_dot(X, ld, n, d, x, out)
    for i in range(n):
        D = (-2.0 * out[i] + sq[i]) + xx
        if not D > tau * (sq[i] + xx):  # near (or NaN: an overflowed norm)
            D = direct_sq(&X[i * ld], x, d) + tail
        out[i] = D


cdef Py_ssize_t row_stride(const double[:, :] X) except -1:
    if X.shape[0] and X.shape[1] > 1 and X.strides[1] != sizeof(double):
        raise ValueError("the rows must be contiguous")
    return X.strides[0] // sizeof(double) if X.shape[0] > 1 else X.shape[1]


def sq_dist_row(const double[:, :] X, const double[::1] sq, const double[::1] x, double tau,
                Py_ssize_t direct_size, double[::1] out):
    """``out[i] = ||X_i - x||^2`` (see ``sq_dists``)."""
    cdef Py_ssize_t n = X.shape[0], ld = row_stride(X)
    if n == 0:
        return
    with nogil:
        sq_dists(&X[0, 0], ld, n, <int>X.shape[1], &sq[0], &x[0], <int>X.shape[1], tau,
                 direct_size, &out[0])


def dot_row(const double[:, :] X, const double[::1] x, double[::1] out):
    """``out[i] = X_i . x``."""
    cdef Py_ssize_t n = X.shape[0], ld = row_stride(X)
    if n == 0:
        return
    with nogil:
        rows_dot(&X[0, 0], ld, n, <int>X.shape[1], &x[0], &out[0])


def polynomial_row(const double[:, :] X, const double[::1] x, double gamma, double coef0,
                   double degree, double[::1] out):
    """``out[i] = (gamma X_i . x + coef0) ** degree``."""
    cdef Py_ssize_t n = X.shape[0], ld = row_stride(X), i
    if n == 0:
        return
    with nogil:
        rows_dot(&X[0, 0], ld, n, <int>X.shape[1], &x[0], &out[0])
        for i in range(n):
            out[i] = pow(gamma * out[i] + coef0, degree)


def laplacian_row(const double[:, :] X, const double[::1] x, double gamma, double[::1] out):
    """``out[i] = exp(-gamma ||X_i - x||_1)``."""
    cdef Py_ssize_t n = X.shape[0], ld = row_stride(X), i
    cdef int j, d = <int>X.shape[1]
    cdef double total
    cdef const double* row
    if n == 0:
        return
    with nogil:
        for i in range(n):
            row = &X[0, 0] + i * ld
            total = 0.0
            for j in range(d):
                total += fabs(row[j] - x[j])
            out[i] = exp(-gamma * total)


# ------------------------------------------------------------------ a kernel coded for the steps
cdef Kernel make_kernel(tuple spec) except *:
    """(kind, bounded, gamma, coef0, degree, near_factor, direct_size) from
    okoco.learners._codes.compiled_kernel."""
    cdef Kernel k
    k.kind, k.bounded, k.gamma, k.coef0, k.degree, k.near_factor, k.direct_size = spec
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
    if k.bounded:
        return 1.0
    if k.kind == LINEAR:
        return dot(w, x, x)
    return pow(k.gamma * dot(w, x, x) + k.coef0, k.degree)
