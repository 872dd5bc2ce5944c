"""From the JSON results to the published page: best settings, ratios, targets, tables, plots.

Everything here reads only the results dictionary, so ``python -m benchmarks report`` rebuilds
``docs/benchmarks.md`` from the stored ``benchmarks/results/benchmarks.json`` (and
``tests/test_benchmarks.py`` checks that the published page is exactly that).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

REFERENCE = {"binary": "SketchedKONS", "regression": "KRLS"}
RF_PEERS = ("river RBFSampler+", "scikit-learn RBFSampler+")


# -- analysis -------------------------------------------------------------------------------------


def best_runs(runs: list[dict]) -> list[dict]:
    """The best setting of each learner on each dataset (lowest online error), in run order."""
    best: dict[tuple, dict] = {}
    for r in runs:
        err = r.get("error")
        if r.get("status") != "ok" or err is None or not math.isfinite(err):
            continue
        k = (r["dataset"], r["learner"])
        if k not in best or r["error"] < best[k]["error"]:
            best[k] = r
    chosen = {id(r) for r in best.values()}
    return [r for r in runs if id(r) in chosen]


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return a / b


def summarize(results: dict) -> dict:
    """Mark the best runs, add ratios against each dataset's reference learner, judge targets."""
    runs = results["runs"]
    best = best_runs(runs)
    for r in runs:
        r["best"] = False
    for r in best:
        r["best"] = True
    tasks = {d["name"]: d["task"] for d in results["datasets"]}
    by = {(r["dataset"], r["learner"]): r for r in best}
    refs = {}
    for ds, task in tasks.items():
        ref = by.get((ds, REFERENCE[task]))
        if ref is None:
            ref = next((r for r in best if r["dataset"] == ds and r["family"] == "okoco"), None)
        refs[ds] = ref["learner"] if ref else None
        for r in best:
            if r["dataset"] != ds or ref is None:
                continue
            r["ratios"] = {"reference": ref["learner"],
                           "time": _ratio(r["us_per_sample"], ref["us_per_sample"]),
                           "error": _ratio(r["error"], ref["error"]),
                           "memory": _ratio(r.get("peak_bytes"), ref.get("peak_bytes"))}
    results["references"] = refs
    results["targets"] = targets(results)
    return results


SKETCH_PEER = "VW --ksvm (RBF)"
#: Alternate replays of each pair a time target compares (``run.head_to_head``), and in a
#: quick run.
H2H_ROUNDS, H2H_QUICK_ROUNDS = 5, 2


#: SketchedKONS settings at VW's accuracy replayed head to head against it: the fastest by
#: their single passes (:func:`sketch_candidates`), among which :func:`sketch_pick` chooses.
SKETCH_SHORTLIST = 3


def sketch_candidates(runs: list[dict], dataset: str, peer: dict,
                      k: int | None = SKETCH_SHORTLIST) -> list[dict]:
    """The SketchedKONS settings of ``dataset`` whose accuracy is at least the peer's (``peer``
    is VW ``--ksvm``'s most accurate setting), fastest single pass first, at most ``k``."""
    fit = [r for r in runs if r["dataset"] == dataset and r["learner"] == "SketchedKONS"
           and r.get("status") == "ok" and r["accuracy"] >= peer["accuracy"]]
    return sorted(fit, key=lambda r: r["us_per_sample"])[:k]


def sketch_pick(runs: list[dict], dataset: str, peer: dict) -> dict | None:
    """The SketchedKONS run judged against VW ``--ksvm`` on ``dataset``: the fastest setting
    of the grid whose accuracy is at least the peer's; ``None`` if no setting reaches it.

    "Fastest" is judged by the head-to-head rounds against the peer where the suite ran them
    (on :func:`sketch_candidates`: the lowest idle median ratio), else by the single passes. A
    single pass alone picks by its noise: on Phishing the single passes chose the ridge-3 setting
    in one run (0.63x VW head to head) and the ridge-1 setting in the next (1.12x).
    """
    fit = sketch_candidates(runs, dataset, peer, k=None)
    timed = [r for r in fit if "idle" in r.get("head_to_head", {}).get(peer["key"], {})]
    if timed:
        return min(timed, key=lambda r: r["head_to_head"][peer["key"]]["idle"]["ratio"])
    return fit[0] if fit else None


