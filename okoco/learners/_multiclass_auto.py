r"""``Auto``'s multiclass form: one mixture of shared-preconditioner multiclass KONS experts.

``MulticlassClassifier(Auto())`` (``Auto``'s squared loss) keeps ``Auto``'s experts (the grid
:data:`okoco.learners.auto.EXPERTS`: RBF scales, ridges, windows) but makes each of them the
multiclass form of :class:`~okoco.learners._multiclass_shared.SharedSquaredKONS`: with the
squared loss and the curvature step every class's step weight is 2, so the ``K`` one-vs-rest
classes of an expert share one preconditioner and keep only their coefficients. The experts
share one ring of the points and each distinct kernel's row (:class:`SharedPoints`, as
``Auto``'s), so ``K`` classes and ``N`` experts cost about ``N`` KONS steps, not ``N K``.

**The experts' loss.** Expert :math:`i` predicts the vector :math:`p_{t,i} \in [-C, C]^K` of
its clipped class scores; its loss at :math:`(x_t, y_t)` is
:math:`F_t(p) = \sum_{k} (p_k - y_{t,k})^2` over the classes seen before :math:`t`, with
:math:`y_{t,k} = +1` for the label's class and :math:`-1` for the others (a class first seen at
:math:`t` adds :math:`(0 - 1)^2` to every expert and to the mixture alike). Each term
:math:`f_k(p_k) = (p_k - y_k)^2` is :math:`\eta`-exp-concave with
:math:`\eta = 1/(2(C+1)^2)` (:math:`|p_k - y_k| \le C + 1`: ``Squared().exp_concavity(C, 1)``),
i.e. :math:`f_k'' \ge \eta f_k'^2`, and then :math:`F` is :math:`\eta/K`-exp-concave:
:math:`\nabla^2 F = \mathrm{diag}(f_k'') \succeq \eta\,\mathrm{diag}(f_k'^2) \succeq
\frac{\eta}{K}\nabla F\nabla F^\top`, since by Cauchy-Schwarz
:math:`(a^\top\nabla F)^2 = (\sum_k a_k f_k')^2 \le K\sum_k a_k^2 f_k'^2`.

**The mixture** is ``Auto``'s (:class:`~okoco.learners._mixture.ExpertMixture`): weights at
the guaranteed rate :math:`\eta_t = \eta/K_{t-1}` (:math:`K_{t-1}` the classes seen before
step :math:`t`, the ones whose scores differ between experts) on the cumulative losses, weights
at ``fast_rate``:math:`/K_{t-1}` on the losses discounted by ``fast_discount`` per step, and the
prediction
:math:`\bar p_t + \lambda_t(\tilde p_t - \bar p_t)` (vectors) with the largest
:math:`\lambda_t \in [0, 1]` whose worst case keeps the mixture's cumulative loss :math:`A_t`
below the mix loss :math:`\Phi_t`. The worst case is over the targets that can come: the code
of each seen class, or all :math:`-1` (a new class):
:math:`\max_y F(y, \tilde p) - F(y, \bar p) = \sum_k \delta_k(\tilde p_k + \bar p_k + 2) +
4\max(0, \max_k -\delta_k)` with :math:`\delta = \tilde p - \bar p`. A new class lowers the
rate; the mix loss :math:`-\frac1\eta\log\frac1N\sum_i e^{-\eta L_i}` only grows as
:math:`\eta` falls, so :math:`A_t \le \Phi_t` still holds, and

.. math:: \sum_t F_t(\hat p_t) - \min_i \sum_t F_t(p_{t,i}) \le \frac{K \log N}{\eta}
          = 2K(C+1)^2\log N

on every stream with :math:`K` classes, as for ``Auto``'s own guarantee (``Auto``'s module).
``Auto``'s target scaling does not apply: the targets are the codes :math:`\pm 1`.

**The fast rate** is ``Auto``'s ``fast_rate``, a rate for one scalar loss, divided by
:math:`K` as the guaranteed rate is (it does not change the guarantee). Measured against
``fast_rate`` on the summed losses, mean test-then-train accuracy over five shuffled orders of
each stream (the sets of ``benchmarks/bench_multiclass.py`` at commit f31db3a, seeds 1-5):
ImageSegments 0.9172 against 0.9136 (better on 5 of 5 orders), digits 0.9497 against 0.9491,
wine 0.9401 against 0.9435 (one sample in 178 on two orders).

**A class first seen at sample t** starts with zero coefficients in every expert (each expert
is then, class by class, the standalone KONS that learned the target 0 before :math:`t`:
:class:`SharedSquaredKONS`), and the mixture's weights are those of the experts' losses so far.
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

from okoco import losses
from okoco._blas import scipy_one_thread
from okoco.learners._mixture import ExpertMixture
from okoco.learners._multiclass_shared import SharedSquaredKONS
from okoco.learners._protocol import Memo, take_steps
from okoco.learners.auto import KONS_EXPERTS, Auto
from okoco.learners.shared import ExpertRows, SharedPoints, StepShared
from okoco.linalg import SlotInverse

__all__ = ["SharedSquaredAuto"]


def shares_preconditioner(learner) -> bool:
    """``Auto`` with the squared loss: its multiclass form's experts (``KONS_EXPERTS``) are
    squared-loss KONS with the curvature step, whose classes share one preconditioner."""
    return type(learner) is Auto and isinstance(learner._loss, losses.Squared)


class SharedSquaredAuto(Memo, ExpertMixture):
    r"""The class scores of ``Auto``'s multiclass form: one exponentially weighted mixture of
    multiclass KONS experts, each with one preconditioner for all its classes (see the
    module's docstring).

    Parameters
    ----------
    C, fast_rate, fast_discount, max_size
        As :class:`~okoco.learners.Auto` (the loss is the squared loss of the codes
        :math:`\pm 1`, so ``scale_target`` does not apply).

    Attributes
    ----------
    experts
        One :class:`SharedSquaredKONS` per expert of ``Auto``'s grid (empty before the first
        learn, when the number of features fixes the kernels).
    weights, fast_weights, slack
        As ``Auto``'s.
    cumulative_losses, recent_losses
        Each expert's summed class losses, cumulative and discounted.
    cumulative_loss
        The mixture's own summed class losses.
    rate, fast_rate
        The rates of the next step: :math:`\eta/K` and ``fast_rate``:math:`/K` (``K`` the
        classes learned so far; 1 before any).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.learners._multiclass_auto import SharedSquaredAuto
    >>> shared = SharedSquaredAuto(C=3.0, max_size=10)
    >>> shared.add_class(); shared.add_class()
    >>> for i in range(12):
    ...     shared.learn(np.array([i / 12, 1.0 - i / 12]), i % 2)
    >>> len(shared.experts), shared.n_classes, shared.scores(np.array([0.5, 0.5])).shape
    (5, 2, (2,))
    >>> round(float(shared.weights.sum()), 12)
    1.0
    """

    _saved_state = {"C": "number", "class_fast_rate": "number", "fast_discount": "number",
                    "max_size": "int[5,]|none", "n_classes": "int[0,]",
                    "learned_classes": "int[0,]",
                    "experts": "list[obj:SharedSquaredKONS]",
                    "cumulative_losses": "array(k) float64", "recent_losses": "array(k) float64",
                    "cumulative_loss": "float", "_points": "obj:SharedPoints as points",
                    "_mixture": "cache:None", "_cache": "cache:None"}

    def __init__(self, C: float = 3.0, fast_rate: float = 1.0, fast_discount: float = 0.99,
                 max_size: int | None = 400):
        self.C, self.max_size = C, max_size
        self.class_fast_rate, self.fast_discount = fast_rate, fast_discount
        self.n_classes = 0
        self.learned_classes = 0  # the classes of the last step: the rates' K
        # the experts, their losses and the ring of points, from the first learn (d known)
        self.experts: list[SharedSquaredKONS] = []
        self.cumulative_losses, self.recent_losses = np.zeros(0), np.zeros(0)
        self.cumulative_loss = 0.0
        self._points = SharedPoints(None if max_size is None else max_size + 1)
        self._mixture = None
        self._cache = None  # the experts' analyses at the last row (_analyses)

    @classmethod
    def of(cls, auto: Auto) -> SharedSquaredAuto:
        """The multiclass form of ``auto`` (its ``C``, rates and window)."""
        return cls(auto.C, auto.fast_rate, auto.fast_discount, auto.max_size)

    @property
    def rate(self) -> float:
        """The guaranteed rate of the next step: ``1 / (2 (C + 1)^2)`` (each class's
        exp-concavity rate on the codes) over the classes learned so far."""
        return losses.Squared().exp_concavity(self.C, 1.0) / max(self.learned_classes, 1)

    @property
    def fast_rate(self) -> float:
        """The fast average's rate: ``Auto``'s ``fast_rate`` (a rate for one class's loss)
        over the classes learned so far, as for the guaranteed rate."""
        return self.class_fast_rate / max(self.learned_classes, 1)

    # -- classes --------------------------------------------------------------------------

    def add_class(self) -> None:
        """A new class, with zero coefficients in every expert."""
        for expert in self.experts:
            expert.add_class()
        self.n_classes += 1
        self._cache = None  # the analyses have one column less

    def drop_class(self) -> None:
        """Undo :meth:`add_class` (its first step was refused)."""
        for expert in self.experts:
            expert.drop_class()
        self.n_classes -= 1
        self._cache = None

    def _build(self, d: int) -> None:
        """``Auto``'s grid as multiclass experts over one ring (kernels fixed by ``d``)."""
        ring = self._points.rows.max_size
        for kons in Auto(C=self.C, max_size=self.max_size)._build_experts(d, KONS_EXPERTS):
            expert = SharedSquaredKONS(kons.kernel, self.C, kons.alpha, kons.max_size)
            expert.points = ExpertRows(self._points, fields=("d",))
            if ring is not None:  # its slots are the shared ring's, its atoms its window's
                expert.inverse = SlotInverse(ring, atoms=kons.max_size + 1)
            for _ in range(self.n_classes):
                expert.add_class()
            self.experts.append(expert)
        self.cumulative_losses = np.zeros(len(self.experts))
        self.recent_losses = np.zeros(len(self.experts))

    # -- scores ---------------------------------------------------------------------------

    def _analyses(self, v: np.ndarray) -> list[tuple]:
        """Every expert's analysis at ``v``, each distinct kernel's row computed once; kept
        for the current state (the points stored and the classes), so that a step after a
        prediction on the same row reuses them."""
        return self._memoised(self._points.rows.n_added, v, self._analyses_now)

    def _analyses_now(self, v: np.ndarray) -> list:
        shared = StepShared(v, self._points)
        return [expert.analyse(v, shared) for expert in self.experts]

    def _preds(self, analyses: list[tuple]) -> list[np.ndarray]:
        return [expert.scores_of(a) for expert, a in zip(self.experts, analyses)]

    def scores(self, v: np.ndarray) -> np.ndarray:
        """The mixture's score of every class at ``v``, in the order the classes were added."""
        if not self.experts:
            return np.zeros(self.n_classes)
        with scipy_one_thread:  # the experts' window products on one thread (okoco._blas)
            return self._combine(self._preds(self._analyses(v)))

    def _share(self, safe: np.ndarray, fast: np.ndarray) -> float:
        """How far from the guaranteed average ``safe`` toward ``fast`` the slack allows."""
        delta = fast - safe
        worst = float(delta @ (fast + safe + 2.0))  # the targets all -1: a new class
        if delta.size:  # the code of class k: 4 (safe_k - fast_k) more
            worst += 4.0 * max(0.0, float(-delta.min()))
        return self._spend(worst)

    # -- learning -------------------------------------------------------------------------

    def learn(self, v: np.ndarray, label: int) -> None:
        """One step of every expert on the codes of ``label`` (+1 for its class, -1 for the
        others), then the losses. Every expert's step is checked before any is taken: a
        refused step changes nothing."""
        if not self.experts:
            self._build(v.shape[0])
        with scipy_one_thread:
            self._learn(v, label)

    def _learn(self, v: np.ndarray, label: int) -> None:
        experts = self.experts
        analyses = self._analyses(v)
        preds = self._preds(analyses)
        own = self._combine(preds)
        y = np.full(self.n_classes, -1.0)
        y[label] = 1.0
        losses_now = np.array([float(((p - y) ** 2).sum()) for p in preds])
        take_steps(experts, v, analyses, repeat(label), lambda: self._points.append(v))
        self._cache = None
        self._record(losses_now, ((own - y) ** 2).sum())
        self.learned_classes = self.n_classes
