"""The point store: rows of float64 and per-row scalars in a buffer that grows by doubling
(:class:`Rows`), with the squared norms of the rows cached for the kernels that compute a row
from them; the learners', dictionaries' and regret tracker's points (a ring with ``max_size``),
read and written in place by the compiled steps (:meth:`Rows.norms_buffer`,
:meth:`Rows.record_rows`)."""

from __future__ import annotations

import numpy as np

from okoco._input import reserve

__all__ = ["Rows"]

# OpenBLAS computes ddot on one thread up to 10,000 elements (as okoco._blas.DOT_BLOCK).
_DOT_ONE_THREAD = 8192


class Rows:
    """Rows of float64 (and per-row scalars) in a buffer that doubles in both directions.

    Rows are appended whole; a row narrower than the buffer is 0 in the other columns (a feature
    it did not have), and :meth:`add_columns` widens every row with zeros. With ``max_size`` the
    buffer is a ring: once full, each new row overwrites the oldest (sums over rows do not depend
    on their order, so it is never rotated).

    Parameters
    ----------
    fields
        Names of the per-row float arrays to keep beside the rows (e.g. coefficients).
    max_size
        Optional bound on the number of rows kept.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import Linear
    >>> rows = Rows(fields=("coef",), max_size=2)
    >>> for i in range(3):
    ...     _ = rows.append(np.array([float(i), 1.0]), coef=0.5 * i)
    >>> rows.view()  # the ring overwrote the oldest row
    array([[2., 1.],
           [1., 1.]])
    >>> rows.field("coef"), rows.kernel_row(Linear(), np.array([1.0, 1.0]))
    (array([1. , 0.5]), array([3., 2.]))
    """

    # Squared norms of the rows and an upper bound of them, for kernels that compute a row from
    # them (RBF): saved with the rows (a restored model predicts bit for bit as before), and
    # rebuilt when absent (a file of a version without them).
    _sq: np.ndarray | None = None
    _sq_max: float = 0.0

    #: Saved state (okoco.persistence): ``data`` and the fields hold ``n`` rows or more (capacity).
    _saved_state = {"max_size": "int[1,]|none", "n": "int[0,]", "d": "int[0,]",
                    "n_added": "int[n,]", "data": "array(>=n, >=d) float64",
                    "fields": "dict[array(>=n) float64]",
                    "_sq": "opt array(>=n) float64 as squared_norms",
                    "_sq_max": "opt float as max_squared_norm"}

    def __init__(self, fields: tuple[str, ...] = (), max_size: int | None = None):
        self.max_size = max_size
        self.n = 0  # rows held
        self.d = 0  # columns in use (the buffer may hold spare zero columns)
        self.n_added = 0  # rows ever appended
        self.data = np.zeros((0, 0))
        self.fields = {name: np.zeros(0) for name in fields}
        self._sq = np.zeros(0)

    def squared_norms(self) -> tuple[np.ndarray, float]:
        """``||r_i||^2`` of the rows held (a view of the cache) and an upper bound of them."""
        return self.norms_buffer()[: self.n], self._sq_max

    @property
    def max_squared_norm(self) -> float:
        """An upper bound of the rows' squared norms (a ring's: of every row it held)."""
        return self._sq_max

    def record_rows(self, n: int, d: int, n_added: int, max_squared_norm: float) -> None:
        """The counters after a compiled step wrote rows (and their squared norms, into
        :meth:`norms_buffer`) in place: ``n`` rows held over ``d`` columns, ``n_added`` ever
        appended, and the bound of their squared norms."""
        self.n, self.d, self.n_added, self._sq_max = n, d, n_added, max_squared_norm

    def norms_buffer(self) -> np.ndarray:
        """The norms' cache over the whole capacity, for a compiled step writing rows in place."""
        if self._sq is None or self._sq.shape[0] != self.data.shape[0]:  # (saved without them)
            sq = np.zeros(self.data.shape[0])
            sq[: self.n] = np.einsum("ij,ij->i", self.view(), self.view())
            self._sq, self._sq_max = sq, float(sq.max(initial=0.0))
        return self._sq

    @property
    def size(self) -> int:
        return self.n

    def view(self) -> np.ndarray:
        """The rows held, ``(n, d)`` (a view: writes go to the buffer)."""
        return self.data[: self.n, : self.d]

    def field(self, name: str) -> np.ndarray:
        """A view of one per-row array over the rows held (writes go to the buffer)."""
        return self.fields[name][: self.n]

    def _grow(self, rows: int, cols: int) -> None:
        if rows <= self.data.shape[0] and cols <= self.data.shape[1]:
            return  # the common case, on every append
        if self.max_size is not None and rows > self.data.shape[0]:
            rows = min(max(rows, 2 * self.data.shape[0], 16), self.max_size)
        elif rows > self.data.shape[0]:
            rows = max(rows, 16)
        self.data = reserve(self.data, rows, cols)
        for name, values in self.fields.items():
            self.fields[name] = reserve(values, self.data.shape[0])

    def make_room(self, rows: int, width: int) -> None:
        """Buffers for ``rows`` more rows (up to ``max_size``) of ``width`` columns, and ``d``
        at least ``width``: what a compiled loop appending rows in place needs."""
        self.squared_norms()  # the norms' cache, valid before it grows with the buffer
        needed = self.n + rows if self.max_size is None else min(self.n + rows, self.max_size)
        self._grow(needed, width)
        self._sq = reserve(self._sq, self.data.shape[0])
        self.d = max(self.d, width)

    def add_columns(self, k: int) -> None:
        """Widen every row by ``k`` zero columns (a feature unseen so far)."""
        self._grow(self.n, self.d + k)
        self.d += k

    def append(self, row: np.ndarray, **values: float) -> int:
        """Store a row (and its scalars); return its slot."""
        n, max_size = self.n, self.max_size
        slot = self.n_added % max_size if max_size is not None and n == max_size else n
        width = row.shape[0]
        data = self.data
        if slot >= data.shape[0] or width > data.shape[1]:
            self._grow(slot + 1, width)
            data = self.data
        data[slot, :width] = row
        if width < data.shape[1]:
            data[slot, width:] = 0.0
        fields = self.fields
        for name, v in values.items():
            fields[name][slot] = v
        sq = self._sq
        if sq is not None:  # keep the norms' cache (a ring's bound stays an upper bound)
            if sq.shape[0] != data.shape[0]:
                sq = self._sq = reserve(sq, data.shape[0])
            # one BLAS dot product, a third of einsum's call here (OpenBLAS's ddot stays on one
            # thread up to 10,000 elements; einsum never threads). It may differ from einsum's
            # norms of a block in the last bit, far below the expansion's own rounding
            # (okoco.kernels), and coincident points are recomputed exactly all the same.
            norm = float(row.dot(row)) if width <= _DOT_ONE_THREAD else float(
                np.einsum("i,i->", row, row))
            sq[slot] = norm
            if norm > self._sq_max:
                self._sq_max = norm
        if slot >= n:
            self.n = slot + 1
        if width > self.d:
            self.d = width
        self.n_added += 1
        return slot

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` is true, in order (not for a ring)."""
        kept = int(mask.sum())
        self.data[:kept] = self.data[: self.n][mask]
        self.data[kept : self.n] = 0.0
        for values in self.fields.values():
            values[:kept] = values[: self.n][mask]
        sq = self._sq
        if sq is not None and sq.shape[0] == self.data.shape[0]:
            sq[:kept] = sq[: self.n][mask]
            sq[kept : self.n] = 0.0
            self._sq_max = float(sq[:kept].max(initial=0.0))
        self.n = kept

    def padded(self, width: int) -> np.ndarray:
        """The rows held over ``max(d, width)`` columns (zeros beyond ``d``)."""
        if width <= self.d:
            return self.data[: self.n, : self.d]  # view(), without the call: a step's hot path
        if width <= self.data.shape[1]:
            return self.data[: self.n, :width]  # the spare columns are zeros
        return np.pad(self.view(), ((0, 0), (0, width - self.d)))

    def kernel_row(self, kernel, vec: np.ndarray) -> np.ndarray:
        """``k(r_i, x)`` for every row held, one vectorised kernel call."""
        if self.n == 0:
            return np.zeros(0)
        width = vec.shape[0]
        if width < self.d:  # features this row does not have are 0 in it
            vec = np.pad(vec, (0, self.d - width))
        from_norms = getattr(kernel, "row_from_norms", None)
        if from_norms is not None:  # the compiled row (the RBF from the cached norms)
            sq, sq_max = self.squared_norms()
            return from_norms(self.padded(width), sq, sq_max, vec)
        return kernel(self.padded(width), vec[None, :])[:, 0]

    def kernel_block(self, kernel, V: np.ndarray) -> np.ndarray:
        """``k(r_i, v_j)`` for every row held and every row of ``V``: shape ``(n, len(V))``."""
        if self.n == 0:
            return np.zeros((0, V.shape[0]))
        if V.shape[1] < self.d:
            V = np.pad(V, ((0, 0), (0, self.d - V.shape[1])))
        return kernel(self.padded(V.shape[1]), V)
