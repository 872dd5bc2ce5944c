"""KONS, Sketched-KONS and Vowpal Wabbit --ksvm on river's Bananas (5,300 points), one run.

Run: python benchmarks/bench_kons.py      (needs the `bench` extra: pip install -e ".[bench]")

Online (progressive) accuracy and µs per sample for each setting of a small grid, the best
setting of each learner, and per-step time against t for the best KONS and Sketched-KONS runs.
Writes benchmarks/results/kons_bananas.json.
"""

from __future__ import annotations

import json
import pathlib
import platform
import time

from river import datasets

from okoco import BinaryClassifier, kernels, losses
from okoco.learners import KONS, SketchedKONS

BLOCK = 500
OUT = pathlib.Path(__file__).parent / "results" / "kons_bananas.json"


def replay_okoco(model):
    data = list(datasets.Bananas())
    correct, block_times, start = 0, [], time.perf_counter()
    block_start = start
    for t, (x, y) in enumerate(data, start=1):
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
        if t % BLOCK == 0:
            now = time.perf_counter()
            block_times.append((t, 1e6 * (now - block_start) / BLOCK))
            block_start = now
    elapsed = time.perf_counter() - start
    learner = model.learner
    return {"accuracy": correct / len(data), "us_per_sample": 1e6 * elapsed / len(data),
            "seconds": elapsed, "dictionary_size": learner.dictionary_size,
            "us_per_step_vs_t": block_times}


def replay_vw(bandwidth, l2):
    from vowpalwabbit import Workspace

    vw = Workspace(f"--ksvm --kernel rbf --bandwidth {bandwidth} --l2 {l2} --quiet")
    data = list(datasets.Bananas())
    correct, start = 0, time.perf_counter()
    for x, y in data:
        features = " |f " + " ".join(f"{k}:{v}" for k, v in x.items())
        label = 1 if y else -1
        correct += (1 if vw.predict(features) > 0 else -1) == label
        vw.learn(f"{label}{features}")
    elapsed = time.perf_counter() - start
    vw.finish()
    return {"accuracy": correct / len(data), "us_per_sample": 1e6 * elapsed / len(data),
            "seconds": elapsed}


def main():
    runs = []
    for g in (0.5, 2.0):
        model = BinaryClassifier(KONS(kernel=kernels.RBF(g), loss=losses.Logistic(), C=3.0))
        runs.append({"learner": "KONS", "params": {"rbf_gamma": g}, **replay_okoco(model)})
        for beta, floor in ((1.0, 0.0), (3.0, 0.0), (1.0, 0.1)):
            model = BinaryClassifier(SketchedKONS(kernel=kernels.RBF(g), loss=losses.Logistic(),
                                                  C=3.0, beta=beta, gamma=floor, seed=0))
            params = {"rbf_gamma": g, "beta": beta, "gamma": floor}
            runs.append({"learner": "SketchedKONS", "params": params, **replay_okoco(model)})
    for bandwidth in (1.0, 4.0):
        for l2 in (1e-4, 1e-3):
            runs.append({"learner": "VW --ksvm", "params": {"bandwidth": bandwidth, "l2": l2},
                         **replay_vw(bandwidth, l2)})

    print(f"machine: {platform.machine()}, {platform.python_version()}; Bananas n = 5300")
    print(f"{'learner':<13} {'params':<44} {'accuracy':>8} {'us/sample':>10} {'dict':>5}")
    for r in runs:
        print(f"{r['learner']:<13} {json.dumps(r['params']):<44} {r['accuracy']:>8.4f} "
              f"{r['us_per_sample']:>10.1f} {r.get('dictionary_size', ''):>5}")
    best = {}
    for r in runs:
        if r["learner"] not in best or r["accuracy"] > best[r["learner"]]["accuracy"]:
            best[r["learner"]] = r
    print("\nbest per learner:")
    for name, r in best.items():
        print(f"  {name:<13} accuracy {r['accuracy']:.4f}  {r['us_per_sample']:.1f} us/sample "
              f"({r['seconds']:.1f} s)  {json.dumps(r['params'])}")
    print("\nper-step time (us) against t, best KONS / best SketchedKONS:")
    for (t, a), (_, b) in zip(best["KONS"]["us_per_step_vs_t"],
                              best["SketchedKONS"]["us_per_step_vs_t"]):
        print(f"  t = {t:>5}: {a:>9.1f} {b:>9.1f}")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"machine": platform.machine(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
