"""Numbers checked at the input boundary: feature values, targets and arrays to float64.

One wording everywhere (``okoco._input`` re-exports these; learners, dictionaries and the
regret tracker read their input through it):

- A number is a real scalar: ``bool`` counts as 0/1 and numpy or ``fractions`` numbers are their
  float value. ``None``, strings, bytes, complex numbers, ``Decimal`` and containers are a
  ``TypeError``; NaN, infinities and magnitudes above ``1e150`` (whose square overflows float64)
  are a ``ValueError``.
- A class label (:func:`check_label`) is one hashable value equal to itself: ``None``, a
  container (a list, a tuple, a set, an array) or anything unhashable is a ``TypeError``; NaN
  (a float NaN, numpy's) is a ``ValueError``.
- A batch that fails names its row (:func:`in_row`), and :func:`undo_on_error` restores an
  object's attributes when a batch fails part way (a batch is all or nothing).
"""

from __future__ import annotations

import contextlib
import copy
import math
import numbers
from collections.abc import Collection, Hashable

import numpy as np

__all__ = ["MAX_ABS_VALUE", "check_value", "check_target", "check_label", "check_array",
           "in_row", "undo_on_error"]

# Values beyond this cannot be squared in float64; a kernel would silently return inf/NaN.
MAX_ABS_VALUE = 1e150


