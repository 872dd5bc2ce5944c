"""The command line as a user runs it: ``okoco replay DATASET -l LEARNER``, idle and loaded.

Each run is a fresh ``okoco replay ... --json`` process (the CLI's defaults, the default BLAS
threading) started from an empty folder; its µs/sample is the replay's own figure (the steps:
fetching each row, predicting, scoring, learning; the file is read before the first step).
Runs alternate between the two conditions so that both see the same machine: *idle* (nothing
else started) and *loaded* (one busy process, ``while True: pass``, beside the replay, as in
``python -m benchmarks --loaded``). Reports every run, the median and the best of each condition,
and the load average::

    python -m benchmarks.bench_cli                          # trump-approval, krls, 7 runs each
    python -m benchmarks.bench_cli --dataset sinc --learner fgd --runs 5

Writes ``benchmarks/results/cli.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import busy_process

RESULTS = Path(__file__).resolve().parent / "results" / "cli.json"


def one_run(dataset: str, learner: str, folder: str) -> dict:
    """One ``okoco replay`` process; its JSON summary."""
    okoco = shutil.which("okoco")
    command = [okoco] if okoco else [sys.executable, "-m", "okoco.cli"]
    proc = subprocess.run([*command, "replay", dataset, "-l", learner, "--json"],
                          capture_output=True, text=True, cwd=folder, check=True)
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="trump-approval")
    parser.add_argument("--learner", default="krls")
    parser.add_argument("--runs", type=int, default=7, help="runs per condition")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    runs: dict[str, list[float]] = {"idle": [], "loaded": []}
    metric = None
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):
            for condition in runs:
                context = busy_process() if condition == "loaded" else contextlib.nullcontext()
                with context:
                    summary = one_run(args.dataset, args.learner, folder)
                us = 1e6 * summary["elapsed_s"] / summary["n_samples"]
                runs[condition].append(us)
                metric = summary["metrics"]
                print(f"{condition:6s} {us:7.1f} us/sample", flush=True)
    report = {"command": f"okoco replay {args.dataset} -l {args.learner}", "metrics": metric,
              "load_start": load_start, "load_end": os.getloadavg(),
              "runs": runs,
              "median_us": {k: statistics.median(v) for k, v in runs.items()},
              "best_us": {k: min(v) for k, v in runs.items()}}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1))
    print(f"{report['command']}: {metric}")
    for k in runs:
        print(f"{k:6s} median {report['median_us'][k]:.1f}, best {report['best_us'][k]:.1f} "
              "us/sample")
    print(f"load average at start {load_start}, at end {report['load_end']}")
    return report


if __name__ == "__main__":
    main()
