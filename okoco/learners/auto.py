r"""A learner with no parameter to choose: a few experts, combined with a regret guarantee.

The experts differ in what a user would otherwise tune (the RBF scale around ``1/d``, the ridge,
a linear part for trends, the step). Two exponentially weighted averages of their predictions
are kept, :math:`\bar y_t` at the loss's exp-concavity rate :math:`\eta` (the rate of the
guarantee) and :math:`\tilde y_t` at a faster rate, on recent losses; ``Auto`` predicts
:math:`\hat y_t = \bar y_t + \lambda_t(\tilde y_t - \bar y_t)` with the largest
:math:`\lambda_t \in [0, 1]` its *slack* affords. The slack is the mix loss
:math:`\Phi_t = -\frac1\eta\log\frac1N\sum_i e^{-\eta L_{t,i}}` (:math:`L_{t,i}` the cumulative
loss of expert :math:`i`) minus ``Auto``'s own cumulative loss :math:`A_t`. On an
:math:`\eta`-exp-concave loss, Jensen's inequality on the concave :math:`e^{-\eta\ell}` gives
:math:`\Phi_t - \Phi_{t-1} = -\frac1\eta\log\sum_i w_{t,i}e^{-\eta\ell_t(\hat y_{t,i})} \ge
\ell_t(\bar y_t)` (Kivinen & Warmuth 1999, "Averaging expert predictions"; Hazan 2016,
"Introduction to Online Convex Optimization", Section 4.4), so a step lowers the slack by at
most :math:`\ell_t(\hat y_t) - \ell_t(\bar y_t)`, which is at most :math:`\lambda_t\,\delta_t`
with :math:`\delta_t = \max_y [\ell(y, \tilde y_t) - \ell(y, \bar y_t)]` over the targets the
guarantee covers (convexity of :math:`\ell` in the prediction). Choosing
:math:`\lambda_t\delta_t \le \Phi_{t-1} - A_{t-1}` keeps :math:`A_t \le \Phi_t` at every step,
hence

.. math:: \sum_t \ell_t(\hat y_t) - \min_i \sum_t \ell_t(\hat y_{t,i})
          \le \Phi_T - \min_i L_{T,i} \le \frac{\log N}{\eta}

on every stream with ``switch_rate=0``, as for the plain weighted average
(:math:`\lambda_t = 0`). Any :math:`\tilde y_t` chosen before :math:`y_t` is seen will do: the
faster average weighs the experts by their discounted losses :math:`R_{t,i} = \gamma
R_{t-1,i} + \ell_t(\hat y_{t,i})`, so that it follows the expert that has led lately.

**Following a switch: fixed share.** Those weights stay with an old leader long after a
change (the slack spent), so by default they are fixed share's (Herbster & Warmuth 1998;
``switch_rate`` :math:`\alpha`): :math:`w_{t+1,i} = (1-\alpha)v_{t,i} + \alpha/N`,
:math:`v_{t,i} \propto w_{t,i}e^{-\eta\ell_t(\hat y_{t,i})}`, the mix loss summing
:math:`-\frac1\eta\log\sum_i w_{t,i}e^{-\eta\ell_t(\hat y_{t,i})}`: that of every sequence of
experts under a Markov prior (:mod:`okoco.learners._mixture`). The argument above holds for
any weights, so at every step :math:`T`, for every sequence :math:`i_{1:T}` with :math:`k`
switches,

.. math:: \sum_t \ell_t(\hat y_t) - \sum_t \ell_t(\hat y_{t,i_t})
          \le \frac1\eta\Big[\log N + k\log\frac N\alpha
          + (T-1-k)\log\frac1{1-\alpha+\alpha/N}\Big]

(:math:`k = 0`: :math:`\log N/\eta` plus about :math:`T\alpha/\eta`, the price of tracking;
:math:`\alpha = 0`: :math:`\log N/\eta`). The argument never used what the experts are, only
that they predict before the target is seen: the bounds hold against the bounded experts below
(what a frozen dictionary or a window does to an expert's own regret: :class:`CONKONS`,
:class:`KONS`).

**Experts that remember, experts that forget.** By default (:data:`DEFAULT_EXPERTS`):

- two CON-KONS heads on shared KORS dictionaries (:class:`SharedEmbedding`, ``RBF(0.2/d)`` and
  ``RBF(3/d)``, KORS ridge 1, at most 500 atoms each, coins of ``seed=0``): the Online Newton
  Step with ridge 0.1 in the Nyström embedding :math:`z = L^{-1}k_{\mathcal I}(x)`
  (:class:`DictionaryExpert`: ``CONKONS`` with those settings until the dictionary is full). The
  atoms summarize the *whole* stream, so the error keeps falling on a long stationary stream
  while memory and the step stay flat, :math:`O(m^2 + m d)`, :math:`m \le 500`, one kernel row a
  step per dictionary. The sharp head takes first-order steps (ridge 3, :data:`FULL_ALPHA`) once
  its dictionary is full on a long stream: the curvature it would keep accumulating shrinks its
  steps, which cost it 11% on a covariate shift. A full dictionary keeps covering the stream
  (:data:`DICTIONARY`): a point above the recent mean residual replaces the atom the recent
  points use least, once it is used below 1/30 of an even share (compiled, ~0.7 ms a swap);
- two linear experts on :math:`[1, x]` (:class:`LinearExpert`, :math:`O(d^2)`, projected onto
  :math:`|z^\top u| \le 10C`, :data:`LINEAR_BOUND`): the ONS (ridge 1, the curvature step)
  for a stationary linear concept, and gradient descent with the constant step 0.01 (river's
  ``LogisticRegression`` step) for one that drifts;
- a drift head on each dictionary: gradient descent with the constant step 1/3 (:data:`DRIFT_ALPHA`,
  ``eta=0``, :math:`O(m)` a step), which forgets old gradients as a discount does, in place of
  two KONS over short windows (:data:`KONS_EXPERTS`, on one ring of points, :class:`SharedPoints`).

**Targets in their own units.** For regression ``Auto`` standardizes the targets online (as
river's ``TargetStandardScaler``), trains and weighs its experts on them and predicts in the
target's units. The guarantee is then about the squared loss of the standardized targets
:math:`(y_t - \mu_t)/\sigma_t` (statistics including :math:`y_t`), which must lie in
:math:`[-C, C]`.
"""

