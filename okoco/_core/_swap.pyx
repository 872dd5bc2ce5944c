r"""A full dictionary's swap (``okoco.learners.embedding.SharedEmbedding.swap_in``), in place,
``O(m^2)``: the Givens rotations that take an atom's coordinate out of the Nyström embedding
and their action on an ONS head (its point ``u`` and :math:`A^{-1}`).

Atom ``j`` of a factor :math:`L L^\top = K` (order ``m``) leaves: with ``l = L[j+1:, j]`` and
:math:`L_{33}` the trailing block, the factor without it has the trailing block
:math:`L_{33}'` of :math:`L_{33}L_{33}^\top + l l^\top` (``okoco.linalg.IncrementalCholesky
.remove``), and :math:`[l, L_{33}]\,G = [0, L_{33}']` for the ``k = m - j - 1`` rotations
:math:`G = G_0 \cdots G_{k-1}`, rotation ``i`` acting on coordinates ``j`` and ``j + 1 + i``
as ``(c, s)``: :math:`v_j \leftarrow c v_j - s v_{j+1+i}`, :math:`v_{j+1+i} \leftarrow s v_j
+ c v_{j+1+i}` (:math:`G^\top v`). An embedding :math:`z = L^{-1}k` then becomes
:math:`G^\top z`, whose coordinate ``j`` is the part along the removed atom and whose others
are :math:`z' = L'^{-1}k'` over the remaining atoms. Rotations are stored as ``(k, 2)``
C-ordered ``(c, s)`` pairs.

A head's function :math:`u^\top z` is projected onto the remaining atoms' span by rotating
``u`` and dropping coordinate ``j``; its :math:`A` is restricted to that span:
:math:`A'^{-1}` is the Schur complement of entry ``j`` of :math:`G^\top A^{-1} G`. The
symmetric matrix is given as a packed lower triangle (row ``r`` at ``r (r + 1) / 2``,
``okoco.linalg.PackedSymmetric``'s packed layout) or as a dense ``(m, m)`` C-ordered array;
each function checks its arguments' sizes (a refused call changes nothing).
"""

from libc.math cimport hypot
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memmove, memset

from okoco._core._linalg cimport dot


cdef inline Py_ssize_t start(Py_ssize_t r) noexcept nogil:
    return r * (r + 1) // 2


cdef inline Py_ssize_t packed_len(Py_ssize_t m) noexcept nogil:
    return m * (m + 1) // 2


def rotations_after_drop(const double[::1] L, Py_ssize_t j, const double[::1] column,
                         const double[::1] pivots, double[:, ::1] rotations):
    r"""The rotations of a removal, from the factor after it: ``L`` is the packed factor
    without atom ``j`` (``IncrementalCholesky.remove``), ``column`` the removed ``l`` and
    ``pivots`` the diagonal of :math:`L_{33}` before the removal (both of length ``k``);
    writes ``(c_i, s_i)`` into ``rotations`` (``(k, 2)``), ``O(k^2)``.

    Rotation ``i`` has :math:`c_i = [L_{33}]_{ii} / [L_{33}']_{ii}` (its pivot before and
    after) and :math:`s_i = w_i / \prod_{p<i} c_p` with :math:`w = L_{33}'^{-1} l` (the first
    column of :math:`G^\top` below row 0, from :math:`[l, L_{33}] = [0, L_{33}']G^\top`); each
    pair is normalized to :math:`c^2 + s^2 = 1`."""
    cdef Py_ssize_t k = column.shape[0], a
    cdef double* w
    cdef const double* row
    cdef double c, s, n, product = 1.0
    if pivots.shape[0] != k or rotations.shape[0] != k or rotations.shape[1] != 2:
        raise ValueError(f"rotations_after_drop: column, pivots and rotations must have "
                         f"{k} rows")
    if L.shape[0] < packed_len(j + k):
        raise ValueError(f"rotations_after_drop: a factor of {L.shape[0]} numbers holds "
                         f"fewer than {j + k} rows")
    if k == 0:
        return
    w = <double*>malloc(k * sizeof(double))
    if w == NULL:
        raise MemoryError()
    with nogil:
        for a in range(k):
            row = &L[start(j + a) + j]  # row a of L_33' (its columns from j on)
            w[a] = (column[a] - dot(<int>a, row, w)) / row[a]
            c = pivots[a] / row[a]
            s = w[a] / product
            n = hypot(c, s)
            c, s = c / n, s / n
            rotations[a, 0] = c
            rotations[a, 1] = s
            product *= c
    free(w)


