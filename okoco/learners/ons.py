r"""The Online Newton Step over explicit coordinates: one home of the step that PROS-N-KONS,
CON-KONS and ``Auto``'s experts take (the embedding it runs in: :mod:`okoco.learners.embedding`).

:class:`OnsHead` holds the primal ONS point :math:`u` and :math:`A^{-1}` (packed,
``okoco.linalg.PackedSymmetric``) and its step, planned (:meth:`OnsHead._ons_plan`, every
number checked finite) before anything changes, then applied (:meth:`OnsHead._ons_apply`), so
that a refused step changes nothing. ``Auto``'s experts are heads: :class:`DictionaryExpert` on a
shared :class:`~okoco.learners.embedding.SharedEmbedding`, :class:`LinearExpert` on
:math:`[1, x]`.
"""

from __future__ import annotations

import math
import threading
from numbers import Real

import numpy as np

from okoco._core import _pros, _swap
from okoco._input import reserve
from okoco._locking import Locked
from okoco._validation import Interval, Options, check_params
from okoco.learners.base import clip_excess
from okoco.learners.embedding import Embedded, SharedEmbedding, step_message
from okoco.linalg import PackedSymmetric

__all__ = ["OnsHead", "DictionaryExpert", "LinearExpert"]

# s = z^T A^{-1} z is floored before it divides the projection (a zero embedding never projects;
# one value, which the compiled loop uses too).
_MIN_S = _pros.PROJECTION_FLOOR

_NONE = np.zeros(0)  # no new coordinate (read-only)
_NONE.flags.writeable = False


