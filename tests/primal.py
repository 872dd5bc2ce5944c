"""Primal (explicit-feature) references for the kernel learners' tests."""

import numpy as np


def h(z, C):
    return np.sign(z) * max(abs(z) - C, 0.0)


def primal_ons(Phi, y, loss, C, alpha, eta, coins=None):
    """Online Newton Step with the oblique projection (spec section 2.1), explicit features.

    ``coins`` (0/1 per step) gives primal sketched ONS: A_t = A_{t-1} + eta_t z_t g_t g_t^T.
    Returns predictions, the fraction of projected steps, and per-step records.
    """
    n, D = Phi.shape
    A = alpha * np.eye(D)
    u = np.zeros(D)
    preds, active, records = [], 0, []
    for t in range(n):
        x = Phi[t]
        Ainv_x = np.linalg.solve(A, x)
        ybar = x @ u
        ex = h(ybar, C)
        active += ex != 0
        w = u - ex / (x @ Ainv_x) * Ainv_x
        yhat = x @ w
        preds.append(yhat)
        e = eta(t + 1) if callable(eta) else eta
        gdot = float(loss.derivative(y[t], yhat))
        g = gdot * x
        z = 1 if coins is None else coins[t]
        A = A + e * z * np.outer(g, g)
        records.append({"w": w, "gdot": gdot, "eta": e, "g_Ainv_g": g @ np.linalg.solve(A, g)})
        u = w - np.linalg.solve(A, g)
    return np.array(preds), active / n, records


def poly2_features(X, gamma, coef0):
    """Explicit map of (gamma <x, y> + coef0)^2."""
    outer = np.einsum("ni,nj->nij", X, X).reshape(len(X), -1)
    return np.hstack([np.full((len(X), 1), coef0), np.sqrt(2 * coef0 * gamma) * X, gamma * outer])
