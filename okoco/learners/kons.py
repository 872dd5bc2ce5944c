"""Kernel Online Newton Step and its sketched variant (Calandriello, Lazaric & Valko, ICML 2017):
the public (and saved) path of :class:`KONS` and :class:`SketchedKONS`.

KONS, the core both share, lives in :mod:`okoco.learners._newton`; Sketched-KONS extends it in
:mod:`okoco.learners.sketched_kons`. This module imports both, and neither imports it: there is
no import cycle between them. KONS's numerical guards are re-exported for the shared
multiclass step (``okoco.learners._multiclass_shared``).
"""

from okoco.learners._newton import (  # noqa: F401 (the guards, re-exported)
    _MAX_D,
    _MIN_RIDGE_RATIO,
    _MIN_S,
    _S_RTOL,
    DEFAULT_MAX_SIZE,
    KONS,
    singular_message,
)
from okoco.learners.sketched_kons import SketchedKONS

__all__ = ["KONS", "SketchedKONS"]
