"""Bananas: decision regions and online accuracy of the okoco learners beside VW's kernel SVM.

river's Bananas (5,300 points, two interleaved banana-shaped classes in 2-D) is replayed once,
test-then-train, through :func:`okoco.evaluate.replay` for each okoco learner wrapped in a
:class:`okoco.BinaryClassifier`, and through Vowpal Wabbit's online kernel SVM
(``--ksvm --kernel rbf``) when the ``vowpalwabbit`` package is installed (the ``bench`` extra;
without it the figure says so and shows only okoco). Left: online (progressive) accuracy against
t. Right: the decision regions each learner ends with.

Run: python examples/bananas.py [--small] [--out DIR]
Writes bananas_accuracy.png and bananas_regions.png.
"""

from __future__ import annotations

import time

import matplotlib.lines
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
from _figures import finish, parse, save
from river import datasets, metrics

from okoco import BinaryClassifier, kernels, losses
from okoco.evaluate import replay
from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

RBF_GAMMA = 2.0
VW_BANDWIDTH, VW_L2 = 128.0, 1e-4  # the best VW setting on Bananas in docs/benchmarks.md


def okoco_models() -> dict:
    k, logistic = kernels.RBF(RBF_GAMMA), losses.Logistic()
    return {
        "KONS": BinaryClassifier(KONS(kernel=k, loss=logistic, C=3.0)),
        "SketchedKONS β=1": BinaryClassifier(
            SketchedKONS(kernel=k, loss=logistic, C=3.0, beta=1.0, seed=0)),
        "FunctionalGD": BinaryClassifier(FunctionalGD(kernel=k, loss=logistic, C=3.0, eta=0.5)),
        "KRLS (squared loss)": BinaryClassifier(KRLS(kernel=k, nu=0.01, C=1.0)),
    }


def vw_run(stream: list, checkpoints: list, grid: np.ndarray):
    """Test-then-train VW --ksvm; returns (accuracy at checkpoints, grid scores) or None."""
    try:
        from vowpalwabbit import Workspace
    except ImportError:
        return None
    vw = Workspace(f"--ksvm --kernel rbf --bandwidth {VW_BANDWIDTH} --l2 {VW_L2} --quiet")

    def features(x):
        return " |f " + " ".join(f"{k}:{v}" for k, v in x.items())

    correct, curve = 0, []
    for t, (x, y) in enumerate(stream, start=1):
        label = 1 if y else -1
        correct += (1 if vw.predict(features(x)) > 0 else -1) == label
        vw.learn(f"{label}{features(x)}")
        if t in checkpoints:
            curve.append(correct / t)
    scores = np.array([vw.predict(features({"1": a, "2": b})) for a, b in grid])
    vw.finish()
    return np.array(curve), scores


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    n = 400 if args.small else 5300
    stream = list(datasets.Bananas().take(n))
    checkpoints = sorted(set(np.unique(np.geomspace(20, n, 30).astype(int)).tolist()) | {n})
    X = np.array([[x["1"], x["2"]] for x, _ in stream])
    labels = np.array([y for _, y in stream])
    side = 25 if args.small else 60
    g1 = np.linspace(X[:, 0].min() - 0.3, X[:, 0].max() + 0.3, side)
    g2 = np.linspace(X[:, 1].min() - 0.3, X[:, 1].max() + 0.3, side)
    G1, G2 = np.meshgrid(g1, g2)
    grid = np.column_stack([G1.ravel(), G2.ravel()])

    curves, regions, accuracy, seconds = {}, {}, {}, {}
    for name, model in okoco_models().items():
        start = time.perf_counter()
        result = replay(model, stream, metrics=metrics.Accuracy(), checkpoints=checkpoints)
        seconds[name] = time.perf_counter() - start
        curves[name] = (result["t"], result["Accuracy"])
        accuracy[name] = float(result.final["Accuracy"])
        f = [model.learner.predict_one({"1": a, "2": b}) for a, b in grid.tolist()]
        regions[name] = np.asarray(f).reshape(G1.shape)
    start = time.perf_counter()
    vw = vw_run(stream, checkpoints, grid)
    if vw is not None:
        seconds["VW --ksvm"] = time.perf_counter() - start
        curves["VW --ksvm"] = (np.array(checkpoints), vw[0])
        accuracy["VW --ksvm"] = float(vw[0][-1])
        regions["VW --ksvm"] = vw[1].reshape(G1.shape)
    vw_note = "" if vw is not None else " (Vowpal Wabbit not installed: okoco only)"

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, (t, acc)) in enumerate(curves.items()):  # a style each: equal curves show
        ax.plot(t, acc, label=f"{name}: {accuracy[name]:.3f}",
                linestyle=("-", "--", "-.", ":")[i % 4], linewidth=2.0 - 0.3 * (i % 4))
    finish(ax, f"river Bananas, n={n}, RBF γ={RBF_GAMMA}, logistic loss, C=3{vw_note}",
           xscale="log", xlabel="t (samples seen)", ylabel="online accuracy (test-then-train)")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # no colliding 2x10^1...
    path_acc = save(fig, args.out, "bananas_accuracy.png")

    cols = len(regions)
    fig, axes = plt.subplots(1, cols, figsize=(3.0 * cols, 3.2), sharey=True)
    shown = np.random.default_rng(0).permutation(n)[:800]
    for ax, (name, f) in zip(np.atleast_1d(axes), regions.items()):
        ax.contourf(G1, G2, np.sign(f), levels=[-2, 0, 2], colors=["#f4c7a1", "#a9c8e8"])
        ax.contour(G1, G2, f, levels=[0], colors="k", linewidths=0.8)
        ax.scatter(X[shown, 0], X[shown, 1], c=np.where(labels[shown], "#1f5fa8", "#c8641e"),
                   s=3, linewidths=0)
        ax.set_title(f"{name}\naccuracy {accuracy[name]:.3f}", fontsize=9)
        ax.set_xlabel("feature 1", fontsize=8)
        ax.tick_params(labelsize=7)
    np.atleast_1d(axes)[0].set_ylabel("feature 2", fontsize=8)
    key = [matplotlib.patches.Patch(color="#a9c8e8", label="predicted +1"),
           matplotlib.patches.Patch(color="#f4c7a1", label="predicted -1"),
           matplotlib.lines.Line2D([], [], color="k", linewidth=0.8, label="boundary f = 0"),
           matplotlib.lines.Line2D([], [], marker="o", linestyle="", color="#1f5fa8",
                                   markersize=4, label="label +1"),
           matplotlib.lines.Line2D([], [], marker="o", linestyle="", color="#c8641e",
                                   markersize=4, label="label -1")]
    fig.legend(handles=key, loc="lower center", ncol=5, fontsize=7, frameon=False)
    fig.suptitle(f"decision regions after one pass{vw_note}", fontsize=9)
    path_reg = save(fig, args.out, "bananas_regions.png", dpi=80, rect=(0, 0.1, 1, 1))

    print(f"bananas: n={n}, online accuracy "
          + ", ".join(f"{k} {v:.4f} ({seconds[k]:.1f} s)" for k, v in accuracy.items())
          + ("" if vw is not None else "; VW not installed"))
    return {"figures": [path_acc, path_reg], "n": n, "accuracy": accuracy,
            "vw": vw is not None}


if __name__ == "__main__":
    main()
