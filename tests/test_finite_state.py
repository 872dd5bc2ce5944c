"""No non-finite state, ever (issue 40, item 3), and the sizes bounded at construction.

Targets at the input bound (|y| = 1e150) against a tiny predictive spread (``KRLS(nu=1e-12,
alpha=0)``, ``KONS(alpha=1e-8)``) made the running statistics overflow: ``noise_scale_sum``
became inf (and ``with_dist``'s sigma with it), and KRLS raised ``OverflowError`` after changing
its store, dictionary, weights and ``M``. The promise checked here: every call either returns,
leaving every statistic finite and ``predict_one(x, with_dist=True)`` a finite Gaussian, or
raises ``ValueError`` naming the target and saying to rescale, with the learner byte for byte
as it was (its pickle, which holds every array it keeps).
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

from okoco import kernels
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

PROBES = [{"a": 0.1, "b": 1.0}, {"a": -2.0, "b": 0.0}, {"a": 3.0, "b": 2.0}]
STATISTICS = ("noise_scale_sum", "rg_sum", "online_effective_dimension", "log_det",
              "last_residual")
REFUSAL = r"the target .* rescale the targets"


def _stream(n: int, scale: float, seed: int = 1, near: bool = False, period: int = 2):
    """Rows of two features (one of three levels), targets +-scale, the sign changing every
    ``period`` rows; with
    ``near``, the first feature within 1e-6 of three levels too (points near one another: a
    tiny ALD residual, which a full KRLS dictionary does not take)."""
    rng = np.random.default_rng(seed)
    first = ((i % 5 + 1e-6 * rng.random()) if near else rng.normal() for i in range(n))
    return [({"a": float(a), "b": float(i % 3)}, scale * (-1) ** (i // period))
            for i, a in enumerate(first)]


def _assert_finite(model):
    for name in STATISTICS:
        value = getattr(model, name, 0.0)
        assert math.isfinite(value) or (name == "last_residual" and math.isnan(value)), name
    for x in PROBES:
        dist = model.predict_one(x, with_dist=True)
        assert math.isfinite(dist.mu) and math.isfinite(dist.sigma)


def _learn_all(model, rows) -> int:
    """learn_one over ``rows``: each call returns (the state finite) or is refused (nothing
    changed); returns the count refused."""
    refused = 0
    for x, y in rows:
        # test-then-train: the analysis is the prediction's (with a recomputation of the
        # window's inverse it may make), and the step reuses it
        model.predict_one(x)
        before = pickle.dumps(model)  # every number the learner keeps (caches excluded)
        try:
            model.learn_one(x, y)
        except ValueError as error:
            assert pickle.dumps(model) == before
            assert str(y) in str(error)
            refused += 1
        _assert_finite(model)
    return refused


LEARNERS = {
    "KRLS": lambda: KRLS(nu=1e-12, alpha=0),
    # a full dictionary: the compiled step of a point that does not join (_krls.krls_step)
    "KRLS-full": lambda: KRLS(nu=1e-12, alpha=0, max_size=3),
    "KONS": lambda: KONS(alpha=1e-8),  # the window: the compiled check
    "KONS-unbounded": lambda: KONS(alpha=1e-8, max_size=None),  # the Python check
    "SketchedKONS": lambda: SketchedKONS(alpha=1e-8, seed=0),
    "SketchedKONS-alpha": lambda: SketchedKONS(alpha=1e-3, seed=0),
}


@pytest.mark.parametrize("period", [1, 2])
@pytest.mark.parametrize("name", LEARNERS)
def test_targets_at_the_bound_leave_every_statistic_finite(name, period):
    model = LEARNERS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # targets far outside [-C, C]
        rows = _stream(120, 1e150, near=name == "KRLS-full", period=period)
        refused = _learn_all(model, rows)
    assert refused < 120 or name.startswith("SketchedKONS")
    if name == "SketchedKONS-alpha":
        assert refused == 0  # a ridge of 1e-3 leaves room: no step refused


def test_the_refused_step_is_worded():
    # the case of the probe: KRLS raised OverflowError after updating its state
    model = KRLS(nu=1e-12, alpha=0)
    rows = _stream(60, 1e150)
    with pytest.raises(ValueError, match=REFUSAL):
        for x, y in rows:
            model.learn_one(x, y)
    assert math.isfinite(model.noise_scale_sum)


@pytest.mark.parametrize("max_size", [None, 3])
def test_learn_many_stops_at_the_refused_row_with_the_rows_before_learned(max_size):
    # the compiled loop (krls_run) stops before the row; the Python step refuses it: the
    # learner is then exactly the one that learned the rows before it, in one batch
    rows = _stream(80, 1e150, near=max_size is not None)
    X = np.array([[x["a"], x["b"]] for x, _ in rows])
    y = [t for _, t in rows]
    model = KRLS(nu=1e-12, alpha=0, max_size=max_size)
    with pytest.raises(ValueError, match=r"row (\d+): the target .* rescale") as caught:
        model.learn_many(X, y)
    row = int(caught.value.args[0].split(":")[0].split()[1])
    assert 0 < row < len(rows)
    reference = KRLS(nu=1e-12, alpha=0, max_size=max_size)
    reference.learn_many(X[:row], y[:row])
    assert model.n_seen == row and model._features.columns == reference._features.columns
    assert model.noise_scale_sum == reference.noise_scale_sum
    m = model.dictionary_size
    assert m == reference.dictionary_size
    assert np.array_equal(model.atoms, reference.atoms)
    assert np.array_equal(model._w[:m], reference._w[:m])
    assert np.array_equal(model._M.matrix(), reference._M.matrix())
    assert np.array_equal(model._ald.cholesky.factor(), reference._ald.cholesky.factor())
    assert [model.predict_one(x) for x in PROBES] == [reference.predict_one(x) for x in PROBES]
    _assert_finite(model)


def test_learn_many_equals_learn_one_on_the_noise_scale():
    # the compiled loop adds each row's term in order, as the steps do one by one
    rows = _stream(200, 1.0)
    X = np.array([[x["a"], x["b"]] for x, _ in rows])
    y = [t for _, t in rows]
    one, many = KRLS(nu=1e-3), KRLS(nu=1e-3)
    for x, t in rows:
        one.learn_one(x, t)
    many.learn_many(X, y)
    assert many.noise_scale_sum == one.noise_scale_sum


def test_kons_refuses_before_the_coin():
    # Sketched-KONS's check bounds the statistics with the coin 0 (its rg_sum term is then
    # gdot^2 s / alpha): a refused step draws no coin, so the generator is unchanged too
    model = SketchedKONS(alpha=1e-8, seed=0)
    state = model._rng.bit_generator.state
    with pytest.raises(ValueError, match=REFUSAL):
        model.learn_one({"a": 0.0}, 1e150)
    assert model._rng.bit_generator.state == state and model.n_seen == 0


def test_with_dist_refuses_a_variance_that_overflows():
    # a finite history of errors ~1e150 (noise scale ~1e301), then a point whose spread, its
    # ALD residual against the one atom, is k(x, x) = 1e20: the variance overflows, refused
    # rather than returned as sigma = inf
    model = KRLS(kernel=kernels.Linear(), nu=1e-3, alpha=0, max_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for x, y in _stream(30, 1e150):
            model.learn_one(x, y)
    assert 1e300 < model.noise_scale_sum < math.inf
    far = {"a": 0.0, "b": 1e10}  # orthogonal to the atom (a, 0)
    assert math.isfinite(model.predict_one(far))
    with pytest.raises(ValueError, match="predictive variance at x is inf"):
        model.predict_one(far, with_dist=True)
    assert math.isfinite(model.predict_one(PROBES[0], with_dist=True).sigma)


@pytest.mark.parametrize("make", [
    lambda size: KRLS(max_size=size),
    lambda size: FunctionalGD(budget=size),
    lambda size: KONS(max_size=size),
    lambda size: SketchedKONS(max_size=size),
], ids=["KRLS", "FunctionalGD", "KONS", "SketchedKONS"])
@pytest.mark.parametrize("size", [10**400, 2**63, 10**15 + 1], ids=["1e400", "2^63", "1e15+1"])
def test_sizes_beyond_any_memory_are_refused_at_construction(make, size):
    # they constructed, then the first compiled step raised OverflowError (Py_ssize_t)
    with pytest.raises(ValueError, match=r"(max_size|budget) must be None or an integer in "
                                         r"\[1, 1e\+15\]"):
        make(size)


def test_the_largest_size_allowed_learns():
    for model in (KRLS(max_size=10**15), FunctionalGD(budget=10**15), KONS(max_size=10**15)):
        model.learn_many(np.array([[0.1], [0.4], [0.9], [1.5], [2.0]]), [0.1, 0.2, 0.3, 0.1, 0])
        model.learn_one({"x_0": 0.3}, 0.2)
        assert model.n_seen == 6


def test_a_batch_refused_at_its_first_row_changes_nothing():
    # the step refuses the first row (Sketched-KONS bounds its statistics with the coin 0):
    # the default kernel is not fixed, the targets' scale not counted, no feature registered
    model = SketchedKONS(alpha=1e-8, seed=0)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=r"row 0: the target .* rescale"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # targets far outside [-C, C]
        model.learn_many(np.array([[0.0], [1.0]]), [1e150, -1e150])
    assert pickle.dumps(model) == before