def target_runs(runs: list[dict]) -> list[dict]:
    """The runs a target judges beyond each learner's best setting (re-timed one-threaded and
    loaded like the best ones): the SketchedKONS setting of :func:`sketch_pick`."""
    out = []
    for r in best_runs(runs):
        if r["learner"] == SKETCH_PEER:
            pick = sketch_pick(runs, r["dataset"], r)
            if pick is not None:
                out.append(pick)
    return out


def defaults_run(runs: list[dict], dataset: str, learner: str) -> dict | None:
    """The learner's run at its defaults on ``dataset``: the first of its grid
    (``benchmarks.learners.entries`` puts the defaults first)."""
    return next((r for r in runs if r["dataset"] == dataset and r["learner"] == learner
                 and r.get("status") == "ok"), None)


def time_pairs(runs: list[dict], dataset: str, task: str) -> list[tuple[dict, dict]]:
    """The ``(okoco run, peer run)`` pairs whose time ratio a target judges on ``dataset``:
    SketchedKONS (:func:`sketch_pick`) against VW ``--ksvm``'s most accurate setting on a
    binary stream; KRLS's and FunctionalGD's best settings against each random-feature
    pipeline's on a regression stream."""
    return _pairs(runs, dataset, task, lambda vw: [sketch_pick(runs, dataset, vw)])


def head_to_head_pairs(runs: list[dict], dataset: str, task: str) -> list[tuple[dict, dict]]:
    """The pairs the suite replays head to head: :func:`time_pairs`', but on a binary stream
    every SketchedKONS candidate of :func:`sketch_candidates` against VW, so that
    :func:`sketch_pick` can choose among them by these rounds."""
    return _pairs(runs, dataset, task, lambda vw: sketch_candidates(runs, dataset, vw))


def _pairs(runs: list[dict], dataset: str, task: str, sketches) -> list[tuple[dict, dict]]:
    by = {(r["dataset"], r["learner"]): r for r in best_runs(runs) if r["dataset"] == dataset}
    if task == "binary":
        vw = by.get((dataset, SKETCH_PEER))
        if vw is None:
            return []
        # no setting at VW's accuracy: SketchedKONS's most accurate one is judged
        mine = [r for r in sketches(vw) if r is not None] or [
            r for r in [by.get((dataset, "SketchedKONS"))] if r is not None]
        return [(sk, vw) for sk in mine]
    return [(mine, peer) for name in ("KRLS", "FunctionalGD")
            if (mine := by.get((dataset, name))) is not None
            for (_, learner), peer in by.items() if learner.startswith(RF_PEERS)]


def targets(results: dict) -> list[dict]:
    """The issue's three targets, judged on this run's figures."""
    out = []
    tasks = {d["name"]: d["task"] for d in results["datasets"]}
    for ds in ("bananas", "phishing", "shuttle"):
        pairs = time_pairs(results["runs"], ds, "binary") if ds in tasks else []
        for sk, vw in pairs:
            time_ratio, loaded_ratio = _time_ratios(sk, vw)
            met = sk["accuracy"] >= vw["accuracy"] and time_ratio <= 0.5 and (
                loaded_ratio is None or loaded_ratio <= 0.5)
            out.append({
                "target": "SketchedKONS >= VW --ksvm accuracy at <= half its time per sample",
                "dataset": ds, "learner": "SketchedKONS", "peer": SKETCH_PEER,
                "okoco": {"accuracy": sk["accuracy"], "us_per_sample": sk["us_per_sample"],
                          "key": sk["key"]},
                "peer_figures": {"accuracy": vw["accuracy"], "us_per_sample": vw["us_per_sample"]},
                "time_ratio": time_ratio, "loaded_time_ratio": loaded_ratio,
                **_single_pass(sk, vw),
                "error_ratio": _ratio(sk["error"], vw["error"]), "met": bool(met)})
    for ds, task in tasks.items():
        if task != "regression":
            continue
        for mine, peer in time_pairs(results["runs"], ds, task):
            name = mine["learner"]
            time_ratio, loaded_ratio = _time_ratios(mine, peer)
            met = (mine["error"] < peer["error"] and time_ratio <= 0.5
                   and (loaded_ratio is None or loaded_ratio <= 0.5))
            out.append({
                "target": f"{name}: lower online error than random-feature pipelines "
                          "at <= half their time per sample",
                "dataset": ds, "learner": name, "peer": peer["learner"],
                "okoco": {"error": mine["error"], "us_per_sample": mine["us_per_sample"]},
                "peer_figures": {"error": peer["error"],
                                 "us_per_sample": peer["us_per_sample"]},
                "time_ratio": time_ratio, "loaded_time_ratio": loaded_ratio,
                **_single_pass(mine, peer),
                "error_ratio": _ratio(mine["error"], peer["error"]), "met": bool(met)})
    for f in results["floors"]:
        if f["learner"] == "KONS":
            out.append({
                "target": "KONS per-step time at t = 5,000 within 3x its floor",
                "dataset": f["dataset"], "learner": "KONS", "peer": "floor",
                "t": f["t"], "step_us": f["step_us"], "floor_us": f["floor_us"],
                "multiple": f["multiple"],
                "met": bool(f["multiple"] <= 3.0) if f["t"] >= 5000 else None,
                "note": None if f["t"] >= 5000 else f"stream shorter than 5,000 (t = {f['t']})"})
    for f in results.get("step_floors", []):
        if "error" not in f:
            out.append({
                "target": f"{f['learner']} per-step time within 2x its floor at t = 1,000 "
                          "and 10,000",
                "dataset": f"synthetic, d = {f['d']}", "learner": f["learner"], "peer": "floor",
                "t": f["t"], "step_us": f["step_us"], "floor_us": f["floor_us"],
                "multiple": f["multiple"],
                "met": None if results.get("mode") == "quick" else bool(f["multiple"] <= 2.0),
                "note": f"m = {f['m']}; quietest of 5 replays beside the floor; first pass "
                        f"{f.get('pass_multiple', f['multiple']):.2f}x (median "
                        f"{f['median_multiple']:.2f}x, CPU time {f['cpu_multiple']:.2f}x)"})
    return out


