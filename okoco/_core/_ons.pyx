"""The Online Newton Step head's step, defined once, on a typed state object
(``okoco.learners.ons.OnsHead``; the array loop of PROS-N-KONS / CON-KONS, ``_pros.pros_run``,
takes the same step).

.. code-block:: text

    ybar = z . u;  yhat = clip(ybar, -C, C);  gdot = loss'(y, yhat)
    w = eta gdot^2 (or loss''(yhat) with the "hessian" policy)
    new coordinates of values v (an atom joined, a feature appeared):
        z <- [z; v],  u <- [u; 0],  A^{-1} <- diag(A^{-1}, I / alpha)
    Pz = A^{-1} z;  s = z . Pz
    u <- u - h(ybar) Pz / s                  # oblique projection onto |z . u| <= C, A-norm
    q = w s;  A^{-1} <- A^{-1} - w Pz Pz^T / (1 + q);  u <- u - gdot Pz / (1 + q)

The update of ``A^{-1}`` is deferred: the step leaves it pending in the matrix's buffer
(``PackedSymmetric.pending_update``) and the next product applies it on its way (one pass
over ``A^{-1}`` a step, reading and writing each row once, instead of a read for the product
and a read and write for the update: ``_linalg.sym_update_matvec``, the same bits as the two
passes in the packed layout). The matrix applies it before anything else reads or changes it
(``PackedSymmetric.flush``), and so does :meth:`OnsState.flush`.

A head whose ``A^{-1}`` is a scaled identity :math:`cI` (``okoco.linalg.ScaledIdentity``: a
first-order head, ``w = 0`` for good) binds the scalar alone (``bind_scaled``): the product
is ``Pz = c z`` in ``O(m)`` (no matrix read: the bits of the matrix product, whose other
terms are exact zeros), and the step writes no matrix. A step of weight ``w != 0`` on it is
refused (``CURVED``): the learner turns the matrix into a full one first.

The learner owns an ``OnsState``: views of its ``u`` (a buffer of at least ``m`` entries) and of
``A^{-1}``'s storage (``okoco.linalg.PackedSymmetric``: dense ``(m, m)`` row-major, or the
packed lower triangle, row ``r`` at ``r (r + 1) / 2``), bound again after they grow (``bind``).
From Python a step is two calls, ``plan`` (the gradient, ``A^{-1} z`` kept in the state, and
a check for each way the coordinates may grow; for a loss without a compiled form ``feed``
its derivatives, then ``prepare``) and ``commit``; compiled loops call the ``cdef`` phases
``differentiate``, ``product``, ``admits`` and ``take``. A status other than ``OK``
comes before anything of the model (``u``, ``A^{-1}``) changed, and the learner words it as
an error. The fields of the last step (``yhat``, ``gdot``, ...) are its record, not model
state.
"""

import numpy as np

from libc.math cimport fabs, isfinite, log1p

from okoco._core._linalg cimport dot, sym_matvec, sym_rank_one, sym_update_matvec
from okoco._core._losses cimport clip_excess, derivative, second_derivative

# s = z^T A^{-1} z is floored before it divides the projection (a zero embedding never
# projects)
cdef double MIN_S = 1e-300
# no new coordinate: the view a step without any keeps (no buffer acquired each step)
cdef const double[::1] NO_NEW = np.zeros(0)

cdef inline double spread(double alpha, double s, double residual) noexcept nogil:
    """The spread of a prediction before the noise scale, alpha s + r + alpha / 2 (``s =
    z^T A^{-1} z``, ``r`` the residual k(x, x) - z.z, 0 for explicit features); a step adds
    the a-priori error's square over it to the head's noise sum."""
    return alpha * s + (residual if residual > 0.0 else 0.0) + 0.5 * alpha


def predictive_spread(double alpha, double s, double residual):
    """``spread`` for Python (okoco.learners.ons.OnsHead._ons_variance)."""
    return spread(alpha, s, residual)


OK, NOT_FINITE, TOO_LARGE, NEGATIVE, NEED_DERIVATIVE, CURVED = (
    ONS_OK, ONS_NOT_FINITE, ONS_TOO_LARGE, ONS_NEGATIVE, ONS_NEED_DERIVATIVE, ONS_CURVED)


