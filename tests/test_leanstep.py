"""The heads' leaner step computes exactly what it did: a head's ``check`` plans in one
``_ons_plan`` frame (``_ons_planned`` folded in; a loss without a compiled form through
``_ons_feed``), its new coordinates read from its ``HeadAnalysis``, and its checked step a
``HeadStep`` built from a tuple. Whole runs (``Auto``, ``BinaryClassifier(Auto(Logistic()))``,
a loss without a compiled form, a first-order head turned curved, CON-KONS) equal, bit for
bit, the same runs through the path it replaced (:func:`_reference_path`, the code before,
verbatim), on the machine that runs them."""

from collections import namedtuple

import numpy as np
import pytest
from streams import shifted_friedman

import okoco.learners.auto as auto_module
from okoco._core import _ons
from okoco.learners import CONKONS, Auto, BinaryClassifier
from okoco.learners.embedding import SharedEmbedding
from okoco.learners.ons import (
    DictionaryExpert,
    HeadAnalysis,
    HeadStep,
    LinearExpert,
    OnsHead,
    _Expert,
)
from okoco.linalg import PackedSymmetric, ScaledIdentity
from okoco.losses import Logistic, Squared

STEPS = 1500
DICTIONARY = (1.0, 30, 3.0, "usage")  # small, and a lax usage rule: the sharp one swaps

_RefStep = namedtuple("_RefStep", "state y")


def _planned(head, y, z, ybar, eta, new, optional):
    state = head._ons_state(eta is None)
    status = state.plan(z, y, ybar, eta or 0.0, new, optional)
    if status == _ons.NEED_DERIVATIVE:
        loss, yhat = head._ons_loss, state.yhat
        second = float(loss.second_derivative(y, yhat)) if eta is None else 0.0
        status = state.feed(float(loss.derivative(y, yhat)), second, eta or 0.0)
        if not status:
            status = state.prepare(z, new, optional)
    return state, status


def _plan(head, y, z, ybar, eta, new, optional):
    state, status = _planned(head, y, z, ybar, eta, new, optional)
    if status == _ons.CURVED:
        head._P = head._P.full()
        state, status = _planned(head, y, z, ybar, eta, new, optional)
    if status:
        raise ValueError(head._ons_refusal(state, y, status))
    return state


def _new_coordinates(head, analysis):
    if isinstance(head, DictionaryExpert):
        return analysis.extra.new, analysis.extra.pivot is not None
    return analysis.extra, False


def _check(head, y, analysis):
    new, optional = _new_coordinates(head, analysis)
    eta = None if head.eta == "hessian" else float(head.eta)
    return _RefStep(_plan(head, y, analysis.z, analysis.ybar, eta, new, optional), y)


def _apply(head, v, analysis, step):
    head._ons_commit(step.state, step.y, analysis.residual, head._joined(analysis))
    head.n_seen += 1


def _reference_path(monkeypatch):
    """The heads' step as it was before the lean path (eb6d57b): ``_ons_planned`` and its
    caller, the new coordinates by the head's hook, a namedtuple step."""
    monkeypatch.setattr(OnsHead, "_ons_plan", _plan)
    monkeypatch.setattr(_Expert, "check", _check)
    monkeypatch.setattr(_Expert, "apply", _apply)


class _PlainSquared(Squared):
    """The squared loss without a compiled form (a subclass): the heads feed its derivatives
    (``NEED_DERIVATIVE``)."""


def _heads_state(model) -> list:
    """Every number the model's heads hold after the run."""
    auto = getattr(model, "learner", model)
    out = []
    for head in auto.experts:
        P = head._P
        out += [head._u[: P.size].copy(), P.matrix(), head.n_seen, head.alpha,
                head.online_effective_dimension, head.log_det, head.noise_scale_sum]
    return out


def _run(make, kind, xs, targets) -> tuple:
    model = make()
    got = []
    for x, target in zip(xs, targets):
        got.append(model.predict_one(x) if kind == "regression" else
                   model.predict_proba_one(x)[True])
        model.learn_one(x, target)
    return model, np.asarray(got, dtype=float)


