"""Decoding: a file's JSON tree and arrays back to objects, each checked against its
declaration before it is built."""

from __future__ import annotations

import collections
import copy
import math
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from okoco._validation import check_param, constraints_of
from okoco.persistence._archive import _Archive
from okoco.persistence._format import (
    _BIT_GENERATORS,
    _FACTORIES,
    _KERNELS,
    _LOSSES,
    _MAX_DEPTH,
    _MISSING,
    _NEW_LOCK,
    FORMAT_VERSION,
    PUBLIC_NAMES_VERSION,
    _short,
)
from okoco.persistence._invariants import check_invariants
from okoco.persistence._migrations import (
    legacy_state,
    public_state_before_6,
    retired_field,
    stable_class_name,
)
from okoco.persistence._registry import _OBJECTS, _allowed, _class_path, _resolve
from okoco.persistence._schema import (
    _SCALARS,
    _check_fields,
    _finite,
    _plausible,
    declared_state,
)

_REBUILT = "\0rebuilt"  # in a decoded state: some fields are left to a rebuild hook


class _Decoder:
    """JSON trees (and the archive's arrays) back to Python objects, checking as it goes.

    ``where`` names the place in the file for error messages (``state.cholesky.factor``); nesting is
    bounded by :data:`_MAX_DEPTH`; objects of a class that declares its state are checked
    field by field against the declaration before they are built.
    """

    def __init__(self, arrays: _Archive, river: bool = False, version: int = FORMAT_VERSION,
                 finite: bool = False, rebuild: bool = False):
        self.arrays = arrays
        self.river = river
        self.finite = finite  # river's objects' floats finite too (a model, not a checkpoint)
        self.version = version
        self.objects: dict[int, Any] = {}
        # a model file: fields declared ``rebuilt`` may be absent (None until :meth:`rebuild`)
        self.rebuild_on_load = rebuild
        self._hooks: list = []  # the objects with a _rebuild hook, in the order completed
        self._unchecked: list = []  # (object, where): invariants checked once rebuilt

    def completed(self, obj: Any, where: str, rebuilt_later: bool) -> None:
        """``obj`` is decoded: check its invariants now, or after :meth:`rebuild` if some of
        its fields are to be rebuilt; note its rebuild hook."""
        if rebuilt_later:  # the invariants of the fields at hand now, the others once rebuilt
            absent = frozenset(f.name for f in declared_state(type(obj)).values()
                               if f.rebuilt and vars(obj).get(f.attr, _MISSING) is None)
            check_invariants(obj, where, unless=absent)
            self._unchecked.append((obj, where))
        else:
            check_invariants(obj, where)
        if self.rebuild_on_load and callable(getattr(type(obj), "_rebuild", None)):
            self._hooks.append(obj)

    def rebuild(self) -> None:
        """Run the rebuild hooks (``obj._rebuild(charge)``: the factorizations of a model from
        its points, parts before their owners; ``charge(nbytes, what)`` before each large
        allocation, bounded by the file), then check the invariants of the rebuilt objects."""
        for obj in self._hooks:
            obj._rebuild(self.arrays.charge_rebuilt)
        for obj, where in self._unchecked:
            for field in declared_state(type(obj)).values():  # none left for the core to meet
                if field.rebuilt and vars(obj).get(field.attr) is None and \
                        not any(kind.tag == "none" for kind in field.kinds):
                    raise ValueError(f"{where}.{field.name} ({type(obj).__name__}) is missing, "
                                     "and nothing in the file rebuilds it")
            check_invariants(obj, where)

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
            kernel = _KERNELS.by_name().get(name) if type(name) is str else None
            if kernel is None:
                raise ValueError(f"{where}: unknown kernel {_short(name)}")
            params = self.decode(tree["params"], where, depth)
            if type(params) is not dict:
                raise ValueError(f"{where}: the kernel's parameters must be a mapping")
            return self._keep(tree, kernel(**params))
        if marker == "__loss__":
            name = tree["__loss__"]
            loss = _LOSSES.by_name().get(name) if type(name) is str else None
            if loss is None:
                raise ValueError(f"{where}: unknown loss {_short(name)}")
            # (a file before format 11, or a loss without parameters, holds none)
            params = self.decode(tree.get("params", {}), where, depth)
            if type(params) is not dict or not all(
                    type(p) is str and type(v) in (int, float, bool, str)
                    for p, v in params.items()):
                raise ValueError(f"{where}: the loss's parameters must map names to numbers, "
                                 "bools or strings")
            try:
                return self._keep(tree, loss(**params))
            except (TypeError, ValueError) as error:
                raise ValueError(f"{where}: the loss {name} refused its saved parameters: "
                                 f"{error}") from None
        if marker == "__obj__":
            path = tree["__obj__"]
            if type(path) is str:
                path = stable_class_name(path, self.version)
            if type(path) is not str or not _allowed(path, self.river):
                raise ValueError(f"{where}: the file asks for a {_short(path)} object, which "
                                 "okoco never loads")
            cls = _resolve(path)
            attrs = tree["attrs"]
            if type(attrs) is not dict:
                raise ValueError(f"{where}: the attributes of a {cls.__name__} must be a mapping")
            obj = self._keep(tree, cls.__new__(cls))
            state = self.state(cls, attrs, where, depth)
            later = state.pop(_REBUILT, False)
            obj.__dict__.update(state)
            self.completed(obj, where, later)
            return obj
        raise ValueError(f"{where}: unknown entry {_short(marker)}")

    def state(self, cls: type, attrs: dict, where: str, depth: int = 0) -> dict:
        """The attributes of a ``cls`` object from its saved fields, checked against the
        class's declaration (a class without one, river's, is taken as saved)."""
        fields = declared_state(cls)
        if fields is None:
            if _class_path(cls) in _OBJECTS and not self.river:
                raise ValueError(f"{where}: {cls.__name__} declares no saved state")
            values = {k: self.decode(v, f"{where}.{k}", depth) for k, v in attrs.items()}
            bad = next((k for k, v in values.items() if not _finite(v)), None)
            if self.finite and bad is not None:  # river's statistics of a model
                raise ValueError(f"{where}.{bad} must hold finite numbers only, got "
                                 f"{_short(values[bad])}")
            return values
        if self.version < PUBLIC_NAMES_VERSION:  # fields named by attribute, maybe another layout
            values = legacy_state(lambda tree, at: self.decode(tree, at, depth), cls, fields,
                                  attrs, where)
        else:
            by_name = {f.name: f for f in fields.values() if not f.cache}
            values = {}
            for key, sub in attrs.items():
                field = by_name.get(key)
                if field is None and self.version < FORMAT_VERSION and retired_field(cls, key):
                    values[key] = self.decode(sub, f"{where}.{key}", depth)  # migrated below
                    continue
                if field is None:
                    raise ValueError(f"{where}.{_short(key)} is not a field of {cls.__name__} "
                                     f"(its fields: {', '.join(sorted(by_name))})")
                _plausible(field, sub, f"{where}.{key}")  # nothing deeper than the schema
                values[field.attr] = self.decode(sub, f"{where}.{key}", depth)
            if self.version < FORMAT_VERSION:
                values = public_state_before_6(cls, values)
        rebuilt = [f for f in fields.values() if f.rebuilt and f.attr not in values]
        if not self.rebuild_on_load:  # (a checkpoint keeps them: only the optional may lack)
            missing = [f for f in rebuilt if not hasattr(cls, f.attr)]
            if missing:
                raise ValueError(f"{where}.{missing[0].name} ({cls.__name__}) is missing")
            rebuilt = []
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
        if rebuilt:  # left to the owner's rebuild hook (None until then)
            values.update({field.attr: None for field in rebuilt})
            values[_REBUILT] = True  # (a marker for decode, removed there)
        return values
