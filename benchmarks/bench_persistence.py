"""What loading costs: a saved learner's load time, and crafted files' time and peak memory.

    python -m benchmarks.bench_persistence                       # this tree
    python -m benchmarks.bench_persistence --baseline /work/main # also time another tree's load
    python -m benchmarks.bench_persistence --sizes --baseline T  # file sizes, save and load time

``--sizes`` (issue 41: "save the model, not its buffers"): the default learners (:data:`SIZES`,
the multiclass ones over 3 classes) after 1,000 steps at ``d = 10``, each tree saving its own
model: the file's size, the median time of a save and of a load.

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


def make(tree: Path, name: str, n: int, d: int, path: Path, repeat: int = 1) -> dict:
    """``name`` after ``n`` steps at ``d``, saved to ``path`` ``repeat`` times by ``tree`` in a
    fresh process: the median time of a save."""
    out = subprocess.run([sys.executable, "-c", _MAKE, name, str(n), str(d), str(path),
                          str(repeat)], env={**os.environ, "PYTHONPATH": str(tree)},
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.splitlines()[-1])


#: What ``--sizes`` saves after 1,000 steps at d = 10 (issue 41), and the default run after n
#: steps at d = 2.
SIZES = ("KONS()", "SketchedKONS()", "Auto()", "KONS(max_size=None)", "CONKONS(seed=0)",
         "PROSNKONS(seed=0)", "KRLS()", "MulticlassClassifier(KONS())",
         "MulticlassClassifier(Auto())")
LOADS = (("KONS()", 200), ("KONS()", 2000), ("SketchedKONS()", 2000), ("Auto()", 100),
         ("Auto()", 500))


def save_load(trees: dict[str, Path], folder: Path, cases, d: int, repeat: int) -> None:
    """Each tree saves each ``(name, n)`` of ``cases`` after ``n`` steps at ``d`` (the file's
    size, the median of ``repeat`` saves) and loads the file it wrote (its own format: the
    median and least time of ``repeat - 1`` loads, and their CPU time); this tree also loads
    the baseline's file (an older format: the migrations' path). Fresh processes."""
    for name, n in cases:
        written = {}
        for label, tree in trees.items():
            path = written[label] = folder / f"{re.sub(r'[^A-Za-z]', '', name + label)}{n}.npz"
            saved = make(tree, name, n, d, path, repeat)["save_median_s"]
            _print_load(f"{name} n={n}", label, tree, path, repeat, saved)
        if "baseline" in trees:
            _print_load(f"{name} n={n}", "this tree, baseline's file", HERE, written["baseline"],
                        repeat)


def _print_load(case: str, label: str, tree: Path, path: Path, repeat: int,
                saved: float | None = None) -> None:
    r = measure(tree, path, repeat)
    save = "" if saved is None else f"save {saved * 1e3:8.2f} ms  "
    print(f"{case:38s} {label:26s} {path.stat().st_size / 1e3:10.1f} KB  {save}load median "
          f"{r['median_s'] * 1e3:8.2f} ms (min {r['min_s'] * 1e3:.2f}, cpu median "
          f"{r['cpu_median_s'] * 1e3:.2f})  {r['outcome'][:40]}")


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
    zeros = {"a999": np.zeros(250_000_000)}  # 2 GB, compressed
    edits = [  # (name, file, edit of the metadata, members added, compressed)
        ("padded 1e9 rows", "padded", lambda m: m["state"][_G].update(rows=1_000_000_000),
         {"pad": np.random.default_rng(0).normal(size=250_000)}, False),
        ("unreferenced compressed zeros (2 GB)", "zeros", lambda m: None, zeros, True),
        ("referenced compressed zeros (2 GB)", "zeros-ref",
         lambda m: m["state"].update({_G: {"__array__": "a999", "id": 99999}}), zeros, True),
        # the metadata is UTF-32 in the archive: 4 bytes a character
        ("2 MB: 130,000 JSON containers", "containers",
         lambda m: m["state"].update(log_det=[{}] * 130_000), None, False),
        ("2 MB: 120,000 JSON floats", "floats",
         lambda m: m["state"].update(log_det=[1.5] * 120_000), None, False),
        ("2 MB: 30,000 feature names", "names", lambda m: m["state"]["features"]["attrs"].update(
            columns={f"f{i}": i for i in range(30_000)}), None, False),
        ("50,000 tiny unreferenced members", "members", lambda m: None,
         {f"z{i}": np.zeros(0, dtype=np.uint8) for i in range(50_000)}, False),
        ("a window size edited to 10**6", "window",
         lambda m: m["state"]["window_inverse"]["attrs"].update(size=10**6), None, False)]
    files = {name: _rewrite(seed_file, folder / f"{stem}.npz", edit, extra, compress)
             for name, stem, edit, extra, compress in edits}
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
        steps = {"locked": (locked, cls.predict_one, cls.learn_one),
                 "bare": (unlocked, cls.predict_one.__wrapped__, cls.learn_one.__wrapped__)}
        for x, y in rows[:300]:  # the same warm state in both
            locked.learn_one(x, y)
            unlocked.learn_one(x, y)
        times = {"locked": [], "bare": []}
        for r in range(rounds):
            chunk = rows[300 + r * block: 300 + (r + 1) * block]  # both learn it: equal states
            for timed in (("locked", "bare") if r % 2 else ("bare", "locked")):  # no order bias
                model, predict, learn = steps[timed]
                t0 = time.process_time()  # CPU time: the machine may be shared
                for x, y in chunk:
                    predict(model, x)
                    learn(model, x, y)
                times[timed].append((time.process_time() - t0) / block)
        t_locked, t_bare = times["locked"], times["bare"]
        a, b = sorted(t_locked)[rounds // 2], sorted(t_bare)[rounds // 2]
        print(f"{name:26s} predict+learn CPU median {a * 1e6:8.2f} us locked, {b * 1e6:8.2f} us "
              f"without: {100 * (a - b) / b:+.2f}%  (2 lock calls = {2 * bare * 1e6:.3f} us, "
              f"{100 * 2 * bare / b:.2f}% of a step)")


def refusals(folder: Path) -> None:
    """This tree's time and memory to refuse each crafted file (the baseline's answer to these
    is the issue's: 89 GiB asked, 3.1 GB ...)."""
    seed_file = folder / "seed.npz"
    make(HERE, "KONS()", 100, 2, seed_file)  # a window: its inverse's size is one of the edits
    for name, path in crafted(folder, seed_file).items():
        r = measure(HERE, path, 4)
        print(f"{name:38s} {path.stat().st_size/1e6:5.2f} MB {r['median_s']*1e3:8.1f} ms "
              f"(cpu {r['cpu_median_s'] * 1e3:6.1f})  "
              f"tracemalloc {r['tracemalloc_peak_mb']:6.1f} MB  rss +{r['rss_growth_mb']:6.1f} MB"
              f"  {r['outcome'][:60]}")


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
    trees = {"this tree": HERE, **({"baseline": args.baseline} if args.baseline else {})}
    folder = Path(tempfile.mkdtemp())
    print("load average:", os.getloadavg())
    repeat = max(args.repeat, 2)
    if args.sizes:
        save_load(trees, folder, [(name, 1000) for name in SIZES], 10, repeat)
    elif args.threads:
        thread_guard_cost()
    else:
        save_load(trees, folder, LOADS, 2, repeat)
        refusals(folder)
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main()
