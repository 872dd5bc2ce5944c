"""okoco._dist.gaussian: the same distribution as river's own constructor, each its own."""

import pytest
from river import proba

from okoco._dist import gaussian


@pytest.mark.parametrize(("mean", "variance"), [(0.0, 1.0), (-3.5, 0.25), (40.0, 1e-12)])
def test_gaussian_equals_rivers_from_state(mean, variance):
    ours = gaussian(mean, variance)
    theirs = proba.Gaussian._from_state(n=1, m=mean, var=variance, ddof=0)
    assert isinstance(ours, proba.Gaussian)
    assert (ours.mu, ours.sigma) == (theirs.mu, theirs.sigma)
    assert ours(mean + 0.1) == theirs(mean + 0.1)  # the density
    assert ours.cdf(mean - 0.3) == theirs.cdf(mean - 0.3)


def test_each_gaussian_holds_its_own_statistics():
    first, second = gaussian(1.0, 4.0), gaussian(-2.0, 9.0)
    assert (first.mu, first.sigma, second.mu, second.sigma) == (1.0, 2.0, -2.0, 3.0)
    first.update(10.0)  # river's update changes that distribution only
    assert (second.mu, second.sigma) == (-2.0, 3.0)
