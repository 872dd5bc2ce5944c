"""Seed 001's adversarial example: log T regret for KONS, and what a dictionary sketch does there.

The same point ``x`` is shown at every step and the targets alternate ``+C, -C, +C, ...`` under the
squared loss (Calandriello et al. 2017, Discussion; spec ``kons-kors-sketched-kons.md`` section 6).
With ``eta = sigma = 1/(8 C^2)`` and ``alpha = 1`` the paper predicts for exact KONS
``R_T <= sum_t gdot_t^2 / (sigma sum_{s<=t} gdot_s^2 + alpha) = O(log T)`` while it stores all
``t`` points. A reweight-only dictionary (KORS inside Sketched-KONS) sees leverage scores
``1/(t + alpha)`` for the repeated point, so it stops sampling: the preconditioner stays small and
the regret loses its log rate (the "limitation of dictionary sketches" paragraph), unless the
floor ``p_min`` keeps sampling a fraction ``p_min`` of the steps, which costs ``p_min t`` atoms.

The comparator is :class:`okoco.regret.BestConstant`: on a single repeated point every function
is a constant there, so the best constant in ``[-C, C]`` is the best comparator in the paper's
class. The regret against ``w = 0`` (the paper's choice, ``f = 0``) is shown too.

Run: python examples/adversarial.py [--small] [--out DIR]
Writes adversarial.png.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from _figures import finish, parse, save

from okoco import datasets, kernels, losses
from okoco.learners import KONS, SketchedKONS
from okoco.regret import BestConstant, RegretTracker, log_checkpoints

C, ALPHA = 1.0, 1.0


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    T = 300 if args.small else 3000
    data = datasets.load("adversarial", n=T, C=C, x=[0.3])
    kernel, loss = kernels.RBF(1.0), losses.Squared()
    models = {
        # eta="exp-concave": the step under which the paper's log T regret holds
        "KONS": KONS(kernel=kernel, loss=loss, C=C, alpha=ALPHA, eta="exp-concave"),
        "SketchedKONS β=1, γ=0": SketchedKONS(kernel=kernel, loss=loss, C=C, alpha=ALPHA,
                                              eta="exp-concave", beta=1.0, p_min=0.0, seed=0),
        "SketchedKONS β=1, γ=0.1": SketchedKONS(kernel=kernel, loss=loss, C=C, alpha=ALPHA,
                                                eta="exp-concave", beta=1.0, p_min=0.1, seed=0),
    }
    checkpoints = sorted(set(log_checkpoints(T, per_decade=6).tolist()) | {T})
    trackers, sizes = {}, {}
    for name, model in models.items():
        tracker = RegretTracker(loss, BestConstant(loss, C=C), checkpoints=checkpoints)
        size_at = []
        for t, (x, y) in enumerate(data, start=1):
            tracker.update(x, y, y_pred=model.predict_one(x))
            model.learn_one(x, y)
            if t in checkpoints:
                size_at.append(model.dictionary_size)
        trackers[name], sizes[name] = tracker, np.array(size_at)

    t = trackers["KONS"].t
    against_zero = {name: tr.learner_loss - t * C**2 for name, tr in trackers.items()}
    # a + b log t fitted to KONS over the second half of the checkpoints
    half = t >= np.sqrt(t[0] * t[-1])
    slope, intercept = np.polyfit(np.log(t[half]), against_zero["KONS"][half], 1)

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.3))
    for name, tracker in trackers.items():
        ax.plot(t, tracker.regret, marker="o", markersize=3, label=name)
        ax2.plot(t, sizes[name], marker="o", markersize=3, label=name)
    ax.plot(t, intercept + slope * np.log(t), "k--", linewidth=1,
            label=f"fit {intercept:.1f} + {slope:.2f} log t (KONS)")
    finish(ax, "one point, targets ±C: theory says KONS $R_T = O(\\log T)$;\n"
           "a reweight-only sketch loses the log rate unless γ > 0",
           legend=7, xscale="log", xlabel="t", ylabel="regret $R_t$ against the best constant")
    ax2.plot(t, 0.1 * t, "k--", linewidth=1, label="γ t, γ = 0.1")
    finish(ax2, "KONS keeps all t points; KORS stops sampling the\n"
           "repeated point (leverage 1/(t+α)); the floor keeps ≈ γ t",
           legend=7, xscale="log", yscale="log", xlabel="t", ylabel="points in the preconditioner")
    path = save(fig, args.out, "adversarial.png")

    r0 = {name: float(v[-1]) for name, v in against_zero.items()}
    print(f"adversarial.png: T={T}, regret against w=0: "
          + ", ".join(f"{k} {v:.1f}" for k, v in r0.items())
          + f"; KONS fits {intercept:.1f} + {slope:.2f} log t; dictionary sizes "
          + ", ".join(f"{k} {int(v[-1])}" for k, v in sizes.items()))
    return {"figures": [path], "T": T, "regret_vs_zero": r0, "kons_log_slope": float(slope),
            "regret": {name: float(tr.regret[-1]) for name, tr in trackers.items()},
            "dictionary_size": {k: int(v[-1]) for k, v in sizes.items()}}


if __name__ == "__main__":
    main()
