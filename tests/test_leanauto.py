"""Auto's leaner step computes exactly what it did: the lean entries equal the paths they
replace, and whole runs equal, bit for bit, the same model taking its losses and share by the
loss's ``value`` (as before the lean entries)."""

import numpy as np
import pytest
from streams import shifted_friedman

import okoco.learners.auto as auto_module
from okoco._core import _loss
from okoco.learners import Auto, BinaryClassifier
from okoco.losses import Logistic, Squared, SquaredHinge

STEPS = 2000
DICTIONARY = (1.0, 30, 3.0, "usage")  # small, and a lax usage rule: the sharp one swaps


class _ValueAuto(Auto):
    """``Auto`` with the step's losses and the share of the slack taken as before the lean
    entries: the loss object's ``value`` on arrays, then the worst excess by Python's ``max``
    (the reference the lean path must equal bit for bit)."""

    def _loss_values(self, y, predictions):
        return self._loss.value(y, np.array(predictions))

    def _share_at_ends(self, ends, safe, fast):
        values = self._loss.value(ends, np.array([fast, fast, safe, safe]))
        return self._spend(float(max(values[0] - values[2], values[1] - values[3])))


@pytest.mark.parametrize("kind", ["auto", "binary"])
def test_auto_equals_its_value_path_bit_for_bit(kind, monkeypatch):
    """2,000 steps of Auto (squared) and of BinaryClassifier(Auto(Logistic())) through a
    covariate shift, with dictionaries of 30 atoms that fill, turn first-order and swap: every
    prediction equals, bit for bit, that of the same model taking its losses and share by the
    loss's ``value`` (on this machine: no stored bits of another's BLAS)."""
    monkeypatch.setattr(auto_module, "DICTIONARY", DICTIONARY)
    xs, y, labels = shifted_friedman(STEPS)
    if kind == "auto":
        models, targets = [Auto(), _ValueAuto()], [float(t) for t in y]
    else:
        models = [BinaryClassifier(Auto(loss=Logistic())),
                  BinaryClassifier(_ValueAuto(loss=Logistic()))]
        targets = labels
    got = [[], []]
    for x, target in zip(xs, targets):
        for model, out in zip(models, got):
            out.append(model.predict_one(x) if kind == "auto" else
                       model.predict_proba_one(x)[True])
            model.learn_one(x, target)
    swaps = sum(e.n_swaps for e in (models[0] if kind == "auto" else models[0].learner)._embeddings)
    assert swaps > 0  # the swap path ran
    assert np.array_equal(_bits(got[0]), _bits(got[1]))


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=float).view(np.uint64)


EDGES = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 1e-300, 1e300, -1e300, 700.0, -700.0, 37.5,
         np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("loss", [Squared(), Logistic(), SquaredHinge()], ids=repr)
def test_compiled_values_equal_the_loss_value(loss):
    """``_loss.values`` (a scalar or a vector of targets against a list of predictions) gives
    the bits of ``loss.value`` on arrays, on varied and edge inputs (non-finite included: the
    loss's value is computed, as before, never refused), and an empty list gives an empty
    array."""
    rng = np.random.default_rng(0)
    zs = [*EDGES, *rng.normal(scale=4.0, size=40).tolist()]
    for y in [*EDGES, 1, -1, np.float64(0.25), np.array(-0.5), *rng.normal(size=5).tolist()]:
        got = _loss.values(loss._code, y, zs)
        assert np.array_equal(_bits(got), _bits(loss.value(y, np.array(zs))))
        assert _loss.values(loss._code, y, []).shape == (0,)
    targets = np.array(rng.choice(EDGES, size=len(zs)))
    assert np.array_equal(_bits(_loss.values(loss._code, targets, tuple(zs))),
                          _bits(loss.value(targets, np.array(zs))))
    with pytest.raises(ValueError, match="3 targets for 2 predictions"):
        _loss.values(loss._code, np.zeros(3), [0.0, 1.0])


