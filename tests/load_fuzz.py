"""Fuzzing ``okoco.load``: mutated copies of valid files of every learner and wrapper, each
loaded (and, if it loads, used) in a worker process, so that a crash of the compiled core is a
finding and not the end of the run.

A case is a mutation of one saved model: a size, an index or a column map edited, a scalar
made non-finite, an array member cut or reshaped, members added or removed. Its outcome is

- ``refused``: ``okoco.load`` raised ``ValueError`` (the time it took is recorded);
- ``same``: the file loaded and the model answers exactly as the original's file does (the
  same predictions at the probes, before and after a few more learned rows);
- ``different``: it loaded and answers otherwise, or raises when used;
- ``crash``: the worker process died (a segmentation fault, an abort);
- ``error``: ``okoco.load`` raised something else than ``ValueError``.

Run as a script for the long selection::

    python tests/load_fuzz.py [--cases N] [--seed S]
"""

from __future__ import annotations

import copy
import gc
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
META = "__okoco__"

# -- the models ------------------------------------------------------------------------------


#: The text features of the models with an encoder of text (``TEXT_MODELS``): a city,
#: one-hot encoded, and a street, hashed.
CITIES, STREETS = ("Paris", "Lyon", "Nice"), tuple(f"street {i}" for i in range(9))


def _rows(n: int, seed: int, labels=None, text: bool = False) -> list:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.uniform(-1, 1))}
        if i % 3 == 0:
            x["c"] = float(rng.normal())
        if text:
            x["city"], x["street"] = CITIES[i % 3], STREETS[int(rng.integers(len(STREETS)))]
        y = float(np.tanh(x["a"] - x["b"]) + 0.1 * rng.normal())
        rows.append((x, y if labels is None else labels[(int(y > 0) + (i % 5 == 0)) % len(labels)]))
    return rows


def _builders() -> dict:
    """Name -> (a function building the untrained model, whether it classifies)."""
    from river import preprocessing

    from okoco import BinaryClassifier, MulticlassClassifier, losses
    from okoco import preprocessing as okp
    from okoco.intervals import IntervalRegressor
    from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto, FunctionalGD, SketchedKONS
    from okoco.pipelines import shared

    return {
        "KONS": (lambda: KONS(), False),
        "KONS-window": (lambda: KONS(max_size=12), False),
        "SketchedKONS": (lambda: SketchedKONS(seed=1), False),
        "SketchedKONS-window": (lambda: SketchedKONS(max_size=12, seed=1), False),
        "FunctionalGD": (lambda: FunctionalGD(), False),
        "FunctionalGD-budget": (lambda: FunctionalGD(budget=10), False),
        "KRLS": (lambda: KRLS(nu=0.05), False),
        "KRLS-max_size": (lambda: KRLS(nu=1e-3, max_size=8), False),
        "PROSNKONS": (lambda: PROSNKONS(seed=2), False),
        "CONKONS": (lambda: CONKONS(seed=2), False),
        "Auto": (lambda: Auto(), False),
        "Auto-window": (lambda: Auto(max_size=16), False),
        "BinaryClassifier": (lambda: BinaryClassifier(KONS(loss=losses.Logistic())), True),
        "Multiclass-KONS": (lambda: MulticlassClassifier(), True),
        "Multiclass-FGD": (lambda: MulticlassClassifier(FunctionalGD(loss=losses.Logistic())),
                           True),
        "Multiclass-Auto": (lambda: MulticlassClassifier(Auto(max_size=16)), True),
        "Pipeline": (lambda: okp.TargetStandardScaler(okp.StandardScaler() | KONS()), False),
        "River-pipeline": (lambda: preprocessing.TargetStandardScaler(
            preprocessing.StandardScaler() | KRLS(nu=0.05)), False),
        "IntervalRegressor": (lambda: okp.StandardScaler() | IntervalRegressor(KRLS(nu=0.05)),
                              False),
        "Text-pipeline": (lambda: okp.TargetStandardScaler(
            okp.encode_text(["city"], ["street"], n_features=8) | KONS()), False),
        "Shared-pipeline": (lambda: shared(preprocessing.StandardScaler() | KONS(max_size=12)),
                            False),
    }


