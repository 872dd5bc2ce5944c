"""The step of K one-vs-rest squared-loss KONS sharing one preconditioner, one call per phase.

okoco.learners._multiclass_shared.SharedSquaredKONS keeps the window's inverse ``P``
(okoco.linalg.SlotInverse) for all its classes and, per class, a column of its coefficients
``coef`` and of its running ``K c`` (``Kc``), two row-major ``(slots, K + 1)`` arrays. These
functions make each phase of its step on views of those buffers, given the kernel row the
learner computed:

- ``analyse``: ``e = d k``, ``h = P e``, ``e^T P e``, ``k^T coef`` and every column's ``ybar``,
  the record :data:`Analysis`;
- ``check``: the step's coefficients ``c_t`` of every column (the record :data:`Step`), or a
  status for the learner to word (nothing changed);
- ``store``: ``Kc += k c_t^T``, the new point's row of ``coef`` and ``Kc``, and its bordering
  of ``P`` (a pending term of ``SlotInverse``);
- ``forget``: the oldest point out of ``Kc`` (its kernel row) and out of ``P``.

The caller makes room in the buffers first (``SlotInverse.make_room``, the learner's arrays)
and runs the phases in one one-thread BLAS scope (okoco._blas.scipy_one_thread).
"""

from collections import namedtuple

import numpy as np

from libc.math cimport isfinite, sqrt
from scipy.linalg.cython_blas cimport dgemv, dger

from okoco._core._kernels cimport Kernel, kernel_exp, kernel_row, make_kernel
from okoco._core._linalg cimport dot
from okoco._core._slots cimport append_to, remove_from, solve_into

# check's statuses: OVERFLOW (a value of the analysis is not finite), SINGULAR (the point lies
# in the span of the window to float64 precision while k(x, x) dwarfs the ridge), STEP (the
# step's coefficients overflow)
cdef enum:
    OK = 0
    OVERFLOW = 1
    SINGULAR = 2
    STEP = 3

STATUS_OK, STATUS_OVERFLOW, STATUS_SINGULAR, STATUS_STEP = OK, OVERFLOW, SINGULAR, STEP

#: The records of a step, read by name: ``analyse``'s (the ``kernel`` of the row, the kernel
#: row ``k`` over the stored points, ``kappa = k(x, x)``, ``e = d k``, ``h = P e``,
#: ``hh = h . e``, ``kc = k^T coef`` and every column's unclipped score ``ybar``) and
#: ``check``'s (the spread ``s`` and every column's new coefficient ``c``).
Analysis = namedtuple("Analysis", "kernel k kappa e h hh kc ybar", module=__name__)
Step = namedtuple("Step", "s c", module=__name__)

cdef double WEIGHT = 2.0  # the squared loss's second derivative: every class's step weight


cdef double[::1] workspace(window, Py_ssize_t n):
    """Room for a solve over the caller's first n slots (SlotInverse: 2 x its own slots),
    and for n values."""
    outer = window.outer
    return np.empty(2 * (n if outer is None else max(n, outer.shape[0])) + 1)


cdef void columns_times(const double[:, ::1] A, Py_ssize_t n, const double* x,
                        double* out) noexcept nogil:
    """out <- A[:n]^T x (one value a column of the row-major A)."""
    cdef int cols = <int>A.shape[1], rows = <int>n, one = 1, i
    cdef double unit = 1.0, zero = 0.0
    if rows == 0:
        for i in range(cols):
            out[i] = 0.0
        return
    # row-major (n, cols) is column-major (cols, n): A^T x is its product with x
    dgemv(b"N", &cols, &rows, &unit, <double*>&A[0, 0], &cols, <double*>x, &one, &zero, out,
          &one)


cdef void add_outer(double[:, ::1] A, Py_ssize_t n, double scale, const double* x,
                    const double* c) noexcept nogil:
    """A[:n] <- A[:n] + scale x c^T."""
    cdef int cols = <int>A.shape[1], rows = <int>n, one = 1
    if rows:
        dger(&cols, &rows, &scale, <double*>c, &one, <double*>x, &one, &A[0, 0], &cols)


