r"""The per-step work of ``Auto``'s ONS heads (``okoco.learners.ons``) around their compiled
step (``okoco._core._ons.OnsState``): a head's unclipped prediction :math:`z^\top u`
(:func:`predict`) and the linear head's coordinates :math:`[1, x]` (:func:`linear_coordinates`),
each one call without numpy's temporaries.
"""

import numpy as np

from okoco._core._linalg cimport dot


def predict(const double[::1] z, const double[::1] u):
    r""":math:`z^\top u` over the ``len(z)`` coordinates of ``z`` (``u`` holds at least as
    many: a head's doubling buffer), as a Python float."""
    cdef Py_ssize_t m = z.shape[0]
    if u.shape[0] < m:
        raise ValueError(f"predict: {m} coordinates for a point of {u.shape[0]}")
    if m == 0:
        return 0.0
    return dot(<int>m, &z[0], &u[0])


def linear_coordinates(const double[:] v, Py_ssize_t m):
    r"""``(known, new)``: the coordinates :math:`z = [1, x]` of the row ``v`` split at the
    head's ``m`` coordinates: ``known`` its first ``m`` (zeros for the features the row lacks),
    ``new`` the others (the features first seen now), or ``None`` if there are none; new
    arrays."""
    cdef Py_ssize_t n = v.shape[0] + 1, i
    if m < 0:
        raise ValueError(f"linear_coordinates: {m} coordinates")
    known_obj = np.zeros(m)
    cdef double[::1] known = known_obj
    cdef double[::1] new
    for i in range(n if n < m else m):
        known[i] = 1.0 if i == 0 else v[i - 1]
    if n <= m:
        return known_obj, None
    new_obj = np.empty(n - m)
    new = new_obj
    for i in range(m, n):
        new[i - m] = 1.0 if i == 0 else v[i - 1]
    return known_obj, new_obj
