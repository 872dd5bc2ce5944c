r"""Any okoco regressor as a river multiclass classifier: one-vs-rest over shared inputs.

Each class :math:`c` seen learns :math:`+1` on the samples of class :math:`c` and :math:`-1` on
the others; the scores :math:`f_c(x) \in [-C, C]` become probabilities as in
:class:`~okoco.BinaryClassifier` (the logistic :math:`1/(1+e^{-f_c})`, or
:math:`\mathrm{clip}((1+f_c)/2, 0, 1)` for the other losses), normalised to sum to one.

**The default: squared-loss KONS, one preconditioner for all classes.** With the squared loss
and the curvature step (``KONS()``'s defaults) every step of every class has the weight
:math:`\ell'' = 2` whatever its target, so all classes have the same preconditioner: one
:class:`~okoco.linalg.SlotInverse` serves them (one solve, one append and one removal per step,
:math:`O(m^2)`), and each class adds only its coefficients and running :math:`K c`
(:math:`O(m)` a step; ``okoco.learners._multiclass_shared``). ``K`` classes then cost about one
learner: 11-13 times less time and 7-10 times less memory than river's one-vs-rest of the same
learner on ImageSegments and digits, as accurate (within 0.6 points: docs/guide/evaluation.md).
The squared loss regresses the :math:`\pm 1` codes, so :math:`f_c(x)` estimates
:math:`2 P(c \mid x) - 1` and :math:`\mathrm{clip}((1+f_c)/2, 0, 1)`, normalised, is a
probability. A class first seen at sample :math:`t` is the KONS that learned the target 0 on the
samples before :math:`t` (zero coefficients on the points stored then) and :math:`\pm 1` from
then on: an exact learner (each class matches a standalone KONS fed those targets), chosen over
the target :math:`-1` on those samples by measurement.

**Auto, squared loss** (``MulticlassClassifier(Auto())``, the CLI's default learner on a
multiclass task): one ``Auto`` mixture whose experts are each the shared form above, over one
ring of points (``okoco.learners._multiclass_auto``); its weights come from each expert's summed
class losses, exp-concave at rate :math:`\eta/K`. ``K`` classes cost about one ``Auto``.

**Any other learner or loss**: each class has its own copy of the learner, created when its
class is first seen (as river's ``OneVsRestClassifier``). What the classes share: one feature
map (the dict-to-vector encoding of each row is computed once per prediction for all classes,
and every class sees the same columns, whenever it was created). When the learner is an exact
:class:`~okoco.learners.KONS`, windowed (its default ``max_size``) or unbounded, the classes
also share the stored points and the kernel row at each input
(:class:`~okoco.learners.auto.SharedPoints`, as ``Auto``'s experts): every class stores every
sample it learns, so one store (one ring of the last ``max_size`` points for the window) serves
all of them, and the kernel rows (at the input, and at the point a window forgets) are computed
once per step instead of once per class. Each class keeps its own coefficients and its own
preconditioner (with any other loss or step, the step's weight depends on the class's prediction
and target).
"""

from __future__ import annotations

import threading
from numbers import Integral

import numpy as np
from river import base

from okoco import losses, persistence
from okoco._checks import check_label, in_row
from okoco._input import FeatureMap
from okoco._locking import Locked, one_at_a_time
from okoco._validation import Interval, Protocol, check_params
from okoco.learners._multiclass_auto import SharedSquaredAuto
from okoco.learners._multiclass_auto import shares_preconditioner as _auto_shares
from okoco.learners._multiclass_shared import SharedSquaredKONS
from okoco.learners._protocol import take_steps
from okoco.learners.auto import SharedPoints
from okoco.learners.fgd import FunctionalGD
from okoco.learners.kons import KONS
from okoco.learners.shared import StepShared

__all__ = ["MulticlassClassifier"]


def _shares_points(learner) -> bool:
    """Exact KONS stores every sample it learns (never a null step), and a window keeps the
    last ``max_size`` of them, so K classes can keep one store (one ring) of the points; its
    subclasses select points (each class its own) and do not."""
    return type(learner) is KONS


