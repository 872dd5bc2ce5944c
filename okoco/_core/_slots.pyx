"""The operations of okoco.linalg.SlotInverse, compiled: solve, append (bordering) and remove
(the Schur complement), on the object's own buffers.

``SlotInverse`` keeps ``P`` in the lower triangle of one array and ``M`` in its strict upper
one (``M``'s diagonal apart), over the slots of its caller's ring, or, in its compact form,
over slots of its own mapped to the caller's by ``_outer``. A paired inverse
(``SlotInverse.pair``) keeps a second ``P`` in the upper triangle of the same array, shifted by
one column (``_upper``), and neither keeps ``M`` (``_keeps_m`` false: it is recomputed from
the caller's points). Its Python methods make room (the
arrays grow, the compact form is created) and call these; the windowed KONS's compiled step
(okoco._core._kons) calls the ``cdef`` forms directly. The caller runs them in a one-thread
BLAS scope (okoco._blas.scipy_one_thread).

**Pending terms.** Each append and removal is a rank-one change of ``P`` (``+ b b^T / sigma``,
``- p p^T / p_jj``). Made one at a time, each is a pass over the whole triangle (a ``dsyr``,
memory-bound: 26 us at 500 slots on one thread). Instead they are kept as rows of
``_pending``, scaled by the square root of their weight, the additions in its first ``TERMS``
rows and the subtractions in the next ``TERMS`` (``_pending_terms``: how many of each, and the
slots they span), so that the true inverse is ``P + U_+^T U_+ - U_-^T U_-``; a product with it
adds two thin products per block, and when a block is full both are applied in one ``dsyrk``
each (``flush``): a rank-16 update costs about what four or five rank-one updates do (97 us at
500 slots, 27 at 250, on one thread: it is compute-bound where they are memory-bound). A
removed slot's row and column are zero in the true inverse exactly: they are zeroed in ``P``
and in every pending row.
"""

import numpy as np

from libc.math cimport fabs, isfinite, log, sqrt
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dgemv

from okoco._core._linalg cimport window_clear, window_column, window_symv, window_syrk

cdef enum:
    TERMS = 16  # pending terms of each sign before they are applied to P

#: The rows of ``SlotInverse._pending``: the additions' block, then the subtractions'.
PENDING_ROWS = 2 * TERMS


cdef inline double* data(double[:, ::1] P, bint upper) noexcept nogil:
    """Where the triangle of P starts: the array's data, or its second column (upper)."""
    return &P[0, 1] if upper else &P[0, 0]


cdef int flush(object window) except -1:
    """Apply the pending terms to P (one dsyrk per sign)."""
    terms_obj = window._pending_terms
    if terms_obj is None:
        return 0
    cdef Py_ssize_t[::1] terms = terms_obj
    if not (terms[0] or terms[1]):
        return 0
    cdef double[:, ::1] P = window.P
    cdef const double[:, ::1] U = window._pending
    cdef bint upper = window._upper
    cdef int n = <int>terms[2]
    with nogil:
        window_syrk(data(P, upper), P.shape[1], n, <int>terms[0], 1.0, &U[0, 0], U.shape[1],
                    upper)
        window_syrk(data(P, upper), P.shape[1], n, <int>terms[1], -1.0, &U[TERMS, 0],
                    U.shape[1], upper)
    terms[0] = terms[1] = terms[2] = 0
    return 0


cdef double* next_term(object window, double weight, Py_ssize_t n) except NULL:
    """A new pending term of weight ``weight`` over the first ``n`` slots: the row the caller
    fills with the term's vector times ``sqrt(|weight|)`` (the rest of the row is zero); the
    pending terms are applied first if its block is full."""
    cdef Py_ssize_t width = window.P.shape[0], side = 0 if weight > 0.0 else 1
    terms_obj = window._pending_terms
    if terms_obj is None:
        terms_obj = window._pending_terms = np.zeros(3, dtype=np.intp)
    cdef Py_ssize_t[::1] terms = terms_obj
    if terms[side] == TERMS:
        flush(window)
    rows_obj = window._pending
    if rows_obj is None or rows_obj.shape[1] != width:  # (P was resized: nothing pending)
        rows_obj = window._pending = np.zeros((2 * TERMS, width))
    cdef double[:, ::1] rows = rows_obj
    cdef double* row = &rows[side * TERMS + terms[side], 0]
    if n < width:
        memset(row + n, 0, (width - n) * sizeof(double))
    terms[side] += 1
    if n > terms[2]:
        terms[2] = n
    return row


