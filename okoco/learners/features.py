"""River ``dict`` rows to dense float vectors, and the growing store of past points.

Features are mapped to columns in the order they are first *learned*; a feature that is
missing from a row is 0, so features may appear and vanish and key order never matters.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

# Values beyond this cannot be squared in float64; a kernel would silently return inf/NaN.
MAX_ABS_VALUE = 1e150


def check_value(name, value) -> float:
    """Return ``value`` as a float, or raise an error that names the feature.

    Booleans count as 0/1 and numpy scalars are accepted; ``None``, strings and other
    objects raise ``TypeError``; NaN, infinities and magnitudes above ``1e150`` (whose
    square overflows) raise ``ValueError``.

    Examples
    --------
    >>> check_value("rooms", 3), check_value("open", True)
    (3.0, 1.0)
    >>> check_value("price", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: feature 'price' is nan; impute or drop non-finite values
    """
    if type(value) is float and -MAX_ABS_VALUE <= value <= MAX_ABS_VALUE:
        return value  # the common case, without the checks below (NaN fails the comparison)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if not isinstance(value, numbers.Real):
        raise TypeError(
            f"feature {name!r} has a non-numeric value {value!r} ({type(value).__name__}); "
            "encode it as a number first"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"feature {name!r} is {value!r}; impute or drop non-finite values")
    if abs(value) > MAX_ABS_VALUE:
        raise ValueError(f"feature {name!r} = {value!r} is too large (|x| > {MAX_ABS_VALUE:g})")
    return value


def check_target(y, loss) -> float:
    """Validate a regression target for ``loss``; raise before any state changes.

    Like a feature, a target must be finite and at most ``1e150`` in magnitude (its squared
    loss would overflow).

    Examples
    --------
    >>> from okoco.losses import Squared
    >>> check_target(2, Squared())
    2.0
    >>> check_target("2", Squared())
    Traceback (most recent call last):
    ...
    TypeError: the target must be a real number, got '2' (str)
    """
    check = getattr(loss, "check_target", None)
    if check is not None:
        check(y)
    if type(y) is float and -MAX_ABS_VALUE <= y <= MAX_ABS_VALUE:
        return y  # the common case (NaN fails the comparison)
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Real):
        raise TypeError(f"the target must be a real number, got {y!r} ({type(y).__name__})")
    y = float(y)
    if not math.isfinite(y):
        raise ValueError(f"the target is {y!r}; it must be finite")
    if abs(y) > MAX_ABS_VALUE:
        raise ValueError(f"the target {y!r} is too large (|y| > {MAX_ABS_VALUE:g})")
    return y


class FeatureMap:
    """Assigns a column to each feature name, in first-learned order.

    The last row mapped is remembered (a copy of the dict, the vector, the width at the time):
    test-then-train maps each row twice, for ``predict_one`` and then ``learn_one``, and the
    second call returns the same vector when the dict compares equal and no column was added
    in between. The vector must be treated as read-only.

    Examples
    --------
    >>> fm = FeatureMap()
    >>> fm.vector({"b": 2.0, "a": 1.0}, register=True)
    array([2., 1.])
    >>> fm.vector({"a": 5.0, "c": 7.0}, register=False)  # "c" is new: a temporary column
    array([0., 5., 7.])
    >>> fm.columns
    {'b': 0, 'a': 1}
    """

    def __init__(self):
        self.columns: dict = {}
        self._last: tuple | None = None

    def __getstate__(self) -> dict:
        return {"columns": self.columns, "_last": None}

    @property
    def width(self) -> int:
        return len(self.columns)

    def vector(self, x: dict, *, register: bool) -> np.ndarray:
        """Dense vector of ``x``; unknown features go after the known columns.

        With ``register=False`` (prediction) unknown features are placed in temporary trailing
        columns, so the stored points (0 there) are compared correctly without any state change.
        """
        if not isinstance(x, dict):
            raise TypeError(f"x must be a dict of features, got {type(x).__name__}")
        columns = self.columns
        width = len(columns)
        last = self._last
        if last is not None and last[2] == width and last[0] == x:
            if register:
                for name in last[3]:
                    columns[name] = len(columns)
                self._last = None  # the columns changed if there were unknown names
            return last[1]
        cols, values, unknown = [], [], []
        for name, value in x.items():  # validate everything before registering anything
            values.append(check_value(name, value))
            col = columns.get(name)
            if col is None:
                col = width + len(unknown)
                unknown.append(name)
            cols.append(col)
        if register:
            for name in unknown:
                columns[name] = len(columns)
        vec = np.zeros(width + len(unknown))
        vec[cols] = values
        self._last = None if register else (dict(x), vec, width, unknown)
        return vec

    def indices(self, names, *, register: bool) -> np.ndarray:
        """Column index of each name; unknown names get trailing (or new) columns."""
        out, next_free = [], self.width
        for name in names:
            if name in self.columns:
                out.append(self.columns[name])
            elif register:
                self.columns[name] = len(self.columns)
                out.append(self.columns[name])
            else:
                out.append(next_free)
                next_free += 1
        return np.asarray(out, dtype=np.intp)


class PointStore:
    """Past points and per-point scalars in buffers that double, never ``np.append``.

    With ``max_size`` the store is a ring: once full, each new point overwrites the oldest
    (NORMA's truncation). Sums over points do not depend on their order, so the ring is never
    rotated.

    Parameters
    ----------
    fields
        Names of the per-point float arrays to keep beside the points (e.g. coefficients).
    max_size
        Optional bound on the number of points kept.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import Linear
    >>> store = PointStore(fields=("coef",), max_size=2)
    >>> for i in range(3):
    ...     _ = store.append(np.array([float(i), 1.0]), coef=0.5 * i)
    >>> store.points  # the ring overwrote the oldest point
    array([[2., 1.],
           [1., 1.]])
    >>> store.field("coef"), store.kernel_row(Linear(), np.array([1.0, 1.0]))
    (array([1. , 0.5]), array([3., 2.]))
    """

    def __init__(self, fields: tuple[str, ...] = (), max_size: int | None = None):
        self.max_size = max_size
        self.size = 0  # points held
        self.n_added = 0  # points ever appended
        self.n_cols = 0  # features in use (the buffer may hold spare zero columns)
        self._X = np.zeros((0, 0))
        self._fields = {name: np.zeros(0) for name in fields}

    @property
    def points(self) -> np.ndarray:
        return self._X[: self.size, : self.n_cols]

    def field(self, name: str) -> np.ndarray:
        """A view of one per-point array over the points held (writes go to the store)."""
        return self._fields[name][: self.size]

    def _grow(self, rows: int, cols: int) -> None:
        old_rows, old_cols = self._X.shape
        if rows <= old_rows and cols <= old_cols:
            return
        new_rows = max(rows, old_rows) if rows <= old_rows else max(rows, 2 * old_rows, 16)
        if self.max_size is not None:
            new_rows = min(new_rows, self.max_size)
        new_cols = max(cols, old_cols) if cols <= old_cols else max(cols, 2 * old_cols)
        X = np.zeros((new_rows, new_cols))
        X[:old_rows, :old_cols] = self._X
        self._X = X
        for name, arr in self._fields.items():
            grown = np.zeros(new_rows)
            grown[: arr.shape[0]] = arr
            self._fields[name] = grown

    def append(self, vec: np.ndarray, **values: float) -> int:
        """Store a point (and its scalars); return its slot."""
        full = self.max_size is not None and self.size == self.max_size
        slot = self.n_added % self.max_size if full else self.size
        self._grow(slot + 1, vec.shape[0])
        self._X[slot, : vec.shape[0]] = vec
        self._X[slot, vec.shape[0] :] = 0.0
        for name, v in values.items():
            self._fields[name][slot] = v
        self.size = max(self.size, slot + 1)
        self.n_cols = max(self.n_cols, vec.shape[0])
        self.n_added += 1
        return slot

    def kernel_row(self, kernel, vec: np.ndarray) -> np.ndarray:
        """``k(x_i, x)`` for every stored point, one vectorised kernel call."""
        if self.size == 0:
            return np.zeros(0)
        X = self._X[: self.size, : self.n_cols]
        width = vec.shape[0]
        if width > self.n_cols:  # features the store has never seen are 0 there
            X = np.pad(X, ((0, 0), (0, width - self.n_cols)))
        elif width < self.n_cols:
            vec = np.pad(vec, (0, self.n_cols - width))
        return kernel(X, vec[None, :])[:, 0]

    def kernel_block(self, kernel, V: np.ndarray) -> np.ndarray:
        """``k(x_i, v_j)`` for every stored point and every row of ``V``: shape (size, len(V))."""
        X = self.points
        width = max(X.shape[1], V.shape[1])
        X = np.pad(X, ((0, 0), (0, width - X.shape[1])))
        V = np.pad(V, ((0, 0), (0, width - V.shape[1])))
        if X.shape[0] == 0:
            return np.zeros((0, V.shape[0]))
        return kernel(X, V)
