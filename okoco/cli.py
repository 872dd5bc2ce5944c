"""The ``okoco`` command line: replay a dataset through a learner, test-then-train."""

from __future__ import annotations

import time

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

RIVER_DATASETS = {
    "trump-approval": ("TrumpApproval", "regression"),
    "phishing": ("Phishing", "binary"),
    "bananas": ("Bananas", "binary"),
}


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _learner(name: str, task: str, C: float):
    from okoco import BinaryClassifier, losses
    from okoco.learners import FunctionalGD

    factories = {"fgd": FunctionalGD}
    if name not in factories:
        _fail(f"unknown learner {name!r}; choose from {', '.join(sorted(factories))}")
    if task == "binary":
        return BinaryClassifier(factories[name](loss=losses.Logistic(), C=C, eta=0.5))
    return factories[name](C=C, eta=0.2)


@app.command()
def replay(
    dataset: str = typer.Argument(..., help="a built-in dataset name, e.g. trump-approval"),
    learner: str = typer.Option("fgd", "--learner", "-l", help="learner name"),
    C: float = typer.Option(3.0, "--C", help="predictions are clipped to [-C, C]"),
) -> None:
    """Replay DATASET through a learner (progressive validation) and print a summary."""
    from river import datasets, metrics, preprocessing

    if dataset not in RIVER_DATASETS:
        _fail(f"unknown dataset {dataset!r}; choose from {', '.join(sorted(RIVER_DATASETS))}")
    cls_name, task = RIVER_DATASETS[dataset]
    model = preprocessing.StandardScaler() | _learner(learner, task, C)
    if task == "regression":
        model = preprocessing.TargetStandardScaler(model)
    metric = metrics.MAE() if task == "regression" else metrics.Accuracy()
    start, n = time.perf_counter(), 0
    for x, y in getattr(datasets, cls_name)():
        metric.update(y, model.predict_one(x))
        model.learn_one(x, y)
        n += 1
    elapsed = time.perf_counter() - start
    typer.echo(f"dataset  {dataset} ({n} samples, {task})")
    typer.echo(f"learner  {learner}")
    typer.echo(f"{metric.__class__.__name__:<8} {metric.get():.6f}")
    typer.echo(f"time     {elapsed:.2f} s ({1e6 * elapsed / max(n, 1):.1f} us/sample)")


@app.callback()
def main() -> None:
    """okoco: online learning with kernels and convex losses."""
