"""Primal (explicit-feature) references for the kernel learners' tests."""

import math

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
        gdot = float(loss.derivative(y[t], yhat))
        g = gdot * x
        z = 1 if coins is None else coins[t]
        if eta == "hessian":  # A gains loss''(yhat) x x^T
            weight = float(loss.second_derivative(y[t], yhat))
            e = weight / gdot**2 if gdot else math.inf
            A = A + z * weight * np.outer(x, x)
        else:
            e = eta(t + 1) if callable(eta) else eta
            weight = e * gdot**2
            A = A + e * z * np.outer(g, g)
        records.append({"w": w, "gdot": gdot, "eta": e, "weight": weight,
                        "g_Ainv_g": g @ np.linalg.solve(A, g)})
        u = w - np.linalg.solve(A, g)
    return np.array(preds), active / n, records


def poly2_features(X, gamma, coef0):
    """Explicit map of (gamma <x, y> + coef0)^2."""
    outer = np.einsum("ni,nj->nij", X, X).reshape(len(X), -1)
    return np.hstack([np.full((len(X), 1), coef0), np.sqrt(2 * coef0 * gamma) * X, gamma * outer])


def feasible_linear_stream(n=300, d=4, C=1.0, seed=9):
    """Unit-norm features with targets of a linear function plus noise, clipped to [-C, C]."""
    from streams import unit_rows

    X = unit_rows(n, d, seed=seed)
    w_true = np.array([0.5, -0.3, 0.8, 0.1])[:d]
    y = np.clip(X @ w_true + 0.1 * np.random.default_rng(0).normal(size=n), -C, C)
    return X, y, w_true


def regret_inequality_slack(X, y, preds, records, w, *, loss, C, alpha, sigma, rg_sum, coins=None):
    """Right side minus left side of spec section 7 item 12 for the comparator w, rescaled into
    the feasible set: alpha ||w||^2 + R_G + R_D - 2 R_T(w), with R_D using eta_t z_t - sigma
    (written with the weight eta_t gdot_t^2, finite also for the hessian step at gdot_t = 0)."""
    w = w / max(1.0, np.abs(X @ w).max() / C)  # feasible: |x_t . w| <= C
    coins = np.ones(len(X)) if coins is None else coins
    regret = np.sum(loss.value(y, preds) - loss.value(y, X @ w))
    r_d = sum((r["weight"] * z - sigma * r["gdot"] ** 2) * (p - x @ w) ** 2
              for r, z, p, x in zip(records, coins, preds, X))
    return alpha * w @ w + rg_sum + r_d - 2 * regret
