"""Synthetic streams, each reproducible from its ``seed``.

Every generator draws all its randomness from one ``numpy.random.default_rng(seed)``; the same
arguments give the same dataset, and different seeds give different ones. Additive Gaussian noise
has standard deviation ``noise``; the noise-free targets are kept in ``dataset.info["y_clean"]``.

===================  ===========================================================================
name                 design
===================  ===========================================================================
``adversarial``      KONS paper, Discussion: one point at every step, targets ``+C, -C, ...``
``rkhs``             f = sum_j a_j exp(-gamma |x - c_j|^2) scaled into [-1, 1], plus noise
``sinc``             y = sin(x)/x + noise, x ~ U[-10, 10] (Engel, Mannor & Meir 2004)
``friedman``         Friedman #1 (Friedman 1991), as ``sklearn.datasets.make_friedman1``
``mackey-glass``     Mackey-Glass delay equation, time-delay embedding, next-value target
``bernoulli-kernel`` El Alaoui & Mahoney (2015): x in [0, 1], f = sin 2πx + 0.5 cos 6πx
``uniform``          input laws of Sun, Gomez & Schmidhuber (2012): U[0,1]^d, N(0,I), Cauchy^d
``normal``
``cauchy``
===================  ===========================================================================
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from okoco._validation import Interval, Options, check_param
from okoco.datasets.base import Dataset

__all__ = [
    "adversarial",
    "rkhs",
    "sinc",
    "friedman",
    "mackey_glass",
    "bernoulli_kernel",
    "uniform",
    "normal",
    "cauchy",
]


#: The constraints of the generators' parameters, by name (one table for every generator).
_COUNT = [Interval(Integral, 1, None, closed="left")]
_POSITIVE = [Interval(Real, 0, None, closed="neither")]
_NONNEGATIVE = [Interval(Real, 0, None, closed="left")]
_CONSTRAINTS = {
    "n": _COUNT, "d": _COUNT, "n_centers": _COUNT, "embedding": _COUNT, "horizon": _COUNT,
    "noise": _NONNEGATIVE, "burn_in": _NONNEGATIVE,
    "C": _POSITIVE, "gamma": _POSITIVE, "tau": _POSITIVE, "sample_every": _POSITIVE,
    "dt": _POSITIVE, "a": _POSITIVE,
    "low": [Interval(Real, None, None)], "high": [Interval(Real, None, None)],
    "design": [Options({"beta", "quantile", "grid"})],
}


def _checked(generator: str, **params) -> tuple:
    """The parameters, checked against :data:`_CONSTRAINTS` (numbers as float / int)."""
    values = tuple(check_param(name, value, _CONSTRAINTS[name], owner=generator)
                   for name, value in params.items())
    if "low" in params and not values[-2] < values[-1]:
        raise ValueError(f"{generator}: need low < high, got low={values[-2]!r}, "
                         f"high={values[-1]!r}")
    return values


def _make(name: str, X: np.ndarray, y_clean: np.ndarray, noise: float,
          rng: np.random.Generator, seed: Any, description: str, **info: Any) -> Dataset:
    y = y_clean + noise * rng.standard_normal(y_clean.shape[0]) if noise > 0 else y_clean.copy()
    info = {"seed": seed, "noise": noise, "y_clean": y_clean, **info}
    return Dataset(name, "regression", X=X, y=y, description=description, info=info)


def adversarial(n: int = 1000, C: float = 1.0, d: int = 1, x: Any = None, noise: float = 0.0,
                seed: int | None = 0) -> Dataset:
    """The adversarial example of the KONS paper: one point at every step, targets alternating ±C.

    Calandriello, Lazaric & Valko (2017), "Second-Order Kernel Online Convex Optimization with
    Adaptive Sketching", Discussion (limitations of dictionary sketches): the losses alternate
    ``(C - f(x))^2`` and ``(-C - f(x))^2``, so the best comparator is (asymptotically) ``f = 0``
    and a second-order method keeps a rank-one ``A_t``. The first target is ``+C``.

    Parameters
    ----------
    n
        Stream length.
    C
        Target magnitude, ``C > 0``.
    d
        Input dimension of the repeated point.
    x
        The repeated point (length ``d``); by default drawn once from ``U[-1, 1]^d``.
    noise
        Standard deviation of Gaussian noise added to the targets (0: exactly ±C).
    seed
        Seed of the generator.

    Examples
    --------
    >>> ds = adversarial(n=4, C=2.0, x=[0.5])
    >>> [(x["x0"], y) for x, y in ds]
    [(0.5, 2.0), (0.5, -2.0), (0.5, 2.0), (0.5, -2.0)]
    """
    n, d, C, noise = _checked("adversarial", n=n, d=d, C=C, noise=noise)
    rng = np.random.default_rng(seed)
    if x is None:
        point = rng.uniform(-1.0, 1.0, size=d)
    else:
        point = np.asarray(x, dtype=np.float64).reshape(-1)
        if point.shape[0] != d and d == 1:
            d = point.shape[0]
        if point.shape[0] != d or not np.all(np.isfinite(point)):
            raise ValueError(f"x must be {d} finite numbers, got {x!r}")
    X = np.tile(point, (n, 1))
    y_clean = np.where(np.arange(n) % 2 == 0, C, -C)
    return _make("adversarial", X, y_clean, noise, rng, seed,
                 "KONS paper: one point, targets alternating +C, -C", C=C)


def rkhs(n: int = 1000, d: int = 2, n_centers: int = 20, gamma: float = 1.0,
         noise: float = 0.1, seed: int | None = 0) -> Dataset:
    """A function in the RKHS of the RBF kernel, plus noise.

    Inputs ``x ~ U[-1, 1]^d``; ``f(x) = sum_j a_j exp(-gamma |x - c_j|^2)`` with ``n_centers``
    centres ``c_j ~ U[-1, 1]^d`` and coefficients ``a_j ~ N(0, 1)``. ``f`` is divided by
    ``max_i |f(x_i)|`` so that the noise-free targets lie in ``[-1, 1]`` (the bounded-target
    setting of the KOCO papers); then ``N(0, noise^2)`` noise is added. ``info`` keeps the
    centres, the (scaled) coefficients and ``gamma``, so ``f`` can be evaluated anywhere.

    Examples
    --------
    >>> ds = rkhs(n=50, d=3, seed=1)
    >>> ds.n, ds.d, float(abs(ds.info["y_clean"]).max())
    (50, 3, 1.0)
    """
    n, d, n_centers, noise, gamma = _checked("rkhs", n=n, d=d, n_centers=n_centers, noise=noise,
                                             gamma=gamma)
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-1.0, 1.0, size=(n_centers, d))
    coef = rng.standard_normal(n_centers)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    sq = (X**2).sum(1)[:, None] + (centers**2).sum(1)[None, :] - 2.0 * X @ centers.T
    f = np.exp(-gamma * np.maximum(sq, 0.0)) @ coef
    scale = float(np.max(np.abs(f)))
    coef = coef / scale if scale > 0 else coef
    y_clean = f / scale if scale > 0 else f
    return _make("rkhs", X, y_clean, noise, rng, seed,
                 "RBF-kernel expansion scaled into [-1, 1] plus Gaussian noise",
                 centers=centers, coef=coef, gamma=gamma)


def sinc(n: int = 1000, noise: float = 0.1, low: float = -10.0, high: float = 10.0,
         seed: int | None = 0) -> Dataset:
    """Noisy sinc: ``y = sin(x)/x + noise * N(0, 1)`` with ``x ~ U[low, high]``.

    The benchmark of Engel, Mannor & Meir (2004), "The Kernel Recursive Least-Squares Algorithm"
    (``n = 3000``, ``noise = 0.1``).

    Examples
    --------
    >>> ds = sinc(n=5, noise=0.0)
    >>> all(abs(y - np.sin(x["x0"]) / x["x0"]) < 1e-12 for x, y in ds)
    True
    """
    n, noise, low, high = _checked("sinc", n=n, noise=noise, low=low, high=high)
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=n)
    return _make("sinc", x.reshape(-1, 1), np.sinc(x / np.pi), noise, rng, seed,
                 "sin(x)/x plus Gaussian noise, x ~ U[-10, 10]")


def friedman(n: int = 1000, d: int = 10, noise: float = 1.0, seed: int | None = 0) -> Dataset:
    """Friedman #1: ``10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + noise``.

    ``x ~ U[0, 1]^d`` with ``d >= 5``; the columns after the fifth are irrelevant. Same law as
    ``sklearn.datasets.make_friedman1`` (Friedman 1991, "Multivariate adaptive regression splines").

    Examples
    --------
    >>> ds = friedman(n=100, d=6, seed=3)
    >>> ds.n, ds.d, ds.task
    (100, 6, 'regression')
    """
    n, noise = _checked("friedman", n=n, noise=noise)
    d = check_param("d", d, [Interval(Integral, 5, None, closed="left")], owner="friedman")
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, d))
    y_clean = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
               + 10 * X[:, 3] + 5 * X[:, 4])
    return _make("friedman", X, y_clean, noise, rng, seed, "Friedman #1 regression, x ~ U[0,1]^d")


def mackey_glass(n: int = 1000, tau: float = 30.0, embedding: int = 7, sample_every: float = 6.0,
                 horizon: int = 1, noise: float = 0.0, dt: float = 0.1, burn_in: float = 1000.0,
                 seed: int | None = 0) -> Dataset:
    """Mackey-Glass chaotic time series, as a one-step-ahead regression by time-delay embedding.

    ``dx/dt = 0.2 x(t - tau) / (1 + x(t - tau)^10) - 0.1 x(t)``, integrated by Euler steps of
    ``dt`` from a constant history ``x = 1.2`` perturbed by ``U[-0.1, 0.1]`` (drawn from
    ``seed``), sampled every ``sample_every`` time units after ``burn_in`` time units.
    With ``s_k`` the sampled series (plus ``N(0, noise^2)`` observation noise), row ``k`` is
    ``(s_k, ..., s_{k+embedding-1})`` with target ``s_{k+embedding-1+horizon}``. The defaults
    (tau 30, 6-unit sampling, 7 taps) follow the kernel adaptive filtering benchmarks (Liu,
    Príncipe & Haykin 2010); ``tau=17, sample_every=1`` is the other classic setting.

    Examples
    --------
    >>> ds = mackey_glass(n=200, embedding=4)
    >>> ds.d, ds.feature_names[0], ds.feature_names[-1]
    (4, 'x(t-3)', 'x(t)')
    >>> X, y, _ = ds.to_arrays()
    >>> bool(np.all(X[1:, -1] == y[:-1]))
    True
    """
    n, embedding, horizon, noise, tau, sample_every, dt, burn_in = _checked(
        "mackey_glass", n=n, embedding=embedding, horizon=horizon, noise=noise, tau=tau,
        sample_every=sample_every, dt=dt, burn_in=burn_in)
    lag = int(round(tau / dt))
    every = int(round(sample_every / dt))
    if lag < 1 or every < 1:
        raise ValueError("tau and sample_every must be at least dt")
    rng = np.random.default_rng(seed)
    n_series = n + embedding - 1 + horizon
    first = int(round(burn_in / dt))
    n_steps = first + (n_series - 1) * every + 1
    history = (1.2 + rng.uniform(-0.1, 0.1, size=lag + 1)).tolist()
    # plain floats: a Python loop over floats beats numpy scalar indexing for this recursion
    buf = history + [0.0] * (n_steps - 1)
    for t in range(lag, lag + n_steps - 1):
        delayed = buf[t - lag]
        buf[t + 1] = buf[t] + dt * (0.2 * delayed / (1.0 + delayed**10) - 0.1 * buf[t])
    series = np.asarray(buf[lag + first::every][:n_series], dtype=np.float64)
    observed = series + noise * rng.standard_normal(n_series) if noise > 0 else series.copy()
    idx = np.arange(n)[:, None] + np.arange(embedding)[None, :]
    X = observed[idx]
    y = observed[np.arange(n) + embedding - 1 + horizon]
    names = [f"x(t-{embedding - 1 - j})" for j in range(embedding - 1)] + ["x(t)"]
    info = {"seed": seed, "noise": noise, "y_clean": series[np.arange(n) + embedding - 1 + horizon],
            "series": series, "tau": tau}
    return Dataset("mackey-glass", "regression", X=X, y=y, feature_names=names, info=info,
                   description="Mackey-Glass series (tau 30), 7-tap embedding, next value")


def bernoulli_kernel(n: int = 500, design: str = "beta", a: float = 0.2, noise: float = 0.5,
                     seed: int | None = 0) -> Dataset:
    """A synthetic design for the Bernoulli (periodic Sobolev) kernel on ``[0, 1]``.

    After the leverage-score experiment of El Alaoui & Mahoney (2015), "Fast Randomized Kernel
    Methods With Statistical Guarantees" (the paper leaves ``f`` and the design unspecified):
    ``f*(x) = sin(2 pi x) + 0.5 cos(6 pi x)``, which lies in the RKHS of
    ``k(x, y) = (-1)^(s-1) / (2s)! B_2s({x - y})`` for every ``s >= 1``, and noise std 0.5.

    Parameters
    ----------
    design
        ``"beta"``: i.i.d. ``x ~ Beta(a, a)`` (dense at the borders, sparse in the centre: the
        high-leverage points sit in the middle); ``"quantile"``: the fixed design
        ``x_i = F^{-1}_{Beta(a,a)}((i - 0.5)/n)`` (sorted); ``"grid"``: the
        uniform grid ``x_i = (i - 1)/n`` (circulant kernel matrix).
    a
        Beta shape parameter (``a < 1`` concentrates mass at the borders).

    Examples
    --------
    >>> ds = bernoulli_kernel(n=4, design="grid", noise=0.0)
    >>> [round(x["x0"], 2) for x, _ in ds]
    [0.0, 0.25, 0.5, 0.75]
    >>> [round(y, 6) for _, y in ds]
    [0.5, 1.0, -0.5, -1.0]
    """
    n, noise, a, design = _checked("bernoulli_kernel", n=n, noise=noise, a=a, design=design)
    rng = np.random.default_rng(seed)
    if design == "beta":
        x = rng.beta(a, a, size=n)
    elif design == "quantile":
        # deferred: scipy.special loads in a third of scipy.stats' time; betaincinv(a, a, q) is
        # beta.ppf(q, a, a), bit for bit
        from scipy.special import betaincinv

        x = betaincinv(a, a, (np.arange(1, n + 1) - 0.5) / n)
    elif design == "grid":
        x = np.arange(n) / n
    y_clean = np.sin(2 * np.pi * x) + 0.5 * np.cos(6 * np.pi * x)
    return _make("bernoulli-kernel", x.reshape(-1, 1), y_clean, noise, rng, seed,
                 "Beta(0.2,0.2) design on [0,1], sin 2πx + 0.5 cos 6πx + noise",
                 design=design, a=a)


def _input_law(name: str, X: np.ndarray, noise: float, rng: np.random.Generator, seed: Any,
               description: str) -> Dataset:
    r = np.sqrt((X**2).sum(1))
    return _make(name, X, np.sinc(r / np.pi), noise, rng, seed, description)


_LAW_DOC = """

    Sun, Gomez & Schmidhuber (2012), "On the Size of the Online Kernel Sparsification
    Dictionary", study how the OKS/ALD dictionary
    grows with the input law: bounded inputs saturate it, Gaussian inputs make it grow
    logarithmically and Cauchy inputs about like ``sqrt(n)``. The paper has no targets; so that
    the stream can drive a learner, ``y = sin(|x|)/|x| + noise * N(0, 1)``.
