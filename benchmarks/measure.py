"""The suite's measurements: timed test-then-train runs of every driver, and physical floors.

Inputs are prepared before the timer starts and predictions scored after it stops.
Each run happens in a forked child (:func:`benchmarks.harness.in_child`) that has touched its
inputs and reset its peak resident set: its memory is the growth of ``VmHWM`` over the run.
"""

from __future__ import annotations

import copy
import gc
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.data import Stream
from benchmarks.harness import in_child, reset_peak, status_kb
from benchmarks.learners import Driver, Entry, vw_lines


def inputs(stream: Stream) -> dict[str, tuple[list, list, list]]:
    """The stream in each library's input form (rows to predict, rows to learn, targets):
    ``dict`` rows, ``(1, d)`` array rows, VW text lines; built once, outside every timer."""
    ys, rows, arrays = stream.y.tolist(), stream.dicts(), list(stream.X[:, None, :])
    return {"dict": (rows, rows, ys), "row": (arrays, arrays, ys), "vw": (*vw_lines(stream), ys)}


def timed_loop(driver: Driver, xs_pred: list, xs_learn: list, ys: list) -> tuple[list, float]:
    """Test-then-train over the stream: the outputs and the seconds it took."""
    predict, learn, out = driver.predict, driver.learn, [None] * len(ys)
    start = time.perf_counter()
    for i in range(len(ys)):
        out[i] = predict(xs_pred[i])
        learn(xs_learn[i], ys[i])
    return out, time.perf_counter() - start


def _execute(entry: Entry, stream: Stream, inputs: dict, measure_memory: bool) -> dict:
    """Build the learner and replay the stream (in the forked child when possible)."""
    driver = entry.build(stream)
    xs = None if driver.kind == "batch" else inputs[driver.kind]
    rss0 = None
    if measure_memory:
        for row in xs[0] if xs else ():  # copy-on-write copies happen before the measurement
            for _ in row.items() if isinstance(row, dict) else ():
                pass
        gc.collect()
        rss0 = reset_peak()
    if xs is None:
        preds, total = driver.run(stream)
    else:
        out, total = timed_loop(driver, *xs)
    hwm = status_kb("VmHWM") if rss0 is not None else None
    size = driver.size() if driver.size else None
    if xs is not None:
        preds = driver.decode(out)
    if driver.close is not None:
        driver.close()
    return {"preds": preds, "seconds": total, "dictionary_size": size,
            "peak_bytes": 1024 * (hwm - rss0) if hwm is not None else None}


def run_entry(entry: Entry, stream: Stream, inputs: dict, method: str | None) -> dict:
    """One timed run of ``entry`` on ``stream``: the raw measurements (or ``{"error": ...}``)."""
    fork = method is not None
    return in_child(lambda: _execute(entry, stream, inputs, fork), fork)


# -- physical floors --------------------------------------------------------------------------


def fastest_us(alternatives: list[Callable[[], Any]], calls: int) -> float:
    """µs per call of the fastest of ``alternatives``, each timed over ``calls`` calls after
    one to warm it."""
    best = math.inf
    for fn in alternatives:
        fn()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return 1e6 * best


