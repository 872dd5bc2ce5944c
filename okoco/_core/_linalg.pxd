# The packed layout: row r of a lower-triangular (or symmetric) matrix occupies r + 1
# consecutive doubles from r (r + 1) / 2 (row-major lower packed = BLAS column-major upper).

cdef void tp_half_solve(const double* L, int m, double* x) noexcept nogil
cdef void tp_back_solve(const double* L, int m, double* x) noexcept nogil
cdef double dot(int n, const double* x, const double* y) noexcept nogil
cdef void axpy(int n, double alpha, const double* x, double* y) noexcept nogil
cdef double tp_append(double* L, double* A, int m, const double* column, double diagonal,
                      bint solved, double min_pivot, int* clamped) noexcept nogil
cdef void sym_matvec(const double* P, int m, bint dense, const double* v, double* out) noexcept nogil
cdef void sym_rank_one(double* P, int m, bint dense, double alpha, const double* x) noexcept nogil
cdef void sym_update_matvec(double* P, int m, bint dense, double alpha, const double* x,
                           const double* v, double* out) noexcept nogil
# the window's inverse (okoco.linalg.SlotInverse): P by a triangle of a row-major array with
# rows of ld doubles, the lower one (upper=False: row r holds P[r, 0..r]) or the upper one
# (upper=True: row r holds P[r, r..], the caller passing the array's data shifted by one column)
cdef void window_symv(const double* P, Py_ssize_t ld, int n, const double* v, double* out,
                      bint upper) noexcept nogil
cdef void window_column(const double* base, Py_ssize_t ld, Py_ssize_t n, Py_ssize_t j,
                        double* p, bint upper) noexcept nogil
cdef void window_clear(double* base, Py_ssize_t ld, Py_ssize_t n, Py_ssize_t j,
                       bint upper) noexcept nogil
cdef void window_syrk(double* P, Py_ssize_t ld, int n, int k, double alpha, const double* U,
                      Py_ssize_t ldu, bint upper) noexcept nogil