def _time_ratios(mine: dict, peer: dict) -> tuple[float, float | None]:
    """Time per sample of ``mine`` over ``peer``: default threading, and loaded if timed.

    The median of the head-to-head rounds (``mine["head_to_head"]``, alternate replays of
    the two) where they were run, else the ratio of the single passes."""
    h2h = mine.get("head_to_head", {}).get(peer["key"])
    if h2h is not None:
        return h2h["idle"]["ratio"], h2h.get("loaded", {}).get("ratio")
    return _single_pass_ratios(mine, peer)


def _single_pass_ratios(mine: dict, peer: dict) -> tuple[float, float | None]:
    loaded = _ratio(mine.get("loaded", {}).get("us_per_sample"),
                    peer.get("loaded", {}).get("us_per_sample"))
    return mine["us_per_sample"] / peer["us_per_sample"], loaded


def _single_pass(mine: dict, peer: dict) -> dict:
    """The single-pass ratios beside the head-to-head ones, and the rounds behind those."""
    idle, loaded = _single_pass_ratios(mine, peer)
    h2h = mine.get("head_to_head", {}).get(peer["key"])
    return {"single_pass_time_ratio": idle, "single_pass_loaded_time_ratio": loaded,
            "head_to_head": h2h}


def clean(obj: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


# -- formatting -----------------------------------------------------------------------------------


def _f(v, fmt: str = ".3g", none: str = "–") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return none
    return format(v, fmt)


def _x(v) -> str:
    if v is None:
        return "–"
    return f"{v:.2f}×" if 0.01 <= v < 1000 else f"{v:.2g}×"


def _mb(b) -> str:
    return "–" if b is None else f"{b / 2**20:.1f}"


def _params(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items()) or "defaults"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


#: the plots of the page (``make_plots`` writes them beside it): title -> path from the page
PLOTS = {"Online accuracy or error against time per sample": "benchmarks/tradeoff.png",
         "Per-step time against t (triangles: each okoco learner's floor)":
             "benchmarks/scaling.png",
         "Progressive validation over the stream": "benchmarks/curves.png"}


def markdown(results: dict) -> str:
    m = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        "okoco's learners against the online learners people use today, measured side by side "
        "in one run: the same streams, in the same order, in the same process, on the same "
        "machine. This page is generated from the suite's stored results "
        "(`benchmarks/results/benchmarks.json`); from the repository root,",
        "",
        "```bash",
        'pip install -e ".[bench]"',
        "python -m benchmarks --loaded   # measure again (13 min on 2 cores); --quick: a minute",
        "python -m benchmarks report     # this page from the stored results",
        "```",
        "",
        "`benchmarks/README.md` lists the other benchmark scripts (the compiled core's step "
        "against its floor, long streams, multiclass, PROS-N-KONS, distributed, the defaults "
        "study) and their stored results. The results below come from:",
        "",
        f"- **mode**: `{results['mode']}`, command `{results['command'].strip()}`, "
        f"started {results['started']}, took {_f(results.get('duration_s'), '.0f')} s"
        + (f", commit `{m['git_commit']}`" if m.get("git_commit") else ""),
    ]
    if results["mode"] != "full":
        lines.append("- **this is not the full run**: short prefixes and one setting per learner; "
                     "the figures only show that the suite works.")
    lines += ["", "## Machine", ""]
    blas = "; ".join(f"{b.get('internal_api')} {b.get('version')} "
                     f"({b.get('threading_layer')}, {b.get('architecture')}), "
                     f"{b.get('num_threads')} threads" for b in m.get("blas", [])) or "unknown"
    vers = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
    load = m.get("load_average")
    load_end = results.get("load_average_end")
    lines += _table(["", ""], [
        ["platform", m["platform"]], ["CPU", m["cpu"]],
        ["cores", f"{m['logical_cores']} logical, {m['usable_cores']} usable"],
        ["memory", f"{_f((m.get('memory_bytes') or 0) / 2**30, '.1f')} GiB"],
        ["Python", m["python"]], ["BLAS", blas],
        ["BLAS threads during the runs", _threading(results)],
        ["versions", vers],
        ["load average (1, 5, 15 min)",
         f"{_loads(load)} at the start, {_loads(load_end)} at the end"],
        ["peak memory method", m.get("memory_method") or "not measured"],
    ])
    lines += ["", "A load average above 1 at the start or the end means other work shared the "
              "CPU: the times are then noisy, and so are the ratios.", ""]
    lines += _method()
    lines += _threads(results)
    lines += _targets(results["targets"])
    lines += _datasets(results)
    lines += _floors(results)
    lines += _step_floors(results)
    lines += ["", "## Plots", ""]
    for title, path in PLOTS.items():
        lines += [f"### {title}", "", f"![{title}]({path})", ""]
    if results.get("skipped") or results.get("notes"):
        lines += ["", "## Skipped and notes", ""]
        lines += [f"- {s['dataset']}: {s['reason']}" for s in results.get("skipped", [])]
        lines += [f"- {n}" for n in results.get("notes", [])]
    return "\n".join(lines) + "\n"


