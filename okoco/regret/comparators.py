r"""Offline comparators: the best function in hindsight on a prefix of the stream.

Every comparator follows one protocol: ``fit(X, y) -> self`` and ``predict(X)``, plus the
fitted attributes ``fitted_values_`` (its predictions on the training rows), ``objective_``
(the value of the objective it minimised) and ``rkhs_norm2_`` (:math:`\lVert f\rVert_{\mathcal
H}^2`, ``nan`` when undefined). :class:`~okoco.regret.RegretTracker` refits a comparator on each
prefix :math:`x_1, \dots, x_t` and scores the learner against it.

Objective scaling
-----------------
All kernel comparators minimise, over :math:`f` in the RKHS :math:`\mathcal H` of the kernel,

.. math:: \sum_{t=1}^T \ell(y_t, f(x_t)) + \alpha \lVert f\rVert_{\mathcal H}^2

with the *sum* of the losses (no :math:`1/T`, no :math:`1/2`) and okoco's losses
(``Squared`` is :math:`(y - z)^2`). For the squared loss this is exactly the objective of
``sklearn.kernel_ridge.KernelRidge(alpha=alpha)`` (:math:`\lVert y - K a\rVert^2 + \alpha
a^\top K a`), so the same ``alpha`` gives the same function. :class:`ClippedKernelERM` adds the
paper's constraint :math:`|f(x_t)| \le C` on the training points (the comparator class
:math:`\mathcal S` of Calandriello et al. 2017, Sect. 2).

Long streams
------------
The exact comparators cost :math:`O(T^3)` time and :math:`O(T^2)` memory (a few seconds at
:math:`T = 5{,}000`). :class:`NystromKernelERM` restricts :math:`f` to the span of ``m``
landmarks, :math:`f = \sum_{j} \beta_j k(z_j, \cdot)`, for any loss and with or without the
box, solves an ``m``-dimensional problem in :math:`O(T m^2)` on the Nyström features of
:class:`okoco.dictionary.NystromKRR`, and reports the approximation instead of hiding it:
``residual_trace_`` (:math:`\mathrm{Tr}(K - \widetilde K)/T`, on all rows) and
:meth:`NystromKernelERM.objective_gap` (exact vs. Nyström objective on a subsample). A Nyström
solution is a genuine RKHS function, so its objective is never below the exact comparator's
optimum: regret measured against it is a lower estimate of the regret against the exact one.

Examples
--------
>>> import numpy as np
>>> from okoco import kernels, losses
>>> from okoco.regret import ClippedKernelERM, KernelRidge
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(50, 2)); y = np.sin(3 * X[:, 0])
>>> krr = KernelRidge(kernels.RBF(gamma=2.0), alpha=0.1).fit(X, y)
>>> erm = ClippedKernelERM(kernels.RBF(gamma=2.0), losses.Squared(), C=10.0, alpha=0.1).fit(X, y)
>>> bool(np.allclose(krr.predict(X), erm.predict(X), atol=1e-5))
True
"""

from __future__ import annotations

import copy
import math
from numbers import Integral, Real

import numpy as np
from scipy import linalg as sla
from scipy.optimize import minimize_scalar

from okoco import losses as _losses
from okoco._input import check_array
from okoco._validation import Interval, Options, Protocol, check_params
from okoco.dictionary import NystromKRR

__all__ = [
    "BestConstant",
    "ClippedKernelERM",
    "KernelERM",
    "KernelRidge",
    "NystromKernelERM",
]


# ----------------------------------------------------------------------------- helpers


#: The comparators' parameter constraints (checked by okoco._validation.check_params).
_POSITIVE = [Interval(Real, 0, None, closed="neither")]
_BOUND = [*_POSITIVE, Options({math.inf}, "math.inf")]  # C = inf: no constraint
_COUNT = [Interval(Integral, 1, None, closed="left")]
_KERNEL = [Protocol("a kernel (callable, with a diag method)", "diag", callable_object=True)]
_LOSS = [Protocol("an okoco loss (with value and derivative methods)", "value", "derivative")]


