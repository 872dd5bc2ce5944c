"""Drivers: okoco's learners and their peers behind one test-then-train interface.

A :class:`Driver` takes inputs prepared outside the timer in each library's form: river ``dict``
rows (okoco, river), ``(1, d)`` arrays (scikit-learn's ``partial_fit``), text lines (Vowpal
Wabbit); the offline reference (scikit-learn ``KernelRidge``, refitted at doubling times) is a
batch driver. :func:`entries` lists every (learner, setting) of a stream's grid; the page
reports each learner's best setting, an optimistic choice made alike for everyone.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.data import Stream

N_COMPONENTS = 100  # random features of the river and scikit-learn pipelines


@dataclass
class Driver:
    """One learner ready to replay a stream."""

    kind: str  # "dict", "row", "vw" or "batch"
    predict: Callable[[Any], Any] | None = None
    learn: Callable[[Any, Any], None] | None = None
    decode: Callable[[list], np.ndarray] | None = None  # outputs -> float array (labels 0/1)
    size: Callable[[], int] | None = None  # dictionary size, for okoco learners
    run: Callable[[Stream], tuple[np.ndarray, float]] | None = None  # batch drivers only
    close: Callable[[], None] | None = None


@dataclass
class Entry:
    """A learner at one setting of its grid."""

    learner: str
    family: str  # "okoco", "peer" or "reference"
    library: str  # "okoco", "river", "scikit-learn" or "vowpalwabbit"
    params: dict
    build: Callable[[Stream], Driver]

    @property
    def key(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.learner} ({inner})" if inner else self.learner


def available(library: str) -> bool:
    """Whether ``library`` is installed (``"benchmarks"``: the drivers written here)."""
    module = {"scikit-learn": "sklearn", "benchmarks": "benchmarks"}.get(library, library)
    return importlib.util.find_spec(module) is not None


def preload() -> None:
    """Import every module the drivers use, once, in the parent process: runs happen in forked
    children, where an import would be repeated for every run and count in its peak memory."""
    for module in ("river.feature_extraction", "river.linear_model", "river.metrics",
                   "river.optim", "okoco.learners", "sklearn.kernel_approximation",
                   "sklearn.kernel_ridge", "sklearn.linear_model", "vowpalwabbit"):
        if importlib.util.find_spec(module.split(".")[0]) is not None:
            importlib.import_module(module)


def _labels(outputs: list) -> np.ndarray:
    """Predicted labels as 1.0 / 0.0, NaN where the learner made no prediction yet."""
    return np.array([np.nan if o is None else float(bool(o)) for o in outputs])


def _floats(outputs: list) -> np.ndarray:
    return np.array([np.nan if o is None else float(o) for o in outputs])


def _margins(outputs: list) -> np.ndarray:
    return (np.asarray(outputs, dtype=float) > 0).astype(float)


def _decoder(task: str):
    return _labels if task == "binary" else _floats


def _okoco(name: str, rbf_gamma: float | None, task: str, loss_name: str | None = None,
           **params) -> Callable[[Stream], Driver]:
    def build(stream: Stream) -> Driver:
        from okoco import BinaryClassifier, kernels, losses
        from okoco import learners as ol

        kernel = None if rbf_gamma is None else kernels.RBF(rbf_gamma)  # None: RBF(1/d)
        if name == "KRLS":
            inner = ol.KRLS(kernel=kernel, **params)
        else:
            loss = (losses.SquaredHinge() if loss_name == "squared-hinge" else
                    losses.Logistic() if task == "binary" else losses.Squared())
            if name != "Auto":  # (Auto picks its experts' kernels)
                params["kernel"] = kernel
            inner = getattr(ol, name)(loss=loss, C=3.0, **params)
        model = BinaryClassifier(inner) if task == "binary" else inner
        return Driver("dict", model.predict_one, model.learn_one,
                      _decoder(task), size=lambda: inner.dictionary_size)

    return build


def _river(gamma: float | None, task: str, lr: float | None) -> Callable[[Stream], Driver]:
    def build(stream: Stream) -> Driver:
        from river import feature_extraction, linear_model, optim

        opt = optim.SGD(lr) if lr is not None else None
        linear = (linear_model.LogisticRegression(optimizer=opt) if task == "binary"
                  else linear_model.LinearRegression(optimizer=opt))
        model = linear if gamma is None else (
            feature_extraction.RBFSampler(gamma=gamma, n_components=N_COMPONENTS, seed=0) | linear
        )
        return Driver("dict", model.predict_one, model.learn_one, _decoder(task))

    return build


class _SklearnRandomFeatures:
    """``RBFSampler`` features, then ``SGDClassifier`` / ``SGDRegressor.partial_fit`` per row.

    ``RBFSampler`` draws its frequencies from the input dimension alone, so it is fitted once
    on a row of zeros and the pipeline is fully online. The features of the row being predicted
    are reused by the ``partial_fit`` that follows (as okoco reuses its kernel row).
    """

    def __init__(self, gamma: float, d: int, task: str, seed: int = 0):
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.linear_model import SGDClassifier, SGDRegressor

        self.features = RBFSampler(gamma=gamma, n_components=N_COMPONENTS, random_state=seed)
        self.features.fit(np.zeros((1, d)))
        self.binary = task == "binary"
        self.sgd = (SGDClassifier(loss="log_loss", random_state=seed) if self.binary
                    else SGDRegressor(random_state=seed))
        self.fitted = False
        self._row = self._z = None

    def _transform(self, row: np.ndarray) -> np.ndarray:
        if row is not self._row:
            self._row, self._z = row, self.features.transform(row)
        return self._z

    def predict(self, row: np.ndarray):
        return self.sgd.predict(self._transform(row))[0] if self.fitted else None

    def learn(self, row: np.ndarray, y) -> None:
        first = self.binary and not self.fitted
        self.sgd.partial_fit(self._transform(row), [y],
                             **({"classes": np.array([False, True])} if first else {}))
        self.fitted = True


def _sklearn_rf(gamma: float, task: str) -> Callable[[Stream], Driver]:
    def build(stream: Stream) -> Driver:
        model = _SklearnRandomFeatures(gamma, stream.d, task)
        return Driver("row", model.predict, model.learn, _decoder(task))

    return build


def refit_schedule(n: int, first: int = 50) -> list[int]:
    """Prefix sizes at which the offline reference is refitted: ``first``, doubling, below n.

    >>> refit_schedule(500)
    [50, 100, 200, 400]
    """
    out, t = [], first
    while t < n:
        out.append(t)
        t *= 2
    return out


def _kernel_ridge(gamma: float, alpha: float, task: str) -> Callable[[Stream], Driver]:
    def run(stream: Stream) -> tuple[np.ndarray, float]:
        from sklearn.kernel_ridge import KernelRidge

        X = stream.X
        y = np.where(stream.y, 1.0, -1.0) if task == "binary" else stream.y
        n = X.shape[0]
        raw = np.full(n, np.nan)
        start = time.perf_counter()
        points = refit_schedule(n)
        for lo, hi in zip(points, points[1:] + [n]):
            model = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma).fit(X[:lo], y[:lo])
            raw[lo:hi] = model.predict(X[lo:hi])
        seconds = time.perf_counter() - start
        if task == "binary":
            out = np.where(np.isnan(raw), np.nan, (raw > 0).astype(float))
        else:
            out = raw
        return out, seconds

    return lambda stream: Driver("batch", run=run)


def _vw(args: str, task: str) -> Callable[[Stream], Driver]:
    def build(stream: Stream) -> Driver:
        from vowpalwabbit import Workspace

        vw = Workspace(args + " --quiet")
        return Driver("vw", vw.predict, lambda line, _y: vw.learn(line),
                      _margins if task == "binary" else _floats, close=vw.finish)

    return build


def vw_lines(stream: Stream) -> tuple[list[str], list[str]]:
    """VW text lines (prediction and training) of every row, built outside the timer."""
    feats = [" |f " + " ".join(f"{j}:{v:.17g}" for j, v in enumerate(row))
             for row in stream.X.tolist()]
    if stream.task == "binary":
        labels = ["1" if v else "-1" for v in stream.y.tolist()]
    else:
        labels = [f"{v:.17g}" for v in stream.y.tolist()]
    return feats, [lab + f for lab, f in zip(labels, feats)]


def _last_target() -> Callable[[Stream], Driver]:
    """The naive forecast: predict the last target learned (nothing before the first). With
    the targets scaled online it predicts ``y_{t-1}`` exactly on the original scale; on a
    target close to a random walk (TrumpApproval) it is hard to beat."""

    def build(stream: Stream) -> Driver:
        last: list = [None]
        return Driver("dict", lambda x: last[0], lambda x, y: last.__setitem__(0, y), _floats)

    return build


def harness() -> Entry:
    """A learner that does nothing: the cost and memory of the measuring loop itself."""
    return Entry("no-op (harness)", "harness", "benchmarks", {},
                 lambda stream: Driver("dict", lambda x: None, lambda x, y: None, _floats))


# -- the grid -------------------------------------------------------------------------------------


def entries(stream: Stream, quick: bool = False, skip: tuple[str, ...] = (),
            only: tuple[str, ...] = ()) -> list[Entry]:
    """Every learner and setting to run on ``stream``; ``quick`` keeps one setting of each.

    ``skip`` names libraries to leave out (``"vowpalwabbit"``, ``"scikit-learn"``); a library
    that is not installed is left out too. ``only``, if given, keeps the learners whose name
    contains one of its strings.
    """
    task = stream.task
    gammas = stream.spec.gammas[:1] if quick else stream.spec.gammas
    out: list[Entry] = []

    def add(learner, family, library, grid, make):
        if library in skip or not available(library):
            return
        if only and not any(o in learner for o in only):
            return
        grid = grid[:1] if quick else grid
        for params in grid:
            out.append(Entry(learner, family, library, params, make(**params)))

    def with_gammas(settings):
        return [{"gamma": g, **s} for g in gammas for s in settings]

    # okoco's learners run at their defaults first (gamma=None: RBF(1/d) fixed at the first
    # learn; KONS and SketchedKONS: C=3, eta="hessian", alpha=0.1, SketchedKONS beta=10;
    # FunctionalGD eta="sqrt"; KRLS nu=0.01, no ridge), so a quick run times the defaults,
    # then on the stream's gamma grid around them. alpha is the ridge of the preconditioner
    # (A_0 = alpha I; with eta="hessian" the ridge of kernel ridge regression is alpha / 2).
    def okoco_grid(defaults, settings):
        return [{"gamma": None, **defaults}] + with_gammas(settings)

    add("Auto", "okoco", "okoco", [{}], lambda: _okoco("Auto", None, task))  # its defaults
    add("KONS", "okoco", "okoco", okoco_grid({"alpha": 0.1}, [{"alpha": 0.1}]),  # O(t^2)/step
        lambda gamma, alpha: _okoco("KONS", gamma, task, alpha=alpha))
    # SketchedKONS's defaults keep most points on the short streams (~1,070 of Phishing's
    # 1,250); a smaller oversampling beta keeps fewer, and is faster. With the squared hinge
    # loss a point beyond the margin has a zero gradient: it stays out of the expansion and of
    # the dictionary (as VW's ksvm keeps only support vectors), and a larger ridge alpha keeps
    # the dictionary small; these settings are the classification streams' fast ones.
    sketches = okoco_grid({"beta": 10.0, "floor": 0.0, "alpha": 0.1},
                          [{"beta": b, "floor": 0.0, "alpha": 0.1} for b in (3.0, 1.0)])
    if task == "binary":
        hinge = [{"loss": "squared-hinge", "beta": b, "floor": 0.0, "alpha": a}
                 for b in (0.3, 1.0) for a in (1.0, 3.0)]
        sketches += [{"gamma": None, **h} for h in hinge] + with_gammas(hinge)
    add("SketchedKONS", "okoco", "okoco", sketches,
        lambda gamma, beta, floor, alpha, loss=None: _okoco(
            "SketchedKONS", gamma, task, loss, beta=beta, p_min=floor, alpha=alpha, seed=0))
    etas = [0.5, 2.0] if task == "binary" else [0.1, 0.5]
    add("FunctionalGD", "okoco", "okoco",
        okoco_grid({"eta": "sqrt"}, [{"eta": e} for e in etas]),
        lambda gamma, eta: _okoco("FunctionalGD", gamma, task, eta=eta))
    if task == "regression":
        add("KRLS", "okoco", "okoco",
            okoco_grid({"nu": 1e-2, "ridge": 0.0},
                       [{"nu": 1e-1, "ridge": 1e-1}, {"nu": 1e-2, "ridge": 1e-2}]),
            lambda gamma, nu, ridge: _okoco("KRLS", gamma, task, nu=nu, alpha=ridge))

    rf = "river RBFSampler+" + ("LogisticRegression" if task == "binary" else "LinearRegression")
    rates = [{"lr": 0.01}, {"lr": 0.1}] if task == "binary" else [{"lr": 0.001}, {"lr": 0.01}]
    add(rf, "peer", "river", with_gammas(rates),
        lambda gamma, lr: _river(gamma, task, lr))
    add("river " + ("LogisticRegression" if task == "binary" else "LinearRegression"), "peer",
        "river", [{}], lambda: _river(None, task, None))

    sk = "scikit-learn RBFSampler+" + ("SGDClassifier" if task == "binary" else "SGDRegressor")
    add(sk, "peer", "scikit-learn", with_gammas([{}]), lambda gamma: _sklearn_rf(gamma, task))

    loss = " --loss_function logistic" if task == "binary" else ""
    if task == "binary":
        # VW's ksvm does best with far narrower kernels than the others: its bandwidth
        # (= gamma, exp(-bandwidth |x - y|^2) in kernel_svm.cc) grid reaches 16x further.
        top = max(stream.spec.gammas)
        bandwidths = sorted({*gammas, 4 * top, 16 * top}) if not quick else gammas
        add("VW --ksvm (RBF)", "peer", "vowpalwabbit",
            [{"gamma": b, "l2": 1e-4} for b in bandwidths],
            lambda gamma, l2: _vw(f"--ksvm --kernel rbf --bandwidth {gamma} --l2 {l2}", task))
    add("VW linear", "peer", "vowpalwabbit", [{}], lambda: _vw(loss.strip(), task))
    add("VW --OjaNewton", "peer", "vowpalwabbit", [{"sketch_size": 10}],
        lambda sketch_size: _vw(f"--OjaNewton --sketch_size {sketch_size}{loss}", task))

    if task == "regression":
        add("last target (naive forecast)", "reference", "benchmarks", [{}], _last_target)
    add("scikit-learn KernelRidge (refit)", "reference", "scikit-learn",
        with_gammas([{"alpha": 0.1}]), lambda gamma, alpha: _kernel_ridge(gamma, alpha, task))
    return out
