"""The options ``replay`` and ``compare`` share, declared once with their help texts (typer
reads an option's declaration as metadata when it builds each command, so one object serves
both)."""

# typer declares options as argument defaults (typer.Option(...)), hence B008 is off here.
# ruff: noqa: B008

from __future__ import annotations

import typer

from okoco.cli._defaults import DEFAULT_LEARNER

_LEARNER_HELP = "learner: " + ", ".join(["auto", "fgd", "kons", "sketched-kons", "krls",
                                          "pros-n-kons", "con-kons"])


_DEFAULT_LEARNER_HELP = f" [default: {DEFAULT_LEARNER}, see `okoco learners`]"


_KERNEL_HELP = ("a kernel's command-line name (rbf, laplacian, polynomial, linear, ...: a wrong "
                "one lists them all), or a sum/product such as rbf+linear [default: rbf; not for "
                "auto, which picks its own kernels]")


_GAMMA_HELP = "kernel scale [default: RBF/Laplacian 1/d at the first sample]"


_DEGREE_HELP = "polynomial kernel degree [default: 2]"


_COEF0_HELP = "polynomial kernel offset [default: 1.0]"


_NORMALIZE_HELP = "normalise the kernel, k(x,x)=1"


_DATA_PARAM_HELP = ("dataset parameter, key=value, repeatable (synthetic: n, noise, ...; CSV: "
                    "header, delimiter, na=absent|drop|error [default absent: a missing cell "
                    "is left out of its sample], non_numeric=encode|drop|error [default "
                    "encode: text columns one-hot encoded, or hashed above 64 values])")


_METRIC_HELP = ("mae, mse, rmse, r2, accuracy, f1, logloss, rocauc; repeatable [default: mae; "
                "accuracy for binary tasks]")


_MAX_SAMPLES_HELP = "stop after N samples"


_CHECKPOINTS_HELP = "record the curves at about this many points"


_SCALE_HELP = ("standardise features online (StandardScaler: running mean and variance, as "
               "river's; each sample is scaled before the learner sees it)")


_SCALE_TARGET_HELP = ("regression: standardise targets online (TargetStandardScaler, as river's; "
                      "auto does it itself: --no-scale-target gives it scale_target=False); "
                      "metrics are still reported on the original scale")


# The options replay and compare share, declared once (typer reads an option's declaration as
# metadata when it builds each command, so one object serves both).
_LOSS = typer.Option(None, "--loss", help="squared, logistic or squared-hinge "
                     "[default: squared; logistic for binary tasks]")


_KERNEL = typer.Option(None, "--kernel", "-k", show_default=False, help=_KERNEL_HELP)


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


_INTERVAL = typer.Option(None, "--interval", metavar="COVERAGE",
                         help="regression: wrap the model in okoco.intervals.IntervalRegressor "
                         "(adaptive conformal inference) and report the online coverage of its "
                         "COVERAGE intervals (e.g. 0.9), and the median width and mean interval "
                         "score of the last 500 (past the warm-up)")


_POS_LABEL = typer.Option(None, "--pos-label", metavar="LABEL",
                          help="binary tasks: the positive class that F1, LogLoss and ROCAUC "
                          "score [default: True, the larger number, a yes/true word, else the "
                          "less frequent label]")
