"""The command: ``python -m benchmarks [--quick] [options]`` from the repository root.

Runs every learner of :func:`benchmarks.learners.entries` on every stream of
:data:`benchmarks.data.SPECS` (each run in a forked child, for its peak memory), then each
learner's step against its floor (:func:`benchmarks.measure.step_floors`), and writes the JSON
results (``benchmarks/results/benchmarks.json``) and the page (``docs/benchmarks.md``).
``--quick`` runs small prefixes, one setting per learner, under ``benchmarks/results/quick/``.
Headline figures are at the BLAS's default threading; the best settings are re-timed on one
thread and, with ``--loaded``, beside one busy process. ``python -m benchmarks report`` writes
the page from the stored results, measuring nothing.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import data, harness, learners, measure, report

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = 1


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def score(stream: data.Stream, preds: np.ndarray) -> dict:
    """Online metrics of the predictions, on the original scale."""
    if stream.task == "binary":
        accuracy = float(np.mean(preds == stream.y))  # NaN (no prediction yet) is a mistake
        return {"metric": "accuracy", "accuracy": accuracy, "error": 1.0 - accuracy}
    scaled = np.nan_to_num(preds, nan=0.0)  # no prediction yet: the running mean
    err = stream.y_shift + stream.y_scale * scaled - stream.y_true
    rmse = float(np.sqrt(np.mean(err * err)))
    return {"metric": "rmse", "rmse": rmse, "mae": float(np.mean(np.abs(err))), "error": rmse}


def run_stream(stream: data.Stream, quick: bool, skip: tuple[str, ...], only: tuple[str, ...],
               method: str | None, loaded: bool = False) -> tuple[list, dict]:
    """All runs on one stream, and the figures of the measuring harness alone."""
    inputs, n, runs = measure.inputs(stream), stream.n, []
    raw = measure.run_entry(learners.harness(), stream, inputs, method)
    noop = raw if "error" in raw else {"us_per_sample": 1e6 * raw["seconds"] / n,
                                       "peak_bytes": raw["peak_bytes"]}
    log(f"  {'(harness: no-op learner)':<60} {noop.get('us_per_sample', math.nan):9.2f} "
        f"us/sample  {report.megabytes(noop.get('peak_bytes'))} MB")
    entries = learners.entries(stream, quick=quick, skip=skip, only=only)
    for entry in entries:
        raw = measure.run_entry(entry, stream, inputs, method)
        rec = {"dataset": stream.name, "learner": entry.learner, "family": entry.family,
               "library": entry.library, "params": entry.params, "key": entry.key, "n": n}
        if "error" in raw:
            rec.update(status="error", error=raw["error"])
            log(f"  {entry.key:<60} FAILED\n{raw['error']}")
            runs.append(rec)
            continue
        rec.update(status="ok", seconds=raw["seconds"], us_per_sample=1e6 * raw["seconds"] / n,
                   peak_bytes=raw["peak_bytes"], dictionary_size=raw["dictionary_size"],
                   **score(stream, raw["preds"]))
        runs.append(rec)
        log(f"  {entry.key:<60} {rec['metric']} {rec[rec['metric']]:.4f}  "
            f"{rec['us_per_sample']:9.1f} us/sample  "
            f"{report.megabytes(rec['peak_bytes'])} MB")

    by_key = {e.key: e for e in entries}
    # head to head first: it decides which SketchedKONS setting a target judges
    rounds = report.H2H_QUICK_ROUNDS if quick else report.H2H_ROUNDS
    replay = (by_key, stream, inputs, method)
    head_to_head(report.head_to_head_pairs(runs, stream.name, stream.task), *replay,
                 loaded=loaded, rounds=rounds)
    best = report.best_runs(runs)
    chosen = {id(r) for r in best}  # and the settings the targets judge (report.target_runs)
    rerun_best(best + [r for r in report.target_runs(runs) if id(r) not in chosen], *replay,
               loaded=loaded)
    return runs, noop


def _us(rec: dict, by_key: dict, stream: data.Stream, inputs: dict,
        method: str | None) -> float | None:
    """µs/sample of one more forked replay of ``rec``'s setting (``None`` if it fails)."""
    raw = measure.run_entry(by_key[rec["key"]], stream, inputs, method)
    return None if "error" in raw else 1e6 * raw["seconds"] / stream.n


def rerun_best(best: list[dict], *replay, loaded: bool) -> None:
    """Time each best setting again pinned to one BLAS thread and, if ``loaded``, with one busy
    process beside the suite (default threading): the ``one_thread`` and ``loaded`` figures."""
    from threadpoolctl import threadpool_limits

    conditions = [("one_thread", lambda: threadpool_limits(limits=1))]
    for name, condition in conditions + ([("loaded", harness.busy_process)] if loaded else []):
        with condition():
            for rec in best:
                us = _us(rec, *replay)
                rec[name] = {"error": "a replay failed"} if us is None else {"us_per_sample": us}
                log(f"  {rec['key']:<60} {name:>10} {us or math.nan:9.1f} us/sample")


#: A pair is compared head to head only if one round (a replay of each) takes at most this.
H2H_BUDGET_S = 10.0


