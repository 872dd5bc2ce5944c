"""The defaults study: every candidate setting of every learner on every stream, as a user runs it.

Each candidate is replayed test-then-train (:func:`benchmarks.harness.prequential`) as a user
with no tuning budget runs it (:func:`benchmarks.harness.as_user`); errors are the MAE in the
target's units or the error rate. A default is good if it is close to the best candidate on
*every* stream: each candidate is summarised by the geometric mean over streams of its error
over the best error there (1.0 = always the best). river's learners at their defaults stand
beside them, and ``Auto`` is judged against both. Stream sets (``--streams``):

- ``table`` (default): river TrumpApproval, ChickWeights, Bananas, Phishing, Shuttle,
  ``synth.Friedman(seed=42)``, okoco's sinc, and the LIBSVM german / housing sets of Lu et al.
  (2016) where ``OKOCO_LSOKL`` (default ``/work/shared/data/lsokl``) holds them;
- ``training``: families of river generators (drifting ones among them), one stream a seed
  (``--seeds``): where the defaults are chosen;
- ``held-out``: other generators, far seeds, okoco's bundled streams outside the table: where
  the choice is only checked; or stream names of these sets, comma-separated.

``--auto-grid NAME`` replays ``Auto`` with another grid of experts (:data:`AUTO_GRIDS`, set as
``okoco.learners.auto.DEFAULT_EXPERTS`` for the whole process), named ``Auto() [NAME]``: how
the default grid is chosen (on ``training``, checked on ``held-out``).

Usage::

    python -m benchmarks.bench_defaults                        # the table, 1,000 rows a stream
    python -m benchmarks.bench_defaults --streams held-out --only Auto KRLS
    python -m benchmarks.bench_defaults --n 100 --streams sinc,phishing --only "KONS()"

Results merge into ``--output`` (``results/defaults.json``, ``defaults-<set>.json`` for a
family) as ``{candidate: {stream: [error, µs/sample, n]}}``; the tables are printed and, with
``--markdown FILE``, written there. The studies of Auto's expert grids (which needed its
private methods) left the tree; their results stay in ``benchmarks/results/`` (README.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
from pathlib import Path

from river import forest, linear_model, neighbors, preprocessing, tree
from river.datasets import synth

from benchmarks.harness import as_user, load, prequential, select, table
from okoco import datasets, kernels
from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto, FunctionalGD, SketchedKONS, auto

RESULTS = Path(__file__).resolve().parent / "results"
LSOKL = Path(os.environ.get("OKOCO_LSOKL", "/work/shared/data/lsokl"))

# -- streams: name -> (task, loader(n) -> rows) -------------------------------------------------


def _binary(gen, positive=lambda y: y == 1):
    return lambda n: [(x, bool(positive(y))) for x, y in gen.take(n)]


def _plain(gen):  # categorical features (strings, as in Mv) one-hot, as "name=value"
    return lambda n: [({(f"{k}={v}" if isinstance(v, str) else k):
                        (1.0 if isinstance(v, str) else v) for k, v in x.items()}, y)
                      for x, y in gen.take(n)]


def _bundled(name: str, positive=None):
    def rows(n: int) -> list:
        out = list(datasets.load(name).take(n))
        return out if positive is None else [(x, bool(positive(y))) for x, y in out]
    return rows


def _mat(name: str):  # the labels +-1 of german become booleans, as river's classifiers take
    def rows(n: int) -> list:
        ds = datasets.load_mat(LSOKL / f"{name}.mat", permutation=0)
        out = list(ds.take(n))
        return [(x, y == 1) for x, y in out] if ds.task == "binary" else out
    return rows


def table_streams(n: int, seeds: list[int]) -> dict:
    out = {"trump-approval": ("regression", _bundled("trump-approval")),
           "friedman": ("regression", lambda n: list(synth.Friedman(seed=42).take(n))),
           "sinc": ("regression", _bundled("sinc")),
           "chick-weights": ("regression", _bundled("chick-weights")),
           "bananas": ("binary", _bundled("bananas")),
           "phishing": ("binary", _bundled("phishing")),
           "shuttle": ("binary", _bundled("shuttle"))}
    out.update({name: (task, _mat(name)) for name, task in (("housing", "regression"),
                                                             ("german", "binary"))
                if (LSOKL / f"{name}.mat").exists()})
    return out


def training_streams(n: int, seeds: list[int]) -> dict:
    out = {}
    for s in seeds:
        out.update({
            f"rbf/{s}": ("binary", _binary(synth.RandomRBF(
                seed_model=s, seed_sample=100 + s, n_classes=2, n_features=10,
                n_centroids=50))),
            f"agrawal-f{(3 * s) % 10}/{s}": ("binary", _binary(synth.Agrawal(
                classification_function=(3 * s) % 10, seed=s))),
            f"sea-v{s % 4}/{s}": ("binary", _binary(synth.SEA(variant=s % 4, seed=s))),
            f"hyperplane/{s}": ("binary", _binary(synth.Hyperplane(seed=s, n_features=10))),
            f"sine-{s % 4}/{s}": ("binary", _binary(synth.Sine(
                classification_function=s % 4, seed=s, balance_classes=True))),
            f"friedman/{s}": ("regression", _plain(synth.Friedman(seed=s))),
            f"planes2d/{s}": ("regression", _plain(synth.Planes2D(seed=s))),
            f"drift-sea/{s}": ("binary", _binary(synth.ConceptDriftStream(
                synth.SEA(variant=0, seed=s), synth.SEA(variant=2, seed=s + 100),
                position=n // 2, width=50, seed=s))),
            f"drift-rbf/{s}": ("binary", _binary(synth.RandomRBFDrift(
                seed_model=s, seed_sample=100 + s, n_classes=2, n_features=10,
                n_centroids=50, change_speed=0.001, n_drift_centroids=25))),
            f"drift-friedman-gra/{s}": ("regression", _plain(synth.FriedmanDrift(
                drift_type="gra", position=(n // 3, 2 * n // 3), seed=s))),
        })
    return out


def held_out_streams(n: int, seeds: list[int]) -> dict:
    out = {}
    for s in seeds:
        t = 1000 + s
        out.update({
            f"mixed/{t}": ("binary", _binary(synth.Mixed(seed=t, classification_function=s % 2))),
            f"led-even/{t}": ("binary", _binary(synth.LED(seed=t, noise_percentage=0.1),
                                                lambda y: y % 2 == 0)),
            f"waveform-0/{t}": ("binary", _binary(synth.Waveform(seed=t), lambda y: y == 0)),
            f"mv/{t}": ("regression", _plain(synth.Mv(seed=t))),
            f"drift-agrawal/{t}": ("binary", _binary(synth.ConceptDriftStream(
                synth.Agrawal(classification_function=0, seed=t),
                synth.Agrawal(classification_function=4, seed=t + 1),
                position=n // 2, width=n // 10, seed=t))),
            f"drift-hyperplane/{t}": ("binary", _binary(synth.Hyperplane(
                seed=t, n_features=10, mag_change=0.001))),
            f"drift-friedman-gsg/{t}": ("regression", _plain(synth.FriedmanDrift(
                drift_type="gsg", position=(n // 3, 2 * n // 3), transition_window=n // 20,
                seed=t))),
        })
    return {**out, **{name: (task, _bundled(name)) for name, task in (
        ("diabetes", "regression"), ("mackey-glass", "regression"), ("rkhs", "regression"))},
        "breast-cancer": ("binary", _bundled("breast-cancer", lambda y: y == 1)),
        "image-segments-window": ("binary", _bundled("image-segments",
                                                     lambda y: y == "window"))}


SETS = {"table": table_streams, "training": training_streams, "held-out": held_out_streams}

# -- candidates: name -> build(task) ----------------------------------------------------------


def _okoco(cls, own_scaling: bool = False, **params):
    """``cls(**params)`` as a user runs it, with the logistic loss on a binary task (KRLS, a
    least-squares method, with its squared loss)."""
    def factory(loss):
        return cls(**params) if loss is None or cls is KRLS else cls(loss=loss, **params)
    return lambda task: as_user(factory, task, own_scaling)


def _river(regressor, classifier):
    def build(task: str):
        if task == "regression":
            return preprocessing.TargetStandardScaler(preprocessing.StandardScaler()
                                                      | regressor())
        return preprocessing.StandardScaler() | classifier()
    return build


def candidates() -> dict:
    out = {}
    kons = [*itertools.product(("exp-concave", "hessian"), (0.1, 1.0, 10.0), (1.0, 3.0)),
            ("hessian", 0.01, 3.0), ("hessian", 0.03, 3.0)]
    for eta, alpha, C in kons:
        out[f"KONS(eta={eta}, alpha={alpha:g}, C={C:g})"] = _okoco(
            KONS, eta=eta, alpha=alpha, C=C, max_size=None)
    out["KONS v0.1 defaults (RBF(1), C=1, exp-concave)"] = _okoco(
        KONS, kernel=kernels.RBF(1.0), C=1.0, eta="exp-concave", max_size=None)
    sketched = [*itertools.product(("exp-concave", "hessian"), (1.0, 3.0, 10.0), (0.0, 0.1),
                                   (1.0,)),
                *itertools.product(("hessian",), (1.0, 3.0, 10.0), (0.0, 0.1), (0.1,))]
    for eta, beta, floor, alpha in sketched:
        out[f"SketchedKONS(eta={eta}, beta={beta:g}, p_min={floor:g}, alpha={alpha:g})"] = \
            _okoco(SketchedKONS, eta=eta, beta=beta, p_min=floor, alpha=alpha, seed=0,
                   max_size=None)
    for nu in (1e-3, 1e-2, 1e-1):
        out[f"KRLS(nu={nu:g})"] = _okoco(KRLS, nu=nu, max_size=None)
    for eta, budget in itertools.product(("sqrt", 0.05, 0.2, 0.5, 1.0), (500, 1000)):
        out[f"FunctionalGD(eta={eta}, budget={budget})"] = _okoco(FunctionalGD, eta=eta,
                                                                  budget=budget)
    for cls, alpha, beta in itertools.product((PROSNKONS, CONKONS), (0.03, 0.1, 0.3),
                                              (1.0, 3.0)):
        out[f"{cls.__name__}(alpha={alpha:g}, beta={beta:g})"] = _okoco(
            cls, alpha=alpha, beta=beta, seed=0)
    for cls in (KONS, KRLS, FunctionalGD):  # the defaults
        out[f"{cls.__name__}()"] = _okoco(cls)
    for cls in (SketchedKONS, PROSNKONS, CONKONS):  # the defaults, their coins from seed 0
        out[f"{cls.__name__}()"] = _okoco(cls, seed=0)
    out["Auto()"] = _okoco(Auto, own_scaling=True)  # Auto scales the targets itself
    out["Auto(max_size=None)"] = _okoco(Auto, own_scaling=True, max_size=None)
    out.update({
        "river Linear/LogisticRegression": _river(linear_model.LinearRegression,
                                                  linear_model.LogisticRegression),
        "river KNN": _river(neighbors.KNNRegressor, neighbors.KNNClassifier),
        "river HoeffdingAdaptiveTree": _river(tree.HoeffdingAdaptiveTreeRegressor,
                                              tree.HoeffdingAdaptiveTreeClassifier),
        "river ARF": _river(lambda: forest.ARFRegressor(seed=0),
                            lambda: forest.ARFClassifier(seed=0)),
    })
    return out


_GRID = auto.DEFAULT_EXPERTS
#: Grids of ``Auto``'s experts a study compares (``--auto-grid``; the spec of each entry:
#: :data:`okoco.learners.auto.DEFAULT_EXPERTS`); ``"rbf1"`` was the default before issue 42's
#: grid study.
AUTO_GRIDS = {
    "default": _GRID,
    "rbf1": (("dictionary", 0.2, 0.1, "hessian"), ("dictionary", 1.0, 0.1, "hessian"),
             *_GRID[2:]),
    "rbf3": (("dictionary", 0.2, 0.1, "hessian"), ("dictionary", 3.0, 0.1, "hessian"),
             *_GRID[2:]),
    "rbf1+window3": (*(("dictionary", 0.2, 0.1, "hessian"), ("dictionary", 1.0, 0.1, "hessian"),
                       *_GRID[2:]), (3.0, 0.1, "hessian", 1.0)),
}

RIVER_DEFAULTS = ("river Linear/LogisticRegression", "river KNN", "river HoeffdingAdaptiveTree",
                  "river ARF")

# -- tables -----------------------------------------------------------------------------------


def summarise(results: dict, names: list[str], streams: list[str]) -> dict:
    """Per candidate: geometric mean over streams of error / best error on that stream."""
    best = {s: min(results[n][s][0] for n in names if s in results[n]) for s in streams}
    out = {}
    for name in names:
        ratios = [results[name][s][0] / best[s] for s in streams
                  if s in results[name] and best[s] > 0]
        if ratios:
            out[name] = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return out


def markdown(results: dict, streams: list[str]) -> list[str]:
    """Each candidate's error on each stream and its summary, the best summary first."""
    names = [n for n in results if any(s in results[n] for s in streams)]
    score = summarise(results, names, streams)
    rows = [[name, *(f"{results[name][s][0]:.4g}" if s in results[name] else ""
                     for s in streams), f"{score.get(name, math.nan):.3f}"]
            for name in sorted(names, key=lambda n: score.get(n, math.inf))]
    return table(["candidate", *streams, "geo-mean ratio to best"], rows)


