"""Nyström kernel ridge regression on any set of weighted landmarks (a dictionary or not)."""

from __future__ import annotations

from numbers import Real

import numpy as np

from okoco._input import check_array
from okoco._validation import Interval, check_params
from okoco.dictionary._base import KERNEL

__all__ = ["NystromKRR"]


class NystromKRR:
    r"""Kernel ridge regression on the regularized Nyström approximation of the kernel.

    With landmarks ``I`` (points), weights ``w`` (``S = diag(sqrt(w))``) and Nyström
    regularizer ``regularization`` (:math:`\gamma`), the training kernel is replaced by

    :math:`\widetilde K = K_{X,I} S (S K_{I,I} S + \gamma I)^{-1} S K_{I,X} = B B^\top`,

    :math:`B = K_{X,I} S V \mathrm{diag}(e)^{-1/2}` from
    :math:`S K_{I,I} S + \gamma I = V \mathrm{diag}(e) V^\top` (eigenvalues below
    :math:`10^{-12} \max e` dropped, so :math:`\gamma = 0` is the plain Nyström
    :math:`C W^+ C^\top` of El Alaoui and Mahoney (2015), robust to duplicate landmarks). The
    dual solution of :math:`(\widetilde K + \alpha I)\tilde w = y` (Calandriello, Lazaric and
    Valko 2017, "Efficient second-order online kernel learning with adaptive embedding",
    Eq. 8, by Woodbury) is

    :math:`\tilde w = (y - B (B^\top B + \alpha I)^{-1} B^\top y) / \alpha`,

    computed in :math:`O(n m^2 + m^3)` time and :math:`O(n m)` memory. Fitted values are
    :math:`\widetilde K \tilde w = B c` with :math:`c = (B^\top B + \alpha I)^{-1} B^\top y`, and
    out-of-sample predictions use the same feature map, :math:`f(x) = z(x)^\top c`.

    The landmarks may come from a dictionary (:meth:`from_dictionary`), from indices into the
    training rows, or from anywhere (``landmarks=``); the regret comparator
    :class:`okoco.regret.NystromKernelERM` uses the same feature map for any loss.

    Parameters
    ----------
    kernel
        Kernel object.
    alpha
        Regression ridge :math:`\alpha > 0` (the ``alpha`` of scikit-learn's ``KernelRidge``).
    regularization
        Nyström regularizer :math:`\gamma \ge 0` (the dictionary's own regularizer when built
        with :meth:`from_dictionary`).
    landmarks
        Landmark points ``(m, d)``; if ``None``, :meth:`fit` uses ``X[indices]`` or all of ``X``
        (then ``regularization = 0`` gives exact kernel ridge regression).
    weights
        Landmark weights (``diag(S S^T)``), default all ones.

    Attributes
    ----------
    landmarks_, landmark_weights_ : numpy.ndarray
        Landmarks and merged weights actually used.
    coef_ : numpy.ndarray
        :math:`c`, coefficients on the Nyström features.
    dual_coef_ : numpy.ndarray
        :math:`\tilde w`, the dual coefficients (length ``n``).
    fitted_ : numpy.ndarray
        :math:`\widetilde K \tilde w` on the training points.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import ALD, NystromKRR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(300, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> ald = ALD(RBF(gamma=0.5), nu=1e-3); _ = ald.update_many(X)
    >>> model = NystromKRR.from_dictionary(ald, alpha=1e-2).fit(X, y)
    >>> bool(np.mean((model.predict(X) - np.sin(X[:, 0])) ** 2) < 0.01)
    True
    """

    _parameter_constraints = {
        "kernel": [KERNEL],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "regularization": [Interval(Real, 0, None, closed="left")],
    }

    #: Saved state (okoco.persistence): the fitted map (m landmarks, k features) and solution.
    _saved_state = {
        "kernel": "kernel", "alpha": "number", "regularization": "number",
        "landmarks": "array(*, *) float64|none", "weights": "array(*) float64|none",
        "landmarks_": "opt array(m, *) float64", "landmark_weights_": "opt array(m) float64",
        "_proj": "opt array(m, k) float64 as projection",
        "coef_": "opt array(k) float64|array(k, *) float64",
        "fitted_": "opt array(*) float64|array(*, *) float64",
        "dual_coef_": "opt array(*) float64|array(*, *) float64",
    }

    def __init__(self, kernel, alpha: float = 1.0, regularization: float = 0.0, landmarks=None,
                 weights=None):
        self.kernel = kernel
        self.alpha = alpha
        self.regularization = regularization
        check_params(self)
        self.landmarks = None if landmarks is None else np.asarray(landmarks, dtype=float)
        self.weights = None if weights is None else np.asarray(weights, dtype=float)

    @classmethod
    def from_dictionary(cls, dictionary, alpha: float = 1.0,
                        regularization: float | None = None) -> NystromKRR:
        """Use the atoms and weights of a fitted dictionary (``regularization`` defaults to the
        dictionary's own Nyström regularizer)."""
        if regularization is None:
            regularization = dictionary._nystrom_alpha
        return cls(dictionary.kernel, alpha=alpha, regularization=regularization,
                   landmarks=dictionary.atoms, weights=dictionary.weights)

    def transform(self, X) -> np.ndarray:
        """Nyström features ``z(x)`` (``Z Z^T = K~``) of the rows of ``X``."""
        if not hasattr(self, "_proj"):
            raise RuntimeError("call fit (or fit_features) before transform")
        X = check_array(X, "X")
        if X.ndim == 1:
            X = X[None, :]
        return np.asarray(self.kernel(X, self.landmarks_)) @ self._proj

    def fit_features(self, X, indices=None, weights=None) -> np.ndarray:
        """Choose the landmarks, build the feature map and return the features of ``X``.

        ``indices`` selects landmarks among the rows of ``X`` (duplicates are merged, their
        weights summed, which leaves ``K~`` unchanged); ``weights`` then gives one weight per
        index. Without ``indices``, the ``landmarks`` given to the constructor are used, else all
        of ``X``. :meth:`fit` starts with this step.
        """
        X = check_array(X, "X")
        if X.ndim != 2:
            raise ValueError(f"X must be a finite (n, d) array, got shape {X.shape}")
        if indices is not None:
            indices = np.asarray(indices, dtype=np.int64)
            w = np.ones(indices.shape[0]) if weights is None else np.asarray(weights, float)
            if w.shape != indices.shape:
                raise ValueError("weights must have one entry per index")
            uniq, inv = np.unique(indices, return_inverse=True)
            landmarks, lw = X[uniq], np.bincount(inv, weights=w)
        elif self.landmarks is not None:
            landmarks = self.landmarks
            lw = np.ones(landmarks.shape[0]) if self.weights is None else self.weights
        else:
            landmarks = X
            lw = np.ones(X.shape[0]) if weights is None else np.asarray(weights, float)
        if np.any(lw <= 0):
            raise ValueError("landmark weights must be > 0")
        sw = np.sqrt(lw)
        M = sw[:, None] * np.asarray(self.kernel(landmarks, landmarks)) * sw[None, :]
        M = (M + M.T) / 2.0
        M[np.diag_indices_from(M)] += self.regularization
        e, V = np.linalg.eigh(M)
        top = e.max() if e.size else 0.0
        keep = e > 1e-12 * top if top > 0 else np.zeros(e.shape, dtype=bool)
        self.landmarks_, self.landmark_weights_ = landmarks, lw
        self._proj = sw[:, None] * (V[:, keep] / np.sqrt(e[keep]))
        return self.transform(X)

    def fit(self, X, y, indices=None, weights=None) -> NystromKRR:
        """Fit on ``(X, y)``; ``y`` may be ``(n,)`` or ``(n, k)`` (``k`` independent targets).

        ``indices`` and ``weights`` choose the landmarks, as in :meth:`fit_features`.
        """
        y = check_array(y, "y")
        if y.shape[:1] != np.shape(X)[:1]:
            raise ValueError(f"y must be finite, (n,) or (n, k) for X of shape {np.shape(X)}; "
                             f"got {y.shape}")
        B = self.fit_features(X, indices, weights)
        G = B.T @ B
        G[np.diag_indices_from(G)] += self.alpha
        self.coef_ = np.linalg.solve(G, B.T @ y)
        self.fitted_ = B @ self.coef_
        self.dual_coef_ = (y - self.fitted_) / self.alpha
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions ``z(x)^T c``."""
        if not hasattr(self, "coef_"):
            raise RuntimeError("call fit before predict")
        return self.transform(X) @ self.coef_
