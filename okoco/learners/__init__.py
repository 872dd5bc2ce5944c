"""Online kernel learners sharing one ``predict_one`` / ``learn_one`` protocol."""

from okoco.learners.auto import Auto
from okoco.learners.base import KernelLearner
from okoco.learners.binary import BinaryClassifier
from okoco.learners.fgd import FunctionalGD
from okoco.learners.kons import KONS, SketchedKONS
from okoco.learners.krls import KRLS

__all__ = ["Auto", "KernelLearner", "BinaryClassifier", "FunctionalGD", "KONS", "SketchedKONS", "KRLS"]
