"""Memory per class of ``MulticlassClassifier`` as classes keep coming (issue 40, "Scale").

A stream of 3-feature Gaussian rows first fills the learner's window with ``--warm`` samples
of 3 classes, then brings a new class at every sample for ``--new`` samples (the worst case:
each class is seen once). tracemalloc (numpy's arrays included) measures the memory the
classifier holds after the warm-up and after the new classes; the report is the increase per
new class, and the memory projected to ``max_classes`` classes.

Run: ``python -m benchmarks.bench_multiclass_memory [--warm N] [--new N] [--only NAME ...]``
(prints a markdown table; state the machine's load with the figures).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

MIB = 2.0**20


def models() -> dict:
    from okoco import losses
    from okoco.learners import KONS, Auto, FunctionalGD, MulticlassClassifier

    return {
        "KONS() (default: one preconditioner)": lambda: MulticlassClassifier(),
        "Auto() (one preconditioner per expert)": lambda: MulticlassClassifier(Auto()),
        "KONS(loss=Logistic())": lambda: MulticlassClassifier(KONS(loss=losses.Logistic())),
        "FunctionalGD(loss=Logistic())": lambda: MulticlassClassifier(
            FunctionalGD(loss=losses.Logistic())),
    }


def rows(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [dict(zip("abc", map(float, v))) for v in rng.normal(size=(n, 3))]


def measure(make, warm: int, new: int) -> dict:
    """Traced MiB after the warm-up and after ``new`` new classes, and the time taken."""
    model = make()
    tracemalloc.start()
    start = time.process_time()
    for i, x in enumerate(rows(warm)):
        model.learn_one(x, f"c{i % 3}")
    before = tracemalloc.get_traced_memory()[0]
    for i, x in enumerate(rows(new, seed=1)):
        model.learn_one(x, f"new{i}")
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_class = (after - before) / new
    return {"classes": len(model.classes), "warm MiB": before / MIB, "MiB": after / MIB,
            "KiB per class": per_class / 1024,
            "MiB at max_classes": (before + per_class * (model.max_classes - 3)) / MIB,
            "max_classes": model.max_classes, "seconds": time.process_time() - start}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=600)
    parser.add_argument("--new", type=int, default=100)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args(argv)
    print("| learner | classes | MiB after warm-up | MiB | KiB per new class | "
          "MiB projected at max_classes | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for name, make in models().items():
        if args.only and not any(part in name for part in args.only):
            continue
        r = measure(make, args.warm, args.new)
        print(f"| {name} | {r['classes']} | {r['warm MiB']:.1f} | {r['MiB']:.1f} | "
              f"{r['KiB per class']:.0f} | {r['MiB at max_classes']:.0f} "
              f"({r['max_classes']}) | {r['seconds']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
