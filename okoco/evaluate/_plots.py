"""Plots of replay results: one panel per curve, a line and a band per group of runs."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from okoco._io import atomic_write

if TYPE_CHECKING:  # (a type only: the results module draws with this one)
    from okoco.evaluate._results import ReplayResult

__all__ = ["plot_runs"]


#: Line styles by group, so that a learner whose curve equals another's stays visible.
_STYLES = ("-", "--", "-.", ":")


def plot_runs(groups: Mapping[str, Sequence[ReplayResult]], target: Any = None, *,
              title: str | None = None):
    """Plot several groups of runs (e.g. one learner over seeds): mean curve and ±1 std band.

    One panel per metric, then the regret (or the cumulative loss), the dictionary size and the
    time per sample. Each group has its own line style, so identical curves stay visible; a
    band of a column that is never negative stops at zero; and when the first samples dwarf the
    rest (a metric averaged over one sample), the panel's range is that of the last 95% of the
    stream, so the spike does not flatten the curve.

    Parameters
    ----------
    groups
        ``{label: [ReplayResult, ...]}``; runs of a group should share checkpoints (those that
        do not are cut to the shortest).
    target
        ``None``, a path (saved atomically) or an ``Axes`` (main metric only); see
        :meth:`ReplayResult.plot`.
    title
        The figure's title (default: the dataset, and "interrupted" when a run was).

    Examples
    --------
    >>> from okoco.evaluate import ReplayResult
    >>> r = ReplayResult({"t": [1, 2], "MAE": [0.5, 0.25], "dictionary_size": [1, 2]}, ["MAE"])
    >>> fig = plot_runs({"a": [r], "b": [r]})
    >>> len(fig.axes)
    4
    """
    from matplotlib.figure import Figure  # deferred: matplotlib is slow to import; no pyplot

    runs = [r for rs in groups.values() for r in rs]
    if not runs:
        raise ValueError("nothing to plot")
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics)) or ["cumulative_loss"]
    has_regret = any(np.isfinite(r["regret"]).any() for r in runs if "regret" in r.columns)
    panels = [(m, m) for m in metrics]
    if has_regret or "cumulative_loss" not in metrics:
        panels.append(("regret", "regret") if has_regret else
                      ("cumulative_loss", "cumulative loss"))
    if any("coverage" in r.columns for r in runs):
        panels += [("coverage", "coverage of the intervals"),
                   ("interval_score", "mean interval score")]
    panels += [("dictionary_size", "dictionary size"), ("us_per_sample", "µs per sample")]
    banded = [r for r in runs if r.meta.get("band")]
    if len(runs) == 1 and banded:
        panels.append(("band", "prediction and interval, last samples"))

    if target is not None and not isinstance(target, (str, os.PathLike)):
        axes, fig = [target], target.figure
        panels = panels[:1]
    else:
        rows = (len(panels) + 1) // 2
        fig = Figure(figsize=(10, 3.5 * rows), layout="constrained")
        axes = list(fig.subplots(rows, 2, squeeze=False).ravel())
        for ax in axes[len(panels):]:
            fig.delaxes(ax)
    for ax, (col, name) in zip(axes, panels):
        if col == "band":
            _draw_band(ax, banded[0])
        else:
            _draw(ax, groups, col)
        if col == "coverage":
            asked = {r.meta.get("interval") for r in runs} - {None}
            for level in asked:
                ax.axhline(level, color="grey", linestyle=":", linewidth=1)
        ax.set_title(name)
        ax.set_xlabel("t (samples seen)")
        ax.grid(True, alpha=0.3)
    if len(groups) > 1 or target is None or isinstance(target, (str, os.PathLike)):
        axes[0].legend(fontsize="small")
    if title is None:
        datasets_ = sorted({str(r.meta["dataset"]) for r in runs if r.meta.get("dataset")})
        title = ", ".join(datasets_)
        stopped = [r for r in runs if r.interrupted]
        if stopped:
            title += f" (interrupted at t = {min(r.n_samples for r in stopped):,})"
    if title and (target is None or isinstance(target, (str, os.PathLike))):
        fig.suptitle(title)  # (a caller's own Axes keep the caller's titles)
    if isinstance(target, (str, os.PathLike)):
        fmt = Path(target).suffix.lstrip(".").lower() or "png"
        if fmt not in fig.canvas.get_supported_filetypes():
            raise ValueError(f"cannot save a plot as {fmt!r}; use .png, .pdf or .svg")
        atomic_write(target, lambda f: fig.savefig(f, format=fmt, dpi=120), binary=True)
    return fig


def _draw(ax: Any, groups: Mapping[str, Sequence[ReplayResult]], col: str) -> None:
    """Mean curve and ±1 std band of column ``col`` for each group, then the y-range."""
    drawn = []
    for i, (label, rs) in enumerate(groups.items()):
        rs = [r for r in rs if col in r.columns]
        if not rs:
            continue
        k = min(len(r) for r in rs)
        t = rs[0]["t"][:k]
        Y = np.array([r[col][:k] for r in rs], dtype=float)
        if not np.isfinite(Y).any():
            continue
        with warnings.catch_warnings():  # a column NaN at first (interval score): not a fault
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(Y, axis=0)
        (line,) = ax.plot(t, mean, label=label, linestyle=_STYLES[i % len(_STYLES)],
                          linewidth=max(2.0 - 0.5 * (i // len(_STYLES)), 0.5))
        low, high = mean, mean
        if len(rs) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                std = np.nanstd(Y, axis=0)
            low, high = mean - std, mean + std
            if np.nanmin(Y) >= 0:
                low = np.maximum(low, 0.0)  # times, sizes, losses: a band never goes below 0
            ax.fill_between(t, low, high, alpha=0.2, color=line.get_color())
        drawn.append((t, low, high))
    if drawn:
        _keep_the_tail_in_view(ax, drawn)


def _draw_band(ax: Any, run: ReplayResult) -> None:
    """The last samples of a run with intervals: targets, prediction, and the interval band."""
    band = run.meta["band"]
    t = np.asarray(band["t"], dtype=float)
    low, high = (np.asarray(band[k], dtype=float) for k in ("low", "high"))
    asked = run.meta.get("interval")
    ax.fill_between(t, low, high, alpha=0.25, color="C0", linewidth=0,
                    label=f"{asked:.0%} interval" if asked else "interval")
    ax.plot(t, np.asarray(band["prediction"], dtype=float), color="C0", linewidth=1,
            label="prediction")
    ax.plot(t, np.asarray(band["y"], dtype=float), ".", color="k", markersize=2, label="target")
    ax.legend(fontsize="small")


def _keep_the_tail_in_view(ax: Any, drawn: list) -> None:
    """Limit the y-range to the last 95% of the stream when the first samples would dwarf it."""
    t_end = max(t[-1] for t, _, _ in drawn)
    every = np.concatenate([np.concatenate([lo, hi]) for _, lo, hi in drawn])
    tail = np.concatenate([np.concatenate([lo[t >= 0.05 * t_end], hi[t >= 0.05 * t_end]])
                           for t, lo, hi in drawn])
    every, tail = every[np.isfinite(every)], tail[np.isfinite(tail)]
    if tail.size == 0:
        return
    lo, hi = float(tail.min()), float(tail.max())
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    # each side is cut only where the early values stray far beyond the tail's range
    cut_top, cut_bottom = every.max() > hi + 2 * span, every.min() < lo - 2 * span
    if not (cut_top or cut_bottom):
        return
    top = hi + 0.15 * span if cut_top else float(every.max())
    bottom = lo - 0.15 * span if cut_bottom else float(every.min())
    pad = 0.05 * (top - bottom)
    top, bottom = top + (0 if cut_top else pad), bottom - (0 if cut_bottom else pad)
    if every.min() >= 0:
        bottom = max(bottom, 0.0)
    ax.set_ylim(bottom, top)
