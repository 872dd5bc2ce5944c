"""The ``okoco`` command line: replay datasets through kernel learners, test-then-train.

Commands: ``replay`` (one learner), ``compare`` (several learners over seeds), ``datasets`` and
``learners`` (what is available). Every user error prints one line ``error: ...`` on stderr and
exits with code 2.

Examples
--------
>>> from typer.testing import CliRunner
>>> out = CliRunner().invoke(app, ["replay", "sinc", "-d", "n=50"])
>>> out.exit_code, out.stdout.splitlines()[0]
(0, 'dataset     sinc (50 samples, d=1, regression)')
"""

# typer declares options as argument defaults (typer.Option(...)), hence B008 is off here.
# ruff: noqa: B008

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import math
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

from okoco._version import __version__

# Start-up: `okoco --help` and `okoco --version` must answer at once (well under half a
# second), but the modules that run experiments import scipy and river (about a second of
# imports, most of it river's own). So the names in _API are bound on first use by _load_api(),
# which every command calls first; this is deferral of heavy dependencies, not a layering cycle
# (cli sits above all of these modules). `from okoco.cli import learner_registry` still works
# (module __getattr__).
_API = ("datasets", "DownloadError", "atomic_write", "to_json_ready", "plot_runs",
        "KERNELS", "LOSSES", "METRICS", "REGRESSION_METRICS", "UserError", "build_model",
        "describe", "learner_registry", "load_dataset", "_kernel", "_metrics", "_parameters",
        "_note_leader", "read_metadata", "resolve", "RunSpec", "Checkpoint", "run")


def _load_api() -> None:
    global datasets, DownloadError, atomic_write, to_json_ready, plot_runs
    global KERNELS, LOSSES, METRICS, REGRESSION_METRICS, UserError, build_model, describe
    global learner_registry, load_dataset, _kernel, _metrics, _parameters
    global read_metadata, _note_leader, resolve, RunSpec, Checkpoint, run
    if "UserError" in globals():  # bound already (and maybe replaced by a test's monkeypatch)
        return
    # deferred: scipy and river take about a second to import (see the note above _API)
    from okoco import _io, datasets, evaluate, experiment, persistence

    DownloadError = datasets.DownloadError
    atomic_write, to_json_ready = _io.atomic_write, _io.to_json_ready
    plot_runs = evaluate.plot_runs
    read_metadata = persistence.read_metadata
    # Building a run from names lives one layer down, shared with okoco.distributed.
    KERNELS, LOSSES, METRICS = experiment.KERNELS, experiment.LOSSES, experiment.METRICS
    REGRESSION_METRICS, UserError = experiment.REGRESSION_METRICS, experiment.UserError
    build_model, describe = experiment.build_model, experiment.describe
    learner_registry, load_dataset = experiment.learner_registry, experiment.load_dataset
    _kernel, _metrics = experiment.make_kernel, experiment.make_metrics
    _parameters = experiment.parameters
    RunSpec, Checkpoint, run = experiment.RunSpec, experiment.Checkpoint, experiment.run
    _note_leader, resolve = experiment.note_leader, experiment.resolve


def __getattr__(name: str) -> Any:
    if name in _API:
        _load_api()
        return globals()[name]
    raise AttributeError(f"module 'okoco.cli' has no attribute {name!r}")


# rich_markup_mode=None: click's plain help, which wraps evenly at any width, leaves "[extra]"
# alone (rich markup ate "okoco[distributed]") and does not import rich for `okoco --help`.
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="okoco: online learning with kernels and convex losses.",
                  pretty_exceptions_enable=False)

#: The learner ``replay`` uses when -l is not given: ``Auto`` at its class defaults, the same
#: learner as ``-l auto``, ``compare -l auto`` and ``okoco.learners.Auto()`` in Python (a user's
#: -p is given to it as to any learner).
DEFAULT_LEARNER = "auto"

