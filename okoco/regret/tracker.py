r"""Measure the regret of an online learner against an offline comparator, as it runs."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral

import numpy as np

from okoco._input import FeatureMap, check_target, reserve, undo_on_error
from okoco._validation import Interval, Protocol, check_param, check_params
from okoco.linalg import Rows
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

    _parameter_constraints = {
        "loss": [Protocol("an okoco loss (with value and derivative methods)", "value",
                          "derivative")],
        "comparator": [Protocol("a comparator (with fit and predict methods)", "fit", "predict")],
    }

    #: Saved state (okoco.persistence): the stream so far and the checkpoints evaluated.
    _saved_state = {"loss": "loss", "comparator": "obj", "checkpoints": "plain",
                    "_checkpoints": "array(*) int64 as checkpoint_steps",
                    "_next": "int[0,] as next_checkpoint", "n_seen": "int[0,]",
                    "_features": "obj:FeatureMap as features", "_X": "obj:Rows as inputs",
                    "_y": "array(>=n_seen) float64 as targets",
                    "_yp": "array(>=n_seen) float64 as predictions",
                    "_cum": "float as cumulative_loss", "_rows": "plain as records"}

    def __init__(self, loss, comparator, checkpoints=None):
        self.loss = loss
        self.comparator = comparator
        check_params(self)
        if checkpoints is None:
            cps = log_checkpoints()
        else:
            step = [Interval(Integral, 1, None, closed="left")]
            cps = np.asarray(sorted({check_param("checkpoints", c, step, owner="RegretTracker")
                                     for c in checkpoints}), dtype=int)
        self._checkpoints = cps
        # the parameter as saved and shown (a list of ints, or None: the default's)
        self.checkpoints = None if checkpoints is None else cps.tolist()
        self._next = 0
        self.n_seen = 0
        self._features = FeatureMap()
        self._X = Rows()
        self._y = np.zeros(16)
        self._yp = np.zeros(16)
        self._cum = 0.0
        self._rows: list[tuple] = []

    @property
    def features(self) -> list:
        """Feature names of a dict stream (positions of an array stream), in column order."""
        return self._features.names

    def update(self, x, y: float, y_pred: float) -> RegretTracker:
        """Record one step: features ``x`` (dict or 1-D array), target ``y``, prediction ``y_pred``.

        Evaluates the regret if the new step count is a checkpoint. Returns ``self``. Invalid
        input raises (``TypeError``/``ValueError``, naming the feature) before anything changes.
        """
        vec, new = self._features.encode(x)
        y = check_target(y, self.loss)  # the loss's own domain too (labels +-1 for Logistic)
        y_pred = check_target(y_pred, what="y_pred")
        loss = float(self.loss.value(y, y_pred))
        if not np.isfinite(loss):
            raise ValueError(f"the loss of y_pred = {y_pred!r} for y = {y!r} is {loss!r}")
        checkpoint = self._due(self.n_seen + 1)
        if checkpoint:
            # the comparator's fit may fail (a singular system, a user's comparator): then the
            # step is not recorded either, and the same update can be retried
            with undo_on_error(self, shared=(self.loss, self.comparator)):
                self._record(vec, new, y, y_pred, loss)
                self.checkpoint()
        else:
            self._record(vec, new, y, y_pred, loss)
        return self

    def _due(self, t: int) -> bool:
        """Whether step ``t`` (the next) is a checkpoint; moves past the ones already behind."""
        while self._next < len(self._checkpoints) and self._checkpoints[self._next] < t:
            self._next += 1
        return self._next < len(self._checkpoints) and self._checkpoints[self._next] == t

    def _record(self, vec, new, y: float, y_pred: float, loss: float) -> None:
        n = self.n_seen
        self._features.add(new)
        self._X.add_columns(len(new))
        self._X.append(vec)
        self._y = reserve(self._y, n + 1)
        self._yp = reserve(self._yp, n + 1)
        self._y[n], self._yp[n] = y, y_pred
        self._cum += loss
        self.n_seen = n + 1
        if self._due(self.n_seen):
            self._next += 1

    # -------------------------------------------------------------- evaluation
    @property
    def X(self) -> np.ndarray:
        """The features seen so far, ``(n_seen, n_features)``."""
        return self._X.view()

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
              include_norm: bool = True, beta=None, p_min: float = 0.0, tau_min=None,
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
                                          y_max=y_max, w_norm2=w2, beta=beta, p_min=p_min,
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
