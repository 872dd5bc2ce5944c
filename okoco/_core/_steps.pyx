"""Whole learner steps and their loops over the rows of an array, on the learners' buffers.

A learner (``okoco.learners``) validates its input, makes room in its buffers (``Rows`` and
the factorizations grow by doubling in Python) and then calls these functions on views of
them. The kernels and losses with a compiled form are coded by an integer (``KERNELS``,
``LOSSES`` in ``okoco.learners``); anything else stays on the Python path.
"""

import numpy as np

from libc.math cimport exp, isfinite, sqrt
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
from okoco._core._linalg cimport axpy, dot
from okoco._core._losses cimport LOGISTIC, SQUARED, clip, clip_excess, derivative

# statuses
cdef enum:
    OK = 0
    OVERFLOW = 1


# ------------------------------------------------------------------------------ FunctionalGD
def fgd_run(tuple kernel, double[:, ::1] data, double[::1] coef, double[::1] sq,
            Py_ssize_t n, Py_ssize_t n_added, Py_ssize_t max_size, const double[:, ::1] V,
            const double[::1] y, const double[::1] eta, double lam, double C, int loss,
            double[::1] predictions):
    """Test-then-train over the rows of ``V`` (FunctionalGD's step, okoco.learners.fgd): for
    each row, the clipped prediction into ``predictions``, then the projection, the step and
    the new term appended to the buffers (a ring of ``max_size`` rows if ``max_size > 0``).

    The buffers must hold ``min(n + len(V), max_size)`` rows of ``V``'s width. Returns
    ``(n, n_added, rows learned, status)``: ``status`` is ``OVERFLOW`` if the row after the
    last learned one gave a non-finite value (nothing of it was learned).
    """
    cdef Kernel k = make_kernel(kernel)
    cdef Py_ssize_t ld = data.shape[1], t, i, slot, rows = V.shape[0], learned = V.shape[0]
    cdef int d = <int>V.shape[1], status = OK
    cdef double ybar, excess, gdot, kappa, c_new, shrink, norm
    buffer = np.empty(n + rows + 1)
    cdef double[::1] krow_view = buffer
    cdef double* krow = &krow_view[0]
    with nogil:
        for t in range(rows):
            if kernel_row(&k, &data[0, 0], ld, n, d, &sq[0], &V[t, 0], d, krow):
                with gil:
                    kernel_exp(buffer, krow, n)
            ybar = dot(<int>n, krow, &coef[0])
            predictions[t] = clip(ybar, C)
            shrink = 1.0 - eta[t] * lam
            excess = clip_excess(ybar, C)
            gdot = derivative(loss, y[t], ybar - excess)
            kappa = self_similarity(&k, &V[t, 0], d)
            c_new = -eta[t] * gdot - (shrink * excess / kappa if excess != 0.0 else 0.0)
            if not (isfinite(c_new) and isfinite(ybar) and isfinite(kappa)):
                status = OVERFLOW
                learned = t
                break
            if shrink != 1.0:  # NORMA's decay (lam > 0)
                for i in range(n):
                    coef[i] *= shrink
            slot = n_added % max_size if max_size > 0 and n == max_size else n
            memcpy(&data[slot, 0], &V[t, 0], d * sizeof(double))
            if ld > d:
                memset(&data[slot, d], 0, (ld - d) * sizeof(double))
            coef[slot] = c_new
            sq[slot] = dot(d, &V[t, 0], &V[t, 0])
            if slot >= n:
                n = slot + 1
            n_added += 1
    return n, n_added, learned, status


# ------------------------------------------------------------------------------ KRLS
from okoco._core._linalg cimport sym_matvec, sym_rank_one, tp_append, tp_half_solve

cdef inline Py_ssize_t start(Py_ssize_t r) noexcept nogil:
    return r * (r + 1) // 2

# the row at which krls_run stopped needs the Python step
cdef enum:
    PYTHON_STEP = 2


