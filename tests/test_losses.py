import numpy as np
import pytest
from scipy.special import expit

from okoco import losses

GRID = np.linspace(-1.0, 1.0, 161)


def min_assumption2_ratio(loss, y, C):
    """min over z != z' of (l(z') - l(z) - l'(z)(z'-z)) / (0.5 (l'(z)(z'-z))^2) on [-C, C]."""
    z, zp = np.meshgrid(C * GRID, C * GRID, indexing="ij")
    g = loss.derivative(y, z)
    lin = g * (zp - z)
    gap = loss.value(y, zp) - loss.value(y, z) - lin
    mask = np.abs(lin) > 1e-9
    return np.min(gap[mask] / (0.5 * lin[mask] ** 2))


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
@pytest.mark.parametrize("y", [-1.0, 1.0, 0.3])
def test_derivative_matches_finite_differences(loss, y):
    if y == 0.3 and not isinstance(loss, losses.Squared):
        return
    z = np.linspace(-3, 3, 41) + 0.013
    h = 1e-6
    numeric = (loss.value(y, z + h) - loss.value(y, z - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(y, z), numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
@pytest.mark.parametrize("y", [-1.0, 1.0, 0.3])
def test_second_derivative_matches_finite_differences(loss, y):
    if y == 0.3 and not isinstance(loss, losses.Squared):
        return
    z = np.linspace(-3, 3, 41) + 0.013  # avoids the squared hinge's kink at y z = 1
    h = 1e-5
    numeric = (loss.derivative(y, z + h) - loss.derivative(y, z - h)) / (2 * h)
    got = loss.second_derivative(y, z)
    assert got.shape == z.shape
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)
    assert np.all(got >= 0)


def test_second_derivative_is_a_scalar_for_scalars():
    for loss in (losses.Squared(), losses.Logistic(), losses.SquaredHinge()):
        assert np.ndim(loss.second_derivative(1.0, 0.5)) == 0
    assert float(losses.SquaredHinge().second_derivative(1.0, 1.0)) == 0.0  # kink: flat side


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic(), losses.SquaredHinge()])
def test_scalar_fast_paths_equal_the_array_path(loss):
    """A learner's step passes floats (no array round trip): the same values, kink included."""
    z = np.concatenate([np.linspace(-4, 4, 33), [-1.0, 1.0, 0.0, 800.0, -800.0]])
    for y in (-1.0, 1.0):
        for name in ("derivative", "second_derivative"):
            array = getattr(loss, name)(y, z)
            scalar = [getattr(loss, name)(y, float(v)) for v in z]
            assert all(type(v) is float for v in scalar)
            np.testing.assert_array_equal(scalar, array)


def test_squared_value_fast_path_equals_the_array_path():
    """A replay scores each step with floats: the same bits as the array path."""
    rng = np.random.default_rng(0)
    y, z = rng.standard_normal(200) * 50, rng.standard_normal(200) * 50
    scalar = [losses.Squared().value(a, b) for a, b in zip(y.tolist(), z.tolist())]
    assert all(type(v) is float for v in scalar)
    np.testing.assert_array_equal(scalar, losses.Squared().value(y, z))


@pytest.mark.parametrize("C", [0.3, 1.0, 1.5, 3.0, 10.0])
def test_curvature_satisfies_assumption_2(C):
    for y in (-C, -0.4 * C, 0.0, C):
        assert min_assumption2_ratio(losses.Squared(), y, C) >= losses.Squared().curvature(C) - 1e-9
    for loss in (losses.Logistic(), losses.SquaredHinge()):
        sigma = loss.curvature(C)
        for y in (-1.0, 1.0):
            assert min_assumption2_ratio(loss, y, C) >= sigma * (1 - 1e-6)


def test_squared_curvature_is_tight_and_matches_paper():
    C = 2.0
    sigma = losses.Squared().curvature(C)
    assert sigma == 1 / (8 * C**2)
    assert min_assumption2_ratio(losses.Squared(), C, C) == pytest.approx(sigma, rel=1e-3)
    assert losses.Squared().lipschitz(C) == 4 * C
    assert losses.Squared().curvature(1.0, y_max=3.0) == 1 / (2 * 4.0**2)


@pytest.mark.parametrize("C", [1.5, 3.0, 10.0])
def test_squared_hinge_corrected_sigma_is_tight_and_naive_one_fails(C):
    loss = losses.SquaredHinge()
    ratio = min(min_assumption2_ratio(loss, y, C) for y in (-1.0, 1.0))
    assert ratio == pytest.approx((3 * C - 1) / (8 * C**2 * (1 + C)), rel=2e-3)
    naive = 1 / (2 * (1 + C) ** 2)
    assert ratio < naive  # the C <= 1 formula is not valid for C > 1


