"""KONS's step (okoco.learners._newton), windowed or unbounded, one compiled call per phase.

The phases take the preconditioner ``M = Kbar_I + alpha I`` in one of two forms (the
preconditioner interface: solve, append, remove):

- a window (KONS and Sketched-KONS at their defaults, Auto's experts) keeps its inverse over
  the slots of its store's ring (okoco.linalg.SlotInverse: ``P`` in the lower triangle of one
  array, ``M`` in its strict upper one, ``M``'s diagonal apart; with a map ``outer`` from its
  own slots to the ring's when the window is shorter than the ring): adding and removing an
  atom are one rank-one update each;
- the unbounded learner (``max_size=None``) keeps the Cholesky factor ``L`` of ``M`` over the
  atoms in the order they came (okoco.linalg.IncrementalCholesky, packed), and the learner's
  ``g = L^{-1} (D K c)_I``: atoms only come, and the factor keeps the accuracy an explicit
  inverse loses (its error grows with the square of ``M``'s condition number).

:class:`KONSCore` makes each phase of a step that the learner orchestrates in one call, on
views of those buffers and of the store's fields (``d``, ``c``, ``Kc``, ``z``):

- ``analyse`` / ``analyse_row``: the kernel row (or the one given), ``e = d k``, the solve
  ``h`` (``P e``; ``L^{-1} e_I``), ``hh = e^T M^{-1} e`` and the prediction ``ybar``, as
  the record ``Analysis(k, kappa, e, h, ybar, kc, hh)`` (``okoco._core._records``);
- ``check`` (of every KONS step, the window's and the unbounded learner's): the step's
  scalars ``(s, shift, yhat, gdot, weight, d_t, noise)``, or the code of a refusal (nothing
  changed; ``CHECK_*``, worded by the learner): a value that is not finite, a pivot lost to
  rounding, or running statistics that would overflow;
- ``apply``: the coefficient, the running ``K c``, the store's slot and the new atom's
  bordering of ``P`` (as ``SlotInverse.append``) or of ``L`` and ``g``
  (``IncrementalCholesky.append``); the statistics' terms are left in the object's fields
  (``tau``, ``rg_term``, ``log_det_term``) for the learner to add;
- ``forget``: the oldest point out of the window (``K c``, and its atom out of ``P``, as
  ``SlotInverse.remove``).

The learner hands its store, its preconditioner, its atoms' slots (``selected``) and ``g``
to each call; nothing here reads another object's private attributes or calls back into the learner.
A phase returns a status (``okoco._core._steps.STEP_*``): ``NEED_ROOM`` (nothing changed:
buffers grow in Python, the learner's ``_make_room``, and the call is made again),
``SKIPPED`` (a null step), ``FORGOT_ATOM`` (the learner's selection follows: Sketched-KONS's
KORS); a row written into the learner's own ``Rows`` leaves its counters to the learner
(okoco.learners._window_phases). A loss without a compiled form gives ``check`` its
derivatives (the learner computes them at the clipped prediction). The learner runs the phases
inside one one-thread BLAS scope (okoco._blas.scipy_one_thread).
"""

import numpy as np

from libc.math cimport NAN, fabs, isfinite, log, log1p, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memmove

from okoco._core._kernels cimport kernel_exp, kernel_row, make_kernel, self_similarity
from okoco._core._linalg cimport axpy, dot, tp_back_solve, tp_half_solve
from okoco._core._slots cimport SlotViews, append_views, remove_views, solve_views
from okoco._core._losses cimport clip_excess, derivative, second_derivative
from okoco._core._steps cimport FORGOT_ATOM, NEED_ROOM, OK, SKIPPED, StepCore, new_record
from okoco._core._records import Step

#: Why ``KONSCore.check`` refused a step (the learner words each): the curvature step's weight
#: (the loss's second derivative) is not a finite number >= 0; a value of the analysis is not
#: finite (the kernel overflowed); the point lies in the atoms' span to float64 precision with
#: a pivot lost to rounding; the loss derivative is too large for a second-order step; the
#: running statistics would overflow (a target too far from the prediction for its spread).
CHECK_WEIGHT, CHECK_OVERFLOW, CHECK_SINGULAR, CHECK_DERIVATIVE, CHECK_TARGET = 1, 2, 3, 4, 5


