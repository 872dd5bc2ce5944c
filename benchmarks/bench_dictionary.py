"""Throughput of the shared dictionary core.

1. Updates per second of KORS and ALD with ``m`` atoms already in the dictionary (``d = 10``, RBF):
   "rejected" updates compute the score / ALD test only (``O(m^2)``: a kernel column and one or
   two packed triangular solves); "added" updates also border the Cholesky factor (``O(m^2)``).
2. The incremental factorization (bordering one atom, ``O(m^2)``) against refactorizing the
   bordered matrix from scratch at every step (``scipy.linalg.cholesky``, ``O(m^3)``).

Run: ``python benchmarks/bench_dictionary.py [--quick]``. For stable figures on a shared machine,
set ``OPENBLAS_NUM_THREADS=1`` (the incremental path is level-2 BLAS and gains nothing from
threads; thread oversubscription on a loaded box can slow everything by 10x or more).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import scipy
from scipy.linalg import cholesky

from okoco.dictionary import ALD, KORS
from okoco.kernels import RBF
from okoco.linalg import IncrementalCholesky


def best_rate(fn, n_calls: int, repeats: int = 3) -> float:
    """Calls per second of ``fn(i)`` over ``n_calls`` calls, best of ``repeats``."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(n_calls):
            fn(i)
        best = min(best, time.perf_counter() - start)
    return n_calls / best


def dictionary_rates(m: int, d: int = 10, n_calls: int = 200) -> dict:
    rng = np.random.default_rng(m)
    kernel = RBF(gamma=1.0 / d)
    X = rng.normal(size=(m, d))
    probes = rng.normal(size=(n_calls, d))
    out = {}

    kors = KORS(kernel, alpha=1.0, eps=0.5, beta=10.0, p_min=1.0, seed=0)  # keep everything
    kors.update_many(X)
    assert kors.size == m
    kors.p_min, kors.beta = 0.0, 0.0  # p = 0: every later point is scored and rejected
    out["KORS rejected"] = best_rate(lambda i: kors.update(probes[i]), n_calls)
    kors.p_min = 1.0  # every later point is added (the dictionary grows by n_calls)
    out["KORS added"] = best_rate(lambda i: kors.update(probes[i]), n_calls, repeats=1)

    ald = ALD(kernel, nu=1e-6)
    ald.update_many(X)
    assert ald.size == m
    ald.nu = 2.0  # residual <= k(x, x) = 1 < nu: rejected (projection and coefficients only)
    out["ALD rejected"] = best_rate(lambda i: ald.update(probes[i]), n_calls)
    ald.nu = 1e-6
    out["ALD added"] = best_rate(lambda i: ald.update(probes[i]), n_calls, repeats=1)
    return out


def factorization_times(m: int, n_steps: int = 20) -> tuple[float, float]:
    """Seconds per step to go from m to m + n_steps atoms: bordering vs refactorizing."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m + n_steps, 10))
    A = RBF(gamma=0.1)(X, X) + 1e-2 * np.eye(m + n_steps)
    chol = IncrementalCholesky(capacity=2 * (m + n_steps), refresh_tol=np.inf)
    for j in range(m):
        chol.append(A[:j, j], A[j, j])
    start = time.perf_counter()
    for j in range(m, m + n_steps):
        chol.append(A[:j, j], A[j, j])
    incremental = (time.perf_counter() - start) / n_steps
    start = time.perf_counter()
    for j in range(m, m + n_steps):
        cholesky(A[: j + 1, : j + 1], lower=True, check_finite=False)
    refactor = (time.perf_counter() - start) / n_steps
    return incremental, refactor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer calls")
    args = parser.parse_args()
    sizes = [100, 500] if args.quick else [100, 500, 1000]
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
    )
    print("\nDictionary updates per second (d = 10, RBF), m atoms already stored")
    header = (
        f"{'m':>6} | {'KORS rejected':>14} {'KORS added':>11} | "
        f"{'ALD rejected':>13} {'ALD added':>10}"
    )
    print(header)
    print("-" * len(header))
    for m in sizes:
        r = dictionary_rates(m, n_calls=100 if args.quick else 200)
        print(
            f"{m:>6} | {r['KORS rejected']:>14,.0f} {r['KORS added']:>11,.0f} | "
            f"{r['ALD rejected']:>13,.0f} {r['ALD added']:>10,.0f}"
        )

    print("\nOne atom appended at size m: bordering vs refactorizing (ms per step)")
    header = (
        f"{'m':>6} | {'bordered':>9} {'x prev':>7} | {'refactor':>9} {'x prev':>7} | "
        f"{'speed-up':>8}"
    )
    print(header)
    print("-" * len(header))
    prev = None
    for m in [250, 500, 1000, 2000] if not args.quick else [250, 500, 1000]:
        inc, ref = factorization_times(m)
        g_inc = f"{inc / prev[0]:.1f}" if prev else "-"
        g_ref = f"{ref / prev[1]:.1f}" if prev else "-"
        print(
            f"{m:>6} | {inc * 1e3:>9.3f} {g_inc:>7} | {ref * 1e3:>9.3f} {g_ref:>7} | "
            f"{ref / inc:>7.0f}x"
        )
        prev = (inc, ref)
    print("(doubling m: O(m^2) predicts x4 per row, O(m^3) predicts x8)")


if __name__ == "__main__":
    main()
