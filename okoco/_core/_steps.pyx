"""The whole steps of FunctionalGD and KRLS, each defined once, on typed state objects.

A learner (``okoco.learners``) validates its input, grows its buffers (``Rows`` and the
factorizations double in Python) and owns a state object of this module: typed views of its
buffers and the scalars of the step (``FGDState``, ``KRLSState``, after scikit-learn's
``WeightVector``). The state's step returns a status (``STEP_*`` below) and leaves its results
in the state's fields; the learner words the errors, grows what must grow and writes the
counters back to its own objects. Nothing here reads another object's attributes or calls
back into a learner.

A kernel without a compiled form (a user's class following the kernel protocol) takes the same
step: the learner computes the kernel row in Python and feeds it (``feed``); a loss without a
compiled form gives its derivative to ``FGDState.apply``.
"""

import numpy as np

from libc.math cimport isfinite, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memset

from okoco._core._kernels cimport (
    LAPLACIAN,
    RBF,
    Kernel,
    kernel_exp,
    kernel_row,
    make_kernel,
    self_similarity,
)
from okoco._core._leverage cimport kors_probability
from okoco._core._linalg cimport axpy, dot, sym_matvec, sym_rank_one, tp_half_solve
from okoco._core._losses cimport clip, clip_excess, derivative

# statuses of a step (nothing changed by any but OK)
cdef enum:
    OK = 0
    OVERFLOW = 1      # a value of the step is not finite (float64 overflowed, or NaN)
    NEGATIVE = 2      # k(x, x) < 0: the kernel is not positive semi-definite
    NOISE = 3         # the noise scale's sum would overflow (KRLS)
    NEED_ROOM = 4     # the buffers must grow first
    JOINS = 5         # the point joins KRLS's dictionary: the learner's ALD takes it

#: statuses of the steps, for the learners
STEP_OK, STEP_OVERFLOW, STEP_NEGATIVE, STEP_NOISE = OK, OVERFLOW, NEGATIVE, NOISE
STEP_NEED_ROOM, STEP_JOINS = NEED_ROOM, JOINS


