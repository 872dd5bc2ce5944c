"""Long streams: error per block of steps, CPU per step and memory, test-then-train, defaults.

Every learner is replayed as a user runs it with no tuning (public API only): features
standardized online (river ``StandardScaler``), raw regression targets for ``Auto`` (it
standardizes them inside) and a ``TargetStandardScaler`` around the other regressors, binary
tasks through :class:`okoco.BinaryClassifier` with the logistic loss (KRLS with its own squared
loss). Streams (river ``datasets.synth``):

- ``friedman``: ``Friedman(seed=s)``, d = 10, noise N(0, 1) (Bayes MAE 0.80), stationary;
- ``rbf``: ``RandomRBF(seed_model=s, seed_sample=s, n_classes=2, n_features=10,
  n_centroids=50)``, stationary;
- ``hyperplane`` / ``hyperplane-drift``: ``Hyperplane(n_features=10, mag_change=0 / 0.001)``;
- ``sea-switch``: ``ConceptDriftStream(SEA(variant=0), SEA(variant=2), position=steps/2,
  width=max(50, steps/100))`` (river's transition overflows ``math.exp`` farther than 700
  widths from it);
- ``friedman-gra``: ``FriedmanDrift(drift_type="gra", position=(steps/3, 2 steps/3))``;
- ``friedman-shift``: covariate shift, ``Friedman(seed=s)`` whose ten inputs all move from
  ``[0, 1)`` to ``[1, 2)`` after 30% of the steps (the target is Friedman #1's formula on the
  moved inputs plus the generator's noise): a region first seen after a 500-atom dictionary
  filled (``Auto``'s fill by 30,000 steps).

For each learner: the error (MAE, or the error rate) over every block of ``--block`` steps, the
whole stream's, CPU microseconds per step (``time.process_time``, the learner's predict and
learn only) and the process's resident memory at the end of each block (``/proc/self/statm``,
so run one learner per process when memory matters: ``--learners auto``).

Usage::

    python -m benchmarks.bench_long_streams --stream friedman --steps 100000 --seeds 0
    python -m benchmarks.bench_long_streams --stream rbf --learners auto,krls,conkons
    python -m benchmarks.bench_long_streams --stream sea-switch --auto switch_rate=0  # kwargs
    python -m benchmarks.bench_long_streams --stream friedman-shift --learners auto \
        --dictionary 1,500,10,usage   # Auto's DICTIONARY and its full-dictionary rule
    cd /work/main && python /path/to/benchmarks/bench_long_streams.py ...   # another okoco

Run as a module from a checkout's root to import that checkout's okoco (the header prints the
path). Writes the figures as JSON with ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from river import linear_model, preprocessing
from river.datasets import synth

import okoco
from okoco import BinaryClassifier, losses
from okoco.learners import CONKONS, KRLS, Auto

STREAMS = {
    "friedman": "regression", "rbf": "binary", "hyperplane": "binary",
    "hyperplane-drift": "binary", "sea-switch": "binary", "friedman-gra": "regression",
    "friedman-shift": "regression",
}


def friedman_one(x: dict) -> float:
    """Friedman #1's noiseless target at ``x`` (river's ``synth.Friedman``)."""
    return (10 * np.sin(np.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3]
            + 5 * x[4])


def shifted(rows, at: int):
    """``rows`` of Friedman #1 whose inputs move by +1 from step ``at`` on (the target
    recomputed at the moved inputs, the noise kept)."""
    for t, (x, y) in enumerate(rows):
        if t >= at:
            moved = {i: v + 1.0 for i, v in x.items()}
            x, y = moved, y - friedman_one(x) + friedman_one(moved)
        yield x, float(y)


