"""Run okoco's hot paths in a fresh process and report whether BLAS worker threads woke up.

OpenBLAS (pthreads) starts its worker threads when it loads; they sleep until a call is split
across them. A worker that wakes is scheduled, so its context-switch counts in
``/proc/self/task/<tid>/status`` move; a sleeping one's stay put. This script warms each
workload up (to sizes above OpenBLAS's threading thresholds), lets the workers fall asleep,
runs more steps and prints, as JSON, the workers' context switches during those steps, plus a
*control*: the same count around calls known to use the pool, which shows the probe can see.

Run by ``tests/test_threading.py`` with the user's default threading (no pinning variables).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

PAUSE = 0.5  # s: longer than OpenBLAS's spin before a worker sleeps (THREAD_TIMEOUT, ~0.1 s)


def worker_switches() -> int:
    """Context switches so far of every thread but the main one (the BLAS workers)."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == os.getpid():
            continue
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if "ctxt_switches" in line:
                        total += int(line.split()[-1])
        except FileNotFoundError:  # a thread ended
            pass
    return total


def woken(run) -> int:
    """Worker context switches while ``run()`` executes, starting from sleeping workers."""
    time.sleep(PAUSE)
    before = worker_switches()
    run()
    return worker_switches() - before


def stream(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X], y.tolist()


def learner_workload(name: str):
    """(warm-up, measured) closures for one learner, sizes above the threading thresholds."""
    from okoco import kernels
    from okoco.learners import KONS, KRLS, FunctionalGD, SketchedKONS

    makers = {
        # > 10,000 stored points: the O(t) dot products exceed ddot's threading threshold
        "SketchedKONS": (lambda: SketchedKONS(kernel=kernels.RBF(2.0), beta=1.0, seed=0), 10_500),
        "FunctionalGD": (lambda: FunctionalGD(kernel=kernels.RBF(2.0), C=2.0), 10_500),
        "FunctionalGD-budget": (lambda: FunctionalGD(kernel=kernels.RBF(2.0), budget=300), 600),
        "KONS": (lambda: KONS(kernel=kernels.RBF(2.0), C=2.0), 400),
        # > 100 atoms: the packed updates (dspmv, dspr) and the residual checks
        "KRLS": (lambda: KRLS(kernel=kernels.RBF(5.0), nu=1e-3), 600),
        "KRLS-max_size": (lambda: KRLS(kernel=kernels.RBF(20.0), nu=1e-4, max_size=150), 600),
    }
    make, warm = makers[name]
    model = make()
    X, y = stream(warm + 300, 3)

    def steps(lo, hi):
        def run():
            for x, t in zip(X[lo:hi], y[lo:hi]):
                model.predict_one(x)
                model.learn_one(x, t)
        return run

    return steps(0, warm), steps(warm, warm + 300)


def dictionary_workload(name: str):
    from okoco import dictionary, kernels

    makers = {
        "KORS": lambda: dictionary.KORS(kernels.RBF(20.0), beta=50.0, seed=0),
        "ALD": lambda: dictionary.ALD(kernels.RBF(20.0), nu=1e-4),
    }
    model = makers[name]()
    X = np.random.default_rng(1).uniform(-1, 1, size=(900, 3))
    return (lambda: model.update_many(X[:600])), (lambda: [model.update(x) for x in X[600:]])


def control():
    """Calls that do use the pool (when more than one thread is allowed)."""
    from scipy.linalg.blas import dspr

    m = 300
    ap, x = np.zeros(m * (m + 1) // 2), np.ones(m)
    a = np.ones(50_000)

    def run():
        for _ in range(20):
            dspr(m, 1.0, x, ap, lower=0, overwrite_ap=1)
            float(a @ a)
    return run


def main(names: list[str]) -> None:
    from threadpoolctl import threadpool_info

    import okoco  # noqa: F401

    report = {"threads": [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]}
    for name in names:
        if name in ("KORS", "ALD"):
            warm, run = dictionary_workload(name)
        else:
            warm, run = learner_workload(name)
        warm()
        report[name] = woken(run)
    report["control"] = woken(control())
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
