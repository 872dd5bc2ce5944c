r"""Kernel recursive least squares on the ALD dictionary (Engel, Mannor & Meir 2004)."""

from __future__ import annotations

import math

import numpy as np

from okoco import losses as _losses
from okoco._core import _steps
from okoco._input import Rows, in_row, reserve
from okoco.dictionary import ALD
from okoco.kernels import finite_row, self_similarity
from okoco.learners.base import (
    BOUND,
    SIZE,
    SMALL_BATCH,
    KernelLearner,
    compiled_kernel,
    overflow_message,
    overflow_target_message,
    widened,
)
from okoco.linalg import PackedSymmetric

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

    def _make_step(self, spec: tuple):
        return _steps.KRLSStep(spec, self._kernel, float(self.nu), self.max_size,
                               self._noise_ratio)

    def _analyse(self, v: np.ndarray):
        """Kernel column, ``k(x, x)``, ``h = L^{-1} g``, the ALD residual and the prediction of
        ``v``, shared by predict and learn."""
        core = self._compiled_step()
        analysis = None if core is None else core.analysis(self, v, self.n_seen)
        # the Python analysis: a kernel without a compiled form, or a value to word an error about
        return analysis if analysis is not None else self._cached(v, self._analyse_now)

    def _analyse_now(self, v: np.ndarray):
        g = self._store.kernel_row(self._kernel, v)
        kxx = self_similarity(self._kernel, v)
        if not (math.isfinite(kxx) and finite_row(self._kernel, g)):
            bad = g[~np.isfinite(g)]
            raise ValueError(overflow_message(self._kernel, kxx if not math.isfinite(kxx) else
                                              (bad[0] if bad.size else g.sum())))
        if kxx < 0:
            raise ValueError(f"k(x, x) = {kxx!r} < 0: {self._kernel!r} is not positive "
                             "semi-definite")
        h, delta = self._ald.half_project(g, kxx)
        return g, kxx, h, delta, float(h.dot(self._w[: h.shape[0]]))

    def _predict_vec(self, v: np.ndarray) -> float:
        core = self._compiled_step()
        prediction = None if core is None else core.predict(self, v, self.n_seen)
        return prediction if prediction is not None else self._analyse(v)[4]

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
        than the prediction: ``delta`` comes from the prediction's own solve.

        The sum stays finite by refusal: a step whose term would make it overflow float64 (a
        target of ~1e150 against a spread :math:`\delta + \nu'` of ~1e-12) raises
        ``ValueError`` and changes nothing (:meth:`_noise_term`).
        """
        delta = self._analyse(v)[3]
        scale = (1.0 + self.noise_scale_sum) / (1.0 + self.n_seen)
        return scale * (max(delta, 0.0) + self._noise_ratio)

    @property
    def _noise_ratio(self) -> float:
        return max(self.alpha, self.nu)

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        Kb = self._store.kernel_block(self._kernel, V)
        return self._w[: self._ald.size] @ self._ald.cholesky.half_solve(Kb)

    def _learn_vec(self, v: np.ndarray, y: float, eta) -> None:
        core = self._compiled_step()
        if core is not None and core.learn(self, v, y, self.n_seen) == _steps.STEP_OK:
            return  # the point did not join: the weights' step below, in one call
        ald = self._ald
        chol = ald.cholesky
        m = ald.size
        g, kxx, h, delta, prediction = self._analyse(v)
        noise = self._noise_term(y, prediction, delta)  # raises before any change
        # the factor may be refreshed by the check of the append: keep the one w, M refer to
        before = chol.factor() if delta > ald.nu and chol.check_due() else None
        refreshes = chol.n_refreshes
        added = ald._update_checked_column(g, kxx, (None, delta, h))  # _analyse_now checked
        self.last_residual = delta
        if added:
            # L grows by the row [h^T, l]; beta by y (the new point is fitted exactly)
            l = math.sqrt(ald._last_pivot)
            u = self._M.matvec(h)
            w = self._w = reserve(self._w, m + 1)
            w[m] = (y - prediction) / l
            self._M.append(u * (-1.0 / l), (1.0 + h.dot(u)) / (l * l))
            self._store.append(v)
            if chol.n_refreshes != refreshes:
                self._carry_over(before, h, l)
        elif m:  # M <- M - s u u^T, w <- w + s e u, u = M h, e the a-priori error
            u = self._M.matvec(h)
            s = 1.0 / (1.0 + h.dot(u))
            self._M.rank_one(-s, u)
            self._w[:m] += (s * (y - prediction)) * u
        self.noise_scale_sum += noise

    def _noise_term(self, y: float, prediction: float, delta: float) -> float:
        r"""The step's term :math:`e^2 / (\delta + \nu')` of the noise scale (the a-priori
        error over its spread, see :meth:`_predictive_variance`); raises ``ValueError`` if the
        running sum would not be finite, before anything changes."""
        error = y - prediction
        noise = error * error / (max(delta, 0.0) + self._noise_ratio)
        if not math.isfinite(self.noise_scale_sum + noise):
            raise ValueError(overflow_target_message(y, prediction))
        return noise

    def _learn_vecs(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """The test-then-train loop over the rows in compiled code (``_learn_vec``'s step on
        each row); a row the loop cannot take (a point joining while ``M`` is still dense, the
        factor's drift check, a value to word an error about, a step to refuse) takes
        ``_learn_vec``, which raises before changing anything if it refuses the row (the rows
        before it stay learned)."""
        spec = compiled_kernel(self._kernel)
        rows = len(targets)
        if spec is None:
            return self._learn_rows(V, targets, etas, predict)
        ald, store, chol = self._ald, self._store, self._ald.cholesky
        room = rows if ald.max_size is None else max(0, min(rows, ald.max_size - ald.size))
        store.make_room(room, V.shape[1])
        V = widened(V, store.d)
        y = np.asarray(targets, dtype=float)
        predictions = np.empty(rows)
        ald._column_mode = True  # KRLS feeds the ALD kernel columns (update_column)
        first, t = self.n_seen, 0
        while t < rows:
            m = ald.size
            top = m + (rows - t if ald.max_size is None else
                       max(0, min(rows - t, ald.max_size - m)))
            chol._grow(top)
            ald._reserve(top)
            self._w = reserve(self._w, top)
            self._M.reserve(top)
            g, h = np.empty(top), np.empty(top)
            (stop, size, chol._ops_since_check, clamped, ald.n_seen, status, m_last, delta,
             added, pivot, self.noise_scale_sum) = _steps.krls_run(
                spec, store.data, store._sq, m, chol._L, chol._A, chol._ops_since_check,
                chol._MIN_CHECK_PERIOD, chol.min_pivot, ald._residuals, ald._indices,
                ald._weights, ald.n_seen, self._w, self._M._storage(), self._M.is_dense,
                float(ald.nu), ald.max_size or 0, float(ald.alpha),
                math.nan if self.C is None else float(self.C), V, y, t, predictions, g, h,
                self._noise_ratio, self.noise_scale_sum)
            chol._m = ald._size = self._M._m = store.n = size
            chol.n_clamped += clamped
            store.n_added += size - m
            store._sq_max = max(store._sq_max, float(store._sq[:size].max(initial=0.0)))
            if stop > t:  # what the ALD and KRLS keep of the last row learned
                ald._last_a, ald._last_h = None, h[:m_last].copy()
                ald.last_kernel_column = g[:m_last].copy()
                ald.last_residual = self.last_residual = delta
                ald.last_added = added
                if added:
                    ald._last_pivot = pivot
            self.n_seen, self._cache, t = first + stop, None, stop
            if status:  # a row for the Python step
                if predict:
                    z = in_row(t, self._predict_vec, V[t])
                    predictions[t] = self._clip(z) if math.isfinite(z) else z
                in_row(t, self._learn_vec, V[t], targets[t], etas[t])
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
