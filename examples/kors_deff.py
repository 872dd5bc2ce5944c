"""KORS: dictionary size against the effective dimension, and its accuracy, as beta and eps vary.

Kernel Online Row Sampling (Calandriello et al. 2017, Algorithm 2; ``okoco.dictionary.KORS``)
keeps point ``t`` with probability ``min(beta tau~_t, 1)``, ``tau~_t`` an over-estimate of its
ridge leverage score, and weight ``1/p~_t``. Theorem 2 (as corrected in the spec) says that
with probability ``1 - delta``, once ``beta >= 3 log(4 T^2 / delta) / eps^2``:

- accuracy: ``(1 - eps) A_T <= A_T^I <= (1 + eps) A_T``, i.e. every eigenvalue of
  ``(K + alpha I)^-1/2 K^1/2 (I - S S^T) K^1/2 (K + alpha I)^-1/2`` lies in ``[-eps, eps]``;
- size: ``|I_T| <= 3 rho beta d_onl(alpha)`` with ``rho = (1 + eps)/(1 - eps)``.

This script measures both for a grid of ``beta`` (well below the theoretical value, where KORS
is useful in practice) and three ``eps``, on 2-D Gaussian inputs with an RBF kernel.

Run: python examples/kors_deff.py [--small] [--out DIR]
Writes kors_deff.png.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from _figures import finish, parse, save

from okoco import datasets, kernels
from okoco.dictionary import (
    KORS,
    beta_proof,
    effective_dimension,
    online_effective_dimension,
)

ALPHA, DELTA = 1.0, 0.1
KERNEL = kernels.RBF(gamma=0.5)


def spectral_error(U, s, S) -> float:
    """max |eig(D^2 - D U^T S S^T U D)|, D = diag(sqrt(s/(s+alpha))), K = U diag(s) U^T.

    Same spectrum as (K + alpha I)^-1/2 K^1/2 (I - S S^T) K^1/2 (K + alpha I)^-1/2 (similar
    matrices), so this is the smallest eps for which Theorem 2's accuracy statement holds.
    """
    d = np.sqrt(np.clip(s, 0.0, None) / (np.clip(s, 0.0, None) + ALPHA))
    G = d[:, None] * (U.T @ S)
    return float(np.max(np.abs(np.linalg.eigvalsh(np.diag(d**2) - G @ G.T))))


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    T, seeds = (250, [0]) if args.small else (1000, [0, 1, 2])
    betas = [0.5, 1, 2, 5, 10, 20] if args.small else [0.5, 1, 2, 5, 10, 20, 50, 100, 200]
    epss = [0.25, 0.5, 0.9]
    X, _, _ = datasets.load("normal", n=T, d=2, seed=0).to_arrays()
    K = KERNEL(X, X)
    s, U = np.linalg.eigh(K)
    d_eff = effective_dimension(K, ALPHA)
    d_onl = online_effective_dimension(K, ALPHA)

    size = {eps: np.zeros((len(betas), len(seeds))) for eps in epss}
    error = {eps: np.zeros((len(betas), len(seeds))) for eps in epss}
    for eps in epss:
        for i, beta in enumerate(betas):
            for j, seed in enumerate(seeds):
                kors = KORS(KERNEL, alpha=ALPHA, eps=eps, beta=beta, seed=seed)
                kors.update_many(X)
                size[eps][i, j] = kors.size
                error[eps][i, j] = spectral_error(U, s, kors.selection_matrix(T))

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.4))
    for eps in epss:
        rho = (1 + eps) / (1 - eps)
        line, = ax.plot(betas, size[eps].mean(1) / d_eff, marker="o", markersize=4,
                        label=f"ε = {eps}: measured")
        ax.plot(betas, np.minimum(3 * rho * np.array(betas) * d_onl, T) / d_eff, "--",
                color=line.get_color(), linewidth=1, label=f"ε = {eps}: 3ρβ $d_{{onl}}$ (Thm 2)")
        ax2.plot(betas, error[eps].mean(1), marker="o", markersize=4, color=line.get_color(),
                 label=f"ε = {eps}")
        ax2.axhline(eps, linestyle="--", linewidth=1, color=line.get_color())
        b_star = beta_proof(T, DELTA, eps)
        if b_star <= betas[-1]:
            ax2.axvline(b_star, linestyle=":", color=line.get_color(), linewidth=1)
    ax.axhline(T / d_eff, color="gray", linestyle=":", label=f"all T = {T} points")
    finish(ax, f"size: N(0, I₂) inputs, RBF γ=0.5, α={ALPHA}, T={T}, "
           f"$d_{{eff}}$={d_eff:.1f}, $d_{{onl}}$={d_onl:.1f}\n"
           "theory: size ≤ 3ρβ $d_{onl}$, i.e. proportional to $d_{eff}$, not T",
           legend=7, xscale="log", yscale="log", xlabel="β (oversampling)",
           ylabel="$|I_T|$ / $d_{eff}(α)$")
    finish(ax2, "accuracy: theory says ε̂ ≤ ε (dashed) w.p. 1-δ once β ≥ 3 log(4T²/δ)/ε²\n"
           "(dotted, δ = 0.1, where on the grid); mean over seeds",
           xscale="log", xlabel="β (oversampling)",
           ylabel="measured ε̂ (spectral error of $A^I_T$)")
    path = save(fig, args.out, "kors_deff.png")

    summary = {eps: (float(size[eps].mean(1)[i_b]), float(error[eps].mean(1)[i_b]))
               for eps in epss for i_b in [betas.index(10)]}
    print(f"kors_deff.png: T={T}, d_eff={d_eff:.1f}, d_onl={d_onl:.1f}; at beta=10: "
          + ", ".join(f"eps={e}: |I|={v[0]:.0f}, measured eps {v[1]:.2f}"
                      for e, v in summary.items()))
    return {"figures": [path], "T": T, "d_eff": d_eff, "d_onl": d_onl,
            "size": {e: size[e].mean(1).tolist() for e in epss},
            "error": {e: error[e].mean(1).tolist() for e in epss}, "betas": betas}


if __name__ == "__main__":
    main()
