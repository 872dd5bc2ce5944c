"""The ONS head's deferred rank-one update (issue 42): one fused pass over A^{-1} a step
(``PackedSymmetric.update_matvec``: P <- P + a x x^T, then P v; the compiled step calls the
same kernel) against the two passes it replaces (``rank_one`` then ``matvec``), packed, at
m = 500 (1 MB), with the matrix in cache and with the caches evicted before each step (a 64 MB
sweep). The two variants alternate within each round; the figure is the median of the rounds'
per-call CPU times and their ratio (the two passes pay one Python call more, about 1 us).

    python -m benchmarks.bench_lazy_rank [--m 500] [--rounds 9] [--calls 400]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from okoco.linalg import PackedSymmetric

EVICT = np.ones(8 * 1024 * 1024)  # 64 MB: more than every cache of the machine


def _two_passes(P, x, v):
    P.rank_one(-1e-9, x)
    return P.matvec(v)


def _fused(P, x, v):
    return P.update_matvec(-1e-9, x, v)


def _per_call(step, P, x, v, calls, evict):
    """CPU seconds a call, the eviction sweep (if any) outside the timed part."""
    total = 0.0
    for _ in range(calls):
        if evict:
            EVICT.sum()
        t = time.process_time_ns()
        step(P, x, v)
        total += time.process_time_ns() - t
    return total / calls * 1e-9


def run(m: int, rounds: int, calls: int) -> dict:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, m))
    S = A @ A.T / m + np.eye(m)
    P = PackedSymmetric.from_matrix(S)
    assert not P.is_dense
    x, v = rng.standard_normal(m) * 1e-3, rng.standard_normal(m)
    results = {}
    for evict in (False, True):
        calls_here = calls // 8 if evict else calls
        old, new = [], []
        for _ in range(rounds):
            old.append(_per_call(_two_passes, P, x, v, calls_here, evict))
            new.append(_per_call(_fused, P, x, v, calls_here, evict))
        ratios = [n / o for o, n in zip(old, new)]
        results["evicted" if evict else "in cache"] = (statistics.median(old),
                                                      statistics.median(new),
                                                      statistics.median(ratios))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    print(f"m = {args.m} packed ({args.m * (args.m + 1) // 2 * 8 / 1e6:.2f} MB), "
          f"load {os.getloadavg()[0]:.2f}")
    for where, (old, new, ratio) in run(args.m, args.rounds, args.calls).items():
        print(f"{where:9s} two passes {old * 1e6:7.1f} us   fused {new * 1e6:7.1f} us   "
              f"fused / two = {ratio:.2f} (median of rounds)")


if __name__ == "__main__":
    main()
