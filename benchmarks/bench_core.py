"""The compiled core's figures, in one run, at the default BLAS threading.

- ``steps``: each learner's ``predict_one`` + ``learn_one`` at t = 1,000 and 10,000 against its
  floor at the same t and dictionary size (``measure.step_times``: the window replayed on
  copies of the learner, each replay followed by a round of the floor's primitives, the
  quietest pair kept), on the synthetic Phishing-like stream of the suite.

Run: ``python -m benchmarks.bench_core [--only steps] [--learners FunctionalGD,KRLS]
[--loaded]``; ``--loaded`` keeps one busy process beside the run (a Python loop on one core).
The machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import contextlib

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
                parts = floors.parts(f"{name} window", min(mark["t"], window_size), mark["m"],
                                     measure.STEP_FLOOR_D)
                row["window_floor_us"] = min(floors.round_us(parts, 100)["total"] for _ in range(5))
                extra = (f", window floor {row['window_floor_us']:.1f} us -> "
                         f"{row['step_us'] / row['window_floor_us']:.2f}x")
            rows.append(row)  # the median step of the first pass: one not preempted
            print(f"  {name:13s} t={row['t']:6d} m={row['m']:5d} step {row['step_us']:8.1f}"
                  f" us  floor {row['floor_us']:8.1f} us  -> {row['multiple']:.2f}x  "
                  f"(median step {row['median_us']:.1f} us{extra})", flush=True)
    return rows


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="steps", choices=["steps"], help="the part (steps only)")
    p.add_argument("--learners", default="FunctionalGD,KRLS,SketchedKONS,KONS",
                   help="the learners of the steps part")
    p.add_argument("--loaded", action="store_true", help="one busy process beside the run")
    args = p.parse_args(argv)
    with busy_process() if args.loaded else contextlib.nullcontext():
        print(f"load average before: {load()}"
              + (" (one busy process beside)" if args.loaded else ""), flush=True)
        print("steps:", flush=True)
        out = {"steps": steps(tuple(args.learners.split(",")))}
        print(f"load average after: {load()}", flush=True)
    return out


if __name__ == "__main__":
    main()
