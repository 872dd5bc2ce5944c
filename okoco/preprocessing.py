"""Online standardisation of features and targets: the scalers the ``okoco`` command line uses.

:class:`StandardScaler` and :class:`TargetStandardScaler` keep exactly the running statistics
river's ``preprocessing.StandardScaler`` and ``preprocessing.TargetStandardScaler`` keep (the
same order of floating-point operations; the feature scaler predicts a row as it is learned:
:class:`StandardScaler`) and follow the same river protocols: a
``base.Transformer`` that goes into pipelines with ``|``, and a target-transforming ``Wrapper``
around a regressor. They exist because importing ``river.preprocessing`` costs about
a second (it pulls in scipy.stats, scikit-learn and pandas through river's trees and datasets),
more than everything else a replay needs to start; this module needs only ``river.base``,
``river.compose`` and ``river.stats``.

River's scalers work as well everywhere okoco takes a model; use them for what these leave out
(mini-batches, rolling windows).

Examples
--------
>>> from okoco.learners import KONS
>>> from okoco.preprocessing import StandardScaler, TargetStandardScaler
>>> model = TargetStandardScaler(StandardScaler() | KONS(C=3.0))
>>> for i in range(20):
...     model.learn_one({"x": i / 2, "z": 100.0 + i}, 50.0 + i % 4)
>>> round(model.predict_one({"x": 3.0, "z": 106.0}), 2)
51.19
"""

from __future__ import annotations

import collections
import threading

from river import base, compose, stats

from okoco import persistence
from okoco._dist import rescaled_gaussian
from okoco._locking import Locked, one_at_a_time

__all__ = ["StandardScaler", "TargetStandardScaler", "SelectPresent", "encode_text", "MAX_ONE_HOT",
           "HASHED_FEATURES"]


#: A text column with at most this many distinct values is one-hot encoded; a column with
#: more is hashed (:func:`encode_text`).
MAX_ONE_HOT = 64

#: The buckets a hashed text column is folded into (:func:`encode_text`).
HASHED_FEATURES = 64


def _counted(n: int, mean: float, var: float, xi: float) -> tuple[float, float]:
    """A feature's running mean and population variance once ``xi`` is counted as its ``n``-th
    value: river's updates, ``mean += (x - mean) / n`` and ``var += ((x - old mean) * (x - new
    mean) - var) / n``, the same operations in the same order (the same bits)."""
    new_mean = mean + (xi - mean) / n
    return new_mean, var + ((xi - mean) * (xi - new_mean) - var) / n


