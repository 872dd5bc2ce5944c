cdef void rows_dot(const double* X, Py_ssize_t ld, Py_ssize_t n, int d, const double* x,
                   double* out) noexcept nogil
cdef void sq_dists(const double* X, Py_ssize_t ld, Py_ssize_t n, int d, const double* sq,
                   const double* x, int w, double tau, Py_ssize_t direct_size, double* out) noexcept nogil