# ------------------------------------------------------------------------------ rows
cdef class StepCore:
    """Typed views of a learner's rows (points and their squared norms, the ``Rows`` buffers)
    and the last row analysed (its attributes are declared in ``_steps.pxd``, for the step
    objects of other modules)."""

    def __cinit__(self):
        self.x, self.x_cap, self.seen = NULL, 0, -1

    def __dealloc__(self):
        free(self.x)

    @property
    def size(self):
        """Rows held."""
        return self.n

    @property
    def width(self):
        """Columns in use."""
        return self.d

    cdef int bind_buffers(self, object data, object sq, Py_ssize_t n,
                          Py_ssize_t d) except -1:
        """Views of the rows' buffers (again only if reallocated), ``n`` rows of ``d`` in use;
        ``sq`` holds a squared norm per row of ``data``'s capacity."""
        if data is not self.data_obj:
            self.data, self.data_obj = data, data
        if sq is not self.sq_obj:
            self.sq, self.sq_obj = sq, sq
        self.n, self.d = n, d
        return self.column_room()

    cdef int column_room(self) except -1:
        """Room in ``g`` for a column over the ``n`` rows (the rows grow between binds)."""
        if self.g_obj is None or self.g.shape[0] < self.n + 1:
            self.g_obj = np.empty(max(2 * (self.n + 1), 16))
            self.g = self.g_obj
        return 0

    cdef int bind_rows(self, object store) except -1:
        """``bind_buffers`` from a ``Rows`` store: for ``okoco._core._kons``, whose step still
        hands its store (FunctionalGD and KRLS bind their buffers themselves)."""
        self.store = store
        sq = store._sq
        if sq is None or sq.shape[0] != store.data.shape[0]:  # a store loaded without norms
            store.squared_norms()
            sq = store._sq
        return self.bind_buffers(store.data, sq, store.n, store.d)

    cdef bint known(self, const double[:] v, Py_ssize_t seen) noexcept:
        """Whether v was the last row analysed (bit for bit), at the same state."""
        cdef Py_ssize_t j
        if seen < 0 or seen != self.seen or v.shape[0] != self.x_len:
            return False
        for j in range(v.shape[0]):
            if memcmp(&self.x[j], &v[j], sizeof(double)):
                return False
        return True

    cdef int keep(self, const double[:] v) except -1:
        """Copy v (a row of any stride), zero-padded to the rows' width d (features it lacks
        are 0 in it)."""
        cdef Py_ssize_t j, w = v.shape[0], width = w if w > self.d else self.d
        if width + 1 > self.x_cap:
            free(self.x)
            self.x_cap = 2 * (width + 1)
            self.x = <double*>malloc(self.x_cap * sizeof(double))
            if self.x == NULL:
                self.x_cap = 0
                raise MemoryError()
        for j in range(w):
            self.x[j] = v[j]
        memset(self.x + w, 0, (width - w) * sizeof(double))
        self.x_len, self.x_width, self.seen = w, width, -1
        return 0

    cdef int kernel_column(self) except -1:
        """g = k(X_i, x) over the n stored rows, for the row kept."""
        self.column_room()
        if self.n and kernel_row(&self.k, &self.data[0, 0], self.data.shape[1], self.n,
                                 <int>self.d, &self.sq[0], self.x, <int>self.x_width,
                                 &self.g[0]):
            kernel_exp(self.g_obj, &self.g[0], self.n)
        return 0

    cdef int take_column(self, const double[::1] g) except -1:
        """g = the kernel column the caller computed (a kernel without a compiled form)."""
        if g.shape[0] != self.n:
            raise ValueError(f"the kernel column has {g.shape[0]} values for {self.n} rows")
        self.column_room()
        if self.n:
            memcpy(&self.g[0], &g[0], self.n * sizeof(double))
        return 0

    cdef double put_row(self, Py_ssize_t slot) noexcept:
        """The kept row into row ``slot`` of the buffers (zeros beyond it) and its squared norm
        into the norms; ``n`` and ``d`` grow to hold it. Returns the norm."""
        cdef Py_ssize_t w = self.x_len, ld = self.data.shape[1]
        cdef double norm
        memcpy(&self.data[slot, 0], self.x, w * sizeof(double))
        if ld > w:
            memset(&self.data[slot, w], 0, (ld - w) * sizeof(double))
        norm = dot(<int>w, self.x, self.x)
        self.sq[slot] = norm
        if slot >= self.n:
            self.n = slot + 1
        if w > self.d:
            self.d = w
        self.seen = -1
        return norm

    cdef int append_row(self, Py_ssize_t slot, double norm_bound) except -1:
        """``put_row`` and the ``Rows`` store's counters: for ``okoco._core._kons``."""
        cdef double norm = self.put_row(slot)
        store = self.store
        if norm > norm_bound:
            store._sq_max = norm
        store.n, store.d = self.n, self.d
        store.n_added += 1
        return 0


