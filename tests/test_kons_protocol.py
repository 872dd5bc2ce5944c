"""KONS's sharing protocol (``KONS.share_points``): the learners that drive KONS experts over
points held once (``Auto``, ``MulticlassClassifier``) set none of an expert's private state."""

import ast
import pathlib

import numpy as np
import pytest
from test_kons import windowed_kons_reference, windowed_krr_predictions

import okoco
from okoco import kernels, losses
from okoco.learners import KONS, SketchedKONS
from okoco.learners.shared import SharedPoints, StepShared

ROOT = pathlib.Path(okoco.__file__).parent

#: Assignments to a private attribute of another object still in the package, by module and
#: attribute; none is a KONS expert's. Each waits for a public method: ``SlotInverse``
#: (okoco/linalg/_window.py) has none to link a pair (``_partner``, ``_source``,
#: ``_keeps_m``, ``_upper``, ``_held_slots``); the rest build a new object of their own class.
ALLOWED = {
    ("_dist.py", "_var"), ("dictionary/squeak.py", "_features"), ("dictionary/squeak.py", "_K"),
    ("dictionary/squeak.py", "_p"), ("dictionary/squeak.py", "_Q"),
    ("learners/sketched_kons.py", "_partner"), ("learners/sketched_kons.py", "_source"),
    ("linalg/_symmetric.py", "_m"), ("linalg/_symmetric.py", "_dense"),
    ("linalg/_symmetric.py", "_buf"), ("linalg/_window.py", "_keeps_m"),
    ("linalg/_window.py", "_upper"), ("linalg/_window.py", "_partner"),
    ("linalg/_window.py", "_held_slots"),
}
#: A KONS expert's private state: only KONS itself writes it.
KONS_STATE = {"_store", "_window", "_chol", "_g", "_selected", "_kernel", "_cache", "_core",
              "_refreshes_seen", "_kors"}


def foreign_private_assignments(source: str) -> list[tuple[int, str]]:
    """``(line, attribute)`` of each assignment ``x._attr = ...`` (also augmented, annotated,
    inside tuples or subscripted: ``x._attr[i] = ...``) whose ``x`` is not ``self`` or ``cls``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
                continue
            while isinstance(target, ast.Subscript):
                target = target.value
            if (isinstance(target, ast.Attribute) and target.attr.startswith("_")
                    and not target.attr.startswith("__")
                    and not (isinstance(target.value, ast.Name)
                             and target.value.id in ("self", "cls"))):
                found.append((node.lineno, target.attr))
    return found


def test_the_scan_sees_every_form_of_a_foreign_private_assignment():
    source = ("a._x = 1\nb._y += 1\nc._z: int = 2\nd._w[0] = 3\ne.f, g._v = 1, 2\n"
              "self._own = 1\ncls._own = 1\nh.public = 1\ni.__dict__ = {}\n")
    assert sorted(attr for _, attr in foreign_private_assignments(source)) == \
        ["_v", "_w", "_x", "_y", "_z"]


def test_no_module_sets_a_kons_experts_private_state():
    """Auto and MulticlassClassifier set a KONS expert's store, factor and window through
    ``share_points`` (they assigned ``_store``, ``_g``, ``_kernel``, ``_cache`` before)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for line, attr in foreign_private_assignments(path.read_text()):
            found.setdefault((name, attr), []).append(line)
    assert not {key: lines for key, lines in found.items() if key[1] in KONS_STATE}
    assert not {key: lines for key, lines in found.items() if key not in ALLOWED}


def drive(learners, points, X, y, C):
    """The protocol as an owner runs it (``KONS.share_points``): one kernel row, every check
    before any step, the point stored once, then each learner forgets; the predictions."""
    preds = []
    for x, target in zip(X, y):
        shared = StepShared(x, points)  # one kernel row for the learners' one kernel
        analyses = [learner.analyse(x, shared) for learner in learners]
        preds.append([learner._clip(a.ybar) for learner, a in zip(learners, analyses)])
        steps = [learner.check(t, a) for learner, a, t in zip(learners, analyses, target)]
        for learner, analysis, step in zip(learners, analyses, steps):
            learner.apply(x, analysis, step)
        shared.store_point()
        for learner in learners:
            learner.forget()
    return np.array(preds)


