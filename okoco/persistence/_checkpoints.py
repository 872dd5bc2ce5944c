"""Replay checkpoints: a model graph, metric states and progress, restored in place."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from okoco.persistence._archive import _Damaged, _read, _write
from okoco.persistence._decode import _Decoder
from okoco.persistence._encode import _Encoder
from okoco.persistence._format import CHECKPOINT_FORMAT_NAME, FORMAT_VERSION, _version
from okoco.persistence._registry import _RIVER_PIPELINE, _class_path, _is_wrapper

#: What a target wrapper's constructor rebuilds around its regressor (never saved): the
#: regressor (saved apart), river's bound ``func`` / ``inverse_func``, and a lock.
_REBUILT = frozenset({"regressor", "func", "inverse_func"})
_LOCKS = (type(threading.Lock()), type(threading.RLock()))


def _rebuilt(name: str, value: Any) -> bool:
    """Whether a wrapper's attribute ``name`` is rebuilt by its constructor, not saved."""
    return name in _REBUILT or isinstance(value, _LOCKS) or name == "_lock"


def _capture(enc: _Encoder, obj: Any, where: str) -> Any:
    """Encode a model graph: river pipelines and target scalers by structure, the rest whole."""
    path = _class_path(type(obj))
    if path == _RIVER_PIPELINE:
        return {"__pipeline__": [[str(name), _capture(enc, step, f"{where}[{name!r}]")]
                                 for name, step in obj.steps.items()]}
    if _is_wrapper(path):
        # func / inverse_func are bound methods of the wrapper itself: rebuilt by the caller.
        attrs = {k: enc.encode(v, f"{where}.{k}") for k, v in vars(obj).items()
                 if not _rebuilt(k, v)}
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
                                       kept={k for k, v in vars(obj).items() if _rebuilt(k, v)})
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
