"""A dictionary head that takes first-order steps once its dictionary is full
(``DictionaryExpert.full_alpha``; ``Auto``'s sharp head, ``okoco.learners.auto.FULL_ALPHA``)."""

import numpy as np
import pytest

import okoco
import okoco.learners.auto as auto_module
from okoco import kernels, losses
from okoco.learners import Auto
from okoco.learners.embedding import SharedEmbedding
from okoco.learners.ons import DictionaryExpert


class _Shared:
    """The part of a step's ``StepShared`` a dictionary head reads: its embedding."""

    def __init__(self, embedded):
        self.embedded = [embedded]


def _step(embedding, head, v, y):
    """One step of ``head`` on ``embedding`` as ``Auto`` takes it (check, coin, apply)."""
    embedded = embedding.analyse(v)
    analysis = head.analyse(v, _Shared(embedded))
    step = head.check(y, analysis)
    embedding.offer(v, embedded)
    head.apply(v, analysis, step)
    return analysis


def _stream(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]


def test_the_head_is_the_ons_until_the_fill_then_projected_gradient_steps():
    """Until its dictionary holds ``max_size`` atoms the head is bit for bit the plain ONS
    head on a twin dictionary; from the step after the fill, ``u`` moves as the projected
    gradient step with ``A = full_alpha I``: the projection onto ``|z.u| <= C``
    (``u -= excess z / z.z``), then ``u -= loss'(y, clip(z.u)) z / full_alpha`` (dense
    reference)."""
    loss, C = losses.Squared(), 1.0
    X, y = _stream(120)
    embedding = SharedEmbedding(kernels.RBF(0.7), 1.0, max_size=8, seed=3)
    twin_embedding = SharedEmbedding(kernels.RBF(0.7), 1.0, max_size=8, seed=3)
    head = DictionaryExpert(embedding, loss, alpha=0.1, C=C, full_alpha=3.0)
    twin = DictionaryExpert(twin_embedding, loss, alpha=0.1, C=C)
    t = 0
    while head.eta == "hessian":
        _step(embedding, head, X[t], 4 * y[t])
        _step(twin_embedding, twin, X[t], 4 * y[t])
        if head.eta == "hessian":
            assert np.array_equal(head._u[: head._P.size], twin._u[: twin._P.size])
            assert np.array_equal(head._P.matrix(), twin._P.matrix())
        t += 1
    assert embedding.size == 8 and head.alpha == 3.0 and head.eta == 0.0
    assert np.allclose(head._P.matrix(), np.eye(8) / 3.0, rtol=0, atol=0)
    projected = 0
    for s in range(t, X.shape[0]):
        u = head._u[:8].copy()
        z = embedding.analyse(X[s]).h
        ybar = z @ u
        yhat = min(max(ybar, -C), C)
        expected = u - (ybar - yhat) * z / (z @ z) - loss.derivative(4 * y[s], yhat) * z / 3.0
        projected += ybar != yhat
        _step(embedding, head, X[s], 4 * y[s])
        assert np.allclose(head._u[:8], expected, rtol=1e-12, atol=1e-12)
    assert projected > 0  # the projection was exercised, not only the gradient step


def test_full_alpha_is_checked():
    embedding = SharedEmbedding(kernels.RBF(1.0), max_size=5)
    for bad in (0, -1.0, float("nan"), "3"):
        with pytest.raises((ValueError, TypeError), match="full_alpha"):
            DictionaryExpert(embedding, losses.Squared(), full_alpha=bad)
    assert DictionaryExpert(embedding, losses.Squared()).get_params()["full_alpha"] is None


def test_autos_sharp_head_switches_and_a_saved_auto_goes_on_identically(tmp_path, monkeypatch):
    """Only the sharp head (``DEFAULT_EXPERTS``' second) has ``full_alpha``; with dictionaries
    of 12 atoms it switches once its dictionary is full and it took FULL_AFTER * 12 steps,
    the smooth head stays the ONS, and a
    saved and loaded ``Auto`` predicts and learns on exactly as the original."""
    monkeypatch.setattr(auto_module, "DICTIONARY", (1.0, 12, 30.0, "usage"))
    assert [spec[4:] for spec in auto_module.DEFAULT_EXPERTS if spec[0] == "dictionary"] == \
        [(), (auto_module.FULL_ALPHA,), (), ()]
    X, y = _stream(200, seed=1)
    rows = [({i: float(v) for i, v in enumerate(x)}, float(t)) for x, t in zip(X, y)]
    model = Auto()
    for x, target in rows[:150]:
        model.learn_one(x, target)
    smooth, sharp = model.experts[0], model.experts[1]
    assert sharp.dictionary_size == 12 and (sharp.eta, sharp.alpha) == (0.0, 3.0)
    assert type(sharp._P).__name__ == "ScaledIdentity"  # I/3 held as its scalar
    assert smooth.eta == "hessian" and smooth.alpha == 0.1
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    assert loaded.experts[1].full_alpha == 3.0 and loaded.experts[1].eta == 0.0
    for x, target in rows[150:]:
        assert loaded.predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9, abs=1e-9)
        model.learn_one(x, target)
        loaded.learn_one(x, target)
