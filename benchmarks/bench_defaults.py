"""Defaults chosen by measurement: every candidate setting on every stream, as a user runs it.

Each candidate is replayed test-then-train (river's ``progressive_val_score``) the way a user
with no tuning budget would run it: features standardized online (river ``StandardScaler``),
regression targets standardized online (``TargetStandardScaler``) and scored in their own units
(MAE), binary tasks through :class:`okoco.BinaryClassifier` with the logistic loss (error rate).
No setting is tuned per stream: a default is good if it is close to the best candidate on
*every* stream, so each candidate is summarised by the geometric mean over streams of its error
divided by the best error any candidate reached on that stream (1.0 = always the best).

Streams: river TrumpApproval, ChickWeights, Bananas, Phishing, Shuttle (first rows), river
``synth.Friedman(seed=42)``, okoco's synthetic sinc, and the LIBSVM german / housing sets as
published with Lu et al. (2016), "Large Scale Online Kernel Learning" (first stored
permutation), each cut at ``--n`` rows.

Usage::

    python -m benchmarks.bench_defaults                 # full grid, ~1,000 rows per stream
    python -m benchmarks.bench_defaults --n 300         # quicker
    python -m benchmarks.bench_defaults --only KONS,KRLS  # names containing KONS or KRLS

It prints the markdown tables (per-stream errors, then the summary) and writes them with every
figure to ``benchmarks/results/defaults.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from river import ensemble, evaluate, forest, linear_model, metrics, neighbors, preprocessing, tree
from river.datasets import synth

from okoco import BinaryClassifier, datasets, kernels, losses
from okoco.learners import (
    CONKONS,
    KONS,
    KRLS,
    Auto,
    DictionaryExpert,
    FunctionalGD,
    LinearExpert,
    SketchedKONS,
)
from okoco.learners.auto import EXPERTS

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lsokl"
RESULTS = Path(__file__).resolve().parent / "results" / "defaults.json"


# -- streams ----------------------------------------------------------------------------------


def _okoco(name: str, **kwargs) -> Callable[[int], list]:
    return lambda n: list(datasets.load(name, **kwargs).take(n))


def _mat(name: str) -> Callable[[int], list]:
    # german's raw integer features are standardized online like every other stream; its
    # labels +-1 become booleans, the label type river's classifiers expect
    def load(n: int) -> list:
        ds = datasets.load_mat(DATA / f"{name}.mat", permutation=0)
        rows = list(ds.take(n))
        return [(x, y == 1) for x, y in rows] if ds.task == "binary" else rows
    return load


STREAMS: dict[str, tuple[str, Callable[[int], list]]] = {
    "trump-approval": ("regression", _okoco("trump-approval")),
    "friedman": ("regression", lambda n: list(synth.Friedman(seed=42).take(n))),
    "sinc": ("regression", _okoco("sinc")),
    "chick-weights": ("regression", _okoco("chick-weights")),
    "housing": ("regression", _mat("housing")),
    "bananas": ("binary", _okoco("bananas")),
    "phishing": ("binary", _okoco("phishing")),
    "german": ("binary", _mat("german")),
    "shuttle": ("binary", _okoco("shuttle")),
}


# -- candidates -------------------------------------------------------------------------------


def _okoco_model(factory: Callable[[object], object]) -> Callable[[str, int], object]:
    """Regression: the learner with its squared loss; binary: BinaryClassifier(logistic)."""
    def build(task: str, d: int):
        if task == "regression":
            return preprocessing.TargetStandardScaler(
                preprocessing.StandardScaler() | factory(None))
        return preprocessing.StandardScaler() | BinaryClassifier(factory(losses.Logistic()))
    return build


def _kons_grid() -> dict:
    grid = {}
    etas, alphas, Cs = ("exp-concave", "hessian"), (0.1, 1.0, 10.0), (1.0, 3.0)
    settings = [*itertools.product(etas, alphas, Cs), ("hessian", 0.01, 3.0),
                ("hessian", 0.03, 3.0)]
    for eta, alpha, C in settings:
        grid[f"KONS(eta={eta}, alpha={alpha:g}, C={C:g})"] = _okoco_model(
            lambda loss, eta=eta, alpha=alpha, C=C: KONS(loss=loss, eta=eta, alpha=alpha, C=C,
                                                         max_size=None))
    grid["KONS v0.1 defaults (RBF(1), C=1, exp-concave)"] = _okoco_model(
        lambda loss: KONS(kernel=kernels.RBF(1.0), loss=loss, C=1.0, eta="exp-concave",
                          max_size=None))
    return grid


def _sketched_grid() -> dict:
    grid = {}
    settings = itertools.product(("exp-concave", "hessian"), (1.0, 3.0, 10.0), (0.0, 0.1), (1.0,))
    settings = [*settings, *itertools.product(("hessian",), (1.0, 3.0, 10.0), (0.0, 0.1), (0.1,))]
    for eta, beta, floor, alpha in settings:
        name = f"SketchedKONS(eta={eta}, beta={beta:g}, p_min={floor:g}, alpha={alpha:g})"
        grid[name] = _okoco_model(
            lambda loss, eta=eta, beta=beta, floor=floor, alpha=alpha: SketchedKONS(
                loss=loss, eta=eta, beta=beta, p_min=floor, alpha=alpha, seed=0, max_size=None))
    return grid


def _krls_grid() -> dict:
    return {f"KRLS(nu={nu:g})": _okoco_model(lambda loss, nu=nu: KRLS(nu=nu, max_size=None))
            for nu in (1e-3, 1e-2, 1e-1)}


def _fgd_grid() -> dict:
    return {"FunctionalGD()": _okoco_model(lambda loss: FunctionalGD(loss=loss)),
            "Auto()": _okoco_model(lambda loss: Auto() if loss is None else Auto(loss=loss))}


def _bounded_grid() -> dict:
    """The bounded defaults beside the unbounded learners of the grid above (whose rows are
    run with ``max_size=None``), and Auto on raw regression targets (no TargetStandardScaler:
    it standardizes them inside)."""
    def raw(task: str, d: int):
        if task == "regression":
            return preprocessing.StandardScaler() | Auto()
        return preprocessing.StandardScaler() | BinaryClassifier(Auto(loss=losses.Logistic()))
    return {
        "KONS() (bounded default)": _okoco_model(
            lambda loss: KONS() if loss is None else KONS(loss=loss)),
        "KRLS() (bounded default)": _okoco_model(lambda loss: KRLS()),
        "Auto(max_size=None)": _okoco_model(
            lambda loss: Auto(max_size=None) if loss is None else Auto(loss=loss, max_size=None)),
        "Auto() on raw targets": raw,
    }


def _river(regressor: Callable[..., object], classifier: Callable[[], object] | None):
    def build(task: str, d: int):
        if task == "regression" or classifier is None:
            model = regressor(d) if classifier is None else regressor()
            return preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | model)
        return preprocessing.StandardScaler() | classifier()
    return build


def _river_grid() -> dict:
    return {
        "river Linear/LogisticRegression": _river(linear_model.LinearRegression,
                                                  linear_model.LogisticRegression),
        "river KNN": _river(neighbors.KNNRegressor, neighbors.KNNClassifier),
        "river HoeffdingAdaptiveTree": _river(tree.HoeffdingAdaptiveTreeRegressor,
                                              tree.HoeffdingAdaptiveTreeClassifier),
        "river ARF": _river(lambda: forest.ARFRegressor(seed=0),
                            lambda: forest.ARFClassifier(seed=0)),
        "river EWARegressor(Auto's windowed grid)": _river(  # KONS experts: river estimators
            lambda d: ensemble.EWARegressor(Auto()._build_experts(d, EXPERTS)),
            None),  # river has no classifier counterpart
    }


def candidates() -> dict:
    return {**_kons_grid(), **_sketched_grid(), **_krls_grid(), **_fgd_grid(), **_bounded_grid(),
            **_river_grid()}


# -- running ----------------------------------------------------------------------------------


def run_one(build: Callable[[str, int], object], task: str, rows: list) -> tuple[float, float]:
    """Error (MAE or error rate) and microseconds per sample of one test-then-train replay."""
    model = build(task, len(rows[0][0]))
    metric = metrics.MAE() if task == "regression" else metrics.Accuracy()
    start = time.perf_counter()
    evaluate.progressive_val_score(rows, model, metric)
    elapsed = time.perf_counter() - start
    error = metric.get() if task == "regression" else 1.0 - metric.get()
    return float(error), 1e6 * elapsed / len(rows)


def _auto_learner(model) -> Auto:
    """The Auto inside a bench pipeline (regression or BinaryClassifier)."""
    inner = model.regressor if isinstance(model, preprocessing.TargetStandardScaler) else model
    last = list(inner.steps.values())[-1]
    return getattr(last, "learner", last)


def replay_alternately(builds: list, task: str, rows: list) -> tuple[list, list]:
    """Test-then-train replays of several models over the same rows, one row at a time in
    turn (the order rotating each row), so that each sees the same load on a shared machine:
    microseconds per sample of each, as wall time and as this process's CPU time."""
    models = [build(task, len(rows[0][0])) for build in builds]
    wall, cpu = [0.0] * len(models), [0.0] * len(models)
    order = list(range(len(models)))
    for i, (x, y) in enumerate(rows):
        for j in order[i % len(order):] + order[: i % len(order)]:
            model = models[j]
            start, start_cpu = time.perf_counter(), time.process_time()
            model.predict_one(x)
            model.learn_one(x, y)
            wall[j] += time.perf_counter() - start
            cpu[j] += time.process_time() - start_cpu
    return [1e6 * t / len(rows) for t in wall], [1e6 * t / len(rows) for t in cpu]


