"""okoco.distributed: a 24-run grid serially and on 2 local workers; merge-tree build time.

Run: python benchmarks/bench_distributed.py [--quick]     (needs Dask: pip install -e ".[dev]")

1. Grid: KONS (alpha in {0.5, 1, 2}) and Sketched-KONS (beta in {2, 5, 10}) x 4 seeds on the
   synthetic Friedman #1 stream (n = 1500, d = 10): 24 test-then-train runs. Timed serially in
   this process, on a LocalCluster of 2 worker processes started for the call ("cold": cluster
   start, worker imports and shutdown included, what ``--scheduler local`` costs), and on an
   already running 2-worker cluster ("warm"). The metrics of every run must equal the serial
   ones exactly; the script stops if they do not.
2. Merge tree: SQUEAK (RBF gamma = 0.1, regularizer 10, eps = 0.5, qbar = 30) on n = 2000 points
   in 3-D (10 % of them spread out 4x), partitions 1 (plain sequential SQUEAK), 2, 4, 8; built
   serially and on the warm 2-worker cluster. Reported: wall time, the time until every
   partition dictionary exists and the merge time after that, the dictionary size, and the
   accuracy of the result, ||Psi (I - S S^T) Psi^T||_2 (<= eps is the guarantee of Theorem 1 for
   sequential SQUEAK), from an exact eigendecomposition of the 2000 x 2000 kernel matrix.

The machine this ran on is shared (see "load" in the JSON): timings are indicative only. Results
go to benchmarks/results/distributed.json and distributed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import time
import warnings

import numpy as np

from okoco.dictionary import effective_dimension
from okoco.distributed import grid, merge_tree
from okoco.kernels import RBF

RESULTS = pathlib.Path(__file__).parent / "results"
NUMBERS = {"status", "metrics", "cumulative_loss", "dictionary_size", "n_samples"}


def grid_runs(n: int, scheduler, workers=None) -> dict:
    start = time.perf_counter()
    res = grid({"kons": {"alpha": [0.5, 1.0, 2.0]}, "sketched-kons": {"beta": [2.0, 5.0, 10.0]}},
               "friedman", data_params={"n": n}, seeds=4, scheduler=scheduler, workers=workers)
    wall = time.perf_counter() - start
    assert len(res.records) == 24 and not res.failed, res.failed
    return {"wall_s": wall, "sum_task_s": sum(r["wall_s"] for r in res.records),
            "records": [{k: r[k] for k in NUMBERS} for r in res.records]}


def psi_error(K: np.ndarray, gamma: float, w: np.ndarray) -> float:
    """||Psi (I - S S^T) Psi^T||_2 with Psi = diag(s / (s + gamma))^1/2 U^T, diag(S S^T) = w."""
    s, U = np.linalg.eigh(K)
    s = np.clip(s, 0.0, None)
    f = s / (s + gamma)
    keep = f > 1e-14
    Psi = np.sqrt(f[keep])[:, None] * U[:, keep].T
    return float(np.abs(np.linalg.eigvalsh((Psi * (1.0 - w)[None, :]) @ Psi.T)).max())


def merge_runs(X: np.ndarray, K: np.ndarray, partitions: int, scheduler) -> dict:
    timings: dict = {}
    d = merge_tree(X, RBF(gamma=0.1), partitions=partitions, alpha=10.0, eps=0.5, qbar=30,
                   seed=0, scheduler=scheduler, timings=timings)
    w = np.zeros(X.shape[0])
    w[d.indices] = d.weights
    return {**timings, "size": d.size, "n_copies": d.n_copies,
            "psi_error": psi_error(K, 10.0, w), "indices": d.indices.tolist()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, smoke test")
    args = parser.parse_args()
    n_grid, n_merge = (300, 400) if args.quick else (1500, 2000)
    parts = (1, 2, 4) if args.quick else (1, 2, 4, 8)
    import distributed

    out: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                             "load_before": os.getloadavg()},
                 "grid": {"n": n_grid, "runs": 24}, "merge": {"n": n_merge}}
    print(f"load average before: {os.getloadavg()}")

    serial = grid_runs(n_grid, None)
    print(f"grid serial: {serial['wall_s']:.1f} s (tasks {serial['sum_task_s']:.1f} s)")
    cold = grid_runs(n_grid, "local", workers=2)
    print(f"grid local x2 (cold): {cold['wall_s']:.1f} s")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(cluster)
    started = time.perf_counter()
    grid({"kons": {}}, "sinc", data_params={"n": 20}, seeds=2, scheduler=client)  # imports
    out["cluster_overhead_s"] = {"start": started - start,
                                 "first_tiny_tasks": time.perf_counter() - started}
    try:
        warm = grid_runs(n_grid, client)
        print(f"grid local x2 (warm): {warm['wall_s']:.1f} s")
        for run in (cold, warm):
            assert run.pop("records") == serial["records"], "distributed grid differs from serial"
        serial.pop("records")
        out["grid"].update(serial=serial, local_cold=cold, local_warm=warm)

        rng = np.random.default_rng(0)
        X = rng.normal(size=(n_merge, 3))
        X[: n_merge // 10] *= 4.0
        K = RBF(gamma=0.1)(X, X)
        out["merge"]["d_eff"] = effective_dimension(K, 10.0)
        rows = []
        for p in parts:
            s = merge_runs(X, K, p, None)
            c = merge_runs(X, K, p, client)
            assert s.pop("indices") == c.pop("indices"), "cluster tree differs from serial tree"
            rows.append({"partitions": p, "serial": s, "local_2": c})
            print(f"merge tree p={p}: serial {s['total_s']:.2f} s, 2 workers {c['total_s']:.2f} s,"
                  f" size {s['size']}, psi error {s['psi_error']:.3f}")
        out["merge"]["rows"] = rows
    finally:
        stop = time.perf_counter()
        client.close()
        cluster.close()
        out["cluster_overhead_s"]["stop"] = time.perf_counter() - stop
    out["machine"]["load_after"] = os.getloadavg()
    name = "distributed_quick" if args.quick else "distributed"
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown(out))
    print(markdown(out))


def markdown(out: dict) -> str:
    g, m = out["grid"], out["merge"]
    lines = [
        f"# okoco.distributed benchmark ({out['machine']['cpus']} CPUs, shared machine: load "
        f"{out['machine']['load_before'][0]:.1f} before, {out['machine']['load_after'][0]:.1f} "
        "after; timings indicative)",
        "",
        f"## 24-run grid (KONS / Sketched-KONS x 3 parameters x 4 seeds, Friedman n={g['n']})",
        "",
        "| where | wall (s) | speed-up |",
        "|---|---:|---:|",
    ]
    base = g["serial"]["wall_s"]
    for label, key in (("serial, this process", "serial"),
                       ("LocalCluster 2 workers, cold (start + imports + stop)", "local_cold"),
                       ("LocalCluster 2 workers, warm", "local_warm")):
        lines.append(f"| {label} | {g[key]['wall_s']:.1f} | {base / g[key]['wall_s']:.2f}x |")
    lines += [
        "",
        "Metrics of all 24 runs identical to the serial run (checked). Cold-start overhead, "
        "measured apart: LocalCluster start {start:.1f} s, first tiny tasks (imports on the "
        "workers) {first_tiny_tasks:.1f} s, stop {stop:.1f} s.".format(
            **out["cluster_overhead_s"]),
        "",
        f"## Merge-tree SQUEAK (RBF 0.1, n={m['n']}, d = 3, d_eff(10) = {m['d_eff']:.1f}, "
        "qbar = 30, eps = 0.5)",
        "",
        "| partitions | serial (s) | 2 workers (s) | build / merge on 2 workers (s) | size | "
        "copies | Psi error |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in m["rows"]:
        s, c = row["serial"], row["local_2"]
        lines.append(f"| {row['partitions']} | {s['total_s']:.2f} | {c['total_s']:.2f} | "
                     f"{c['build_s']:.2f} / {c['merge_s']:.2f} | {s['size']} | {s['n_copies']} | "
                     f"{s['psi_error']:.3f} |")
    lines += ["", "Same dictionary serially and on the cluster for each partition count "
              "(checked).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
