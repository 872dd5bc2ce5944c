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
"""

from __future__ import annotations

import math

import numpy as np

__all__: list[str] = []


class ExpertMixture:
    """Exponential weights at the guaranteed rate and at a fast rate, and the slack between
    the mix loss and the mixture's own loss (see the module's docstring)."""

    def _mix(self) -> tuple[tuple, tuple, float]:
        """The weights at the guaranteed rate and at ``fast_rate`` (tuples of floats) and the
        slack, from the cumulative and the recent losses; cached until the next learn."""
        if self._mixture is None:
            losses, eta, fast_rate = self.cumulative_losses.tolist(), self.rate, self.fast_rate
            recent = self.recent_losses.tolist()
            low, recent_low = min(losses), min(recent)
            safe = [math.exp(-eta * (loss - low)) for loss in losses]
            fast = [math.exp(-fast_rate * (loss - recent_low)) for loss in recent]
            safe_sum, fast_sum = sum(safe), sum(fast)
            mix = low - math.log(safe_sum / len(losses)) / eta
            self._mixture = (tuple(w / safe_sum for w in safe), tuple(w / fast_sum for w in fast),
                             mix - self.cumulative_loss)
        return self._mixture

    @property
    def weights(self) -> np.ndarray:
        return np.array(self._mix()[0]) if self.experts else np.zeros(0)

    @property
    def fast_weights(self) -> np.ndarray:
        return np.array(self._mix()[1]) if self.experts else np.zeros(0)

    @property
    def slack(self) -> float:
        r""":math:`\Phi - A`, with the mix loss
        :math:`\Phi = -\frac1\eta\log\frac1N\sum_i e^{-\eta L_i}`."""
        return self._mix()[2] if self.experts else 0.0

    def _combine(self, preds: list):
        """The guaranteed average, moved toward the fast one as far as the slack allows."""
        safe, fast = self._averages(preds)
        return safe + self._share(safe, fast) * (fast - safe)

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
        """Add a step's losses: each expert's (cumulative and discounted) and the mixture's."""
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
