"""The allow-list: the classes okoco files may hold, registered by the layers above."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

#: The learners :func:`save` accepts, by class path (exact classes: a subclass may hold more
#: state). Filled by :func:`register`.
_LEARNERS: dict[str, type] = {}

#: Classes restored attribute by attribute (``cls.__new__`` then ``__dict__``, no ``__init__``),
#: by class path: the learners and their parts. Filled by :func:`register`.
_OBJECTS: dict[str, type] = {}

#: Target wrappers (rebuilt around their regressor), by class path. Filled by :func:`register`.
_WRAPPERS: dict[str, type] = {}

#: Every registered class (objects and learners) by its stable name, the name files hold
#: (since format 10): a class may move between modules without a file noticing. Files of
#: formats up to 9 name classes by module path (``okoco.persistence._migrations`` maps them).
_NAMES: dict[str, type] = {}
_NAME_OF: dict[type, str] = {}

#: Extra classes a replay checkpoint or a pipeline's file may hold (river preprocessing, metrics
#: and statistics): river's scaler, the encoders of text features the command line uses
#: (``okoco.preprocessing.encode_text``: their state is plain data, categories and a seed) and
#: the selection of a union's numeric features.
_RIVER_CLASSES = frozenset({
    "river.preprocessing.scale.StandardScaler",
    "river.preprocessing.one_hot.OneHotEncoder",
    "river.preprocessing.feature_hasher.FeatureHasher",
    "river.compose.select.Discard",
})

_RIVER_MODULES = ("river.metrics.", "river.stats.")

_RIVER_PIPELINE = "river.compose.pipeline.Pipeline"
_RIVER_UNION = "river.compose.union.TransformerUnion"

_RIVER_TARGET_WRAPPERS = frozenset({
    "river.preprocessing.scale_target.TargetStandardScaler",
})


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _stable_name(cls: type) -> str | None:
    """The name files give a registered class (``None``: not registered)."""
    return _NAME_OF.get(cls)


def _key(cls: type) -> str:
    """The key of ``cls`` in the tables of invariants and migrations: its stable name if it
    is registered, else its class path (a base class, river's)."""
    return _NAME_OF.get(cls) or _class_path(cls)


def register(*classes: type, learner: bool = False, wrapper: bool = False,
             name: str | None = None) -> None:
    """Allow ``classes`` in okoco files: their objects are saved and restored attribute by
    attribute (``cls.__new__``, then the saved ``__dict__``; ``__init__`` is not run).

    A file names each class by a stable name, ``name`` or by default the class's
    ``__qualname__`` (``"KONS"``), not by its module: moving a class to another module changes
    no file. A name is given to one class only (``TypeError`` otherwise).

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
    >>> persistence.registered_name(KONS)
    'KONS'
    """
    if name is not None and len(classes) != 1:
        raise TypeError("register gives a name to one class at a time")
    for cls in classes:
        if not isinstance(cls, type):
            raise TypeError(f"register takes classes, got {cls!r}")
        if wrapper:
            _WRAPPERS[_class_path(cls)] = cls
            continue
        stable = name or cls.__qualname__
        known = _NAMES.get(stable)
        if known is not None and known is not cls and _class_path(known) != _class_path(cls):
            raise TypeError(f"the stable name {stable!r} is {_class_path(known)}'s; give "
                            f"{_class_path(cls)} another (register(..., name=...))")
        _NAMES[stable], _NAME_OF[cls] = cls, stable
        _OBJECTS[_class_path(cls)] = cls
        if learner:
            _LEARNERS[_class_path(cls)] = cls


def registered_name(cls: type) -> str:
    """The stable name okoco files give the registered class ``cls`` (``KeyError`` if it is
    not registered)."""
    return _NAME_OF[cls]


def registered(learners: bool = False) -> tuple[str, ...]:
    """The class paths okoco files may hold (only the learners if ``learners``)."""
    return tuple(_LEARNERS if learners else _OBJECTS)


def _allowed(path: str, river: bool) -> bool:
    """Whether a file may name ``path`` (a stable name, or a registered class path)."""
    if path in _NAMES or path in _OBJECTS:
        return True
    return river and (path in _RIVER_CLASSES or path.startswith(_RIVER_MODULES))


def _is_wrapper(path: str) -> bool:
    return path in _WRAPPERS or path in _RIVER_TARGET_WRAPPERS


def _resolve(path: str) -> type:
    if path in _NAMES:
        return _NAMES[path]
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
