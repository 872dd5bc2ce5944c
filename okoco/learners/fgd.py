r"""Functional gradient descent in an RKHS (NORMA: Kivinen, Smola & Williamson 2004, "Online
Learning with Kernels")."""

from __future__ import annotations

from numbers import Real

import numpy as np

from okoco._core import _steps
from okoco._validation import Interval
from okoco.kernels import self_similarity
from okoco.learners.base import (
    ETA,
    SIZE,
    SMALL_BATCH,
    KernelLearner,
    compiled_kernel,
    compiled_loss,
    overflow_message,
)
from okoco.linalg import Rows

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
        grow with ``t``. The budget forgets: on a long stationary stream the error does not
        fall (100,000 steps at the defaults, seed 1, ``benchmarks/bench_long_streams.py``:
        river's Friedman #1 MAE 2.57 over steps 10,000-20,000 and 2.66 over the last 10,000,
        where :class:`KRLS` went from 1.007 to 0.988; RandomRBF error 0.106 and 0.115).

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

    def _state(self) -> _steps.FGDState:
        """The typed state of the step over the store's buffers (``okoco._core._steps``),
        built at first use and again after a load, a copy or a new default kernel."""
        core = self._core
        if core is None or core[0] is not self._kernel:
            loss = compiled_loss(self._loss)
            state = _steps.FGDState(compiled_kernel(self._kernel), self._kernel,
                                    -1 if loss is None else loss, float(self.lam),
                                    float(self.C), self._store.max_size)
            self._bind(state)
            core = self._core = (self._kernel, state)
        return core[1]

    def _bind(self, state: _steps.FGDState) -> None:
        """The state's views of the store's buffers and counters (again after they grow)."""
        store = self._store
        norms = store.norms_buffer()  # sized to the buffer (a loaded store's too)
        state.bind(store.data, norms, store.fields["coef"], store.n, store.d,
                   store.n_added, store.max_squared_norm)

    def _predict_vec(self, v: np.ndarray) -> float:
        state = self._state()
        if state.compiled:  # the kernel row and f(v) in one call, kept for the step
            return state.predict(v, self.n_seen)
        if state.known_row(v, self.n_seen):
            return state.value
        row = np.ascontiguousarray(self._store.kernel_row(self._kernel, v), dtype=float)
        return state.feed(v, row, self_similarity(self._kernel, v), self.n_seen)

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        return self._store.field("coef") @ self._store.kernel_block(self._kernel, V)

    def _step(self, t: int) -> float:
        eta = self._eta(t)
        if not 0.0 <= eta * self.lam <= 1.0:
            raise ValueError(f"eta_t * lam = {eta * self.lam:g} at t = {t} must lie in [0, 1]")
        return eta

    def _learn_vecs(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """The test-then-train loop over the rows in compiled code (the step of
        ``_learn_vec`` on each row), for the kernels and losses it knows."""
        if compiled_kernel(self._kernel) is None or compiled_loss(self._loss) is None:
            return self._learn_rows(V, targets, etas, predict)
        store = self._store
        store.make_room(len(targets), V.shape[1])
        state = self._state()
        self._bind(state)
        predictions = np.empty(len(targets))
        learned, status = _steps.fgd_run(state, np.ascontiguousarray(V, dtype=float),
                                         np.asarray(targets, dtype=float),
                                         np.asarray(etas, dtype=float), predictions)
        self._written(state)
        self.n_seen += learned
        self._cache = None
        if status:
            raise ValueError(f"row {learned}: {overflow_message(self._kernel, state.value)}")
        return predictions if predict else None

    def _learn_vec(self, v: np.ndarray, y: float, eta: float) -> None:
        state = self._state()
        status = self._take_step(state, v, y, eta)
        if status == _steps.STEP_NEED_ROOM:
            self._store.make_room(1, v.shape[0])
            self._bind(state)
            status = self._take_step(state, v, y, eta)
        if status:  # STEP_OVERFLOW: nothing changed
            raise ValueError(overflow_message(self._kernel, state.value))
        self._written(state)

    def _take_step(self, state: _steps.FGDState, v: np.ndarray, y: float, eta: float) -> int:
        """The compiled step on ``v`` (``_steps.fgd_step``); a kernel or a loss without a
        compiled form gives its kernel row or derivative from Python."""
        if state.compiled and state.loss >= 0:  # the whole step in one call
            return state.learn(v, y, eta, self.n_seen)
        self._predict_vec(v)  # the analysis of v, kept by the state
        gdot = float(self._loss.derivative(y, state.clipped))
        return state.apply(eta, gdot)

    def _written(self, state: _steps.FGDState) -> None:
        """The store's counters after the state's steps."""
        store = self._store
        store.record_rows(state.size, state.width, state.n_added, state.sq_max)