def _threading(results: dict) -> str:
    if results.get("blas_pinned_to_one_thread"):  # results of the earlier suite
        return "pinned to 1 (threadpoolctl)"
    text = ("the library default for *µs/sample* (what users get); *1 thread* re-times each "
            "best setting pinned to one thread (threadpoolctl)")
    if results.get("loaded"):
        text += "; *loaded* re-times it at the default with one busy process beside the suite"
    return text


def _loads(v) -> str:
    return "–" if not v else ", ".join(f"{x:.2f}" for x in v)


def _method() -> list[str]:
    return [
        "## What is measured", "",
        "- **Online accuracy / error**: progressive validation (test-then-train): each sample is "
        "predicted before it is learned. Classification: accuracy (a step without a prediction "
        "yet counts as a mistake). Regression: RMSE and MAE of the predictions on the target's "
        "original scale.",
        "- **µs per sample**: `time.perf_counter` around the whole stream (one stamp after each "
        "step, which also gives the per-step times), predict + learn, with "
        "the inputs prepared outside the timer in each library's own form: `dict` rows for okoco "
        "and river (`predict_one` / `learn_one`), `(1, d)` array rows for scikit-learn "
        "(`predict` / `partial_fit`), pre-formatted text lines for Vowpal Wabbit "
        "(`predict` / `learn`). okoco's *array path* column is `okoco.evaluate.replay` over "
        "`(X, y)` arrays, timed as a whole (it also updates a river metric).",
        "- **Per-step time against t**: the mean time per step over consecutive windows of the "
        "same run (the scaling plot).",
        "- **Peak memory**: each run happens in a forked child process; the figure is the growth "
        "of its peak resident set (Linux `VmHWM`, reset through `/proc/self/clear_refs`) over the "
        "run, so it counts numpy arrays and C++ allocations (Vowpal Wabbit) alike.",
        "- **Floors**: the primitive operations a learner's step cannot avoid, timed in the same "
        "run at the same sizes; each learner's per-step time is reported as a multiple of its "
        "floor (see the floor table for the definitions).",
        "- **Settings**: every learner runs a small grid (RBF `gamma` shared by all kernel "
        "methods on a stream, and one or two learner parameters); the tables show each "
        "learner's best setting on the stream, an optimistic choice made alike for okoco and "
        "the peers. Vowpal Wabbit's `--ksvm` does best with much narrower kernels than the "
        "others, so its `--bandwidth` (the same gamma) grid extends to 16× the stream's largest "
        "gamma. *× ref* columns divide by the reference learner of the stream "
        "(SketchedKONS for classification, KRLS for regression).",
        "- **Preprocessing**: features (and targets) that need it are standardized online, "
        "once, identically for every learner, outside the timers.",
        "- **Offline reference**: scikit-learn `KernelRidge` refitted on the prefix at "
        "t = 50, 100, 200, ... and predicting the samples until the next refit: an error "
        "reference, not a peer for speed.",
        "- **Time targets, head to head**: a target's time ratio (SketchedKONS against VW "
        "`--ksvm`, KRLS and FunctionalGD against the random-feature pipelines) is the median "
        f"of {H2H_ROUNDS} rounds ({H2H_QUICK_ROUNDS} with `--quick`) in which the two "
        "settings are replayed one after the other, in alternating "
        "order (each replay a forked run like every other figure), idle and, with `--loaded`, "
        "beside the busy process: the machine's load bursts then fall on both alike. The "
        "single-pass ratio of the tables is shown beside it.",
        "- **Naive forecast** (regression): predict the last target seen, `y_{t-1}`. On a "
        "stream whose target moves like a random walk (TrumpApproval) it beats every learner "
        "here: their errors there say how well they track the level, not what they learn from "
        "the features.",
        "",
    ]


