"""The windowed KONS experts' lean step (issue 42, "winpath"): the shared rows' memo keyed by
the input's bytes, the compiled phases' views of the last analysis, and the Python frames a
step of experts over shared points makes."""

import collections
import copy
import pathlib
import sys

import numpy as np
import pytest
from test_kons import windowed_krr_predictions

from okoco import kernels
from okoco.learners import KONS
from okoco.learners.shared import SharedPoints, StepShared
from okoco.linalg import SlotInverse


def shared_points(n=12, d=3, ring=None, seed=0):
    rng = np.random.default_rng(seed)
    points = SharedPoints(max_size=ring)
    for _ in range(n):
        points.append(rng.normal(size=d))
    return points


@pytest.mark.parametrize("kernel", [kernels.RBF(0.4), kernels.RBF(0.4) + 0.5 * kernels.Linear(),
                                    kernels.Polynomial(degree=2)])
def test_row_view_is_the_kernels_row_over_the_points(kernel):
    points = shared_points()
    v = np.array([0.3, -1.0, 2.0])
    row = points.row_view(kernel, v)
    expected = kernel(points.rows.view(), v[None, :])[:, 0]  # the kernel's own block
    np.testing.assert_allclose(row, expected, rtol=1e-12, atol=1e-14)
    assert np.array_equal(row, points.rows.kernel_row(kernel, v))  # Rows' row, bit for bit
    assert not row.flags.writeable  # a view of the memo, handed to several experts


def test_row_view_memo_is_keyed_by_the_inputs_bytes():
    points, rbf = shared_points(), kernels.RBF(0.4)
    v = np.array([0.3, -1.0, 2.0])
    row = points.row_view(rbf, v)
    assert points.row_view(rbf, v.copy()) is row  # equal bytes: the memo, not a new row
    w = v.copy()
    w[1] = 5.0  # an input changed in place is another input
    moved = points.row_view(rbf, w)
    assert moved is not row and np.array_equal(moved, points.rows.kernel_row(rbf, w))
    zero, negative_zero = np.zeros(3), np.array([-0.0, 0.0, 0.0])
    first = points.row_view(rbf, zero)
    again = points.row_view(rbf, negative_zero)  # other bytes: computed again, the same row
    assert again is not first and np.array_equal(again, first)
    points.append(v)  # a new point: the memo is for the points before it
    grown = points.row_view(rbf, negative_zero)
    assert grown.shape == (13,) and np.array_equal(grown[:12], first)


def test_row_view_over_no_points_and_narrower_inputs():
    points, rbf = SharedPoints(), kernels.RBF(0.4)
    assert points.row_view(rbf, np.ones(2)).shape == (0,)
    assert points.kernel_row(rbf, np.ones(2)).flags.writeable  # kernel_row: a new array
    points.append(np.array([1.0, 2.0, 3.0]))
    narrow = np.array([1.0, 2.0])  # a feature the input lacks is 0 in it
    assert np.array_equal(points.row_view(rbf, narrow),
                          points.rows.kernel_row(rbf, np.array([1.0, 2.0, 0.0])))


def experts_over_shared_points(ring=21, windows=(20, 8)):
    points = SharedPoints(max_size=ring)
    experts = [KONS(kernel=kernels.RBF(0.3 + 0.2 * i), C=100.0, alpha=0.5, max_size=w)
               for i, w in enumerate(windows)]
    for expert in experts:
        expert.share_points(points)
    return points, experts


def owner_step(points, experts, v, y):
    """One step of an owner of the experts, in the step protocol's order."""
    shared = StepShared(v, points)
    analyses = [expert.analyse(v, shared) for expert in experts]
    steps = [expert.check(y, analysis) for expert, analysis in zip(experts, analyses)]
    for expert, analysis, step in zip(experts, analyses, steps):
        expert.apply(v, analysis, step)
    shared.store_point()
    for expert in experts:
        expert.forget()
    return [analysis.ybar for analysis in analyses]


def test_windowed_experts_over_shared_points_are_windowed_kernel_ridge_regression():
    # the squared loss, the curvature step and no clipping: each expert is kernel ridge
    # regression with ridge alpha / 2 on its last max_size points (a dense reference)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 3))
    y = np.sin(X @ np.array([1.0, -0.5, 0.3]))
    points, experts = experts_over_shared_points()
    got = np.array([owner_step(points, experts, x, t) for x, t in zip(X, y)])
    for j, expert in enumerate(experts):
        expected = windowed_krr_predictions(X, y, expert.kernel, expert.alpha, expert.max_size)
        np.testing.assert_allclose(got[:, j], expected, rtol=1e-8, atol=1e-8)


def test_check_and_apply_read_an_earlier_analysis_as_their_own():
    # KONSCore keeps views of the last analysis it made: a step from an earlier one (another
    # analysis made since) must read that earlier one's arrays
    rng = np.random.default_rng(5)
    points, experts = experts_over_shared_points()
    for _ in range(30):
        owner_step(points, experts, rng.normal(size=3), float(rng.normal()))
    v, other = rng.normal(size=3), rng.normal(size=3)
    twin_points, twins = copy.deepcopy((points, experts))
    for expert, twin in zip(experts, twins):
        analysis = expert.analyse(v, StepShared(v, points))
        expert.analyse(other, StepShared(other, points))  # the core's last analysis now
        step = expert.check(0.7, analysis)
        expert.apply(v, analysis, step)
        alone = twin.analyse(v, StepShared(v, twin_points))
        twin_step = twin.check(0.7, alone)
        twin.apply(v, alone, twin_step)
        assert step == twin_step
        for name in ("d", "c", "Kc", "z"):
            assert np.array_equal(expert._store.field(name), twin._store.field(name))
        assert np.array_equal(expert._window.inverse(), twin._window.inverse())


def test_count_modification_schedules_a_recomputation_every_max_16n_64_modifications():
    for n, expected in ((2, 64), (10, 160)):
        inverse, calls = SlotInverse(n), []
        inverse.schedule_refresh = lambda calls=calls: calls.append(True)
        for _ in range(expected - 1):
            inverse.count_modification(n)
        assert not calls
        inverse.count_modification(n)
        assert calls == [True]


OWN = ("_newton.py", "_window_phases.py", "shared.py", "_window.py", "_rows.py")


def test_a_step_of_experts_over_shared_points_makes_few_python_calls():
    # the lean path: per expert one frame a phase over the compiled call, plus the hooks; the
    # shared rows' memo compares bytes (no numpy comparison). Measured: 59 calls into these
    # modules for two experts' step (68 before "winpath", and two numpy comparisons)
    rng = np.random.default_rng(7)
    points, experts = experts_over_shared_points()
    for _ in range(40):
        owner_step(points, experts, rng.normal(size=3), float(rng.normal()))
    names = collections.Counter()

    def count(frame, event, arg):
        if event == "call" and pathlib.Path(frame.f_code.co_filename).name in OWN:
            names[frame.f_code.co_name] += 1

    v = rng.normal(size=3)
    sys.setprofile(count)
    try:
        owner_step(points, experts, v, 0.1)
    finally:
        sys.setprofile(None)
    assert sum(names.values()) <= 59, names
    assert names["_move_to"] == 1 and names["_apply_phase"] == 0, names
