"""The exact comparator of the papers' class: kernel ERM with the box ``|f(x_t)| <= C``."""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg as sla

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


class ClippedKernelERM(_Comparator):
    r"""The paper's comparator: regularised kernel ERM with clipped values on the data.

    Solves (Calandriello et al. 2017, Sect. 2 and Thm. 1)

    .. math:: \min_{f\in\mathcal H}\ \sum_{t=1}^T \ell(y_t, f(x_t)) + \alpha\lVert f\rVert_{\mathcal
              H}^2 \quad\text{s.t.}\quad |f(x_t)| \le C,\ t = 1..T.

    By the representer theorem :math:`f = \sum_i a_i k(x_i, \cdot)`, values :math:`f = Ka` and
    :math:`\lVert f\rVert_{\mathcal H}^2 = a^\top K a = f^\top K^{+} f`. The KKT conditions are
    :math:`f \in [-C, C]^T` and, with :math:`\nu = -(\ell'(y, f) + 2\alpha a)`,
    :math:`\nu_t = 0` where :math:`|f_t| < C`, :math:`\nu_t \ge 0` where :math:`f_t = C` and
    :math:`\nu_t \le 0` where :math:`f_t = -C`.

    **Solver.** A primal-dual active-set (semismooth Newton) method (Hintermüller, Ito and
    Kunisch 2002): starting from the unconstrained solution, it guesses which constraints are
    active from :math:`\nu` and :math:`f`, solves the equality-constrained problem for that guess
    (Newton's method on :math:`2\alpha a_I + \ell'(y_I, (Ka)_I) = 0`,
    :math:`(Ka)_A = \pm C`; one linear solve for the squared loss), and repeats until the guess
    is stable; typically a handful of :math:`O(T^3)` solves. If it has not settled after
    ``max_iter`` guesses, a log-barrier Newton path finishes the job (``method_`` says which
    ran). The result is accepted when :meth:`kkt_residual` (the natural residual
    :math:`\max_t|f_t - \mathrm{clip}(f_t - G_t, -C, C)|`, :math:`G = \ell'(y, f) + 2\alpha a`,
    zero exactly at a KKT point) is at most ``tol`` :math:`\cdot(1 + \max_t|\ell'(y_t, 0)|)`;
    ``converged_`` records it.

    **Jitter.** The linear systems use :math:`\widetilde K = K + \varepsilon I`,
    :math:`\varepsilon =` ``jitter`` :math:`\cdot\,\mathrm{mean}(\mathrm{diag}\,K)` (default
    :math:`10^{-10}`), so repeated points cannot make them singular. The problem solved is
    exactly the one for the kernel :math:`k + \varepsilon\delta` (white noise on the training
    points), whose RKHS contains :math:`\mathcal H`; ``fitted_values_`` is
    :math:`\widetilde K a` and ``predict`` returns :math:`k(x, X)a`, which differs from it by
    :math:`\varepsilon a` on the training rows.

    Parameters
    ----------
    kernel, loss
        An okoco kernel and loss.
    C
        Clipping level :math:`C > 0` (``inf`` gives :class:`KernelERM`).
    alpha
        Ridge :math:`\alpha > 0`.
    jitter, tol, max_iter
        See above.

    Attributes
    ----------
    fitted_values_ : ndarray
        The optimal :math:`f \in [-C, C]^T`.
    dual_coef_ : ndarray
        :math:`a`.
    active_ : ndarray of bool
        Points with :math:`|f_t| = C` (active constraints).
    multipliers_ : ndarray
        :math:`\nu` (zero off the active set).
    objective_, rkhs_norm2_
        Objective value and :math:`a^\top\widetilde K a`.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import kernels, losses
    >>> from okoco.regret import ClippedKernelERM
    >>> X = np.linspace(-1, 1, 20)[:, None]; y = 2.0 * np.sign(X[:, 0])
    >>> m = ClippedKernelERM(kernels.RBF(5.0), losses.Squared(), C=1.0, alpha=0.01).fit(X, y)
    >>> float(np.max(np.abs(m.fitted_values_))), int(m.active_.sum()) > 0
    (1.0, True)
    >>> bool(m.kkt_residual() < 1e-8)
    True
    """

    _params = ("kernel", "loss", "C", "alpha")

    _parameter_constraints = {"kernel": _KERNEL, "loss": _LOSS, "C": _BOUND, "alpha": _POSITIVE,
                              "jitter": _POSITIVE, "tol": _POSITIVE, "max_iter": _COUNT}

    #: Saved state (okoco.persistence): the parameters, then the fit (absent before one).
    _saved_state = {"kernel": "kernel", "loss": "loss", "C": "number", "alpha": "number",
                    "jitter": "number", "tol": "number", "max_iter": "int", "n_iter_": "opt int",
                    "method_": "opt str", "X_fit_": "opt array(n, *) float64",
                    "dual_coef_": "opt array(n) float64", "fitted_values_": "opt array(n) float64",
                    "rkhs_norm2_": "opt float", "objective_": "opt float",
                    "active_": "opt array(n) bool", "multipliers_": "opt array(n) float64",
                    "jitter_value_": "opt float", "_y": "opt array(n) float64 as targets",
                    "_scale": "opt float as gradient_scale", "converged_": "opt bool"}

    def __init__(self, kernel, loss, C: float = 1.0, alpha: float = 1.0, *,
                 jitter: float = 1e-10, tol: float = 1e-9, max_iter: int = 50):
        self.kernel = kernel
        self.loss = loss
        self.C = C
        self.alpha = alpha
        self.jitter = jitter
        self.tol = tol
        self.max_iter = max_iter
        check_params(self)

    def _residual(self, y, f, a) -> float:
        G = self.loss.derivative(y, f) + 2.0 * self.alpha * a
        return float(np.max(np.abs(f - np.clip(f - G, -self.C, self.C))))

    def _solve_sets(self, K, y, a, up, lo):
        """Newton's method for the equality-constrained problem of one active-set guess."""
        n, two_a, C = len(y), 2.0 * self.alpha, self.C
        act = up | lo
        target = np.where(up, C, -C)
        quad = isinstance(self.loss, _losses.Squared)
        for _ in range(1 if quad else 50):
            f = K @ a
            g = self.loss.derivative(y, f)
            R = np.where(act, f - target, two_a * a + g)
            if not quad and np.max(np.abs(R)) <= 1e-13 * (1.0 + np.max(np.abs(g))):
                break
            w = _second_derivative(self.loss, y, f)
            J = K * np.where(act, 1.0, w)[:, None]
            J[np.arange(n)[~act], np.arange(n)[~act]] += two_a
            a = a - sla.solve(J, R, check_finite=False)
            if not np.all(np.isfinite(a)):
                raise np.linalg.LinAlgError("non-finite Newton step")
        return a

    def _try_sets(self, K, y, a, up, lo, scale, pdas_steps=0):
        """Solve the equality-constrained problem for a guess, then up to ``pdas_steps``
        primal-dual active-set updates; return ``a`` if it passes the KKT check, else None."""
        C, two_a = self.C, 2.0 * self.alpha
        for _ in range(pdas_steps + 1):
            try:
                a = self._solve_sets(K, y, a.copy(), up, lo)
            except np.linalg.LinAlgError:
                return None
            if not np.all(np.isfinite(a)):
                return None
            f = K @ a
            if self._residual(y, np.clip(f, -C, C), a) <= self.tol * scale:
                return a
            nu = -(self.loss.derivative(y, f) + two_a * a)
            nu[~(up | lo)] = 0.0
            up, lo = nu + (f - C) > 0, nu + (f + C) < 0
            lo &= ~up
        return None

    def _path(self, K, y, scale):
        r"""Log-barrier Newton path in :math:`f = \widetilde Ka` with an active-set crossover.

        Each centring step solves with :math:`M = cI + S\widetilde KS` (Woodbury form, never
        :math:`\widetilde K^{-1}`); after each centring the constraints with
        :math:`(C - |f_t|)^2 < 1/t` are taken as active and the exact equality-constrained
        solution is tried (accepted only if it passes the KKT check).
        """
        n, C, al = len(y), self.C, self.alpha
        a = np.zeros(n)
        f = np.zeros(n)

        def base(f, a):
            return float(np.sum(self.loss.value(y, f))) + al * float(a @ f)

        t = max(1.0, 2.0 * n / max(base(f, a), 1e-12))
        for _outer in range(self.max_iter):
            def phi(f, a, t=t):
                if np.any(np.abs(f) >= C):
                    return math.inf
                return t * base(f, a) - float(np.sum(np.log(C * C - f * f)))

            cur = phi(f, a)
            for _ in range(100):
                self.n_iter_ += 1
                r = t * (self.loss.derivative(y, f) + 2 * al * a) + 2 * f / (C * C - f * f)
                D = t * _second_derivative(self.loss, y, f) + 2 * (C * C + f * f) / (
                    C * C - f * f) ** 2
                s, c = np.sqrt(D), 2.0 * t * al
                M = s[:, None] * K * s[None, :]
                M[np.diag_indices(n)] += c
                cf = sla.cho_factor(M, lower=True, check_finite=False)
                da = -(r - s * sla.cho_solve(cf, s * (K @ r))) / c
                df = K @ da
                dec = float(-r @ df)
                if dec / (2 * t) <= 1e-3 * self.tol * (1 + base(f, a)):
                    break
                step = 1.0
                while step > 1e-14:
                    new = phi(f + step * df, a + step * da)
                    if new <= cur - 1e-4 * step * dec:
                        break
                    step *= 0.5
                else:
                    break
                f, a, cur = f + step * df, a + step * da, new
            near = (C - np.abs(f)) ** 2 < 1.0 / t
            if np.any(near):
                sol = self._try_sets(K, y, a, near & (f > 0), near & (f < 0), scale, 3)
                if sol is not None:
                    return sol, "barrier+active-set"
            if 2.0 * n / t <= 1e-3 * self.tol * (1.0 + base(f, a)):
                return a, "barrier"
            t *= 50.0
        return a, "barrier"

    def fit(self, X, y) -> ClippedKernelERM:
        X, y = _check_Xy(X, y)
        _check_targets(self.loss, y)
        n, C = len(y), self.C
        K = self.kernel(X, X)
        eps = self.jitter * max(float(np.mean(np.diag(K))), np.finfo(float).tiny)
        K[np.diag_indices(n)] += eps
        scale = 1.0 + float(np.max(np.abs(self.loss.derivative(y, np.zeros(n)))))
        none = np.zeros(n, dtype=bool)
        self.n_iter_ = 1
        # The unconstrained solution is the answer when it is feasible (large C).
        a = self._try_sets(K, y, np.zeros(n), none, none, scale)
        if a is not None and np.max(np.abs(K @ a)) <= C:
            self.method_ = "unconstrained"
        else:
            a, self.method_ = self._path(K, y, scale)
        f = np.clip(K @ a, -C, C)  # removes rounding at active constraints only
        self.X_fit_, self.dual_coef_, self.fitted_values_ = X, a, f
        self.rkhs_norm2_ = float(a @ (K @ a))
        self.objective_ = float(np.sum(self.loss.value(y, f))) + self.alpha * self.rkhs_norm2_
        self.active_ = np.abs(f) >= C * (1 - 1e-9)
        self.multipliers_ = np.where(
            self.active_, -(self.loss.derivative(y, f) + 2.0 * self.alpha * a), 0.0)
        self.jitter_value_ = eps
        self._y, self._scale = y, scale
        self.converged_ = self.kkt_residual() <= self.tol * scale
        return self

    def kkt_residual(self) -> float:
        r"""Natural residual :math:`\max_t|f_t - \mathrm{clip}(f_t - G_t, -C, C)|` (0 iff KKT)."""
        self._check_fitted()
        return self._residual(self._y, self.fitted_values_, self.dual_coef_)

    def predict(self, X) -> np.ndarray:
        self._check_fitted()
        return self.kernel(_as_rows(X), self.X_fit_) @ self.dual_coef_
