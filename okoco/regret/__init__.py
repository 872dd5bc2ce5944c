"""Regret against offline comparators, and the theoretical bounds it is compared with.

- :class:`RegretTracker` scores a learner step by step against a comparator refitted on each
  checkpoint's prefix;
- :mod:`okoco.regret.comparators`: ``fit(X, y)`` / ``predict(X)`` offline solutions
  (:class:`ClippedKernelERM`, the paper's comparator class; :class:`KernelERM` for any loss,
  :class:`KernelRidge` in closed form; :class:`NystromKernelERM`, any of them on ``m``
  landmarks; :class:`BestConstant`);
- :mod:`okoco.regret.bounds`: Theorem 1 and 3 of Calandriello et al. (2017) as curves.
"""

from okoco import persistence
from okoco.regret import bounds
from okoco.regret.comparators import (
    BestConstant,
    ClippedKernelERM,
    KernelERM,
    KernelRidge,
    NystromKernelERM,
)
from okoco.regret.tracker import RegretTracker, log_checkpoints

# okoco.save / okoco.load take a tracker whole, with its comparator
persistence.register(RegretTracker, learner=True)
persistence.register(BestConstant, ClippedKernelERM, KernelERM, KernelRidge, NystromKernelERM)

__all__ = [
    "RegretTracker",
    "bounds",
    "log_checkpoints",
    "BestConstant",
    "ClippedKernelERM",
    "KernelERM",
    "KernelRidge",
    "NystromKernelERM",
]
