"""Measurements: timed test-then-train runs with peak memory, physical floors, the machine.

Time: one ``time.perf_counter`` stamp after every test-then-train step (about 0.1 µs), so the
total over the stream and the per-step time at any ``t`` come from the same run. Inputs are
prepared before the timer starts; predictions are decoded and scored after it stops.

Memory: each run happens in a child process forked from the suite (Linux), after the child has
touched its inputs (copy-on-write pages), collected garbage and returned free heap to the system
(``malloc_trim``). The child then resets its peak-RSS counter (``/proc/self/clear_refs``) and the
reported figure is the growth of the peak resident set over the run (``VmHWM`` minus ``VmRSS``
at the start): everything the learner allocates, numpy arrays and C++ (Vowpal Wabbit) alike.
Without fork or ``clear_refs`` the run happens in-process and memory is not reported.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np

from benchmarks.data import Stream
from benchmarks.learners import Driver, Entry, vw_lines

# -- memory ---------------------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _malloc_trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def memory_method() -> str | None:
    """``"fork+VmHWM"`` where per-run peak memory can be measured, else ``None``."""
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return None
    if _status_kb("VmHWM") is None or not os.access("/proc/self/clear_refs", os.W_OK):
        return None
    return "fork+VmHWM"


# -- inputs ---------------------------------------------------------------------------------------


class Inputs:
    """The stream in each library's input form, built once per stream (outside every timer)."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self._cache: dict[str, tuple[list, list, list]] = {}

    def get(self, kind: str) -> tuple[list, list, list]:
        if kind not in self._cache:
            s = self.stream
            ys = s.y.tolist()
            if kind == "dict":
                rows = s.dicts()
                self._cache[kind] = (rows, rows, ys)
            elif kind == "row":
                rows = [s.X[i:i + 1] for i in range(s.n)]
                self._cache[kind] = (rows, rows, ys)
            elif kind == "vw":
                pred, learn = vw_lines(s)
                self._cache[kind] = (pred, learn, ys)
            else:
                raise ValueError(f"unknown input kind {kind!r}")
        return self._cache[kind]


def _touch(objs: list) -> None:
    """Reference every object once, so copy-on-write copies happen before the measurement."""
    for o in objs:
        if isinstance(o, dict):
            for _k, _v in o.items():
                pass


# -- the timed loop -------------------------------------------------------------------------------


def marks_for(n: int, window: int, extra: tuple[int, ...] = ()) -> list[int]:
    """Step counts (1-based) at which the dictionary size is read.

    >>> marks_for(10, 4, (5,))
    [4, 5, 8, 10]
    """
    return sorted({*range(window, n + 1, window), n, *(e for e in extra if 1 <= e <= n)})


def timed_loop(driver: Driver, xs_pred: list, xs_learn: list, ys: list,
               marks: list[int]) -> tuple[list, np.ndarray, float, list[int | None]]:
    """Test-then-train over the stream: outputs, stamps (s after start), total s, sizes."""
    n = len(ys)
    predict, learn = driver.predict, driver.learn
    size = driver.size or (lambda: None)
    out: list = [None] * n
    stamps: list[float] = [0.0] * n
    sizes: list[int | None] = []
    mark_iter = iter(m - 1 for m in marks)
    next_mark = next(mark_iter, -1)
    perf = time.perf_counter
    start = perf()
    for i in range(n):
        out[i] = predict(xs_pred[i])
        learn(xs_learn[i], ys[i])
        stamps[i] = perf()
        if i == next_mark:
            sizes.append(size())
            next_mark = next(mark_iter, -1)
    total = stamps[-1] - start if n else 0.0
    return out, np.asarray(stamps) - start, total, sizes


def _execute(entry: Entry, stream: Stream, inputs: Inputs, marks: list[int],
             measure_memory: bool) -> dict:
    """Build the learner and replay the stream; runs in the forked child when possible."""
    driver = entry.build(stream)
    xs_pred, xs_learn, ys = inputs.get(driver.kind) if driver.kind != "batch" else ([], [], [])
    rss0 = None
    if measure_memory:
        _touch(xs_pred)
        gc.collect()  # young objects only: the parent froze the rest (see in_child)
        _malloc_trim()
        _reset_peak()
        rss0 = _status_kb("VmRSS")
    if driver.kind == "batch":
        preds, total = driver.run(stream)
        stamps, sizes = None, []
    else:
        out, stamps, total, sizes = timed_loop(driver, xs_pred, xs_learn, ys, marks)
    peak = None
    if measure_memory:
        hwm = _status_kb("VmHWM")
        peak = 1024 * (hwm - rss0) if hwm is not None and rss0 is not None else None
    if driver.kind != "batch":
        preds = driver.decode(out)
    if driver.close is not None:
        driver.close()
    return {"preds": preds, "stamps": stamps, "seconds": total, "sizes": sizes,
            "peak_bytes": peak}


