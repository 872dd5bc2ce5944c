r"""Measure the regret of an online learner against an offline comparator, as it runs."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

from okoco.regret import bounds as _bounds

__all__ = ["RegretTracker", "log_checkpoints"]


def log_checkpoints(t_max: int = 10**7, per_decade: int = 4, start: int = 10) -> np.ndarray:
    """Log-spaced integer checkpoints ``start, ..., <= t_max`` (``per_decade`` per factor 10).

    Examples
    --------
    >>> from okoco.regret import log_checkpoints
    >>> log_checkpoints(1000).tolist()
    [10, 18, 32, 56, 100, 178, 316, 562, 1000]
    """
    k = np.arange(0, int(np.ceil(per_decade * np.log10(t_max / start))) + 1)
    pts = np.unique(np.round(start * 10.0 ** (k / per_decade)).astype(int))
    return pts[pts <= t_max]


class RegretTracker:
    r"""Regret :math:`R_t = \sum_{s\le t}\ell(y_s, \hat y_s) - \sum_{s\le t}\ell(y_s, f_t(x_s))`
    of a learner against a comparator :math:`f_t` refitted on each checkpoint's prefix.

    Feed it every step with :meth:`update` (test-then-train: ``y_pred`` must be the prediction
    made *before* the learner saw ``y``). At each checkpoint the comparator is fitted on
    :math:`(x_s, y_s)_{s\le t}` and its loss on that prefix is recorded (Calandriello et al.
    2017, Sect. 2: :math:`R_T(w) = \sum_t \ell_t(\hat y_t) - \ell_t(\phi_t^\top w)`). For a
    regularised comparator this is :math:`R_t(f_t)`, the regret against one feasible function,
    which is what the bounds control (they hold for every feasible :math:`w`, with
    :math:`\alpha\lVert w\rVert^2` on the right, see :meth:`bound`).

    Parameters
    ----------
    loss
        The loss the learner is scored with (an okoco loss).
    comparator
        Any object with ``fit(X, y)`` returning itself and ``predict(X)``; if it has
        ``rkhs_norm2_`` after fitting, it is recorded for the bounds.
    checkpoints
        Increasing step counts at which to evaluate; ``None`` uses :func:`log_checkpoints`
        (10, 18, 32, 56, 100, ...). :meth:`checkpoint` adds one at the current step.

    Attributes
    ----------
    t, regret, learner_loss, comparator_loss, comparator_norm2 : ndarray
        One entry per evaluated checkpoint (cumulative losses on the prefix).
    n_seen : int
        Steps seen.
    features : list
        Feature names of a dict stream, in column order (missing features count as 0).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import kernels, losses
    >>> from okoco.regret import KernelRidge, RegretTracker
    >>> rng = np.random.default_rng(0)
    >>> tracker = RegretTracker(losses.Squared(), KernelRidge(kernels.RBF(1.0), alpha=1.0),
    ...                         checkpoints=[50, 100])
    >>> for _ in range(100):
    ...     x = {"a": rng.uniform(-1, 1)}
    ...     _ = tracker.update(x, np.sin(3 * x["a"]), y_pred=0.0)  # a learner predicting 0
    >>> tracker.t.tolist(), bool(np.all(tracker.regret > 0))
    ([50, 100], True)
    """

    def __init__(self, loss, comparator, checkpoints=None):
        for name in ("fit", "predict"):
            if not callable(getattr(comparator, name, None)):
                raise TypeError(f"comparator must have a {name}() method, got {comparator!r}")
        self.loss = loss
        self.comparator = comparator
        if checkpoints is None:
            cps = log_checkpoints()
        else:
            cps = np.asarray(sorted({int(c) for c in checkpoints}), dtype=int)
            if cps.size and cps[0] < 1:
                raise ValueError("checkpoints must be >= 1")
        self._checkpoints = cps
        self._next = 0
        self.n_seen = 0
        self.features: list = []
        self._index: dict = {}
        self._X = np.zeros((16, 0))
        self._y = np.zeros(16)
        self._yp = np.zeros(16)
        self._cum = 0.0
        self._rows: list[tuple] = []
        self._width = None

    # -------------------------------------------------------------- input
    def _row(self, x) -> np.ndarray:
        if isinstance(x, Mapping):
            if self._width is not None and not self._index and self.n_seen:
                raise TypeError("this tracker was fed arrays; got a dict")
            for k in x:
                if k not in self._index:
                    self._index[k] = len(self.features)
                    self.features.append(k)
            v = np.zeros(len(self.features))
            for k, val in x.items():
                if isinstance(val, bool) or not isinstance(val, numbers.Real):
                    raise TypeError(f"feature {k!r} must be a real number, got {val!r}")
                v[self._index[k]] = float(val)
        else:
            if self._index:
                raise TypeError("this tracker was fed dicts; got an array")
            v = np.asarray(x, dtype=float).ravel()
            if self._width is not None and v.shape[0] != self._width:
                raise ValueError(f"x has {v.shape[0]} features, expected {self._width}")
            self._width = v.shape[0]
        if not np.all(np.isfinite(v)):
            bad = [f for f, val in zip(self.features or range(len(v)), v, strict=False)
                   if not np.isfinite(val)]
            raise ValueError(f"x has non-finite values in feature(s) {bad}")
        return v

    def update(self, x, y: float, y_pred: float) -> RegretTracker:
        """Record one step: features ``x`` (dict or 1-D array), target ``y``, prediction ``y_pred``.

        Evaluates the regret if the new step count is a checkpoint. Returns ``self``.
        """
        v = self._row(x)
        y, y_pred = float(y), float(y_pred)
        if not (np.isfinite(y) and np.isfinite(y_pred)):
            raise ValueError(f"y and y_pred must be finite, got {y!r} and {y_pred!r}")
        n = self.n_seen
        if n == self._y.shape[0] or v.shape[0] > self._X.shape[1]:
            cap = max(16, 2 * n) if n == self._y.shape[0] else self._y.shape[0]
            X = np.zeros((cap, max(v.shape[0], self._X.shape[1])))
            X[:n, : self._X.shape[1]] = self._X[:n]
            self._X = X
            if cap != self._y.shape[0]:
                self._y = np.concatenate([self._y[:n], np.zeros(cap - n)])
                self._yp = np.concatenate([self._yp[:n], np.zeros(cap - n)])
        self._X[n, : v.shape[0]] = v
        self._y[n], self._yp[n] = y, y_pred
        self._cum += float(self.loss.value(y, y_pred))
        self.n_seen = n + 1
        while self._next < len(self._checkpoints) and self._checkpoints[self._next] < self.n_seen:
            self._next += 1
        if self._next < len(self._checkpoints) and self._checkpoints[self._next] == self.n_seen:
            self._next += 1
            self.checkpoint()
        return self

    # -------------------------------------------------------------- evaluation
    @property
    def X(self) -> np.ndarray:
        """The features seen so far, ``(n_seen, n_features)``."""
        return self._X[: self.n_seen]

    @property
    def y(self) -> np.ndarray:
        return self._y[: self.n_seen]

    def checkpoint(self) -> float:
        """Fit the comparator on all steps so far, record and return :math:`R_t`."""
        t = self.n_seen
        if t == 0:
            raise ValueError("no steps recorded yet")
        if self._rows and self._rows[-1][0] == t:
            return self._rows[-1][1]
        X, y = self.X, self.y
        comp = self.comparator.fit(X, y)
        f = np.asarray(comp.predict(X), dtype=float)
        comp_loss = float(np.sum(self.loss.value(y, f)))
        norm2 = float(getattr(comp, "rkhs_norm2_", np.nan))
        regret = self._cum - comp_loss
        self._rows.append((t, regret, self._cum, comp_loss, norm2))
        return regret

    def _col(self, i) -> np.ndarray:
        return np.array([r[i] for r in self._rows], dtype=int if i == 0 else float)

    @property
    def t(self) -> np.ndarray:
        return self._col(0)

    @property
    def regret(self) -> np.ndarray:
        return self._col(1)

    @property
    def learner_loss(self) -> np.ndarray:
        return self._col(2)

    @property
    def comparator_loss(self) -> np.ndarray:
        return self._col(3)

    @property
    def comparator_norm2(self) -> np.ndarray:
        return self._col(4)

    # -------------------------------------------------------------- bounds and plots
    def bound(self, *, C: float, alpha: float, eta="exp-concave", kernel=None, y_max=None,
              include_norm: bool = True, beta=None, gamma: float = 0.0, tau_min=None,
              eps: float = 0.0, max_exact: int = 5000) -> np.ndarray:
        r"""The theoretical bound at each evaluated checkpoint (see :func:`bounds.kons_bound`).

        :math:`d_{\rm eff}` is computed exactly (``eigvalsh``) from the raw kernel on each
        prefix, so it is limited to ``max_exact`` points. ``kernel`` defaults to the comparator's.
        With ``include_norm`` the term :math:`\alpha\lVert f_t\rVert^2` of the recorded
        comparator is added (0 if its norm is undefined).
        """
        kernel = kernel if kernel is not None else getattr(self.comparator, "kernel", None)
        if kernel is None:
            raise ValueError("pass kernel=...; the comparator has none")
        out = []
        for t, norm2 in zip(self.t, self.comparator_norm2, strict=True):
            if t > max_exact:
                raise ValueError(
                    f"exact d_eff at t={t} > max_exact={max_exact}; raise max_exact or "
                    "use fewer/earlier checkpoints")
            K = kernel(self.X[:t], self.X[:t])
            w2 = norm2 if (include_norm and np.isfinite(norm2)) else 0.0
            out.append(_bounds.kons_bound(K, loss=self.loss, C=C, alpha=alpha, eta=eta,
                                          y_max=y_max, w_norm2=w2, beta=beta, gamma=gamma,
                                          tau_min=tau_min, eps=eps))
        return np.array(out)

    def plot(self, ax=None, bound=None, logx: bool = True, label: str = "regret"):
        """Plot regret against ``t`` (and a bound curve); returns the matplotlib ``Axes``.

        ``bound`` is ``None``, an array aligned with :attr:`t`, or a dict of keyword arguments
        for :meth:`bound`. Works with any backend, including ``Agg``.
        """
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots()
        ax.plot(self.t, self.regret, marker="o", label=label)
        if bound is not None:
            values = self.bound(**bound) if isinstance(bound, Mapping) else np.asarray(bound)
            ax.plot(self.t, values, linestyle="--", label="bound")
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel("t")
        ax.set_ylabel("regret $R_t$")
        ax.legend()
        return ax