def analyse(shared, kernel, k_obj, double kappa):
    """The record :data:`Analysis` from the ``kernel``'s row ``k`` over the stored points:
    ``e = d k``, ``h = P e``, ``hh = h . e``, ``kc = k^T coef`` and
    ``ybar = (kc - (d h)^T Kc) / alpha``, every column's unclipped score."""
    cdef const double[::1] k = k_obj
    cdef Py_ssize_t n = k.shape[0], cols = shared.coef.shape[1], i
    cdef const double[::1] d = shared.points.fields["d"]
    cdef const double[:, ::1] coef = shared.coef, Kc = shared.Kc
    cdef double alpha = shared.alpha, hh = 0.0
    window = shared.inverse
    e_obj, h_obj, kc_obj, ybar_obj = np.empty(n), np.empty(n), np.empty(cols), np.empty(cols)
    cdef double[::1] e = e_obj, h = h_obj, kc = kc_obj, ybar = ybar_obj, work
    if n:
        for i in range(n):
            e[i] = d[i] * k[i]
        work = workspace(window, n)
        solve_into(window, &e[0], &h[0], n, &work[0])
        hh = dot(<int>n, &h[0], &e[0])
        # kappa - hh lies in (0, kappa]: outside it, rounding in the inverse's updates has
        # grown (as KONS's step): recompute it
        if isfinite(hh) and isfinite(kappa) and not (-1e-9 * kappa <= hh <= kappa * (1.0 + 1e-9)):
            window.refresh()
            solve_into(window, &e[0], &h[0], n, &work[0])
            hh = dot(<int>n, &h[0], &e[0])
        for i in range(n):
            work[i] = d[i] * h[i]
        with nogil:
            columns_times(coef, n, &k[0], &kc[0])
            columns_times(Kc, n, &work[0], &ybar[0])
    else:
        for i in range(cols):
            kc[i] = ybar[i] = 0.0
    for i in range(cols):
        ybar[i] = (kc[i] - ybar[i]) / alpha
    return Analysis(kernel, k_obj, kappa, e_obj, h_obj, hh, kc_obj, ybar_obj)


def check(shared, analysis, Py_ssize_t label, tuple guards):
    """The step of every column on the codes of ``label`` (+1 for column ``label + 1``, -1 for
    the others) from :func:`analyse`'s record: the record :data:`Step`, or a status
    (``STATUS_*``) with nothing changed.

    ``guards``: ``(min_s, s_rtol, min_ridge_ratio, max_d)``, KONS's numerical guards."""
    cdef const double[::1] k = analysis.k, e = analysis.e, ybar = analysis.ybar
    cdef double kappa = analysis.kappa, hh = analysis.hh
    cdef double min_s = guards[0], s_rtol = guards[1], min_ridge_ratio = guards[2]
    cdef double max_d = guards[3]
    cdef double alpha = shared.alpha, C, s, level, total = 0.0, y, excess, yhat
    cdef Py_ssize_t n = k.shape[0], cols = ybar.shape[0], i
    C = np.nan if shared.C is None else shared.C
    for i in range(n):
        total += k[i]
    for i in range(cols):
        total += ybar[i]
    if not (isfinite(total) and isfinite(kappa)):
        return OVERFLOW
    s = kappa - hh
    level = s_rtol * (kappa + (dot(<int>n, &e[0], &e[0]) if n else 0.0) / alpha)
    if WEIGHT * kappa * min_ridge_ratio > alpha and not s >= level:
        return SINGULAR
    s = s if s > min_s else min_s
    c_obj = np.empty(cols)
    cdef double[::1] c = c_obj
    total = WEIGHT * kappa + alpha
    for i in range(cols):
        y = 1.0 if i == label + 1 else -1.0
        excess = 0.0
        if C == C:  # (NaN: no clipping)
            if ybar[i] > C:
                excess = ybar[i] - C
            elif ybar[i] < -C:
                excess = ybar[i] + C
        yhat = ybar[i] - excess
        # w_t yhat - gdot - the projection's shift (s raised to its rounding level, as KONS)
        c[i] = WEIGHT * yhat - 2.0 * (yhat - y) - alpha * excess / (s if s > level else level)
        total += c[i]
    if not (isfinite(total) and sqrt(WEIGHT) <= max_d):
        return STEP
    return Step(s, c_obj)


