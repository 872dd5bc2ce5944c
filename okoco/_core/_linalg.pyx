"""Packed Cholesky factors and packed symmetric matrices, in place (see ``_linalg.pxd``).

Every function works on the buffers of :class:`okoco.linalg.IncrementalCholesky` and
:class:`okoco.linalg.PackedSymmetric`, which check the arguments first: sizes and capacities
are the caller's promise. A failure is a status code, never an exception raised half-way.
"""

from libc.math cimport isfinite, log, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memmove, memset
from scipy.linalg.cython_blas cimport daxpy, ddot, dsymv, dsyrk

from okoco._core._packed cimport (avx_available, avx_in_use, row_axpy, row_fused, row_pass,
                                rows4_axpy, use_avx)

cdef inline Py_ssize_t start(Py_ssize_t r) noexcept nogil:
    return r * (r + 1) // 2


# ---------------------------------------------------------------- level-1 and triangular solves
# OpenBLAS computes ddot and daxpy on one thread up to 10,000 elements (kernel/x86_64/ddot.c,
# interface/axpy.c): longer vectors go in blocks below that, so no call wakes its thread pool.
cdef int BLOCK = 8192


cdef double dot(int n, const double* x, const double* y) noexcept nogil:
    cdef int one = 1, i = 0, part
    cdef double total = 0.0
    while i < n:
        part = BLOCK if n - i > BLOCK else n - i
        total += ddot(&part, <double*>&x[i], &one, <double*>&y[i], &one)
        i += part
    return total


cdef void axpy(int n, double alpha, const double* x, double* y) noexcept nogil:
    cdef int one = 1, i = 0, part
    while i < n:
        part = BLOCK if n - i > BLOCK else n - i
        daxpy(&part, &alpha, <double*>&x[i], &one, &y[i], &one)
        i += part


def kernels(str isa=None):
    """The instruction set of the packed kernels (``"avx"`` or ``"portable"``, see
    ``_packed.pxd``); ``isa`` sets it (``"avx"`` only where the processor has it), for tests
    comparing the two."""
    if isa is not None:
        if isa not in ("avx", "portable"):
            raise ValueError(f"isa must be 'avx' or 'portable', got {isa!r}")
        if isa == "avx" and not avx_available():
            raise ValueError("isa 'avx': this processor (or build) has no AVX")
        use_avx(isa == "avx")
    return "avx" if avx_in_use() else "portable"


cdef inline const double* row_of(const double* P, Py_ssize_t r) noexcept nogil:
    return P + start(r)


cdef void tp_half_solve(const double* L, int m, double* x) noexcept nogil:
    """x <- L^{-1} x (forward substitution): x_r <- (x_r - L[r, :r] x[:r]) / L_rr."""
    cdef Py_ssize_t r
    cdef const double* row
    for r in range(m):
        row = row_of(L, r)
        x[r] = (x[r] - row_pass(row, r, x, 0.0, NULL)) / row[r]


cdef void tp_back_solve(const double* L, int m, double* x) noexcept nogil:
    """x <- L^{-T} x (back substitution by rows of L): from the last row up, x_r <- x_r / L_rr,
    then x[:r] -= x_r L[r, :r]; the last m % 4 rows one by one, then four rows at a time."""
    cdef Py_ssize_t r = m, i, j
    cdef double c[4]
    cdef const double* rows[4]
    while r % 4:
        r -= 1
        x[r] /= row_of(L, r)[r]
        row_axpy(row_of(L, r), r, -x[r], x)
    while r > 0:
        r -= 4
        for i in range(3, -1, -1):  # the block's own triangle, from its last row
            rows[i] = row_of(L, r + i)
            x[r + i] /= rows[i][r + i]
            for j in range(i):
                x[r + j] -= x[r + i] * rows[i][r + j]
            c[i] = -x[r + i]
        rows4_axpy(rows, r, c, x)


def half_solve(const double[::1] L, int m, double[::1] x):
    """``x <- L^{-1} x`` in place, ``L`` the leading ``m`` rows of a packed factor."""
    with nogil:
        tp_half_solve(&L[0], m, &x[0])


def back_solve(const double[::1] L, int m, double[::1] x):
    """``x <- L^{-T} x`` in place."""
    with nogil:
        tp_back_solve(&L[0], m, &x[0])


def all_finite(const double[::1] x):
    """Whether every entry of ``x`` is finite."""
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        if not isfinite(x[i]):
            return False
    return True