# ------------------------------------------------------------------------------ FunctionalGD
cdef class FGDState(StepCore):
    """FunctionalGD's expansion :math:`f = \\sum_i c_i k(x_i, \\cdot)` on typed views of its
    rows (points, squared norms, coefficients ``coef``) with the ring's counters, and the
    analysis of the last row: :math:`\\bar y = f(x)` (``value``) and :math:`\\kappa = k(x, x)`.

    The learner binds its buffers (``bind``, again after they grow) and writes ``size``,
    ``width``, ``n_added`` and ``sq_max`` back to its store after each step.
    """
    cdef object coef_obj
    cdef double[::1] coef
    cdef readonly int loss          # the compiled loss's code, -1 if it has none
    cdef readonly bint compiled     # whether the kernel has a compiled form
    cdef double lam, C
    cdef readonly Py_ssize_t n_added, max_size
    cdef readonly double sq_max, value, kappa

    def __init__(self, tuple spec, kernel, int loss, double lam, double C, max_size):
        self.compiled = spec is not None
        if self.compiled:
            self.k = make_kernel(spec)
        self.kernel, self.loss, self.lam, self.C = kernel, loss, lam, C
        self.max_size = max_size or 0

    def bind(self, data, sq, coef, Py_ssize_t n, Py_ssize_t d, Py_ssize_t n_added,
             double sq_max):
        """Views of the store's buffers (``data``, the norms ``sq`` and ``coef``, each with a
        row per row of ``data``) and its counters."""
        self.bind_buffers(data, sq, n, d)
        if coef is not self.coef_obj:
            self.coef, self.coef_obj = coef, coef
        self.n_added, self.sq_max = n_added, sq_max

    cdef double evaluate(self) noexcept:
        """``value = g.coef``, from the kept row's kernel column ``g``."""
        self.value = dot(<int>self.n, &self.g[0], &self.coef[0]) if self.n else 0.0
        return self.value

    cdef double analyse_kept(self) except? -1:
        """``value`` and ``kappa`` of the kept row (compiled kernels)."""
        self.kernel_column()
        self.kappa = self_similarity(&self.k, self.x, <int>self.x_width)
        return self.evaluate()

    def known_row(self, const double[:] v, Py_ssize_t seen):
        """Whether ``v`` is the row analysed last, at step ``seen``."""
        return self.known(v, seen)

    def predict(self, const double[:] v, Py_ssize_t seen):
        """``f(v)``, the unclipped prediction (compiled kernels), kept for the step on the same
        row at the same step ``seen``."""
        if not self.known(v, seen):
            self.keep(v)
            self.analyse_kept()
            self.seen = seen
        return self.value

    def feed(self, const double[:] v, const double[::1] g, double kappa, Py_ssize_t seen):
        """``predict`` from the kernel column ``g`` and ``kappa = k(v, v)`` computed by the
        caller (a kernel without a compiled form)."""
        self.keep(v)
        self.take_column(g)
        self.kappa = kappa
        self.evaluate()
        self.seen = seen
        return self.value

    @property
    def clipped(self):
        """The prediction of the row analysed: ``value`` clipped to ``[-C, C]``, where the
        loss's derivative is taken."""
        return clip(self.value, self.C)

    def apply(self, double eta, double gdot):
        """The step on the row analysed with the loss's derivative ``gdot`` at ``clipped``;
        returns a status (``fgd_step``)."""
        return fgd_step(self, eta, gdot)

    def learn(self, const double[:] v, double y, double eta, Py_ssize_t seen):
        """``predict`` and the step with the compiled loss's derivative, in one call."""
        self.predict(v, seen)
        return fgd_step(self, eta, derivative(self.loss, y, clip(self.value, self.C)))


cdef int fgd_step(FGDState s, double eta, double gdot) noexcept:
    """FunctionalGD's step on the row analysed (:math:`\\bar y`, :math:`\\kappa`), its one
    definition: project :math:`f` onto :math:`\\{|f(x)| \\le C\\}`, shrink by NORMA's
    :math:`1 - \\eta\\lambda` and append the new term,

    :math:`c_{new} = -\\eta \\dot g - (1 - \\eta\\lambda) h(\\bar y) / \\kappa`,
    :math:`c_i \\leftarrow (1 - \\eta\\lambda) c_i`,

    :math:`h` the clip's excess (the projection's term, then shrunk with the others). With
    ``max_size`` the new term overwrites the oldest once the ring is full.

    Returns ``OK``, ``OVERFLOW`` (a value not finite) or ``NEED_ROOM``; nothing changed but
    by ``OK``.
    """
    cdef double shrink = 1.0 - eta * s.lam, excess = clip_excess(s.value, s.C), c_new, norm
    cdef Py_ssize_t i, slot
    c_new = -eta * gdot - (shrink * excess / s.kappa if excess != 0.0 else 0.0)
    if not (isfinite(c_new) and isfinite(s.value) and isfinite(s.kappa)):
        return OVERFLOW
    slot = s.n_added % s.max_size if s.max_size > 0 and s.n == s.max_size else s.n
    if slot >= s.data.shape[0] or s.x_len > s.data.shape[1] or slot >= s.coef.shape[0]:
        return NEED_ROOM
    if shrink != 1.0:  # NORMA's decay (lam > 0)
        for i in range(s.n):
            s.coef[i] *= shrink
    s.coef[slot] = c_new
    norm = s.put_row(slot)
    if norm > s.sq_max:
        s.sq_max = norm
    s.n_added += 1
    return OK


def fgd_run(FGDState state, const double[:, ::1] V, const double[::1] y,
            const double[::1] eta, double[::1] predictions):
    """Test-then-train over the rows of ``V`` (compiled kernel and loss): each row's clipped
    prediction into ``predictions``, then ``fgd_step``. The buffers must have room for every
    row. Returns ``(rows learned, status)``: the status of the first row refused, if any."""
    cdef Py_ssize_t t, rows = V.shape[0]
    cdef int status = OK
    for t in range(rows):
        state.keep(V[t])
        predictions[t] = clip(state.analyse_kept(), state.C)
        status = fgd_step(state, eta[t], derivative(state.loss, y[t], predictions[t]))
        if status != OK:
            return t, status
    return rows, OK