def _assert_same_bits(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.array_equal(a.view(np.uint64), b.view(np.uint64))


CASES = {
    "auto": (Auto, "regression"),
    "binary": (lambda: BinaryClassifier(Auto(loss=Logistic())), "classification"),
    "uncompiled-loss": (lambda: Auto(loss=_PlainSquared()), "regression"),
    "conkons": (lambda: CONKONS(seed=0, max_size=40), "regression"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_whole_runs_equal_the_path_replaced_bit_for_bit(case, monkeypatch):
    """1,500 steps through a covariate shift, dictionaries of 30 atoms that fill, turn the
    sharp head first-order and swap: every prediction and every number of every head equal,
    bit for bit, those of the same run through the replaced path."""
    monkeypatch.setattr(auto_module, "DICTIONARY", DICTIONARY)
    make, kind = CASES[case]
    xs, y, labels = shifted_friedman(STEPS)
    targets = [float(t) / 10 for t in y] if case == "conkons" else (
        labels if kind == "classification" else [float(t) for t in y])
    lean, lean_preds = _run(make, kind, xs, targets)
    with monkeypatch.context() as patched:
        _reference_path(patched)
        old, old_preds = _run(make, kind, xs, targets)
    _assert_same_bits(lean_preds, old_preds)
    if case == "conkons":
        _assert_same_bits(lean._u[: lean._P.size], old._u[: old._P.size])
        _assert_same_bits(lean._P.matrix(), old._P.matrix())
        return
    auto = getattr(lean, "learner", lean)
    assert sum(e.n_swaps for e in auto._embeddings) > 0  # the swap path ran
    assert any(e.eta == 0.0 and e.full_alpha for e in auto.experts  # the switch ran
               if isinstance(e, DictionaryExpert))
    for a, b in zip(_heads_state(lean), _heads_state(old)):
        _assert_same_bits(a, b)


def _linear_steps(head, rng, n, target_scale=1.0):
    """``n`` steps of a linear head on random rows (the protocol's phases, as an owner)."""
    for _ in range(n):
        v = rng.normal(size=3)
        analysis = head.analyse(v)
        head.apply(v, analysis, head.check(float(target_scale * rng.normal()), analysis))


@pytest.mark.parametrize("loss", [Squared(), _PlainSquared()], ids=["compiled", "uncompiled"])
def test_a_first_order_head_turned_curved_equals_the_path_replaced(loss, monkeypatch):
    """A head on ``A^{-1} = I/alpha`` held as its scalar whose step turns curved (``eta``
    made positive: the plan's ``CURVED``) turns the matrix full and plans again, as the
    replaced path did (the same bits), for a compiled loss and for one fed from Python."""
    heads = []
    for patch in (False, True):
        with monkeypatch.context() as patched:
            if patch:
                _reference_path(patched)
            head = LinearExpert(loss, alpha=2.0, eta=0.0, bound=30.0)
            rng = np.random.default_rng(5)
            _linear_steps(head, rng, 20)
            assert type(head._P) is ScaledIdentity
            head.eta = 0.5
            _linear_steps(head, rng, 20)
            assert type(head._P) is PackedSymmetric
            heads.append(head)
    lean, old = heads
    _assert_same_bits(lean._u[: lean._P.size], old._u[: old._P.size])
    _assert_same_bits(lean._P.matrix(), old._P.matrix())
    _assert_same_bits([lean.log_det, lean.noise_scale_sum, lean.online_effective_dimension],
                      [old.log_det, old.noise_scale_sum, old.online_effective_dimension])


@pytest.mark.parametrize("loss", [Squared(), _PlainSquared()], ids=["compiled", "uncompiled"])
def test_a_refused_step_raises_as_before_and_changes_nothing(loss, monkeypatch):
    """A target whose step would store non-finite numbers raises the replaced path's error,
    word for word, and leaves the head as it was (its point, its matrix, its counters)."""
    messages = []
    for patch in (False, True):
        with monkeypatch.context() as patched:
            if patch:
                _reference_path(patched)
            head = LinearExpert(loss, alpha=1.0, eta="hessian", bound=30.0)
            _linear_steps(head, np.random.default_rng(2), 5)
            before = (head._u.copy(), head._P.matrix(), head.n_seen, head.log_det)
            v = np.array([0.5, -1.0, 2.0])
            analysis = head.analyse(v)
            with pytest.raises(ValueError) as error:
                head.check(1e308, analysis)
            messages.append(str(error.value))
            _assert_same_bits(head._u, before[0])
            _assert_same_bits(head._P.matrix(), before[1])
            assert (head.n_seen, head.log_det) == before[2:]
    assert messages[0] == messages[1]


def test_a_head_step_is_a_named_pair_and_an_analysis_names_its_new_coordinates():
    """``HeadStep`` (the protocol's named record: ``_fields``) built from a tuple holds the
    planned state and the target; a ``HeadAnalysis`` names the coordinates the step may add
    and whether they are optional: a linear head's features first seen now (never optional),
    a dictionary head's atom (optional: the coin decides; none when the row cannot join)."""
    state = _ons.OnsState(1.0, 3.0, 0, True)
    step = HeadStep((state, -0.25))
    assert step._fields == ("state", "y")
    assert step.state is state and step.y == -0.25 and tuple(step) == (state, -0.25)

    linear = LinearExpert(Squared())
    first = linear.analyse(np.array([1.0, 2.0]))
    assert isinstance(first, HeadAnalysis) and first.optional is False
    _assert_same_bits(first.new, [1.0, 1.0, 2.0])  # [1, x]: all new at the first row
    assert first.new is first.extra
    linear.apply(np.array([1.0, 2.0]), first, linear.check(0.5, first))
    known = linear.analyse(np.array([3.0, 4.0]))
    assert known.new.shape == (0,) and known.optional is False

    embedding = SharedEmbedding(auto_module._kernels.RBF(0.5), 1.0, max_size=5)
    head = DictionaryExpert(embedding, Squared())
    for v in (np.array([0.0, 0.0]), np.array([0.0, 0.0])):
        embedded = embedding.analyse(v)
        analysis = head.analyse(v, type("Shared", (), {"embedded": [embedded]})())
        assert analysis.new is embedded.new
        assert analysis.optional is (embedded.pivot is not None)
        step = head.check(0.5, analysis)
        embedding.offer(v, embedded)
        head.apply(v, analysis, step)
    assert analysis.optional is False and analysis.new.shape == (0,)  # a repeat cannot join


def test_a_plan_keeps_its_own_new_coordinates_and_commits_no_stale_ones():
    """The compiled state keeps a view of a plan's new coordinates only when there are some (an
    empty array, most steps', takes none): a plan with a new coordinate then one without it
    commits none (asking for one is refused, as it was, before anything changes); the view of
    the first plan is no longer read."""
    head = LinearExpert(Squared(), alpha=1.0, eta="hessian", bound=30.0)
    _linear_steps(head, np.random.default_rng(4), 5)
    state = head._ons_state(True)
    z = head.analyse(np.array([0.5, -1.0, 2.0])).z
    assert state.plan(z, 0.3, float(z @ head._u[: z.shape[0]]), 0.0, np.array([0.5]),
                      True) == _ons.OK
    assert state.plan(z, 0.3, float(z @ head._u[: z.shape[0]]), 0.0, np.zeros(0),
                      False) == _ons.OK
    before = (head._u.copy(), head._P.matrix())
    with pytest.raises(ValueError, match="1 new coordinates, 0 planned"):
        state.commit(0.3, 0.0, 1)
    _assert_same_bits(head._u, before[0])
    _assert_same_bits(head._P.matrix(), before[1])
    assert state.prepare(z, np.array([0.25, 0.5]), False) == _ons.OK  # from Python (feed's)
    with pytest.raises(ValueError, match="1 new coordinates, 2 planned"):
        state.commit(0.3, 0.0, 1)