class StandardScaler(Locked, base.Transformer):
    r"""Scale each feature to zero mean and unit variance with running statistics.

    Feature :math:`i`, seen :math:`n_i` times, is scaled as :math:`(x_i - \mu_i)/\sigma_i`,
    where :math:`\mu_i` and :math:`\sigma_i^2` are the mean and the population variance
    (divisor :math:`n_i`) of its values so far, updated by Welford's method. A feature with no
    variance yet (seen once, or constant) is mapped to 0. Features may appear at any time;
    each has its own count. The same statistics as river's ``preprocessing.StandardScaler``,
    the same operations in the same order.

    **A row is predicted as it is learned.** A row is scaled by the statistics that include it:
    after ``learn_one(x)`` they do, and before it (a prediction) ``x`` is counted in as
    ``learn_one`` would count it, with the same operations, without changing anything. So a
    pipeline's learner learns the very row it predicted, and the row river's scaler gives it
    to learn (whose prediction river makes with the statistics before the row): a kernel
    learner reuses its prediction's kernel rows and solves instead of computing them twice a
    step (``docs/defaults.md``), and learns what it would learn behind river's scaler. The
    statistics are river's; the transform of the row learned last is river's.
    Calls take a lock, one at a time, as the learners' do: threads may share a scaler, and
    ``okoco.save`` of a pipeline holding it writes a whole snapshot.

    Parameters
    ----------
    with_std
        Divide by the standard deviation (else only subtract the mean).

    Attributes
    ----------
    counts
        Number of values seen per feature.
    means
        Running mean per feature.
    vars
        Running population variance per feature.

    Examples
    --------
    >>> from okoco.preprocessing import StandardScaler
    >>> scaler = StandardScaler()
    >>> for x in [{"a": 1.0}, {"a": 3.0, "b": 5.0}, {"a": 5.0, "b": 5.0}]:
    ...     predicted = scaler.transform_one(x)
    ...     scaler.learn_one(x)
    ...     print(predicted, scaler.transform_one(x) == predicted)
    {'a': 0.0} True
    {'a': 1.0, 'b': 0.0} True
    {'a': 1.224744871391589, 'b': 0.0} True
    """

    _river_class = "river.preprocessing.scale.StandardScaler"

    _saved_state = {"with_std": "bool", "counts": "plain", "means": "plain", "vars": "plain",
                    "_lock": "cache:lock", "_learned": "cache:None"}

    def __init__(self, with_std: bool = True) -> None:
        self.with_std = with_std
        self.counts: collections.Counter = collections.Counter()
        self.means: collections.defaultdict = collections.defaultdict(float)
        self.vars: collections.defaultdict = collections.defaultdict(float)
        self._lock = threading.Lock()
        self._learned = None  # the row learned last (the statistics include it)

    @one_at_a_time
    def learn_one(self, x: dict) -> None:
        self._learned = dict(x)
        counts, means, vars_, with_std = self.counts, self.means, self.vars, self.with_std
        for i, xi in x.items():  # each statistic read and written once: a replay runs this
            counts[i] = n = counts[i] + 1
            means[i], var = _counted(n, means[i], vars_.get(i, 0.0), xi)
            if with_std:
                vars_[i] = var

    @one_at_a_time
    def transform_one(self, x: dict) -> dict:
        counts, means, vars_, with_std = self.counts, self.means, self.vars, self.with_std
        learned, out = x == self._learned, {}
        for i, xi in x.items():
            if learned:  # the statistics include the row
                mean, var = means[i], vars_.get(i, 0.0)
            else:  # the row counted in as learn_one counts it, nothing changed
                mean, var = _counted(counts.get(i, 0) + 1, means.get(i, 0.0),
                                     vars_.get(i, 0.0), xi)
            if not with_std:
                out[i] = xi - mean
            else:
                out[i] = (xi - mean) / var**0.5 if var else 0.0
        return out

    @classmethod
    def _state_from_river(cls, state: dict) -> dict:
        """The attributes of a scaler resumed from a checkpoint written with river's."""
        if state.get("window_size") is not None:
            raise ValueError("a rolling-window StandardScaler has no okoco counterpart")
        return {**{k: v for k, v in state.items() if k != "window_size"},
                "_lock": threading.Lock(), "_learned": None}


class TargetStandardScaler(Locked, compose.TargetTransformRegressor):
    r"""Standardise the regression target online around a regressor.

    The regressor learns :math:`(y - \bar y)/s` and its predictions are mapped back by
    :math:`\hat y\, s + \bar y`, where :math:`\bar y` and :math:`s^2` are the running mean and
    the sample variance (divisor :math:`n - 1`, 0 before two targets) of the targets learned
    so far; while :math:`s = 0` the regressor learns 0. The same numbers as river's
    ``preprocessing.TargetStandardScaler``. A call the regressor refuses (a bad feature or
    target) leaves the running statistics as they were. Calls take a lock, one at a time, as the
    learners' do (the regressor's lock is taken inside it).

    Parameters
    ----------
    regressor
        The regressor to wrap (an okoco learner or a pipeline ending in one).

    Attributes
    ----------
    var
        The running variance of the targets (a ``river.stats.Var``; its ``mean`` is the mean).

    Examples
    --------
    >>> from okoco.learners import FunctionalGD
    >>> from okoco.preprocessing import TargetStandardScaler
    >>> model = TargetStandardScaler(FunctionalGD(eta=0.5))
    >>> for y in [10.0, 12.0, 14.0]:
    ...     model.learn_one({"x": 1.0}, y)
    >>> model.var.mean.get(), model.var.get()
    (12.0, 4.0)
    """

    _river_class = "river.preprocessing.scale_target.TargetStandardScaler"

    #: river's ``func`` and ``inverse_func`` are methods of the wrapper itself.
    _built_by_init = frozenset({"_lock", "func", "inverse_func"})

    def __init__(self, regressor: base.Regressor):
        self.var = stats.Var()
        super().__init__(regressor=regressor, func=self._scale, inverse_func=self._unscale)
        self._lock = threading.Lock()

    @one_at_a_time
    def learn_one(self, x: dict, y: float) -> None:
        """Update the target statistics and learn the scaled target; if the regressor refuses
        the sample, the statistics are restored (the call changes nothing)."""
        var, mean = self.var, self.var.mean
        before = (dict(vars(var)), dict(vars(mean)))
        try:
            super().learn_one(x, y)
        except BaseException:
            vars(var).update(before[0])
            vars(mean).update(before[1])
            raise

    @one_at_a_time
    def predict_one(self, x: dict, with_dist: bool = False):
        """The regressor's prediction in the target's units; with ``with_dist=True`` the
        regressor's ``proba.Gaussian`` mapped the same way (mean unscaled, sigma times the
        running standard deviation, or 1 before two distinct targets)."""
        if not with_dist:
            return super().predict_one(x)
        dist = self.regressor.predict_one(x, with_dist=True)
        std = self.var.get() ** 0.5 or 1.0
        return rescaled_gaussian(self._unscale(dist.mu), dist.sigma, std)

    def _update(self, y: float) -> None:
        self.var.update(y)

    def _scale(self, y: float) -> float:
        std = self.var.get() ** 0.5
        return (y - self.var.mean.get()) / std if std else 0.0

    def _unscale(self, y: float) -> float:
        return y * self.var.get() ** 0.5 + self.var.mean.get()

    @classmethod
    def _state_from_river(cls, state: dict) -> dict:
        """The attributes of a wrapper resumed from a checkpoint written with river's."""
        return dict(state)