def _threads(results: dict) -> list[str]:
    lines = [
        "## BLAS threads", "",
        "numpy's and scipy's wheels each bundle an OpenBLAS that, by default, uses every core "
        "and hands some small level-1/2 calls to its thread pool: a packed rank-one update "
        "(`dspr`, KRLS's step) from 100 rows, a dot product above 10,000 elements. Waking the "
        "pool costs far more than the arithmetic as soon as another process wants the CPU. "
        "okoco keeps its steps off the pool without changing the user's settings: the hot paths "
        "use calls that never thread (packed triangular solves, `cdist` kernels, dot products "
        "in blocks of 8,192), and the few calls OpenBLAS threads at any size (KRLS's packed "
        "updates) and the periodic refactorization checks run inside a scope that sets that "
        "library to one thread and restores the user's count on exit "
        "(`tests/test_threading.py` checks both, with the workers' context switches).", "",
        "Which figure is which:", "",
        "- **µs/sample** (the headline columns and every ratio): the BLAS's default threading, "
        "as after `pip install okoco`.",
        "- **1 thread µs/sample**: the same best setting timed again with every BLAS pinned to "
        "one thread (threadpoolctl), as the suite and the tests used to run.",
    ]
    if results.get("loaded"):
        lines.append("- **loaded µs/sample** (`--loaded`): the same best setting timed again at "
                     "the default threading with one busy process (`while True: pass`) beside "
                     "the suite: a laptop or a shared server.")
    return lines + [""]


def _targets(targets: list[dict]) -> list[str]:
    lines = ["## Targets", ""]
    if not targets:
        return lines + ["No target could be judged in this run (datasets or peers missing).", ""]
    rows = []
    for t in targets:
        if t["peer"] == "floor":
            fig = (f"{_f(t['step_us'], '.0f')} µs/step vs floor {_f(t['floor_us'], '.0f')} µs "
                   f"at t = {t['t']}: **{_f(t['multiple'], '.2f')}×**")
            if t.get("note"):
                fig += f" ({t['note']})"
        elif "accuracy" in t["okoco"]:
            fig = (f"accuracy {t['okoco']['accuracy']:.4f} vs {t['peer_figures']['accuracy']:.4f}; "
                   f"{_f(t['okoco']['us_per_sample'], '.0f')} vs "
                   f"{_f(t['peer_figures']['us_per_sample'], '.0f')} µs/sample "
                   f"(**time {_x(t['time_ratio'])}**, target ≤ 0.50×)")
        else:
            ok, peer = t["okoco"], t["peer_figures"]
            fig = (f"error {_f(ok['error'], '.4g')} vs {_f(peer['error'], '.4g')} "
                   f"(**{_x(t['error_ratio'])}**); {_f(ok['us_per_sample'], '.0f')} vs "
                   f"{_f(peer['us_per_sample'], '.0f')} µs/sample "
                   f"(**time {_x(t['time_ratio'])}**, target ≤ 0.50×)")
        if t.get("loaded_time_ratio") is not None:
            fig += f"; loaded: **time {_x(t['loaded_time_ratio'])}**"
        h2h = t.get("head_to_head")
        if h2h:
            fig += (f" (time ratios: median of {len(h2h['idle']['ratios'])} head-to-head rounds; "
                    f"single passes {_x(t['single_pass_time_ratio'])}"
                    + (f", loaded {_x(t['single_pass_loaded_time_ratio'])}"
                       if t.get("single_pass_loaded_time_ratio") is not None else "") + ")")
        if t["peer"] == SKETCH_PEER:
            fig += f"; SketchedKONS setting: {t['okoco']['key']}"
        status = {True: "met", False: "**not met**", None: "not judged"}[t["met"]]
        rows.append([t["target"], t["dataset"], t["peer"], fig, status])
    lines += _table(["target", "dataset", "against", "figures", "status"], rows)
    if any(t["peer"] == SKETCH_PEER for t in targets):
        lines += ["", "SketchedKONS against VW `--ksvm`: VW at its most accurate setting, "
                  "SketchedKONS at the **fastest setting of its grid whose accuracy is VW's or "
                  "better** (if none is, its most accurate setting): the "
                  f"{SKETCH_SHORTLIST} such settings with the fastest single passes are "
                  "replayed head to head against VW and the lowest median ratio is judged. "
                  "Like every best setting on "
                  "this page this is an optimistic choice made on the same stream. The tables "
                  "by dataset also show SketchedKONS's most accurate setting and its defaults."]
    return lines + [""]