"""


def uniform(n: int = 1000, d: int = 1, low: float = 0.0, high: float = 1.0, noise: float = 0.1,
            seed: int | None = 0) -> Dataset:
    """Inputs ``x ~ U[low, high]^d`` (the bounded law of Sun et al. 2012).

    Examples
    --------
    >>> X, y, _ = uniform(n=100, d=2).to_arrays()
    >>> X.shape, bool(X.min() >= 0 and X.max() <= 1)
    ((100, 2), True)
    """
    n, d, noise, low, high = _checked("uniform", n=n, d=d, noise=noise, low=low, high=high)
    rng = np.random.default_rng(seed)
    X = rng.uniform(low, high, size=(n, d))
    return _input_law("uniform", X, noise, rng, seed, "x ~ U[0,1]^d, y = sinc|x| + noise")


def normal(n: int = 1000, d: int = 1, noise: float = 0.1, seed: int | None = 0) -> Dataset:
    """Inputs ``x ~ N(0, I_d)`` (the light-tailed unbounded law of Sun et al. 2012).

    Examples
    --------
    >>> normal(n=10, d=2, seed=5)
    Dataset(name='normal', n=10, d=2, task='regression')
    """
    n, d, noise = _checked("normal", n=n, d=d, noise=noise)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return _input_law("normal", X, noise, rng, seed, "x ~ N(0, I_d), y = sinc|x| + noise")


def cauchy(n: int = 1000, d: int = 1, noise: float = 0.1, seed: int | None = 0) -> Dataset:
    """Inputs with i.i.d. standard Cauchy coordinates (the heavy-tailed law of Sun et al. 2012).

    Examples
    --------
    >>> cauchy(n=10, seed=5).task
    'regression'
    """
    n, d, noise = _checked("cauchy", n=n, d=d, noise=noise)
    rng = np.random.default_rng(seed)
    X = rng.standard_cauchy((n, d))
    return _input_law("cauchy", X, noise, rng, seed,
                      "standard Cauchy inputs, y = sinc|x| + noise")


for _f in (uniform, normal, cauchy):
    _f.__doc__ = _f.__doc__.replace("\n\n    Examples", _LAW_DOC + "\n    Examples", 1)
del _f