cdef bint analyse(const Kernel* k, Py_ssize_t m, const double* L, const double* w,
                  const double* x, int wx, const double* g, double* h, double* out) noexcept nogil:
    """KRLS's shared analysis of x given its kernel column g = k_D(x): h = L^{-1} g, and
    out = [k(x, x), the ALD residual k(x, x) - h.h, the prediction h.w]. False if a value is
    not finite or k(x, x) < 0 (the Python step then words the error)."""
    cdef Py_ssize_t i
    cdef double kxx
    kxx = self_similarity(k, x, wx)
    if k.kind != RBF and k.kind != LAPLACIAN:
        if not (isfinite(kxx) and kxx >= 0.0):
            return False
        for i in range(m):
            if not isfinite(g[i]):
                return False
    if m:
        memcpy(h, g, m * sizeof(double))
        tp_half_solve(L, <int>m, h)
    out[0] = kxx
    out[1] = kxx - dot(<int>m, h, h)
    out[2] = dot(<int>m, h, w)
    return True


cdef inline double noise_term(double error, double delta, double noise_ratio) noexcept nogil:
    """KRLS's term of its noise scale: the a-priori error over its predictive spread,
    e^2 / (max(delta, 0) + nu') (okoco.learners.krls.KRLS._noise_term)."""
    return error * error / ((delta if delta > 0.0 else 0.0) + noise_ratio)


cdef void weights_step(double* P, int m, bint dense, const double* h, double* w, double error,
                       double* u) noexcept nogil:
    """KRLS's step when the point does not join: u = M h, s = 1 / (1 + h.u),
    M <- M - s u u^T, w <- w + s e u."""
    cdef double s
    sym_matvec(P, m, dense, h, u)
    s = 1.0 / (1.0 + dot(m, h, u))
    sym_rank_one(P, m, dense, -s, u)
    axpy(m, s * error, u, w)