def _datasets(results: dict) -> list[str]:
    lines = ["## Results by dataset", ""]
    for ds in results["datasets"]:
        name, task = ds["name"], ds["task"]
        best = [r for r in results["runs"] if r["dataset"] == name and r.get("best")]
        lines += [f"### {name}", "",
                  f"{ds['note']}; n = {ds['n']:,}, d = {ds['d']}, {task}; RBF gamma grid "
                  f"{ds['gammas']}. Reference learner: {results['references'].get(name)}.", ""]
        extra = ["1 thread µs/sample"] + (["loaded µs/sample"] if results.get("loaded") else [])
        if task == "binary":
            header = ["learner", "library", "best setting", "accuracy", "µs/sample", *extra,
                      "time × ref", "error × ref", "peak MB", "dict size", "array path µs/sample"]
        else:
            header = ["learner", "library", "best setting", "RMSE", "MAE", "µs/sample", *extra,
                      "time × ref", "error × ref", "peak MB", "dict size", "array path µs/sample"]
        shown = [(r, r["learner"] + (" (reference)" if r["family"] == "reference" else ""))
                 for r in sorted(best, key=lambda r: r["error"])]
        for r, label in _extra_rows(results, name):
            if all(r is not s for s, _ in shown):
                shown.append((r, label))
        rows = []
        for r, label in shown:
            ratios = r.get("ratios", {})
            arr = r.get("array_path")
            cells = [label, r["library"], _params(r["params"])]
            cells += ([f"{r['accuracy']:.4f}"] if task == "binary"
                      else [_f(r["rmse"], ".4g"), _f(r["mae"], ".4g")])
            cells += [_f(r["us_per_sample"], ".1f")]
            cells += [_f(r.get(c, {}).get("us_per_sample"), ".1f")
                      for c in ("one_thread", "loaded")[: len(extra)]]
            cells += [_x(ratios.get("time")),
                      _x(ratios.get("error")), _mb(r.get("peak_bytes")),
                      _f(r.get("dictionary_size"), "d"),
                      _f(arr["us_per_sample"], ".1f") if arr else "–"]
            rows.append(cells)
        lines += _table(header, rows) + [""]
        h = ds.get("harness") or {}
        if "us_per_sample" in h:
            lines += [f"The measuring harness alone (a learner that does nothing) accounts for "
                      f"{h['us_per_sample']:.2f} µs/sample and {_mb(h.get('peak_bytes'))} MB of "
                      "each figure above.", ""]
        failed = [r for r in results["runs"] if r["dataset"] == name and r["status"] != "ok"]
        for r in failed:
            lines.append(f"- {r['key']} failed: `{r['error'].strip().splitlines()[-1]}`")
        if failed:
            lines.append("")
    return lines


