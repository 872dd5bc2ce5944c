"""Seed 003: Nyström kernel ridge regression with leverage-score against uniform column sampling.

El Alaoui & Mahoney (2015) show that sampling ``p`` columns with probabilities proportional to the
lambda-ridge leverage scores ``l_i = [K (K + n lambda I)^-1]_ii`` gives an in-sample risk within
``(1 + 2 eps)^2`` of full kernel ridge regression once ``p ~ d_eff log n``, whereas uniform
sampling needs ``p ~ d_mof = n max_i l_i``. The gap shows when the design is non-uniform.

Setting (spec ``ridge-leverage-scores-oks-krls.md`` R-003-B, the paper's Figure 1 / Table 1
"Synth" row): Bernoulli kernel of order 1, ``k(x, y) = B_2({x - y}) / 2``, on ``n = 500`` points
``x_i = F^-1_Beta(0.2,0.2)((i - 0.5)/n)`` (dense at the borders, sparse in the centre),
``f*(x) = sin 2 pi x + 0.5 cos 6 pi x``, noise std 0.5, ``lambda = 10^-3.5``. The risk
``R(f_M) = n lambda^2 ||(M + n lambda I)^-1 f*||^2 + sigma^2/n Tr(M^2 (M + n lambda I)^-2)`` is
computed exactly (no Monte Carlo) for ``M = K`` and for the Nyström ``M = L = C W^+ C^T``.
Theory predicts a ratio ``R(f_L)/R(f_K)`` near 1 at ``p = 2 d_eff`` for leverage sampling
(the paper reports 1.01), and markedly worse for uniform sampling.

Run: python examples/nystrom_leverage.py [--small] [--out DIR]
Writes nystrom_leverage.png.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from _figures import finish, parse, save

from okoco import datasets
from okoco.dictionary import (
    NystromKRR,
    approximate_ridge_leverage_scores,
    effective_dimension,
    max_degrees_of_freedom,
    ridge_leverage_scores,
)
from okoco.kernels import Kernel

LAMBDA, NOISE = 10**-3.5, 0.5


class Bernoulli(Kernel):
    """Bernoulli (periodic Sobolev) kernel of order 1 on [0, 1]: ``B_2({x - y}) / 2``.

    ``B_2(t) = t^2 - t + 1/6``; positive semi-definite, with no constant mode (seed 003 A.5-3).
    """

    def _gram(self, X, Y):
        t = np.mod(X[:, :1] - Y[:, :1].T, 1.0)
        return (t * t - t + 1.0 / 6.0) / 2.0

    def _diag(self, X):
        return np.full(X.shape[0], 1.0 / 12.0)


def risk(B: np.ndarray, f_star: np.ndarray, ridge: float) -> float:
    """Exact in-sample risk of KRR with the kernel matrix ``M = B B^T`` (seed 003 A.2.5)."""
    n = f_star.shape[0]
    # M's nonzero eigenvalues s and eigenvectors Q from the small (p x p) matrix B^T B: the
    # same numbers as an SVD of B, without a LAPACK SVD per draw (slow on a busy machine)
    s, V = np.linalg.eigh(B.T @ B)
    keep = s > 1e-20 * s.max()  # singular values above 1e-10 of the largest
    s, V = s[keep], V[:, keep]
    Q = (B @ V) / np.sqrt(s)
    c = Q.T @ f_star
    perp2 = f_star @ f_star - c @ c  # f* outside range(M): the resolvent acts as 1/ridge there
    bias2 = ridge**2 / n * (np.sum(c**2 / (s + ridge) ** 2) + perp2 / ridge**2)
    variance = NOISE**2 / n * np.sum(s**2 / (s + ridge) ** 2)
    return float(bias2 + variance)


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    draws = 12 if args.small else 100
    data = datasets.load("bernoulli-kernel", n=500, design="quantile", a=0.2, noise=NOISE)
    X, _, _ = data.to_arrays()
    f_star = data.info["y_clean"]
    n, kernel = X.shape[0], Bernoulli()
    ridge = n * LAMBDA  # seed 003 writes (K + n lambda I)
    K = kernel(X, X)
    scores = ridge_leverage_scores(K, ridge)
    d_eff, d_mof = effective_dimension(K, ridge), max_degrees_of_freedom(K, ridge)
    w, V = np.linalg.eigh(K)
    full = risk(V * np.sqrt(np.clip(w, 0.0, None)), f_star, ridge)

    rng = np.random.default_rng(0)
    ps = [int(round(m * d_eff)) for m in (1, 2, 4)]
    methods = ["uniform", "exact leverage", "approximate leverage"]
    ratios = {m: np.zeros((len(ps), draws)) for m in methods}
    for i, p in enumerate(ps):
        for j in range(draws):
            for method in methods:
                if method == "uniform":
                    probs = np.full(n, 1.0 / n)
                elif method == "exact leverage":
                    probs = scores / scores.sum()
                else:  # El Alaoui & Mahoney Sect. 3.5 with p uniformly sampled columns
                    approx = approximate_ridge_leverage_scores(X, kernel, ridge, p, seed=rng)
                    probs = approx / approx.sum()
                J = np.unique(rng.choice(n, size=p, replace=True, p=probs))
                model = NystromKRR(kernel, alpha=ridge, landmarks=X[J]).fit(X, f_star)
                ratios[method][i, j] = risk(model.transform(X), f_star, ridge) / full

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.3))
    ax.plot(X[:, 0], scores, ".", markersize=3)
    finish(ax, f"Beta(0.2, 0.2) quantile design, n={n}: few high-leverage points\n"
           f"in the sparse centre; $d_{{eff}}$={d_eff:.1f}, $d_{{mof}}$={d_mof:.1f}",
           legend=None, xlabel="x", ylabel="λ-ridge leverage score $l_i$")
    for k, method in enumerate(methods):
        lo, median, hi = np.percentile(ratios[method], [25, 50, 75], axis=1)
        x = np.array(ps) * (1 + 0.03 * (k - 1))
        line = ax2.errorbar(x, median, yerr=[median - lo, hi - median], marker="o", capsize=3,
                            label=f"{method}: median, quartiles")
        ax2.plot(x, ratios[method].mean(1), "x", color=line[0].get_color(),
                 label="× mean" if k == 0 else None)
    ax2.axhline(1.0, color="gray", linestyle=":")
    ax2.set_xscale("log")
    ax2.set_xticks(ps, [f"{p}\n({m}×$d_{{eff}}$)" for p, m in zip(ps, (1, 2, 4))])
    ax2.minorticks_off()
    finish(ax2, f"Nyström KRR risk over {draws} draws; theory: leverage sampling reaches\n"
           "≈1 at p ≈ 2 $d_{eff}$, uniform needs p ~ $d_{mof}$",
           xlabel="sampled columns p", ylabel="risk ratio $R(f_L)/R(f_K)$")
    path = save(fig, args.out, "nystrom_leverage.png")

    means = {m: ratios[m].mean(1).tolist() for m in methods}
    print(f"nystrom_leverage.png: d_eff={d_eff:.2f}, d_mof={d_mof:.1f}, R(f_K)={full:.5f}; "
          f"mean risk ratio at p={ps}: "
          + "; ".join(f"{m} " + "/".join(f"{v:.2f}" for v in vals) for m, vals in means.items()))
    return {"figures": [path], "d_eff": d_eff, "d_mof": d_mof, "risk_full": full, "p": ps,
            "ratio": means}


if __name__ == "__main__":
    main()
