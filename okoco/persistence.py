r"""Save and load learners, and the checkpoints of a replay, without pickle.

A saved learner is **one** ``.npz`` archive (``numpy.savez``) that holds

- every numpy array of the learner's state, under the names ``a0``, ``a1``, ...; the trailing
  all-zero rows of an array (the spare capacity of the doubling buffers) are not written but
  restored as zeros on loading, so the file grows with the samples seen, not with the capacity,
  and the loaded learner is still the same object graph, buffer for buffer, bit for bit;
- a JSON document in the 0-d unicode array ``__okoco__`` with the format name
  (``"okoco-model"``), the format version, the okoco version that wrote it, the class path
  (``"okoco.learners.kons.KONS"``), the constructor parameters and the rest of the state (floats,
  counters, feature names, the random generator's ``bit_generator.state``), where each array is a
  reference ``{"__array__": "a3"}`` (or ``{"__padded__": "a3", "rows": 512}`` when the
  archive holds only the leading rows of an array of 512 rows).

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

Versioning: ``FORMAT_VERSION`` is bumped whenever the layout of the file or the saved state of a
learner changes; :func:`load` reads the versions in ``SUPPORTED_VERSIONS`` and refuses any other
with a ``ValueError`` naming the version found and the versions supported. As a second guard the
loaded state must have exactly the attributes a freshly constructed learner of the same class
has. A damaged file (cut short, edited, an entry missing or of the wrong kind) raises one
``ValueError`` that names the file and what is wrong.

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

import collections
import functools
import importlib
import inspect
import itertools
import json
import math
import os
import tokenize
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from okoco import kernels, losses
from okoco._io import atomic_write
from okoco._version import __version__

__all__ = ["save", "load", "read_metadata", "register", "FORMAT_NAME", "FORMAT_VERSION",
           "SUPPORTED_VERSIONS"]

FORMAT_NAME = "okoco-model"
CHECKPOINT_FORMAT_NAME = "okoco-replay-checkpoint"
FORMAT_VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)
META_KEY = "__okoco__"

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
        if kind is collections.deque:
            return {"__deque__": [self.encode(x, f"{where}[{i}]") for i, x in enumerate(v)],
                    "maxlen": v.maxlen}
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
            attrs = _attributes(v)
            return {"__obj__": path, "id": ident,
                    "attrs": {k: self.encode(x, f"{where}.{k}") for k, x in attrs.items()}}
        raise TypeError(_unsupported(v, where))


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


# -- decoding -----------------------------------------------------------------------------------


class _Decoder:
    def __init__(self, arrays: Mapping[str, np.ndarray], river: bool = False):
        self.arrays = arrays
        self.river = river
        self.objects: dict[int, Any] = {}

    def _keep(self, tree: Mapping, value: Any) -> Any:
        self.objects[int(tree["id"])] = value
        return value

    def pairs(self, items) -> list:
        return [(self.decode(k), self.decode(v)) for k, v in items]

    def decode(self, tree: Any) -> Any:
        if tree is None or type(tree) in (bool, str, int, float):
            return tree
        if type(tree) is list:
            return [self.decode(x) for x in tree]
        if type(tree) is not dict:
            raise ValueError(f"unexpected value {tree!r} in the file")
        marker = next((k for k in tree if k.startswith("__")), None)
        if marker is None:
            return {k: self.decode(v) for k, v in tree.items()}
        if marker == "__ref__":
            return self.objects[int(tree["__ref__"])]
        if marker == "__float__":
            return float(tree["__float__"])
        if marker == "__np__":
            dtype = np.dtype(tree["__np__"])
            if dtype.hasobject:
                raise ValueError("the file holds a numpy object scalar, which okoco never loads")
            return dtype.type(self.decode(tree["v"]))
        if marker == "__tuple__":
            return tuple(self.decode(x) for x in tree["__tuple__"])
        if marker == "__set__":
            return {self.decode(x) for x in tree["__set__"]}
        if marker == "__frozenset__":
            return frozenset(self.decode(x) for x in tree["__frozenset__"])
        if marker == "__dict__":
            return dict(self.pairs(tree["__dict__"]))
        if marker == "__odict__":
            return collections.OrderedDict(self.pairs(tree["__odict__"]))
        if marker == "__deque__":
            return collections.deque(self.decode(tree["__deque__"]), maxlen=tree["maxlen"])
        if marker == "__counter__":
            return collections.Counter(dict(self.pairs(tree["__counter__"])))
        if marker == "__defaultdict__":
            factory = _FACTORIES[tree["__defaultdict__"]]
            return collections.defaultdict(factory, self.pairs(tree["items"]))
        if marker == "__array__":
            array = self.arrays[tree["__array__"]]
            if array.base is not None or not array.flags.writeable:
                array = array.copy()  # own the buffer, like the array that was saved
            return self._keep(tree, array)
        if marker == "__padded__":
            head, rows = self.arrays[tree["__padded__"]], tree["rows"]
            if type(rows) is not int or head.ndim == 0 or not head.shape[0] <= rows:
                raise ValueError(f"an array of {rows!r} rows cannot hold the "
                                 f"{head.shape[:1]} rows saved")
            array = np.zeros((rows, *head.shape[1:]), dtype=head.dtype)
            array[: head.shape[0]] = head
            return self._keep(tree, array)
        if marker == "__generator__":
            name = tree["__generator__"]
            if name not in _BIT_GENERATORS:
                raise ValueError(f"unknown bit generator {name!r} in the file")
            gen = self._keep(tree, np.random.Generator(getattr(np.random, name)()))
            gen.bit_generator.state = self.decode(tree["state"])
            return gen
        if marker == "__kernel__":
            name = tree["__kernel__"]
            if name not in _KERNELS:
                raise ValueError(f"unknown kernel {name!r} in the file")
            return self._keep(tree, getattr(kernels, name)(**self.decode(tree["params"])))
        if marker == "__loss__":
            name = tree["__loss__"]
            if name not in _LOSSES:
                raise ValueError(f"unknown loss {name!r} in the file")
            return self._keep(tree, getattr(losses, name)())
        if marker == "__obj__":
            path = tree["__obj__"]
            if not _allowed(path, self.river):
                raise ValueError(f"the file asks for a {path!r} object, which okoco never "
                                 "loads")
            cls = _resolve(path)
            obj = self._keep(tree, cls.__new__(cls))
            obj.__dict__.update({k: self.decode(v) for k, v in tree["attrs"].items()})
            return obj
        raise ValueError(f"unknown entry {marker!r} in the file")


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
    meta, _ = _read(path, None, arrays=False)
    return meta


def _read(path: str | os.PathLike, expected: str | None, *,
          arrays: bool = True) -> tuple[dict, dict[str, np.ndarray]]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{str(path)!r} is not an okoco file (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if META_KEY not in archive.files:
                raise ValueError(f"{str(path)!r} is an .npz archive but not an okoco file "
                                 f"(no {META_KEY!r} entry)")
            text = str(archive[META_KEY])
            loaded = {name: archive[name] for name in archive.files
                      if arrays and name != META_KEY}
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise ValueError(f"{str(path)!r} holds object arrays (pickled Python objects); okoco "
                             "files never do and loading them could run code, so it is refused"
                             ) from None
        if str(path) in str(error):
            raise
        raise ValueError(f"{str(path)!r} is not a readable okoco file (damaged archive: "
                         f"{error})") from None
    except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError, tokenize.TokenError,
            SyntaxError, KeyError) as error:
        # a cut or edited archive: numpy and zipfile raise all of these
        raise ValueError(f"{str(path)!r} is not a readable okoco file (damaged archive: "
                         f"{type(error).__name__}: {error})") from None
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{str(path)!r}: the okoco metadata is not valid JSON ({error})") from None
    if not isinstance(meta, dict) or meta.get("format") not in (FORMAT_NAME,
                                                                CHECKPOINT_FORMAT_NAME):
        raise ValueError(f"{str(path)!r} is not an okoco file (unknown format "
                         f"{meta.get('format') if isinstance(meta, dict) else None!r})")
    version = meta.get("format_version")
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise ValueError(
            f"{str(path)!r} has okoco file format version {version!r} (written by okoco "
            f"{meta.get('okoco_version', '?')}); this okoco {_version()} reads format version "
            f"{supported} only"
        )
    if version == 1:
        try:
            meta = _upgrade_v1(meta)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{str(path)!r} is not a readable okoco file (damaged version-1 "
                             f"metadata: {type(error).__name__}: {error})") from None
    if expected is not None and meta["format"] != expected:
        what = "a replay checkpoint" if meta["format"] == CHECKPOINT_FORMAT_NAME else "a model"
        raise ValueError(f"{str(path)!r} is {what} ({meta['format']!r}), not {expected!r}")
    return meta, loaded


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


class _Damaged:
    """Turn any error met while rebuilding a file's objects into one ``ValueError``.

    A file that passed :func:`_read` can still be damaged inside (an entry missing, a list
    where a mapping belongs, a reference to an array that is not there, saved parameters the
    constructor refuses): the decoder then raises ``KeyError``, ``TypeError``, ``IndexError``,
    ``AttributeError`` or ``ValueError``, and the user gets one ``ValueError`` naming the file.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)

    def __enter__(self) -> _Damaged:
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if kind is None or not issubclass(kind, (KeyError, TypeError, IndexError, AttributeError,
                                                 ValueError)):
            return False
        if issubclass(kind, ValueError):
            if self.path in str(error):
                return False  # already says which file
            raise ValueError(f"{self.path!r}: {error}") from error
        detail = f"missing entry {error}" if kind is KeyError else str(error)
        raise ValueError(f"{self.path!r} is damaged or was edited ({kind.__name__}: {detail})"
                         ) from error