def _extra_rows(results: dict, dataset: str) -> list[tuple[dict, str]]:
    """Runs shown below the best settings: the SketchedKONS setting judged against VW
    ``--ksvm`` and SketchedKONS at its defaults."""
    out = []
    for t in results.get("targets", []):
        if t["dataset"] == dataset and t["peer"] == SKETCH_PEER:
            r = next((r for r in results["runs"] if r["dataset"] == dataset
                      and r.get("key") == t["okoco"]["key"]), None)
            if r is not None:
                out.append((r, "SketchedKONS (fastest at VW's accuracy)"))
    default = defaults_run(results["runs"], dataset, "SketchedKONS")
    if default is not None:
        out.append((default, "SketchedKONS (defaults)"))
    return out


def _floors(results: dict) -> list[str]:
    lines = ["## Physical floors", "",
             "Per-step time of each okoco learner (best setting) over the window of steps ending "
             "at t = min(5,000, n), against the time of the primitive operations its step cannot "
             "avoid at the same sizes (t points seen, m in the dictionary), timed in the same "
             "run. `expansion(t)`: one prediction `sum_i c_i k(x_i, x)` over t points "
             "(matrix-vector product, `exp`, dot); `trsv(m)`: one triangular solve of size m, the "
             "faster of BLAS `dtpsv` (packed, okoco's storage) and `dtrsv` (dense); "
             "`matvec(m)`: one m × m matrix-vector product.", ""]
    for learner, text in results.get("floor_definitions", {}).items():
        lines.append(f"- **{learner}**: {text}.")
    lines.append("")
    rows = []
    for f in results["floors"]:
        parts = " + ".join(f"{k} {v:.1f}" for k, v in f["parts_us"].items())
        rows.append([f["dataset"], f["learner"], str(f["t"]), str(f["m"]),
                     _f(f["step_us"], ".1f"), f"{_f(f['floor_us'], '.1f')} ({parts})",
                     f"{_f(f['multiple'], '.2f')}×"])
    return lines + _table(["dataset", "learner", "t", "m", "step µs", "floor µs (parts)",
                           "step / floor"], rows) + [""]


def _step_floors(results: dict) -> list[str]:
    rows = results.get("step_floors", [])
    if not rows:
        return []
    lines = ["## Per-step time against the floor at t = 1,000 and 10,000", "",
             "Each learner at its defaults on a synthetic Phishing-like stream (9 features in "
             "[0, 1], `measure.step_floor_stream`; logistic loss on the sign for KONS and "
             "SketchedKONS, squared loss for FunctionalGD with a budget of 1,000 and KRLS with "
             "`max_size` 1,000), `predict_one` + `learn_one` per step at the default BLAS "
             "threading, in a forked run, over the last tenth of the steps before t. The "
             "window is replayed on 5 copies of the learner taken at its start, each replay "
             "followed at once by a round of the floor's primitives at the same t and "
             "dictionary size m (definitions above; as many calls as the window has steps): "
             "**step** and floor come from the quietest pair (least total time), one "
             "statistic timed side by side, so a burst of load on the machine hits both alike. "
             "The first pass's mean (and median) and its CPU time are shown beside. KONS keeps "
             "every point in a "
             "dense factor, so it is compared at t = 1,000 only.", ""]
    table = []
    for f in rows:
        if "error" in f:
            table.append([f["learner"], "-", "-", "failed", "-", "-"])
            continue
        parts = " + ".join(f"{k} {v:.1f}" for k, v in f["parts_us"].items())
        first = f.get("pass_us", f["step_us"])  # a file from before the replays: one pass
        table.append([f["learner"], str(f["t"]), str(f["m"]), _f(f["step_us"], ".1f"),
                      f"{_f(first, '.1f')} ({_f(f['median_us'], '.1f')})",
                      _f(f["cpu_us"], ".1f"), f"{_f(f['floor_us'], '.1f')} ({parts})",
                      f"**{_f(f['multiple'], '.2f')}×**",
                      f"{_f(first / f['floor_us'], '.2f')}× ({_f(f['median_multiple'], '.2f')}×)",
                      f"{_f(f['cpu_multiple'], '.2f')}×"])
    return lines + _table(["learner", "t", "m", "step µs (replay)",
                           "first pass µs, mean (median)", "CPU µs/step", "floor µs (parts)",
                           "step / floor", "first pass / floor, mean (median)",
                           "CPU / floor"], table) + [
        "", "Under load the mean wall-clock time includes waits for a core; the CPU time "
        "per step (the process's, over the same steps) does not.", ""]


# -- plots ----------------------------------------------------------------------------------------


