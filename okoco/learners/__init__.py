"""Online kernel learners sharing one ``predict_one`` / ``learn_one`` protocol."""

from okoco import persistence
from okoco._input import FeatureMap
from okoco.dictionary import ALD, KORS
from okoco.learners._multiclass_auto import SharedSquaredAuto
from okoco.learners._multiclass_shared import SharedSquaredKONS
from okoco.learners.auto import Auto, ExpertRows, SharedPoints
from okoco.learners.base import KernelLearner, StepSize
from okoco.learners.binary import BinaryClassifier
from okoco.learners.embedding import SharedEmbedding
from okoco.learners.fgd import FunctionalGD
from okoco.learners.kons import KONS, SketchedKONS
from okoco.learners.krls import KRLS
from okoco.learners.multiclass import MulticlassClassifier
from okoco.learners.ons import DictionaryExpert, LinearExpert
from okoco.learners.pros import CONKONS, PROSNKONS
from okoco.linalg import IncrementalCholesky, PackedSymmetric, Rows, ScaledIdentity, SlotInverse

__all__ = ["Auto", "KernelLearner", "BinaryClassifier", "FunctionalGD", "KONS", "SketchedKONS",
           "KRLS", "PROSNKONS", "CONKONS", "MulticlassClassifier"]

# What okoco files may hold: the learners, and every part a learner is built from.
persistence.register(KONS, SketchedKONS, FunctionalGD, KRLS, PROSNKONS, CONKONS, Auto,
                     BinaryClassifier, MulticlassClassifier, learner=True)
persistence.register(FeatureMap, Rows, StepSize, IncrementalCholesky, PackedSymmetric,
                     ScaledIdentity, SlotInverse, KORS, ALD, SharedPoints, ExpertRows,
                     SharedSquaredKONS, SharedSquaredAuto, SharedEmbedding, DictionaryExpert,
                     LinearExpert)
