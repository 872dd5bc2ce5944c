# okoco.linalg.SlotInverse's operations on its own buffers (okoco._core._slots), for the
# windowed KONS's compiled step (okoco._core._kons).

cdef int flush(object window) except -1
cdef int solve_into(object window, const double* e, double* h, Py_ssize_t n,
                    double* work) except -1
cdef int append_to(object window, Py_ssize_t slot, const double* a, Py_ssize_t m, double sigma,
                   const double* column, double diagonal, Py_ssize_t n) except -1
cdef double remove_from(object window, Py_ssize_t slot, Py_ssize_t n,
                        double* work) except? -1.0