def stream(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.3 * X[:, 1] * X[:, -1]


@pytest.mark.parametrize("window", [None, 9])
def test_shared_points_learn_krr_over_the_points_learned_and_predict_zero_before(window):
    """Two learners on one shared store (one joins after 12 points it learned nothing from)
    are kernel ridge regression over the points each learned (the squared loss and the
    curvature step, C large: ridge alpha / 2), by dense solves; the joiner predicts 0 first."""
    X, y = stream(60)
    kernel, alpha, later = kernels.RBF(0.4), 0.2, 12
    points = SharedPoints(None if window is None else window + 1)
    first = KONS(kernel=kernel, C=1e6, alpha=alpha, max_size=window)
    first.share_points(points)
    got_first = drive([first], points, X[:later], np.c_[y[:later]], 1e6)[:, 0]
    second = KONS(C=1e6, alpha=alpha, max_size=window)
    second.share_points(points, kernel)
    assert second._kernel is kernel  # the earlier points: atoms of the unbounded learner only
    assert second.dictionary_size == (later if window is None else 0)
    both = drive([first, second], points, X[later:], np.c_[y[later:], -y[later:]], 1e6)
    size = len(X) if window is None else window
    np.testing.assert_allclose(np.r_[got_first, both[:, 0]],
                               windowed_krr_predictions(X, y, kernel, alpha, size),
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(both[:, 1], windowed_krr_predictions(
        X[later:], -y[later:], kernel, alpha, size), rtol=0, atol=1e-9)
    assert both[0, 1] == 0.0


def test_shared_window_with_active_projections_is_the_dense_windowed_kons():
    """With the logistic loss and C small (the projection active), a window sharing its points
    with a longer one is the windowed KONS of its definition (dense solves)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 2))
    y = np.sign(X[:, 0] * X[:, 1] + 0.2)
    kernel, C, loss = kernels.RBF(0.7), 0.8, losses.Logistic()
    points = SharedPoints(31)
    short = KONS(kernel=kernel, loss=loss, C=C, alpha=0.3, max_size=12)
    long = KONS(kernel=kernel, loss=loss, C=C, alpha=0.3, max_size=30)
    for learner in (short, long):
        learner.share_points(points)
    got = drive([short, long], points, X, np.c_[y, y], C)
    for column, window in enumerate((12, 30)):
        np.testing.assert_allclose(got[:, column], windowed_kons_reference(
            X, y, kernel, loss, C, 0.3, window), rtol=0, atol=1e-9)


@pytest.mark.parametrize("cls", [KONS, SketchedKONS])
def test_share_points_is_refused_after_a_step_or_over_a_short_ring(cls):
    learner = cls(max_size=5)
    with pytest.raises(ValueError, match="needs a ring of at least 6 slots, got 5"):
        learner.share_points(SharedPoints(5))
    with pytest.raises(ValueError, match="needs a ring of at least 6 slots, got None"):
        learner.share_points(SharedPoints(None))
    learner.learn_one({"a": 1.0}, 0.5)
    store = learner._store
    with pytest.raises(ValueError, match="has learned 1 steps; share points before"):
        learner.share_points(SharedPoints(6))
    assert learner._store is store


class PyLogistic(losses.Logistic):
    """The logistic loss without a compiled form (the learner gives the check its derivatives)."""


def dense_check(model, x, y):
    """The step's scalars ``(s, shift, yhat, gdot, weight, d_t, noise)`` from their definitions
    with dense solves over the points the model holds (every one an atom: KONS):
    ``M = D K D + alpha I``, ``e = D k``, ``ybar = (k.c - e^T M^{-1} D K c) / alpha``,
    ``s = kappa - e^T M^{-1} e``, the curvature step's ``w = loss''``, ``d_t = sqrt(w)``."""
    store, kernel, alpha, loss = model._store, model._kernel, model.alpha, model._loss
    P, d, c = store.view(), store.field("d"), store.field("c")
    held = store.field("z") != 0
    P, d, c = P[held], d[held], c[held]
    k = kernel(P, x[None, :])[:, 0]
    K = kernel(P)
    M = d[:, None] * K * d[None, :] + alpha * np.eye(len(d))
    e = d * k
    ybar = (k @ c - e @ np.linalg.solve(M, d * (K @ c))) / alpha
    s = 1.0 - e @ np.linalg.solve(M, e)
    yhat = float(np.clip(ybar, -model.C, model.C))
    gdot, weight = float(loss.derivative(y, yhat)), float(loss.second_derivative(y, yhat))
    shift = alpha * (ybar - yhat) / s
    return s, shift, yhat, gdot, weight, np.sqrt(weight), (y - yhat) ** 2 / (s + alpha / 2)


@pytest.mark.parametrize("max_size", [None, 7])
@pytest.mark.parametrize("loss", [losses.Logistic(), PyLogistic()])
def test_the_one_check_equals_a_dense_reference_for_both_forms_and_python_losses(loss, max_size):
    """``KONSCore.check`` is the check of the unbounded learner too (a Python body of it
    before), and takes a Python loss's derivatives (it returned ``None`` for one, and the
    Python body recomputed the step): the scalars equal their dense definitions, with the
    projection active (C small)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(25, 2))
    y = np.sign(X[:, 0] + 0.3 * X[:, 1])
    model = KONS(kernel=kernels.RBF(0.6), loss=loss, C=0.4, alpha=0.3, max_size=max_size)
    shifts = 0
    for x, target in zip(X[:-1], y[:-1]):
        x_dict = dict(enumerate(x))
        v = model._features.encode(x_dict, arrays=False)[0]
        if model.n_seen:
            step = model.check(target, model._analyse(v))
            np.testing.assert_allclose(step, dense_check(model, v, target), rtol=1e-9,
                                       atol=1e-12)
            shifts += step[1] != 0.0
        model.learn_one(x_dict, target)
    assert model._step_core().loss == (-1 if isinstance(loss, PyLogistic) else 1)
    assert shifts >= 3  # the projection was active


def test_a_python_losss_derivatives_give_the_compiled_losss_check_bit_for_bit():
    model = KONS(kernel=kernels.RBF(0.6), loss=losses.Logistic(), C=0.4, alpha=0.3, max_size=9)
    X, _ = stream(12, d=2, seed=2)
    for i, x in enumerate(X):
        model.learn_one(dict(enumerate(x)), 1.0 if i % 3 else -1.0)
    analysis = model._analyse(X[0])
    core, loss = model._step_core(), losses.Logistic()
    yhat = float(np.clip(analysis[4], -0.4, 0.4))
    for y in (1.0, -1.0):
        compiled = core.check(analysis, y, np.nan, 0.3, 0.4, 0.0, 1)
        given = core.check(analysis, y, np.nan, 0.3, 0.4, 0.0, 1, loss.derivative(y, yhat),
                           loss.second_derivative(y, yhat))
        assert compiled == given and len(compiled) == 7


@pytest.mark.parametrize("max_size", [None, 5])
def test_each_refusal_of_the_check_is_worded_and_changes_nothing(max_size):
    """The check's codes (``_kons.CHECK_*``; it returned ``None`` for the Python body to
    recompute and word), each worded by the learner, for both forms."""
    from okoco._core import _kons

    class BadCurvature(losses.Squared):
        def second_derivative(self, y, z):
            return -1.0

    X, y = stream(8, d=2, seed=3)
    cases = [
        (KONS(loss=BadCurvature(), max_size=max_size), 0.5, None, _kons.CHECK_WEIGHT,
         "loss.second_derivative returned -1.0; it must be >= 0"),
        (KONS(max_size=max_size, eta=1.0), 1e200, 1.0, _kons.CHECK_DERIVATIVE,
         "too large for a second-order step"),
        (KONS(max_size=max_size), 1e160, None, _kons.CHECK_TARGET,
         "learning it would overflow the learner.s running statistics"),
    ]
    for model, target, eta, code, words in cases:
        for x, t in zip(X, y) if code != _kons.CHECK_WEIGHT else ():  # (none is learned)
            model.learn_one(dict(enumerate(x)), t)
        analysis = model._analyse(X[0])
        before = (model.noise_scale_sum, model.rg_sum, model._store.size)
        core = model._step_core()
        gdot = weight = np.nan
        if core.loss < 0:
            gdot, weight = 0.0, -1.0
        assert core.check(analysis, target, np.nan if eta is None else eta, model.alpha,
                          model.C, 0.0, 1, gdot, weight) == code
        with pytest.raises(ValueError, match=words):
            model.check(target, analysis)  # (the step size the model's own)
        assert (model.noise_scale_sum, model.rg_sum, model._store.size) == before


def test_the_steps_records_are_named():
    """KONS's phases hand named records to their callers (Auto, the multiclass classifier):
    the analysis (its prediction the learner's, k(x, x) the kernel's) and the check's step
    (its prediction the clipped analysis'); an ONS head's record names its fields too."""
    import numpy as np

    from okoco.learners import KONS, Auto
    from okoco.learners.ons import HeadAnalysis

    rng = np.random.default_rng(0)
    rows = [({"a": float(a), "b": float(b)}, float(np.sin(a) + b)) for a, b in
            rng.normal(size=(40, 2))]
    for model in (KONS(), KONS(max_size=None)):
        for x, y in rows:
            model.learn_one(x, y)
        x = rows[0][0]
        analysis = model._analyse(model._features.encode(x, arrays=False)[0])
        assert analysis._fields == ("k", "kappa", "e", "h", "ybar", "kc", "hh")
        assert analysis.kappa == 1.0 and abs(analysis.ybar) < model.C
        assert model.predict_one(x) == analysis.ybar
        assert analysis.k.shape == (40,) and 0.0 < analysis.hh < analysis.kappa
        step = model.check(0.5, analysis)
        assert step._fields == ("s", "shift", "yhat", "gdot", "weight", "d_t", "noise")
        assert step.yhat == analysis.ybar and step.shift == 0.0  # no projection inside C
        assert step.gdot == 2.0 * (analysis.ybar - 0.5)  # the squared loss's derivative
    auto = Auto()
    for x, y in rows:
        auto.learn_one(x, y)
    analyses = auto._analyse(auto._features.encode(rows[0][0], arrays=False)[0])[0]
    heads = [a for a in analyses if isinstance(a, HeadAnalysis)]
    assert len(heads) == 6 and all(a.z.shape[0] >= 3 for a in heads)