# -- learners -----------------------------------------------------------------------------------


def save(model: Any, path: str | os.PathLike, *, compress: bool = False) -> Path:
    """Save an okoco learner (or ``BinaryClassifier``) to ``path``, atomically.

    The file is written to a temporary file in the same folder and renamed into place, so an
    interruption leaves any previous file intact. ``path`` is used as given (no suffix added).

    Parameters
    ----------
    model
        A ``KONS``, ``SketchedKONS``, ``FunctionalGD``, ``KRLS`` or ``BinaryClassifier``.
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
        The model is not an okoco learner, or holds something that cannot be saved without code
        (a user's kernel or loss class, a callable step size); the message names the attribute.

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
    state = {k: enc.encode(v, f"{name}.{k}") for k, v in _attributes(model).items()}
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "okoco_version": _version(),
            "class": cls_path, "params": params, "state": state}
    return _write(path, meta, enc.arrays, compress)


def load(path: str | os.PathLike) -> Any:
    """Load a learner saved by :func:`save` (or ``learner.save``).

    The archive is read with ``allow_pickle=False`` and only allow-listed classes are built,
    so loading never executes code from the file. Predictions and further learning are
    bit-identical to those of the learner that was saved.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not an okoco model file, an unsupported format version (the message names the version
        found and those supported), object arrays in the archive, a state that does not match
        this okoco's learner class, or a damaged file (cut short, edited): always one
        ``ValueError`` naming the file.

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
    meta, arrays = _read(path, FORMAT_NAME)
    with _Damaged(path):
        cls_path = meta.get("class")
        if not isinstance(cls_path, str) or cls_path not in _LEARNERS:
            raise ValueError(f"{str(path)!r} holds a {cls_path!r}, which is not an okoco learner")
        cls = _LEARNERS[cls_path]
        dec = _Decoder(arrays)
        params = {k: dec.decode(v) for k, v in meta["params"].items()}
        model = cls(**params)  # the constructor validates the saved parameters
        dec.objects[0] = model
        state = {k: dec.decode(v) for k, v in meta["state"].items()}
        upgrade = getattr(cls, "_upgrade_state", None)  # a learner whose state layout changed
        if upgrade is not None:
            state = upgrade(state)
    fresh = set(vars(model))
    if set(state) != fresh:
        missing, extra = sorted(fresh - set(state)), sorted(set(state) - fresh)
        raise ValueError(
            f"{str(path)!r} was written by okoco {meta.get('okoco_version')} and its "
            f"{cls.__name__} state does not match this okoco {_version()} (missing {missing}, "
            f"unexpected {extra})"
        )
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
    meta, arrays = _read(path, CHECKPOINT_FORMAT_NAME)
    with _Damaged(path):
        if len(meta["metrics"]) != len(metrics):
            raise ValueError(f"{str(path)!r} holds {len(meta['metrics'])} metrics, the run has "
                             f"{len(metrics)}")
        dec = _Decoder(arrays, river=True)
        plan: list = []
        _transplant(dec, model, meta["model"], "model", plan)
        for i, (m, tree) in enumerate(zip(metrics, meta["metrics"])):
            _transplant(dec, m, tree, f"metrics[{i}]", plan)
        progress = dec.decode(meta["progress"])
    if check is not None:
        check(progress)
    for obj, attrs, replace in plan:
        if replace:
            obj.__dict__.clear()
        obj.__dict__.update(attrs)
    return progress
