"""The ``okoco`` command line: replay datasets through kernel learners, test-then-train.

Commands: ``replay`` (one learner), ``compare`` (several learners over seeds), ``datasets`` and
``learners`` (what is available). Every user error prints one line ``error: ...`` on stderr and
exits with code 2.

Examples
--------
>>> from typer.testing import CliRunner
>>> out = CliRunner().invoke(app, ["replay", "sinc", "-d", "n=50", "--quiet"])
>>> out.exit_code, out.stdout.splitlines()[0]
(0, 'dataset     sinc (50 samples, d=1, regression)')
"""

# typer declares options as argument defaults (typer.Option(...)), hence B008 is off here.
# ruff: noqa: B008

from __future__ import annotations

import ast
import inspect
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="okoco: online learning with kernels and convex losses.",
                  pretty_exceptions_enable=False)


class UserError(Exception):
    """A mistake in the command line or the data: reported in one line, exit code 2."""


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


# -- registries -----------------------------------------------------------------------------------


def learner_registry() -> dict[str, type]:
    """CLI name -> learner class; ``krls`` appears once ``okoco.learners`` provides ``KRLS``.

    Examples
    --------
    >>> sorted(learner_registry())[:3]
    ['fgd', 'kons', ...]
    """
    from okoco import learners

    names = {"fgd": "FunctionalGD", "kons": "KONS", "sketched-kons": "SketchedKONS",
             "krls": "KRLS"}
    return {k: getattr(learners, v) for k, v in names.items() if hasattr(learners, v)}


KERNELS = {"rbf": "RBF", "laplacian": "Laplacian", "polynomial": "Polynomial", "linear": "Linear"}
LOSSES = {"squared": "Squared", "logistic": "Logistic", "squared-hinge": "SquaredHinge"}
METRICS = {"mae": "MAE", "mse": "MSE", "rmse": "RMSE", "r2": "R2", "accuracy": "Accuracy",
           "f1": "F1", "logloss": "LogLoss", "rocauc": "ROCAUC"}
REGRESSION_METRICS = {"mae", "mse", "rmse", "r2"}