def krls_run(tuple kernel, double[:, ::1] data, double[::1] sq, Py_ssize_t m,
             double[::1] L, double[::1] A, Py_ssize_t ops, Py_ssize_t min_check,
             double min_pivot, double[::1] residuals, long long[::1] indices,
             double[::1] weights, Py_ssize_t seen, double[::1] w, double[::1] P, bint dense,
             double nu, Py_ssize_t max_size, double alpha, double C,
             const double[:, ::1] V, const double[::1] y, Py_ssize_t begin,
             double[::1] predictions, object g_buffer, double[::1] h, double noise_ratio,
             double noise_sum):
    """KRLS's test-then-train over rows ``begin ..`` of ``V`` (okoco.learners.krls), on its
    buffers (every one with room for ``min(m + len(V), max_size)`` atoms): the store's rows
    and norms, the ALD factor ``L`` of the stored Gram ``A`` with its residuals, indices and
    weights, ``w`` and ``M`` (``P``, packed unless ``dense``). ``C`` is NaN for no clipping,
    ``max_size`` 0 for none.

    ``noise_sum`` is the learner's running noise scale, to which each row's term is added.

    Stops before a row that needs the Python step: a point that joins while ``M`` is dense
    (bordering reallocates it) or when the factor's drift check is due, a value that is
    not finite, or a term that would make ``noise_sum`` overflow (the Python step refuses
    it). Returns ``(row, m, ops, n_clamped, seen, status, m_last, delta, added, pivot,
    noise_sum)``: the row it stopped at (``len(V)`` at the end), the new sizes and counters,
    the last row's analysis (its ``g`` and ``h`` over ``m_last`` atoms are left in ``g``,
    ``h``) and the new noise scale.
    """
    cdef Kernel k = make_kernel(kernel)
    cdef double[::1] g = g_buffer
    cdef Py_ssize_t ld = data.shape[1], t = begin, rows = V.shape[0], j, off, m_last = m
    cdef int d = <int>V.shape[1], clamped, n_clamped = 0, status = OK
    cdef double out[3]
    cdef double delta = float("nan"), pivot = float("nan"), schur, l, error, noise
    cdef bint added = False
    cdef double* u = <double*>malloc((m + rows + 1) * sizeof(double))
    if u == NULL:
        raise MemoryError()
    with nogil:
        while t < rows:
            if kernel_row(&k, &data[0, 0], ld, m, d, &sq[0], &V[t, 0], d, &g[0]):
                with gil:
                    kernel_exp(g_buffer, &g[0], m)
            if not analyse(&k, m, &L[0], &w[0], &V[t, 0], d, &g[0], &h[0], out):
                status = PYTHON_STEP
                break
            added = out[1] > nu and not (max_size > 0 and m >= max_size)
            if added and (dense or ops + 1 >= (m + 1 if m + 1 > min_check else min_check)):
                status = PYTHON_STEP
                break
            error = y[t] - out[2]
            # the a-priori error over its predictive spread: KRLS's online noise scale
            noise = noise_term(error, out[1], noise_ratio)
            if not isfinite(noise_sum + noise):  # refused by the Python step
                status = PYTHON_STEP
                break
            noise_sum += noise
            predictions[t] = out[2] if C != C else clip(out[2], C)
            if added:
                # the factor: bordered with [h, sqrt(schur)] (A with [g, k(x, x) + alpha])
                memcpy(&A[start(m)], &g[0], m * sizeof(double))
                schur = tp_append(&L[0], &A[0], <int>m, &h[0], out[0] + alpha, True,
                                  min_pivot, &clamped)
                n_clamped += clamped
                l = sqrt(schur)
                # w <- [w; e / l], M <- [[M, -u / l], [-u^T / l, (1 + h.u) / l^2]], u = M h
                sym_matvec(&P[0], <int>m, False, &h[0], u)
                w[m] = error / l
                off = start(m)
                for j in range(m):
                    P[off + j] = -u[j] / l
                P[off + m] = (1.0 + dot(<int>m, &h[0], u)) / (l * l)
                # the point, its norm; the ALD's residual, index and weight
                memcpy(&data[m, 0], &V[t, 0], d * sizeof(double))
                if ld > d:
                    memset(&data[m, d], 0, (ld - d) * sizeof(double))
                sq[m] = dot(d, &V[t, 0], &V[t, 0])
                residuals[m] = out[1]
                indices[m] = seen
                weights[m] = 1.0
                pivot = schur
                m_last = m
                m += 1
                ops += 1
            else:
                m_last = m
                if m:
                    weights_step(&P[0], <int>m, dense, &h[0], &w[0], error, u)
            delta = out[1]
            seen += 1
            t += 1
    free(u)
    return t, m, ops, n_clamped, seen, status, m_last, delta, added, pivot, noise_sum


# ------------------------------------------------------------------------------ step objects
# A learner's step on one row, as one compiled call: the object keeps typed views of the
# learner's numpy buffers (bound again only when Python reallocates one) and the analysis of
# the last row (kept for the learn_one that follows predict_one on the same row and state).
# It is a cache, not state: never saved or copied (okoco.learners.base._compiled_step).

# statuses of a step object's learn
cdef enum:
    NEED_ROOM = 4  # the buffers must grow first (nothing changed)
    JOINS = 5      # the Python step (a point joins, or a value to word an error about)