def standalone(expert):
    """A learner of a loss computing what Auto's ``expert`` computes on its own: a dictionary
    head is a CON-KONS (the shared dictionary's settings), a windowed expert a KONS; the linear
    expert (ONS on [1, x]) has no standalone learner, and is timed as KONS with the linear
    kernel plus a constant, over the same window as Auto's first forgetting expert."""
    if isinstance(expert, DictionaryExpert):
        return lambda loss: CONKONS(kernel=expert.kernel, loss=loss, C=expert.C,
                                    alpha=expert.alpha, eta=expert.eta,
                                    max_size=expert.max_size, seed=0)
    if isinstance(expert, LinearExpert):
        return lambda loss: KONS(kernel=kernels.Polynomial(degree=1, coef0=1.0), loss=loss,
                                 C=expert.C, alpha=expert.alpha, eta=expert.eta, max_size=200)
    return lambda loss: KONS(kernel=expert.kernel, loss=loss, C=expert.C, alpha=expert.alpha,
                             eta=expert.eta, max_size=expert.max_size)


def time_auto_and_leader(task: str, rows: list, repeats: int = 5) -> dict:
    """Time per sample of Auto and of a standalone KONS with the settings of the expert Auto
    ends up following, replayed alternately row by row on the same rows (best of ``repeats``
    each): wall time, and CPU time, which a load from other processes inflates less."""
    build = _fgd_grid()["Auto()"]
    model = build(task, len(rows[0][0]))
    metric = metrics.MAE() if task == "regression" else metrics.Accuracy()
    evaluate.progressive_val_score(rows, model, metric)
    auto = _auto_learner(model)
    leader = _okoco_model(standalone(auto.experts[int(auto.cumulative_losses.argmin())]))
    runs = [replay_alternately([build, leader], task, rows) for _ in range(repeats)]
    (auto_us, leader_us), (auto_cpu, leader_cpu) = (
        [min(run[kind][j] for run in runs) for j in (0, 1)] for kind in (0, 1))
    return {"leader": auto.leader, "auto_us": auto_us, "leader_us": leader_us,
            "ratio": auto_us / leader_us, "auto_cpu_us": auto_cpu, "leader_cpu_us": leader_cpu,
            "cpu_ratio": auto_cpu / leader_cpu, "load": os.getloadavg()[0]}


