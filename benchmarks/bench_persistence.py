"""What loading costs: a saved learner's load time, and crafted files' time and peak memory.

    python -m benchmarks.bench_persistence                       # this tree
    python -m benchmarks.bench_persistence --baseline /work/main # also time another tree's load
    python -m benchmarks.bench_persistence --sizes --baseline T  # file sizes, save and load time

``--sizes`` (issue 41: "save the model, not its buffers"): ``KONS()``, ``SketchedKONS()``,
``Auto()``, the unbounded KONS, ``CONKONS``, ``PROSNKONS``, ``KRLS()`` and the multiclass
``MulticlassClassifier(KONS())`` / ``MulticlassClassifier(Auto())`` (3 classes) after 1,000
steps at ``d = 10``, each tree saving its own model: the file's size, the median time of a
save and of a load (a fresh process per tree).

With a baseline, each tree loads the file it wrote, and this tree also loads the baseline's
file (read through the migrations when the baseline writes an older format).

Each figure is measured in a fresh process (``PYTHONPATH`` = the tree), so the peak resident
memory (``ru_maxrss``) is that of one load; ``tracemalloc``'s peak (Python and numpy
allocations) is printed beside it. The crafted files are about 2 MB each and are refused; the
figure that matters is that refusing them is cheap (the issue's bound: <= 0.1 s, <= 50 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
import okoco, okoco.learners
path, repeat = sys.argv[1], int(sys.argv[2])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times, cpu, outcome = [], [], "loaded"
for i in range(repeat):
    if i == repeat - 1:
        tracemalloc.start()  # the last run only: tracing slows allocations down
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        okoco.load(path)
    except Exception as error:
        outcome = f"{type(error).__name__}: {str(error)[:90]}"
    if i < repeat - 1 or repeat == 1:
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
peak = tracemalloc.get_traced_memory()[1]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"median_s": sorted(times)[len(times) // 2], "min_s": min(times),
                  "cpu_median_s": sorted(cpu)[len(cpu) // 2],
                  "tracemalloc_peak_mb": peak / 1e6, "rss_growth_mb": (rss - base) / 1e3,
                  "outcome": outcome}))
"""


_MAKE = r"""
import sys
import numpy as np
from okoco.learners import KONS, Auto, SketchedKONS
name, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = {"KONS": KONS, "SketchedKONS": lambda: SketchedKONS(seed=0), "Auto": Auto}[name]()
rng = np.random.default_rng(0)
for _ in range(n):
    x = {"a": float(rng.normal()), "b": float(rng.normal())}
    model.learn_one(x, float(np.tanh(x["a"])))
model.save(path)
"""


_SIZES = r"""
import json, sys, time
import numpy as np
from okoco.learners import (CONKONS, KONS, KRLS, PROSNKONS, Auto, MulticlassClassifier,
                            SketchedKONS)
name, n, d, path, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], \
    int(sys.argv[5])
model = {"KONS()": KONS, "SketchedKONS()": lambda: SketchedKONS(seed=0), "Auto()": Auto,
         "KONS(max_size=None)": lambda: KONS(max_size=None),
         "CONKONS(seed=0)": lambda: CONKONS(seed=0),
         "PROSNKONS(seed=0)": lambda: PROSNKONS(seed=0), "KRLS()": KRLS,
         "MulticlassClassifier(KONS())": lambda: MulticlassClassifier(KONS()),
         "MulticlassClassifier(Auto())": lambda: MulticlassClassifier(Auto())}[name]()
classes = name.startswith("Multiclass")  # 3 classes: int(x0 > 0) + int(x1 > 0.5)
rng = np.random.default_rng(0)
for _ in range(n):
    x = {f"x{j}": float(v) for j, v in enumerate(rng.normal(size=d))}
    model.learn_one(x, int(x["x0"] > 0) + int(x["x1"] > 0.5) if classes
                    else float(np.tanh(x["x0"] - 0.5 * x["x1"])))
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    model.save(path)
    times.append(time.perf_counter() - t0)
print(json.dumps({"save_median_s": sorted(times)[len(times) // 2]}))
"""


