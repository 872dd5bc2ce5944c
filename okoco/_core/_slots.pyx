"""The operations of okoco.linalg.SlotInverse, compiled: solve, append (bordering) and remove
(the Schur complement), on the object's own buffers.

``SlotInverse`` keeps ``P`` in the lower triangle of one array and ``M`` in its strict upper
one (``M``'s diagonal apart), over the slots of its caller's ring, or, in its compact form,
over slots of its own mapped to the caller's by ``outer``. A paired inverse
(``SlotInverse.pair``) keeps a second ``P`` in the upper triangle of the same array, shifted by
one column (``upper``), and neither keeps ``M`` (``keeps_m`` false: it is recomputed from
the caller's points). Its Python methods make room (the
arrays grow, the compact form is created) and call these; the windowed KONS's compiled step
(okoco._core._kons) calls the ``cdef`` forms directly. The caller runs them in a one-thread
BLAS scope (okoco._blas.scipy_one_thread).

**Typed state.** Every operation works on a :class:`SlotViews`: typed views of one inverse's
buffers (``P`` and ``M``, ``M``'s diagonal, the pending terms and their counts, the compact
form's map) and its flags, bound by :meth:`SlotViews.bind` at the start of the operation. A
view is taken again only when its array was reallocated (as ``okoco._core._steps.StepCore``
binds a learner's rows), so a caller that keeps one ``SlotViews`` per inverse (the windowed
KONS's step object) pays a few identity checks a call, where taking every view afresh cost
about a quarter of a microsecond each (up to a dozen an operation). The module reads and
writes only the inverse's public state (its arrays, ``size``, ``pending``, ``pending_terms``,
``outer``, ``upper``, ``keeps_m``) and calls its public methods (``count_modification``,
``schedule_refresh``): its counters and the policy of its recomputation are the inverse's.

**Pending terms.** Each append and removal is a rank-one change of ``P`` (``+ b b^T / sigma``,
``- p p^T / p_jj``). Made one at a time, each is a pass over the whole triangle (a ``dsyr``,
memory-bound: 26 us at 500 slots on one thread). Instead they are kept as rows of
``pending``, scaled by the square root of their weight, the additions in its first ``TERMS``
rows and the subtractions in the next ``TERMS`` (``pending_terms``: how many of each, and the
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

#: The rows of ``SlotInverse.pending``: the additions' block, then the subtractions'.
PENDING_ROWS = 2 * TERMS


cdef class SlotViews:
    """Typed views of one ``SlotInverse``'s buffers and flags (module docstring)."""

    cdef int bind(self, object window) except -1:
        """Views of ``window``'s buffers, its layout (the compact form's map, ``upper``,
        ``keeps_m``) read again only when its array was reallocated (or another inverse is
        bound): the layout changes only with the array (``SlotInverse.make_room``,
        ``pair``, ``rebuild``)."""
        cdef object P = window.P, outer
        if P is not self.P_obj or window is not self.window:
            self.window = window
            self.P, self.P_obj = P, P
            self.diag = window.diagonal
            outer = window.outer
            self.compact = outer is not None
            if self.compact:
                self.outer = outer
            self.upper, self.keeps_m = window.upper, window.keeps_m
        self.bind_pending(window.pending_terms, window.pending)
        return 0

    cdef int bind_pending(self, object terms, object U) except -1:
        """Views of the pending terms' counts and rows (``None``: none yet)."""
        if terms is not self.terms_obj:
            self.terms_obj = terms
            if terms is not None:
                self.terms = terms
        if U is not self.U_obj:
            self.U_obj = U
            if U is not None:
                self.U = U
        self.pending = terms is not None and (self.terms[0] or self.terms[1])
        return 0


cdef inline double* data(SlotViews s) noexcept nogil:
    """Where the triangle of P starts: the array's data, or its second column (upper)."""
    return &s.P[0, 1] if s.upper else &s.P[0, 0]


cdef int flush_views(SlotViews s) except -1:
    """Apply the pending terms to P (one dsyrk per sign)."""
    if not s.pending:
        return 0
    cdef int n = <int>s.terms[2]
    with nogil:
        window_syrk(data(s), s.P.shape[1], n, <int>s.terms[0], 1.0, &s.U[0, 0], s.U.shape[1],
                    s.upper)
        window_syrk(data(s), s.P.shape[1], n, <int>s.terms[1], -1.0, &s.U[TERMS, 0],
                    s.U.shape[1], s.upper)
    s.terms[0] = s.terms[1] = s.terms[2] = 0
    s.pending = False
    return 0


cdef int flush(object window) except -1:
    """Apply ``window``'s pending terms to P (one dsyrk per sign)."""
    cdef SlotViews s = SlotViews()
    s.bind(window)
    return flush_views(s)


