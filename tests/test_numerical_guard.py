"""The numerical guard (issue 32, item 2): a step that would store a non-finite value, or leave
a factorization numerically singular, must be refused before it changes anything, so that a
learner never becomes unusable.

The stream is the probe's: alternating signs, magnitudes cycling up to ``10**(k-1)``, a second
feature in {0, 1, 2}, targets ±1. The promise checked: every ``learn_one`` either raises
``ValueError`` and leaves the learner as it was (``n_seen``, every stored number), or returns,
and then ``predict_one`` on the same row is finite.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

from okoco import kernels
from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto, FunctionalGD, SketchedKONS


def _stored(model):
    """Every number a KONS-family learner keeps (its predictions are functions of these)."""
    store = model._store
    parts = [store.data[: store.size].copy()] + [store.field(f).copy() for f in store.fields]
    if model.max_size is None:
        parts.append(model._chol.factor())
    else:
        parts.append(model._window.matrix())  # (P, its inverse, may be recomputed from it)
    return parts


def _probe(model, period: int, n: int = 200, wobble: float = 0.0) -> int:
    """Run the stream, checking the promise at every step; return the steps refused.
    ``wobble`` perturbs the magnitudes (relative ``wobble * sin(i)``): no point repeats."""
    refused = 0
    kons = isinstance(model, KONS)
    for i in range(n):
        x = {"x": (-1) ** i * 10.0 ** (i % period) * (1.0 + wobble * math.sin(i)), "y": i % 3}
        seen = model.n_seen
        before = _stored(model) if kons else None
        try:
            model.learn_one(x, (-1) ** (i // 2))
        except ValueError:
            assert model.n_seen == seen  # refused: nothing learned
            if kons:
                after = _stored(model)
                assert all(np.array_equal(a, b) for a, b in zip(before, after))
            refused += 1
            continue
        z = model.predict_one(x)  # raises ValueError once inf/NaN is stored
        assert math.isfinite(z)
    return refused


def _kons(cls, kernel, **kwargs):
    return lambda: cls(kernel=kernel, **kwargs)


CASES = {
    "KONS-linear-1e7": (_kons(KONS, kernels.Linear()), 8),
    "KONS-linear-1e12": (_kons(KONS, kernels.Linear()), 13),
    "SketchedKONS-linear-1e7": (_kons(SketchedKONS, kernels.Linear(), seed=0), 8),
    "SketchedKONS-linear-1e12": (_kons(SketchedKONS, kernels.Linear(), seed=0), 13),
    "KONS-poly3-1e7": (_kons(KONS, kernels.Polynomial(3)), 8),
    "SketchedKONS-poly3-1e7": (_kons(SketchedKONS, kernels.Polynomial(3), seed=0), 8),
    # the unbounded learners (IncrementalCholesky instead of the window's inverse)
    "KONS-unbounded-linear-1e7": (_kons(KONS, kernels.Linear(), max_size=None), 8),
    "KONS-unbounded-linear-1e12": (_kons(KONS, kernels.Linear(), max_size=None), 13),
    "SketchedKONS-unbounded-linear-1e12": (
        _kons(SketchedKONS, kernels.Linear(), seed=0, max_size=None), 13),
    "KONS-unbounded-poly3-1e7": (_kons(KONS, kernels.Polynomial(3), max_size=None), 8),
    "SketchedKONS-unbounded-poly3-1e7": (
        _kons(SketchedKONS, kernels.Polynomial(3), seed=0, max_size=None), 8),
    # a window small enough to remove atoms many times within the stream
    "KONS-window20-linear-1e7": (_kons(KONS, kernels.Linear(), max_size=20), 8),
    "SketchedKONS-window20-poly3-1e7": (
        _kons(SketchedKONS, kernels.Polynomial(3), seed=0, max_size=20), 8),
    "KONS-exp-concave-linear-1e7": (_kons(KONS, kernels.Linear(), eta="exp-concave"), 8),
    "FunctionalGD-linear-1e12": (_kons(FunctionalGD, kernels.Linear()), 13),
    "KRLS-linear-1e12": (_kons(KRLS, kernels.Linear()), 13),
    "PROSNKONS-linear-1e12": (_kons(PROSNKONS, kernels.Linear(), seed=0), 13),
    "CONKONS-linear-1e12": (_kons(CONKONS, kernels.Linear(), seed=0), 13),
    # Auto has no kernel parameter (RBF experts): the same stream, unscaled
    "Auto-1e12": (lambda: Auto(), 13),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_step_never_stores_what_the_next_prediction_cannot_use(name):
    make, period = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the targets-scale warning: not the point here
        _probe(make(), period)


@pytest.mark.parametrize("make", [lambda: KONS(kernel=kernels.Linear(), max_size=50),
                                  lambda: SketchedKONS(kernel=kernels.Polynomial(2), seed=2,
                                                       max_size=50)], ids=["KONS", "Sketched"])
def test_the_projection_never_divides_by_rounding_noise(make):
    """Points that are not refused (their k(x, x) within 1e10 alpha) can still lie in the span
    of the stored ones to float64 precision, with a prediction outside [-C, C]: the projection's
    alpha h(ybar) / s must not divide by the s of rounding, or the coefficients grow
    geometrically, step after step, to inf (KONS: at step 258 of this stream)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _probe(make(), 8 if isinstance(make(), KONS) else 6, n=400, wobble=0.1)


@pytest.mark.parametrize("max_size", [None, 500])
def test_the_guard_refuses_only_the_steps_beyond_the_ridge(max_size):
    """On the 1e7 stream the steps refused are those whose k(x, x) dwarfs alpha (the point
    then lies in the span of the stored ones to float64 precision); at magnitudes up to 1e3
    (k(x, x) <= 1e6 + 4, within 1e10 alpha) nothing is refused, and the predictions of the
    unbounded learner are those of kernel ridge regression on the points it learned (the
    squared loss, the curvature step and a C no prediction reaches: KONS is then
    follow-the-leader kernel ridge regression with ridge alpha / 2), from a dense solve. (The
    window's inverse form squares the conditioning, 1e9 here: it keeps the promise, not the
    digits; tests/test_kons.py checks its exactness on well-conditioned streams.)"""
    model = KONS(kernel=kernels.Linear(), C=1e9, alpha=0.1, max_size=max_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _probe(model, 4) == 0
        assert _probe(KONS(kernel=kernels.Linear(), max_size=max_size), 8) > 0
    if max_size is not None:
        return
    X = np.array([[(-1) ** i * 10.0 ** (i % 4), i % 3] for i in range(200)])
    y = np.array([(-1) ** (i // 2) for i in range(200)], dtype=float)
    G = X @ X.T + 0.05 * np.eye(200)
    for point in ([3.0, 1.0], [-20.0, 2.0]):
        expected = X @ point @ np.linalg.solve(G, y)
        got = model.predict_one({"x": point[0], "y": point[1]})
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_a_refused_step_leaves_the_pickled_state_unchanged():
    """The whole state, byte for byte, after a refusal of the guard (the unbounded learner:
    its analysis never refreshes anything)."""
    model = KONS(kernel=kernels.Linear(), max_size=None)
    refused = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(60):
            x = {"x": (-1) ** i * 10.0 ** (i % 8), "y": i % 3}
            state = pickle.dumps(model)
            try:
                model.learn_one(x, (-1) ** (i // 2))
            except ValueError as error:
                assert "too large" in str(error) and "alpha" in str(error)
                assert pickle.dumps(model) == state
                refused += 1
    assert refused > 0
