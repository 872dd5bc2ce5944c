"""Any okoco regressor as a river binary classifier (labels mapped to -1 / +1)."""

from __future__ import annotations

import math
import threading

import numpy as np
from river import base

from okoco import losses, persistence
from okoco._checks import check_label, in_row
from okoco._locking import Locked, one_at_a_time
from okoco._validation import Protocol, check_params
from okoco.learners.fgd import FunctionalGD

__all__ = ["BinaryClassifier"]


class _Label:
    """The constraint on a class label (``pos_label``): the classifiers' one rule,
    ``okoco._checks.check_label`` (a single hashable value, equal to itself: NaN never is, so
    it could never be matched or predicted)."""

    def accepts_type(self, value) -> bool:
        try:
            check_label(value)
        except TypeError:
            return value is None  # None is "not given" (the parameter's other option)
        except ValueError:
            pass  # a NaN: the right type, refused by convert
        return True

    def convert(self, value):
        return value if value == value else None

    def __str__(self) -> str:
        return "a single hashable label equal to itself"


LABEL = _Label()


class BinaryClassifier(Locked, base.Wrapper, base.MiniBatchClassifier):
    r"""Binary classification with an okoco learner that predicts :math:`f(x) \in [-C, C]`.

    Two labels are mapped to :math:`\pm1` and the wrapped learner learns them as targets,
    so use a classification loss (``Logistic`` or ``SquaredHinge``) for a proper classifier.

    A label is a single hashable value equal to itself (``okoco._checks.check_label``):
    ``None``, containers (``([1],)``, a list, an array) and unhashable values are a
    ``TypeError``, NaN a ``ValueError``, and a refused label changes nothing.

    Which label is :math:`+1`: ``pos_label`` if given; otherwise ``True`` (or ``1``) when the
    labels are booleans or 0/1 and ±1 integers, else the first label seen. The other label seen
    is :math:`-1`; a third label is a ``ValueError`` and leaves the learner untouched.

    ``predict_proba_one`` gives :math:`P(+1) = 1/(1+e^{-f})` for the logistic loss and
    :math:`\mathrm{clip}((1+f)/2, 0, 1)` otherwise. Before any label is seen the labels are
    taken to be ``False`` / ``True``, river's convention.

    Parameters
    ----------
    learner
        An okoco regressor, e.g. ``KONS(loss=losses.Logistic())``.
    pos_label
        The label mapped to :math:`+1` (optional).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco import BinaryClassifier, losses
    >>> from okoco.learners import FunctionalGD
    >>> model = preprocessing.StandardScaler() | BinaryClassifier(
    ...     FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 89.52%
    """

    _parameter_constraints = {
        "learner": [None, Protocol("an okoco regressor (with learn_one and predict_one)",
                                   "learn_one", "predict_one")],
        "pos_label": [None, LABEL],
    }

    #: Saved state (okoco.persistence): the labels in order of appearance; a memo is a cache.
    _saved_state = {"learner": "obj", "pos_label": "plain", "_labels": "list[plain] as labels",
                    "_pair_memo": "cache", "_lock": "cache:lock"}

    def __init__(self, learner=None, pos_label=None):
        self.learner = learner
        self.pos_label = pos_label
        check_params(self)
        if learner is None:
            self.learner = FunctionalGD(loss=losses.Logistic())
        self._labels: list = [] if pos_label is None else [pos_label]
        self._lock = threading.Lock()  # one call at a time, as the learners

    @property
    def _wrapped_model(self):
        return self.learner

    @property
    def _multiclass(self) -> bool:
        return False

    @classmethod
    def _unit_test_params(cls):
        yield {"learner": FunctionalGD(loss=losses.Logistic())}

    # -- labels ---------------------------------------------------------------------------

    # The (negative, positive) pair of the labels seen, remembered for the list object and its
    # length (labels are only ever appended): test-then-train asks for it twice per row. A
    # cache, not state (see __getstate__).
    _pair_memo: tuple | None = None

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_pair_memo", None)
        return state

    def _pair(self, labels: list) -> tuple:
        """(negative, positive) labels given the labels seen; ``None`` for one not seen yet."""
        memo = self._pair_memo
        if memo is not None and memo[0] is labels and memo[1] == len(labels):
            return memo[2]
        pair = self._pair_of(labels)
        self._pair_memo = (labels, len(labels), pair)
        return pair

    def _pair_of(self, labels: list) -> tuple:
        if self.pos_label is not None:
            others = [label for label in labels if label != self.pos_label]
            return (others[0] if others else None), self.pos_label
        if not labels:
            return False, True
        if all(isinstance(label, (bool, np.bool_)) for label in labels):
            return False, True
        if all(isinstance(label, (int, np.integer)) and label in (0, 1, -1) for label in labels):
            neg = next((label for label in labels if label != 1), None)
            return neg, 1
        return (labels[1] if len(labels) > 1 else None), labels[0]

    def _sign(self, y, labels: list | None = None) -> float:
        labels = self._labels if labels is None else labels
        check_label(y)  # the classifiers' one rule (None, containers, NaN: okoco._checks)
        if y in labels:
            return 1.0 if y == self._pair(labels)[1] else -1.0
        if len(labels) >= 2:
            raise ValueError(
                f"label {y!r} is a third class; this BinaryClassifier has seen {labels!r}"
            )
        _, pos = self._pair_of([*labels, y])
        return 1.0 if y == pos else -1.0

    def save(self, path, *, compress: bool = False):
        """Save the classifier and its learner to one ``.npz`` file (see :func:`okoco.load`)."""
        with self._lock:
            return persistence.save(self, path, compress=compress)

    # -- river protocol -------------------------------------------------------------------

    @one_at_a_time
    def learn_one(self, x: dict, y, **kwargs) -> None:
        sign = self._sign(y)
        self.learner.learn_one(x, sign)
        if y not in self._labels:
            self._labels.append(y)

    def _proba_positive(self, x: dict) -> float:
        f = self.learner.predict_one(x)
        if isinstance(self.learner._loss, losses.Logistic):
            return 1.0 / (1.0 + math.exp(-f))
        return min(max((1.0 + f) / 2.0, 0.0), 1.0)

    @one_at_a_time
    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        p = self._proba_positive(x)
        neg, pos = self._pair(self._labels)
        if neg is None:
            return {pos: 1.0}
        if pos is None:
            return {neg: 1.0}
        return {neg: 1.0 - p, pos: p}

    @one_at_a_time
    def predict_one(self, x: dict, **kwargs):
        p = self._proba_positive(x)
        neg, pos = self._pair(self._labels)
        if neg is None or pos is None:
            return pos if neg is None else neg
        return pos if p > 1.0 - p else neg  # max of predict_proba_one: neg on a tie

    # -- mini-batches (river's MiniBatchClassifier protocol) ------------------------------

    @one_at_a_time
    def learn_many(self, X, y, **kwargs) -> None:
        """``learn_one`` over the rows of a DataFrame or 2-D array and their labels, in order.

        Every label is checked first: a bad label or a third class raises naming its row,
        and nothing is learned.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco import BinaryClassifier, losses
        >>> from okoco.learners import FunctionalGD
        >>> clf = BinaryClassifier(FunctionalGD(loss=losses.Logistic(), C=3.0, eta=0.5))
        >>> X = np.array([[0.0], [1.0], [0.1], [0.9]])
        >>> clf.learn_many(X, np.array(["no", "yes", "no", "yes"]))
        >>> clf.predict_many(np.array([[0.05], [0.95]])).tolist()
        ['no', 'yes']
        """
        labels = list(self._labels)
        signs = []
        for i, label in enumerate(y.tolist() if hasattr(y, "tolist") else list(y)):
            signs.append(in_row(i, self._sign, label, labels))
            if label not in labels:
                labels.append(label)
        self.learner.learn_many(X, np.asarray(signs))
        self._labels = labels

    def _proba_positive_many(self, X) -> np.ndarray:
        f = np.asarray(self.learner.predict_many(X), dtype=float)
        if isinstance(self.learner._loss, losses.Logistic):
            return 1.0 / (1.0 + np.exp(-f))
        return np.clip((1.0 + f) / 2.0, 0.0, 1.0)

    @one_at_a_time
    def predict_proba_many(self, X, **kwargs):
        """Class probabilities of each row: a DataFrame (one column per label) for a DataFrame,
        else a dict ``{label: array}`` (what ``pandas.DataFrame`` takes).
        """
        p = self._proba_positive_many(X)
        neg, pos = self._pair(self._labels)
        cols = {neg: 1.0 - p, pos: p} if neg is not None and pos is not None else (
            {pos: np.ones_like(p)} if neg is None else {neg: np.ones_like(p)})
        if hasattr(X, "iloc"):  # a pandas object (a list has .index too)
            import pandas as pd

            return pd.DataFrame(cols, index=X.index)
        return cols

    @one_at_a_time
    def predict_many(self, X, **kwargs):
        """The predicted label of each row (a Series for a DataFrame), as ``predict_one``."""
        p = self._proba_positive_many(X)
        neg, pos = self._pair(self._labels)
        if neg is None or pos is None:
            labels = np.full(p.shape, pos if neg is None else neg, dtype=object)
        else:
            labels = np.where(p > 0.5, np.array(pos, dtype=object), np.array(neg, dtype=object))
        out = np.array(labels.tolist())
        if hasattr(X, "iloc"):  # a pandas object (a list has .index too)
            import pandas as pd

            return pd.Series(out, index=X.index)
        return out
