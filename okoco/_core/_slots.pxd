# okoco.linalg.SlotInverse's operations on its own buffers (okoco._core._slots), for the
# windowed KONS's compiled step (okoco._core._kons), KORS's and the shared multiclass step's.

cdef enum:
    TERMS = 16  # pending terms of each sign before they are applied to P


cdef class SlotViews:
    # typed views of one SlotInverse's buffers, taken again only when reallocated (bind)
    cdef object window                          # the inverse bound last
    cdef object P_obj, U_obj, terms_obj
    cdef double[:, ::1] P                       # P's lower triangle, M's strict upper one
    cdef double[::1] diag                       # M's diagonal
    cdef double[:, ::1] U                       # the pending terms, scaled
    cdef Py_ssize_t[::1] terms                  # pending additions, removals, slots spanned
    cdef Py_ssize_t[::1] outer                  # the compact form's map (compact only)
    cdef bint compact, pending, upper, keeps_m

    cdef int bind(self, object window) except -1
    cdef int bind_pending(self, object terms, object U) except -1


cdef int flush(object window) except -1
cdef int solve_views(SlotViews s, const double* e, double* h, Py_ssize_t n,
                     double* work) except -1
cdef int append_views(SlotViews s, Py_ssize_t slot, const double* a, Py_ssize_t m,
                      double sigma, const double* column, double diagonal,
                      Py_ssize_t n) except -1
cdef double remove_views(SlotViews s, Py_ssize_t slot, Py_ssize_t n,
                         double* work) except? -1.0
cdef int solve_into(object window, const double* e, double* h, Py_ssize_t n,
                    double* work) except -1
cdef int append_to(object window, Py_ssize_t slot, const double* a, Py_ssize_t m, double sigma,
                   const double* column, double diagonal, Py_ssize_t n) except -1
cdef double remove_from(object window, Py_ssize_t slot, Py_ssize_t n,
                        double* work) except? -1.0
