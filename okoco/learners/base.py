r"""The small base every okoco learner stands on.

It owns what the papers leave implicit: the river ``dict`` boundary (features appear and
vanish, missing = 0), input validation that leaves the state untouched on error, the clipped
projection :math:`h(z) = \mathrm{sign}(z)\max(|z| - C, 0)`, the step-size policy
(``StepSize``, in ``okoco.learners._step_size``) and the seeded random generator. A learner
subclass declares its parameters in ``_parameter_constraints`` (checked by
:func:`okoco._validation.check_params`), assigns them in ``__init__`` and calls
:meth:`KernelLearner._setup`; it implements three abstract methods:

``_reset_state()``
    create the algorithm's state (called by ``_setup``);
``_predict_vec(v) -> float``
    the unclipped prediction :math:`\bar y` of the current function at ``v``;
``_learn_vec(v, y, eta)``
    one protocol step (predict, observe :math:`\dot g`, update) on a validated vector.

A learner that an owner drives step by step among others (``Auto``'s experts,
``MulticlassClassifier``'s classes) also follows the step protocol, :class:`StepProtocol`.
"""

from __future__ import annotations

import abc
import math
import threading
import warnings
from numbers import Integral, Real

import numpy as np
from river import base

from okoco import kernels as _kernels
from okoco import losses as _losses
from okoco import persistence
from okoco._blas import find_libraries
from okoco._core import _encode
from okoco._core._loss import clip_excess  # noqa: F401  (the papers' h(z), compiled)
from okoco._dist import gaussian
from okoco._input import MAX_ABS_VALUE, FeatureMap, check_target, check_targets
from okoco._locking import Locked, one_at_a_time
from okoco._validation import Interval, Protocol, check_params
from okoco.learners._codes import compiled_kernel, compiled_loss, widened  # noqa: F401
from okoco.learners._protocol import Memo, StepProtocol
from okoco.learners._step_size import ETA, ETA_HESSIAN, StepSize  # noqa: F401

__all__ = ["KernelLearner", "StepProtocol", "StepSize", "clip_excess"]

#: Batches of fewer rows are learned row by row (each row one compiled step where the learner
#: has one): a compiled loop's set-up costs about as much as this many steps' Python.
SMALL_BATCH = 4


def overflow_message(kernel, value) -> str:
    """Why a prediction or an update is not finite: float64 overflowed (an infinity), or a
    kernel or loss gave NaN (which no overflow of okoco's own arithmetic produces alone)."""
    if isinstance(value, (int, float)) and math.isinf(value):
        return (f"the unclipped prediction is {value!r}: float64 overflowed, the features are "
                f"too large for {kernel!r}; scale them (e.g. river's StandardScaler)")
    return (f"a value of the step is not a number (NaN; the prediction at hand is {value!r}): "
            f"the kernel {kernel!r} or the loss returned NaN, or float64 overflowed inside "
            "them; check a custom kernel or loss, or scale the features")


def overflow_target_message(y: float, prediction: float) -> str:
    """Why a step is refused whose running statistics (the noise scale of
    ``predict_one(x, with_dist=True)``, the regret terms) would overflow float64: the target
    lies too far from the prediction for the predictive spread."""
    return (f"the target {y!r} lies {abs(y - prediction):.3g} from the prediction "
            f"{prediction:.3g}: learning it would overflow the learner's running statistics "
            "(the noise scale of with_dist, the regret sums) in float64; rescale the targets "
            "(e.g. okoco.preprocessing.TargetStandardScaler)")


#: Constraints shared by the learners' parameters (see okoco._validation).
KERNEL = Protocol("an okoco kernel (callable, with a diag method)", "diag", callable_object=True)
LOSS = Protocol("an okoco loss (with a derivative method)", "derivative")
# C: squares of C must not overflow, nor 1/C^2 (a step size, a rate): C = 5e-324 divided by 0
BOUND = Interval(Real, 1.0 / MAX_ABS_VALUE, MAX_ABS_VALUE)
#: The most points a learner may keep (``max_size``, ``budget``): far beyond any memory, and
#: within the compiled core's index type (``Py_ssize_t``), which a larger size would overflow.
MAX_POINTS = 10**15
SIZE = Interval(Integral, 1, MAX_POINTS)