cdef class StepCore:
    """A learner's rows (``Rows``: points and squared norms) and the last row analysed (its
    attributes are declared in ``_steps.pxd``, for the step objects of other modules)."""

    def __cinit__(self):
        self.x, self.x_cap, self.seen = NULL, 0, -1

    def __dealloc__(self):
        free(self.x)

    cdef int bind_rows(self, object store) except -1:
        """Views of the store's buffers (again only if reallocated); n and d as they are."""
        self.store = store
        data = store.data
        if data is not self.data_obj:
            self.data, self.data_obj = data, data
        sq = store._sq
        if sq is None or sq.shape[0] != data.shape[0]:  # a store loaded without its norms
            store.squared_norms()
            sq = store._sq
        if sq is not self.sq_obj:
            self.sq, self.sq_obj = sq, sq
        self.n, self.d = store.n, store.d
        if self.g_obj is None or self.g_obj.shape[0] < self.n:
            self.g_obj = np.empty(max(2 * self.n, 16))
            self.g = self.g_obj
        return 0

    cdef bint known(self, const double[:] v, Py_ssize_t seen) noexcept:
        """Whether v was the last row analysed (bit for bit), at the same state."""
        cdef Py_ssize_t j
        if seen != self.seen or v.shape[0] != self.x_len:
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
        if self.n and kernel_row(&self.k, &self.data[0, 0], self.data.shape[1], self.n,
                                 <int>self.d, &self.sq[0], self.x, <int>self.x_width,
                                 &self.g[0]):
            kernel_exp(self.g_obj, &self.g[0], self.n)
        return 0

    cdef int append_row(self, Py_ssize_t slot, double norm_bound) except -1:
        """The kept row into the store's slot (its norm into the norms' cache)."""
        cdef Py_ssize_t w = self.x_len, ld = self.data.shape[1]
        cdef double norm
        memcpy(&self.data[slot, 0], self.x, w * sizeof(double))
        if ld > w:
            memset(&self.data[slot, w], 0, (ld - w) * sizeof(double))
        norm = dot(<int>w, self.x, self.x)
        self.sq[slot] = norm
        store = self.store
        if norm > norm_bound:
            store._sq_max = norm
        if slot >= self.n:
            store.n = slot + 1
        if w > self.d:
            store.d = w
        store.n_added += 1
        self.seen = -1
        return 0


cdef class FGDStep(StepCore):
    """FunctionalGD's ``f(x)`` and step (okoco.learners.fgd) on one encoded row."""
    cdef object coef_obj
    cdef double[::1] coef
    cdef readonly int loss  # -1: a loss without a compiled form (only predictions here)
    cdef double lam, C, value

    def __init__(self, tuple spec, kernel, int loss, double lam, double C):
        self.k, self.kernel = make_kernel(spec), kernel
        self.loss, self.lam, self.C = loss, lam, C

    cdef double analyse(self, object store, const double[:] v, Py_ssize_t seen) except? -1:
        self.bind_rows(store)
        coef = store.fields["coef"]
        if coef is not self.coef_obj:
            self.coef, self.coef_obj = coef, coef
        if not self.known(v, seen):
            self.keep(v)
            self.kernel_column()
            self.value = dot(<int>self.n, &self.g[0], &self.coef[0]) if self.n else 0.0
            self.seen = seen
        return self.value

    def predict(self, store, const double[:] v, Py_ssize_t seen):
        """``f(v)``, the unclipped prediction (kept for the step on the same row and state)."""
        return self.analyse(store, v, seen)

    def learn(self, store, const double[:] v, double y, double eta, Py_ssize_t seen):
        """Project, step and append the new term; returns ``OK``, ``OVERFLOW`` (a value is
        not finite) or ``NEED_ROOM`` (the buffers must grow), nothing changed but by ``OK``."""
        cdef double ybar = self.analyse(store, v, seen), shrink = 1.0 - eta * self.lam
        cdef double excess = clip_excess(ybar, self.C), gdot, kappa, c_new
        cdef Py_ssize_t i, slot, max_size = store.max_size or 0, n_added = store.n_added
        gdot = derivative(self.loss, y, ybar - excess)
        kappa = self_similarity(&self.k, self.x, <int>self.x_width)
        c_new = -eta * gdot - (shrink * excess / kappa if excess != 0.0 else 0.0)
        if not (isfinite(c_new) and isfinite(ybar) and isfinite(kappa)):
            return OVERFLOW
        slot = n_added % max_size if max_size > 0 and self.n == max_size else self.n
        if slot >= self.data.shape[0] or self.x_len > self.data.shape[1]:
            return NEED_ROOM
        if shrink != 1.0:  # NORMA's decay (lam > 0)
            for i in range(self.n):
                self.coef[i] *= shrink
        self.coef[slot] = c_new
        self.append_row(slot, store._sq_max)
        return OK


