"""One call at a time: the lock the learners, the wrappers and the scalers share.

An object that threads may share holds ``self._lock`` (a ``threading.Lock``) and runs its
public methods through :func:`one_at_a_time`. The lock is no part of its state (:class:`Locked`):
a copy, a pickle, a clone or a loaded file gets a lock of its own, and ``okoco.save`` holds it
while it encodes the object.
"""

from __future__ import annotations

import copy
import functools
import threading


def one_at_a_time(method):
    """Run ``method`` holding its object's ``_lock``: an object shared between threads takes
    one call at a time (a step is never interleaved with another step or a prediction)."""

    @functools.wraps(method)
    def serialized(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return serialized


class Locked:
    """An object whose calls take ``self._lock`` one at a time (:func:`one_at_a_time`), with
    the lock no part of its state."""

    #: Attributes the constructor builds, which a clone keeps as its own.
    _built_by_init = frozenset({"_lock"})

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def clone(self, new_params: dict | None = None, include_attributes: bool = False):
        """river's ``clone``. With ``include_attributes`` (river's ``TransformerUnion`` asks for
        it) the state is copied whole under the lock, a wrapped learner's with it (parts shared
        between attributes stay shared in the copy), but for the parameters in ``new_params``;
        the copy keeps its own lock and what else its constructor built."""
        twin = super().clone(new_params)
        if include_attributes:
            skip = self._built_by_init | set(new_params or ())
            with self._lock:
                state = {name: value for name, value in self.__getstate__().items()
                         if name not in skip}
                twin.__dict__.update(copy.deepcopy(state))
        return twin
