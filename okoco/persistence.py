r"""Save and load learners, and the checkpoints of a replay, without pickle.

A saved learner is **one** ``.npz`` archive (``numpy.savez``) that holds

- every numpy array of the learner's declared state, under the names ``a0``, ``a1``, ...; the
  trailing all-zero rows of an array (the spare capacity of the doubling buffers) are not
  written but restored as zeros on loading, so the file grows with the samples seen, not with
  the capacity, and the loaded learner is still the same object graph, buffer for buffer, bit
  for bit;
- a JSON document in the 0-d unicode array ``__okoco__`` with the format name
  (``"okoco-model"``), the format version, the okoco version that wrote it, the class path
  (``"okoco.learners.kons.KONS"``), the constructor parameters and the rest of the declared
  state (floats, counters, feature names, the random generator's ``bit_generator.state``), where
  each array is a reference ``{"__array__": "a3"}`` (or ``{"__padded__": "a3", "rows": 512}``
  when the archive holds only the leading rows of an array of 512 rows).

Loading reads the archive with ``allow_pickle=False`` and builds objects only from an
allow-list: the classes registered with :func:`register` (the okoco learners and their parts:
feature map, point store, factorizations, dictionaries, step-size policy), kernels and losses
rebuilt *by name and parameters* through their constructors, numpy bit generators by name, and
(for replay checkpoints and pipelines only) river's metrics, statistics, ``StandardScaler`` and
``TargetStandardScaler``. okoco's own scalers and metrics (:mod:`okoco.preprocessing`,
:mod:`okoco.metrics`) are registered like the learners; a checkpoint written with river's
counterparts resumes into them (each declares its ``_river_class`` and converts that state with
``_state_from_river``). Nothing in a file can name any other class or any function, so loading
never runs code from the file. A learner holding
something outside the list (a user's own kernel or loss class, a callable step size) cannot be
saved: :func:`save` raises a ``TypeError`` that names the attribute.

Declared state
--------------
Every class a file may hold declares its state in a class attribute ``_saved_state``: a dict from
attribute name to a spec string (plain data, so classes below this module declare it without
importing it; a subclass's dict extends its bases', and ``None`` drops an inherited entry)::

    _saved_state = {"_cap": "int[0,]", "_m": "int[0,_cap]",
                    "_L": "array(_cap * (_cap + 1) // 2) float64", "_cache": "cache:None"}

A spec is ``[opt] KIND[|KIND...] [as FIELD]`` or ``cache[:None|:{}|:lock]``. ``opt``: the
attribute may be absent (a class default stands in); ``as FIELD``: the stable name in the file,
when the attribute's own name changed; ``cache``: never saved, and set on loading to ``None``,
``{}`` or a new ``threading.Lock`` (or left to the class default). A KIND is ``int``,
``int[LO,HI]``, ``float`` (a Python float), ``number`` (an int or a float: a parameter as given),
``bool``, ``str``, ``none``, ``rng`` (a numpy Generator), ``kernel``, ``loss``, ``obj`` (an
object of a class that declares its own state; ``obj:Rows,ExpertRows`` of those classes only),
``plain`` (nested lists, tuples, dicts and sets
of None, bool, int, float, str, bytes: feature names, labels), ``river`` (one of river's
statistics, in checkpoints), ``list[KIND]``, ``dict[KIND]`` (values; keys are plain) or
``array(SHAPE) DTYPE``. A SHAPE has one rule per axis: an integer expression (``+ - * //``,
parentheses, ``min``/``max``) of the object's int fields (``_m``), of an int attribute of a field
(``_store.n``) or of a free symbol (any other name, equal wherever it appears in the object),
optionally prefixed by ``>=`` (a capacity), or ``*`` (any length).

:func:`save` writes exactly the declared fields, in a file of at most a few times their size;
state a class does not declare is a ``TypeError`` naming the attributes (declare a new attribute
before it can be saved). :func:`load` checks every field against its declaration before the
object is built and raises a ``ValueError`` naming the field (``state._chol._L must be
array(_cap * (_cap + 1) // 2) float64, got ...``); a field the class does not declare is refused.

Loading is bounded by the file: archive members are read only when the metadata refers to them
(each once, and a member nobody refers to is refused), each ``.npy`` header is checked before
its data is allocated, and what arrays, padded buffers and metadata may allocate is at most
``MAX_EXPANSION`` times the file's size plus 8 MiB; the metadata's nesting (40 levels) and number
of JSON containers (200,000) are bounded and error messages are cut to 600 characters.

Versioning: ``FORMAT_VERSION`` is bumped whenever the layout of the file or the saved state of a
learner changes; :func:`load` reads the versions in ``SUPPORTED_VERSIONS`` and refuses any other
with a ``ValueError`` naming the version found and the versions supported. Every migration of an
older file is in this module (:func:`_migrate` for the metadata tree, :func:`_migrate_state`
for one object's attributes). A damaged file (cut short, edited, an entry missing or of the
wrong kind) raises one ``ValueError`` that names the file and what is wrong.

Layering: this module sits *below* the learners and knows none of them. The layers that define
savable classes register them (``okoco.learners`` registers the learners and the parts they are
built from when it is imported), so a learner's ``save`` method calls :func:`save` through an
ordinary import and no module imports a layer above it.

Examples
--------
>>> import os, tempfile
>>> import okoco
>>> from okoco.learners import KONS
>>> model = KONS(C=2.0)
>>> for i in range(20):
...     model.learn_one({"x": i / 20}, (i % 3) - 1.0)
>>> path = os.path.join(tempfile.mkdtemp(), "kons.npz")
>>> _ = model.save(path)
>>> again = okoco.load(path)
>>> again.predict_one({"x": 0.3}) == model.predict_one({"x": 0.3})
True
>>> again.learn_one({"x": 0.5}, 1.0); model.learn_one({"x": 0.5}, 1.0)
>>> again.predict_one({"x": 0.7}) == model.predict_one({"x": 0.7})
True
"""

from __future__ import annotations

import ast
import collections
import copy
import functools
import importlib
import inspect
import itertools
import json
import math
import os
import re
import reprlib
import threading
import tokenize
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from okoco import kernels, losses
from okoco._io import atomic_write
from okoco._validation import check_param, constraints_of
from okoco._version import __version__

__all__ = ["save", "load", "read_metadata", "register", "FORMAT_NAME", "FORMAT_VERSION",
           "SUPPORTED_VERSIONS"]

FORMAT_NAME = "okoco-model"
CHECKPOINT_FORMAT_NAME = "okoco-replay-checkpoint"
FORMAT_VERSION = 4
SUPPORTED_VERSIONS = (1, 2, 3, 4)
META_KEY = "__okoco__"

