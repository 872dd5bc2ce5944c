"""A kernel's row over stored points: ``k(X_i, x)`` for the rows ``X_i`` of a buffer.

The rows are a view of a :class:`okoco.linalg.Rows` buffer (``n`` rows of ``d`` numbers at a
row stride ``ld``); ``okoco.kernels`` checks the shapes and pads ``x`` to ``d``. Products of
rows with ``x`` are BLAS ``dgemv`` calls over blocks of rows small enough that OpenBLAS never
hands them to its thread pool (it does from ``9216`` elements), so a step needs no one-thread
scope.
"""

import numpy as np

from cpython.object cimport PyObject

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


# From this many values numpy's vectorized exp (its own SIMD loops) is faster than a call of
# libm's exp per value.
cdef Py_ssize_t NUMPY_EXP = 64
_np_exp = np.exp

# numpy's exp of float64 called without its ufunc machinery (about a microsecond a call: the
# arguments' parsing, the loop's lookup, the error state), through its own inner loop: the
# loop the ufunc holds for ``d -> d`` (the leading fields of numpy's PyUFuncObject, public and
# unchanged from numpy 1.0 to 2.x; another major version keeps np.exp), used only if it gives
# np.exp's bits on a check at import (values across exp's range and every tail length of its
# vector loop); else np.exp itself.
cdef extern from *:
    """
    typedef void (*okoco_loop)(char**, const Py_ssize_t*, const Py_ssize_t*, void*);
    typedef struct {
        PyObject_HEAD
        int nin, nout, nargs, identity;
        okoco_loop* functions;
        void* const* data;
        int ntypes, reserved1;
        const char* name;
        const char* types;
    } okoco_ufunc_head;
    """
    ctypedef void (*okoco_loop)(char**, const Py_ssize_t*, const Py_ssize_t*, void*) noexcept nogil
    ctypedef struct okoco_ufunc_head:
        int nin, nout, ntypes
        okoco_loop* functions
        void** data
        const char* types

cdef okoco_loop found_loop = NULL  # numpy's loop, once it passed the check
cdef okoco_loop exp_loop = NULL    # the loop in use (NULL: np.exp)
cdef void* exp_data = NULL


cdef void loop_exp(double* v, Py_ssize_t n) noexcept nogil:
    """v <- exp(v) by numpy's float64 loop (exp_loop set)."""
    cdef char* args[2]
    cdef Py_ssize_t steps[2]
    args[0] = args[1] = <char*>v
    steps[0] = steps[1] = sizeof(double)
    exp_loop(args, &n, steps, exp_data)


cdef void find_exp_loop():
    """Set exp_loop to numpy's float64 exp loop if it gives np.exp's bits (see above)."""
    global exp_loop, exp_data, found_loop
    cdef okoco_ufunc_head* ufunc = <okoco_ufunc_head*><PyObject*>_np_exp
    cdef int i, length, double_type = np.dtype(np.float64).num
    if np.__version__.split(".")[0] not in ("1", "2"):  # (the head as numpy 1 and 2 lay it)
        return
    if type(_np_exp) is not np.ufunc or ufunc.nin != 1 or ufunc.nout != 1:
        return
    for i in range(ufunc.ntypes):
        if ufunc.types[2 * i] == double_type and ufunc.types[2 * i + 1] == double_type:
            exp_loop, exp_data = ufunc.functions[i], ufunc.data[i]
            break
    if exp_loop == NULL:
        return
    values = np.concatenate([np.linspace(-760.0, 30.0, 20011), -np.logspace(-20, 2.5, 4001),
                             [0.0, -0.0, -1e-300, -708.5, -745.2, -746.0, -np.inf]])
    if not same_exp(values):
        exp_loop = NULL
        return
    for i in range(4):  # every tail length of a vector loop, from values across the range
        for length in range(1, 41):
            if not same_exp(values[500 * length + i:500 * length + i + length]):
                exp_loop = NULL
                return


cdef bint same_exp(values):
    """Whether loop_exp gives np.exp's bits over ``values``."""
    cdef double[::1] got = values.copy()
    loop_exp(&got[0], got.shape[0])
    return np.asarray(got).tobytes() == _np_exp(values).tobytes()


find_exp_loop()
found_loop = exp_loop


def exp_path(str path=None) -> str:
    """How the compiled steps raise numpy's exp: ``"loop"`` (its float64 inner loop, checked
    at import) or ``"ufunc"`` (np.exp itself); ``path`` sets it (``"loop"`` only where the
    check found it), for tests comparing the two."""
    global exp_loop
    if path is not None:
        if path not in ("loop", "ufunc"):
            raise ValueError(f"path must be 'loop' or 'ufunc', got {path!r}")
        if path == "loop" and found_loop == NULL:
            raise ValueError("path 'loop': numpy's float64 exp loop was not found (or gave "
                             "other bits than np.exp)")
        exp_loop = found_loop if path == "loop" else NULL
    return "loop" if exp_loop != NULL else "ufunc"


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
    """v <- exp(v) for the first n values of the numpy array buffer (whose data v is):
    numpy's exp from NUMPY_EXP values (numpy_exp), libm's below."""
    cdef Py_ssize_t i
    if n >= NUMPY_EXP:
        numpy_exp(buffer, v, n)
    else:
        for i in range(n):
            v[i] = exp(v[i])
    return 0


cdef int numpy_exp(object buffer, double* v, Py_ssize_t n) except -1:
    """v <- np.exp(v), bit for bit, for the first n values of the float64 array buffer (whose
    data v is): numpy's own loop (exp_loop), else the ufunc."""
    if exp_loop != NULL:
        if n > 0:
            loop_exp(v, n)
    else:
        part = buffer[:n]
        _np_exp(part, out=part)
    return 0


cdef double self_similarity(const Kernel* k, const double* x, int w) noexcept nogil:
    if k.bounded:
        return 1.0
    if k.kind == LINEAR:
        return dot(w, x, x)
    return pow(k.gamma * dot(w, x, x) + k.coef0, k.degree)
