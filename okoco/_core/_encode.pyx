"""A river row (a ``dict``) to a dense vector, and a batch's checks, for the common case only.

``okoco._input.FeatureMap`` validates and encodes every row; the row of a steady stream (every
feature already has a column, every value a plain ``float`` or ``int`` of magnitude at most
``MAX_ABS_VALUE``) is encoded here in one pass over the dict. Anything else (a new feature, a
value of another type, a value out of range) makes :func:`known_row` return ``None``, and the
Python path decides and words the error.

A batch's cells (:func:`first_bad_cell`) and its rows' ``k(x, x)`` (:func:`first_outside`) are
checked here in one pass each, and the plain batch (a float64 array over the registered
columns, named by position: :func:`positional_rows`; a DataFrame's cells under its column
names: :func:`named_rows`) is copied and checked in one call (``None`` for anything else): for
the few rows of a small batch, numpy's reductions and Python's steps cost more than the pass
itself. They return where the first bad value is, or nothing; the Python caller words the
error.
"""

import numpy as np

from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool

_zeros = np.zeros
_empty = np.empty
_float64 = np.dtype(np.float64)


cdef extern from "Python.h":
    bint PyFloat_CheckExact(PyObject* o)
    bint PyLong_CheckExact(PyObject* o)
    Py_ssize_t PyLong_AsSsize_t(PyObject* o) except? -1
    double PyFloat_AS_DOUBLE(PyObject* o)
    double PyLong_AsDouble(PyObject* o)
    PyObject* PyErr_Occurred()
    void PyErr_Clear()


def known_row(x, dict columns, Py_ssize_t width, double limit):
    """The vector of the mapping ``x`` over the ``width`` known columns (its missing features
    0), or ``None`` if a key has no column or a value is not a ``float`` / ``int`` (``bool``
    is not) of magnitude at most ``limit`` (NaN and infinities are not).

    A plain ``dict`` is read in place; any other mapping (an ``OrderedDict``, a
    ``defaultdict``, a ``Mapping`` that is no dict) is read through ``dict(x)``, which takes
    its own ``items`` (a subclass may override them)."""
    cdef Py_ssize_t pos = 0, col
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* found
    cdef double number
    if type(x) is not dict:
        x = dict(x)
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


cdef Py_ssize_t copy_cells(const double[:, :] src, double[:, :] dst, double limit,
                           bint absent) noexcept:
    """Copy ``src`` into ``dst`` (the same array: in place) up to its first cell, row by row,
    that is NaN, infinite or of magnitude above ``limit``, and return that cell as
    ``i * columns + j``, or ``-1`` if there is none. With ``absent``, NaN is an absent cell
    instead: it is not bad, and it is 0 in ``dst``."""
    cdef Py_ssize_t i, j, n = src.shape[0], d = src.shape[1]
    cdef double v
    for i in range(n):
        for j in range(d):
            v = src[i, j]
            if -limit <= v <= limit:  # NaN fails both
                dst[i, j] = v
            elif absent and v != v:
                dst[i, j] = 0.0
            else:
                return i * d + j
    return -1


def first_bad_cell(double[:, :] values, double limit, bint absent):
    """The first cell of ``values``, row by row, that is NaN, infinite or of magnitude above
    ``limit``, as ``i * columns + j``; ``-1`` if there is none. With ``absent``, NaN is an
    absent cell instead: it is not bad, and it is set to 0 in place (on the way: the cells
    after a bad one are left as they were)."""
    return copy_cells(values, values, limit, absent)


def first_outside(const double[:] values, double low, double high):
    """The index of the first value that is not in ``[low, high)`` (NaN is not), or ``-1``."""
    cdef Py_ssize_t i
    cdef double v
    for i in range(values.shape[0]):
        v = values[i]
        if not low <= v < high:
            return i
    return -1


def has_nan_name(list names):
    """Whether a name is not equal to itself (NaN): ``name != name`` as Python compares, with
    no shortcut for an object compared with itself."""
    for name in names:
        if name != name:
            return True
    return False


def all_floats(list values):
    """Whether every item of ``values`` is a ``float`` (exactly: not a subclass)."""
    for value in values:
        if type(value) is not float:
            return False
    return True


cdef checked_copy(X, double limit, bint absent):
    """A C-ordered float64 copy of the 2-D float64 array ``X``, or ``None`` if a cell is NaN,
    infinite or of magnitude above ``limit``; with ``absent``, NaN is an absent cell, 0 in the
    copy."""
    if X.dtype is not _float64 or X.ndim != 2:
        return None
    out = _empty(X.shape)
    return None if copy_cells(X, out, limit, absent) >= 0 else out


def positional_rows(X, dict columns, double limit):
    """A C-ordered copy of the 2-D float64 array ``X`` when its columns are the registered
    ones in order (``columns`` maps exactly the ``int`` positions ``0, 1, ...`` to themselves,
    as rows named by position register them) and every cell is a number of magnitude at most
    ``limit``; else ``None`` (the Python path decides and words the error)."""
    if X.ndim != 2 or len(columns) != X.shape[1]:
        return None
    cdef Py_ssize_t pos = 0, k = 0
    cdef PyObject* key
    cdef PyObject* value
    while PyDict_Next(columns, &pos, &key, &value):
        if not PyLong_CheckExact(key) or not (<object>key) == k:  # no overflow for a huge int
            return None
        k += 1
    return checked_copy(X, limit, False)


def named_rows(X, list names, dict columns, double limit, bint absent=True):
    """A C-ordered copy of the 2-D float64 array ``X`` (a DataFrame's cells) when its column
    ``names`` are the registered ``columns`` in order (``names == list(columns)``, as Python
    compares lists) and every cell is a number of magnitude at most ``limit`` (or, with
    ``absent``, NaN: an absent cell, 0 in the copy); else ``None`` (the Python path decides
    and words the error). ``okoco._input`` passes ``absent=False``: NaN is refused there."""
    if X.ndim != 2 or len(names) != X.shape[1] or len(columns) != len(names):
        return None
    cdef Py_ssize_t pos = 0, k = 0
    cdef PyObject* key
    cdef PyObject* value
    while PyDict_Next(columns, &pos, &key, &value):
        if not PyObject_RichCompareBool(names[k], <object>key, Py_EQ):
            return None
        k += 1
    return checked_copy(X, limit, absent)