cdef double* next_term(SlotViews s, double weight, Py_ssize_t n) except NULL:
    """A new pending term of weight ``weight`` over the first ``n`` slots: the row the caller
    fills with the term's vector times ``sqrt(|weight|)`` (the rest of the row is zero); the
    pending terms are applied first if its block is full."""
    cdef Py_ssize_t width = s.P.shape[0], side = 0 if weight > 0.0 else 1
    window = s.window
    if s.terms_obj is None:
        terms = window.pending_terms = np.zeros(3, dtype=np.intp)
        s.bind_pending(terms, s.U_obj)
    if s.terms[side] == TERMS:
        flush_views(s)
    if s.U_obj is None or s.U.shape[1] != width:  # (P was resized: nothing pending)
        U = window.pending = np.zeros((2 * TERMS, width))
        s.bind_pending(s.terms_obj, U)
    cdef double* row = &s.U[side * TERMS + s.terms[side], 0]
    if n < width:
        memset(row + n, 0, (width - n) * sizeof(double))
    s.terms[side] += 1
    if n > s.terms[2]:
        s.terms[2] = n
    s.pending = True
    return row


cdef void add_pending(SlotViews s, const double* x, double* out, int n) noexcept nogil:
    """out += (U_+^T U_+ - U_-^T U_-) x over the first n slots (two thin products a block)."""
    cdef int k, one = 1, ldu = <int>s.U.shape[1]
    cdef double unit = 1.0, zero = 0.0, sign
    cdef double t[TERMS]
    cdef Py_ssize_t block
    for block in range(2):
        k = <int>s.terms[block]
        if k == 0 or n == 0:
            continue
        sign = 1.0 if block == 0 else -1.0
        dgemv(b"T", &n, &k, &unit, &s.U[block * TERMS, 0], &ldu, <double*>x, &one,
              &zero, t, &one)
        dgemv(b"N", &n, &k, &sign, &s.U[block * TERMS, 0], &ldu, t, &one, &unit, out,
              &one)


cdef int clear_pending(SlotViews s, Py_ssize_t j) except -1:
    """Slot j's entry of every pending term set to zero (its atom left)."""
    if s.terms_obj is None:
        return 0
    cdef Py_ssize_t k
    for k in range(s.terms[0]):
        s.U[k, j] = 0.0
    for k in range(s.terms[1]):
        s.U[TERMS + k, j] = 0.0
    return 0


cdef int modified(SlotViews s, Py_ssize_t n) except -1:
    """One more modification over ``n`` slots (``SlotInverse.count_modification``: ``P`` is
    recomputed from ``M`` every ``16 n`` of them)."""
    s.window.count_modification(n)
    return 0


cdef Py_ssize_t in_use(const Py_ssize_t[::1] outer) noexcept nogil:
    """The compact form's own slots up to the last one holding an atom: P is zero beyond
    (a free slot's row and column are), and the lowest free slot is taken first, so this is
    about the most atoms held at once lately, not the slots ever allocated."""
    cdef Py_ssize_t j = outer.shape[0]
    while j > 0 and outer[j - 1] < 0:
        j -= 1
    return j


cdef int solve_views(SlotViews s, const double* e, double* h, Py_ssize_t n,
                     double* work) except -1:
    """h <- P e over the first n slots of the caller's ring, pending terms included (``s``
    bound; work: 2 x own slots)."""
    cdef Py_ssize_t a, j
    if not s.compact:
        with nogil:
            window_symv(data(s), s.P.shape[1], <int>n, e, h, s.upper)
            if s.pending:
                add_pending(s, e, h, <int>n)
        return 0
    with nogil:
        a = in_use(s.outer)
        for j in range(a):
            work[j] = e[s.outer[j]] if s.outer[j] >= 0 else 0.0
        window_symv(data(s), s.P.shape[1], <int>a, work, &work[a], s.upper)
        if s.pending:
            add_pending(s, work, &work[a], <int>a)
        for j in range(n):
            h[j] = 0.0
        for j in range(a):
            if s.outer[j] >= 0:
                h[s.outer[j]] = work[a + j]
    return 0


cdef int solve_into(object window, const double* e, double* h, Py_ssize_t n,
                    double* work) except -1:
    """:func:`solve_views` on ``window``'s views, taken for this call."""
    cdef SlotViews s = SlotViews()
    s.bind(window)
    return solve_views(s, e, h, n, work)


