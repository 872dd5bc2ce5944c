"""The command: ``python -m benchmarks [--quick] [options]`` from the repository root.

``python -m benchmarks report [--json FILE] [--docs PAGE] [--plots]`` writes the page from the
stored results, measuring nothing.

Runs every learner of :func:`benchmarks.learners.entries` on every stream of
:data:`benchmarks.data.SPECS` (the cached-only ones when cached), one after the other in one
process (each run in a forked child, for its peak memory), then writes

- the JSON results (``benchmarks/results/benchmarks.json``; ``--json``),
- the Markdown page and its PNG plots (``docs/benchmarks.md``, ``docs/benchmarks/``; ``--docs``
  names the page).

``--quick`` runs small prefixes with one setting per learner and writes under
``benchmarks/results/quick/`` instead, leaving the published page alone.
BLAS runs with the user's default threading for the headline figures; each learner's best
setting is then timed again pinned to one thread and, with ``--loaded``, with one busy process
beside the suite. The machine is described in the output.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import data, learners, measure, report

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = 1
STEP_T = 5000  # the t of the per-step floor comparison (KONS target)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- scoring --------------------------------------------------------------------------------------


def score(stream: data.Stream, preds: np.ndarray, n_points: int = 40) -> dict:
    """Online metrics of the predictions, on the original scale, and their curve over t."""
    n = stream.n
    t = np.unique(np.linspace(1, n, min(n_points, n)).round().astype(int))
    if stream.task == "binary":
        correct = preds == stream.y.astype(float)  # NaN (no prediction yet) counts as a mistake
        made = ~np.isnan(preds)
        cum = np.cumsum(correct)
        return {
            "metric": "accuracy", "accuracy": float(correct.mean()),
            "error": float(1.0 - correct.mean()),
            # as river.metrics.Accuracy counts it (steps without a prediction are skipped)
            "river_metric": float(correct[made].mean()) if made.any() else math.nan,
            "curve": {"t": t.tolist(), "value": (cum[t - 1] / t).tolist()},
        }
    scaled = np.nan_to_num(preds, nan=0.0)  # no prediction yet: the running mean
    err = stream.y_shift + stream.y_scale * scaled - stream.y_true
    sq = np.cumsum(err * err)
    rmse = float(math.sqrt(sq[-1] / n))
    return {
        "metric": "rmse", "rmse": rmse, "mae": float(np.mean(np.abs(err))), "error": rmse,
        "river_metric": float(np.mean((scaled - stream.y) ** 2)),  # MSE on the learner's scale
        "curve": {"t": t.tolist(), "value": np.sqrt(sq[t - 1] / t).tolist()},
    }


def step_profile(stamps: np.ndarray, marks: list[int], sizes: list, window: int,
                 t_star: int) -> dict:
    """Mean µs per step over consecutive windows, and over the window ending at ``t_star``."""
    n = stamps.shape[0]
    size_at = dict(zip(marks, sizes))
    ends = list(range(window, n + 1, window))
    us, centres, m = [], [], []
    prev = 0.0
    for end in ends:
        us.append(1e6 * (stamps[end - 1] - prev) / window)
        centres.append(end - window / 2)
        m.append(size_at.get(end))
        prev = stamps[end - 1]
    lo = max(t_star - window, 0)
    at = 1e6 * (stamps[t_star - 1] - (stamps[lo - 1] if lo else 0.0)) / (t_star - lo)
    return {"window": window, "t": centres, "us": us, "m": m,
            "at": {"t": t_star, "us": at, "m": size_at.get(t_star)}}


# -- one stream -----------------------------------------------------------------------------------


def run_stream(stream: data.Stream, quick: bool, skip: tuple[str, ...], only: tuple[str, ...],
               method: str | None, floors: measure.Floors,
               loaded: bool = False) -> tuple[list, list, list, dict]:
    """All runs on one stream; the floors of okoco's best runs; notes; the harness figures."""
    inputs = measure.Inputs(stream)
    n = stream.n
    window = max(10, n // 25)
    t_star = min(STEP_T, n)
    marks = measure.marks_for(n, window, (t_star,))
    runs, notes = [], []
    raw = measure.run_entry(learners.harness(), stream, inputs, marks, method)
    if "error" not in raw:
        harness = {"us_per_sample": 1e6 * raw["seconds"] / n, "peak_bytes": raw["peak_bytes"]}
        log(f"  {'(harness: no-op learner)':<60} {harness['us_per_sample']:9.2f} us/sample  "
            f"{_mb(harness['peak_bytes'])} MB")
    else:
        harness = {"error": raw["error"]}
    for entry in learners.entries(stream, quick=quick, skip=skip, only=only):
        raw = measure.run_entry(entry, stream, inputs, marks, method)
        rec = {"dataset": stream.name, "learner": entry.learner, "family": entry.family,
               "library": entry.library, "params": entry.params, "key": entry.key, "n": n}
        if "error" in raw:
            rec.update(status="error", error=raw["error"])
            log(f"  {entry.key:<60} FAILED\n{raw['error']}")
            runs.append(rec)
            continue
        rec.update(status="ok", seconds=raw["seconds"], us_per_sample=1e6 * raw["seconds"] / n,
                   peak_bytes=raw["peak_bytes"], **score(stream, raw["preds"]))
        if raw["stamps"] is not None:
            rec["steps"] = step_profile(raw["stamps"], marks, raw["sizes"], window, t_star)
            rec["dictionary_size"] = raw["sizes"][-1] if raw["sizes"] else None
        runs.append(rec)
        log(f"  {entry.key:<60} {rec['metric']} {rec[rec['metric']]:.4f}  "
            f"{rec['us_per_sample']:9.1f} us/sample  "
            f"{_mb(rec['peak_bytes'])} MB")

    best = report.best_runs(runs)
    floor_rows = []
    by_key = {e.key: e for e in learners.entries(stream, quick=quick, skip=skip, only=only)}
    # head to head first: it decides which SketchedKONS setting a target judges
    rounds = report.H2H_QUICK_ROUNDS if quick else report.H2H_ROUNDS
    head_to_head(report.head_to_head_pairs(runs, stream.name, stream.task), by_key, stream,
                 inputs, marks, method, loaded, rounds=rounds)
    chosen = {id(r) for r in best}  # and the settings the targets judge (report.target_runs)
    picks = [r for r in report.target_runs(runs) if id(r) not in chosen]
    rerun_best(best + picks, by_key, stream, inputs, marks, method, loaded)
    for rec in best:
        if rec["family"] != "okoco" or "steps" not in rec:
            continue
        arr = measure.replay_arrays(by_key[rec["key"]], stream, method)
        if "error" in arr:
            notes.append(f"array-path replay of {rec['key']} failed: {arr['error']}")
        else:
            rec["array_path"] = {
                "seconds": arr["seconds"], "us_per_sample": 1e6 * arr["seconds"] / n,
                "river_metric": arr["metric"],
                "agrees": bool(math.isclose(arr["metric"], rec["river_metric"], rel_tol=1e-9,
                                            abs_tol=1e-12)),
            }
        at = rec["steps"]["at"]
        m = at["m"] if at["m"] is not None else at["t"]
        floor = floors.of(rec["learner"], at["t"], m, stream.d)
        floor_rows.append({
            "dataset": stream.name, "learner": rec["learner"], "key": rec["key"], "t": at["t"],
            "m": m, "d": stream.d, "step_us": at["us"], "floor_us": floor["total"],
            "parts_us": {k: v for k, v in floor.items() if k != "total"},
            "multiple": at["us"] / floor["total"] if floor["total"] > 0 else math.nan,
            "curve": _floor_curve(floors, rec, stream.d),
        })
    return runs, floor_rows, notes, harness


def rerun_best(best: list[dict], by_key: dict, stream: data.Stream, inputs: measure.Inputs,
               marks: list[int], method: str | None, loaded: bool) -> None:
    """Time each best setting again pinned to one BLAS thread and, if ``loaded``, with one busy
    process beside the suite (default threading): the ``one_thread`` and ``loaded`` figures."""
    from threadpoolctl import threadpool_limits

    conditions = [("one_thread", lambda: threadpool_limits(limits=1))]
    if loaded:
        conditions.append(("loaded", measure.busy_process))
    for name, condition in conditions:
        with condition():
            for rec in best:
                raw = measure.run_entry(by_key[rec["key"]], stream, inputs, marks, method)
                rec[name] = ({"error": raw["error"]} if "error" in raw else
                             {"us_per_sample": 1e6 * raw["seconds"] / stream.n})
                log(f"  {rec['key']:<60} {name:>10} "
                    f"{rec[name].get('us_per_sample', math.nan):9.1f} us/sample")


#: A pair is compared head to head only if one round (a replay of each) takes at most this.
H2H_BUDGET_S = 10.0


def head_to_head(pairs: list[tuple[dict, dict]], by_key: dict, stream: data.Stream,
                 inputs: measure.Inputs, marks: list[int], method: str | None, loaded: bool,
                 rounds: int = report.H2H_ROUNDS) -> None:
    """Time each ``(mine, peer)`` pair of a time target in ``rounds`` alternating rounds.

    A round replays both (each in its own forked run, as every other figure), the order
    swapped every round (ABBA), so that a burst of load on the machine falls on both alike;
    the pair's time ratio is the median of the rounds' ratios. Idle, and with one busy process
    beside the suite if ``loaded``. Stored on ``mine`` as ``head_to_head[peer key]``; a pair
    whose single passes took longer than :data:`H2H_BUDGET_S` together is left to them.
    """
    from contextlib import nullcontext

    conditions = [("idle", nullcontext)] + ([("loaded", measure.busy_process)] if loaded else [])
    for mine, peer in pairs:
        if mine["seconds"] + peer["seconds"] > H2H_BUDGET_S:
            continue
        record = {}
        for name, condition in conditions:
            with condition():
                us = _rounds(mine, peer, by_key, stream, inputs, marks, method, rounds)
            if us is None:
                log(f"  head to head {mine['key']} vs {peer['key']}: a replay failed")
                break
            ratios = [a / b for a, b in zip(us["mine"], us["peer"])]
            record[name] = {"us": us["mine"], "peer_us": us["peer"], "ratios": ratios,
                            "ratio": float(np.median(ratios))}
            log(f"  head to head {mine['key']} vs {peer['key']} ({name}): ratio "
                f"{record[name]['ratio']:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})")
        else:
            mine.setdefault("head_to_head", {})[peer["key"]] = record


def _rounds(mine: dict, peer: dict, by_key: dict, stream: data.Stream, inputs: measure.Inputs,
            marks: list[int], method: str | None, rounds: int) -> dict | None:
    """µs/sample of ``mine`` and ``peer`` over ``rounds`` ABBA rounds; ``None`` on a failure."""
    us: dict[str, list[float]] = {"mine": [], "peer": []}
    for i in range(rounds):
        for who in (("mine", "peer") if i % 2 == 0 else ("peer", "mine")):
            rec = mine if who == "mine" else peer
            raw = measure.run_entry(by_key[rec["key"]], stream, inputs, marks, method)
            if "error" in raw:
                return None
            us[who].append(1e6 * raw["seconds"] / stream.n)
    return us


def _floor_curve(floors: measure.Floors, rec: dict, d: int, points: int = 5) -> dict:
    steps = rec["steps"]
    k = len(steps["t"])
    idx = sorted({int(round(i)) for i in np.geomspace(1, k, min(points, k))} - {0})
    ts, us = [], []
    for i in idx:
        t = int(steps["t"][i - 1] + steps["window"] / 2)
        m = steps["m"][i - 1] if steps["m"][i - 1] is not None else t
        ts.append(steps["t"][i - 1])
        us.append(floors.of(rec["learner"], t, m, d)["total"])
    return {"t": ts, "us": us}


def _mb(b) -> str:
    return "   -" if b is None else f"{b / 2**20:6.1f}"


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0],
                                epilog="python -m benchmarks report [--json FILE] [--docs PAGE] "
                                       "[--plots]: the page from stored results, nothing run")
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
    p.add_argument("--docs", type=Path, default=None,
                   help="the Markdown page to write (its plots go to benchmarks/*.png beside it)")
    p.add_argument("--loaded", action="store_true",
                   help="also time every best setting with one busy process beside the suite")
    p.add_argument("--no-memory", action="store_true",
                   help="run in-process, without forking (no peak-memory figures)")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    return p.parse_args(argv)


