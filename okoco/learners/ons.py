r"""The Online Newton Step over explicit coordinates: one home of the step that PROS-N-KONS,
CON-KONS and ``Auto``'s experts take (the embedding it runs in: :mod:`okoco.learners.embedding`).

:class:`OnsHead` holds the primal ONS point :math:`u` and :math:`A^{-1}` (packed,
``okoco.linalg.PackedSymmetric``); its step is compiled, once, on a typed state over those
buffers (``okoco._core._ons.OnsState``): the gradient, :math:`A^{-1}z`, a check for each way
the coordinates may grow (every number it would store finite) before anything changes, then
the step, so that a refused step changes nothing. Python validates and words the statuses as
errors. ``Auto``'s experts are heads: :class:`DictionaryExpert` on a shared
:class:`~okoco.learners.embedding.SharedEmbedding`, :class:`LinearExpert` on :math:`[1, x]`.
"""

from __future__ import annotations

import threading
from numbers import Real
from operator import itemgetter

import numpy as np

from okoco._core import _heads, _ons, _swap
from okoco._input import reserve
from okoco._locking import Locked
from okoco._validation import Interval, Options, check_params
from okoco.learners._codes import compiled_loss
from okoco.learners.base import StepProtocol
from okoco.learners.embedding import _NONE, SharedEmbedding, step_message
from okoco.linalg import PackedSymmetric, ScaledIdentity

__all__ = ["OnsHead", "DictionaryExpert", "LinearExpert", "HeadAnalysis", "HeadStep"]

#: A head with ``full_alpha`` switches to first-order steps once its dictionary is full and it
#: has taken this many times ``max_size`` steps (:class:`DictionaryExpert`).
FULL_AFTER = 10


