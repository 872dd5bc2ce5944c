r"""Prediction intervals that keep their coverage on a stream: adaptive conformal inference.

A regressor's raw predictive spread (a posterior variance, a residual scale) is rarely
calibrated on a real stream: the noise level drifts, the model is misspecified, the kernel's
scale is a guess. Adaptive conformal inference (Gibbs & Candès 2021, "Adaptive Conformal
Inference Under Distribution Shift", NeurIPS) turns any such spread into intervals whose
long-run coverage is guaranteed on *every* sequence, with no assumption on the stream:

.. code-block:: text

    score_t = |y_t - yhat_t| / sigma_t                 # sigma_t: the model's spread at x_t, or 1
    q_t     = conformal quantile of the last `window` scores at level 1 - a_t
    C_t     = [yhat_t - q_t sigma_t,  yhat_t + q_t sigma_t]
    err_t   = 1 if y_t is outside C_t else 0
    a_{t+1} = a_t + gamma (a - err_t)                  # a = 1 - coverage, a_1 = a

The conformal quantile of ``n`` scores at level ``l`` is the ``ceil(l (n + 1))``-th smallest
score (infinite when that exceeds ``n``, and when ``a_t <= 0``; zero when ``a_t >= 1``). Whatever
the scores, ``a_t`` stays in ``[-gamma, 1 + gamma]``, and the realised miss rate obeys
(Gibbs & Candès 2021, Proposition 4.1)

.. math:: \Bigl|\frac1T\sum_{t=1}^T \mathrm{err}_t - a\Bigr|
          \le \frac{\max(a_1, 1 - a_1) + \gamma}{\gamma T},

so a requested coverage is met over the stream up to ``O(1/(gamma T))``. A larger ``gamma``
tightens that bound and follows changes faster, at the price of more variable widths.

**Finite intervals after the warm-up** (``AdaptiveConformal(finite=True)``, what
:class:`IntervalRegressor` uses). The quantile above is infinite whenever
:math:`a_t < 1/(n + 1)`, and on some streams that is most of the time: on a duplicated point a
learner's spread keeps shrinking while its small residual does not, so every new score is the
largest of the window, every finite interval misses, and :math:`a_t` spends about
:math:`1 - a` of the steps below :math:`1/(n + 1)` (infinite on 808 of 1,400 steps of such a
stream). With ``finite=True``, once the window holds enough scores for the nominal quantile
(:math:`\lceil (1 - a)(n + 1) \rceil \le n`), such a step uses the window's largest score
:math:`M` doubled once per :math:`\gamma` of shortfall instead,

.. math:: q_t = M \cdot 2^{\,1 + \lfloor (1/(n+1) - a_t)/\gamma \rfloor}

(infinite only while :math:`M = 0`). A miss at a depth :math:`D = (1/(n+1) - a_t)/\gamma`
needs a score above :math:`2^{D}` times the smallest positive window maximum, so with scores in
:math:`[s_{\min}, s_{\max}]` (:math:`s_{\min} > 0`) :math:`a_t > -\gamma(1 + \log_2
(s_{\max}/s_{\min}))` always, and since :math:`a_{T+1} - a_1 = \gamma \sum_t (a -
\mathrm{err}_t)`,

.. math:: \Bigl|\frac1T\sum_{t=1}^T \mathrm{err}_t - a\Bigr|
          \le \frac{\max(a_1, 1 - a_1) + \gamma\,(1 + \log_2(s_{\max}/s_{\min}))}{\gamma T}:

the same ``O(1/(gamma T))`` guarantee, with a constant that grows with the log of the scores'
range (``tests/test_intervals.py`` checks it step by step).

:class:`IntervalRegressor` wraps any river regressor with this calibration: the model's own
predictive spread is used when its ``predict_one`` accepts ``with_dist=True`` (okoco's
second-order learners and river's ``BayesianLinearRegression`` return a ``proba.Gaussian``),
plain absolute residuals otherwise.

Examples
--------
>>> from river import datasets, linear_model, preprocessing
>>> from okoco.intervals import IntervalRegressor
>>> model = preprocessing.StandardScaler() | IntervalRegressor(
...     linear_model.BayesianLinearRegression(), coverage=0.9)
>>> for x, y in datasets.TrumpApproval().take(1000):
...     low, high = model.predict_one(x, with_interval=True)
...     model.learn_one(x, y)
>>> wrapper = model["IntervalRegressor"]
>>> 0.88 <= wrapper.coverage_seen <= 0.92
True
"""

from __future__ import annotations

import bisect
import math
import threading
from numbers import Integral, Real
from statistics import NormalDist