cdef class KRLSStep(StepCore):
    """KRLS's analysis (kernel column, ``h = L^{-1} g``, ALD residual, prediction) and its
    step when the point does not join (okoco.learners.krls), on one encoded row."""
    cdef object L_obj, w_obj, P_obj, h_obj
    cdef double[::1] L, w, P, h
    cdef bint dense, ok
    cdef double nu, noise_ratio
    cdef Py_ssize_t max_size
    cdef double out[3]
    cdef double* u
    cdef Py_ssize_t u_cap

    def __init__(self, tuple spec, kernel, double nu, max_size, double noise_ratio):
        self.k, self.kernel = make_kernel(spec), kernel
        self.nu, self.max_size, self.noise_ratio = nu, max_size or 0, noise_ratio

    def __dealloc__(self):
        free(self.u)

    cdef int analyse(self, learner, const double[:] v, Py_ssize_t seen) except -1:
        store = learner._store
        self.bind_rows(store)
        if not self.known(v, seen):
            self.bind(learner)
            self.keep(v)
            self.kernel_column()
            if self.h_obj is None or self.h_obj.shape[0] < self.n:
                self.h_obj = np.empty(self.g_obj.shape[0])
                self.h = self.h_obj
            self.ok = analyse(&self.k, self.n, &self.L[0], &self.w[0], self.x,
                              <int>self.x_width, &self.g[0], &self.h[0], self.out)
            self.seen = seen
        return 0

    cdef int bind(self, learner) except -1:
        """Views of the factor ``L``, ``w`` and ``M`` (again only if reallocated)."""
        L, w, M = learner._ald._chol._L, learner._w, learner._M
        if L is not self.L_obj:
            self.L, self.L_obj = L, L
        if w is not self.w_obj:
            self.w, self.w_obj = w, w
        P = M._dense if M._dense is not None else M._buf
        if P is not self.P_obj:
            self.P, self.P_obj, self.dense = M._storage(), P, M._dense is not None
        if self.n + 1 > self.u_cap:
            free(self.u)
            self.u_cap = 2 * (self.n + 1)
            self.u = <double*>malloc(self.u_cap * sizeof(double))
            if self.u == NULL:
                self.u_cap = 0
                raise MemoryError()
        return 0

    def predict(self, learner, const double[:] v, Py_ssize_t seen):
        """The prediction ``h.w``, or ``None`` if a value is not finite (the Python step then
        words the error)."""
        self.analyse(learner, v, seen)
        return self.out[2] if self.ok else None

    def analysis(self, learner, const double[:] v, Py_ssize_t seen):
        """``(g, k(x, x), h, delta, prediction)`` (``g``, ``h`` new arrays), or ``None``."""
        self.analyse(learner, v, seen)
        if not self.ok:
            return None
        return (self.g_obj[:self.n].copy(), self.out[0], self.h_obj[:self.n].copy(), self.out[1],
                self.out[2])

    def learn(self, learner, const double[:] v, double y, Py_ssize_t seen):
        """The step of a point that does not join (``M``, ``w``, the noise scale and the ALD's
        record of the row); returns ``OK``, or ``JOINS`` (nothing changed) for the Python step
        (which also refuses a term that would make the noise scale overflow)."""
        cdef double error, delta, noise_sum
        cdef Py_ssize_t m
        self.analyse(learner, v, seen)
        m, delta = self.n, self.out[1]
        if not self.ok or (delta > self.nu and not (self.max_size > 0 and m >= self.max_size)):
            return JOINS
        error = y - self.out[2]
        noise_sum = learner.noise_scale_sum + noise_term(error, delta, self.noise_ratio)
        if not isfinite(noise_sum):
            return JOINS
        if m:
            weights_step(&self.P[0], <int>m, self.dense, &self.h[0], &self.w[0], error, self.u)
        learner.noise_scale_sum = noise_sum
        learner.last_residual = delta
        ald = learner._ald
        ald._column_mode = True
        ald.n_seen += 1
        ald._last_a, ald._last_h = None, self.h_obj[:m].copy()
        ald.last_residual, ald.last_added = delta, False
        ald.last_kernel_column = self.g_obj[:m].copy()
        self.seen = -1
        return OK


#: statuses of the step objects' learn
STEP_OK, STEP_OVERFLOW, STEP_NEED_ROOM, STEP_JOINS = OK, OVERFLOW, NEED_ROOM, JOINS


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
