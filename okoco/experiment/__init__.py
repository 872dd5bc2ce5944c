"""One experiment run from names: the building blocks shared by the CLI and ``okoco.distributed``.

A run is described by plain, picklable values (a learner name from :func:`learner_registry`,
learner parameters, a kernel, a loss name, a dataset name or path, a seed) and built here into a
river model and a :class:`~okoco.datasets.Dataset`, then replayed test-then-train by
:func:`okoco.evaluate.replay`. The ``okoco`` command line and the experiment grids of
:mod:`okoco.distributed` both go through these functions, so a run launched from either gives the
same model, the same data and, for the same seed, the same numbers.

Mistakes in the description raise :class:`UserError` with a one-line message naming the
parameter (the CLI prints it as ``error: ...``).

Examples
--------
>>> from okoco import kernels
>>> ds = load_dataset("sinc", target=None, data_params={"n": 50}, seed=0, shuffle=False)
>>> model, core = build_model("fgd", ds.task, loss=None, kernel=kernels.RBF(), C=3.0,
...                           params={"eta": 0.2}, seed=0, scale=True, scale_target=True)
>>> describe(core)
'FunctionalGD(kernel=RBF(gamma=1.0), eta=0.2)'
"""

from okoco.experiment._build import (
    CSV_DEFAULTS,
    POSITIVE_WORDS,
    binary_labels,
    build_model,
    describe,
    load_dataset,
    make_kernel,
    make_metrics,
    note_leader,
    positive_label,
    shuffled,
    text_encoding,
)
from okoco.experiment._names import (
    KERNELS,
    LOSSES,
    METRICS,
    REGRESSION_METRICS,
    UserError,
    learner_registry,
    name_key,
    parameters,
    resolve,
)
from okoco.experiment._run import (
    Checkpoint,
    RunSpec,
    check_pos_label,
    run,
    run_one,
)

UserError.__module__ = __name__  # users meet it as okoco.experiment.UserError

__all__ = ["UserError", "name_key", "resolve", "learner_registry", "KERNELS", "LOSSES", "METRICS",
           "REGRESSION_METRICS", "parameters", "make_kernel", "build_model", "load_dataset",
           "shuffled", "make_metrics", "RunSpec", "Checkpoint", "run", "run_one", "describe",
           "note_leader", "positive_label", "binary_labels", "text_encoding", "POSITIVE_WORDS",
           "CSV_DEFAULTS", "check_pos_label"]