def head_to_head(pairs: list[tuple[dict, dict]], *replay, loaded: bool, rounds: int) -> None:
    """Time each ``(mine, peer)`` pair of a time target in ``rounds`` alternating rounds.

    A round replays both (each a forked run), the order swapped every round (ABBA), so that
    a burst of load falls on both alike; the pair's ratio is the median of the rounds'. Idle
    and, if ``loaded``, beside one busy process. Stored on ``mine`` as ``head_to_head[peer
    key]``; a pair whose single passes took over :data:`H2H_BUDGET_S` is left to them.
    """
    from contextlib import nullcontext

    conditions = [("idle", nullcontext)] + ([("loaded", harness.busy_process)] if loaded else [])
    for mine, peer in pairs:
        if mine["seconds"] + peer["seconds"] > H2H_BUDGET_S:
            continue
        record = {}
        for name, condition in conditions:
            us = {id(mine): [], id(peer): []}
            with condition():
                for i in range(rounds):
                    for rec in (mine, peer) if i % 2 == 0 else (peer, mine):
                        us[id(rec)].append(_us(rec, *replay))
            if None in us[id(mine)] + us[id(peer)]:
                log(f"  head to head {mine['key']} vs {peer['key']}: a replay failed")
                break
            ratios = [a / b for a, b in zip(us[id(mine)], us[id(peer)])]
            record[name] = {"us": us[id(mine)], "peer_us": us[id(peer)], "ratios": ratios,
                            "ratio": float(np.median(ratios))}
            log(f"  head to head {mine['key']} vs {peer['key']} ({name}): ratio "
                f"{record[name]['ratio']:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})")
        else:
            mine.setdefault("head_to_head", {})[peer["key"]] = record


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0],
                                epilog="python -m benchmarks report [--json FILE] [--docs PAGE]: "
                                       "the page from the stored results, nothing run")
    p.add_argument("--quick", action="store_true",
                   help="small prefixes, one setting per learner; writes under "
                        "benchmarks/results/quick/ (under a minute)")
    p.add_argument("--datasets", default=None,
                   help=f"comma-separated subset of {','.join(data.SPECS)}")
    p.add_argument("--n", type=int, default=None, help="cap every stream at n rows")
    p.add_argument("--skip", default="",
                   help="comma-separated libraries to leave out: vowpalwabbit, scikit-learn")
    p.add_argument("--learners", default="",
                   help="comma-separated: run only learners whose name contains one of these")
    p.add_argument("--json", type=Path, default=None, help="where to write the JSON results")
    p.add_argument("--docs", type=Path, default=None, help="the Markdown page to write")
    p.add_argument("--loaded", action="store_true",
                   help="also time every best setting with one busy process beside the suite")
    p.add_argument("--no-memory", action="store_true",
                   help="run in-process, without forking (no peak-memory figures)")
    return p.parse_args(argv)


def report_page(argv=None) -> str:
    """``python -m benchmarks report``: the page from the stored results (nothing measured);
    returns its text."""
    p = argparse.ArgumentParser(prog="python -m benchmarks report",
                                description="docs/benchmarks.md from the stored results")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/benchmarks.json")
    p.add_argument("--docs", type=Path, default=ROOT / "docs/benchmarks.md",
                   help="the page to write")
    args = p.parse_args(argv)
    results = report.summarize(json.loads(args.json.read_text(encoding="utf-8")))
    page = report.write(results, args.docs)
    log(f"wrote {page} from {args.json}")
    return page.read_text(encoding="utf-8")


def main(argv=None) -> dict | str:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["report"]:
        return report_page(argv[1:])
    args = parse_args(argv)
    sub = Path("benchmarks/results/quick") if args.quick else Path("benchmarks/results")
    json_path = args.json or ROOT / sub / "benchmarks.json"
    docs = args.docs or (ROOT / sub / "benchmarks.md" if args.quick
                         else ROOT / "docs" / "benchmarks.md")

    names = args.datasets.split(",") if args.datasets else list(data.SPECS)
    unknown = [n for n in names if n not in data.SPECS]
    if unknown:
        raise SystemExit(f"unknown datasets {unknown}; known: {', '.join(data.SPECS)}")
    skip = tuple(s.strip() for s in args.skip.split(",") if s.strip())
    only = tuple(s.strip() for s in args.learners.split(",") if s.strip())
    method = None if args.no_memory else harness.memory_method()

    started = time.time()
    results = {
        "schema": SCHEMA,
        "mode": "quick" if args.quick else "full",
        "command": "python -m benchmarks " + " ".join(argv),
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": harness.machine(),
        "blas_threads": "default",  # headline figures; "one_thread" and "loaded" re-time them
        "loaded": bool(args.loaded),
        "datasets": [], "skipped": [], "runs": [], "floor_definitions": measure.FLOOR_DEFINITIONS,
    }
    floors = measure.Floors()
    learners.preload()
    for name in names:
        stream = data.load_stream(name, n=args.n, quick=args.quick)
        if isinstance(stream, str):
            results["skipped"].append({"dataset": name, "reason": stream})
            log(f"{name}: {stream}")
            continue
        log(f"{name}: n = {stream.n}, d = {stream.d}, {stream.task}")
        runs, noop = run_stream(stream, args.quick, skip, only, method, loaded=args.loaded)
        results["datasets"].append({**stream.describe(), "harness": noop})
        results["runs"] += runs
    log(f"per-step time against the floor at t = {measure.STEP_FLOOR_T}")
    results["step_floors"] = measure.step_floors(floors, method, only,
                                                 up_to=1_000 if args.quick else None)
    for row in results["step_floors"]:
        log(f"  {row['learner']:<14} " + (
            "FAILED" if "error" in row else
            f"t = {row['t']:>6}  m = {row['m']:>5}  {row['step_us']:8.1f} us/step  floor "
            f"{row['floor_us']:7.1f} us  x{row['multiple']:.2f} "
            f"(median x{row['median_multiple']:.2f}, CPU x{row['cpu_multiple']:.2f})"))
    results["duration_s"] = time.time() - started
    results["load_average_end"] = harness.load()
    report.summarize(results)
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report.clean(results), indent=1))
    report.write(results, docs)
    log(f"wrote {json_path} and {docs} "
        f"in {results['duration_s']:.0f} s")
    return results


if __name__ == "__main__":
    main()
