r"""The per-step work of the experts' mixture (``okoco.learners._mixture.ExpertMixture``),
compiled: the weights at the guaranteed rate and at the fast rate, the slack :math:`\Phi - A`,
the two weighted averages of the experts' predictions, the share :math:`\lambda` the slack
affords (from the worst excess loss, or from the loss at the ends of the target range: okoco's
compiled losses, ``_losses.pxd``), and the record of a step's losses with fixed share's step.

:class:`Mixture` is a typed state over its owner's saved attributes (the owner is passed to
each call, so no reference cycle): the arrays ``cumulative_losses``, ``recent_losses`` and
``log_weights`` are the state's own (adopted once, as copies, whenever the owner holds other
arrays: a reset, a first step, a load; the owner's attributes are then the state's arrays,
updated in place), the scalars ``cumulative_loss`` and ``mix_loss`` and the rates stay the
owner's, read (and written) at each call. The formulas, with :math:`N` experts, cumulative
losses :math:`L_i`, discounted losses :math:`R_i`, the mixture's own :math:`A`:

- fast weights :math:`\tilde w_i \propto e^{-\tilde\eta(R_i - \min_j R_j)}`;
- guaranteed weights without a switch rate :math:`w_i \propto e^{-\eta(L_i - \min_j L_j)}`,
  mix loss :math:`\Phi = \min_j L_j - \frac1\eta\log\frac1N\sum_i e^{-\eta(L_i-\min_j L_j)}`;
  with a switch rate :math:`\alpha` the owner's ``log_weights`` normalized
  (:math:`-\log N` each before the first step) and its ``mix_loss``;
- fixed share's step (Herbster & Warmuth 1998) on losses :math:`\ell_i`:
  :math:`j_i = \log w_i - \eta\ell_i`, :math:`\nu = \log\sum_i e^{j_i}` (shifted by the
  largest), :math:`\Phi \leftarrow \Phi - \nu/\eta`, :math:`\log w_i \leftarrow
  \operatorname{logaddexp}(\log(1-\alpha) + j_i - \nu, \log(\alpha/N))` (numpy's
  ``logaddexp`` written out);
- :math:`L_i \leftarrow L_i + \ell_i`, :math:`R_i \leftarrow \gamma R_i + \ell_i`,
  :math:`A \leftarrow A + \ell`.

Sums run left to right in the experts' order, as Python's ``sum`` did (numpy's pairwise sum of
the fixed-share terms for :math:`N \ge 8` and numpy's vectorized ``exp`` may differ in the last
bits: results agree to about 1e-15 relative).
"""

from libc.math cimport exp, log, log1p, M_LN2

import numpy as np

from okoco._core._losses cimport value


cdef inline double _logaddexp(double x, double y) noexcept nogil:
    """numpy's ``logaddexp`` (``npy_logaddexp``), term for term."""
    cdef double tmp
    if x == y:
        return x + M_LN2
    tmp = x - y
    if tmp > 0:
        return x + log1p(exp(-tmp))
    if tmp <= 0:
        return y + log1p(exp(tmp))
    return tmp


cdef double _normalized_exp(const double* values, double rate, double* weights,
                            Py_ssize_t n) noexcept nogil:
    r"""``weights`` :math:`\propto e^{-\text{rate}(v_i - \min v)}` (summing to 1); returns
    :math:`\log\frac1n\sum_i e^{-\text{rate}(v_i - \min v)}` shifted back:
    :math:`\min v - \frac1{\text{rate}}\log(\frac1n\sum_i \cdot)`."""
    cdef Py_ssize_t i
    cdef double low = values[0], total = 0.0
    for i in range(1, n):
        if values[i] < low:
            low = values[i]
    for i in range(n):
        weights[i] = exp(-rate * (values[i] - low))
        total += weights[i]
    for i in range(n):
        weights[i] = weights[i] / total
    return low - log(total / n) / rate