import numpy as np
from river import base, linear_model, proba

from okoco._checks import check_target
from okoco._locking import Locked, one_at_a_time
from okoco._validation import Interval, Protocol, check_params

__all__ = ["AdaptiveConformal", "IntervalRegressor", "interval_score"]


def interval_score(y: float, low: float, high: float, coverage: float) -> float:
    r"""The interval (Winkler) score of ``[low, high]`` for a central ``coverage`` interval.

    :math:`(h - l) + \frac2a (l - y)\,[y < l] + \frac2a (y - h)\,[y > h]` with
    :math:`a = 1 - \text{coverage}` (Gneiting & Raftery 2007, "Strictly proper scoring rules,
    prediction, and estimation", Eq. 43): a proper score, lower is better, that charges the width
    and, beyond it, each miss by its distance.

    Examples
    --------
    >>> interval_score(1.0, 0.0, 2.0, 0.9)
    2.0
    >>> round(interval_score(3.0, 0.0, 2.0, 0.9), 6)
    22.0
    """
    a = 1.0 - coverage
    score = high - low
    if y < low:
        score += 2.0 / a * (low - y)
    elif y > high:
        score += 2.0 / a * (y - high)
    return score


#: The parameters of the calibration (AdaptiveConformal's, IntervalRegressor's).
_CALIBRATION = {
    "coverage": [Interval(Real, 0, 1, closed="neither")],
    "gamma": [Interval(Real, 0, None, closed="neither")],
    "window": [None, Interval(Integral, 1, None, closed="left")],
}


class AdaptiveConformal:
    r"""The online calibration of adaptive conformal inference (module docstring).

    Parameters
    ----------
    coverage
        The requested long-run coverage :math:`1 - a`, in ``(0, 1)``.
    gamma
        The step of :math:`a_t`, > 0. The default 0.02 was chosen on the bundled regression
        streams (``docs/guide/intervals.md``): on streams of a few thousand samples
        Gibbs & Candès's 0.005 leaves the bound above at several points of coverage.
    window
        How many recent scores the quantile is taken over (bounded memory, and a quantile that
        follows a changing noise level); ``None`` keeps every score.
    finite
        Whether a quantile the recursion leaves infinite after the warm-up is the window's
        largest score doubled once per ``gamma`` of shortfall instead (module docstring:
        finite intervals, the same guarantee up to a log factor); ``False`` is Gibbs &
        Candès's recursion exactly.

    Attributes
    ----------
    level_gap
        :math:`a_t`, the miss rate the next interval is built for.
    n_seen, n_missed
        Updates so far, and how many of them fell outside their interval.

    Examples
    --------
    >>> calibrator = AdaptiveConformal(coverage=0.8, gamma=0.1)
    >>> for score in [1.0, 2.0, 3.0, 4.0, 5.0]:
    ...     calibrator.update(score, missed=False)
    >>> calibrator.quantile()  # five covered steps raised a_t from 0.2 to 0.3: the ceil(0.7 * 6)th
    5.0
    """

    _parameter_constraints = {**_CALIBRATION, "finite": ["boolean"]}

    _saved_state = {"coverage": "number", "gamma": "number", "window": "int[1,]|none",
                    "finite": "opt bool", "level_gap": "float", "n_seen": "int[0,]",
                    "n_missed": "int[0,]",
                    "_recent": "list[float] as recent_scores",
                    "_sorted": "list[float] as sorted_scores"}

    finite = False  # files before it hold the paper's recursion

    def __init__(self, coverage: float = 0.9, gamma: float = 0.02, window: int | None = 1000,
                 finite: bool = False):
        self.coverage = coverage
        self.gamma = gamma
        self.window = window
        self.finite = finite
        check_params(self)
        self.level_gap = 1.0 - self.coverage
        self.n_seen = 0
        self.n_missed = 0
        self._recent: list[float] = []  # in arrival order (a window of at most 1000)
        self._sorted: list[float] = []

    def quantile(self) -> float:
        """The multiplier :math:`q_t` of the next interval (``inf`` when no finite one covers)."""
        gap = self.level_gap
        if gap >= 1.0:
            return 0.0
        n = len(self._sorted)
        if gap > 0.0 and n:
            rank = math.ceil((1.0 - gap) * (n + 1))
            if rank <= n:
                return self._sorted[rank - 1]
        if not self.finite or not n or math.ceil(self.coverage * (n + 1)) > n:
            return math.inf  # the paper's quantile, or still warming up
        return self._doubled_maximum(n)

    def _doubled_maximum(self, n: int) -> float:
        """The window's largest score times :math:`2^{1 + \\lfloor (1/(n+1) - a_t)/\\gamma
        \\rfloor}` (module docstring), ``inf`` while that score is 0."""
        top = self._sorted[-1]
        if not top > 0.0:
            return math.inf
        depth = (1.0 / (n + 1) - self.level_gap) / self.gamma
        # 2.0 ** 1024 raises OverflowError; a product beyond float64 is inf, which is right
        return top * 2.0 ** min(1 + math.floor(depth), 1023)

    def update(self, score: float, missed: bool) -> None:
        """Record the new score ``|y - yhat| / sigma`` and whether ``y`` fell outside its interval.

        A score is a real number (``TypeError`` for a string, bytes, a bool or ``None``, as a
        learner refuses them as targets), ``>= 0`` and not NaN (``ValueError``; ``inf`` is a
        score: a target no finite interval covers); ``missed`` a bool. Nothing is changed by a
        refused call.
        """
        if isinstance(score, (bool, np.bool_)) or not isinstance(score, Real):
            raise TypeError(f"a conformity score must be a real number, got {score!r} "
                            f"({type(score).__name__})")
        if not isinstance(missed, (bool, np.bool_)):
            raise TypeError(f"missed must be a bool, got {missed!r} ({type(missed).__name__})")
        score = float(score)
        if not score >= 0.0:
            raise ValueError(f"a conformity score must be >= 0, got {score!r}")
        self.level_gap += self.gamma * ((1.0 - self.coverage) - float(bool(missed)))
        self.n_seen += 1
        self.n_missed += bool(missed)
        if self.window is not None and len(self._recent) == self.window:
            oldest = self._recent.pop(0)
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]
        self._recent.append(score)
        bisect.insort(self._sorted, score)


