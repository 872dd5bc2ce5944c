# The Online Newton Step head (okoco._core._ons.OnsState): its state and step, for the compiled
# loops of other modules (okoco._core._pros).

# statuses of a step (nothing changed by any but ONS_OK)
cdef enum:
    ONS_OK = 0
    ONS_NOT_FINITE = 1       # the prediction, the derivative or the weight is not finite
    ONS_TOO_LARGE = 2        # the step would store non-finite numbers (u or A^{-1})
    ONS_NEGATIVE = 3         # the loss's second derivative is negative (or NaN)
    ONS_NEED_DERIVATIVE = 4  # a loss without a compiled form: feed its derivative (feed)
    ONS_CURVED = 5           # a step that would update a scaled identity A^{-1} (weight != 0)


cdef class OnsState:
    cdef readonly object P_obj, u_obj  # the owners of the bound buffers
    cdef object P_buf, x_obj
    cdef double[::1] P, u, x  # x: the step's A^{-1} z over the grown coordinates (not deferred)
    cdef object pz_obj  # a planned step's A^{-1} z (plan)
    cdef double[::1] pz
    cdef const double[::1] new_values  # a planned step's new coordinates (plan)
    # [a, x]: the rank-one update of A^{-1} the last step left pending (a = 0: none), in the
    # bound matrix's own buffer (PackedSymmetric.pending_update); deferred: bound to one
    cdef object pending_obj
    cdef double[::1] pending
    cdef readonly bint deferred
    cdef readonly double s  # a planned step's z^T A^{-1} z
    cdef readonly Py_ssize_t m
    cdef readonly bint dense, hessian
    # A^{-1} = scale I, held as the scalar alone (okoco.linalg.ScaledIdentity): P unread
    cdef readonly bint scaled
    cdef readonly double scale
    cdef readonly double alpha, bound
    cdef readonly int loss
    cdef readonly double ybar, excess, yhat, gdot, weight, gained_dimension, gained_log_det, noise

    cdef double product(self, const double* z, double* out) noexcept nogil
    cdef void apply_pending(self) noexcept nogil
    cdef int differentiate(self, double y, double ybar, double eta) noexcept nogil
    cdef int weigh(self, double ybar, double gdot, double weight) noexcept nogil
    cdef int admits(self, const double* Pz, double s, const double* new,
                    Py_ssize_t n_new) noexcept nogil
    cdef void take(self, const double* Pz, double s, const double* new, Py_ssize_t n_new,
                     double y, double residual) noexcept nogil
    cdef int _prepare(self, const double[::1] z, new, bint optional) except -1