class OnsHead:
    r"""The Online Newton Step over explicit coordinates :math:`z` (a mixin; module docstring).

    Its object holds ``alpha`` (:math:`A = \alpha I` on every new coordinate), ``C`` (the
    bound :math:`|z^\top u| \le C` it projects onto, unless the class names another in
    ``_ons_bound``), ``_u``
    (the ONS point before the projection, in a doubling buffer), ``_P`` (:math:`A^{-1}`,
    ``PackedSymmetric``), and the running ``online_effective_dimension``, ``log_det`` and
    ``noise_scale_sum``.
    """

    @property
    def _ons_bound(self) -> float:
        r"""The bound :math:`C` of the set :math:`|z^\top u| \le C` the step projects onto."""
        return self.C

    def _ons_predict(self, z: np.ndarray) -> float:
        """:math:`z^\\top u` over the first ``len(z)`` coordinates (the unclipped prediction)."""
        return float(z @ self._u[: z.shape[0]])

    def _ons_direction(self, z: np.ndarray) -> np.ndarray:
        """:math:`A^{-1}z` over the head's current coordinates (``len(z)`` of them)."""
        return self._P.matvec(z) if z.shape[0] else np.zeros(0)

    def _ons_extended(self, Pz: np.ndarray, s: float, values: np.ndarray):
        """``(Pz, s)`` of ``z`` extended by new coordinates of ``values`` (where
        :math:`A^{-1}` is :math:`1/\\alpha` and ``u`` is 0)."""
        scaled = values / self.alpha
        return np.concatenate([Pz, scaled]), s + float(values @ scaled)

    def _ons_gradient(self, loss, y: float, ybar: float, eta: float | None):
        """``(excess, yhat, gdot, weight)`` of the step at the unclipped prediction ``ybar``
        (``eta`` ``None``: the weight of :math:`zz^\\top` is ``loss''``)."""
        excess = clip_excess(ybar, self._ons_bound)
        yhat = ybar - excess
        gdot = float(loss.derivative(y, yhat))
        if eta is None:
            weight = float(loss.second_derivative(y, yhat))
            if not weight >= 0:
                raise ValueError(f"loss.second_derivative returned {weight!r}; it must be >= 0")
        else:
            weight = eta * gdot * gdot
        if not (math.isfinite(ybar) and math.isfinite(gdot) and math.isfinite(weight)):
            raise ValueError(step_message(y, gdot, yhat))
        return excess, yhat, gdot, weight

    def _ons_plan(self, y, Pz: np.ndarray, s: float, excess: float, gdot: float,
                  weight: float) -> tuple:
        """The step's new ``u``, the coefficient of :math:`A^{-1}`'s rank-one update and
        :math:`q = w s`, for ``Pz`` and ``s`` over ``len(Pz)`` coordinates (the head's, then
        any new ones); raises ``ValueError`` if any number it would store is not finite."""
        m_old, m = self._P.size, Pz.shape[0]
        q = weight * s
        shift = excess / max(s, _MIN_S) if excess else 0.0
        newton = gdot / (1.0 + q)
        coef = -weight / (1.0 + q)
        big = float(np.abs(Pz).max()) if m else 0.0
        top = float(np.abs(self._u[:m_old]).max()) if m_old else 0.0
        # |u_i - shift Pz_i - newton Pz_i| <= top + (|shift| + |newton|) big: every entry of
        # the new u is finite when this bound is (with a margin for rounding), and so is every
        # entry of the rank-one update when coef big^2 is (|A^{-1}| <= 1 / alpha before it)
        if not (math.isfinite(1.01 * (top + (abs(shift) + abs(newton)) * big))
                and math.isfinite(coef * big * big) and math.isfinite(q)):
            raise ValueError(
                f"the target {y!r} gives the loss derivative {gdot:g}, too large for a "
                f"second-order step at alpha={self.alpha!r} (it would store non-finite "
                "numbers); rescale the targets or raise alpha")
        u = np.zeros(m) if m > m_old else np.empty(m)
        u[:m_old] = self._u[:m_old]
        if excess:
            u -= shift * Pz
        u -= newton * Pz
        return u, coef, Pz, q

    def _ons_apply(self, plan: tuple) -> None:
        """Apply a plan of :meth:`_ons_plan` (``O(m^2)``: the rank-one update of
        :math:`A^{-1}`), growing the head by the plan's new coordinates first."""
        u, coef, Pz, q = plan
        m = u.shape[0]
        self._ons_grow(m - self._P.size)
        self._u[:m] = u
        self._P.rank_one(coef, Pz)
        self.online_effective_dimension += q / (1.0 + q)
        self.log_det += math.log1p(q)

    def _ons_drop(self, j: int, rotations: np.ndarray) -> None:
        r"""Coordinate ``j`` of the embedding leaves (:meth:`SharedEmbedding.swap_in`) and the
        last one is freed for the atom that joins in its place, compiled, ``O(m^2)``
        (``okoco._core._swap``): the coordinates rotate (``rotations``, ``(m - j - 1, 2)``
        from ``IncrementalCholesky.remove``: :math:`u \leftarrow G^\top u`,
        :math:`A^{-1} \leftarrow G^\top A^{-1} G`), the ONS point is projected onto the
        others (coordinate ``j`` dropped: the function projected onto the smaller span) and
        :math:`A` restricted to them (:math:`A'^{-1}` the Schur complement of
        :math:`A^{-1}`'s entry ``j``); the others move up one place and the last coordinate
        starts as a new one does (``u`` 0, :math:`A^{-1}` :math:`1/\alpha` there, 0 off the
        diagonal). The order stays ``m``."""
        m = self._P.size
        storage = self._P._storage()
        if self._P.is_dense:
            _swap.dense_drop(storage, m, j, rotations, self._u)
            storage[m * m - 1] = 1.0 / self.alpha
        else:
            _swap.packed_drop(storage, m, j, rotations, self._u)
            storage[m * (m + 1) // 2 - 1] = 1.0 / self.alpha

    def _ons_grow(self, n: int) -> None:
        """``n`` new coordinates: ``u`` 0 and :math:`A^{-1} = 1/\alpha` on them."""
        for _ in range(n):
            m = self._P.size
            self._P.append(np.zeros(m), 1.0 / self.alpha)
            self._u = reserve(self._u, m + 1)
            self._u[m] = 0.0

    def _ons_variance(self, s: float, residual: float, n_seen: int) -> float:
        r""":math:`\hat\tau^2(\alpha s + r + \alpha/2)`, with :math:`s = z^\top A^{-1}z`, the
        residual :math:`r = k(x,x) - z^\top z` (0 for explicit features) and
        :math:`\hat\tau^2 = (1 + \text{noise\_scale\_sum}) / (1 + t)`
        (:meth:`okoco.learners.PROSNKONS._predictive_variance`)."""
        scale = (1.0 + self.noise_scale_sum) / (1.0 + n_seen)
        return scale * self._ons_spread(s, residual)

    def _ons_noise(self, y: float, yhat: float, s: float, residual: float) -> float:
        """The a-priori error over its spread, added to ``noise_scale_sum`` by the step."""
        return (y - yhat) ** 2 / self._ons_spread(s, residual)

    def _ons_spread(self, s: float, residual: float) -> float:
        """:math:`\alpha s + r + \alpha/2`: the spread of a prediction before the noise scale."""
        return self.alpha * s + max(residual, 0.0) + 0.5 * self.alpha


class _Expert(Locked, OnsHead):
    """An ONS head that ``Auto`` mixes: validated ``alpha`` and ``eta`` (``"hessian"`` or a
    number), clipping to ``[-C, C]``, a lock of its own (as every learner has), and the step in
    two halves, :meth:`_check_step` (before anything changes) and :meth:`_apply_step`."""

    _parameter_constraints = {"alpha": [Interval(Real, 0, None, closed="neither")],
                              "eta": [Interval(Real, 0, None, closed="neither"),
                                      Options({"hessian"}, "a policy name")],
                              "C": [Interval(Real, 0, None, closed="neither")]}
    _saved_state = {"alpha": "number", "eta": "str|number", "C": "number", "loss": "loss",
                    "n_seen": "int[0,]", "_u": "array(>=ons_inverse.size) float64 as ons_point",
                    "_P": "obj:PackedSymmetric as ons_inverse",
                    "online_effective_dimension": "float", "log_det": "float",
                    "noise_scale_sum": "float", "_lock": "cache:lock"}

    def __init__(self, loss, alpha: float = 0.1, eta="hessian", C: float = 3.0):
        self.loss = loss
        self.alpha = alpha
        self.eta = eta
        self.C = C
        check_params(self)
        self._lock = threading.Lock()
        self.n_seen = 0
        self._u = np.zeros(16)
        self._P = PackedSymmetric()
        self.online_effective_dimension = self.log_det = self.noise_scale_sum = 0.0

    def get_params(self) -> dict:
        return {"loss": self.loss, "alpha": self.alpha, "eta": self.eta, "C": self.C}


    def _clip(self, z: float) -> float:
        return float(min(max(z, -self.C), self.C))

    def _head_eta(self) -> float | None:
        return None if self.eta == "hessian" else float(self.eta)

    def _coordinates(self, analysis) -> tuple:
        """``(z, new)``: the point's coordinates over the head's current ones and the values
        of its new coordinates (none, unless the step adds some)."""
        raise NotImplementedError

    def _analysis(self, z: np.ndarray, residual: float, extra) -> list:
        """``[z, ybar, residual, extra, Pz memo]``."""
        return [z, self._ons_predict(z), residual, extra, None]

    @staticmethod
    def prediction(analysis) -> float:
        return analysis[1]

    def _direction_of(self, analysis) -> np.ndarray:
        if analysis[4] is None:
            analysis[4] = self._ons_direction(analysis[0])
        return analysis[4]

    def _variance_of(self, analysis) -> float:
        z = analysis[0]
        s = max(float(z @ self._direction_of(analysis)), 0.0)
        return self._ons_variance(s, analysis[2], self.n_seen)

    def _plans(self, y: float, analysis, extensions) -> tuple:
        """The step's plan for each way the coordinates may grow (``extensions``: arrays of
        new coordinates' values), and its noise term; every plan is checked."""
        z, ybar, residual = analysis[0], analysis[1], analysis[2]
        excess, yhat, gdot, weight = self._ons_gradient(self.loss, y, ybar, self._head_eta())
        Pz = self._direction_of(analysis)
        s = max(float(z @ Pz), 0.0)
        plans = []
        for values in extensions:
            Pz_e, s_e = self._ons_extended(Pz, s, values) if values.shape[0] else (Pz, s)
            plans.append(self._ons_plan(y, Pz_e, s_e, excess, gdot, weight))
        return plans, self._ons_noise(y, yhat, s, residual)

    def _apply_plan(self, plan, noise: float) -> None:
        self._ons_apply(plan)
        self.noise_scale_sum += noise
        self.n_seen += 1


class DictionaryExpert(_Expert):
    r"""An ONS head on ``Auto``'s :class:`SharedEmbedding` (CON-KONS's step, the embedding
    shared): ridge ``alpha``, step ``eta``; it grows by a zero coordinate when an atom joins."""

    _saved_state = {"kernel": "kernel", "max_size": "int|none", "dictionary": "int[0,]"}

    def __init__(self, embedding: SharedEmbedding, loss, alpha: float = 0.1, eta="hessian",
                 C: float = 3.0):
        super().__init__(loss, alpha, eta, C)
        self.kernel = embedding._kernel  # for the leader's name
        self.max_size = embedding.max_size
        self.dictionary = 0  # which of its owner's dictionaries it is on

    def describe(self) -> str:
        return (f"DictionaryExpert(kernel={self.kernel!r}, alpha={self.alpha:g}, "
                f"eta={self.eta!r}, max_size={self.max_size!r})")

    def analyse(self, embedded: Embedded) -> list:
        h = embedded.h
        return self._analysis(h, embedded.kappa - float(h @ h), embedded)

    def _check_step(self, y: float, analysis) -> tuple:
        embedded = analysis[3]
        grow = [_NONE] if embedded.pivot is None else [_NONE, np.array([embedded.pivot])]
        return self._plans(y, analysis, grow)

    def _apply_step(self, analysis, step) -> None:
        plans, noise = step
        self._apply_plan(plans[1] if analysis[3].joined else plans[0], noise)

    @property
    def dictionary_size(self) -> int:
        return self._P.size


class LinearExpert(_Expert):
    r"""The ONS head on the explicit features :math:`z = [1, x]` (a linear model with an
    intercept; ``O(d^2)`` a step); a feature first seen adds a coordinate.

    ``bound`` is the set :math:`|z^\top u| \le` ``bound`` that the step projects onto and
    takes its gradient in (``None``: ``C``, as a file saved before the bound existed holds;
    ``Auto`` gives :math:`10C`, :data:`okoco.learners.auto.LINEAR_BOUND`). The predictions
    given to the mixture are clipped to ``[-C, C]`` either way. A linear function's values
    grow with the distance to its zero set, so a bound caps its slope by the farthest points:
    on river's ``Hyperplane`` (d = 10, 5% label noise, the logistic loss) the head with bound
    3 made 7.6-8.3% mistakes per 10,000 steps, with bound 10 4.9-5.8%, bound 30 or 1,000
    4.7-5.8%, river's ``LogisticRegression`` 5.5-6.4%.

    ``eta=0`` gives the matrix no curvature (:math:`A = \alpha I` for ever): the step is then
    online gradient descent :math:`u \leftarrow u - \ell'(\hat y)\,z/\alpha` with the
    constant step :math:`1/\alpha` (Zinkevich 2003), which keeps up with a drifting concept
    (with ``alpha=100`` and a bound it does not reach, it is river's ``LogisticRegression``
    step for step on the logistic loss, its default ``SGD(0.01)``).
    """

    max_size = None
    _parameter_constraints = {**_Expert._parameter_constraints,
                              "eta": [Interval(Real, 0, None, closed="left"),
                                      Options({"hessian"}, "a policy name")],
                              "bound": [None, Interval(Real, 0, None, closed="neither")]}
    _saved_state = {"bound": "opt number|none"}
    bound = None  # a file saved before the bound existed: the projection onto |z.u| <= C

    def __init__(self, loss, alpha: float = 0.1, eta="hessian", C: float = 3.0,
                 bound: float | None = None):
        self.bound = bound
        super().__init__(loss, alpha, eta, C)

    def get_params(self) -> dict:
        return {**super().get_params(), "bound": self.bound}

    @property
    def _ons_bound(self) -> float:
        return self.C if self.bound is None else self.bound

    def describe(self) -> str:
        return f"LinearExpert(alpha={self.alpha:g}, eta={self.eta!r}, bound={self.bound!r})"

    def analyse(self, v: np.ndarray) -> list:
        z = np.concatenate([[1.0], v])
        m = self._P.size
        if z.shape[0] > m:  # features first seen now: new coordinates
            known, new = z[:m], z[m:]
        else:  # features absent from this row are 0
            known, new = (z if z.shape[0] == m else np.pad(z, (0, m - z.shape[0]))), _NONE
        return self._analysis(known, 0.0, new)

    def _check_step(self, y: float, analysis) -> tuple:
        return self._plans(y, analysis, [analysis[3]])

    def _apply_step(self, analysis, step) -> None:
        plans, noise = step
        self._apply_plan(plans[0], noise)

    @property
    def dictionary_size(self) -> int:
        return self._P.size
