"""Synthetic streams, each reproducible from its ``seed``.

Every generator draws all its randomness from one ``numpy.random.default_rng(seed)``; the same
arguments give the same dataset, and different seeds give different ones. Additive Gaussian noise
has standard deviation ``noise``; the noise-free targets are kept in ``dataset.info["y_clean"]``.

===================  ===========================================================================
name                 design
===================  ===========================================================================
``adversarial``      seed 001 §6: one point shown at every step, targets ``+C, -C, +C, ...``
``rkhs``             f = sum_j a_j exp(-gamma |x - c_j|^2) scaled into [-1, 1], plus noise
``sinc``             y = sin(x)/x + noise, x ~ U[-10, 10] (Engel et al. 2004; seed 004 R-004-E)
``friedman``         Friedman #1 (Friedman 1991), as ``sklearn.datasets.make_friedman1``
``mackey-glass``     Mackey-Glass delay equation, time-delay embedding, next-value target
``bernoulli-kernel`` seed 003 §A.4 / R-003-B: x in [0, 1], f = sin 2πx + 0.5 cos 6πx
``uniform``          seed 004 R-004-B input laws: U[0, 1]^d, N(0, I_d), standard Cauchy^d
``normal``
``cauchy``
===================  ===========================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return int(n)


def _check_d(d: int, minimum: int = 1) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < minimum:
        raise ValueError(f"d must be an integer >= {minimum}, got {d!r}")
    return int(d)


def _check_nonneg(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


def _make(name: str, X: np.ndarray, y_clean: np.ndarray, noise: float,
          rng: np.random.Generator, seed: Any, description: str, **info: Any) -> Dataset:
    y = y_clean + noise * rng.standard_normal(y_clean.shape[0]) if noise > 0 else y_clean.copy()
    info = {"seed": seed, "noise": noise, "y_clean": y_clean, **info}
    return Dataset(name, "regression", X=X, y=y, description=description, info=info)


def adversarial(n: int = 1000, C: float = 1.0, d: int = 1, x: Any = None, noise: float = 0.0,
                seed: int | None = 0) -> Dataset:
    """Seed 001's adversarial example: the same point at every step, targets alternating ±C.

    Calandriello et al. (2017), "Second-order kernel online convex optimization with adaptive
    sketching", Discussion (spec ``kons-kors-sketched-kons.md`` §6): the losses alternate
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
    n, d = _check_n(n), _check_d(d)
    C, noise = float(C), _check_nonneg("noise", noise)
    if not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be a finite number > 0, got {C!r}")
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
                 "seed 001: one point, targets alternating +C, -C", C=C)


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
    n, d, n_centers = _check_n(n), _check_d(d), _check_n(n_centers)
    noise, gamma = _check_nonneg("noise", noise), float(gamma)
    if not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be a finite number > 0, got {gamma!r}")
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

    The benchmark of Engel, Mannor & Meir (2004) for KRLS (spec R-004-E: ``n = 3000``,
    ``noise = 0.1``).

    Examples
    --------
    >>> ds = sinc(n=5, noise=0.0)
    >>> all(abs(y - np.sin(x["x0"]) / x["x0"]) < 1e-12 for x, y in ds)
    True
    """
    n, noise = _check_n(n), _check_nonneg("noise", noise)
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"need finite low < high, got low={low!r}, high={high!r}")
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
    n, d, noise = _check_n(n), _check_d(d, 5), _check_nonneg("noise", noise)
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
    n, embedding, horizon = _check_n(n), _check_d(embedding), _check_d(horizon)
    noise = _check_nonneg("noise", noise)
    for pname, value in (("tau", tau), ("sample_every", sample_every), ("dt", dt)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{pname} must be a finite number > 0, got {value!r}")
    burn_in = _check_nonneg("burn_in", burn_in)
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
    """Seed 003's synthetic design for the Bernoulli (periodic Sobolev) kernel on ``[0, 1]``.

    Rudi, Camoriano & Rosasco / Alaoui & Mahoney leverage-score experiment as digested in
    ``ridge-leverage-scores-oks-krls.md`` (§A.4, R-003-A/B, the paper leaves ``f`` and the
    design unspecified): ``f*(x) = sin(2 pi x) + 0.5 cos(6 pi x)``, which lies in the RKHS of
    ``k(x, y) = (-1)^(s-1) / (2s)! B_2s({x - y})`` for every ``s >= 1``, and noise std 0.5.

    Parameters
    ----------
    design
        ``"beta"``: i.i.d. ``x ~ Beta(a, a)`` (dense at the borders, sparse in the centre: the
        high-leverage points sit in the middle); ``"quantile"``: the fixed design
        ``x_i = F^{-1}_{Beta(a,a)}((i - 0.5)/n)`` of R-003-B (sorted); ``"grid"``: the
        uniform grid ``x_i = (i - 1)/n`` of R-003-A (circulant kernel matrix).
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
    n, noise = _check_n(n), _check_nonneg("noise", noise)
    if not np.isfinite(a) or a <= 0:
        raise ValueError(f"a must be a finite number > 0, got {a!r}")
    rng = np.random.default_rng(seed)
    if design == "beta":
        x = rng.beta(a, a, size=n)
    elif design == "quantile":
        from scipy.stats import beta

        x = beta.ppf((np.arange(1, n + 1) - 0.5) / n, a, a)
    elif design == "grid":
        x = np.arange(n) / n
    else:
        raise ValueError(f"design must be 'beta', 'quantile' or 'grid', got {design!r}")
    y_clean = np.sin(2 * np.pi * x) + 0.5 * np.cos(6 * np.pi * x)
    return _make("bernoulli-kernel", x.reshape(-1, 1), y_clean, noise, rng, seed,
                 "seed 003: Beta(0.2,0.2) design on [0,1], sin 2πx + 0.5 cos 6πx + noise",
                 design=design, a=a)