def _is_regression(loss) -> bool:
    """A loss taking any real target (no ``check_target`` of its own), i.e. not a classifier's."""
    check = getattr(type(loss), "check_target", None)
    return check is None or check is _losses.Loss.check_target


class KernelLearner(Memo, Locked, base.MiniBatchRegressor):
    """Base class of the okoco regressors (a river ``MiniBatchRegressor``).

    A subclass's ``__init__`` assigns its parameters and calls :meth:`_setup`, which checks
    them against ``_parameter_constraints`` and builds the state through the abstract
    ``_reset_state``. Predictions are always in ``[-C, C]``. ``learn_many`` is exactly a
    sequence of ``learn_one`` calls, validated as a whole before the first. A learner that an
    owner drives among others (``Auto``'s experts, ``MulticlassClassifier``'s classes) also
    follows the step protocol, :class:`StepProtocol` (``analyse``, ``check``, ``apply``,
    ``forget``), and its ``learn_one`` takes the same phases.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.learners import FunctionalGD, KernelLearner
    >>> model = FunctionalGD(C=1.0, eta=0.5)
    >>> isinstance(model, KernelLearner)
    True
    >>> model.learn_many(np.array([[0.0], [1.0]]), [0.5, -0.5])
    >>> model.n_seen, model.dictionary_size
    (2, 2)
    """

    _hessian_step = False  # whether eta="hessian" (a curvature-exact step) is a policy
    _parameter_constraints: dict = {
        "kernel": [None, KERNEL],
        "loss": [None, LOSS],
        "C": [BOUND],
    }

    #: Saved state of every learner (okoco.persistence); subclasses add theirs.
    _saved_state: dict = {
        "kernel": "kernel|none", "loss": "loss|none", "C": "number|none",
        "_kernel": "kernel as resolved_kernel", "_loss": "loss as resolved_loss",
        "_eta": "opt obj:StepSize as step_size", "_features": "obj:FeatureMap as features",
        "_rng": "rng as rng", "n_seen": "int[0,]", "_abs_target_sum": "float as abs_target_sum",
        "_warned_unscaled": "bool as warned_unscaled", "_cache": "cache:None",
        "_lock": "cache:lock", "_core": "cache:None",
    }
    _core: tuple | None = None  # (kernel, its compiled state or step object): a cache
    _loop_rows = 1  # batches of fewer rows take _learn_rows (row by row), others _learn_vecs

    def _setup(self) -> None:
        """Check the parameters, then build a fresh state (the end of every ``__init__``)."""
        check_params(self)
        self._lock = threading.Lock()  # see one_at_a_time
        find_libraries()  # once per process, ~10 ms: at construction, not in a timed replay
        # kernel=None: RBF(gamma = 1/d), d fixed at the first learn (_fix_default_kernel)
        self._kernel = self.kernel if self.kernel is not None else _kernels.RBF(gamma=1.0)
        self._loss = self.loss if self.loss is not None else _losses.Squared()
        if hasattr(self, "eta"):  # a learner with a step size
            self._eta = StepSize(self.eta, self._loss, self.C, hessian=self._hessian_step)
        self._reset()

    def _reset(self) -> None:
        """A fresh state with the same (checked) parameters: nothing learned."""
        self._features = FeatureMap()
        self._rng = np.random.default_rng(getattr(self, "seed", None))
        self.n_seen = 0
        self._abs_target_sum = 0.0
        self._warned_unscaled = False
        self._cache = None
        self._core = None
        self._reset_state()

    def share_features(self, features) -> None:
        """Read the columns of ``features`` (an ``okoco._input.FeatureMap`` another learner
        holds) in place of a map of its own, so that learners which see the same rows agree on
        the column of every feature (``MulticlassClassifier``'s classes); before the first
        step."""
        if self.n_seen:
            raise ValueError(f"share_features on a {type(self).__name__} that has learned "
                             f"{self.n_seen} steps; share the columns before the first step")
        self._features = features

    @abc.abstractmethod
    def _reset_state(self) -> None:
        """Create the algorithm's state (the stored points and whatever the update keeps)."""

    @abc.abstractmethod
    def _predict_vec(self, v: np.ndarray) -> float:
        """The unclipped prediction at the validated vector ``v`` (no state change)."""

    @abc.abstractmethod
    def _learn_vec(self, v: np.ndarray, y: float, eta: float | None) -> None:
        """One protocol step on a validated vector; raise before changing anything."""

    # -- river protocol -------------------------------------------------------------------

    @one_at_a_time
    def predict_one(self, x: dict, with_dist: bool = False):
        """Predict ``clip(f(x), -C, C)`` without changing any state.

        With ``with_dist=True`` the prediction is a river ``proba.Gaussian`` centred on it, with
        the learner's own predictive variance (``docs/guide/intervals.md``), as river's
        ``BayesianLinearRegression`` gives; learners without one raise ``TypeError``.
        A prediction that overflows (features too large for the kernel) raises ``ValueError``
        instead of returning NaN or a silently clipped infinity; so does a predictive variance
        that overflows (errors learned too large for float64 at ``x``): the distribution's
        sigma is always finite.
        """
        v = self._features.encode(x, arrays=False)[0]
        z = self._predict_vec(v)
        if not math.isfinite(z):
            raise ValueError(overflow_message(self._kernel, z))
        if not with_dist:
            return self._clip(z)
        variance = self._predictive_variance(v)
        if not math.isfinite(variance):
            raise ValueError(f"the predictive variance at x is {variance!r}: the errors learned "
                             "are too large for float64 at this point; rescale the targets")
        return gaussian(self._clip(z), variance)

    def _predictive_variance(self, v: np.ndarray) -> float:
        """The variance of ``predict_one(x, with_dist=True)`` at the encoded row ``v``."""
        raise TypeError(f"{type(self).__name__} gives no predictive distribution "
                        "(with_dist=True); KRLS, KONS, SketchedKONS, PROSNKONS, CONKONS and "
                        "Auto do")

    @one_at_a_time
    def learn_one(self, x: dict, y: float) -> None:
        """One test-then-train step: predict, observe the loss derivative, update.

        Invalid ``x`` or ``y`` raises before anything is changed.
        """
        y = check_target(y, self._loss)
        eta = self._step(self.n_seen + 1)
        vec, new = self._features.encode(x, arrays=False)
        kernel = self._kernel
        if not self.n_seen:  # the call only acts at the first learn
            self._fix_default_kernel(vec.shape[0])
        try:
            self._learn_vec(vec, y, eta)
        except BaseException:
            self._kernel = kernel  # the step failed: nothing changes, the default kernel neither
            raise
        self._features.add(new)  # new features are registered once the step succeeded
        self._watch_target_scale(abs(y), 1)
        self.n_seen += 1
        self._cache = None

    @one_at_a_time
    def learn_many(self, X, y) -> None:
        """``learn_one`` over the rows of a DataFrame or a 2-D array, in order.

        The whole batch is validated before anything is learned: its cells, its targets, the
        step sizes and every row's ``k(x, x)`` (a row whose features overflow the kernel fails
        the batch, naming the row). Nothing is copied: the rows are then learned in order; a
        row whose step is refused (``ValueError`` naming it, as ``learn_one`` would refuse it)
        stops the batch with the rows before it learned, exactly as a batch of those rows alone
        would have left the learner, and changes nothing itself.
        """
        self._learn_batch(X, y, predict=False)

    def _check_rows(self, V: np.ndarray) -> None:
        """Raise, naming the row, if a row's ``k(x, x)`` is not finite (or negative): every
        kernel value of the row is then finite too (``|k(x, y)|^2 <= k(x, x) k(y, y)``)."""
        if not V.shape[0] or getattr(self._kernel, "bounded", False):
            return  # k(x, x) = 1 for every row (as kernels.self_similarity takes it)
        diag = np.asarray(self._kernel.diag(V), dtype=float)
        if diag.ndim == 1:  # one compiled pass: numpy's reductions cost more for a few rows
            i = _encode.first_outside(diag, 0.0, math.inf)  # NaN is outside
        else:  # a kernel's diag of another shape: numpy's comparisons, as they broadcast
            ok = diag >= 0.0
            ok &= diag < math.inf
            i = -1 if ok.all() else int(np.argmin(ok))  # the first value that is not ok
        if i >= 0:
            raise ValueError(f"row {i}: {overflow_message(self._kernel, diag[i])}")

    def _learn_rows(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """Learn the validated rows in order, each by ``_learn_vec`` as ``learn_one`` does;
        with ``predict``, return the clipped prediction of each row before it is learned."""
        predictions = np.empty(len(targets)) if predict else None
        i = 0
        try:  # in_row's wording, without a call per row
            for i in range(len(targets)):
                if predict:
                    z = self._predict_vec(V[i])
                    predictions[i] = self._clip(z) if math.isfinite(z) else z
                self._learn_vec(V[i], targets[i], etas[i])
                self.n_seen += 1
                self._cache = None
        except (TypeError, ValueError) as error:
            raise type(error)(f"row {i}: {error}") from None
        return predictions

    def _learn_vecs(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """A batch of ``_loop_rows`` rows or more: a compiled loop where a learner has one."""
        return self._learn_rows(V, targets, etas, predict)

    def predict_learn_many(self, X, y) -> np.ndarray:
        """Test-then-train over the rows of a DataFrame or a 2-D array: each row's prediction
        (as ``predict_one`` makes it) before the row is learned, then ``learn_one``.

        The predictions of a progressive validation (``okoco.evaluate`` replays arrays with it);
        the batch is validated as by :meth:`learn_many`. For the learners with a compiled step
        (FunctionalGD, KRLS, PROS-N-KONS and CON-KONS on the built-in kernels and losses) the
        loop over the rows runs in compiled code.

        Examples
        --------
        >>> import numpy as np
        >>> from okoco.learners import FunctionalGD
        >>> model = FunctionalGD(C=1.0, eta=0.5)
        >>> model.predict_learn_many(np.array([[0.0], [0.0]]), [0.5, 0.5])
        array([0. , 0.5])
        """
        return self._learn_batch(X, y, predict=True)

    def _learn_batch(self, X, y, *, predict: bool) -> np.ndarray | None:
        """Validate the batch (cells, targets, step sizes, each row's ``k(x, x)``), then
        learn its rows in order; the test-then-train predictions if ``predict``."""
        V, new = self._features.encode_many(X, arrays=False)
        targets = check_targets(y, V.shape[0], self._loss)
        first = self.n_seen + 1
        etas = list(map(self._step, range(first, first + len(targets))))
        kernel = self._kernel
        if not self.n_seen:  # the call only acts before the first learn
            self._fix_default_kernel(V.shape[1])
        try:
            self._check_rows(V)
        except BaseException:
            self._kernel = kernel
            raise
        seen, scale = self.n_seen, (self._abs_target_sum, self._warned_unscaled)
        # learn_many's caller: past _learn_batch, learn_many and the lock's wrapper
        self._watch_target_scale(math.fsum(map(abs, targets)), len(targets), stacklevel=5)
        # a short batch row by row, as learn_one (a compiled loop's set-up costs more)
        learn = self._learn_rows if len(targets) < self._loop_rows else self._learn_vecs
        try:
            predictions = learn(V, targets, etas, predict)
        except BaseException:  # a row refused: the rows before it stay learned, no more
            learned = self.n_seen - seen
            if learned:
                self._features.add(new)
                self._abs_target_sum = scale[0] + math.fsum(map(abs, targets[:learned]))
            else:
                self._kernel = kernel
                self._abs_target_sum, self._warned_unscaled = scale
            raise
        self._features.add(new)
        return predictions

    @one_at_a_time
    def predict_many(self, X):
        """Predictions of the current model for each row (a Series for a DataFrame input).

        A row whose prediction overflows raises ``ValueError`` naming the row.
        """
        V, _ = self._features.encode_many(X, arrays=False)
        preds = self._predict_vecs(V)
        bad = np.flatnonzero(~np.isfinite(preds))
        if bad.size:
            raise ValueError(f"row {int(bad[0])}: {overflow_message(self._kernel, preds[bad[0]])}")
        if self.C is not None:
            preds = np.clip(preds, -self.C, self.C)
        if hasattr(X, "iloc"):  # a pandas object (a list has .index too)
            import pandas as pd  # optional dependency, only present with a DataFrame input

            return pd.Series(preds, index=X.index, dtype=float)
        return preds

    # -- helpers for subclasses -----------------------------------------------------------

    def _fix_default_kernel(self, width: int) -> None:
        """``kernel=None`` means ``RBF(gamma=1/d)``, ``d`` the features of the first row learned
        (scikit-learn's ``gamma="scale"`` for standardized inputs), fixed from then on so that
        stored factorizations stay valid."""
        if self.n_seen == 0 and self.kernel is None:
            self._kernel = _kernels.RBF(gamma=1.0 / max(width, 1))

    def _watch_target_scale(self, abs_sum: float, count: int, stacklevel: int = 4) -> None:
        """Warn once when the mean ``|y|`` exceeds ``2 C``: most predictions are then clipped
        far from their targets (raw targets where standardized ones were meant). ``abs_sum``
        is the sum of ``|y|`` over the ``count`` new targets; ``stacklevel`` points the warning
        at the user's call (learn_one's caller, past the lock's wrapper)."""
        if self.C is None or not _is_regression(self._loss):
            return
        self._abs_target_sum += abs_sum
        n, C = self.n_seen + count, self.C
        if self._abs_target_sum > 2 * C * n and not self._warned_unscaled:
            self._warned_unscaled = True
            warnings.warn(
                f"the targets average |y| = {self._abs_target_sum / n:.3g}, far outside the "
                f"predictions' range [-C, C] = [-{C:g}, {C:g}]; standardize them "
                "(okoco.preprocessing.TargetStandardScaler around the model, which keeps "
                "predict_one(x, with_dist=True) in the targets' units) or raise C",
                UserWarning, stacklevel=stacklevel)

    def _step(self, t: int) -> float | None:
        """Step size of step ``t``, computed (and checked) before any state changes."""
        return self._eta(t) if hasattr(self, "_eta") else None

    def _cached(self, v: np.ndarray, compute):
        """``compute(v)``, reused when ``learn_one`` follows ``predict_one`` on the same row.

        Test-then-train calls both on each row; the expensive part (kernel row, solves) is the
        same, so it is kept for the current state only (keyed by ``n_seen``: :class:`Memo`).
        """
        return self._memoised(self.n_seen, v, compute)

    def save(self, path, *, compress: bool = False):
        """Save the learner to one ``.npz`` file (arrays + JSON, no pickle), atomically.

        Load it back with :func:`okoco.load`; see :mod:`okoco.persistence` for the format.
        Returns the path written.
        """
        with self._lock:  # not in the middle of another thread's step
            return persistence.save(self, path, compress=compress)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_cache"] = state["_core"] = None  # caches are not model state
        return state

    def _clip(self, z: float) -> float:
        if self.C is not None:
            z = min(max(z, -self.C), self.C)
        return float(z)

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        return np.array([self._predict_vec(v) for v in V])

    @property
    def dictionary_size(self) -> int:
        """Number of stored points the predictor uses."""
        return self._store.size

    @classmethod
    def _unit_test_params(cls):
        yield {}
