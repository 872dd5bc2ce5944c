"""``okoco compare``: several learners over seeds, here or on a Dask cluster."""

# typer declares options as argument defaults (typer.Option(...)), hence B008 is off here.
# ruff: noqa: B008

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import typer

import okoco.cli as cli  # the command-line API, bound on first use (see okoco.cli._load_api)
from okoco.cli import _guard, _output_kind, _pairs, _progress, _refuse_unused, _spec, app
from okoco.cli._defaults import DEFAULT_LEARNER
from okoco.cli._options import (
    _CHECKPOINTS,
    _COEF0,
    _DATA_PARAM,
    _DEGREE,
    _GAMMA,
    _INTERVAL,
    _KERNEL,
    _LEARNER_HELP,
    _LOSS,
    _MAX_SAMPLES,
    _METRIC,
    _NORMALIZE,
    _POS_LABEL,
    _SCALE,
    _SCALE_TARGET,
    _TARGET,
)
from okoco.cli._report import _label_rule, _print_table

#: The learners ``compare`` runs when no -l is given: replay's default and two of its experts.
COMPARED_BY_DEFAULT = (DEFAULT_LEARNER, "kons", "fgd")


@app.command(short_help="Compare learners on a dataset over seeds.")
def compare(
    dataset: str = typer.Argument(..., metavar="DATASET",
                                  help="a built-in dataset name or a file"),
    learner: list[str] = typer.Option([], "--learner", "-l", metavar="NAME",
                                      show_default=False,
                                      help=_LEARNER_HELP + "; repeatable [default: "
                                      + ", ".join(COMPARED_BY_DEFAULT) + ": replay's "
                                      "default learner and two of its experts]"),
    seeds: int = typer.Option(1, "--seeds", help="runs per learner, seeds 0..N-1 (learner seed, "
                              "synthetic data seed and --shuffle order)"),
    loss: str = _LOSS,
    kernel: str = _KERNEL,
    gamma: float = _GAMMA,
    degree: int = _DEGREE,
    coef0: float = _COEF0,
    normalize: bool = _NORMALIZE,
    C: float = typer.Option(3.0, "--C", help="predictions are clipped to [-C, C]"),
    param: list[str] = typer.Option([], "--param", "-p", metavar="KEY=VALUE",
                                    help="learner parameter key=value, given to every "
                                    "learner that has it"),
    data_param: list[str] = _DATA_PARAM,
    target: str = _TARGET,
    metric: list[str] = _METRIC,
    pos_label: str = _POS_LABEL,
    shuffle: bool = typer.Option(False, "--shuffle", help="each seed replays its own order"),
    max_samples: int = _MAX_SAMPLES,
    checkpoints: int = _CHECKPOINTS,
    interval: float = _INTERVAL,
    sort: str = typer.Option(None, "--sort", metavar="COLUMN",
                             help="rank the learners by a column, best first: the metric (e.g. "
                             "mae), interval-score, coverage (closest to --interval), "
                             "us-per-sample, memory-bytes, ... [default: as given]"),
    scale: bool = _SCALE,
    scale_target: bool = _SCALE_TARGET,
    output: Path = typer.Option(None, "--output", "-o", help="r.json (summary and every run's "
                                "curves) or r.csv (one row per run)"),
    plot: Path = typer.Option(None, "--plot", help="one plot of all learners: .png/.pdf/.svg"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON on stdout"),
    scheduler: str = typer.Option(None, "--scheduler", help="run the learner x seed runs on "
                                  "Dask: 'local' (a LocalCluster started and stopped for the "
                                  "run) or the ADDRESS of a running scheduler "
                                  "(tcp://host:8786) [default: one after the other, here]"),
    workers: int = typer.Option(None, "--workers", help="--scheduler local: worker processes "
                                "[default: CPUs]; with an ADDRESS: wait for N workers; alone: "
                                "implies --scheduler local"),
) -> None:
    """Compare learners on DATASET over seeds: mean ± std of the final values, one plot.

    With --scheduler the runs go to a Dask cluster (pip install okoco[distributed]); results
    are the same as without, and a failed run is reported (exit code 1) while the others finish.

    Example: okoco compare sinc -l kons -l sketched-kons -l fgd --seeds 3 --output r.json
    \f
    Examples
    --------
    >>> from typer.testing import CliRunner
    >>> args = ["compare", "sinc", "-l", "kons", "-l", "fgd", "--seeds", "2", "-d", "n=100"]
    >>> result = CliRunner().invoke(app, args)
    >>> result.exit_code, "kons" in result.output and "fgd" in result.output
    (0, True)
    """

    def body() -> None:
        import numpy as np

        if seeds < 1:
            raise cli.UserError(f"--seeds must be >= 1, got {seeds}")
        registry = cli.learner_registry()
        names = [cli.resolve("learner", name, registry)
                 for name in learner or COMPARED_BY_DEFAULT]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice and not (quiet or as_json):
            typer.echo(f"note: -l {twice[0]} is given more than once; each learner runs once "
                       "(use --seeds N for repeated runs)", err=True)
        chosen = list(dict.fromkeys(names))
        _refuse_unused(chosen, {"-k": kernel, "--gamma": gamma, "--degree": degree,
                                "--coef0": coef0, "--normalize": normalize})
        shared = _pairs(param, "parameter")
        dparams = _pairs(data_param, "dataset parameter")
        base = _spec(dataset, chosen[0], kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
                     normalize=normalize, loss=loss, C=C, params={}, metric=metric,
                     max_samples=max_samples, checkpoints=checkpoints, scale=scale,
                     scale_target=scale_target, seed=0, shuffle=shuffle, target=target,
                     data_params=dparams, interval=interval, pos_label=pos_label)
        out_kind = _output_kind(output, ("json", "csv"), "--output")
        _output_kind(plot, ("png", "pdf", "svg"), "--plot")
        runs: dict[str, list] = {name: [] for name in chosen}
        failed = 0
        if scheduler is not None or workers is not None:
            runs, failed = _compare_on_dask(base, chosen, seeds, shared, scheduler or "local",
                                            workers, progress=not quiet and not as_json)
        else:
            for seed in range(seeds):
                ds = cli.load_dataset(dataset, target=target, data_params=dparams, seed=seed,
                                  shuffle=shuffle)
                for name in chosen:
                    spec = _learner_spec(base, name, seed, shared, registry)
                    result = cli.run(spec, data=ds, progress=_progress(quiet) and not as_json)
                    runs[name].append(result)
        unused = [k for k in shared if not any(k in cli._parameters(registry[n]) for n in chosen)]
        if unused:
            raise cli.UserError(f"no learner takes parameter {unused[0]!r}")
        measured = next(rs for rs in runs.values() if rs)[0].metrics
        main = measured[0]
        cols = [*measured, *(INTERVAL_FIGURES if interval is not None else ()),
                "cumulative_loss", "regret", "us_per_sample", "dictionary_size", "memory_bytes"]
        table = []
        for name, rs in runs.items():
            row: dict[str, Any] = {"learner": name, "runs": len(rs)}
            for col in cols:
                values = np.array([_final(r, col) for r in rs], dtype=float)
                ok = values[np.isfinite(values)]
                row[col] = {"mean": float(ok.mean()) if ok.size else math.nan,
                            "std": float(ok.std()) if ok.size else math.nan}
            table.append(row)
        if sort is not None:
            table.sort(key=_rank_key(sort, cols, interval))
        if out_kind == "json":
            doc = {"dataset": dataset, "metric": main, "seeds": seeds, "summary": table,
                   "runs": {n: [r.to_dict() for r in rs] for n, rs in runs.items()}}
            text = json.dumps(cli.to_json_ready(doc), indent=2, allow_nan=False)
            cli.atomic_write(output, lambda f: f.write(text + "\n"))
        elif out_kind == "csv":
            import csv

            def write(f) -> None:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["learner", "seed", "n_samples", *cols])
                for n, rs in runs.items():
                    for seed, r in enumerate(rs):
                        w.writerow([n, r.meta.get("seed", seed), r.n_samples,
                                    *("" if not np.isfinite(_final(r, c)) else
                                      _final(r, c) for c in cols)])

            cli.atomic_write(output, write)
        if plot is not None:
            cli.plot_runs(runs, plot)
        first = next(rs for rs in runs.values() if rs)[0].meta
        labels = {k: first[k] for k in ("pos_label", "pos_rule") if k in first}
        if as_json:
            typer.echo(json.dumps(cli.to_json_ready({"dataset": dataset, "metric": main,
                                                     "seeds": seeds, **labels,
                                                     "summary": table})))
        else:
            _print_table(table, cols, quiet)
            if labels:
                typer.echo(f"positive label {labels['pos_label']!r} "
                           f"({_label_rule(labels['pos_rule'])})")
        if failed:
            raise typer.Exit(code=1)

    _guard(body, quiet or as_json)


