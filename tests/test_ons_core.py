"""The compiled Online Newton Step head (okoco._core._ons.OnsState) that OnsHead, Auto's experts,
PROS-N-KONS / CON-KONS and their array loop (_pros.pros_run) share: against a dense reference
written from okoco.learners.embedding's docstring, refusals, the array loop, Auto against main."""

from pathlib import Path

import numpy as np
import pytest
from streams import as_dicts

from okoco import _core, kernels, losses
from okoco.learners import CONKONS, PROSNKONS, Auto
from okoco.learners.ons import LinearExpert

LOSSES = {"squared": losses.Squared(), "logistic": losses.Logistic(),
          "squared-hinge": losses.SquaredHinge()}
CORE = Path(_core.__file__).resolve().parent  # (the sources of the okoco imported)


def dense_ons(zs, ys, loss, alpha, C, eta):
    """The ONS of okoco.learners.embedding's docstring with explicit matrices: ``A = alpha I +
    sum_t w_t z_t z_t^T`` (a new coordinate enters with ``alpha``, ``u`` 0 on it), its inverse
    by numpy, the oblique projection onto ``|z.u| <= C`` in the A-norm, then the Newton step
    ``u <- u - gdot A_new^{-1} z``. Returns the unclipped predictions, ``u`` and ``A^{-1}``."""
    A, u, predictions = np.zeros((0, 0)), np.zeros(0), []
    for z, y in zip(zs, ys):
        new = len(z) - len(u)
        if new:  # coordinates joining
            grown = alpha * np.eye(len(z))
            grown[: len(u), : len(u)] = A
            A, u = grown, np.concatenate([u, np.zeros(new)])
        ybar = float(z @ u)
        excess = np.sign(ybar) * max(abs(ybar) - C, 0.0)
        yhat = ybar - excess
        gdot = float(loss.derivative(y, yhat))
        weight = (float(loss.second_derivative(y, yhat)) if eta == "hessian"
                  else eta * gdot * gdot)
        Pz = np.linalg.inv(A) @ z
        if excess:
            u = u - excess / float(z @ Pz) * Pz
        A = A + weight * np.outer(z, z)
        u = u - gdot * (np.linalg.inv(A) @ z)
        predictions.append(ybar)
    return np.array(predictions), u, np.linalg.inv(A)


def targets(loss_name, n, seed):
    rng = np.random.default_rng(seed)
    if loss_name == "squared":
        return rng.normal(0.0, 2.0, n)  # some beyond C = 1: the projection works
    return rng.choice([-1.0, 1.0], n)