def timing_table(timing: dict) -> str:
    lines = ["| stream | Auto (us/sample) | its leader alone (us/sample) | ratio | CPU ratio | "
             "leader | load (1 min) |", "|---|---:|---:|---:|---:|---|---:|"]
    for s, t in timing.items():
        cpu = f"{t['cpu_ratio']:.2f}" if "cpu_ratio" in t else ""
        lines.append(f"| {s} | {t['auto_us']:.0f} | {t['leader_us']:.0f} | {t['ratio']:.2f} | "
                     f"{cpu} | `{t['leader']}` | {t['load']:.1f} |")
    return "\n".join(lines)


def summarise(results: dict, names: list[str], streams: list[str]) -> dict:
    """Per candidate: geometric mean over streams of error / best error on that stream."""
    best = {s: min(results[n][s][0] for n in names if s in results[n]) for s in streams}
    out = {}
    for name in names:
        ratios = [results[name][s][0] / best[s] for s in streams
                  if s in results[name] and best[s] > 0]
        if ratios:
            out[name] = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return out


def markdown(results: dict, streams: list[str]) -> str:
    names = list(results)
    lines = ["| candidate | " + " | ".join(streams) + " | geo-mean ratio to best |",
             "|---|" + "---:|" * (len(streams) + 1)]
    score = summarise(results, names, streams)
    for name in sorted(names, key=lambda n: score.get(n, math.inf)):
        cells = [f"{results[name][s][0]:.4g}" if s in results[name] else "" for s in streams]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {score.get(name, math.nan):.3f} |")
    return "\n".join(lines)


DEFAULT_KONS = "KONS(eta=hessian, alpha=0.1, C=3)"  # the defaults this table chose
RIVER_DEFAULTS = ("river Linear/LogisticRegression", "river KNN", "river HoeffdingAdaptiveTree",
                  "river ARF")


