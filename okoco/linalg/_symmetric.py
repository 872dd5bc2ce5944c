"""A growing symmetric matrix updated in place (:class:`PackedSymmetric`, KRLS's ``P``); see
:mod:`okoco.linalg`."""

from __future__ import annotations

import numpy as np

from okoco._core import _linalg
from okoco.linalg._cholesky import IncrementalCholesky, _packed_len


class _Storage(np.ndarray):
    """A view of a :class:`PackedSymmetric`'s flat storage that names it (``owner``): a
    compiled step bound to the storage finds there the buffer of its pending update."""

    owner = None


class PackedSymmetric:
    """A growing symmetric ``(m, m)`` matrix updated in place by compiled code: dense while
    small, then packed.

    Up to ``DENSE_MAX`` rows the matrix is a full dense C-contiguous array, whose rows
    :meth:`matvec` and :meth:`rank_one` read whole (compiled kernels, no BLAS call). Bordering
    reallocates the ``(m + 1, m + 1)`` array (``O(m^2)``, like the append of the factor beside
    it, and at most ``DENSE_MAX`` times). When the matrix outgrows ``DENSE_MAX`` it switches,
    once, to :class:`IncrementalCholesky`'s layout (row-major lower packed in a doubling
    buffer): bordering writes ``m + 1`` numbers at the end, and the product and the rank-one
    update go row by row through compiled kernels (one pass over each row, no BLAS call per
    row, no thread pool), with half the memory. The arithmetic runs in okoco's compiled core
    (``okoco._core._linalg``) on these buffers. KRLS keeps its ``P = (A^T A)^{-1}`` here.

    A compiled step may leave a rank-one update ``P <- P + a x x^T`` pending
    (:meth:`pending_update`) and apply it fused with its next product (one pass over the
    matrix instead of two): every method here applies it first (:meth:`flush`), and so do
    pickling, copying and saving (``okoco.persistence`` calls ``_before_save``), so that no
    reader sees the matrix without it; only :attr:`buffer` (the array's identity) does not.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import PackedSymmetric
    >>> P = PackedSymmetric()
    >>> P.append(np.zeros(0), 2.0); P.append(np.array([0.5]), 1.0)
    >>> P.rank_one(-1.0, np.array([1.0, 0.0]))
    >>> P.matrix()
    array([[1. , 0.5],
           [0.5, 1. ]])
    >>> P.matvec(np.array([1.0, 1.0]))
    array([1.5, 1.5])
    """

    #: Largest order kept dense (the saved layout depends on it; chosen when the dense form
    #: was one BLAS ``dger`` / ``dgemv``, which OpenBLAS runs on one thread up to
    #: ``m * m = 8192`` elements).
    DENSE_MAX = 90
    # The dense matrix, or None once packed. A file saved before the dense form existed has no
    # such attribute: the class default makes it packed, as it was.
    _dense: np.ndarray | None = None
    # [a, x_0 .. x_{m-1}]: the update P <- P + a x x^T left pending (a = 0: none), or None
    _pending: np.ndarray | None = None

    #: Saved state (okoco.persistence): dense ``(m, m)`` up to DENSE_MAX, else packed.
    _saved_state = {"_cap": "int[0,] as capacity", "_m": "int[0,] as size",
                    "_buf": ("array(0) float64|array(capacity * (capacity + 1) // 2) float64"
                             " as packed"),
                    "_dense": "array(size, size) float64|none as dense",
                    "_pending": "cache:None"}

    def __init__(self, capacity: int = 16):
        self._cap = int(capacity)
        self._buf = np.zeros(0)
        self._m = 0
        self._dense = np.zeros((0, 0))

    @property
    def size(self) -> int:
        """The order ``m``."""
        return self._m

    @classmethod
    def from_matrix(cls, A: np.ndarray) -> PackedSymmetric:
        """A matrix holding the symmetric ``A`` (its lower triangle is read), ``O(m^2)``.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.linalg import PackedSymmetric
        >>> PackedSymmetric.from_matrix(np.array([[2.0, 1.0], [1.0, 3.0]])).matrix()
        array([[2., 1.],
               [1., 3.]])
        """
        A = np.asarray(A, dtype=float)
        m = A.shape[0]
        out = cls(capacity=max(m, 16))
        if m <= cls.DENSE_MAX:
            lower = np.tril(A)
            out._dense = lower + np.tril(A, -1).T
        else:
            out._dense = None
            out._buf = np.zeros(_packed_len(out._cap))
            out._buf[: _packed_len(m)] = A[np.tril_indices(m)]
        out._m = m
        return out

    @classmethod
    def scaled_identity(cls, m: int, value: float) -> PackedSymmetric:
        """``value * I`` of order ``m``, as :meth:`from_matrix` holds it, without forming a
        dense ``(m, m)`` matrix first.

        Examples
        --------
        >>> from okoco.linalg import PackedSymmetric
        >>> PackedSymmetric.scaled_identity(2, 0.5).matrix()
        array([[0.5, 0. ],
               [0. , 0.5]])
        """
        out = cls(capacity=max(m, 16))
        if m <= cls.DENSE_MAX:
            out._dense = np.diag(np.full(m, float(value)))
        else:
            out._dense = None
            out._buf = np.zeros(_packed_len(out._cap))
            rows = np.arange(m)
            out._buf[rows * (rows + 3) // 2] = value  # row r's diagonal: r (r + 1) / 2 + r
        out._m = m
        return out

    @property
    def is_dense(self) -> bool:
        """Whether the matrix is held dense (``m <= DENSE_MAX``) rather than packed."""
        return self._dense is not None

    def _packed(self) -> np.ndarray:
        return self._buf[: _packed_len(self._m)]

    def pending_update(self) -> np.ndarray:
        """The buffer of a pending rank-one update, ``[a, x_0, .., x_{m-1}]`` (at least
        ``m + 1`` entries): a compiled step that writes ``a != 0`` there leaves
        ``P <- P + a x x^T`` to be applied later (by itself, fused with its next product, which
        sets ``a`` back to 0, or by :meth:`flush`). A new buffer (the update so far applied)
        when the order outgrew the last one."""
        pending = self._pending
        if pending is None or pending.shape[0] <= self._m:
            self.flush()
            size = 1 + max(self._m, 16, 0 if pending is None else 2 * (pending.shape[0] - 1))
            pending = self._pending = np.zeros(size)
        return pending

    def flush(self) -> None:
        """Apply the pending rank-one update, if any (:meth:`pending_update`)."""
        pending = self._pending
        if pending is not None and pending[0] != 0.0:
            _linalg.sym_update(self._raw_storage(), self._m, self._dense is not None,
                               float(pending[0]), pending[1 : self._m + 1])
            pending[0] = 0.0

    #: okoco.persistence's call before it reads the saved fields: the file holds the matrix
    _before_save = flush

    def __getstate__(self) -> dict:
        self.flush()
        state = self.__dict__.copy()
        state.pop("_pending", None)  # (nothing pending: the pickle holds the matrix)
        return state

    def append(self, column: np.ndarray, diagonal: float) -> None:
        """Border the matrix: ``P <- [[P, c], [c^T, d]]``."""
        self.flush()
        m = self._m
        D = self._dense
        if D is not None:
            if m + 1 <= self.DENSE_MAX:
                grown = np.empty((m + 1, m + 1))
                grown[:m, :m] = D
                grown[m, :m] = column
                grown[:m, m] = column
                grown[m, m] = diagonal
                self._dense, self._m = grown, m + 1
                return
            # outgrown: to the packed layout, once (rows of the lower triangle, in order)
            self._cap = max(self._cap, 2 * (m + 1))
            self._buf = np.zeros(_packed_len(self._cap))
            self._buf[: _packed_len(m)] = D[np.tril_indices(m)]
            self._dense = None
        if m + 1 > self._cap:
            cap = max(2 * self._cap, m + 1)
            grown = np.zeros(_packed_len(cap))
            grown[: _packed_len(m)] = self._packed()
            self._buf, self._cap = grown, cap
        start = _packed_len(m)
        self._buf[start : start + m] = column
        self._buf[start + m] = diagonal
        self._m = m + 1

    def reserve(self, size: int) -> None:
        """Room for ``size`` rows in the packed buffer (no change while dense), so that a
        compiled loop can border the matrix in place."""
        self.flush()
        if self._dense is None and size > self._cap:
            cap = max(2 * self._cap, size)
            grown = np.zeros(_packed_len(cap))
            grown[: _packed_len(self._m)] = self._packed()
            self._buf, self._cap = grown, cap

    @property
    def buffer(self) -> np.ndarray:
        """The array holding the matrix now: the dense ``(m, m)`` array, or the packed buffer
        (a new one after a growth that reallocates; compiled views of it are bound again)."""
        return self._buf if self._dense is None else self._dense

    def storage(self) -> np.ndarray:
        """The flat buffer the compiled core works on in place: the dense matrix's data (row
        major), or the packed buffer (the lower triangle by rows, row ``r`` from
        ``r (r + 1) / 2``); bound again after :meth:`append` or :meth:`reserve`. The pending
        update applied; the view names this matrix (``owner``, see :meth:`pending_update`)."""
        self.flush()
        view = self._raw_storage().view(_Storage)
        view.owner = self
        return view

    def _raw_storage(self) -> np.ndarray:
        D = self._dense
        if D is None:
            return self._buf
        if not D.flags.c_contiguous:  # a view would be a copy: the update would be lost
            D = self._dense = np.ascontiguousarray(D)
        return D.reshape(-1)

    def _operand(self, v: np.ndarray, name: str) -> np.ndarray:
        v = np.ascontiguousarray(v, dtype=float)
        if v.shape != (self._m,):
            raise ValueError(f"{name} must have length {self._m} (the size), got shape {v.shape}")
        return v

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``P v``."""
        out = np.empty(self._m)
        _linalg.matvec(self.storage(), self._m, self._dense is not None,
                       self._operand(v, "v"), out)
        return out

    def rank_one(self, alpha: float, x: np.ndarray) -> None:
        """``P <- P + alpha x x^T`` in place (dense: both triangles, packed: the lower one)."""
        _linalg.sym_update(self.storage(), self._m, self._dense is not None, float(alpha),
                           self._operand(x, "x"))

    def update_matvec(self, alpha: float, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``P <- P + alpha x x^T``, then ``P v`` (a new array), in one pass over ``P``: the
        bits of :meth:`rank_one` then :meth:`matvec`, for half the memory traffic.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.linalg import PackedSymmetric
        >>> P = PackedSymmetric.scaled_identity(2, 1.0)
        >>> P.update_matvec(1.0, np.array([1.0, 1.0]), np.array([1.0, 0.0]))
        array([2., 1.])
        """
        x, v = self._operand(x, "x"), self._operand(v, "v")
        out = np.empty(self._m)
        _linalg.update_matvec(self.storage(), self._m, self._dense is not None, float(alpha),
                              x, v, out)
        return out

    def inverse_update(self, a: np.ndarray) -> tuple[np.ndarray, float]:
        """``P <- (P^{-1} + a a^T)^{-1}`` by Sherman-Morrison; return ``(P a, s)`` (old ``P``).

        ``s = 1 / (1 + a^T P a)``, so the update is ``P <- P - s (P a)(P a)^T``: a
        matrix-vector product and a rank-one update, ``O(m^2)``.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.linalg import PackedSymmetric
        >>> P = PackedSymmetric(); P.append(np.zeros(0), 2.0); P.append(np.array([0.5]), 1.0)
        >>> M, a = P.matrix(), np.array([1.0, -1.0])
        >>> Pa, s = P.inverse_update(a)
        >>> bool(np.allclose(P.matrix(), np.linalg.inv(np.linalg.inv(M) + np.outer(a, a))))
        True
        """
        Pa = np.empty(self._m)
        s = _linalg.inverse_update(self.storage(), self._m, self._dense is not None,
                                   self._operand(a, "a"), Pa)
        return Pa, s

    def matrix(self) -> np.ndarray:
        """A dense copy of ``P``."""
        self.flush()
        if self._dense is not None:
            return self._dense.copy()
        A = IncrementalCholesky._unpack(self._buf, self._m)
        return A + np.tril(A, -1).T
