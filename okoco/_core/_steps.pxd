# The step objects' common part (okoco._core._steps.StepCore), for the step objects of other
# modules (okoco._core._kons): typed views of a learner's rows and the last row analysed.

from okoco._core._kernels cimport Kernel

# statuses of a step (nothing changed by any but OK)
cdef enum:
    OK = 0
    OVERFLOW = 1      # a value of the step is not finite (float64 overflowed, or NaN)
    NEGATIVE = 2      # k(x, x) < 0: the kernel is not positive semi-definite
    NOISE = 3         # the noise scale's sum would overflow (KRLS)
    NEED_ROOM = 4     # the buffers must grow first
    JOINS = 5         # the point joins KRLS's dictionary: the learner's ALD takes it
    SKIPPED = 6       # a null step: nothing to store (KONS)
    FORGOT_ATOM = 7   # the oldest point left, an atom with it: the learner's selection follows


cdef class StepCore:
    cdef Kernel k
    cdef readonly object kernel  # the kernel object it was built for
    cdef object data_obj, sq_obj, g_obj
    cdef double[:, ::1] data
    cdef double[::1] sq, g
    cdef double* x                 # the last row analysed, zero-padded to x_width
    cdef Py_ssize_t x_len, x_width, x_cap, seen, n, d
    cdef object analysed           # the last analysis record made (analysis), and views of
    cdef const double[::1] ak, ae, ah  # its arrays k, e, h (bind_analysis)

    cdef int bind_buffers(self, object data, object sq, Py_ssize_t n, Py_ssize_t d) except -1
    cdef int column_room(self) except -1
    cdef bint known(self, const double[:] v, Py_ssize_t seen) noexcept
    cdef int keep(self, const double[:] v) except -1
    cdef int kernel_column(self) except -1
    cdef int take_column(self, const double[::1] g) except -1
    cdef double put_row(self, Py_ssize_t slot) noexcept
    cdef object analysis(self, tuple fields, const double[::1] k, const double[::1] e,
                         const double[::1] h)
    cdef int bind_analysis(self, object analysis) except -1


cdef inline object new_record(type kind, tuple fields):
    """The named record ``kind(*fields)`` (okoco._core._records) as a tuple of its type: a named
    tuple's own ``__new__`` is a Python frame."""
    return tuple.__new__(kind, fields)