def _shares_preconditioner(learner) -> bool:
    """Exact KONS with the squared loss and the curvature step weighs every step by
    ``loss'' = 2`` whatever its target: every class's preconditioner is the same matrix."""
    return (_shares_points(learner) and isinstance(learner._loss, losses.Squared)
            and learner.eta == "hessian")


def _rows(X) -> list[dict]:
    """The rows of a DataFrame, a 2-D array or a list of dicts, as dicts."""
    if hasattr(X, "to_dict"):
        return X.to_dict(orient="records")
    if isinstance(X, (list, tuple)) and all(isinstance(row, dict) for row in X):
        return list(X)
    return [dict(enumerate(row)) for row in np.asarray(X, dtype=float).tolist()]


class MulticlassClassifier(Locked, base.Wrapper, base.MiniBatchClassifier):
    r"""Multiclass classification with okoco learners, one-vs-rest, over shared inputs.

    Each class :math:`c` learns the targets :math:`\pm 1` and scores :math:`f_c(x) \in [-C, C]`;
    ``predict_proba_one`` gives :math:`p_c \propto \sigma(f_c)` (logistic loss) or
    :math:`p_c \propto \mathrm{clip}((1 + f_c)/2, 0, 1)` (the squared loss's estimate of
    :math:`P(c \mid x)`, as :math:`f_c` estimates :math:`2P(c \mid x) - 1`), summing to one (equal
    shares when every class scores 0), and ``predict_one`` its argmax (the first class seen on
    a tie).

    **The default** ``KONS()`` (squared loss, curvature step, a window of 500 points), and any
    exact ``KONS`` with the squared loss and ``eta="hessian"``: all classes share one store of
    the points and **one preconditioner** (it does not depend on the targets), so ``K`` classes
    cost about one KONS plus :math:`O(mK)` a step. A class first seen at sample :math:`t` is
    then the KONS that learned the target 0 on the samples before :math:`t`, and
    :math:`\pm 1` from :math:`t` on.

    **Auto** with its default squared loss (``MulticlassClassifier(Auto())``, the CLI's default
    learner on a multiclass task): **one mixture** of ``Auto``'s experts, each expert the form
    above (one preconditioner for all classes), over one ring of points and one kernel row per
    RBF scale; the mixture weighs each expert by the sum of its classes' squared losses, at
    rate :math:`\eta/K` (``okoco.learners._multiclass_auto``), so ``K`` classes cost about one
    ``Auto``. ``Auto(loss=Logistic())`` keeps one ``Auto`` per class (below).

    **Any other learner or loss**: a class first seen at sample :math:`t` gets a fresh copy of
    ``learner`` then (as river's ``OneVsRestClassifier``): it has not seen the samples before
    :math:`t`. All classes read one feature map, and when ``learner`` is an exact ``KONS``
    (windowed or not) one store of the points and one kernel row per input (each class's
    arithmetic is still that of a standalone KONS learning its :math:`\pm 1` targets, with its
    own preconditioner).

    **Labels** follow the classifiers' one rule (``okoco._checks.check_label``): a single
    hashable value equal to itself. ``None``, containers (``([1],)``, a list, an array) and
    unhashable values are a ``TypeError``, NaN a ``ValueError``; a refused label changes
    nothing.

    **Threads.** One call at a time (a lock, as the learners have): from several threads the
    state is that of some sequential order of the calls.

    **Memory per class** (``benchmarks/bench_multiclass_memory.py`` at commit f31db3a:
    tracemalloc, 600 samples of 3 classes, then a new class at every sample): with one
    preconditioner for all classes a class adds :math:`O(W)`, two columns over the window's
    :math:`W + 1` slots (the default ``KONS()``: 8 KiB a class at :math:`W = 500`;
    ``Auto()``: 40 KiB, one pair per expert); any other learner keeps a whole learner per
    class, and a ``KONS`` with another loss or
    step its own :math:`(W+1) \times (W+1)` preconditioner: 2.07 MiB a class at
    :math:`W = 500` for ``KONS(loss=Logistic())`` (``FunctionalGD``: 8 KiB). Hence
    ``max_classes`` (500: at most about 1 GiB for a per-class ``KONS`` at its default window,
    6 MiB for the default): a label beyond it is refused with a ``ValueError`` saying so.

    Parameters
    ----------
    learner
        An okoco regressor, the template of every class's learner; ``None`` means ``KONS()``
        (the squared loss: one preconditioner for all classes).
    max_classes
        The most classes kept (``None``: no bound); a new label beyond it is refused, and
        changes nothing.

    Attributes
    ----------
    classes
        The labels seen, in the order first seen.
    learners
        One learner per class, in the order of ``classes`` (empty when the classes share one
        preconditioner: their scores are columns of one ``SharedSquaredKONS``, or of each
        expert of one ``SharedSquaredAuto``).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco.learners import MulticlassClassifier
    >>> model = preprocessing.StandardScaler() | MulticlassClassifier()
    >>> evaluate.progressive_val_score(datasets.ImageSegments().take(500), model,
    ...                                metrics.Accuracy())
    Accuracy: 84.77%
    >>> model["MulticlassClassifier"].classes[:3]
    ['path', 'foliage', 'sky']
    >>> proba = model.predict_proba_one(next(iter(datasets.ImageSegments()))[0])
    >>> round(sum(proba.values()), 9)
    1.0
    """

    _parameter_constraints = {
        "learner": [None, Protocol("an okoco regressor (with learn_one and predict_one)",
                                   "learn_one", "predict_one")],
        "max_classes": [None, Interval(Integral, 1, None, closed="left")],
    }

    _saved_state = {"learner": "obj", "max_classes": "opt int[1,]|none",
                    "_lock": "cache:lock", "classes": "list[plain]", "learners": "list[obj]",
                    "n_seen": "int[0,]", "_features": "obj:FeatureMap as features",
                    "_points": "obj:SharedPoints|none as points",
                    "_shared": "opt obj:SharedSquaredKONS,SharedSquaredAuto|none as shared"}

    # the classes' one preconditioner (squared-loss KONS), or one per expert (squared-loss
    # Auto); files before it hold None
    _shared = None
    max_classes = None  # files before it: no bound

    def __init__(self, learner=None, max_classes: int | None = 500):
        self.learner = learner
        self.max_classes = max_classes
        check_params(self)
        if learner is None:  # chosen by measurement: see the module's docstring
            self.learner = KONS()
        self._lock = threading.Lock()  # one call at a time, as the learners (one_at_a_time)
        self.classes: list = []
        self.learners: list = []
        self.n_seen = 0
        self._features = FeatureMap()
        # one store of the points for exact KONS classes (None: each class keeps its own); a
        # window of W points is a ring of W + 1 slots, as in KONS itself
        self._points = None
        if _auto_shares(self.learner):
            self._shared = SharedSquaredAuto.of(self.learner)
        elif _shares_preconditioner(self.learner):
            learner = self.learner
            self._shared = SharedSquaredKONS(learner.kernel, learner.C, learner.alpha,
                                             learner.max_size)
        elif _shares_points(self.learner):
            window = self.learner.max_size
            self._points = SharedPoints(None if window is None else window + 1)

    @property
    def shares_preconditioner(self) -> bool:
        """Whether the classes share one preconditioner (squared-loss KONS with the curvature
        step; squared-loss ``Auto``: one for each expert of one mixture): K classes then cost
        about one learner."""
        return self._shared is not None

    @property
    def _wrapped_model(self):
        return self.learner

    @property
    def _multiclass(self) -> bool:
        return True

    @classmethod
    def _unit_test_params(cls):
        yield {"learner": FunctionalGD(loss=losses.Logistic())}
        yield {"learner": KONS(loss=losses.Logistic())}
        yield {"learner": KONS(max_size=8)}

    def save(self, path, *, compress: bool = False):
        """Save the classifier and its learners to one ``.npz`` file (see :func:`okoco.load`)."""
        with self._lock:  # not in the middle of another thread's step
            return persistence.save(self, path, compress=compress)


    @property
    def dictionary_size(self) -> int:
        """Points stored, summed over the classes (one store when they share it)."""
        if self._shared is not None:
            return self._shared.dictionary_size
        if self._points is not None:
            n, window = self._points.rows.n, self.learner.max_size
            return n if window is None else min(n, window)  # the ring's spare slot is not held
        return sum(getattr(learner, "dictionary_size", 0) for learner in self.learners)

    # -- classes --------------------------------------------------------------------------

    def _check_room(self, y, known: int) -> None:
        """Refuse ``y`` as class ``known + 1`` beyond ``max_classes``."""
        if self.max_classes is not None and known >= self.max_classes:
            raise ValueError(
                f"the label {y!r} would be class {known + 1}, beyond max_classes="
                f"{self.max_classes}; raise max_classes (each class of "
                f"{type(self.learner).__name__} adds its own state: see the class's "
                "docstring, memory per class) or merge rare labels")

    def _new_learner(self):
        learner = self.learner.clone()
        learner.share_features(self._features)  # every class sees the same columns
        if self._points is not None:  # a class created after t samples holds them as points
            # it learned nothing from, and the classes' one kernel object (KONS.share_points)
            learner.share_points(self._points, self.learners[0]._kernel if self.learners
                                 else None)
        return learner

    # -- scores ---------------------------------------------------------------------------

    def _proba(self, scores: np.ndarray) -> np.ndarray:
        if isinstance(self.learner._loss, losses.Logistic):
            p = 1.0 / (1.0 + np.exp(-scores))
        else:
            p = np.clip((1.0 + scores) / 2.0, 0.0, 1.0)
        total = p.sum()
        return p / total if total > 0 else np.full(p.shape, 1.0 / p.shape[0])

    def _scores(self, x: dict) -> np.ndarray:
        if self._shared is not None:
            return self._shared.scores(self._features.encode(x, arrays=False)[0])
        if self._points is None:
            return np.array([learner.predict_one(x) for learner in self.learners])
        v = self._features.encode(x, arrays=False)[0]
        return np.array([learner._clip(a.ybar) for learner, a in
                         zip(self.learners, self._analyses(v))])

    def _analyses(self, v: np.ndarray) -> list:
        """Every class's analysis at ``v`` (the step protocol's ``analyse``) from one shared
        kernel row; each kept by its learner for a ``learn_one`` after ``predict_one``."""
        shared = StepShared(v, self._points)
        return [learner._cached(v, lambda _v, lr=learner: lr.analyse(_v, shared))
                for learner in self.learners]

    # -- river protocol -------------------------------------------------------------------

    @one_at_a_time
    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        return self._predict_proba_one(x)

    def _predict_proba_one(self, x: dict) -> dict:
        if not self.classes:
            return {}
        return dict(zip(self.classes, self._proba(self._scores(x)).tolist()))

    @one_at_a_time
    def predict_one(self, x: dict, **kwargs):
        return self._predict_one(x)

    def _predict_one(self, x: dict):
        if not self.classes:
            return None
        return self.classes[int(np.argmax(self._scores(x)))]

    @one_at_a_time
    def learn_one(self, x: dict, y, **kwargs) -> None:
        """One step of every class (``+1`` for ``y``'s, ``-1`` for the others); a new label is
        a new class. A bad ``x`` or ``y`` raises before anything changes."""
        self._learn_one(x, y)

    def _learn_one(self, x: dict, y) -> None:
        check_label(y)
        self._features.encode(x, arrays=False)  # a bad row raises here, before any change
        added = y not in self.classes
        if added:
            self._check_room(y, len(self.classes))
        if self._shared is not None:
            self._learn_one_shared(x, y, added)
            return
        if added:
            learner = self._new_learner()
            self.classes.append(y)
            self.learners.append(learner)
        index = self.classes.index(y)
        try:
            if self._points is None:
                for i, learner in enumerate(self.learners):
                    learner.learn_one(x, 1.0 if i == index else -1.0)
            else:
                self._learn_shared(x, index)
        except BaseException:
            if added:  # the class was not learned: it was not seen
                self.classes.pop()
                self.learners.pop()
            raise
        self.n_seen += 1

    def _learn_one_shared(self, x: dict, y, added: bool) -> None:
        """One step of every class over the one preconditioner (a refused step changes
        nothing, a new class included)."""
        v, new = self._features.encode(x, arrays=False)
        if added:
            self._shared.add_class()
        try:
            self._shared.learn(v, len(self.classes) if added else self.classes.index(y))
        except BaseException:
            if added:
                self._shared.drop_class()
            raise
        if added:
            self.classes.append(y)
        self._features.add(new)
        self.n_seen += 1

    def _learn_shared(self, x: dict, index: int) -> None:
        """One KONS step of every class on one encoding, one kernel row and one stored point;
        every step is checked before any is taken (a refused step changes nothing)."""
        learners = self.learners
        v, new = self._features.encode(x, arrays=False)
        first = learners[0]
        if not first.n_seen and first.kernel is None and not self._points.rows.n:
            first._fix_default_kernel(v.shape[0])
            for learner in learners[1:]:  # (none has learned: their stores are still empty)
                learner.share_points(self._points, first._kernel)
        codes = [1.0 if i == index else -1.0 for i in range(len(learners))]
        take_steps(learners, v, self._analyses(v), codes, lambda: self._points.append(v))
        self._features.add(new)

    # -- mini-batches ---------------------------------------------------------------------

    @one_at_a_time
    def learn_many(self, X, y, **kwargs) -> None:
        """``learn_one`` over the rows of a DataFrame, a 2-D array or a list of dicts and their
        labels, in order.

        The whole batch is checked first, as the learners check theirs: every cell (the one
        input rule, ``docs/guide/reliability.md``), every label, the number of classes and
        every row's ``k(x, x)``; the first bad one raises naming its row, and nothing is
        learned. (A step the learners refuse for a numerical reason found only while learning,
        e.g. ``KONS``'s guard, raises naming its row too, the rows before it learned.)
        """
        rows = self._checked_rows(X)
        labels = y.tolist() if hasattr(y, "tolist") else list(y)
        if len(labels) != len(rows):
            raise ValueError(f"X has {len(rows)} rows but y has {len(labels)} labels")
        classes = set()
        known = len(self.classes)
        for i, label in enumerate(labels):
            in_row(i, check_label, label)
            if label not in self.classes and label not in classes:
                in_row(i, self._check_room, label, known + len(classes))
                classes.add(label)
        for i, (row, label) in enumerate(zip(rows, labels)):
            in_row(i, self._learn_one, row, label)

    def _checked_rows(self, X) -> list[dict]:
        """The rows of a batch as dicts, once every cell (``FeatureMap.encode_many``: the
        first bad one raises naming its row) and every row's ``k(x, x)`` (the template
        learner's check, where it has one) passed."""
        V, _ = self._features.encode_many(X, arrays=False)
        check_rows = getattr(self.learner, "_check_rows", None)
        if check_rows is not None:
            check_rows(V)
        return _rows(X)

    @one_at_a_time
    def predict_proba_many(self, X, **kwargs):
        """Class probabilities of each row: a DataFrame for a DataFrame, else ``{label: array}``;
        the batch's cells are checked first (a bad one raises naming its row)."""
        rows = self._checked_rows(X)
        probas = [in_row(i, self._predict_proba_one, row) for i, row in enumerate(rows)]
        cols = {c: np.array([p.get(c, 0.0) for p in probas]) for c in self.classes}
        if hasattr(X, "iloc"):
            import pandas as pd  # optional dependency, only present with a DataFrame input

            return pd.DataFrame(cols, index=X.index)
        return cols

    @one_at_a_time
    def predict_many(self, X, **kwargs):
        """The predicted label of each row (a Series for a DataFrame), as ``predict_one``; the
        batch's cells are checked first (a bad one raises naming its row)."""
        rows = self._checked_rows(X)
        out = np.array([in_row(i, self._predict_one, row) for i, row in enumerate(rows)],
                       dtype=object)
        if hasattr(X, "iloc"):
            import pandas as pd

            return pd.Series(out.tolist(), index=X.index)
        return np.array(out.tolist()) if len(out) else out

