# The losses with a compiled form, coded by okoco.learners (_codes._LOSS_CODES), and the
# clipped projection of the papers, as inline functions: every compiled step cimports them
# from here (the Python forms: okoco.losses).

from libc.math cimport exp


cdef enum:
    SQUARED = 0
    LOGISTIC = 1
    SQUARED_HINGE = 2


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
        yz = -700.0 if yz < -700.0 else (700.0 if yz > 700.0 else yz)
        p = 1.0 / (1.0 + exp(-yz))
        return p * (1.0 - p)
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
