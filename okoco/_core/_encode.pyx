"""A river row (a ``dict``) to a dense vector, for the common row only.

``okoco._input.FeatureMap`` validates and encodes every row; the row of a steady stream (every
feature already has a column, every value a plain ``float`` or ``int`` of magnitude at most
``MAX_ABS_VALUE``) is encoded here in one pass over the dict. Anything else (a new feature, a
value of another type, a value out of range) makes :func:`known_row` return ``None``, and the
Python path decides and words the error.
"""

import numpy as np

from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.object cimport PyObject

_zeros = np.zeros


cdef extern from "Python.h":
    bint PyFloat_CheckExact(PyObject* o)
    bint PyLong_CheckExact(PyObject* o)
    Py_ssize_t PyLong_AsSsize_t(PyObject* o) except? -1
    double PyFloat_AS_DOUBLE(PyObject* o)
    double PyLong_AsDouble(PyObject* o)
    PyObject* PyErr_Occurred()
    void PyErr_Clear()


def known_row(dict x, dict columns, Py_ssize_t width, double limit):
    """The vector of ``x`` over the ``width`` known columns (its missing features 0), or
    ``None`` if a key has no column or a value is not a ``float`` / ``int`` (``bool`` is
    not) of magnitude at most ``limit`` (NaN and infinities are not)."""
    cdef Py_ssize_t pos = 0, col
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* found
    cdef double number
    out = _zeros(width)
    cdef double[::1] vec = out
    while PyDict_Next(x, &pos, &key, &value):
        found = PyDict_GetItem(columns, <object>key)
        if found == NULL or not PyLong_CheckExact(found):
            return None
        col = PyLong_AsSsize_t(found)
        if not 0 <= col < width:
            return None
        if PyFloat_CheckExact(value):
            number = PyFloat_AS_DOUBLE(value)
        elif PyLong_CheckExact(value):
            number = PyLong_AsDouble(value)
            if number == -1.0 and PyErr_Occurred() != NULL:  # beyond float64: Python words it
                PyErr_Clear()
                return None
        else:
            return None
        if not -limit <= number <= limit:  # NaN fails both
            return None
        vec[col] = number
    return out
