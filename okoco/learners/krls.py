r"""Kernel recursive least squares on the ALD dictionary (Engel, Mannor & Meir 2004)."""

from __future__ import annotations

import math

import numpy as np

from okoco import losses as _losses
from okoco._input import Rows, reserve
from okoco.dictionary import ALD
from okoco.kernels import finite_row, self_similarity
from okoco.learners.base import BOUND, KernelLearner, overflow_message
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

    The learner stores :math:`\beta = G_{\mathcal D}\tilde\alpha` instead of
    :math:`\tilde\alpha`: then :math:`f(x_t) = a_t^\top\beta`, growing is
    :math:`\beta \leftarrow [\beta;\ y_t]` and the other steps are
    :math:`\beta \leftarrow \beta + q\,e`, so one ALD projection (two triangular solves, shared
    by ``predict_one`` and the ``learn_one`` that follows) is the only solve of a step. A
    prediction alone costs :math:`O(m^2)` for the same reason.

    Parameters
    ----------
    kernel
        An ``okoco.kernels`` kernel; ``None`` means ``RBF(gamma=1/d)``, ``d`` the
        number of features at the first learn (fixed from then on; suits standardized inputs).
    nu
        ALD threshold > 0: smaller keeps more points.
    C
        Predictions are clipped to ``[-C, C]``; ``None`` (the default) means no clipping.
    max_size
        When the dictionary holds this many points it stops growing; later points only update
        the weights (as KAFBOX's KRLS does).
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
        "max_size": ALD._parameter_constraints["max_size"],
        "alpha": ALD._parameter_constraints["alpha"],
    }

    def __init__(self, kernel=None, nu: float = 0.01, C: float | None = None,
                 max_size: int | None = None, alpha: float = 0.0, loss=None):
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
        self._beta = np.zeros(16)  # G_D alpha~, in a doubling buffer
        self._P = PackedSymmetric()  # (A^T A)^{-1}
        self.last_residual = float("nan")

    def _analyse(self, v: np.ndarray):
        """Kernel column, ``k(x, x)`` and ALD projection of ``v``, shared by predict and learn."""
        return self._cached(v, self._analyse_now)

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
        projection = self._ald.project_column(g, kxx)
        return g, kxx, projection, float(projection[0] @ self._beta[: self._ald.size])

    def _predict_vec(self, v: np.ndarray) -> float:
        return self._analyse(v)[3]

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        Kb = self._store.kernel_block(self._kernel, V)
        return self._beta[: self._ald.size] @ self._ald.cholesky.solve(Kb)

    def _learn_vec(self, v: np.ndarray, y: float, eta) -> None:
        ald = self._ald
        m = ald.size
        g, kxx, projection, prediction = self._analyse(v)
        a, delta, _ = projection
        added = ald._update_checked_column(g, kxx, projection)  # _analyse_now checked both
        self.last_residual = delta
        if added:
            # beta = G alpha~ becomes [beta; y]: the new point is fitted exactly (the "grow" step).
            self._beta = reserve(self._beta, m + 1)
            self._beta[m] = y
            self._P.append(np.zeros(m), 1.0)
            self._store.append(v)
        elif m:
            err = y - prediction  # the a-priori error, a^T beta
            Pa, s = self._P.inverse_update(a)  # P <- P - P a a^T P / (1 + a^T P a)
            self._beta[:m] += Pa * (s * err)  # G alpha~ += q e

    @property
    def weights(self) -> np.ndarray:
        """The weights :math:`\\tilde\\alpha = G_{\\mathcal D}^{-1}\\beta` (a new array)."""
        return self._ald.cholesky.solve(self._beta[: self._ald.size])

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