def test_lipschitz_bounds_the_derivative():
    for C in (0.5, 2.0):
        z = C * GRID
        for loss in (losses.Logistic(), losses.SquaredHinge()):
            for y in (-1.0, 1.0):
                assert np.abs(loss.derivative(y, z)).max() <= loss.lipschitz(C) + 1e-12
        for y in (-C, C):
            assert np.abs(losses.Squared().derivative(y, z)).max() <= losses.Squared().lipschitz(C)


def test_label_domain_and_bad_C():
    with pytest.raises(ValueError, match="-1, \\+1"):
        losses.Logistic().check_target(0.5)
    with pytest.raises(ValueError):
        losses.SquaredHinge().check_target(True)
    losses.Logistic().check_target(-1)
    with pytest.raises(ValueError, match="C must be"):
        losses.Logistic().curvature(0.0)
    assert np.isfinite(losses.Logistic().derivative(1.0, -1e4))


@pytest.mark.parametrize("C", [0.5, 1.0, 3.0])
def test_exp_concavity_makes_exp_minus_eta_loss_concave_and_is_tight(C):
    z = np.linspace(-C, C, 2001)
    cases = [(losses.Squared(), (-C, 0.0, C)), (losses.Logistic(), (-1.0, 1.0)),
             (losses.SquaredHinge(), (-1.0, 1.0))]
    for loss, targets in cases:
        eta = loss.exp_concavity(C)
        worst = []
        for y in targets:
            f = np.exp(-eta * loss.value(y, z))
            second = np.diff(f, 2)  # concave <=> second differences <= 0
            assert second.max() <= 1e-12, (loss, y)
            g = np.exp(-1.2 * eta * loss.value(y, z))  # a larger rate breaks concavity
            worst.append(np.diff(g, 2).max())
        assert max(worst) > 0, loss


# Closed forms written here, independently of okoco (numpy's and SciPy's functions), for the one
# compiled definition of each loss that the classes and the compiled steps share.
CLOSED_FORMS = {
    losses.Squared: (lambda y, z: (y - z) ** 2, lambda y, z: 2 * (z - y),
                     lambda y, z: np.full(np.broadcast(y, z).shape, 2.0)),
    losses.Logistic: (lambda y, z: np.logaddexp(0, -y * z),
                      lambda y, z: -y * expit(-y * z),
                      lambda y, z: expit(y * z) * expit(-y * z)),
    losses.SquaredHinge: (lambda y, z: np.maximum(0, 1 - y * z) ** 2,
                          lambda y, z: -2 * y * np.maximum(0, 1 - y * z),
                          lambda y, z: np.where(y * z < 1, 2.0, 0.0)),
}


@pytest.mark.parametrize("cls", list(CLOSED_FORMS))
def test_compiled_losses_equal_their_closed_forms(cls):
    """Value, derivative and curvature against the textbook formulas, over labels or targets
    and predictions from moderate to extreme (broadcast: a column of targets, a row of
    predictions), as arrays and as scalars."""
    loss = cls()
    y = (np.array([-1.0, 1.0]) if cls is not losses.Squared
         else np.array([-250.0, -1.0, 0.0, 0.3, 7.5]))[:, None]
    z = np.concatenate([np.linspace(-5, 5, 41), [-800.0, -30.0, 30.0, 800.0, 0.0]])[None, :]
    for name, form in zip(("value", "derivative", "second_derivative"), CLOSED_FORMS[cls]):
        got = getattr(loss, name)(y, z)
        assert got.shape == (y.shape[0], z.shape[1])
        np.testing.assert_allclose(got, form(y, z), rtol=1e-12, atol=1e-300, err_msg=name)
        scalars = [[getattr(loss, name)(float(a), float(b)) for b in z[0]] for a in y[:, 0]]
        np.testing.assert_array_equal(scalars, got)


def test_the_compiled_steps_know_each_loss_by_its_class_code():
    """One list of codes: the compiled steps code a loss by the class's ``_code``."""
    from okoco.learners._codes import compiled_loss

    assert [compiled_loss(cls()) for cls in CLOSED_FORMS] == [0, 1, 2]
    assert compiled_loss(type("Mine", (losses.Squared,), {})()) is None  # a user's subclass


def test_clip_excess_is_the_distance_to_the_interval_signed():
    """The papers' h(z) = z - clip(z, -C, C), the one compiled definition the steps share."""
    from okoco.learners.base import clip_excess

    z = np.concatenate([np.linspace(-5, 5, 101), [-1.0, 1.0, 0.0, -np.inf, np.inf]])
    got = [clip_excess(float(v), 1.0) for v in z]
    np.testing.assert_array_equal(got, np.where(np.abs(z) > 1, z - np.clip(z, -1, 1), 0.0))
    assert all(type(v) is float for v in got)
