r"""``okoco.save`` / ``okoco.load``: whole models, river pipelines included, without pickle.

A bare okoco learner is saved by :func:`okoco.persistence.save`. A *model* around it, the one
users actually replay, is a river pipeline of preprocessing steps ending in an okoco learner
(or a ``BinaryClassifier``), possibly inside a ``TargetStandardScaler``::

    TargetStandardScaler(StandardScaler() | KONS(...))

:func:`save` writes such a model to the same ``.npz`` + JSON format: the pipeline's steps by name
and in order (a ``TransformerUnion``'s parts by name), the target wrapper (or okoco's
``IntervalRegressor``, or the lock of :func:`shared`) by class, and every step's state through
the allow-list of :mod:`okoco.persistence`: okoco learners and their parts, and from river only
``StandardScaler``, ``TargetStandardScaler``, the statistics they hold, and the encoders of text
features of :func:`okoco.preprocessing.encode_text` (``OneHotEncoder``, ``FeatureHasher``,
``Discard``: their state is data, categories and a seed, checked against itself on loading).
:func:`load` rebuilds the pipeline with river's own constructors, so nothing in the file can
name a function or any other class and loading never runs code from the file. Predictions and
further learning of the loaded model are bit-identical to the saved one's.

A model with any other step (a user's ``FuncTransformer``) cannot be saved this way:
:func:`save` raises a ``TypeError`` naming the step. Such a model holds code, and pickle (or
``dill``) is then the supported way, with its usual warning: load only files you wrote.

Examples
--------
>>> import os, tempfile
>>> import okoco
>>> from river import preprocessing
>>> from okoco.learners import KONS
>>> model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | KONS(C=3.0))
>>> for i in range(30):
...     model.learn_one({"a": i / 30, "b": (i % 7) / 7}, float(i % 5))
>>> path = okoco.save(model, os.path.join(tempfile.mkdtemp(), "model.npz"))
>>> again = okoco.load(path)
>>> again.predict_one({"a": 0.2, "b": 0.5}) == model.predict_one({"a": 0.2, "b": 0.5})
True
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from river import base, compose

# Importing the learners, okoco's scalers and metrics registers them (and their parts) with
# okoco.persistence's allow-list.
import okoco.learners  # noqa: F401
import okoco.metrics  # noqa: F401
import okoco.preprocessing  # noqa: F401
from okoco import intervals, persistence
from okoco._locking import Locked, one_at_a_time
from okoco.persistence import (
    FORMAT_NAME,
    FORMAT_VERSION,
    _capture,
    _class_path,
    _Damaged,
    _Decoder,
    _Encoder,
    _init_params,
    _is_wrapper,
    _load_learner,
    _read,
    _rebuilt,
    _resolve,
    _version,
    _write,
)
from okoco.persistence._archive import collector_paused
from okoco.persistence._checkpoints import _parts
from okoco.persistence._invariants import check_model

__all__ = ["save", "load", "PIPELINE_CLASS", "shared", "SharedRegressor", "SharedClassifier"]

class _Shared(Locked, base.Wrapper):
    """A model that takes one call at a time: see :func:`shared`."""

    def __init__(self, model: base.Estimator):
        self.model = model
        self._lock = threading.Lock()

    @property
    def _wrapped_model(self):
        return self.model

    @one_at_a_time
    def learn_one(self, x: dict, y: Any, **kwargs) -> None:
        self.model.learn_one(x, y, **kwargs)

    @one_at_a_time
    def predict_one(self, x: dict, **kwargs) -> Any:
        return self.model.predict_one(x, **kwargs)

    @one_at_a_time
    def learn_many(self, X, y, **kwargs) -> None:
        self.model.learn_many(X, y, **kwargs)

    @one_at_a_time
    def predict_many(self, X, **kwargs):
        return self.model.predict_many(X, **kwargs)

    @classmethod
    def _unit_test_params(cls):
        yield {"model": compose.Pipeline(okoco.preprocessing.StandardScaler(),
                                         okoco.learners.FunctionalGD())}


class SharedRegressor(_Shared, base.Regressor):
    """A regressor (a pipeline ending in one) that threads may share: see :func:`shared`."""


class SharedClassifier(_Shared, base.Classifier):
    """A classifier (a pipeline ending in one) that threads may share: see :func:`shared`."""

    @one_at_a_time
    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        return self.model.predict_proba_one(x, **kwargs)

    @one_at_a_time
    def predict_proba_many(self, X, **kwargs):
        return self.model.predict_proba_many(X, **kwargs)

    @classmethod
    def _unit_test_params(cls):
        yield {"model": compose.Pipeline(okoco.preprocessing.StandardScaler(),
                                         okoco.learners.BinaryClassifier(
                                             okoco.learners.FunctionalGD()))}


def shared(model: base.Estimator) -> SharedRegressor | SharedClassifier:
    """``model`` (a river pipeline, a wrapper, a learner) made safe to share between threads:
    every call takes one lock, so calls from several threads run one at a time, whole.

    A river ``Pipeline`` has no lock: ``learn_one`` runs its steps one after another, so two
    threads interleave them (a scaler learns one thread's sample while the learner learns the
    other's), and river's ``StandardScaler`` (unlike okoco's, the learners and the wrappers,
    which take one call at a time) corrupts its statistics or raises "dictionary changed size
    during iteration" when threads share it. Wrapped, the pipeline's state is always that of
    some order of whole calls, and ``okoco.save`` of the wrapper holds its lock: the file is a
    snapshot of the whole pipeline between two calls (``okoco.load`` gives the wrapper back).
    It costs one lock per call and gives no speed-up (the calls are serialized; use one model
    per thread, or the Dask grids, for parallel work).

    Returns a :class:`SharedClassifier` for a classifier (a ``river.base.Classifier``, a
    pipeline ending in one), a :class:`SharedRegressor` otherwise: river estimators of each
    kind.

    Examples
    --------
    >>> import threading
    >>> from river import preprocessing
    >>> from okoco.learners import KONS
    >>> from okoco.pipelines import shared
    >>> model = shared(preprocessing.StandardScaler() | KONS())
    >>> def learn(k):
    ...     for i in range(50):
    ...         model.learn_one({"x": (i + k) / 50, "z": i % 7}, float(i % 3))
    >>> threads = [threading.Thread(target=learn, args=(k,)) for k in range(4)]
    >>> for t in threads: t.start()
    >>> for t in threads: t.join()
    >>> model.model["KONS"].n_seen, model.model["StandardScaler"].counts["x"]
    (200, 200)
    """
    return (SharedClassifier if isinstance(model, base.Classifier) else SharedRegressor)(model)


# okoco's interval wrapper (rebuilt around its regressor, as the target scalers) and its
# calibration state: a model file holds them as a replay checkpoint does; the shared wrappers
# (rebuilt around their model, their lock new)
persistence.register(intervals.IntervalRegressor, SharedRegressor, SharedClassifier,
                     wrapper=True)
persistence.register(intervals.AdaptiveConformal)

#: The ``class`` a model file names when it holds a river pipeline or target wrapper.
PIPELINE_CLASS = "river-model"


def save(model: Any, path: str | os.PathLike, *, compress: bool = False) -> Path:
    """Save an okoco learner, or a river pipeline / ``TargetStandardScaler`` around one.

    Parameters
    ----------
    model
        An okoco learner (``KONS``, ``SketchedKONS``, ``FunctionalGD``, ``KRLS``, ``Auto``,
        ``BinaryClassifier``, ``MulticlassClassifier``, ...), or a river ``Pipeline`` whose
        steps are ``StandardScaler``, :func:`okoco.preprocessing.encode_text` and okoco
        learners, optionally wrapped in a ``TargetStandardScaler``, an ``IntervalRegressor``
        (or with one as its last step) or :func:`shared`.
    path
        Destination, conventionally ``*.npz``; written atomically.
    compress
        Compress the archive (smaller, slower).

    Returns
    -------
    pathlib.Path

    The file is a snapshot: the locks of the model's parts (every okoco learner's, a wrapper's
    that has one) are held, in a fixed order, while it is encoded, so other threads learning or
    predicting meanwhile never leave a step half-done in it (``learner.save`` holds the
    learner's lock too). A river ``Pipeline`` has no lock of its own and calls its steps one
    after another (and river's ``StandardScaler`` has none either): a pipeline that threads
    share belongs in :func:`shared`, whose one lock makes each call whole and which this
    function holds while it saves. A ``BinaryClassifier``, ``MulticlassClassifier``,
    ``IntervalRegressor`` (bare or in a pipeline), ``AdaptiveConformal`` state and the
    encoders of text features (:func:`okoco.preprocessing.encode_text`: river's
    ``OneHotEncoder`` and ``FeatureHasher`` in a ``TransformerUnion``) are saved too.

    Raises
    ------
    TypeError
        A step outside the allow-list (the message names it, e.g. ``model['OneHotEncoder']``):
        such a model holds code; pickle it instead, and load only files you wrote.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from river import preprocessing
    >>> import okoco
    >>> from okoco.learners import FunctionalGD
    >>> model = preprocessing.StandardScaler() | FunctionalGD(eta=0.2)
    >>> okoco.save(model, Path(tempfile.mkdtemp(), "fgd.npz")).name
    'fgd.npz'
    >>> from river import compose
    >>> def clip(x):
    ...     return {k: min(v, 1.0) for k, v in x.items()}
    >>> okoco.save(compose.FuncTransformer(clip) | FunctionalGD(), "x.npz")
    Traceback (most recent call last):
    ...
    TypeError: cannot save model['clip']: FuncTransformer objects are not in okoco's allow-list
    """
    with contextlib.ExitStack() as held:  # a snapshot: no step in the middle of a call
        for lock in _locks(model):
            held.enter_context(lock)
        return _save_unlocked(model, path, compress)


def _locks(model: Any) -> list:
    """The locks of a model's parts, in a fixed order: a pipeline's steps in order, a wrapper
    before what it wraps (the order in which calls nest, so holding them all cannot deadlock
    with a call in progress). A learner's lock covers its own parts (Auto's experts, a
    classifier's learners), which are only reached through it."""
    locks, seen = [], set()

    def visit(obj: Any) -> None:
        lock = vars(obj).get("_lock") if hasattr(obj, "__dict__") else None
        if callable(getattr(lock, "acquire", None)) and id(lock) not in seen:
            seen.add(id(lock))
            locks.append(lock)
        parts = _parts(obj)  # a pipeline's steps in order, a union's transformers
        if parts is not None:
            for part in parts.values():
                visit(part)
        elif _is_wrapper(_class_path(type(obj))):
            visit(obj._wrapped_model)

    visit(model)
    return locks


def _save_unlocked(model: Any, path: str | os.PathLike, compress: bool) -> Path:
    if _class_path(type(model)) in persistence.registered(learners=True):
        return persistence.save(model, path, compress=compress)
    enc = _Encoder(river=True)
    tree = _capture(enc, model, "model")
    if not {"__pipeline__", "__wrapper__"} & set(tree if isinstance(tree, dict) else ()):
        raise TypeError(f"okoco.save saves okoco learners and river pipelines of them, not "
                        f"{type(model).__qualname__}")
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
            "okoco_version": _version(), "class": PIPELINE_CLASS, "model": tree}
    return _write(path, meta, enc.arrays, compress)


@collector_paused
def load(path: str | os.PathLike) -> Any:
    """Load what :func:`save` (or ``learner.save``) wrote: a learner or a whole pipeline.

    The archive is read without pickle and only allow-listed classes are built. Every restored
    object must have exactly the attributes a freshly built one of its class has, so a file
    written by another okoco or river version whose state no longer fits is refused with a
    ``ValueError`` rather than loaded half-right.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not an okoco model file, an unsupported format version, or a state that does not fit.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from river import preprocessing
    >>> import okoco
    >>> from okoco.learners import FunctionalGD
    >>> model = preprocessing.StandardScaler() | FunctionalGD(eta=0.2)
    >>> model.learn_one({"x": 2.0}, 1.0)
    >>> again = okoco.load(okoco.save(model, Path(tempfile.mkdtemp(), "m.npz")))
    >>> list(again.steps), again.predict_one({"x": 1.0}) == model.predict_one({"x": 1.0})
    (['StandardScaler', 'FunctionalGD'], True)
    """
    meta, archive = _read(path, FORMAT_NAME)
    if meta.get("class") != PIPELINE_CLASS:
        return _load_learner(path, meta, archive)  # read once
    with archive, _Damaged(path):
        model = _build(_Decoder(archive, river=True, version=meta["format_version"], finite=True),
                       meta["model"], "model", path)
        archive.finish()  # a member the metadata does not refer to is refused
        return model


def _build(dec: _Decoder, tree: Any, where: str, path: Any) -> Any:
    """A model from its tree: pipelines and target wrappers through river's constructors."""
    if isinstance(tree, dict) and "__pipeline__" in tree:
        steps = [(name, _build(dec, sub, f"{where}[{name!r}]", path))
                 for name, sub in tree["__pipeline__"]]
        return compose.Pipeline(*steps)
    if isinstance(tree, dict) and "__union__" in tree:
        union = compose.TransformerUnion()  # (its constructor would copy each part)
        union.transformers = {str(name): _build(dec, sub, f"{where}[{name!r}]", path)
                              for name, sub in tree["__union__"]}
        return union
    if isinstance(tree, dict) and "__wrapper__" in tree:
        if not _is_wrapper(tree["__wrapper__"]):
            raise ValueError(f"{str(path)!r} asks for a {tree['__wrapper__']!r} wrapper, which "
                             "okoco never loads")
        regressor = _build(dec, tree["regressor"], f"{where}.regressor", path)
        wrapper = _resolve(tree["__wrapper__"])(regressor)
        attrs = {k: dec.decode(v, f"{where}.{k}") for k, v in tree["attrs"].items()}
        _check_state(wrapper, set(attrs) | _rebuilt(wrapper), where, path)
        wrapper.__dict__.update(attrs)
        return wrapper
    step = dec.decode(tree, where)
    cls = type(step)
    fresh = cls(**{p: getattr(step, p) for p in _init_params(cls) if hasattr(step, p)})
    _check_state(fresh, set(vars(step)), where, path)
    check_model(step, where)
    return step


def _check_state(fresh: Any, names: set, where: str, path: Any) -> None:
    expected = set(vars(fresh))
    if names != expected:
        raise ValueError(
            f"{str(path)!r}: the saved {type(fresh).__name__} at {where} does not match this "
            f"okoco {_version()} and its river (missing {sorted(expected - names)}, "
            f"unexpected {sorted(names - expected)})"
        )
