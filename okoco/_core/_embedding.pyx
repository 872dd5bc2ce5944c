r"""The per-step work of a shared Nyström embedding (``okoco.learners.embedding
.SharedEmbedding``), compiled: a point's kernel row over the atoms, its embedding
:math:`h = L^{-1}k`, its residual :math:`k(x,x) - h^\top h` against the atoms and the pivot it
would take as an atom, in one call (:func:`analyse`; :func:`embed` from a row given); and the
usage rule's step of a full dictionary (the atoms' discounted shares of the kernel rows, the
discounted count and mean residual, and the least-used atom), in another.

The swap itself (``O(m^2)`` rotations of the factor and of the heads) is ``okoco._core._swap``'s.
"""

from libc.math cimport isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np

from okoco._core._kernels cimport Kernel, kernel_row, make_kernel, self_similarity
from okoco._core._linalg cimport dot, tp_half_solve

# the kernel's exponents are raised as ``row_from_norms`` raises them (numpy's exp), at every
# length: libm's exp may differ from numpy's in the last bit
_np_exp = np.exp


cdef double half_solve(const double* L, Py_ssize_t m, const double* k, double kappa,
                       double* h) noexcept nogil:
    """``h = L^{-1} k`` over ``m`` atoms (``L`` packed); returns the residual
    ``kappa - h.h``."""
    if m == 0:
        return kappa
    memcpy(h, k, m * sizeof(double))
    tp_half_solve(L, <int>m, h)
    return kappa - dot(<int>m, h, h)


def embed(const double[::1] L, Py_ssize_t m, const double[::1] k, double kappa):
    r"""``(h, residual)``: :math:`h = L^{-1}k` (a new vector; ``L`` the packed factor of
    order ``m``, ``IncrementalCholesky.factor_storage``) and :math:`\kappa - h^\top h`
    (``kappa`` :math:`= k(x, x)`), ``O(m^2)``."""
    cdef double residual
    if k.shape[0] != m:
        raise ValueError(f"embed: a kernel row of {k.shape[0]} entries for {m} atoms")
    if L.shape[0] < m * (m + 1) // 2:
        raise ValueError(f"embed: a factor of {L.shape[0]} numbers holds fewer than {m} rows")
    h = np.empty(m)
    cdef double[::1] out = h
    with nogil:
        residual = half_solve(&L[0] if m else NULL, m, &k[0] if m else NULL, kappa,
                              &out[0] if m else NULL)
    return h, residual


def analyse(tuple spec, rows, factor, const double[:] v):
    r"""``(k, kappa, h, residual)`` of the row ``v`` over the atoms ``rows``
    (``okoco.linalg.Rows``, with their squared norms) and the factor ``factor``
    (``okoco.linalg.IncrementalCholesky``, :math:`L L^\top = K_{\mathcal I}`), ``O(md + m^2)``:
    the kernel row ``k`` (the kernel ``spec``, ``okoco.learners._codes.compiled_kernel``; ``v``
    and the rows zero-padded to the wider of the two, as ``Rows.kernel_row`` pads them, and an
    exponent raised by numpy's ``exp``), ``kappa`` :math:`= k(x, x)`, :math:`h = L^{-1}k` and
    the residual :math:`\kappa - h^\top h` (the pivot the point would take as an atom is the
    embedding's ``_join_pivot``, from the last two).

    Returns ``None`` (nothing computed; the caller takes the Python path, which words the
    error) for a row wider than the rows' buffer or a kernel value that is not finite."""
    cdef Kernel kern = make_kernel(spec)
    cdef Py_ssize_t n = rows.n, d = rows.d, w = v.shape[0], m = factor.size, i
    cdef Py_ssize_t width = d if d > w else w
    cdef double kappa, residual, total = 0.0
    cdef double* x
    cdef const double[:, :] data
    cdef const double[::1] sq, L
    if n != m:
        raise ValueError(f"analyse: {n} stored atoms for a factor of order {m}")
    k_obj = np.empty(n)
    h_obj = np.empty(n)
    cdef double[::1] k = k_obj, h = h_obj
    x = <double*>malloc((width + 1) * sizeof(double))
    if x == NULL:
        raise MemoryError()
    try:
        for i in range(w):
            x[i] = v[i]
        memset(x + w, 0, (width - w) * sizeof(double))
        kappa = self_similarity(&kern, x, <int>width)
        if n:
            data = rows.data
            if width > data.shape[1] or data.strides[1] != sizeof(double):
                return None  # (a buffer narrower than the row, or of strided rows)
            sq = rows.norms_buffer()
            if kernel_row(&kern, &data[0, 0], data.strides[0] // sizeof(double), n,
                          <int>width, &sq[0], x, <int>width, &k[0]):
                _np_exp(k_obj, out=k_obj)
    finally:
        free(x)
    if not kern.bounded:  # (a bounded kernel's values are in [0, 1])
        for i in range(n):
            total += k[i]
        if not (isfinite(kappa) and isfinite(total)):
            return None
    L = factor.factor_storage()
    if L.shape[0] < m * (m + 1) // 2:
        raise ValueError(f"analyse: a factor of {L.shape[0]} numbers holds fewer than {m} rows")
    with nogil:
        residual = half_solve(&L[0] if m else NULL, m, &k[0] if m else NULL, kappa,
                              &h[0] if m else NULL)
    return k_obj, kappa, h_obj, residual


