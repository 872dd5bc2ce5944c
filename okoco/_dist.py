"""Predictive distributions as river's ``proba.Gaussian``, built cheaply.

``proba.Gaussian()`` seeds a ``random.Random`` of its own (about 10 µs, most of a kernel
prediction), so :func:`gaussian` copies one prototype, whose unseeded generator the copies share
(only ``sample`` reads it), and gives the copy the running variance river's ``_from_state``
would build. river is imported at the first call: ``river.proba`` imports ``scipy.stats``,
which a replay without distributions never needs.

Examples
--------
>>> from okoco._dist import gaussian
>>> dist = gaussian(0.5, 4.0)
>>> dist.mu, dist.sigma
(0.5, 2.0)
"""

from __future__ import annotations

import copy
import functools
import math

__all__ = ["gaussian", "rescaled_gaussian"]


@functools.cache
def _prototype():
    from river import proba  # deferred: it imports scipy.stats (module docstring)

    return proba.Gaussian()


def gaussian(mean: float, variance: float):
    """A river ``proba.Gaussian`` of this mean and variance (``predict_one(x, with_dist=True)``),
    equal to ``proba.Gaussian._from_state(n=1, m=mean, var=variance, ddof=0)``."""
    prototype = _prototype()
    dist = copy.copy(prototype)
    dist._var = prototype._var._from_state(1, mean, variance, ddof=0)
    return dist


def rescaled_gaussian(mean: float, sigma: float, scale: float):
    """A prediction's Gaussian in the targets' units: ``mean`` (already mapped) with standard
    deviation ``scale * sigma``, ``scale`` the targets' running standard deviation. Its variance
    is computed as a product (``**`` would raise OverflowError); one that overflows float64
    raises ValueError, as the learners' ``predict_one(x, with_dist=True)`` does."""
    variance = scale * scale * sigma * sigma
    if not math.isfinite(variance):
        raise ValueError(f"the predictive variance at x is {variance!r} in the targets' units: "
                         "too large for float64; rescale the targets")
    return gaussian(mean, variance)