def sizes(trees: dict[str, Path], folder: Path, repeat: int, n: int = 1000, d: int = 10) -> None:
    """File size, save and load time of the default learners after ``n`` steps at ``d``."""
    print(f"after {n} steps at d = {d}; median of {repeat} saves and of {repeat - 1} loads "
          "(fresh processes)")
    for name in ("KONS()", "SketchedKONS()", "Auto()", "KONS(max_size=None)", "CONKONS(seed=0)",
                 "PROSNKONS(seed=0)", "KRLS()", "MulticlassClassifier(KONS())",
                 "MulticlassClassifier(Auto())"):
        for tree_name, tree in trees.items():
            stem = re.sub(r"\W", "", name)
            path = folder / f"sizes-{stem}-{tree_name.replace(' ', '_')}.npz"
            out = subprocess.run([sys.executable, "-c", _SIZES, name, str(n), str(d), str(path),
                                  str(repeat)], env={**os.environ, "PYTHONPATH": str(tree)},
                                 capture_output=True, text=True, check=True,
                                 cwd=tempfile.gettempdir())
            saved = json.loads(out.stdout.splitlines()[-1])
            loaded = measure(tree, path, repeat)
            print(f"{name:28s} {tree_name:10s} {path.stat().st_size / 1e3:10.1f} KB  save "
                  f"{saved['save_median_s'] * 1e3:8.2f} ms  load {loaded['median_s'] * 1e3:8.2f} "
                  f"ms  {loaded['outcome'][:40]}")


def measure(tree: Path, path: Path, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(repeat)], env=env,
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.splitlines()[-1])


def _rewrite(src: Path, dst: Path, edit, extra=None, compress=False) -> Path:
    with np.load(src, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "__okoco__"}
        meta = json.loads(str(archive["__okoco__"]))
    edit(meta)
    arrays.update(extra or {})
    (np.savez_compressed if compress else np.savez)(dst, __okoco__=np.array(json.dumps(meta)),
                                                     **arrays)
    return dst


#: KONS's L^{-1} (D K c)_I in a format-5 file (its attribute is _g)
_G = "whitened_gradient"


def crafted(folder: Path, seed_file: Path) -> dict[str, Path]:
    """~2 MB files aimed at loading's memory and time (``seed_file``: a format-5 KONS)."""
    files = {}
    files["padded 1e9 rows"] = _rewrite(
        seed_file, folder / "padded.npz",
        lambda m: m["state"][_G].update(rows=1_000_000_000),
        extra={"pad": np.random.default_rng(0).normal(size=250_000)})
    files["unreferenced compressed zeros (2 GB)"] = _rewrite(
        seed_file, folder / "zeros.npz", lambda m: None,
        extra={"a999": np.zeros(250_000_000)}, compress=True)
    files["referenced compressed zeros (2 GB)"] = _rewrite(
        seed_file, folder / "zeros-ref.npz",
        lambda m: m["state"].update({_G: {"__array__": "a999", "id": 99999}}),
        extra={"a999": np.zeros(250_000_000)}, compress=True)
    # the metadata is UTF-32 in the archive: 4 bytes a character
    files["2 MB: 130,000 JSON containers"] = _rewrite(
        seed_file, folder / "containers.npz",
        lambda m: m["state"].update(log_det=[{}] * 130_000))
    files["2 MB: 120,000 JSON floats"] = _rewrite(
        seed_file, folder / "floats.npz",
        lambda m: m["state"].update(log_det=[1.5] * 120_000))
    files["2 MB: 30,000 feature names"] = _rewrite(
        seed_file, folder / "names.npz",
        lambda m: m["state"]["features"]["attrs"].update(
            columns={f"f{i}": i for i in range(30_000)}))
    files["50,000 tiny unreferenced members"] = _rewrite(
        seed_file, folder / "members.npz", lambda m: None,
        extra={f"z{i}": np.zeros(0, dtype=np.uint8) for i in range(50_000)})
    files["a window size edited to 10**6"] = _rewrite(
        seed_file, folder / "window.npz",
        lambda m: m["state"]["window_inverse"]["attrs"].update(size=10**6))
    files["compressed: 200 MB of JSON"] = folder / "json-bomb.npz"
    head = json.dumps({"format": "okoco-model", "format_version": 5})
    np.savez_compressed(files["compressed: 200 MB of JSON"],
                        __okoco__=np.array(head[:-1] + ', "pad": "' + " " * 50_000_000 + '"}'))
    files["JSON nested 100,000 deep"] = folder / "nested.npz"  # 0.8 MB
    text = json.dumps({"format": "okoco-model", "format_version": 5}).replace(
        "}", ', "state": ' + "[" * 100_000 + "]" * 100_000 + "}")
    np.savez(files["JSON nested 100,000 deep"], __okoco__=np.array(text))
    return files