def stream(name: str, steps: int, seed: int):
    """The river generator of ``name`` (an iterator of ``(x, y)``)."""
    if name == "friedman":
        gen = synth.Friedman(seed=seed)
    elif name == "rbf":
        gen = synth.RandomRBF(seed_model=seed, seed_sample=seed, n_classes=2, n_features=10,
                              n_centroids=50)
    elif name in ("hyperplane", "hyperplane-drift"):
        gen = synth.Hyperplane(seed=seed, n_features=10,
                               mag_change=0.0 if name == "hyperplane" else 0.001)
    elif name == "sea-switch":
        gen = synth.ConceptDriftStream(synth.SEA(variant=0, seed=seed),
                                       synth.SEA(variant=2, seed=seed + 100),
                                       position=steps // 2, width=max(50, steps // 100),
                                       seed=seed)
    elif name == "friedman-gra":
        gen = synth.FriedmanDrift(drift_type="gra", position=(steps // 3, 2 * steps // 3),
                                  seed=seed)
    elif name == "friedman-shift":
        return shifted(synth.Friedman(seed=seed).take(steps), 3 * steps // 10)
    else:
        raise ValueError(f"unknown stream {name!r}; one of {', '.join(STREAMS)}")
    return gen.take(steps)


def learner(name: str, task: str, auto: dict | None = None):
    """A learner at its defaults, as a user builds it for ``task`` (``Auto`` with the keyword
    arguments ``auto``, if given)."""
    scaled = preprocessing.StandardScaler
    auto = auto or {}
    if task == "regression":
        if name == "auto":
            return scaled() | Auto(**auto)
        if name == "lr":
            return preprocessing.TargetStandardScaler(scaled() | linear_model.LinearRegression())
        inner = {"krls": KRLS, "conkons": CONKONS}[name]()
        return preprocessing.TargetStandardScaler(scaled() | inner)
    if name == "lr":
        return scaled() | linear_model.LogisticRegression()
    inner = {"auto": lambda: Auto(loss=losses.Logistic(), **auto), "krls": KRLS,
             "conkons": lambda: CONKONS(loss=losses.Logistic())}[name]()
    return scaled() | BinaryClassifier(inner)


#: Every ``SharedEmbedding`` that ``Auto`` built in this process (:func:`record_dictionaries`),
#: whose ``n_swaps`` the replay reports.
BUILT: list = []


def record_dictionaries(rule: str | None = None) -> None:
    """Make ``Auto`` build its dictionaries through a recorder (:data:`BUILT`), with
    ``swap_rule=rule`` if given."""
    import okoco.learners.auto as auto_module
    from okoco.learners.embedding import SharedEmbedding

    extra = {"swap_rule": rule} if rule else {}

    def build(*args, **kwargs):
        BUILT.append(SharedEmbedding(*args, **kwargs, **extra))
        return BUILT[-1]

    auto_module.SharedEmbedding = build


def set_dictionary(text: str) -> None:
    """Set ``Auto``'s :data:`okoco.learners.auto.DICTIONARY` from ``ALPHA,SIZE,MARGIN[,RULE]``
    (``MARGIN`` ``none``: frozen; ``RULE`` a ``SharedEmbedding`` ``swap_rule``) for this
    process."""
    import okoco.learners.auto as auto_module

    alpha, size, margin, *rule = text.split(",")
    value = (float(alpha), int(size), None if margin.lower() == "none" else float(margin))
    if len(auto_module.DICTIONARY) == 4:  # an okoco whose DICTIONARY names the rule
        auto_module.DICTIONARY = (*value, rule[0] if rule else "residual")
        record_dictionaries()
    else:
        auto_module.DICTIONARY = value
        record_dictionaries(rule[0] if rule else None)


def resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def replay(model, task: str, rows, block: int, progress: bool = False) -> dict:
    """Test-then-train: the error of every block, CPU us per step, RSS after each block
    (each block printed as it ends with ``progress``)."""
    errors, blocks, memory, swaps, cpu, n, total = [], [], [], [], 0.0, 0, 0.0
    first = len(BUILT)  # the dictionaries this model builds (replays run one at a time)
    wall = time.perf_counter()
    for x, y in rows:
        start = time.process_time()
        pred = model.predict_one(x)
        model.learn_one(x, y)
        cpu += time.process_time() - start
        err = abs(y - (pred if pred is not None else 0.0)) if task == "regression" \
            else float(pred != y)
        total += err
        errors.append(err)
        n += 1
        if n % block == 0:
            blocks.append(float(np.mean(errors)))
            memory.append(resident_mib())
            swaps.append([e.n_swaps for e in BUILT[first:]])
            errors = []
            if progress:
                print(f"  step {n}: block error {blocks[-1]:.4f}, CPU {1e6 * cpu / n:.0f} us/step, "
                      f"RSS {memory[-1]:.0f} MiB, swaps {swaps[-1]}, "
                      f"wall {time.perf_counter() - wall:.0f} s", flush=True)
    if errors:
        blocks.append(float(np.mean(errors)))
        memory.append(resident_mib())
        swaps.append([e.n_swaps for e in BUILT[first:]])
    return {"blocks": blocks, "error": total / max(n, 1), "us_per_step": 1e6 * cpu / max(n, 1),
            "wall_s": time.perf_counter() - wall, "rss_mib": memory, "steps": n,
            "swaps": swaps}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stream", default="friedman", choices=list(STREAMS))
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--block", type=int, default=10_000)
    parser.add_argument("--seeds", default="0", help="comma-separated seeds")
    parser.add_argument("--learners", default="auto,krls,conkons",
                        help="comma-separated: auto, krls, conkons, lr")
    parser.add_argument("--auto", default="", help="Auto's keyword arguments, comma-separated "
                        "NAME=VALUE (numbers), e.g. switch_rate=0.001")
    parser.add_argument("--dictionary", default="", help="Auto's DICTIONARY for this run, "
                        "ALPHA,SIZE,MARGIN[,RULE] (MARGIN none: frozen), e.g. 1,500,10,usage")
    parser.add_argument("--tag", default="", help="a label for this okoco in the table")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--progress", action="store_true", help="print every block as it ends")
    args = parser.parse_args(argv)
    task = STREAMS[args.stream]
    auto = {k: float(v) for k, v in (kv.split("=") for kv in args.auto.split(",") if kv)}
    if args.dictionary:
        set_dictionary(args.dictionary)
    else:
        record_dictionaries()
    print(f"# okoco from {os.path.dirname(okoco.__file__)}; stream {args.stream}, "
          f"{args.steps} steps, blocks of {args.block}; load {os.getloadavg()[0]:.2f}"
          f"{'; dictionary ' + args.dictionary if args.dictionary else ''}",
          flush=True)
    results = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        for name in args.learners.split(","):
            out = replay(learner(name, task, auto), task, stream(args.stream, args.steps, seed),
                         args.block, args.progress)
            out["load_end"] = os.getloadavg()[0]
            results[f"{args.tag}{name}/{seed}"] = out
            blocks = " ".join(f"{b:.4f}" for b in out["blocks"])
            print(f"| {args.tag}{name} | {seed} | {out['error']:.4f} | {blocks} | "
                  f"{out['us_per_step']:.0f} | {out['wall_s']:.0f} s | "
                  f"{out['rss_mib'][0]:.0f}->{out['rss_mib'][-1]:.0f} MiB | "
                  f"swaps {' '.join(','.join(map(str, s)) for s in out['swaps'])} |", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
