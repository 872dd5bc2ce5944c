"""okoco: online learning with kernels and convex losses.

Second-order kernel learners with regret guarantees (KONS, Sketched-KONS), first-order and
least-squares baselines (functional gradient descent, OKS-KRLS), the ridge-leverage-score
dictionaries they share, a regret tracker against offline comparators, progressive validation
and the ``okoco`` command line.

The names below are imported on first use (PEP 562), so that ``import okoco`` and the ``okoco``
command start without loading scipy and river: ``okoco --help`` needs neither.

Examples
--------
>>> import okoco
>>> okoco.BinaryClassifier.__name__, okoco.kernels.RBF(gamma=2.0)
('BinaryClassifier', RBF(gamma=2.0))
"""

from __future__ import annotations

import importlib
from typing import Any

from okoco._version import __version__

__all__ = ["kernels", "losses", "BinaryClassifier", "MulticlassClassifier", "save", "load",
           "__version__"]

#: public name -> module that defines it (a submodule when the name is the module itself)
_LAZY = {
    "kernels": "okoco.kernels",
    "losses": "okoco.losses",
    "BinaryClassifier": "okoco.learners",
    "MulticlassClassifier": "okoco.learners",
    "save": "okoco.pipelines",
    "load": "okoco.pipelines",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'okoco' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    value = module if module.__name__ == f"okoco.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
