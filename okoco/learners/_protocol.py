"""The step protocol an owner drives its experts by (:class:`StepProtocol`, public as
``okoco.learners.base.StepProtocol``), the one home of an owner's step order
(:func:`take_steps`), and the memo of a row's analysis (:class:`Memo`)."""

from __future__ import annotations

import abc

import numpy as np

__all__ = ["StepProtocol", "take_steps", "Memo"]


class StepProtocol(abc.ABC):
    r"""The step protocol: one learning step in four phases, the same methods and records for
    every kind of expert an owner drives (``KONS``, ``SketchedKONS``, and ``Auto``'s ONS heads
    ``DictionaryExpert`` and ``LinearExpert``), so that ``Auto`` and ``MulticlassClassifier``
    drive them all alike, and a standalone ``learn_one`` takes the same phases.

    ``analyse(v, shared)``
        No state change. The expert's record of the row ``v`` (a named record with at least
        ``ybar``, the unclipped prediction: KONS's ``okoco._core._records.Analysis``, a
        head's ``okoco.learners.ons.HeadAnalysis``). ``shared``
        (``okoco.learners.shared.StepShared``) holds what the owner's experts share in the
        step: the kernel row of the shared points for a kernel (computed once per distinct
        kernel), ``k(x, x)``, and the embeddings of the owner's dictionaries; a standalone
        learner passes ``None``.
    ``check(y, analysis)``
        No state change. The step at the target ``y`` (a named record: KONS's
        ``okoco._core._records.Step``, a head's ``okoco.learners.ons.HeadStep``), with the
        expert's own step size; raises ``ValueError`` if it would be refused. An owner checks
        every expert's step before it applies any, so a refused step changes nothing.
    ``apply(v, analysis, step)``
        Learn the checked step and count it (``n_seen``). The owner then stores ``v`` in
        the points it shares (``StepShared.store_point``) once every expert applied its step.
    ``forget()``
        The step's end: a window forgets its oldest point (once ``v`` is stored); a no-op
        for an expert that forgets nothing.
    """

    @abc.abstractmethod
    def analyse(self, v: np.ndarray, shared=None):
        """The record of the row ``v`` (no state change)."""

    @abc.abstractmethod
    def check(self, y: float, analysis):
        """The step at the target ``y``; ``ValueError`` if refused (no state change)."""

    @abc.abstractmethod
    def apply(self, v: np.ndarray, analysis, step) -> None:
        """Learn the checked ``step``, and count it."""

    @abc.abstractmethod
    def forget(self) -> None:
        """The step's end: a window's oldest point leaves (a no-op for other experts)."""


def take_steps(experts, v: np.ndarray, analyses, targets, store, checked=None,
               applied=None) -> None:
    """One step of an owner's experts, in the protocol's order (:class:`StepProtocol`), the
    one home of that order for ``Auto``, its multiclass form and ``MulticlassClassifier``:
    every expert's step checked at its target (``targets``, one per expert) before any is
    applied, so that a refusal raises with nothing changed; then ``checked()`` (``Auto``'s
    dictionaries' coins), every step applied, ``applied()`` (a full dictionary's swap),
    ``store()`` (the owner stores ``v`` in its shared points) and every expert's ``forget``."""
    steps = [expert.check(y, analysis) for expert, y, analysis in zip(experts, targets, analyses)]
    if checked is not None:
        checked()
    for expert, analysis, step in zip(experts, analyses, steps):
        expert.apply(v, analysis, step)
    if applied is not None:
        applied()
    store()
    for expert in experts:
        expert.forget()


class Memo:
    """A mixin: the analysis of the last row, kept for a ``learn_one`` after ``predict_one``
    on the same row (test-then-train calls both on each row, and the expensive part, the kernel
    rows and solves, is the same)."""

    _cache = None

    def _memoised(self, state, v: np.ndarray, compute):
        """``compute(v)``, kept in ``_cache`` for the ``state`` (a number that changes with
        every step: the steps taken, the points stored) and the row ``v``, and reused while
        both are the same. Rows are compared by their bytes: equal bytes are equal floats
        (``-0.0`` against ``0.0`` only computes again)."""
        cache, key = self._cache, v.tobytes()
        if cache is not None and cache[0] == state and cache[1] == key:
            return cache[2]
        result = compute(v)
        self._cache = (state, key, result)
        return result