#: Learners that store every sample unless told otherwise (cost per step and memory grow with
#: t), the parameter that bounds them, and what to suggest instead.
GROWING_COST = {"kons": (None, "-l sketched-kons, or -l fgd -p budget=1000"),
                "fgd": ("budget", "-p budget=1000")}
#: A stream is long from this many samples on: KONS then holds a (t x t) factor of 100 MB.
LONG_STREAM = 5000


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def parse_value(text: str) -> Any:
    """A ``-p key=value`` value: a Python literal (number, None, True, string in quotes) or text.

    Examples
    --------
    >>> parse_value("0.1"), parse_value("3"), parse_value("none"), parse_value("sqrt")
    (0.1, 3, None, 'sqrt')
    """
    lowered = text.strip().lower()
    if lowered in ("none", "null"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def _pairs(items: Sequence[str], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{what} {item!r} must look like key=value")
        out[key.strip().replace("-", "_")] = parse_value(value)
    return out


# -- running --------------------------------------------------------------------------------------


def _writable(path: Path) -> None:
    """Refuse, before the run, a file that cannot be written: named in the user's words."""
    if path.is_dir():
        raise UserError(f"cannot write {str(path)!r}: it is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"cannot write {str(path)!r}: no such directory")
    try:  # the file is written next to itself and renamed: the folder must take a new file
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as error:
        raise UserError(f"cannot write {str(path)!r}: cannot create a file in {str(parent)!r} "
                        f"({error.strerror or error})") from None


def _output_kind(path: Path | None, allowed: tuple[str, ...], what: str) -> str | None:
    if path is None:
        return None
    kind = path.suffix.lower().lstrip(".")
    if kind not in allowed and not path.is_dir():
        raise UserError(f"{what} {str(path)!r} must end in {' or '.join('.' + a for a in allowed)}")
    _writable(path)
    return kind


def _guard(body: Callable[[], None]) -> None:
    """Run a command body; user errors become one line on stderr and exit code 2."""
    _load_api()
    try:
        body()
    except UserError as error:
        _fail(str(error))
    except (FileNotFoundError, IsADirectoryError, DownloadError) as error:
        _fail(str(error))
    except (ValueError, TypeError, KeyError) as error:
        # str(KeyError("x")) is "'x'" (its repr): show the message itself, quotes untouched.
        text = error.args[0] if isinstance(error, KeyError) and error.args else error
        _fail((str(text) or type(error).__name__).splitlines()[0])
    except OSError as error:
        _fail(f"{error.strerror or error}: {getattr(error, 'filename', '') or ''}".rstrip(": "))
    except KeyboardInterrupt:  # Ctrl-C outside a replay (loading, writing): nothing to report
        typer.echo("interrupted", err=True)
        raise typer.Exit(code=130) from None


def _progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _num(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    return f"{v:.3f}" if a >= 1 else f"{v:.4g}"


def _fmt(value: Any, digits: int = 6) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _bytes(n: float) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


# -- shared options -------------------------------------------------------------------------------

_LEARNER_HELP = "learner: " + ", ".join(["auto", "fgd", "kons", "sketched-kons", "krls",
                                          "pros-n-kons", "con-kons"])
_DEFAULT_LEARNER_HELP = f" [default: {DEFAULT_LEARNER}, see `okoco learners`]"
_KERNEL_HELP = "rbf, laplacian, polynomial or linear, or a sum/product such as rbf+linear"
_GAMMA_HELP = "kernel scale [default: RBF/Laplacian 1/d at the first sample]"
_DEGREE_HELP = "polynomial kernel degree [default: 2]"
_COEF0_HELP = "polynomial kernel offset [default: 1.0]"
_NORMALIZE_HELP = "normalise the kernel, k(x,x)=1"
_DATA_PARAM_HELP = ("dataset parameter, key=value, repeatable (synthetic: n, noise, ...; CSV: "
                    "header, delimiter, na=drop, ...)")
_METRIC_HELP = ("mae, mse, rmse, r2, accuracy, f1, logloss, rocauc; repeatable [default: mae; "
                "accuracy for binary tasks]")
_MAX_SAMPLES_HELP = "stop after N samples"
_CHECKPOINTS_HELP = "record the curves at about this many points"
_SCALE_HELP = ("standardise features online (StandardScaler: running mean and variance, as "
               "river's; each sample is scaled before the learner sees it)")
_SCALE_TARGET_HELP = ("regression: standardise targets online (TargetStandardScaler, as river's); "
                      "metrics are still reported on the original scale")

# The options replay and compare share, declared once (typer reads an option's declaration as
# metadata when it builds each command, so one object serves both).
_LOSS = typer.Option(None, "--loss", help="squared, logistic or squared-hinge "
                     "[default: squared; logistic for binary tasks]")
_KERNEL = typer.Option("rbf", "--kernel", "-k", help=_KERNEL_HELP)
_GAMMA = typer.Option(None, "--gamma", help=_GAMMA_HELP)
_DEGREE = typer.Option(None, "--degree", help=_DEGREE_HELP)
_COEF0 = typer.Option(None, "--coef0", help=_COEF0_HELP)
_NORMALIZE = typer.Option(False, "--normalize", help=_NORMALIZE_HELP)
_DATA_PARAM = typer.Option([], "--data-param", "-d", metavar="KEY=VALUE", help=_DATA_PARAM_HELP)
_TARGET = typer.Option(None, "--target", "-t",
                       help="CSV target column, by name or index [default: last]")
_METRIC = typer.Option([], "--metric", "-m", metavar="NAME", help=_METRIC_HELP)
_MAX_SAMPLES = typer.Option(None, "--max-samples", "-n", help=_MAX_SAMPLES_HELP)
_CHECKPOINTS = typer.Option(50, "--checkpoints", help=_CHECKPOINTS_HELP)
_SCALE = typer.Option(True, "--scale/--no-scale", help=_SCALE_HELP)
_SCALE_TARGET = typer.Option(True, "--scale-target/--no-scale-target", help=_SCALE_TARGET_HELP)


def _spec(dataset: str, learner: str, *, kernel: str, gamma: float | None, degree: int | None,
          coef0: float | None, normalize: bool, loss: str | None, C: float,
          params: dict[str, Any], metric: list[str], max_samples: int | None, checkpoints: int,
          scale: bool, scale_target: bool, seed: int | None, shuffle: bool,
          target: str | None, data_params: dict[str, Any]):
    """The run the options describe (a :class:`okoco.experiment.RunSpec`), the options named as
    the user typed them when one is wrong."""
    if not (math.isfinite(C) and C > 0):
        raise UserError(f"--C must be finite and > 0, got {C}")
    if max_samples is not None and max_samples < 1:
        raise UserError(f"--max-samples must be >= 1, got {max_samples}")
    if checkpoints < 1:
        raise UserError(f"--checkpoints must be >= 1, got {checkpoints}")
    return RunSpec(dataset, learner, params=params, kernel=kernel.lower(), gamma=gamma,
                   degree=degree, coef0=coef0, normalize=normalize,
                   loss=None if loss is None else loss.lower(), C=C, metrics=tuple(metric),
                   max_samples=max_samples, checkpoints=checkpoints, scale=scale,
                   scale_target=scale_target, seed=seed, shuffle=shuffle, target=target,
                   data_params=data_params)


def _checkpoint_path(checkpoint: Path | None, every: int | None, resume: bool,
                     output: Path | None) -> Path | None:
    """The replay checkpoint file: --checkpoint, else OUTPUT with the suffix .ckpt.npz."""
    if every is not None and every < 1:
        raise UserError(f"--checkpoint-every must be >= 1, got {every}")
    if checkpoint is None and (every is not None or resume):
        if output is None:
            raise UserError("--checkpoint-every and --resume need --checkpoint PATH (or "
                            "--output, next to which the checkpoint is kept)")
        checkpoint = output.with_suffix(".ckpt.npz")
    if checkpoint is not None:
        _writable(checkpoint)
    return checkpoint


def _warn_long_stream(learner: str, params: dict[str, Any], n: int | None) -> None:
    """Say once, before a long replay of a learner that keeps every sample, what bounds it."""
    if learner not in GROWING_COST or n is None or n < LONG_STREAM:
        return
    bound, cure = GROWING_COST[learner]
    if bound is not None and params.get(bound) is not None:
        return
    typer.echo(f"note: {learner} keeps every sample, so its cost per step and memory grow with "
               f"t ({n:,} samples here); for a bounded cost use {cure}", err=True)


def _warn_empty_sketch(learner: str, params: dict[str, Any]) -> None:
    """Sketched-KONS with beta = p_min = 0 samples no point: its preconditioner stays alpha I."""
    if learner == "sketched-kons" and params.get("beta", 1) == 0 and not params.get("p_min"):
        typer.echo("note: sketched-kons with beta=0 and p_min=0 keeps no point in its sketch (an "
                   "empty dictionary): it is then kernel gradient descent with step 1/alpha; "
                   "use beta > 0 (default 10) or p_min > 0", err=True)


def _note_dropped_columns(ds: Any, quiet: bool) -> None:
    info = getattr(ds, "info", None)
    dropped = info.get("dropped_columns") if isinstance(info, dict) else None
    if dropped and not quiet:
        typer.echo(f"note: dropped non-numeric columns {', '.join(map(repr, dropped))}; the "
                   f"target is {info.get('target')!r} (choose it with -t COLUMN)", err=True)


def _print_json_summary(ds: Any, learner: str, result: Any, output: Path | None,
                        plot: Path | None, interrupted: bool) -> None:
    final = result.final
    summary = {"dataset": ds.name, "task": ds.task, "d": ds.d, "learner": learner,
               "n_samples": result.n_samples,
               "metrics": {m: final[m] for m in result.metrics},
               **{k: final[k] for k in ("cumulative_loss", "regret", "dictionary_size",
                                        "us_per_sample", "elapsed_s", "memory_bytes")},
               "output": None if output is None else str(output),
               "plot": None if plot is None else str(plot), "interrupted": interrupted}
    typer.echo(json.dumps(to_json_ready(summary)))


def _first_loss_note(result: Any) -> str:
    """Say so when the first sample, predicted before any target was seen (0 on the targets'
    scale), makes most of the cumulative loss: then the sum does not describe the run."""
    first, total = result.meta.get("first_loss"), result.final["cumulative_loss"]
    if first is None or not (total > 0 and first > 0.5 * total):
        return ""
    rest = (total - first) / max(result.n_samples - 1, 1)
    return (f" ({_num(first)} of it from sample 1, predicted before any target was seen; "
            f"{rest:.4g} per sample after it)")


def _print_summary(ds: Any, learner: str, result: Any, scale: bool, scale_target: bool,
                   output: Path | None, plot: Path | None) -> None:
    final = result.final
    scaled = ("features standardised online" if scale else "features raw") + (
        ("; targets standardised online" if scale_target else "; targets raw")
        if ds.task == "regression" else "")
    lines = [
        ("dataset", f"{ds.name} ({result.n_samples} samples, d={ds.d}, {ds.task})"),
        ("learner", f"{learner} ({result.meta['model']})"),
        *((("leader", result.meta["leader"]),) if "leader" in result.meta else ()),
        ("scaling", scaled),
        *((m, _fmt(final[m])) for m in result.metrics),
        ("cum. loss", _fmt(final["cumulative_loss"]) + _first_loss_note(result)),
        ("dictionary", _fmt(final["dictionary_size"], 12).removesuffix(".0")),
        ("time", f"{final['elapsed_s']:.2f} s "
                 f"({1e6 * final['elapsed_s'] / max(result.n_samples, 1):.1f} us/sample)"),
        ("memory", _bytes(final["memory_bytes"]) + " (learner arrays in use)"),
    ]
    if output is not None:
        lines.append(("output", str(output)))
    if plot is not None:
        lines.append(("plot", str(plot)))
    for key, value in lines:
        typer.echo(f"{key:<11} {value}")


# -- commands -------------------------------------------------------------------------------------


@app.command()
def replay(
    dataset: str = typer.Argument(..., metavar="DATASET",
                                  help="a built-in dataset name (see `okoco datasets`) or a "
                                  "file: .csv/.tsv, svmlight/LIBSVM, .mat"),
    learner: str = typer.Option(None, "--learner", "-l", metavar="NAME", show_default=False,
                                help=_LEARNER_HELP + _DEFAULT_LEARNER_HELP),
    loss: str = _LOSS,
    kernel: str = _KERNEL,
    gamma: float = _GAMMA,
    degree: int = _DEGREE,
    coef0: float = _COEF0,
    normalize: bool = _NORMALIZE,
    C: float = typer.Option(3.0, "--C", help="predictions are clipped to [-C, C] (3 standard "
                            "deviations once targets are standardised)"),
    param: list[str] = typer.Option([], "--param", "-p", metavar="KEY=VALUE",
                                    help="other learner parameter, key=value, repeatable: "
                                    "-p alpha=0.1 -p eta=sqrt"),
    data_param: list[str] = _DATA_PARAM,
    target: str = _TARGET,
    metric: list[str] = _METRIC,
    seed: int = typer.Option(0, "--seed", "-s", help="seed of the learner (if it has one), "
                             "of synthetic data and of --shuffle (as compare's first run)"),
    shuffle: bool = typer.Option(False, "--shuffle", help="replay the samples in a random order"),
    max_samples: int = _MAX_SAMPLES,
    checkpoints: int = _CHECKPOINTS,
    scale: bool = _SCALE,
    scale_target: bool = _SCALE_TARGET,
    output: Path = typer.Option(None, "--output", "-o", help="save the curves: run.json or "
                                "run.csv (written to a temporary file, then renamed)"),
    plot: Path = typer.Option(None, "--plot", help="save a plot: run.png, .pdf or .svg"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar, no notes, no "
                               "summary (errors only)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
    checkpoint: Path = typer.Option(None, "--checkpoint", rich_help_panel="Checkpoints",
                                    help="checkpoint file (.npz: model, metrics, progress) "
                                    "[default: OUTPUT with suffix .ckpt.npz]"),
    checkpoint_every: int = typer.Option(None, "--checkpoint-every", metavar="N",
                                         rich_help_panel="Checkpoints", help="write the "
                                         "checkpoint every N samples (atomically) and at the "
                                         "end"),
    resume: bool = typer.Option(False, "--resume", rich_help_panel="Checkpoints",
                                help="continue from the checkpoint if it exists: no sample "
                                "is learned twice or skipped"),
) -> None:
    """Replay DATASET through a learner, test-then-train, and print a summary.

    Each sample is predicted, scored, then learned (progressive validation, as river's
    progressive_val_score). Features are standardised online by default (--no-scale to turn
    off) and, for regression, targets too (--no-scale-target); binary tasks go through
    BinaryClassifier with the logistic loss.

    Example: okoco replay trump-approval -l kons -p alpha=0.5 --output run.json
    \f
    Examples
    --------
    >>> from typer.testing import CliRunner
    >>> result = CliRunner().invoke(app, ["replay", "sinc", "-l", "fgd", "-d", "n=200"])
    >>> print(result.output)
    dataset     sinc (200 samples, d=1, regression)
    learner     fgd (FunctionalGD())
    scaling     features standardised online; targets standardised online
    MAE         ...
    """

    def body() -> None:
        name = resolve("learner", learner or DEFAULT_LEARNER, learner_registry())
        spec = _spec(dataset, name, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
                     normalize=normalize, loss=loss, C=C, params=_pairs(param, "parameter"),
                     metric=metric, max_samples=max_samples, checkpoints=checkpoints,
                     scale=scale, scale_target=scale_target, seed=seed, shuffle=shuffle,
                     target=target, data_params=_pairs(data_param, "dataset parameter"))
        out_kind = _output_kind(output, ("json", "csv"), "--output")
        _output_kind(plot, ("png", "pdf", "svg"), "--plot")
        ds = load_dataset(dataset, target=target, data_params=dict(spec.data_params), seed=seed,
                          shuffle=shuffle)
        _note_dropped_columns(ds, quiet or as_json)
        ckpt = _checkpoint_path(checkpoint, checkpoint_every, resume, output)
        n = len(ds) if max_samples is None else min(len(ds), max_samples)
        if not (quiet or as_json):
            _warn_long_stream(name, spec.params, n)
            _warn_empty_sketch(name, spec.params)
        progress = _progress(quiet) and not as_json
        interrupted = False

        def resuming(done: int) -> None:  # said once the checkpoint is found to fit this run
            if not (quiet or as_json):
                typer.echo(f"resuming from {ckpt} ({done} samples done)", err=True)

        files = None if ckpt is None else Checkpoint(ckpt, checkpoint_every, resume, resuming)
        try:
            result = run(spec, files, data=ds, progress=progress)
        except KeyboardInterrupt as stop:
            # okoco.evaluate.replay attaches the curves up to the last sample it finished.
            result = getattr(stop, "result", None)
            if result is None:
                raise
            typer.echo(f"interrupted after {result.n_samples:,} of {n:,} samples"
                       + ("" if quiet else "; the summary so far:"), err=True)
            interrupted = True
        if out_kind == "json":
            result.to_json(output)
        elif out_kind == "csv":
            result.to_csv(output)
        if plot is not None:
            result.plot(plot, label=name)
        if as_json:
            _print_json_summary(ds, name, result, output, plot, interrupted)
        elif not quiet:
            _print_summary(ds, name, result, scale, scale_target, output, plot)
        if interrupted:
            raise typer.Exit(code=130)

    _guard(body)


@app.command()
def compare(
    dataset: str = typer.Argument(..., metavar="DATASET",
                                  help="a built-in dataset name or a file"),
    learner: list[str] = typer.Option(["fgd", "kons"], "--learner", "-l", metavar="NAME",
                                      help=_LEARNER_HELP + "; repeatable"),
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
    shuffle: bool = typer.Option(False, "--shuffle", help="each seed replays its own order"),
    max_samples: int = _MAX_SAMPLES,
    checkpoints: int = _CHECKPOINTS,
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
            raise UserError(f"--seeds must be >= 1, got {seeds}")
        registry = learner_registry()
        names = [resolve("learner", name, registry) for name in learner]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice and not (quiet or as_json):
            typer.echo(f"note: -l {twice[0]} is given more than once; each learner runs once "
                       "(use --seeds N for repeated runs)", err=True)
        chosen = list(dict.fromkeys(names))
        shared = _pairs(param, "parameter")
        dparams = _pairs(data_param, "dataset parameter")
        base = _spec(dataset, chosen[0], kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
                     normalize=normalize, loss=loss, C=C, params={}, metric=metric,
                     max_samples=max_samples, checkpoints=checkpoints, scale=scale,
                     scale_target=scale_target, seed=0, shuffle=shuffle, target=target,
                     data_params=dparams)
        out_kind = _output_kind(output, ("json", "csv"), "--output")
        _output_kind(plot, ("png", "pdf", "svg"), "--plot")
        runs: dict[str, list] = {name: [] for name in chosen}
        failed = 0
        if scheduler is not None or workers is not None:
            runs, failed = _compare_on_dask(base, chosen, seeds, shared, scheduler or "local",
                                            workers, progress=not quiet and not as_json)
        else:
            for seed in range(seeds):
                ds = load_dataset(dataset, target=target, data_params=dparams, seed=seed,
                                  shuffle=shuffle)
                for name in chosen:
                    accepted = _parameters(registry[name])
                    spec = dataclasses.replace(
                        base, learner=name, seed=seed,
                        params={k: v for k, v in shared.items() if k in accepted})
                    result = run(spec, data=ds, progress=_progress(quiet) and not as_json)
                    runs[name].append(result)
        unused = [k for k in shared if not any(k in _parameters(registry[n]) for n in chosen)]
        if unused:
            raise UserError(f"no learner takes parameter {unused[0]!r}")
        main = next(rs for rs in runs.values() if rs)[0].metrics[0]
        cols = [main, "cumulative_loss", "regret", "us_per_sample", "dictionary_size",
                "memory_bytes"]
        table = []
        for name, rs in runs.items():
            row: dict[str, Any] = {"learner": name, "runs": len(rs)}
            for col in cols:
                values = np.array([r.final.get(col, math.nan) for r in rs], dtype=float)
                ok = values[np.isfinite(values)]
                row[col] = {"mean": float(ok.mean()) if ok.size else math.nan,
                            "std": float(ok.std()) if ok.size else math.nan}
            table.append(row)
        if out_kind == "json":
            doc = {"dataset": dataset, "metric": main, "seeds": seeds, "summary": table,
                   "runs": {n: [r.to_dict() for r in rs] for n, rs in runs.items()}}
            text = json.dumps(to_json_ready(doc), indent=2, allow_nan=False)
            atomic_write(output, lambda f: f.write(text + "\n"))
        elif out_kind == "csv":
            import csv

            def write(f) -> None:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["learner", "seed", "n_samples", *cols])
                for n, rs in runs.items():
                    for seed, r in enumerate(rs):
                        w.writerow([n, r.meta.get("seed", seed), r.n_samples,
                                    *("" if not np.isfinite(r.final.get(c, math.nan)) else
                                      r.final[c] for c in cols)])

            atomic_write(output, write)
        if plot is not None:
            plot_runs(runs, plot)
        if as_json:
            typer.echo(json.dumps(to_json_ready({"dataset": dataset, "metric": main, "seeds": seeds,
                                          "summary": table})))
        else:
            _print_table(table, cols, quiet)
        if failed:
            raise typer.Exit(code=1)

    _guard(body)


def _compare_on_dask(base: Any, learner: list[str], seeds: int, shared: dict[str, Any],
                     scheduler: str, workers: int | None,
                     progress: bool) -> tuple[dict[str, list], int]:
    """``compare``'s runs as an okoco.distributed grid; failed runs are reported on stderr."""
    # deferred: okoco.distributed imports Dask, an optional dependency slow to import
    from okoco import distributed

    kernel = _kernel(base.kernel, base.gamma, base.degree, base.coef0, base.normalize)
    try:
        res = distributed.grid(
            learner, [(base.dataset, dict(base.data_params))], params=[shared], seeds=seeds,
            kernel=kernel, loss=base.loss, C=base.C, metrics=list(base.metrics),
            max_samples=base.max_samples, checkpoints=base.checkpoints, scale=base.scale,
            scale_target=base.scale_target, shuffle=base.shuffle, target=base.target,
            scheduler=scheduler, workers=workers, progress=progress)
    except (ImportError, ConnectionError) as error:
        raise UserError(str(error)) from None
    if not res.ok:
        raise UserError(res.failed[0]["error"])
    for task, record in zip(res.tasks, res.records):
        if record["status"] != "ok":
            typer.echo(f"failed: {task.label()}: {record['error']}", err=True)
    runs: dict[str, list] = {}
    for task, result in zip(res.tasks, res.results):
        if result is not None:
            runs.setdefault(task.learner, []).append(result)
    return runs, len(res.failed)


def _print_table(table: list[dict], cols: list[str], quiet: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    heads = {"cumulative_loss": "cum. loss", "us_per_sample": "µs/sample",
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


@app.command("datasets")
def datasets_cmd(
    as_json: bool = typer.Option(False, "--json", help="print JSON on stdout"),
) -> None:
    """List the built-in datasets: name, samples, features, task, description.

    Synthetic generators show their default sizes (change them with -d n=..., -d d=...); files
    (CSV, svmlight/LIBSVM, .mat) are given by path instead of a name.
    \f
    Examples
    --------
    >>> import json
    >>> from typer.testing import CliRunner
    >>> rows = json.loads(CliRunner().invoke(app, ["datasets", "--json"]).output)
    >>> next(r for r in rows if r["name"] == "bananas")["task"]
    'binary'
    """
    _load_api()
    rows = datasets.available()
    if as_json:
        typer.echo(json.dumps([r._asdict() for r in rows]))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(header_style="bold", box=None)
    for name, justify in (("name", "left"), ("n", "right"), ("d", "right"), ("task", "left"),
                          ("description", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(r.name, _fmt(r.n), _fmt(r.d), r.task, r.description)
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


#: The tasks ``okoco learners`` shows the model of, as ``replay`` builds it for each.
_TASKS = ("regression", "binary", "multiclass")


def _runs(name: str) -> dict[str, str]:
    """What ``replay -l NAME`` builds for each task, at the CLI's defaults (no -p)."""
    out = {}
    for task in _TASKS:
        try:
            _, core = build_model(name, task, loss=None, kernel=_kernel("rbf"), C=3.0, params={},
                                  seed=0, scale=False, scale_target=False)
        except UserError as error:
            out[task] = f"not available: {error}"
            continue
        out[task] = describe(core)
    return out


def _learner_rows() -> list[dict[str, Any]]:
    rows = []
    for name, cls in learner_registry().items():
        doc = _summary(inspect.getdoc(cls) or "")
        params = {k: (None if p.default is inspect.Parameter.empty else p.default)
                  for k, p in _parameters(cls).items()}
        rows.append({"name": name, "default": name == DEFAULT_LEARNER,
                     "class": f"{cls.__module__}.{cls.__qualname__}", "summary": doc,
                     "runs": _runs(name), "parameters": params})
    return rows


@app.command("learners")
def learners_cmd(
    as_json: bool = typer.Option(False, "--json", help="print JSON on stdout"),
) -> None:
    """List the learners with their parameters and defaults (set them with -p key=value).

    kernel, loss and C have their own options (--kernel, --loss, --C); in the CLI C defaults
    to 3.0 and binary tasks use the logistic loss unless --loss is given.
    \f
    Examples
    --------
    >>> from typer.testing import CliRunner
    >>> print(CliRunner().invoke(app, ["learners"]).output)
    auto (default) okoco.learners.auto.Auto: Online self-tuning: ...
                    regression: Auto()
                    binary:     BinaryClassifier(Auto(loss=Logistic()))
    ...
    """
    _load_api()
    rows = _learner_rows()
    if as_json:
        typer.echo(json.dumps(to_json_ready(rows)))
        return
    for row in rows:
        name = row["name"] + (" (default)" if row["default"] else "")
        typer.echo(f"{name:<14} {row['class']}: {row['summary']}")
        for task, model in row["runs"].items():
            typer.echo(f"{'':<16}{task + ':':<12}{model}")
        typer.echo(f"{'':<16}parameters (defaults; -p key=value):")
        for key, default in row["parameters"].items():
            typer.echo(f"{'':<18}{key} = {default!r}")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"okoco {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="print the okoco version and exit"),
) -> None:
    """okoco: online learning with kernels and convex losses.

    Start with `okoco datasets`, `okoco learners` and `okoco replay trump-approval`; every
    command has --help.
    \f
    Examples
    --------
    >>> from typer.testing import CliRunner
    >>> "replay" in CliRunner().invoke(app, ["--help"]).output
    True
    >>> CliRunner().invoke(app, ["--version"]).output.split()[0]
    'okoco'
    """


if __name__ == "__main__":
    app()