def sum_log_diagonal(const double[::1] L, Py_ssize_t m):
    """``sum_j log L_jj`` over the first ``m`` rows."""
    cdef double total = 0.0
    cdef Py_ssize_t j
    with nogil:
        for j in range(m):
            total += log(L[start(j) + j])
    return total


# ---------------------------------------------------------------- bordering
cdef double tp_append(double* L, double* A, int m, const double* column, double diagonal,
                      bint solved, double min_pivot, int* clamped) noexcept nogil:
    """Border the factor: row m of L is [L^{-1} c, sqrt(d - |L^{-1} c|^2)] (the Schur
    complement clamped to min_pivot), row m of A is [c, d]. ``column`` is c, or already
    ``L^{-1} c`` when ``solved`` (then ``A``'s row is not written: the caller writes c).
    Returns the Schur complement used."""
    cdef Py_ssize_t off = start(m)
    cdef double hh, schur
    if not solved:
        memcpy(&A[off], column, m * sizeof(double))
    memcpy(&L[off], column, m * sizeof(double))
    if not solved:
        tp_half_solve(L, m, &L[off])
    hh = dot(m, &L[off], &L[off])
    schur = diagonal - hh
    clamped[0] = 0
    if not schur >= min_pivot:
        schur = min_pivot
        diagonal = hh + min_pivot
        clamped[0] = 1
    L[off + m] = sqrt(schur)
    A[off + m] = diagonal
    return schur


def append(double[::1] L, double[::1] A, int m, const double[::1] column, double diagonal,
           const double[::1] half, double min_pivot):
    """Border the packed factor ``L`` (and the stored matrix ``A``) with a new atom.

    ``half`` is ``L^{-1} column`` if the caller has it, else ``None`` (solved here, in the new
    row itself). Returns ``(schur, clamped)``: the Schur complement used and whether it was
    clamped to ``min_pivot`` (``A``'s diagonal then holds ``|h|^2 + min_pivot``).
    """
    cdef int clamped = 0
    cdef double schur
    cdef Py_ssize_t off = start(m)
    if half is None:
        with nogil:
            schur = tp_append(&L[0], &A[0], m, &column[0] if m else NULL, diagonal, False,
                              min_pivot, &clamped)
    else:
        if m:
            memcpy(&A[off], &column[0], m * sizeof(double))
        with nogil:
            schur = tp_append(&L[0], &A[0], m, &half[0] if m else NULL, diagonal, True,
                              min_pivot, &clamped)
    return schur, bool(clamped)


# ---------------------------------------------------------------- rank-one modifications
cdef int tail_rank_one(double* L, Py_ssize_t i0, Py_ssize_t k, double* x, double sign,
                       double* work) noexcept nogil:
    """Factor of T T^T + sign x x^T in place, T the trailing block of rows and columns
    i0 .. i0 + k - 1 of a packed lower factor; x (length k) is overwritten, ``work`` is a
    workspace of length 3 k (each rotation's c, 1/c and s). Row by row (contiguous in the
    packed layout), the rotations of the columns before are applied as each row is reached:
    the column-oriented update of LINPACK's dchud / dchdd reordered. Returns -1 - a if the
    downdate fails at row a, else 0 (the trailing rows up to a + 3 may then be modified: the
    caller restores the block).

    Within a row the rotations form one dependency chain through x[a]; four rows at a time
    make four independent chains (and 1/c a multiply instead of a division on the chain), so
    the loop runs at the multiplier's throughput, not its latency."""
    cdef double* c = work
    cdef double* ic = work + k
    cdef double* s = work + 2 * k
    cdef Py_ssize_t a = 0, b, j
    cdef double* r0
    cdef double* r1
    cdef double* r2
    cdef double* r3
    cdef double x0, x1, x2, x3, t, cb, icb, sb, ssb
    while a + 4 <= k:
        r0 = &L[start(i0 + a) + i0]
        r1 = &L[start(i0 + a + 1) + i0]
        r2 = &L[start(i0 + a + 2) + i0]
        r3 = &L[start(i0 + a + 3) + i0]
        x0, x1, x2, x3 = x[a], x[a + 1], x[a + 2], x[a + 3]
        for b in range(a):  # the rotations every row of the block receives
            cb, icb, sb = c[b], ic[b], s[b]
            ssb = sign * sb
            t = (r0[b] + ssb * x0) * icb
            x0 = cb * x0 - sb * t
            r0[b] = t
            t = (r1[b] + ssb * x1) * icb
            x1 = cb * x1 - sb * t
            r1[b] = t
            t = (r2[b] + ssb * x2) * icb
            x2 = cb * x2 - sb * t
            r2[b] = t
            t = (r3[b] + ssb * x3) * icb
            x3 = cb * x3 - sb * t
            r3[b] = t
        x[a], x[a + 1], x[a + 2], x[a + 3] = x0, x1, x2, x3
        for j in range(4):  # the small triangle within the block, then each pivot
            if rotate_row(&L[start(i0 + a + j) + i0], a, a + j, x[a + j], sign, c, ic, s):
                return -1 - <int>(a + j)
        a += 4
    while a < k:
        if rotate_row(&L[start(i0 + a) + i0], 0, a, x[a], sign, c, ic, s):
            return -1 - <int>a
        a += 1
    return 0


