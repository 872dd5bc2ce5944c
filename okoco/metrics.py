"""The metrics of the ``okoco`` command line: river's values, without importing ``river.metrics``.

``MAE``, ``MSE``, ``RMSE``, ``R2``, ``Accuracy``, ``F1`` and ``LogLoss`` give the same values
as river's metrics of the same names after every update (the same running statistics, the same
order of floating-point operations), the same ``bigger_is_better`` and the same ``repr``
(``MAE: 0.349478``, ``Accuracy: 87.00%``), and they follow river's metric protocol
(``update(y_true, y_pred, w=1.0)``, ``revert``, ``get``, ``works_with``, ``requires_labels``
for classification), so :func:`okoco.evaluate.replay` and river's ``progressive_val_score``
take them as they take river's. They exist because importing ``river.metrics`` costs up to a
second (its geometric mean imports scipy.stats), more than a short replay.

River's metrics work as well everywhere okoco takes metrics; ROC AUC, for one, is river's
(the command line imports it only when ``-m rocauc`` asks for it).

Examples
--------
>>> from okoco import metrics
>>> mae = metrics.MAE()
>>> for y_true, y_pred in [(3.0, 2.5), (-0.5, 0.0), (2.0, 2.0), (7.0, 8.0)]:
...     mae.update(y_true, y_pred)
>>> mae
MAE: 0.5
>>> acc = metrics.Accuracy()
>>> for y_true, y_pred in [(True, True), (False, True), (True, True)]:
...     acc.update(y_true, y_pred)
>>> acc, acc.bigger_is_better
(Accuracy: 66.67%, True)
"""

from __future__ import annotations

import abc
import math
import operator
from typing import Any

from river import base, stats

from okoco import persistence

__all__ = ["Metric", "RegressionMetric", "ClassificationMetric", "MAE", "MSE", "RMSE", "R2",
           "Accuracy", "F1", "LogLoss"]


class Metric(base.Base, abc.ABC):
    """A running metric in river's protocol: ``update``, ``revert``, ``get``, ``works_with``.

    Subclasses set ``bigger_is_better`` and the ``_fmt`` of their ``repr``.

    Examples
    --------
    >>> from okoco.metrics import MSE, Metric
    >>> isinstance(MSE(), Metric), MSE().bigger_is_better
    (True, False)
    """

    _fmt = ",.6f"
    bigger_is_better: bool = False
    works_with_weights = True

    @abc.abstractmethod
    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        """Update the metric with one prediction."""

    @abc.abstractmethod
    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        """Undo an :meth:`update` with the same arguments."""

    @abc.abstractmethod
    def get(self) -> float:
        """The current value."""

    @abc.abstractmethod
    def works_with(self, model: Any) -> bool:
        """Whether the metric can score ``model``'s predictions."""

    def is_better_than(self, other: Metric) -> bool:
        """Whether this value is better than ``other``'s."""
        op = operator.gt if self.bigger_is_better else operator.lt
        return op(self.get(), other.get())

    def __gt__(self, other: Metric) -> bool:
        return self.is_better_than(other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}: {self.get():{self._fmt}}".rstrip("0")

    def __str__(self) -> str:
        return repr(self)

    @classmethod
    def _state_from_river(cls, state: dict) -> dict:
        """The attributes of this metric resumed from a checkpoint written with river's."""
        return dict(state)


class RegressionMetric(Metric):
    """A metric of real-valued predictions (``works_with`` river regressors)."""

    def works_with(self, model: Any) -> bool:
        return isinstance(model, base.Regressor)


class ClassificationMetric(Metric):
    """A metric of predicted labels (``works_with`` river classifiers), shown as a percentage."""

    _fmt = ".2%"
    bigger_is_better = True
    requires_labels = True

    def works_with(self, model: Any) -> bool:
        return isinstance(model, base.Classifier)