class OnsHead:
    r"""The Online Newton Step over explicit coordinates :math:`z` (a mixin; module docstring).

    Its object holds ``alpha`` (:math:`A = \alpha I` on every new coordinate), ``C`` (the
    bound :math:`|z^\top u| \le C` it projects onto, unless the class names another in
    ``_ons_bound``), ``_u`` (the ONS point before the projection, in a doubling buffer), ``_P``
    (:math:`A^{-1}`: a ``PackedSymmetric``, or a ``ScaledIdentity`` :math:`I/\alpha` while the
    steps have no curvature, ``eta = 0``: first-order steps, ``O(m)`` each and no ``m x m``
    storage), the running ``online_effective_dimension``,
    ``log_det`` and ``noise_scale_sum``, and ``_ons``, the compiled state over ``_u`` and
    ``_P`` (a cache, bound again when they grow or are replaced).
    """

    _ons = None  # the compiled state (a cache, never saved)

    @property
    def _ons_bound(self) -> float:
        r"""The bound :math:`C` of the set :math:`|z^\top u| \le C` the step projects onto."""
        return self.C

    @property
    def _ons_loss(self):
        """The loss object of the step."""
        return self._loss

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_ons", None)  # a cache over _u and _P
        return state

    def _ons_state(self, hessian: bool) -> _ons.OnsState:
        """The compiled state over ``_u`` and ``_P``, bound again after either grew or was
        replaced."""
        state, P, u = self._ons, self._P, self._u
        if state is None:
            code = compiled_loss(self._ons_loss)
            state = self._ons = _ons.OnsState(float(self.alpha), float(self._ons_bound),
                                              -1 if code is None else code, hessian)
        if type(P) is ScaledIdentity:
            if state.u_obj is not u or state.m != P.size or state.P_obj is not P:
                state.bind_scaled(P, P.scale, P.size, u)
        elif state.u_obj is not u or state.m != P.size or state.P_obj is not P.buffer:
            state.bind(P.buffer, P.storage(), P.size, P.is_dense, u)
        if state.hessian != hessian:
            state.retune(float(self.alpha), float(self._ons_bound), state.loss, hessian)
        return state

    def _ons_predict(self, z: np.ndarray) -> float:
        r""":math:`z^\top u` over the first ``len(z)`` coordinates (the unclipped prediction;
        compiled, ``okoco._core._heads.predict``)."""
        return _heads.predict(z, self._u)

    def _ons_direction(self, z: np.ndarray, hessian: bool) -> tuple[np.ndarray, float]:
        r"""``(A^{-1}z, s)``, :math:`s = \max(z^\top A^{-1} z, 0)`, over the head's current
        coordinates (``len(z)`` of them)."""
        return self._ons_state(hessian).direction(z)

    def _ons_refusal(self, state, y: float, status: int) -> str:
        """The error of a refused step, from its status (``okoco._core._ons``)."""
        if status == _ons.NEGATIVE:
            return f"loss.second_derivative returned {state.weight!r}; it must be >= 0"
        if status == _ons.NOT_FINITE:
            return step_message(y, state.gdot, state.yhat)
        return (f"the target {y!r} gives the loss derivative {state.gdot:g}, too large for a "
                f"second-order step at alpha={self.alpha!r} (it would store non-finite "
                "numbers); rescale the targets or raise alpha")

    def _ons_plan(self, y: float, z: np.ndarray, ybar: float, eta: float | None,
                  new: np.ndarray, optional: bool) -> _ons.OnsState:
        r"""The gradient, :math:`A^{-1}z` and the check, in the state (``OnsState.plan``), for
        the step with the new coordinates ``new`` (and also without them if ``optional``: an
        atom that may not join); raises ``ValueError`` if it would not be usable."""
        state = self._ons_state(eta is None)
        status = state.plan(z, y, ybar, eta or 0.0, new, optional)
        if status == _ons.NEED_DERIVATIVE:  # a loss without a compiled form feeds the step
            status = self._ons_feed(state, y, z, eta, new, optional)
        if status == _ons.CURVED:  # a curved step on the scalar I/alpha: the full matrix first
            self._P = self._P.full()
            return self._ons_plan(y, z, ybar, eta, new, optional)
        if status:
            raise ValueError(self._ons_refusal(state, y, status))
        return state

    def _ons_feed(self, state, y: float, z: np.ndarray, eta: float | None, new: np.ndarray,
                  optional: bool) -> int:
        """The status of a step whose loss has no compiled form (``NEED_DERIVATIVE``): its
        derivatives at ``yhat`` fed to the state, then the step prepared."""
        loss, yhat = self._ons_loss, state.yhat
        second = float(loss.second_derivative(y, yhat)) if eta is None else 0.0
        status = state.feed(float(loss.derivative(y, yhat)), second, eta or 0.0)
        return status or state.prepare(z, new, optional)

    def _ons_commit(self, state, y: float, residual: float, n_new: int) -> None:
        """The planned step (:meth:`_ons_plan`), with its ``n_new`` new coordinates (0, or all
        of those planned), grown first."""
        if n_new:
            self._ons_grow(n_new)
            state = self._ons_state(state.hessian)
        state.commit(y, residual, n_new)
        self.online_effective_dimension += state.gained_dimension
        self.log_det += state.gained_log_det
        self.noise_scale_sum += state.noise

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
        P = self._ons_inverse()
        m = P.size
        if type(P) is ScaledIdentity:  # G^T (cI) G = cI, its Schur complements cI: u alone
            _swap.vector_drop(m, j, rotations, self._u)
            return
        storage = P.storage()
        if P.is_dense:
            _swap.dense_drop(storage, m, j, rotations, self._u)
            storage[m * m - 1] = 1.0 / self.alpha
        else:
            _swap.packed_drop(storage, m, j, rotations, self._u)
            storage[m * (m + 1) // 2 - 1] = 1.0 / self.alpha

    def _ons_grow(self, n: int) -> None:
        r"""``n`` new coordinates: ``u`` 0 and :math:`A^{-1} = 1/\alpha` on them."""
        P = self._ons_inverse()
        for _ in range(n):
            m = P.size
            P.append(np.zeros(m), 1.0 / self.alpha)
            self._u = reserve(self._u, m + 1)
            self._u[m] = 0.0

    def _ons_inverse(self) -> PackedSymmetric | ScaledIdentity:
        r"""``_P``, made a full ``PackedSymmetric`` first if it is a ``ScaledIdentity`` whose
        scalar is not the :math:`1/\alpha` a new or freed coordinate takes (``alpha`` changed
        since). The matrix is the same either way; a curved step (``eta`` "hessian" or
        positive) turns it full in :meth:`_ons_plan`, on the compiled step's ``CURVED``."""
        P = self._P
        if type(P) is ScaledIdentity and P.scale != 1.0 / self.alpha:
            P = self._P = P.full()
        return P

    def _ons_variance(self, s: float, residual: float, n_seen: int) -> float:
        r""":math:`\hat\tau^2(\alpha s + r + \alpha/2)`, with :math:`s = z^\top A^{-1}z`, the
        residual :math:`r = k(x,x) - z^\top z` (0 for explicit features) and
        :math:`\hat\tau^2 = (1 + \text{noise\_scale\_sum}) / (1 + t)`
        (:meth:`okoco.learners.PROSNKONS._predictive_variance`)."""
        scale = (1.0 + self.noise_scale_sum) / (1.0 + n_seen)
        return scale * _ons.predictive_spread(self.alpha, s, residual)


class HeadAnalysis:
    """An ONS head's record of one row (``Auto``'s heads): its coordinates ``z``, the unclipped
    prediction ``ybar``, the residual ``k(x, x) - z.z`` (0 for explicit features), ``extra``
    (a dictionary head's ``Embedded``; a linear head's new coordinates), the coordinates
    ``new`` a step may add and whether they are ``optional`` (an atom the dictionary may not
    take), and ``direction``, ``(A^{-1} z, s)`` once the variance asked for it."""

    __slots__ = ("z", "ybar", "residual", "extra", "new", "optional", "direction")

    def __init__(self, z: np.ndarray, ybar: float, residual: float, extra, new: np.ndarray,
                 optional: bool):
        self.z, self.ybar, self.residual, self.extra = z, ybar, residual, extra
        self.new, self.optional, self.direction = new, optional, None


class HeadStep(tuple):
    """An ONS head's checked step (the step protocol's ``check``), a named pair built from a
    tuple, ``HeadStep((state, y))`` (no Python-level constructor: a namedtuple's costs twice
    as much): the compiled state holding the planned step (``okoco._core._ons.OnsState``)
    and the target it was planned for."""

    __slots__ = ()
    _fields = ("state", "y")
    state = property(itemgetter(0), doc="The compiled state holding the planned step.")
    y = property(itemgetter(1), doc="The target the step was planned for.")


class _Expert(OnsHead, StepProtocol, Locked):
    """An ONS head that ``Auto`` mixes: validated ``alpha`` and ``eta`` (``"hessian"`` or a
    number), the bound ``C`` (its owner clips the predictions to it), a lock of its own (as
    every learner has), and the step protocol (``okoco.learners.base.StepProtocol``):
    :meth:`check` (before anything changes), :meth:`apply` and :meth:`forget` (nothing: a
    head keeps no point). A subclass defines ``analyse`` (a :class:`HeadAnalysis`, with the
    coordinates a step may add) and ``_joined(analysis)`` (how many of them joined: 0, or
    all)."""

    _parameter_constraints = {"alpha": [Interval(Real, 0, None, closed="neither")],
                              "eta": [Interval(Real, 0, None, closed="neither"),
                                      Options({"hessian"}, "a policy name")],
                              "C": [Interval(Real, 0, None, closed="neither")]}
    _saved_state = {"alpha": "number", "eta": "str|number", "C": "number", "loss": "loss",
                    "n_seen": "int[0,]", "_u": "array(>=ons_inverse.size) float64 as ons_point",
                    "_P": "obj:PackedSymmetric,ScaledIdentity as ons_inverse",
                    "online_effective_dimension": "float", "log_det": "float",
                    "noise_scale_sum": "float", "_lock": "cache:lock", "_ons": "cache:None"}

    def __init__(self, loss, alpha: float = 0.1, eta="hessian", C: float = 3.0):
        self.loss = loss
        self.alpha = alpha
        self.eta = eta
        self.C = C
        check_params(self)
        self._lock = threading.Lock()
        self.n_seen = 0
        self._u = np.zeros(16)
        # A^{-1}: with eta 0 it stays I / alpha for ever, held as its scalar
        self._P = ScaledIdentity(0, 1.0 / alpha) if eta == 0.0 else PackedSymmetric()
        self.online_effective_dimension = self.log_det = self.noise_scale_sum = 0.0

    def get_params(self) -> dict:
        return {"loss": self.loss, "alpha": self.alpha, "eta": self.eta, "C": self.C}

    def _rebuild(self, charge) -> None:
        r"""After a load (``okoco.persistence``'s hook): a head without curvature (``eta``
        0) holds :math:`A^{-1} = I/\alpha` as its scalar, also from a file of format 12,
        which held it as a matrix (the same one, to the rounding its swaps left there)."""
        if self.eta == 0.0 and type(self._P) is not ScaledIdentity:
            self._P = ScaledIdentity(self._P.size, 1.0 / self.alpha)

    @property
    def _ons_loss(self):
        return self.loss

    def _direction_of(self, analysis) -> tuple[np.ndarray, float]:
        if analysis.direction is None:
            analysis.direction = self._ons_direction(analysis.z, self.eta == "hessian")
        return analysis.direction

    def _variance_of(self, analysis) -> float:
        return self._ons_variance(self._direction_of(analysis)[1], analysis.residual,
                                  self.n_seen)

    def check(self, y: float, analysis) -> HeadStep:
        """The step at the target ``y`` (:meth:`OnsHead._ons_plan`), with the new coordinates
        (and also without them if they may not join: an atom the dictionary may not take);
        ``ValueError`` if it would not be usable (nothing changed)."""
        eta = None if self.eta == "hessian" else float(self.eta)
        return HeadStep((self._ons_plan(y, analysis.z, analysis.ybar, eta, analysis.new,
                                        analysis.optional), y))

    def apply(self, v: np.ndarray, analysis, step: HeadStep) -> None:
        """The checked step, with its new coordinates grown first, counted (``n_seen``)."""
        self._ons_commit(step.state, step.y, analysis.residual, self._joined(analysis))
        self.n_seen += 1

    def forget(self) -> None:
        """Nothing: a head keeps no point."""


class DictionaryExpert(_Expert):
    r"""An ONS head on ``Auto``'s :class:`SharedEmbedding` (CON-KONS's step, the embedding
    shared): ridge ``alpha``, step ``eta``; it grows by a zero coordinate when an atom joins.

    ``full_alpha`` (``None``: the ONS throughout): once the dictionary is full (``max_size``
    atoms) and the head has taken :data:`FULL_AFTER` times ``max_size`` steps (a long stream:
    on streams of a few thousand rows, ImageSegments' and digits', switching at the fill cost
    Auto up to 1% of accuracy), the head takes first-order steps: from the next step
    :math:`A = \alpha I` for good with :math:`\alpha` = ``full_alpha`` (``u`` kept,
    :math:`A^{-1}` reset, ``eta`` 0: the projected gradient step :math:`u \leftarrow u -
    \ell'(\hat y)\,z/\alpha` after the projection onto :math:`|z^\top u| \le C`). The
    curvature a full dictionary's head would keep accumulating makes its steps ever smaller,
    which a swap's new coordinates or a covariate shift then cannot undo; the ONS's fast start
    is kept while the dictionary fills (``Auto``'s sharp head,
    :data:`okoco.learners.auto.DEFAULT_EXPERTS`)."""

    _parameter_constraints = {**_Expert._parameter_constraints,
                              "eta": [Interval(Real, 0, None, closed="left"),
                                      Options({"hessian"}, "a policy name")],
                              "full_alpha": [None, Interval(Real, 0, None, closed="neither")]}
    _saved_state = {"kernel": "kernel", "max_size": "int|none", "dictionary": "int[0,]",
                    "full_alpha": "opt number|none"}
    full_alpha = None  # (a file saved before format 12: the ONS throughout)

    def __init__(self, embedding: SharedEmbedding, loss, alpha: float = 0.1, eta="hessian",
                 C: float = 3.0, full_alpha: float | None = None):
        self.full_alpha = full_alpha
        super().__init__(loss, alpha, eta, C)
        self.kernel = embedding._kernel  # for the leader's name
        self.max_size = embedding.max_size
        self.dictionary = 0  # which of its owner's dictionaries it is on

    def get_params(self) -> dict:
        return {**super().get_params(), "full_alpha": self.full_alpha}

    def apply(self, v: np.ndarray, analysis, step: HeadStep) -> None:
        """The checked step (:meth:`_Expert.apply`); then, with ``full_alpha``, the switch to
        first-order steps once the dictionary is full."""
        super().apply(v, analysis, step)
        if (self.full_alpha is not None and self.eta != 0.0 and self.max_size is not None
                and self._P.size >= self.max_size
                and self.n_seen >= FULL_AFTER * self.max_size):
            self.alpha, self.eta = float(self.full_alpha), 0.0
            self._P = ScaledIdentity(self._P.size, 1.0 / self.alpha)  # (no m x m matrix)
            self._ons = None  # (the compiled state is bound again to the new matrix)

    def describe(self) -> str:
        return (f"DictionaryExpert(kernel={self.kernel!r}, alpha={self.alpha:g}, "
                f"eta={self.eta!r}, max_size={self.max_size!r})")

    def analyse(self, v: np.ndarray, shared) -> HeadAnalysis:
        """The record of the row ``v`` from its embedding by the dictionary it is on
        (``shared.embedded``, its owner's dictionaries in order; this head's is number
        ``dictionary``)."""
        embedded = shared.embedded[self.dictionary]
        h = embedded.h  # (z.u compiled, as OnsHead._ons_predict)
        # its pivot None: the row cannot join the dictionary (no optional coordinate)
        return HeadAnalysis(h, _heads.predict(h, self._u), embedded.residual, embedded,
                            embedded.new, embedded.pivot is not None)

    def _joined(self, analysis) -> int:
        return 1 if analysis.extra.joined else 0

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

    def analyse(self, v: np.ndarray, shared=None) -> HeadAnalysis:
        """The record of the row ``v``: its coordinates ``[1, x]`` (``shared`` unused) over
        the head's, features absent from the row 0, and the features first seen now (new
        coordinates), in one compiled call (``okoco._core._heads.linear_coordinates``)."""
        known, new = _heads.linear_coordinates(v, self._P.size)
        new = _NONE if new is None else new  # the features first seen now
        return HeadAnalysis(known, _heads.predict(known, self._u), 0.0, new, new, False)

    def _joined(self, analysis) -> int:
        return analysis.extra.shape[0]

    @property
    def dictionary_size(self) -> int:
        return self._P.size
