"""The exact unconstrained comparators: kernel ridge, kernel ERM for any loss, the best constant."""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg as sla
from scipy.optimize import minimize_scalar

from okoco import losses as _losses
from okoco._validation import check_params
from okoco.regret.comparators._common import (
    _BOUND,
    _COUNT,
    _KERNEL,
    _LOSS,
    _POSITIVE,
    _as_rows,
    _check_targets,
    _check_Xy,
    _Comparator,
    _second_derivative,
)


class KernelRidge(_Comparator):
    r"""Kernel ridge regression, in closed form.

    Minimises :math:`\sum_t (y_t - f(x_t))^2 + \alpha\lVert f\rVert_{\mathcal H}^2`; the
    solution is :math:`f = \sum_i a_i k(x_i,\cdot)` with :math:`(K + \alpha I)a = y` (one
    Cholesky factorisation). This is the same objective and the same ``alpha`` as
    ``sklearn.kernel_ridge.KernelRidge`` (whose docs write it as ridge regression
    :math:`\lVert y - Xw\rVert^2 + \alpha\lVert w\rVert^2` in feature space).

    Parameters
    ----------
    kernel
        An okoco kernel (any object with ``k(X, Y)``).
    alpha
        Ridge :math:`\alpha > 0`.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (T,)
        :math:`a`.
    fitted_values_, objective_, rkhs_norm2_
        See the module docstring; ``rkhs_norm2_`` is :math:`a^\top K a`.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import kernels
    >>> from okoco.regret import KernelRidge
    >>> X = np.array([[0.0], [1.0]]); y = np.array([1.0, -1.0])
    >>> m = KernelRidge(kernels.Linear(), alpha=1.0).fit(X, y)
    >>> float(m.predict(np.array([[2.0]]))[0])  # a = (K + I)^{-1} y, f(2) = 2 a_2
    -1.0
    """

    _params = ("kernel", "alpha")

    _parameter_constraints = {"kernel": _KERNEL, "alpha": _POSITIVE}

    #: Saved state (okoco.persistence): the parameters, then the fit (absent before one).
    _saved_state = {"kernel": "kernel", "alpha": "number", "dual_coef_": "opt array(n) float64",
                    "X_fit_": "opt array(n, *) float64", "fitted_values_": "opt array(n) float64",
                    "rkhs_norm2_": "opt float", "objective_": "opt float"}

    def __init__(self, kernel, alpha: float = 1.0):
        self.kernel = kernel
        self.alpha = alpha
        check_params(self)

    def fit(self, X, y) -> KernelRidge:
        X, y = _check_Xy(X, y)
        K = self.kernel(X, X)
        A = K + self.alpha * np.eye(len(y))
        self.dual_coef_ = sla.cho_solve(sla.cho_factor(A, lower=True), y)
        self.X_fit_ = X
        self.fitted_values_ = K @ self.dual_coef_
        self.rkhs_norm2_ = float(self.dual_coef_ @ self.fitted_values_)
        self.objective_ = float(np.sum((y - self.fitted_values_) ** 2)) + (
            self.alpha * self.rkhs_norm2_
        )
        return self

    def predict(self, X) -> np.ndarray:
        self._check_fitted()
        return self.kernel(_as_rows(X), self.X_fit_) @ self.dual_coef_


