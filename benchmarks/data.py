"""The suite's streams, preprocessed once (outside every timer) and identically for everyone.

Features whose scales differ are standardized *online*: row ``t`` with the mean and standard
deviation of rows ``1..t`` (river's ``StandardScaler`` under ``learn_during_predict``).
Regression targets that need it are standardized as river's ``TargetStandardScaler`` does, so
that errors are in the dataset's units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from river import stats

from okoco import datasets


@dataclass(frozen=True)
class Spec:
    """How one benchmark stream is built."""

    name: str  # the okoco.datasets name
    n_full: int
    n_quick: int
    gammas: tuple[float, ...]  # RBF gamma grid shared by every kernel method on this stream
    standardize_x: bool = False
    standardize_y: bool = False
    cached_only: bool = False  # a LIBSVM download: used only when already in okoco's cache
    shuffle_seed: int | None = None  # fixed random order (files stored sorted)
    kwargs: dict = field(default_factory=dict)
    note: str = ""


SPECS: dict[str, Spec] = {
    "bananas": Spec("bananas", 5300, 600, (2.0, 8.0),
                    note="river Bananas, 2-D, already on unit scale"),
    "phishing": Spec("phishing", 1250, 400, (1.0, 4.0),
                     note="river Phishing, 9 features in [0, 1]"),
    "shuttle": Spec("shuttle", 5000, 500, (0.1, 1.0), standardize_x=True,
                    note="river Shuttle, first 5,000 rows of 49,097, anomaly (1) vs normal"),
    "trump-approval": Spec("trump-approval", 1001, 400, (0.2, 1.0), standardize_x=True,
                           standardize_y=True, note="river TrumpApproval"),
    "sinc": Spec("sinc", 5000, 600, (0.25, 1.0), kwargs={"noise": 0.1, "seed": 0},
                 note="okoco synthetic sinc, x ~ U[-10, 10], noise sd 0.1, seed 0"),
    "cpusmall": Spec("cpusmall", 5000, 500, (0.05, 0.2), standardize_x=True,
                     standardize_y=True, cached_only=True, shuffle_seed=0,
                     note="LIBSVM cpusmall, 5,000 rows of 8,192 in a fixed random order (seed 0)"),
    "cadata": Spec("cadata", 5000, 500, (0.1, 0.5), standardize_x=True, standardize_y=True,
                   cached_only=True, shuffle_seed=0,
                   note="LIBSVM cadata, 5,000 rows of 20,640 in a fixed random order (seed 0)"),
}


@dataclass
class Stream:
    """One preprocessed stream: what learners see, and how to score their predictions."""

    name: str
    task: str  # "binary" or "regression"
    X: np.ndarray  # (n, d) features as the learners see them
    y: np.ndarray  # targets as the learners see them (bool labels, or scaled floats)
    y_true: np.ndarray  # targets on the original scale, for scoring
    y_shift: np.ndarray  # prediction on the original scale = y_shift + y_scale * prediction
    y_scale: np.ndarray
    feature_names: list[str]
    spec: Spec
    n_available: int

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def dicts(self) -> list[dict]:
        """The rows as river dicts keyed by feature name."""
        names = self.feature_names
        return [dict(zip(names, row)) for row in self.X.tolist()]

    def describe(self) -> dict:
        spec = self.spec
        return {"name": self.name, "task": self.task, "n": self.n, "d": self.d,
                "n_available": self.n_available, "gammas": list(spec.gammas),
                "standardize_x": spec.standardize_x, "standardize_y": spec.standardize_y,
                "note": spec.note}


def online_standardize(X: np.ndarray) -> np.ndarray:
    """Row ``t`` scaled by the mean and (population) std of rows ``1..t``; std 0 counts as 1.

    >>> online_standardize(np.array([[1.0], [3.0], [5.0]])).ravel().round(4).tolist()
    [0.0, 1.0, 1.2247]
    """
    X = np.asarray(X, dtype=float)
    shift = X[0]
    Z = X - shift  # shifted sums keep the variance accurate for large offsets (dates)
    t = np.arange(1, X.shape[0] + 1, dtype=float)[:, None]
    mean = np.cumsum(Z, axis=0) / t
    var = np.maximum(np.cumsum(Z * Z, axis=0) / t - mean * mean, 0.0)
    sd = np.sqrt(var)
    sd[sd <= 1e-12 * (1.0 + np.abs(mean + shift))] = 1.0
    return (Z - mean) / sd


def target_scaling(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """river's ``TargetStandardScaler``, computed once: ``(learned, shift, scale)``.

    Step ``t``'s prediction ``p`` is mapped back as ``shift[t] + scale[t] * p``, with the mean
    and the sample standard deviation (``river.stats.Var``, ddof 1) of ``y_1..y_{t-1}``; the
    learner then learns ``learned[t] = (y_t - mean) / sd`` with those of ``y_1..y_t``, and 0 while
    ``sd`` is 0 (before two targets, or constant ones).
    """
    var = stats.Var()
    n = len(y)
    learned, shift, scale = np.zeros(n), np.zeros(n), np.zeros(n)
    for t, target in enumerate(np.asarray(y, dtype=float).tolist()):
        shift[t], scale[t] = var.mean.get(), var.get() ** 0.5
        var.update(target)
        sd = var.get() ** 0.5
        learned[t] = (target - var.mean.get()) / sd if sd else 0.0
    return learned, shift, scale


def load_stream(name: str, n: int | None = None, quick: bool = False) -> Stream | str:
    """The stream ``name`` (its first ``n`` rows), or a string saying why it is skipped."""
    spec = SPECS[name]
    kwargs = dict(spec.kwargs)
    if spec.cached_only:
        kwargs["download"] = False
    if name == "sinc":
        kwargs["n"] = n or (spec.n_quick if quick else spec.n_full)
    try:
        ds = datasets.load(spec.name, **kwargs)
    except (datasets.DownloadError, OSError) as error:
        return f"not in okoco's cache ({type(error).__name__}); skipped"
    X, y, names = ds.to_arrays()
    n_available = X.shape[0]
    if spec.shuffle_seed is not None:
        order = np.random.default_rng(spec.shuffle_seed).permutation(n_available)
        X, y = X[order], y[order]
    size = min(n or (spec.n_quick if quick else spec.n_full), n_available)
    X, y = np.asarray(X[:size], dtype=float), np.asarray(y[:size])
    if spec.standardize_x:
        X = online_standardize(X)
    y = np.asarray(y).astype(bool) if ds.task == "binary" else np.asarray(y, dtype=float)
    learned, shift, scale = target_scaling(y) if spec.standardize_y else (
        y, np.zeros(size), np.ones(size))  # (only a regression stream's targets are scaled)
    return Stream(name, ds.task, X, learned, y, shift, scale, [str(c) for c in names], spec,
                  n_available)
