# The losses, and the clipped projection of the papers, as inline functions: their one
# definition. Every compiled step cimports them from here; okoco.losses's classes call them
# through okoco._core._loss, which includes this file and so exposes the enum below to Python
# as okoco._core._loss.LossCode (each class names its member, its class keyword ``code``).

from libc.math cimport exp, log1p


cpdef enum LossCode:
    SQUARED = 0
    LOGISTIC = 1
    SQUARED_HINGE = 2


cdef inline double value(int loss, double y, double z) noexcept nogil:
    """The loss of the prediction z for the target y (okoco.losses)."""
    cdef double r, yz
    if loss == SQUARED:
        r = y - z
        return r * r
    yz = y * z
    if loss == LOGISTIC:
        # log(1 + e^{-yz}), as numpy's logaddexp(0, -yz) computes it
        if yz == 0.0:
            return log1p(1.0)
        if yz > 0.0:
            return log1p(exp(-yz))
        if yz < 0.0:
            return -yz + log1p(exp(yz))
        return yz  # NaN
    r = 1.0 - yz
    return r * r if r > 0.0 else 0.0


cdef inline double derivative(int loss, double y, double z) noexcept nogil:
    """The loss's derivative in the prediction z (okoco.losses)."""
    cdef double yz
    if loss == SQUARED:
        return 2.0 * (z - y)
    yz = y * z
    if loss == LOGISTIC:
        yz = -700.0 if yz < -700.0 else (700.0 if yz > 700.0 else yz)
        return -y / (1.0 + exp(yz))
    return -2.0 * y * (1.0 - yz if 1.0 - yz > 0.0 else 0.0)


cdef inline double second_derivative(int loss, double y, double z) noexcept nogil:
    """The loss's second derivative in the prediction z (okoco.losses)."""
    cdef double yz, p
    if loss == SQUARED:
        return 2.0
    yz = y * z
    if loss == LOGISTIC:
        # p (1 - p) with p = sigmoid(yz), as e / (1 + e)^2 with e = exp(-|yz|): no
        # cancellation in 1 - p at large |yz|
        p = exp(-(yz if yz > 0.0 else -yz))
        return p / ((1.0 + p) * (1.0 + p))
    return 2.0 if yz < 1.0 else 0.0


cdef inline double clip_excess(double z, double C) noexcept nogil:
    """The paper's h(z): how far z lies outside [-C, C] (signed), else 0."""
    if z > C:
        return z - C
    if z < -C:
        return z + C
    return 0.0


cdef inline double clip(double z, double C) noexcept nogil:
    """z projected onto [-C, C]."""
    return z - clip_excess(z, C)
