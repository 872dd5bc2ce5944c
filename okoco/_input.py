"""The one input boundary: rows of features and targets to float64, and growing buffers.

Learners, dictionaries and the regret tracker all read their input here, so a mistake is worded
the same everywhere and the same promise holds everywhere: **everything is validated before any
state changes**, a batch included (a bad cell fails the whole batch, naming its row).

- A row is a ``dict`` of feature names to numbers (river's format; a missing feature is 0 and a
  feature never seen before gets a new column) or, where the caller allows it, a 1-D array whose
  positions are the features (then every row must have the same length).
- A number is a real scalar: ``bool`` counts as 0/1 and numpy or ``fractions`` numbers are their
  float value. ``None``, strings, bytes, complex numbers, ``Decimal`` and containers are a
  ``TypeError``; NaN, infinities and magnitudes above ``1e150`` (whose square overflows float64)
  are a ``ValueError``.
- A batch is a 2-D array, a list of rows or a DataFrame, each cell checked as a dict's value.
- **One rule for missing values** (``docs/guide/reliability.md``): a feature is absent from a
  row only when a dict leaves its key out (it is 0 then); a missing *value* (NaN, pandas'
  ``NA``, ``None``) is refused wherever it is, a dict's value, an array's cell or a DataFrame's
  cell, naming its row and feature, and nothing is learned (NaN and ``NA`` a ``ValueError``,
  ``None`` a ``TypeError``; pandas stores a numeric column's missing cell as NaN). A DataFrame
  whose missing cells mean "absent" says so with ``X.fillna(0)``.

Buffers grow by capacity doubling (:func:`reserve`; the point store ``okoco.linalg.Rows``),
never ``np.append`` per step.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from okoco._checks import (
    MAX_ABS_VALUE,
    _bad_value,
    _numbers,
    check_array,
    check_target,
    check_value,
    in_row,
    undo_on_error,
)
from okoco._core import _encode

__all__ = ["MAX_ABS_VALUE", "check_value", "check_target", "check_targets", "check_array",
           "reserve", "FeatureMap", "undo_on_error"]


def reserve(buffer: np.ndarray, *shape: int) -> np.ndarray:
    """``buffer`` if it already holds ``shape``, else a zero-padded copy grown by doubling.

    Each axis that is too short becomes ``max(needed, 2 * current)``; the old content is kept.

    Examples
    --------
    >>> import numpy as np
    >>> reserve(np.arange(4.0), 5)
    array([0., 1., 2., 3., 0., 0., 0., 0.])
    >>> reserve(np.ones((2, 2)), 2, 3).shape
    (2, 4)
    """
    old = buffer.shape
    if shape[0] <= old[0] and all(need <= have for need, have in zip(shape[1:], old[1:])):
        return buffer
    new = tuple(have if need <= have else max(need, 2 * have) for need, have in zip(shape, old))
    grown = np.zeros(new + old[len(shape):], dtype=buffer.dtype)
    grown[tuple(slice(0, n) for n in old)] = buffer
    return grown


def check_targets(y, n: int, loss=None) -> list:
    """The ``n`` targets of a batch as floats, each checked by :func:`check_target`; the
    first bad one raises naming its row, before anything is learned.

    Examples
    --------
    >>> check_targets([0.5, 1], 2)
    [0.5, 1.0]
    >>> check_targets([0.5, None], 2)
    Traceback (most recent call last):
    ...
    TypeError: row 1: the target must be a real number, got None (NoneType)
    """
    if type(y) is list and _encode.all_floats(y):  # what np.asarray would hold: y itself
        targets = y
    else:
        targets = np.asarray(y, dtype=object).ravel()
    if len(targets) != n:
        raise ValueError(f"X has {n} rows but y has {len(targets)} targets")
    checked, i = [], 0
    try:  # in_row's wording, without a call per row
        for target in targets:
            checked.append(check_target(target, loss))
            i += 1
    except (TypeError, ValueError) as error:
        raise type(error)(f"row {i}: {error}") from None
    return checked


def _cells(raw: np.ndarray, names: list, *, absent: bool) -> np.ndarray:
    """A batch's cells validated as a new float64 array (``_numbers`` with ``rows=True``); with
    ``absent``, NaN marks an absent cell and is 0 in the result.

    A numeric array is checked in one compiled pass (``_encode.first_bad_cell``, which also
    zeroes the absent cells): numpy's reductions cost more than that for the few rows of a
    small batch. The first bad cell, row by row, raises as in ``_numbers``.
    """
    if raw.dtype.kind not in "biuf" or raw.size == 0:  # cell by cell, or nothing to check
        values = _numbers(raw, names, absent=absent, rows=True)
        if absent:
            values[np.isnan(values)] = 0.0
        return values
    values = raw.astype(float)  # a copy: the caller's array is never written
    bad = _encode.first_bad_cell(values, MAX_ABS_VALUE, absent)
    if bad >= 0:
        i, j = divmod(bad, raw.shape[1])
        error = _bad_value(names[j], raw[i, j].item())
        raise type(error)(f"row {i}: {error}")
    return values


class NewColumns(list):
    """The names of a row's new features, tagged with the kind of row they came from."""

    def __init__(self, names=(), mode: str = "dict"):
        super().__init__(names)
        self.mode = mode


