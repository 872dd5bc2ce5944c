cdef struct Kernel:
    int kind              # the kernel's member of KernelCode (_kernels.pyx)
    bint bounded          # k(x, x) = 1 and every value in [0, 1] (the class's ``bounded``)
    double gamma, coef0, degree
    double near_factor    # squared distances at or below (2 d + 4) near_factor (...) are exact
    Py_ssize_t direct_size


cdef void rows_dot(const double* X, Py_ssize_t ld, Py_ssize_t n, int d, const double* x,
                   double* out) noexcept nogil
cdef void sq_dists(const double* X, Py_ssize_t ld, Py_ssize_t n, int d, const double* sq,
                   const double* x, int w, double tau, Py_ssize_t direct_size, double* out) noexcept nogil
cdef Kernel make_kernel(tuple spec) except *
cdef bint kernel_row(const Kernel* k, const double* X, Py_ssize_t ld, Py_ssize_t n, int d,
                     const double* sq, const double* x, int w, double* out) noexcept nogil
cdef int kernel_exp(object buffer, double* v, Py_ssize_t n) except -1
cdef int numpy_exp(object buffer, double* v, Py_ssize_t n) except -1
cdef double self_similarity(const Kernel* k, const double* x, int w) noexcept nogil
