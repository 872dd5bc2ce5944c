"""Declared state: the ``_saved_state`` grammar, parsed and checked field by field."""

from __future__ import annotations

import ast
import collections
import math
import re
from typing import Any

import numpy as np

from okoco.persistence._format import (
    _KERNELS,
    _LOSSES,
    _MAX_DEPTH,
    _MISSING,
    _NEW_LOCK,
    _short,
    _version,
)
from okoco.persistence._registry import _OBJECTS, _RIVER_CLASSES, _RIVER_MODULES, _class_path

# The grammar of ``_saved_state`` is documented in the module docstring ("Declared state").

_KIND_WORDS = frozenset({"int", "float", "number", "bool", "str", "none", "rng", "kernel",
                         "loss", "obj", "plain", "river"})

_DTYPES = frozenset({"float64", "int64", "intp", "bool", "int32", "uint8", "uint64"})


class _Kind:
    __slots__ = ("tag", "lo", "hi", "shape", "dtype", "inner", "classes")

    def __init__(self, tag, lo=None, hi=None, shape=(), dtype=None, inner=(), classes=()):
        self.tag, self.lo, self.hi, self.shape, self.dtype, self.inner = (tag, lo, hi, shape,
                                                                          dtype, inner)
        self.classes = classes

    def __str__(self) -> str:
        if self.tag == "array":
            return f"array({', '.join(s for s, _, _ in self.shape)}) {self.dtype}"
        if self.tag in ("list", "dict"):
            return f"{self.tag}[{'|'.join(map(str, self.inner))}]"
        if self.classes:
            return f"obj:{','.join(self.classes)}"
        if self.tag == "int" and (self.lo or self.hi):
            return f"int[{self.lo and ast.unparse(self.lo)},{self.hi and ast.unparse(self.hi)}]"
        return self.tag


class _Field:
    __slots__ = ("attr", "name", "optional", "kinds", "cache", "reset", "rebuilt")

    def __init__(self, attr, name, optional, kinds, cache=False, reset=_MISSING, rebuilt=False):
        self.attr, self.name, self.optional, self.kinds = attr, name, optional, kinds
        self.cache, self.reset, self.rebuilt = cache, reset, rebuilt

    def describe(self) -> str:
        return "|".join(map(str, self.kinds))


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def _expr(text: str) -> ast.expr:
    tree = ast.parse(text.strip(), mode="eval").body
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in ("min", "max")):
                raise SyntaxError(f"only min/max may be called in {text!r}")
        elif not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Attribute,
                                   ast.Load, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.USub)):
            raise SyntaxError(f"{type(node).__name__} is not allowed in a shape rule: {text!r}")
    return tree


def _parse_kind(text: str) -> _Kind:
    text = text.strip()
    if text.startswith("array("):
        close = text.rindex(")")
        dtype = text[close + 1:].strip()
        if dtype not in _DTYPES:
            raise SyntaxError(f"unknown dtype {dtype!r}")
        shape = []
        for rule in _split_top(text[6:close], ","):
            if not rule:
                continue
            if rule == "*":
                shape.append((rule, "any", None))
            elif rule.startswith(">="):
                shape.append((rule, ">=", _expr(rule[2:])))
            else:
                shape.append((rule, "==", _expr(rule)))
        return _Kind("array", shape=tuple(shape), dtype=dtype)
    for tag in ("list", "dict"):
        if text.startswith(tag + "[") and text.endswith("]"):
            return _Kind(tag, inner=tuple(_parse_kind(k) for k in _split_top(text[len(tag) + 1:-1],
                                                                              "|")))
    if text.startswith("int[") and text.endswith("]"):
        lo, hi = _split_top(text[4:-1], ",")
        return _Kind("int", lo=_expr(lo) if lo else None, hi=_expr(hi) if hi else None)
    if text.startswith("obj:"):
        names = tuple(n.strip() for n in text[4:].split(","))
        if not all(n.isidentifier() for n in names):
            raise SyntaxError(f"bad class names in {text!r}")
        return _Kind("obj", classes=names)
    if text in _KIND_WORDS:
        return _Kind(text)
    raise SyntaxError(f"unknown kind {text!r}")


