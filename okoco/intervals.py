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
from numbers import Integral, Real
from statistics import NormalDist

from river import base, linear_model, proba

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

    _parameter_constraints = {
        "coverage": [Interval(Real, 0, 1, closed="neither")],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "window": [None, Interval(Integral, 1, None, closed="left")],
    }

    _saved_state = {"coverage": "number", "gamma": "number", "window": "int[1,]|none",
                    "level_gap": "float", "n_seen": "int[0,]", "n_missed": "int[0,]",
                    "_recent": "list[float] as recent_scores",
                    "_sorted": "list[float] as sorted_scores"}

    def __init__(self, coverage: float = 0.9, gamma: float = 0.02, window: int | None = 1000):
        self.coverage = coverage
        self.gamma = gamma
        self.window = window
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
        if gap <= 0.0 or n == 0:
            return math.inf
        rank = math.ceil((1.0 - gap) * (n + 1))
        return self._sorted[rank - 1] if rank <= n else math.inf

    def update(self, score: float, missed: bool) -> None:
        """Record the new score ``|y - yhat| / sigma`` and whether ``y`` fell outside its interval.

        Raises ``ValueError`` for a score that is negative or NaN (nothing is changed then).
        """
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


class IntervalRegressor(base.Wrapper, base.Regressor):
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
        **AdaptiveConformal._parameter_constraints,
        "spread": ["boolean"],
    }

    def __init__(self, regressor: base.Regressor, coverage: float = 0.9, gamma: float = 0.02,
                 window: int | None = 1000, spread: bool = True):
        self.regressor = regressor
        self.coverage = coverage
        self.gamma = gamma
        self.window = window
        self.spread = spread
        check_params(self)
        self.calibrator = AdaptiveConformal(self.coverage, self.gamma, self.window)
        self._normal_quantile = NormalDist().inv_cdf(0.5 + self.coverage / 2.0)
        self._with_dist: bool | None = None  # whether the regressor gives a spread (first call)
        self._n_finite = 0
        self._width_sum = 0.0
        self._score_sum = 0.0

    @property
    def _wrapped_model(self):
        return self.regressor

    @classmethod
    def _unit_test_params(cls):
        yield {"regressor": linear_model.LinearRegression()}

    def _centre_and_spread(self, x: dict) -> tuple[float, float]:
        if self._with_dist is None and not self.spread:
            self._with_dist = False
        if self._with_dist is None:
            try:
                dist = self.regressor.predict_one(x, with_dist=True)
                self._with_dist = hasattr(dist, "sigma") and hasattr(dist, "mu")
            except TypeError:
                self._with_dist = False
        if not self._with_dist:
            return float(self.regressor.predict_one(x)), 1.0
        dist = self.regressor.predict_one(x, with_dist=True)
        sigma = float(dist.sigma)
        # a zero spread (a point the model is sure of) would divide the score by zero
        return float(dist.mu), sigma if sigma > 0.0 and math.isfinite(sigma) else 1e-300

    def _interval(self, centre: float, spread: float) -> tuple[float, float]:
        half = self.calibrator.quantile() * spread
        return centre - half, centre + half

    def predict_one(self, x: dict, with_interval: bool = False, with_dist: bool = False,
                    **kwargs):
        """The prediction, or its interval ``(low, high)``, or a ``proba.Gaussian``.

        Other keyword arguments are river's wrapper convention; none is used."""
        centre, spread = self._centre_and_spread(x)
        if not (with_interval or with_dist):
            return centre
        low, high = self._interval(centre, spread)
        if with_interval:
            return low, high
        sigma = (high - centre) / self._normal_quantile
        return proba.Gaussian._from_state(n=1, m=centre, var=sigma * sigma, ddof=0)

    def learn_one(self, x: dict, y: float, **kwargs) -> None:
        """Score the interval at ``x`` against ``y``, update the calibration, then learn
        (``kwargs`` go to the regressor's ``learn_one``)."""
        y = float(y)
        if not math.isfinite(y):
            raise ValueError(f"the target must be a finite number, got {y!r}")
        centre, spread = self._centre_and_spread(x)
        low, high = self._interval(centre, spread)
        missed = not (low <= y <= high)
        self.regressor.learn_one(x, y, **kwargs)
        self.calibrator.update(abs(y - centre) / spread, missed)
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