def test_mixture_loss_values_take_the_python_path_for_a_users_loss():
    """A loss without a compiled code of its own class (a subclass: it may override
    ``value``) is evaluated by its ``value``; okoco's own by the compiled entry."""

    class Doubled(Squared):
        def value(self, y, z):
            return 2.0 * super().value(y, z)

    model = Auto(loss=Doubled())
    got = model._loss_values(0.5, [0.0, 1.5])
    assert got.tolist() == [0.5, 2.0]
    model = Auto()
    assert model._loss_values(0.5, [0.0, 1.5]).tolist() == [0.25, 1.0]


def _trained_auto(loss, steps: int = 60) -> Auto:
    rng = np.random.default_rng(5)
    model = Auto(loss=loss)
    for x in rng.normal(size=(steps, 3)):
        target = float(np.sin(x[0]) + x[1] * x[2])
        model.learn_one({"a": x[0], "b": x[1], "c": x[2]},
                        target if loss is None else (1 if target > 0 else -1))
    return model


def _share_before(model, ends, safe, fast) -> float:
    """Auto._share as main computed it (loss.value on arrays, Python's max, _spend)."""
    values = model._loss.value(ends, np.array([fast, fast, safe, safe]))
    with np.errstate(invalid="ignore"):  # (inf - inf: NaN, as the compiled path gives)
        return model._spend(float(max(values[0] - values[2], values[1] - values[3])))


@pytest.mark.parametrize("loss", [None, Logistic(), SquaredHinge()], ids=repr)
def test_compiled_share_equals_mains_share(loss):
    """The share from the compiled losses (``Mixture.share_at``) equals main's path bit for
    bit, at Auto's target ends and at others, with a slack (a trained model) and without
    (a negative slack counts as none), for finite and non-finite averages."""
    rng = np.random.default_rng(2)
    trained = _trained_auto(loss)
    broke = _trained_auto(loss)
    broke.cumulative_loss = broke.cumulative_loss + 1e6  # no slack left
    broke._mixture = None
    averages = [*EDGES, *rng.normal(scale=2.0, size=30).tolist()]
    ends_list = [trained._target_ends, np.array([-1.0, 2.0, 0.5, -3.0]),
                 np.array([0.0, np.inf, -np.inf, np.nan])]
    for model in (trained, broke):
        assert model.slack > 0 if model is trained else model.slack < 0
        for ends in ends_list:
            for safe, fast in zip(averages, rng.permutation(averages)):
                got = model._share_at_ends(ends, float(safe), float(fast))
                want = _share_before(model, ends, float(safe), float(fast))
                assert _bits(got) == _bits(want), (ends, safe, fast, got, want)
    with pytest.raises(ValueError, match="3 target ends, not 4"):
        trained._share_at_ends(np.zeros(3), 0.0, 1.0)


def test_share_of_a_users_loss_takes_its_values():
    """A user's loss: the share from its own values (``Mixture.share_of``), as main's."""

    class Doubled(Squared):
        def value(self, y, z):
            return 2.0 * super().value(y, z)

    model = _trained_auto(Doubled())
    for safe, fast in [(0.0, 0.5), (1.0, -2.0), (0.3, 0.3), (np.nan, 0.0)]:
        assert _bits(model._share_at_ends(model._target_ends, safe, fast)) == \
            _bits(_share_before(model, model._target_ends, safe, fast))
    with pytest.raises(ValueError, match="5 losses, not 4"):
        model._state().share_of(model, np.zeros(5))


@pytest.mark.parametrize("target", [np.nan, np.inf, -np.inf])
def test_a_non_finite_target_is_refused_as_before(target):
    """The lean step refuses a non-finite target as main did: ValueError, nothing changed."""
    model = _trained_auto(None)
    x = {"a": 0.1, "b": -0.4, "c": 1.2}
    before = (model.cumulative_losses.copy(), model.cumulative_loss, model.predict_one(x))
    with pytest.raises(ValueError):
        model.learn_one(x, target)
    assert np.array_equal(model.cumulative_losses, before[0])
    assert (model.cumulative_loss, model.predict_one(x)) == before[1:]
