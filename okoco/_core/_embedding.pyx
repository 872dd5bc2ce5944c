r"""The per-step work of a shared Nyström embedding (``okoco.learners.embedding
.SharedEmbedding``), compiled: a point's kernel row over the atoms, its embedding
:math:`h = L^{-1}k`, its residual :math:`k(x,x) - h^\top h` against the atoms and the pivot it
would take as an atom, in one call (:func:`analyse`, into the step's record :class:`Embedded`;
:func:`embed` from a row given); and the usage rule's step of a full dictionary (the atoms'
discounted shares of the kernel rows, the discounted count and mean residual, and the
least-used atom), in another.

The swap itself (``O(m^2)`` rotations of the factor and of the heads) is ``okoco._core._swap``'s.
"""

from cpython.buffer cimport (PyBUF_RECORDS, PyBUF_RECORDS_RO, PyBUF_SIMPLE,
                              PyBuffer_Release, PyObject_GetBuffer)
from libc.math cimport isfinite, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np

from okoco._core._kernels cimport Kernel, kernel_row, make_kernel, numpy_exp, self_similarity
from okoco._core._linalg cimport dot, tp_half_solve
from okoco._core._pros import SPAN_TOLERANCE

_np_empty = np.empty

# A point whose residual k(x, x) - h.h is below this fraction of k(x, x) lies in the span of the
# dictionary to working precision: it is not offered to KORS, since as an atom it would only add
# a coordinate made of rounding noise (amplified by 1 / pivot) to every embedding (the compiled
# loops' value, okoco._core._pros).
cdef double SPAN_TOL = SPAN_TOLERANCE

#: No new coordinate (read-only): the ``new`` of a point that cannot join.
NO_COORDINATE = np.zeros(0)
NO_COORDINATE.flags.writeable = False


cdef class Embedded:
    """One point's embedding by a dictionary (``okoco.learners.embedding.SharedEmbedding``):
    its kernel row ``k`` over the atoms, ``kappa`` :math:`= k(x, x)`, ``h`` :math:`= L^{-1}k`,
    its ``residual`` ``kappa - h.h`` against the atoms, the ``pivot`` it would take as an atom
    (``None``: it cannot join, :func:`join_pivot`), the new coordinate of its heads' step
    ``new`` (``[pivot]``, or none: :data:`NO_COORDINATE`) and whether it ``joined`` (set by the
    dictionary's coin). Each record owns its arrays (a caller may keep it from ``predict_one``
    to ``learn_one``)."""

    cdef public object k, h, pivot, new
    cdef public double kappa, residual
    cdef public bint joined

    def __init__(self, k, double kappa, h, double residual, pivot):
        self.fill(k, kappa, h, residual, pivot)

    cdef fill(self, k, double kappa, h, double residual, pivot):
        """The record's fields (``joined`` False; ``new`` from ``pivot``)."""
        self.k, self.kappa, self.h, self.residual = k, kappa, h, residual
        self.pivot, self.joined = pivot, False
        self.new = NO_COORDINATE if pivot is None else np.array([pivot])


cpdef object join_pivot(Py_ssize_t m, object cap, double kappa, double residual,
                        double min_pivot):
    r"""The pivot a point would take as the atom after ``m`` (its coordinate in its own
    embedding), :math:`\sqrt{\max(r, \text{min\_pivot})}` from its ``residual`` :math:`r =
    \kappa - h^\top h`, or ``None`` if it cannot join: the dictionary is full (``cap`` its
    ``max_size``, ``None`` for none) or :math:`r \le 10^{-10} \kappa` (the point lies in its
    span to working precision: as an atom it would only add a coordinate of rounding noise)."""
    if (cap is not None and m >= <Py_ssize_t>cap) or not residual > SPAN_TOL * kappa:
        return None
    return sqrt(min_pivot if min_pivot > residual else residual)


cdef double EMPTY = 0.0  # the data of an empty buffer without any


cdef double* data_of(object array) except NULL:
    """The data of a contiguous float64 array this module made (``np.empty``): valid while the
    caller holds the array."""
    cdef Py_buffer view
    PyObject_GetBuffer(array, &view, PyBUF_SIMPLE)
    cdef double* data = <double*>view.buf
    PyBuffer_Release(&view)
    return data


cdef double half_solve(const double* L, Py_ssize_t m, const double* k, double kappa,
                       double* h) noexcept nogil:
    """``h = L^{-1} k`` over ``m`` atoms (``L`` packed); returns the residual
    ``kappa - h.h``."""
    if m == 0:
        return kappa
    memcpy(h, k, m * sizeof(double))
    tp_half_solve(L, <int>m, h)
    return kappa - dot(<int>m, h, h)