class SelectPresent(compose.Select):
    """river's ``compose.Select`` for samples that may lack a selected feature: the selected
    features present in ``x`` (river's raises ``KeyError`` on an absent one, river's
    convention for a missing value).

    Examples
    --------
    >>> SelectPresent("city", "street").transform_one({"city": "Lyon", "m2": 40.0})
    {'city': 'Lyon'}
    """

    _saved_state = {"keys": "plain"}

    def transform_one(self, x: dict) -> dict:
        return {i: x[i] for i in self.keys if i in x}


def encode_text(one_hot=(), hashed=(), *, scale: bool = True,
                n_features: int = HASHED_FEATURES, seed: int = 0):
    r"""The pipeline step for samples with text features: river's encoders for the text
    columns, :class:`StandardScaler` for the numeric ones.

    It is river's own idiom, a union of three branches::

        (SelectPresent(*one_hot) | OneHotEncoder())
        + (SelectPresent(*hashed) | FeatureHasher(n_features, seed=seed))
        + (Discard(*one_hot, *hashed) | StandardScaler())

    ``river.preprocessing.OneHotEncoder`` gives each value of a column a feature
    ``"<column>_<value>"`` equal to 1; a value first met online gets its feature then (a
    kernel learner reads a feature it has not seen before as 0 in the samples it holds).
    ``river.preprocessing.FeatureHasher`` folds the ``"<column>=<value>"`` tokens of
    high-cardinality columns into ``n_features`` signed buckets, so their width stays bounded.
    The okoco command line encodes a column with at most :data:`MAX_ONE_HOT` distinct values
    one-hot and hashes the others. A feature absent from a sample (river's convention for a
    missing value, see :func:`okoco.datasets.load_csv`'s ``na="absent"``) sets no category and
    is 0 after scaling: the running mean of its column (:class:`SelectPresent` is river's
    ``Select`` for such samples). The step learns one sample at a time: river's ``Discard`` and
    this module's :class:`StandardScaler` have no ``learn_many``, so a pipeline that starts with
    it takes ``learn_one`` (``predict_many`` works).

    Parameters
    ----------
    one_hot, hashed
        The text columns to one-hot encode and to hash.
    scale
        Standardise the other (numeric) features online; else pass them as they are.
    n_features, seed
        The hashing buckets and the hash's seed (fixed: the same tokens land in the same
        buckets from run to run).

    Examples
    --------
    >>> from okoco.learners import Auto
    >>> from okoco.preprocessing import encode_text
    >>> model = encode_text(["city"]) | Auto()
    >>> for i in range(30):
    ...     model.learn_one({"city": "Paris" if i % 3 else "Lyon", "m2": 20.0 + i},
    ...                     5000.0 * (20 + i) * (2 if i % 3 else 1))
    >>> model.predict_one({"city": "Lyon", "m2": 40.0}) < model.predict_one(
    ...     {"city": "Paris", "m2": 40.0})
    True
    >>> sorted(encode_text(["city"]).transform_one({"city": "Nice", "m2": 1.0}))
    ['city_Nice', 'm2']
    """
    # deferred: river.preprocessing takes about a second to import (see the module note)
    from river import preprocessing as river_preprocessing

    one_hot, hashed = list(one_hot), list(hashed)
    numeric = compose.Discard(*one_hot, *hashed)
    branches = [numeric | StandardScaler() if scale else numeric]
    if one_hot:
        branches.append(SelectPresent(*one_hot) | river_preprocessing.OneHotEncoder())
    if hashed:
        branches.append(SelectPresent(*hashed)
                        | river_preprocessing.FeatureHasher(n_features=n_features, seed=seed))
    return compose.TransformerUnion(*branches)


persistence.register(StandardScaler, SelectPresent)
persistence.register(TargetStandardScaler, wrapper=True)