def _style(results: dict) -> dict[str, dict]:
    names = []
    for r in results["runs"]:
        if r["learner"] not in names:
            names.append(r["learner"])
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    style = {}
    for i, name in enumerate(names):
        family = next(r["family"] for r in results["runs"] if r["learner"] == name)
        ls = {"okoco": "-", "peer": "--", "reference": ":"}[family]
        style[name] = {"color": cmap(i % 20), "linestyle": ls,
                       "linewidth": 2.0 if family == "okoco" else 1.2}
    return style


def _save_small(fig, path: Path) -> None:
    """Save as a 128-colour palette PNG: a third of the size, no visible loss for line plots."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    buf.seek(0)
    with Image.open(buf) as im:
        im.convert("RGB").quantize(colors=128).save(path, optimize=True)


def _grid(k: int):
    import matplotlib.pyplot as plt

    cols = min(k, 3)
    rows = (k + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[k:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:k])


def make_plots(results: dict, folder: Path) -> dict[str, str]:
    """Write the PNGs; return ``{title: file name relative to the page}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    datasets = [d for d in results["datasets"]
                if any(r.get("best") for r in results["runs"] if r["dataset"] == d["name"])]
    if not datasets:
        return {}
    style = _style(results)
    out = {}

    def finish(fig, name, title):
        handles, labels = {}, {}
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
                labels[lab] = lab
        fig.legend(list(handles.values()), list(labels), loc="lower center",
                   ncol=min(4, len(handles)), fontsize=7, frameon=False)
        rows = math.ceil(len(handles) / 4)
        fig.tight_layout(rect=(0, 0.035 * rows + 0.02, 1, 1))
        _save_small(fig, folder / name)
        plt.close(fig)
        out[title] = f"{folder.name}/{name}"

    # accuracy / error against time per sample
    fig, axes = _grid(len(datasets))
    for ax, ds in zip(axes, datasets):
        for r in (r for r in results["runs"] if r["dataset"] == ds["name"] and r.get("best")):
            st = style[r["learner"]]
            y = r["accuracy"] if ds["task"] == "binary" else r["rmse"]
            ax.scatter(r["us_per_sample"], y, color=st["color"], s=36,
                       marker="o" if r["family"] == "okoco" else "s", label=r["learner"])
        ax.set_xscale("log")
        ax.set_xlabel("µs per sample")
        ax.set_ylabel("online accuracy" if ds["task"] == "binary" else "online RMSE")
        ax.set_title(ds["name"], fontsize=9)
        ax.grid(alpha=0.3)
    finish(fig, "tradeoff.png", "Online accuracy or error against time per sample")

    # per-step time against t, with floors
    fig, axes = _grid(len(datasets))
    floors = {(f["dataset"], f["learner"]): f for f in results["floors"]}
    for ax, ds in zip(axes, datasets):
        for r in (r for r in results["runs"] if r["dataset"] == ds["name"] and r.get("best")):
            if "steps" not in r:
                continue
            st = style[r["learner"]]
            ax.plot(r["steps"]["t"], r["steps"]["us"], label=r["learner"], **st)
            f = floors.get((ds["name"], r["learner"]))
            if f is not None:
                ax.plot(f["curve"]["t"], f["curve"]["us"], color=st["color"], linestyle="none",
                        marker="v", markersize=4)
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_ylabel("µs per step (window mean)")
        ax.set_title(f"{ds['name']} (▼ floors)", fontsize=9)
        ax.grid(alpha=0.3)
    finish(fig, "scaling.png", "Per-step time against t (triangles: each okoco learner's floor)")

    # progressive metric over the stream
    fig, axes = _grid(len(datasets))
    for ax, ds in zip(axes, datasets):
        for r in (r for r in results["runs"] if r["dataset"] == ds["name"] and r.get("best")):
            ax.plot(r["curve"]["t"], r["curve"]["value"], label=r["learner"],
                    **style[r["learner"]])
        ax.set_xlabel("t")
        ax.set_ylabel("accuracy so far" if ds["task"] == "binary" else "RMSE so far")
        ax.set_title(ds["name"], fontsize=9)
        ax.grid(alpha=0.3)
        if ds["task"] == "regression":
            ax.set_yscale("log")
    finish(fig, "curves.png", "Progressive validation over the stream")
    return out


def write(results: dict, page: Path, plots: bool = True) -> Path:
    """The Markdown ``page`` and (unless ``plots=False``) its plots, under ``benchmarks/``
    beside it."""
    page = Path(page)
    page.parent.mkdir(parents=True, exist_ok=True)
    if plots:
        make_plots(results, page.parent / "benchmarks")
    page.write_text(markdown(results), encoding="utf-8")
    return page
