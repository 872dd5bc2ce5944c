"""CPU per step of the usage rule's bookkeeping (``SharedEmbedding.swap_in`` for a point
marked as joined: the usages, count and mean residual kept, ``O(m)``, and no swap) against
one embedding's analysis of a point (``SharedEmbedding.analyse``: a kernel row and a
triangular solve, ``O(m d + m^2)``), at ``m`` atoms, rounds alternated.

Usage::

    python -m benchmarks.bench_usage_rule --atoms 500 --dim 10 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from okoco import kernels
from okoco.learners.embedding import SharedEmbedding


def full_embedding(m: int, d: int, rng) -> SharedEmbedding:
    """A usage-rule dictionary of ``m`` atoms (every offered point joins: ``eps`` tiny)."""
    embedding = SharedEmbedding(kernels.RBF(3.0 / d), max_size=m, swap_margin=10.0,
                                swap_rule="usage", eps=1e-9)
    while embedding.size < m:
        v = rng.normal(size=d)
        embedded = embedding.analyse(v)
        embedding.offer(v, embedded)
    return embedding


def cpu_us(call, arguments) -> float:
    """CPU microseconds per ``call(a)`` over ``arguments``."""
    start = time.process_time()
    for a in arguments:
        call(a)
    return 1e6 * (time.process_time() - start) / len(arguments)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--atoms", type=int, default=500)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    embedding = full_embedding(args.atoms, args.dim, rng)
    points = rng.normal(size=(args.steps, args.dim))
    embedded = [embedding.analyse(v) for v in points[:50]] * (args.steps // 50 + 1)
    for e in embedded:
        e.joined = True  # (swap_in keeps the statistics, then swaps nothing)
    print(f"# {args.atoms} atoms, d = {args.dim}, {args.steps} points a round; "
          f"load {os.getloadavg()[0]:.2f}")
    for r in range(args.rounds):
        analyse = cpu_us(embedding.analyse, points)
        usage = cpu_us(lambda e: embedding.swap_in(None, e, []), embedded[: args.steps])
        print(f"round {r}: analyse {analyse:.1f} us, usage bookkeeping {usage:.1f} us "
              f"({usage / analyse:.2f}x); load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