class KernelERM(_Comparator):
    r"""Regularised kernel ERM for any smooth convex loss, by damped Newton (IRLS).

    Minimises :math:`F(a) = \sum_t \ell(y_t, (Ka)_t) + \alpha a^\top K a`. At the optimum
    :math:`g + 2\alpha a = 0` with :math:`g = \ell'(y, Ka)`, and the Newton direction solves
    :math:`(WK + 2\alpha I)\Delta = -(g + 2\alpha a)`, :math:`W = \mathrm{Diag}(\ell'')`. With
    :math:`S = W^{1/2}` and :math:`M = 2\alpha I + SKS` (symmetric positive definite, one
    Cholesky per iteration) it is :math:`\Delta = -(r - S M^{-1} S K r)/(2\alpha)`,
    :math:`r = g + 2\alpha a`, so zero curvature (the flat part of the squared hinge) is fine.
    A backtracking line search on :math:`F` makes every step a descent step.

    Parameters
    ----------
    kernel, loss
        An okoco kernel and loss (any loss with ``value`` and ``derivative``; a
        ``second_derivative`` is used if present, else a built-in formula or finite differences).
    alpha
        Ridge :math:`\alpha > 0`.
    tol
        Stop when :math:`\max_t |g_t + 2\alpha a_t| \le` ``tol`` :math:`\cdot(1 + \max_t|g_t(0)|)`.
    max_iter
        Maximum Newton iterations (``n_iter_`` reports the number used).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import kernels, losses
    >>> from okoco.regret import KernelERM
    >>> X = np.array([[-1.0], [1.0]]); y = np.array([-1, 1])
    >>> m = KernelERM(kernels.RBF(1.0), losses.Logistic(), alpha=0.5).fit(X, y)
    >>> bool(m.kkt_residual() < 1e-8), bool(m.predict(np.array([[2.0]]))[0] > 0)
    (True, True)
    """

    _params = ("kernel", "loss", "alpha")

    _parameter_constraints = {"kernel": _KERNEL, "loss": _LOSS, "alpha": _POSITIVE,
                              "tol": _POSITIVE, "max_iter": _COUNT}

    #: Saved state (okoco.persistence): the parameters, then the fit (absent before one).
    _saved_state = {"kernel": "kernel", "loss": "loss", "alpha": "number", "tol": "number",
                    "max_iter": "int", "n_iter_": "opt int", "dual_coef_": "opt array(n) float64",
                    "X_fit_": "opt array(n, *) float64", "fitted_values_": "opt array(n) float64",
                    "rkhs_norm2_": "opt float", "objective_": "opt float",
                    "_y": "opt array(n) float64 as targets",
                    "_scale": "opt float as gradient_scale"}

    def __init__(self, kernel, loss, alpha: float = 1.0, *, tol: float = 1e-10,
                 max_iter: int = 100):
        self.kernel = kernel
        self.loss = loss
        self.alpha = alpha
        self.tol = tol
        self.max_iter = max_iter
        check_params(self)

    def _objective(self, y, f, a) -> float:
        return float(np.sum(self.loss.value(y, f))) + self.alpha * float(a @ f)

    def fit(self, X, y) -> KernelERM:
        X, y = _check_Xy(X, y)
        _check_targets(self.loss, y)
        K = self.kernel(X, X)
        n, two_a = len(y), 2.0 * self.alpha
        a = np.zeros(n)
        f = np.zeros(n)
        obj = self._objective(y, f, a)
        scale = 1.0 + float(np.max(np.abs(self.loss.derivative(y, f))))
        self.n_iter_ = 0
        for it in range(1, self.max_iter + 1):
            r = self.loss.derivative(y, f) + two_a * a
            if np.max(np.abs(r)) <= self.tol * scale:
                break
            s = np.sqrt(_second_derivative(self.loss, y, f))
            M = two_a * np.eye(n) + s[:, None] * K * s[None, :]
            Kr = K @ r
            delta = -(r - s * sla.cho_solve(sla.cho_factor(M, lower=True), s * Kr)) / two_a
            Kd = K @ delta
            # Directional derivative of F along delta is (Kd) . r  (< 0 for a Newton step).
            slope = float(Kd @ r)
            step = 1.0
            while True:
                a_new, f_new = a + step * delta, f + step * Kd
                obj_new = self._objective(y, f_new, a_new)
                if obj_new <= obj + 1e-4 * step * slope or step < 1e-12:
                    break
                step *= 0.5
            a, f, obj = a_new, f_new, obj_new
            self.n_iter_ = it
        self.dual_coef_, self.X_fit_, self.fitted_values_ = a, X, f
        self.rkhs_norm2_ = float(a @ f)
        self.objective_ = obj
        self._y, self._scale = y, scale
        return self

    def kkt_residual(self) -> float:
        r"""Residual :math:`\max_t|\ell'(y_t, f_t) + 2\alpha a_t|` (0 at optimum)."""
        self._check_fitted()
        g = self.loss.derivative(self._y, self.fitted_values_)
        return float(np.max(np.abs(g + 2.0 * self.alpha * self.dual_coef_)))

    def predict(self, X) -> np.ndarray:
        self._check_fitted()
        return self.kernel(_as_rows(X), self.X_fit_) @ self.dual_coef_


class BestConstant(_Comparator):
    r"""The best constant prediction :math:`c \in [-C, C]` in hindsight.

    Minimises :math:`\sum_t \ell(y_t, c)` (no regulariser) by bounded Brent search to an absolute
    tolerance ``xtol`` on :math:`c` (the squared loss uses the closed form
    :math:`\mathrm{clip}(\bar y, -C, C)`). A constant is in the RKHS only for kernels that
    contain constants, so ``rkhs_norm2_`` is ``nan``; use it as a baseline, not for the bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import losses
    >>> from okoco.regret import BestConstant
    >>> BestConstant(losses.Squared(), C=1.0).fit(np.zeros((3, 1)), [0.5, 1.0, 3.0]).constant_
    1.0
    """

    _params = ("loss", "C")

    _parameter_constraints = {"loss": _LOSS, "C": _BOUND, "xtol": _POSITIVE}

    #: Saved state (okoco.persistence): the parameters, then the fit (absent before one).
    _saved_state = {"loss": "loss", "C": "number", "xtol": "number", "constant_": "opt float",
                    "fitted_values_": "opt array(*) float64", "objective_": "opt float",
                    "rkhs_norm2_": "opt float"}

    def __init__(self, loss, C: float = 1.0, *, xtol: float = 1e-10):
        self.loss = loss
        self.C = C
        self.xtol = xtol
        check_params(self)

    def fit(self, X, y) -> BestConstant:
        X, y = _check_Xy(X, y)
        _check_targets(self.loss, y)
        if isinstance(self.loss, _losses.Squared):
            c = float(np.clip(np.mean(y), -self.C, self.C))
        else:
            lo, hi = (-self.C, self.C) if math.isfinite(self.C) else (-1e6, 1e6)
            res = minimize_scalar(lambda c: float(np.sum(self.loss.value(y, c))),
                                  bounds=(lo, hi), method="bounded",
                                  options={"xatol": self.xtol})
            c = float(res.x)
        self.constant_ = c
        self.fitted_values_ = np.full(len(y), c)
        self.objective_ = float(np.sum(self.loss.value(y, self.fitted_values_)))
        self.rkhs_norm2_ = float("nan")
        return self

    def predict(self, X) -> np.ndarray:
        self._check_fitted()
        return np.full(_as_rows(X).shape[0], self.constant_)