def auto_table(results: dict, streams: list[str]) -> list[str]:
    """Auto against the best okoco setting of the grid (an optimistic per-stream choice) and
    against the best of river's defaults, stream by stream."""
    rows = []
    for s in streams:
        okoco = {k: v[s][0] for k, v in results.items()
                 if not k.startswith(("river", "Auto")) and s in v}
        river = {k: results[k][s][0] for k in RIVER_DEFAULTS if s in results.get(k, {})}
        if s not in results.get("Auto()", {}) or not okoco or not river:
            continue
        auto, best, top = results["Auto()"][s][0], min(okoco, key=okoco.get), min(river,
                                                                                  key=river.get)
        rows.append([s, f"{auto:.4g}", f"{best} ({okoco[best]:.4g})",
                     f"{auto / okoco[best]:.3f}", f"{top} ({river[top]:.4g})",
                     "yes" if auto < river[top] else "no"])
    return table(["stream", "Auto", "best okoco setting", "Auto / best",
                  "best river default", "Auto beats it"], rows) + [""] if rows else []


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="rows per stream")
    parser.add_argument("--streams", default="table",
                        help=f"a set ({', '.join(SETS)}) or comma-separated stream names")
    parser.add_argument("--seeds", default="0,1,2", help="the families' seeds")
    parser.add_argument("--only", nargs="*", default=[],
                        help="candidate names (a full name selects it alone) or parts of names")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None, help="also write the tables here")
    parser.add_argument("--auto-grid", choices=list(AUTO_GRIDS), default=None,
                        help="replay Auto with this grid of experts only, as 'Auto() [NAME]'")
    parser.add_argument("--auto", default="", help="with --auto-grid: Auto's keyword "
                        "arguments, comma-separated NAME=VALUE (numbers), e.g. fast_rate=3")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.streams in SETS:
        streams = SETS[args.streams](args.n, seeds)
    else:
        known = {k: v for make in SETS.values() for k, v in make(args.n, seeds).items()}
        wanted = args.streams.split(",")
        if unknown := [s for s in wanted if s not in known]:
            parser.error(f"unknown streams {unknown}")
        streams = {s: known[s] for s in wanted}
    family = args.streams in SETS and args.streams != "table"
    output = args.output or RESULTS / (f"defaults-{args.streams}.json" if family
                                       else "defaults.json")
    known = candidates()
    chosen = {k: known[k] for k in select(list(known), args.only)}
    if args.auto_grid is not None:  # the grid is read when an Auto learns its first row
        auto.DEFAULT_EXPERTS = AUTO_GRIDS[args.auto_grid]
        kw = {k: float(v) for k, v in (kv.split("=") for kv in args.auto.split(",") if kv)}
        name = f"Auto({', '.join(f'{k}={v:g}' for k, v in kw.items())}) [{args.auto_grid}]"
        chosen = {name: _okoco(Auto, own_scaling=True, **kw)}
    stored = json.loads(output.read_text()) if output.exists() else {}
    results, start = stored.get("results", {}), load()
    for stream, (task, rows_of) in streams.items():
        rows = rows_of(args.n)
        for name, build in chosen.items():
            try:
                run = prequential(build(task), rows, task)
            except Exception as error:  # a learner that cannot take the stream: said, no score
                print(f"{stream:22s} {name:55s} failed: {type(error).__name__}: {error}")
                continue
            results.setdefault(name, {})[stream] = [run["error"], run["us"], run["steps"]]
            print(f"{stream:22s} {name:55s} {run['error']:.4g} {run['us']:8.0f} us/sample",
                  flush=True)
    report = {**stored, "results": results, "n": args.n, "load_start": start,
              "load_end": load()}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1))
    lines = []
    for task in ("regression", "binary"):
        names = [s for s, (t, _) in streams.items() if t == task]
        if names:
            lines += [f"### {task} (error: {'MAE' if task == 'regression' else 'error rate'})",
                      "", *markdown(results, names), "", *auto_table(results, names)]
    lines.append(f"load average at the start {start}, at the end {report['load_end']}")
    print("\n" + "\n".join(lines))
    if args.markdown is not None:  # the tables only: docs/defaults.md's prose is by hand
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
