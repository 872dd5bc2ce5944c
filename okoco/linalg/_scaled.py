"""A scaled identity held as its order and scalar (:class:`ScaledIdentity`); see
:mod:`okoco.linalg`."""

from __future__ import annotations

import math

import numpy as np

from okoco.linalg._symmetric import PackedSymmetric


class ScaledIdentity:
    r"""The matrix :math:`c I` of order ``m``, held as ``m`` and :math:`c` (no ``m x m``
    storage): the :math:`A^{-1} = I / \alpha` of an ONS head that takes first-order steps
    (``okoco.learners.ons``: its compiled step computes :math:`A^{-1} z = c z` in ``O(m)``).

    It grows only as an identity does: :meth:`append` takes a zero column and the diagonal
    :math:`c`, and refuses anything else (``ValueError``, nothing changed); :meth:`full` gives
    the same matrix as a :class:`PackedSymmetric`, for a caller about to change it otherwise.
    It has nothing pending (:meth:`flush` does nothing) and saves as its order and scalar.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import ScaledIdentity
    >>> P = ScaledIdentity(2, 0.5)
    >>> P.append(np.zeros(2), 0.5)
    >>> P.size, P.matvec(np.array([1.0, 2.0, 4.0]))
    (3, array([0.5, 1. , 2. ]))
    >>> P.full().matrix()
    array([[0.5, 0. , 0. ],
           [0. , 0.5, 0. ],
           [0. , 0. , 0.5]])
    """

    #: Saved state (okoco.persistence): the order and the scalar, no matrix.
    _saved_state = {"_m": "int[0,] as size", "_scale": "float as scale"}
    _saved_invariants = ("scale > 0 and scale < 1e308",)

    def __init__(self, size: int = 0, scale: float = 1.0):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"size must be an integer >= 0, got {size!r}")
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0.0):
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
        self._m, self._scale = int(size), scale

    @property
    def size(self) -> int:
        """The order ``m``."""
        return self._m

    @property
    def scale(self) -> float:
        """The scalar :math:`c`."""
        return self._scale

    def append(self, column: np.ndarray, diagonal: float) -> None:
        """Border the matrix by a zero ``column`` (length ``m``) and the ``diagonal`` ``c``:
        ``c I`` of order ``m + 1``; any other border is a ``ValueError`` (nothing changed: it
        would no longer be a scaled identity, :meth:`full` first)."""
        column = np.asarray(column, dtype=float)
        if column.shape != (self._m,):
            raise ValueError(f"column must have length {self._m} (the size), got shape "
                             f"{column.shape}")
        if column.any() or float(diagonal) != self._scale:
            raise ValueError(f"a ScaledIdentity grows by a zero column and the diagonal "
                             f"{self._scale!r} only, got diagonal {diagonal!r} and a column with "
                             f"{np.count_nonzero(column)} nonzero entries (convert it first: "
                             "full())")
        self._m += 1

    def flush(self) -> None:
        """Nothing: no update is ever pending."""

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``c v`` (a new array)."""
        v = np.asarray(v, dtype=float)
        if v.shape != (self._m,):
            raise ValueError(f"v must have length {self._m} (the size), got shape {v.shape}")
        return self._scale * v

    def matrix(self) -> np.ndarray:
        """A dense copy, ``c I``."""
        return np.diag(np.full(self._m, self._scale))

    def full(self) -> PackedSymmetric:
        """The same matrix as a :class:`PackedSymmetric` (``O(m^2)`` memory), which any
        update may change."""
        return PackedSymmetric.scaled_identity(self._m, self._scale)

    def __repr__(self) -> str:
        return f"ScaledIdentity(size={self._m}, scale={self._scale!r})"
