r"""A learner with no parameter to choose: an exponentially weighted average of a few KONS.

The experts differ in what a user would otherwise tune (the RBF scale around ``1/d``, the ridge,
a linear part for trends); all use the curvature step ``eta="hessian"``. With weights
:math:`w_{t,i} \propto \exp(-\eta\sum_{s<t}\ell_s(\hat y_{s,i}))` and prediction
:math:`\hat y_t = \sum_i w_{t,i}\hat y_{t,i}`, an :math:`\eta`-exp-concave loss gives
:math:`\ell_t(\hat y_t) \le -\frac1\eta\log\sum_i w_{t,i}e^{-\eta\ell_t(\hat y_{t,i})}` (Jensen on
the concave :math:`e^{-\eta\ell}`), and the sum telescopes to

.. math:: \sum_t \ell_t(\hat y_t) - \min_i \sum_t \ell_t(\hat y_{t,i}) \le \frac{\log N}{\eta}

on every stream (Kivinen & Warmuth 1999, "Averaging expert predictions"; Hazan 2016,
"Introduction to Online Convex Optimization", Section 4.4).
"""

from __future__ import annotations

import math

import numpy as np

from okoco import kernels as _kernels
from okoco.learners.base import KernelLearner
from okoco.learners.kons import KONS

__all__ = ["Auto"]


class Auto(KernelLearner):
    r"""Online self-tuning: predict with the exponentially weighted average of a small grid of
    KONS experts (curvature step), weighted at the loss's exp-concavity rate.

    The weight rate :math:`\eta` is ``loss.exp_concavity(C)``, the largest :math:`\eta` for which
    :math:`e^{-\eta\ell}` is concave on :math:`[-C, C]`:

    - squared loss, :math:`|y| \le C`: :math:`(e^{-\eta u^2})'' \le 0` iff
      :math:`u^2 \le 1/(2\eta)` with :math:`u = z - y \in [-2C, 2C]`, so :math:`\eta = 1/(8C^2)`;
    - logistic loss: :math:`\ell''/\ell'^2 = e^{yz} \ge e^{-C}`, so :math:`\eta = e^{-C}`;
    - squared hinge: :math:`\ell''/\ell'^2 = 1/(2(1-yz)^2) \ge 1/(2(1+C)^2)` inside the margin
      and :math:`e^{-\eta\ell} = 1` outside, so :math:`\eta = 1/(2(1+C)^2)`.

    Then the regret to the best expert is at most :math:`\log N/\eta` on every stream whose
    targets lie in :math:`[-C, C]` (for the squared loss; labels are :math:`\pm1`).

    The experts are built at the first learn, when ``d`` (the number of features) is known:
    ``KONS(eta="hessian")`` with kernels ``RBF(1/d)`` (ridge 0.1 and 1), ``RBF(0.2/d)`` and
    ``RBF(1/d) + Linear()/d`` (a linear part extrapolates trends), ridge 0.1. Inputs should be
    standardized (river's ``StandardScaler``), and regression targets too
    (``TargetStandardScaler``), as for every okoco learner.

    Parameters
    ----------
    loss
        An okoco loss with ``exp_concavity``; ``None`` means ``Squared()``.
    C
        Every expert's predictions, and so the average, lie in ``[-C, C]``.

    Attributes
    ----------
    experts
        The experts (empty before the first learn).
    weights
        Their current weights, summing to 1.
    cumulative_losses
        Each expert's loss summed over the steps learned.
    leader
        The expert with the largest weight, as a constructor call.
    rate
        The weight rate :math:`\eta`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco.learners import Auto
    >>> model = preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | Auto())
    >>> evaluate.progressive_val_score(datasets.TrumpApproval().take(200), model, metrics.MAE())
    MAE: ...
    >>> print(model.regressor["Auto"].leader)
    KONS(kernel=..., alpha=..., eta='hessian')
    """

    def __init__(self, loss=None, C: float = 3.0):
        self.kernel = None
        self.loss = loss
        self.C = C
        self._setup()
        if not callable(getattr(self._loss, "exp_concavity", None)):
            raise TypeError(f"Auto needs loss.exp_concavity (the weight rate): {self._loss!r}")
        self.rate = float(self._loss.exp_concavity(self.C))
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"loss.exp_concavity({self.C!r}) = {self.rate!r}; it must be > 0")

    def _reset_state(self) -> None:
        self.experts: list[KONS] = []
        self.cumulative_losses = np.zeros(0)

    def _build_experts(self, d: int) -> list[KONS]:
        g = 1.0 / max(d, 1)
        trend = _kernels.RBF(g) + _kernels.Scaled(g, _kernels.Linear())
        grid = [(_kernels.RBF(g), 0.1), (_kernels.RBF(g), 1.0), (_kernels.RBF(0.2 * g), 0.1),
                (trend, 0.1)]
        return [KONS(kernel=k, loss=self._loss, C=self.C, alpha=a, eta="hessian") for k, a in grid]

    # -- weights --------------------------------------------------------------------------

    @property
    def weights(self) -> np.ndarray:
        if not self.experts:
            return np.zeros(0)
        logits = -self.rate * self.cumulative_losses
        w = np.exp(logits - logits.max())
        return w / w.sum()

    @property
    def leader(self) -> str | None:
        if not self.experts:
            return None
        best = self.experts[int(np.argmax(self.weights))]
        return f"KONS(kernel={best.kernel!r}, alpha={best.alpha:g}, eta='hessian')"

    # -- the learner protocol -------------------------------------------------------------

    def _expert_predictions(self, v: np.ndarray) -> np.ndarray:
        return np.array([e._clip(e._predict_vec(v)) for e in self.experts])

    def _predict_vec(self, v: np.ndarray) -> float:
        if not self.experts:
            return 0.0
        return float(self.weights @ self._expert_predictions(v))

    def _learn_vec(self, v: np.ndarray, y: float, eta) -> None:
        if not self.experts:
            self.experts = self._build_experts(v.shape[0])
            self.cumulative_losses = np.zeros(len(self.experts))
        losses = np.asarray(self._loss.value(y, self._expert_predictions(v)), dtype=float)
        for expert in self.experts:  # each reuses the solve its prediction cached
            expert._learn_vec(v, y, expert._step(expert.n_seen + 1))
            expert.n_seen += 1
            expert._cache = None
        self.cumulative_losses = self.cumulative_losses + losses

    @property
    def dictionary_size(self) -> int:
        """Points stored by the leading expert (every expert stores every point)."""
        return self.experts[int(np.argmax(self.weights))].dictionary_size if self.experts else 0

    @classmethod
    def _unit_test_params(cls):
        yield {}
