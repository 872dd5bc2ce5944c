import math

import numpy as np
import pytest
from river import checks, datasets, evaluate, metrics, multiclass, preprocessing
from streams import as_dicts

import okoco
from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, Auto


def expert_grid(d, loss, C):
    """The documented grid, built independently of Auto."""
    g = 1.0 / d
    grid = [(kernels.RBF(g), 0.1), (kernels.RBF(g), 1.0), (kernels.RBF(0.2 * g), 0.1),
            (kernels.RBF(g) + g * kernels.Linear(), 0.1)]
    return [KONS(kernel=k, loss=loss, C=C, alpha=a, eta="hessian") for k, a in grid]


def bounded_stream(n=150, d=3, C=1.0, seed=0, labels=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sign(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n)) if labels else \
        rng.uniform(-C, C, size=n)  # arbitrary bounded targets: the bound holds on any of them
    return X, y


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic()])
def test_weights_and_predictions_match_the_closed_form(loss):
    C = 2.0
    X, y = bounded_stream(C=C, labels=not isinstance(loss, losses.Squared))
    model, experts = Auto(loss=loss, C=C), expert_grid(X.shape[1], loss, C)
    cumulative = np.zeros(len(experts))
    rate = loss.exp_concavity(C)
    for x, target in zip(as_dicts(X), y):
        preds = np.array([e.predict_one(x) for e in experts])
        w = np.exp(-rate * (cumulative - cumulative.min()))
        w /= w.sum()
        expected = float(w @ preds) if model.n_seen else 0.0
        assert model.predict_one(x) == pytest.approx(expected, abs=1e-12)
        model.learn_one(x, target)
        for e in experts:
            e.learn_one(x, target)
        cumulative += loss.value(target, preds)
    w = np.exp(-rate * (cumulative - cumulative.min()))
    np.testing.assert_allclose(model.weights, w / w.sum(), rtol=1e-10)
    np.testing.assert_allclose(model.cumulative_losses, cumulative, rtol=1e-10)


@pytest.mark.parametrize(("loss", "labels"), [(losses.Squared(), False),
                                              (losses.Logistic(), True),
                                              (losses.SquaredHinge(), True)])
def test_regret_to_the_best_expert_is_at_most_log_n_over_eta(loss, labels):
    C = 1.0
    X, y = bounded_stream(n=200, C=C, seed=3, labels=labels)
    model = Auto(loss=loss, C=C)
    total = 0.0
    for x, target in zip(as_dicts(X), y):
        total += float(loss.value(target, model.predict_one(x)))
        model.learn_one(x, target)
    regret = total - model.cumulative_losses.min()
    bound = math.log(len(model.experts)) / model.rate
    assert regret <= bound + 1e-9
    assert model.rate == loss.exp_concavity(C)


@pytest.mark.parametrize("model", [Auto(), BinaryClassifier(Auto(loss=losses.Logistic()))])
def test_river_check_estimator(model):
    checks.check_estimator(model)


def test_save_load_is_exact_and_continues_identically(tmp_path):
    X, y = bounded_stream(n=60)
    model = Auto()
    rows = list(zip(as_dicts(X), y))
    for x, target in rows[:30]:
        model.learn_one(x, target)
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    for x, target in rows[30:]:
        assert loaded.predict_one(x) == model.predict_one(x)
        model.learn_one(x, target)
        loaded.learn_one(x, target)
    np.testing.assert_array_equal(loaded.weights, model.weights)
    assert loaded.leader == model.leader


def test_classifiers_binary_and_one_vs_rest():
    clf = preprocessing.StandardScaler() | BinaryClassifier(Auto(loss=losses.Logistic()))
    acc = evaluate.progressive_val_score(datasets.Phishing().take(300), clf, metrics.Accuracy())
    assert acc.get() > 0.8
    ovr = preprocessing.StandardScaler() | multiclass.OneVsRestClassifier(
        BinaryClassifier(Auto(loss=losses.Logistic())))
    acc = evaluate.progressive_val_score(datasets.ImageSegments().take(150), ovr,
                                         metrics.Accuracy())
    assert acc.get() > 0.5  # 7 classes: chance is about 0.14


def test_leader_and_bad_loss():
    model = Auto()
    assert model.leader is None and model.weights.size == 0 and model.predict_one({"a": 1}) == 0
    model.learn_one({"a": 1.0, "b": 0.0}, 0.5)
    assert model.leader.startswith("KONS(kernel=") and model.dictionary_size == 1

    class NoRate(losses.Squared):
        exp_concavity = None

    with pytest.raises(TypeError, match="exp_concavity"):
        Auto(loss=NoRate())
