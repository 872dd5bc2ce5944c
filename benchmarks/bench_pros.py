"""PROS-N-KONS and CON-KONS: per-step time and resident memory against t, and online accuracy.

Two measurements, written to ``benchmarks/results/pros.json`` and ``pros_accuracy.json``:

``scaling``
    Test-then-train on river's ``synth.RandomRBF`` (d = 10, 2 classes, 50 centroids, seeds 0),
    labels as -1/+1, for CON-KONS, PROS-N-KONS, SketchedKONS, ``FunctionalGD(budget=...)``,
    ``KRLS(max_size=...)`` and Vowpal Wabbit ``--ksvm``; CON-KONS and PROS-N-KONS with the same
    ``max_size`` (flat cost) and CON-KONS without it (its dictionary grows with d_eff(t)).
    Each learner runs in its own forked process; at log-spaced marks we record the mean time
    per step over the last ``window`` steps, the growth of the resident set size (RSS) since
    the learner was built, the dictionary size and the running accuracy. A learner stops at
    ``--steps`` or when its wall time exceeds ``--cap`` seconds (SketchedKONS and VW's
    support-vector set grow with t).
``accuracy``
    Online (test-then-train) accuracy on Bananas, Phishing and the first 5,000 rows of Shuttle
    (the streams of ``python -m benchmarks``) for CON-KONS and PROS-N-KONS (defaults, and with
    the step of the guarantee ``eta="exp-concave", alpha=1``; PROS-N-KONS also with a larger
    KORS ridge: fewer atoms, hence fewer restarts) and SketchedKONS (``beta`` 10 and 3), and
    for the budgeted learners at the dictionary size CON-KONS reached (same number of points):
    ``FunctionalGD(budget=...)`` (first order, best of four step sizes) and
    ``KRLS(max_size=...)`` (second-order least squares on the -1/+1 labels), and
    ``FunctionalGD`` without a budget (fewer bytes than CON-KONS on these short streams). Each
    learner reports its best (RBF width, setting), its accuracy over the second half of the
    stream, the size of its pickled state and, for PROS-N-KONS, the number of restarts.

Run from the repository root::

    python -m benchmarks.bench_pros scaling --steps 1000000 --cap 300
    python -m benchmarks.bench_pros accuracy
    python -m benchmarks.bench_pros plot       # docs/benchmarks/pros_scaling.png

The machine's load average is stored with every figure; compare runs made under similar load.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import platform
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "pros.json"
ACCURACY = RESULTS.with_name("pros_accuracy.json")
FIGURE = Path(__file__).parent.parent / "docs" / "benchmarks" / "pros_scaling.png"
RBF_GAMMA = 1.0  # features in [0, 1]^10: squared distances ~1.7, kernel values ~0.2
BUDGET = 200  # the memory cap of the budgeted baselines (points kept)


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def random_rbf(n: int) -> tuple[np.ndarray, np.ndarray]:
    from river.datasets import synth

    gen = synth.RandomRBF(seed_model=0, seed_sample=0, n_classes=2, n_features=10,
                          n_centroids=50)
    X = np.empty((n, 10))
    y = np.empty(n)
    for t, (x, label) in enumerate(itertools.islice(gen, n)):
        X[t] = list(x.values())
        y[t] = 1.0 if label else -1.0
    return X, y


# -- learners: (predict, learn, size) on a dict row and a -1/+1 label ------------------------------


def okoco_learner(name: str):
    from okoco import kernels, losses
    from okoco.learners import CONKONS, KRLS, PROSNKONS, FunctionalGD, SketchedKONS

    kernel, loss = kernels.RBF(RBF_GAMMA), losses.Logistic()
    model = {
        f"CON-KONS(max_size={BUDGET})": lambda: CONKONS(kernel=kernel, loss=loss, C=3.0,
                                                        max_size=BUDGET, seed=0),
        f"PROS-N-KONS(max_size={BUDGET})": lambda: PROSNKONS(kernel=kernel, loss=loss, C=3.0,
                                                             max_size=BUDGET, seed=0),
        "CON-KONS": lambda: CONKONS(kernel=kernel, loss=loss, C=3.0, seed=0),
        "SketchedKONS": lambda: SketchedKONS(kernel=kernel, loss=loss, C=3.0, beta=3.0,
                                             seed=0),
        f"FunctionalGD(budget={BUDGET})": lambda: FunctionalGD(kernel=kernel, loss=loss, C=3.0,
                                                               eta=0.5, budget=BUDGET),
        f"KRLS(max_size={BUDGET})": lambda: KRLS(kernel=kernel, nu=1e-2, alpha=1e-2, C=3.0,
                                                 max_size=BUDGET),
    }[name]()
    return model.predict_one, model.learn_one, lambda: model.dictionary_size


def vw_learner():
    from vowpalwabbit import Workspace

    vw = Workspace(f"--ksvm --kernel rbf --bandwidth {RBF_GAMMA} --l2 1e-4 --quiet")
    names = [f"{j}" for j in range(10)]

    def line(x):
        return " |f " + " ".join(f"{n}:{v:.17g}" for n, v in zip(names, x.values()))

    def learn(x, y):
        vw.learn(("1" if y > 0 else "-1") + line(x))

    return (lambda x: vw.predict(line(x))), learn, (lambda: -1)


LEARNERS = [f"CON-KONS(max_size={BUDGET})", f"PROS-N-KONS(max_size={BUDGET})", "CON-KONS",
            "SketchedKONS", f"FunctionalGD(budget={BUDGET})",
            f"KRLS(max_size={BUDGET})", "VW --ksvm"]


def marks_for(steps: int) -> list[int]:
    marks = sorted({int(round(10 ** e)) for e in np.arange(3, 7.01, 0.25)} | {steps})
    return [m for m in marks if m <= steps]


def run_scaling(name: str, X: np.ndarray, y: np.ndarray, cap: float, window: int) -> dict:
    names = [f"x{j}" for j in range(X.shape[1])]
    base = rss_bytes()
    predict, learn, size = vw_learner() if name == "VW --ksvm" else okoco_learner(name)
    marks = marks_for(X.shape[0])
    records, correct, start = [], 0, time.perf_counter()
    window_start = start
    for t in range(1, X.shape[0] + 1):
        if any(m - window == t - 1 for m in marks):
            window_start = time.perf_counter()
        x = dict(zip(names, X[t - 1].tolist()))
        correct += (predict(x) >= 0) == (y[t - 1] > 0)
        learn(x, y[t - 1])
        if t in marks:
            now = time.perf_counter()
            records.append({"t": t, "us_per_step": 1e6 * (now - window_start) / window,
                            "rss_growth_mb": (rss_bytes() - base) / 2**20, "size": size(),
                            "accuracy": correct / t, "elapsed_s": now - start,
                            "load": load_average()})
            if now - start > cap:
                break
    return {"learner": name, "records": records, "completed": records[-1]["t"] == X.shape[0],
            "elapsed_s": time.perf_counter() - start}


def in_child(fn, *args) -> dict:
    """``fn(*args)`` in a forked process of its own (``measure.in_child``); raises its error."""
    from benchmarks import measure

    out = measure.in_child(lambda: fn(*args), use_fork=True)
    if set(out) == {"error"}:
        raise RuntimeError(f"{fn.__name__}{args[:1]} failed:\n{out['error']}")
    return out


def save(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1))


def selected(name: str, only: list[str]) -> bool:
    """A fragment of the name, or the whole name when a fragment is exactly one of LEARNERS."""
    return any(o == name if o in LEARNERS else o in name for o in only)


def scaling(steps: int, cap: float, window: int, only: list[str] | None) -> None:
    X, y = random_rbf(steps)
    out = {"steps": steps, "cap_s": cap, "window": window, "rbf_gamma": RBF_GAMMA,
           "budget": BUDGET, "machine": platform.platform(), "cpus": os.cpu_count(),
           "load_start": load_average(), "runs": []}
    if only and RESULTS.exists():  # a partial run keeps the other learners' earlier runs
        earlier = json.loads(RESULTS.read_text())
        if (earlier["steps"], earlier["window"]) == (steps, window):
            out["runs"] = [r for r in earlier["runs"] if not selected(r["learner"], only)]
    for name in LEARNERS:
        if only and not selected(name, only):
            continue
        run = in_child(run_scaling, name, X, y, cap, window)
        last = run["records"][-1]
        print(f"{name:28s} t={last['t']:>8d} {last['us_per_step']:8.1f} us/step "
              f"rss+{last['rss_growth_mb']:7.1f} MB size={last['size']:5d} "
              f"acc={last['accuracy']:.3f} {run['elapsed_s']:.0f} s load={last['load']}",
              flush=True)
        out["runs"] = [r for r in out["runs"] if r["learner"] != name] + [run]
        out["load_end"] = load_average()
        save(RESULTS, out)  # after every learner: a long run interrupted keeps what it measured


# Settings tried on every stream besides its RBF widths; the best (width, setting) is reported.
# FunctionalGD's step size is tuned so that "above the budgeted first-order learner" is a claim
# against its best step, not an arbitrary one. CON-KONS and PROS-N-KONS are also run with the
# step of the regret guarantee (eta="exp-concave", alpha=1, their defaults before 0.2); the
# budgets follow CON-KONS with its defaults (the KORS dictionary does not depend on eta or
# alpha).
ACCURACY_SETTINGS = {
    "CON-KONS": [{}],
    "CON-KONS(eta='exp-concave', alpha=1)": [{"eta": "exp-concave", "alpha": 1.0}],
    "PROS-N-KONS": [{}],
    "PROS-N-KONS(eta='exp-concave', alpha=1)": [{"eta": "exp-concave", "alpha": 1.0}],
    "PROS-N-KONS(dictionary_alpha=10)": [{"dictionary_alpha": 10.0}],
    "SketchedKONS": [{}, {"beta": 3.0}],  # its defaults (beta=10) and the scaling run's beta
    "FunctionalGD(budget)": [{"eta": eta} for eta in ("sqrt", 0.1, 0.5, 2.0)],
    # No budget: on these short streams its n (d + 1) stored numbers are still far fewer bytes
    # than CON-KONS's state (atoms, two packed m x m triangles and KORS's factor; see state_kb).
    "FunctionalGD": [{"eta": eta} for eta in ("sqrt", 0.1, 0.5, 2.0)],
    "KRLS(max_size)": [{"nu": nu} for nu in (1e-2, 1e-3)],
}


def accuracy_learner(name: str, gamma: float, budget: int, setting: dict):
    from okoco import kernels, losses
    from okoco.learners import CONKONS, KRLS, PROSNKONS, FunctionalGD, SketchedKONS

    kernel, C = kernels.RBF(gamma), 3.0
    if name == "KRLS(max_size)":  # second-order least squares on the -1/+1 labels
        return KRLS(kernel=kernel, C=C, alpha=1e-3, max_size=max(budget, 1), **setting)
    common = {"kernel": kernel, "loss": losses.Logistic(), "C": C}
    if name.startswith("FunctionalGD"):
        cap = max(budget, 1) if name == "FunctionalGD(budget)" else None
        return FunctionalGD(**common, budget=cap, **setting)
    if name == "SketchedKONS":
        return SketchedKONS(**common, seed=0, **setting)
    cls = CONKONS if name.startswith("CON-KONS") else PROSNKONS
    return cls(**common, seed=0, **setting)


def accuracy_run(name: str, dataset: str, budget: int) -> dict:
    from benchmarks.data import load_stream
    from okoco import BinaryClassifier

    stream = load_stream(dataset)
    late = stream.n // 2  # "late" accuracy: the second half of the stream
    out = {}
    for gamma, setting in itertools.product(stream.spec.gammas, ACCURACY_SETTINGS[name]):
        inner = accuracy_learner(name, gamma, budget, setting)
        model = BinaryClassifier(inner)
        start, hits = time.perf_counter(), []
        for x, label in zip(stream.dicts(), stream.y.tolist()):
            hits.append(model.predict_one(x) == label)
            model.learn_one(x, label)
        key = ", ".join([f"gamma={gamma}"] + [f"{k}={v}" for k, v in setting.items()])
        out[key] = {"gamma": gamma, "setting": setting, "accuracy": float(np.mean(hits)),
                    "late_accuracy": float(np.mean(hits[late:])),
                    "size": inner.dictionary_size,
                    "state_kb": len(pickle.dumps(inner)) / 1024,  # every buffer it holds
                    "restarts": getattr(inner, "n_restarts", None),
                    "seconds": time.perf_counter() - start}
    best = max(out, key=lambda k: out[k]["accuracy"])
    return {"learner": name, "dataset": dataset, "n": stream.n, "best": best, **out[best],
            "all": out}


def accuracy() -> None:
    out = {"load_start": load_average(), "machine": platform.platform(), "cpus": os.cpu_count(),
           "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
           "settings": ACCURACY_SETTINGS, "runs": []}
    for dataset in ("bananas", "phishing", "shuttle"):
        con = in_child(accuracy_run, "CON-KONS", dataset, 0)
        runs = [con] + [in_child(accuracy_run, name, dataset, con["size"])
                        for name in ACCURACY_SETTINGS if name != "CON-KONS"]
        for r in runs:
            restarts = "" if r["restarts"] is None else f" restarts={r['restarts']}"
            print(f"{dataset:9s} {r['learner']:34s} acc={r['accuracy']:.4f} "
                  f"late={r['late_accuracy']:.4f} size={r['size']:5d} "
                  f"state={r['state_kb']:7.0f} kB{restarts} [{r['best']}] "
                  f"{r['seconds']:.1f} s load={load_average()}", flush=True)
        out["runs"] += runs
    out["load_end"] = load_average()
    save(ACCURACY, out)


def plot() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(RESULTS.read_text())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for run in data["runs"]:
        t = [r["t"] for r in run["records"]]
        ax1.loglog(t, [r["us_per_step"] for r in run["records"]], "o-", ms=3,
                   label=run["learner"])
        ax2.semilogx(t, [r["rss_growth_mb"] for r in run["records"]], "o-", ms=3,
                     label=run["learner"])
    ax1.set(xlabel="t", ylabel="µs per step (last window)", title="time per step")
    ax2.set(xlabel="t", ylabel="RSS growth (MB)", title="resident memory")
    ax1.legend(fontsize=7)
    fig.suptitle(f"RandomRBF d=10, load {data['load_start']} at start", fontsize=9)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["scaling", "accuracy", "plot"])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--cap", type=float, default=300.0, help="seconds per learner")
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--learners", default="", help="comma-separated name fragments")
    args = parser.parse_args(argv)
    if args.what == "scaling":
        scaling(args.steps, args.cap, args.window,
                [s for s in args.learners.split(",") if s] or None)
    elif args.what == "accuracy":
        accuracy()
    else:
        plot()


if __name__ == "__main__":
    main()
