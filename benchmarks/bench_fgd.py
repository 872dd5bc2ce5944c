"""µs per predict_one + learn_one of FunctionalGD at t stored points, beside river's RBFSampler.

Run: python benchmarks/bench_fgd.py
Both are measured in the same run on the same stream (d = 10, standard normal features).
"""

from __future__ import annotations

import platform
import time

import numpy as np
from river import feature_extraction, linear_model, preprocessing

from okoco import kernels
from okoco.learners import FunctionalGD

D = 10
MEASURE = 500


def rows(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return [({f"x{j}": v for j, v in enumerate(row)}, t) for row, t in zip(X.tolist(), y)]


def us_per_step(model, warm, timed):
    for x, y in warm:
        model.learn_one(x, y)
    start = time.perf_counter()
    for x, y in timed:
        model.predict_one(x)
        model.learn_one(x, y)
    return 1e6 * (time.perf_counter() - start) / len(timed)


def main():
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, python {platform.python_version()}")
    print(f"{'t':>7} {'FunctionalGD us/step':>21} {'river RBFSampler us/step':>25} {'ratio':>6}")
    for t in (1_000, 10_000):
        data = rows(t + MEASURE)
        warm, timed = data[:t], data[t:]
        fgd = us_per_step(FunctionalGD(kernel=kernels.RBF(gamma=0.1), C=3.0, eta=0.1), warm, timed)
        river_model = (
            preprocessing.StandardScaler()
            | feature_extraction.RBFSampler(seed=0)
            | linear_model.LinearRegression()
        )
        rv = us_per_step(river_model, warm, timed)
        print(f"{t:>7} {fgd:>21.1f} {rv:>25.1f} {fgd / rv:>6.2f}")


if __name__ == "__main__":
    main()