def _check_Xy(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = check_array(X, "X")
    if X.ndim == 1:
        X = X[:, None]
    y = check_array(y, "y").ravel()
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X has shape {X.shape} but y has {y.shape[0]} values")
    if X.shape[0] == 0:
        raise ValueError("cannot fit a comparator on zero samples")
    return X, y


def _as_rows(X) -> np.ndarray:
    X = check_array(X, "X")
    return X[:, None] if X.ndim == 1 else X


def _second_derivative(loss, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """:math:`\\partial^2 \\ell/\\partial z^2` (a generalised one for the squared hinge)."""
    if hasattr(loss, "second_derivative"):
        return np.asarray(loss.second_derivative(y, z), dtype=float)
    if isinstance(loss, _losses.Squared):
        return np.full_like(z, 2.0)
    if isinstance(loss, _losses.Logistic):
        p = 1.0 / (1.0 + np.exp(np.clip(-y * z, -700, 700)))
        return p * (1.0 - p)
    if isinstance(loss, _losses.SquaredHinge):
        return 2.0 * (1.0 - y * z > 0)
    # A user loss without a second derivative: central differences of its derivative.
    h = 1e-5 * np.maximum(1.0, np.abs(z))
    return np.maximum((loss.derivative(y, z + h) - loss.derivative(y, z - h)) / (2 * h), 0.0)


def _check_targets(loss, y: np.ndarray) -> None:
    check = getattr(loss, "check_target", None)
    if check is not None:
        for v in np.unique(y):
            check(float(v) if v not in (-1.0, 1.0) else int(v))


class _Comparator:
    """Shared ``repr`` and the fitted-state check."""

    _params: tuple[str, ...] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{p}={getattr(self, p)!r}" for p in self._params)
        return f"{type(self).__name__}({args})"

    def _check_fitted(self) -> None:
        if not hasattr(self, "fitted_values_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit(X, y) first")


# ----------------------------------------------------------------------------- exact, unconstrained


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


# ----------------------------------------------------------------------------- exact, clipped


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


# ----------------------------------------------------------------------------- Nyström


def _linear_newton(Phi, y, loss, alpha, C, tol, max_iter):
    r"""Minimise :math:`\sum\ell(y,\Phi w) + \alpha\lVert w\rVert^2`, optionally s.t.
    :math:`|\Phi w| \le C`, by Newton's method (log-barrier path when ``C`` is finite).

    Returns ``(w, n_newton_steps, duality_gap_bound)``."""
    n, m = Phi.shape
    w = np.zeros(m)

    def base_obj(w):
        z = Phi @ w
        return float(np.sum(loss.value(y, z))) + alpha * float(w @ w)

    clipped = math.isfinite(C)
    t = 1.0 if clipped else None
    if clipped:
        # Start the barrier weight where the two terms are comparable.
        t = max(1.0, 2.0 * n / max(base_obj(w), 1e-12))
    steps = 0
    while True:
        # Inner Newton on phi_t(w) = t * base(w) - sum log(C^2 - z^2) (or base(w) alone).
        def obj(w, t=t):
            z = Phi @ w
            if clipped and np.any(np.abs(z) >= C):
                return math.inf
            val = base_obj(w)
            if not clipped:
                return val
            return t * val - float(np.sum(np.log(C - z) + np.log(C + z)))

        cur = obj(w)
        for _ in range(max_iter):
            z = Phi @ w
            g = loss.derivative(y, z)
            h = _second_derivative(loss, y, z)
            if clipped:
                grad = t * (Phi.T @ g + 2 * alpha * w) + Phi.T @ (1 / (C - z) - 1 / (C + z))
                hd = t * h + 1 / (C - z) ** 2 + 1 / (C + z) ** 2
                H = (Phi.T * hd) @ Phi + 2 * t * alpha * np.eye(m)
            else:
                grad = Phi.T @ g + 2 * alpha * w
                H = (Phi.T * h) @ Phi + 2 * alpha * np.eye(m)
            d = -sla.cho_solve(sla.cho_factor(H, lower=True), grad)
            dec = float(-grad @ d)  # Newton decrement squared
            steps += 1
            if dec / 2 <= tol * (1.0 + abs(cur)):
                break
            step = 1.0
            while step > 1e-14:
                new = obj(w + step * d)
                if new <= cur - 1e-4 * step * dec:
                    break
                step *= 0.5
            else:
                break
            w, cur = w + step * d, new
        if not clipped:
            return w, steps, 0.0
        gap = 2.0 * n / t  # barrier duality gap on the base objective
        if gap <= tol * (1.0 + base_obj(w)):
            return w, steps, gap
        t *= 10.0


class NystromKernelERM(_Comparator):
    r"""Any of the problems above restricted to ``m`` landmarks: :math:`f = \sum_{j\le m}
    \beta_j k(z_j,\cdot)`, for long streams.

    The landmarks' Nyström features :math:`\Phi` (those of :class:`okoco.dictionary.NystromKRR`,
    :math:`\Phi\Phi^\top = K_{XZ}K_{ZZ}^+K_{ZX}`) give :math:`f = \Phi w` with
    :math:`\lVert f\rVert_{\mathcal H}^2 = \lVert w\rVert^2`, so the problem becomes an
    ``m``-dimensional linear one: :math:`\min_w \sum_t \ell(y_t, (\Phi w)_t) + \alpha\lVert
    w\rVert^2`, subject to :math:`|\Phi w| \le C` when ``C`` is finite. The squared loss without
    a box is the closed form of ``NystromKRR``; any other case is solved by Newton's method,
    :math:`O(Tm^2)` per step, with a log-barrier path for the box (the barrier weight grows
    tenfold until the duality-gap bound :math:`2T/t` is below ``tol`` :math:`\cdot(1 +
    \text{objective})`; ``duality_gap_`` reports it, and the result is strictly feasible).

    Landmarks: ``"uniform"`` draws ``n_components`` rows without replacement with the seeded
    generator; ``"rls"`` draws them proportionally to ridge leverage scores estimated from a
    uniform pilot of ``n_components`` rows with the regularized Nyström features :math:`z` of
    :class:`okoco.dictionary.NystromKRR`: :math:`\tilde\tau_i = (k_{ii} - \lVert z_i\rVert^2)
    /\alpha \ge \tau_i(\alpha)` (the estimator of Calandriello, Lazaric and Valko 2017,
    "Distributed adaptive sampling for kernel matrix approximation", with unit weights), so a
    point the pilot does not represent is likely drawn.

    The approximation is reported: ``residual_trace_`` is
    :math:`\mathrm{Tr}(K - \Phi\Phi^\top)/T` (0 iff exact on the data), and
    :meth:`objective_gap` compares with the exact comparator on a subsample. A Nyström solution
    is feasible for the exact problem, so its objective is never below the exact optimum.

    Parameters
    ----------
    kernel, loss
        An okoco kernel and loss (default ``losses.Squared()``).
    alpha
        Ridge :math:`\alpha > 0`.
    n_components
        Number of landmarks ``m`` (all rows if the stream is shorter).
    C
        Box :math:`|f(x_t)| \le C` on the training points (the comparator class of
        :class:`ClippedKernelERM`); ``inf`` for none.
    landmarks
        ``"uniform"`` or ``"rls"``.
    seed
        Seed of the landmark draw.
    tol, max_iter
        Newton's stopping rule and iteration cap.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import kernels, losses
    >>> from okoco.regret import KernelRidge, NystromKernelERM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 1)); y = np.sin(3 * X[:, 0])
    >>> exact = KernelRidge(kernels.RBF(2.0), alpha=0.1).fit(X, y)
    >>> approx = NystromKernelERM(kernels.RBF(2.0), alpha=0.1, n_components=40).fit(X, y)
    >>> bool(approx.residual_trace_ < 1e-6), bool(approx.objective_ >= exact.objective_ - 1e-8)
    (True, True)
    >>> signs = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> clf = NystromKernelERM(kernels.RBF(2.0), losses.Logistic(), alpha=0.1, n_components=30)
    >>> float(np.mean(np.sign(clf.fit(X, signs).predict(X)) == signs))
    1.0
    >>> box = NystromKernelERM(kernels.RBF(5.0), alpha=0.01, n_components=40, C=0.5)
    >>> bool(np.max(np.abs(box.fit(X, 2 * signs).fitted_values_)) <= 0.5)
    True
    """

    _params = ("kernel", "loss", "alpha", "n_components", "C", "landmarks", "seed")

    _parameter_constraints = {
        "kernel": _KERNEL, "loss": [None, *_LOSS], "alpha": _POSITIVE, "n_components": _COUNT,
        "C": _BOUND, "landmarks": [Options({"uniform", "rls"})], "seed": ["seed"],
        "tol": _POSITIVE, "max_iter": _COUNT,
    }

    #: Saved state (okoco.persistence): the parameters, then the fit (absent before one).
    _saved_state = {"kernel": "kernel", "loss": "loss|none", "alpha": "number",
                    "n_components": "int", "C": "number", "landmarks": "str",
                    "seed": "int|none|rng", "tol": "number", "max_iter": "int",
                    "n_iter_": "opt int", "duality_gap_": "opt float",
                    "nystrom_": "opt obj:NystromKRR", "landmarks_": "opt array(m, *) float64",
                    "landmark_indices_": "opt array(m) int64", "coef_": "opt array(*) float64",
                    "fitted_values_": "opt array(*) float64", "rkhs_norm2_": "opt float",
                    "objective_": "opt float", "residual_trace_": "opt float"}

    def __init__(self, kernel, loss=None, alpha: float = 1.0, n_components: int = 500, *,
                 C: float = math.inf, landmarks: str = "uniform", seed=0, tol: float = 1e-10,
                 max_iter: int = 100):
        self.kernel = kernel
        self.loss = loss
        self.alpha = alpha
        self.n_components = n_components
        self.C = C
        self.landmarks = landmarks
        self.seed = seed
        self.tol = tol
        self.max_iter = max_iter
        check_params(self)
        if loss is None:
            self.loss = _losses.Squared()

    def _exact(self):
        """The exact comparator with the same parameters."""
        if math.isfinite(self.C):
            return ClippedKernelERM(self.kernel, self.loss, self.C, self.alpha)
        if isinstance(self.loss, _losses.Squared):
            return KernelRidge(self.kernel, self.alpha)
        return KernelERM(self.kernel, self.loss, self.alpha)

    def _pick(self, X, rng) -> np.ndarray:
        n, m = X.shape[0], min(self.n_components, X.shape[0])
        if self.landmarks == "uniform" or m == n:
            return np.sort(rng.choice(n, size=m, replace=False))
        # Ridge leverage scores estimated from a uniform pilot through the regularized Nystrom
        # features z of NystromKRR: tau~_i = (k_ii - |z_i|^2) / alpha >= tau_i(alpha).
        pilot = rng.choice(n, size=m, replace=False)
        z = NystromKRR(self.kernel, regularization=self.alpha).fit_features(X, indices=pilot)
        scores = np.maximum(self.kernel.diag(X) - np.einsum("ij,ij->i", z, z), 0.0)
        p = scores + 1e-12 * max(float(scores.max()), 1e-300)  # every row stays drawable
        return np.sort(rng.choice(n, size=m, replace=False, p=p / p.sum()))

    def fit(self, X, y) -> NystromKernelERM:
        X, y = _check_Xy(X, y)
        _check_targets(self.loss, y)
        idx = self._pick(X, np.random.default_rng(self.seed))
        krr = NystromKRR(self.kernel, alpha=self.alpha, landmarks=X[idx])
        if isinstance(self.loss, _losses.Squared) and not math.isfinite(self.C):
            krr.fit(X, y)
            Phi, w = krr.transform(X), krr.coef_
            self.n_iter_, self.duality_gap_ = 0, 0.0
        else:
            Phi = krr.fit_features(X)
            w, self.n_iter_, self.duality_gap_ = _linear_newton(
                Phi, y, self.loss, self.alpha, self.C, self.tol, self.max_iter)
        self.nystrom_ = krr
        self.landmarks_, self.landmark_indices_ = X[idx], idx
        self.coef_ = w
        self.fitted_values_ = Phi @ w
        self.rkhs_norm2_ = float(w @ w)
        self.objective_ = float(np.sum(self.loss.value(y, self.fitted_values_))) + (
            self.alpha * self.rkhs_norm2_)
        self.residual_trace_ = float(
            np.mean(self.kernel.diag(X) - np.einsum("ij,ij->i", Phi, Phi)))
        return self

    def predict(self, X) -> np.ndarray:
        self._check_fitted()
        return self.nystrom_.transform(_as_rows(X)) @ self.coef_

    def objective_gap(self, X, y, n_sub: int = 2000, seed=0) -> dict:
        r"""Exact vs. Nyström objective on a random subsample of ``n_sub`` rows.

        Fits this comparator (same landmarks rule, on the subsample) and the exact comparator
        on the same rows. Returns ``{"n", "exact", "nystrom", "relative_gap"}`` with
        ``relative_gap = (nystrom - exact) / exact`` (:math:`\ge 0` up to solver tolerance,
        since the Nyström solution is feasible for the exact problem).

        Examples
        --------
        >>> import numpy as np
        >>> from okoco import kernels
        >>> from okoco.regret import NystromKernelERM
        >>> X = np.linspace(-1, 1, 300)[:, None]; y = np.sin(3 * X[:, 0])
        >>> gap = NystromKernelERM(kernels.RBF(2.0), alpha=0.1, n_components=20).objective_gap(X, y)
        >>> bool(0 <= gap["relative_gap"] < 1e-3)
        True
        """
        X, y = _check_Xy(X, y)
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(len(y), size=min(n_sub, len(y)), replace=False))
        Xs, ys = X[idx], y[idx]
        ny = copy.copy(self).fit(Xs, ys)
        ex = self._exact().fit(Xs, ys)
        return {"n": len(idx), "exact": ex.objective_, "nystrom": ny.objective_,
                "relative_gap": (ny.objective_ - ex.objective_) / max(abs(ex.objective_), 1e-300)}
