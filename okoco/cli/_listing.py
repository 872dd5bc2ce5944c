"""``okoco datasets`` and ``okoco learners``: what is available, and what each name builds."""

# typer declares options as argument defaults (typer.Option(...)), hence B008 is off here.
# ruff: noqa: B008

from __future__ import annotations

import inspect
import json
from typing import Any

import typer

import okoco.cli as cli  # the command-line API, bound on first use (see okoco.cli._load_api)
from okoco.cli import _load_api, app
from okoco.cli._defaults import DEFAULT_LEARNER
from okoco.cli._report import _fmt, _summary


@app.command("datasets", short_help="List the built-in datasets.")
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
    rows = cli.datasets.available()
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


#: The tasks ``okoco learners`` shows the model of, as ``replay`` builds it for each.
_TASKS = ("regression", "binary", "multiclass")


def _runs(name: str) -> dict[str, str]:
    """What ``replay -l NAME`` builds for each task, at the CLI's defaults (no -p)."""
    out = {}
    for task in _TASKS:
        try:
            _, core = cli.build_model(name, task, loss=None, kernel=cli._kernel("rbf"), C=3.0,
                                      params={}, seed=0, scale=False, scale_target=True)
        except cli.UserError as error:
            out[task] = f"not available: {error}"
            continue
        out[task] = cli.describe(core)
    return out


def _learner_rows() -> list[dict[str, Any]]:
    rows = []
    for name, cls in cli.learner_registry().items():
        doc = _summary(inspect.getdoc(cls) or "")
        params = {k: (None if p.default is inspect.Parameter.empty else p.default)
                  for k, p in cli._parameters(cls).items()}
        rows.append({"name": name, "default": name == DEFAULT_LEARNER,
                     "class": f"{cls.__module__}.{cls.__qualname__}", "summary": doc,
                     "runs": _runs(name), "parameters": params})
    return rows


@app.command("learners", short_help="List the learners and their defaults.")
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
        typer.echo(json.dumps(cli.to_json_ready(rows)))
        return
    for row in rows:
        name = row["name"] + (" (default)" if row["default"] else "")
        typer.echo(f"{name:<14} {row['class']}: {row['summary']}")
        for task, model in row["runs"].items():
            typer.echo(f"{'':<16}{task + ':':<12}{model}")
        typer.echo(f"{'':<16}parameters (defaults; -p key=value):")
        for key, default in row["parameters"].items():
            typer.echo(f"{'':<18}{key} = {default!r}")
