"""The operations of okoco.linalg.SlotInverse, compiled: solve, append (bordering) and remove
(the Schur complement, in one pass with a deferred bordering), on the object's own buffers.

``SlotInverse`` keeps ``P`` in the lower triangle of one array and ``M`` in its strict upper
one (``M``'s diagonal apart), over the slots of its caller's ring, or, in its compact form,
over slots of its own mapped to the caller's by ``_outer``. A paired inverse
(``SlotInverse.pair``) keeps a second ``P`` in the upper triangle of the same array, shifted by
one column (``_upper``), and neither keeps ``M`` (``_keeps_m`` false: it is recomputed from
the caller's points). Its Python methods make room (the
arrays grow, the compact form is created) and call these; the windowed KONS's compiled step
(okoco._core._kons) calls the ``cdef`` forms directly. The caller runs them in a one-thread
BLAS scope (okoco._blas.scipy_one_thread).
"""

import numpy as np

from libc.math cimport isfinite, log

from okoco._core._linalg cimport window_swap, window_symv, window_syr


cdef inline double* data(double[:, ::1] P, bint upper) noexcept nogil:
    """Where the triangle of P starts: the array's data, or its second column (upper)."""
    return &P[0, 1] if upper else &P[0, 0]


cdef int flush(object window) except -1:
    """Apply a deferred append to P."""
    deferred = window._deferred
    if deferred is None:
        return 0
    window._deferred = None
    cdef double[:, ::1] P = window.P
    cdef const double[::1] b = deferred[0]
    cdef double inv_sigma = deferred[1]
    cdef bint upper = window._upper
    if b.shape[0]:
        with nogil:
            window_syr(data(P, upper), P.shape[1], <int>b.shape[0], &b[0], inv_sigma, upper)
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
    """h <- P e over the first n slots of the caller's ring (work: 2 x own slots)."""
    flush(window)
    cdef double[:, ::1] P = window.P
    cdef bint upper = window._upper
    outer_obj = window._outer
    if outer_obj is None:
        with nogil:
            window_symv(data(P, upper), P.shape[1], <int>n, e, h, upper)
        return 0
    cdef const Py_ssize_t[::1] outer = outer_obj
    cdef Py_ssize_t a = in_use(outer), j
    with nogil:
        for j in range(a):
            work[j] = e[outer[j]] if outer[j] >= 0 else 0.0
        window_symv(data(P, upper), P.shape[1], <int>a, work, &work[a], upper)
        for j in range(n):
            h[j] = 0.0
        for j in range(a):
            if outer[j] >= 0:
                h[outer[j]] = work[a + j]
    return 0


cdef int append_to(object window, Py_ssize_t slot, const double* a, Py_ssize_t m, double sigma,
                   const double* column, double diagonal, Py_ssize_t n, bint defer) except -1:
    """SlotInverse.append, its room made: border with the atom at the caller's ``slot``
    (``a = P c`` and ``column`` over the first ``m`` slots, ``n`` the caller's slots)."""
    flush(window)
    cdef double[:, ::1] P = window.P
    cdef double[::1] diag = window.diagonal, b
    cdef Py_ssize_t[::1] outer
    cdef Py_ssize_t i, j, own = slot, dim = n, used
    cdef bint keeps_m = window._keeps_m
    outer_obj = window._outer
    if outer_obj is None:
        border_obj = np.zeros(n)
        b = border_obj
        with nogil:
            for i in range(m):
                b[i] = a[i]
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
        border_obj = np.zeros(dim)
        b = border_obj
        used = max(in_use(outer), own + 1)
        with nogil:
            for j in range(used):
                i = outer[j]
                if 0 <= i < m and j != own:
                    b[j] = a[i]
                if not keeps_m or j == own:
                    continue
                if j < own:
                    P[j, own] = column[i] if 0 <= i < m else 0.0
                else:
                    P[own, j] = column[i] if 0 <= i < m else 0.0
        outer[own] = slot
        window._held_slots = None
    b[own] = -1.0
    window._deferred = (border_obj, 1.0 / sigma)
    diag[own] = diagonal
    window.size += 1
    if not defer:
        flush(window)
    modified(window, dim)
    return 0


cdef double remove_from(object window, Py_ssize_t slot, Py_ssize_t n,
                        double* work) except? -1.0:
    """SlotInverse.remove: the atom at the caller's ``slot`` of the first ``n`` out of P (and
    a deferred append in the same pass); returns log P_jj, or 0 if P was recomputed instead
    (work: 2 x own slots)."""
    cdef Py_ssize_t own = slot, dim = n, used = n, i
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
    deferred = window._deferred
    if deferred is not None and deferred[0].shape[0] != dim:
        flush(window)  # (another size: applied on its own first)
        deferred = None
    window._deferred = None
    cdef double[:, ::1] P = window.P
    cdef double[::1] diag = window.diagonal
    cdef const double[::1] b
    cdef double inv_sigma = 0.0, pivot, m_jj = diag[own]
    cdef const double* bp = work
    cdef bint upper = window._upper, keeps_m = window._keeps_m
    if deferred is not None:
        b = deferred[0]
        inv_sigma = deferred[1]
        bp = &b[0]
    # exactly, P_jj = 1 / (M_jj - the part the other atoms explain) >= 1 / M_jj: a pivot
    # below half of that is rounding (the downdate would divide by it): P is then left as it
    # was, and recomputed from M instead
    with nogil:
        pivot = window_swap(data(P, upper), P.shape[1], used, bp, inv_sigma, own, m_jj, work,
                            upper)
        if keeps_m:  # M's row and column (strict upper triangle)
            for i in range(own):
                P[i, own] = 0.0
            for i in range(own + 1, used):
                P[own, i] = 0.0
    diag[own] = 0.0
    window.size -= 1
    if not (isfinite(pivot) and pivot * m_jj >= 0.5):
        recompute(window)
        return 0.0  # (log det then misses this removal's term: a statistic only)
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
           const double[::1] column, double diagonal, Py_ssize_t n, bint defer):
    """:meth:`SlotInverse.append`, its room made (``P`` holds ``n`` slots; in the compact
    form, an own slot is free)."""
    cdef double zero = 0.0
    append_to(window, slot, &a[0] if a.shape[0] else &zero, a.shape[0], sigma,
              &column[0] if column.shape[0] else &zero, diagonal, n, defer)


def remove(window, Py_ssize_t slot, Py_ssize_t n):
    """:meth:`SlotInverse.remove`: returns ``log P_jj`` (0 if ``P`` was recomputed)."""
    work = np.empty(2 * (n if window._outer is None else window._outer.shape[0]) + 1)
    cdef double[::1] w = work
    return remove_from(window, slot, n, &w[0])


def flush_deferred(window):
    """:meth:`SlotInverse.flush`."""
    flush(window)