from __future__ import annotations

import math
from itertools import repeat
from numbers import Integral, Real

import numpy as np

from okoco import kernels as _kernels
from okoco._blas import scipy_one_thread
from okoco._dist import rescaled_gaussian
from okoco._validation import Interval
from okoco.learners._mixture import ExpertMixture
from okoco.learners._protocol import take_steps
from okoco.learners.base import KernelLearner, _is_regression
from okoco.learners.embedding import SharedEmbedding
from okoco.learners.kons import KONS, SketchedKONS
from okoco.learners.ons import DictionaryExpert, LinearExpert
from okoco.learners.shared import ExpertRows, SharedPoints, StepShared

__all__ = ["Auto", "SharedPoints", "ExpertRows"]  # the last two from okoco.learners.shared

#: ``switch_rate``'s default, chosen on long streams (docs/guide/auto.md, "Following a switch").
SWITCH_RATE = 1e-3
#: Auto's default window (``max_size``), chosen by measurement (docs/defaults.md).
DEFAULT_WINDOW = 400
#: Auto's windowed grid before issue 42 (the benchmarks that chose it record and compare it; a
#: grid for ``_build_experts``): ``(c, alpha, eta, share)``, a KONS with ``RBF(c/d)``, ridge
#: ``alpha`` and step ``eta`` over the newest ``share`` of the window (an expert with a share
#: below 1 forgets faster; with no window, ``max_size=None``, only the experts of share 1 or more
#: are built), or ``(c, alpha, eta, share, beta)``, a Sketched-KONS (KORS's ``beta``) over
#: ``share`` times the window. ``"task"`` is the task's expert, :data:`TASK_EXPERTS`. The grid
#: before the long-memory expert: ``MulticlassClassifier(Auto())``'s (one preconditioner).
KONS_EXPERTS = ((0.2, 0.1, "hessian", 1.0), (0.5, 0.03, "hessian", 1.0),
                (3.0, 0.1, "hessian", 1.0), (0.2, 0.1, "hessian", 0.5),
                (0.5, 0.03, "hessian", 0.2))
