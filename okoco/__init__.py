"""okoco: online learning with kernels and convex losses.

Second-order kernel learners with regret guarantees (KONS, Sketched-KONS), first-order and
least-squares baselines (functional gradient descent, OKS-KRLS), the ridge-leverage-score
dictionaries they share, a regret tracker against offline comparators, progressive validation
and the ``okoco`` command line.
"""

from okoco import kernels, losses
from okoco._version import __version__
from okoco.learners import BinaryClassifier
from okoco.persistence import load

__all__ = ["kernels", "losses", "BinaryClassifier", "load", "__version__"]
