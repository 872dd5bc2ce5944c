"""What the commands print: the replay summary (text or JSON), the compare table, and numbers
and docstrings made readable."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import typer


def _num(v: float) -> str:
    """A table's figure: a count (a whole number, e.g. a dictionary of 5 atoms) without
    decimals, else four significant digits or more.

    >>> _num(5.0), _num(5.5), _num(1234.5), _num(0.0123456)
    ('5', '5.500', '1,234', '0.01235')
    """
    a = abs(v)
    if a >= 100 or (a >= 1 and float(v).is_integer()):
        return f"{v:,.0f}"
    return f"{v:.3f}" if a >= 1 else f"{v:.4g}"


def _fmt(value: Any, digits: int = 6) -> str:
    """A figure as the summary prints it: ``-`` when there is none, never ``-0``.

    >>> _fmt(-0.0), _fmt(float("nan")), _fmt(0.123456789)
    ('0', '-', '0.123457')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value + 0.0:.{digits}g}"  # + 0.0: -0.0 (river's ROCAUC at 0) prints as 0
    return str(value)


def _bytes(n: float) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _print_json_summary(ds: Any, learner: str, result: Any, output: Path | None,
                        plot: Path | None, interrupted: bool) -> None:
    final = result.final
    summary = {"dataset": ds.name, "task": ds.task, "d": ds.d, "learner": learner,
               "n_samples": result.n_samples,
               "metrics": {m: final.get(m) for m in result.metrics},
               **({"pos_label": result.meta["pos_label"]} if "pos_label" in result.meta
                  else {}),
               **{k: final.get(k) for k in ("cumulative_loss", "regret", "dictionary_size",
                                            "us_per_sample", "elapsed_s", "memory_bytes")},
               **_interval_summary(result),
               "output": None if output is None else str(output),
               "plot": None if plot is None else str(plot), "interrupted": interrupted}
    # deferred: okoco._io imports numpy, which `okoco --help` does without
    from okoco._io import to_json_ready

    typer.echo(json.dumps(to_json_ready(summary)))


def _interval_summary(result: Any) -> dict:
    """The interval figures of a run with ``--interval`` (nothing otherwise)."""
    if "coverage" not in result.columns:
        return {}
    final, recent = result.final, result.meta.get("recent_intervals") or {}
    return {"interval": result.meta.get("interval"), "coverage": final.get("coverage"),
            "recent_samples": recent.get("samples"),
            "median_width": recent.get("median_width"),
            "recent_interval_score": recent.get("interval_score"),
            "mean_width": final.get("mean_width"),
            "interval_score": final.get("interval_score")}


def _first_loss_note(result: Any) -> str:
    """Say so when the first sample, predicted before any target was seen (0 on the targets'
    scale), makes most of the cumulative loss: then the sum does not describe the run."""
    first, total = result.meta.get("first_loss"), result.final.get("cumulative_loss")
    if first is None or total is None or not (total > 0 and first > 0.5 * total):
        return ""
    rest = (total - first) / max(result.n_samples - 1, 1)
    return (f" ({_num(first)} of it from sample 1, predicted before any target was seen; "
            f"{rest:.4g} per sample after it)")


