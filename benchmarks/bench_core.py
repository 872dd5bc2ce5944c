"""The compiled core's figures, in one run, at the default BLAS threading.

- ``steps``: each learner's ``predict_one`` + ``learn_one`` at t = 1,000 and 10,000 against its
  floor at the same t and dictionary size (``measure.step_times``: the window replayed on
  copies of the learner, each replay followed by a round of the floor's primitives, the
  quietest pair kept), on the synthetic Phishing-like stream of the suite;
- ``arrays``: test-then-train over a whole dataset through the dict protocol (``predict_one``
  + ``learn_one`` per row) against the array path (``predict_learn_many`` on the arrays, the
  compiled loop), the same standardized rows, the predictions compared;
- ``one_row``: ``learn_many`` on one row (a DataFrame, and a 2-D array of the same columns)
  against ``learn_one`` on the same row, at t = 800; and the DataFrame's floor: pandas' two
  calls that any reading of it makes (``columns.tolist()``, ``to_numpy()``), then ``learn_one``.

``okoco replay`` as a user runs it: ``benchmarks.bench_cli``.

Run: ``python -m benchmarks.bench_core [--only steps,arrays,one_row]
[--learners FunctionalGD,KRLS] [--loaded]``; ``--loaded`` keeps one busy process beside the run
(a Python loop on one core). The machine's load (``os.getloadavg``) is printed before and
after.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import time

import numpy as np


def steps(names=("FunctionalGD", "KRLS", "SketchedKONS", "KONS")) -> list[dict]:
    from benchmarks import measure
    from okoco.learners import KONS

    window_size = KONS().max_size  # the points in the defaults' window
    floors = measure.Floors()
    rows = []
    for name in names:
        marks = measure.step_floor_learners()[name][2]
        for mark in measure.step_times(name, marks, floors)["marks"]:
            floor = mark["floor"]
            rows.append({"learner": name, "t": mark["t"], "m": mark["m"],
                         "step_us": mark["replay_us"], "floor_us": floor["total"],
                         "multiple": mark["replay_us"] / floor["total"],
                         "cpu_us": mark["cpu_us"], "median_us": mark["median_us"]})
            window = f"{name} window"
            if window in measure.WINDOW_FLOORS:  # the windowed step's own BLAS work
                W = min(mark["t"], window_size)
                rows[-1]["window_floor_us"] = floors.of(window, W, mark["m"],
                                                        measure.STEP_FLOOR_D)["total"]
            extra = (f", window floor {rows[-1]['window_floor_us']:.1f} us -> "
                     f"{mark['replay_us'] / rows[-1]['window_floor_us']:.2f}x"
                     if "window_floor_us" in rows[-1] else "")
            # the median step of the first pass: a step the scheduler did not preempt
            print(f"  {name:13s} t={mark['t']:6d} m={mark['m']:5d} step {mark['replay_us']:8.1f}"
                  f" us  floor {floor['total']:8.1f} us  -> {rows[-1]['multiple']:.2f}x  "
                  f"(median step {mark['median_us']:.1f} us{extra})", flush=True)
    return rows


def _standardized(name: str):
    from okoco import datasets

    X, y, _ = datasets.load(name).to_arrays()
    X = np.asarray(X, dtype=float)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    y = np.asarray(y, dtype=float)
    if set(np.unique(y)) <= {0.0, 1.0}:
        y = 2.0 * y - 1.0  # labels in {-1, +1}
    else:
        y = (y - y.mean()) / y.std()
    return X, y


def arrays(repeats: int = 3) -> list[dict]:
    from okoco import losses
    from okoco.learners import CONKONS, KRLS, PROSNKONS, FunctionalGD

    makers = {"KRLS": lambda: KRLS(),
              "FunctionalGD": lambda: FunctionalGD(),
              "FunctionalGD (logistic)": lambda: FunctionalGD(loss=losses.Logistic()),
              "PROSNKONS": lambda: PROSNKONS(seed=0),
              "CONKONS": lambda: CONKONS(seed=0),
              "CONKONS (logistic)": lambda: CONKONS(loss=losses.Logistic(), seed=0)}
    out = []
    for dataset in ("phishing", "trump-approval"):
        X, y = _standardized(dataset)
        dicts = [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]
        frame_cols = [f"x{j}" for j in range(X.shape[1])]
        import pandas as pd

        frame = pd.DataFrame(X, columns=frame_cols)
        for name, make in makers.items():
            if "logistic" in name and dataset != "phishing":
                continue
            best_dict, best_array = np.inf, np.inf
            for _ in range(repeats):
                model = make()
                preds = np.empty(len(y))
                start = time.perf_counter()
                for i, (x, target) in enumerate(zip(dicts, y)):
                    preds[i] = model.predict_one(x)
                    model.learn_one(x, float(target))
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


def one_row(t: int = 800, calls: int = 20) -> list[dict]:
    from okoco import losses
    from okoco.learners import CONKONS, KONS, KRLS, FunctionalGD

    X, y = _standardized("phishing")
    dicts = [{f"x{j}": float(v) for j, v in enumerate(row)} for row in X]
    import pandas as pd

    out = []
    for name, make in {"KONS": lambda: KONS(loss=losses.Logistic()), "KRLS": KRLS,
                       "FunctionalGD": FunctionalGD, "CONKONS": lambda: CONKONS(seed=0)}.items():
        model = make()
        for x, target in zip(dicts[:t], y[:t]):
            model.learn_one(x, float(target))
        frame = pd.DataFrame([dicts[t]])
        # a 2-D array's columns are named by position: the same model fed the rows so named
        by_position = make()
        for x, target in zip(X[:t], y[:t]):
            by_position.learn_one(dict(enumerate(x.tolist())), float(target))
        array = X[t : t + 1]
        positional = [dict(enumerate(X[i].tolist())) for i in (t - 1, t)]
        calls_of = {  # each path: its model, the row the copy predicts first, the call timed
            "one": (model, dicts[t - 1], lambda m: m.learn_one(dicts[t], float(y[t]))),
            "frame": (model, dicts[t - 1],
                      lambda m, frame=frame: m.learn_many(frame, [float(y[t])])),
            "array": (by_position, positional[0],
                      lambda m, array=array: m.learn_many(array, [float(y[t])])),
            "pandas": (model, dicts[t - 1], lambda m, frame=frame: (
                frame.columns.tolist(), frame.to_numpy(), m.learn_one(dicts[t], float(y[t])))),
        }
        times = {key: [] for key in calls_of}
        for _ in range(calls):
            for key, (source, before, call) in calls_of.items():
                # a copy (whose compiled step object is rebuilt at its first prediction), and
                # the same call on another copy first: the path's code warm, as in a loop
                warm, timed = copy.deepcopy(source), copy.deepcopy(source)
                for copied in (warm, timed):
                    copied.predict_one(before)
                call(warm)
                start = time.perf_counter()
                call(timed)
                times[key].append(time.perf_counter() - start)
        one, many, arr = times["one"], times["frame"], times["array"]
        row = {"learner": name, "t": t, "learn_one_us": 1e6 * float(np.median(one)),
               "learn_many_us": 1e6 * float(np.median(many)),
               "learn_many_array_us": 1e6 * float(np.median(arr))}
        row["ratio"] = row["learn_many_us"] / row["learn_one_us"]
        out.append(row)
        row["array_ratio"] = row["learn_many_array_us"] / row["learn_one_us"]
        row["pandas_floor_us"] = 1e6 * float(np.median(times["pandas"]))
        row["pandas_floor_ratio"] = row["pandas_floor_us"] / row["learn_one_us"]
        print(f"  {name:13s} t={t}: learn_one {row['learn_one_us']:8.1f} us  learn_many(1 row): "
              f"DataFrame {row['learn_many_us']:8.1f} us -> {row['ratio']:.2f}x, array "
              f"{row['learn_many_array_us']:8.1f} us -> {row['array_ratio']:.2f}x  (pandas' "
              f"columns + to_numpy, then learn_one: {row['pandas_floor_ratio']:.2f}x)", flush=True)
    return out


def main(argv=None) -> dict:
    from benchmarks import measure

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="steps,arrays,one_row")
    p.add_argument("--learners", default="FunctionalGD,KRLS,SketchedKONS,KONS",
                   help="the learners of the steps part")
    p.add_argument("--loaded", action="store_true", help="one busy process beside the run")
    args = p.parse_args(argv)
    parts = {"steps": lambda: steps(tuple(args.learners.split(","))), "arrays": arrays,
             "one_row": one_row}
    out = {}
    with measure.busy_process() if args.loaded else contextlib.nullcontext():
        print(f"load average before: {os.getloadavg()}"
              + (" (one busy process beside)" if args.loaded else ""), flush=True)
        for part in args.only.split(","):
            print(f"{part}:", flush=True)
            out[part] = parts[part]()
        print(f"load average after: {os.getloadavg()}", flush=True)
    return out


if __name__ == "__main__":
    main()