# ------------------------------------------------------------------------------ ALD and KRLS
cdef inline double ald_residual(const double* L, int m, const double* g, double kxx,
                                double* h) noexcept nogil:
    """The ALD analysis of a point from its kernel column ``g`` against ``m`` atoms, the
    (ridge-loaded) Gram ``L L^T``: ``h = L^{-1} g`` (into ``h``) and the returned residual
    ``delta = k(x, x) - h.h``, the squared distance of the point to the atoms' span."""
    if m:
        memcpy(h, g, m * sizeof(double))
        tp_half_solve(L, m, h)
    return kxx - dot(m, h, h)


cdef inline bint ald_joins(double delta, double nu, Py_ssize_t m,
                           Py_ssize_t max_size) noexcept nogil:
    """Whether a point of residual ``delta`` joins ``m`` atoms (``max_size`` 0: no bound)."""
    return delta > nu and not (max_size > 0 and m >= max_size)


def ald_project(const double[::1] L, const double[::1] g, double kxx):
    """``(h, delta)`` of ``ald_residual`` for ``okoco.dictionary.ALD``: ``L`` its packed
    factor over ``len(g)`` atoms (``h`` a new array)."""
    cdef Py_ssize_t m = g.shape[0]
    h = np.empty(m)
    cdef double[::1] hv = h
    delta = ald_residual(&L[0], <int>m, &g[0] if m else NULL, kxx, &hv[0] if m else NULL)
    return h, delta


def ald_admits(double delta, double nu, Py_ssize_t m, max_size):
    """``ald_joins`` for ``okoco.dictionary.ALD`` (``max_size`` ``None``: no bound)."""
    return ald_joins(delta, nu, m, max_size or 0)


cdef inline double noise_term(double error, double delta, double noise_ratio) noexcept nogil:
    """KRLS's term of its noise scale: the a-priori error over its predictive spread,
    e^2 / (max(delta, 0) + nu') (okoco.learners.krls.KRLS._predictive_variance)."""
    return error * error / ((delta if delta > 0.0 else 0.0) + noise_ratio)


