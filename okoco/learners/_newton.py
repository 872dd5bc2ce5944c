r"""Kernel Online Newton Step (Calandriello, Lazaric & Valko, ICML 2017, Algorithm 1): the core
that Sketched-KONS (:mod:`okoco.learners.sketched_kons`) extends. Both are public, and saved,
under :mod:`okoco.learners.kons`, which imports them from here and from there (this module
imports neither).

Both learners share one core written in the unscaled-coefficient form of Lemmas 2 and 4 of
Calandriello, Lazaric & Valko (2017), "Second-Order Kernel Online Convex Optimization with
Adaptive Sketching" (with the printed typos corrected):

.. code-block:: text

    k = K(x_i, x_t) for stored i,  kappa = K(x_t, x_t),  e = (d * k)_I
    h = L^{-1} e                    # L L^T = Kbar_I + alpha I  (okoco.linalg, O(|I|^2))
    ybar = (k . c - h . g) / alpha  # g = L^{-1} (D K c)_I, maintained in O(t)
    s = kappa - h . h               # = alpha phi^T A^{-1} phi > 0
    yhat = clip(ybar, -C, C);  observe gdot;  w_t = eta_t gdot^2;  d_t = gdot sqrt(eta_t)
    z = coin (KONS: 1; Sketched-KONS: KORS with p = max(min(beta tau~, 1), p_min))
    c_t = z w_t yhat - gdot - alpha h(ybar) / s
    if z: border L with d_t h and the pivot sqrt(alpha + d_t^2 s)
    store x_t unless z = 0 and c_t = 0 (Sketched-KONS: such a point is never read again)

``d_i = gdot_i sqrt(eta_i)``, ``c`` are the unscaled coefficients (``c_i = d_i b_i`` of the
paper's ``b``), and ``Kc`` is the running ``K c`` vector. The ``c`` form stays exact when
``gdot_t = 0`` while the projection is active, where the paper's ``b`` form divides by zero.

The curvature-exact step ``eta="hessian"`` sets the weight ``w_t = eta_t gdot_t^2`` to the
loss's second derivative ``loss''(y_t, yhat_t)`` and ``d_t = sqrt(w_t)``: the preconditioner
gains ``loss''(yhat_t) phi_t phi_t^T`` and ``eta_t`` itself is never formed, so ``gdot_t = 0``
needs no division (the signs of ``d`` cancel in every formula above). For the squared loss
(``w_t = 2``, ``c_t = 2 y_t`` while the projection is inactive) the prediction is
follow-the-leader kernel ridge regression, ``k^T (K + (alpha/2) I)^{-1} y`` over past points.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from okoco._blas import scipy_one_thread
from okoco._core import _kons, _records
from okoco._input import reserve
from okoco._validation import Interval
from okoco.kernels import self_similarity
from okoco.learners._codes import compiled_kernel, compiled_loss
from okoco.learners._rebuilt import RebuiltOnLoad
from okoco.learners._window_phases import WindowPhases
from okoco.learners.base import (
    ETA_HESSIAN,
    SIZE,
    KernelLearner,
    StepProtocol,
    clip_excess,
    overflow_message,
    overflow_target_message,
)
from okoco.learners.shared import SharesPoints
from okoco.linalg import IncrementalCholesky, Rows, SlotInverse

__all__ = ["KONS", "DEFAULT_MAX_SIZE", "singular_message"]

# s_t = alpha phi^T A^{-1} phi cancels for (near) duplicate points; it is floored here.
_MIN_S = 1e-12
# The numerical guard. s_t = kappa - e^T (Kbar_I + alpha I)^{-1} e is computed with an error
# that grows like eps (kappa + |e|^2 / alpha) (|e|^2 / alpha bounds e^T P e, P the inverse):
# below _S_RTOL times that, s_t is rounding noise. The new atom's pivot alpha + d_t^2 s_t is
# then resolvable only if the ridge dominates, d_t^2 kappa <= alpha / _MIN_RIDGE_RATIO. Past
# both, the step is refused: it would divide the projection's excess by noise (coefficients
# growing geometrically, step after step) and leave the factor or the window's inverse
# numerically singular, and a later prediction would be inf or NaN (issue 32).
_S_RTOL = 1e-10
_MIN_RIDGE_RATIO = 1e-10
# The stored quantities grow like d_t^4 / alpha (d_t = gdot sqrt(eta)); beyond this bound on
# |d_t| a later prediction could overflow to inf - inf = NaN, so such a step is refused.
_MAX_D = 1e75
#: The default window of stored points (``max_size``), chosen by measurement (docs/defaults.md).
DEFAULT_MAX_SIZE = 500


def singular_message(kernel, kappa: float, alpha: float) -> str:
    """Why a step was refused: the point lies in the span of the stored atoms to float64
    precision while its ``k(x, x)`` dwarfs the ridge, so its pivot would be lost to rounding."""
    return (f"k(x, x) = {kappa:g} is too large for {kernel!r} with alpha = {alpha:g}: the point "
            "lies in the span of the stored points to float64 precision, and learning it would "
            "leave the preconditioner numerically singular; scale the features (e.g. river's "
            "StandardScaler) or raise alpha")


class KONS(WindowPhases, SharesPoints, RebuiltOnLoad, StepProtocol, KernelLearner):
    r"""Kernel Online Newton Step (Algorithm 1), :math:`O(t)` kernel evaluations and
    :math:`O(t^2)` work per step.

    The online Newton step with the oblique projection onto
    :math:`\{|f(x_t)| \le C\}`, run in the RKHS through the kernel trick:

    .. math::

        u_t = w_{t-1} - A_{t-1}^{-1} g_{t-1},\quad
        w_t = \Pi^{A_{t-1}}_{\mathcal S_t}(u_t),\quad
        A_t = A_{t-1} + \eta_t g_t g_t^\top,\ A_0 = \alpha I.

    Regret :math:`O(d_{\rm eff}\log T)` on curved losses with ``eta="exp-concave"``
    (Theorem 1) for the unbounded learner (``max_size=None``), where every past point stays in
    the predictor.

    **The window** (``max_size=W``, the default). Once ``W`` points are stored, each step
    forgets the oldest: its term :math:`\eta_j g_j g_j^\top` leaves :math:`A_t` and its
    coefficient leaves :math:`b_t`, so the predictor is :math:`w_t = A_t^{-1} b_t` over the last
    ``W`` points only, with :math:`A_t = \alpha I + \sum_{s \in \text{window}}
    \eta_s g_s g_s^\top` (the oldest atom's Schur complement in the window's inverse, in the
    same pass as the new atom's bordering, and one kernel row to update the running ``K c``;
    each phase of the step is one compiled call, ``okoco._core._kons``). Memory and the step
    are then bounded:
    :math:`O(W d)` and :math:`O(W^2 + W d)`. With the squared loss and the curvature step (no
    clipping) this is exactly kernel ridge regression on the last ``W`` points with ridge
    :math:`\alpha/2`. What it does to the guarantee: up to step ``W`` nothing has been removed
    and Theorem 1 holds as stated; afterwards it does not. Removing a point is not an online
    Newton step, so the learner is no longer the one Theorem 1 analyses, and a window's
    predictions are not those of a fresh KONS on it either (a coefficient keeps the projection
    and the step of the time it was learned). It is a heuristic for unbounded streams, and it
    forgets: on a drifting stream the window follows the drift, where the unbounded learner
    weighs a point seen a million steps ago as much as the last one; on a long stationary
    stream its error stops falling (river's Friedman #1, ``d = 10``, 100,000 steps,
    test-then-train at the defaults: MAE 1.344 over steps 10,000-20,000 and 1.314 over the
    last 10,000, where :class:`okoco.learners.CONKONS`, bounded by a dictionary of the whole
    stream, went from 1.014 to 0.972; measured for issue 42). Use ``max_size=None`` for the
    learner of the theory (short streams, or when every point must count), at
    :math:`O(t^2)` per step and :math:`O(t d + t^2)` memory.

    Parameters
    ----------
    kernel
        An ``okoco.kernels`` kernel; ``None`` means ``RBF(gamma=1/d)``, ``d`` the
        number of features at the first learn (fixed from then on; suits standardized inputs).
        The bounds assume a normalised kernel (``k(x, x) = 1``); the algorithm does not need it.
    loss
        An ``okoco.losses`` loss; ``None`` means ``Squared()``.
    C
        Predictions are clipped to ``[-C, C]``; the default 3 suits standardized targets
        (river's ``TargetStandardScaler``). Targets far outside it raise a warning, once.
    alpha
        Ridge of the preconditioner :math:`A_0 = \alpha I`, > 0; the default 0.1 was the best
        ridge of the defaults table with the curvature step (the ridge of kernel ridge
        regression is then :math:`\alpha/2`).
    eta
        :math:`\eta_t`: ``"hessian"`` (the default, for every loss: it had the lowest error
        over the streams of the defaults table in the docs) sets
        :math:`\eta_t\dot g_t^2 = \ell''(\hat y_t)`, the loss's own curvature; with the
        squared loss and no clipping this is follow-the-leader kernel ridge regression with
        ridge :math:`\alpha/2`. Theorem 1 does not cover it (this :math:`\eta_t` is neither
        constant nor non-increasing): ``"exp-concave"`` (:math:`\eta_t = \sigma` of the
        loss) is the step with the regret guarantee. Also ``"sqrt"``, a number or a callable
        of ``t``.
    max_size
        The window: keep the last ``max_size`` points (the oldest leaves at each step once
        full; see above), or ``None`` for the unbounded learner of Theorem 1. The default was
        chosen by measurement (docs/defaults.md). The window keeps the inverse of
        :math:`\bar K_I + \alpha I` rather than its Cholesky factor (adding and removing are
        then one rank-one update each), which squares the conditioning: it was checked down to
        ``alpha=1e-6`` on near-duplicate points; below that use ``max_size=None``.

    Attributes
    ----------
    n_seen
        Steps learned.
    dictionary_size
        Points in the preconditioner (all the points of the window for KONS).
    online_effective_dimension
        :math:`\sum_t \bar\tau_{t,t}` with :math:`\bar\tau_{t,t} = q_t/(1+q_t)`,
        :math:`q_t = \eta_t \dot g_t^2 s_t / \alpha`.
    log_det
        :math:`\log\det(\bar K_T/\alpha + I)`.
    rg_sum
        :math:`R_G = \sum_t g_t^\top A_t^{-1} g_t = \sum_t \bar\tau_{t,t}/\eta_t`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco import kernels
    >>> from okoco.learners import KONS
    >>> model = preprocessing.TargetStandardScaler(
    ...     preprocessing.StandardScaler() | KONS(kernel=kernels.RBF(0.1), C=3.0, alpha=1.0))
    >>> evaluate.progressive_val_score(datasets.TrumpApproval().take(300), model, metrics.MAE())
    MAE: ...
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "eta": ETA_HESSIAN,
        "max_size": [None, SIZE],
    }

    _hessian_step = True  # eta="hessian" is a policy here
    # Whether a point outside the preconditioner (z_t = 0) whose coefficient is 0 is left out
    # of the store: it adds nothing to any later prediction (see SketchedKONS).
    _drops_null_points = False
    # The least coin z_t a step can draw (KONS: always 1); the check of the running
    # statistics bounds their terms with it before the coin is drawn.
    _least_coin = 1
    # What a model saved before the window (no max_size in its state) reads: the unbounded
    # learner (okoco.persistence rebuilds a nested learner from its saved state alone).
    max_size = None
    _window = None

    _saved_state = {"alpha": "number", "eta": "str|number",
                    "_store": "obj:Rows,ExpertRows as store",
                    "_chol": "obj:IncrementalCholesky as cholesky",
                    "_g": "array(>=cholesky.size) float64 as whitened_gradient",
                    "_refreshes_seen": "int[0,] as refreshes_seen",
                    "online_effective_dimension": "float", "log_det": "float", "rg_sum": "float",
                    "max_size": "int[1,]|none", "_selected": "array(*) intp as selected_slots",
                    "noise_scale_sum": "float",
                    "_window": "obj:SlotInverse|none as window_inverse"}

    def __init__(self, kernel=None, loss=None, C: float = 3.0, alpha: float = 0.1,
                 eta="hessian", max_size: int | None = DEFAULT_MAX_SIZE):
        self.kernel = kernel
        self.loss = loss
        self.C = C
        self.alpha = alpha
        self.eta = eta
        self.max_size = max_size
        self._setup()

    def _reset_state(self) -> None:
        # A window of W points is a ring of W + 1 slots: the new point takes the slot the
        # oldest left at the previous step (that slot is dead: no coefficient, not selected).
        ring = None if self.max_size is None else self.max_size + 1
        self._store = Rows(fields=("d", "c", "Kc", "z"), max_size=ring)
        self._chol = IncrementalCholesky()  # the unbounded preconditioner's factor
        self._g = np.zeros(16)  # L^{-1} (D K c)_I (unbounded)
        self._refreshes_seen = 0  # the factor's refreshes g has followed
        self._selected = np.zeros(16, dtype=np.intp)  # store slot of each preconditioner atom
        # the window's inverse form, indexed by store slot (okoco.linalg.SlotInverse)
        # (at most max_size + 1 atoms at once: a step's new one comes before the oldest leaves;
        # Auto's shorter windows over a longer shared ring keep their inverse over their own)
        self._window = SlotInverse(ring, atoms=ring) if ring is not None else None
        self.online_effective_dimension = 0.0
        self.log_det = 0.0
        self.rg_sum = 0.0
        self.noise_scale_sum = 0.0  # sum of (y_t - yhat_t)^2 / (s_t + alpha/2): the spread's scale

    # -- selection hooks (KONS keeps every point) -------------------------------------

    def _gather(self, v: np.ndarray) -> np.ndarray:
        return v  # every stored point is an atom, in storage order

    def _atom_column(self, e: np.ndarray) -> np.ndarray:
        """``e = D k`` over the atoms, in the order they came (KORS's order)."""
        if self.max_size is None:
            return e
        return e[self._selected[: self._window.size]]

    def _coin(self, e: np.ndarray, kappa: float, d_t: float) -> int:
        """The coin z_t, given e = (D k)_I, the new point's diagonal and d_t."""
        return 1

    # -- the core ---------------------------------------------------------------------

    def _whitened(self) -> np.ndarray:
        """``g = L^{-1} (D K c)_I`` of the unbounded learner, recomputed only if the factor
        was refreshed since (the compiled phases keep it along the steps)."""
        chol = self._chol
        if self._window is None and chol.n_refreshes != self._refreshes_seen:
            store = self._store
            w = self._gather(store.field("d") * store.field("Kc"))
            self._g[: chol.size] = chol.half_solve(w)
            self._refreshes_seen = chol.n_refreshes
        return self._g

    @property
    def _preconditioner(self):
        """What the compiled phases solve with: the window's inverse (``SlotInverse``), or the
        unbounded learner's Cholesky factor (``IncrementalCholesky``) of ``Kbar_I + alpha I``."""
        return self._chol if self._window is None else self._window

    def _analyse(self, v: np.ndarray):
        """:meth:`analyse` alone, kept for a ``learn_one`` after ``predict_one`` on the row."""
        return self._cached(v, self.analyse)

    def analyse(self, v: np.ndarray, shared=None):
        """The step protocol's analysis at ``v`` (no state change; :class:`KernelLearner`):
        the record ``okoco._core._records.Analysis``. Over points of its own, the kernel row
        is computed in the same compiled call; over points it shares (:meth:`share_points`),
        it is ``shared``'s (``okoco.learners.shared.StepShared``: once per distinct kernel)."""
        if shared is not None and type(self._store) is not Rows:  # (_analyse_row, inlined)
            kernel = self._kernel
            return self._step_core().analyse_row(
                self._store, self._preconditioner, self.alpha, shared.kernel_row(kernel),
                shared.kappa(kernel), self._selected, self._whitened())
        if type(self._store) is Rows:
            core = self._step_core()
            if core.has_kernel:  # the kernel row too, in the same compiled call
                return core.analyse(self._store, self._preconditioner, self.alpha, v,
                                    self._selected, self._whitened())
        return self._analyse_row(self._store.kernel_row(self._kernel, v),
                                 self_similarity(self._kernel, v))

    def _step_core(self):
        """The compiled step object (``okoco._core._kons.KONSCore``): the phases of every
        step, windowed or unbounded; a cache on the learner (``_core``)."""
        core = self._core
        if core is None or core[0] is not self._kernel:
            loss = compiled_loss(self._loss)
            core = self._core = (self._kernel, _kons.KONSCore(
                compiled_kernel(self._kernel), self._kernel, -1 if loss is None else loss,
                (_MIN_S, _S_RTOL, _MIN_RIDGE_RATIO, _MAX_D), self._drops_null_points))
        return core[1]

    def _analyse_row(self, k: np.ndarray, kappa: float):
        """:meth:`analyse` from the kernel row ``k`` over the stored points and
        ``kappa = K(x, x)``.

        Returns the record ``okoco._core._records.Analysis`` ``(k, kappa, e, h, ybar, kc, hh)``,
        ``hh = e^T (Kbar_I + alpha I)^{-1} e``:
        ``h = (Kbar_I + alpha I)^{-1} e`` over the store's slots (the window's inverse), or
        ``h = L^{-1} e`` over the atoms in the order they came (unbounded: the Cholesky factor
        ``L``), in one compiled call (``KONSCore.analyse_row``)."""
        return self._step_core().analyse_row(self._store, self._preconditioner, self.alpha, k,
                                             kappa, self._selected, self._whitened())

    def _predict_vec(self, v: np.ndarray) -> float:
        with scipy_one_thread:  # the window's products run on one thread (okoco._blas)
            return self._analyse(v)[4]

    def _predictive_variance(self, v: np.ndarray) -> float:
        with scipy_one_thread:
            return self._variance_of(self._analyse(v))

    def _variance_of(self, analysis) -> float:
        r""":math:`\hat\tau^2(s(x) + \alpha/2)` from an analysis, for ``with_dist=True``.

        :math:`s(x) = \kappa - e^\top(\bar K_{\mathcal I} + \alpha I)^{-1} e
        = \alpha\,\phi^\top A_t^{-1}\phi`, the :math:`A_t`-norm of the kernel row, which the
        step computes anyway; with the squared loss and the curvature step it is exactly the
        Gaussian-process posterior variance :math:`\kappa - k^\top(K + \frac\alpha2 I)^{-1}k`
        of the follow-the-leader kernel ridge regression KONS then is, with noise ratio
        :math:`\alpha/2`. The scale :math:`\hat\tau^2 = (1 + \sum_u (y_u - \hat y_u)^2 /
        (s_u + \alpha/2)) / (1 + t)` is estimated online from the a-priori errors (one unit
        pseudo-observation keeps it above 0). The sum stays finite by refusal: a step whose
        term would make it overflow float64 (a target ~1e150 from the prediction, a spread
        ~1e-8) raises ``ValueError`` and changes nothing (:meth:`check`).
        """
        kappa, hh = analysis.kappa, analysis.hh
        scale = (1.0 + self.noise_scale_sum) / (1.0 + self.n_seen)
        return scale * (max(kappa - hh, 0.0) + 0.5 * self.alpha)

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        store = self._store
        Kb = store.kernel_block(self._kernel, V)
        if self.max_size is not None:
            d = store.field("d")
            H = self._window.solve(d[:, None] * Kb)
            return (store.field("c") @ Kb - (d * store.field("Kc")) @ H) / self.alpha
        H = self._chol.half_solve(self._gather(store.field("d")[:, None] * Kb))
        return (store.field("c") @ Kb - self._whitened()[: self._chol.size] @ H) / self.alpha

    def _learn_vec(self, v: np.ndarray, y: float, eta: float) -> None:
        # the step protocol's phases (check takes the step size eta itself); learn_one counts
        with scipy_one_thread:
            analysis = self._analyse(v)
            self._learn_step(v, analysis, self.check(y, analysis))
            self.forget()

    def _settle(self) -> None:
        """Make what waited for the step's end: a recomputation of a paired window inverse
        (``SlotInverse.settle``), once the step's points and atoms agree."""
        if self._window is not None:
            self._window.settle()

    def _forget_atom(self) -> None:
        """The first atom left the preconditioner (Sketched-KONS: it leaves KORS too)."""

    def check(self, y: float, analysis):
        """The step protocol's check: the step's scalars (the record
        ``okoco._core._records.Step``: ``s``, ``shift``, ``yhat``, ``gdot``, ``weight``,
        ``d_t``, ``noise``) at the target ``y`` from :meth:`analyse`'s ``analysis``, with the
        step size of the next step (``KONSCore.check``, the one definition, for the window and
        the unbounded learner); raises ``ValueError``, before any state changes, if the step
        would store non-finite numbers, in the model or in its running statistics
        (``noise_scale_sum``, ``rg_sum``, ``online_effective_dimension``: a target too far from
        the prediction for its spread; an owner checks every expert's step before it applies
        any). A loss without a compiled form gives its derivatives here."""
        eta = self._step(self.n_seen + 1)
        core = self._step_core()
        gdot = weight = math.nan
        if core.loss < 0:
            ybar = analysis.ybar
            yhat = ybar - clip_excess(ybar, self.C)
            gdot = float(self._loss.derivative(y, yhat))
            if eta is None:  # eta="hessian": the weight eta_t gdot^2 is loss'' itself
                weight = float(self._loss.second_derivative(y, yhat))
        running = self.noise_scale_sum + self.rg_sum + self.online_effective_dimension
        step = core.check(analysis, y, math.nan if eta is None else eta, self.alpha, self.C,
                          running, self._least_coin, gdot, weight)
        if not isinstance(step, _records.Step):  # a refusal's code
            raise ValueError(self._refusal(step, y, analysis))
        return step

    def _refusal(self, code: int, y: float, analysis) -> str:
        """Why ``KONSCore.check`` refused the step (its code ``_kons.CHECK_*``)."""
        core = self._step_core()
        if code == _kons.CHECK_WEIGHT:
            return f"loss.second_derivative returned {core.weight!r}; it must be >= 0"
        if code == _kons.CHECK_OVERFLOW:
            return overflow_message(self._kernel, analysis.ybar)
        if code == _kons.CHECK_SINGULAR:
            return singular_message(self._kernel, analysis.kappa, self.alpha)
        if code == _kons.CHECK_DERIVATIVE:
            return (f"the target {y!r} gives the loss derivative {core.gdot:g} at the "
                    f"prediction {core.yhat:g}, too large for a second-order step; rescale "
                    "the targets")
        return overflow_target_message(y, core.yhat)

    def apply(self, v: np.ndarray, analysis, step) -> None:
        """The step protocol's update: learn ``v`` from its ``analysis`` and :meth:`check`'s
        ``step``, and count it (``n_seen``). Over shared points the owner stores ``v`` after
        every sharer applied its step, then calls :meth:`forget`."""
        self._learn_step(v, analysis, step)
        self.n_seen += 1
        self._cache = None

    def _make_room(self, v: np.ndarray, size: int) -> None:
        """Room for one more point over ``size`` slots of the ring, before the compiled step
        writes it: the store's rows or fields, the window's inverse and the atoms' record."""
        store = self._store
        if type(store) is Rows:
            store.make_room(1, v.shape[0])
        else:  # an expert's values over shared points (okoco.learners.shared.ExpertRows)
            store.make_room()
        if self._window is not None:
            self._window.make_room(size)
        else:  # g's entry of a new atom
            self._g = reserve(self._g, self._chol.size + 1)
        self._selected = reserve(self._selected, self.dictionary_size + 1)

    @property
    def coins(self) -> np.ndarray:
        """The coin :math:`z_t` of every step (all ones for KONS; with a window, of the
        points held, in the store's ring order)."""
        return self._store.field("z").copy()

    @property
    def dictionary_size(self) -> int:
        return self._chol.size if self.max_size is None else self._window.size


KONS.__module__ = "okoco.learners.kons"  # its public path (files name it "KONS")