MODELS = ("KONS", "KONS-window", "SketchedKONS", "SketchedKONS-window", "FunctionalGD",
          "FunctionalGD-budget", "KRLS", "KRLS-max_size", "PROSNKONS", "CONKONS", "Auto",
          "Auto-window", "BinaryClassifier", "Multiclass-KONS", "Multiclass-FGD",
          "Multiclass-Auto", "Pipeline", "River-pipeline", "IntervalRegressor", "Text-pipeline",
          "Shared-pipeline")
TEXT_MODELS = frozenset({"Text-pipeline"})

LABELS = ("x", "y", "z")
PROBES = [{"a": 0.3, "b": -0.2}, {"a": -1.0, "c": 2.0}, {"b": 0.5, "zz": 1.0}, {}]
TEXT_PROBES = [{"a": 0.3, "city": "Lyon", "street": "street 4"}, {"city": "Nice"},
               {"b": 0.1, "city": "Rome", "street": "street 99"}]


def save_model(name: str, path: Path, n: int = 40) -> Path:
    """``name`` trained on ``n`` rows, saved to ``path`` with ``okoco.save``."""
    import okoco

    build, classifies = _builders()[name]
    model = build()
    labels = (LABELS[:2] if name == "BinaryClassifier" else LABELS) if classifies else None
    for x, y in _rows(n, seed=0, labels=labels, text=name in TEXT_MODELS):
        model.learn_one(x, y)
    return okoco.save(model, path)


def answers(model, classifies: bool, binary: bool, text: bool = False) -> list:
    """What the model says at the probes, then after 6 more learned rows (strings: exact)."""
    def say():
        out = []
        for x in PROBES + (TEXT_PROBES if text else []):
            if classifies:
                out.append(sorted(model.predict_proba_one(x).items(), key=repr))
            elif hasattr(model, "calibrator") or "IntervalRegressor" in getattr(model, "steps",
                                                                                 {}):
                out.append(model.predict_one(x, with_interval=True))
            else:
                out.append(model.predict_one(x))
        return repr(out)

    labels = (LABELS[:2] if binary else LABELS) if classifies else None
    seen = [say()]
    for x, y in _rows(6, seed=9, labels=labels, text=text):
        model.learn_one(x, y)
    seen.append(say())
    return seen


# -- reading and writing archives as the fuzzer needs ------------------------------------------


def read_archive(path: Path) -> tuple[dict, dict]:
    with zipfile.ZipFile(path) as zf:
        arrays = {}
        for info in zf.infolist():
            with zf.open(info) as fp:
                arrays[info.filename[:-4]] = np.lib.format.read_array(fp, allow_pickle=False)
    meta = json.loads(str(arrays.pop(META)))
    return meta, arrays


def write_archive(path: Path, meta: dict, arrays: dict, raw: dict | None = None) -> None:
    """``meta`` (with ``raw`` placeholders replaced by JSON text the encoder never writes:
    ``NaN``, ``1e999``) and ``arrays``, in okoco's layout."""
    text = json.dumps(meta, allow_nan=True, separators=(",", ":"))
    for placeholder, literal in (raw or {}).items():
        text = text.replace(json.dumps(placeholder), literal)
    with zipfile.ZipFile(path, "w") as zf:
        for name, array in {META: np.array(text), **arrays}.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=False)
            zf.writestr(name + ".npy", buffer.getvalue())


# -- mutations ----------------------------------------------------------------------------------