def _parse_spec(attr: str, spec: str) -> _Field:
    text = spec.strip()
    if text == "cache" or text.startswith("cache:"):
        reset = {"cache": _MISSING, "cache:None": None, "cache:{}": {},
                 "cache:lock": _NEW_LOCK}[text]
        return _Field(attr, attr, True, (), cache=True, reset=reset)
    rebuilt = text.startswith("rebuilt ")  # optional: what the model's owner rebuilds on load
    if rebuilt:
        text = text[8:]
    optional = rebuilt or text.startswith("opt ")
    if optional and not rebuilt:
        text = text[4:]
    name = attr
    match = re.fullmatch(r"(.*\S)\s+as\s+(\w+)", text)
    if match:
        text, name = match.groups()
    return _Field(attr, name, optional, tuple(_parse_kind(k) for k in _split_top(text, "|")),
                  rebuilt=rebuilt)

_DECLARED: dict[type, dict[str, _Field] | None] = {}


def declared_state(cls: type) -> dict[str, _Field] | None:
    """The parsed ``_saved_state`` of ``cls`` and its bases (``None``: the class declares none).

    Examples
    --------
    >>> from okoco import persistence
    >>> from okoco.linalg import IncrementalCholesky
    >>> fields = persistence.declared_state(IncrementalCholesky)
    >>> fields["_L"].name, fields["_L"].describe()
    ('factor', 'array(capacity * (capacity + 1) // 2) float64')
    """
    if cls in _DECLARED:
        return _DECLARED[cls]
    specs: dict | None = None
    for klass in reversed(cls.__mro__):
        own = vars(klass).get("_saved_state")
        if own is not None:
            specs = {**(specs or {}), **own}
    fields = None
    if specs is not None:
        fields = {}
        for attr, spec in specs.items():
            if spec is None:
                continue
            try:
                fields[attr] = _parse_spec(attr, spec)
            except (SyntaxError, ValueError, KeyError) as error:
                raise TypeError(f"{cls.__qualname__}._saved_state[{attr!r}] = {spec!r} is not a "
                                f"valid declaration: {error}") from None
        names = [f.name for f in fields.values() if not f.cache]
        private = [n for n in names if n.startswith("_")]
        if private:
            raise TypeError(f"{cls.__qualname__}._saved_state saves {', '.join(private)} under a "
                            "private name; give each a stable public name in the file "
                            "('... as NAME')")
        if len(set(names)) != len(names):
            raise TypeError(f"{cls.__qualname__}._saved_state names a field twice")
    _DECLARED[cls] = fields
    return fields


def _eval_dim(node: ast.expr, env: dict, symbols: dict, where: str) -> int:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            value = env[node.id]
            if type(value) is not int:
                raise ValueError(f"{where}: its shape rule needs the integer {node.id}, which is "
                                 f"{_short(value)}")
            return value
        return symbols[node.id]
    if isinstance(node, ast.Attribute):
        value = _field_of(_eval_owner(node.value, env, where), node.attr)
        if type(value) is not int:
            raise ValueError(f"{where}: its shape rule needs the integer {ast.unparse(node)}, "
                             f"which is {_short(value)}")
        return value
    if isinstance(node, ast.UnaryOp):
        return -_eval_dim(node.operand, env, symbols, where)
    if isinstance(node, ast.Call):
        args = [_eval_dim(a, env, symbols, where) for a in node.args]
        return min(args) if node.func.id == "min" else max(args)
    left = _eval_dim(node.left, env, symbols, where)
    right = _eval_dim(node.right, env, symbols, where)
    op = type(node.op)
    if op is ast.Add:
        return left + right
    if op is ast.Sub:
        return left - right
    if op is ast.Mult:
        return left * right
    return left // right if right else 0


def _field_of(owner: Any, name: str) -> Any:
    """The field ``name`` of a decoded object: the attribute its class declares under that name
    (a class without a declaration, river's, by attribute)."""
    fields = declared_state(type(owner))
    attr = next((f.attr for f in fields.values() if f.name == name and not f.cache), None) \
        if fields is not None else name
    return vars(owner).get(attr, _MISSING) if attr is not None else _MISSING


