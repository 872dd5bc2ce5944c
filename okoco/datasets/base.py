"""The :class:`Dataset` object shared by every data source of :mod:`okoco.datasets`.

A dataset is a finite, ordered sequence of ``(x, y)`` pairs. It is exposed twice, and both views
agree exactly:

* as a river-style stream: ``for x, y in dataset`` yields a ``dict`` of ``float`` features and a
  Python scalar target;
* as arrays: ``X, y, feature_names = dataset.to_arrays()`` with ``X`` a float64 ``(n, d)`` array.

Sparse sources (svmlight / LIBSVM files) yield only the features present on each line; their
arrays hold ``0.0`` for the absent ones, which is what the format means.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["Dataset", "TASKS"]

TASKS = ("regression", "binary", "multiclass")

#: What a lazy loader returns: (X, y, feature_names), ``X`` dense or a scipy CSR matrix.
Loader = Callable[[], tuple[Any, np.ndarray, Sequence[str]]]


class Dataset:
    """A named, finite stream of ``(dict, target)`` pairs that is also available as arrays.

    Parameters
    ----------
    name
        Short name (the registry name for built-in datasets, the file name for files).
    task
        ``"regression"``, ``"binary"`` or ``"multiclass"``.
    X
        Features, a float ``(n, d)`` array or a ``scipy.sparse`` matrix (sparse rows iterate as
        dicts holding only their stored entries), or an object array of numbers, strings (text
        features, for an encoder) and ``None`` (a cell absent from its row's dict, river's
        convention for a missing feature). Give either ``X`` and ``y`` or ``loader``.
    y
        Targets, length ``n``.
    feature_names
        ``d`` names, the keys of the yielded dicts. Defaults to ``"x0", "x1", ...``.
    loader
        A zero-argument callable returning ``(X, y, feature_names)``, called once on first use, so
        that listing or constructing a dataset does not read it.
    n, d
        Sizes announced before loading (``n`` may be ``None`` when unknown); replaced by the real
        sizes once the data are loaded.
    description
        One line for ``okoco datasets``.
    info
        Free-form metadata (for synthetic data: the seed, the noise level and the noise-free
        targets ``"y_clean"``).

    Examples
    --------
    >>> import numpy as np
    >>> ds = Dataset("toy", "regression", X=np.array([[1.0, 2.0], [3.0, 4.0]]),
    ...              y=np.array([0.5, -0.5]), feature_names=["a", "b"])
    >>> ds
    Dataset(name='toy', n=2, d=2, task='regression')
    >>> list(ds)
    [({'a': 1.0, 'b': 2.0}, 0.5), ({'a': 3.0, 'b': 4.0}, -0.5)]
    >>> X, y, names = ds.to_arrays()
    >>> X.shape, names
    ((2, 2), ['a', 'b'])
    """

    def __init__(
        self,
        name: str,
        task: str,
        X: Any = None,
        y: Any = None,
        feature_names: Sequence[str] | None = None,
        *,
        loader: Loader | None = None,
        n: int | None = None,
        d: int | None = None,
        description: str = "",
        info: dict[str, Any] | None = None,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if (X is None) == (loader is None):
            raise TypeError("give either X and y, or a loader, not both and not neither")
        self.name = name
        self.task = task
        self.description = description
        self.info: dict[str, Any] = dict(info or {})
        self._loader = loader
        self._X: Any = None
        self._y: np.ndarray | None = None
        self._names: list[str] | None = None
        self.n = n
        self.d = d
        if X is not None:
            if y is None:
                raise TypeError("X given without y")
            self._set(X, y, feature_names)

    # -- loading ---------------------------------------------------------------------------------

    def _set(self, X: Any, y: Any, feature_names: Sequence[str] | None) -> None:
        if _is_sparse(X):
            import scipy.sparse as sp

            X = sp.csr_matrix(X, dtype=np.float64)
            X.sort_indices()
        elif isinstance(X, np.ndarray) and X.dtype == object:
            X = _mixed(X)
        else:
            X = np.asarray(X, dtype=np.float64)
            if X.ndim == 1:
                X = X.reshape(-1, 1)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got shape {X.shape}")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if feature_names is None:
            feature_names = [f"x{j}" for j in range(X.shape[1])]
        names = [str(f) for f in feature_names]
        if len(names) != X.shape[1]:
            raise ValueError(f"{len(names)} feature names for {X.shape[1]} columns")
        if len(set(names)) != len(names):
            raise ValueError("feature names must be unique")
        self._X, self._y, self._names = X, y, names
        self.n, self.d = int(X.shape[0]), int(X.shape[1])

    def _ensure(self) -> None:
        if self._X is None:
            assert self._loader is not None
            X, y, names = self._loader()
            self._set(X, y, names)
            self._loader = None

    def read(self) -> Dataset:
        """Read the data now (a lazy dataset otherwise reads them at its first use); returns
        the dataset.

        A replay that times its steps reads first, so that the file is not counted as the
        first sample's cost.

        Examples
        --------
        >>> ds = Dataset("lazy", "regression", loader=lambda: ([[1.0], [2.0]], [0.0, 1.0], ["a"]))
        >>> ds.n is None, ds.read().n
        (True, 2)
        """
        self._ensure()
        return self

    @property
    def is_sparse(self) -> bool:
        """Whether rows iterate as sparse dicts (only stored entries). Loads the data."""
        self._ensure()
        return _is_sparse(self._X)

    @property
    def is_mixed(self) -> bool:
        """Whether some cells are text or absent (an object array, see :class:`Dataset`).
        Loads the data."""
        self._ensure()
        return isinstance(self._X, np.ndarray) and self._X.dtype == object

    @property
    def feature_names(self) -> list[str]:
        """The ``d`` feature names, in column order. Loads the data."""
        self._ensure()
        assert self._names is not None
        return list(self._names)

    # -- the two views ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[dict[str, float], Any]]:
        self._ensure()
        X, y, names = self._X, self._y, self._names
        assert y is not None and names is not None
        targets = y.tolist()  # Python scalars of the array's kind (float, int, bool, str)
        if isinstance(X, np.ndarray) and X.dtype == object:  # text and absent cells
            for row, target in zip(X.tolist(), targets, strict=True):
                yield {k: v for k, v in zip(names, row) if v is not None}, target
        elif isinstance(X, np.ndarray):
            # every row has len(names) values (_set checks the width): zip(..., strict=True)
            # would check it again on each row, adding half the cost of making the dict
            for row, target in zip(X.tolist(), targets, strict=True):
                yield dict(zip(names, row)), target
        else:
            indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
            for i, target in enumerate(targets):
                lo, hi = int(indptr[i]), int(indptr[i + 1])
                yield {names[j]: data[k] for k, j in zip(range(lo, hi), indices[lo:hi])}, target

    def __len__(self) -> int:
        if self.n is None:
            self._ensure()
        assert self.n is not None
        return self.n

    def to_arrays(self, sparse: bool = False) -> tuple[Any, np.ndarray, list[str]]:
        """Return ``(X, y, feature_names)``; ``X`` is a float64 ``(n, d)`` array (a copy; an
        object array for a dataset with text or absent cells, see :attr:`is_mixed`).

        Parameters
        ----------
        sparse
            Return ``X`` as a ``scipy.sparse.csr_matrix`` instead (absent entries are zeros).

        Examples
        --------
        >>> import numpy as np
        >>> ds = Dataset("toy", "binary", X=np.eye(2), y=np.array([1, -1]))
        >>> X, y, names = ds.to_arrays()
        >>> X.dtype, y.tolist(), names
        (dtype('float64'), [1, -1], ['x0', 'x1'])
        """
        self._ensure()
        assert self._y is not None and self._names is not None
        X = self._X
        if sparse:
            import scipy.sparse as sp

            X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        elif _is_sparse(X):
            X = X.toarray()
        else:
            X = X.copy()
        return X, self._y.copy(), list(self._names)

    def take(self, k: int) -> list[tuple[dict[str, float], Any]]:
        """The first ``k`` pairs of the stream, as a list.

        Examples
        --------
        >>> import numpy as np
        >>> Dataset("toy", "regression", X=np.arange(3.0), y=np.zeros(3)).take(1)
        [({'x0': 0.0}, 0.0)]
        """
        out = []
        for i, pair in enumerate(self):
            if i >= k:
                break
            out.append(pair)
        return out

    def __repr__(self) -> str:
        return f"Dataset(name={self.name!r}, n={self.n}, d={self.d}, task={self.task!r})"


def infer_task(y: np.ndarray) -> str:
    """Guess the task from targets: strings or booleans or two values are classification.

    Numeric targets with more than two distinct values are taken as regression; say
    ``task="multiclass"`` explicitly for integer class codes.

    Examples
    --------
    >>> infer_task(np.array([1.0, -1.0, 1.0])), infer_task(np.array([0.1, 0.2, 0.3]))
    ('binary', 'regression')
    >>> infer_task(np.array(["a", "b", "c"]))
    'multiclass'
    """
    y = np.asarray(y)
    n_labels = len(np.unique(y)) if y.size else 0
    if y.dtype.kind in "biufc" and y.dtype.kind != "b":
        return "binary" if n_labels == 2 else "regression"
    return "binary" if n_labels <= 2 else "multiclass"


def tidy_labels(y: np.ndarray, task: str) -> np.ndarray:
    """Targets in their natural dtype: float for regression, int for integral class labels.

    Examples
    --------
    >>> tidy_labels(np.array([1.0, -1.0]), "binary").tolist()
    [1, -1]
    >>> tidy_labels(np.array([1, 2]), "regression").dtype
    dtype('float64')
    """
    y = np.asarray(y)
    if task == "regression":
        return y.astype(np.float64)
    if y.dtype.kind == "f" and y.size and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
        return y.astype(np.int64)
    return y


def _mixed(X: np.ndarray) -> np.ndarray:
    """An object array of features: numbers as floats, text as ``str``, ``None`` kept."""
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    out = np.empty(X.shape, dtype=object)
    for index, v in np.ndenumerate(X):
        v = v if v is None or isinstance(v, str) else float(v)
        out[index] = None if v != v else v  # NaN: absent, as None
    return out


def _is_sparse(X: Any) -> bool:
    """``scipy.sparse.issparse(X)``, without importing scipy.sparse for other inputs (about
    20 ms: a sparse matrix has loaded it already)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(X))
