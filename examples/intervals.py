"""Calibrated 90% prediction intervals on a stream: KRLS in okoco.intervals.IntervalRegressor.

Each sample is predicted with its interval, scored, then learned (test-then-train), exactly as
``okoco replay DATASET -l krls --interval 0.9`` does: the model is the CLI's
``TargetStandardScaler(StandardScaler() | KRLS())`` wrapped in ``IntervalRegressor(coverage=0.9)``,
whose adaptive conformal calibration (Gibbs & Candès 2021) turns the residuals into intervals
whose long-run coverage is 90% on any stream.

- Mackey-Glass (tau 30, 7-tap embedding): the last samples of the series, the prediction and
  its band;
- sinc (noisy sin(x)/x): the second half of the stream against x, the band around the learned
  curve;
- the running coverage of both streams, which settles at the requested 90%.

Run: python examples/intervals.py [--small] [--out DIR]
Writes intervals.png.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from _figures import finish, parse, save

from okoco import datasets, preprocessing
from okoco.intervals import IntervalRegressor
from okoco.learners import KRLS

COVERAGE = 0.9


def make_model() -> IntervalRegressor:
    """The model ``okoco replay DATASET -l krls --interval 0.9`` replays."""
    return IntervalRegressor(preprocessing.TargetStandardScaler(
        preprocessing.StandardScaler() | KRLS(C=3.0)), coverage=COVERAGE)


def stream(name: str, n: int) -> dict:
    """Test-then-train over ``n`` samples of ``name``: each target, prediction and interval."""
    model = make_model()
    rows = {"x": [], "y": [], "prediction": [], "low": [], "high": []}
    for x, y in datasets.load(name, n=n, seed=0):
        low, high = model.predict_one(x, with_interval=True)
        rows["x"].append(next(iter(x.values())))
        rows["y"].append(y)
        rows["prediction"].append(model.predict_one(x))
        rows["low"].append(low)
        rows["high"].append(high)
        model.learn_one(x, y)
    out = {k: np.asarray(v, dtype=float) for k, v in rows.items()}
    inside = (out["low"] <= out["y"]) & (out["y"] <= out["high"])
    out["running_coverage"] = np.cumsum(inside) / np.arange(1, n + 1)
    finite = np.isfinite(out["high"] - out["low"])
    out["coverage"] = float(inside.mean())
    out["width"] = float(np.mean((out["high"] - out["low"])[finite]))
    return out


def main(argv=None) -> dict:
    args = parse(argv, __doc__)
    n_mg, n_sinc = (600, 600) if args.small else (3000, 2000)
    mg, sinc = stream("mackey-glass", n_mg), stream("sinc", n_sinc)

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    ax = axes[0]
    last = slice(n_mg - 120, n_mg)
    t = np.arange(1, n_mg + 1)[last]
    ax.fill_between(t, mg["low"][last], mg["high"][last], alpha=0.3, color="C0", linewidth=0,
                    label="90% interval")
    ax.plot(t, mg["prediction"][last], color="C0", linewidth=1.2, label="prediction")
    ax.plot(t, mg["y"][last], ".", color="k", markersize=4, label="target")
    finish(ax, f"Mackey-Glass, last 120 of {n_mg:,} samples: coverage {mg['coverage']:.3f}, "
           f"mean width {mg['width']:.3f}", xlabel="t (samples seen)", ylabel="y")

    ax = axes[1]
    half = np.arange(n_sinc // 2, n_sinc)
    order = half[np.argsort(sinc["x"][half])]
    ax.fill_between(sinc["x"][order], sinc["low"][order], sinc["high"][order], alpha=0.3,
                    color="C1", linewidth=0, label="90% interval")
    ax.plot(sinc["x"][order], sinc["prediction"][order], color="C1", linewidth=1.2,
            label="prediction")
    ax.plot(sinc["x"][order], sinc["y"][order], ".", color="k", markersize=2, label="target")
    finish(ax, f"sinc, samples {n_sinc // 2 + 1:,}-{n_sinc:,} against x: coverage "
           f"{sinc['coverage']:.3f}, mean width {sinc['width']:.3f}", xlabel="x", ylabel="y")

    ax = axes[2]
    ax.plot(np.arange(1, n_mg + 1), mg["running_coverage"], color="C0", label="Mackey-Glass")
    ax.plot(np.arange(1, n_sinc + 1), sinc["running_coverage"], color="C1", label="sinc")
    ax.axhline(COVERAGE, color="grey", linestyle=":", label="requested 90%")
    ax.set_ylim(0.8, 1.0)
    finish(ax, "running coverage (share of targets inside their interval)", xscale="log",
           xlabel="t (samples seen)", ylabel="coverage")
    fig.suptitle("KRLS with calibrated 90% intervals (okoco.intervals.IntervalRegressor), "
                 "test-then-train", fontsize=10)
    path = save(fig, args.out, "intervals.png")

    print(f"intervals.png: KRLS 90% intervals, coverage {mg['coverage']:.3f} (width "
          f"{mg['width']:.3f}) on Mackey-Glass n={n_mg}, {sinc['coverage']:.3f} (width "
          f"{sinc['width']:.3f}) on sinc n={n_sinc}")
    return {"figures": [path], "coverage": {"mackey-glass": mg["coverage"],
                                            "sinc": sinc["coverage"]},
            "width": {"mackey-glass": mg["width"], "sinc": sinc["width"]}}


if __name__ == "__main__":
    main()