def thread_guard_cost(rounds: int = 15, block: int = 200) -> None:
    """Per-step cost of the lock each public call takes (one_at_a_time): two identical
    learners replay the same rows, one through the public (locked) methods, one through the
    undecorated ones (``__wrapped__``), in alternating blocks."""
    import time
    import timeit

    from okoco.learners import KONS, Auto, FunctionalGD, SketchedKONS

    lock = __import__("threading").Lock()

    def with_lock():
        with lock:
            pass

    bare = min(timeit.repeat(with_lock, number=200_000, repeat=5)) / 200_000
    print(f"an uncontended 'with lock:' costs {bare * 1e9:.0f} ns")
    rng = np.random.default_rng(0)
    rows = [({"a": float(rng.normal()), "b": float(rng.normal())}, float(rng.normal()))
            for _ in range(rounds * block + 300)]
    makers = {"KONS": KONS, "SketchedKONS": lambda: SketchedKONS(seed=0),
              "FunctionalGD(budget=100)": lambda: FunctionalGD(budget=100), "Auto": Auto}
    for name, make in makers.items():
        locked, unlocked = make(), make()
        cls = type(locked)
        learn, predict = cls.learn_one.__wrapped__, cls.predict_one.__wrapped__
        for x, y in rows[:300]:  # the same warm state in both
            locked.learn_one(x, y)
            unlocked.learn_one(x, y)
        at, t_locked, t_bare = 300, [], []
        for r in range(rounds):
            for timed in (("locked", "bare") if r % 2 else ("bare", "locked")):  # no order bias
                chunk = rows[at:at + block]
                t0 = time.process_time()  # CPU time: the machine may be shared
                if timed == "locked":
                    for x, y in chunk:
                        locked.predict_one(x)
                        locked.learn_one(x, y)
                else:
                    for x, y in chunk:
                        predict(unlocked, x)
                        learn(unlocked, x, y)
                (t_locked if timed == "locked" else t_bare).append(
                    (time.process_time() - t0) / block)
            at += block  # both learned the same rows: their states stay equal
        a, b = sorted(t_locked)[rounds // 2], sorted(t_bare)[rounds // 2]
        print(f"{name:26s} predict+learn CPU median {a * 1e6:8.2f} us locked, {b * 1e6:8.2f} us "
              f"without: {100 * (a - b) / b:+.2f}%  (2 lock calls = {2 * bare * 1e6:.3f} us, "
              f"{100 * 2 * bare / b:.2f}% of a step)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another okoco tree to time loading with")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", action="store_true",
                        help="only measure the per-step cost of the thread guard")
    parser.add_argument("--sizes", action="store_true",
                        help="only measure file sizes, save and load times (issue 41)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    if args.sizes:
        print("load average:", os.getloadavg())
        trees = {"this tree": HERE, **({"baseline": args.baseline} if args.baseline else {})}
        sizes(trees, Path(tempfile.mkdtemp()), max(args.repeat, 2))
        print("load average:", os.getloadavg())
        return
    if args.threads:
        print("load average:", os.getloadavg())
        thread_guard_cost()
        print("load average:", os.getloadavg())
        return
    from okoco.learners import KONS

    print("load average:", os.getloadavg())
    folder = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    trees = {"this tree": HERE, **({"baseline": args.baseline} if args.baseline else {})}
    # each tree loads the file it wrote (its own format); this tree also loads the baseline's
    # file (an older format: the migrations' path)
    for name, n in (("KONS", 200), ("KONS", 2000), ("SketchedKONS", 2000), ("Auto", 100),
                    ("Auto", 500)):
        written = {}
        for tree_name, tree in trees.items():
            path = written[tree_name] = folder / f"{name}-{n}-{tree_name.replace(' ', '_')}.npz"
            subprocess.run([sys.executable, "-c", _MAKE, name, str(n), str(path)], check=True,
                           env={**os.environ, "PYTHONPATH": str(tree)},
                           cwd=tempfile.gettempdir())
        runs = [(tree_name, tree, written[tree_name]) for tree_name, tree in trees.items()]
        if args.baseline:
            runs.append(("this tree, baseline's file", HERE, written["baseline"]))
        for label, tree, path in runs:
            r = measure(tree, path, args.repeat)
            print(f"{name} n={n:<5d} {path.stat().st_size / 1e6:6.2f} MB  {label:26s} load "
                  f"median {r['median_s'] * 1e3:8.2f} ms (min {r['min_s'] * 1e3:.2f}, cpu median "
                  f"{r['cpu_median_s'] * 1e3:.2f})  {r['outcome'][:40]}")
    seed_file = folder / "seed.npz"
    seed = KONS(max_size=500)  # a window: its inverse's size is one of the crafted edits
    for _ in range(100):
        seed.learn_one({"a": float(rng.normal())}, float(rng.normal()))
    seed.save(seed_file)
    # this tree only: the baseline's answer to these is the (89 GiB asked, 3.1 GB ...)
    for name, path in crafted(folder, seed_file).items():
        r = measure(HERE, path, 4)
        print(f"{name:38s} {path.stat().st_size/1e6:5.2f} MB {r['median_s']*1e3:8.1f} ms "
              f"(cpu {r['cpu_median_s'] * 1e3:6.1f})  "
              f"tracemalloc {r['tracemalloc_peak_mb']:6.1f} MB  rss +{r['rss_growth_mb']:6.1f} MB"
              f"  {r['outcome'][:60]}")
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main()