def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    return {k: p for k, p in inspect.signature(cls.__init__).parameters.items()
            if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


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


# -- building ------------------------------------------------------------------------------------


def _kernel(name: str, gamma: float | None, degree: int | None, coef0: float | None,
            normalize: bool):
    from okoco import kernels

    if name not in KERNELS:
        raise UserError(f"unknown kernel {name!r}; choose from {', '.join(KERNELS)}")
    cls = getattr(kernels, KERNELS[name])
    accepted = _parameters(cls)
    given = {"gamma": gamma, "degree": degree, "coef0": coef0}
    kwargs = {k: v for k, v in given.items() if v is not None}
    for key in kwargs:
        if key not in accepted:
            raise UserError(f"kernel {name!r} takes no --{key}")
    if normalize:
        if "normalize" not in accepted:
            raise UserError(f"kernel {name!r} has no normalize option")
        kwargs["normalize"] = True
    return cls(**kwargs)


def build_model(name: str, task: str, *, loss: str | None, kernel: Any, C: float,
                params: dict[str, Any], seed: int | None, scale: bool, scale_target: bool):
    """The model the CLI replays: [TargetStandardScaler]( [StandardScaler |] learner ).

    Binary tasks wrap the learner in :class:`okoco.BinaryClassifier` (default loss logistic).
    """
    from river import preprocessing

    from okoco import BinaryClassifier, losses

    registry = learner_registry()
    if name not in registry:
        raise UserError(f"unknown learner {name!r}; choose from {', '.join(registry)}")
    if task == "multiclass":
        raise UserError("okoco learners handle regression and binary tasks; this dataset is "
                        "multiclass")
    cls = registry[name]
    accepted = _parameters(cls)
    for key in params:
        if key in ("kernel", "loss", "C"):
            flag = {"kernel": "--kernel", "loss": "--loss", "C": "--C"}[key]
            raise UserError(f"set {key} with {flag}, not -p")
        if key not in accepted:
            raise UserError(f"learner {name!r} has no parameter {key!r}; it takes "
                            f"{', '.join(k for k in accepted if k not in ('kernel', 'loss'))}")
    kwargs = dict(params)
    if "kernel" in accepted:
        kwargs["kernel"] = kernel
    kwargs["C"] = C
    if loss is None:
        loss = "logistic" if task == "binary" and "loss" in accepted else None
    if loss is not None:
        if loss not in LOSSES:
            raise UserError(f"unknown loss {loss!r}; choose from {', '.join(LOSSES)}")
        if "loss" not in accepted:
            raise UserError(f"learner {name!r} takes no loss (it is squared-loss only)")
        if task == "regression" and loss != "squared":
            raise UserError(f"loss {loss!r} needs two class labels, but this dataset is a "
                            "regression task; use --loss squared")
        kwargs["loss"] = getattr(losses, LOSSES[loss])()
    if seed is not None and "seed" in accepted and "seed" not in kwargs:
        kwargs["seed"] = seed
    try:
        learner = cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise UserError(f"learner {name!r}: {error}") from None
    if task == "binary":
        learner = BinaryClassifier(learner)
    model = preprocessing.StandardScaler() | learner if scale else learner
    if task == "regression" and scale_target:
        model = preprocessing.TargetStandardScaler(model)
    return model, learner


def load_dataset(dataset: str, *, target: str | None, data_params: dict[str, Any],
                 seed: int | None, shuffle: bool):
    """Load DATASET (name or path) with the CLI's options; shuffle the order with ``seed``."""
    import numpy as np

    from okoco import datasets

    kwargs = dict(data_params)
    if target is not None:
        kwargs["target"] = int(target) if target.lstrip("-").isdigit() else target
    key = dataset.strip().lower().replace("_", "-")
    if key in datasets.SYNTHETIC and seed is not None and "seed" not in kwargs:
        if "seed" in inspect.signature(datasets.SYNTHETIC[key][0]).parameters:
            kwargs["seed"] = seed
    is_file = key not in {r.name for r in datasets.available()}
    if target is not None and not is_file:
        raise UserError(f"--target applies to CSV files, not to the built-in {dataset!r}")
    ds = datasets.load(dataset, **kwargs)
    if shuffle:
        X, y, names = ds.to_arrays(sparse=getattr(ds, "is_sparse", False))
        order = np.random.default_rng(seed).permutation(X.shape[0])
        ds = datasets.Dataset(ds.name, ds.task, X=X[order], y=y[order], feature_names=names,
                              description=ds.description)
    return ds


def _metrics(names: Sequence[str], task: str) -> list:
    from river import metrics

    if not names:
        names = ["mae"] if task == "regression" else ["accuracy"]
    out = []
    for name in names:
        key = name.lower()
        if key not in METRICS:
            raise UserError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")
        if (key in REGRESSION_METRICS) != (task == "regression"):
            raise UserError(f"metric {name!r} does not fit a {task} task")
        out.append(getattr(metrics, METRICS[key])())
    return out


# -- running --------------------------------------------------------------------------------------


def _output_kind(path: Path | None, allowed: tuple[str, ...], what: str) -> str | None:
    if path is None:
        return None
    kind = path.suffix.lower().lstrip(".")
    if kind not in allowed:
        raise UserError(f"{what} {str(path)!r} must end in {' or '.join('.' + a for a in allowed)}")
    if not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise UserError(f"cannot write {str(path)!r}: no such directory")
    return kind


def _guard(body: Callable[[], None]) -> None:
    """Run a command body; user errors become one line on stderr and exit code 2."""
    from okoco.datasets import DownloadError

    try:
        body()
    except UserError as error:
        _fail(str(error))
    except (FileNotFoundError, DownloadError) as error:
        _fail(str(error))
    except (ValueError, TypeError, KeyError) as error:
        message = str(error).strip("'\"") or type(error).__name__
        _fail(message.splitlines()[0])
    except OSError as error:
        _fail(f"{error.strerror or error}: {getattr(error, 'filename', '') or ''}".rstrip(": "))


def _progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _run_one(dataset, learner: str, *, options: dict[str, Any], seed: int | None,
             progress: bool, label: str | None = None):
    from okoco.evaluate import replay

    kernel = _kernel(options["kernel"], options["gamma"], options["degree"], options["coef0"],
                     options["normalize"])
    model, core = build_model(learner, dataset.task, loss=options["loss"], kernel=kernel,
                           C=options["C"], params=options["params"], seed=seed,
                           scale=options["scale"], scale_target=options["scale_target"])
    meta = {"dataset": dataset.name, "task": dataset.task, "d": dataset.d,
            "learner": learner, "model": describe(core), "seed": seed,
            "scale_features": options["scale"],
            "scale_target": options["scale_target"] and dataset.task == "regression"}
    return replay(model, dataset, metrics=_metrics(options["metric"], dataset.task),
                  checkpoints=options["checkpoints"], progress=progress,
                  max_samples=options["max_samples"], meta=meta)


def describe(learner: Any) -> str:
    """A one-line constructor call showing the parameters that differ from the defaults.

    Examples
    --------
    >>> from okoco.learners import FunctionalGD
    >>> describe(FunctionalGD(C=3.0, eta=0.2))
    'FunctionalGD(C=3.0, eta=0.2)'
    """
    inner = getattr(learner, "learner", None)
    if inner is not None and not isinstance(inner, str):
        return f"{type(learner).__name__}({describe(inner)})"
    parts = []
    for key, p in _parameters(type(learner)).items():
        value = getattr(learner, key, p.default)
        if p.default is inspect.Parameter.empty or value is not p.default and value != p.default:
            parts.append(f"{key}={value!r}")
    return f"{type(learner).__name__}({', '.join(parts)})"


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

_LEARNER_HELP = "learner: " + ", ".join(["fgd", "kons", "sketched-kons", "krls"])
_SCALE_HELP = ("standardise features online (river StandardScaler, running mean and variance; "
               "each sample is scaled before the learner sees it)")
_SCALE_TARGET_HELP = ("regression: standardise targets online (river TargetStandardScaler); "
                      "metrics are still reported on the original scale")


def _common_options(kernel: str, gamma: float | None, degree: int | None, coef0: float | None,
                    normalize: bool, loss: str | None, C: float, param: list[str],
                    metric: list[str], max_samples: int | None, checkpoints: int,
                    scale: bool, scale_target: bool) -> dict[str, Any]:
    if not (math.isfinite(C) and C > 0):
        raise UserError(f"--C must be finite and > 0, got {C}")
    if max_samples is not None and max_samples < 1:
        raise UserError(f"--max-samples must be >= 1, got {max_samples}")
    if checkpoints < 1:
        raise UserError(f"--checkpoints must be >= 1, got {checkpoints}")
    return {"kernel": kernel.lower(), "gamma": gamma, "degree": degree, "coef0": coef0,
            "normalize": normalize, "loss": None if loss is None else loss.lower(), "C": C,
            "params": _pairs(param, "parameter"), "metric": metric, "max_samples": max_samples,
            "checkpoints": checkpoints, "scale": scale, "scale_target": scale_target}


# -- commands -------------------------------------------------------------------------------------


@app.command()
def replay(
    dataset: str = typer.Argument(..., help="a built-in dataset name (see `okoco datasets`) or a "
                                  "file: .csv/.tsv, svmlight/LIBSVM, .mat"),
    learner: str = typer.Option("kons", "--learner", "-l", help=_LEARNER_HELP),
    loss: str = typer.Option(None, "--loss", help="squared, logistic or squared-hinge "
                             "[default: squared; logistic for binary tasks]"),
    kernel: str = typer.Option("rbf", "--kernel", "-k",
                               help="rbf, laplacian, polynomial or linear"),
    gamma: float = typer.Option(None, "--gamma", help="kernel scale [default: the kernel's, 1.0]"),
    degree: int = typer.Option(None, "--degree", help="polynomial kernel degree [default: 2]"),
    coef0: float = typer.Option(None, "--coef0", help="polynomial kernel offset [default: 1.0]"),
    normalize: bool = typer.Option(False, "--normalize", help="normalise the kernel, k(x,x)=1"),
    C: float = typer.Option(3.0, "--C", help="predictions are clipped to [-C, C] (3 standard "
                            "deviations once targets are standardised)"),
    param: list[str] = typer.Option([], "--param", "-p", help="other learner parameter, "
                                    "key=value, repeatable: -p alpha=0.1 -p eta=sqrt"),
    data_param: list[str] = typer.Option([], "--data-param", "-d", help="dataset parameter, "
                                         "key=value (synthetic: n, noise, ...; CSV: header, "
                                         "delimiter, na=drop, ...)"),
    target: str = typer.Option(None, "--target", "-t",
                               help="CSV target column, by name or index [default: last]"),
    metric: list[str] = typer.Option([], "--metric", "-m", help="mae, mse, rmse, r2, accuracy, "
                                     "f1, logloss, rocauc; repeatable [default: mae; accuracy "
                                     "for binary tasks]"),
    seed: int = typer.Option(None, "--seed", "-s", help="seed of the learner (if it has one), "
                             "of synthetic data and of --shuffle"),
    shuffle: bool = typer.Option(False, "--shuffle", help="replay the samples in a random order"),
    max_samples: int = typer.Option(None, "--max-samples", "-n", help="stop after N samples"),
    checkpoints: int = typer.Option(50, "--checkpoints", help="about this many checkpoints"),
    scale: bool = typer.Option(True, "--scale/--no-scale", help=_SCALE_HELP),
    scale_target: bool = typer.Option(True, "--scale-target/--no-scale-target",
                                      help=_SCALE_TARGET_HELP),
    output: Path = typer.Option(None, "--output", "-o", help="save the curves: run.json or "
                                "run.csv (written to a temporary file, then renamed)"),
    plot: Path = typer.Option(None, "--plot", help="save a plot: run.png, .pdf or .svg"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar, no summary"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
) -> None:
    """Replay DATASET through a learner, test-then-train, and print a summary.

    Each sample is predicted, scored, then learned (progressive validation, as river's
    progressive_val_score). Features are standardised online by default (--no-scale to turn
    off) and, for regression, targets too (--no-scale-target); binary tasks go through
    BinaryClassifier with the logistic loss.

    Example: okoco replay trump-approval -l kons -p alpha=0.5 --output run.json
    """

    def body() -> None:
        options = _common_options(kernel, gamma, degree, coef0, normalize, loss, C, param,
                                  metric, max_samples, checkpoints, scale, scale_target)
        out_kind = _output_kind(output, ("json", "csv"), "--output")
        _output_kind(plot, ("png", "pdf", "svg"), "--plot")
        ds = load_dataset(dataset, target=target, data_params=_pairs(data_param, "dataset "
                          "parameter"), seed=seed, shuffle=shuffle)
        result = _run_one(ds, learner, options=options, seed=seed,
                          progress=_progress(quiet) and not as_json)
        if out_kind == "json":
            result.to_json(output)
        elif out_kind == "csv":
            result.to_csv(output)
        if plot is not None:
            result.plot(plot, label=learner)
        final = result.final
        if as_json:
            summary = {"dataset": ds.name, "task": ds.task, "d": ds.d, "learner": learner,
                       "n_samples": result.n_samples, "metrics": {m: final[m] for m in
                                                                   result.metrics},
                       **{k: final[k] for k in ("cumulative_loss", "regret", "dictionary_size",
                                                "us_per_sample", "elapsed_s", "memory_bytes")},
                       "output": None if output is None else str(output),
                       "plot": None if plot is None else str(plot)}
            from okoco.evaluate import _clean

            typer.echo(json.dumps(_clean(summary)))
            return
        if quiet:
            typer.echo(f"dataset     {ds.name} ({result.n_samples} samples, d={ds.d}, {ds.task})")
            for m in result.metrics:
                typer.echo(f"{m:<11} {_fmt(final[m])}")
            return
        scaled = ("features standardised online" if scale else "features raw") + (
            ("; targets standardised online" if scale_target else "; targets raw")
            if ds.task == "regression" else "")
        lines = [
            ("dataset", f"{ds.name} ({result.n_samples} samples, d={ds.d}, {ds.task})"),
            ("learner", f"{learner} ({result.meta['model']})"),
            ("scaling", scaled),
            *((m, _fmt(final[m])) for m in result.metrics),
            ("cum. loss", _fmt(final["cumulative_loss"])),
            ("dictionary", _fmt(final["dictionary_size"], 12).removesuffix(".0")),
            ("time", f"{final['elapsed_s']:.2f} s "
                     f"({1e6 * final['elapsed_s'] / max(result.n_samples, 1):.1f} us/sample)"),
            ("memory", _bytes(final["memory_bytes"]) + " (learner arrays)"),
        ]
        if output is not None:
            lines.append(("output", str(output)))
        if plot is not None:
            lines.append(("plot", str(plot)))
        for key, value in lines:
            typer.echo(f"{key:<11} {value}")

    _guard(body)


@app.command()
def compare(
    dataset: str = typer.Argument(..., help="a built-in dataset name or a file"),
    learner: list[str] = typer.Option(["fgd", "kons"], "--learner", "-l",
                                      help=_LEARNER_HELP + "; repeatable"),
    seeds: int = typer.Option(1, "--seeds", help="runs per learner, seeds 0..N-1 (learner seed, "
                              "synthetic data seed and --shuffle order)"),
    loss: str = typer.Option(None, "--loss", help="squared, logistic or squared-hinge"),
    kernel: str = typer.Option("rbf", "--kernel", "-k"),
    gamma: float = typer.Option(None, "--gamma"),
    degree: int = typer.Option(None, "--degree"),
    coef0: float = typer.Option(None, "--coef0"),
    normalize: bool = typer.Option(False, "--normalize"),
    C: float = typer.Option(3.0, "--C", help="predictions are clipped to [-C, C]"),
    param: list[str] = typer.Option([], "--param", "-p", help="learner parameter key=value, "
                                    "given to every learner that has it"),
    data_param: list[str] = typer.Option([], "--data-param", "-d"),
    target: str = typer.Option(None, "--target", "-t", help="CSV target column"),
    metric: list[str] = typer.Option([], "--metric", "-m"),
    shuffle: bool = typer.Option(False, "--shuffle", help="each seed replays its own order"),
    max_samples: int = typer.Option(None, "--max-samples", "-n"),
    checkpoints: int = typer.Option(50, "--checkpoints"),
    scale: bool = typer.Option(True, "--scale/--no-scale", help=_SCALE_HELP),
    scale_target: bool = typer.Option(True, "--scale-target/--no-scale-target",
                                      help=_SCALE_TARGET_HELP),
    output: Path = typer.Option(None, "--output", "-o", help="r.json (summary and every run's "
                                "curves) or r.csv (one row per run)"),
    plot: Path = typer.Option(None, "--plot", help="one plot of all learners: .png/.pdf/.svg"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON on stdout"),
) -> None:
    """Compare learners on DATASET over seeds: mean ± std of the final values, one plot.

    Example: okoco compare sinc -l kons -l sketched-kons -l fgd --seeds 3 --output r.json
    """

    def body() -> None:
        import numpy as np

        from okoco.evaluate import _clean, atomic_write, plot_runs

        if seeds < 1:
            raise UserError(f"--seeds must be >= 1, got {seeds}")
        registry = learner_registry()
        for name in learner:
            if name not in registry:
                raise UserError(f"unknown learner {name!r}; choose from {', '.join(registry)}")
        options = _common_options(kernel, gamma, degree, coef0, normalize, loss, C, [],
                                  metric, max_samples, checkpoints, scale, scale_target)
        shared = _pairs(param, "parameter")
        out_kind = _output_kind(output, ("json", "csv"), "--output")
        _output_kind(plot, ("png", "pdf", "svg"), "--plot")
        dparams = _pairs(data_param, "dataset parameter")
        runs: dict[str, list] = {name: [] for name in learner}
        for seed in range(seeds):
            ds = load_dataset(dataset, target=target, data_params=dparams, seed=seed,
                              shuffle=shuffle)
            for name in learner:
                accepted = _parameters(registry[name])
                opts = dict(options, params={k: v for k, v in shared.items() if k in accepted})
                result = _run_one(ds, name, options=opts, seed=seed,
                                  progress=_progress(quiet) and not as_json)
                runs[name].append(result)
        unused = [k for k in shared if not any(k in _parameters(registry[n]) for n in learner)]
        if unused:
            raise UserError(f"no learner takes parameter {unused[0]!r}")
        main = runs[learner[0]][0].metrics[0]
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
            text = json.dumps(_clean(doc), indent=2, allow_nan=False)
            atomic_write(output, lambda f: f.write(text + "\n"))
        elif out_kind == "csv":
            import csv

            def write(f) -> None:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["learner", "seed", "n_samples", *cols])
                for n, rs in runs.items():
                    for seed, r in enumerate(rs):
                        w.writerow([n, seed, r.n_samples,
                                    *("" if not np.isfinite(r.final.get(c, math.nan)) else
                                      r.final[c] for c in cols)])

            atomic_write(output, write)
        if plot is not None:
            plot_runs(runs, plot)
        if as_json:
            typer.echo(json.dumps(_clean({"dataset": dataset, "metric": main, "seeds": seeds,
                                          "summary": table})))
            return
        _print_table(table, cols, quiet)

    _guard(body)


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
    """
    from okoco import datasets

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


def _learner_rows() -> list[dict[str, Any]]:
    rows = []
    for name, cls in learner_registry().items():
        doc = (inspect.getdoc(cls) or "").split("\n")[0]
        params = {k: (None if p.default is inspect.Parameter.empty else p.default)
                  for k, p in _parameters(cls).items()}
        rows.append({"name": name, "class": f"{cls.__module__}.{cls.__qualname__}",
                     "summary": doc, "parameters": params})
    return rows


@app.command("learners")
def learners_cmd(
    as_json: bool = typer.Option(False, "--json", help="print JSON on stdout"),
) -> None:
    """List the learners with their parameters and defaults (set them with -p key=value).

    kernel, loss and C have their own options (--kernel, --loss, --C); in the CLI C defaults
    to 3.0 and binary tasks use the logistic loss unless --loss is given.
    """
    from okoco.evaluate import _clean

    rows = _learner_rows()
    if as_json:
        typer.echo(json.dumps(_clean(rows)))
        return
    for row in rows:
        typer.echo(f"{row['name']:<14} {row['class']}: {row['summary']}")
        for key, default in row["parameters"].items():
            typer.echo(f"{'':<16}{key} = {default!r}")


@app.callback()
def main() -> None:
    """okoco: online learning with kernels and convex losses."""


if __name__ == "__main__":
    app()
