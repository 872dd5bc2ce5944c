"""The test-then-train loop: a stream of samples in, metrics and losses updated, a step at a
time (:func:`iter_progressive_val`) or in stretches (:class:`_Loop`, the engine of replay)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
from river import base, compose

from okoco import metrics as okoco_metrics
from okoco.evaluate._probe import _model_loss
from okoco.learners import BinaryClassifier

__all__ = ["Step", "iter_progressive_val"]


_CHUNK = 1024


def _rows_from_arrays(X: Any, y: Any) -> tuple[Iterator[tuple[dict, Any]], int, str]:
    if hasattr(X, "columns"):  # a DataFrame: its column names
        names = list(X.columns)
        values = X.to_numpy()
    else:
        values = np.asarray(X)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        names = list(range(values.shape[1]))  # as river.stream.iter_array names them
    if values.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {values.shape}")
    targets = np.asarray(y).ravel()
    if targets.shape[0] != values.shape[0]:
        raise ValueError(f"X has {values.shape[0]} rows but y has {targets.shape[0]} targets")

    def rows() -> Iterator[tuple[dict, Any]]:
        for lo in range(0, values.shape[0], _CHUNK):
            block = values[lo:lo + _CHUNK].tolist()
            for row, target in zip(block, targets[lo:lo + _CHUNK].tolist()):
                yield dict(zip(names, row)), target

    return rows(), int(values.shape[0]), "arrays"


def _stream(data: Any) -> tuple[Iterator[tuple[dict, Any]], int | None, str]:
    if isinstance(data, tuple) and len(data) == 2 and not isinstance(data[0], Mapping):
        return _rows_from_arrays(*data)
    n = None
    try:
        n = len(data)
    except TypeError:
        pass
    return iter(data), n, str(getattr(data, "name", type(data).__name__))


class Step(NamedTuple):
    """One test-then-train step of :func:`iter_progressive_val`."""

    #: Samples learned so far, this one included (1, 2, ...).
    t: int
    #: The sample's target.
    y: Any
    #: The prediction made before learning it (for a classifier, ``predict_one``'s label when a
    #: metric needs labels, else ``None``).
    y_pred: Any
    #: The prediction's loss: the regressor's loss ``value(y, y_pred)``, or for a classifier the
    #: log loss of ``predict_proba_one`` (probabilities clipped below at 1e-15).
    loss: float
    #: Wall time of the step, fetching the sample included, in seconds.
    seconds: float


def iter_progressive_val(model: Any, data: Any, metrics: Any, *, loss: Any = None,
                         regret: Any = None, start: int = 0) -> Iterator[Step]:
    r"""Test-then-train ``model`` over ``data``, yielding a :class:`Step` after every sample.

    At each step :math:`t`: predict :math:`\hat y_t`, update ``metrics`` (in place) and the
    regret tracker, then ``learn_one(x_t, y_t)``. Classifiers are asked ``predict_proba_one``
    for metrics that take probabilities and ``predict_one`` otherwise, as river's
    ``iter_progressive_val_score`` does, so the metric values are river's. The time the caller
    spends between two steps is not counted in :attr:`Step.seconds`.

    Parameters
    ----------
    model
        A river regressor or classifier (an okoco learner, a ``BinaryClassifier``, a pipeline
        around one), trained in place.
    data
        As for :func:`replay`.
    metrics
        A river metric or a list of them, updated in place.
    loss
        The regressor's loss (an object with ``value(y, z)``); default the model's own loss,
        found through pipelines and wrappers (squared loss if it has none).
    regret
        Optional tracker with ``update(x, y, y_pred)``.
    start
        Samples already learned (when resuming): the count of :attr:`Step.t` starts there.

    Raises
    ------
    ValueError, TypeError
        What the model raises on a bad sample, with the sample's number (counting from 1).

    Examples
    --------
    >>> from river import metrics
    >>> from okoco import datasets
    >>> from okoco.learners import FunctionalGD
    >>> mae = metrics.MAE()
    >>> for step in iter_progressive_val(FunctionalGD(), datasets.load("sinc", n=50), mae):
    ...     if step.t % 20 == 0:
    ...         print(step.t, f"{mae.get():.3f}")
    20 ...
    40 ...
    >>> step.t, step.loss == (step.y - step.y_pred) ** 2  # FunctionalGD: the squared loss
    (50, True)
    """
    loop = _Loop(model, _as_metrics(metrics, model), loss=loss, regret=regret, start=start)
    stream, _, _ = _stream(data)
    seconds = 0.0
    while loop.run(stream, loop.t + 1):
        y, y_pred, cost = loop.last
        yield Step(loop.t, y, y_pred, cost, loop.seconds - seconds)
        seconds = loop.seconds


class _Loop:
    """The test-then-train steps, run in stretches: the engine of both :func:`replay` and
    :func:`iter_progressive_val`.

    ``run(stream, stop)`` predicts, scores and learns the samples of ``stream`` until ``t``
    reaches ``stop`` (or the stream ends), with no Python work between two steps but the steps
    themselves: a replay's time per sample is the model's, not its bookkeeping's. The sample
    count ``t``, the sum of the losses (added one sample at a time, in order) and the seconds
    spent in ``run`` carry over from one stretch to the next; after any exception, Ctrl-C
    included, they count the samples whose step finished (a Ctrl-C that lands as ``learn_one``
    returns leaves that sample learned but not counted).
    """

    def __init__(self, model: Any, metrics: list, *, loss: Any, regret: Any, start: int = 0,
                 cumulative_loss: float = 0.0, band: Any = None, band_from: int = 0):
        self.classifier = isinstance(model, base.Classifier)
        self.model, self.regret = model, regret
        self.predict = _predictor(model, metrics)
        self.value = None if self.classifier else (
            loss if loss is not None else _model_loss(model)).value
        # (update, wants probabilities); a regressor's metrics all take its prediction
        self.updates = [(m.update, self.classifier and not m.requires_labels) for m in metrics]
        self.labels = [update for update, _ in self.updates]  # a regressor's updates
        self.t, self.cumulative_loss, self.seconds = start, cumulative_loss, 0.0
        #: ``(y, y_pred, loss)`` of the sample a stretch stopped at.
        self.last: tuple | None = None
        # the prediction band: (t, y, y_pred, low, high) of the samples from t > band_from
        # on, appended to ``band`` (a bounded deque) for a model with intervals
        self.interval = None if band is None else _interval_predictor(model)
        self.band, self.band_from = band, band_from

    def run(self, stream: Iterator, stop: int | None = None) -> bool:
        """Learn from ``stream`` until ``t == stop`` (``None``: to its end); False once the
        stream is exhausted before ``stop``."""
        classifier, predict, value, regret = self.classifier, self.predict, self.value, self.regret
        predict_one, learn_one = self.model.predict_one, self.model.learn_one
        updates, labels = self.updates, self.labels
        log = math.log
        interval, band, band_from = self.interval, self.band, self.band_from
        t, cumulative_loss = self.t, self.cumulative_loss
        clock = time.perf_counter()
        try:
            for x, y in stream:
                try:
                    if classifier:
                        y_label, proba = predict(x)
                        for update, wants_proba in updates:
                            y_pred = proba if wants_proba else y_label
                            if y_pred is not None and y_pred != {}:
                                update(y_true=y, y_pred=y_pred)
                        cost = -log(min(max(proba.get(y, 0.0) if proba else 0.0, 1e-15), 1.0))
                    else:
                        y_label = predict_one(x)
                        if y_label is not None:
                            if y_label != {}:
                                for update in labels:
                                    update(y_true=y, y_pred=y_label)
                            cost = float(value(y, y_label))
                        else:
                            cost = 0.0
                        if interval is not None and t >= band_from:
                            low, high = interval(x)
                            band.append((t + 1, y, y_label, low, high))
                    if regret is not None:
                        regret.update(x, y, y_label)
                    learn_one(x, y)
                except (ValueError, TypeError) as error:
                    raise type(error)(f"sample {t + 1}: {error}") from error
                # no call between these two: Ctrl-C cannot land between them
                cumulative_loss += cost
                t += 1
                if t == stop:
                    self.last = (y, y_label, cost)
                    return True
            return False
        finally:
            self.seconds += time.perf_counter() - clock
            self.t, self.cumulative_loss = t, cumulative_loss


def _interval_predictor(model: Any):
    """``x -> (low, high)`` when ``model`` gives intervals (``predict_one(x, with_interval=True)``
    of an :class:`okoco.intervals.IntervalRegressor`, or of a river pipeline ending in one);
    ``None`` otherwise."""
    last = model
    while isinstance(last, compose.Pipeline):
        last = list(last.steps.values())[-1]
    if not hasattr(type(last), "coverage_seen"):
        return None
    return lambda x: model.predict_one(x, with_interval=True)


def _predictor(model: Any, metrics: list):
    """``x -> (label, probabilities)`` as river's progressive validation asks for them."""
    if not isinstance(model, base.Classifier):
        return lambda x: (model.predict_one(x), None)
    need_labels = any(m.requires_labels for m in metrics)
    label_from_proba = _label_is_argmax(model)

    def predict(x: dict) -> tuple[Any, dict]:
        proba = model.predict_proba_one(x)
        if not need_labels:
            return None, proba
        if label_from_proba:
            return (max(proba, key=proba.get) if proba else None), proba
        return model.predict_one(x), proba

    return predict