class Floors:
    """The primitive operations a learner's step cannot avoid, as calls to time on one BLAS
    thread beside the learner's own steps (:meth:`parts`, :meth:`round_us`), each the fastest
    of its alternatives:

    - ``expansion(t)``: a prediction ``sum_i c_i k(x_i, x)`` over ``t`` points in ``d``
      dimensions (a ``t x d`` matrix-vector product, an ``exp`` of ``t`` values, a dot);
    - ``trsv(m)``: a triangular solve of size ``m``, packed ``dtpsv`` (okoco's storage) or
      dense ``dtrsv``; ``matvec(m)``: an ``m x m`` product; ``rank_one(m)``: a packed ``dspr``;
    - ``symv(m)``: a product by one triangle (``dsymv``); ``syrk(m)``: a rank-16 update of one
      triangle (``dsyrk``: a window inverse's 16 pending terms of one sign at once).
    """

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def calls(self, primitive: str, n: int, d: int) -> list[Callable[[], Any]]:
        """The alternatives of ``primitive`` at size ``n`` (``d``: the expansion's width)."""
        from scipy.linalg import blas

        r = self.rng.standard_normal
        if primitive == "expansion":
            X, c, x = r((max(n, 1), d)), r(max(n, 1)), r(d)
            sq = np.einsum("ij,ij->i", X, X)
            return [lambda: c @ np.exp(-0.5 * (sq - 2.0 * (X @ x) + x @ x))]
        b, F = r(n), np.asfortranarray(r((n, n)))
        if primitive == "trsv":
            L = np.tril(F) * (0.1 / math.sqrt(n))
            L[np.diag_indices(n)] = 1.0
            packed, dense = L[np.tril_indices(n)], np.asfortranarray(L)
            return [lambda: blas.dtpsv(n, packed, b, lower=0, trans=1),
                    lambda: blas.dtrsv(dense, b, lower=1)]
        if primitive == "matvec":
            return [lambda: F @ b]
        if primitive == "rank_one":
            ap, x = np.zeros(n * (n + 1) // 2), b * 1e-3
            return [lambda: blas.dspr(n, -1.0, x, ap, lower=0, overwrite_ap=1)]
        if primitive == "symv":
            return [lambda: blas.dsymv(1.0, F, b, lower=0)]
        if primitive == "syrk":
            C, U = np.asfortranarray(np.zeros((n, n))), np.asfortranarray(r((n, 16)) * 1e-3)
            return [lambda: blas.dsyrk(1.0, U, beta=1.0, c=C, lower=0, overwrite_c=1)]
        raise ValueError(f"unknown primitive {primitive!r}")

    def parts(self, learner: str, t: int, m: int, d: int) -> dict[str, tuple[list, float]]:
        """The parts of one step of ``learner`` (:func:`floor_parts`): each part's alternatives
        as calls (one call of each does the primitive's work) and how many times a step does
        it."""
        return {name: (self.calls(p, n, d) if n or p == "expansion" else [lambda: None], times)
                for name, p, n, times in floor_parts(learner, t, m)}

    @staticmethod
    def round_us(parts: dict[str, tuple[list, float]], calls: int) -> dict[str, float]:
        """Each part's µs in a step (the mean over ``calls`` calls of its fastest alternative,
        times its count) on one BLAS thread, and their ``total``."""
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            out = {name: times * fastest_us(alternatives, calls)
                   for name, (alternatives, times) in parts.items()}
        return {**out, "total": sum(out.values())}


def floor_parts(learner: str, t: int, m: int) -> list[tuple[str, str, int, float]]:
    """``(part, primitive, size, times)`` of one step of ``learner`` (:data:`FLOOR_DEFINITIONS`,
    :data:`WINDOW_FLOORS`; for a window ``t`` is the points in it)."""
    if learner in WINDOW_FLOORS:
        k = 2 if learner.startswith("Sketched") else 1
        return [("2 expansion(W)", "expansion", t, 2), (f"{k} symv(m)", "symv", m, k),
                (f"{k} syrk16(m) / 8", "syrk", m, k / 8)]
    return {"KONS": [("expansion(t)", "expansion", t, 1), ("trsv(t)", "trsv", t, 1)],
            "SketchedKONS": [("expansion(t)", "expansion", t, 1), ("2 trsv(m)", "trsv", m, 2)],
            "FunctionalGD": [("expansion(m)", "expansion", m, 1)],
            "KRLS": [("expansion(m)", "expansion", m, 1), ("trsv(m)", "trsv", m, 1),
                     ("matvec(m)", "matvec", m, 1), ("rank_one(m)", "rank_one", m, 1)],
            }[learner]


#: The BLAS work of a windowed step: the kernel rows at the input and at the point that leaves,
#: products with the window's inverses by one triangle, their rank-one changes applied 16 of a
#: sign at a time; one inverse for KONS, two for Sketched-KONS (its KORS's too).
WINDOW_FLOORS = {
    "KONS window": "2 expansion(W) + symv(m) + syrk16(m) / 8",
    "SketchedKONS window": "2 expansion(W) + 2 symv(m) + 2 syrk16(m) / 8",
}

FLOOR_DEFINITIONS = {
    "KONS": "expansion(t) + trsv(t): the prediction over all t points and one triangular "
            "solve with the t x t factor of A_t",
    "SketchedKONS": "expansion(t) + 2 trsv(m): the prediction over all t points and the two "
                    "triangular solves of size m of Algorithm 3 (one with the factor of the "
                    "sketched A_t, one with KORS's for the leverage estimate)",
    "FunctionalGD": "expansion(m): the prediction over the m terms kept (m = t without a "
                    "budget)",
    "KRLS": "expansion(m) + trsv(m) + matvec(m) + rank_one(m): the kernel column against "
            "the m atoms, the ALD residual (one triangular solve: in the factor's coordinates "
            "the prediction and the update need no second one), the M h product and the "
            "rank-one update of M",
}


# -- per-step time against the floor at fixed t ----------------------------------------------

STEP_FLOOR_T = (1_000, 10_000)
STEP_FLOOR_D = 9  # Phishing's width
STEP_FLOOR_BUDGET = 1_000  # FunctionalGD's budget and KRLS's max_size: Phishing-sized
STEP_FLOOR_ROUNDS = 5  # replays of each window, each followed by a round of the floor


def step_floor_stream(n: int, d: int = STEP_FLOOR_D, seed: int = 0) -> tuple[list, list, list]:
    """A synthetic Phishing-like stream: ``d`` features in ``[0, 1]`` as dicts, a regression
    target and its sign as a ``+-1`` label; its first rows do not depend on ``n``."""
    X = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, d))
    noise = np.random.default_rng(seed + 1).standard_normal(n)
    y = np.sin(4.0 * X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 + 0.1 * noise
    rows = [{f"x{j}": v for j, v in enumerate(row)} for row in X.tolist()]
    return rows, y.tolist(), np.where(y > 0, 1.0, -1.0).tolist()


def step_floor_learners() -> dict[str, tuple[Callable[[], Any], bool, tuple[int, ...]]]:
    """Each learner at its defaults: a builder, whether it takes the labels (logistic loss) and
    the t at which it is compared. KONS's dense factor holds all t points (0.4 GB at
    t = 10,000): it is compared at t = 1,000."""
    from okoco import losses
    from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

    return {
        "KONS": (lambda: KONS(loss=losses.Logistic()), True, STEP_FLOOR_T[:1]),
        "SketchedKONS": (lambda: SketchedKONS(loss=losses.Logistic(), seed=0), True,
                         STEP_FLOOR_T),
        "FunctionalGD": (lambda: FunctionalGD(budget=STEP_FLOOR_BUDGET), False, STEP_FLOOR_T),
        "KRLS": (lambda: KRLS(max_size=STEP_FLOOR_BUDGET), False, STEP_FLOOR_T),
    }


def step_times(name: str, marks: tuple[int, ...], floors: Floors | None = None,
               rounds: int = STEP_FLOOR_ROUNDS) -> dict:
    """``predict_one`` + ``learn_one`` of one learner up to ``max(marks)``, measured over the
    last tenth of the steps before each mark.

    One pass gives the mean and median µs per step over each window, the process's CPU time
    over it and the dictionary size. With ``floors``, the window is then replayed on
    ``rounds`` copies of the learner taken at its start, each replay followed at once by a
    round of the floor's primitives at the mark's size (as many calls as the window has
    steps); the pair with the least total time (the quietest moment of a shared machine) gives
    ``replay_us`` and ``floor``: one statistic, timed side by side.
    """
    build, labels, _ = step_floor_learners()[name]
    n = max(marks)
    rows, y, sign = step_floor_stream(n)
    targets = sign if labels else y
    model = build()
    perf, cpu = time.perf_counter, time.process_time
    starts = {t - max(t // 10, 1): t for t in marks}  # window start -> its mark
    stamps = np.zeros(n + 1)
    sizes, cpu_at, copies = {}, {}, {}
    stamps[0] = perf()
    for i in range(n):
        if i in starts:
            if floors is not None:
                copies[starts[i]] = [copy.deepcopy(model) for _ in range(rounds)]
                stamps[i] = perf()  # the copies are not part of the step before
            cpu_at[i] = cpu()
        model.predict_one(rows[i])
        model.learn_one(rows[i], targets[i])
        stamps[i + 1] = perf()
        if i + 1 in marks:
            cpu_at[i + 1], sizes[i + 1] = cpu(), model.dictionary_size
    steps = 1e6 * np.diff(stamps)
    out = []
    for lo, t in starts.items():
        window = steps[lo:t]
        mark = {"t": t, "m": sizes[t], "mean_us": float(window.mean()),
                "median_us": float(np.median(window)),
                "cpu_us": 1e6 * (cpu_at[t] - cpu_at[lo]) / (t - lo)}
        if floors is not None:
            parts = floors.parts(name, t, sizes[t], STEP_FLOOR_D)
            pairs = []
            for replica in copies.pop(t):
                start = perf()
                for i in range(lo, t):
                    replica.predict_one(rows[i])
                    replica.learn_one(rows[i], targets[i])
                pairs.append((1e6 * (perf() - start) / (t - lo), floors.round_us(parts, t - lo)))
            mark["replay_us"], mark["floor"] = min(pairs, key=lambda p: p[0] + p[1]["total"])
        out.append(mark)
    return {"marks": out}


def step_floors(floors: Floors, method: str | None, names: tuple[str, ...] = (),
                up_to: int | None = None) -> list[dict]:
    """Each learner's :func:`step_times` (a forked run each) as rows: ``step_us`` and
    ``floor_us`` the quietest replay and its floor, ``pass_us``, ``median_us`` and ``cpu_us``
    the first pass's; ``up_to`` drops the larger t (a quick run)."""
    rows = []
    for name, (_, _, marks) in step_floor_learners().items():
        marks = tuple(t for t in marks if up_to is None or t <= up_to)
        if not marks or (names and not any(o in name for o in names)):
            continue
        raw = in_child(lambda name=name, marks=marks: step_times(name, marks, floors),
                       method is not None)
        if "error" in raw:
            rows.append({"learner": name, "error": raw["error"]})
            continue
        for mark in raw["marks"]:
            total = mark["floor"]["total"]
            rows.append({
                "learner": name, "t": mark["t"], "m": mark["m"], "d": STEP_FLOOR_D,
                "step_us": mark["replay_us"], "pass_us": mark["mean_us"],
                "median_us": mark["median_us"], "cpu_us": mark["cpu_us"], "floor_us": total,
                "parts_us": {k: v for k, v in mark["floor"].items() if k != "total"},
                **{f"{k}multiple": mark[key] / total for k, key in (
                    ("", "replay_us"), ("pass_", "mean_us"), ("median_", "median_us"),
                    ("cpu_", "cpu_us"))},
            })
    return rows