#: What loading a file may allocate (its arrays read, padded back to capacity, and its
#: metadata), as a multiple of the file's own size plus ``_BUDGET_SLACK`` bytes. A saved model
#: needs at most ~4x (a packed triangular buffer of capacity ``2m`` restored from ``m`` rows).
MAX_EXPANSION = 8
_BUDGET_SLACK = 8 << 20
#: Bounds on the JSON metadata: nesting depth, containers, and the length of an error message.
_MAX_DEPTH = 40
_MAX_CONTAINERS = 200_000
_MAX_MESSAGE = 600
_MISSING = object()
_NEW_LOCK = object()  # a cache field holding a threading.Lock: a new one on loading

#: The learners :func:`save` accepts, by class path (exact classes: a subclass may hold more
#: state). Filled by :func:`register`.
_LEARNERS: dict[str, type] = {}

#: Classes restored attribute by attribute (``cls.__new__`` then ``__dict__``, no ``__init__``),
#: by class path: the learners and their parts. Filled by :func:`register`.
_OBJECTS: dict[str, type] = {}

#: Target wrappers (rebuilt around their regressor), by class path. Filled by :func:`register`.
_WRAPPERS: dict[str, type] = {}

#: Extra classes a replay checkpoint may hold (river preprocessing, metrics and statistics).
_RIVER_CLASSES = frozenset({
    "river.preprocessing.scale.StandardScaler",
})
_RIVER_MODULES = ("river.metrics.", "river.stats.")
_RIVER_PIPELINE = "river.compose.pipeline.Pipeline"
_RIVER_TARGET_WRAPPERS = frozenset({
    "river.preprocessing.scale_target.TargetStandardScaler",
})

_KERNELS = ("RBF", "Laplacian", "Polynomial", "Linear", "Sum", "Product", "Scaled")
_LOSSES = ("Squared", "Logistic", "SquaredHinge")
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_FACTORIES = {"float": float, "int": int, "list": list, "dict": dict,
              "defaultdict(float)": functools.partial(collections.defaultdict, float)}


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(*classes: type, learner: bool = False, wrapper: bool = False) -> None:
    """Allow ``classes`` in okoco files: their objects are saved and restored attribute by
    attribute (``cls.__new__``, then the saved ``__dict__``; ``__init__`` is not run).

    The layers above this module call it when they are imported: ``okoco.learners`` registers
    its learners (``learner=True``: :func:`save` and :func:`load` accept them as the top object)
    and the parts they hold. A file can name no class that is not registered. A target wrapper
    (``wrapper=True``: a class built as ``cls(regressor)`` whose other attributes are its state,
    such as :class:`okoco.preprocessing.TargetStandardScaler`) is saved by structure, like
    river's ``TargetStandardScaler``.

    Examples
    --------
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> persistence.register(KONS, learner=True)  # done by okoco.learners already
    >>> "okoco.learners.kons.KONS" in persistence.registered()
    True
    """
    for cls in classes:
        if not isinstance(cls, type):
            raise TypeError(f"register takes classes, got {cls!r}")
        if wrapper:
            _WRAPPERS[_class_path(cls)] = cls
            continue
        _OBJECTS[_class_path(cls)] = cls
        if learner:
            _LEARNERS[_class_path(cls)] = cls


def registered(learners: bool = False) -> tuple[str, ...]:
    """The class paths okoco files may hold (only the learners if ``learners``)."""
    return tuple(_LEARNERS if learners else _OBJECTS)


def _allowed(path: str, river: bool) -> bool:
    if path in _OBJECTS:
        return True
    return river and (path in _RIVER_CLASSES or path.startswith(_RIVER_MODULES))


def _is_wrapper(path: str) -> bool:
    return path in _WRAPPERS or path in _RIVER_TARGET_WRAPPERS


def _resolve(path: str) -> type:
    if path in _OBJECTS or path in _WRAPPERS:
        return _OBJECTS.get(path) or _WRAPPERS[path]
    # river's metrics and statistics in a checkpoint (allow-listed by _allowed): third-party
    # classes, found by their module path
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name, None)
    if not isinstance(cls, type) or _class_path(cls) != path:
        raise ValueError(f"the file names a class {path!r} that this okoco cannot find")
    return cls


