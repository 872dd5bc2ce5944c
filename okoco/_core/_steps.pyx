"""The whole step of FunctionalGD, defined once, on a typed state object, and the rows' core
that the steps of KRLS (``_krls``) and KONS (``_kons``) share.

A learner (``okoco.learners``) validates its input, grows its buffers (``Rows`` and the
factorizations double in Python) and owns a state object of this module: typed views of its
buffers and the scalars of the step (``FGDState`` here, ``_krls.KRLSState``,
``_kons.KONSCore``, after scikit-learn's ``WeightVector``). The state's step returns a status
(``STEP_*`` below) and leaves its results in the state's fields; the learner words the errors,
grows what must grow and writes the counters back to its own objects. Nothing here reads
another object's private attributes or calls back into a learner.

A kernel without a compiled form (a user's class following the kernel protocol) takes the same
step: the learner computes the kernel row in Python and feeds it (``feed``); a loss without a
compiled form gives its derivative to ``FGDState.apply``. The statuses are declared in
``_steps.pxd``.
"""

import numpy as np

from libc.math cimport isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memset

from okoco._core._kernels cimport kernel_exp, kernel_row, make_kernel, self_similarity
from okoco._core._linalg cimport dot
from okoco._core._losses cimport clip, clip_excess, derivative
from okoco._core._records import Analysis

#: statuses of the steps, for the learners
STEP_OK, STEP_OVERFLOW, STEP_NEGATIVE, STEP_NOISE = OK, OVERFLOW, NEGATIVE, NOISE
STEP_NEED_ROOM, STEP_JOINS, STEP_SKIPPED, STEP_FORGOT_ATOM = NEED_ROOM, JOINS, SKIPPED, FORGOT_ATOM


# ------------------------------------------------------------------------------ rows
cdef class StepCore:
    """Typed views of a learner's rows (points and their squared norms, the ``Rows`` buffers),
    the last row analysed and the arrays of the last analysis record made (its attributes are
    declared in ``_steps.pxd``, for the step objects of other modules). The learner binds the
    buffers and writes the counters back."""

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

    cdef object analysis(self, tuple fields, const double[::1] k, const double[::1] e,
                         const double[::1] h):
        """The record ``Analysis(*fields)`` (``okoco._core._records``: ``k``, ``kappa``, ``e``,
        ``h``, ...), the views of its arrays ``k``, ``e``, ``h`` kept for the step's later
        phases (:meth:`bind_analysis`)."""
        analysis = new_record(Analysis, fields)
        self.analysed, self.ak, self.ae, self.ah = analysis, k, e, h
        return analysis

    cdef int bind_analysis(self, object analysis) except -1:
        """Views of the arrays ``k``, ``e``, ``h`` of ``analysis`` in ``ak``, ``ae``, ``ah``:
        those kept if it is the last one made here (taking a view of an array costs a few
        hundred nanoseconds; a step's check and apply read the analysis just made)."""
        if analysis is not self.analysed:
            self.ak, self.ae, self.ah = analysis.k, analysis.e, analysis.h
            self.analysed = analysis
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