cdef class KRLSState(StepCore):
    """KRLS's weights in the coordinates of the ALD factor ``L`` (``w = L^{-1} beta`` and
    ``M = L^{-1} P L^{-T}``, okoco.learners.krls) on typed views of the learner's buffers
    (its points and norms, the factor ``L``, ``w``, ``M`` packed or dense), and the analysis
    of the last row: ``h = L^{-1} g``, ``kxx = k(x, x)``, the ALD residual ``delta`` and the
    prediction ``h.w`` (``status``: ``OK``, ``OVERFLOW`` or ``NEGATIVE``). A step leaves its
    a-priori ``error`` and the noise scale's new sum ``noise_sum``; the analysis of the last
    row learned is kept as ``last_column()``, ``last_half()``, ``last_delta``.

    The learner binds its buffers (``bind_points``, ``bind_weights``), again after a point
    joins (its ALD and ``M`` grow in Python, then ``border`` gives KRLS's terms).
    """
    cdef object L_obj, w_obj, P_obj, h_obj, u_obj, last_obj
    cdef double[::1] L, w, P, h, u, last_g, last_h
    cdef readonly bint compiled, dense
    cdef bint check_values
    cdef readonly int status
    cdef double nu, noise_ratio, C, pending
    cdef Py_ssize_t max_size, last_m
    cdef readonly double kxx, delta, prediction, error, noise_sum, last_delta

    def __init__(self, tuple spec, kernel, double nu, max_size, double noise_ratio, double C):
        self.compiled = spec is not None
        if self.compiled:
            self.k = make_kernel(spec)
        # RBF and Laplacian rows are in [0, 1] and k(x, x) = 1: nothing to check
        self.check_values = not (self.compiled and self.k.kind in (RBF, LAPLACIAN))
        self.kernel, self.nu, self.noise_ratio, self.C = kernel, nu, noise_ratio, C
        self.max_size = max_size or 0
        self.status = OVERFLOW  # nothing analysed

    def bind_points(self, data, sq, Py_ssize_t n, Py_ssize_t d):
        """Views of the dictionary's points (``data``, their norms ``sq``), ``n`` of ``d``."""
        self.bind_buffers(data, sq, n, d)
        if self.h_obj is None or self.h_obj.shape[0] < n + 1:
            size = max(2 * (n + 1), 16)
            self.h_obj, self.u_obj = np.empty(size), np.empty(size)
            self.last_obj = np.empty((2, size))
            self.h, self.u = self.h_obj, self.u_obj
            self.last_g, self.last_h = self.last_obj[0], self.last_obj[1]
            self.last_m = 0

    def bind_weights(self, L, w, P, bint dense):
        """Views of the packed factor ``L``, ``w`` and ``M``'s flat storage ``P`` (dense
        ``(m, m)`` or packed lower)."""
        if L is not self.L_obj:
            self.L, self.L_obj = L, L
        if w is not self.w_obj:
            self.w, self.w_obj = w, w
        if P is not self.P_obj:
            self.P, self.P_obj = P, P
        self.dense = dense

    cdef int analyse(self) noexcept:
        """``h``, ``delta`` and the prediction of the kept row from ``g`` and ``kxx``."""
        cdef Py_ssize_t i
        cdef int m = <int>self.n
        if self.check_values:
            if not isfinite(self.kxx):
                self.status = OVERFLOW
                return self.status
            for i in range(m):
                if not isfinite(self.g[i]):
                    self.status = OVERFLOW
                    return self.status
            if self.kxx < 0.0:
                self.status = NEGATIVE
                return self.status
        self.delta = ald_residual(&self.L[0], m, &self.g[0], self.kxx, &self.h[0])
        self.prediction = dot(m, &self.h[0], &self.w[0]) if m else 0.0
        self.status = OK
        return OK

    cdef int analyse_kept(self) noexcept:
        """``analyse`` the kept row (compiled kernels)."""
        self.kernel_column()
        self.kxx = self_similarity(&self.k, self.x, <int>self.x_width)
        return self.analyse()

    def known_row(self, const double[:] v, Py_ssize_t seen):
        """Whether ``v`` is the row analysed last, at step ``seen``."""
        return self.known(v, seen)

    def predict(self, const double[:] v, Py_ssize_t seen):
        """Analyse ``v`` (compiled kernels; kept for the step on the same row at the same step
        ``seen``); returns ``status``."""
        if not self.known(v, seen):
            self.keep(v)
            self.analyse_kept()
            self.seen = seen
        return self.status

    def feed(self, const double[:] v, const double[::1] g, double kxx, Py_ssize_t seen):
        """``predict`` from the kernel column ``g`` and ``kxx`` computed by the caller (a
        kernel without a compiled form)."""
        self.keep(v)
        self.take_column(g)
        self.kxx = kxx
        self.analyse()
        self.seen = seen
        return self.status

    def step(self, double y, double noise_sum):
        """``krls_step`` on the row analysed, the noise scale's sum being ``noise_sum``."""
        return krls_step(self, y, noise_sum)

    def learn(self, const double[:] v, double y, Py_ssize_t seen, double noise_sum):
        """``predict`` and ``krls_step``, in one call."""
        self.predict(v, seen)
        return krls_step(self, y, noise_sum)

    def border(self, double pivot):
        """KRLS's terms for the row analysed once it joined the dictionary (its ALD factor
        bordered by ``[h^T, l]``, ``l^2 = pivot``): ``w[m] = e / l`` (``w`` bound with room
        for it) and ``M``'s border, ``-u / l`` (``border_column()``) and the returned
        diagonal ``(1 + h.u) / l^2``, ``u = M h``; the step's noise term joins ``noise_sum``."""
        cdef int m = <int>self.n, j
        cdef double l = sqrt(pivot), hu
        if self.w.shape[0] <= m:
            raise ValueError(f"w has no room for atom {m}")
        sym_matvec(&self.P[0], m, self.dense, &self.h[0], &self.u[0])
        hu = dot(m, &self.h[0], &self.u[0])
        self.w[m] = self.error / l
        for j in range(m):
            self.u[j] = -self.u[j] / l
        self.noise_sum = self.pending
        self.remember()
        return (1.0 + hu) / (l * l)

    def border_column(self):
        """``M``'s new column of the last ``border`` (a view)."""
        return self.u_obj[:self.n]

    def column(self):
        """The kernel column ``g`` of the row analysed (a new array)."""
        return self.g_obj[:self.n].copy()

    def half(self):
        """``h = L^{-1} g`` of the row analysed (a new array)."""
        return self.h_obj[:self.n].copy()

    def last_column(self):
        """``g`` of the last row learned (a new array)."""
        return self.last_obj[0, :self.last_m].copy()

    def last_half(self):
        """``h`` of the last row learned (a new array)."""
        return self.last_obj[1, :self.last_m].copy()

    cdef void remember(self) noexcept:
        """The analysis of the row analysed as the last row learned."""
        cdef Py_ssize_t m = self.n
        if m:
            memcpy(&self.last_g[0], &self.g[0], m * sizeof(double))
            memcpy(&self.last_h[0], &self.h[0], m * sizeof(double))
        self.last_m, self.last_delta = m, self.delta


