"""Growth of the ALD / OKS dictionary with the input law, against seed 004's predicted rates.

Sun, Gomez & Schmidhuber (2012) bound the size of the online kernel sparsification dictionary
(``okoco.dictionary.ALD``, the KRLS dictionary) through the eigenvalue decay of the kernel's
covariance operator (spec ``ridge-leverage-scores-oks-krls.md`` part B):

- bounded inputs (``U[0, 1]``): the feature set is compact, so the dictionary saturates;
- Gaussian inputs with the Gaussian kernel: eigenvalues ``lambda_i = c_0 B^i`` decay
  exponentially, so ``|D_n| = O(log n)``; Theorem 3 gives the explicit upper bound
  ``P(|D_n| >= k) < nu^-k binom(n, k) nu_k`` drawn here at level 0.05 (``nu_k`` in closed form);
- standard Cauchy inputs: polynomial decay ``lambda_i ~ i^-(1+p)``, so
  ``|D_n| ~ n^(1/(1+p))``; ``1 + p`` is measured here from the eigenvalues of ``K/n``.

Gaussian kernel ``exp(-(x - x')^2 / 2)`` (``RBF(gamma=0.5)``), threshold ``nu = 0.01``.

Run: python examples/ald_growth.py [--small] [--out DIR]
Writes ald_growth.png.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from _figures import finish, parse, save

from okoco import datasets, kernels
from okoco.dictionary import ALD

NU = 0.01
KERNEL = kernels.RBF(gamma=0.5)  # exp(-(x - x')^2 / (2 l^2)) with l = 1


def log_nu_gaussian(k: int) -> float:
    """log nu_k for the Gaussian kernel (l = 1) under x ~ N(0, 1) (Rasmussen & Williams 4.3.1).

    ``lambda_i = c_0 B^i`` (i >= 0) gives ``nu_k = c_0^k k! B^(k(k-1)/2) / prod_{i<=k}(1 - B^i)``
    (seed 004 B.2.2, with the paper's extra ``sigma^-k`` removed).
    """
    a, b = 0.25, 0.5  # 1/(4 s_x^2), 1/(2 l^2)
    c = math.sqrt(a * a + 2 * a * b)
    A = a + b + c
    c0, B = math.sqrt(2 * a / A), b / A
    return (k * math.log(c0) + math.lgamma(k + 1) + k * (k - 1) / 2 * math.log(B)
            - sum(math.log1p(-B**i) for i in range(1, k + 1)))


def theorem3_size(n: int, delta: float = 0.05) -> int:
    """Smallest k with nu^-k binom(n, k) nu_k < delta (Theorem 3): P(|D_n| >= k) < delta."""
    for k in range(1, n + 1):
        log_binom = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        if -k * math.log(NU) + log_binom + log_nu_gaussian(k) < math.log(delta):
            return k
    return n


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    n, seeds = (3000, [0]) if args.small else (100_000, [0, 1, 2])
    grid = np.unique(np.round(np.logspace(1, np.log10(n), 40)).astype(int))
    laws = {"uniform U[0,1]": "uniform", "normal N(0,1)": "normal", "Cauchy": "cauchy"}
    sizes = {}
    for label, name in laws.items():
        runs = []
        for seed in seeds:
            X, _, _ = datasets.load(name, n=n, seed=seed).to_arrays()
            added = ALD(KERNEL, nu=NU).update_many(X)
            runs.append(np.cumsum(added)[grid - 1])
        sizes[label] = np.mean(runs, axis=0)

    # Eigen-decay exponent 1 + p of K/m under Cauchy inputs, fitted from index 10 down to
    # eigenvalues 2/m: below about 1/m the spectrum of K/m is the isolated sample points (each
    # adds k(x, x)/m = 1/m), not the covariance operator's.
    m = 1000 if args.small else 4000
    Xc, _, _ = datasets.load("cauchy", n=m, seed=10).to_arrays()
    lam = np.sort(np.linalg.eigvalsh(KERNEL(Xc, Xc) / m))[::-1]
    idx = np.arange(10, max(20, int(np.sum(lam > 2.0 / m))) + 1)
    decay = -np.polyfit(np.log(idx), np.log(lam[idx - 1]), 1)[0]
    tail = grid >= min(1000, n // 3)
    slope = np.polyfit(np.log(grid[tail]), np.log(sizes["Cauchy"][tail]), 1)[0]
    bound = np.array([theorem3_size(int(k)) for k in grid])
    per_decade = np.polyfit(np.log10(grid[tail]), sizes["normal N(0,1)"][tail], 1)[0]

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = {}
    for label, s in sizes.items():
        line, = ax.plot(grid, s, marker="o", markersize=3, label=f"{label}: measured")
        colors[label] = line.get_color()
    anchor = grid[tail][0]
    ref = sizes["Cauchy"][tail][0] * (grid / anchor) ** (1 / decay)
    ax.plot(grid, ref, "--", color=colors["Cauchy"],
            label=f"Cauchy: predicted $n^{{1/(1+p)}}$, 1+p = {decay:.2f} from eig(K/n)")
    ax.plot(grid, bound, "--", color=colors["normal N(0,1)"],
            label="normal: Theorem 3 bound, P(|D| ≥ k) < 0.05")
    ax.axhline(sizes["uniform U[0,1]"][-1], linestyle=":", color=colors["uniform U[0,1]"],
               label="uniform: predicted to saturate")
    finish(ax, f"ALD/OKS dictionary, Gaussian kernel ℓ=1, ν={NU}, mean of {len(seeds)} "
           "seed(s)\ntheory: bounded → saturates, Gaussian → O(log n), "
           "Cauchy → $n^{1/(1+p)}$",
           xscale="log", yscale="log", xlabel="n (stream length)",
           ylabel="dictionary size $|D_n|$")
    path = save(fig, args.out, "ald_growth.png")

    final = {label: float(s[-1]) for label, s in sizes.items()}
    print(f"ald_growth.png: |D_n| at n={n}: "
          + ", ".join(f"{k} {v:.1f}" for k, v in final.items())
          + f"; normal grows {per_decade:.1f} per decade (Theorem 3 bound {bound[-1]}); "
          f"Cauchy log-log slope {slope:.2f} vs predicted 1/(1+p) = {1 / decay:.2f}")
    return {"figures": [path], "n": n, "size": final, "cauchy_slope": float(slope),
            "predicted_slope": float(1 / decay), "normal_per_decade": float(per_decade),
            "theorem3_bound": int(bound[-1])}


if __name__ == "__main__":
    main()
