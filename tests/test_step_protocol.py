"""The step protocol (``okoco.learners.base.StepProtocol``): every kind of expert an owner drives
answers the same four methods with named records; a refused check changes nothing; a loss with
no compiled form goes through it; and the owners (``Auto``, ``MulticlassClassifier``) compute
what the same experts compute alone, step by step."""

import inspect

import numpy as np
import pytest

from okoco import MulticlassClassifier, kernels, losses
from okoco.learners import CONKONS, KONS, Auto, SketchedKONS
from okoco.learners._multiclass_shared import SharedSquaredKONS
from okoco.learners.base import StepProtocol
from okoco.learners.embedding import SharedEmbedding
from okoco.learners.ons import DictionaryExpert, LinearExpert
from okoco.learners.shared import SharedPoints, StepShared

PROTOCOL = {"analyse": ["v", "shared"], "check": ["y", "analysis"],
            "apply": ["v", "analysis", "step"], "forget": []}


class PlainSquared(losses.Squared):
    """The squared loss as a user would write it: no compiled form (no ``_code`` of its own),
    so every step takes its derivatives from these Python methods."""

    def derivative(self, y, z):
        return 2.0 * (z - y)

    def second_derivative(self, y, z):
        return 2.0


class Owner:
    """A minimal owner of experts, driving them through the protocol only (as ``Auto``):
    one ``StepShared`` a step, every check before any apply, the point stored, the forgets."""

    def __init__(self, experts, embeddings=(), points=None):
        self.experts, self.embeddings, self.points = experts, list(embeddings), points

    def analyse(self, v):
        shared = StepShared(v, self.points, [e.analyse(v) for e in self.embeddings])
        return [expert.analyse(v, shared) for expert in self.experts], shared

    def learn(self, v, y):
        analyses, shared = self.analyse(v)
        steps = [expert.check(y, a) for expert, a in zip(self.experts, analyses)]
        for embedding, its in zip(self.embeddings, shared.embedded):
            embedding.offer(v, its)
        for expert, analysis, step in zip(self.experts, analyses, steps):
            expert.apply(v, analysis, step)
        shared.store_point()
        for expert in self.experts:
            expert.forget()
        return analyses, steps


def owners(kind, loss=None):
    """A fresh owner of one expert of ``kind`` (each call builds new, equal objects)."""
    loss = losses.Squared() if loss is None else loss
    rbf = kernels.RBF(0.5)
    if kind == "KONS":
        return Owner([KONS(kernel=rbf, loss=loss, alpha=0.1, max_size=6)])
    if kind == "KONS-unbounded":
        return Owner([KONS(kernel=rbf, loss=loss, alpha=0.1, max_size=None)])
    if kind == "KONS-shared-points":
        points = SharedPoints(8)
        expert = KONS(kernel=rbf, loss=loss, alpha=0.1, max_size=6)
        expert.share_points(points)
        return Owner([expert], points=points)
    if kind == "SketchedKONS":
        return Owner([SketchedKONS(kernel=rbf, loss=loss, alpha=0.1, max_size=6, seed=0)])
    if kind == "LinearExpert":
        return Owner([LinearExpert(loss, alpha=0.5, C=3.0)])
    if kind == "DictionaryExpert":
        embedding = SharedEmbedding(rbf, 1.0, max_size=5)
        return Owner([DictionaryExpert(embedding, loss, alpha=0.1)], [embedding])
    assert kind == "SharedSquaredKONS"  # (the squared loss, always)
    return Owner([SharedSquaredKONS(kernel=kernels.Linear(), C=3.0, alpha=0.5, max_size=6)])


KINDS = ["KONS", "KONS-unbounded", "KONS-shared-points", "SketchedKONS", "LinearExpert",
         "DictionaryExpert", "SharedSquaredKONS"]