class IntervalRegressor(Locked, base.Wrapper, base.Regressor):
    r"""Any river regressor with calibrated prediction intervals (adaptive conformal inference).

    ``predict_one(x)`` is the wrapped regressor's prediction; ``predict_one(x, with_interval=True)``
    is the interval ``(low, high)``; ``predict_one(x, with_dist=True)`` is a ``proba.Gaussian``
    centred on the prediction whose central ``coverage`` interval is that interval (its sigma is
    the half-width over the normal quantile). ``learn_one`` scores the interval it would have
    given at ``x`` (test-then-train), updates the calibration, then the regressor.

    The spread :math:`\sigma(x)` that normalises the scores is the regressor's own predictive
    sigma when its ``predict_one`` accepts ``with_dist=True`` (checked at the first call), else 1
    (absolute residuals). Either way the coverage guarantee of :class:`AdaptiveConformal` holds;
    a spread that tracks the model's uncertainty gives narrower intervals where it is confident.

    Parameters
    ----------
    regressor
        A river regressor (an okoco learner, a river model, a pipeline).
    coverage, gamma, window
        As for :class:`AdaptiveConformal`.
    spread
        Whether to normalise the scores by the regressor's own predictive sigma when it gives
        one (``False``: absolute residuals always). Which band is narrower depends on the
        stream (``docs/guide/intervals.md`` has both on the bundled streams).

    Attributes
    ----------
    calibrator
        The :class:`AdaptiveConformal` state.
    coverage_seen
        The share of learned targets that fell inside their interval.
    mean_width
        The mean width of the finite intervals scored by ``learn_one``.
    mean_interval_score
        The mean :func:`interval_score` of those intervals.

    Examples
    --------
    >>> from river import linear_model
    >>> model = IntervalRegressor(linear_model.LinearRegression(), coverage=0.5, gamma=0.1)
    >>> for i in range(200):
    ...     model.learn_one({"x": float(i % 10)}, float(i % 10) + (-1) ** i)
    >>> low, high = model.predict_one({"x": 3.0}, with_interval=True)
    >>> bool(low < 3.0 < high)
    True
    """

    _parameter_constraints = {
        "regressor": [Protocol("a river regressor", "predict_one", "learn_one")],
        **_CALIBRATION,
        "spread": ["boolean"],
    }

    # The lock is a slot, not state: ``vars()`` (what a replay checkpoint captures of a target
    # wrapper, okoco.persistence._checkpoints) never holds it; pickles leave it out too.
    __slots__ = ("_lock",)

    #: Saved state (okoco.persistence; the load helper registers the class): the calibration,
    #: whether the regressor gives a spread (None: not asked yet) and the running sums.
    _saved_state = {"regressor": "obj|river", "coverage": "number", "gamma": "number",
                    "window": "int[1,]|none", "spread": "bool",
                    "calibrator": "obj:AdaptiveConformal", "_normal_quantile":
                    "float as normal_quantile", "_with_dist": "bool|none as with_dist",
                    "_n_finite": "int[0,] as n_finite", "_width_sum": "float as width_sum",
                    "_score_sum": "float as score_sum", "_lock": "cache:lock"}

    def __init__(self, regressor: base.Regressor, coverage: float = 0.9, gamma: float = 0.02,
                 window: int | None = 1000, spread: bool = True):
        self.regressor = regressor
        self.coverage = coverage
        self.gamma = gamma
        self.window = window
        self.spread = spread
        check_params(self)
        self.calibrator = AdaptiveConformal(self.coverage, self.gamma, self.window, finite=True)
        self._normal_quantile = NormalDist().inv_cdf(0.5 + self.coverage / 2.0)
        # whether the regressor gives a spread: known after the first call that succeeds
        self._with_dist: bool | None = None if spread else False
        self._n_finite = 0
        self._width_sum = 0.0
        self._score_sum = 0.0
        self._lock = threading.Lock()  # one call at a time, as the learners (one_at_a_time)


    @property
    def _wrapped_model(self):
        return self.regressor

    @classmethod
    def _unit_test_params(cls):
        yield {"regressor": linear_model.LinearRegression()}

    def _centre_and_spread(self, x: dict) -> tuple[float, float, bool]:
        """The regressor's prediction at ``x``, its spread (1 without one) and whether it gave
        one. Nothing is changed: the caller records the last once its call succeeded (an ``x``
        the regressor refuses says nothing about its spread)."""
        with_dist = self._with_dist
        if with_dist is None:  # does the regressor give a spread? Ask once, at a valid x
            try:
                dist = self.regressor.predict_one(x, with_dist=True)
                with_dist = hasattr(dist, "sigma") and hasattr(dist, "mu")
            except TypeError:  # no with_dist, or a bad x: a plain prediction tells which
                self.regressor.predict_one(x)  # a bad x raises here
                with_dist = False
        if not with_dist:
            return float(self.regressor.predict_one(x)), 1.0, False
        dist = self.regressor.predict_one(x, with_dist=True)
        sigma = float(dist.sigma)
        # a zero spread (a point the model is sure of) would divide the score by zero
        return float(dist.mu), sigma if sigma > 0.0 and math.isfinite(sigma) else 1e-300, True

    def _interval(self, centre: float, spread: float) -> tuple[float, float]:
        half = self.calibrator.quantile() * spread
        return centre - half, centre + half

    @one_at_a_time
    def predict_one(self, x: dict, with_interval: bool = False, with_dist: bool = False,
                    **kwargs):
        """The prediction, or its interval ``(low, high)``, or a ``proba.Gaussian``.

        Other keyword arguments are river's wrapper convention; none is used."""
        centre, spread, self._with_dist = self._centre_and_spread(x)
        if not (with_interval or with_dist):
            return centre
        low, high = self._interval(centre, spread)
        if with_interval:
            return low, high
        sigma = (high - centre) / self._normal_quantile
        return proba.Gaussian._from_state(n=1, m=centre, var=sigma * sigma, ddof=0)

    @one_at_a_time
    def learn_one(self, x: dict, y: float, **kwargs) -> None:
        """Score the interval at ``x`` against ``y``, then learn, then update the calibration
        (``kwargs`` go to the regressor's ``learn_one``).

        ``y`` is checked as the learners check a target (a real number, finite, ``|y| <=
        1e150``; ``bool`` and strings refused); a refused call (a bad ``y``, an ``x`` or a step
        the regressor refuses) changes nothing here."""
        y = check_target(y)
        centre, spread, with_dist = self._centre_and_spread(x)
        low, high = self._interval(centre, spread)
        missed = not (low <= y <= high)
        score = abs(y - centre) / spread
        if not score >= 0.0:  # a NaN prediction: the regressor's, refused before it learns
            raise ValueError(f"the regressor predicted {centre!r} at x; its conformity "
                             "score is not a number")
        self.regressor.learn_one(x, y, **kwargs)
        self._with_dist = with_dist
        self.calibrator.update(score, missed)
        if math.isfinite(high - low):
            self._n_finite += 1
            self._width_sum += high - low
            self._score_sum += interval_score(y, low, high, self.coverage)

    @property
    def coverage_seen(self) -> float:
        n = self.calibrator.n_seen
        return (n - self.calibrator.n_missed) / n if n else math.nan

    @property
    def mean_width(self) -> float:
        return self._width_sum / self._n_finite if self._n_finite else math.nan

    @property
    def mean_interval_score(self) -> float:
        return self._score_sum / self._n_finite if self._n_finite else math.nan