def report_page(argv=None) -> str:
    """``python -m benchmarks report``: the page from the stored results (nothing measured);
    returns its text. ``--plots`` draws its PNGs again too (needs matplotlib)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks report",
                                description="docs/benchmarks.md from the stored results")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/benchmarks.json")
    p.add_argument("--docs", type=Path, default=ROOT / "docs/benchmarks.md",
                   help="the page to write")
    p.add_argument("--plots", action="store_true", help="draw the plots again beside the page")
    args = p.parse_args(argv)
    results = report.summarize(json.loads(args.json.read_text(encoding="utf-8")))
    page = report.write(results, args.docs, plots=args.plots)
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
    method = None if args.no_memory else measure.memory_method()

    started = time.time()
    results = {
        "schema": SCHEMA,
        "mode": "quick" if args.quick else "full",
        "command": "python -m benchmarks " + " ".join(argv),
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": measure.machine(),
        "blas_threads": "default",  # headline figures; "one_thread" and "loaded" re-time them
        "loaded": bool(args.loaded),
        "datasets": [], "skipped": [], "runs": [], "floors": [], "notes": [],
        "floor_definitions": measure.FLOOR_DEFINITIONS,
    }
    floors = measure.Floors(budget_s=0.01 if args.quick else 0.05)
    learners.preload()
    for name in names:
        stream = data.load_stream(name, n=args.n, quick=args.quick)
        if isinstance(stream, str):
            results["skipped"].append({"dataset": name, "reason": stream})
            log(f"{name}: {stream}")
            continue
        log(f"{name}: n = {stream.n}, d = {stream.d}, {stream.task}")
        runs, floor_rows, notes, harness = run_stream(stream, args.quick, skip, only, method,
                                                     floors, loaded=args.loaded)
        results["datasets"].append({**stream.describe(), "harness": harness})
        results["runs"] += runs
        results["floors"] += floor_rows
        results["notes"] += notes
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
    results["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    report.summarize(results)
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report.clean(results), indent=1))
    report.write(results, docs, plots=not args.no_plots)
    log(f"wrote {json_path} and {docs} "
        f"in {results['duration_s']:.0f} s")
    return results


if __name__ == "__main__":
    main()