cdef void rotate_rows(double* D, Py_ssize_t ld, Py_ssize_t k, const double* rot,
                      Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """:math:`G^\top` on the rows of ``D`` (row ``0`` the coordinate leaving, rows ``1..k``
    the others; rows ``ld`` apart), over columns ``lo .. hi - 1``: rotation ``i`` mixes row
    0 with row ``1 + i`` (contiguous, so the loop vectorizes)."""
    cdef double* first = D
    cdef double* other
    cdef Py_ssize_t i, col
    cdef double c, s, f, o
    for i in range(k):
        c, s = rot[2 * i], rot[2 * i + 1]
        other = D + (1 + i) * ld
        for col in range(lo, hi):
            f, o = first[col], other[col]
            first[col] = c * f - s * o
            other[col] = s * f + c * o


cdef void rotate_vector(double* u, Py_ssize_t k, const double* rot) noexcept nogil:
    """:math:`G^\top u` for ``u`` starting at the coordinate leaving."""
    cdef Py_ssize_t i
    cdef double c, s, f, o
    for i in range(k):
        c, s = rot[2 * i], rot[2 * i + 1]
        f, o = u[0], u[1 + i]
        u[0] = c * f - s * o
        u[1 + i] = s * f + c * o


cdef void transpose(double* D, Py_ssize_t n, Py_ssize_t ld) noexcept nogil:
    """``D <- D^T`` in place (the leading ``n x n`` block, rows ``ld`` apart), in tiles."""
    cdef Py_ssize_t T = 32, bi = 0, bj, i, jj, jend
    cdef double t
    while bi < n:
        bj = bi
        while bj < n:
            jend = min(bj + T, n)
            for i in range(bi, min(bi + T, n)):
                for jj in range(max(bj, i + 1), jend):
                    t = D[i * ld + jj]
                    D[i * ld + jj] = D[jj * ld + i]
                    D[jj * ld + i] = t
            bj += T
        bi += T


cdef void drop_vector(double* u, Py_ssize_t m, Py_ssize_t j, const double* rot) noexcept nogil:
    """``u``'s coordinates rotated, coordinate ``j`` dropped (the rest move up), ``u[m-1] = 0``."""
    rotate_vector(u + j, m - j - 1, rot)
    memmove(u + j, u + j + 1, (m - j - 1) * sizeof(double))
    u[m - 1] = 0.0


def _check(str name, Py_ssize_t have, Py_ssize_t m, Py_ssize_t j, Py_ssize_t need,
           const double[:, ::1] rotations, const double[::1] u):
    if not 0 <= j < m:
        raise IndexError(f"{name}: coordinate {j} out of range for order {m}")
    if have < need:
        raise ValueError(f"{name}: a matrix of {have} numbers for order {m} (needs {need})")
    if rotations.shape[0] != m - j - 1 or rotations.shape[1] != 2:
        raise ValueError(f"{name}: {rotations.shape[0]} rotations for coordinate {j} of "
                         f"{m} (needs {m - j - 1})")
    if u.shape[0] < m:
        raise ValueError(f"{name}: u has {u.shape[0]} entries, fewer than the order {m}")


def vector_drop(Py_ssize_t m, Py_ssize_t j, const double[:, ::1] rotations, double[::1] u):
    r"""Coordinate ``j`` leaves a head whose :math:`A^{-1}` is a scaled identity :math:`cI`
    (``okoco.linalg.ScaledIdentity``), in place, ``O(m)``: :math:`u \leftarrow G^\top u` with
    coordinate ``j`` dropped (the others move up; ``u[m-1] = 0``). The matrix needs nothing:
    :math:`G^\top (cI) G = cI`, the Schur complement of an entry of :math:`cI` is
    :math:`cI`, and the freed last coordinate starts at :math:`c`, exactly."""
    _check("vector_drop", 0, m, j, 0, rotations, u)
    with nogil:
        drop_vector(&u[0], m, j, &rotations[0, 0] if m - j - 1 else NULL)


def packed_drop(double[::1] P, Py_ssize_t m, Py_ssize_t j, const double[:, ::1] rotations,
                double[::1] u):
    r"""Coordinate ``j`` leaves a head, in place, ``O(m^2)``: :math:`u \leftarrow G^\top u`
    with coordinate ``j`` dropped (the others move up; ``u[m-1] = 0``), and ``P`` (the packed
    lower triangle of :math:`A^{-1}`, order ``m``) becomes the Schur complement of entry
    ``j`` of :math:`G^\top P G`: order ``m - 1`` in its first ``(m - 1) m / 2`` numbers, the
    ``m`` numbers of row ``m - 1`` zeroed (for the caller to border or drop)."""
    cdef Py_ssize_t k = m - j - 1, n = m - j, r, col, src
    cdef double* D
    cdef double* row
    cdef double* coupling  # column j of G^T P G over the m coordinates
    cdef double pivot, scale
    _check("packed_drop", P.shape[0], m, j, packed_len(m), rotations, u)
    D = <double*>malloc((n * n + m) * sizeof(double))
    if D == NULL:
        raise MemoryError()
    coupling = D + n * n
    with nogil:
        drop_vector(&u[0], m, j, &rotations[0, 0])
        # rows j.. over the columns before j (packed prefixes): G^T from the left only
        memcpy(coupling, &P[start(j)], j * sizeof(double))
        for r in range(k):
            rotate_pair(coupling, &P[start(j + 1 + r)], j, &rotations[r, 0])
        # the trailing block, dense: G^T T G = (G^T (G^T T)^T), T symmetric
        for r in range(n):
            row = &P[start(j + r) + j]
            for col in range(r + 1):
                D[r * n + col] = row[col]
                D[col * n + r] = row[col]
        rotate_rows(D, n, k, &rotations[0, 0], 0, n)
        transpose(D, n, n)
        rotate_rows(D, n, k, &rotations[0, 0], 0, n)
        for r in range(n):
            coupling[j + r] = D[r * n]
        # the Schur complement of entry j, written back packed without row and column j
        pivot = coupling[j]
        for r in range(m):
            if r == j:
                continue
            row = &P[start(r - 1 if r > j else r)]
            scale = coupling[r] / pivot
            if r > j:
                src = start(r)
                memmove(row, &P[src], j * sizeof(double))  # the rotated prefix
                for col in range(j + 1, r + 1):
                    row[col - 1] = D[(r - j) * n + col - j]
            for col in range(min(r + 1, j)):
                row[col] -= scale * coupling[col]
            for col in range(j + 1, r + 1):
                row[col - 1] -= scale * coupling[col]
        memset(&P[start(m - 1)], 0, m * sizeof(double))
    free(D)


cdef inline void rotate_pair(double* first, double* other, Py_ssize_t n,
                             const double* rot) noexcept nogil:
    """One rotation on two rows of length ``n``."""
    cdef double c = rot[0], s = rot[1], f, o
    cdef Py_ssize_t col
    for col in range(n):
        f, o = first[col], other[col]
        first[col] = c * f - s * o
        other[col] = s * f + c * o


def dense_drop(double[::1] P, Py_ssize_t m, Py_ssize_t j, const double[:, ::1] rotations,
               double[::1] u):
    r""":func:`packed_drop` for a dense symmetric ``P`` (``(m, m)`` C-ordered, flattened): the
    result of order ``m - 1`` in the leading block (rows still ``m`` apart), the last row and
    column zeroed."""
    cdef Py_ssize_t k = m - j - 1, n = m - j, r, col
    cdef double* coupling
    cdef double* row
    cdef double pivot, scale
    _check("dense_drop", P.shape[0], m, j, m * m, rotations, u)
    coupling = <double*>malloc(m * sizeof(double))
    if coupling == NULL:
        raise MemoryError()
    with nogil:
        drop_vector(&u[0], m, j, &rotations[0, 0])
        rotate_rows(&P[j * m], m, k, &rotations[0, 0], 0, m)  # G^T from the left, all columns
        transpose(&P[j * m + j], n, m)  # the trailing block: G^T (G^T T)^T
        rotate_rows(&P[j * m], m, k, &rotations[0, 0], j, m)
        for r in range(j):  # the leading rows' trailing columns, by symmetry
            for col in range(j, m):
                P[r * m + col] = P[col * m + r]
        for r in range(m):
            coupling[r] = P[j * m + r]
        pivot = coupling[j]
        for r in range(m):  # Schur complement, row and column j squeezed out
            if r == j:
                continue
            row = &P[(r - 1 if r > j else r) * m]
            scale = coupling[r] / pivot
            if r > j:
                memmove(row, &P[r * m], m * sizeof(double))
            memmove(row + j, row + j + 1, (m - j - 1) * sizeof(double))
            for col in range(m - 1):
                row[col] -= scale * coupling[col if col < j else col + 1]
            row[m - 1] = 0.0
        memset(&P[(m - 1) * m], 0, m * sizeof(double))
    free(coupling)