cdef void add_pending(const double[:, ::1] U, const Py_ssize_t[::1] terms, const double* x,
                      double* out, int n) noexcept nogil:
    """out += (U_+^T U_+ - U_-^T U_-) x over the first n slots (two thin products a block)."""
    cdef int k, one = 1, ldu = <int>U.shape[1]
    cdef double unit = 1.0, zero = 0.0, sign
    cdef double t[TERMS]
    cdef Py_ssize_t block
    for block in range(2):
        k = <int>terms[block]
        if k == 0 or n == 0:
            continue
        sign = 1.0 if block == 0 else -1.0
        dgemv(b"T", &n, &k, &unit, <double*>&U[block * TERMS, 0], &ldu, <double*>x, &one,
              &zero, t, &one)
        dgemv(b"N", &n, &k, &sign, <double*>&U[block * TERMS, 0], &ldu, t, &one, &unit, out,
              &one)


cdef int clear_pending(object window, Py_ssize_t j) except -1:
    """Slot j's entry of every pending term set to zero (its atom left)."""
    terms_obj = window._pending_terms
    if terms_obj is None:
        return 0
    cdef const Py_ssize_t[::1] terms = terms_obj
    cdef double[:, ::1] U = window._pending
    cdef Py_ssize_t k
    for k in range(terms[0]):
        U[k, j] = 0.0
    for k in range(terms[1]):
        U[TERMS + k, j] = 0.0
    return 0


cdef int recompute(object window) except -1:
    """P recomputed from M now, or, for one of a pair (whose M comes from the caller's points,
    which may be half-way through a step), by the caller at the end of the step."""
    if window._keeps_m:
        window.refresh()
    else:
        window._due = True
    return 0


cdef int modified(object window, Py_ssize_t n) except -1:
    """One more modification: P is recomputed from M every 16 n of them (measured: P M - I
    stays within 2e-12 at alpha = 0.01 after 4 n and after 16 n, within 1e-10 at 0.001)."""
    window._mods += 1
    if window._mods >= max(16 * n, 64):
        recompute(window)
    return 0


cdef Py_ssize_t in_use(const Py_ssize_t[::1] outer) noexcept nogil:
    """The compact form's own slots up to the last one holding an atom: P is zero beyond
    (a free slot's row and column are), and the lowest free slot is taken first, so this is
    about the most atoms held at once lately, not the slots ever allocated."""
    cdef Py_ssize_t j = outer.shape[0]
    while j > 0 and outer[j - 1] < 0:
        j -= 1
    return j


cdef int solve_into(object window, const double* e, double* h, Py_ssize_t n,
                    double* work) except -1:
    """h <- P e over the first n slots of the caller's ring, pending terms included (work:
    2 x own slots)."""
    cdef double[:, ::1] P = window.P
    cdef bint upper = window._upper
    cdef const double[:, ::1] U
    cdef const Py_ssize_t[::1] terms
    cdef bint pending = False
    terms_obj = window._pending_terms
    if terms_obj is not None:
        terms = terms_obj
        pending = terms[0] or terms[1]
        if pending:
            U = window._pending
    outer_obj = window._outer
    if outer_obj is None:
        with nogil:
            window_symv(data(P, upper), P.shape[1], <int>n, e, h, upper)
            if pending:
                add_pending(U, terms, e, h, <int>n)
        return 0
    cdef const Py_ssize_t[::1] outer = outer_obj
    cdef Py_ssize_t a = in_use(outer), j
    with nogil:
        for j in range(a):
            work[j] = e[outer[j]] if outer[j] >= 0 else 0.0
        window_symv(data(P, upper), P.shape[1], <int>a, work, &work[a], upper)
        if pending:
            add_pending(U, terms, work, &work[a], <int>a)
        for j in range(n):
            h[j] = 0.0
        for j in range(a):
            if outer[j] >= 0:
                h[outer[j]] = work[a + j]
    return 0


cdef int append_to(object window, Py_ssize_t slot, const double* a, Py_ssize_t m, double sigma,
                   const double* column, double diagonal, Py_ssize_t n) except -1:
    """SlotInverse.append, its room made: border with the atom at the caller's ``slot``
    (``a = P c`` and ``column`` over the first ``m`` slots, ``n`` the caller's slots), as a
    pending term ``+ b b^T / sigma``, ``b = (a, -1)``."""
    cdef double[:, ::1] P = window.P
    cdef double[::1] diag = window.diagonal
    cdef Py_ssize_t[::1] outer
    cdef Py_ssize_t i, j, own = slot, dim = n, used = n
    cdef bint keeps_m = window._keeps_m
    cdef double scale = sqrt(fabs(1.0 / sigma))
    cdef double* b
    outer_obj = window._outer
    if outer_obj is None:
        b = next_term(window, 1.0 / sigma, n)
        with nogil:
            for i in range(m):
                b[i] = scale * a[i]
            for i in range(m, n):
                b[i] = 0.0
            if keeps_m:  # M's new row and column, in its strict upper triangle
                for i in range(own):
                    P[i, own] = column[i]
                for i in range(own + 1, m):
                    P[own, i] = column[i]
    else:
        outer = outer_obj
        dim = outer.shape[0]
        for j in range(dim):
            if outer[j] < 0:
                own = j
                break
        used = max(in_use(outer), own + 1)
        b = next_term(window, 1.0 / sigma, used)
        with nogil:
            for j in range(used):
                i = outer[j]
                b[j] = scale * a[i] if 0 <= i < m and j != own else 0.0
                if not keeps_m or j == own:
                    continue
                if j < own:
                    P[j, own] = column[i] if 0 <= i < m else 0.0
                else:
                    P[own, j] = column[i] if 0 <= i < m else 0.0
        outer[own] = slot
        window._held_slots = None
    b[own] = -scale
    diag[own] = diagonal
    window.size += 1
    modified(window, dim)
    return 0