cdef inline int rotate_row(double* row, Py_ssize_t b0, Py_ssize_t a, double xa, double sign,
                           double* c, double* ic, double* s) noexcept nogil:
    """Apply rotations b0 .. a - 1 to ``row`` (with ``xa`` its entry of x), then make the
    rotation of its pivot a: stores c[a], ic[a], s[a]. Returns 1 if the downdate fails."""
    cdef Py_ssize_t b
    cdef double t, d, r2, r
    for b in range(b0, a):
        t = (row[b] + sign * s[b] * xa) * ic[b]
        xa = c[b] * xa - s[b] * t
        row[b] = t
    d = row[a]
    r2 = d * d + sign * xa * xa
    if not r2 > 0.0:
        return 1
    r = sqrt(r2)
    c[a] = r / d
    ic[a] = d / r
    s[a] = xa / d
    row[a] = r
    return 0


def rank_one(double[::1] L, Py_ssize_t i0, Py_ssize_t k, double[::1] x, double sign):
    """Factor of ``T T^T + sign x x^T`` in place, ``T`` the trailing ``k x k`` block from row
    and column ``i0``; ``x`` is overwritten. Returns 0, or ``-1 - a`` if a downdate made the
    matrix indefinite at row ``a`` (trailing rows up to ``a + 3`` are then modified: the
    caller keeps a copy when it downdates)."""
    cdef int status = 0
    cdef double* work
    if k <= 0:
        return 0
    work = <double*>malloc(3 * k * sizeof(double))
    if work == NULL:
        raise MemoryError()
    with nogil:
        status = tail_rank_one(&L[0], i0, k, &x[0], sign, work)
    free(work)
    return status


cdef void drop_row(double* P, Py_ssize_t m, Py_ssize_t i) noexcept nogil:
    """Delete row and column i of a packed (m x m) lower triangle in place; rows below i move
    up one row, and the m slots freed at the end are zeroed."""
    cdef Py_ssize_t r, dst = start(i), src
    for r in range(i + 1, m):
        src = start(r)
        memmove(&P[dst], &P[src], i * sizeof(double))
        dst += i
        memmove(&P[dst], &P[src + i + 1], (r - i) * sizeof(double))
        dst += r - i
    memset(&P[start(m - 1)], 0, m * sizeof(double))


def remove(double[::1] L, double[::1] A, Py_ssize_t m, Py_ssize_t i):
    """Delete atom ``i`` of a factor of order ``m``, in place, ``O(m^2)``: rows above ``i``
    stay, the rows below move up, and the trailing factor ``L_33`` becomes the factor of
    ``L_33 L_33^T + l l^T``, ``l = L[i+1:, i]`` (an update: it cannot fail)."""
    cdef Py_ssize_t k = m - i - 1, a
    cdef double* work
    if k > 0:
        work = <double*>malloc(4 * k * sizeof(double))
        if work == NULL:
            raise MemoryError()
    with nogil:
        for a in range(k):
            work[a] = L[start(i + 1 + a) + i]
        drop_row(&L[0], m, i)
        drop_row(&A[0], m, i)
        if k > 0:
            tail_rank_one(&L[0], i, k, work, 1.0, work + k)
    if k > 0:
        free(work)