def _init_params(cls: type) -> list[str]:
    return [name for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _attributes(obj: Any) -> dict:
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else vars(obj)
    slots = [s for c in type(obj).__mro__ for s in vars(c).get("__slots__", ())]
    if not isinstance(state, dict) or slots:
        raise TypeError(f"{type(obj).__name__} objects have no plain attribute state")
    return state


# -- encoding -----------------------------------------------------------------------------------


class _Encoder:
    """Python/numpy values to JSON-ready trees plus a dict of arrays.

    Objects, arrays, generators, kernels and losses get an ``id`` the first time they are met
    and a ``{"__ref__": id}`` afterwards, so shared objects stay shared after loading (e.g.
    Sketched-KONS and its KORS dictionary draw from one generator).
    """

    def __init__(self, river: bool = False):
        self.river = river
        self.arrays: dict[str, np.ndarray] = {}
        self._ids: dict[int, int] = {}
        self._alive: list = []  # keeps every memoised object alive, so ids are never reused

    def _new_id(self, obj: Any) -> int:
        self._ids[id(obj)] = n = len(self._ids)
        self._alive.append(obj)
        return n

    def pairs(self, items, where: str) -> list:
        return [[self.encode(k, f"{where} key"), self.encode(v, f"{where}[{k!r}]")]
                for k, v in items]

    def encode(self, v: Any, where: str) -> Any:
        if v is None or type(v) in (bool, str, int):
            return v
        if type(v) is float:
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if type(v) is bytes:  # a feature name or label (river streams may hold them)
            return {"__bytes__": v.hex()}
        if isinstance(v, np.generic):
            if v.dtype.hasobject:
                raise TypeError(f"cannot save {where}: numpy object scalar {v!r}")
            return {"__np__": v.dtype.str, "v": self.encode(v.item(), where)}
        if id(v) in self._ids:
            return {"__ref__": self._ids[id(v)]}
        kind = type(v)
        if kind is list:
            return [self.encode(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if kind is tuple:
            return {"__tuple__": [self.encode(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if kind in (set, frozenset):
            return {f"__{kind.__name__}__": [self.encode(x, f"{where} item") for x in v]}
        if kind is dict:
            if all(type(k) is str and not k.startswith("__") for k in v):
                return {k: self.encode(x, f"{where}[{k!r}]") for k, x in v.items()}
            return {"__dict__": self.pairs(v.items(), where)}
        if kind is collections.OrderedDict:
            return {"__odict__": self.pairs(v.items(), where)}
        if kind is collections.Counter:
            return {"__counter__": self.pairs(v.items(), where)}
        if kind is collections.defaultdict:
            factory = next((name for name, f in _FACTORIES.items() if _same_factory(f,
                                                                                  v.default_factory)),
                           None)
            if factory is None:
                raise TypeError(f"cannot save {where}: defaultdict of {v.default_factory!r}")
            return {"__defaultdict__": factory, "items": self.pairs(v.items(), where)}
        if kind is np.ndarray:
            if v.dtype.hasobject or v.dtype.kind not in "biufcUS":
                raise TypeError(f"cannot save {where}: array of dtype {v.dtype} (object arrays "
                                "would need pickle)")
            name = f"a{len(self.arrays)}"
            rows = _leading_rows(v)
            if rows == (v.shape[0] if v.ndim else None):
                self.arrays[name] = v
                return {"__array__": name, "id": self._new_id(v)}
            self.arrays[name] = v[:rows]
            return {"__padded__": name, "id": self._new_id(v), "rows": v.shape[0]}
        if isinstance(v, np.random.Generator):
            bits = type(v.bit_generator).__name__
            if bits not in _BIT_GENERATORS:
                raise TypeError(f"cannot save {where}: unknown bit generator {bits}")
            ident = self._new_id(v)
            return {"__generator__": bits, "id": ident,
                    "state": self.encode(v.bit_generator.state, where)}
        module = getattr(kind, "__module__", "")
        if module == "okoco.kernels" and kind.__name__ in _KERNELS:
            params = dict(v._params())
            if "normalize" in _init_params(kind):
                params["normalize"] = bool(v.normalize)
            return {"__kernel__": kind.__name__, "id": self._new_id(v),
                    "params": self.encode(params, where)}
        if module == "okoco.losses" and kind.__name__ in _LOSSES:
            if vars(v):
                raise TypeError(f"cannot save {where}: {v!r} carries extra attributes")
            return {"__loss__": kind.__name__, "id": self._new_id(v)}
        path = _class_path(kind)
        if _allowed(path, self.river):
            ident = self._new_id(v)
            return {"__obj__": path, "id": ident, "attrs": self.fields(v, where)}
        raise TypeError(_unsupported(v, where))

    def fields(self, obj: Any, where: str) -> dict:
        """The saved fields of ``obj``: exactly those its class declares (``_saved_state``).

        State the declaration does not name is a ``TypeError`` naming the attributes (a new
        attribute must be declared before it can be saved); river's classes (checkpoints
        only) declare nothing and are saved attribute by attribute.
        """
        cls = type(obj)
        declared = declared_state(cls)
        if declared is None:
            if _class_path(cls) in _OBJECTS:
                raise TypeError(f"cannot save {where}: {cls.__qualname__} declares no saved state "
                                "(a _saved_state class attribute, see okoco.persistence)")
            attrs = _attributes(obj)
            return {k: self.encode(x, f"{where}.{k}") for k, x in attrs.items()}
        attrs = vars(obj)
        undeclared = [a for a in attrs if a not in declared]
        if undeclared:
            raise TypeError(f"cannot save {where}: {cls.__qualname__} holds state its "
                            f"_saved_state does not declare: {', '.join(map(repr, undeclared))} "
                            "(declare each attribute's kind, dtype and shape, or mark it "
                            "'cache'; see okoco.persistence)")
        out = {}
        # in the object's own attribute order (a saving error names the first bad one)
        order = [a for a in attrs if a in declared] + [a for a in declared if a not in attrs]
        for attr in order:
            field = declared[attr]
            if field.cache:
                continue
            if attr not in attrs:
                if field.optional:
                    continue
                raise TypeError(f"cannot save {where}: {cls.__qualname__}.{attr} is declared "
                                "but the object has no such attribute")
            out[field.name] = self.encode(attrs[attr], f"{where}.{attr}")
        return out


def _leading_rows(v: np.ndarray) -> int | None:
    """Rows of ``v`` up to its last one that is not all zero bits (``None`` for a scalar array).

    Only whole trailing rows of zero bytes are left out (``-0.0`` is kept), and only for
    C-ordered arrays, so that padding them back with zeros rebuilds ``v`` bit for bit.
    """
    if v.ndim == 0 or v.size == 0 or not v.flags.c_contiguous:
        return v.shape[0] if v.ndim else None
    nonzero = v.reshape(v.shape[0], -1).view(np.uint8).any(axis=1)
    hits = np.flatnonzero(nonzero)
    return int(hits[-1]) + 1 if hits.size else 0


def _same_factory(a, b) -> bool:
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return a.func is b.func and a.args == b.args and not a.keywords and not b.keywords
    return a is b


def _unsupported(v: Any, where: str) -> str:
    name = type(v).__qualname__
    if callable(v) and callable(getattr(v, "diag", None)):
        return (f"cannot save {where}: {name} is not one of okoco's kernels ({', '.join(_KERNELS)})"
                "; kernels are saved by name and parameters, never as code")
    if callable(getattr(v, "derivative", None)) and callable(getattr(v, "value", None)):
        return (f"cannot save {where}: {name} is not one of okoco's losses ({', '.join(_LOSSES)})"
                "; losses are saved by name, never as code")
    if callable(v):
        return (f"cannot save {where}: {v!r} is a function; okoco files hold no code (use a "
                "number or a named policy instead)")
    return f"cannot save {where}: {name} objects are not in okoco's allow-list"


# -- declared state -----------------------------------------------------------------------------
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
    __slots__ = ("attr", "name", "optional", "kinds", "cache", "reset")

    def __init__(self, attr, name, optional, kinds, cache=False, reset=_MISSING):
        self.attr, self.name, self.optional, self.kinds = attr, name, optional, kinds
        self.cache, self.reset = cache, reset

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
    optional = text.startswith("opt ")
    if optional:
        text = text[4:]
    name = attr
    match = re.fullmatch(r"(.*\S)\s+as\s+(\w+)", text)
    if match:
        text, name = match.groups()
    return _Field(attr, name, optional, tuple(_parse_kind(k) for k in _split_top(text, "|")))


_DECLARED: dict[type, dict[str, _Field] | None] = {}


def declared_state(cls: type) -> dict[str, _Field] | None:
    """The parsed ``_saved_state`` of ``cls`` and its bases (``None``: the class declares none).

    Examples
    --------
    >>> from okoco import persistence
    >>> from okoco.linalg import IncrementalCholesky
    >>> fields = persistence.declared_state(IncrementalCholesky)
    >>> fields["_L"].describe()
    'array(_cap * (_cap + 1) // 2) float64'
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
        owner = _eval_owner(node.value, env, where)
        value = vars(owner).get(node.attr, getattr(type(owner), node.attr, None))
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


def _eval_owner(node: ast.expr, env: dict, where: str) -> Any:
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Attribute):
        return getattr(_eval_owner(node.value, env, where), node.attr)
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
    if tag == "kernel":
        return None if type(value).__module__ == "okoco.kernels" else "not a kernel"
    if tag == "loss":
        return None if type(value).__module__ == "okoco.losses" else "not a loss"
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
            reason = _check_kind(kind, value, values, symbols, f"{where}.{field.name}")
            if reason is None:
                break
            reasons.append(reason)
        else:
            raise ValueError(f"{where}.{field.name} must be {field.describe()}, got "
                             f"{_short(value)} ({'; '.join(reasons)})")


# -- decoding -----------------------------------------------------------------------------------


class _Archive:
    """The arrays of an okoco archive, read one by one when the metadata refers to them.

    Every read is charged to a byte budget bounded by the file's own size (see
    :data:`MAX_EXPANSION`), checked from the member's ``.npy`` header *before* anything is
    allocated, so a small crafted file cannot ask for gigabytes (a huge declared shape, a
    compressed member of zeros). Each member may be referred to once, and :meth:`finish`
    refuses members nobody referred to.
    """

    def __init__(self, zf: zipfile.ZipFile | None, members: dict[str, zipfile.ZipInfo],
                 budget: int):
        self.zf, self.members, self.budget = zf, members, budget
        self.used: set[str] = set()

    def charge(self, nbytes: int, where: str) -> None:
        if nbytes > self.budget:
            raise ValueError(f"{where} asks for {nbytes} bytes, more than a file of this size "
                             "can hold")
        self.budget -= nbytes

    def get(self, name: Any, where: str) -> np.ndarray:
        if type(name) is not str or name not in self.members:
            raise ValueError(f"{where} refers to an array {_short(name)} that is not in the file")
        if name in self.used:
            raise ValueError(f"{where} refers to the array {name!r} a second time")
        self.used.add(name)
        info = self.members[name]
        self.charge(info.file_size, where)
        with self.zf.open(info) as fp:
            return _read_npy(fp, info.file_size, where)

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.zf is not None:
            self.zf.close()
            self.zf = None

    def finish(self) -> None:
        unused = sorted(set(self.members) - self.used)
        if unused:
            raise ValueError(f"the archive holds member(s) {_short(unused)} that the metadata "
                             "does not refer to")


def _read_npy(fp, size: int, where: str) -> np.ndarray:
    """One ``.npy`` member, its header checked before its data is allocated."""
    shape, fortran, dtype = _npy_header(fp, size, where)
    array = np.empty(shape[::-1] if fortran else shape, dtype=dtype)
    view = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
    got = 0
    while got < len(view):
        n = fp.readinto(view[got:])
        if not n:
            raise ValueError(f"{where}: the array's data is cut short")
        got += n
    return array.T if fortran else array


def _npy_header(fp, size: int, where: str) -> tuple:
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp, max_header_size=2000)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp, max_header_size=2000)
    else:
        raise ValueError(f"{where}: unsupported .npy version {version}")
    if dtype.hasobject:
        raise ValueError("the archive holds object arrays (pickled Python objects); okoco files "
                         "never do and loading them could run code, so it is refused")
    if dtype.kind not in "biufcUS" or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{where}: arrays of dtype {_short(str(dtype))} are not okoco state")
    if len(shape) > 8 or any(type(n) is not int or n < 0 for n in shape):
        raise ValueError(f"{where}: bad array shape {_short(shape)}")
    count = math.prod(shape)
    if count * dtype.itemsize > size:
        raise ValueError(f"{where}: an array of shape {_short(shape)} cannot fit in its "
                         f"{size}-byte member")
    return shape, fortran, dtype


class _Decoder:
    """JSON trees (and the archive's arrays) back to Python objects, checking as it goes.

    ``where`` names the place in the file for error messages (``state._chol._L``); nesting is
    bounded by :data:`_MAX_DEPTH`; objects of a class that declares its state are checked
    field by field against the declaration before they are built.
    """

    def __init__(self, arrays: _Archive, river: bool = False, version: int = FORMAT_VERSION):
        self.arrays = arrays
        self.river = river
        self.version = version
        self.objects: dict[int, Any] = {}

    def _keep(self, tree: Mapping, value: Any) -> Any:
        ident = tree["id"]
        if type(ident) is not int or ident in self.objects:
            raise ValueError(f"bad or repeated object id {_short(ident)}")
        self.objects[ident] = value
        return value

    def pairs(self, items, where: str, depth: int) -> list:
        if type(items) is not list:
            raise ValueError(f"{where} must be a list of pairs")
        out = []
        for item in items:
            if type(item) is not list or len(item) != 2:
                raise ValueError(f"{where} must be a list of pairs")
            out.append((self.decode(item[0], where, depth), self.decode(item[1], where, depth)))
        return out

    def items(self, tree: Any, where: str, depth: int) -> list:
        if type(tree) is not list:
            raise ValueError(f"{where} must be a list")
        return [x if type(x) in _SCALARS else self.decode(x, f"{where}[{i}]", depth)
                for i, x in enumerate(tree)]

    def decode(self, tree: Any, where: str = "the file", depth: int = 0) -> Any:
        if tree is None or type(tree) in (bool, str, int, float):
            return tree
        depth += 1
        if depth > _MAX_DEPTH:
            raise ValueError(f"{where} is nested more than {_MAX_DEPTH} levels deep")
        if type(tree) is list:
            return self.items(tree, where, depth)
        if type(tree) is not dict:
            raise ValueError(f"{where}: unexpected value {_short(tree)}")
        marker = next((k for k in tree if k.startswith("__")), None)
        if marker is None:
            return {k: v if type(v) in _SCALARS else self.decode(v, f"{where}[{k!r}]", depth)
                    for k, v in tree.items()}
        if marker == "__ref__":
            ref = tree["__ref__"]
            if type(ref) is not int or ref not in self.objects:
                raise ValueError(f"{where} refers to an object {_short(ref)} defined nowhere "
                                 "before it")
            return self.objects[ref]
        if marker == "__float__":
            text = tree["__float__"]
            if text not in ("nan", "inf", "-inf"):
                raise ValueError(f"{where}: {_short(text)} is not a non-finite float")
            return float(text)
        if marker == "__np__":
            code = tree["__np__"]
            if type(code) is not str or len(code) > 8:
                raise ValueError(f"{where}: bad numpy scalar type {_short(code)}")
            dtype = np.dtype(code)
            if dtype.hasobject:
                raise ValueError("the file holds a numpy object scalar, which okoco never loads")
            if dtype.kind not in "biuf":
                raise ValueError(f"{where}: numpy {_short(str(dtype))} scalars are not okoco "
                                 "state")
            value = tree["v"]
            if type(value) not in (bool, int, float):
                raise ValueError(f"{where}: a numpy scalar of value {_short(value)}")
            return dtype.type(value)
        if marker == "__bytes__":
            text = tree["__bytes__"]
            if type(text) is not str:
                raise ValueError(f"{where}: bytes must be saved as hexadecimal text")
            return bytes.fromhex(text)
        if marker == "__tuple__":
            return tuple(self.items(tree["__tuple__"], where, depth))
        if marker == "__set__":
            return set(self.items(tree["__set__"], where, depth))
        if marker == "__frozenset__":
            return frozenset(self.items(tree["__frozenset__"], where, depth))
        if marker == "__dict__":
            return dict(self.pairs(tree["__dict__"], where, depth))
        if marker == "__odict__":
            return collections.OrderedDict(self.pairs(tree["__odict__"], where, depth))
        if marker == "__counter__":
            return collections.Counter(dict(self.pairs(tree["__counter__"], where, depth)))
        if marker == "__defaultdict__":
            name = tree["__defaultdict__"]
            if type(name) is not str or name not in _FACTORIES:
                raise ValueError(f"{where}: unknown defaultdict factory {_short(name)}")
            return collections.defaultdict(_FACTORIES[name],
                                           self.pairs(tree["items"], where, depth))
        if marker == "__array__":
            return self._keep(tree, self.arrays.get(tree["__array__"], where))
        if marker == "__padded__":
            rows = tree["rows"]
            if type(rows) is not int or rows < 0:
                raise ValueError(f"{where}: {_short(rows)} is not a number of rows")
            head = self.arrays.get(tree["__padded__"], where)
            if head.ndim == 0 or not head.shape[0] <= rows:
                raise ValueError(f"{where}: an array of {rows} rows cannot hold the "
                                 f"{head.shape[:1]} rows saved")
            self.arrays.charge(rows * head.dtype.itemsize * math.prod(head.shape[1:]), where)
            array = np.zeros((rows, *head.shape[1:]), dtype=head.dtype)
            array[: head.shape[0]] = head
            return self._keep(tree, array)
        if marker == "__generator__":
            name = tree["__generator__"]
            if type(name) is not str or name not in _BIT_GENERATORS:
                raise ValueError(f"{where}: unknown bit generator {_short(name)}")
            gen = self._keep(tree, np.random.Generator(getattr(np.random, name)()))
            gen.bit_generator.state = self.decode(tree["state"], where, depth)
            return gen
        if marker == "__kernel__":
            name = tree["__kernel__"]
            if type(name) is not str or name not in _KERNELS:
                raise ValueError(f"{where}: unknown kernel {_short(name)}")
            params = self.decode(tree["params"], where, depth)
            if type(params) is not dict:
                raise ValueError(f"{where}: the kernel's parameters must be a mapping")
            return self._keep(tree, getattr(kernels, name)(**params))
        if marker == "__loss__":
            name = tree["__loss__"]
            if type(name) is not str or name not in _LOSSES:
                raise ValueError(f"{where}: unknown loss {_short(name)}")
            return self._keep(tree, getattr(losses, name)())
        if marker == "__obj__":
            path = tree["__obj__"]
            if type(path) is not str or not _allowed(path, self.river):
                raise ValueError(f"{where}: the file asks for a {_short(path)} object, which "
                                 "okoco never loads")
            cls = _resolve(path)
            attrs = tree["attrs"]
            if type(attrs) is not dict:
                raise ValueError(f"{where}: the attributes of a {cls.__name__} must be a mapping")
            obj = self._keep(tree, cls.__new__(cls))
            obj.__dict__.update(self.state(cls, attrs, where, depth))
            return obj
        raise ValueError(f"{where}: unknown entry {_short(marker)}")

    def state(self, cls: type, attrs: dict, where: str, depth: int = 0) -> dict:
        """The attributes of a ``cls`` object from its saved fields, checked against the
        class's declaration (a class without one, river's, is taken as saved)."""
        fields = declared_state(cls)
        if fields is None:
            if _class_path(cls) in _OBJECTS and not self.river:
                raise ValueError(f"{where}: {cls.__name__} declares no saved state")
            return {k: self.decode(v, f"{where}.{k}", depth) for k, v in attrs.items()}
        by_name = {f.name: f for f in fields.values() if not f.cache}
        legacy = self.version < FORMAT_VERSION
        values, extra = {}, {}
        for key, sub in attrs.items():
            field = by_name.get(key)
            if field is not None:
                _plausible(field, sub, f"{where}.{key}")  # nothing deeper than the schema
                values[field.attr] = self.decode(sub, f"{where}.{key}", depth)
            elif legacy and key in fields:  # files before 4 saved caches and named by attribute
                if not fields[key].cache:
                    values[key] = self.decode(sub, f"{where}.{key}", depth)
            elif legacy:  # a layout a migration below may rebuild
                extra[key] = self.decode(sub, f"{where}.{key}", depth)
            else:
                raise ValueError(f"{where}.{_short(key)} is not a field of {cls.__name__} (its "
                                 f"fields: {', '.join(sorted(by_name))})")
        if legacy:
            values = _migrate_state(cls, {**values, **extra}, self.version)
            unknown = sorted(set(values) - set(fields))
            if unknown:
                raise ValueError(f"{where}: {cls.__name__} has no field(s) {_short(unknown)}")
        _check_fields(cls, fields, values, where)
        # the parameters held in the state pass the class's own constraints, as its constructor
        # would check them (nested objects are built without it, and a top-level state's copy
        # of a parameter is what the object uses)
        for name, allowed in constraints_of(cls).items():
            if name in values:
                check_param(name, values[name], allowed, owner=f"{where} ({cls.__name__})")
        for field in fields.values():
            if field.cache and field.reset is _NEW_LOCK:
                values[field.attr] = threading.Lock()
            elif field.cache and field.reset is not _MISSING:
                values[field.attr] = copy.copy(field.reset)
        return values


# -- files --------------------------------------------------------------------------------------


def _write(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray],
           compress: bool) -> Path:
    text = json.dumps(meta, allow_nan=False, separators=(",", ":"))
    payload = {META_KEY: np.array(text), **arrays}
    saver = np.savez_compressed if compress else np.savez
    return atomic_write(path, lambda f: saver(f, **payload), binary=True)


def read_metadata(path: str | os.PathLike) -> dict:
    """The JSON metadata of an okoco file (model or checkpoint), checked but not loaded.

    Raises ``ValueError`` for a file that is not an okoco ``.npz`` archive, that holds object
    (pickled) arrays, or whose format version this okoco does not read.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> path = persistence.save(KONS(), Path(tempfile.mkdtemp(), "kons.npz"))
    >>> meta = persistence.read_metadata(path)
    >>> meta["format"], meta["class"]
    ('okoco-model', 'okoco.learners.kons.KONS')
    """
    meta, archive = _read(path, None)
    archive.close()
    return meta


_MEMBER = re.compile(r"\w{1,64}\.npy")


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters: messages never echo a file's bulk."""
    text = reprlib.repr(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _depth_and_size(tree: Any) -> None:
    """Refuse JSON nested deeper than :data:`_MAX_DEPTH` (level by level: no recursion)."""
    level, depth = [tree], 0
    while level:
        if depth > _MAX_DEPTH:
            raise ValueError(f"the okoco metadata is nested more than {_MAX_DEPTH} levels deep")
        deeper: list = []
        for node in level:
            kind = type(node)
            if kind is dict:
                deeper.extend(node.values())
            elif kind is list:
                deeper.extend(node)
        level, depth = deeper, depth + 1


def _read(path: str | os.PathLike, expected: str | None) -> tuple[dict, _Archive]:
    """The checked metadata of an okoco file and its (unread) arrays, or one ``ValueError``.

    The zip archive is opened directly (not through ``numpy.load``), its members are checked
    by name before anything is read, and the metadata's size is bounded by the file's.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    where = repr(str(path))
    try:
        return _read_zip(path, expected)
    except ValueError as error:
        text = str(error)
        if len(text) > _MAX_MESSAGE:
            text = text[: _MAX_MESSAGE - 3] + "..."
        if where not in text:
            text = f"{where}: {text}"
        raise ValueError(text) from None
    except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error,
            RecursionError, MemoryError, OverflowError, KeyError, TypeError, UnicodeError,
            SyntaxError, tokenize.TokenError) as error:
        # a cut or edited archive: zipfile, zlib and numpy raise all of these
        raise ValueError(f"{where} is not a readable okoco file (damaged archive: "
                         f"{type(error).__name__}: {_short(str(error), 200)})") from None


def _read_zip(path: Path, expected: str | None) -> tuple[dict, _Archive]:
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{str(path)!r} is not an okoco file (not an .npz archive)")
    budget = MAX_EXPANSION * path.stat().st_size + _BUDGET_SLACK
    zf = zipfile.ZipFile(path)
    try:
        infos = zf.infolist()
        names = [info.filename for info in infos]
        if META_KEY + ".npy" not in names:
            raise ValueError(f"{str(path)!r} is an .npz archive but not an okoco file (no "
                             f"{META_KEY!r} entry)")
        bad = [n for n in names if not _MEMBER.fullmatch(n)]
        if bad or len(set(names)) != len(names) or len(names) > _MAX_CONTAINERS:
            raise ValueError(f"{str(path)!r} is not an okoco file (unexpected or repeated "
                             f"archive member(s) {_short(bad or names)})")
        for info in infos:  # headers only: no data is read (object arrays would need pickle)
            with zf.open(info) as fp:
                _npy_header(fp, info.file_size, f"archive member {info.filename!r}")
        members = {info.filename[:-4]: info for info in infos}
        archive = _Archive(zf, {k: v for k, v in members.items() if k != META_KEY}, budget)
        meta_info = members[META_KEY]
        archive.charge(meta_info.file_size, "the okoco metadata")
        with zf.open(meta_info) as fp:
            text_array = _read_npy(fp, meta_info.file_size, "the okoco metadata")
        if text_array.dtype.kind != "U" or text_array.ndim != 0:
            raise ValueError("the okoco metadata is not a text entry")
        text = str(text_array)
        del text_array
        # JSON containers cost ~100 bytes each once parsed: their count, not the text's length,
        # bounds the memory a crafted document can take
        if text.count("{") + text.count("[") > _MAX_CONTAINERS:
            raise ValueError(f"the okoco metadata has more than {_MAX_CONTAINERS} JSON "
                             "containers")
        # and each JSON value (at most one per ',' or ':') costs tens of bytes as an object
        archive.charge(48 * (text.count(",") + text.count(":")), "the okoco metadata")
        try:
            meta = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as error:
            raise ValueError(f"the okoco metadata is not valid JSON "
                             f"({_short(str(error), 200)})") from None
        del text
        _depth_and_size(meta)
        if not isinstance(meta, dict) or meta.get("format") not in (FORMAT_NAME,
                                                                    CHECKPOINT_FORMAT_NAME):
            found = meta.get("format") if isinstance(meta, dict) else None
            raise ValueError(f"{str(path)!r} is not an okoco file (unknown format "
                             f"{_short(found)})")
        version = meta.get("format_version")
        if type(version) is not int or version not in SUPPORTED_VERSIONS:
            supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
            raise ValueError(
                f"{str(path)!r} has okoco file format version {_short(version)} (written by "
                f"okoco {_short(meta.get('okoco_version', '?'))}); this okoco {_version()} "
                f"reads format version {supported} only"
            )
        meta = _migrate(meta)
        if expected is not None and meta["format"] != expected:
            what = "a replay checkpoint" if meta["format"] == CHECKPOINT_FORMAT_NAME else "a model"
            raise ValueError(f"{str(path)!r} is {what} ({meta['format']!r}), not {expected!r}")
        return meta, archive
    except BaseException:
        zf.close()
        raise


# -- version-1 files ----------------------------------------------------------------------------
# Version 2 moved the input classes to okoco._input and renamed parameters: the probability floor
# gamma -> p_min (SketchedKONS, PROS-N-KONS, CON-KONS, KORS), KRLS's and ALD's ridge -> alpha.
# A version-1 file is rewritten into the version-2 layout before anything is decoded.

_V1_RENAMES = {
    "okoco.learners.kons.SketchedKONS": {"gamma": "p_min"},
    "okoco.learners.pros.PROSNKONS": {"gamma": "p_min"},
    "okoco.learners.pros.CONKONS": {"gamma": "p_min"},
    "okoco.dictionary.kors.KORS": {"gamma": "p_min"},
    "okoco.learners.krls.KRLS": {"ridge": "alpha"},
    "okoco.dictionary.ald.ALD": {"ridge": "alpha"},
}


def _upgrade_v1(meta: dict) -> dict:
    """A version-1 metadata tree in the version-2 layout."""
    fresh_ids = itertools.count(-1, -1)  # ids of the objects version 2 adds (never in a file)

    def attributes(path: str, attrs: dict) -> tuple[str, dict]:
        attrs = {_V1_RENAMES.get(path, {}).get(k, k): v for k, v in attrs.items()}
        if path.startswith("okoco.learners.") and "n_seen" in attrs:  # a nested learner
            attrs.setdefault("_abs_target_sum", 0.0)
            attrs.setdefault("_warned_unscaled", False)
        if path == "okoco.learners.features.FeatureMap":
            return "okoco._input.FeatureMap", {**attrs, "mode": None}
        if path == "okoco.learners.features.PointStore":
            return "okoco._input.Rows", {
                "max_size": attrs["max_size"], "n": attrs["size"], "d": attrs["n_cols"],
                "n_added": attrs["n_added"], "data": attrs["_X"], "fields": attrs["_fields"]}
        if path == "okoco.dictionary._base._Rows":
            return "okoco._input.Rows", {"max_size": None, "n_added": attrs["n"],
                                         "fields": {}, **attrs}
        if "_feature_index" in attrs:  # a dictionary: its input mapping became a FeatureMap
            attrs["_features"] = {"__obj__": "okoco._input.FeatureMap", "id": next(fresh_ids),
                                  "attrs": {"columns": attrs.pop("_feature_index"),
                                            "mode": attrs.pop("_mode"), "_last": None}}
        return path, attrs

    def upgrade(tree: Any) -> Any:
        if isinstance(tree, list):
            return [upgrade(item) for item in tree]
        if not isinstance(tree, dict):
            return tree
        tree = {key: upgrade(value) for key, value in tree.items()}
        if isinstance(tree.get("__obj__"), str) and isinstance(tree.get("attrs"), dict):
            tree["__obj__"], tree["attrs"] = attributes(tree["__obj__"], tree["attrs"])
        return tree

    meta = upgrade(meta)
    if isinstance(meta.get("state"), dict) and "n_seen" in meta["state"]:  # a learner
        meta["state"].setdefault("_abs_target_sum", 0.0)  # added after 0.1.0: the target-scale
        meta["state"].setdefault("_warned_unscaled", False)  # warning's running sum and flag
    renames = _V1_RENAMES.get(meta.get("class"), {})
    for part in ("params", "state"):
        if isinstance(meta.get(part), dict):
            meta[part] = {renames.get(k, k): v for k, v in meta[part].items()}
    return meta


def _version() -> str:
    return __version__


def _migrate(meta: dict) -> dict:
    """A metadata tree of an older format version in the current layout, where the layout can
    be rewritten as JSON (version 1's renamed classes and parameters). Objects whose state
    changed shape are migrated when decoded (:func:`_migrate_state`); files of versions before
    4 also hold caches and name every field by its attribute, which the decoder accepts for
    them. Every migration of okoco's files is here."""
    if meta["format_version"] == 1:
        try:
            return _upgrade_v1(meta)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"damaged version-1 metadata: {type(error).__name__}: "
                             f"{_short(str(error))}") from None
    return meta


def _migrate_state(cls: type, values: dict, version: int) -> dict:
    """The decoded attributes of a ``cls`` object saved in an older layout, in the current one:
    KRLS saved ``beta`` and ``P`` before it kept ``w`` and ``M`` (its ``_upgrade_state`` holds
    the algebra, O(m^3) once)."""
    values = _STATE_MIGRATIONS.get(_class_path(cls), lambda v: v)(values)
    upgrade = getattr(cls, "_upgrade_state", None)
    return upgrade(values) if upgrade is not None else values


def _ald_before_2(values: dict) -> dict:
    # okoco 0.1.0's ALD kept the last coefficients; it now keeps the last solve's vectors,
    # which a new step recomputes (the values its constructor starts from)
    if "last_coefficients" in values:
        values = {k: v for k, v in values.items() if k != "last_coefficients"}
        values.setdefault("_last_a", np.zeros(0))
        values.setdefault("_last_h", None)
    return values


def _packed_before_2(values: dict) -> dict:
    # okoco 0.1.0's PackedSymmetric was always packed (no dense layout for small matrices)
    return values if "_dense" in values else {**values, "_dense": None}


#: Migrations of one class's decoded attributes, by class path (files before version 4).
_STATE_MIGRATIONS = {"okoco.dictionary.ald.ALD": _ald_before_2,
                     "okoco.linalg.PackedSymmetric": _packed_before_2}


class _Damaged:
    """Turn any error met while rebuilding a file's objects into one ``ValueError``.

    A file that passed :func:`_read` can still be damaged inside (an entry missing, a list
    where a mapping belongs, a reference to an array that is not there, saved parameters the
    constructor refuses, a member whose compressed data is corrupt): the decoder then raises
    ``KeyError``, ``TypeError``, ``IndexError``, ``AttributeError``, ``OverflowError``,
    ``zlib.error``, ... and the user gets one ``ValueError`` naming the file, of bounded length.
    """

    _CAUGHT = (KeyError, TypeError, IndexError, AttributeError, ValueError, ArithmeticError,
               RecursionError, MemoryError, zlib.error, zipfile.BadZipFile, EOFError, OSError,
               NotImplementedError, UnicodeError, SyntaxError, tokenize.TokenError)

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)

    def __enter__(self) -> _Damaged:
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if kind is None or not issubclass(kind, self._CAUGHT) or issubclass(kind,
                                                                           FileNotFoundError):
            return False
        if issubclass(kind, ValueError) and not issubclass(kind, UnicodeError):
            text = str(error)
            if len(text) > _MAX_MESSAGE:
                text = text[: _MAX_MESSAGE - 3] + "..."
            if repr(self.path) in text and len(str(error)) <= _MAX_MESSAGE:
                return False  # already says which file
            raise ValueError(text if repr(self.path) in text else f"{self.path!r}: {text}"
                             ) from error
        detail = f"missing entry {_short(str(error))}" if kind is KeyError else \
            _short(str(error), 200)
        raise ValueError(f"{self.path!r} is damaged or was edited ({kind.__name__}: {detail})"
                         ) from error


# -- learners -----------------------------------------------------------------------------------


def save(model: Any, path: str | os.PathLike, *, compress: bool = False) -> Path:
    """Save an okoco learner (or ``BinaryClassifier``) to ``path``, atomically.

    The file is written to a temporary file in the same folder and renamed into place, so an
    interruption leaves any previous file intact (and the next save to the same place removes
    the temporary file an interrupted one left). ``path`` is used as given (no suffix added);
    an existing file keeps its permissions, a read-only one is not replaced
    (``PermissionError``), and a symbolic link is written through (its target is replaced).

    Parameters
    ----------
    model
        An okoco learner (``KONS``, ``SketchedKONS``, ``FunctionalGD``, ``KRLS``, ``PROSNKONS``,
        ``CONKONS``, ``Auto``), a ``BinaryClassifier``, a ``SQUEAK`` / ``INKEstimate``
        dictionary, a ``NystromKRR`` or a ``RegretTracker`` (what :func:`registered` lists
        with ``learners=True``).
    path
        Destination, conventionally ``*.npz``.
    compress
        Use ``numpy.savez_compressed`` (smaller, slower; the spare capacity of the buffers is
        zeros and compresses well).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        The model is not one of those, or holds something that cannot be saved without code
        (a user's kernel or loss class, a callable step size), or state its class does not
        declare; the message names the attribute.
    PermissionError
        ``path`` is a read-only file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> model = KONS()
    >>> model.learn_one({"x": 1.0}, 0.5)
    >>> persistence.save(model, Path(tempfile.mkdtemp(), "kons.npz")).name
    'kons.npz'
    """
    cls_path = _class_path(type(model))
    if cls_path not in _LEARNERS:
        names = ", ".join(c.rpartition(".")[2] for c in _LEARNERS)
        raise TypeError(f"okoco.save saves okoco learners ({names}), not "
                        f"{type(model).__qualname__}")
    name = type(model).__name__
    enc = _Encoder()
    enc._new_id(model)
    params = {p: enc.encode(getattr(model, p), f"{name}.{p}") for p in _init_params(type(model))}
    state = enc.fields(model, name)
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "okoco_version": _version(),
            "class": cls_path, "params": params, "state": state}
    return _write(path, meta, enc.arrays, compress)


def load(path: str | os.PathLike) -> Any:
    """Load a learner saved by :func:`save` (or ``learner.save``).

    The archive is read without pickle and only allow-listed classes are built, so loading
    never executes code from the file. Every field is checked against its class's declaration
    (kind, dtype, shape in terms of the other fields) before the learner is built, and what
    the file may allocate is bounded by its own size. Predictions and further learning are
    bit-identical to those of the learner that was saved.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not an okoco model file, an unsupported format version (the message names the version
        found and those supported), object arrays in the archive, a field that breaks its
        declaration (named), or a damaged file (cut short, edited): always one ``ValueError``
        naming the file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> model = KONS()
    >>> model.learn_one({"x": 1.0}, 0.5)
    >>> path = persistence.save(model, Path(tempfile.mkdtemp(), "kons.npz"))
    >>> persistence.load(path).predict_one({"x": 1.0}) == model.predict_one({"x": 1.0})
    True
    """
    meta, archive = _read(path, FORMAT_NAME)
    return _load_learner(path, meta, archive)


def _load_learner(path: str | os.PathLike, meta: dict, archive: _Archive) -> Any:
    """The learner of a model file already read by :func:`_read` (closes ``archive``)."""
    with archive, _Damaged(path):
        cls_path = meta.get("class")
        if not isinstance(cls_path, str) or cls_path not in _LEARNERS:
            raise ValueError(f"{str(path)!r} holds a {_short(cls_path)}, which is not an okoco "
                             "learner")
        cls = _LEARNERS[cls_path]
        dec = _Decoder(archive, version=meta["format_version"])
        params = meta["params"]
        if type(params) is not dict:
            raise ValueError("params must be a mapping")
        params = {k: dec.decode(v, f"params.{k}") for k, v in params.items()}
        model = cls(**params)  # the constructor validates the saved parameters
        dec.objects[0] = model
        state = meta["state"]
        if type(state) is not dict:
            raise ValueError("state must be a mapping")
        state = dec.state(cls, state, "state")
        archive.finish()
    model.__dict__.clear()
    model.__dict__.update(state)
    return model


# -- replay checkpoints -------------------------------------------------------------------------


def _capture(enc: _Encoder, obj: Any, where: str) -> Any:
    """Encode a model graph: river pipelines and target scalers by structure, the rest whole."""
    path = _class_path(type(obj))
    if path == _RIVER_PIPELINE:
        return {"__pipeline__": [[str(name), _capture(enc, step, f"{where}[{name!r}]")]
                                 for name, step in obj.steps.items()]}
    if _is_wrapper(path):
        # func / inverse_func are bound methods of the wrapper itself: rebuilt by the caller.
        attrs = {k: enc.encode(v, f"{where}.{k}") for k, v in vars(obj).items()
                 if k not in ("regressor", "func", "inverse_func")}
        return {"__wrapper__": path, "attrs": attrs,
                "regressor": _capture(enc, obj.regressor, f"{where}.regressor")}
    return enc.encode(obj, where)


def _transplant(dec: _Decoder, obj: Any, tree: Any, where: str, plan: list) -> None:
    """Plan the restoration of ``tree`` into the existing (identically built) ``obj``.

    Everything is decoded and checked first; ``plan`` collects ``(object, attributes, replace)``
    and nothing is modified until the whole checkpoint is known to fit.
    """
    if isinstance(tree, dict) and "__pipeline__" in tree:
        steps = getattr(obj, "steps", None)
        names = [name for name, _ in tree["__pipeline__"]]
        if not isinstance(steps, Mapping) or [str(n) for n in steps] != names:
            raise ValueError(f"the checkpoint's pipeline at {where} has steps {names}, the model "
                             f"has {list(steps) if isinstance(steps, Mapping) else None}")
        for (name, sub), step in zip(tree["__pipeline__"], steps.values()):
            _transplant(dec, step, sub, f"{where}[{name!r}]", plan)
        return
    if isinstance(tree, dict) and "__wrapper__" in tree:
        attrs = {k: dec.decode(v) for k, v in tree["attrs"].items()}
        if _class_path(type(obj)) != tree["__wrapper__"]:
            attrs = _counterpart_state(obj, tree["__wrapper__"], attrs, where,
                                       kept={"regressor", "func", "inverse_func"})
        plan.append((obj, attrs, False))
        _transplant(dec, obj.regressor, tree["regressor"], f"{where}.regressor", plan)
        return
    new = dec.decode(tree)
    state = vars(new)
    if type(new) is not type(obj):
        state = _counterpart_state(obj, _class_path(type(new)), state, where)
    plan.append((obj, state, True))


def _counterpart_state(obj: Any, path: str, state: dict, where: str,
                       kept: set = frozenset()) -> dict:
    """``state``, saved from a ``path`` object, as the state of ``obj`` (but its ``kept``
    attributes): river's scalers and metrics in checkpoints written before okoco had its own
    resume into okoco's."""
    cls = type(obj)
    if getattr(cls, "_river_class", None) != path:
        raise ValueError(f"the checkpoint has a {path.rpartition('.')[2]} at {where}, the run a "
                         f"{cls.__name__}")
    state = cls._state_from_river(state)
    expected = set(vars(obj)) - kept
    if set(state) != expected:
        raise ValueError(f"the checkpoint's {path} at {where} does not fit this okoco's "
                         f"{cls.__name__} (missing {sorted(expected - set(state))}, unexpected "
                         f"{sorted(set(state) - expected)})")
    return state


def check_checkpointable(model: Any, metrics: list) -> None:
    """Raise ``TypeError`` now if ``model`` or ``metrics`` could not be checkpointed."""
    enc = _Encoder(river=True)
    _capture(enc, model, "model")
    for i, m in enumerate(metrics):
        enc.encode(m, f"metrics[{i}]")


def save_checkpoint(path: str | os.PathLike, model: Any, metrics: list, progress: dict) -> Path:
    """Write a replay checkpoint (model graph, metric states, progress), atomically."""
    enc = _Encoder(river=True)
    meta = {"format": CHECKPOINT_FORMAT_NAME, "format_version": FORMAT_VERSION,
            "okoco_version": _version(),
            "model": _capture(enc, model, "model"),
            "metrics": [enc.encode(m, f"metrics[{i}]") for i, m in enumerate(metrics)],
            "progress": enc.encode(progress, "progress")}
    return _write(path, meta, enc.arrays, compress=False)


def load_checkpoint(path: str | os.PathLike, model: Any, metrics: list,
                    check: Any = None) -> dict:
    """Restore a checkpoint into ``model`` and ``metrics`` (in place); return the progress.

    ``check(progress)`` may raise to refuse the checkpoint; nothing is modified before it and
    every structural check have passed.
    """
    meta, archive = _read(path, CHECKPOINT_FORMAT_NAME)
    with archive, _Damaged(path):
        if type(meta["metrics"]) is not list:
            raise ValueError("metrics must be a list")
        if len(meta["metrics"]) != len(metrics):
            raise ValueError(f"{str(path)!r} holds {len(meta['metrics'])} metrics, the run has "
                             f"{len(metrics)}")
        dec = _Decoder(archive, river=True, version=meta["format_version"])
        plan: list = []
        _transplant(dec, model, meta["model"], "model", plan)
        for i, (m, tree) in enumerate(zip(metrics, meta["metrics"])):
            _transplant(dec, m, tree, f"metrics[{i}]", plan)
        progress = dec.decode(meta["progress"], "progress")
        archive.finish()
    if check is not None:
        check(progress)
    for obj, attrs, replace in plan:
        if replace:
            obj.__dict__.clear()
        obj.__dict__.update(attrs)
    return progress