def measure(results: dict, streams: list[str]) -> str:
    """The issue's targets, stream by stream: Auto against the best okoco setting of the grid
    (best-of-grid, an optimistic per-stream choice), against river's defaults, and the default
    KONS against river's linear model."""
    lines = ["| stream | Auto | best okoco setting (error) | Auto / best | best river default "
             "(error) | Auto beats every river default | default KONS | river linear |",
             "|---|---:|---|---:|---|---|---:|---:|"]
    for s in streams:
        if s not in results.get("Auto()", {}):
            continue
        auto = results["Auto()"][s][0]
        okoco = {k: v[s][0] for k, v in results.items()
                 if not k.startswith(("river", "Auto")) and s in v}
        river = {k: results[k][s][0] for k in RIVER_DEFAULTS if s in results.get(k, {})}
        if not okoco or not river or s not in results.get(DEFAULT_KONS, {}):
            continue
        best = min(okoco, key=okoco.get)
        top = min(river, key=river.get)
        lines.append(f"| {s} | {auto:.4g} | {best} ({okoco[best]:.4g}) | {auto / okoco[best]:.3f} "
                     f"| {top.removeprefix('river ')} ({river[top]:.4g}) | "
                     f"{'yes' if auto < river[top] else 'no'} | "
                     f"{results[DEFAULT_KONS][s][0]:.4g} | "
                     f"{results[RIVER_DEFAULTS[0]][s][0]:.4g} |")
    return "\n".join(lines)


def auto_paragraph(report: dict) -> str:
    """What the figures of this run say about Auto (the targets of the issue), in words."""
    results = report["results"]
    if "Auto()" not in results:
        return ""
    near, beats, streams, ewa = [], [], [], []
    for s, (auto, *_rest) in results["Auto()"].items():
        okoco = [v[s][0] for k, v in results.items()
                 if not k.startswith(("river", "Auto")) and s in v]
        river = [results[k][s][0] for k in RIVER_DEFAULTS if s in results.get(k, {})]
        if not okoco or not river:
            continue
        streams.append(s)
        if auto <= 1.03 * min(okoco):
            near.append(s)
        if auto < min(river):
            beats.append(s)
        other = results.get("river EWARegressor(Auto's windowed grid)", {}).get(s)
        if other is not None:
            ewa.append(auto / other[0])
    far = [s for s in streams if s not in near]
    text = (f"**Auto, measured** (the last tables; figures of the run that wrote this page). "
            f"`Auto` is within 3% of the best okoco setting of the whole grid (chosen per stream, "
            f"with hindsight) on {len(near)} of the {len(streams)} streams"
            + (f" (not on {', '.join(far)})" if far else "")
            + f"; it beats every river default learner on {len(beats)} of {len(streams)}. ")
    if ewa:
        text += (f"river's `EWARegressor` over the same experts (river's rate 0.5, no guarantee) "
                 f"has the lower error on {sum(r > 1 for r in ewa)} of {len(ewa)} regression "
                 f"streams; `Auto`'s error is {min(ewa):.3f} to {max(ewa):.3f} times its. ")
    timing = report.get("auto_timing") or {}
    if timing:
        ratios = [t["ratio"] for t in timing.values()]
        cpu = [t["cpu_ratio"] for t in timing.values() if "cpu_ratio" in t]
        text += (f"Time per sample: {min(ratios):.2f} to {max(ratios):.2f} times that of the "
                 f"expert it follows, run alone"
                 + (f" ({min(cpu):.2f} to {max(cpu):.2f} in CPU time)" if cpu else "")
                 + " (last table).")
    return textwrap.fill(text, width=96, break_on_hyphens=False)


def page(report: dict) -> str:
    """The docs page: how defaults were chosen, every figure, the comparison with river."""
    results, parts = report["results"], []
    load = ", ".join(f"{x:.2f}" for x in report.get("load_start", ()))
    parts.append(PAGE_INTRO.format(n=report["n"], load=load, auto=auto_paragraph(report)))
    for task in ("regression", "binary"):
        streams = [s for s in STREAMS if STREAMS[s][0] == task
                   and any(s in r for r in results.values())]
        if not streams:
            continue
        subset = {k: {s: v[s] for s in streams if s in v} for k, v in results.items()
                  if any(s in v for s in streams)}
        error = "MAE, in the target's units" if task == "regression" else "error rate"
        parts.append(f"## {task.capitalize()} streams ({error})\n\n{markdown(subset, streams)}\n")
    parts.append("## Auto and the default KONS against river's defaults\n\n"
                 + measure(results, list(STREAMS)) + "\n")
    bounded = bounded_table(results)
    if bounded:
        parts.append("## The bounded defaults against the unbounded learners\n\n"
                     + BOUNDED_INTRO + "\n" + bounded + "\n")
    if report.get("auto_timing"):
        parts.append("## Auto's cost against the expert it follows\n\n" + TIMING_INTRO + "\n"
                     + timing_table(report["auto_timing"]) + "\n")
    parts.extend(stored_sections())
    return "\n".join(parts)