cdef class OnsState:
    """The ONS head's step on views of its buffers (module docstring).

    ``alpha`` (:math:`A = \\alpha I` on new coordinates), ``bound`` (the set
    :math:`|z^\\top u| \\le` ``bound`` of the projection), ``loss`` (the compiled code of
    ``okoco._core._losses``, or -1: the learner feeds the derivative) and ``hessian`` (the
    weight of :math:`zz^\\top` is ``loss''``; else ``eta`` ``loss'^2``). A step leaves
    ``excess``, ``yhat``, ``gdot``, ``weight``, and what it adds to the head's counters:
    ``gained_dimension`` :math:`q/(1+q)`, ``gained_log_det`` :math:`\\log(1+q)` and ``noise``
    (the a-priori error over its spread).
    """

    def __init__(self, double alpha, double bound, int loss, bint hessian):
        self.alpha, self.bound, self.loss, self.hessian = alpha, bound, loss, hessian
        self.x_obj = np.zeros(16)
        self.x = self.x_obj
        self.pz_obj = np.zeros(16)
        self.pz = self.pz_obj
        self.new_values = NO_NEW

    def bind(self, P_obj, P_storage, Py_ssize_t m, bint dense, u):
        """Views of ``A^{-1}``'s flat storage (``P_obj`` the array that holds it; ``m``
        coordinates) and of ``u`` (at least ``m`` entries). A storage that names its matrix
        (``PackedSymmetric.storage``) gets the steps' updates deferred in it
        (``deferred``); a bare array, at once."""
        owner = getattr(P_storage, "owner", None)
        self._bind_point(u, m)
        pending = None if owner is None else owner.pending_update()
        self.P_obj, self.P_buf = P_obj, P_storage
        self.P = P_storage
        self.dense, self.scaled, self.scale = dense, False, 0.0
        self.deferred = pending is not None
        if self.deferred:
            self.pending_obj = pending
            self.pending = pending

    def bind_scaled(self, P_obj, double scale, Py_ssize_t m, u):
        """``A^{-1} = scale I`` of order ``m`` (``P_obj`` the object that holds it,
        ``okoco.linalg.ScaledIdentity``), no matrix bound, and a view of ``u`` (at least ``m``
        entries)."""
        if not (isfinite(scale) and scale > 0.0):
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
        self._bind_point(u, m)
        self.P_obj, self.P_buf, self.P = P_obj, None, None
        self.dense, self.scaled, self.scale = False, True, scale
        self.deferred = False

    def _bind_point(self, u, Py_ssize_t m):
        """A view of ``u`` (at least ``m`` entries), the order ``m`` and room for the step's
        ``A^{-1} z``."""
        if u.shape[0] < m:
            raise ValueError(f"u holds {u.shape[0]} entries for {m} coordinates")
        self.u_obj = u
        self.u = u
        self.m = m
        if self.x_obj.shape[0] < m:
            self.x_obj = np.zeros(max(2 * self.x_obj.shape[0], m))
            self.x = self.x_obj

    def retune(self, double alpha, double bound, int loss, bint hessian):
        """New parameters (a learner's ``set_params`` or a loaded file's)."""
        self.alpha, self.bound, self.loss, self.hessian = alpha, bound, loss, hessian

    # -- the step, for compiled loops --------------------------------------------------------
    cdef double product(self, const double* z, double* out) noexcept nogil:
        """``out = A^{-1} z`` over the ``m`` coordinates, and ``s = max(z . A^{-1} z, 0)``; the
        pending update applied on the way (a scaled identity: ``out = c z``, ``O(m)``)."""
        cdef int i, m = <int>self.m
        if m == 0:
            return 0.0
        if self.scaled:
            for i in range(m):
                out[i] = self.scale * z[i]
        elif self.deferred and self.pending[0] != 0.0:
            sym_update_matvec(&self.P[0], m, self.dense, self.pending[0], &self.pending[1], z,
                              out)
            self.pending[0] = 0.0
        else:
            sym_matvec(&self.P[0], m, self.dense, z, out)
        cdef double s = dot(m, z, out)
        return s if s > 0.0 else 0.0

    cdef void apply_pending(self) noexcept nogil:
        """Apply the pending update of ``A^{-1}`` alone, if any (:meth:`flush`)."""
        if self.deferred and self.pending[0] != 0.0:
            sym_rank_one(&self.P[0], <int>self.m, self.dense, self.pending[0], &self.pending[1])
            self.pending[0] = 0.0

    cdef int differentiate(self, double y, double ybar, double eta) noexcept nogil:
        """``excess``, ``yhat`` and, for a compiled loss, ``gdot`` and ``weight`` (``eta``:
        the step size, unless ``hessian``)."""
        cdef double gdot
        self.ybar = ybar
        self.excess = clip_excess(ybar, self.bound)
        self.yhat = ybar - self.excess
        if self.loss < 0:
            return ONS_NEED_DERIVATIVE
        gdot = derivative(self.loss, y, self.yhat)
        return self.weigh(ybar, gdot, second_derivative(self.loss, y, self.yhat)
                           if self.hessian else eta * gdot * gdot)

    cdef int weigh(self, double ybar, double gdot, double weight) noexcept nogil:
        """The derivative ``gdot`` and the weight of :math:`zz^\\top`, and whether they are
        usable (on a scaled identity, only the weight 0)."""
        self.gdot, self.weight = gdot, weight
        if self.hessian and not weight >= 0.0:
            return ONS_NEGATIVE
        if not (isfinite(ybar) and isfinite(gdot) and isfinite(weight)):
            return ONS_NOT_FINITE
        if self.scaled and weight != 0.0:
            return ONS_CURVED
        return ONS_OK

    cdef int admits(self, const double* Pz, double s, const double* new,
                    Py_ssize_t n_new) noexcept nogil:
        """Whether the step, with ``n_new`` new coordinates of values ``new``, stores only
        finite numbers: with ``top = max |u|`` and ``big = max |Pz|`` (the new coordinates'
        ``v / alpha`` included), every entry of the new ``u`` is at most
        ``top + (|shift| + |newton|) big`` and every entry of the update ``coef big^2`` in
        size (``|A^{-1}| <= 1 / alpha`` before it)."""
        cdef Py_ssize_t i, m = self.m
        cdef double big = 0.0, top = 0.0, v, q, shift, newton, coef
        for i in range(n_new):
            v = new[i] / self.alpha
            s += new[i] * v
            big = big if big >= fabs(v) else fabs(v)
        for i in range(m):
            big = big if big >= fabs(Pz[i]) else fabs(Pz[i])
            top = top if top >= fabs(self.u[i]) else fabs(self.u[i])
        q = self.weight * s
        shift = self.excess / (s if s > MIN_S else MIN_S) if self.excess != 0.0 else 0.0
        newton = self.gdot / (1.0 + q)
        coef = -self.weight / (1.0 + q)
        if not (isfinite(1.01 * (top + (fabs(shift) + fabs(newton)) * big))
                and isfinite(coef * big * big) and isfinite(q)):
            return ONS_TOO_LARGE
        return ONS_OK

    cdef void take(self, const double* Pz, double s, const double* new, Py_ssize_t n_new,
                     double y, double residual) noexcept nogil:
        """The checked step, the head grown by its ``n_new`` new coordinates first (``Pz``
        holds the ``m - n_new`` others): ``u`` moves and ``A^{-1}`` takes its rank-one
        update (``O(m^2)``), deferred to the next product when ``deferred``; a scaled identity
        takes none (its weight is 0: ``weigh``)."""
        cdef Py_ssize_t i, m = self.m, known = self.m - n_new
        cdef double* x
        cdef double q, c, error = y - self.yhat
        if self.deferred:
            self.apply_pending()  # (none, unless no product came since the last step)
            x = &self.pending[1]
        else:
            x = &self.x[0]
        self.noise = error * error / spread(self.alpha, s, residual)  # (before the growth)
        for i in range(known):
            x[i] = Pz[i]
        for i in range(n_new):
            x[known + i] = new[i] / self.alpha
            s += new[i] * x[known + i]
        q = self.weight * s
        if self.excess != 0.0:
            c = self.excess / (s if s > MIN_S else MIN_S)
            for i in range(m):
                self.u[i] -= c * x[i]
        if m == 0 or self.scaled:
            pass
        elif self.deferred:
            self.pending[0] = -self.weight / (1.0 + q)
        else:
            sym_rank_one(&self.P[0], <int>m, self.dense, -self.weight / (1.0 + q), x)
        c = self.gdot / (1.0 + q)
        for i in range(m):
            self.u[i] -= c * x[i]
        self.gained_dimension = q / (1.0 + q)
        self.gained_log_det = log1p(q)

    # -- from Python --------------------------------------------------------------------------
    def direction(self, const double[::1] z):
        """``(A^{-1} z, s)`` over the ``m`` coordinates (``z`` of length ``m``; a new array)."""
        if z.shape[0] != self.m:
            raise ValueError(f"z has {z.shape[0]} coordinates, the head {self.m}")
        out = np.empty(self.m)
        cdef double[::1] o = out
        cdef double s = 0.0
        if self.m:
            s = self.product(&z[0], &o[0])
        return out, s

    def flush(self):
        """Apply the pending update of ``A^{-1}`` alone, if any (its matrix's
        ``PackedSymmetric.flush`` does the same)."""
        self.apply_pending()

    def feed(self, double gdot, double second_derivative, double eta=0.0):
        """The status of the gradient from a loss without a compiled form: its derivative
        ``gdot`` at ``yhat`` and, for the ``hessian`` policy, its second derivative there."""
        return self.weigh(self.ybar, gdot,
                           second_derivative if self.hessian else eta * gdot * gdot)

    def plan(self, const double[::1] z, double y, double ybar, double eta, new, bint optional):
        """The status of the step at the coordinates ``z`` (length ``m``) and the unclipped
        prediction ``ybar``: the gradient (``NEED_DERIVATIVE`` for a loss without a compiled
        form: :meth:`feed`, then :meth:`prepare`), then :meth:`prepare`."""
        cdef int status = self.differentiate(y, ybar, eta)
        if status != ONS_OK:
            return status
        return self._prepare(z, new, optional)

    def prepare(self, const double[::1] z, new, bint optional):
        """The status of the step with the gradient in place: ``A^{-1} z`` and ``s`` kept for
        :meth:`commit`, and the check with the new coordinates ``new`` (an array, kept),
        and also without them if they are ``optional`` (an atom that may not join)."""
        return self._prepare(z, new, optional)

    cdef int _prepare(self, const double[::1] z, new, bint optional) except -1:
        """:meth:`prepare`, also :meth:`plan`'s (``z`` passed on as the view it is; an empty
        ``new``, most steps', takes no view of its own)."""
        cdef Py_ssize_t m = self.m
        cdef const double[::1] values = NO_NEW
        cdef int status
        if len(new):
            values = new
        if z.shape[0] != m:
            raise ValueError(f"z has {z.shape[0]} coordinates, the head {m}")
        if self.pz_obj.shape[0] < m:
            self.pz_obj = np.zeros(max(2 * self.pz_obj.shape[0], m))
            self.pz = self.pz_obj
        self.s = self.product(&z[0], &self.pz[0]) if m else 0.0
        self.new_values = values
        if optional or values.shape[0] == 0:
            status = self.admits(&self.pz[0], self.s, NULL, 0)
            if status != ONS_OK or values.shape[0] == 0:
                return status
        return self.admits(&self.pz[0], self.s, &values[0], values.shape[0])

    def commit(self, double y, double residual, Py_ssize_t n_new):
        """Take the planned step with the first ``n_new`` of its new coordinates (0 or all of
        them), the head already grown by them."""
        cdef const double[::1] values = self.new_values
        if n_new and n_new != values.shape[0] or self.pz_obj.shape[0] < self.m - n_new:
            raise ValueError(f"{n_new} new coordinates, {values.shape[0]} planned")
        self.take(&self.pz[0], self.s, &values[0] if n_new else NULL, n_new, y, residual)
