"""KONS's step in one home (issue 41): the unbounded learner (``max_size=None``) runs the
window's compiled phases (``okoco._core._kons.KONSCore``) over its Cholesky factor, with the
window's formulas and the factor's accuracy."""

import numpy as np
import pytest
from primal import poly2_features, primal_ons
from streams import run, unit_rows

from okoco import kernels, losses
from okoco.learners import KONS
from okoco.learners._step_size import StepSize

LOSSES = [losses.Squared(), losses.Logistic(), losses.SquaredHinge()]


def poly_stream(n, seed=0):
    X = unit_rows(n, 3, seed=seed)
    y = np.clip(1.5 * np.sin(3 * X @ np.arange(1.0, 4.0)), -1, 1)
    return X, y


@pytest.mark.parametrize("eta", ["hessian", "exp-concave"])
@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
def test_unbounded_kons_is_primal_ons_over_1200_steps(loss, eta):
    """1,200 steps of the unbounded learner against the Online Newton Step on the explicit
    features of the polynomial kernel (dense solves of A = alpha I + sum eta g g^T), with the
    projection active, to 1e-8 relative."""
    X, y = poly_stream(1200)
    if not isinstance(loss, losses.Squared):
        y = np.where(y >= 0, 1.0, -1.0)
    C, alpha = 0.6, 0.1
    kernel = kernels.Polynomial(degree=2, gamma=0.8, coef0=0.5)
    step = eta if eta == "hessian" else StepSize(eta, loss, C=C)
    expected, active, _ = primal_ons(poly2_features(X, 0.8, 0.5), y, loss, C, alpha, step)
    model = KONS(kernel=kernel, loss=loss, C=C, alpha=alpha, eta=eta, max_size=None)
    got = run(model, X, y)
    assert active > 0.005 and model.dictionary_size == 1200
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("max_size", [None, 50])
def test_the_compiled_analysis_takes_either_preconditioner(max_size):
    """``KONSCore.analyse_row`` over the window's inverse or the unbounded learner's Cholesky
    factor: ``hh = e^T (Kbar_I + alpha I)^{-1} e`` and the prediction by dense solves over the
    stored points, and ``h = M^{-1} e`` (window) or ``L^{-1} e`` (factor, ``L L^T = M``)."""
    X, y = poly_stream(40, seed=2)
    kernel, alpha = kernels.RBF(0.7), 0.3
    model = KONS(kernel=kernel, loss=losses.Logistic(), C=0.8, alpha=alpha, max_size=max_size)
    run(model, X, np.where(y >= 0, 1.0, -1.0))
    v = unit_rows(1, 3, seed=9)[0]
    store = model._store
    k, kappa = np.asarray(kernel(X, v[None, :]))[:, 0], 1.0
    preconditioner = model._chol if max_size is None else model._window
    _, _, e, h, ybar, kc, hh = model._step_core().analyse_row(
        store, preconditioner, alpha, k, kappa, model._selected, model._g)
    d, c = store.field("d"), store.field("c")
    K = np.asarray(kernel(X, X))
    M = d[:, None] * K * d[None, :] + alpha * np.eye(len(d))
    np.testing.assert_allclose(e, d * k, rtol=1e-12)
    solved = np.linalg.solve(M, e)
    if max_size is None:
        np.testing.assert_allclose(np.linalg.cholesky(M) @ h, e, rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(h, solved, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hh, e @ solved, rtol=1e-9)
    np.testing.assert_allclose(ybar, (kc - solved @ (d * (K @ c))) / alpha, rtol=1e-9,
                               atol=1e-12)
