r"""Functional gradient descent in an RKHS (NORMA: Kivinen, Smola & Williamson 2004, "Online
Learning with Kernels")."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from okoco._core import _steps
from okoco._input import Rows
from okoco._validation import Interval
from okoco.kernels import self_similarity
from okoco.learners.base import (
    ETA,
    SIZE,
    SMALL_BATCH,
    KernelLearner,
    clip_excess,
    compiled_kernel,
    compiled_loss,
    overflow_message,
    widened,
)

__all__ = ["FunctionalGD"]


class FunctionalGD(KernelLearner):
    r"""Projected functional gradient descent (NORMA-style), :math:`O(t)` per step.

    The function is :math:`f = \sum_i c_i\,k(x_i, \cdot)`. At step :math:`t`:

    1. :math:`\bar y_t = f(x_t)`, predict :math:`\hat y_t = \mathrm{clip}(\bar y_t, -C, C)`;
    2. project :math:`f` onto :math:`\{|f(x_t)| \le C\}` in the RKHS norm:
       :math:`f \leftarrow f - \frac{h(\bar y_t)}{k(x_t, x_t)} k(x_t, \cdot)`;
    3. step: :math:`f \leftarrow (1 - \eta_t\lambda) f - \eta_t \dot g_t\, k(x_t, \cdot)`,
       with :math:`\dot g_t = \ell_t'(\hat y_t)`.

    With ``lam = 0`` and ``eta = 1/alpha`` this is Sketched-KONS with ``beta = p_min = 0``
    (Calandriello, Lazaric & Valko 2017, "Second-Order Kernel Online Convex Optimization with
    Adaptive Sketching", Sect. 4). With ``budget = tau`` only the last ``tau``
    terms are kept, NORMA's truncation.

    Parameters
    ----------
    kernel
        An ``okoco.kernels`` kernel; ``None`` means ``RBF(gamma=1/d)``, ``d`` the
        number of features at the first learn (fixed from then on; suits standardized inputs).
    loss
        An ``okoco.losses`` loss; ``None`` means ``Squared()``.
    C
        Predictions are clipped to ``[-C, C]``; the default 3 suits standardized targets
        (river's ``TargetStandardScaler``). Targets far outside it raise a warning, once.
    eta
        Step size: a number (the default 0.5, chosen by measurement on families of streams,
        docs/defaults.md), ``"sqrt"`` (:math:`1/(LC\sqrt t)`), ``"exp-concave"``, or a
        callable of ``t``.
    lam
        NORMA's regularisation :math:`\lambda \ge 0` (shrinks every coefficient by
        :math:`1 - \eta_t\lambda`, which must stay in ``[0, 1]``).
    budget
        Keep at most this many terms, the newest (NORMA's truncation); the default 1000 was
        chosen by measurement (docs/defaults.md). ``None`` keeps all: memory and the step then
        grow with ``t``.

    Attributes
    ----------
    n_seen
        Steps learned.
    dictionary_size
        Terms in the expansion.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco.learners import FunctionalGD
    >>> model = preprocessing.StandardScaler() | FunctionalGD(C=3.0, eta=0.2)
    >>> model = preprocessing.TargetStandardScaler(model)
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.349478
    """

    _parameter_constraints = {
        "eta": ETA,
        "lam": [Interval(Real, 0, None, closed="left")],
        "budget": [None, SIZE],
    }

    _loop_rows = SMALL_BATCH  # fewer rows: row by row, each one compiled step

    _saved_state = {"eta": "str|number", "lam": "number", "budget": "int|none",
                    "_store": "obj:Rows as store"}

    def __init__(self, kernel=None, loss=None, C: float = 3.0, eta=0.5, lam: float = 0.0,
                 budget: int | None = 1000):
        self.kernel = kernel
        self.loss = loss
        self.C = C
        self.eta = eta
        self.lam = lam
        self.budget = budget
        self._setup()

    def _reset_state(self) -> None:
        self._store = Rows(fields=("coef",), max_size=self.budget)

    def _make_step(self, spec: tuple):
        loss = compiled_loss(self._loss)
        return _steps.FGDStep(spec, self._kernel, -1 if loss is None else loss,
                              float(self.lam), float(self.C))

    def _predict_vec(self, v: np.ndarray) -> float:
        core = self._compiled_step()
        if core is not None:  # the kernel row and f(v) in one call, kept for the step
            return core.predict(self._store, v, self.n_seen)
        return self._cached(v, self._value)

    def _value(self, v: np.ndarray) -> float:
        """``f(v) = sum_i c_i k(x_i, v)``."""
        return float(self._store.kernel_row(self._kernel, v).dot(self._store.field("coef")))

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        return self._store.field("coef") @ self._store.kernel_block(self._kernel, V)

    def _step(self, t: int) -> float:
        eta = self._eta(t)
        if not 0.0 <= eta * self.lam <= 1.0:
            raise ValueError(f"eta_t * lam = {eta * self.lam:g} at t = {t} must lie in [0, 1]")
        return eta

    def _learn_vecs(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """The test-then-train loop over the rows in compiled code (``_learn_vec``'s step on
        each row), for the kernels and losses it knows."""
        spec, loss = compiled_kernel(self._kernel), compiled_loss(self._loss)
        if spec is None or loss is None:
            return self._learn_rows(V, targets, etas, predict)
        store = self._store
        store.make_room(len(targets), V.shape[1])
        V = widened(V, store.d)
        predictions = np.empty(len(targets))
        n, n_added, learned, status = _steps.fgd_run(
            spec, store.data, store.fields["coef"], store._sq, store.n, store.n_added,
            store.max_size or 0, V, np.asarray(targets, dtype=float),
            np.asarray(etas, dtype=float), float(self.lam), float(self.C), loss, predictions)
        store.n, store.n_added = n, n_added
        store._sq_max = max(store._sq_max, float(store._sq[:n].max(initial=0.0)))
        self.n_seen += learned
        self._cache = None
        if status:
            raise ValueError(f"row {learned}: {overflow_message(self._kernel, math.inf)}")
        return predictions if predict else None

    def _learn_vec(self, v: np.ndarray, y: float, eta: float) -> None:
        core = self._compiled_step()
        if core is not None and core.loss >= 0:  # the whole step below in one call
            status = core.learn(self._store, v, y, eta, self.n_seen)
            if status == _steps.STEP_NEED_ROOM:
                self._store.make_room(1, v.shape[0])
                status = core.learn(self._store, v, y, eta, self.n_seen)
            if status == _steps.STEP_OVERFLOW:
                raise ValueError(overflow_message(self._kernel, self._predict_vec(v)))
            return
        shrink = 1.0 - eta * self.lam
        ybar = self._predict_vec(v)
        excess = clip_excess(ybar, self.C)
        gdot = float(self._loss.derivative(y, ybar - excess))
        kappa = self_similarity(self._kernel, v)
        c_new = -eta * gdot - (shrink * excess / kappa if excess else 0.0)
        if not (math.isfinite(c_new) and math.isfinite(ybar) and math.isfinite(kappa)):
            raise ValueError(overflow_message(self._kernel, ybar))  # nothing changed yet
        if shrink != 1.0:  # NORMA's decay (lam > 0)
            coef = self._store.field("coef")
            coef *= shrink
        self._store.append(v, coef=c_new)