def rows(n, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.clip(np.sin(X[:, 0]) + 0.5 * X[:, 1], -2.0, 2.0)


def targets_of(kind, y):
    """SharedSquaredKONS learns labels (one of two classes here); the others real targets."""
    return (y > 0).astype(int).tolist() if kind == "SharedSquaredKONS" else y.tolist()


def start(owner, kind):
    if kind == "SharedSquaredKONS":
        owner.experts[0].add_class()
        owner.experts[0].add_class()
    return owner


@pytest.mark.parametrize("kind", KINDS)
def test_every_expert_kind_answers_the_same_protocol_with_named_records(kind):
    owner = start(owners(kind), kind)
    expert = owner.experts[0]
    assert isinstance(expert, StepProtocol)
    for name, parameters in PROTOCOL.items():
        assert list(inspect.signature(getattr(expert, name)).parameters) == parameters, name
    X, y = rows(12)
    for v, target in zip(X, targets_of(kind, y)):
        analyses, steps = owner.learn(v, target)
        analysis, step = analyses[0], steps[0]
        names = getattr(analysis, "_fields", None) or type(analysis).__slots__
        assert "ybar" in names  # every record names its unclipped prediction
        assert type(step)._fields  # a named record (a namedtuple)
    assert expert.n_seen == 12  # apply counts the step


def state_of(expert):
    """Every number the expert holds (caches dropped), walking its objects once each."""
    seen = set()

    def flat(value):
        if isinstance(value, np.ndarray):
            return [value.tobytes(), value.shape]
        if isinstance(value, dict):
            return [(k, flat(v)) for k, v in sorted(value.items())]
        if isinstance(value, (list, tuple)):
            return [flat(v) for v in value]
        if hasattr(value, "__dict__") and type(value).__module__.startswith("okoco"):
            if id(value) in seen:  # (a back-reference)
                return "seen"
            seen.add(id(value))
            return flat({k: v for k, v in vars(value).items()
                         if k not in ("_cache", "_core", "_ons", "_lock", "_memo", "_at",
                                      "_dists")})
        return repr(value)
    return flat(expert)


def refused(kind, owner):
    """A check the expert refuses: a target it cannot learn, or (SharedSquaredKONS, whose
    labels cannot overflow) a row whose k(x, x) overflows its linear kernel."""
    if kind == "SharedSquaredKONS":
        analyses, _ = owner.analyse(np.array([1e200, 0.0]))
        return lambda: owner.experts[0].check(1, analyses[0])
    analyses, _ = owner.analyse(np.array([0.3, -0.1]))
    return lambda: owner.experts[0].check(1e308, analyses[0])  # its derivative overflows


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_check_changes_nothing(kind):
    """Twins learn the same rows; one is refused a step in the middle: its state is the other's
    and both go on to the same predictions, bit for bit."""
    X, y = rows(30, seed=1)
    targets = targets_of(kind, y)
    refusing, twin = start(owners(kind), kind), start(owners(kind), kind)
    for owner in (refusing, twin):
        for v, target in zip(X[:15], targets[:15]):
            owner.learn(v, target)
    before = state_of(refusing.experts[0])
    with pytest.raises(ValueError):
        refused(kind, refusing)()
    assert state_of(refusing.experts[0]) == before
    for v, target in zip(X[15:], targets[15:]):
        got, _ = refusing.learn(v, target)
        expected, _ = twin.learn(v, target)
        np.testing.assert_array_equal(got[0].ybar, expected[0].ybar)


@pytest.mark.parametrize("kind", ["KONS", "KONS-unbounded", "SketchedKONS", "LinearExpert",
                                  "DictionaryExpert"])
def test_a_loss_with_no_compiled_form_goes_through_the_protocol(kind):
    """The same experts with ``PlainSquared`` (derivatives from Python) and with the compiled
    ``Squared``: the same predictions at every step (the derivative ``2 (z - y)`` and the
    weight 2 are the same floating-point numbers)."""
    X, y = rows(40, seed=2)
    compiled, plain = owners(kind), owners(kind, PlainSquared())
    if isinstance(plain.experts[0], KONS):
        assert plain.experts[0]._step_core().loss == -1  # no compiled form: the Python path
    for v, target in zip(X, y):
        got, _ = plain.learn(v, target)
        expected, _ = compiled.learn(v, target)
        assert got[0].ybar == expected[0].ybar


def test_auto_with_a_loss_with_no_compiled_form_matches_auto():
    X, y = rows(300, d=3, seed=3)
    plain, compiled = Auto(loss=PlainSquared(), max_size=40), Auto(max_size=40)
    for row, target in zip(X, y):
        x = dict(enumerate(row))
        assert plain.predict_one(x) == compiled.predict_one(x)
        plain.learn_one(x, target)
        compiled.learn_one(x, target)


def test_auto_computes_what_its_experts_compute_alone():
    """``Auto``'s dictionary heads (on shared embeddings), its linear heads and its drift heads
    (first-order, on the same embeddings), step by step against standalone learners: CON-KONS
    by ``learn_one``, the linear heads by a protocol owner of their own, the drift heads by the
    dense reference of ``test_auto`` (on CON-KONS twins' atoms)."""
    from test_auto import DenseDriftHead

    X, y = rows(120, d=3, seed=4)
    auto = Auto(max_size=40, scale_target=False)
    auto.learn_one(dict(enumerate(X[0])), y[0])
    g = 1.0 / 3
    alone = [CONKONS(kernel=kernels.RBF(c * g), alpha=0.1, dictionary_alpha=1.0, max_size=500,
                     seed=0) for c in (0.2, 3.0)]
    heads = Owner([LinearExpert(losses.Squared(), alpha=1.0, C=3.0, bound=30.0),
                   LinearExpert(losses.Squared(), alpha=100.0, eta=0.0, C=3.0, bound=30.0)])
    drift = [DenseDriftHead(CONKONS(kernel=kernels.RBF(c * g), alpha=0.1, dictionary_alpha=1.0,
                                      max_size=500, seed=0), c * g, losses.Squared(), 3.0, 3.0)
               for c in (0.2, 3.0)]
    for learner in (*alone, *drift):
        learner.learn_one(dict(enumerate(X[0])), y[0])
    heads.learn(X[0], y[0])
    for row, target in zip(X[1:], y[1:]):
        x = dict(enumerate(row))
        analyses, _, _, _ = auto._analyse(auto._features.encode(x, arrays=False)[0])
        ybars = [a.ybar for a in analyses]
        own, _ = heads.analyse(row)
        expected = [alone[0]._predict_vec(row), alone[1]._predict_vec(row),
                    own[0].ybar, own[1].ybar,
                    drift[0].predict_one(x), drift[1].predict_one(x)]  # (clipped: inside C here)
        np.testing.assert_allclose(ybars, expected, rtol=1e-10, atol=1e-12)
        auto.learn_one(x, target)
        for learner in (*alone, *drift):
            learner.learn_one(x, target)
        heads.learn(row, target)


def test_the_multiclass_classes_compute_what_kons_computes_alone():
    """``MulticlassClassifier`` over one-vs-rest KONS (the logistic loss: each class its own
    preconditioner over one shared store of points) drives the classes by the protocol; each
    class's score is a standalone KONS's fed its +-1 targets (a class first seen late: one
    that starts then; the points held before are no atoms of it and leave it as no-ops)."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 2))
    labels = np.where(X[:, 0] > 0.5, "c", np.where(X[:, 1] > 0, "a", "b"))
    labels[:5] = ["a", "b", "a", "b", "a"]  # "c" comes later
    template = KONS(kernel=kernels.RBF(0.7), loss=losses.Logistic(), C=2.0, max_size=10)
    model = MulticlassClassifier(template)
    alone: dict = {}
    for row, label in zip(X, labels):
        x = dict(enumerate(row))
        if model.classes:
            v = model._features.encode(x, arrays=False)[0]
            scores = [a.ybar for a in model._analyses(v)]
            expected = [alone[c]._predict_vec(v) for c in model.classes]
            np.testing.assert_allclose(scores, expected, rtol=1e-10, atol=1e-12)
        if label not in alone:  # a class first seen at t: a KONS that starts at t
            alone[label] = template.clone()
        model.learn_one(x, label)
        for c, learner in alone.items():
            learner.learn_one(x, 1.0 if c == label else -1.0)
