"""Online kernel learners sharing one ``predict_one`` / ``learn_one`` protocol."""

from okoco.learners.base import KernelLearner
from okoco.learners.binary import BinaryClassifier
from okoco.learners.fgd import FunctionalGD
from okoco.learners.kons import KONS, SketchedKONS
from okoco.learners.krls import KRLS
from okoco.learners.pros import CONKONS, PROSNKONS

__all__ = ["KernelLearner", "BinaryClassifier", "FunctionalGD", "KONS", "SketchedKONS", "KRLS",
           "PROSNKONS", "CONKONS"]
