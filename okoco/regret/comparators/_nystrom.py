"""The comparator for long streams: kernel ERM restricted to the span of Nystrom landmarks."""

from __future__ import annotations

import copy
import math

import numpy as np
from scipy import linalg as sla

from okoco import losses as _losses
from okoco._validation import Options, check_params
from okoco.dictionary import NystromKRR
from okoco.regret.comparators._clipped import ClippedKernelERM
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
from okoco.regret.comparators._exact import KernelERM, KernelRidge


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


# The class is published as okoco.regret.comparators.NystromKernelERM (its __module__), where
# doctest finds its docstring but not its methods' (their globals are this module's).
__test__ = {"NystromKernelERM.objective_gap": NystromKernelERM.objective_gap}
