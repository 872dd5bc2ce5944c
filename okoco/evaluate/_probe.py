"""What a model holds, found through pipelines and wrappers: its loss, its dictionary size,
the bytes its arrays use."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from okoco.losses import Squared

__all__ = []


def _children(obj: Any) -> list[Any]:
    out = []
    steps = getattr(obj, "steps", None)
    if isinstance(steps, Mapping):
        out.extend(steps.values())
    for attr in ("regressor", "classifier", "learner", "model"):
        child = getattr(obj, attr, None)
        if child is not None and not isinstance(child, (str, numbers.Number)):
            out.append(child)
    return out


def _find(model: Any, attr: str) -> Any:
    """The first object in the model (depth first: wrappers, pipeline steps) having ``attr``."""
    todo, seen = [model], set()
    while todo:
        obj = todo.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if hasattr(type(obj), attr) or attr in getattr(obj, "__dict__", {}):
            return obj
        todo.extend(_children(obj))
    return None


#: Attributes that count the rows in use of an object's growing buffers (okoco's point stores,
#: factorizations and dictionaries keep spare capacity, doubled as they grow).
_COUNTS = ("n", "_m", "_size")


def _nbytes(obj: Any, depth: int = 8, seen: set | None = None,
            used: tuple[int, int | None] | None = None) -> int:
    """Bytes in use in the numpy arrays reachable from ``obj`` (attributes, lists, dicts), down
    to ``depth`` levels (a multiclass wrapper's Auto's experts' inverses are 6 levels down).

    Spare capacity is not counted: the arrays of an object that counts its rows (``n``,
    ``_m`` or ``_size``) count those leading rows only, and a packed triangle of capacity
    ``_cap`` its ``m (m + 1) / 2`` leading entries. (Untouched capacity costs no resident
    memory either: numpy's zeros come from pages the system maps on first write.)
    """
    seen = set() if seen is None else seen
    if id(obj) in seen or depth < 0:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.base is not None and id(obj.base) in seen:
            return 0
        return _used_bytes(obj, used)
    if isinstance(obj, (str, bytes, numbers.Number, type)) or obj is None:
        return 0
    if isinstance(obj, Mapping):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        items, used = list(obj), None
    else:
        state = getattr(obj, "__dict__", {})
        items = list(state.values())
        if hasattr(obj, "__slots__"):
            items += [getattr(obj, s, None) for s in obj.__slots__]
        count = next((state[k] for k in _COUNTS if isinstance(state.get(k), int)
                      and not isinstance(state.get(k), bool)), None)
        cap = state.get("_cap")
        used = None if count is None else (count, cap if isinstance(cap, int) else None)
    if len(items) > 10_000:
        return 0  # a data buffer of Python objects; not the model's arrays
    return sum(_nbytes(item, depth - 1, seen, used) for item in items)


def _used_bytes(a: np.ndarray, used: tuple[int, int | None] | None) -> int:
    if used is None or a.ndim == 0 or a.shape[0] == 0:
        return int(a.nbytes)
    m, cap = used
    if a.ndim == 1 and cap is not None and a.shape[0] == cap * (cap + 1) // 2:
        return min(m * (m + 1) // 2, a.shape[0]) * a.itemsize
    return min(m, a.shape[0]) * (a.nbytes // a.shape[0])


def _memory(model: Any) -> int:
    core = _find(model, "dictionary_size")
    return _nbytes(core if core is not None else model)


def _dictionary_size(core: Any) -> float:
    if core is None:
        return math.nan
    try:
        return float(core.dictionary_size)
    except Exception:  # noqa: BLE001 - a diagnostic must never stop the run
        return math.nan


def _model_loss(model: Any) -> Any:
    owner = _find(model, "loss")
    loss = getattr(owner, "_loss", None) or getattr(owner, "loss", None)
    if loss is None or not hasattr(loss, "value"):
        return Squared()
    return loss


def _describe(model: Any) -> str:
    core = _find(model, "dictionary_size")
    return type(core if core is not None else model).__name__


def _last(values: Any) -> float:
    if values is None:
        return math.nan
    try:
        return float(values[-1]) if len(values) else math.nan
    except (TypeError, IndexError):
        return math.nan
