"""Shared machinery of the dictionaries: atom storage and Nyström features."""

from __future__ import annotations

import abc
import math
from numbers import Integral, Real

import numpy as np

from okoco._input import FeatureMap, reserve, undo_on_error
from okoco._validation import Interval, Protocol, check_param, check_params
from okoco.linalg import Rows

__all__ = ["Dictionary"]

#: The constraint on a dictionary's kernel (``None`` where kernel columns are fed instead).
KERNEL = Protocol("a kernel (callable as kernel(X, Y) -> (n, m), with a diag(X) method)",
                  "diag", callable_object=True)


def _check_kernel(kernel) -> None:
    check_param("kernel", kernel, [KERNEL])


def _real(name: str, value, *, low=None, high=None, low_open=False, high_open=False) -> float:
    """A real parameter in an interval (``check_param`` with an :class:`Interval`)."""
    if type(value) is float and math.isfinite(value) and (  # the per-step fast path
            low is None or (value > low if low_open else value >= low)) and (
            high is None or (value < high if high_open else value <= high)):
        return value
    closed = {(False, False): "both", (True, False): "right", (False, True): "left",
              (True, True): "neither"}[(low_open, high_open)]
    return check_param(name, value, [Interval(Real, low, high, closed=closed)])


def _integer(name: str, value, *, low: int = 1) -> int:
    return check_param(name, value, [Interval(Integral, low, None, closed="left")])