def embed(const double[::1] L, Py_ssize_t m, const double[::1] k, double kappa):
    r"""``(h, residual)``: :math:`h = L^{-1}k` (a new vector; ``L`` the packed factor of
    order ``m``, ``IncrementalCholesky.factor_storage``) and :math:`\kappa - h^\top h`
    (``kappa`` :math:`= k(x, x)`), ``O(m^2)``."""
    cdef double residual
    if k.shape[0] != m:
        raise ValueError(f"embed: a kernel row of {k.shape[0]} entries for {m} atoms")
    if L.shape[0] < m * (m + 1) // 2:
        raise ValueError(f"embed: a factor of {L.shape[0]} numbers holds fewer than {m} rows")
    h = np.empty(m)
    cdef double[::1] out = h
    with nogil:
        residual = half_solve(&L[0] if m else NULL, m, &k[0] if m else NULL, kappa,
                              &out[0] if m else NULL)
    return h, residual


def analyse(tuple spec, rows, factor, v, cap=False):
    r"""``(k, kappa, h, residual)`` of the row ``v`` over the atoms ``rows``
    (``okoco.linalg.Rows``, with their squared norms) and the factor ``factor``
    (``okoco.linalg.IncrementalCholesky``, :math:`L L^\top = K_{\mathcal I}`), ``O(md + m^2)``:
    the kernel row ``k`` (the kernel ``spec``, ``okoco.learners._codes.compiled_kernel``; ``v``
    and the rows zero-padded to the wider of the two, as ``Rows.kernel_row`` pads them, and an
    exponent raised by numpy's ``exp``), ``kappa`` :math:`= k(x, x)`, :math:`h = L^{-1}k` and
    the residual :math:`\kappa - h^\top h`. With ``cap`` (the dictionary's ``max_size``,
    ``None`` for none), the step's record :class:`Embedded` instead, with the pivot the point
    would take as an atom (:func:`join_pivot`, the factor's ``min_pivot``).

    Returns ``None`` (nothing computed; the caller takes the Python path, which words the
    error) for a row wider than the rows' buffer or a kernel value that is not finite."""
    cdef Kernel kern = make_kernel(spec)
    cdef Py_ssize_t n = rows.n, m = factor.size
    cdef double kappa, residual
    cdef double* k = NULL
    cdef double* h = NULL
    cdef Embedded record
    if n != m:
        raise ValueError(f"analyse: {n} stored atoms for a factor of order {m}")
    k_obj = _np_empty(n)
    h_obj = _np_empty(n)
    if n:
        k, h = data_of(k_obj), data_of(h_obj)
    if not kernel_row_of(&kern, rows, v, k_obj, k, &kappa):
        return None
    residual = solve_against(factor, m, k, kappa, h)
    if cap is False:
        return k_obj, kappa, h_obj, residual
    record = Embedded.__new__(Embedded)  # (no Python-level __init__ call)
    record.fill(k_obj, kappa, h_obj, residual, join_pivot(m, cap, kappa, residual,
                                                           factor.min_pivot))
    return record


cdef bint kernel_row_of(const Kernel* kern, rows, v, k_obj, double* k,
                        double* kappa) except -1:
    """The kernel row of ``v`` over the ``rows.n`` atoms into ``k`` (the data of ``k_obj``)
    and ``k(v, v)`` into ``kappa`` (:func:`analyse`); False (nothing computed) for a row
    wider than the rows' buffer or a value that is not finite."""
    cdef Py_buffer vb, db, sb
    cdef Py_ssize_t n = rows.n, d = rows.d, w, width, i
    cdef double total = 0.0
    cdef double* x
    acquire(v, &vb, 1)
    w = vb.shape[0]
    width = d if d > w else w
    x = <double*>malloc((width + 1) * sizeof(double))
    if x == NULL:
        PyBuffer_Release(&vb)
        raise MemoryError()
    for i in range(w):
        x[i] = (<const double*>(<const char*>vb.buf + i * vb.strides[0]))[0]
    PyBuffer_Release(&vb)
    memset(x + w, 0, (width - w) * sizeof(double))
    kappa[0] = self_similarity(kern, x, <int>width)
    try:
        if n:
            acquire(rows.data, &db, 2)
            try:
                if width > db.shape[1] or db.strides[1] != sizeof(double):
                    return False  # (a buffer narrower than the row, or of strided rows)
                acquire(rows.norms_buffer(), &sb, 1)
                try:
                    if sb.shape[0] < n or sb.strides[0] != sizeof(double):
                        raise ValueError("analyse: the rows' squared norms are not n numbers "
                                         "in a row")
                    if kernel_row(kern, <const double*>db.buf, db.strides[0] // sizeof(double),
                                  n, <int>width, <const double*>sb.buf, x, <int>width, k):
                        # (numpy's exp at every length, as ``row_from_norms``: libm's may
                        # differ from it in the last bit)
                        numpy_exp(k_obj, k, n)
                finally:
                    PyBuffer_Release(&sb)
            finally:
                PyBuffer_Release(&db)
    finally:
        free(x)
    if not kern.bounded:  # (a bounded kernel's values are in [0, 1])
        for i in range(n):
            total += k[i]
        if not (isfinite(kappa[0]) and isfinite(total)):
            return False
    return True