class _MeanMetric(Metric):
    """The weighted running mean of a per-sample score ``_eval(y_true, y_pred)``."""

    _saved_state = {"_mean": "river as mean"}

    def __init__(self) -> None:
        self._mean = stats.Mean()

    @abc.abstractmethod
    def _eval(self, y_true: Any, y_pred: Any) -> float: ...

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        self._mean.update(x=self._eval(y_true, y_pred), w=w)

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        self._mean.revert(x=self._eval(y_true, y_pred), w=w)

    def get(self) -> float:
        return self._mean.get()


class MAE(_MeanMetric, RegressionMetric):
    r"""Mean absolute error :math:`\frac1n\sum_t |y_t - \hat y_t|`.

    Examples
    --------
    >>> from okoco.metrics import MAE
    >>> m = MAE()
    >>> m.update(1.0, 0.0); m.update(2.0, 4.0)
    >>> m
    MAE: 1.5
    """

    _river_class = "river.metrics.mae.MAE"

    def _eval(self, y_true: float, y_pred: float) -> float:
        return abs(y_true - y_pred)


class MSE(_MeanMetric, RegressionMetric):
    r"""Mean squared error :math:`\frac1n\sum_t (y_t - \hat y_t)^2`.

    Examples
    --------
    >>> from okoco.metrics import MSE
    >>> m = MSE()
    >>> m.update(1.0, 0.0); m.update(2.0, 4.0)
    >>> m
    MSE: 2.5
    """

    _river_class = "river.metrics.mse.MSE"

    def _eval(self, y_true: float, y_pred: float) -> float:
        return (y_true - y_pred) ** 2


class RMSE(MSE):
    r"""Root mean squared error :math:`\sqrt{\mathrm{MSE}}`.

    Examples
    --------
    >>> from okoco.metrics import RMSE
    >>> m = RMSE()
    >>> m.update(1.0, 0.0); m.update(2.0, 4.0)
    >>> m
    RMSE: 1.581139
    """

    _river_class = "river.metrics.mse.RMSE"

    def get(self) -> float:
        return super().get() ** 0.5


class R2(RegressionMetric):
    r"""Coefficient of determination :math:`1 - \sum_t (y_t-\hat y_t)^2 / \sum_t (y_t-\bar y)^2`.

    0 before two samples and while the targets have no variance, as in river.

    Examples
    --------
    >>> from okoco.metrics import R2
    >>> m = R2()
    >>> for y_true, y_pred in [(3.0, 2.5), (-0.5, 0.0), (2.0, 2.0), (7.0, 8.0)]:
    ...     m.update(y_true, y_pred)
    >>> m, m.bigger_is_better
    (R2: 0.948608, True)
    """

    _river_class = "river.metrics.r2.R2"
    bigger_is_better = True

    _saved_state = {"_y_var": "river as target_variance",
                    "_total_sum_of_squares": "number as total_sum_of_squares",
                    "_residual_sum_of_squares": "number as residual_sum_of_squares"}

    def __init__(self) -> None:
        self._y_var = stats.Var()
        self._total_sum_of_squares = 0
        self._residual_sum_of_squares = 0

    def update(self, y_true: float, y_pred: float, w: float = 1.0) -> None:
        self._y_var.update(y_true, w=w)
        self._residual_sum_of_squares += (y_true - y_pred) * (y_true - y_pred) * w

    def revert(self, y_true: float, y_pred: float, w: float = 1.0) -> None:
        self._y_var.update(y_true, w=-w)
        self._residual_sum_of_squares -= (y_true - y_pred) * (y_true - y_pred) * w

    def get(self) -> float:
        n = self._y_var.mean.n
        if n <= 1:
            return 0.0
        total = (n - 1) * self._y_var.get()
        return 1 - self._residual_sum_of_squares / total if total else 0.0


