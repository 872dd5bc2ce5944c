# The C kernels that read okoco._core._linalg's packed triangles (cimported there: their one
# definition, as _leverage.pxd's), over four-lane vectors, with no BLAS call per row (no call
# overhead, no thread pool to wake): the product P v, the rank-one update, the two fused
# (P <- P + a x x^T, then P v) and the forward substitution one row at a time (row r's dot
# product with v and its axpy into P v in one pass), so that the triangle is read as one
# sequential stream; the back substitution, whose
# rows are read against the layout, four rows at a time (one pass adds the four rows into x).
# Measured on an AMD EPYC at m = 500 (notes in the commits): reading four rows at a time is
# faster when the triangle is in cache but up to 2x slower when it comes from memory (four
# streams instead of one), except for the back substitution, faster both ways. The sums are
# reordered against a row-by-row BLAS: results agree with it to rounding, not bit for bit.
#
# Four lanes of doubles: GCC / Clang vector extensions (else a struct of four). Each kernel's
# body is compiled twice, portable (two SSE2 halves per vector on x86-64) and, on x86 with GCC
# or Clang, for AVX (one instruction per vector, no FMA: mul and add stay apart; a function
# attribute, not a build flag, so the wheel runs everywhere), chosen on first use by the
# processor; the lanes do the same operations in the same order either way, so both give the
# same bits (tested).
cdef extern from *:
    """
    #include <string.h>
    #if defined(__GNUC__)
    typedef double okoco_v4 __attribute__((vector_size(32)));
    #define OKOCO_SPLAT(a) ((okoco_v4){(a), (a), (a), (a)})
    #define OKOCO_ADD(a, b) ((a) + (b))
    #define OKOCO_MUL(a, b) ((a) * (b))
    #define OKOCO_INLINE static inline __attribute__((always_inline))
    #else
    typedef struct { double lane[4]; } okoco_v4;
    static okoco_v4 okoco_v4_splat(double a) { okoco_v4 v = {{a, a, a, a}}; return v; }
    static okoco_v4 okoco_v4_add(okoco_v4 a, okoco_v4 b) { int k; for (k = 0; k < 4; k++)
        a.lane[k] += b.lane[k]; return a; }
    static okoco_v4 okoco_v4_mul(okoco_v4 a, okoco_v4 b) { int k; for (k = 0; k < 4; k++)
        a.lane[k] *= b.lane[k]; return a; }
    #define OKOCO_SPLAT(a) okoco_v4_splat(a)
    #define OKOCO_ADD(a, b) okoco_v4_add((a), (b))
    #define OKOCO_MUL(a, b) okoco_v4_mul((a), (b))
    #define OKOCO_INLINE static inline
    #endif
    #define OKOCO_LOAD(v, p) memcpy(&(v), (p), sizeof(okoco_v4))
    #define OKOCO_STORE(p, v) memcpy((p), &(v), sizeof(okoco_v4))

    /* One row p[0..n): its dot product with x in two four-lane sums (columns j mod 8, then
       the last n mod 4 columns one by one), and, when y is not NULL, y[0..n) += c p (y apart
       from p and x). The dot product's lanes are added as ((a + b)_0 + (a + b)_2) +
       ((a + b)_1 + (a + b)_3), then the columns left. */
    #define OKOCO_ROW_STEP(acc, j) \
        OKOCO_LOAD(xv, x + (j)); OKOCO_LOAD(w, p + (j)); acc = OKOCO_ADD(acc, OKOCO_MUL(w, xv)); \
        if (y) { OKOCO_LOAD(yv, y + (j)); yv = OKOCO_ADD(yv, OKOCO_MUL(k, w)); \
                 OKOCO_STORE(y + (j), yv); }
    OKOCO_INLINE double okoco_row_body(const double* p, Py_ssize_t n, const double* x,
                                       double c, double* y) {
        okoco_v4 a = OKOCO_SPLAT(0.0), b = a, k = OKOCO_SPLAT(c), xv, yv, w;
        double lane[4], d;
        Py_ssize_t j = 0;
        for (; j + 8 <= n; j += 8) { OKOCO_ROW_STEP(a, j) OKOCO_ROW_STEP(b, j + 4) }
        if (j + 4 <= n) { OKOCO_ROW_STEP(a, j) j += 4; }
        a = OKOCO_ADD(a, b);
        OKOCO_STORE(lane, a);
        d = (lane[0] + lane[2]) + (lane[1] + lane[3]);
        for (; j < n; j++) {
            d += p[j] * x[j];
            if (y) y[j] += c * p[j];
        }
        return d;
    }

    /* The rank-one update of one row fused with its pass of a product: p[j] += k x[j] over
       p[0..n) (written back), then okoco_row_body's dot product with v and axpy into y
       (y apart from p, x and v), on the updated row. Each entry's update is the axpy's,
       p + k x, and the rest is okoco_row_body's on its result: the same bits as
       okoco_axpy_body(x, n, k, p) then okoco_row_body(p, n, v, c, y). */
    #define OKOCO_FUSED_STEP(acc, j) \
        OKOCO_LOAD(w, p + (j)); OKOCO_LOAD(xv, x + (j)); w = OKOCO_ADD(w, OKOCO_MUL(kx, xv)); \
        OKOCO_STORE(p + (j), w); OKOCO_LOAD(vv, v + (j)); acc = OKOCO_ADD(acc, OKOCO_MUL(w, vv)); \
        if (y) { OKOCO_LOAD(yv, y + (j)); yv = OKOCO_ADD(yv, OKOCO_MUL(kc, w)); \
                 OKOCO_STORE(y + (j), yv); }
    OKOCO_INLINE double okoco_fused_body(double* p, Py_ssize_t n, const double* x, double k,
                                         const double* v, double c, double* y) {
        okoco_v4 a = OKOCO_SPLAT(0.0), b = a, kx = OKOCO_SPLAT(k), kc = OKOCO_SPLAT(c), xv,
                 vv, yv, w;
        double lane[4], d;
        Py_ssize_t j = 0;
        for (; j + 8 <= n; j += 8) { OKOCO_FUSED_STEP(a, j) OKOCO_FUSED_STEP(b, j + 4) }
        if (j + 4 <= n) { OKOCO_FUSED_STEP(a, j) j += 4; }
        a = OKOCO_ADD(a, b);
        OKOCO_STORE(lane, a);
        d = (lane[0] + lane[2]) + (lane[1] + lane[3]);
        for (; j < n; j++) {
            p[j] += k * x[j];
            d += p[j] * v[j];
            if (y) y[j] += c * p[j];
        }
        return d;
    }

    /* y[0..n) += c p[0..n) (y apart from p) */
    OKOCO_INLINE void okoco_axpy_body(const double* p, Py_ssize_t n, double c, double* y) {
        okoco_v4 k = OKOCO_SPLAT(c), yv, w;
        Py_ssize_t j = 0;
        for (; j + 4 <= n; j += 4) {
            OKOCO_LOAD(w, p + j);
            OKOCO_LOAD(yv, y + j);
            yv = OKOCO_ADD(yv, OKOCO_MUL(k, w));
            OKOCO_STORE(y + j, yv);
        }
        for (; j < n; j++) y[j] += c * p[j];
    }

    /* y[0..n) += c[0] p[0] + c[1] p[1] + c[2] p[2] + c[3] p[3], n a multiple of 4, y apart
       from the rows */
    OKOCO_INLINE void okoco_axpy4_body(const double* const* p, Py_ssize_t n, const double* c,
                                       double* y) {
        const double *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
        okoco_v4 k0 = OKOCO_SPLAT(c[0]), k1 = OKOCO_SPLAT(c[1]), k2 = OKOCO_SPLAT(c[2]),
                 k3 = OKOCO_SPLAT(c[3]), v0, v1, v2, v3, yv;
        Py_ssize_t j;
        for (j = 0; j < n; j += 4) {
            OKOCO_LOAD(v0, p0 + j); OKOCO_LOAD(v1, p1 + j);
            OKOCO_LOAD(v2, p2 + j); OKOCO_LOAD(v3, p3 + j);
            OKOCO_LOAD(yv, y + j);
            yv = OKOCO_ADD(yv, OKOCO_ADD(OKOCO_ADD(OKOCO_MUL(k0, v0), OKOCO_MUL(k1, v1)),
                                         OKOCO_ADD(OKOCO_MUL(k2, v2), OKOCO_MUL(k3, v3))));
            OKOCO_STORE(y + j, yv);
        }
    }

    /* each kernel twice: portable, and for AVX where the compiler can target it */
    #define OKOCO_KERNELS(ISA, ATTR) \
    ATTR static double okoco_row_##ISA(const double* p, Py_ssize_t n, const double* x, \
                                       double c, double* y) { \
        return okoco_row_body(p, n, x, c, y); } \
    ATTR static double okoco_fused_##ISA(double* p, Py_ssize_t n, const double* x, double k, \
                                         const double* v, double c, double* y) { \
        return okoco_fused_body(p, n, x, k, v, c, y); } \
    ATTR static void okoco_axpy_##ISA(const double* p, Py_ssize_t n, double c, double* y) { \
        okoco_axpy_body(p, n, c, y); } \
    ATTR static void okoco_axpy4_##ISA(const double* const* p, Py_ssize_t n, const double* c, \
                                       double* y) { \
        okoco_axpy4_body(p, n, c, y); }
    OKOCO_KERNELS(portable, )
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    OKOCO_KERNELS(avx, __attribute__((target("avx"))))
    static int okoco_avx_available(void) {
        __builtin_cpu_init(); return __builtin_cpu_supports("avx"); }
    #else
    #define okoco_row_avx okoco_row_portable
    #define okoco_fused_avx okoco_fused_portable
    #define okoco_axpy_avx okoco_axpy_portable
    #define okoco_axpy4_avx okoco_axpy4_portable
    static int okoco_avx_available(void) { return 0; }
    #endif

    static int okoco_use_avx = -1;  /* -1: not chosen yet (the processor's, on first use) */
    static void okoco_set_avx(int on) { okoco_use_avx = on; }
    static int okoco_avx(void) {
        if (okoco_use_avx < 0) okoco_use_avx = okoco_avx_available();
        return okoco_use_avx; }
    static double okoco_row(const double* p, Py_ssize_t n, const double* x, double c,
                            double* y) {
        return okoco_avx() ? okoco_row_avx(p, n, x, c, y)
                             : okoco_row_portable(p, n, x, c, y); }
    static double okoco_fused(double* p, Py_ssize_t n, const double* x, double k,
                              const double* v, double c, double* y) {
        return okoco_avx() ? okoco_fused_avx(p, n, x, k, v, c, y)
                             : okoco_fused_portable(p, n, x, k, v, c, y); }
    static void okoco_axpy(const double* p, Py_ssize_t n, double c, double* y) {
        if (okoco_avx()) okoco_axpy_avx(p, n, c, y); else okoco_axpy_portable(p, n, c, y); }
    static void okoco_axpy4(const double* const* p, Py_ssize_t n, const double* c, double* y) {
        if (okoco_avx()) okoco_axpy4_avx(p, n, c, y); else okoco_axpy4_portable(p, n, c, y); }
    """
    # whether the processor (and the build) has AVX; whether the kernels use it, and set it
    int avx_available "okoco_avx_available" () noexcept nogil
    int avx_in_use "okoco_avx" () noexcept nogil
    void use_avx "okoco_set_avx" (int on) noexcept nogil
    # row p[0..n) . x, and y[0..n) += c p when y is not NULL
    double row_pass "okoco_row" (const double* p, Py_ssize_t n, const double* x, double c,
                                 double* y) noexcept nogil
    # p[0..n) += k x, then the updated row's p . v, and y[0..n) += c p when y is not NULL
    double row_fused "okoco_fused" (double* p, Py_ssize_t n, const double* x, double k,
                                    const double* v, double c, double* y) noexcept nogil
    # y[0..n) += c p
    void row_axpy "okoco_axpy" (const double* p, Py_ssize_t n, double c, double* y) noexcept nogil
    # y[0..n) += sum_i c[i] p[i] over four rows, n a multiple of 4
    void rows4_axpy "okoco_axpy4" (const double* const* p, Py_ssize_t n, const double* c,
                                   double* y) noexcept nogil