#: The long-memory expert, in place of the medium KONS over the window (the second above).
LONG_MEMORY = (0.2, 0.03, "hessian", 2.5, 3.0)
EXPERTS = (KONS_EXPERTS[0], LONG_MEMORY, *KONS_EXPERTS[2:])
#: The dictionaries ``Auto``'s stationary experts share (:class:`SharedEmbedding`), one per RBF
#: scale ``c`` a grid names: ``(dictionary_alpha, max_size, swap_margin, swap_rule)``: KORS atoms
#: of ``RBF(c/d)``, ridge ``dictionary_alpha``, at most ``max_size``, and the rule once full
#: (``swap_margin=None``: frozen; :meth:`SharedEmbedding.swap_in`), chosen on long streams
#: (docs/guide/auto.md, 100k steps, seeds 0, 1): the usage rule at 30 took a covariate shift's MAE
#: (``--stream friedman-shift``) 4.127 -> 3.683 and 4.122 -> 3.754, and left Friedman and
#: RandomRBF as frozen (0.8753, 0.8738; 0.0539, 0.0364); the residual rule at 2 cost Friedman 2%.
DICTIONARY = (1.0, 500, 30.0, "usage")
#: The sharp dictionary's head takes first-order steps with ridge 3 once its dictionary is full
#: on a long stream (:class:`DictionaryExpert`'s ``full_alpha``, after ``FULL_AFTER`` times
#: 500 steps), chosen on long streams, the families and the guides' datasets (docs/defaults.md,
#: "The sharp head once its dictionary is full").
FULL_ALPHA = 3.0
#: The drift heads' ridge: first-order (``eta=0``, :math:`A = \alpha I`, the step
#: :math:`1/\alpha`), one per dictionary, in place of two windowed KONS since issue 42's study
#: (docs/defaults.md, "Drift heads on the shared dictionaries").
DRIFT_ALPHA = 3.0
#: Auto's default experts: ``("dictionary", c, alpha, eta[, full_alpha])``, an ONS head with
#: ridge ``alpha`` on the shared dictionary of ``RBF(c/d)`` (:class:`DictionaryExpert`:
#: CON-KONS's step, remembering the whole stream through its atoms; first-order steps with
#: ridge ``full_alpha`` once the dictionary is full; ``eta=0``: the constant step ``1/alpha``,
#: for drift); ``("linear", alpha, eta)``, the ONS on ``[1, x]`` (:class:`LinearExpert`). The
#: smooth scale led on river's Friedman; the sharp one replaced ``RBF(1/d)`` by the training
#: families' score (``bench_defaults --auto-grid``).
DEFAULT_EXPERTS = (("dictionary", 0.2, 0.1, "hessian"),
                   ("dictionary", 3.0, 0.1, "hessian", FULL_ALPHA),
                   ("linear", 1.0, "hessian"), ("linear", 100.0, 0.0),
                   ("dictionary", 0.2, DRIFT_ALPHA, 0.0), ("dictionary", 3.0, DRIFT_ALPHA, 0.0))
#: The linear experts project onto :math:`|z^\top u| \le` ``LINEAR_BOUND * C`` (a bound of
#: ``C`` capped a linear function's slope: :class:`LinearExpert`); predictions clip to ``C``.
LINEAR_BOUND = 10.0
#: Regression: the steady exp-concave step (it led on trending streams); classification (labels
#: do not trend): the default KONS, whose logistic loss was lower than the exp-concave
#: expert's on every classification stream measured but german (``docs/guide/auto.md``).
#: Not in the default grid since the family benchmark (the cost target left room for two
#: whole-window experts then, and the selection from the pool of experts did not pick it);
#: kept for grids that name it.
TASK_EXPERTS = {"regression": (0.2, 1.0, "exp-concave", 1.0),
                "classification": (1.0, 0.1, "hessian", 1.0)}