class Accuracy(ClassificationMetric):
    """The (weighted) share of predicted labels equal to the true ones.

    Examples
    --------
    >>> from okoco.metrics import Accuracy
    >>> m = Accuracy()
    >>> for y_true, y_pred in [(1, 1), (0, 1), (1, 1), (0, 0)]:
    ...     m.update(y_true, y_pred)
    >>> m
    Accuracy: 75.00%
    """

    _river_class = "river.metrics.accuracy.Accuracy"

    _saved_state = {"_correct": "number as correct", "_total": "number as total"}

    def __init__(self) -> None:
        self._correct = 0.0
        self._total = 0.0

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        self._total += w
        if y_true == y_pred:
            self._correct += w

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        self.update(y_true, y_pred, -w)

    def get(self) -> float:
        return self._correct / self._total if self._total else 0.0

    def works_with(self, model: Any) -> bool:
        return isinstance(model, (base.Classifier, base.Clusterer))

    @classmethod
    def _state_from_river(cls, state: dict) -> dict:
        cm = state["cm"]
        return {"_correct": cm.total_true_positives, "_total": cm.total_weight}


class F1(ClassificationMetric):
    r"""Binary F1 score :math:`2pr/(p + r)` of the positive label ``pos_val``.

    Precision :math:`p` and recall :math:`r` count as 0 while undefined, and so does F1.

    Parameters
    ----------
    pos_val
        The label counted as positive.

    Examples
    --------
    >>> from okoco.metrics import F1
    >>> m = F1()
    >>> for y_true, y_pred in [(True, True), (False, True), (True, False), (True, True)]:
    ...     m.update(y_true, y_pred)
    >>> m
    F1: 66.67%
    """

    _river_class = "river.metrics.fbeta.F1"

    _saved_state = {"pos_val": "plain", "_tp": "number as true_positives",
                    "_fp": "number as false_positives", "_fn": "number as false_negatives"}

    def __init__(self, pos_val: Any = True) -> None:
        self.pos_val = pos_val
        self._tp = 0.0  # true positives, false positives, false negatives (weights)
        self._fp = 0.0
        self._fn = 0.0

    def update(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        actual, predicted = y_true == self.pos_val, y_pred == self.pos_val
        if actual and predicted:
            self._tp += w
        elif predicted:
            self._fp += w
        elif actual:
            self._fn += w

    def revert(self, y_true: Any, y_pred: Any, w: float = 1.0) -> None:
        self.update(y_true, y_pred, -w)

    def get(self) -> float:
        tp = self._tp
        p = tp / (tp + self._fp) if tp + self._fp else 0.0
        r = tp / (tp + self._fn) if tp + self._fn else 0.0
        b2 = 1.0
        return (1 + b2) * p * r / (b2 * p + r) if b2 * p + r else 0.0

    @classmethod
    def _state_from_river(cls, state: dict) -> dict:
        cm, pos = state["cm"], state["pos_val"]
        tp = cm.true_positives(pos)
        return {"pos_val": pos, "_tp": tp, "_fp": cm.false_positives(pos),
                "_fn": cm.false_negatives(pos)}


class LogLoss(_MeanMetric, ClassificationMetric):
    r"""Binary logarithmic loss :math:`-\frac1n\sum_t \log p_t(y_t)`.

    ``y_pred`` is the probability of ``True`` or a dict ``{label: probability}``; probabilities
    are clipped to :math:`[10^{-15}, 1 - 10^{-15}]`.

    Examples
    --------
    >>> from okoco.metrics import LogLoss
    >>> m = LogLoss()
    >>> m.update(True, {True: 0.8, False: 0.2}); m.update(False, 0.4)
    >>> m
    LogLoss: 0.3669845875401002
    """

    _river_class = "river.metrics.log_loss.LogLoss"
    _fmt = ""
    bigger_is_better = False
    requires_labels = False

    def _eval(self, y_true: Any, y_pred: Any) -> float:
        p_true = y_pred.get(True, 0.0) if isinstance(y_pred, dict) else y_pred
        p_true = max(min(p_true, 1 - 1e-15), 1e-15)
        return -math.log(p_true) if y_true else -math.log(1 - p_true)

    @classmethod
    def _state_from_river(cls, state: dict) -> dict:
        return {"_mean": state["_mean"]}


persistence.register(MAE, MSE, RMSE, R2, Accuracy, F1, LogLoss)