def _label_is_argmax(model: Any) -> bool:
    """Whether ``predict_one`` is the argmax of ``predict_proba_one`` (river's default rule)."""
    if isinstance(model, compose.Pipeline):
        return _label_is_argmax(list(model.steps.values())[-1])
    return type(model).predict_one in (base.Classifier.predict_one, BinaryClassifier.predict_one)


def _as_metrics(metrics: Any, model: Any) -> list:
    """The metrics as a list, each checked to be a river metric that works with ``model``."""
    Metric, Metrics = _metric_types()
    if isinstance(metrics, Metrics):
        items = list(metrics)
    elif isinstance(metrics, Metric):
        items = [metrics]
    elif isinstance(metrics, Iterable) and not isinstance(metrics, (str, Mapping)):
        items = list(metrics)
    else:
        raise TypeError(f"metrics must be a river metric or a list of them, got {metrics!r}")
    if not items:
        raise ValueError("give at least one metric")
    for m in items:
        if not isinstance(m, Metric):
            raise TypeError(f"{m!r} is not a river metric")
        if not m.works_with(model):
            raise ValueError(f"metric {type(m).__name__} does not work with {model!r}")
    return items


def _metric_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(metric classes, metric-collection classes): okoco's, and river's when loaded."""
    # river.metrics takes up to a second to import (scipy.stats): a river metric passed here
    # has loaded it already, so it is looked up, never imported
    river_base = sys.modules.get("river.metrics.base")
    if river_base is None:
        return (okoco_metrics.Metric,), ()
    return (okoco_metrics.Metric, river_base.Metric), (river_base.Metrics,)


def _names(metrics: list) -> list[str]:
    names: list[str] = []
    for m in metrics:
        base_name, k, name = type(m).__name__, 1, type(m).__name__
        while name in names:
            k += 1
            name = f"{base_name}_{k}"
        names.append(name)
    return names
