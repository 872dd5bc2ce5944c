r"""Kernel recursive least squares on the ALD dictionary (Engel, Mannor & Meir 2004)."""

from __future__ import annotations

import math

import numpy as np

from okoco import losses as _losses
from okoco._core import _krls, _steps
from okoco._input import in_row, reserve
from okoco.dictionary import ALD
from okoco.kernels import self_similarity
from okoco.learners._rebuilt import rebuild_kept_factor_matrix
from okoco.learners.base import (
    BOUND,
    SIZE,
    SMALL_BATCH,
    KernelLearner,
    compiled_kernel,
    overflow_message,
    overflow_target_message,
)
from okoco.linalg import PackedSymmetric, Rows

__all__ = ["KRLS"]


class KRLS(KernelLearner):
    r"""OKS-KRLS: kernel recursive least squares on an ALD dictionary, :math:`O(m^2)` per step.

    The dictionary :math:`\mathcal D` grows when a point's ALD residual
    :math:`\delta_t = k_{tt} - k_{\mathcal D}(x_t)^\top G_{\mathcal D}^{-1} k_{\mathcal D}(x_t)`
    exceeds ``nu`` (``okoco.dictionary.ALD``). With the historical ALD coefficients
    :math:`a_t` as the rows of :math:`A_t`, the weights are the least-squares solution
    :math:`\tilde\alpha_t = G_{\mathcal D}^{-1} (A_t^\top A_t)^{-1} A_t^\top y_{1:t}`, kept up to
    date by the KRLS recursion (Engel, Mannor & Meir 2004, "The Kernel Recursive Least-Squares
    Algorithm", Table 1):

    - grow: :math:`\tilde\alpha \leftarrow [\tilde\alpha - a\,e/\delta;\ e/\delta]`,
      :math:`P \leftarrow \mathrm{diag}(P, 1)`;
    - otherwise: :math:`q = Pa/(1 + a^\top P a)`, :math:`P \leftarrow P - q\,a^\top P`,
      :math:`\tilde\alpha \leftarrow \tilde\alpha + G_{\mathcal D}^{-1} q\, e`,

    with :math:`e = y_t - k_{\mathcal D}(x_t)^\top\tilde\alpha` the a-priori error and
    :math:`P = (A^\top A)^{-1}`. Predictions :math:`f(x) = k_{\mathcal D}(x)^\top\tilde\alpha`.

    The learner works in the coordinates of the ALD factor :math:`G_{\mathcal D} = L L^\top`
    (ridge included). With :math:`\beta = G_{\mathcal D}\tilde\alpha` it stores
    :math:`w = L^{-1}\beta` and :math:`M = L^{-1} P L^{-\top}`; with :math:`h_t = L^{-1} k_t`
    (so :math:`a_t = L^{-\top} h_t`) the prediction is :math:`f(x_t) = a_t^\top\beta = h_t^\top
    w`, :math:`a^\top P a = h^\top M h` and the step is :math:`u = M h`,
    :math:`s = 1/(1 + h^\top u)`, :math:`M \leftarrow M - s\,u u^\top`,
    :math:`w \leftarrow w + s\,e\,u`. Growing borders :math:`L` with :math:`[h^\top, l]`
    (:math:`l^2` the new pivot), so :math:`w \leftarrow [w;\ (y_t - h^\top w)/l]` and
    :math:`M \leftarrow [[M, -u/l], [-u^\top/l, (1 + h^\top u)/l^2]]`. A step therefore makes
    one triangular solve (:math:`h`, shared by ``predict_one`` and the ``learn_one`` that
    follows), one product with :math:`M` and one rank-one update, :math:`O(m^2)`; a prediction
    alone costs one solve. If the ALD factor is ever refreshed from scratch (its drift check),
    :math:`w` and :math:`M` are carried over to the new factor, :math:`O(m^3)` once.

    Parameters
    ----------
    kernel
        An ``okoco.kernels`` kernel; ``None`` means ``RBF(gamma=1/d)``, ``d`` the
        number of features at the first learn (fixed from then on; suits standardized inputs).
    nu
        ALD threshold > 0: smaller keeps more points (the default 0.1 was chosen by
        measurement on families of streams, docs/defaults.md).
    C
        Predictions are clipped to ``[-C, C]``; ``None`` (the default) means no clipping.
    max_size
        When the dictionary holds this many points it stops growing; later points only update
        the weights (as KAFBOX's KRLS does). The default 500 was chosen by measurement
        (docs/defaults.md); ``None`` lets ALD decide alone (memory :math:`O(m^2)`, ``m`` the
        dictionary, which grows with the stream's effective dimension).
    alpha
        Ridge (diagonal loading) of the dictionary Gram, :math:`G_{\mathcal D} + \alpha I`, for
        stability (0 for the exact recursion); the ALD test then uses the regularized residual
        (see ``okoco.dictionary.ALD``), so a ridge below ``nu`` leaves the dictionary size
        about unchanged. With every point in the dictionary KRLS reproduces kernel ridge
        regression with this ridge.
    loss
        Only ``Squared()`` (or ``None``): KRLS is a least-squares method.

    Attributes
    ----------
    n_seen, dictionary_size
        Steps learned and dictionary atoms.
    last_residual
        The ALD residual :math:`\delta_t` of the last point learned.
    atoms
        The dictionary points.
    log_det
        :math:`\log\det` of the (loaded) dictionary Gram.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.learners import KRLS
    >>> model = KRLS(nu=1e-3)
    >>> for x in np.linspace(-3, 3, 200):
    ...     model.learn_one({"x": x}, float(np.sinc(x)))
    >>> bool(abs(model.predict_one({"x": 0.5}) - np.sinc(0.5)) < 0.01), model.dictionary_size < 30
    (True, True)
    """

    _parameter_constraints = {
        "C": [None, BOUND],
        "nu": ALD._parameter_constraints["nu"],
        "max_size": [None, SIZE],
        "alpha": ALD._parameter_constraints["alpha"],
    }

    _loop_rows = SMALL_BATCH  # fewer rows: row by row, each one compiled step

    _saved_state = {"nu": "number", "max_size": "int|none", "alpha": "number",
                    "_store": "obj:Rows as store", "_ald": "obj:ALD as ald",
                    "_w": "array(>=ald.size) float64 as weights",
                    "_M": "obj:PackedSymmetric as p_matrix", "last_residual": "float",
                    "noise_scale_sum": "float"}

    # What a model file leaves out and a load rebuilds (:meth:`_rebuild`): ALD's matrix
    # G_D + alpha I (its factor stays: the weights are in its coordinates).
    _rebuilt_parts = {"ald.cholesky": ("matrix",)}

    def _rebuild(self, charge) -> None:
        r"""After a load, ALD's matrix :math:`G_{\mathcal D} + \alpha I` from the stored
        points (:func:`okoco.learners._rebuilt.rebuild_kept_factor_matrix`, ``O(m^2 d)``)."""
        rebuild_kept_factor_matrix(self._ald.cholesky, self._kernel, self._store, charge)

    def __init__(self, kernel=None, nu: float = 0.1, C: float | None = None,
                 max_size: int | None = 500, alpha: float = 0.0, loss=None):
        self.kernel = kernel
        self.nu = nu
        self.C = C
        self.max_size = max_size
        self.alpha = alpha
        self.loss = loss
        self._setup()

    def _reset_state(self) -> None:
        if not isinstance(self._loss, _losses.Squared):
            raise ValueError(
                f"KRLS: loss must be the squared loss (KRLS minimises it), got {self.loss!r}; "
                "for other losses use KONS, SketchedKONS or FunctionalGD"
            )
        # The learner keeps the points; the ALD dictionary works on their kernel columns.
        self._store = Rows()
        self._ald = ALD(None, nu=self.nu, max_size=self.max_size, alpha=self.alpha)
        self._w = np.zeros(16)  # L^{-1} G_D alpha~, in a doubling buffer
        self._M = PackedSymmetric()  # L^{-1} (A^T A)^{-1} L^{-T}
        self.last_residual = float("nan")
        self.noise_scale_sum = 0.0  # sum of e_t^2 / (delta_t + nu'), see _predictive_variance

    def _state(self) -> _krls.KRLSState:
        """The typed state of the step over the learner's buffers (``okoco._core._krls``),
        built at first use and again after a load, a copy or a new default kernel."""
        core = self._core
        if core is None or core[0] is not self._kernel:
            state = _krls.KRLSState(compiled_kernel(self._kernel), self._kernel,
                                     float(self.nu), self.max_size, self._noise_ratio,
                                     math.nan if self.C is None else float(self.C))
            self._bind(state)
            core = self._core = (self._kernel, state)
        return core[1]

    def _bind(self, state: _krls.KRLSState) -> None:
        """The state's views of the points, the ALD factor, ``w`` and ``M`` (again after a
        point joins)."""
        store, M = self._store, self._M
        state.bind_points(store.data, store.norms_buffer(), store.n, store.d)
        state.bind_weights(self._ald.cholesky.factor_storage(), self._w, M.storage(), M.is_dense)

    def _analysed(self, v: np.ndarray) -> _krls.KRLSState:
        """The state holding the analysis of ``v`` (``h``, ``delta``, the prediction), kept
        for the step on the same row; raises ``ValueError`` if a value is not finite or
        ``k(x, x) < 0``, before anything changes."""
        state = self._state()
        if state.compiled:
            status = state.predict(v, self.n_seen)
        elif state.known_row(v, self.n_seen):
            status = state.status
        else:  # a kernel without a compiled form: its column from Python, the same analysis
            column = np.ascontiguousarray(self._store.kernel_row(self._kernel, v), dtype=float)
            status = state.feed(v, column, self_similarity(self._kernel, v), self.n_seen)
        if status:
            raise ValueError(self._refusal(state, status))
        return state

    def _refusal(self, state: _krls.KRLSState, status: int) -> str:
        """Why the analysis of the state's row is refused (``status``)."""
        kxx = state.kxx
        if status == _steps.STEP_NEGATIVE:
            return f"k(x, x) = {kxx!r} < 0: {self._kernel!r} is not positive semi-definite"
        g = state.column()
        bad = g[~np.isfinite(g)]
        return overflow_message(self._kernel, kxx if not math.isfinite(kxx) else
                                (bad[0] if bad.size else g.sum()))

    def _predict_vec(self, v: np.ndarray) -> float:
        return self._analysed(v).prediction

    def _predictive_variance(self, v: np.ndarray) -> float:
        r""":math:`\hat\tau^2(\delta(x) + \nu')` for ``predict_one(x, with_dist=True)``.

        :math:`\delta(x) = k(x, x) - h^\top h` is the ALD residual, the posterior variance of
        kernel ridge regression on the dictionary with ridge ``alpha`` (the factor is that of
        :math:`K_{\mathcal D} + \alpha I`); :math:`\nu' = \max(\alpha, \nu)` is the noise
        ratio, floored at the ALD threshold when the ridge is 0; the scale
        :math:`\hat\tau^2 = \bigl(1 + \sum_{u \le t} e_u^2 / (\delta(x_u) + \nu')\bigr) / (1 + t)`
        is estimated online from the a-priori errors :math:`e_u` (under the Gaussian process of
        that ridge, each term has expectation :math:`\tau^2`), with one unit pseudo-observation
        so that it is never 0 (a first target predicted exactly). The spread costs nothing more
        than the prediction: ``delta`` comes from the prediction's own solve. Each step adds
        its term in the compiled step (``okoco._core._krls.krls_step``).

        The sum stays finite by refusal: a step whose term would make it overflow float64 (a
        target of ~1e150 against a spread :math:`\delta + \nu'` of ~1e-12) raises
        ``ValueError`` and changes nothing.
        """
        delta = self._analysed(v).delta
        scale = (1.0 + self.noise_scale_sum) / (1.0 + self.n_seen)
        return scale * (max(delta, 0.0) + self._noise_ratio)

    @property
    def _noise_ratio(self) -> float:
        return max(self.alpha, self.nu)

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        Kb = self._store.kernel_block(self._kernel, V)
        return self._w[: self._ald.size] @ self._ald.cholesky.half_solve(Kb)

    def _learn_vec(self, v: np.ndarray, y: float, eta) -> None:
        state = self._state()
        if state.compiled:  # the analysis (kept from predict_one) and the step in one call
            status = state.learn(v, y, self.n_seen, self.noise_scale_sum)
        else:
            status = self._analysed(v).step(y, self.noise_scale_sum)
        if status == _steps.STEP_OK:
            self._learned(state, 1)
        elif status == _steps.STEP_JOINS:
            self._join(state, v)
        elif status == _steps.STEP_NOISE:  # nothing changed
            raise ValueError(overflow_target_message(y, state.prediction))
        else:
            raise ValueError(self._refusal(state, status))

    def _learned(self, state: _krls.KRLSState, rows: int) -> None:
        """The learner's and its ALD's account of ``rows`` steps taken by the state, none of
        whose points joined."""
        self._ald._note_outside(state.last_column(), state.last_half(), state.last_delta, rows)
        self.noise_scale_sum, self.last_residual = state.noise_sum, state.last_delta

    def _join(self, state: _krls.KRLSState, v: np.ndarray) -> None:
        """The step of a point that joins the dictionary: the ALD takes it (its factor is
        bordered by ``[h^T, l]``), then KRLS's terms (``KRLSState.border``) border ``w`` and
        ``M`` and the point is stored."""
        ald = self._ald
        chol, m = ald.cholesky, ald.size
        # the factor may be refreshed by the check of the append: keep the one w, M refer to
        before = chol.factor() if chol.check_due() else None
        refreshes = chol.n_refreshes
        h = state.half()
        ald._update_checked_column(state.column(), state.kxx, (None, state.delta, h))
        self._w = reserve(self._w, m + 1)
        state.bind_weights(chol.factor_storage(), self._w, self._M.storage(), self._M.is_dense)
        diagonal = state.border(ald._last_pivot)
        self._M.append(state.border_column(), diagonal)
        self._store.append(v)
        if chol.n_refreshes != refreshes:
            self._carry_over(before, h, math.sqrt(ald._last_pivot))
        self._bind(state)
        self.noise_scale_sum, self.last_residual = state.noise_sum, state.delta

    def _learn_vecs(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """The test-then-train loop over the rows in compiled code (``krls_run``: the step of
        ``_learn_vec`` on each row); a row it stops at (a point that joins, a value to word an
        error about, a step to refuse) takes ``_learn_vec``, which raises before changing
        anything if it refuses the row (the rows before it stay learned)."""
        if compiled_kernel(self._kernel) is None:
            return self._learn_rows(V, targets, etas, predict)
        V = np.ascontiguousarray(V, dtype=float)
        y = np.asarray(targets, dtype=float)
        rows = len(targets)
        predictions = np.empty(rows)
        t = 0
        while t < rows:
            state = self._state()
            stop, status = _krls.krls_run(state, V, y, t, self.n_seen, predictions,
                                           self.noise_scale_sum)
            if stop > t:
                self._learned(state, stop - t)
                self.n_seen, self._cache = self.n_seen + stop - t, None
            t = stop
            if status == _steps.STEP_JOINS:  # the point joins: the ALD's step, in Python
                predictions[t] = self._clip(state.prediction)
                self._join(state, V[t])
            elif status:  # a refusal, worded by _learn_vec (the state kept the analysis)
                if predict:
                    z = in_row(t, self._predict_vec, V[t])
                    predictions[t] = self._clip(z) if math.isfinite(z) else z
                in_row(t, self._learn_vec, V[t], targets[t], etas[t])
            if status:
                self.n_seen, self._cache, t = self.n_seen + 1, None, t + 1
        return predictions if predict else None

    def _carry_over(self, before: np.ndarray, h: np.ndarray, l: float) -> None:
        """``w``, ``M`` from the bordered factor ``[[L, 0], [h^T, l]]`` (``L = before``) to the
        refreshed one ``L'``: ``T = L'^{-1} L_b``, ``w <- T w``, ``M <- T M T^T``, ``O(m^3)``."""
        chol, m = self._ald.cholesky, self._ald.size
        bordered = np.zeros((m, m))
        bordered[: m - 1, : m - 1] = before
        bordered[m - 1, : m - 1] = h
        bordered[m - 1, m - 1] = l
        T = chol.half_solve(bordered)
        self._w[:m] = T @ self._w[:m]
        M = T @ self._M.matrix() @ T.T
        self._M = PackedSymmetric.from_matrix(0.5 * (M + M.T))

    @property
    def weights(self) -> np.ndarray:
        """The weights :math:`\\tilde\\alpha = G_{\\mathcal D}^{-1}\\beta = L^{-\\top} w` (a new
        array)."""
        return self._ald.cholesky.back_solve(self._w[: self._ald.size])

    @property
    def atoms(self) -> np.ndarray:
        """The dictionary points, ``(dictionary_size, n_features)`` (a copy)."""
        return self._store.view().copy()

    @property
    def dictionary_size(self) -> int:
        return self._ald.size

    @property
    def log_det(self) -> float:
        return self._ald.logdet()
