"""Encoding: Python and numpy values to a JSON tree plus a dict of arrays."""

from __future__ import annotations

import collections
import functools
import math
from typing import Any

import numpy as np

from okoco.persistence._format import _BIT_GENERATORS, _FACTORIES, _KERNELS, _LOSSES, _MISSING
from okoco.persistence._registry import (
    _OBJECTS,
    _allowed,
    _attributes,
    _class_path,
    _init_params,
    _stable_name,
)
from okoco.persistence._schema import _field_of, declared_state


class _Encoder:
    """Python/numpy values to JSON-ready trees plus a dict of arrays.

    Objects, arrays, generators, kernels and losses get an ``id`` the first time they are met
    and a ``{"__ref__": id}`` afterwards, so shared objects stay shared after loading (e.g.
    Sketched-KONS and its KORS dictionary draw from one generator).
    """

    def __init__(self, river: bool = False, rebuild: bool = False):
        self.river = river
        # leave out the fields declared ``rebuilt`` of the objects whose owner rebuilds them on
        # load (a model file; a checkpoint keeps them, so a resume is bit for bit the run)
        self.rebuild = rebuild
        self.arrays: dict[str, np.ndarray] = {}
        self._ids: dict[int, int] = {}
        self._alive: list = []  # keeps every memoised object alive, so ids are never reused
        # ids of the objects whose rebuilt fields are left out: those names (None: all)
        self._rebuilt: dict[int, frozenset | None] = {}

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
        kernel_name = _KERNELS.name_of(kind)
        if kernel_name is not None:
            params = dict(v._params())
            if "normalize" in _init_params(kind):
                params["normalize"] = bool(v.normalize)
            return {"__kernel__": kernel_name, "id": self._new_id(v),
                    "params": self.encode(params, where)}
        loss_name = _LOSSES.name_of(kind)
        if loss_name is not None:
            tree = {"__loss__": loss_name, "id": self._new_id(v)}
            params = _loss_params(v, where)
            if params:  # (a loss without parameters is saved by its name alone, as before)
                tree["params"] = self.encode(params, where)
            return tree
        path = _stable_name(kind) or _class_path(kind)  # (river's classes: by path)
        if _allowed(path, self.river):
            ident = self._new_id(v)
            return {"__obj__": path, "id": ident, "attrs": self.fields(v, where)}
        raise TypeError(_unsupported(v, where))

    def fields(self, obj: Any, where: str) -> dict:
        """The saved fields of ``obj``: exactly those its class declares (``_saved_state``).

        State the declaration does not name is a ``TypeError`` naming the attributes (a new
        attribute must be declared before it can be saved); river's classes (checkpoints
        only) declare nothing and are saved attribute by attribute. A class with work left
        pending in its buffers (``PackedSymmetric``'s deferred rank-one update) names the call
        that does it, ``_before_save(obj)``, which runs first: the file holds the model.
        """
        cls = type(obj)
        settle = getattr(cls, "_before_save", None)  # work left pending: done before it is read
        if settle is not None:
            settle(obj)
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
        if self.rebuild:
            self._note_rebuilt(obj)
        omit = self._rebuilt.get(id(obj), _MISSING)
        out = {}
        # in the object's own attribute order (a saving error names the first bad one)
        order = [a for a in attrs if a in declared] + [a for a in declared if a not in attrs]
        for attr in order:
            field = declared[attr]
            if field.cache or (field.rebuilt and omit is not _MISSING
                               and (omit is None or field.name in omit)):
                continue
            if attr not in attrs:
                if field.optional:
                    continue
                raise TypeError(f"cannot save {where}: {cls.__qualname__}.{attr} is declared "
                                "but the object has no such attribute")
            out[field.name] = self.encode(attrs[attr], f"{where}.{attr}")
        return out


    def _note_rebuilt(self, obj: Any) -> None:
        """Note the objects whose ``rebuilt`` fields ``obj`` rebuilds on load, before any of
        them is written: itself if its class has the hook (``_rebuild``), and its parts at the
        paths of ``_rebuilt_parts`` (file names, ``"kors.inverse"``; a tuple of paths, each
        part's every ``rebuilt`` field, or a mapping from a path to the names of the fields
        rebuilt, ``{"cholesky": ("factor",)}``)."""
        if not callable(getattr(type(obj), "_rebuild", None)):
            return
        self._rebuilt[id(obj)] = None
        parts = getattr(obj, "_rebuilt_parts", ())  # (a property if it depends on the state)
        for path, names in (parts.items() if isinstance(parts, dict) else
                            ((path, None) for path in parts)):
            part = obj
            for name in path.split("."):
                part = _field_of(part, name) if part is not None else None
                part = None if part is _MISSING else part
            if part is not None:
                self._rebuilt[id(part)] = None if names is None else frozenset(names)
                self._alive.append(part)


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


def _loss_params(loss: Any, where: str) -> dict:
    """A registered loss's parameters, saved with its name so that ``cls(**params)`` rebuilds
    it: its attributes, each a number (numpy's scalars as Python's), bool or string named by a
    parameter of its constructor (a user's ``Huber(delta=2.0)`` keeps ``delta``); anything
    else is refused."""
    params, names = {}, _init_params(type(loss))
    for name, value in vars(loss).items():
        plain = _plain_scalar(value)
        if name not in names or plain is None:
            raise TypeError(f"cannot save {where}: {loss!r} carries the attribute {name!r}, "
                            "which is not a number, bool or string parameter of its "
                            f"constructor (a loss is saved as its name and parameters: "
                            f"{type(loss).__name__}({', '.join(names)}))")
        params[name] = plain
    return params


def _plain_scalar(value: Any) -> bool | int | float | str | None:
    """``value`` as a Python bool, int, float or str (numpy's scalars included), else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value if isinstance(value, str) else None


def _unsupported(v: Any, where: str) -> str:
    name = type(v).__qualname__
    if callable(v) and callable(getattr(v, "diag", None)):
        return (f"cannot save {where}: {name} is not one of okoco's kernels "
                f"({', '.join(_KERNELS.by_name())}); kernels are saved by name and parameters, "
                "never as code (a kernel class declares its name: class K(Kernel, name=...))")
    if callable(getattr(v, "derivative", None)) and callable(getattr(v, "value", None)):
        return (f"cannot save {where}: {name} is not one of okoco's losses "
                f"({', '.join(_LOSSES.by_name())}); losses are saved by name, never as code "
                "(a loss class declares its name: class L(Loss, name=...))")
    if callable(v):
        return (f"cannot save {where}: {v!r} is a function; okoco files hold no code (use a "
                "number or a named policy instead)")
    return f"cannot save {where}: {name} objects are not in okoco's allow-list"