#: The interval columns of the table: the coverage over the run, the median width and the
#: mean interval score of the last intervals (past the warm-up, see okoco.evaluate.replay).
INTERVAL_FIGURES = ("coverage", "median_width", "recent_interval_score")


def _final(result: Any, col: str) -> float:
    """A run's final value of a table column (NaN when it has none)."""
    if col in ("median_width", "recent_interval_score"):
        recent = result.meta.get("recent_intervals") or {}
        return recent.get(col.removeprefix("recent_"), math.nan)
    value = result.final.get(col, math.nan)
    return math.nan if value is None else value


def _learner_spec(base: Any, name: str, seed: int, shared: dict[str, Any], registry: dict):
    """The run of learner ``name``: the parameters it takes, and the kernel options only if
    it takes a kernel (Auto picks its own)."""
    accepted = cli._parameters(registry[name])
    kernel = {} if "kernel" in accepted else {"kernel": "rbf", "gamma": None, "degree": None,
                                              "coef0": None, "normalize": False}
    return dataclasses.replace(base, learner=name, seed=seed, **kernel,
                               params={k: v for k, v in shared.items() if k in accepted})


def _compare_on_dask(base: Any, learner: list[str], seeds: int, shared: dict[str, Any],
                     scheduler: str, workers: int | None,
                     progress: bool) -> tuple[dict[str, list], int]:
    """``compare``'s runs as an okoco.distributed grid; failed runs are reported on stderr."""
    # deferred: okoco.distributed imports Dask, an optional dependency slow to import
    from okoco import distributed

    kernel = cli._kernel(base.kernel, base.gamma, base.degree, base.coef0, base.normalize)
    learners: Any = learner
    if kernel is not None:  # the kernel goes to the learners that take one (Auto picks its own)
        registry = cli.learner_registry()
        learners = {}
        for name in learner:
            accepted = cli._parameters(registry[name])
            learners[name] = {k: v for k, v in {**shared, "kernel": kernel}.items()
                              if k in accepted}
        kernel, shared = None, {}
    try:
        res = distributed.grid(
            learners, [(base.dataset, dict(base.data_params))], params=[shared] if shared else None,
            seeds=seeds,
            kernel=kernel, loss=base.loss, C=base.C, metrics=list(base.metrics),
            max_samples=base.max_samples, checkpoints=base.checkpoints, scale=base.scale,
            scale_target=base.scale_target, shuffle=base.shuffle, target=base.target,
            interval=base.interval, pos_label=base.pos_label, scheduler=scheduler,
            workers=workers, progress=progress)
    except (ImportError, ConnectionError) as error:
        raise cli.UserError(str(error)) from None
    if not res.ok:
        raise cli.UserError(res.failed[0]["error"])
    for task, record in zip(res.tasks, res.records):
        if record["status"] != "ok":
            typer.echo(f"failed: {task.label()}: {record['error']}", err=True)
    runs: dict[str, list] = {}
    for task, result in zip(res.tasks, res.results):
        if result is not None:
            runs.setdefault(task.learner, []).append(result)
    return runs, len(res.failed)