cdef double pairwise_sum(const double* a, Py_ssize_t n) noexcept nogil:
    """numpy's pairwise summation (``np.sum`` of a contiguous float64 vector), term for term:
    blocks of at most 128 in eight running sums, halves (multiples of 8) above."""
    cdef double r[8]
    cdef double res = 0.0
    cdef Py_ssize_t i, q, half
    if n < 8:
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        for q in range(8):
            r[q] = a[q]
        i = 8
        while i < n - n % 8:
            for q in range(8):
                r[q] += a[i + q]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a, half) + pairwise_sum(a + half, n - half)


def usage_step(double[::1] usage, const double[::1] k, double residual, double count,
               double mean, double horizon, double margin):
    r"""The usage rule's step (``SharedEmbedding.swap_in``), in place, ``O(m)``: each atom's
    discounted share of the point's kernel row ``k``, :math:`U_j \leftarrow \gamma U_j + k_j /
    \sum_i k_i` (no share for a zero row), the discounted count :math:`N \leftarrow \gamma N +
    1` and the mean residual :math:`\bar r \leftarrow \bar r + (r - \bar r) / \min(N, H)`, with
    :math:`\gamma = 1 - 1/H` (``horizon`` :math:`H`); then, with ``margin`` :math:`\mu > 0`,
    the atom to leave: the least used (the first of the smallest :math:`U_j`) if
    :math:`U_j < N / (\mu m)` and ``residual`` :math:`r > \bar r` (``margin=0``: none).

    Returns ``(N, r_bar, j)``, ``j = -1`` for none. ``usage`` and ``k`` have the ``m`` atoms'
    entries (a refused call changes nothing)."""
    cdef Py_ssize_t m = usage.shape[0], i, j = -1
    cdef double decay, total
    if k.shape[0] != m:
        raise ValueError(f"usage_step: a kernel row of {k.shape[0]} entries for {m} atoms")
    if not horizon >= 1.0:
        raise ValueError(f"usage_step: horizon must be at least 1, not {horizon!r}")
    decay = 1.0 - 1.0 / horizon
    with nogil:
        for i in range(m):
            usage[i] = usage[i] * decay
        total = 0.0 + pairwise_sum(&k[0], m) if m else 0.0
        if total > 0.0:
            for i in range(m):
                usage[i] = usage[i] + k[i] / total
        count = decay * count + 1.0
        mean = mean + (residual - mean) / (count if count < horizon else horizon)
        if margin > 0.0 and m > 0:
            j = 0
            for i in range(1, m):
                if usage[i] < usage[j]:
                    j = i
            if not (usage[j] < count / (margin * m) and residual > mean):
                j = -1
    return count, mean, j