cdef double solve_against(factor, Py_ssize_t m, const double* k, double kappa,
                          double* h) except? -1.0:
    """``h = L^{-1} k`` over the ``m`` rows of ``factor``'s packed ``L``; returns the residual
    ``kappa - h.h`` (:func:`half_solve`)."""
    cdef Py_buffer lb
    cdef double residual
    acquire(factor.factor_storage(), &lb, 1)
    try:
        if lb.shape[0] < m * (m + 1) // 2 or (m and lb.strides[0] != sizeof(double)):
            raise ValueError(f"analyse: a factor of {lb.shape[0]} numbers holds fewer than "
                             f"{m} rows")
        with nogil:
            residual = half_solve(<const double*>lb.buf, m, k, kappa, h)
    finally:
        PyBuffer_Release(&lb)
    return residual


cdef int acquire(obj, Py_buffer* view, int ndim, bint writable=False) except -1:
    """``view`` of ``obj``: a float64 buffer of ``ndim`` dimensions with its strides (a typed
    memoryview's checks, without its object); the caller releases it."""
    PyObject_GetBuffer(obj, view, PyBUF_RECORDS if writable else PyBUF_RECORDS_RO)
    if (view.ndim != ndim or view.itemsize != sizeof(double) or view.format == NULL
            or view.format[0] != b'd' or view.format[1] != 0):
        PyBuffer_Release(view)
        raise ValueError(f"a {ndim}-d float64 array expected, got {type(obj).__name__}")
    return 0


cdef double* acquire_row(obj, Py_buffer* view, bint writable) except NULL:
    """:func:`acquire` of a contiguous float64 vector; returns its data (the caller releases
    ``view``)."""
    acquire(obj, view, 1, writable)
    if view.shape[0] > 1 and view.strides[0] != sizeof(double):
        PyBuffer_Release(view)
        raise ValueError("a contiguous float64 vector expected, got a strided one")
    return <double*>view.buf if view.buf != NULL else <double*>&EMPTY


cdef double pairwise_sum(const double* a, Py_ssize_t n) noexcept nogil:
    """numpy's pairwise summation (``np.sum`` of a contiguous float64 vector), term for term:
    blocks of at most 128 in eight running sums, halves (multiples of 8) above."""
    cdef double r[8]
    cdef double res = 0.0
    cdef Py_ssize_t i, q, half
    if n < 8:
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        for q in range(8):
            r[q] = a[q]
        i = 8
        while i < n - n % 8:
            for q in range(8):
                r[q] += a[i + q]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a, half) + pairwise_sum(a + half, n - half)


def usage_step(usage, k, double residual, double count, double mean, double horizon,
               double margin):
    r"""The usage rule's step (``SharedEmbedding.swap_in``), in place, ``O(m)``: each atom's
    discounted share of the point's kernel row ``k``, :math:`U_j \leftarrow \gamma U_j + k_j /
    \sum_i k_i` (no share for a zero row), the discounted count :math:`N \leftarrow \gamma N +
    1` and the mean residual :math:`\bar r \leftarrow \bar r + (r - \bar r) / \min(N, H)`, with
    :math:`\gamma = 1 - 1/H` (``horizon`` :math:`H`); then, with ``margin`` :math:`\mu > 0`,
    the atom to leave: the least used (the first of the smallest :math:`U_j`) if
    :math:`U_j < N / (\mu m)` and ``residual`` :math:`r > \bar r` (``margin=0``: none).

    Returns ``(N, r_bar, j)``, ``j = -1`` for none. ``usage`` and ``k`` have the ``m`` atoms'
    entries (a refused call changes nothing)."""
    cdef Py_buffer ub, kb
    cdef double* u = acquire_row(usage, &ub, True)
    cdef const double* row
    cdef Py_ssize_t m = ub.shape[0], j
    try:
        row = acquire_row(k, &kb, False)
        try:
            if kb.shape[0] != m:
                raise ValueError(f"usage_step: a kernel row of {kb.shape[0]} entries for {m} "
                                 "atoms")
            if not horizon >= 1.0:
                raise ValueError(f"usage_step: horizon must be at least 1, not {horizon!r}")
            with nogil:
                j = usage_update(u, row, m, residual, &count, &mean, horizon, margin)
        finally:
            PyBuffer_Release(&kb)
    finally:
        PyBuffer_Release(&ub)
    return count, mean, j


cdef Py_ssize_t usage_update(double* usage, const double* k, Py_ssize_t m, double residual,
                             double* count, double* mean, double horizon,
                             double margin) noexcept nogil:
    """:func:`usage_step`'s arithmetic on checked buffers; returns ``j``."""
    cdef Py_ssize_t i, j = -1
    cdef double decay = 1.0 - 1.0 / horizon, total
    for i in range(m):
        usage[i] = usage[i] * decay
    total = 0.0 + pairwise_sum(k, m) if m else 0.0
    if total > 0.0:
        for i in range(m):
            usage[i] = usage[i] + k[i] / total
    count[0] = decay * count[0] + 1.0
    mean[0] = mean[0] + (residual - mean[0]) / (count[0] if count[0] < horizon else horizon)
    if margin > 0.0 and m > 0:
        j = 0
        for i in range(1, m):
            if usage[i] < usage[j]:
                j = i
        if not (usage[j] < count[0] / (margin * m) and residual > mean[0]):
            j = -1
    return j
