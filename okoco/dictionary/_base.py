"""Shared machinery of the dictionaries: input mapping, atom storage, Nyström features."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["Dictionary"]


def _check_kernel(kernel) -> None:
    if not callable(kernel) or not callable(getattr(kernel, "diag", None)):
        raise TypeError(
            "kernel must be callable as kernel(X, Y) -> (n, m) array and have a diag(X) method, "
            f"got {kernel!r}"
        )


def _real(name: str, value, *, low=None, high=None, low_open=False, high_open=False) -> float:
    """Validate a real parameter against an interval, with a clear message."""
    plain = type(value) is float  # the hot path skips the slow abstract-class check
    if not plain and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    ok = math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        interval = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
        raise ValueError(f"{name} must be finite and in {interval}, got {value!r}")
    return value


def _integer(name: str, value, *, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return int(value)


def _records(X):
    """A DataFrame becomes a list of row dicts keyed by column name; anything else is unchanged."""
    if hasattr(X, "columns") and hasattr(X, "to_dict"):
        return X.to_dict("records")
    return X


class _Rows:
    """Row buffer ``(n, d)`` whose rows and columns both grow by capacity doubling."""

    def __init__(self, n_cols: int = 0, capacity: int = 16):
        self.data = np.zeros((capacity, max(n_cols, 1)))
        self.n = 0
        self.d = n_cols

    def view(self) -> np.ndarray:
        return self.data[: self.n, : self.d]

    def _reserve(self, rows: int, cols: int) -> None:
        r, c = self.data.shape
        if rows <= r and cols <= c:
            return
        while r < rows:
            r *= 2
        while c < cols:
            c *= 2
        new = np.zeros((r, c))
        new[: self.n, : self.d] = self.data[: self.n, : self.d]
        self.data = new

    def add_columns(self, k: int) -> None:
        """Append ``k`` zero columns (a feature unseen so far is 0 for every stored row)."""
        self._reserve(self.n, self.d + k)
        self.data[: self.n, self.d : self.d + k] = 0.0
        self.d += k

    def append(self, row: np.ndarray) -> None:
        self._reserve(self.n + 1, self.d)
        self.data[self.n, : self.d] = row
        self.n += 1

    def keep(self, mask: np.ndarray) -> None:
        kept = self.data[: self.n][mask]
        self.data[: kept.shape[0]] = kept
        self.data[kept.shape[0] : self.n] = 0.0
        self.n = kept.shape[0]


class Dictionary:
    """Base class of the online dictionaries (KORS, ALD, SQUEAK, INK-Estimate).

    A dictionary reads a stream of points one at a time with ``update(x)`` and keeps a weighted
    subset of them, the *atoms*. It owns the mapping from the river world to arrays: ``x`` is a 1-D
    array (fixed length) or a ``dict`` mapping feature names to numbers, in which case a missing
    feature is ``0`` and a feature never seen before extends every stored atom with a ``0``.
    Invalid input raises a ``TypeError`` / ``ValueError`` naming the feature and leaves the
    dictionary unchanged.

    Common attributes: ``size`` (number of atoms), ``indices`` (0-based stream positions of the
    atoms), ``weights`` (the diagonal of ``S S^T``, i.e. the paper's ``1 / p~``), ``atoms`` (the
    stored points, ``(size, d)``), ``n_seen``. From them, the regularized Nyström approximation

    ``K~ = K_{X,I} S (S^T K_{I,I} S + gamma I)^{-1} S^T K_{I,X}``

    is available as explicit features (:meth:`nystrom_features`, ``Z Z^T = K~``) or as a matrix
    (:meth:`approximate_kernel`). ``gamma`` defaults to the dictionary's own regularizer.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import ALD
    >>> ald = ALD(RBF(gamma=1.0), nu=0.1)
    >>> [ald.update(x) for x in ({"a": 0.0}, {"a": 0.01}, {"a": 3.0, "b": 1.0})]
    [True, False, True]
    >>> ald.indices, ald.feature_names
    (array([0, 2]), ['a', 'b'])
    >>> ald.atoms
    array([[0., 0.],
           [3., 1.]])
    >>> ald.nystrom_features([{"a": 3.0, "b": 1.0}]).shape
    (1, 2)
    """

    _nystrom_gamma: float = 0.0

    def __init__(self, kernel):
        if kernel is not None:
            _check_kernel(kernel)
        self.kernel = kernel
        self._mode: str | None = None  # "array" or "dict" once the first point is seen
        self._feature_index: dict = {}
        self._atoms = _Rows()
        self._indices = np.zeros(16, dtype=np.int64)
        self._weights = np.zeros(16)
        self._size = 0
        self.n_seen = 0

    # ------------------------------------------------------------------ public views
    @property
    def size(self) -> int:
        """Number of atoms (distinct stored points)."""
        return self._size

    def __len__(self) -> int:
        return self._size

    @property
    def indices(self) -> np.ndarray:
        """0-based stream positions of the atoms (a copy), in storage order."""
        return self._indices[: self._size].copy()

    @property
    def weights(self) -> np.ndarray:
        """Atom weights ``diag(S S^T)`` (the paper's ``1 / p~``), a copy."""
        return self._weights[: self._size].copy()

    @property
    def atoms(self) -> np.ndarray:
        """The stored points as a ``(size, d)`` array (columns in :attr:`feature_names` order)."""
        return self._atoms.view().copy()

    @property
    def feature_names(self) -> list:
        """Feature names in column order (dict input) or column positions (array input)."""
        if self._mode == "dict":
            return list(self._feature_index)
        return list(range(self._atoms.d))

    # ------------------------------------------------------------------ input mapping
    def _vectorize(self, x) -> tuple[np.ndarray, list]:
        """Map one point to a vector over the known features plus any new ones (not committed)."""
        if isinstance(x, Mapping):
            if self._mode == "array":
                raise TypeError("this dictionary was fed arrays; got a dict")
            index = self._feature_index
            new = [name for name in x if name not in index]
            vec = np.zeros(len(index) + len(new))
            pos = {name: len(index) + j for j, name in enumerate(new)}
            for name, value in x.items():
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise TypeError(f"feature {name!r} must be a real number, got {value!r}")
                value = float(value)
                if not np.isfinite(value):
                    raise ValueError(f"feature {name!r} is not finite ({value!r})")
                vec[index[name] if name in index else pos[name]] = value
            return vec, new
        if isinstance(x, (str, bytes)):
            raise TypeError(f"x must be a dict or a 1-D numeric array, got {type(x).__name__}")
        if self._mode == "dict":
            raise TypeError("this dictionary was fed dicts; got an array")
        try:
            vec = np.array(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"x must be a dict or a 1-D numeric array: {exc}") from None
        if vec.ndim != 1:
            raise ValueError(f"x must be 1-D, got shape {vec.shape}")
        if self._mode == "array" and vec.shape[0] != self._atoms.d:
            raise ValueError(f"x has {vec.shape[0]} features, expected {self._atoms.d}")
        bad = np.flatnonzero(~np.isfinite(vec))
        if bad.size:
            raise ValueError(f"feature {int(bad[0])} is not finite ({vec[bad[0]]!r})")
        return vec, []

    def _commit(self, x, vec: np.ndarray, new: list) -> None:
        """Record the input mode and any new feature names (after validation succeeded)."""
        if self._mode is None:
            self._mode = "dict" if isinstance(x, Mapping) else "array"
            if self._mode == "array":
                self._atoms.add_columns(vec.shape[0])
                self._on_new_features(vec.shape[0])
        if new:
            for name in new:
                self._feature_index[name] = len(self._feature_index)
            self._atoms.add_columns(len(new))
            self._on_new_features(len(new))

    def _on_new_features(self, k: int) -> None:
        """Hook for subclasses storing more points than the atoms (INK-Estimate)."""

    def _padded(self, rows: np.ndarray, width: int) -> np.ndarray:
        if rows.shape[1] == width:
            return rows
        out = np.zeros((rows.shape[0], width))
        out[:, : rows.shape[1]] = rows
        return out

    def _kernel_column(self, vec: np.ndarray) -> np.ndarray:
        atoms = self._atoms.view()
        if atoms.shape[0] == 0:
            return np.zeros(0)
        return np.asarray(self.kernel(self._padded(atoms, vec.shape[0]), vec[None, :]))[:, 0]

    def kernel_column(self, x) -> np.ndarray:
        """Kernel values ``k(atom_j, x)`` between every atom and one point (no state change)."""
        self._require_kernel()
        vec, _ = self._vectorize(x)
        return self._kernel_column(vec)

    def _matrix(self, X) -> np.ndarray:
        """Map a batch (2-D array, list of dicts, or a single point) to rows over known features."""
        X = _records(X)
        if isinstance(X, Mapping):
            X = [X]
        if isinstance(X, Sequence) and len(X) > 0 and isinstance(X[0], Mapping):
            if self._mode == "array":
                raise TypeError("this dictionary was fed arrays; got dicts")
            index = dict(self._feature_index)
            rows = []
            for x in X:
                saved, self._feature_index = self._feature_index, index
                try:
                    vec, new = self._vectorize(x)
                finally:
                    self._feature_index = saved
                for name in new:
                    index[name] = len(index)
                rows.append(vec)
            out = np.zeros((len(rows), len(index)))
            for i, vec in enumerate(rows):
                out[i, : vec.shape[0]] = vec
            return out
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if self._mode is not None and X.shape[1] != self._atoms.d:
            raise ValueError(f"X has {X.shape[1]} features, expected {self._atoms.d}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains non-finite values")
        return X

    def _require_kernel(self) -> None:
        if self.kernel is None:
            raise RuntimeError("this dictionary has no kernel (it was built from kernel columns)")

    # ------------------------------------------------------------------ batch use
    def update_many(self, X) -> np.ndarray:
        """Call :meth:`update` on every row of ``X``; returns the flags.

        ``X`` is a 2-D array, a list of dicts, or a DataFrame (rows become dicts keyed by column).
        """
        X = _records(X)
        if isinstance(X, np.ndarray) and X.ndim == 2:
            return np.array([self.update(row) for row in X], dtype=bool)
        return np.array([self.update(x) for x in X], dtype=bool)

    def update(self, x) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def selection_matrix(self, n: int | None = None) -> np.ndarray:
        """Weighted selection matrix ``S`` (``n x size``), ``S[indices[j], j] = sqrt(weights[j])``.

        ``n`` defaults to ``n_seen``; then ``S S^T`` is the paper's ``t x t`` diagonal.
        """
        n = self.n_seen if n is None else int(n)
        S = np.zeros((n, self._size))
        S[self.indices, np.arange(self._size)] = np.sqrt(self.weights)
        return S

    def nystrom_features(self, X, gamma: float | None = None) -> np.ndarray:
        """Explicit Nyström features ``Z`` with ``Z Z^T = K~`` (regularized Nyström).

        ``Z = K_{X,I} S V diag(e)^{-1/2}`` where ``S^T K_{I,I} S + gamma I = V diag(e) V^T``;
        eigenvalues below ``1e-12 max(e)`` are dropped, so ``gamma = 0`` gives the plain Nyström
        ``K_{X,I} K_{I,I}^+ K_{I,X}`` (duplicates allowed). Cost ``O(n m^2 + m^3)``.

        Parameters
        ----------
        X
            Points (2-D array, list of dicts, or one point).
        gamma
            Nyström regularizer; defaults to the dictionary's own (``alpha`` for KORS, ``gamma``
            for SQUEAK and INK-Estimate, ``0`` for ALD).

        Returns
        -------
        numpy.ndarray
            ``(n, r)`` features, ``r <= size``.
        """
        self._require_kernel()
        gamma = self._nystrom_gamma if gamma is None else _real("gamma", gamma, low=0.0)
        X = self._matrix(X)
        atoms = self._padded(self._atoms.view(), X.shape[1])
        if atoms.shape[0] == 0:
            return np.zeros((X.shape[0], 0))
        sw = np.sqrt(self.weights)
        M = sw[:, None] * np.asarray(self.kernel(atoms, atoms)) * sw[None, :]
        M[np.diag_indices_from(M)] += gamma
        e, V = np.linalg.eigh(M)
        keep = e > 1e-12 * max(e.max(), 0.0) if e.max() > 0 else np.zeros(e.shape, dtype=bool)
        P = V[:, keep] / np.sqrt(e[keep])
        return (np.asarray(self.kernel(X, atoms)) * sw[None, :]) @ P

    def approximate_kernel(self, X, Y=None, gamma: float | None = None) -> np.ndarray:
        """The Nyström approximation ``K~(X, Y) = Z_X Z_Y^T`` (see :meth:`nystrom_features`)."""
        ZX = self.nystrom_features(X, gamma)
        ZY = ZX if Y is None else self.nystrom_features(Y, gamma)
        return ZX @ ZY.T

    # ------------------------------------------------------------------ storage helpers
    def _store(self, index: int, weight: float, vec: np.ndarray | None) -> None:
        m = self._size
        if m == self._indices.shape[0]:
            self._indices = np.concatenate([self._indices, np.zeros(m, dtype=np.int64)])
            self._weights = np.concatenate([self._weights, np.zeros(m)])
        self._indices[m] = index
        self._weights[m] = weight
        if vec is not None:
            self._atoms.append(self._padded(vec[None, :], self._atoms.d)[0])
        self._size = m + 1

    def _keep(self, mask: np.ndarray) -> None:
        m = self._size
        kept = int(mask.sum())
        self._indices[:kept] = self._indices[:m][mask]
        self._weights[:kept] = self._weights[:m][mask]
        if self._atoms.n:
            self._atoms.keep(mask)
        self._size = kept

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self._size}, n_seen={self.n_seen})"
