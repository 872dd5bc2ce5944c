"""Replay checkpoints: a model graph, metric states and progress, restored in place."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from okoco.persistence._archive import _Damaged, _read, _write, collector_paused
from okoco.persistence._decode import _Decoder
from okoco.persistence._encode import _Encoder
from okoco.persistence._format import CHECKPOINT_FORMAT_NAME, FORMAT_VERSION, _version
from okoco.persistence._registry import _RIVER_PIPELINE, _RIVER_UNION, _class_path, _is_wrapper

#: What a wrapper's constructor rebuilds around the model it wraps (never saved): the wrapped
#: model (saved apart), river's bound ``func`` / ``inverse_func``, and a lock.
_REBUILT = frozenset({"regressor", "func", "inverse_func"})
_LOCKS = (type(threading.Lock()), type(threading.RLock()))


def _rebuilt(wrapper: Any) -> set:
    """The attributes of ``wrapper`` that its constructor rebuilds, not saved: the wrapped
    model (river's ``_wrapped_model``), river's ``func`` / ``inverse_func``, a lock."""
    inner = wrapper._wrapped_model
    return {name for name, value in vars(wrapper).items()
            if name in _REBUILT or name == "_lock" or isinstance(value, _LOCKS)
            or value is inner}


#: The river compositions a model graph holds by structure: each one's marker in the file and
#: the attribute that maps its parts' names to the parts (a pipeline's steps in order, a
#: union's transformers).
_COMPOSITIONS = {_RIVER_PIPELINE: ("__pipeline__", "steps"),
                 _RIVER_UNION: ("__union__", "transformers")}


def _parts(obj: Any) -> Mapping | None:
    """The named parts of a river pipeline or union (``None`` for anything else)."""
    composition = _COMPOSITIONS.get(_class_path(type(obj)))
    return None if composition is None else getattr(obj, composition[1])


def _capture(enc: _Encoder, obj: Any, where: str) -> Any:
    """Encode a model graph: river pipelines, unions and target scalers by structure, the rest
    whole."""
    path = _class_path(type(obj))
    if path in _COMPOSITIONS:
        marker, parts = _COMPOSITIONS[path]
        return {marker: [[str(name), _capture(enc, part, f"{where}[{name!r}]")]
                         for name, part in getattr(obj, parts).items()]}
    if _is_wrapper(path):
        # func / inverse_func are bound methods of the wrapper itself: rebuilt by the caller;
        # the wrapped model is saved under "regressor" (the name of every wrapper's until the
        # shared one's)
        rebuilt = _rebuilt(obj)
        attrs = {k: enc.encode(v, f"{where}.{k}") for k, v in vars(obj).items()
                 if k not in rebuilt}
        return {"__wrapper__": path, "attrs": attrs,
                "regressor": _capture(enc, obj._wrapped_model, f"{where}.regressor")}
    return enc.encode(obj, where)


def _transplant(dec: _Decoder, obj: Any, tree: Any, where: str, plan: list) -> None:
    """Plan the restoration of ``tree`` into the existing (identically built) ``obj``.

    Everything is decoded and checked first; ``plan`` collects ``(object, attributes, replace)``
    and nothing is modified until the whole checkpoint is known to fit.
    """
    marker = next((m for m, _ in _COMPOSITIONS.values()
                   if isinstance(tree, dict) and m in tree), None)
    if marker is not None:
        what = marker.strip("_")
        parts, saved = _parts(obj), tree[marker]
        if type(saved) is not list or not all(type(p) is list and len(p) == 2 for p in saved):
            raise ValueError(f"the checkpoint's {what} at {where} must be a list of pairs")
        names = [name for name, _ in saved]
        kind = _COMPOSITIONS.get(_class_path(type(obj)), (None,))[0]
        if kind != marker or [str(n) for n in parts] != names:
            have = list(parts) if parts is not None else type(obj).__name__
            raise ValueError(f"the checkpoint's {what} at {where} has parts {names}, the model "
                             f"has {have}")
        for (name, sub), part in zip(saved, parts.values()):
            _transplant(dec, part, sub, f"{where}[{name!r}]", plan)
        return
    if isinstance(tree, dict) and "__wrapper__" in tree:
        attrs = {k: dec.decode(v) for k, v in tree["attrs"].items()}
        if _class_path(type(obj)) != tree["__wrapper__"]:
            attrs = _counterpart_state(obj, tree["__wrapper__"], attrs, where,
                                       kept=_rebuilt(obj))
        plan.append((obj, attrs, False))
        _transplant(dec, obj._wrapped_model, tree["regressor"], f"{where}.regressor", plan)
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


@collector_paused
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