def _input_law(name: str, X: np.ndarray, noise: float, rng: np.random.Generator, seed: Any,
               description: str) -> Dataset:
    r = np.sqrt((X**2).sum(1))
    return _make(name, X, np.sinc(r / np.pi), noise, rng, seed, description)


_LAW_DOC = """

    Seed 004 (``ridge-leverage-scores-oks-krls.md`` R-004-B) studies how the OKS/ALD dictionary
    grows with the input law: bounded inputs saturate it, Gaussian inputs make it grow
    logarithmically and Cauchy inputs about like ``sqrt(n)``. The paper has no targets; so that
    the stream can drive a learner, ``y = sin(|x|)/|x| + noise * N(0, 1)``.
"""


def uniform(n: int = 1000, d: int = 1, low: float = 0.0, high: float = 1.0, noise: float = 0.1,
            seed: int | None = 0) -> Dataset:
    """Inputs ``x ~ U[low, high]^d`` (seed 004's bounded law).

    Examples
    --------
    >>> X, y, _ = uniform(n=100, d=2).to_arrays()
    >>> X.shape, bool(X.min() >= 0 and X.max() <= 1)
    ((100, 2), True)
    """
    n, d, noise = _check_n(n), _check_d(d), _check_nonneg("noise", noise)
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"need finite low < high, got low={low!r}, high={high!r}")
    rng = np.random.default_rng(seed)
    X = rng.uniform(low, high, size=(n, d))
    return _input_law("uniform", X, noise, rng, seed, "seed 004: x ~ U[0,1]^d, y = sinc|x| + noise")


def normal(n: int = 1000, d: int = 1, noise: float = 0.1, seed: int | None = 0) -> Dataset:
    """Inputs ``x ~ N(0, I_d)`` (seed 004's light-tailed unbounded law).

    Examples
    --------
    >>> normal(n=10, d=2, seed=5)
    Dataset(name='normal', n=10, d=2, task='regression')
    """
    n, d, noise = _check_n(n), _check_d(d), _check_nonneg("noise", noise)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return _input_law("normal", X, noise, rng, seed, "seed 004: x ~ N(0, I_d), y = sinc|x| + noise")


def cauchy(n: int = 1000, d: int = 1, noise: float = 0.1, seed: int | None = 0) -> Dataset:
    """Inputs with i.i.d. standard Cauchy coordinates (seed 004's heavy-tailed law).

    Examples
    --------
    >>> cauchy(n=10, seed=5).task
    'regression'
    """
    n, d, noise = _check_n(n), _check_d(d), _check_nonneg("noise", noise)
    rng = np.random.default_rng(seed)
    X = rng.standard_cauchy((n, d))
    return _input_law("cauchy", X, noise, rng, seed,
                      "seed 004: standard Cauchy inputs, y = sinc|x| + noise")


for _f in (uniform, normal, cauchy):
    _f.__doc__ = _f.__doc__.replace("\n\n    Examples", _LAW_DOC + "\n    Examples", 1)
del _f