cdef inline bint factored(preconditioner):
    """Whether the preconditioner is a Cholesky factor (the unbounded learner's
    ``IncrementalCholesky``) rather than a window's inverse (``SlotInverse``)."""
    return hasattr(preconditioner, "factor_storage")


cdef class KONSCore(StepCore):
    """The phases of a KONS step (module docstring) for one learner.

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
    # typed state: views of the window inverse's buffers and of the store's fields and the
    # atoms' slots, taken again only when an array is reallocated (bind_fields, bind_atoms)
    cdef SlotViews views
    cdef object fields_d, fields_c, fields_Kc, fields_z, atoms_obj
    cdef double[::1] fd, fc, fKc, fz
    cdef Py_ssize_t[::1] atoms
    #: results of the last ``check`` (for the wording of a refusal), ``apply`` and ``forget``
    cdef readonly double yhat, gdot, weight
    cdef readonly double tau, rg_term, log_det_term, row_norm
    cdef readonly Py_ssize_t slot, needed
    cdef readonly bint wrote_row

    def __init__(self, tuple spec, kernel, int loss, tuple guards, bint drops_null):
        self.has_kernel = spec is not None
        if self.has_kernel:
            self.k = make_kernel(spec)
        self.kernel, self.loss, self.drops_null = kernel, loss, drops_null
        self.min_s, self.s_rtol, self.min_ridge_ratio, self.max_d = guards
        self.views = SlotViews()

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

    cdef int bind_fields(self, store) except -1:
        """Views of the store's fields ``d``, ``c``, ``Kc`` and ``z`` (again only if one was
        reallocated)."""
        fields = store.fields
        d, c, Kc, z = fields["d"], fields["c"], fields["Kc"], fields["z"]
        if d is not self.fields_d:
            self.fd, self.fields_d = d, d
        if c is not self.fields_c:
            self.fc, self.fields_c = c, c
        if Kc is not self.fields_Kc:
            self.fKc, self.fields_Kc = Kc, Kc
        if z is not self.fields_z:
            self.fz, self.fields_z = z, z
        return 0

    cdef int bind_atoms(self, selected) except -1:
        """A view of the atoms' slots (again only if reallocated)."""
        if selected is not self.atoms_obj:
            self.atoms, self.atoms_obj = selected, selected
        return 0

    cdef double* row_buffer(self, Py_ssize_t n) except NULL:
        """The step object's column buffer (``g``) with room for ``n`` values."""
        if self.g_obj is None or self.g.shape[0] < n + 1:
            self.g_obj = np.empty(max(2 * (n + 1), 16))
            self.g = self.g_obj
        return &self.g[0]

    # -- analysis -------------------------------------------------------------------------

    def analyse(self, store, window, double alpha, const double[:] v, selected=None,
                whitened=None):
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
                                self_similarity(&self.k, self.x, <int>self.x_width), selected,
                                whitened)

    def analyse_row(self, store, window, double alpha, k_obj, double kappa, selected=None,
                    whitened=None):
        """The analysis from the kernel row ``k`` over the stored points and ``kappa``, with
        the preconditioner ``window``: a window's inverse (``SlotInverse``, over the store's
        slots: ``h = P e``, ``hh = h . e``), or the unbounded learner's Cholesky factor
        (``IncrementalCholesky``, over the atoms in the order they came, every stored point or
        those at ``selected``: ``h = L^{-1} e_I``, ``hh = h . h``, with ``whitened``, its
        ``g = L^{-1} (D K c)_I``)."""
        cdef const double[::1] k = k_obj
        cdef Py_ssize_t n = k.shape[0], i
        self.bind_fields(store)
        cdef const double[::1] d = self.fd, c = self.fc, Kc = self.fKc
        e_obj = np.empty(n)
        cdef double[::1] e = e_obj
        cdef double kc = 0.0
        if n:
            with nogil:
                kc = dot(<int>n, &k[0], &c[0])
                for i in range(n):
                    e[i] = d[i] * k[i]
        if factored(window):
            return self.analyse_factor(window, alpha, k_obj, kappa, e_obj, kc, selected,
                                       whitened)
        h_obj = np.empty(n)
        cdef double[::1] h = h_obj
        cdef double hh = 0.0, t = 0.0
        cdef double* w
        if n:
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
        return self.analysis((k_obj, kappa, e_obj, h_obj, (kc - t) / alpha, kc, hh), k, e, h)

    cdef object analyse_factor(self, chol, double alpha, k_obj, double kappa, e_obj,
                              double kc, selected, whitened):
        """The analysis over the factor ``L L^T = Kbar_I + alpha I`` of the atoms in the order
        they came (every stored point if there are as many, else those at ``selected``):
        ``e_I``, ``h = L^{-1} e_I``, ``hh = h . h`` and ``ybar`` with ``h . g``, ``whitened``
        the learner's ``g = L^{-1} (D K c)_I`` (one triangular solve, the factor's accuracy)."""
        cdef Py_ssize_t m = chol.size, n = e_obj.shape[0]
        if m != n:  # the atoms' entries (Sketched-KONS: the points its dictionary kept)
            e_obj = e_obj[selected[:m]]
        h_obj = np.array(e_obj)
        cdef double[::1] h = h_obj, g = whitened, e = e_obj
        cdef double[::1] L
        cdef double hh = 0.0, t = 0.0
        if m:
            L = chol.factor_storage()
            with nogil:
                tp_half_solve(&L[0], <int>m, &h[0])
                hh = dot(<int>m, &h[0], &h[0])
                t = dot(<int>m, &h[0], &g[0])
        return self.analysis((k_obj, kappa, e_obj, h_obj, (kc - t) / alpha, kc, hh), k_obj, e, h)

    cdef int solve(self, window, double* e, double* h, Py_ssize_t n) except -1:
        """h <- P e over the first n slots of the caller's ring (SlotInverse.solve)."""
        self.views.bind(window)
        return solve_views(self.views, e, h, n, self.workspace(2 * self.own_slots(n)))

    cdef Py_ssize_t own_slots(self, Py_ssize_t n) noexcept:
        """The bound inverse's slots: the caller's ``n``, or its compact form's own."""
        return self.views.outer.shape[0] if self.views.compact else n

    # -- the step's scalars ---------------------------------------------------------------

    def check(self, analysis, double y, double eta, double alpha, double C,
              double running, double least_coin, double gdot=NAN, double weight=NAN):
        """KONS.check's arithmetic, the one definition (``eta`` NaN: the curvature step):
        the step's scalars (a :data:`Step`), or a refusal's code
        (``CHECK_*``; nothing changed) that the learner words, with ``yhat``, ``gdot`` and
        ``weight`` left in the object's fields. ``running`` is the sum of the running
        statistics (``noise_scale_sum + rg_sum + online_effective_dimension``),
        ``least_coin`` the least coin a step can draw. For a loss without a compiled form the
        learner gives the loss's ``gdot`` (and ``weight``, its second derivative, for the
        curvature step) at ``yhat = ybar - h(ybar)``."""
        self.bind_analysis(analysis)
        cdef const double[::1] k = self.ak, e = self.ae
        cdef double kappa = analysis.kappa, ybar = analysis.ybar, hh = analysis.hh
        cdef double excess, yhat, d_t, s, shift = 0.0, level, worst, total, noise
        cdef double ee = -1.0
        cdef Py_ssize_t n = e.shape[0], i
        excess = clip_excess(ybar, C)
        yhat = ybar - excess
        if self.loss >= 0:
            gdot = derivative(self.loss, y, yhat)
            if eta != eta:
                weight = second_derivative(self.loss, y, yhat)
        self.yhat, self.gdot, self.weight = yhat, gdot, weight
        if eta != eta:  # the curvature step: the weight eta_t gdot^2 is loss'' itself
            if not (isfinite(weight) and weight >= 0.0):
                return CHECK_WEIGHT
            d_t = sqrt(weight)  # D's signs cancel in every formula: sqrt is a valid d_t
        else:
            weight = eta * gdot * gdot
            d_t = gdot * sqrt(eta)
        # a step that would store non-finite numbers is refused before the coin or any state
        # changes: kernel values that overflowed (a bounded kernel's rows lie in [0, 1])
        if not (isfinite(ybar) and isfinite(kappa)):
            return CHECK_OVERFLOW
        if not self.has_kernel or not self.k.bounded:
            total = 0.0
            for i in range(k.shape[0]):
                total += k[i]
            if not isfinite(total):
                return CHECK_OVERFLOW
        s = kappa - hh
        if d_t * d_t * kappa * self.min_ridge_ratio > alpha:
            # the ridge alone cannot keep the new pivot alpha + d_t^2 s resolvable, and s lies
            # below the solve's rounding error (which grows like |e|^2 / alpha, as |P| <= 1/alpha)
            ee = dot(<int>n, &e[0], &e[0]) if n else 0.0
            if not (s >= self.s_rtol * (kappa + ee / alpha)):
                return CHECK_SINGULAR
        if not isfinite(s):
            return CHECK_TARGET
        s = s if s > self.min_s else self.min_s
        if excess != 0.0:
            # s below its rounding level is noise: dividing by it would multiply the excess by
            # ~1 / eps, and the next step's excess by as much (a geometric growth to overflow);
            # with s raised to that level the projection is partial, never wild
            if ee < 0.0:
                ee = dot(<int>n, &e[0], &e[0]) if n else 0.0
            level = self.s_rtol * (kappa + ee / alpha)
            shift = alpha * excess / (s if s > level else level)
        worst = weight * fabs(yhat) + fabs(gdot) + fabs(shift)
        if not (fabs(d_t) <= self.max_d and isfinite(worst)
                and isfinite(d_t * d_t * kappa + alpha)):
            return CHECK_DERIVATIVE
        noise = (y - yhat) * (y - yhat) / (s + 0.5 * alpha)  # the a-priori error over its spread
        # the running statistics grow by noise and (gdot^2 + weight) s / (alpha + z weight s)
        # (rg_sum's and online_effective_dimension's terms) at most, z the least coin
        if not isfinite(running + noise + (gdot * gdot + weight)
                        * s / (alpha + least_coin * weight * s)):
            return CHECK_TARGET
        return new_record(Step, (s, shift, yhat, gdot, weight, d_t, noise))

    # -- the step ---------------------------------------------------------------------------

    def apply(self, store, window, selected, const double[:] v,
              analysis, step, int z, double alpha, whitened=None):
        """KONS.apply in one call (``whitened``: the unbounded learner's ``g``, bordered
        with its factor): ``NEED_ROOM`` (nothing changed, the
        size wanted in ``needed``: the learner's ``_make_room``, then this call again),
        ``SKIPPED`` (a null step: nothing changed) or ``OK``, the point at ``slot`` (with its
        row and squared norm ``row_norm`` written into ``store``'s buffers if ``wrote_row``:
        the learner updates its counters), the new atom's slot last in ``selected``, and the
        statistics' terms in ``tau``, ``rg_term`` and ``log_det_term``."""
        self.bind_analysis(analysis)
        cdef const double[::1] k = self.ak, e = self.ae, h = self.ah
        cdef double kappa = analysis.kappa, kc = analysis.kc
        cdef double sigma
        cdef double s = step.s, shift = step.shift, yhat = step.yhat, gdot = step.gdot
        cdef double weight = step.weight, d_t = step.d_t
        cdef double c_t
        cdef Py_ssize_t n = k.shape[0], slot, size
        c_t = self.step_terms(s, shift, yhat, gdot, weight, d_t, z, alpha)
        if not (z or c_t or d_t or gdot) and self.drops_null:
            return SKIPPED  # beyond the squared hinge's margin: it would only add zeros
        points = getattr(store, "points", None)
        rows = store if points is None else points.rows
        ring = rows.max_size
        slot = rows.n_added % ring if ring is not None and rows.n == ring else rows.n
        size = n if slot < n else slot + 1
        if not self.has_room(store, points is None, window, selected, v, slot, size, z) or \
                z and whitened is not None and factored(window) and \
                whitened.shape[0] <= window.size:
            self.needed = size
            return NEED_ROOM
        self.bind_fields(store)
        cdef double[::1] d = self.fd, c = self.fc, Kc = self.fKc, zf = self.fz
        if c_t != 0.0 and n:
            with nogil:
                axpy(<int>n, c_t, &k[0], &Kc[0])
            if factored(window):  # (D K c)_I moves by c_t e_I, so g by c_t L^{-1} e_I = c_t h
                self.whiten(whitened, c_t, h)
        self.slot, self.wrote_row = slot, points is None
        if self.wrote_row:
            self.bind_rows(store)
            self.keep(v)
            self.row_norm = self.put_row(slot)
        elif slot >= store.n:
            store.n = slot + 1
        d[slot], c[slot], Kc[slot], zf[slot] = d_t, c_t, kc + kappa * c_t, z
        if not z:
            return OK
        if factored(window):
            self.border_factor(window, whitened, analysis.e, analysis.h, d_t,
                               kc + kappa * c_t, d_t * d_t * kappa + alpha)
        else:
            sigma = d_t * d_t * s + alpha
            # the new atom's column of Kbar_I + alpha I over the slots: d_t d_i K_i, atoms only
            self.border(window, slot, size, n, d_t, h, e, zf, sigma, d_t * d_t * kappa + alpha)
        self.bind_atoms(selected)
        self.atoms[window.size - 1] = slot
        return OK

    cdef double step_terms(self, double s, double shift, double yhat, double gdot,
                           double weight, double d_t, int z, double alpha) noexcept:
        """``c_t = z w_t yhat - gdot - alpha h(ybar) / s`` (returned), and, with
        ``q = d_t^2 s / alpha``, ``tau = q / (1 + z q)`` (``g^T A_t^{-1} g eta_t``),
        ``rg_term = gdot^2 s / (alpha (1 + z q))`` (``tau / eta_t``, eta-free) and
        ``log_det_term = z log(1 + q)``."""
        cdef double q = d_t * d_t * s / alpha
        self.tau = q / (1.0 + z * q)
        self.rg_term = gdot * gdot * s / (alpha * (1.0 + z * q))
        self.log_det_term = log1p(q) if z else 0.0
        return z * weight * yhat - gdot - shift

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
        if factored(window):  # (the factor grows in its append)
            return not z or len(selected) > window.size
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

    cdef int whiten(self, whitened, double c_t, const double[::1] h) except -1:
        """g <- g + c_t h over the atoms (the learner's ``g = L^{-1} (D K c)_I``)."""
        cdef double[::1] g = whitened
        cdef int m = <int>h.shape[0]
        if m:
            with nogil:
                axpy(m, c_t, &h[0], &g[0])
        return 0

    cdef int border_factor(self, chol, whitened, e_obj, h_obj, double d_t, double kc_new,
                           double diagonal) except -1:
        """Border the factor with the column ``d_t e_I`` (``L^{-1}`` of it: ``d_t h``) and
        ``diagonal``, and ``g`` with its new entry ``(d_t kc_new - d_t h . g) / pivot``."""
        cdef double[::1] g = whitened
        cdef const double[::1] h = h_obj
        cdef Py_ssize_t m = h.shape[0]
        cdef double hg = dot(<int>m, &h[0], &g[0]) if m else 0.0
        pivot = chol.append(d_t * e_obj, diagonal, half=d_t * h_obj)
        g[m] = d_t * (kc_new - hg) / sqrt(pivot)
        return 0

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
        self.views.bind(window)
        return append_views(self.views, slot, w, n, sigma, &w[n], diagonal, size)

    def forget(self, store, window, selected, Py_ssize_t max_size, double alpha):
        """KONS.forget in one call: once more than ``max_size`` points are stored, the
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
        self.bind_fields(store)
        cdef double[::1] d = self.fd, c = self.fc, Kc = self.fKc, zf = self.fz
        cdef double c_j = c[slot]
        cdef double* row
        cdef const double[::1] given
        cdef int status = OK
        n = store.n
        if c_j != 0.0:
            if self.has_kernel:  # over the learner's rows, or the points its experts share
                self.bind_rows(rows)
                row = self.row_buffer(n)
                if kernel_row(&self.k, &self.data[0, 0], self.data.shape[1], n, <int>self.d,
                              &self.sq[0], &self.data[slot, 0], <int>self.d, row):
                    kernel_exp(self.g_obj, row, n)
            else:
                point = np.array(rows.data[slot, : rows.d])
                given = np.asarray(store.kernel_row(self.kernel, point), dtype=float)
                row = <double*>&given[0]
            with nogil:
                axpy(<int>n, -c_j, row, &Kc[0])
        if zf[slot] != 0.0:
            m = window.size
            self.log_det_term = self.remove(window, slot, n) + log(alpha)
            if m > 1:  # the atoms leave in the order they came: this one is the first
                self.bind_atoms(selected)
                memmove(&self.atoms[0], &self.atoms[1], (m - 1) * sizeof(Py_ssize_t))
            status = FORGOT_ATOM
        d[slot] = 0.0
        zf[slot] = 0.0
        c[slot] = 0.0
        return status

    cdef double remove(self, window, Py_ssize_t slot, Py_ssize_t n) except? -1.0:
        """SlotInverse.remove(slot, n): returns log P_jj (0 if P was recomputed instead)."""
        self.views.bind(window)
        return remove_views(self.views, slot, n, self.workspace(2 * self.own_slots(n) + 1))