def _eval_owner(node: ast.expr, env: dict, where: str) -> Any:
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Attribute):
        owner = _field_of(_eval_owner(node.value, env, where), node.attr)
        if owner is not _MISSING:
            return owner
    raise ValueError(f"{where}: its shape rule refers to {ast.unparse(node)}, which is not saved")


def _free_names(node: ast.expr, env: dict) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in env
            and n.id not in ("min", "max")
            and not any(isinstance(p, ast.Attribute) and p.value is n for p in ast.walk(node))]


def _check_kind(kind: _Kind, value: Any, env: dict, symbols: dict, where: str) -> str | None:
    """``None`` if ``value`` is of ``kind``, else why not."""
    tag = kind.tag
    if tag == "none":
        return None if value is None else "not None"
    if tag == "int":
        if type(value) is not int:
            return "not an int"
        if not -(2**63) <= value < 2**63:  # every count okoco keeps fits a C long
            return "beyond int64"
        if kind.lo is not None and value < _eval_dim(kind.lo, env, symbols, where):
            return f"below {ast.unparse(kind.lo)}"
        if kind.hi is not None and value > _eval_dim(kind.hi, env, symbols, where):
            return f"above {ast.unparse(kind.hi)}"
        return None
    if tag == "float":
        return None if type(value) is float else "not a float"
    if tag == "number":
        return None if type(value) in (int, float) else "not a number"
    if tag == "bool":
        return None if type(value) is bool else "not a bool"
    if tag == "str":
        return None if type(value) is str else "not a str"
    if tag == "rng":
        return None if isinstance(value, np.random.Generator) else "not a random generator"
    if tag == "kernel":  # a class that declared its stable name (okoco.kernels.Kernel)
        return None if _KERNELS.name_of(type(value)) is not None else "not a kernel"
    if tag == "loss":
        return None if _LOSSES.name_of(type(value)) is not None else "not a loss"
    if tag == "obj":
        cls = type(value)
        if kind.classes and cls.__name__ not in kind.classes:
            return f"a {cls.__name__}, not a {' or '.join(kind.classes)}"
        ok = (_class_path(cls) in _OBJECTS and declared_state(cls) is not None)
        return None if ok else "not a saved okoco object"
    if tag == "plain":
        return None if _plain(value, 0) else "not plain data"
    if tag == "river":
        path = _class_path(type(value))
        return None if path in _RIVER_CLASSES or path.startswith(_RIVER_MODULES) else \
            "not one of river's statistics"
    if tag in ("list", "dict"):
        if type(value) is not (list if tag == "list" else dict):
            return f"not a {tag}"
        items = value if tag == "list" else value.values()
        for item in items:
            reasons = [_check_kind(k, item, env, symbols, where) for k in kind.inner]
            if all(reasons):
                return f"an item is {reasons[0]}"
        if tag == "dict" and not all(_plain(k, 0) for k in value):
            return "a key is not plain data"
        return None
    # array
    if type(value) is not np.ndarray:
        return "not an array"
    if value.dtype != np.dtype(kind.dtype):
        return f"of dtype {value.dtype}, not {kind.dtype}"
    if value.ndim != len(kind.shape):
        return f"of shape {value.shape}, not {len(kind.shape)}-D"
    for axis, ((text, op, node), length) in enumerate(zip(kind.shape, value.shape)):
        if op == "any":
            continue
        if op == "==" and isinstance(node, ast.Name) and node.id not in env:
            bound = symbols.setdefault(node.id, length)
            if bound != length:
                return f"of shape {value.shape}: axis {axis} must be {node.id} = {bound}"
            continue
        for name in _free_names(node, env):
            if name not in symbols:
                raise ValueError(f"{where}: its shape rule uses {name}, which nothing defines")
        want = _eval_dim(node, env, symbols, where)
        if (op == "==" and length != want) or (op == ">=" and length < want):
            return f"of shape {value.shape}: axis {axis} must be {text} = {want}"
    return None

_SCALARS = frozenset({type(None), bool, int, float, str})

#: The float fields that may be non-finite in a saved object: diagnostics of the latest step
#: (NaN before the first). Every other float or number field must be finite.
_MAY_BE_NAN = frozenset({"last_residual", "last_tau", "last_p", "last_q", "last_pivot"})