def stored_sections() -> list[str]:
    """The long-stream and drift figures, from the results the other benchmarks stored."""
    from benchmarks import bench_bounded, bench_drift

    parts, results = [], RESULTS.parent
    runs = [json.loads((results / name).read_text())
            for name in ("bounded_auto.json", "bounded.json", "bounded_sketched.json",
                         "bounded_defaults.json")  # the last holds the current defaults' runs
            if (results / name).exists()]
    if runs:
        merged = {"learners": {k: v for run in runs for k, v in run["learners"].items()}}
        loads = "; ".join(f"{', '.join(f'{x:.1f}' for x in run['load_before'])} to "
                          f"{', '.join(f'{x:.1f}' for x in run['load_after'])}" for run in runs)
        parts.append("## Bounded along a long stream\n\n" + BOUNDED_STREAM_INTRO.format(
            loads=loads) + "\n" + bench_bounded.markdown(merged) + "\n")
    parts.append(EARLIER_COST)
    if (results / "bounded_million.json").exists():
        run = json.loads((results / "bounded_million.json").read_text())
        def span(before, after):
            return (f"{', '.join(f'{x:.1f}' for x in before)} to "
                    f"{', '.join(f'{x:.1f}' for x in after)}")

        own = {name: res for name, res in run["learners"].items() if "load_before" in res}
        loads = "; ".join([f"{name} {span(res['load_before'], res['load_after'])}"
                           for name, res in own.items()]
                          + ([f"the others {span(run['load_before'], run['load_after'])}"]
                             if len(own) < len(run["learners"]) else []))
        busy = max(res[key][0] for res in [run, *own.values()]
                   for key in ("load_before", "load_after"))
        machine = ("The machine was nearly idle" if busy < 1.5 else
                   "The machine was shared with other work at times, other sessions on its two "
                   "cores")
        parts.append("## A million steps\n\n" + MILLION_INTRO.format(
            loads=loads, machine=machine, n=run["n"], every=run["every"], window=run["window"],
            slow=bench_bounded.slow_starts(run)) + "\n"
                     + bench_bounded.million_markdown(run) + "\n")
    if (results / "families.json").exists():
        from benchmarks import bench_families

        store = json.loads((results / "families.json").read_text())
        args = store.get("args", {"n": 1500, "seeds": [0, 1], "held_seeds": [0]})
        table = json.loads(RESULTS.read_text())["results"] if RESULTS.exists() else {}
        parts.append("## Defaults chosen on families of streams\n\n" + bench_families.section(
            store, args["n"], args["seeds"], args["held_seeds"]) + "\n"
            + table_summary(table) + "\n")
    if (results / "drift.json").exists():
        report = json.loads((results / "drift.json").read_text())
        parts.append("## Drift\n\n" + DRIFT_INTRO.format(
            n=report["n"], seeds=", ".join(map(str, report["seeds"]))) + "\n"
            + bench_drift.markdown(report) + "\n")
    return parts


def table_summary(results: dict) -> str:
    """The issue's figures for ``Auto()`` on this page's table, in words."""
    if "Auto()" not in results or "Auto(max_size=None)" not in results:
        return ""
    streams = [s for s in STREAMS if s in results["Auto()"] and s in results["Auto(max_size=None)"]]
    ratio = {s: results["Auto()"][s][0] / results["Auto(max_size=None)"][s][0]
             for s in streams if results["Auto(max_size=None)"][s][0] > 0}
    near = [s for s, r in ratio.items() if r <= 1.02]
    beats = [s for s in streams if all(results["Auto()"][s][0] < results[k][s][0]
                                       for k in RIVER_DEFAULTS if s in results.get(k, {}))]
    far = ", ".join(f"{s} {r:.3f}" for s, r in ratio.items() if r > 1.02)
    return textwrap.fill(
        f"**On the defaults table** (sections above, this run): `Auto()` is within 2% of the "
        f"unbounded `Auto(max_size=None)` (the row of the five KONS's unbounded grid, measured "
        f"before the long-memory expert: issue 29's reference) on {len(near)} of "
        f"{len(streams)} streams"
        + (f" (not on {far}: error ratios)" if far else "")
        + f", and beats every river default learner on {len(beats)} of {len(streams)}.",
        width=96, break_on_hyphens=False) + "\n"


