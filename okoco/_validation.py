"""Parameter constraints, declared once per class and checked by one function.

The model is scikit-learn's ``_parameter_constraints``: a public class lists, for each constructor
parameter, the values it accepts, and :func:`check_params` checks them all before the object keeps
any state. A value of a type that no constraint accepts is a ``TypeError``; a value of an accepted
type that no constraint allows is a ``ValueError``. Both messages have one shape everywhere::

    KONS: alpha must be a real number > 0, got 'x' (str)

Constraints
-----------
:class:`Interval`
    a real (``numbers.Real``) or integer (``numbers.Integral``) number in a range; booleans are
    never numbers here, and NaN and infinities are outside every range;
:class:`Options`
    one of a few values (strings, usually);
:class:`Protocol`
    an object with the named methods (a kernel, a loss, a comparator);
``None``
    the value ``None`` itself;
``"callable"``, ``"boolean"``, ``"seed"``
    a callable; ``True``/``False``; ``None``, an integer >= 0 or a ``numpy.random.Generator``.

Examples
--------
>>> from numbers import Real
>>> from okoco._validation import Interval, Options, check_param
>>> check_param("alpha", 2, [Interval(Real, 0, None, closed="neither")], owner="KONS")
2.0
>>> check_param("alpha", "x", [Interval(Real, 0, None, closed="neither")], owner="KONS")
Traceback (most recent call last):
...
TypeError: KONS: alpha must be a real number > 0, got 'x' (str)
>>> check_param("rule", "median", [Options({"min", "max"})], owner="SQUEAK")
Traceback (most recent call last):
...
ValueError: SQUEAK: rule must be one of 'max', 'min', got 'median'
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["Interval", "Options", "Protocol", "check_param", "check_params", "constraints_of"]


class Interval:
    """Numbers of type ``kind`` (``numbers.Real`` or ``numbers.Integral``) between two bounds.

    ``None`` for a bound means unbounded; ``closed`` is ``"both"``, ``"left"``, ``"right"`` or
    ``"neither"``. Accepted values are returned as ``float`` (or ``int``).
    """

    def __init__(self, kind: type, left, right, *, closed: str = "both"):
        self.kind = kind
        self.left, self.right, self.closed = left, right, closed

    def accepts_type(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return False
        return isinstance(value, self.kind)

    def convert(self, value):
        """The value as ``float``/``int`` if it is in the interval, else ``None``."""
        if self.kind is numbers.Integral:
            value = int(value)
        else:
            try:
                value = float(value)
            except OverflowError:  # an integer beyond float64 is out of every finite range
                return None
            if not math.isfinite(value):
                return None
        left_ok = self.left is None or (
            value >= self.left if self.closed in ("both", "left") else value > self.left)
        right_ok = self.right is None or (
            value <= self.right if self.closed in ("both", "right") else value < self.right)
        return value if left_ok and right_ok else None

    def __str__(self) -> str:
        noun = "an integer" if self.kind is numbers.Integral else "a real number"
        low = "" if self.left is None else (
            f">= {self.left:g}" if self.closed in ("both", "left") else f"> {self.left:g}")
        high = "" if self.right is None else (
            f"<= {self.right:g}" if self.closed in ("both", "right") else f"< {self.right:g}")
        if low and high:
            lo = "[" if self.closed in ("both", "left") else "("
            hi = "]" if self.closed in ("both", "right") else ")"
            return f"{noun} in {lo}{self.left:g}, {self.right:g}{hi}"
        return f"{noun} {low or high}".rstrip()


class Options:
    """One of the given values (compared with ``==``, of the same type), e.g. policy names."""

    def __init__(self, values, description: str = "one of"):
        self.values = frozenset(values)
        self.description = description

    def accepts_type(self, value) -> bool:
        return any(type(value) is type(v) for v in self.values)

    def convert(self, value):
        return value if value in self.values else None

    def __str__(self) -> str:
        names = ", ".join(repr(v) for v in sorted(self.values, key=repr))
        if self.description == "one of":
            return f"one of {names}"
        return f"{self.description} ({names})"


class Protocol:
    """Any object with the given methods, e.g. a kernel: ``Protocol("a kernel", "diag")``.

    ``callable_object=True`` also requires the object itself to be callable.
    """

    def __init__(self, description: str, *methods: str, callable_object: bool = False):
        self.description = description
        self.methods = methods
        self.callable_object = callable_object

    def accepts_type(self, value) -> bool:
        if isinstance(value, type):  # the class itself (kernel=RBF): its methods are unbound
            return False
        if self.callable_object and not callable(value):
            return False
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def convert(self, value):
        return value

    def __str__(self) -> str:
        return self.description


_NAMED = {
    "callable": ("a callable", callable),
    "boolean": ("True or False", lambda v: isinstance(v, (bool, np.bool_))),
    "seed": ("None, an integer >= 0 or a numpy Generator, BitGenerator or SeedSequence",
             lambda v: v is None or isinstance(v, (np.random.Generator, np.random.BitGenerator,
                                                   np.random.SeedSequence))
             or (isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)))),
}


def _describe(constraints) -> str:
    parts = ["None" if c is None else _NAMED[c][0] if isinstance(c, str) else str(c)
             for c in constraints]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def check_param(name: str, value, constraints, *, owner: str = ""):
    """Check one parameter; return it (numbers as ``float``/``int``) or raise.

    ``TypeError`` when no constraint accepts the value's type, ``ValueError`` when one does
    but the value is out of range. ``owner`` (a class name) starts the message.
    """
    typed = False
    for c in constraints:
        if c is None:
            if value is None:
                return None
            continue
        if isinstance(c, str):
            if _NAMED[c][1](value):
                if c == "seed" and isinstance(value, numbers.Integral) and value < 0:
                    typed = True
                    continue
                return value
            continue
        if c.accepts_type(value):
            typed = True
            converted = c.convert(value)
            if converted is not None:
                return converted
    where = f"{owner}: " if owner else ""
    if typed:
        raise ValueError(f"{where}{name} must be {_describe(constraints)}, got {_shown(value)}")
    if isinstance(value, type):
        raise TypeError(f"{where}{name} must be {_describe(constraints)}, got the class "
                        f"{value.__name__} itself; pass an instance, e.g. {value.__name__}()")
    raise TypeError(f"{where}{name} must be {_describe(constraints)}, got {_shown(value)} "
                    f"({type(value).__name__})")


def _shown(value) -> str:
    """``repr(value)`` in at most 60 characters (``10**400`` is ``~1e+400``)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        digits = len(str(abs(int(value)))) if abs(int(value)) < 10**4000 else 4001
        if digits > 40:
            return f"{'-' if value < 0 else ''}~1e+{digits - 1}" if digits <= 4000 else \
                "an integer of more than 4000 digits"
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def constraints_of(cls: type) -> dict:
    """The ``_parameter_constraints`` of a class and its parents (a subclass's entry wins)."""
    constraints: dict = {}
    for klass in reversed(cls.__mro__):
        constraints.update(vars(klass).get("_parameter_constraints", {}))
    return constraints


def check_params(obj, *, convert: bool = True) -> None:
    """Check every parameter an object's class declares in ``_parameter_constraints``.

    The parameters are read from the attributes of the same name (set by ``__init__`` before the
    call), all checked before any is written back; with ``convert`` the numbers are written back
    as ``float``/``int``. Constraints of parent classes are included (a subclass's entry wins).
    """
    constraints = constraints_of(type(obj))
    owner = type(obj).__name__
    checked = {name: check_param(name, getattr(obj, name), allowed, owner=owner)
               for name, allowed in constraints.items()}
    if convert:
        for name, value in checked.items():
            setattr(obj, name, value)