cdef double remove_from(object window, Py_ssize_t slot, Py_ssize_t n,
                        double* work) except? -1.0:
    """SlotInverse.remove: the atom at the caller's ``slot`` of the first ``n`` out of P (a
    pending term ``- p p^T / p_jj``, ``p`` the true ``P[:, j]``, and ``j``'s row and column
    zeroed); returns log P_jj, or 0 if P was recomputed instead (work: 2 x own slots)."""
    cdef Py_ssize_t own = slot, dim = n, used = n, i, k
    cdef Py_ssize_t[::1] outer
    outer_obj = window._outer
    if outer_obj is not None:
        outer = outer_obj
        dim = outer.shape[0]
        used = in_use(outer)  # (P is zero beyond: the downdate needs only these)
        for i in range(dim):
            if outer[i] == slot:
                own = i
                break
        outer[own] = -1
        window._held_slots = None
    cdef double[:, ::1] P = window.P
    cdef double[::1] diag = window.diagonal
    cdef double pivot, scale, m_jj = diag[own]
    cdef bint upper = window._upper, keeps_m = window._keeps_m
    cdef double* row
    cdef int ui = <int>used, one = 1, ldu, count
    cdef double sign, unit = 1.0
    cdef const double[:, ::1] U
    cdef const Py_ssize_t[::1] terms
    terms_obj = window._pending_terms
    with nogil:
        window_column(data(P, upper), P.shape[1], used, own, work, upper)
    if terms_obj is not None:  # the pending terms' part of the column
        terms = terms_obj
        if terms[0] or terms[1]:
            U = window._pending
            ldu = <int>U.shape[1]
            for k in range(2):
                count = <int>terms[k]
                sign = 1.0 if k == 0 else -1.0
                if count:
                    with nogil:
                        dgemv(b"N", &ui, &count, &sign, <double*>&U[k * TERMS, 0], &ldu,
                              <double*>&U[k * TERMS, own], &ldu, &unit, work, &one)
    pivot = work[own]
    if keeps_m:  # M's row and column (strict upper triangle)
        for i in range(own):
            P[i, own] = 0.0
        for i in range(own + 1, used):
            P[own, i] = 0.0
    diag[own] = 0.0
    window.size -= 1
    # exactly, P_jj = 1 / (M_jj - the part the other atoms explain) >= 1 / M_jj: a pivot
    # below half of that is rounding (the downdate would divide by it): P is then left as it
    # was, and recomputed from M instead
    if not (isfinite(pivot) and pivot * m_jj >= 0.5):
        recompute(window)
        return 0.0  # (log det then misses this removal's term: a statistic only)
    row = next_term(window, -1.0 / pivot, used)
    scale = sqrt(1.0 / pivot)
    with nogil:
        for i in range(used):
            row[i] = scale * work[i]
        window_clear(data(P, upper), P.shape[1], used, own, upper)
    clear_pending(window, own)
    modified(window, dim)
    return log(pivot)


def solve(window, const double[::1] e, double[::1] out):
    """``out <- P e`` over the first ``len(e)`` slots of the caller's ring."""
    cdef Py_ssize_t n = e.shape[0]
    work = np.empty(2 * (n if window._outer is None else window._outer.shape[0]) + 1)
    cdef double[::1] w = work
    if n:
        solve_into(window, &e[0], &out[0], n, &w[0])


def append(window, Py_ssize_t slot, const double[::1] a, double sigma,
           const double[::1] column, double diagonal, Py_ssize_t n):
    """:meth:`SlotInverse.append`, its room made (``P`` holds ``n`` slots; in the compact
    form, an own slot is free)."""
    cdef double zero = 0.0
    append_to(window, slot, &a[0] if a.shape[0] else &zero, a.shape[0], sigma,
              &column[0] if column.shape[0] else &zero, diagonal, n)


def remove(window, Py_ssize_t slot, Py_ssize_t n):
    """:meth:`SlotInverse.remove`: returns ``log P_jj`` (0 if ``P`` was recomputed)."""
    work = np.empty(2 * (n if window._outer is None else window._outer.shape[0]) + 1)
    cdef double[::1] w = work
    return remove_from(window, slot, n, &w[0])


def flush_pending(window):
    """:meth:`SlotInverse.flush`."""
    flush(window)
