"""The compiled losses (``_losses.pxd``, their one definition) for Python callers: the classes
of ``okoco.losses`` evaluate their value and derivatives here, on scalars or broadcast arrays.
"""

import numpy as np

# the losses' definitions and their codes: the enum LossCode of _losses.pxd, a Python enum here
# (okoco.losses's classes name their members), so that a new loss touches only _losses.pxd
include "_losses.pxd"

# what to evaluate
cdef enum:
    _VALUE = 0
    _DERIVATIVE = 1
    _SECOND_DERIVATIVE = 2
VALUE, DERIVATIVE, SECOND_DERIVATIVE = _VALUE, _DERIVATIVE, _SECOND_DERIVATIVE


cdef inline double _at(int loss, int order, double y, double z) noexcept nogil:
    if order == _VALUE:
        return value(loss, y, z)
    if order == _DERIVATIVE:
        return derivative(loss, y, z)
    return second_derivative(loss, y, z)


def evaluate(int loss, int order, y, z):
    """``order`` (``VALUE``, ``DERIVATIVE`` or ``SECOND_DERIVATIVE``) of the loss coded ``loss``
    at targets ``y`` and predictions ``z``: a float for two real scalars, else an array of
    their broadcast shape (a numpy scalar for 0-d inputs)."""
    cdef bint y_scalar = isinstance(y, (float, int)), z_scalar = isinstance(z, (float, int))
    if y_scalar and z_scalar:
        return _at(loss, order, y, z)
    if y_scalar or z_scalar:  # a scalar against an array: no broadcast copy
        array = np.ascontiguousarray(y if z_scalar else z, dtype=float)
        out = np.empty(array.shape)
        _against_scalar(loss, order, float(z if z_scalar else y), array.reshape(-1),
                        out.reshape(-1), z_scalar)
        return out[()]
    Y, Z = np.asarray(y, dtype=float), np.asarray(z, dtype=float)
    if Y.shape != Z.shape:
        Y, Z = np.broadcast_arrays(Y, Z)
    out = np.empty(Y.shape)
    _pairwise(loss, order, np.ascontiguousarray(Y).reshape(-1),
              np.ascontiguousarray(Z).reshape(-1), out.reshape(-1))
    return out[()]


def values(int loss, y, zs):
    """The loss coded ``loss`` at the target ``y`` (a real, a 0-d array, or a float64 vector
    as long as ``zs``) for each prediction of the sequence ``zs`` (reals): a new array,
    ``evaluate(loss, VALUE, y, np.array(zs))`` term for term (the same ``_at``), without its
    conversions (a mixture's step: a handful of predictions)."""
    cdef Py_ssize_t i, n = len(zs)
    cdef double target
    cdef const double[::1] targets
    out = np.empty(n)
    cdef double[::1] result = out
    if isinstance(y, np.ndarray) and y.ndim:
        targets = y
        if targets.shape[0] != n:
            raise ValueError(f"values: {targets.shape[0]} targets for {n} predictions")
        for i in range(n):
            result[i] = _at(loss, _VALUE, targets[i], zs[i])
    else:
        target = y
        for i in range(n):
            result[i] = _at(loss, _VALUE, target, zs[i])
    return out


cdef void _against_scalar(int loss, int order, double scalar, const double[::1] values,
                          double[::1] out, bint values_are_targets) noexcept:
    cdef Py_ssize_t i
    with nogil:
        if values_are_targets:
            for i in range(out.shape[0]):
                out[i] = _at(loss, order, values[i], scalar)
        else:
            for i in range(out.shape[0]):
                out[i] = _at(loss, order, scalar, values[i])


cdef void _pairwise(int loss, int order, const double[::1] ys, const double[::1] zs,
                    double[::1] out) noexcept:
    cdef Py_ssize_t i
    with nogil:
        for i in range(out.shape[0]):
            out[i] = _at(loss, order, ys[i], zs[i])


def _clip_excess(double z, double C):
    """The paper's :math:`h(z)`: how far ``z`` lies outside ``[-C, C]`` (signed), else 0."""
    return clip_excess(z, C)


# published under the compiled function's name, which a def here would shadow for the
# included _losses.pxd (its clip calls clip_excess)
globals()["clip_excess"] = _clip_excess
