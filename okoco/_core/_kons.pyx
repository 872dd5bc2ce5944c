"""KONS's windowed step (okoco.learners._newton), one compiled call per phase.

A windowed KONS (KONS and Sketched-KONS at their defaults, Auto's experts) keeps its
preconditioner by its inverse over the slots of its store's ring (okoco.linalg.SlotInverse:
``P`` in the lower triangle of one array, ``M`` in its strict upper one, ``M``'s diagonal
apart; with a map ``outer`` from its own slots to the ring's when the window is shorter than
the ring). :class:`KONSCore` makes each phase of a step that the learner orchestrates in one
call, on views of those buffers and of the store's fields (``d``, ``c``, ``Kc``, ``z``):

- ``analyse`` / ``analyse_row``: the kernel row (or the one given), ``e = d k``, ``h = P e``,
  ``e^T P e`` and the prediction ``ybar``, as ``(k, kappa, e, h, ybar, kc, hh)``;
- ``check``: the step's scalars ``(s, shift, yhat, gdot, weight, d_t, noise)``, or ``None``
  where the Python step must word an error (nothing changed): a value that is not finite, a
  pivot lost to rounding, or running statistics that would overflow;
- ``apply``: the coefficient, the running ``K c``, the store's slot and the new atom's
  bordering of ``P`` (as ``SlotInverse.append``); the statistics' terms are left in the
  object's fields (``tau``, ``rg_term``, ``log_det_term``) for the learner to add;
- ``forget``: the oldest point out of the window (``K c``, and its atom out of ``P``, as
  ``SlotInverse.remove``).

The learner hands its store, its window inverse and its atoms' slots (``selected``) to each
call; nothing here reads another object's private attributes or calls back into the learner.
A phase returns a status (``okoco._core._steps.STEP_*``): ``NEED_ROOM`` (nothing changed:
buffers grow in Python, the learner's ``_make_room``, and the call is made again),
``SKIPPED`` (a null step), ``FORGOT_ATOM`` (the learner's selection follows: Sketched-KONS's
KORS); a row written into the learner's own ``Rows`` leaves its counters to the learner
(okoco.learners._window_phases). ``check`` leaves the wording of an error, and a loss without
a compiled form, to the Python ``KONS._check_step``. The learner runs the phases inside one
one-thread BLAS scope (okoco._blas.scipy_one_thread). The unbounded learner (a Cholesky
factor, no window) keeps its Python step in okoco.learners._newton.
"""

import numpy as np

from libc.math cimport fabs, isfinite, log, log1p, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memmove

from okoco._core._kernels cimport (
    LAPLACIAN,
    RBF,
    kernel_exp,
    kernel_row,
    make_kernel,
    self_similarity,
)
from okoco._core._linalg cimport axpy, dot
from okoco._core._slots cimport append_to, remove_from, solve_into
from okoco._core._losses cimport clip_excess, derivative, second_derivative
from okoco._core._steps cimport FORGOT_ATOM, NEED_ROOM, OK, SKIPPED, StepCore