def _child(conn, fn: Callable[[], dict]) -> None:
    try:
        result = fn()
    except BaseException:  # report it to the parent; the suite carries on
        result = {"error": traceback.format_exc(limit=6)}
    conn.send(result)
    conn.close()


def in_child(fn: Callable[[], dict], use_fork: bool) -> dict:
    """``fn()`` in a forked child (its result through a pipe), or in-process."""
    if not use_fork:
        try:
            return fn()
        except Exception:
            return {"error": traceback.format_exc(limit=6)}
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn))
    # Frozen objects are never traversed by the collector, so the child's collections neither
    # copy the parent's pages nor cost time proportional to the parent's heap.
    gc.freeze()
    try:
        proc.start()
    finally:
        gc.unfreeze()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = {"error": f"child process died (exit code {proc.exitcode})"}
    proc.join()
    return result


def run_entry(entry: Entry, stream: Stream, inputs: Inputs, marks: list[int],
              method: str | None) -> dict:
    """One timed run of ``entry`` on ``stream``: the raw measurements (or ``{"error": ...}``)."""
    use_fork = method is not None
    return in_child(lambda: _execute(entry, stream, inputs, marks, use_fork), use_fork)


def replay_arrays(entry: Entry, stream: Stream, method: str | None) -> dict:
    """okoco's array path: ``okoco.evaluate.replay`` over ``(X, y)``, timed as a whole."""

    def go() -> dict:
        from river import metrics

        from okoco.evaluate import replay

        model = entry.build(stream).model
        metric = metrics.Accuracy() if stream.task == "binary" else metrics.MSE()
        start = time.perf_counter()
        result = replay(model, (stream.X, stream.y), metrics=metric, checkpoints=[stream.n])
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "metric": float(result.final[metric.__class__.__name__])}

    return in_child(go, method is not None)


@contextlib.contextmanager
def busy_process():
    """One process spinning on a core beside the suite for the duration (the ``--loaded`` mode):
    the normal state of a laptop or a shared server, where BLAS thread pools contend."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it get scheduled
        yield proc
    finally:
        proc.terminate()
        proc.wait()


# -- physical floors ------------------------------------------------------------------------------


def best_us(fn: Callable[[], Any], budget_s: float = 0.05, repeats: int = 5) -> float:
    """Best time per call of ``fn`` in µs: ``repeats`` rounds of enough calls to last a while."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    calls = max(1, int(budget_s / repeats / once))
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return 1e6 * best