BOUNDED_STREAM_INTRO = """Every learner at its defaults on river's `synth.RandomRBF` (10 features, 2
classes, 50 centroids), standardized online, through `BinaryClassifier` (logistic loss; KRLS its
squared loss), each in a process of its own, default BLAS threading
(`python -m benchmarks.bench_bounded`). Every 10,000 steps: microseconds per step over the
last 1,000 and the peak resident memory so far (Sketched-KONS, far slower when this table was
measured, before the compiled core: every 1,000 steps, over the last 200; its window removes
atoms from KORS's Cholesky factor, whose `IncrementalCholesky.remove(0)` rebuilt the whole
trailing factor in numpy: 52 of its 62 ms per step with 481 atoms, KORS keeping nearly every
point of the window at `beta=10`, cProfile). A
learner stops at its time limit (the steps column says how far it got). The machine (2 cores)
was shared with other jobs: load averages (1, 5, 15 min) before and after each run:
{loads}.
Wall times under such a load are inflated several times; the flatness along the stream is the
point. `Auto`, FunctionalGD, KRLS, PROS-N-KONS and CON-KONS were re-run at the defaults chosen
on the families (`python -m benchmarks.bench_bounded --n 20000 --every 5000 --only
Auto,FunctionalGD,KRLS,PROSNKONS,CONKONS --output benchmarks/results/bounded_defaults.json`,
the last load pair above): 20,000 steps, a record every 5,000.
"""

EARLIER_COST = """Re-measured after the compiled core landed (its
`IncrementalCholesky.remove` updates the
trailing factor in place by rotations), every learner at its defaults *before the family
benchmark* (Auto's earlier grid of five experts over 500 points; FunctionalGD `eta="sqrt"`,
KRLS `nu=0.01`, PROS-N-KONS / CON-KONS `beta=1`) with the default BLAS threading, on an idle
machine (load 1.0 before and after), 100,000 steps each (`python -m benchmarks.bench_bounded
--n 100000 --every 20000`): µs/step over the last 1,000 steps at t = 20,000, 40,000, 60,000,
80,000 and 100,000, all windows full from t = 500.

| learner | wall, 100k steps | µs/step along the stream | peak RSS (MB) | error | 1M steps |
|---|---|---|---|---|---|
| Auto() | 143 s | 1461, 1300, 1311, 1287, 1642 | 190 flat | 0.0564 | 24 min (target 10) |
| KONS() | 29 s | 275, 278, 279, 276, 305 | 175 flat | 0.0688 | about 5 min |
| SketchedKONS() | 110 s | 1031, 1087, 1109, 1083, 1087 | 177 flat | 0.0686 | 18 min (target 5) |
| FunctionalGD() | 5 s | 47, 47, 47, 46, 47 | 160 flat | 0.2400 | under 1 min |
| KRLS() | 14 s | 144, 142, 142, 143, 142 | 163 flat | 0.0445 | about 2.5 min |
| PROSNKONS() | 18 s | 180, 242, 168, 169, 170 | 170 flat | 0.0561 | about 3 min |
| CONKONS() | 17 s | 173, 198, 172, 172, 173 | 165 flat | 0.0486 | about 3 min |

The last column extrapolates the flat rate of the 100,000-step runs; the million-step runs
themselves were not made.
"""

MILLION_INTRO = """Every learner at its current defaults (Auto's four KONS over a window of
400, two of them over its newest 200 and 80 points, and its Sketched-KONS over 1,000,
FunctionalGD `eta=0.5`, KRLS `nu=0.1`,
PROS-N-KONS / CON-KONS `beta=3`; the others as above), {n:,} steps of river's
`synth.RandomRBF` each, as in the long-stream table, in a process of its own, one after the
other, default BLAS threading (`python -m benchmarks.bench_bounded --n {n} --every {every}
--window {window} --output benchmarks/results/bounded_million.json`, and `--merge --only` for
learners run again on their own). {machine} (load averages before and after: {loads}); {slow}
The median over the records says
what a step costs along the stream. Issue 29's targets: under 5 minutes for every bounded
learner but Auto (under 10), the µs/step of the last 1,000 steps within 1.5x of those around
t = 10,000, and flat peak memory.
"""

DRIFT_INTRO = """river's drifting generators, {n} samples each, seeds {seeds}
(`python -m benchmarks.bench_drift`): `FriedmanDrift` with global recurring abrupt drift
(`gra`) and global slow gradual drift (`gsg`, drift points at a third and two thirds),
`ConceptDriftStream` from SEA variant 0 to variant 2 (a switch 50 samples wide at the middle)
and from variant 1 to 3 (a gradual one, a tenth of the stream wide), and
`Hyperplane(mag_change=0.001)` (a continuously rotating hyperplane). Every learner at its
defaults, features standardized online, raw regression targets (river's linear regression in a
`TargetStandardScaler`, as its docs advise). First table: the error over the whole stream
(MAE or error rate, mean over the seeds); second: the error over the 1,000 samples before and
after each drift point (mean over the seeds) and the samples after the drift point until the
error over the last 500 is back within 10% of its level over the 500 before it, per seed (500,
the smallest value the measure takes, means at once; `-`: not within the stream). `Auto()` was
re-run with its long-memory expert (`python -m benchmarks.bench_drift --only "Auto()"`, which
keeps the stored runs of the other learners: ARF and the linear models are those of the
earlier run, same streams and seeds); the five KONS over 400 points before it had 1.566, 1.631,
0.027, 0.0316 and 0.116 on the five streams and recovered from the Friedman drifts in 694-887
samples (1,148-1,548 with it: the long memory holds the old concept longer, inside issue 29's
2,000). Auto's us/sample column was taken idle; the other learners' under a load of about 6 on
2 cores.
"""


