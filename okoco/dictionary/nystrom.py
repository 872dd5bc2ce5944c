"""Nyström kernel ridge regression from any dictionary (the w~ estimator of seeds 000, 002, 003)."""

from __future__ import annotations

import numpy as np

from okoco.dictionary._base import _check_kernel, _real

__all__ = ["NystromKRR"]


class NystromKRR:
    """Kernel ridge regression on the regularized Nyström approximation of the kernel.

    With landmarks ``I`` (points), weights ``w`` (``S = diag(sqrt(w))``) and Nyström regularizer
    ``gamma``, the training kernel is replaced by

    ``K~ = K_{X,I} S (S K_{I,I} S + gamma I)^{-1} S K_{I,X} = B B^T``,

    ``B = K_{X,I} S V diag(e)^{-1/2}`` from ``S K_II S + gamma I = V diag(e) V^T`` (eigenvalues
    below ``1e-12 max(e)`` dropped, so ``gamma = 0`` is the plain Nyström ``C W^+ C^T`` of seed
    003, robust to duplicate landmarks). The dual solution of ``(K~ + mu I) w~ = y`` (INK Eq. 8,
    Woodbury) is

    ``w~ = (y - B (B^T B + mu I)^{-1} B^T y) / mu``,

    computed in ``O(n m^2 + m^3)`` time and ``O(n m)`` memory. Fitted values are ``K~ w~ = B c``
    with ``c = (B^T B + mu I)^{-1} B^T y`` and out-of-sample predictions use the same feature map,
    ``f(x) = z(x)^T c`` (an extension: the papers analyse the fixed design only).

    ``mu`` is the ridge added to ``K~`` (scikit-learn's ``alpha``; ``n lambda`` in seed 003).

    Parameters
    ----------
    kernel
        Kernel object.
    mu
        Regression ridge ``> 0``.
    gamma
        Nyström regularizer ``>= 0``.
    landmarks
        Landmark points ``(m, d)``; if ``None``, :meth:`fit` uses ``X[indices]`` or all of ``X``
        (then ``gamma = 0`` gives exact kernel ridge regression).
    weights
        Landmark weights (``diag(S S^T)``), default all ones.

    Attributes
    ----------
    landmarks_, landmark_weights_ : numpy.ndarray
        Landmarks and merged weights actually used.
    coef_ : numpy.ndarray
        ``c``, coefficients on the Nyström features.
    dual_coef_ : numpy.ndarray
        ``w~``, the dual coefficients of Eq. 8 (length ``n``).
    fitted_ : numpy.ndarray
        ``K~ w~`` on the training points.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> from okoco.dictionary import ALD, NystromKRR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(300, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> ald = ALD(RBF(gamma=0.5), nu=1e-3); _ = ald.update_many(X)
    >>> model = NystromKRR.from_dictionary(ald, mu=1e-2).fit(X, y)
    >>> bool(np.mean((model.predict(X) - np.sin(X[:, 0])) ** 2) < 0.01)
    True
    """

    def __init__(self, kernel, mu: float = 1.0, gamma: float = 0.0, landmarks=None, weights=None):
        _check_kernel(kernel)
        self.kernel = kernel
        self.mu = _real("mu", mu, low=0.0, low_open=True)
        self.gamma = _real("gamma", gamma, low=0.0)
        self.landmarks = None if landmarks is None else np.asarray(landmarks, dtype=float)
        self.weights = None if weights is None else np.asarray(weights, dtype=float)

    @classmethod
    def from_dictionary(cls, dictionary, mu: float = 1.0, gamma: float | None = None):
        """Use the atoms and weights of a fitted dictionary (``gamma`` defaults to its own)."""
        if gamma is None:
            gamma = dictionary._nystrom_alpha
        return cls(
            dictionary.kernel,
            mu=mu,
            gamma=gamma,
            landmarks=dictionary.atoms,
            weights=dictionary.weights,
        )

    def _features_map(self, landmarks: np.ndarray, weights: np.ndarray) -> None:
        sw = np.sqrt(weights)
        M = sw[:, None] * np.asarray(self.kernel(landmarks, landmarks)) * sw[None, :]
        M = (M + M.T) / 2.0
        M[np.diag_indices_from(M)] += self.gamma
        e, V = np.linalg.eigh(M)
        top = e.max() if e.size else 0.0
        keep = e > 1e-12 * top if top > 0 else np.zeros(e.shape, dtype=bool)
        self._proj = sw[:, None] * (V[:, keep] / np.sqrt(e[keep]))

    def transform(self, X) -> np.ndarray:
        """Nyström features ``z(x)`` (``Z Z^T = K~``) of the rows of ``X``."""
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        return np.asarray(self.kernel(X, self.landmarks_)) @ self._proj

    def fit(self, X, y, indices=None, weights=None) -> NystromKRR:
        """Fit on ``(X, y)``; ``y`` may be ``(n,)`` or ``(n, k)`` (``k`` independent targets).

        ``indices`` selects landmarks among the rows of ``X`` (duplicates are merged, their
        weights summed, which leaves ``K~`` unchanged); ``weights`` then gives one weight per index.
        """
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        if X.ndim != 2 or y.shape[:1] != X.shape[:1]:
            raise ValueError(f"X must be (n, d) and y (n,) or (n, k); got {X.shape}, {y.shape}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("X and y must be finite")
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
        self.landmarks_, self.landmark_weights_ = landmarks, lw
        self._features_map(landmarks, lw)
        B = self.transform(X)
        G = B.T @ B
        G[np.diag_indices_from(G)] += self.mu
        self.coef_ = np.linalg.solve(G, B.T @ y)
        self.fitted_ = B @ self.coef_
        self.dual_coef_ = (y - self.fitted_) / self.mu
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions ``z(x)^T c``."""
        if not hasattr(self, "coef_"):
            raise RuntimeError("call fit before predict")
        return self.transform(X) @ self.coef_
