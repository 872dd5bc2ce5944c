"""Comparator solve time against T, and the exact-vs-Nyström gap.

Run: ``python benchmarks/bench_comparators.py [--quick]``. Prints one line per fit:
comparator, T, seconds, objective, solver diagnostics. Data: a function in the RKHS of an
RBF kernel plus noise, targets clipped to [-1, 1]; C = 0.5 so the box constraints bind.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from okoco import kernels, losses
from okoco.regret import ClippedKernelERM, KernelRidge, NystromKernelERM


def stream(T, seed=0):
    rng = np.random.default_rng(seed)
    k = kernels.RBF(2.0)
    centres = rng.uniform(-1, 1, size=(10, 2))
    coef = rng.standard_normal(10)
    X = rng.uniform(-1, 1, size=(T, 2))
    f = k(X, centres) @ coef
    f *= 0.8 / np.max(np.abs(f))
    return k, X, np.clip(f + 0.3 * rng.standard_normal(T), -1, 1)


def timed(model, X, y):
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0, model


def main(quick: bool = False) -> None:
    C, alpha, m = 0.5, 1.0, 300
    sizes_exact = [1000] if quick else [1000, 5000]
    sizes_nys = [1000, 5000] if quick else [1000, 5000, 20000]
    loss = losses.Squared()
    exact = {}
    for T in sizes_exact:
        k, X, y = stream(T)
        s, krr = timed(KernelRidge(k, alpha), X, y)
        print(f"KernelRidge               T={T:6d}  {s:8.2f} s  objective={krr.objective_:.6g}")
        s, erm = timed(ClippedKernelERM(k, loss, C=C, alpha=alpha), X, y)
        exact[T] = (krr, erm)
        print(f"ClippedKernelERM          T={T:6d}  {s:8.2f} s  objective={erm.objective_:.6g}"
              f"  active={int(erm.active_.sum())}  kkt={erm.kkt_residual():.1e}"
              f"  method={erm.method_}  newton_steps={erm.n_iter_}")
    for T in sizes_nys:
        k, X, y = stream(T)
        s, nk = timed(NystromKernelERM(k, loss, alpha, n_components=m, seed=0), X, y)
        line = (f"NystromKernelERM m={m}    T={T:6d}  {s:8.2f} s  objective={nk.objective_:.6g}"
                f"  residual_trace={nk.residual_trace_:.2e}")
        if T in exact:
            gap = (nk.objective_ - exact[T][0].objective_) / exact[T][0].objective_
            line += f"  gap_vs_exact={gap:.2e}"
        print(line)
        s, nc = timed(NystromKernelERM(k, loss, alpha, n_components=m, C=C, seed=0), X, y)
        line = (f"NystromKernelERM C={C}     T={T:6d}  {s:8.2f} s  objective={nc.objective_:.6g}"
                f"  duality_gap_bound={nc.duality_gap_:.1e}  newton_steps={nc.n_iter_}")
        if T in exact:
            gap = (nc.objective_ - exact[T][1].objective_) / exact[T][1].objective_
            line += f"  gap_vs_exact={gap:.2e}"
        else:
            g = nc.objective_gap(X, y, n_sub=2000)
            line += f"  gap_vs_exact_on_2000_subsample={g['relative_gap']:.2e}"
        print(line)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
