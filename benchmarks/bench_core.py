"""The compiled core's figures, in one run, at the default BLAS threading.

- ``steps``: each learner's ``predict_one`` + ``learn_one`` at t = 1,000 and 10,000 against its
  floor at the same t and dictionary size (``measure.step_times``: the window replayed on
  copies of the learner, each replay followed by a round of the floor's primitives, the
  quietest pair kept), on the synthetic Phishing-like stream of the suite;
- ``arrays``: test-then-train over a whole dataset through the dict protocol (``predict_one``
  + ``learn_one`` per row) against the array path (``predict_learn_many`` on the arrays, the
  compiled loop), the same standardized rows, the predictions compared;

Run: ``python -m benchmarks.bench_core [--only steps,arrays]
[--learners FunctionalGD,KRLS] [--loaded]``; ``--loaded`` keeps one busy process beside the run
(a Python loop on one core). The machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

from benchmarks.harness import busy_process, load


def steps(names=("FunctionalGD", "KRLS", "SketchedKONS", "KONS")) -> list[dict]:
    from benchmarks import measure
    from okoco.learners import KONS

    window_size, floors, rows = KONS().max_size, measure.Floors(), []
    for name in names:
        for mark in measure.step_times(name, measure.step_floor_learners()[name][2],
                                       floors)["marks"]:
            row = {"learner": name, "t": mark["t"], "m": mark["m"],
                   "step_us": mark["replay_us"], "floor_us": mark["floor"]["total"],
                   "multiple": mark["replay_us"] / mark["floor"]["total"],
                   "cpu_us": mark["cpu_us"], "median_us": mark["median_us"]}
            extra = ""
            if f"{name} window" in measure.WINDOW_FLOORS:  # the windowed step's own BLAS work
                row["window_floor_us"] = floors.of(f"{name} window", min(mark["t"], window_size),
                                                   mark["m"], measure.STEP_FLOOR_D)["total"]
                extra = (f", window floor {row['window_floor_us']:.1f} us -> "
                         f"{row['step_us'] / row['window_floor_us']:.2f}x")
            rows.append(row)  # the median step of the first pass: one not preempted
            print(f"  {name:13s} t={row['t']:6d} m={row['m']:5d} step {row['step_us']:8.1f}"
                  f" us  floor {row['floor_us']:8.1f} us  -> {row['multiple']:.2f}x  "
                  f"(median step {row['median_us']:.1f} us{extra})", flush=True)
    return rows


def arrays(repeats: int = 3, n: int | None = None) -> list[dict]:
    import pandas as pd

    from benchmarks.data import load_stream
    from okoco import losses
    from okoco.learners import CONKONS, KRLS, PROSNKONS, FunctionalGD

    makers = {"KRLS": KRLS, "FunctionalGD": FunctionalGD,
              "FunctionalGD (logistic)": lambda: FunctionalGD(loss=losses.Logistic()),
              "PROSNKONS": lambda: PROSNKONS(seed=0), "CONKONS": lambda: CONKONS(seed=0),
              "CONKONS (logistic)": lambda: CONKONS(loss=losses.Logistic(), seed=0)}
    out = []
    for dataset in ("phishing", "trump-approval"):
        stream = load_stream(dataset, n=n)  # the suite's rows (labels as +-1)
        y = np.where(stream.y, 1.0, -1.0) if stream.task == "binary" else stream.y
        dicts, frame = stream.dicts(), pd.DataFrame(stream.X, columns=stream.feature_names)
        for name, make in makers.items():
            if "logistic" in name and stream.task != "binary":
                continue
            best_dict = best_array = np.inf
            for _ in range(repeats):
                model, preds = make(), np.empty(len(y))
                start = time.perf_counter()
                for i, (x, target) in enumerate(zip(dicts, y.tolist())):
                    preds[i] = model.predict_one(x)
                    model.learn_one(x, target)
                best_dict = min(best_dict, time.perf_counter() - start)
                model = make()
                start = time.perf_counter()
                got = model.predict_learn_many(frame, y)
                best_array = min(best_array, time.perf_counter() - start)
            row = {"dataset": dataset, "learner": name, "n": len(y),
                   "dict_us": 1e6 * best_dict / len(y), "array_us": 1e6 * best_array / len(y),
                   "max_abs_diff": float(np.abs(got - preds).max())}
            row["speedup"] = row["dict_us"] / row["array_us"]
            out.append(row)
            print(f"  {dataset:15s} {name:24s} dict {row['dict_us']:7.1f} us  array "
                  f"{row['array_us']:6.1f} us  -> {row['speedup']:.1f}x  "
                  f"(max |diff| {row['max_abs_diff']:.1e})", flush=True)
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="steps,arrays", help="the parts, comma-separated")
    p.add_argument("--learners", default="FunctionalGD,KRLS,SketchedKONS,KONS",
                   help="the learners of the steps part")
    p.add_argument("--loaded", action="store_true", help="one busy process beside the run")
    args = p.parse_args(argv)
    parts = {"steps": lambda: steps(tuple(args.learners.split(","))), "arrays": arrays}
    out = {}
    with busy_process() if args.loaded else contextlib.nullcontext():
        print(f"load average before: {load()}"
              + (" (one busy process beside)" if args.loaded else ""), flush=True)
        for part in args.only.split(","):
            print(f"{part}:", flush=True)
            out[part] = parts[part]()
        print(f"load average after: {load()}", flush=True)
    return out


if __name__ == "__main__":
    main()