def _huge(value) -> str:
    """A number too large for float64, shown briefly (``10**400`` is ``~1e+400``)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, np.timedelta64):
        digits = str(abs(int(value)))
        if len(digits) > 40:
            return f"{'-' if value < 0 else ''}~{digits[0]}e+{len(digits) - 1}"
    try:
        text = repr(value)
    except Exception:  # a repr that fails must not hide the error being worded
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


#: What to do with a missing value (one rule in dicts, arrays and DataFrames: okoco._input).
_MISSING = ("leave the feature out of a dict (an absent feature is 0), or impute it "
            "(e.g. river's preprocessing.StatImputer; X.fillna(0) for a DataFrame)")


def _bad_value(name, value) -> Exception:
    """The error for a feature value that is not a usable number (one wording everywhere)."""
    if type(value).__name__ == "NAType":  # pandas' NA: a missing number, as NaN
        return ValueError(f"feature {name!r} is <NA>, a missing value; {_MISSING}")
    if value is None:  # a missing value too (a TypeError: it is no number at all)
        return TypeError(f"feature {name!r} is None, a missing value; {_MISSING}")
    if isinstance(value, (bool, np.bool_, np.timedelta64, np.datetime64)) or \
            not isinstance(value, numbers.Real):
        # numpy's timedelta64 is registered as an integer, but a duration is no feature value
        return TypeError(f"feature {name!r} has a non-numeric value {_huge(value)} "
                         f"({type(value).__name__}); encode it as a number first")
    try:
        number = float(value)
    except OverflowError:  # an integer or fraction beyond float64
        return ValueError(f"feature {name!r} = {_huge(value)} is too large "
                          f"(|x| > {MAX_ABS_VALUE:g}); scale the features")
    except Exception as error:  # a number type whose float() itself fails
        return TypeError(f"feature {name!r} = {_huge(value)} ({type(value).__name__}) has no "
                         f"float value (float() raised {type(error).__name__}: {error})")
    if number != number:
        return ValueError(f"feature {name!r} is not finite (nan), a missing value; {_MISSING}")
    if not math.isfinite(number):
        return ValueError(f"feature {name!r} is not finite ({number!r}); impute or drop "
                          "non-finite values")
    return ValueError(f"feature {name!r} = {number!r} is too large (|x| > {MAX_ABS_VALUE:g}); "
                      "scale the features")


def check_value(name, value) -> float:
    """Return a feature value as a float, or raise the error that names the feature.

    Examples
    --------
    >>> check_value("rooms", 3), check_value("open", True)
    (3.0, 1.0)
    >>> check_value("price", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: feature 'price' is not finite (nan), a missing value; leave the feature out of
    a dict (an absent feature is 0), or impute it (...)
    """
    if type(value) is float and -MAX_ABS_VALUE <= value <= MAX_ABS_VALUE:
        return value  # the common case, without the checks below (NaN fails the comparison)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, np.timedelta64):
        try:
            number = float(value)
        except Exception:  # too large, or a float() that fails: _bad_value words it
            number = math.inf
        if -MAX_ABS_VALUE <= number <= MAX_ABS_VALUE:
            return number
    raise _bad_value(name, value)


def check_target(y, loss=None, what: str = "the target") -> float:
    """Validate a regression target (for ``loss``, if given) before any state changes.

    Like a feature, a target must be a finite real number of magnitude at most ``1e150``; a
    ``bool`` is refused (a label, not a number). A loss may add its own domain check
    (``loss.check_target``, e.g. labels in {-1, +1}).

    Examples
    --------
    >>> check_target(2)
    2.0
    >>> check_target("2")
    Traceback (most recent call last):
    ...
    TypeError: the target must be a real number, got '2' (str)
    """
    if type(y) is not float or not -MAX_ABS_VALUE <= y <= MAX_ABS_VALUE:
        if isinstance(y, (bool, np.bool_, np.timedelta64)) or not isinstance(y, numbers.Real):
            raise TypeError(f"{what} must be a real number, got {_huge(y)} ({type(y).__name__})")
        try:
            number = float(y)
        except OverflowError:  # an integer or fraction beyond float64
            number = None
        except Exception as error:  # a number type whose float() itself fails
            raise TypeError(f"{what} {_huge(y)} ({type(y).__name__}) has no float value "
                            f"(float() raised {type(error).__name__}: {error})") from None
        if number is not None and not math.isfinite(number):
            raise ValueError(f"{what} is {number!r}; it must be finite")
        if number is None or abs(number) > MAX_ABS_VALUE:
            shown = _huge(y) if number is None else repr(number)
            raise ValueError(f"{what} {shown} is too large (|y| > {MAX_ABS_VALUE:g}); "
                             "rescale the targets")
        y = number
    check = getattr(loss, "check_target", None)
    if check is not None:
        check(y)
    return y


def check_label(y) -> None:
    """Raise unless ``y`` can be a class label of a classifier (one rule for every okoco
    classifier): a single hashable value equal to itself.

    ``None`` is river's "no label"; a container (a tuple, a list, a set, an array) is not a
    single value, and one holding a NaN or a list could never be matched again; NaN never
    equals itself, so two NaN labels would be two classes. ``str``, ``bytes``, numbers, bools,
    numpy scalars, enums and other hashable single values are labels.

    Examples
    --------
    >>> check_label("yes"), check_label(3), check_label(True)
    (None, None, None)
    >>> check_label(([1],))
    Traceback (most recent call last):
    ...
    TypeError: a label must be a single hashable value (a str, int, bool, ...), got ([1],) (tuple)
    >>> check_label(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: the label nan cannot be a class: it is not equal to itself
    """
    kind = type(y)
    if kind is str or kind is int or kind is bool:  # the common labels, without the checks
        return
    if y is None:
        raise TypeError("a label cannot be None; use a str, int or bool for each class")
    if kind is not float and (isinstance(y, Collection) and not isinstance(y, (str, bytes))
                              or not isinstance(y, Hashable)):
        raise TypeError(f"a label must be a single hashable value (a str, int, bool, ...), "
                        f"got {_huge(y)} ({kind.__name__})")
    try:
        hash(y)
        equal = bool(y == y)
    except Exception as error:  # a hash or a comparison that fails: no usable label
        raise TypeError(f"a label must be a single hashable value (a str, int, bool, ...), "
                        f"got {_huge(y)} ({kind.__name__}): {type(error).__name__}: "
                        f"{error}") from None
    if not equal:
        raise ValueError(f"the label {_huge(y)} cannot be a class: it is not equal to itself")


def check_array(X, what: str = "X") -> np.ndarray:
    """``X`` as a float64 array of finite real numbers, or the error naming ``what``.

    Strings, bytes, complex numbers, dates and durations are a ``TypeError`` (numpy would parse
    ``"1.5"`` or drop an imaginary part silently); NaN and infinities a ``ValueError`` naming
    the first bad cell. Object arrays are checked cell by cell.

    Examples
    --------
    >>> check_array([[1, 2], [3, 4]]).dtype
    dtype('float64')
    >>> check_array(["1.5"])
    Traceback (most recent call last):
    ...
    TypeError: X must hold real numbers, got an array of <U3 (strings)
    """
    raw = X if isinstance(X, np.ndarray) else np.asarray(X)
    kind = raw.dtype.kind
    if kind == "O":
        values = np.empty(raw.shape)
        for index, cell in np.ndenumerate(raw):
            values[index] = check_value(f"{what}{list(index)}", cell)
        return values
    if kind not in "biuf":
        names = {"U": "strings", "S": "bytes", "c": "complex numbers", "M": "dates",
                 "m": "durations", "V": "records"}
        raise TypeError(f"{what} must hold real numbers, got an array of {raw.dtype} "
                        f"({names.get(kind, kind)})")
    values = raw.astype(float)
    bad = ~np.isfinite(values)
    if bad.any():
        index = tuple(int(i[0]) for i in np.nonzero(bad))
        raise ValueError(f"{what} must be finite, got {float(values[index])!r} at {list(index)}")
    return values
def _numbers(raw: np.ndarray, names, *, absent: bool, rows: bool) -> np.ndarray:
    """Validate a 2-D array of cells as float64; NaN marks absent cells when ``absent``.

    No per-cell Python loop for numeric arrays; object arrays are checked cell by cell, so a
    string is never parsed as a number. The first bad cell raises, naming its row (if ``rows``)
    and its feature.
    """
    kind = raw.dtype.kind
    if raw.size == 0:
        return np.zeros(raw.shape)
    if kind == "O":
        values = np.empty(raw.shape)
        for (i, j), cell in np.ndenumerate(raw):
            if absent and (cell is None or (type(cell) is float and cell != cell)
                           or type(cell).__name__ == "NAType"):
                values[i, j] = np.nan
                continue
            values[i, j] = in_row(i, check_value, names[j], cell) if rows else \
                check_value(names[j], cell)
        return values
    if kind not in "biuf":  # strings, complex numbers, dates: no cell is a real number
        error = _bad_value(names[0], raw[0, 0])
        raise type(error)(f"row 0: {error}" if rows else str(error))
    values = raw.astype(float)
    magnitude = np.abs(values)
    if magnitude.max() <= MAX_ABS_VALUE:  # every cell a number small enough (NaN fails)
        return values
    # NaN fails every comparison: absent, it passes "not too large"; otherwise "small enough"
    ok = ~(magnitude > MAX_ABS_VALUE) if absent else magnitude <= MAX_ABS_VALUE
    if ok.all():
        return values
    i, j = (int(k[0]) for k in np.nonzero(~ok))
    error = _bad_value(names[j], raw[i, j].item())
    raise type(error)(f"row {i}: {error}" if rows else str(error))


def in_row(i: int, function, *args):
    """``function(*args)``; a ``TypeError``/``ValueError`` it raises gets ``"row i: "`` in front."""
    try:
        return function(*args)
    except (TypeError, ValueError) as error:
        raise type(error)(f"row {i}: {error}") from None


@contextlib.contextmanager
def undo_on_error(obj, shared=()):
    """Restore ``obj``'s attributes as they were if the block raises (a batch is all or nothing).

    The objects in ``shared`` (the user's kernel or loss) are kept, not copied.

    Examples
    --------
    >>> class Counter:
    ...     def __init__(self):
    ...         self.seen = []
    >>> c = Counter()
    >>> try:
    ...     with undo_on_error(c):
    ...         c.seen.append(1)
    ...         raise ValueError("row 1: bad")
    ... except ValueError:
    ...     pass
    >>> c.seen
    []
    """
    saved = copy.deepcopy(obj.__dict__, {id(o): o for o in shared})
    try:
        yield
    except BaseException:
        obj.__dict__.clear()
        obj.__dict__.update(saved)
        raise
