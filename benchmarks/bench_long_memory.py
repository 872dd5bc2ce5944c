"""Would an expert with a long memory close Auto's gaps at a bounded cost? (issue 29)

``Auto()`` mixes five windowed KONS experts over a ring of the last 400 points. On streams
of 1,000-1,500 stationary rows that window forgets what the unbounded learners remember. This
benchmark scores candidate long-memory experts -- Sketched-KONS over a long window (KORS keeps
a dictionary of atoms, so its preconditioner costs ``O(atoms^2)``), a plain KONS over a long
window, a linear-kernel KONS -- three ways, without changing ``Auto``:

1. **Families** (``bench_families``' training and held-out streams): each candidate is replayed
   alone, recording at every step its clipped prediction at the row predicted and at the row
   learned, on the targets ``Auto`` would give it (``Auto``'s own online standardization of
   regression targets, replicated by :class:`ExpertRecorder`). Its columns are appended to the
   recorded pool of ``bench_families`` (the predictions of 61 KONS experts over 400 points,
   ``--pool``) and ``bench_families.mixture_error`` scores "Auto's five experts + the
   candidate" with ``Auto``'s own mixing arithmetic, against the best single KONS setting of
   ``benchmarks/results/families.json`` (the same score as the ``Auto[...]`` rows there).
2. **The defaults table** (``bench_defaults``' nine streams, 1,000 rows): the same, with a pool
   of ``Auto``'s five experts recorded here, against ``Auto(max_size=None)`` and river's
   defaults from ``benchmarks/results/defaults.json`` (regression both as that table's
   ``Auto()`` row runs it, inside a ``TargetStandardScaler``, and on raw targets).
3. **Cost**: microseconds per step of each candidate, of ``KONS()`` and of ``Auto()`` on river
   ``RandomRBF`` (d = 10, logistic loss, ``StandardScaler | BinaryClassifier``), replayed
   alternately row by row after 3,000 steps (every window full), default BLAS threading.

An expert's predictions do not depend on the mixture, so the offline score is the score of an
``Auto`` holding the candidate as a sixth expert, or in place of one of the five (``swaps``),
or two candidates (``pairs``). ``AUTO_PLUS`` names such sets as real ``Auto`` objects
(:func:`long_auto`: a ring of 1,000 points, the five keeping their own windows of it; a
Sketched-KONS runs in Auto's step as its KONS do): ``--part check`` replays them on every
family stream against their offline scores, ``--part cost`` times them beside ``Auto()``,
and the summary table extrapolates ``Auto()``'s million-step time (7.8 min) by the ratio.

Usage::

    python -m benchmarks.bench_long_memory --part families   # record candidates, score them
    python -m benchmarks.bench_long_memory --part defaults
    python -m benchmarks.bench_long_memory --part cost --steps 3000   # every candidate alone
    # only KONS(), Auto() and the AUTO_PLUS Autos (--only matching no candidate), kept apart:
    python -m benchmarks.bench_long_memory --part cost --steps 3000 --tag autos --only none
    python -m benchmarks.bench_long_memory --part check     # real replays of AUTO_PLUS
    python -m benchmarks.bench_long_memory --part select    # swaps ranked on training only
    python -m benchmarks.bench_long_memory --report          # tables from the results file

The 61 experts' pool is read from ``bench_families``' cache (``OKOCO_POOL_DIR``,
``/tmp/okoco_pool``); the candidates' recordings are cached in ``OKOCO_LONG_MEMORY_DIR``
(``/tmp/okoco_long_memory``); results are written to ``benchmarks/results/long_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np
from river import preprocessing, stats
from river.datasets import synth

from benchmarks import bench_defaults, bench_families
from benchmarks.bench_defaults import run_one
from benchmarks.bench_families import (
    POOL,
    _Recording,
    held_out_families,
    kons_names,
    mixture_error,
    record_pool,
    training_families,
)
from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, Auto, SketchedKONS
from okoco.learners.auto import DEFAULT_WINDOW
from okoco.learners.auto import (
    KONS_EXPERTS as EXPERTS,  # Auto's five KONS before the long-memory expert
)

RESULTS = Path(__file__).resolve().parent / "results" / "long_memory.json"
FAMILIES = Path(__file__).resolve().parent / "results" / "families.json"
DEFAULTS = Path(__file__).resolve().parent / "results" / "defaults.json"
#: The candidates' recordings (the 61 experts' pool is read from ``bench_families.POOL_DIR``).
RECORDS = Path(os.environ.get("OKOCO_LONG_MEMORY_DIR", "/tmp/okoco_long_memory"))

# -- candidates -------------------------------------------------------------------------------


def _sketched(c: float, alpha: float, beta: float, window: int | None):
    return lambda loss, d: SketchedKONS(kernel=kernels.RBF(c / d), loss=loss, alpha=alpha,
                                        beta=beta, eta="hessian", seed=0, max_size=window)


def _kons(c: float, alpha: float, window: int | None):
    return lambda loss, d: KONS(kernel=kernels.RBF(c / d), loss=loss, alpha=alpha,
                                eta="hessian", max_size=window)


def _linear(alpha: float, window: int | None):
    return lambda loss, d: KONS(kernel=kernels.Linear(), loss=loss, alpha=alpha, eta="hessian",
                                max_size=window)


def candidates() -> dict:
    """name -> factory(loss, d): the long-memory experts measured (``loss`` None: squared)."""
    out = {}
    for c, alpha in ((0.2, 0.1), (0.5, 0.03)):
        for beta in (3.0, 10.0):
            out[f"SKONS(rbf={c:g}/d, alpha={alpha:g}, beta={beta:g}, W=1000)"] = _sketched(
                c, alpha, beta, 1000)
    out["SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)"] = _sketched(0.2, 0.03, 3.0, 1000)
    out["SKONS(rbf=0.2/d, alpha=0.03, beta=1, W=1000)"] = _sketched(0.2, 0.03, 1.0, 1000)
    out["SKONS(rbf=1/d, alpha=0.1, beta=10, W=1000)"] = _sketched(1.0, 0.1, 10.0, 1000)
    # Auto(max_size=None)'s lead on bananas is its narrow expert's (RBF(3/d)) memory
    for beta in (3.0, 10.0):
        out[f"SKONS(rbf=3/d, alpha=0.1, beta={beta:g}, W=1000)"] = _sketched(3.0, 0.1, beta, 1000)
    for alpha, beta in ((0.3, 3.0), (1.0, 3.0), (0.1, 1.0)):
        out[f"SKONS(rbf=3/d, alpha={alpha:g}, beta={beta:g}, W=1000)"] = _sketched(
            3.0, alpha, beta, 1000)
    out["KONS(rbf=3/d, alpha=0.1, W=700)"] = _kons(3.0, 0.1, 700)
    out["SKONS(rbf=0.2/d, alpha=0.1, beta=3, W=2000)"] = _sketched(0.2, 0.1, 3.0, 2000)
    out["SKONS(rbf=0.5/d, alpha=0.03, beta=3, W=2000)"] = _sketched(0.5, 0.03, 3.0, 2000)
    out["KONS(rbf=0.2/d, alpha=0.1, W=1000)"] = _kons(0.2, 0.1, 1000)
    out["KONS(rbf=0.5/d, alpha=0.03, W=1000)"] = _kons(0.5, 0.03, 1000)
    out["KONS(rbf=3/d, alpha=0.1, W=1000)"] = _kons(3.0, 0.1, 1000)
    out["KONS(rbf=0.2/d, alpha=0.03, W=1000)"] = _kons(0.2, 0.03, 1000)
    out["KONS(rbf=0.2/d, alpha=0.1, W=None)"] = _kons(0.2, 0.1, None)
    out["KONS(linear, alpha=0.1, W=1000)"] = _linear(0.1, 1000)
    out["KONS(linear, alpha=0.1, W=None)"] = _linear(0.1, None)
    return out


# Auto's five with candidates over a longer window, as a real Auto: its ring holds the
# longer window and the five keep their own windows (400, 400, 400, 200, 80) as shares of it;
# a candidate (a KONS or a Sketched-KONS, which Auto's step runs as it runs its own KONS) is
# one more expert over the ring. label -> (the five's experts left out, the candidates added):
# exactly the offline "five + candidates" (``check_part``), and a real Auto to time.
LONG_WINDOW = 1000
AUTO_PLUS = {
    "Auto()'s five over a ring of 1000": ((), ()),  # what the longer ring alone costs
    "Auto() + KONS(rbf=3/d, alpha=0.1, W=1000)": ((), ("KONS(rbf=3/d, alpha=0.1, W=1000)",)),
    "Auto() with KONS(rbf=3/d, alpha=0.1, W=1000) for KONS(rbf=3/d, alpha=0.1, W=400)": (
        (2,), ("KONS(rbf=3/d, alpha=0.1, W=1000)",)),
    "Auto() + SKONS(rbf=3/d, alpha=0.1, beta=3, W=1000)": (
        (), ("SKONS(rbf=3/d, alpha=0.1, beta=3, W=1000)",)),
    "Auto() + SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)": (
        (), ("SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",)),
    "Auto() + SKONS(rbf=0.2/d, alpha=0.1, beta=3, W=1000)": (
        (), ("SKONS(rbf=0.2/d, alpha=0.1, beta=3, W=1000)",)),
    "Auto() + SKONS(rbf=0.2/d, alpha=0.03, beta=1, W=1000)": (
        (), ("SKONS(rbf=0.2/d, alpha=0.03, beta=1, W=1000)",)),
    "Auto() with SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) for KONS(rbf=0.2/d, alpha=0.1, "
    "W=400)": ((0,), ("SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",)),
    "Auto() with SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) for KONS(rbf=0.5/d, alpha=0.03, "
    "W=400)": ((1,), ("SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",)),
    "Auto() with SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) for KONS(rbf=0.2/d, alpha=0.1, "
    "W=200)": ((3,), ("SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",)),
    "Auto() + SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) + SKONS(rbf=3/d, alpha=0.1, "
    "beta=10, W=1000)": ((), ("SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",
                              "SKONS(rbf=3/d, alpha=0.1, beta=10, W=1000)")),
}


def long_auto(extras: tuple, loss=None, dropped: tuple = (), window: int = LONG_WINDOW) -> Auto:
    """``Auto()``'s five experts but ``dropped`` (indices into ``EXPERTS``), plus the candidates
    named ``extras``, in one ``Auto`` whose shared ring holds ``window`` points."""
    five = tuple((c, a, eta, share * DEFAULT_WINDOW / window)
                 for j, (c, a, eta, share) in enumerate(EXPERTS) if j not in dropped)
    build = candidates()
    model = Auto(max_size=window) if loss is None else Auto(loss=loss, max_size=window)

    def experts(d):
        return Auto._build_experts(model, d, five) + [build[k](model._loss, d) for k in extras]
    model._build_experts = experts
    return model


# -- recording one expert as Auto would run it ------------------------------------------------


class ExpertRecorder(Auto):
    """One candidate expert, fed as ``Auto`` feeds its experts, recording what ``Auto`` records.

    ``Auto``'s target standardization (regression) is replicated: the expert learns
    ``(y - mean) / std`` with the statistics including ``y``. Each learn appends ``(prediction
    at the row predicted, prediction at the row learned (before learning it), y, mean, std
    before, mean, std after)``, the columns of ``bench_families._Recording`` for one expert
    (``Auto`` has no expert before its first learn: both predictions of that step are 0).
    """

    def __init__(self, factory, loss=None):
        super().__init__(loss=loss, max_size=None)
        self.factory = factory
        self.inner = None
        self.record: list = []
        self.predicted = None

    def predict_one(self, x: dict, with_dist: bool = False):
        self.predicted = None if self.inner is None else self.inner.predict_one(x)
        return 0.0 if self.predicted is None else self.predicted

    def learn_one(self, x: dict, y) -> None:
        y = float(y)
        before, first = (self.target_mean, self.target_std), self.inner is None
        if first:
            self.inner = self.factory(self._loss, len(x))
        target, statistics = self._standardized(y) if self._scales else (y, None)
        learned = float(self.inner.predict_one(x))
        self.inner.learn_one(x, target)
        if statistics is not None:  # Auto._learn_vec's arithmetic (Auto._standardized)
            self.target_count, self.target_mean, self._target_m2 = statistics
        predicted = 0.0 if first else (learned if self.predicted is None else self.predicted)
        self.record.append((predicted, learned, y, *before, self.target_mean, self.target_std))
        self.predicted = None


def _pipeline(make, task: str, mode: str):
    """``StandardScaler | make(loss)``: binary in a ``BinaryClassifier`` with the logistic loss;
    regression on raw targets (``mode="own"``, as ``okoco replay`` and the families run Auto)
    or inside a ``TargetStandardScaler`` (``mode="tss"``, the defaults table's ``Auto()`` row)."""
    if task == "binary":
        return preprocessing.StandardScaler() | BinaryClassifier(make(losses.Logistic()))
    model = preprocessing.StandardScaler() | make(None)
    return model if mode == "own" else preprocessing.TargetStandardScaler(model)


def _cache(directory: Path, stream: str, n: int, what: str) -> Path:
    return directory / f"{stream.replace('/', '_')}@{n}-{what}.npy"


def _recorded(path: Path, recorder, task: str, rows: list, mode: str) -> np.ndarray:
    """The ``record`` of ``recorder(loss)`` (a recording ``Auto``) replayed on ``rows`` in
    ``mode``, cached at ``path``."""
    if path.exists():
        return np.load(path)
    made = []

    def make(loss):
        made.append(recorder(loss))
        return made[-1]
    run_one(lambda task_, d: _pipeline(make, task_, mode), task, rows)
    out = np.array(made[-1].record)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def record_expert(stream: str, task: str, rows: list, factory, name: str, mode: str = "own",
                  directory: Path | None = None) -> np.ndarray:
    """(T, 7) rows of :class:`ExpertRecorder` for the candidate ``factory`` on ``rows``."""
    path = _cache(directory or RECORDS, stream, len(rows), f"{mode}-{name}")
    return _recorded(path, lambda loss: ExpertRecorder(factory, loss), task, rows, mode)


def record_auto_experts(stream: str, task: str, rows: list, mode: str = "own",
                        grid: tuple = EXPERTS, window: int = DEFAULT_WINDOW,
                        directory: Path | None = None) -> np.ndarray:
    """``bench_families``' pool recording of ``grid`` over ``window`` points, in ``mode``."""
    path = _cache(directory or RECORDS, stream, len(rows), f"{mode}-auto-W{window}-{len(grid)}")

    def recorder(loss):
        model = _Recording(loss=loss, max_size=window)
        model.record = []
        model._build_experts = lambda d: Auto._build_experts(model, d, grid)
        return model
    return _recorded(path, recorder, task, rows, mode)


def merge(pool: np.ndarray, columns: list[int], experts: list[np.ndarray]) -> np.ndarray:
    """A pool record of ``pool``'s experts ``columns`` followed by the recorded ``experts``
    (each from :func:`record_expert`), in ``mixture_error``'s layout. The targets and their
    statistics must be the same in every record (the same stream, as ``Auto`` would see it)."""
    k = (pool.shape[1] - 5) // 2
    tail = pool[:, 2 * k:]
    for e in experts:
        if e.shape[0] != pool.shape[0] or not np.array_equal(e[:, 2:], tail):
            raise ValueError("an expert's record is not of the pool's stream")
    Q = [pool[:, columns]] + [e[:, :1] for e in experts]
    P = [pool[:, [k + c for c in columns]]] + [e[:, 1:2] for e in experts]
    return np.hstack(Q + P + [tail])


def in_target_units(rec: np.ndarray, targets) -> np.ndarray:
    """A record made inside river's ``TargetStandardScaler`` (``mode="tss"``), rewritten so
    that ``mixture_error`` gives the MAE in the raw targets' units, as that wrapper scores it.

    The wrapper predicts ``M0 + S0 * p`` (``M0``, ``S0`` its statistics before the target) and
    teaches ``z = (Y - M1) / S1`` (after it). Auto's prediction is ``p = m0 + s0 * own`` and it
    learns ``(z - m1) / s1``; with ``m0' = M0 + S0 m0``, ``s0' = S0 s0``, ``y' = Y``,
    ``m1' = M1 + S1 m1``, ``s1' = S1 s1`` the error ``|m0' + s0' own - y'|`` is the raw one and
    the learned target ``(y' - m1') / s1'`` is unchanged (the loss and the weights with it)."""
    var = stats.Var()
    before, after = [], []
    for y in targets:
        before.append((var.mean.get(), var.get() ** 0.5))
        var.update(y)
        after.append((var.mean.get(), var.get() ** 0.5))
    (M0, S0), (M1, S1) = np.array(before).T, np.array(after).T
    out = rec.copy()
    k = (rec.shape[1] - 5) // 2
    _, m0, s0, m1, s1 = rec[:, 2 * k:].T
    out[:, 2 * k:] = np.column_stack([np.asarray(targets, dtype=float), M0 + S0 * m0, S0 * s0,
                                      M1 + S1 * m1, S1 * s1])
    return out


# -- scoring ----------------------------------------------------------------------------------


def auto_columns() -> list[int]:
    """Auto's five experts (``EXPERTS``) as columns of ``bench_families.POOL``."""
    return [POOL.index(e) for e in EXPERTS]


def _five_name(j: int) -> str:
    c, alpha, _, share = EXPERTS[j]
    return f"KONS(rbf={c:g}/d, alpha={alpha:g}, W={int(share * DEFAULT_WINDOW)})"


def score_streams(records: dict, names: list[str]) -> dict:
    """stream -> {"auto": error of Auto's five, name: {"alone", "with"}, "pairs": {"a + b":
    error of the five + both}} from merged records (columns: the five, then ``names``)."""
    out = {}
    five = list(range(5))
    k = len(names)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    for s, (task, rec) in records.items():
        row = {"auto": float(mixture_error(rec, task, np.array([five]))[0])}
        if names:
            alone = mixture_error(rec, task, np.arange(5, 5 + k)[:, None])
            with_ = mixture_error(rec, task, np.array([five + [5 + i] for i in range(k)]))
            for i, name in enumerate(names):
                row[name] = {"alone": float(alone[i]), "with": float(with_[i])}
        if names:  # the candidate in place of one of the five
            swaps = [(i, j) for i in range(k) for j in range(5)]
            swapped = mixture_error(rec, task, np.array([[c for c in five if c != j] + [5 + i]
                                                         for i, j in swaps]))
            row["swaps"] = {f"{names[i]} for {_five_name(j)}": float(e)
                            for (i, j), e in zip(swaps, swapped)}
        if pairs:
            both = mixture_error(rec, task, np.array([five + [5 + i, 5 + j] for i, j in pairs]))
            row["pairs"] = {f"{names[i]} + {names[j]}": float(e)
                            for (i, j), e in zip(pairs, both)}
        out[s] = row
    return out


def families_part(names: list[str], n: int, seeds: list[int], held_seeds: list[int]) -> dict:
    """Every candidate on every family stream: errors alone, Auto's five, five + candidate,
    and the reference errors of the cached families table (best KONS setting, ``KONS()``,
    the real ``Auto[5m, W=400]`` replay)."""
    store = json.loads(FAMILIES.read_text())
    build = candidates()
    out = {}
    for split, families in (("training", training_families(n, seeds)),
                            ("held-out", held_out_families(n, held_seeds))):
        records = {}
        for s, (task, loader) in families.items():
            pool = record_pool(s, task, loader, n)  # bench_families' cache of the 61 experts
            rows = loader(n)
            experts = []
            for name in names:
                start = time.perf_counter()
                experts.append(record_expert(s, task, rows, build[name], name))
                print(f"{split:9s} {s:26s} {name:48s} {time.perf_counter() - start:6.1f} s",
                      flush=True)
            records[s] = (task, merge(pool, auto_columns(), experts))
        scores = score_streams(records, names)
        for s, row in scores.items():
            ref = store["results"][f"{s}@{n}"]
            row["best_kons"] = min(ref[k][0] for k in kons_names())
            row["default_kons"] = ref[bench_families.DEFAULT_KONS][0]
            row["auto_replayed"] = ref.get("Auto[5m, W=400]", [math.nan])[0]
        out[split] = scores
    out["load"] = os.getloadavg()
    return out


def defaults_part(names: list[str], n: int = 1000) -> dict:
    """Every candidate on the defaults table's streams, in both regression modes."""
    build = candidates()
    out = {}
    for s, (task, loader) in bench_defaults.STREAMS.items():
        rows = loader(n)
        for mode in (("own", "tss") if task == "regression" else ("own",)):
            pool = record_auto_experts(s, task, rows, mode)
            experts = [record_expert(s, task, rows, build[name], name, mode) for name in names]
            print(f"defaults  {s:16s} {mode}", flush=True)
            rec = merge(pool, list(range(5)), experts)
            if mode == "tss":
                rec = in_target_units(rec, [y for _, y in rows])
            out.setdefault(mode, {})[s] = score_streams({s: (task, rec)}, names)[s]
    out["load"] = os.getloadavg()
    return out


def cost_part(names: list[str], warm: int = 3000, steps: int = 1000) -> dict:
    """us/step of each candidate, ``KONS()`` and ``Auto()`` on river ``RandomRBF`` (d = 10,
    logistic loss), replayed alternately row by row (the order rotating) over ``steps`` steps
    after ``warm``, default BLAS threading; wall and CPU time and their ratios to ``KONS()``."""
    build = candidates()
    models = {name: build[name](losses.Logistic(), 10) for name in names}
    models["KONS()"] = KONS(loss=losses.Logistic())
    models["Auto()"] = Auto(loss=losses.Logistic())
    for label, (dropped, extras) in AUTO_PLUS.items():
        models[label] = long_auto(extras, losses.Logistic(), dropped)
    learners = models
    models = {k: preprocessing.StandardScaler() | BinaryClassifier(m) for k, m in models.items()}
    stream = synth.RandomRBF(seed_model=7, seed_sample=11, n_classes=2, n_features=10,
                             n_centroids=50)
    load_before = os.getloadavg()
    wall, cpu = bench_families.alternate_times(models, stream, warm, steps, rotate=True)
    out = {}
    for k, learner in learners.items():
        kors = getattr(learner, "_kors", None)
        out[k] = {"us": 1e6 * wall[k] / steps, "cpu_us": 1e6 * cpu[k] / steps,
                  "ratio": wall[k] / wall["KONS()"], "cpu_ratio": cpu[k] / cpu["KONS()"],
                  "stored": None if isinstance(learner, Auto) else int(learner.dictionary_size),
                  "atoms": None if kors is None else int(kors.size)}
    return {"learners": out, "warm": warm, "steps": steps, "load_before": load_before,
            "load_after": os.getloadavg()}


def check_part(n: int, seeds: list[int], held_seeds: list[int]) -> dict:
    """Each ``AUTO_PLUS`` replayed for real on every family stream, beside its offline score
    (Auto's five + the candidates' records): the offline arithmetic is the real Auto's."""
    build = candidates()
    out = {}
    for families in (training_families(n, seeds), held_out_families(n, held_seeds)):
        for s, (task, loader) in families.items():
            rows = loader(n)
            pool = record_pool(s, task, loader, n)
            for label, (dropped, extras) in AUTO_PLUS.items():
                kept = [c for j, c in enumerate(auto_columns()) if j not in dropped]
                rec = merge(pool, kept, [record_expert(s, task, rows, build[k], k)
                                         for k in extras])
                every = np.array([list(range(len(kept) + len(extras)))])
                offline = float(mixture_error(rec, task, every)[0])
                real = run_one(lambda task_, d, e=extras, x=dropped: _pipeline(
                    lambda loss: long_auto(e, loss, x), task_, "own"), task, rows)[0]
                out.setdefault(label, {})[s] = [real, offline]
                print(f"check {s:26s} {label:70s} {real:.6g} {offline:.6g}", flush=True)
    return out


def long_part(labels: tuple, n: int = 100_000, every: int = 10_000, window: int = 1000) -> dict:
    """``Auto()`` and the ``AUTO_PLUS`` sets ``labels`` along ``n`` steps of river
    ``RandomRBF`` (as ``cost_part``), replayed alternately row by row: every ``every`` steps
    the us/step over the last ``window`` steps of each, and the atoms of each Sketched-KONS
    expert (KORS's dictionary), so that a bounded step is seen to stay flat."""
    models = {"Auto()": Auto(loss=losses.Logistic())}
    for label in labels:
        dropped, extras = AUTO_PLUS[label]
        models[label] = long_auto(extras, losses.Logistic(), dropped)
    learners = models
    models = {k: preprocessing.StandardScaler() | BinaryClassifier(m) for k, m in models.items()}
    stream = synth.RandomRBF(seed_model=7, seed_sample=11, n_classes=2, n_features=10,
                             n_centroids=50)
    out = {"n": n, "every": every, "window": window, "load_before": os.getloadavg(),
           "records": {k: [] for k in models}}
    wall = dict.fromkeys(models, 0.0)
    order = list(models)
    for i, (x, y) in enumerate(stream.take(n), start=1):
        for name in order[i % len(order):] + order[:i % len(order)]:
            start = time.perf_counter()
            models[name].predict_one(x)
            models[name].learn_one(x, y)
            if i % every > every - window or i % every == 0:
                wall[name] += time.perf_counter() - start
        if i % every == 0:
            for k, learner in learners.items():
                atoms = [int(e._kors.size) for e in learner.experts if hasattr(e, "_kors")]
                out["records"][k].append({"t": i, "us": 1e6 * wall[k] / window, "atoms": atoms})
                wall[k] = 0.0
            print(f"long t={i}", {k: round(v[-1]["us"]) for k, v in out["records"].items()},
                  flush=True)
    out["load_after"] = os.getloadavg()
    return out


LONG_SETS = ("Auto() with SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) for KONS(rbf=0.5/d, "
             "alpha=0.03, W=400)",
             "Auto() + SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)")


DRIFT_SETS = ("Auto() + SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",
              "Auto() with SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) for KONS(rbf=0.2/d, "
              "alpha=0.1, W=400)",
              "Auto() with SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000) for KONS(rbf=0.5/d, "
              "alpha=0.03, W=400)")


#: The long-memory candidates whose standalone step costs about a KONS() step or less (the
#: cost table), so that one of them in place of one of the five keeps Auto's cost.
AFFORDABLE = ("SKONS(rbf=0.2/d, alpha=0.1, beta=3, W=1000)",
              "SKONS(rbf=0.2/d, alpha=0.1, beta=10, W=1000)",
              "SKONS(rbf=0.5/d, alpha=0.03, beta=3, W=1000)",
              "SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)",
              "SKONS(rbf=0.2/d, alpha=0.03, beta=1, W=1000)",
              "SKONS(rbf=0.2/d, alpha=0.1, beta=3, W=2000)")


def select_part(n: int, seeds: list[int], names=AFFORDABLE) -> list:
    """Each affordable candidate in place of each of the five, ranked by the score ``Auto``'s
    grid was chosen by (``bench_families.selection_score``) on the *training* families only:
    ``[label, score, within 3%, median ratio, worst ratio]``, best first."""
    store = json.loads(FAMILIES.read_text())
    build = candidates()
    records = {}
    for s, (task, loader) in training_families(n, seeds).items():
        rows = loader(n)
        experts = [record_expert(s, task, rows, build[name], name) for name in names]
        records[s] = (task, merge(record_pool(s, task, loader, n), auto_columns(), experts))
    subsets, labels = [list(range(5))], ["Auto()'s five"]
    for i, name in enumerate(names):
        for j in range(5):
            subsets.append([c for c in range(5) if c != j] + [5 + i])
            labels.append(f"{name} for {_five_name(j)}")
    scores = bench_families.selection_score(store, records, subsets, n)
    best, _ = bench_families.pool_ratios(store, records, subsets, n)
    rows = [[label, float(score), int((b <= 1.03).sum()), float(np.median(b)), float(b.max())]
            for label, score, b in zip(labels, scores, best)]
    return sorted(rows, key=lambda row: -row[1])


def drift_part(n: int = 5000, seeds: tuple = (0, 1, 2)) -> dict:
    """``Auto()`` and the affordable ``AUTO_PLUS`` sets (``DRIFT_SETS``) on ``bench_drift``'s
    streams, as that benchmark replays them (raw regression targets): the error over the
    stream and, per drift point, the error before and after it and the samples to recover."""
    from benchmarks import bench_drift

    def build(label):
        dropped, extras = AUTO_PLUS.get(label, ((), ()))

        def make(task):
            if task == "regression":
                return preprocessing.StandardScaler() | long_auto(extras, None, dropped) \
                    if label != "Auto()" else preprocessing.StandardScaler() | Auto()
            inner = long_auto(extras, losses.Logistic(), dropped) if label != "Auto()" else \
                Auto(loss=losses.Logistic())
            return preprocessing.StandardScaler() | BinaryClassifier(inner)
        return make
    out = {"n": n, "seeds": list(seeds), "load_before": os.getloadavg(), "runs": {}}
    for seed in seeds:
        for stream, (task, rows, points) in bench_drift.streams(n, seed).items():
            for label in ("Auto()", *DRIFT_SETS):
                errors, us = bench_drift.replay(build(label)(task), task, rows)
                run = {"seed": seed, "us": us, **bench_drift.summarise(errors, points)}
                out["runs"].setdefault(stream, {}).setdefault(label, []).append(run)
                print(f"drift {stream:13s} {seed} {label[:60]:60s} {run['error']:.4g}",
                      flush=True)
    out["load_after"] = os.getloadavg()
    return out


def drift_table(drift: dict) -> str:
    """Mean error over the seeds (and the recoveries, per seed) beside ``drift.json``'s ARF."""
    stored = json.loads((RESULTS.parent / "drift.json").read_text())
    lines = ["| stream | learner | error (mean over seeds) | river ARF (drift.json) | "
             "per drift point: error after (1,000) / recovery (samples, per seed) |",
             "|---|---|---:|---:|---|"]
    for stream, runs in drift["runs"].items():
        arf = stored["runs"].get(stream, {}).get("ARF")
        arf_error = f"{np.mean([r['error'] for r in arf]):.4g}" if arf and \
            stored.get("n") == drift["n"] and stored.get("seeds") == drift["seeds"] else ""
        for label, rs in runs.items():
            points = []
            for k, d in enumerate(rs[0]["drifts"]):
                rec = ", ".join("-" if r["drifts"][k]["recovery"] is None
                                else str(r["drifts"][k]["recovery"]) for r in rs)
                after = np.mean([r["drifts"][k]["after"] for r in rs])
                points.append(f"{d['point']}: {after:.4g} / {rec}")
            lines.append(f"| {stream} | {label} | {np.mean([r['error'] for r in rs]):.4g} | "
                         f"{arf_error} | {'; '.join(points)} |")
    return "\n".join(lines)


# -- reading the results -----------------------------------------------------------------------


def _summary(rows: dict, key) -> dict:
    """Within 3% of the best KONS setting, median / worst ratio, over 2% worse than KONS()."""
    ratios = [key(r) / r["best_kons"] for r in rows.values()]
    to_default = [key(r) / r["default_kons"] for r in rows.values()]
    return {"streams": len(ratios), "within_3pct": sum(r <= 1.03 for r in ratios),
            "median": statistics.median(ratios), "worst": max(ratios),
            "geo_mean": math.exp(statistics.fmean(map(math.log, ratios))),
            "worse_than_kons_2pct": sum(q > 1.02 for q in to_default)}


def _best(fam: dict, kind: str, count: int) -> list[str]:
    """The ``count`` sets of a family table's ``kind`` ("pairs", "swaps") that score best on
    the training families (most streams within 3% of the best KONS setting, then the lowest
    geo-mean)."""
    rows = fam.get("training", {})
    if not rows or kind not in next(iter(rows.values())):
        return []
    sets = next(iter(rows.values()))[kind]
    scored = [(_summary(rows, lambda r, p=p: r[kind][p]), p) for p in sets]
    scored.sort(key=lambda t: (-t[0]["within_3pct"], t[0]["geo_mean"]))
    return [p for _, p in scored[:count]]


def best_pairs(fam: dict, count: int = 5) -> list[str]:
    """The pairs of candidates whose addition to the five scores best on the training
    families."""
    return _best(fam, "pairs", count)


def best_swaps(fam: dict, count: int = 5) -> list[str]:
    """As :func:`best_pairs`, for a candidate in place of one of the five."""
    return _best(fam, "swaps", count)


def families_table(fam: dict, names: list[str]) -> str:
    lines = ["| expert set | training: within 3% | training: median / worst (geo-mean) | "
             "training: > 2% worse than KONS() | held-out: within 3% | held-out: median / "
             "worst (geo-mean) | held-out: > 2% worse than KONS() |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    sets = [("Auto[5m, W=400] (replayed, families.json)", lambda r: r["auto_replayed"]),
            ("Auto's five (offline)", lambda r: r["auto"])]
    first = next(iter(fam.get("training", {}).values()), {})
    for name in (n for n in names if n in first):
        sets += [(f"five + {name}", lambda r, n=name: r[n]["with"]),
                 (f"{name} alone", lambda r, n=name: r[n]["alone"])]
    sets += [(f"five + {p}", lambda r, p=p: r["pairs"][p]) for p in best_pairs(fam)]
    sets += [(f"five with {p}", lambda r, p=p: r["swaps"][p]) for p in best_swaps(fam)]
    for label, key in sets:
        cells = []
        for split in ("training", "held-out"):
            rows = fam.get(split, {})
            if not rows or any(isinstance(key(r), float) and math.isnan(key(r))
                               for r in rows.values()):
                cells += ["", "", ""]
                continue
            m = _summary(rows, key)
            cells += [f"{m['within_3pct']}/{m['streams']}",
                      f"{m['median']:.3f} / {m['worst']:.3f} ({m['geo_mean']:.3f})",
                      f"{m['worse_than_kons_2pct']}/{m['streams']}"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def defaults_table(dft: dict, names: list[str], mode: str, pairs: list[str] = (),
                   swaps: list[str] = ()) -> str:
    """Errors on the defaults table's streams, one row per expert set (Auto's five, five +
    each candidate, five + each of ``pairs``): the error and its ratio to
    ``Auto(max_size=None)`` (``mode="tss"``: the same pipeline; an asterisk where the set does
    not beat every river default), then the counts of issue 29's two targets."""
    ref = json.loads(DEFAULTS.read_text())["results"]
    rows = {**dft.get("own", {}), **dft.get(mode, {})}  # binary streams: one mode
    streams = [s for s in bench_defaults.STREAMS if s in rows]
    unb = {s: ref["Auto(max_size=None)"][s][0] for s in streams}
    river = {s: min(ref[k][s][0] for k in bench_defaults.RIVER_DEFAULTS if s in ref.get(k, {}))
             for s in streams}
    lines = ["| expert set | " + " | ".join(streams) + " | within 2% of Auto(max_size=None) "
             "| beats every river default |", "|---|" + "---:|" * (len(streams) + 2),
             "| Auto(max_size=None) (defaults.json) | "
             + " | ".join(f"{unb[s]:.4g}" for s in streams) + " | | |",
             "| best river default (defaults.json) | "
             + " | ".join(f"{river[s]:.4g}" for s in streams) + " | | |"]
    first = rows[streams[0]]  # a part run with other candidates shows what it has
    sets = [("Auto's five", lambda r: r["auto"])]
    sets += [(f"five + {n}", lambda r, n=n: r[n]["with"]) for n in names if n in first]
    sets += [(f"five + {p}", lambda r, p=p: r["pairs"][p]) for p in pairs
             if p in first.get("pairs", {})]
    sets += [(f"five with {p}", lambda r, p=p: r["swaps"][p]) for p in swaps
             if p in first.get("swaps", {})]
    for label, key in sets:
        errors = {s: key(rows[s]) for s in streams}
        cells = [f"{e:.4g} ({e / unb[s]:.3f}){'' if e < river[s] else '*'}"
                 for s, e in errors.items()]
        within = sum(errors[s] <= 1.02 * unb[s] for s in streams)
        beats = sum(errors[s] < river[s] for s in streams)
        lines.append(f"| {label} | " + " | ".join(cells)
                     + f" | {within}/{len(streams)} | {beats}/{len(streams)} |")
    return "\n".join(lines)


def cost_table(cost: dict) -> str:
    lines = ["| learner | us/step | CPU us/step | / KONS() | CPU / KONS() | dictionary_size | "
             "KORS atoms |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k, c in cost["learners"].items():
        lines.append(f"| {k} | {c['us']:.0f} | {c['cpu_us']:.0f} | {c['ratio']:.2f} | "
                     f"{c['cpu_ratio']:.2f} | {c['stored'] if c['stored'] is not None else ''} | "
                     f"{c['atoms'] if c['atoms'] is not None else ''} |")
    return "\n".join(lines)


#: The million-step run of ``Auto()`` (docs/defaults.md, "A million steps"), in minutes: the
#: extrapolations below scale it by a measured ratio of time per step to ``Auto()``'s.
AUTO_MILLION_MINUTES = 7.8


def plus_error(row: dict, names: list[str], dropped: tuple, extras: tuple) -> float | None:
    """The offline error of an ``AUTO_PLUS`` set from a scored stream (``score_streams``)."""
    if not dropped and not extras:
        return row["auto"]
    if not dropped and len(extras) == 1:
        return row.get(extras[0], {}).get("with")
    if not dropped and len(extras) == 2:
        a, b = sorted(extras, key=lambda k: names.index(k) if k in names else -1)
        return row.get("pairs", {}).get(f"{a} + {b}")
    if len(dropped) == 1 and len(extras) == 1:
        return row.get("swaps", {}).get(f"{extras[0]} for {_five_name(dropped[0])}")
    return None


def summary_table(results: dict) -> str:
    """Each ``AUTO_PLUS`` set: the families (within 3% of the best KONS setting, median /
    worst ratio), the defaults table (within 2% of ``Auto(max_size=None)``, beats every river
    default; regression in a TargetStandardScaler), its time per step over ``Auto()``'s in
    each cost run, and the million-step time that ratio extrapolates to."""
    names = results.get("names", [])
    fam, dft = results.get("families", {}), results.get("defaults", {})
    ref = json.loads(DEFAULTS.read_text())["results"]
    runs = [results[k] for k in results if k.startswith("cost")
            and all(label in results[k]["learners"] for label in AUTO_PLUS)]
    lines = ["| Auto | training: within 3% | training: median / worst | held-out: within 3% | "
             "held-out: median / worst | defaults: within 2% of Auto(max_size=None) | "
             "defaults: beats every river default | time per step / Auto()'s (wall; CPU) | "
             "1M steps, extrapolated | median ratio along 100,000 steps (--part long) |",
             "|---|" + "---:|" * 9]
    long = results.get("long", {}).get("records", {})
    for label, (dropped, extras) in {"Auto()": ((), ()), **AUTO_PLUS}.items():
        cells = []
        for split in ("training", "held-out"):
            rows = fam.get(split, {})
            errors = {s: plus_error(r, names, dropped, extras) for s, r in rows.items()}
            if not rows or any(e is None for e in errors.values()):
                cells += ["", ""]
                continue
            m = _summary({s: {**r, "e": errors[s]} for s, r in rows.items()}, lambda r: r["e"])
            cells += [f"{m['within_3pct']}/{m['streams']}", f"{m['median']:.3f} / {m['worst']:.3f}"]
        rows = {**dft.get("own", {}), **dft.get("tss", {})}
        errors = {s: plus_error(r, names, dropped, extras) for s, r in rows.items()}
        if rows and all(e is not None for e in errors.values()):
            within = sum(e <= 1.02 * ref["Auto(max_size=None)"][s][0] for s, e in errors.items())
            beats = sum(e < min(ref[k][s][0] for k in bench_defaults.RIVER_DEFAULTS)
                        for s, e in errors.items())
            cells += [f"{within}/{len(errors)}", f"{beats}/{len(errors)}"]
        else:
            cells += ["", ""]
        key = label if label in AUTO_PLUS else "Auto()"
        wall = [c["learners"][key]["us"] / c["learners"]["Auto()"]["us"] for c in runs]
        cpu = [c["learners"][key]["cpu_us"] / c["learners"]["Auto()"]["cpu_us"] for c in runs]
        cells += [", ".join(f"{w:.2f}" for w in wall) + "; " + ", ".join(f"{c:.2f}" for c in cpu)
                  if runs else "",
                  f"{AUTO_MILLION_MINUTES * statistics.fmean(wall):.1f} min" if runs else ""]
        if label in long and "Auto()" in long:
            along = statistics.median(r["us"] / a["us"] for r, a in zip(long[label],
                                                                        long["Auto()"]))
            cells.append(f"{along:.2f} ({AUTO_MILLION_MINUTES * along:.1f} min)")
        else:
            cells.append("")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(results: dict) -> str:
    names = results.get("names", list(candidates()))
    parts = ["## Summary: Auto's five with long-memory experts", "", summary_table(results), ""]
    if "families" in results:
        parts += ["## Families (ratios to the best single KONS setting)", "",
                  families_table(results["families"], names), ""]
    if "defaults" in results:
        for mode, title in (("tss", "regression in a TargetStandardScaler (the table's Auto() "
                                    "row)"), ("own", "regression on raw targets")):
            parts += [f"## Defaults table, {title}: error (ratio to Auto(max_size=None))", "",
                      defaults_table(results["defaults"], names, mode,
                                     best_pairs(results.get("families", {})),
                                     best_swaps(results.get("families", {}))), ""]
    for key in (k for k in results if k.startswith("cost")):
        c = results[key]
        parts += [f"## {key.capitalize()}: RandomRBF after {c['warm']} steps, {c['steps']} "
                  f"steps timed (load {c['load_before'][0]:.2f} -> {c['load_after'][0]:.2f})",
                  "", cost_table(c), ""]
    if "drift" in results:
        d = results["drift"]
        parts += [f"## Drift (bench_drift's streams, {d['n']} samples, seeds "
                  f"{', '.join(map(str, d['seeds']))}; load {d['load_before'][0]:.2f} -> "
                  f"{d['load_after'][0]:.2f})", "", drift_table(d), ""]
    if "long" in results:
        g = results["long"]
        parts += [f"## Along {g['n']:,} steps of RandomRBF (us/step over the last {g['window']} "
                  f"steps of every {g['every']:,}; load {g['load_before'][0]:.2f} -> "
                  f"{g['load_after'][0]:.2f})", "", "| Auto | us/step along the stream | "
                  "Sketched-KONS atoms along the stream |", "|---|---|---|"]
        for k, recs in g["records"].items():
            atoms = ", ".join("/".join(map(str, r["atoms"])) for r in recs if r["atoms"])
            us = ", ".join(f"{r['us']:.0f}" for r in recs)
            parts.append(f"| {k} | {us} | {atoms} |")
        parts.append("")
    if "check" in results:
        parts += ["## Offline scores against real replays of Auto's five with candidates over "
                  "1,000 points", "", "| Auto | streams | offline == real (to 1e-9) | "
                  "largest difference |", "|---|---:|---:|---:|"]
        for label, rows in results["check"].items():
            diffs = [abs(a - b) for a, b in rows.values()]
            parts.append(f"| {label} | {len(diffs)} | {sum(d <= 1e-9 for d in diffs)} | "
                         f"{max(diffs):.2g} |")
        parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("families", "defaults", "cost", "check", "drift",
                                           "long", "select", "all"),
                        default="all")
    parser.add_argument("--only", default="", help="comma-separated candidate substrings")
    parser.add_argument("--n", type=int, default=1500, help="samples per family stream")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--held-seeds", default="0")
    parser.add_argument("--steps", type=int, default=1000, help="cost: steps timed")
    parser.add_argument("--tag", default="", help="cost: keep this run apart under 'cost TAG'")
    parser.add_argument("--report", action="store_true", help="only print the tables")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = [k for k in candidates() if not args.only or any(
        o in k for o in args.only.split(","))]
    results = json.loads(args.output.read_text()) if args.output.exists() else {}
    if not args.report:
        seeds = [int(s) for s in args.seeds.split(",") if s]
        held = [int(s) for s in args.held_seeds.split(",") if s]
        if args.part in ("families", "all"):
            results["families"] = families_part(names, args.n, seeds, held)
        if args.part in ("defaults", "all"):
            results["defaults"] = defaults_part(names)
        if args.part in ("cost", "all"):
            results["cost" + (f" {args.tag}" if args.tag else "")] = cost_part(
                names, steps=args.steps)
        if args.part in ("check", "all"):
            results["check"] = check_part(args.n, seeds, held)
        if args.part in ("drift", "all"):
            results["drift"] = drift_part()
        if args.part in ("long", "all"):
            results["long"] = long_part(LONG_SETS)
        if args.part in ("select", "all"):
            results["select"] = select_part(args.n, seeds)
            for label, score, near, median, worst in results["select"][:8]:
                print(f"{score:7.3f}  {label:70s} {near}/20 within 3%, median {median:.3f}, "
                      f"worst {worst:.3f}")
        if args.part in ("families", "defaults", "all"):
            results["names"] = names
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=0))
    text = report(results)
    print(text)
    return text


if __name__ == "__main__":
    main()