BOUNDED_INTRO = """Each bounded default beside its unbounded counterpart on the same rows (ratio
of errors; below 1 the bounded learner is better). `Auto()` is the default (four KONS over the
last 400 points or fewer and a Sketched-KONS over the last 1,000) and `Auto(max_size=None)` the
stored row of the five KONS's unbounded grid (three exact KONS), measured before the
long-memory expert; the last column is `Auto()` on raw regression targets (no
`TargetStandardScaler`: it standardizes them inside) against `Auto()` inside one. `KONS()` and
`KRLS()` are the bounded defaults (`max_size=500`) against the grid rows run unbounded
(`KONS(eta=hessian, alpha=0.1, C=3)`, `KRLS(nu=0.1)`). The streams have at most 1,000 rows, so
a window of 500 forgets for the second half of each.
"""


def bounded_table(results: dict) -> str:
    pairs = [("Auto()", "Auto(max_size=None)"), ("KONS() (bounded default)",
             "KONS(eta=hessian, alpha=0.1, C=3)"), ("KRLS() (bounded default)", "KRLS(nu=0.1)"),
             ("Auto() on raw targets", "Auto()")]
    pairs = [(a, b) for a, b in pairs if a in results and b in results]
    if not pairs:
        return ""
    head = " | ".join(f"{a} / {b}" for a, b in pairs)
    lines = [f"| stream | {head} |", "|---|" + "---:|" * len(pairs)]
    for s in STREAMS:
        cells = []
        for a, b in pairs:
            if s in results[a] and s in results[b] and results[b][s][0] > 0:
                cells.append(f"{results[a][s][0]:.4g} / {results[b][s][0]:.4g} = "
                             f"{results[a][s][0] / results[b][s][0]:.3f}")
            else:
                cells.append("")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


TIMING_INTRO = """Time per sample of the test-then-train replay (scalers included) of `Auto`
and of a standalone KONS with the settings of the expert `Auto` leads with at the end, replayed
in the same run on the same rows, one row at a time in turn (so that both see the same load;
best of 5 each). The ratio is of wall times; the CPU ratio is of this process's CPU time, which
the load of other processes on the shared cores inflates less. The experts share the stored
points, each kernel's row and the per-step work around them (one analysis per input, one
mixture); what they cannot share is their own factorization, so each adds its `O(t^2)` solves.
The load column is the 1-minute load average after the measurement (2 cores, shared).
"""


