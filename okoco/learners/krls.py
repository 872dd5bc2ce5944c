r"""Kernel recursive least squares on the ALD dictionary (Engel, Mannor & Meir 2004)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from okoco import losses as _losses
from okoco.dictionary import ALD
from okoco.learners.base import KernelLearner

__all__ = ["KRLS"]


class _DiagonalLoading:
    """``k(x, y) + ridge * [x is y]``: the Gram of the dictionary becomes ``G_D + ridge I``."""

    def __init__(self, kernel, ridge: float):
        self.kernel, self.ridge = kernel, ridge

    def __call__(self, X, Y=None):
        return self.kernel(X, Y)

    def diag(self, X):
        return self.kernel.diag(X) + self.ridge


class KRLS(KernelLearner):
    r"""OKS-KRLS: kernel recursive least squares on an ALD dictionary, :math:`O(m^2)` per step.

    The dictionary :math:`\mathcal D` grows when a point's ALD residual
    :math:`\delta_t = k_{tt} - k_{\mathcal D}(x_t)^\top G_{\mathcal D}^{-1} k_{\mathcal D}(x_t)`
    exceeds ``nu`` (``okoco.dictionary.ALD``). With the historical ALD coefficients
    :math:`a_t` as the rows of :math:`A_t`, the weights are the least-squares solution
    :math:`\tilde\alpha_t = G_{\mathcal D}^{-1} (A_t^\top A_t)^{-1} A_t^\top y_{1:t}`, kept up to
    date by the recursion of ``spec/ridge-leverage-scores-oks-krls.md`` section B.2.3:

    - grow: :math:`\tilde\alpha \leftarrow [\tilde\alpha - a\,e/\delta;\ e/\delta]`,
      :math:`P \leftarrow \mathrm{diag}(P, 1)`;
    - otherwise: :math:`q = Pa/(1 + a^\top P a)`, :math:`P \leftarrow P - q\,a^\top P`,
      :math:`\tilde\alpha \leftarrow \tilde\alpha + G_{\mathcal D}^{-1} q\, e`,

    with :math:`e = y_t - k_{\mathcal D}(x_t)^\top\tilde\alpha` the a-priori error and
    :math:`P = (A^\top A)^{-1}`. Predictions :math:`f(x) = k_{\mathcal D}(x)^\top\tilde\alpha`.

    Parameters
    ----------
    kernel
        An ``okoco.kernels`` kernel; ``None`` means ``RBF(gamma=1.0)``.
    nu
        ALD threshold > 0: smaller keeps more points.
    C
        Predictions are clipped to ``[-C, C]``; ``None`` (the default) means no clipping.
    max_size
        When the dictionary holds this many points it stops growing; later points only update
        the weights (as KAFBOX's KRLS does).
    ridge
        Diagonal loading of the dictionary Gram, :math:`G_{\mathcal D} + \text{ridge}\, I`, for
        stability (0 for the exact recursion). With every point in the dictionary KRLS then
        reproduces kernel ridge regression with this ridge.
    loss
        Only ``Squared()`` (or ``None``): KRLS is a least-squares method.

    Attributes
    ----------
    n_seen, dictionary_size
        Steps learned and dictionary atoms.
    last_residual
        The ALD residual :math:`\delta_t` of the last point learned.
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

    def __init__(self, kernel=None, nu: float = 0.01, C: float | None = None,
                 max_size: int | None = None, ridge: float = 0.0, loss=None):
        self.kernel = kernel
        self.nu = nu
        self.C = C
        self.max_size = max_size
        self.ridge = ridge
        self.loss = loss
        if loss is not None and not isinstance(loss, _losses.Squared):
            raise ValueError(
                f"KRLS minimises the squared loss; it cannot use {loss!r}. For other losses "
                "use KONS, SketchedKONS or FunctionalGD"
            )
        if isinstance(ridge, bool) or not isinstance(ridge, numbers.Real) or not (
            math.isfinite(ridge) and ridge >= 0
        ):
            raise ValueError(f"ridge must be a finite number >= 0, got {ridge!r}")
        self._setup()

    _clipping_optional = True

    def _reset_state(self) -> None:
        kernel = self._kernel if self.ridge == 0 else _DiagonalLoading(self._kernel, self.ridge)
        self._ald = ALD(kernel, nu=self.nu, max_size=self.max_size)
        self._w = np.zeros(16)  # dictionary weights alpha~, in a doubling buffer
        self._P = np.zeros((16, 16))  # (A^T A)^{-1}, likewise
        self.last_residual = float("nan")

    def _point(self, v: np.ndarray) -> dict:
        return dict(enumerate(v.tolist()))  # ALD keys columns by the learner's column index

    def _predict_vec(self, v: np.ndarray) -> float:
        if self._ald.size == 0:
            return 0.0
        return float(self._ald.kernel_column(self._point(v)) @ self._w[: self._ald.size])

    def _learn_vec(self, v: np.ndarray, y: float, eta) -> None:
        ald = self._ald
        m = ald.size
        added = ald.update(self._point(v))
        a, delta, g = ald.last_coefficients, ald.last_residual, ald.last_kernel_column
        self.last_residual = delta
        w = self._w[:m]
        err = y - float(g @ w)
        if added:
            if self._P.shape[0] == m:
                grown = np.zeros((2 * m, 2 * m))
                grown[:m, :m] = self._P[:m, :m]
                self._P = grown
                self._w = np.concatenate([self._w, np.zeros(m)])
                w = self._w[:m]
            w -= a * (err / delta)
            self._w[m] = err / delta
            self._P[:m, m] = 0.0
            self._P[m, :m] = 0.0
            self._P[m, m] = 1.0
        elif m:
            P = self._P[:m, :m]
            Pa = P @ a
            q = Pa / (1.0 + float(a @ Pa))
            P -= np.outer(q, Pa)  # P symmetric: a^T P = (P a)^T
            w += ald.cholesky.solve(q) * err

    @property
    def weights(self) -> np.ndarray:
        """The dictionary weights :math:`\\tilde\\alpha` (a copy)."""
        return self._w[: self._ald.size].copy()

    @property
    def dictionary_size(self) -> int:
        return self._ald.size

    @property
    def log_det(self) -> float:
        return self._ald.logdet()