cdef int krls_step(KRLSState s, double y, double noise_sum) noexcept:
    """KRLS's step on the row analysed, its one definition: the a-priori error
    ``e = y - h.w``, the noise scale's term ``e^2 / (max(delta, 0) + nu')`` and, if the point
    does not join the dictionary (``ald_joins``), the weights' step ``u = M h``,
    ``s = 1 / (1 + h.u)``, ``M <- M - s u u^T``, ``w <- w + s e u``.

    Returns ``OK``; the analysis's status (``OVERFLOW``, ``NEGATIVE``); ``NOISE`` (the sum
    would overflow); or ``JOINS`` (the learner's ALD takes the point, then ``border``):
    nothing changed but by ``OK`` (``error`` is set from ``JOINS`` on, and ``border`` takes
    the noise scale's new sum to ``noise_sum``).
    """
    cdef double noise, step, error
    cdef int m = <int>s.n
    if s.status != OK:
        return s.status
    error = y - s.prediction
    noise = noise_term(error, s.delta, s.noise_ratio)
    if not isfinite(noise_sum + noise):
        return NOISE
    s.error, s.pending = error, noise_sum + noise
    if ald_joins(s.delta, s.nu, s.n, s.max_size):
        return JOINS
    s.noise_sum = s.pending
    if m:
        sym_matvec(&s.P[0], m, s.dense, &s.h[0], &s.u[0])
        step = 1.0 / (1.0 + dot(m, &s.h[0], &s.u[0]))
        sym_rank_one(&s.P[0], m, s.dense, -step, &s.u[0])
        axpy(m, step * error, &s.u[0], &s.w[0])
    s.remember()
    s.seen = -1
    return OK


def krls_run(KRLSState state, const double[:, ::1] V, const double[::1] y, Py_ssize_t begin,
             Py_ssize_t seen, double[::1] predictions, double noise_sum):
    """Test-then-train over rows ``begin ..`` of ``V`` (compiled kernels), ``seen`` the step
    of row ``begin`` and ``noise_sum`` the noise scale's sum before it: each row's prediction
    (clipped unless ``C`` is NaN) into ``predictions``, then ``krls_step``. Stops at the
    first row whose step is not ``OK`` (its analysis kept for the learner's step on it).
    Returns ``(row, status)``, ``row`` that row (``len(V)`` at the end)."""
    cdef Py_ssize_t t, rows = V.shape[0]
    cdef int status
    state.noise_sum = noise_sum
    for t in range(begin, rows):
        state.keep(V[t])
        state.analyse_kept()
        state.seen = seen + t - begin
        status = krls_step(state, y[t], state.noise_sum)
        if status != OK:
            return t, status
        predictions[t] = state.prediction if state.C != state.C else clip(state.prediction,
                                                                          state.C)
    return rows, OK


# ------------------------------------------------------------------------------ KORS
def kors_score(const double[::1] weights, const double[::1] k_col, const double[::1] L,
               double k_diag, double alpha, double eps, double beta, double p_min,
               double[::1] a, double[::1] h):
    """KORS's estimate of a point (Calandriello et al. 2017, Eq. 4) against ``m = len(k_col)``
    atoms: ``a = sqrt(w) * k_col``, ``h = L^{-1} a`` (into ``a`` and ``h``) and Eq. 4's
    probability from the explained part ``h.h`` (``_leverage.kors_probability``). Returns
    ``(q, tau, p)``."""
    cdef Py_ssize_t m = k_col.shape[0], j
    cdef double q, tau, p
    with nogil:
        for j in range(m):
            a[j] = sqrt(weights[j]) * k_col[j]
        if m:
            memcpy(&h[0], &a[0], m * sizeof(double))
            tp_half_solve(&L[0], <int>m, &h[0])
        p = kors_probability(k_diag, dot(<int>m, &h[0] if m else NULL, &h[0] if m else NULL),
                             alpha, eps, beta, p_min, &q, &tau)
    return q, tau, p