PAGE_INTRO = """# Defaults chosen by measurement

Every default of okoco's learners was chosen from the table below, not by hand. Each candidate
setting is replayed test-then-train as a user without a tuning budget runs it: river
`progressive_val_score`, features standardized online (`StandardScaler`), regression targets
standardized online (`TargetStandardScaler`) and scored in their own units, binary tasks through
`BinaryClassifier` with the logistic loss. Streams: river TrumpApproval, ChickWeights, Bananas,
Phishing, Shuttle (first rows), river `synth.Friedman(seed=42)`, okoco's sinc, and the LIBSVM
german and housing sets as published with Lu et al. (2016), "Large Scale Online Kernel
Learning" (first stored permutation); at most {n} rows each. A candidate's summary is the
geometric mean over streams of its error divided by the best error of any candidate on that
stream (1.000 = the best everywhere). Load average at the start: {load} (2 cores, shared with
other jobs; the times in `benchmarks/results/defaults.json` are indicative only).

Regenerate with `python -m benchmarks.bench_defaults --docs docs/defaults.md`.

**Chosen.** KONS and Sketched-KONS: `eta="hessian"` for every loss (the curvature step led on
both tasks; `"exp-concave"` stays available for the regret bound), `alpha=0.1` (0.03 ties on
regression, 0.1 wins on classification; 0.01 and 1 lose), `C=3` (C=1 loses on every
regression stream: it clips at one standard deviation), the RBF kernel with `gamma = 1/d`.
Sketched-KONS keeps `beta=10` and the probability floor 0: with `alpha=0.1` the sampling
settings are within 0.5% of each other. FunctionalGD gets `C=3` and the `1/d` kernel. The v0.1
defaults of KONS are the row "KONS v0.1 defaults". Since the family benchmark (section
"Defaults chosen on families of streams", where each choice and its held-out check are): KRLS
`nu=0.1` (was 0.01, which is better on this table's regression streams but not on the
families), FunctionalGD `eta=0.5` (was `"sqrt"`, far behind on both), PROS-N-KONS and
CON-KONS `beta=3` (was 1), and `Auto`'s grid and window (below); KONS's `alpha=0.1` and
Sketched-KONS's `beta=10` were confirmed there.

**Bounded.** Every learner keeps its memory and its step bounded at its defaults; the grid rows
above are the unbounded learners (`max_size=None`, `budget=None`), the learners of the
theorems. KONS and Sketched-KONS keep a window of the last 500 points (`max_size=500`: on the
table's streams the window cost KONS 0-5% against the unbounded learner and was better on
TrumpApproval, a trend; a window of 100 lost more than one of 500 on 7 of 9 streams, up to 36%
on phishing), FunctionalGD the last 1000 terms (`budget=1000`: 500 cost 10% on bananas and 13%
on phishing), KRLS and PROS-N-KONS / CON-KONS a dictionary of at most 500 points
(`max_size=500`: only Friedman filled KRLS's, its error 0.2% lower; 200 changed KRLS's error by
at most 2.1%). `Auto` keeps a window of 400 points for its four KONS experts (`max_size=400`),
two of which forget faster (the newest 200 and 80), and the last 1,000 for its Sketched-KONS
(KORS keeps a sample of them as its atoms): chosen on the families of streams for accuracy at
the cost of about 3.3 experts over the whole window (the earlier five experts over 500 points
cost 1.3-1.6 ms per step; the long-memory expert was chosen on the training families by the
same score, `python -m benchmarks.bench_long_memory --part select`, and costs what the KONS
it replaced did). The section "The bounded defaults against the unbounded
learners" has the figures of this run (of the earlier four experts).

{auto}
"""


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="rows per stream")
    parser.add_argument("--only", default="",
                        help="comma-separated: candidates whose name contains one of these")
    parser.add_argument("--streams", default=",".join(STREAMS), help="comma-separated streams")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=None, help="also write this Markdown page")
    parser.add_argument("--no-timing", action="store_true",
                        help="skip timing Auto against its leader (drops stored timings of Auto)")
    args = parser.parse_args(argv)
    streams = [s for s in args.streams.split(",") if s]
    wanted = args.only.split(",")
    chosen = {k: v for k, v in candidates().items() if any(w in k for w in wanted)}
    stored = json.loads(args.output.read_text()) if args.output.exists() else {}
    known = candidates()  # figures of candidates renamed or removed since are dropped
    results = {k: v for k, v in stored.get("results", {}).items() if k in known}
    load = os.getloadavg()
    for stream in (streams if chosen else []):
        task, loader = STREAMS[stream]
        rows = loader(args.n)
        for name, build in chosen.items():
            if "EWARegressor" in name and task != "regression":  # regression only
                continue
            error, us = run_one(build, task, rows)
            results.setdefault(name, {})[stream] = [error, us, len(rows)]
            print(f"{stream:15s} {name:60s} {error:.4g} {us:8.0f} us/sample", flush=True)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"results": results, "n": args.n}, indent=1))
    timing = stored.get("auto_timing", {})
    if args.no_timing and any(name == "Auto()" for name in chosen):
        timing = {}  # timings of an Auto that was just re-measured would be stale
    elif any(name == "Auto()" for name in chosen):
        for stream in streams:
            task, loader = STREAMS[stream]
            timing[stream] = time_auto_and_leader(task, loader(args.n))
            t = timing[stream]
            print(f"{stream:15s} Auto / its leader: {t['ratio']:.2f} ({t['auto_us']:.0f} / "
                  f"{t['leader_us']:.0f} us/sample), CPU {t['cpu_ratio']:.2f}, load "
                  f"{t['load']:.2f}", flush=True)
    report = {"results": results, "n": args.n, "load_start": load, "load_end": os.getloadavg(),
              "auto_timing": timing}
    if not chosen:  # --only matched nothing: only rebuild the page from the stored figures
        report = {**stored, "results": results}
    args.output.write_text(json.dumps(report, indent=1))
    if args.docs is not None:
        args.docs.write_text(page(report), encoding="utf-8")
    for task in ("regression", "binary"):
        names_streams = [s for s in streams if STREAMS[s][0] == task]
        subset = {k: {s: v[s] for s in names_streams if s in v} for k, v in results.items()
                  if any(s in v for s in names_streams)}
        print(f"\n### {task} (error: {'MAE' if task == 'regression' else 'error rate'})\n")
        print(markdown(subset, names_streams))
    print(f"\nload average at start {load}, at end {os.getloadavg()}")
    return report


if __name__ == "__main__":
    main()