def _finite(value: Any) -> bool:
    """Whether a float, or the float values of a mapping (per-feature statistics), are finite
    (lists may hold infinite scores)."""
    if type(value) is float:
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(math.isfinite(v) for v in value.values() if type(v) is float)
    return True


def _needs_finite(cls: type, field: _Field, value: Any) -> bool:
    """Whether a float field of ``cls`` must be finite: every one of a learner and its parts
    but the diagnostics above (the regret comparators hold ``C = inf``, unconstrained, and
    NaN before they are fitted) and a label (plain data: only its mappings' values are)."""
    if field.name in _MAY_BE_NAN or cls.__module__.startswith("okoco.regret."):
        return False
    return not (type(value) is float and any(k.tag == "plain" for k in field.kinds))


# the kinds a JSON entry can decode to, by its marker (None: a plain mapping or list)
_DECODES_TO = {
    "__array__": {"array"}, "__padded__": {"array"}, "__obj__": {"obj", "river"},
    "__kernel__": {"kernel"}, "__loss__": {"loss"}, "__generator__": {"rng"},
    "__float__": {"float", "number", "plain"}, "__np__": {"plain"},
    "__bytes__": {"plain"}, "__tuple__": {"plain"}, "__set__": {"plain"},
    "__frozenset__": {"plain"}, "__dict__": {"plain", "dict"}, "__odict__": {"plain", "dict"},
    "__counter__": {"plain", "dict"}, "__defaultdict__": {"plain", "dict"},
}


def _plausible(field: _Field, tree: Any, where: str) -> None:
    """Refuse, before decoding it, a JSON entry no declared kind of ``field`` can come from
    (a list of 100,000 dicts where a float belongs is not built first)."""
    kind = type(tree)
    if kind in _SCALARS:
        return
    tags = {k.tag for k in field.kinds}
    if kind is list:
        ok = bool(tags & {"list", "plain"})
    elif kind is dict:
        marker = next((k for k in tree if k.startswith("__")), None)
        if marker == "__ref__":
            return
        ok = bool(tags & (_DECODES_TO.get(marker, set()) if marker else {"dict", "plain"}))
    else:
        ok = False
    if not ok:
        raise ValueError(f"{where} must be {field.describe()}, got {_short(tree)}")


def _plain(value: Any, depth: int) -> bool:
    if value is None or type(value) in (bool, int, float, str, bytes):
        return True
    if depth > _MAX_DEPTH:
        return False
    if type(value) in (list, tuple, set, frozenset):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict) and type(value) in (dict, collections.Counter,
                                                   collections.OrderedDict,
                                                   collections.defaultdict):
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return isinstance(value, np.generic) and value.dtype.kind in "biuf"


def _check_fields(cls: type, fields: dict[str, _Field], values: dict, where: str) -> None:
    """Raise ``ValueError`` naming the first field of ``values`` that breaks its declaration."""
    symbols: dict = {}
    # the rules name the other fields by their names in the file
    env = {f.name: values[f.attr] for f in fields.values() if not f.cache and f.attr in values}
    # fields other rules refer to (ints, objects) first, then arrays, so free symbols bind from
    # the first array that has them in declaration order
    for field in fields.values():
        if field.cache:
            continue
        if field.attr not in values:
            if field.optional:
                continue
            raise ValueError(f"{where}.{field.name} ({cls.__name__}) is missing: the saved "
                             f"{cls.__name__} does not match this okoco {_version()}'s")
        value = values[field.attr]
        reasons = []
        for kind in field.kinds:
            reason = _check_kind(kind, value, env, symbols, f"{where}.{field.name}")
            if reason is None:
                break
            reasons.append(reason)
        else:
            raise ValueError(f"{where}.{field.name} must be {field.describe()}, got "
                             f"{_short(value)} ({'; '.join(reasons)})")
        if _needs_finite(cls, field, value) and not _finite(value):
            raise ValueError(f"{where}.{field.name} must hold finite numbers only, got "
                             f"{_short(value)} ({cls.__name__} never holds others)")