@pytest.mark.parametrize("eta", ["hessian", 0.5])
@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_the_linear_head_is_the_dense_ons_as_features_join(loss_name, eta):
    """A LinearExpert (z = [1, x]) over 300 steps whose rows gain features at steps 100 and
    200 (new coordinates), against the dense reference: predictions, u and A^{-1}."""
    loss, n = LOSSES[loss_name], 300
    rng = np.random.default_rng(3)
    rows = [rng.normal(size=2 if t < 100 else (3 if t < 200 else 5)) for t in range(n)]
    y = targets(loss_name, n, 4)
    head = LinearExpert(loss, alpha=0.5, eta=eta, C=1.0)
    predictions = []
    for v, target in zip(rows, y):
        analysis = head.analyse(v)
        predictions.append(analysis.ybar)
        head.apply(v, analysis, head.check(target, analysis))
    zs = [np.concatenate([[1.0], v]) for v in rows]
    expected, u, P = dense_ons(zs, y, loss, 0.5, 1.0, eta)
    np.testing.assert_allclose(predictions, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(head._u[: head._P.size], u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(head._P.matrix(), P, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("eta", ["hessian", 0.5])
@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_con_kons_is_the_dense_ons_on_its_embeddings_as_atoms_join(loss_name, eta):
    """CON-KONS over 250 steps (atoms joining: its embedding of a point that joins gains the
    point's own coordinate) against the dense reference on the embeddings it used."""
    loss, n = LOSSES[loss_name], 250
    X = np.random.default_rng(5).uniform(-2, 2, (n, 2))
    y = targets(loss_name, n, 6)
    model = CONKONS(kernel=kernels.RBF(0.7), loss=loss, C=1.0, alpha=0.5, eta=eta,
                    max_size=40, seed=0)
    zs, predictions = [], []
    for x, target in zip(as_dicts(X), y):
        before = model.dictionary_size
        h = model.embed(x)
        predictions.append(float(h @ model.weights) if before else 0.0)
        model.learn_one(x, float(target))
        zs.append(model.embed(x) if model.dictionary_size > before else h)
    assert 10 < model.dictionary_size <= 40  # atoms joined along the way
    expected, u, P = dense_ons(zs, y, loss, 0.5, 1.0, eta)
    np.testing.assert_allclose(predictions, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.weights, u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model._P.matrix(), P, rtol=1e-9, atol=1e-9)


class _PythonLogistic:
    """The logistic loss written outside the package (no compiled form)."""

    exp_concavity = losses.Logistic().exp_concavity

    def value(self, y, z):
        return losses.Logistic().value(y, z)

    def derivative(self, y, z):
        return float(-y / (1.0 + np.exp(y * z)))

    def second_derivative(self, y, z):
        p = 1.0 / (1.0 + np.exp(-y * z))
        return float(p * (1.0 - p))


@pytest.mark.parametrize("eta", ["hessian", 0.5])
def test_a_users_loss_feeds_its_derivatives_to_the_same_step(eta):
    """A loss without a compiled form gives the compiled loss's model (the step is fed its
    derivative and second derivative)."""
    X = np.random.default_rng(7).uniform(-2, 2, (200, 2))
    y = targets("logistic", 200, 8)
    models = [CONKONS(kernel=kernels.RBF(0.7), loss=loss, alpha=0.5, eta=eta, seed=0)
              for loss in (losses.Logistic(), _PythonLogistic())]
    for x, target in zip(as_dicts(X), y):
        for model in models:
            model.learn_one(x, float(target))
    np.testing.assert_allclose(models[1].weights, models[0].weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(models[1]._P.matrix(), models[0]._P.matrix(), rtol=1e-12,
                               atol=1e-12)


def test_autos_heads_plan_a_users_loss_as_the_compiled_one():
    """Auto's heads plan and commit their steps in two calls (OnsState.plan / commit): with a
    loss without a compiled form the plan is fed its derivatives (feed, then prepare), as the
    dictionary heads' atoms join and the linear heads' features appear: every head ends where
    the compiled loss's does."""
    X = np.random.default_rng(9).uniform(-2, 2, (300, 3))
    y = targets("logistic", 300, 10)
    models = [Auto(loss=loss, scale_target=False)  # (a loss it does not know: no scaling)
              for loss in (losses.Logistic(), _PythonLogistic())]
    for x, target in zip(as_dicts(X), y):
        for model in models:
            model.learn_one(x, float(target))
    heads = [[e for e in model.experts if hasattr(e, "_ons_plan")] for model in models]
    assert len(heads[0]) == 6 and heads[0][0]._P.size > 10  # atoms joined
    for compiled, fed in zip(*heads):
        np.testing.assert_allclose(fed._u[: fed._P.size], compiled._u[: compiled._P.size],
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fed._P.matrix(), compiled._P.matrix(), rtol=1e-12,
                                   atol=1e-12)


def _snapshot(head):
    return (head._u.copy(), head._P.matrix(), head.online_effective_dimension, head.log_det,
            head.noise_scale_sum, head.n_seen)


@pytest.mark.parametrize(("alpha", "eta", "y", "message"), [
    (0.5, "hessian", 1e308, "loss derivative -inf"),            # not finite
    (0.5, 0.5, 1e200, "too large for a second-order step"),     # its weight overflows
    (1e-200, 0.0, 1e120, "would store non-finite"),             # the new u would overflow
])
def test_a_refused_step_changes_nothing(alpha, eta, y, message):
    head = LinearExpert(losses.Squared(), alpha=alpha, eta=eta, C=3.0)
    for v, target in [(np.array([1.0, 2.0]), 0.5), (np.array([0.5, -1.0]), -0.2)]:
        analysis = head.analyse(v)
        head.apply(v, analysis, head.check(target, analysis))
    before = _snapshot(head)
    analysis = head.analyse(np.array([2.0, 1.0, 3.0]))  # a new feature too
    with pytest.raises(ValueError, match=message):
        head.check(y, analysis)
    after = _snapshot(head)
    for old, new in zip(before, after):
        np.testing.assert_array_equal(old, new)


@pytest.mark.parametrize("cls", [CONKONS, PROSNKONS])
@pytest.mark.parametrize(("loss_name", "eta"), [("squared", "hessian"), ("logistic", 0.5),
                                                ("squared-hinge", "hessian")])
def test_the_array_loop_is_the_step_one_row_at_a_time(cls, loss_name, eta):
    """learn_many's compiled loop (pros_run, over the same OnsState step) equals learn_one row
    by row to 1e-12: predictions, u, A^{-1}, counters."""
    import pandas as pd

    X = np.random.default_rng(11).uniform(-2, 2, (400, 3))
    y = targets(loss_name, 400, 12)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    params = {"kernel": kernels.RBF(0.5), "loss": LOSSES[loss_name], "eta": eta, "C": 1.0,
              "max_size": 60, "seed": 2}
    rows, array = cls(**params), cls(**params)
    one = []
    for x, target in zip(frame.to_dict("records"), y):
        one.append(rows.predict_one(x))
        rows.learn_one(x, float(target))
    many = []
    for start in range(0, 400, 100):
        block = frame.iloc[start:start + 100]
        many.extend(array.predict_many(block))
        array.learn_many(block, pd.Series(y[start:start + 100]))
    assert array.dictionary_size == rows.dictionary_size > 5
    np.testing.assert_allclose(many[::100], one[::100], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(array.weights, rows.weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(array._P.matrix(), rows._P.matrix(), rtol=1e-12, atol=1e-12)
    for name in ("online_effective_dimension", "log_det", "noise_scale_sum"):
        assert getattr(array, name) == pytest.approx(getattr(rows, name), rel=1e-12)


def test_the_ons_step_has_one_definition():
    """The array loop takes the head's compiled step: no copy of the projection, the
    Sherman-Morrison update or the loss's derivatives in _pros.pyx."""
    source = (CORE / "_pros.pyx").read_text()
    for name in ("sym_rank_one", "sym_matvec", "second_derivative", "clip_excess", "log1p"):
        assert name not in source
    assert "head.take(" in source and "head.admits(" in source


def test_the_ons_and_pros_steps_take_at_most_ten_arguments_and_read_no_private_attribute():
    """Issue 41's measure (tests/test_core.py's) for the head's step and the array loop over
    it: pros_run took 29 arguments and reached into the head's buffers."""
    from test_core import _compiled_signatures, _private_reads

    for name in ("_ons.pyx", "_pros.pyx"):
        signatures = _compiled_signatures(CORE / name)
        assert signatures and max(count for _, count in signatures) <= 10, signatures
        assert _private_reads(CORE / name) == [], name