def store(shared, analysis, step, Py_ssize_t slot, Py_ssize_t size):
    """The step's point at ``slot`` (its room made): ``Kc += k c_t^T`` over the old points,
    its rows of ``coef`` and ``Kc`` (``kc + kappa c_t``), and its bordering of ``P`` (as
    ``SlotInverse.append``; ``size`` the caller's slots), from the records of
    :func:`analyse` (``k``, ``kappa``, ``e``, ``h``, ``kc``) and :func:`check` (``s``,
    ``c``)."""
    cdef const double[::1] k = analysis.k, e = analysis.e, h = analysis.h, kc = analysis.kc
    cdef const double[::1] c = step.c
    cdef double kappa = analysis.kappa, s = step.s, root = sqrt(WEIGHT), alpha = shared.alpha
    cdef double[:, ::1] coef = shared.coef, Kc = shared.Kc
    cdef Py_ssize_t n = k.shape[0], cols = c.shape[0], i
    with nogil:
        add_outer(Kc, n, 1.0, &k[0] if n else NULL, &c[0])
    for i in range(cols):
        coef[slot, i] = c[i]
        Kc[slot, i] = kc[i] + kappa * c[i]
    work_obj = np.empty(2 * n + 1)
    cdef double[::1] work = work_obj
    for i in range(n):
        work[i] = root * h[i]
        work[n + i] = root * e[i]
    append_to(shared.inverse, slot, &work[0], n, WEIGHT * s + alpha, &work[n],
              WEIGHT * kappa + alpha, size)


def nonzero(shared, Py_ssize_t slot):
    """Whether a coefficient of the point at ``slot`` is not 0 (its kernel row is then
    needed to forget it)."""
    cdef const double[:, ::1] coef = shared.coef
    cdef Py_ssize_t i
    for i in range(coef.shape[1]):
        if coef[slot, i] != 0.0:
            return True
    return False


def oldest_row(tuple spec, rows, Py_ssize_t slot):
    """The kernel row (the kernel described by ``spec``, ``okoco.learners._codes``) at the
    stored point at ``slot`` over the ``n`` points ``rows`` holds (``okoco.linalg.Rows``)."""
    sq_obj, _ = rows.squared_norms()
    cdef const double[::1] sq = sq_obj
    cdef const double[:, ::1] data = rows.data
    cdef Kernel k = make_kernel(spec)
    cdef Py_ssize_t n = rows.n
    cdef int d = <int>rows.d
    row_obj = np.empty(n)
    cdef double[::1] row = row_obj
    if n and kernel_row(&k, &data[0, 0], data.shape[1], n, d, &sq[0], &data[slot, 0], d,
                        &row[0]):
        kernel_exp(row_obj, &row[0], n)
    return row_obj


def forget(shared, Py_ssize_t slot, row_obj):
    """The point at ``slot`` (the window's oldest) out of every column's ``K c`` (``row``: its
    kernel row over the stored points, or ``None`` if its coefficients are all 0) and out of
    ``P`` (as ``SlotInverse.remove``); its ``d`` and coefficients then 0."""
    cdef double[:, ::1] coef = shared.coef, Kc = shared.Kc
    cdef double[::1] d = shared.points.fields["d"]
    cdef const double[::1] row
    cdef Py_ssize_t n = shared.points.n, cols = coef.shape[1], i
    window = shared.inverse
    if row_obj is not None:
        row = row_obj
        with nogil:
            add_outer(Kc, n, -1.0, &row[0], &coef[slot, 0])
    cdef double[::1] work = workspace(window, n)
    remove_from(window, slot, n, &work[0])
    d[slot] = 0.0
    for i in range(cols):
        coef[slot, i] = 0.0
