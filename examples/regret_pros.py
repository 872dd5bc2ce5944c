"""Regret and dictionary size against t of PROS-N-KONS and CON-KONS next to KONS and Sketched-KONS.

The stream and the comparator are those of ``regret_rkhs.py``: points in ``[-1, 1]^2``, targets
from a function in the RKHS of an RBF kernel plus noise, squared loss, and the clipped kernel ERM
refitted on each prefix by a :class:`okoco.regret.RegretTracker`. PROS-N-KONS and CON-KONS
(Calandriello, Lazaric & Valko 2017, *Efficient Second-Order Online Kernel Learning with
Adaptive Embedding*) run an online Newton step in the Nyström embedding of a KORS dictionary:
their cost per step depends on the dictionary size, not on t. Theory: PROS-N-KONS pays its ONS
regret once per phase (a restart at each dictionary change), so its regret grows with the
number of atoms; CON-KONS keeps what it learned across changes.

Run: python examples/regret_pros.py [--small] [--out DIR]
Writes regret_pros.png.
"""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
from _figures import finish, parse, save

from okoco import datasets, kernels, losses
from okoco.learners import CONKONS, KONS, PROSNKONS, SketchedKONS
from okoco.regret import ClippedKernelERM, RegretTracker, log_checkpoints

C, ALPHA, RBF_GAMMA = 1.5, 1.0, 2.0


def learners(kernel, loss) -> dict:
    common = {"kernel": kernel, "loss": loss, "C": C, "alpha": ALPHA}
    return {
        "KONS": KONS(**common),
        "SketchedKONS β=1, γ=0.02": SketchedKONS(**common, beta=1.0, p_min=0.02, seed=0),
        "PROS-N-KONS": PROSNKONS(**common, dictionary_alpha=0.1, seed=0),
        "CON-KONS": CONKONS(**common, dictionary_alpha=0.1, seed=0),
    }


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    T = 150 if args.small else 2000
    data = datasets.load("rkhs", n=T, d=2, gamma=RBF_GAMMA, noise=0.1, seed=0)
    kernel, loss = kernels.RBF(RBF_GAMMA), losses.Squared()
    checkpoints = sorted(set(log_checkpoints(T, per_decade=5).tolist()) | {T})
    comparator = ClippedKernelERM(kernel, loss, C=C, alpha=ALPHA)

    trackers, sizes, growth, seconds = {}, {}, {}, {}
    for name, model in learners(kernel, loss).items():
        tracker = RegretTracker(loss, comparator, checkpoints=checkpoints)
        start, size_at = time.perf_counter(), []
        for x, target in data:
            tracker.update(x, target, y_pred=model.predict_one(x))
            model.learn_one(x, target)
            size_at.append(model.dictionary_size)
        seconds[name] = time.perf_counter() - start
        trackers[name], sizes[name], growth[name] = tracker, model.dictionary_size, size_at

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, (name, tracker) in enumerate(trackers.items()):  # a style and marker each:
        style = {"linestyle": ("-", "--", "-.", ":")[i % 4]}  # equal curves stay visible
        ax1.plot(tracker.t, tracker.regret, marker="osD^v"[i % 5], markersize=4 - 0.4 * (i % 5),
                 fillstyle="none" if i % 2 else "full", **style,
                 label=f"{name} (|dictionary| = {sizes[name]})")
        ax2.plot(np.arange(1, T + 1), growth[name], label=name, **style)
    positive = all(np.all(tr.regret > 0) for tr in trackers.values())
    ax1.set_yscale("log" if positive else "symlog", **({} if positive else {"linthresh": 1.0}))
    finish(ax1, f"RKHS stream (RBF γ={RBF_GAMMA}, d=2), squared loss, C={C}, α={ALPHA}\n"
           "theory: PROS-N-KONS pays one ONS regret per phase; CON-KONS carries over",
           xscale="log", xlabel="t", ylabel="regret $R_t$ against the clipped kernel ERM")
    finish(ax2, "dictionary size (the embedding's dimension m; per-step cost O(m²))",
           xscale="log", yscale="log", xlabel="t", ylabel="atoms")
    path = save(fig, args.out, "regret_pros.png")

    final = {name: float(tr.regret[-1]) for name, tr in trackers.items()}
    print(f"regret_pros.png: regret at T={T}: "
          + ", ".join(f"{k} {v:.1f} ({sizes[k]} atoms)" for k, v in final.items())
          + "; seconds " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    return {"figures": [path], "T": T, "regret": final, "dictionary_size": sizes}


if __name__ == "__main__":
    main()
