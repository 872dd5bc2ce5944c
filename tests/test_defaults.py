"""Defaults a user gets without tuning: the RBF scale fixed at the first learn, C, the warning
about targets outside [-C, C]."""

import warnings

import numpy as np
import pytest
from river import datasets, preprocessing
from streams import as_dicts, run

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

FACTORIES = [KONS, lambda **kw: SketchedKONS(seed=0, **kw), FunctionalGD, KRLS]


@pytest.mark.parametrize("factory", FACTORIES)
def test_default_kernel_is_rbf_one_over_d_fixed_at_the_first_learn(factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.tanh(X[:, 0] - X[:, 1])
    default, explicit = factory(), factory(kernel=kernels.RBF(gamma=0.25))
    assert default.kernel is None
    got = run(default, X, y)
    assert default._kernel == kernels.RBF(gamma=0.25)
    np.testing.assert_array_equal(got, run(explicit, X, y))
    default.learn_one({"x0": 1.0, "a new feature": 2.0}, 0.5)  # the scale stays fixed
    assert default._kernel == kernels.RBF(gamma=0.25)


def test_default_kernel_from_a_batch_and_after_reset():
    model = KONS()
    model.learn_many(np.zeros((3, 5)), [0.0, 0.1, 0.2])
    assert model._kernel == kernels.RBF(gamma=0.2)
    model._reset()
    model.learn_one({"a": 1.0, "b": 2.0}, 0.5)
    assert model._kernel == kernels.RBF(gamma=0.5)


def test_C_default_is_three_for_the_clipped_learners():
    assert KONS().C == SketchedKONS().C == FunctionalGD().C == 3.0
    assert KRLS().C is None


def test_unscaled_targets_warn_once_naming_the_target_scaler():
    model = preprocessing.StandardScaler() | KONS()
    with pytest.warns(UserWarning, match="TargetStandardScaler") as caught:
        for x, y in datasets.TrumpApproval().take(50):  # targets near 43, C = 3
            model.predict_one(x)
            model.learn_one(x, y)
    assert len([w for w in caught if "TargetStandardScaler" in str(w.message)]) == 1


def test_standardized_targets_and_labels_do_not_warn():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(KONS(), X, rng.normal(size=300))  # includes |y| > 3 now and then
        clf = BinaryClassifier(KONS(loss=losses.Logistic(), C=0.2))  # labels +-1 beyond C
        for x, label in zip(as_dicts(X), X[:, 0] > 0):
            clf.learn_one(x, label)