def rescale(double[::1] L, double[::1] A, Py_ssize_t m, Py_ssize_t i, double factor,
            double ridge):
    """Re-weight atom ``i``: ``A - ridge I <- D (A - ridge I) D``, ``D = I + (f - 1) e_i e_i^T``,
    in place, ``O(m^2)``. Returns 0, 1 if the new pivot is not positive (nothing changed), or
    2 if the downdate of the trailing block fails (``L`` below row ``i`` is then modified: the
    caller restores it)."""
    cdef Py_ssize_t k = m - i - 1, a, off = start(i)
    cdef double lii = L[off + i], ff = factor * factor, new_sq, new_lii, coef, scale
    cdef double* work
    cdef int status = 0
    new_sq = ff * lii * lii + ridge * (1.0 - ff)
    if not new_sq > 0.0:
        return 1
    new_lii = sqrt(new_sq)
    coef = ridge * (1.0 - ff) / new_sq
    work = <double*>malloc((4 * k + 1) * sizeof(double))
    if work == NULL:
        raise MemoryError()
    with nogil:
        for a in range(i):
            A[off + a] *= factor
            L[off + a] *= factor
        A[off + i] = ff * (A[off + i] - ridge) + ridge
        L[off + i] = new_lii
        scale = factor * lii / new_lii
        for a in range(k):
            A[start(i + 1 + a) + i] *= factor
            work[a] = L[start(i + 1 + a) + i]
            L[start(i + 1 + a) + i] = work[a] * scale
        if k > 0 and coef != 0.0:
            scale = sqrt(coef if coef > 0 else -coef)
            for a in range(k):
                work[a] *= scale
            if tail_rank_one(&L[0], i + 1, k, work, 1.0 if coef > 0 else -1.0,
                             work + k) != 0:
                status = 2
    free(work)
    return status


# ---------------------------------------------------------------- symmetric matrices
cdef void sym_matvec(const double* P, int m, bint dense, const double* v,
                     double* out) noexcept nogil:
    """out = P v for a symmetric P, row by row with the compiled kernels (no BLAS call: no
    thread pool to wake, and the bits of ``sym_update_matvec``'s product): dense, out_r =
    P[r, :] v; packed lower, one pass each: out_r += P[r, :r] v[:r] + P_rr v_r and
    out[:r] += v_r P[r, :r] (BLAS's dspmv would wake its thread pool from 100 rows)."""
    cdef Py_ssize_t r
    cdef const double* row
    if m <= 0:
        return
    if dense:
        for r in range(m):
            out[r] = row_pass(P + r * m, m, v, 0.0, NULL)
        return
    memset(out, 0, m * sizeof(double))
    for r in range(m):
        row = row_of(P, r)
        out[r] += row_pass(row, r, v, v[r], out) + row[r] * v[r]


cdef void sym_rank_one(double* P, int m, bint dense, double alpha,
                       const double* x) noexcept nogil:
    """P <- P + alpha x x^T, row r += (alpha x_r) x (dense: the whole row, both triangles;
    packed: x[:r+1]): the update of ``sym_update_matvec`` to the bit, so that an update applied
    alone or fused with a product leaves the same matrix."""
    cdef Py_ssize_t r
    if m <= 0:
        return
    for r in range(m):
        if dense:
            row_axpy(x, m, alpha * x[r], &P[r * m])
        else:
            row_axpy(x, r + 1, alpha * x[r], &P[start(r)])


cdef void sym_update_matvec(double* P, int m, bint dense, double alpha, const double* x,
                           const double* v, double* out) noexcept nogil:
    """P <- P + alpha x x^T, then out = P v, in one pass over P (each row updated, then read
    while it is in cache): ``sym_rank_one`` then ``sym_matvec`` for half the memory traffic.
    Row r's update and its part of the product fused: the same bits as the two calls, in both
    layouts (dense: row r updated whole, both triangles, then out_r = P[r, :] v)."""
    cdef Py_ssize_t r
    cdef double* row
    cdef double part
    if m <= 0:
        return
    if dense:
        for r in range(m):
            out[r] = row_fused(P + r * m, m, x, alpha * x[r], v, 0.0, NULL)
        return
    memset(out, 0, m * sizeof(double))
    for r in range(m):
        row = P + start(r)
        part = row_fused(row, r, x, alpha * x[r], v, v[r], out)
        row[r] += alpha * x[r] * x[r]
        out[r] += part + row[r] * v[r]


def matvec(const double[::1] P, int m, bint dense, const double[::1] v, double[::1] out):
    """``out <- P v`` (``P`` a flattened dense ``(m, m)`` array or a packed buffer)."""
    if m > 0:
        with nogil:
            sym_matvec(&P[0], m, dense, &v[0], &out[0])


