r"""The exponentially weighted mixture of experts that ``Auto`` and its multiclass form share.

An object with this mixin holds ``experts``, their ``cumulative_losses`` and ``recent_losses``
(arrays, one entry an expert), its own ``cumulative_loss``, the guaranteed ``rate``,
``fast_rate``, ``fast_discount`` and a ``_mixture`` cache (``None``: rebuilt from the rest).
The mixin gives the weights at both rates, the slack :math:`\Phi - A`
(:mod:`okoco.learners.auto`), the prediction :math:`\bar y + \lambda(\tilde y - \bar y)` for
predictions that are floats (``Auto``) or arrays (a score a class: the multiclass form), the
leading expert and its window. The owner says how far the slack lets the prediction move
(``_share``: the worst case of its own loss) through :meth:`_spend` (or
:meth:`_share_at_ends`, that worst case over the ends of the target range, with the losses
evaluated in the same compiled call), and adds each step's losses (:meth:`_loss_values`) with
:meth:`_record`. The per-step work (weights, slack, averages, share, record) is
compiled, one call each, on a typed state kept in the ``_mixture`` cache
(``okoco._core._mixture.Mixture``, whose docstring has the formulas): the owner's loss arrays
are the state's own, updated in place.

The guaranteed weights are those of the cumulative losses at the current ``rate`` (the mix loss
in closed form) unless the owner has a ``switch_rate`` :math:`\alpha > 0`: then they are fixed
share's (Herbster & Warmuth 1998), a recursion whose state the owner keeps and saves,
``log_weights`` (the next step's, normalized; uniform before the first step) and ``mix_loss``
(:math:`\Phi`), both advanced at each :meth:`_record`. The recursion needs
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

import numpy as np

from okoco._core import _loss
from okoco._core._mixture import Mixture
from okoco.learners._codes import compiled_loss

__all__: list[str] = []


class ExpertMixture:
    """Exponential weights at the guaranteed rate and at a fast rate, and the slack between
    the mix loss and the mixture's own loss (see the module's docstring)."""

    #: Fixed share's switch rate (none: the weights of the cumulative losses), the shared
    #: weights' logarithms and the mix loss (an owner with a switch rate keeps the last two).
    switch_rate = 0.0
    log_weights = np.zeros(0)
    mix_loss = 0.0

    def _state(self) -> Mixture:
        """The compiled state (``okoco._core._mixture.Mixture``) over the owner's losses, kept
        in the ``_mixture`` cache (a fresh one after a reset or a load adopts the arrays)."""
        if self._mixture is None:
            self._mixture = Mixture()
        return self._mixture

    def _mix(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The weights at the guaranteed rate and at ``fast_rate`` (new arrays) and the slack,
        from the losses (and with ``switch_rate`` the shared weights and mix loss)."""
        return self._state().weights(self)

    @property
    def weights(self) -> np.ndarray:
        return self._mix()[0] if self.experts else np.zeros(0)

    @property
    def fast_weights(self) -> np.ndarray:
        return self._mix()[1] if self.experts else np.zeros(0)

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
        safe, fast, _ = self._mix()
        share = self._share(*self._averages(preds))
        return (safe + share * (fast - safe)).tolist()

    def _averages(self, preds: list) -> tuple:
        """The guaranteed and the fast weighted averages of the experts' predictions."""
        return self._state().averages(self, preds)

    def _spend(self, worst: float) -> float:
        """The share of the way to the fast average whose worst-case excess loss ``worst``
        (over the targets the guarantee covers) the slack affords, in ``[0, 1]``."""
        return self._state().spend(self, worst)

    def _loss_values(self, y, predictions) -> np.ndarray:
        """The owner's loss (``_loss``) at the target ``y`` (a real, or one a prediction) for
        each of the ``predictions`` (a list or tuple of floats): a new array. okoco's own
        losses are evaluated by one compiled call (``okoco._core._loss.values``, the code of
        their ``value``, so the same bits), any other by its ``value``."""
        code = compiled_loss(self._loss)
        if code is None:
            return self._loss.value(y, np.array(predictions))
        return _loss.values(code, y, predictions)

    def _share_at_ends(self, ends: np.ndarray, safe: float, fast: float) -> float:
        r"""The share of the way from the guaranteed average ``safe`` toward ``fast`` whose
        worst excess loss over the target ends ``ends`` (four: those for ``fast``, ``fast``,
        ``safe``, ``safe``), :math:`\max(\ell(e_0, \tilde y) - \ell(e_2, \bar y),
        \ell(e_1, \tilde y) - \ell(e_3, \bar y))`, the slack affords (compiled,
        ``Mixture.share_of``; for okoco's own losses with their values, ``Mixture.share_at``)."""
        code, state = compiled_loss(self._loss), self._state()
        if code is not None:
            return state.share_at(self, code, ends, safe, fast)
        return state.share_of(self, self._loss_values(ends, (fast, fast, safe, safe)))

    def _record(self, expert_losses: np.ndarray, own_loss: float) -> None:
        """Add a step's losses: each expert's (cumulative and discounted) and the mixture's
        (and with ``switch_rate`` fixed share's step), in place."""
        self._state().record(self, expert_losses, own_loss)

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