class Auto(ExpertMixture, KernelLearner):
    r"""Online self-tuning: remembering, linear and forgetting experts mixed by exponential
    weights at the loss's exp-concavity rate, with a faster average as far as the guarantee allows.

    The guaranteed rate :math:`\eta` is ``loss.exp_concavity(C)``, the largest :math:`\eta` for
    which :math:`e^{-\eta\ell}` is concave on :math:`[-C, C]`: squared loss (:math:`|y| \le C`),
    :math:`(e^{-\eta u^2})'' \le 0` iff :math:`u^2 \le 1/(2\eta)`, :math:`u = z - y \in [-2C,
    2C]`, so :math:`\eta = 1/(8C^2)`; logistic, :math:`\ell''/\ell'^2 = e^{yz} \ge e^{-C}`, so
    :math:`\eta = e^{-C}`; squared hinge, :math:`\ell''/\ell'^2 = 1/(2(1-yz)^2) \ge
    1/(2(1+C)^2)` inside the margin, :math:`e^{-\eta\ell} = 1` outside: :math:`\eta =
    1/(2(1+C)^2)`.

    The prediction is :math:`\bar y + \lambda(\tilde y - \bar y)`: :math:`\bar y` the weighted
    average at rate :math:`\eta`, :math:`\tilde y` the one at ``fast_rate`` on the losses
    discounted by ``fast_discount`` per step, :math:`\lambda \in [0, 1]` the largest value
    whose worst case (targets :math:`\pm C` of the squared loss, or labels :math:`\pm 1`) keeps
    ``Auto``'s cumulative loss below the mix loss (module docstring). The weights at rate
    :math:`\eta` are fixed share's (``switch_rate``), so on every stream whose targets lie in
    :math:`[-C, C]` (labels :math:`\pm 1`) the regret to every sequence of experts with
    :math:`k` switches is at most :math:`\frac1\eta[\log N + k\log(N/\alpha) +
    (T-1-k)\log\frac1{1-\alpha+\alpha/N}]` at every step :math:`T`.
    ``fast_rate`` and ``fast_discount`` only decide how the slack is spent.

    The experts are built at the first learn, when ``d`` is known (:data:`DEFAULT_EXPERTS`,
    module docstring): CON-KONS heads on two shared dictionaries (the whole stream), the ONS on
    ``[1, x]`` with the curvature step and with a constant step, and a constant-step head on
    each dictionary (drift), each computing exactly what the standalone learner does (tests compare
    them step by step), chosen on long streams (``benchmarks/bench_long_streams.py``,
    docs/guide/auto.md), TrumpApproval and FriedmanDrift. Inputs should be standardized
    (river's ``StandardScaler``); regression targets need not be (``scale_target``).

    Parameters
    ----------
    loss
        An okoco loss with ``exp_concavity``; ``None`` means ``Squared()``.
    C
        Every expert's predictions, and so ``Auto``'s, lie in ``[-C, C]``.
    fast_rate
        Rate of the faster weighted average, > 0 (for the squared loss the exp-concavity rate
        for errors up to :math:`1/\sqrt2` of standardized targets). Not in the guarantee.
    fast_discount
        In ``(0, 1]``: the factor a step on the losses the faster average weighs by (so an
        online scaler's first steps do not decide its weights for good); 1 keeps them all. The
        default 0.99 (a memory of about 100 steps) was checked on the defaults table and beyond
        (``docs/guide/auto.md``). Not in the guarantee.
    max_size
        A number: the dictionaries hold at most 500 atoms (:data:`DICTIONARY`), and a grid's
        windowed KONS keep the last ``max_size / 2`` and ``max_size / 5`` points (at least 5).
        ``None``: no cap on the dictionaries (CON-KONS of the theorem, :math:`O(m^2)` a step,
        :math:`m` growing like the effective dimension: for short streams), no windowed KONS.
    scale_target
        Regression only: standardize the targets online inside and predict in their units
        (default). ``False`` learns the targets as given (then standardize them yourself:
        ``C`` bounds the predictions in the targets' units).
    switch_rate
        Fixed share's :math:`\alpha \in [0, 1)`, the prior probability of a switch of the best
        expert a step: a switch costs :math:`\log(N/\alpha)/\eta`, a step about
        :math:`\alpha/\eta` (above). 0: the weights of the cumulative losses. The default 0.001
        was chosen on long streams (docs/guide/auto.md, "Following a switch").

    Attributes
    ----------
    experts
        The experts (empty before the first learn).
    weights
        Their weights at the guaranteed rate (fixed share's), summing to 1.
    log_weights, mix_loss
        With a ``switch_rate``: the next step's log-weights and the mix loss :math:`\Phi`.
    fast_weights
        Their weights at ``fast_rate`` on ``recent_losses``.
    recent_losses
        Each expert's losses, discounted by ``fast_discount`` per step.
    cumulative_losses
        Each expert's loss summed over the steps learned.
    cumulative_loss
        ``Auto``'s own loss summed over the steps learned (of standardized targets with
        ``scale_target``).
    target_mean, target_std, target_count
        The running statistics of the targets (regression with ``scale_target``).
    slack
        :math:`\Phi - A \ge 0`, what the guarantee leaves to spend on the faster average.
    leader
        The expert with the smallest cumulative loss, as a constructor call.
    rate
        The guaranteed rate :math:`\eta`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco.learners import Auto
    >>> model = preprocessing.StandardScaler() | Auto()  # raw targets: scaled inside
    >>> evaluate.progressive_val_score(datasets.TrumpApproval().take(200), model, metrics.MAE())
    MAE: ...
    >>> print(model["Auto"].leader)
    DictionaryExpert(kernel=RBF(...), alpha=3, eta=0.0, max_size=500)
    """

    _parameter_constraints = {"switch_rate": [Interval(Real, 0, 1, closed="left")],
                              "fast_rate": [Interval(Real, 0, None, closed="neither")],
                              "fast_discount": [Interval(Real, 0, 1, closed="right")],
                              "max_size": [None, Interval(Integral, 5, None, closed="left")],
                              "scale_target": ["boolean"]}

    _saved_state = {"switch_rate": "opt number", "log_weights": "opt array(*) float64",
                    "mix_loss": "opt float", "fast_rate": "number", "fast_discount": "number",
                    "experts": "list[obj:KONS,SketchedKONS,DictionaryExpert,LinearExpert]",
                    "_embeddings": "opt list[obj:SharedEmbedding] as embeddings",
                    "cumulative_losses": "array(k) float64", "recent_losses": "array(k) float64",
                    "cumulative_loss": "float", "_points": "obj:SharedPoints as points",
                    "_mixture": "cache:None", "_heads": "cache:None", "rate": "float",
                    "_target_ends": "array(4) float64 as target_ends", "max_size": "int[5,]|none",
                    "scale_target": "bool", "target_count": "int[0,]", "target_mean": "float",
                    "_target_m2": "float as target_m2"}

    def __init__(self, loss=None, C: float = 3.0, fast_rate: float = 1.0,
                 fast_discount: float = 0.99, max_size: int | None = DEFAULT_WINDOW,
                 scale_target: bool = True, switch_rate: float = SWITCH_RATE):
        self.kernel = None
        self.loss = loss
        self.C = C
        self.switch_rate = switch_rate
        self.fast_rate = fast_rate
        self.fast_discount = fast_discount
        self.max_size = max_size
        self.scale_target = scale_target
        self._setup()
        if not callable(getattr(self._loss, "exp_concavity", None)):
            raise TypeError(f"Auto needs loss.exp_concavity (the weight rate): {self._loss!r}")
        self.rate = float(self._loss.exp_concavity(self.C))
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"loss.exp_concavity({self.C!r}) = {self.rate!r}; it must be > 0")
        bound = self.C if _is_regression(self._loss) else 1.0
        self._target_ends = np.array([-bound, bound, -bound, bound])

    @property
    def _scales(self) -> bool:
        """Whether targets are standardized inside (regression with ``scale_target``)."""
        return self.scale_target and _is_regression(self._loss)

    _embeddings: list = []  # the shared dictionaries (none in an older file)

    def _reset_state(self) -> None:
        self.experts: list = []
        self._embeddings = []  # the shared dictionaries, in the order the grid names them
        self.cumulative_losses = np.zeros(0)
        self.recent_losses = np.zeros(0)
        self.cumulative_loss = 0.0
        self.log_weights, self.mix_loss = np.zeros(0), 0.0  # fixed share's (switch_rate)
        # one ring of points for every expert: the window and the slot the next point takes
        self._points = SharedPoints(None if self.max_size is None else self.max_size + 1)
        self._mixture = self._heads = None  # caches: the weights, each dictionary's heads
        # Welford's running count, mean and sum of squared deviations of the raw targets
        self.target_count, self.target_mean, self._target_m2 = 0, 0.0, 0.0

    @property
    def target_std(self) -> float:
        """The running standard deviation of the targets (``ddof=1``, as river's
        ``TargetStandardScaler``; 0 before two targets)."""
        n = self.target_count
        return math.sqrt(self._target_m2 / (n - 1)) if n > 1 else 0.0

    def _unscale(self, z):
        """A standardized prediction in the target's units."""
        return self.target_mean + self.target_std * z if self._scales else z

    def predict_one(self, x: dict, with_dist: bool = False):
        """``clip(f(x), -C, C)``, in the target's units when they are standardized inside
        (``mean + std * clip(f(x), -C, C)``); with ``with_dist=True`` a ``proba.Gaussian``:
        the mixture of the experts' Gaussians (:meth:`okoco.learners.KONS.predict_one`) with
        the weights of the prediction, in the target's units too."""
        if not with_dist:
            return float(self._unscale(super().predict_one(x)))
        dist = super().predict_one(x, with_dist=True)
        std = self.target_std if self._scales and self.target_std > 0 else 1.0
        return rescaled_gaussian(float(self._unscale(dist.mu)), dist.sigma, std)

    def _predictive_variance(self, v: np.ndarray) -> float:
        """The variance of the experts' mixture: ``sum_i w_i (sigma_i^2 + p_i^2) - p^2`` with
        ``p = sum_i w_i p_i`` the prediction, ``w`` the weights it gives the experts."""
        if not self.experts:
            return 1.0
        analyses, preds, _, _ = self._analyse(v)
        mean = second = 0.0
        for expert, analysis, p, w in zip(self.experts, analyses, preds,
                                          self._prediction_weights(preds)):
            mean += w * p
            second += w * (expert._variance_of(analysis) + p * p)
        return max(second - mean * mean, 0.0)

    def predict_many(self, X):
        return self._unscale(super().predict_many(X))

    def _watch_target_scale(self, abs_sum: float, count: int, stacklevel: int = 4) -> None:
        if not self._scales:  # raw targets are standardized inside: no warning is due
            super()._watch_target_scale(abs_sum, count, stacklevel + 1)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_mixture"] = None  # derived from the cumulative losses
        return state

    def _build_experts(self, d: int, grid=None) -> list:
        """The grid's experts (``None``: :data:`DEFAULT_EXPERTS` as the module holds it when
        the first row is learned, so that a study of grids can set it; :data:`EXPERTS`):
        standalone KONS and
        Sketched-KONS (one kernel object per scale, so rows can be shared; a Sketched-KONS's
        coins from ``seed=0``, so that ``Auto`` is deterministic), and ONS heads on the shared
        dictionary (built here, :data:`DICTIONARY`, its coins from ``seed=0``) or on ``[1, x]``."""
        g, W, kernels = 1.0 / max(d, 1), self.max_size, {}
        grid = DEFAULT_EXPERTS if grid is None else grid
        task = TASK_EXPERTS["regression" if _is_regression(self._loss) else "classification"]
        experts = []
        for spec in grid:
            if spec[0] == "dictionary":
                _, c, alpha, eta, *full = spec
                index = self._dictionary(c, g)
                experts.append(DictionaryExpert(self._embeddings[index], self._loss,
                                                alpha=alpha, eta=eta, C=self.C,
                                                full_alpha=full[0] if full else None))
                experts[-1].dictionary = index
                continue
            if spec[0] == "linear":
                experts.append(LinearExpert(self._loss, alpha=spec[1], eta=spec[2], C=self.C,
                                            bound=LINEAR_BOUND * self.C))
                continue
            c, alpha, eta, share, *sketch = task if spec == "task" else spec
            if W is None and share < 1:
                continue
            window = W if W is None or share == 1 else max(2, int(share * W))
            kernel = kernels.setdefault(c, _kernels.RBF(c * g))
            if sketch:
                experts.append(SketchedKONS(kernel=kernel, loss=self._loss, C=self.C,
                                            alpha=alpha, eta=eta, beta=sketch[0], seed=0,
                                            max_size=window))
            else:
                experts.append(KONS(kernel=kernel, loss=self._loss, C=self.C, alpha=alpha,
                                    eta=eta, max_size=window))
        return experts

    def _dictionary(self, c: float, g: float) -> int:
        """The index of the shared dictionary of ``RBF(c g)``, built at its first use
        (:data:`DICTIONARY`; uncapped with ``max_size=None``; coins of ``seed=0``)."""
        gamma = c * g
        for index, embedding in enumerate(self._embeddings):
            if embedding._kernel.gamma == gamma:
                return index
        dictionary_alpha, cap, margin, rule = DICTIONARY
        self._embeddings.append(SharedEmbedding(
            _kernels.RBF(gamma), dictionary_alpha, max_size=None if self.max_size is None
            else cap, swap_margin=margin, swap_rule=rule))
        return len(self._embeddings) - 1

    # -- the learner protocol -------------------------------------------------------------

    def _share(self, safe: float, fast: float) -> float:
        """How far from the guaranteed average ``safe`` toward ``fast`` the slack allows (the
        worst case over the ends of the target range of loss(y, fast) - loss(y, safe))."""
        return self._share_at_ends(self._target_ends, safe, fast)

    def _analyse(self, v: np.ndarray):
        """:meth:`_analyse_now`, kept for a ``learn_one`` after ``predict_one`` (``_cached``)."""
        return self._memoised(self.n_seen, v, self._analyse_now)

    def _analyse_now(self, v: np.ndarray):
        """``(analyses, clipped predictions, Auto's prediction, the step's StepShared)``: the
        step protocol's analyses, from one kernel row per distinct kernel of the experts over
        the shared points and one embedding per dictionary, shared by every head on it."""
        shared = StepShared(v, self._points, [e.analyse(v) for e in self._embeddings])
        analyses = [expert.analyse(v, shared) for expert in self.experts]
        low, high = -self.C, self.C
        preds = [float(min(max(analysis.ybar, low), high)) for analysis in analyses]
        return analyses, preds, self._combine(preds), shared

    def _heads_on(self) -> tuple:
        """The experts on each shared dictionary, in the dictionaries' order (a cache)."""
        if self._heads is None:
            self._heads = tuple([e for e in self.experts if getattr(e, "dictionary", None) == i]
                                for i in range(len(self._embeddings)))
        return self._heads

    def _predict_vec(self, v: np.ndarray) -> float:
        if not self.experts:
            return 0.0
        with scipy_one_thread:  # the experts' window products run on one thread (okoco._blas)
            return self._analyse(v)[2]

    def _learn_vec(self, v: np.ndarray, y: float, eta) -> None:
        if not self.experts:
            self.experts = self._build_experts(v.shape[0])
            windowed = [e for e in self.experts if isinstance(e, KONS)]
            if self.max_size is not None and windowed:  # the ring holds the longest window
                self._points = SharedPoints(max(e.max_size for e in windowed) + 1)
            for expert in windowed:  # its slots are the shared ring's (KONS.share_points)
                expert.share_points(self._points)
            self.cumulative_losses = np.zeros(len(self.experts))
            self.recent_losses = np.zeros(len(self.experts))
        statistics = None
        if self._scales:
            y, statistics = self._standardized(y)
        with scipy_one_thread:
            self._learn_scaled(v, y)
        if statistics is not None:  # kept once the step succeeded
            self.target_count, self.target_mean, self._target_m2 = statistics

    def _standardized(self, y: float) -> tuple[float, tuple]:
        """``y`` standardized by the running statistics including it (river's
        ``TargetStandardScaler``: update, then scale), and those statistics ``(count, mean,
        m2)``, which the caller keeps once the step succeeded."""
        n = self.target_count + 1
        delta = y - self.target_mean
        mean = self.target_mean + delta / n
        m2 = self._target_m2 + delta * (y - mean)
        std = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
        return ((y - mean) / std if std > 0 else 0.0), (n, mean, m2)

    def _learn_scaled(self, v: np.ndarray, y: float) -> None:
        """Every expert's step on the (standardized) target ``y``, and the weights' losses.

        The step protocol (``okoco.learners.base.StepProtocol``): every step is checked before
        any is taken (a refused step changes nothing); then the dictionaries' coins (a point
        that joins adds a coordinate to every head, each having planned its step for both
        outcomes), the steps, a full dictionary's swap, the point stored and the windows'
        forgetting."""
        analyses, preds, own, shared = self._analyse(v)
        losses = self._loss_values(y, [*preds, own])  # the experts', then Auto's
        take_steps(self.experts, v, analyses, repeat(y), shared.store_point,
                   checked=lambda: self._offer(v, shared), applied=lambda: self._swap(v, shared))
        self._record(losses[:-1], losses[-1])

    def _offer(self, v: np.ndarray, shared: StepShared) -> None:
        """Each dictionary's KORS coin for ``v`` (a point that joins adds a coordinate to
        every head on it, each having planned its step for both outcomes)."""
        for embedding, its in zip(self._embeddings, shared.embedded):
            embedding.offer(v, its)

    def _swap(self, v: np.ndarray, shared: StepShared) -> None:
        """Each full dictionary's rule after the step (else it is frozen), for its heads."""
        for embedding, its, heads in zip(self._embeddings, shared.embedded, self._heads_on()):
            if embedding.swap_margin is not None:
                embedding.swap_in(v, its, heads)

    @classmethod
    def _unit_test_params(cls):
        yield {}