class Dictionary(abc.ABC):
    """Base class of the online dictionaries (KORS, ALD, SQUEAK, INK-Estimate).

    A dictionary reads a stream of points one at a time with ``update(x)`` and keeps a weighted
    subset of them, the *atoms*. ``x`` is a 1-D array (fixed length) or a ``dict`` mapping feature
    names to numbers, in which case a missing feature is ``0`` and a feature never seen before
    extends every stored atom with a ``0``. Invalid input raises a ``TypeError`` / ``ValueError``
    naming the feature (and the row, in :meth:`update_many`) and leaves the dictionary unchanged;
    :meth:`update_many` is all or nothing.

    A subclass implements ``_update_vec(vec, new)``: one step on a validated vector, calling
    :meth:`_commit` with the new feature names before it changes anything else.

    Common attributes: ``size`` (number of atoms), ``indices`` (0-based stream positions of the
    atoms), ``weights`` (the diagonal of ``S S^T``, i.e. the paper's ``1 / p~``), ``atoms`` (the
    stored points, ``(size, d)``), ``n_seen``. From them, the regularized Nyström approximation

    ``K~ = K_{X,I} S (S^T K_{I,I} S + alpha I)^{-1} S^T K_{I,X}``

    is available as explicit features (:meth:`nystrom_features`, ``Z Z^T = K~``) or as a matrix
    (:meth:`approximate_kernel`). ``alpha`` defaults to the dictionary's own regularizer.

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

    _parameter_constraints: dict = {"kernel": [None, KERNEL]}

    #: Saved state of every dictionary (okoco.persistence); subclasses add theirs.
    _saved_state: dict = {
        "kernel": "kernel|none", "_features": "obj:FeatureMap as features",
        "_atoms": "obj:Rows as atoms", "_indices": "array(>=size) int64 as indices",
        "_weights": "array(>=size) float64 as weights", "_size": "int[0,] as size",
        "n_seen": "int[0,]",
    }

    def __init__(self, kernel, **params):
        """Keep and check the parameters (``_parameter_constraints``), then an empty state."""
        self.kernel = kernel
        for name, value in params.items():
            setattr(self, name, value)
        check_params(self)
        if "seed" in params:
            self._rng = np.random.default_rng(self.seed)
        self._features = FeatureMap()
        self._atoms = Rows()
        self._indices = np.zeros(16, dtype=np.int64)
        self._weights = np.zeros(16)
        self._size = 0
        self.n_seen = 0

    # ------------------------------------------------------------------ public views
    @property
    def _nystrom_alpha(self) -> float:
        """The regularizer :meth:`nystrom_features` uses by default."""
        return self.alpha

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
        return self._features.names

    # ------------------------------------------------------------------ input
    def update(self, x) -> bool:
        """Process one point (a dict or a 1-D array); return whether it joined the dictionary."""
        vec, new = self._features.encode(x)
        return self._update_vec(vec, new)

    def update_many(self, X) -> np.ndarray:
        """Call :meth:`update` on every row of ``X``; returns the flags.

        ``X`` is a 2-D array, a list of dicts, or a DataFrame (columns are feature names). The
        whole batch is validated first, and on any error nothing is kept.
        """
        V, new = self._features.encode_many(X)
        with undo_on_error(self, shared=(self.kernel,)):
            return np.array([self._update_vec(v, new if i == 0 else [])
                             for i, v in enumerate(V)], dtype=bool)

    @abc.abstractmethod
    def _update_vec(self, vec: np.ndarray, new: list) -> bool:
        """One step on a validated vector; :meth:`_commit` ``new`` before changing anything."""

    def _commit(self, vec: np.ndarray, new: list) -> None:
        """Register the new features of an accepted point; atoms get 0 for them."""
        if new:
            self._features.add(new)
            self._atoms.add_columns(len(new))

    def _kernel_column(self, vec: np.ndarray) -> np.ndarray:
        return np.asarray(self._atoms.kernel_row(self.kernel, vec))

    def kernel_column(self, x) -> np.ndarray:
        """Kernel values ``k(atom_j, x)`` between every atom and one point (no state change)."""
        self._require_kernel()
        return self._kernel_column(self._features.encode(x)[0])

    def _points(self, X) -> np.ndarray:
        """One point or a batch as validated rows over the known features then any new ones."""
        if isinstance(X, dict):
            return self._features.encode(X)[0][None, :]
        if not hasattr(X, "columns") and not (
                isinstance(X, (list, tuple)) and X and isinstance(X[0], dict)):
            X = np.asarray(X)
            if X.ndim == 1:
                return self._features.encode(X)[0][None, :]
        return self._features.encode_many(X)[0]

    def _require_kernel(self) -> None:
        if self.kernel is None:
            raise RuntimeError("this dictionary has no kernel (it was built from kernel columns)")

    def selection_matrix(self, n: int | None = None) -> np.ndarray:
        """Weighted selection matrix ``S`` (``n x size``), ``S[indices[j], j] = sqrt(weights[j])``.

        ``n`` defaults to ``n_seen``; then ``S S^T`` is the paper's ``t x t`` diagonal.
        """
        n = self.n_seen if n is None else int(n)
        S = np.zeros((n, self._size))
        S[self.indices, np.arange(self._size)] = np.sqrt(self.weights)
        return S

    def nystrom_features(self, X, alpha: float | None = None) -> np.ndarray:
        """Explicit Nyström features ``Z`` with ``Z Z^T = K~`` (regularized Nyström).

        ``Z = K_{X,I} S V diag(e)^{-1/2}`` where ``S^T K_{I,I} S + alpha I = V diag(e) V^T``;
        eigenvalues below ``1e-12 max(e)`` are dropped, so ``alpha = 0`` gives the plain Nyström
        ``K_{X,I} K_{I,I}^+ K_{I,X}`` (duplicates allowed). Cost ``O(n m^2 + m^3)``.

        Parameters
        ----------
        X
            Points (2-D array, list of dicts, or one point).
        alpha
            Nyström regularizer; defaults to the dictionary's own ``alpha`` (for ALD its Gram
            loading, 0 by default).

        Returns
        -------
        numpy.ndarray
            ``(n, r)`` features, ``r <= size``.
        """
        self._require_kernel()
        alpha = self._nystrom_alpha if alpha is None else _real("alpha", alpha, low=0.0)
        X = self._points(X)
        atoms = self._atoms.padded(X.shape[1])
        if atoms.shape[0] == 0:
            return np.zeros((X.shape[0], 0))
        sw = np.sqrt(self.weights)
        M = sw[:, None] * np.asarray(self.kernel(atoms, atoms)) * sw[None, :]
        M[np.diag_indices_from(M)] += alpha
        e, V = np.linalg.eigh(M)
        keep = e > 1e-12 * max(e.max(), 0.0) if e.max() > 0 else np.zeros(e.shape, dtype=bool)
        P = V[:, keep] / np.sqrt(e[keep])
        return (np.asarray(self.kernel(X, atoms)) * sw[None, :]) @ P

    def approximate_kernel(self, X, Y=None, alpha: float | None = None) -> np.ndarray:
        """The Nyström approximation ``K~(X, Y) = Z_X Z_Y^T`` (see :meth:`nystrom_features`)."""
        ZX = self.nystrom_features(X, alpha)
        ZY = ZX if Y is None else self.nystrom_features(Y, alpha)
        return ZX @ ZY.T

    # ------------------------------------------------------------------ storage helpers
    def _store(self, index: int, weight: float, vec: np.ndarray | None) -> None:
        m = self._size
        self._indices = reserve(self._indices, m + 1)
        self._weights = reserve(self._weights, m + 1)
        self._indices[m] = index
        self._weights[m] = weight
        if vec is not None:
            self._atoms.append(vec)
        self._size = m + 1

    def _drop(self, position: int) -> None:
        """Remove the atom at ``position`` (storage order); the others keep their order."""
        m = self._size
        self._indices[position : m - 1] = self._indices[position + 1 : m]  # (numpy: overlap
        self._weights[position : m - 1] = self._weights[position + 1 : m]  # is safe)
        if self._atoms.n:  # atoms are stored unless the dictionary is fed kernel columns
            keep = np.ones(m, dtype=bool)
            keep[position] = False
            self._atoms.keep(keep)
        self._size = m - 1

    def _keep(self, mask: np.ndarray) -> None:
        m = self._size
        kept = int(mask.sum())
        self._indices[:kept] = self._indices[:m][mask]
        self._weights[:kept] = self._weights[:m][mask]
        if self._atoms.n:  # atoms are stored unless the dictionary is fed kernel columns
            self._atoms.keep(mask)
        self._size = kept

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self._size}, n_seen={self.n_seen})"