class Floors:
    """Times of the primitive operations a learner's step cannot avoid, cached by size.

    - ``expansion(t, d)``: a prediction ``sum_i c_i k(x_i, x)`` over ``t`` stored points in
      ``d`` dimensions (one ``t x d`` matrix-vector product, an ``exp`` of ``t`` values, a dot);
    - ``trsv(m)``: one triangular solve of size ``m``, the faster of BLAS ``dtpsv`` on a packed
      factor (okoco's storage) and ``dtrsv`` on a dense column-major one;
    - ``matvec(m)``: one ``m x m`` matrix-vector product.
    """

    def __init__(self, seed: int = 0, budget_s: float = 0.05):
        self.rng = np.random.default_rng(seed)
        self.budget_s = budget_s  # timing budget of one primitive at one size
        self.cache: dict[tuple, float] = {}

    def _expansion_fn(self, t: int, d: int) -> Callable[[], Any]:
        t = max(t, 1)
        X = self.rng.standard_normal((t, d))
        sq = np.einsum("ij,ij->i", X, X)
        c = self.rng.standard_normal(t)
        x = self.rng.standard_normal(d)
        return lambda: c @ np.exp(-0.5 * (sq - 2.0 * (X @ x) + x @ x))

    def _trsv_fns(self, m: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
        """A packed ``dtpsv`` (okoco's storage) and a dense column-major ``dtrsv``."""
        from scipy.linalg.blas import dtpsv, dtrsv

        L = np.tril(self.rng.standard_normal((m, m))) * (0.1 / math.sqrt(m))
        L[np.diag_indices(m)] = 1.0
        packed = L[np.tril_indices(m)]  # rows of L = upper-packed columns of L^T
        F = np.asfortranarray(L)
        b = self.rng.standard_normal(m)
        return (lambda: dtpsv(m, packed, b, lower=0, trans=1)), (lambda: dtrsv(F, b, lower=1))

    def _matvec_fn(self, m: int) -> Callable[[], Any]:
        P = self.rng.standard_normal((m, m))
        a = self.rng.standard_normal(m)
        return lambda: P @ a

    def _symv_fn(self, m: int) -> Callable[[], Any]:
        """A symmetric product with a full ``m x m`` array by one triangle (BLAS ``dsymv``)."""
        from scipy.linalg.blas import dsymv

        P = np.asfortranarray(self.rng.standard_normal((m, m)))  # (f2py would copy a C one)
        a = self.rng.standard_normal(m)
        return lambda: dsymv(1.0, P, a, lower=0)

    def _syrk_fn(self, m: int) -> Callable[[], Any]:
        """A symmetric rank-16 update of one triangle of a full ``m x m`` array (``dsyrk``:
        the window inverse's 16 pending terms of one sign, applied at once)."""
        from scipy.linalg.blas import dsyrk

        C = np.asfortranarray(np.zeros((m, m)))
        U = np.asfortranarray(self.rng.standard_normal((m, 16)) * 1e-3)
        return lambda: dsyrk(1.0, U, beta=1.0, c=C, lower=0, overwrite_c=1)

    def symv(self, m: int) -> float:
        return self._timed("symv", m, self._symv_fn)

    def syrk(self, m: int) -> float:
        return self._timed("syrk", m, self._syrk_fn)

    def _timed(self, name: str, m: int, make: Callable[[int], Callable[[], Any]]) -> float:
        key = (name, m)
        if key not in self.cache:
            if m == 0:
                return 0.0
            self.cache[key] = best_us(make(m), self.budget_s)
        return self.cache[key]

    def _rank_one_fn(self, m: int) -> Callable[[], Any]:
        from scipy.linalg.blas import dspr

        ap, x = np.zeros(m * (m + 1) // 2), self.rng.standard_normal(m) * 1e-3
        return lambda: dspr(m, -1.0, x, ap, lower=0, overwrite_ap=1)

    def expansion(self, t: int, d: int) -> float:
        key = ("expansion", t, d)
        if key not in self.cache:
            self.cache[key] = best_us(self._expansion_fn(t, d), self.budget_s)
        return self.cache[key]

    def trsv(self, m: int) -> float:
        key = ("trsv", m)
        if key not in self.cache:
            if m == 0:
                return 0.0
            packed, dense = self._trsv_fns(m)
            t_packed = best_us(packed, self.budget_s)
            t_dense = best_us(dense, self.budget_s)
            del packed, dense
            _malloc_trim()
            self.cache[key] = min(t_packed, t_dense)
            self.cache[("trsv-packed", m)] = t_packed
            self.cache[("trsv-dense", m)] = t_dense
        return self.cache[key]

    def matvec(self, m: int) -> float:
        key = ("matvec", m)
        if key not in self.cache:
            if m == 0:
                return 0.0
            self.cache[key] = best_us(self._matvec_fn(m), self.budget_s)
            _malloc_trim()
        return self.cache[key]

    def rank_one(self, m: int) -> float:
        """One packed symmetric rank-one update of size ``m`` (BLAS ``dspr``)."""
        key = ("rank_one", m)
        if key not in self.cache:
            if m == 0:
                return 0.0
            self.cache[key] = best_us(self._rank_one_fn(m), self.budget_s)
        return self.cache[key]

    def parts(self, learner: str, t: int, m: int, d: int) -> dict[str, list[Callable[[], Any]]]:
        """The primitives of one step of ``learner`` (see :meth:`of`) as calls, for timing
        them in rounds beside the learner's own steps (:func:`step_times`): each part maps to
        its alternatives (a solve: packed ``dtpsv`` or dense ``dtrsv``), the faster one counts.
        """
        makers = {"expansion": lambda n: [self._expansion_fn(n, d)],
                  "trsv": self._trsv_fns, "matvec": lambda n: [self._matvec_fn(n)],
                  "rank_one": lambda n: [self._rank_one_fn(n)]}
        out = {}
        for name, primitive, n, times in _floor_parts(learner, t, m):
            if not n and primitive != "expansion":  # nothing to solve or update yet
                out[name] = [lambda: None]
                continue
            calls = makers[primitive](n)
            out[name] = calls if times == 1 else [
                lambda f=f, times=times: [f() for _ in range(times)] for f in calls]
        return out

    def round_us(self, parts: dict[str, list[Callable[[], Any]]], calls: int) -> dict[str, float]:
        """One round: each part's mean µs per call over ``calls`` calls (its fastest
        alternative), on one BLAS thread as in :meth:`of`, and their ``total``."""
        from threadpoolctl import threadpool_limits

        perf = time.perf_counter
        out = {}
        with threadpool_limits(limits=1):
            for name, alternatives in parts.items():
                best = math.inf
                for fn in alternatives:
                    fn()
                    start = perf()
                    for _ in range(calls):
                        fn()
                    best = min(best, (perf() - start) / calls)
                out[name] = 1e6 * best
        return {**out, "total": sum(out.values())}

    def of(self, learner: str, t: int, m: int, d: int) -> dict[str, float]:
        """The floor of one step of ``learner`` at ``t`` points seen, dictionary size ``m``.

        The primitives run on one BLAS thread, their fastest at these sizes: a floor is the
        least the step could cost, whatever the threading the learners run with.
        """
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return self._of(learner, t, m, d)

    def _of(self, learner: str, t: int, m: int, d: int) -> dict[str, float]:
        timed = {"expansion": lambda n: self.expansion(n, d), "trsv": self.trsv,
                 "matvec": self.matvec, "rank_one": self.rank_one, "symv": self.symv,
                 "syrk": self.syrk}
        parts = {name: times * timed[primitive](n)
                 for name, primitive, n, times in _floor_parts(learner, t, m)}
        return {**parts, "total": sum(parts.values())}


def _floor_parts(learner: str, t: int, m: int) -> list[tuple[str, str, int, float]]:
    """The floor of one step of ``learner`` (``FLOOR_DEFINITIONS``): ``(part, primitive,
    size, times)`` for each part, at ``t`` points seen and ``m`` in the dictionary (for
    FunctionalGD the terms kept, ``t`` without a budget)."""
    if learner in WINDOW_FLOORS:  # t: the points in the window; m: the atoms
        solves = 2 if learner.startswith("Sketched") else 1
        return [("2 expansion(W)", "expansion", t, 2), (f"{solves} symv(m)", "symv", m, solves),
                (f"{solves} syrk16(m) / 8", "syrk", m, solves / 8)]
    if learner == "KONS":
        return [("expansion(t)", "expansion", t, 1), ("trsv(t)", "trsv", t, 1)]
    if learner == "SketchedKONS":
        return [("expansion(t)", "expansion", t, 1), ("2 trsv(m)", "trsv", m, 2)]
    if learner == "FunctionalGD":
        return [("expansion(m)", "expansion", m, 1)]
    if learner == "KRLS":
        return [("expansion(m)", "expansion", m, 1), ("trsv(m)", "trsv", m, 1),
                ("matvec(m)", "matvec", m, 1), ("rank_one(m)", "rank_one", m, 1)]
    raise ValueError(f"no floor defined for {learner!r}")


#: The BLAS work a windowed step cannot avoid (issue 28's floor, FLOOR_DEFINITIONS, is the
#: unbounded step's): the kernel rows at the input and at the point that leaves, the products
#: with the window's inverses by one triangle and their two rank-one changes a step (a new
#: atom in, the oldest out), applied 16 of a sign at a time by one rank-16 update; one inverse
#: for KONS, two for Sketched-KONS (its KORS's too).
WINDOW_FLOORS = {
    "KONS window": "2 expansion(W) + symv(m) + syrk16(m) / 8: the kernel rows over the W "
                   "points of the window at the input and at the point that leaves, one product "
                   "with the m x m inverse (one triangle) and its two rank-one changes, applied "
                   "16 of a sign at a time (a rank-16 update every 16 steps for each sign)",
    "SketchedKONS window": "2 expansion(W) + 2 symv(m) + 2 syrk16(m) / 8: as KONS, for the "
                           "preconditioner's inverse and KORS's",
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


# -- per-step time against the floor at fixed t --------------------------------------------------

#: The t at which each learner's per-step time is compared with its floor.
STEP_FLOOR_T = (1_000, 10_000)
STEP_FLOOR_D = 9  # Phishing's width
STEP_FLOOR_BUDGET = 1_000  # FunctionalGD's budget and KRLS's max_size: Phishing-sized


def step_floor_stream(n: int, d: int = STEP_FLOOR_D, seed: int = 0) -> tuple[list, list, list]:
    """A synthetic Phishing-like stream: ``d`` features in ``[0, 1]`` as dicts, a regression
    target and its sign as a ``+-1`` label; its first rows do not depend on ``n``."""
    X = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, d))
    noise = np.random.default_rng(seed + 1).standard_normal(n)
    y = np.sin(4.0 * X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 + 0.1 * noise
    rows = [{f"x{j}": v for j, v in enumerate(row)} for row in X.tolist()]
    return rows, y.tolist(), np.where(y > 0, 1.0, -1.0).tolist()


def step_floor_learners() -> dict[str, tuple[Callable[[], Any], bool, tuple[int, ...]]]:
    """Each learner at its defaults (the paper's setting for a Phishing-sized run): a builder,
    whether it takes the labels (logistic loss) and the t at which it is compared. KONS keeps
    all t points in a dense factor (0.4 GB at t = 10,000), so it is compared at t = 1,000."""
    from okoco import losses
    from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

    return {
        "KONS": (lambda: KONS(loss=losses.Logistic()), True, STEP_FLOOR_T[:1]),
        "SketchedKONS": (lambda: SketchedKONS(loss=losses.Logistic(), seed=0), True,
                         STEP_FLOOR_T),
        "FunctionalGD": (lambda: FunctionalGD(budget=STEP_FLOOR_BUDGET), False, STEP_FLOOR_T),
        "KRLS": (lambda: KRLS(max_size=STEP_FLOOR_BUDGET), False, STEP_FLOOR_T),
    }


#: Replays of each window (on copies of the learner), each followed by a round of the floor.
STEP_FLOOR_ROUNDS = 5


def step_times(name: str, marks: tuple[int, ...], floors: Floors | None = None,
               rounds: int = STEP_FLOOR_ROUNDS) -> dict:
    """``predict_one`` + ``learn_one`` of one learner up to ``max(marks)``, measured over the
    last tenth of the steps before each mark.

    The stream runs once: the mean and median µs per step over each window (wall clock), the
    mean CPU time of the process over the same steps (what other processes' load does not
    inflate) and the dictionary size. Then, with ``floors``, the window is replayed on
    ``rounds`` copies of the learner taken at its start, each replay followed at once by a
    round of the floor's primitives at the mark's size, as many calls of each as the window
    has steps. The pair with the least total time (the quietest moment of the shared machine)
    gives the step and the floor: the same statistic, timed side by side.
    """
    import copy

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
            cpu_at[i + 1] = cpu()
            sizes[i + 1] = model.dictionary_size
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
                predict, learn = replica.predict_one, replica.learn_one
                start = perf()
                for i in range(lo, t):
                    predict(rows[i])
                    learn(rows[i], targets[i])
                pairs.append((1e6 * (perf() - start) / (t - lo), floors.round_us(parts, t - lo)))
            # the quietest pair: a replay and the floor round right after it
            mark["replay_us"], mark["floor"] = min(pairs, key=lambda p: p[0] + p[1]["total"])
        out.append(mark)
    return {"marks": out}


def step_floors(floors: Floors, method: str | None, names: tuple[str, ...] = (),
                up_to: int | None = None) -> list[dict]:
    """Per-step time of each learner at t = 1,000 and 10,000 (a forked run each) against its
    floor at the same t and dictionary size, timed side by side in the same process
    (:func:`step_times`); ``up_to`` drops the larger t (a quick run).

    ``step_us`` and ``floor_us`` are the quietest of the window's replays, each followed by a
    round of the floor; ``pass_us``, ``median_us`` and ``cpu_us`` are the first pass's mean,
    median and CPU time per step over the same window.
    """
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
            floor = mark["floor"]
            total = floor["total"]
            rows.append({
                "learner": name, "t": mark["t"], "m": mark["m"], "d": STEP_FLOOR_D,
                "step_us": mark["replay_us"], "pass_us": mark["mean_us"],
                "median_us": mark["median_us"], "cpu_us": mark["cpu_us"], "floor_us": total,
                "parts_us": {k: v for k, v in floor.items() if k != "total"},
                "multiple": mark["replay_us"] / total,
                "pass_multiple": mark["mean_us"] / total,
                "median_multiple": mark["median_us"] / total,
                "cpu_multiple": mark["cpu_us"] / total,
            })
    return rows


# -- the machine ----------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return 1024 * int(line.split()[1])
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, cwd=os.path.dirname(__file__))
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict:
    """Platform, CPU, cores, memory, load, BLAS and library versions."""
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: info.get(k) for k in ("internal_api", "version", "num_threads",
                                          "threading_layer", "architecture")}
                for info in threadpool_info()]
    except ImportError:
        blas = []
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": affinity,
        "memory_bytes": _memory_total(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "blas": blas,
        "versions": {name: _version(dist) for name, dist in (
            ("okoco", "okoco"), ("numpy", "numpy"), ("scipy", "scipy"), ("river", "river"),
            ("scikit-learn", "scikit-learn"), ("vowpalwabbit", "vowpalwabbit"))},
        "git_commit": _git_commit(),
        "memory_method": memory_method(),
    }