#: Columns where a larger value ranks first (``--sort``); ``coverage`` ranks by its distance to
#: the requested level, every other column by its value, smallest first.
_LARGER_IS_BETTER = {"accuracy", "f1", "r2", "rocauc"}


def _rank_key(sort: str, cols: list[str], interval: float | None):
    """The key that orders the compare table by column ``sort`` (a column name, any spelling
    of :func:`okoco.experiment.name_key`), learners without a value last."""
    names = {cli.name_key(c.lower()): c for c in cols}
    if "median_width" in cols:  # the table's width and score are those past the warm-up
        names.update({"interval-score": "recent_interval_score", "width": "median_width",
                      "mean-width": "median_width"})
    key = cli.name_key(sort.lower())
    if key not in names:
        if key in ("coverage", "mean-width", "width", "median-width", "interval-score"):
            raise cli.UserError(f"--sort {sort!r} needs --interval")
        raise cli.UserError(f"--sort {sort!r} is not a column; choose from {', '.join(names)}")
    col = names[key]

    def rank(row: dict) -> tuple[bool, float]:
        value = row[col]["mean"]
        if not math.isfinite(value):
            return True, 0.0
        if col == "coverage":
            return False, abs(value - interval)
        return False, -value if cli.name_key(col.lower()) in _LARGER_IS_BETTER else value

    return rank