cdef class KONSCore(StepCore):
    """The phases of a windowed KONS step (module docstring) for one learner.

    Parameters
    ----------
    spec
        The compiled kernel's description (``okoco.learners._codes.compiled_kernel``), or
        ``None``: the learner then gives the kernel rows (``analyse_row``).
    loss
        The loss's code, or -1 for a loss without a compiled form (``check`` then says so).
    guards
        ``(min_s, s_rtol, min_ridge_ratio, max_d)``: KONS's numerical guards.
    drops_null
        Whether a null step (no coin, no coefficient, no gradient) stores nothing.
    """
    cdef readonly int loss
    cdef readonly bint has_kernel
    cdef bint drops_null
    cdef double min_s, s_rtol, min_ridge_ratio, max_d
    cdef double* work
    cdef Py_ssize_t work_cap
    #: results of the last ``apply`` / ``forget``, for the learner
    cdef readonly double tau, rg_term, log_det_term, row_norm
    cdef readonly Py_ssize_t slot, needed
    cdef readonly bint wrote_row

    def __init__(self, tuple spec, kernel, int loss, tuple guards, bint drops_null):
        self.has_kernel = spec is not None
        if self.has_kernel:
            self.k = make_kernel(spec)
        self.kernel, self.loss, self.drops_null = kernel, loss, drops_null
        self.min_s, self.s_rtol, self.min_ridge_ratio, self.max_d = guards

    def __dealloc__(self):
        free(self.work)

    cdef double* workspace(self, Py_ssize_t n) except NULL:
        if n > self.work_cap or self.work == NULL:
            free(self.work)
            self.work_cap = 2 * n + 16
            self.work = <double*>malloc(self.work_cap * sizeof(double))
            if self.work == NULL:
                self.work_cap = 0
                raise MemoryError()
        return self.work

    cdef int bind_rows(self, rows) except -1:
        """Views of a ``Rows`` store's buffers (its norms' cache over its capacity)."""
        return self.bind_buffers(rows.data, rows.norms_buffer(), rows.n, rows.d)

    # -- analysis -------------------------------------------------------------------------

    def analyse(self, store, window, double alpha, const double[:] v):
        """The analysis at ``v`` with the kernel row computed here (the learner's own
        ``Rows`` ``store`` and a compiled kernel)."""
        self.bind_rows(store)
        self.keep(v)
        cdef Py_ssize_t n = self.n
        k_obj = np.empty(n)
        cdef double[::1] k = k_obj
        if n and kernel_row(&self.k, &self.data[0, 0], self.data.shape[1], n, <int>self.d,
                            &self.sq[0], self.x, <int>self.x_width, &k[0]):
            kernel_exp(k_obj, &k[0], n)
        return self.analyse_row(store, window, alpha, k_obj,
                                self_similarity(&self.k, self.x, <int>self.x_width))

    def analyse_row(self, store, window, double alpha, k_obj, double kappa):
        """The analysis from the kernel row ``k`` over the stored points and ``kappa``."""
        cdef const double[::1] k = k_obj
        cdef Py_ssize_t n = k.shape[0], i
        fields = store.fields
        cdef const double[::1] d = fields["d"], c = fields["c"], Kc = fields["Kc"]
        e_obj, h_obj = np.empty(n), np.empty(n)
        cdef double[::1] e = e_obj, h = h_obj
        cdef double kc = 0.0, hh = 0.0, t = 0.0
        cdef double* w
        if n:
            with nogil:
                kc = dot(<int>n, &k[0], &c[0])
                for i in range(n):
                    e[i] = d[i] * k[i]
            self.solve(window, &e[0], &h[0], n)
            hh = dot(<int>n, &h[0], &e[0])
            # kappa - hh = alpha phi^T A^{-1} phi lies in (0, kappa]: outside it, rounding in
            # the inverse's updates has grown (a tiny alpha, near-duplicate points): recompute
            # it (not for non-finite values: an overflowing input is refused, nothing changed)
            if isfinite(hh) and isfinite(kappa) and not (
                    -1e-9 * kappa <= hh <= kappa * (1.0 + 1e-9)):
                window.refresh()
                self.solve(window, &e[0], &h[0], n)
                hh = dot(<int>n, &h[0], &e[0])
            w = self.workspace(n)
            with nogil:
                for i in range(n):
                    w[i] = d[i] * Kc[i]
                t = dot(<int>n, &h[0], w)
        return k_obj, kappa, e_obj, h_obj, (kc - t) / alpha, kc, hh

    cdef int solve(self, window, double* e, double* h, Py_ssize_t n) except -1:
        """h <- P e over the first n slots of the caller's ring (SlotInverse.solve)."""
        outer = window.outer
        solve_into(window, e, h, n, self.workspace(2 * (n if outer is None else len(outer))))
        return 0

    # -- the step's scalars ---------------------------------------------------------------

    def check(self, tuple analysis, double y, double eta, double alpha, double C,
              double running, double least_coin):
        """KONS._check_step in one call (``eta`` NaN: the curvature step), or ``None`` where
        the Python step must word an error (or for a loss without a compiled form).
        ``running`` is the sum of the running statistics (``noise_scale_sum + rg_sum +
        online_effective_dimension``), ``least_coin`` the least coin a step can draw."""
        if self.loss < 0:
            return None
        cdef const double[::1] k = analysis[0], e = analysis[2]
        cdef double kappa = analysis[1], ybar = analysis[4], hh = analysis[6]
        cdef double excess, yhat, gdot, weight, d_t, s, shift = 0.0, level, worst, total, noise
        cdef double ee = -1.0
        cdef Py_ssize_t n = e.shape[0], i
        excess = clip_excess(ybar, C)
        yhat = ybar - excess
        gdot = derivative(self.loss, y, yhat)
        if eta != eta:  # the curvature step: the weight eta_t gdot^2 is loss'' itself
            weight = second_derivative(self.loss, y, yhat)
            if not (isfinite(weight) and weight >= 0.0):
                return None
            d_t = sqrt(weight)
        else:
            weight = eta * gdot * gdot
            d_t = gdot * sqrt(eta)
        if not (isfinite(ybar) and isfinite(kappa)):
            return None
        if not self.has_kernel or (self.k.kind != RBF and self.k.kind != LAPLACIAN):
            total = 0.0
            for i in range(k.shape[0]):
                total += k[i]
            if not isfinite(total):
                return None
        s = kappa - hh
        if d_t * d_t * kappa * self.min_ridge_ratio > alpha:
            ee = dot(<int>n, &e[0], &e[0]) if n else 0.0
            if not (s >= self.s_rtol * (kappa + ee / alpha)):
                return None
        if not isfinite(s):
            return None
        s = s if s > self.min_s else self.min_s
        if excess != 0.0:
            if ee < 0.0:
                ee = dot(<int>n, &e[0], &e[0]) if n else 0.0
            level = self.s_rtol * (kappa + ee / alpha)
            shift = alpha * excess / (s if s > level else level)
        worst = weight * fabs(yhat) + fabs(gdot) + fabs(shift)
        if not (fabs(d_t) <= self.max_d and isfinite(worst)
                and isfinite(d_t * d_t * kappa + alpha)):
            return None
        noise = (y - yhat) * (y - yhat) / (s + 0.5 * alpha)
        # the running statistics stay finite (their terms' bounds, as KONS._check_step)
        if not isfinite(running + noise + (gdot * gdot + weight)
                        * s / (alpha + least_coin * weight * s)):
            return None
        return s, shift, yhat, gdot, weight, d_t, noise

    # -- the step ---------------------------------------------------------------------------

    def apply(self, store, window, selected, const double[:] v,
              tuple analysis, tuple step, int z, double alpha):
        """KONS._apply_step's window form in one call: ``NEED_ROOM`` (nothing changed, the
        size wanted in ``needed``: the learner's ``_make_room``, then this call again),
        ``SKIPPED`` (a null step: nothing changed) or ``OK``, the point at ``slot`` (with its
        row and squared norm ``row_norm`` written into ``store``'s buffers if ``wrote_row``:
        the learner updates its counters), the new atom's slot last in ``selected``, and the
        statistics' terms in ``tau``, ``rg_term`` and ``log_det_term``."""
        cdef const double[::1] k = analysis[0], e = analysis[2], h = analysis[3]
        cdef double kappa = analysis[1], kc = analysis[5]
        cdef double s = step[0], shift = step[1], yhat = step[2], gdot = step[3]
        cdef double weight = step[4], d_t = step[5]
        cdef double c_t, q, sigma
        cdef Py_ssize_t n = k.shape[0], slot, size
        c_t = z * weight * yhat - gdot - shift
        if not (z or c_t or d_t or gdot) and self.drops_null:
            return SKIPPED  # beyond the squared hinge's margin: it would only add zeros
        points = getattr(store, "points", None)
        rows = store if points is None else points.rows
        ring = rows.max_size
        slot = rows.n_added % ring if ring is not None and rows.n == ring else rows.n
        size = n if slot < n else slot + 1
        if not self.has_room(store, points is None, window, selected, v, slot, size, z):
            self.needed = size
            return NEED_ROOM
        fields = store.fields
        cdef double[::1] d = fields["d"], c = fields["c"], Kc = fields["Kc"], zf = fields["z"]
        if c_t != 0.0 and n:
            with nogil:
                axpy(<int>n, c_t, &k[0], &Kc[0])
        self.slot, self.wrote_row = slot, points is None
        if self.wrote_row:
            self.bind_rows(store)
            self.keep(v)
            self.row_norm = self.put_row(slot)
        elif slot >= store.n:
            store.n = slot + 1
        d[slot], c[slot], Kc[slot], zf[slot] = d_t, c_t, kc + kappa * c_t, z
        q = d_t * d_t * s / alpha
        self.tau = q / (1.0 + z * q)
        self.rg_term = gdot * gdot * s / (alpha * (1.0 + z * q))
        self.log_det_term = 0.0
        if not z:
            return OK
        self.log_det_term = log1p(q)
        sigma = d_t * d_t * s + alpha
        # the new atom's column of Kbar_I + alpha I over the slots: d_t d_i K_i, atoms only
        self.border(window, slot, size, n, d_t, h, e, zf, sigma, d_t * d_t * kappa + alpha)
        cdef Py_ssize_t[::1] atoms = selected
        atoms[window.size - 1] = slot
        return OK

    cdef bint has_room(self, store, bint own_rows, window, selected,
                       const double[:] v, Py_ssize_t slot, Py_ssize_t size,
                       int z) except -1:
        """Whether every buffer has room for the point at ``slot`` (``size`` slots then)."""
        if slot >= store.fields["d"].shape[0]:
            return False
        if own_rows:
            self.bind_rows(store)
            if slot >= self.data.shape[0] or v.shape[0] > self.data.shape[1]:
                return False
        outer = window.outer
        if outer is None and window.P.shape[0] < size:
            return False
        if not z:
            return True
        if outer is None:
            if window.size == 0 and window.atoms is not None and \
                    window.capacity is not None and window.atoms < window.capacity:
                return False  # the inverse becomes compact
        elif window.size >= len(outer):
            return False  # more atoms than announced
        return len(selected) > window.size

    cdef int border(self, window, Py_ssize_t slot, Py_ssize_t size, Py_ssize_t n, double d_t,
                    const double[::1] h, const double[::1] e, const double[::1] zf,
                    double sigma, double diagonal) except -1:
        """SlotInverse.append(slot, d_t h, sigma, d_t e z, diagonal, size)."""
        cdef double* w = self.workspace(2 * n + 2)
        cdef Py_ssize_t i
        with nogil:
            for i in range(n):
                w[i] = d_t * h[i]
                w[n + i] = d_t * e[i] * zf[i]
        append_to(window, slot, w, n, sigma, &w[n], diagonal, size)
        return 0

    def forget(self, store, window, selected, Py_ssize_t max_size, double alpha):
        """KONS._forget_oldest in one call: once more than ``max_size`` points are stored, the
        oldest leaves ``K c`` and, if it is an atom, ``P`` and ``selected`` (its first entry):
        ``FORGOT_ATOM`` then, its term of ``log_det`` in ``log_det_term``; else ``OK``. The
        learner then makes what waited for the step's end (its ``_settle``)."""
        points = getattr(store, "points", None)
        rows = store if points is None else points.rows
        cdef Py_ssize_t oldest = rows.n_added - 1 - max_size, slot, n, m
        self.log_det_term = 0.0
        if oldest < 0:
            return OK
        slot = oldest % rows.max_size
        fields = store.fields
        cdef double[::1] d = fields["d"], c = fields["c"], Kc = fields["Kc"], zf = fields["z"]
        cdef double c_j = c[slot]
        cdef double[::1] row
        cdef int status = OK
        cdef Py_ssize_t[::1] atoms
        n = store.n
        if c_j != 0.0:
            if self.has_kernel:  # over the learner's rows, or the points its experts share
                self.bind_rows(rows)
                row_obj = np.empty(n)
                row = row_obj
                if kernel_row(&self.k, &self.data[0, 0], self.data.shape[1], n, <int>self.d,
                              &self.sq[0], &self.data[slot, 0], <int>self.d, &row[0]):
                    kernel_exp(row_obj, &row[0], n)
            else:
                point = np.array(rows.data[slot, : rows.d])
                row = np.asarray(store.kernel_row(self.kernel, point), dtype=float)
            with nogil:
                axpy(<int>n, -c_j, &row[0], &Kc[0])
        if zf[slot] != 0.0:
            m = window.size
            self.log_det_term = self.remove(window, slot, n) + log(alpha)
            if m > 1:  # the atoms leave in the order they came: this one is the first
                atoms = selected
                memmove(&atoms[0], &atoms[1], (m - 1) * sizeof(Py_ssize_t))
            status = FORGOT_ATOM
        d[slot] = 0.0
        zf[slot] = 0.0
        c[slot] = 0.0
        return status

    cdef double remove(self, window, Py_ssize_t slot, Py_ssize_t n) except? -1.0:
        """SlotInverse.remove(slot, n): returns log P_jj (0 if P was recomputed instead)."""
        outer = window.outer
        return remove_from(window, slot, n,
                           self.workspace(2 * (n if outer is None else len(outer)) + 1))