cdef class Mixture:
    """The mixture's typed state over an owner's attributes (the module's docstring). Every
    method takes the owner; an unbound state (new, or unpickled: a cache) adopts the owner's
    arrays at its first call."""

    cdef object _cumulative_array, _recent_array, _log_array
    cdef double[::1] cumulative, recent, log_weights, safe, fast, joint
    cdef Py_ssize_t n
    cdef double slack
    cdef bint fresh

    def __reduce__(self):
        return Mixture, ()  # a cache: rebuilt from the owner's attributes

    cdef int _bind(self, owner) except -1:
        """Adopt the owner's loss arrays (copies, set back on the owner) unless it holds the
        state's own."""
        cdef object cumulative = owner.cumulative_losses, recent = owner.recent_losses
        if cumulative is self._cumulative_array and recent is self._recent_array:
            return 0
        cumulative = np.array(cumulative, dtype=np.float64, copy=True)
        recent = np.array(recent, dtype=np.float64, copy=True)
        if cumulative.ndim != 1 or recent.shape != cumulative.shape:
            raise ValueError(f"cumulative_losses and recent_losses must be vectors of one "
                             f"length, not of shapes {cumulative.shape} and {recent.shape}")
        owner.cumulative_losses, owner.recent_losses = cumulative, recent
        self._cumulative_array, self._recent_array = cumulative, recent
        self.cumulative, self.recent = cumulative, recent
        self.n = cumulative.shape[0]
        self.safe, self.fast, self.joint = np.empty(self.n), np.empty(self.n), np.empty(self.n)
        self._log_array = None
        self.fresh = False
        return 0

    cdef bint _bind_log_weights(self, owner, bint start) except -1:
        """Whether the owner holds fixed share's weights (``log_weights`` not empty), adopting
        them (a copy, set back on it) unless they are the state's own; with ``start``, an
        owner that holds none gets the uniform prior :math:`-\\log N` each."""
        cdef object log_weights = owner.log_weights
        if log_weights is self._log_array:
            return True
        if log_weights.size == 0:
            if not start:
                return False
            log_weights = np.full(self.n, -log(self.n) if self.n else 0.0)
        else:
            log_weights = np.array(log_weights, dtype=np.float64, copy=True)
        if log_weights.shape != (self.n,):
            raise ValueError(f"log_weights must have {self.n} entries (one an expert), not "
                             f"shape {log_weights.shape}")
        owner.log_weights = self._log_array = log_weights
        self.log_weights = log_weights
        return True

    cdef int _refresh(self, owner) except -1:
        """The weights at both rates and the slack, unless they are current."""
        cdef Py_ssize_t i
        cdef double mix, total = 0.0
        cdef bint uniform
        self._bind(owner)
        if self.fresh:
            return 0
        if self.n:
            _normalized_exp(&self.recent[0], owner.fast_rate, &self.fast[0], self.n)
            if owner.switch_rate:
                uniform = not self._bind_log_weights(owner, False)  # (before the first step)
                for i in range(self.n):
                    self.safe[i] = exp(-log(self.n) if uniform else self.log_weights[i])
                    total += self.safe[i]
                for i in range(self.n):
                    self.safe[i] = self.safe[i] / total
                mix = owner.mix_loss
            else:
                mix = _normalized_exp(&self.cumulative[0], owner.rate, &self.safe[0], self.n)
            self.slack = mix - owner.cumulative_loss
        else:
            self.slack = 0.0
        self.fresh = True
        return 0

    def weights(self, owner):
        """``(guaranteed weights, fast weights, slack)``: two new arrays and a float."""
        self._refresh(owner)
        return np.array(self.safe), np.array(self.fast), self.slack

    def averages(self, owner, preds):
        """The guaranteed and the fast weighted averages of the experts' predictions
        ``preds`` (one a expert: floats, or equal-length vectors: the class scores of the
        multiclass form)."""
        cdef Py_ssize_t i, c, width
        cdef double p, safe_sum = 0.0, fast_sum = 0.0, w_safe, w_fast
        cdef const double[::1] scores
        cdef double[::1] safe_out, fast_out
        self._refresh(owner)
        if len(preds) != self.n:
            raise ValueError(f"averages: {len(preds)} predictions for {self.n} experts")
        if self.n == 0 or isinstance(preds[0], float):
            for i in range(self.n):
                p = preds[i]
                safe_sum += self.safe[i] * p
                fast_sum += self.fast[i] * p
            return safe_sum, fast_sum
        width = len(preds[0])
        safe_result, fast_result = np.zeros(width), np.zeros(width)
        safe_out, fast_out = safe_result, fast_result
        for i in range(self.n):
            scores = np.ascontiguousarray(preds[i], dtype=np.float64)
            if scores.shape[0] != width:
                raise ValueError(f"averages: expert {i} gives {scores.shape[0]} scores, "
                                 f"expert 0 {width}")
            w_safe, w_fast = self.safe[i], self.fast[i]
            for c in range(width):
                safe_out[c] += w_safe * scores[c]
                fast_out[c] += w_fast * scores[c]
        return safe_result, fast_result

    def spend(self, owner, double worst):
        """The share of the way to the fast average whose worst-case excess loss ``worst``
        the slack affords, in ``[0, 1]``: 1 if ``worst`` is within the slack, else
        slack / worst (a negative slack counts as none)."""
        cdef double slack
        self._refresh(owner)
        slack = self.slack if self.slack > 0.0 else 0.0
        return 1.0 if worst <= slack else slack / worst

    def share_of(self, owner, const double[::1] values):
        """The share of the way from the guaranteed average toward the fast one that the
        slack affords (:meth:`spend`) given the losses ``values`` :math:`=
        [\ell(e_0, \tilde y), \ell(e_1, \tilde y), \ell(e_2, \bar y), \ell(e_3, \bar y)]` at
        the ends :math:`e` of the target range (``Auto._share``): the worst excess
        :math:`\max(v_0 - v_2, v_1 - v_3)` (Python's ``max``: the first unless the second
        is larger)."""
        if values.shape[0] != 4:
            raise ValueError(f"share_of: {values.shape[0]} losses, not 4")
        return self._share(owner, values[0], values[1], values[2], values[3])

    def share_at(self, owner, int loss, const double[::1] ends, double safe, double fast):
        """:meth:`share_of` the losses of the loss coded ``loss`` (``_losses.pxd``, as
        ``okoco._core._loss.evaluate`` computes them) at the four target ``ends`` for the
        predictions ``fast``, ``fast``, ``safe``, ``safe``."""
        if ends.shape[0] != 4:
            raise ValueError(f"share_at: {ends.shape[0]} target ends, not 4")
        return self._share(owner, value(loss, ends[0], fast), value(loss, ends[1], fast),
                           value(loss, ends[2], safe), value(loss, ends[3], safe))

    cdef double _share(self, owner, double fast_low, double fast_high, double safe_low,
                       double safe_high) except? -1.0:
        cdef double worst = fast_low - safe_low, other = fast_high - safe_high
        if other > worst:
            worst = other
        return self.spend(owner, worst)

    def record(self, owner, const double[::1] losses, double own):
        """Add a step's losses: the experts' ``losses`` (cumulative and discounted: the
        owner's ``fast_discount``) and the mixture's ``own``, with fixed share's step first if
        the owner has a ``switch_rate`` (at its ``rate``). A refused call changes nothing."""
        cdef Py_ssize_t i
        cdef double discount, eta, alpha
        self._bind(owner)
        if losses.shape[0] != self.n:
            raise ValueError(f"record: {losses.shape[0]} losses for {self.n} experts")
        discount = owner.fast_discount
        alpha = owner.switch_rate
        if alpha:
            eta = owner.rate
            self._bind_log_weights(owner, True)
            owner.mix_loss = self._track(losses, eta, alpha, owner.mix_loss)
        for i in range(self.n):
            self.cumulative[i] = self.cumulative[i] + losses[i]
            self.recent[i] = discount * self.recent[i] + losses[i]
        owner.cumulative_loss = owner.cumulative_loss + own
        self.fresh = False

    cdef double _track(self, const double[::1] losses, double eta, double alpha,
                       double mix_loss) noexcept:
        """Fixed share's step on ``log_weights`` in place; returns the new mix loss."""
        cdef Py_ssize_t i, n = self.n
        cdef double top, total = 0.0, normalizer, keep = log1p(-alpha), spread = log(alpha / n)
        if n == 0:
            return mix_loss
        for i in range(n):
            self.joint[i] = self.log_weights[i] - eta * losses[i]
        top = self.joint[0]
        for i in range(1, n):
            if self.joint[i] > top:
                top = self.joint[i]
        for i in range(n):
            total += exp(self.joint[i] - top)
        normalizer = top + log(total)
        for i in range(n):
            self.log_weights[i] = _logaddexp(keep + (self.joint[i] - normalizer), spread)
        return mix_loss - normalizer / eta
