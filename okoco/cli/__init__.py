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
import math
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

from okoco._version import __version__
from okoco.cli._defaults import DEFAULT_LEARNER
from okoco.cli._options import (
    _CHECKPOINTS,
    _COEF0,
    _DATA_PARAM,
    _DEFAULT_LEARNER_HELP,
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
from okoco.cli._report import _print_json_summary, _print_summary

# Start-up: `okoco --help` and `okoco --version` must answer at once (well under half a
# second), but the modules that run experiments import scipy and river (about a second of
# imports, most of it river's own). So the names in _API are bound on first use by _load_api(),
# which every command calls first; this is deferral of heavy dependencies, not a layering cycle
# (cli sits above all of these modules). `from okoco.cli import learner_registry` still works
# (module __getattr__).
_API = ("datasets", "DownloadError", "atomic_write", "to_json_ready", "plot_runs",
        "KERNELS", "LOSSES", "METRICS", "REGRESSION_METRICS", "UserError", "build_model",
        "describe", "learner_registry", "load_dataset", "_kernel", "_metrics", "_parameters",
        "_note_leader", "read_metadata", "resolve", "RunSpec", "Checkpoint", "run",
        "name_key", "text_encoding", "MAX_ONE_HOT", "ReplayResult", "check_pos_label")


def _load_api() -> None:
    global datasets, DownloadError, atomic_write, to_json_ready, plot_runs
    global KERNELS, LOSSES, METRICS, REGRESSION_METRICS, UserError, build_model, describe
    global learner_registry, load_dataset, _kernel, _metrics, _parameters
    global read_metadata, _note_leader, resolve, RunSpec, Checkpoint, run, name_key
    global text_encoding, MAX_ONE_HOT, ReplayResult, check_pos_label
    if "UserError" in globals():  # bound already (and maybe replaced by a test's monkeypatch)
        return
    # deferred: scipy and river take about a second to import (see the note above _API)
    from okoco import _io, datasets, evaluate, experiment, persistence, preprocessing

    DownloadError = datasets.DownloadError
    atomic_write, to_json_ready = _io.atomic_write, _io.to_json_ready
    plot_runs, ReplayResult = evaluate.plot_runs, evaluate.ReplayResult
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
    name_key = experiment.name_key
    text_encoding, MAX_ONE_HOT = experiment.text_encoding, preprocessing.MAX_ONE_HOT
    check_pos_label = experiment.check_pos_label


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


#: The parameters that bound a learner's memory (the points it keeps), what to suggest when
#: one is set to None (no bound), and the learners whose memory is bounded by none.
GROWTH_BOUNDS = ("max_size", "budget")
#: A stream is long from this many samples on: an unbounded KONS then holds a (t x t) factor
#: of 100 MB.
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


def _guard(body: Callable[[], None], quiet: bool = False) -> None:
    """Run a command body; user errors become one line on stderr and exit code 2. ``quiet``
    (-q: errors only) silences the learners' warnings too."""
    try:
        _load_api()  # a second of imports: a Ctrl-C there is reported as any other
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore", UserWarning)
            body()
    # first: the names below are bound by _load_api, which a Ctrl-C may have stopped
    except KeyboardInterrupt:  # Ctrl-C outside a replay (loading, writing): nothing to report
        typer.echo("interrupted", err=True)
        raise typer.Exit(code=130) from None
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


def _progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _spec(dataset: str, learner: str, *, kernel: str, gamma: float | None, degree: int | None,
          coef0: float | None, normalize: bool, loss: str | None, C: float,
          params: dict[str, Any], metric: list[str], max_samples: int | None, checkpoints: int,
          scale: bool, scale_target: bool, seed: int | None, shuffle: bool,
          target: str | None, data_params: dict[str, Any], interval: float | None = None,
          pos_label: str | None = None):
    """The run the options describe (a :class:`okoco.experiment.RunSpec`), the options named as
    the user typed them when one is wrong."""
    if not (math.isfinite(C) and C > 0):
        raise UserError(f"--C must be finite and > 0, got {C}")
    if max_samples is not None and max_samples < 1:
        raise UserError(f"--max-samples must be >= 1, got {max_samples}")
    if checkpoints < 1:
        raise UserError(f"--checkpoints must be >= 1, got {checkpoints}")
    if interval is not None and not 0.0 < interval < 1.0:
        raise UserError(f"--interval is a coverage in (0, 1), such as 0.9; got {interval}")
    return RunSpec(dataset, learner, params=params, kernel=(kernel or "rbf").lower(), gamma=gamma,
                   degree=degree, coef0=coef0, normalize=normalize,
                   loss=None if loss is None else loss.lower(), C=C, metrics=tuple(metric),
                   max_samples=max_samples, checkpoints=checkpoints, scale=scale,
                   scale_target=scale_target, seed=seed, shuffle=shuffle, target=target,
                   data_params=data_params, interval=interval, pos_label=pos_label)


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


def _growth(learner: str, params: dict[str, Any]) -> str | None:
    """The bounding parameter left at None (no bound) by the learner as configured: its
    default merged with ``-p``; ``None`` when the learner's memory is bounded."""
    accepted = _parameters(learner_registry()[learner])
    for bound in GROWTH_BOUNDS:
        if bound in accepted and params.get(bound, accepted[bound].default) is None:
            return bound
    return None


def _warn_long_stream(learner: str, params: dict[str, Any], n: int | None) -> None:
    """Say once, before a long replay of a learner configured to keep every sample, what
    bounds it (learners bounded by default are not named)."""
    bound = _growth(learner, params)
    if bound is None or n is None or n < LONG_STREAM:
        return
    default = _parameters(learner_registry()[learner])[bound].default
    cure = f"-p {bound}={default}" if default is not None else f"-p {bound}=500"
    typer.echo(f"note: {learner} with {bound}=None keeps every sample, so its cost per step "
               f"and memory grow with t ({n:,} samples here); for a bounded cost use {cure}",
               err=True)


def _warn_empty_sketch(learner: str, params: dict[str, Any]) -> None:
    """Sketched-KONS with beta = p_min = 0 samples no point: its preconditioner stays alpha I."""
    if learner == "sketched-kons" and params.get("beta", 1) == 0 and not params.get("p_min"):
        typer.echo("note: sketched-kons with beta=0 and p_min=0 keeps no point in its sketch (an "
                   "empty dictionary): it is then kernel gradient descent with step 1/alpha; "
                   "use beta > 0 (default 10) or p_min > 0", err=True)


def _intervals_fit(interval: float | None, ds: Any) -> None:
    if interval is not None and ds.task != "regression":
        raise UserError(f"--interval needs a regression dataset; {ds.name!r} is a {ds.task} "
                        "task (for classifiers use --metric logloss)")


def _note_columns(ds: Any, quiet: bool) -> None:
    """Say what happened to a CSV's columns and cells: dropped, encoded, absent."""
    info = getattr(ds, "info", None)
    if quiet or not isinstance(info, dict):
        return
    target = f"the target is {info.get('target')!r} (choose it with -t COLUMN)"
    dropped = info.get("dropped_columns")
    if dropped:
        typer.echo(f"note: dropped non-numeric columns {', '.join(map(repr, dropped))}; "
                   f"{target}", err=True)
    text = info.get("text_columns")
    if text:
        one_hot, hashed = text_encoding(text)
        parts = ([f"one-hot {', '.join(map(repr, one_hot))}"] if one_hot else []) + (
            [f"hashed {', '.join(map(repr, hashed))} (more than {MAX_ONE_HOT} values)"]
            if hashed else [])
        typer.echo(f"note: text columns encoded: {'; '.join(parts)}; {target}", err=True)
        n = getattr(ds, "n", None) or 0
        ids = [c for c, k in text.items() if n >= 20 and k >= 0.9 * n]
        if ids:
            typer.echo(f"note: {', '.join(map(repr, ids))} {'has' if len(ids) == 1 else 'have'} "
                       "a different value on almost every row, as an identifier: encoded, it "
                       "only adds noise; leave it out of the file", err=True)
    absent = info.get("n_absent_cells")
    if absent:
        typer.echo(f"note: {absent:,} missing cells are left out of their samples (0 after "
                   "scaling: the column's running mean; -d na=drop skips their rows, -d "
                   "na=error refuses them)", err=True)


def _refuse_unused(learners: Sequence[str], kernel_options: dict[str, Any]) -> None:
    """Refuse kernel options when no learner run takes a kernel (Auto picks its own)."""
    given = [flag for flag, value in kernel_options.items() if value not in (None, False)]
    if given and not any("kernel" in _parameters(learner_registry()[name])
                         for name in learners):
        one = len(learners) == 1
        raise UserError(f"{'learner' if one else 'learners'} {', '.join(learners)} "
                        f"{'picks its' if one else 'pick their'} own kernels, so "
                        f"{'/'.join(given)} would have no effect; drop it, or choose a learner "
                        "with a kernel (-l kons, -l fgd, ...)")


def _one_learner(learner: Sequence[str]) -> str:
    """replay's -l: one name (the default learner when none is given); twice is refused."""
    if len(learner) > 1:
        raise UserError(f"replay runs one learner, but -l is given {len(learner)} times "
                        f"({', '.join(learner)}); to run several: okoco compare "
                        + " ".join(f"-l {name}" for name in learner))
    return resolve("learner", learner[0] if learner else DEFAULT_LEARNER, learner_registry())


def _empty_result(spec: Any, ds: Any, learner: str):
    """The result of a run stopped before its first sample: no rows, its metrics named."""
    metrics = [type(m).__name__ for m in _metrics(list(spec.metrics), ds.task)]
    return ReplayResult({"t": [], **{m: [] for m in metrics}}, metrics,
                        {"dataset": ds.name, "learner": learner, "model": learner,
                         "interrupted": True})


# -- commands -------------------------------------------------------------------------------------


@app.command(short_help="Replay a dataset through one learner, test-then-train.")
def replay(
    dataset: str = typer.Argument(..., metavar="DATASET",
                                  help="a built-in dataset name (see `okoco datasets`) or a "
                                  "file: .csv/.tsv, svmlight/LIBSVM, .mat"),
    learner: list[str] = typer.Option([], "--learner", "-l", metavar="NAME",
                                      show_default=False,
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
    pos_label: str = _POS_LABEL,
    seed: int = typer.Option(0, "--seed", "-s", help="seed of the learner (if it has one), "
                             "of synthetic data and of --shuffle (as compare's first run)"),
    shuffle: bool = typer.Option(False, "--shuffle", help="replay the samples in a random order"),
    max_samples: int = _MAX_SAMPLES,
    checkpoints: int = _CHECKPOINTS,
    scale: bool = _SCALE,
    scale_target: bool = _SCALE_TARGET,
    interval: float = _INTERVAL,
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
    BinaryClassifier with the logistic loss. A CSV's text columns are one-hot encoded (hashed
    above 64 values), its missing cells left out of their samples (-d non_numeric=..., -d
    na=...); binary labels become True, the positive class (--pos-label), and False.

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
        name = _one_learner(learner)
        _refuse_unused([name], {"-k": kernel, "--gamma": gamma, "--degree": degree,
                                "--coef0": coef0, "--normalize": normalize})
        spec = _spec(dataset, name, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
                     normalize=normalize, loss=loss, C=C, params=_pairs(param, "parameter"),
                     metric=metric, max_samples=max_samples, checkpoints=checkpoints,
                     scale=scale, scale_target=scale_target, seed=seed, shuffle=shuffle,
                     target=target, data_params=_pairs(data_param, "dataset parameter"),
                     interval=interval, pos_label=pos_label)
        out_kind = _output_kind(output, ("json", "csv"), "--output")
        _output_kind(plot, ("png", "pdf", "svg"), "--plot")
        ds = load_dataset(dataset, target=target, data_params=dict(spec.data_params), seed=seed,
                          shuffle=shuffle)
        _intervals_fit(interval, ds)
        check_pos_label(ds, pos_label)
        ckpt = _checkpoint_path(checkpoint, checkpoint_every, resume, output)
        _note_columns(ds, quiet or as_json)
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
            if result is None:  # before the replay began: an empty summary
                result = _empty_result(spec, ds, name)
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

    _guard(body, quiet or as_json)


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


# The other commands register themselves on ``app`` when imported (after everything above).
from okoco.cli import _compare, _listing  # noqa: E402, F401
