"""KRLS's analysis and step, each defined once, on a typed state object, and the ALD's
analysis and test that the dictionary (``okoco.dictionary.ALD``) shares with it.

KRLS (``okoco.learners.krls``) owns a ``KRLSState``: typed views of its points, of its ALD
factor and of its weights, bound again after a point joins. A step returns a status
(``_steps.pxd``) and leaves its results in the state; a point that joins is taken by the
learner's ALD in Python, then ``KRLSState.border`` gives KRLS's terms. A kernel without a
compiled form feeds its column to the same step (``KRLSState.feed``).

The step's update of ``M`` is deferred as the ONS head's (``okoco._core._ons``): left pending
in ``M``'s buffer (``PackedSymmetric.pending_update``), applied fused with the next product
``M h`` (``_linalg.sym_update_matvec``: one pass over ``M`` a step), and by ``M`` itself
before anything else reads or changes it.
"""

import numpy as np

from libc.math cimport isfinite, sqrt
from libc.string cimport memcpy

from okoco._core._kernels cimport make_kernel, self_similarity
from okoco._core._linalg cimport (axpy, dot, sym_matvec, sym_rank_one, sym_update_matvec,
                                  tp_half_solve)
from okoco._core._losses cimport clip
from okoco._core._steps cimport JOINS, NEGATIVE, NOISE, OK, OVERFLOW, StepCore


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
    joins (its ALD and ``M`` grow in Python, then ``border`` gives KRLS's terms). Bound to a
    ``PackedSymmetric``'s storage, the steps' updates of ``M`` are deferred (``deferred``:
    ``[a, x]`` in ``update``, the matrix's pending update).
    """
    cdef object L_obj, w_obj, P_obj, h_obj, u_obj, last_obj, update_obj
    cdef double[::1] L, w, P, h, u, last_g, last_h, update
    cdef readonly bint compiled, dense, deferred
    cdef bint check_values
    cdef readonly int status
    cdef double nu, noise_ratio, C, pending
    cdef Py_ssize_t max_size, last_m
    cdef readonly double kxx, delta, prediction, error, noise_sum, last_delta

    def __init__(self, tuple spec, kernel, double nu, max_size, double noise_ratio, double C):
        self.compiled = spec is not None
        if self.compiled:
            self.k = make_kernel(spec)
        # a bounded kernel's rows are in [0, 1] and k(x, x) = 1: nothing to check
        self.check_values = not (self.compiled and self.k.bounded)
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
            owner = getattr(P, "owner", None)
            self.deferred = owner is not None
            if self.deferred:
                self.update_obj = owner.pending_update()
                self.update = self.update_obj
            self.P, self.P_obj = P, P
        self.dense = dense

    cdef void product(self, int m) noexcept:
        """``u = M h`` over the ``m`` atoms, the pending update of ``M`` applied on the way."""
        if self.deferred and self.update[0] != 0.0:
            sym_update_matvec(&self.P[0], m, self.dense, self.update[0], &self.update[1],
                              &self.h[0], &self.u[0])
            self.update[0] = 0.0
        else:
            sym_matvec(&self.P[0], m, self.dense, &self.h[0], &self.u[0])

    cdef void rank_one(self, int m, double a) noexcept:
        """``M <- M + a u u^T``, left pending when ``deferred``."""
        if self.deferred:
            memcpy(&self.update[1], &self.u[0], m * sizeof(double))
            self.update[0] = a
        else:
            sym_rank_one(&self.P[0], m, self.dense, a, &self.u[0])

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
        self.product(m)
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
        s.product(m)
        step = 1.0 / (1.0 + dot(m, &s.h[0], &s.u[0]))
        s.rank_one(m, -step)
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