def _print_summary(ds: Any, learner: str, result: Any, scale: bool, scale_target: bool,
                   output: Path | None, plot: Path | None) -> None:
    final = result.final
    # the run's own record: a learner that standardizes its targets (Auto) does so even with
    # --no-scale-target
    scale_target = result.meta.get("scale_target", scale_target)
    scaled = ("features standardised online" if scale else "features raw") + (
        ("; targets standardised online" if scale_target else "; targets raw")
        if ds.task == "regression" else "")
    elapsed = final.get("elapsed_s", 0.0)
    lines = [
        ("dataset", f"{ds.name} ({result.n_samples} samples, d={ds.d}, {ds.task})"),
        ("learner", f"{learner} ({result.meta['model']})"),
        *((("leader", result.meta["leader"]),) if "leader" in result.meta else ()),
        ("scaling", scaled),
        *_label_lines(result),
        *((m, _fmt(final.get(m))) for m in result.metrics),
        *_interval_lines(result),
        ("cum. loss", _fmt(final.get("cumulative_loss")) + _first_loss_note(result)),
        ("dictionary", _fmt(final.get("dictionary_size"), 12).removesuffix(".0")),
        ("time", f"{elapsed:.2f} s "
                 f"({1e6 * elapsed / max(result.n_samples, 1):.1f} us/sample)"),
        ("memory", _bytes(final.get("memory_bytes")) + " (learner arrays in use)"),
    ]
    if output is not None:
        lines.append(("output", str(output)))
    if plot is not None:
        lines.append(("plot", str(plot)))
    for key, value in lines:
        typer.echo(f"{key:<11} {value}")


def _label_lines(result: Any) -> list[tuple[str, str]]:
    """A binary task's positive class, and the rule that chose it."""
    if "pos_label" not in result.meta:
        return []
    return [("positive", f"{result.meta['pos_label']!r} "
                         f"({_label_rule(result.meta.get('pos_rule', ''))})")]


def _label_rule(rule: str) -> str:
    """How the positive label was chosen, and how to choose another."""
    return rule if rule == "named with --pos-label" else f"{rule}; name it with --pos-label"


def _interval_lines(result: Any) -> list[tuple[str, str]]:
    """Coverage over the run; width and score over the last intervals, past the warm-up
    (whose first, widest intervals would dominate a mean), the means over all beside them."""
    figures = _interval_summary(result)
    if not figures:
        return []
    asked, recent = figures["interval"], figures["recent_samples"]
    last = f"the last {recent:,} intervals" if recent else "the last intervals"
    return [("coverage", _fmt(figures["coverage"], 4)
             + ("" if asked is None else f" of targets inside their {asked:.0%} interval")),
            ("width", _fmt(figures["median_width"]) + f" (median of {last}, targets' scale; "
             f"mean of all finite ones {_fmt(figures['mean_width'])}, warm-up included)"),
            ("int. score", _fmt(figures["recent_interval_score"]) + f" (mean interval score of "
             f"{last}, lower is better; all: {_fmt(figures['interval_score'])})")]


def _print_table(table: list[dict], cols: list[str], quiet: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    heads = {"cumulative_loss": "cum. loss", "us_per_sample": "µs/sample",
             "median_width": "width (median, last)", "recent_interval_score":
             "int. score (last)",
             "dictionary_size": "dictionary", "memory_bytes": "memory (KiB)"}
    shown = [c for c in cols if any(math.isfinite(r[c]["mean"]) for r in table)]
    t = Table(box=None, header_style="bold")
    t.add_column("learner")
    for c in shown:
        t.add_column(heads.get(c, c), justify="right")
    for row in table:
        cells = []
        for c in shown:
            m, s = row[c]["mean"], row[c]["std"]
            if c == "memory_bytes":
                m, s = m / 1024, s / 1024
            cells.append("-" if not math.isfinite(m) else
                         f"{_num(m)} ± {_num(s)}" if row["runs"] > 1 else _num(m))
        t.add_row(row["learner"], *cells)
    Console(width=160, highlight=False).print(t)


def _summary(doc: str) -> str:
    """The first paragraph of a docstring on one line, its reST roles as plain text.

    >>> _summary("Sum in :math:`O(t)`, see :class:`~okoco.X`\\nand ``y``.\\n\\nMore.")
    'Sum in O(t), see X and y.'
    """
    first = " ".join(doc.split("\n\n")[0].split())
    first = re.sub(r":math:`([^`]*)`", r"\1", first)
    first = re.sub(r":\w+:`~?(?:[\w.]+\.)?(\w+)`", r"\1", first)
    return first.replace("``", "")
