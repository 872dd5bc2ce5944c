r"""The exponentially weighted mixture of experts that ``Auto`` and its multiclass form share.

An object with this mixin holds ``experts``, their ``cumulative_losses`` and ``recent_losses``
(arrays, one entry an expert), its own ``cumulative_loss``, the guaranteed ``rate``,
``fast_rate``, ``fast_discount`` and a ``_mixture`` cache (``None`` whenever a loss changes).
The mixin gives the weights at both rates, the slack :math:`\Phi - A`
(:mod:`okoco.learners.auto`), the prediction :math:`\bar y + \lambda(\tilde y - \bar y)` for
predictions that are floats (``Auto``) or arrays (a score a class: the multiclass form), the
leading expert and its window. The owner says how far the slack lets the prediction move
(``_share``: the worst case of its own loss) through :meth:`_spend`, and adds each step's
losses with :meth:`_record`.

The guaranteed weights are those of the cumulative losses at the current ``rate`` (the mix loss
in closed form) unless the owner has a ``switch_rate`` :math:`\alpha > 0`: then they are fixed
share's (Herbster & Warmuth 1998), a recursion whose state the owner keeps and saves,
``log_weights`` (the next step's, normalized; uniform before the first step) and ``mix_loss``
(:math:`\Phi`), both advanced by :meth:`_track` at each :meth:`_record`. The recursion needs
one rate for every step (the multiclass form's rate changes with the classes: it has none).

Fixed share's mix loss is the mix loss of every sequence of experts: by induction over the
steps, :math:`\Phi_T = -\frac1\eta\log\sum_{i_{1:T}}\pi(i_{1:T})e^{-\eta\sum_t
\ell_t(\hat y_{t,i_t})}` under the Markov prior :math:`\pi` that starts uniform, stays with
probability :math:`1-\alpha+\alpha/N` and moves to each other expert with :math:`\alpha/N`.
Keeping one term of the sum, :math:`\Phi_T \le \sum_t \ell_t(\hat y_{t,i_t}) +
\frac1\eta[\log N + k\log(N/\alpha) + (T-1-k)\log\frac1{1-\alpha+\alpha/N}]` for a
sequence with :math:`k` switches; with the owner's :math:`A_T \le \Phi_T` it is the regret
bound of :mod:`okoco.learners.auto` (tests/test_mixture.py enumerates the paths).
"""

from __future__ import annotations

import math

import numpy as np

__all__: list[str] = []