def sym_update(double[::1] P, int m, bint dense, double alpha, const double[::1] x):
    """``P <- P + alpha x x^T`` in place."""
    if m > 0:
        with nogil:
            sym_rank_one(&P[0], m, dense, alpha, &x[0])


def update_matvec(double[::1] P, int m, bint dense, double alpha, const double[::1] x,
                  const double[::1] v, double[::1] out):
    """``P <- P + alpha x x^T``, then ``out <- P v``, in one pass over ``P``."""
    if m > 0:
        with nogil:
            sym_update_matvec(&P[0], m, dense, alpha, &x[0], &v[0], &out[0])


def inverse_update(double[::1] P, int m, bint dense, const double[::1] a, double[::1] Pa):
    """Sherman-Morrison, ``P <- (P^{-1} + a a^T)^{-1} = P - s (P a)(P a)^T``: writes ``P a``
    (with the old ``P``) into ``Pa`` and returns ``s = 1 / (1 + a^T P a)``."""
    cdef double s = 1.0
    if m > 0:
        with nogil:
            sym_matvec(&P[0], m, dense, &a[0], &Pa[0])
            s = 1.0 / (1.0 + dot(m, &a[0], &Pa[0]))
            sym_rank_one(&P[0], m, dense, -s, &Pa[0])
    return s


# ---------------------------------------------------------------- the window's inverse
# okoco.linalg.SlotInverse keeps a symmetric P in the lower triangle of a row-major (n x ld)
# array (row r holds P[r, 0..r]), which is BLAS's column-major upper triangle: products and
# updates are dsymv / dsyrk on half the matrix. The other triangle holds the matrix M
# (for the periodic recomputation) or, with upper=True, a second inverse: row r holds its
# P[r, r..] from column r + 1 on (the caller passes the data shifted by one column; BLAS's
# column-major lower triangle), so two inverses over the same slots share one (n, n + 1)
# array. These functions touch only their own triangle. OpenBLAS threads these from about 100
# rows, so the caller runs them in a one-thread scope (okoco._blas.scipy_one_thread; measured:
# dsymv at 501 slots 19 us on one thread, 24 us of CPU and 36 us wall on two).


cdef void window_symv(const double* P, Py_ssize_t ld, int n, const double* v, double* out,
                      bint upper) noexcept nogil:
    """out <- P v over the first n slots (P by its triangle: see above)."""
    cdef int one = 1, ldi = <int>ld
    cdef double unit = 1.0, zero = 0.0
    if n > 0:
        dsymv(b"L" if upper else b"U", &n, &unit, <double*>P, &ldi, <double*>v, &one, &zero,
              out, &one)


cdef void window_column(const double* base, Py_ssize_t ld, Py_ssize_t n, Py_ssize_t j,
                        double* p, bint upper) noexcept nogil:
    """p <- P[:, j] over the first n slots, read from the triangle kept."""
    cdef Py_ssize_t r
    for r in range(j + 1):  # P[r, j] (r <= j), then P[j, r]
        p[r] = base[r * ld + j] if upper else base[j * ld + r]
    for r in range(j + 1, n):
        p[r] = base[j * ld + r] if upper else base[r * ld + j]


cdef void window_clear(double* base, Py_ssize_t ld, Py_ssize_t n, Py_ssize_t j,
                       bint upper) noexcept nogil:
    """Row and column j of P set to zero over the first n slots (its triangle only)."""
    cdef Py_ssize_t r
    if upper:
        for r in range(j + 1):
            base[r * ld + j] = 0.0
        memset(base + j * ld + j, 0, (n - j) * sizeof(double))
    else:
        memset(base + j * ld, 0, (j + 1) * sizeof(double))
        for r in range(j + 1, n):
            base[r * ld + j] = 0.0


cdef void window_syrk(double* P, Py_ssize_t ld, int n, int k, double alpha, const double* U,
                      Py_ssize_t ldu, bint upper) noexcept nogil:
    """P <- P + alpha U^T U on the triangle of the first n slots, U the k rows (of ldu doubles,
    row-major) of k vectors over the slots: one dsyrk of rank k (BLAS's column-major U^T)."""
    cdef int ldi = <int>ld, ldui = <int>ldu
    cdef double unit = 1.0
    if n > 0 and k > 0:
        dsyrk(b"L" if upper else b"U", b"N", &n, &k, &alpha, <double*>U, &ldui, &unit, P, &ldi)
