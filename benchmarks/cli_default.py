"""The CLI's default learner: final metric of candidates on the built-in streams, and the cost
per step on a long stream (``python -m benchmarks.cli_default``; a few minutes on 2 cores).

Every run is ``okoco replay``'s: features and targets standardised online, C = 3, the learners'
default kernel, seed 0. Streams longer than 5,300 samples are cut there; exact KONS and Auto
(KONS experts) run only up to 1,300 samples (their O(t^2) step is what the default avoids). The
table in docs/guide/cli.md comes from this script.
"""

from __future__ import annotations

from okoco.experiment import load_dataset, run_one

BASE = {"kernel": "rbf", "gamma": None, "degree": None, "coef0": None, "normalize": False,
        "loss": None, "C": 3.0, "metric": [], "max_samples": None, "checkpoints": 5,
        "scale": True, "scale_target": True}
CANDIDATES = [("fgd", {"budget": 1000, "eta": 0.2}), ("fgd", {"budget": 1000, "eta": 0.5}),
              ("fgd", {}), ("pros-n-kons", {}), ("con-kons", {}), ("kons", {}), ("auto", {})]
STREAMS = ["trump-approval", "chick-weights", "diabetes", "sinc", "friedman", "mackey-glass",
           "rkhs", "phishing", "breast-cancer", "bananas", "shuttle"]


def quality() -> None:
    for name in STREAMS:
        ds = load_dataset(name, target=None, data_params={}, seed=0, shuffle=False)
        n = min(ds.n, 5300)
        for learner, params in CANDIDATES:
            if learner in ("kons", "auto") and n > 1300:
                continue
            r = run_one(ds, learner, options=dict(BASE, params=params, max_samples=n), seed=0)
            m = r.metrics[0]
            print(f"{name:15s} {learner:5s} {str(params):30s} {m} {r.final[m]:.4f} "
                  f"(n={r.n_samples})", flush=True)


def growth(n: int = 12000) -> None:
    points = [1000, 2000, 4000, 8000, n]
    ds = load_dataset("sinc", target=None, data_params={"n": n}, seed=0, shuffle=False)
    for learner, params in (("fgd", {"budget": 1000, "eta": 0.2}), ("pros-n-kons", {}),
                            ("con-kons", {}), ("sketched-kons", {})):
        r = run_one(ds, learner, options=dict(BASE, params=params, checkpoints=points), seed=0)
        cost = ", ".join(f"t={t}: {us:.0f}" for t, us in zip(r["t"], r["us_per_sample"]))
        print(f"sinc n={n} {learner} {params}: us/sample {cost}", flush=True)


if __name__ == "__main__":
    quality()
    growth()