class ExpertMixture:
    """Exponential weights at the guaranteed rate and at a fast rate, and the slack between
    the mix loss and the mixture's own loss (see the module's docstring)."""

    #: Fixed share's switch rate (none: the weights of the cumulative losses), the shared
    #: weights' logarithms and the mix loss (an owner with a switch rate keeps the last two).
    switch_rate = 0.0
    log_weights = np.zeros(0)
    mix_loss = 0.0

    def _mix(self) -> tuple[tuple, tuple, float]:
        """The weights at the guaranteed rate and at ``fast_rate`` (tuples of floats) and the
        slack, from the losses (and with ``switch_rate`` the shared weights and mix loss);
        cached until the next learn."""
        if self._mixture is None:
            fast_rate, recent = self.fast_rate, self.recent_losses.tolist()
            recent_low = min(recent)
            fast = [math.exp(-fast_rate * (loss - recent_low)) for loss in recent]
            fast_sum = sum(fast)
            safe, mix = self._guaranteed()
            self._mixture = (safe, tuple(w / fast_sum for w in fast), mix - self.cumulative_loss)
        return self._mixture

    def _guaranteed(self) -> tuple[tuple, float]:
        r"""The weights at the guaranteed rate and the mix loss :math:`\Phi`: with no
        ``switch_rate`` in closed form from the cumulative losses (at the current rate), with
        one the fixed-share weights and mix loss kept by :meth:`_track`."""
        if self.switch_rate:
            safe = np.exp(self._current_log_weights())
            return tuple((safe / safe.sum()).tolist()), self.mix_loss
        losses, eta = self.cumulative_losses.tolist(), self.rate
        low = min(losses)
        safe = [math.exp(-eta * (loss - low)) for loss in losses]
        safe_sum = sum(safe)
        return (tuple(w / safe_sum for w in safe),
                low - math.log(safe_sum / len(losses)) / eta)

    def _current_log_weights(self) -> np.ndarray:
        """The fixed-share weights' logarithms: the uniform prior until the first step."""
        if self.log_weights.size:
            return self.log_weights
        n = self.cumulative_losses.size
        return np.full(n, -math.log(n))

    def _track(self, expert_losses: np.ndarray) -> None:
        r"""Fixed share's step (Herbster & Warmuth 1998): the weights' posterior
        :math:`v_i \propto w_i e^{-\eta\ell_i}`, the mix loss's increment
        :math:`-\frac1\eta\log\sum_i w_i e^{-\eta\ell_i}`, and the next weights
        :math:`(1-\alpha)v_i + \alpha/N` (``switch_rate`` :math:`\alpha`), in logarithms."""
        eta, alpha = self.rate, self.switch_rate
        joint = self._current_log_weights() - eta * expert_losses
        top = float(joint.max())
        normalizer = top + math.log(float(np.exp(joint - top).sum()))
        self.mix_loss = self.mix_loss - normalizer / eta
        self.log_weights = np.logaddexp(math.log1p(-alpha) + (joint - normalizer),
                                        math.log(alpha / joint.size))

    @property
    def weights(self) -> np.ndarray:
        return np.array(self._mix()[0]) if self.experts else np.zeros(0)

    @property
    def fast_weights(self) -> np.ndarray:
        return np.array(self._mix()[1]) if self.experts else np.zeros(0)

    @property
    def slack(self) -> float:
        r""":math:`\Phi - A`, with the mix loss
        :math:`\Phi = -\frac1\eta\log\frac1N\sum_i e^{-\eta L_i}` (with a ``switch_rate``,
        fixed share's ``mix_loss``)."""
        return self._mix()[2] if self.experts else 0.0

    def _combine(self, preds: list):
        """The guaranteed average, moved toward the fast one as far as the slack allows."""
        safe, fast = self._averages(preds)
        return safe + self._share(safe, fast) * (fast - safe)

    def _prediction_weights(self, preds: list) -> list:
        """The weights the prediction gives the experts: the guaranteed ones moved toward the
        fast ones by the share the slack allows (:meth:`_combine`)."""
        safe_weights, fast_weights, _ = self._mix()
        share = self._share(*self._averages(preds))
        return [safe + share * (fast - safe) for safe, fast in zip(safe_weights, fast_weights)]

    def _averages(self, preds: list) -> tuple:
        """The guaranteed and the fast weighted averages of the experts' predictions."""
        safe_weights, fast_weights, _ = self._mix()
        return (sum(w * p for w, p in zip(safe_weights, preds)),
                sum(w * p for w, p in zip(fast_weights, preds)))

    def _spend(self, worst: float) -> float:
        """The share of the way to the fast average whose worst-case excess loss ``worst``
        (over the targets the guarantee covers) the slack affords, in ``[0, 1]``."""
        slack = max(self._mix()[2], 0.0)
        return 1.0 if worst <= slack else slack / worst

    def _record(self, expert_losses: np.ndarray, own_loss: float) -> None:
        """Add a step's losses: each expert's (cumulative and discounted) and the mixture's
        (and with ``switch_rate`` the fixed-share step, :meth:`_track`)."""
        if self.switch_rate:
            self._track(expert_losses)
        self.cumulative_losses = self.cumulative_losses + expert_losses
        self.recent_losses = self.fast_discount * self.recent_losses + expert_losses
        self.cumulative_loss += float(own_loss)
        self._mixture = None

    @property
    def dictionary_size(self) -> int:
        """Points in the leading expert's window (every expert stores every point of it)."""
        if not self.experts:
            return 0
        return self.experts[int(np.argmin(self.cumulative_losses))].dictionary_size

    @property
    def leader(self) -> str | None:
        if not self.experts:
            return None
        best = self.experts[int(np.argmin(self.cumulative_losses))]
        if hasattr(best, "describe"):  # an ONS head (okoco.learners.embedding)
            return best.describe()
        # a KONS (a multiclass expert: one per class), or a Sketched-KONS (KORS's beta)
        name, beta = ("SketchedKONS", f", beta={best.beta:g}") if hasattr(best, "beta") else \
            ("KONS", "")
        return (f"{name}(kernel={best.kernel!r}, alpha={best.alpha:g}, eta={best.eta!r}{beta}, "
                f"max_size={best.max_size!r})")