class FeatureMap:
    """Feature names to columns, in first-learned order, and rows to dense vectors.

    Rows are dicts (a missing feature is 0; a new feature gets the next column once the row is
    accepted with :meth:`add`) or 1-D arrays (positions are features; the first array fixes
    the width). One map takes one kind of row: ``mode`` is ``None``, ``"dict"`` or ``"array"``.

    The last dict encoded is remembered (a copy, its vector, the width at the time): test-then-
    train encodes each row twice, for ``predict_one`` and then ``learn_one``, and the second call
    returns the same (read-only) vector when it is the same dict, unchanged, and no column was
    added.

    Examples
    --------
    >>> fm = FeatureMap()
    >>> vec, new = fm.encode({"b": 2.0, "a": 1.0})
    >>> vec, new
    (array([2., 1.]), ['b', 'a'])
    >>> fm.add(new)
    >>> fm.encode({"a": 5.0, "c": 7.0})  # "c" is new: a trailing column, not yet registered
    (array([0., 5., 7.]), ['c'])
    >>> fm.columns
    {'b': 0, 'a': 1}
    """

    #: Saved state (okoco.persistence): the columns and the kind of rows; the last row is a cache.
    _saved_state = {"columns": "dict[int[0,]]", "mode": "str|none", "_last": "cache:None"}

    def __init__(self):
        self.columns: dict = {}
        self.mode: str | None = None
        self._last: tuple | None = None

    def __getstate__(self) -> dict:
        return {"columns": self.columns, "mode": self.mode, "_last": None}

    @property
    def width(self) -> int:
        return len(self.columns)

    @property
    def names(self) -> list:
        """Feature names (dicts) or positions (arrays) in column order."""
        return list(self.columns)

    def add(self, new) -> None:
        """Register the new features of an accepted row (what :meth:`encode` returned)."""
        if self.mode is None and new:
            self.mode = getattr(new, "mode", "dict")
        self._last = None  # the row was learned: the next one is another
        columns = self.columns
        for name in new:
            columns[name] = len(columns)

    def encode(self, x, *, arrays: bool = True) -> tuple[np.ndarray, list]:
        """Validated vector of one row over the known columns then the new ones, and the new names.

        Nothing is registered; pass the names to :meth:`add` once the row is accepted. With
        ``arrays=False`` only dicts are rows (the river learners).
        """
        if isinstance(x, (dict, Mapping)):  # a dict first: the ABC's check costs more
            return self._encode_dict(x)
        if not arrays or isinstance(x, (str, bytes)) or x is None:
            kind = "a dict of features" if not arrays else "a dict or a 1-D array of numbers"
            raise TypeError(f"x must be {kind}, got {type(x).__name__}")
        if self.mode == "dict":
            raise TypeError("this object was fed dicts; got an array")
        raw = np.asarray(x)
        if raw.ndim != 1:
            raise ValueError(f"x must be 1-D, got shape {raw.shape}")
        d = raw.shape[0]
        if self.mode == "array" and d != self.width:
            raise ValueError(f"x has {d} features, expected {self.width}")
        vec = _numbers(raw[None, :], range(d), absent=False, rows=False)[0]
        return vec, NewColumns(() if self.mode == "array" else range(d), "array")

    def _encode_dict(self, x: Mapping) -> tuple[np.ndarray, list]:
        if self.mode == "array":
            raise TypeError("this object was fed arrays; got a dict")
        width = len(self.columns)
        last = self._last
        # The same dict object, unchanged, and no column added since: an equal but different
        # dict may hold values validation must still see (Decimal("1.5") == 1.5).
        if last is not None and last[4] is x and last[2] == width and last[0] == x:
            return last[1], last[3]
        # the common row (known features, plain numbers) in one compiled pass, else cell by cell
        vec, unknown = _encode.known_row(x, self.columns, width, MAX_ABS_VALUE), []
        if vec is None:
            vec, unknown = self._encode_cells(x)
        vec.setflags(write=False)  # handed out again for the same dict: nobody may change it
        self._last = (dict(x), vec, width, unknown, x)
        return vec, unknown

    def _encode_cells(self, x: dict) -> tuple[np.ndarray, list]:
        """Each value checked (the error names its feature), new features in trailing columns."""
        columns = self.columns
        width = len(columns)
        cols, values, unknown = [], [], []
        for name, value in x.items():
            values.append(check_value(name, value))
            col = columns.get(name)
            if col is None:
                if name != name:  # NaN: never found again, each row would add a column
                    raise ValueError(f"feature name {name!r} is not equal to itself (NaN); "
                                     "name features by strings or numbers")
                col = width + len(unknown)
                unknown.append(name)
            cols.append(col)
        vec = np.zeros(width + len(unknown))
        vec[cols] = values
        return vec, unknown

    def encode_many(self, X, *, arrays: bool = True) -> tuple[np.ndarray, list]:
        """Validated ``(n, width + new)`` matrix of a batch, and the new feature names.

        ``X`` is a DataFrame (columns are feature names; NaN, ``NA`` or ``None`` refused), a
        2-D array (positions are features; with ``arrays=False`` its columns are named 0, 1,
        ...), or a list of dicts. Nothing is registered; a bad cell raises naming its row and
        feature.
        """
        if type(X) is np.ndarray:  # the common batches first: no attribute probing
            if not arrays and self.mode != "array":  # columns named by position: one pass
                values = _encode.positional_rows(X, self.columns, MAX_ABS_VALUE)
                if values is not None:  # float64 cells, all fine, the registered columns
                    return values, []
            is_frame, raw = False, X
        elif isinstance(X, (list, tuple)) and X and all(isinstance(x, dict) for x in X):
            return self._encode_dicts(X)
        else:
            is_frame = hasattr(X, "columns") and hasattr(X, "to_numpy")
        if is_frame:  # a column that is not numeric is checked cell by cell
            names = X.columns.tolist()
            raw = X.to_numpy()  # plain numeric columns (the common frame) give a numeric array
            # the common frame in one pass: the registered columns in order (registered names
            # are neither duplicate nor NaN: the check below cannot fail) and float64 cells
            if self.mode != "array":
                values = _encode.named_rows(raw, names, self.columns, MAX_ABS_VALUE, False)
                if values is not None:
                    return values, []
            if len(set(names)) != len(names) or _encode.has_nan_name(names):
                twice = sorted({repr(n) for n in names if names.count(n) > 1 or n != n})
                raise ValueError(f"X has duplicate or NaN column names ({', '.join(twice)}); "
                                 "each feature needs one column")
            if raw.dtype.kind not in "biuf":
                numeric = all(getattr(dtype, "kind", "O") in "biuf" for dtype in X.dtypes)
                # nullable dtypes (Int64, boolean, Float64): <NA> is missing, refused as NaN
                raw = X.to_numpy(dtype=float, na_value=np.nan) if numeric else \
                    X.to_numpy(dtype=object)
        elif type(X) is not np.ndarray:
            raw = np.asarray(X)
        if raw.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {raw.shape}")
        named = is_frame or not arrays
        if not named and self.mode == "dict":
            raise TypeError("this object was fed dicts; got an array")
        if not named and self.mode == "array" and raw.shape[1] != self.width:
            raise ValueError(f"X has {raw.shape[1]} features, expected {self.width}")
        if named and self.mode == "array":
            raise TypeError("this object was fed arrays; got named columns")
        names = names if is_frame else list(range(raw.shape[1]))
        values = _cells(raw, names, absent=False)  # missing cells are refused (module doc)
        if not named:
            return values, NewColumns(() if self.mode == "array" else names, "array")
        if names == list(self.columns):  # the registered columns, in order: no reordering
            return values, []
        new = [name for name in dict.fromkeys(names) if name not in self.columns]
        at = {name: len(self.columns) + j for j, name in enumerate(new)}
        cols = np.array([self.columns.get(name, at.get(name)) for name in names], dtype=np.intp)
        out = np.zeros((raw.shape[0], self.width + len(new)))
        out[:, cols] = values
        return out, new

    def _encode_dicts(self, X) -> tuple[np.ndarray, list]:
        if self.mode == "array":
            raise TypeError("this object was fed arrays; got dicts")
        saved, last = dict(self.columns), self._last
        vecs = []
        try:
            for i, x in enumerate(X):
                vec, new = in_row(i, self._encode_dict, x)
                vecs.append(vec)
                for name in new:  # later rows see the earlier rows' new features
                    self.columns[name] = len(self.columns)
            new = list(self.columns)[len(saved):]
        finally:
            self.columns, self._last = saved, last
        out = np.zeros((len(vecs), len(saved) + len(new)))
        for i, vec in enumerate(vecs):
            out[i, : vec.shape[0]] = vec
        return out, new