def _sites(tree, path=()):
    """Every (path, value) of the metadata's JSON tree (random generators' states left out:
    another state is another model)."""
    if isinstance(tree, dict):
        if "__generator__" in tree:
            return
        for key, value in tree.items():
            yield from _sites(value, (*path, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _sites(value, (*path, i))
    yield path, tree


def _set(tree, path, value):
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def _column_maps(meta):
    for path, value in _sites(meta):
        if isinstance(value, dict) and value.get("__obj__") in ("FeatureMap",
                                                                "okoco._input.FeatureMap"):
            columns = value["attrs"]["columns"]
            if isinstance(columns, dict) and len(columns) >= 2:
                yield (*path, "attrs", "columns"), columns


#: Counters whose every value within their declared bounds is a valid state (another count of
#: samples seen, refreshes, ...): an edit of one may load as that other model; it must not
#: crash. Every other int is a size, an index or a capacity: edited, it is refused or changes
#: nothing.
COUNTERS = frozenset({"n_seen", "n_added", "n_missed", "target_count", "n_restarts",
                      "refreshes_seen", "n_refreshes", "n_clamped", "n_negative_increments",
                      "n_deff_guard", "ops_since_check", "learned_classes", "modifications",
                      "_n_finite"})

def _is_counter(meta: dict, path: tuple) -> bool:
    """A counter (:data:`COUNTERS`), a per-feature count of a scaler, an int key of a mapping
    (the name of a feature: another name is another valid model), or a parameter of one of
    river's statistics (``Var(ddof=0)`` is another valid statistic: river's objects are
    checked for finite floats only)."""
    if path[-1] in COUNTERS or "counts" in path:
        return True
    if len(path) >= 3 and path[-3] == "__dict__" and path[-1] == 0:
        return True  # a mapping's int key: a feature's name (a hashed bucket), not a size
    node = meta
    for key in path[:-1]:
        node = node[key]
        if isinstance(node, dict) and str(node.get("__obj__", "")).startswith("river."):
            return True
    return False


# Which kinds of edit a mutation makes (the fuzz test's selection draws from each).
KINDS = ("int", "counter", "float", "columns", "array", "index", "members", "truncate")


def mutations(meta: dict, arrays: dict):
    """Every mutation of one file: ``(kind, description, function(path) writing it)``."""
    ints = [(p, v) for p, v in _sites(meta) if type(v) is int and p and p[0] != "format_version"]
    for path, value in ints:
        kind = "counter" if _is_counter(meta, path) else "int"
        for new in sorted({value + 1, value - 1, 0, -1, 2 * value + 7, 600, 10**6, 2**62}
                          - {value}):
            yield kind, f"{'.'.join(map(str, path))} = {new} (was {value})", \
                _edit_meta(meta, arrays, path, new)
    for path in [p for p, v in _sites(meta) if type(v) is float]:
        for literal in ("NaN", "Infinity", "-Infinity", "1e999"):
            yield "float", f"{'.'.join(map(str, path))} = {literal}", \
                _edit_meta(meta, arrays, path, "@RAW@", {"@RAW@": literal})
        for marker in ("nan", "inf"):
            yield "float", f"{'.'.join(map(str, path))} = {{__float__: {marker}}}", \
                _edit_meta(meta, arrays, path, {"__float__": marker})
    for path, columns in _column_maps(meta):
        names = list(columns)
        where = ".".join(map(str, path))
        edits = {
            "two features on one column": {**columns, names[1]: columns[names[0]]},
            "a column beyond the others": {**columns, names[-1]: len(columns) + 3},
            "a feature dropped": {k: v for k, v in columns.items() if k != names[-1]},
            "a feature added": {**columns, "new": len(columns)},
            "a negative column": {**columns, names[0]: -1},
        }
        for what, new in edits.items():
            yield "columns", f"{where}: {what}", _edit_meta(meta, arrays, path, new)
    padded = {tree["__padded__"] for _, tree in _sites(meta)
              if isinstance(tree, dict) and "__padded__" in tree}
    for name, array in arrays.items():
        for what, new in _array_edits(array, name in padded):
            yield ("index" if array.dtype.kind in "iu" else "array"), f"{name}: {what}", \
                _edit_array(meta, arrays, name, new)
    yield "members", "one extra member", _edit_members(meta, arrays, extra=1)
    if os.environ.get("OKOCO_FUZZ_NO_BIG") is None:
        yield "members", "50,000 tiny extra members", _edit_members(meta, arrays, extra=50_000)
    for name in list(arrays)[:3]:
        yield "members", f"member {name} removed", _edit_members(meta, arrays, drop=name)
    for fraction in (0.3, 0.6, 0.9, 0.99):
        yield "truncate", f"file cut to {fraction:.0%}", _cut(meta, arrays, fraction)


def _array_edits(array: np.ndarray, padded: bool):
    """Edits of an array member's shape, dtype or (int arrays) entries. The leading rows of a
    padded buffer (``{"__padded__": ..., "rows": R}``) cut shorter are not among them: the
    buffer is then the same with rows of zeros, an edit of values, which no check can tell
    from a model that holds them."""
    if array.ndim == 0:
        return
    rows = array.shape[0]
    if rows > 1 and not padded:
        yield "cut to one row", array[:1]
        yield "one row less", array[:-1]
    yield "one row more", np.concatenate([array, np.zeros_like(array[:1])])
    if not padded:
        yield "empty", array[:0]
    if array.ndim == 2 and array.shape[1] > 1:
        yield "one column less", array[:, :-1]
    if array.ndim == 2:
        yield "flattened", array.reshape(-1)
    if array.dtype.kind == "f":
        yield "as float32", array.astype(np.float32)
    if array.dtype.kind in "iu" and array.size:
        for value in (-1, -2, 10**6, 2**40):
            bad = array.copy()
            bad.reshape(-1)[array.size // 2] = value
            yield f"an entry set to {value}", bad


def _edit_meta(meta, arrays, path, value, raw=None):
    def write(target):
        new = copy.deepcopy(meta)
        _set(new, path, value)
        write_archive(target, new, arrays, raw)
    return write


def _edit_array(meta, arrays, name, value):
    def write(target):
        write_archive(target, meta, {**arrays, name: value})
    return write


def _edit_members(meta, arrays, extra=0, drop=None):
    def write(target):
        kept = {k: v for k, v in arrays.items() if k != drop}
        kept.update({f"z{i}": np.zeros(0, dtype=np.uint8) for i in range(extra)})
        write_archive(target, meta, kept)
    return write


def _cut(meta, arrays, fraction):
    def write(target):
        write_archive(target, meta, arrays)
        data = target.read_bytes()
        target.write_bytes(data[: int(len(data) * fraction)])
    return write


# -- the worker ---------------------------------------------------------------------------------


class _Collections:
    """The garbage collections (their count, the full ones and their time) since ``reset``."""

    def __init__(self):
        self.reset()
        gc.callbacks.append(self._note)

    def reset(self) -> None:
        self.count, self.full, self.seconds, self._start = 0, 0, 0.0, None

    def _note(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            self.count += 1
            self.full += info["generation"] == 2
            self.seconds += time.perf_counter() - self._start

    def summary(self) -> dict:
        return {"collections": self.count, "full_collections": self.full,
                "collection_seconds": self.seconds}


def _worker() -> None:
    """Read ``original<TAB>mutated<TAB>name`` lines; answer one JSON line each."""
    import okoco

    cache: dict = {}
    collections = _Collections()
    for line in sys.stdin:
        original, mutated, name = line.rstrip("\n").split("\t")
        classifies = _builders()[name][1]
        binary, text = name == "BinaryClassifier", name in TEXT_MODELS
        if original not in cache:
            cache[original] = answers(okoco.load(original), classifies, binary, text)
        collections.reset()
        start, cpu = time.perf_counter(), time.process_time()
        try:
            model = okoco.load(mutated)
        except ValueError as error:
            result = {"status": "refused", "seconds": time.perf_counter() - start,
                      "cpu_seconds": time.process_time() - cpu, "message": str(error)[:300],
                      **collections.summary()}
        except Exception as error:  # noqa: BLE001  (a finding: reported)
            result = {"status": "error", "seconds": time.perf_counter() - start,
                      "message": f"{type(error).__name__}: {str(error)[:300]}"}
        else:
            seconds = time.perf_counter() - start
            try:
                same = answers(model, classifies, binary, text) == cache[original]
                result = {"status": "same" if same else "different", "seconds": seconds}
            except Exception as error:  # noqa: BLE001
                result = {"status": "different", "seconds": seconds,
                          "message": f"raises when used: {type(error).__name__}: "
                                     f"{str(error)[:200]}"}
        print("@@" + json.dumps(result), flush=True)


class Runner:
    """A worker process, restarted after each crash."""

    def __init__(self):
        self.proc = None

    def _start(self):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT),
                                                            os.environ.get("PYTHONPATH", "")]),
               "OPENBLAS_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(os.environ.get("OKOCO_FUZZ_STDERR", os.devnull),
                                                 "a"), text=True,
                                     cwd=ROOT, env=env)

    def run(self, original: Path, mutated: Path, name: str) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(f"{original}\t{mutated}\t{name}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        while line and not line.startswith("@@"):  # anything else the model printed
            line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.proc = None
            return {"status": "crash", "returncode": code}
        return json.loads(line[2:])

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def all_cases(folder: Path, models=MODELS) -> list:
    """``(name, original, kind, description, write)`` for every mutation of every model."""
    cases = []
    for name in models:
        original = save_model(name, folder / f"{name}.npz")
        meta, arrays = read_archive(original)
        for kind, description, write in mutations(meta, arrays):
            cases.append((name, original, kind, description, write))
    return cases


def select(cases: list, count: int | None, seed: int) -> list:
    """``count`` cases drawn evenly over the models and kinds of edit (all if ``None``)."""
    if count is None or count >= len(cases):
        return cases
    rng = random.Random(seed)
    groups: dict = {}
    for case in cases:
        groups.setdefault((case[0], case[2]), []).append(case)
    for group in groups.values():
        rng.shuffle(group)
    chosen, keys = [], sorted(groups)
    while len(chosen) < count:
        for key in keys:
            if groups[key] and len(chosen) < count:
                chosen.append(groups[key].pop())
    return chosen


def fuzz(cases: list, folder: Path, log=None) -> list:
    """Run each case; return ``(name, kind, description, result)``. A case whose worker died
    is run again alone in a new worker: ``alone`` in its result says whether it crashes by
    itself (``False``: a file loaded before it in the same worker left the damage)."""
    runner = Runner()
    out = []
    try:
        for i, (name, original, kind, description, write) in enumerate(cases):
            target = folder / f"case{i}.npz"
            write(target)
            result = runner.run(original, target, name)
            if result["status"] == "crash":
                again = Runner()
                result["alone"] = again.run(original, target, name)["status"] == "crash"
                again.close()
            out.append((name, kind, description, result))
            if log is not None:
                print(name, kind, description, json.dumps(out[-1][3]), file=log, flush=True)
            target.unlink()
    finally:
        runner.close()
    return out


def failures(results: list, max_seconds: float = 0.1) -> list:
    """The cases that crashed, loaded with other answers (but a counter's edit), raised other
    than ValueError, or took more than ``max_seconds`` of CPU time to refuse (the wall time
    is recorded too: on a shared machine it measures the others' load)."""
    return [r for r in results if r[3]["status"] in ("crash", "error")
            or (r[3]["status"] == "different" and r[1] != "counter")
            or (r[3]["status"] == "refused" and r[3]["cpu_seconds"] > max_seconds)]


def _main(argv: list) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = select(all_cases(folder, args.models), args.cases, args.seed)
        start = time.perf_counter()
        results = fuzz(cases, folder, log=sys.stderr if args.verbose else None)
        elapsed = time.perf_counter() - start
    counts: dict = {}
    for _, _, _, r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    refusals = [r[3] for r in results if r[3]["status"] == "refused"]
    wall = sorted(r["seconds"] for r in refusals) or [math.nan]
    cpu = sorted(r["cpu_seconds"] for r in refusals) or [math.nan]
    for name, kind, description, r in failures(results):
        print(f"FAIL {name} [{kind}] {description}: {r}")
    collected = [r for r in refusals if r.get("collections")]
    print(json.dumps({"cases": len(results), "counts": counts,
                      "refusal_cpu_s": {"median": cpu[len(cpu) // 2], "max": cpu[-1]},
                      "refusals_with_a_collection": len(collected),
                      "refusals_with_a_full_collection": sum(r["full_collections"] > 0
                                                             for r in collected),
                      "refusal_collection_s_max": max((r["collection_seconds"]
                                                       for r in collected), default=0.0),
                      "refusal_wall_s": {"median": wall[len(wall) // 2], "max": wall[-1]},
                      "load_average": os.getloadavg(), "seconds": round(elapsed, 1)}))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # this checkout's okoco, not an installed one
    if sys.argv[1:2] == ["worker"]:
        _worker()
    else:
        _main(sys.argv[1:])