cdef int append_views(SlotViews s, Py_ssize_t slot, const double* a, Py_ssize_t m,
                      double sigma, const double* column, double diagonal,
                      Py_ssize_t n) except -1:
    """SlotInverse.append, its room made (``s`` bound): border with the atom at the caller's
    ``slot`` (``a = P c`` and ``column`` over the first ``m`` slots, ``n`` the caller's
    slots), as a pending term ``+ b b^T / sigma``, ``b = (a, -1)``."""
    cdef Py_ssize_t i, j, own = slot, dim = n, used = n
    cdef double scale = sqrt(fabs(1.0 / sigma))
    cdef double* b
    if not s.compact:
        b = next_term(s, 1.0 / sigma, n)
        with nogil:
            for i in range(m):
                b[i] = scale * a[i]
            for i in range(m, n):
                b[i] = 0.0
            if s.keeps_m:  # M's new row and column, in its strict upper triangle
                for i in range(own):
                    s.P[i, own] = column[i]
                for i in range(own + 1, m):
                    s.P[own, i] = column[i]
    else:
        dim = s.outer.shape[0]
        for j in range(dim):
            if s.outer[j] < 0:
                own = j
                break
        used = max(in_use(s.outer), own + 1)
        b = next_term(s, 1.0 / sigma, used)
        with nogil:
            for j in range(used):
                i = s.outer[j]
                b[j] = scale * a[i] if 0 <= i < m and j != own else 0.0
                if not s.keeps_m or j == own:
                    continue
                if j < own:
                    s.P[j, own] = column[i] if 0 <= i < m else 0.0
                else:
                    s.P[own, j] = column[i] if 0 <= i < m else 0.0
        s.outer[own] = slot
    b[own] = -scale
    s.diag[own] = diagonal
    s.window.size += 1
    modified(s, dim)
    return 0


cdef int append_to(object window, Py_ssize_t slot, const double* a, Py_ssize_t m, double sigma,
                   const double* column, double diagonal, Py_ssize_t n) except -1:
    """:func:`append_views` on ``window``'s views, taken for this call."""
    cdef SlotViews s = SlotViews()
    s.bind(window)
    return append_views(s, slot, a, m, sigma, column, diagonal, n)


cdef double remove_views(SlotViews s, Py_ssize_t slot, Py_ssize_t n,
                         double* work) except? -1.0:
    """SlotInverse.remove (``s`` bound): the atom at the caller's ``slot`` of the first ``n``
    out of P (a pending term ``- p p^T / p_jj``, ``p`` the true ``P[:, j]``, and ``j``'s row
    and column zeroed); returns log P_jj, or 0 if P was recomputed instead (work: 2 x own
    slots)."""
    cdef Py_ssize_t own = slot, dim = n, used = n, i, k
    if s.compact:
        dim = s.outer.shape[0]
        used = in_use(s.outer)  # (P is zero beyond: the downdate needs only these)
        for i in range(dim):
            if s.outer[i] == slot:
                own = i
                break
        s.outer[own] = -1
    cdef double pivot, scale, m_jj = s.diag[own]
    cdef double* row
    cdef int ui = <int>used, one = 1, ldu, count
    cdef double sign, unit = 1.0
    with nogil:
        window_column(data(s), s.P.shape[1], used, own, work, s.upper)
    if s.pending:  # the pending terms' part of the column
        ldu = <int>s.U.shape[1]
        for k in range(2):
            count = <int>s.terms[k]
            sign = 1.0 if k == 0 else -1.0
            if count:
                with nogil:
                    dgemv(b"N", &ui, &count, &sign, &s.U[k * TERMS, 0], &ldu,
                          &s.U[k * TERMS, own], &ldu, &unit, work, &one)
    pivot = work[own]
    if s.keeps_m:  # M's row and column (strict upper triangle)
        for i in range(own):
            s.P[i, own] = 0.0
        for i in range(own + 1, used):
            s.P[own, i] = 0.0
    s.diag[own] = 0.0
    s.window.size -= 1
    # exactly, P_jj = 1 / (M_jj - the part the other atoms explain) >= 1 / M_jj: a pivot
    # below half of that is rounding (the downdate would divide by it): P is then left as it
    # was, and recomputed from M instead
    if not (isfinite(pivot) and pivot * m_jj >= 0.5):
        s.window.schedule_refresh()
        return 0.0  # (log det then misses this removal's term: a statistic only)
    row = next_term(s, -1.0 / pivot, used)
    scale = sqrt(1.0 / pivot)
    with nogil:
        for i in range(used):
            row[i] = scale * work[i]
        window_clear(data(s), s.P.shape[1], used, own, s.upper)
    clear_pending(s, own)
    modified(s, dim)
    return log(pivot)


cdef double remove_from(object window, Py_ssize_t slot, Py_ssize_t n,
                        double* work) except? -1.0:
    """:func:`remove_views` on ``window``'s views, taken for this call."""
    cdef SlotViews s = SlotViews()
    s.bind(window)
    return remove_views(s, slot, n, work)


cdef Py_ssize_t own_slots(object window, Py_ssize_t n):
    """The caller's ``n`` slots, or the compact form's own slots."""
    outer = window.outer
    return n if outer is None else len(outer)


def solve(window, const double[::1] e, double[::1] out):
    """``out <- P e`` over the first ``len(e)`` slots of the caller's ring."""
    cdef Py_ssize_t n = e.shape[0]
    work = np.empty(2 * own_slots(window, n) + 1)
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
    work = np.empty(2 * own_slots(window, n) + 1)
    cdef double[::1] w = work
    return remove_from(window, slot, n, &w[0])


def flush_pending(window):
    """:meth:`SlotInverse.flush`."""
    flush(window)
