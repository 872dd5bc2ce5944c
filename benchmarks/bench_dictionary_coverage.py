"""How well a full dictionary covers a long stream: ``Auto``'s two dictionaries alone (no
heads), per block of steps, the mean residual :math:`k(x,x) - h^\\top h` of the block's points
against the atoms they met (0: in the span; 1 for the RBF: orthogonal to every atom) and the
swaps, under a full-dictionary rule. Inputs standardized online (river ``StandardScaler``), the
streams of :mod:`benchmarks.bench_long_streams`.

Usage::

    python -m benchmarks.bench_dictionary_coverage --stream friedman-shift --rule usage --margin 30
    python -m benchmarks.bench_dictionary_coverage --stream friedman --rule frozen
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from river import preprocessing

from benchmarks.bench_long_streams import STREAMS, stream
from okoco import kernels
from okoco.learners.embedding import SWAP_RULES, SharedEmbedding

SCALES = (0.2, 3.0)  # Auto's dictionaries: RBF(c / d) (okoco.learners.auto.DEFAULT_EXPERTS)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stream", default="friedman-shift", choices=list(STREAMS))
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--block", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rule", default="usage", choices=["frozen", *SWAP_RULES])
    parser.add_argument("--margin", type=float, default=30.0)
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--horizon", type=int, default=None, help="usage_horizon (steps)")
    args = parser.parse_args(argv)
    scaler = preprocessing.StandardScaler()
    embeddings = None
    residuals, swaps_before = [], [0] * len(SCALES)
    print(f"# {args.stream}, seed {args.seed}, rule {args.rule}, margin {args.margin:g}, "
          f"{args.size} atoms; columns per RBF(c/d), c = {SCALES}; load "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    start = time.process_time()
    for t, (x, _) in enumerate(stream(args.stream, args.steps, args.seed)):
        scaler.learn_one(x)
        v = np.array(list(scaler.transform_one(x).values()))
        if embeddings is None:
            embeddings = [SharedEmbedding(
                kernels.RBF(c / v.shape[0]), 1.0, max_size=args.size,
                swap_margin=None if args.rule == "frozen" else args.margin,
                swap_rule="residual" if args.rule == "frozen" else args.rule,
                usage_horizon=args.horizon) for c in SCALES]
        row = []
        for embedding in embeddings:
            embedded = embedding.analyse(v)
            row.append(embedded.kappa - float(embedded.h @ embedded.h))
            embedding.offer(v, embedded)
            embedding.swap_in(v, embedded, [])
        residuals.append(row)
        if (t + 1) % args.block == 0:
            mean = np.mean(residuals, axis=0)
            swaps = [e.n_swaps for e in embeddings]
            print(f"step {t + 1}: " + " | ".join(
                f"residual {r:.4f}, swaps {s - b}" for r, s, b in zip(mean, swaps, swaps_before)),
                flush=True)
            residuals, swaps_before = [], swaps
    print(f"# CPU {time.process_time() - start:.1f} s; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
