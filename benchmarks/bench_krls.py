"""KRLS against random-feature pipelines: online MAE/MSE and µs per sample, one run.

Run: python benchmarks/bench_krls.py     (needs scikit-learn: pip install -e ".[bench]")

Streams: river's TrumpApproval (1,001 rows, features and target standardised online) and a
noisy sinc stream (n = 20,000, x ~ U[-4, 4], noise sd 0.1). Peers, measured side by side:
river StandardScaler | RBFSampler | LinearRegression, and scikit-learn Nystroem (fitted on the
first 100 rows) + SGDRegressor.partial_fit one row at a time.
"""

from __future__ import annotations

import json
import pathlib
import platform
import time

import numpy as np
from river import base, datasets, feature_extraction, linear_model, optim, preprocessing

from okoco import kernels
from okoco.learners import KRLS

OUT = pathlib.Path(__file__).parent / "results" / "krls.json"


def replay(model, stream):
    abs_err = sq_err = 0.0
    n = 0
    start = time.perf_counter()
    for x, y in stream:
        err = model.predict_one(x) - y
        model.learn_one(x, y)
        abs_err += abs(err)
        sq_err += err * err
        n += 1
    us = 1e6 * (time.perf_counter() - start) / n
    return {"mae": abs_err / n, "mse": sq_err / n, "us_per_sample": us}


class SklearnNystroemSGD(base.Regressor):
    """Nystroem features (fitted on a warm-up prefix) + SGDRegressor.partial_fit per row."""

    def __init__(self, gamma, n_components=100, warmup=100):
        self.gamma, self.n_components, self.warmup = gamma, n_components, warmup
        self.buffer, self.names, self.sgd, self.feat = [], None, None, None

    def _vec(self, x):
        if self.names is None:
            self.names = sorted(x)
        return np.array([[x.get(k, 0.0) for k in self.names]])

    def predict_one(self, x):
        if self.sgd is None:
            return 0.0
        return float(self.sgd.predict(self.feat.transform(self._vec(x)))[0])

    def learn_one(self, x, y):
        from sklearn.kernel_approximation import Nystroem
        from sklearn.linear_model import SGDRegressor

        v = self._vec(x)
        if self.sgd is None:
            self.buffer.append((v, y))
            if len(self.buffer) == self.warmup:
                V = np.vstack([b[0] for b in self.buffer])
                self.feat = Nystroem(gamma=self.gamma, n_components=min(self.n_components,
                                                                        len(V)), random_state=0)
                self.feat.fit(V)
                self.sgd = SGDRegressor(learning_rate="invscaling", eta0=0.05, random_state=0)
                for vb, yb in self.buffer:
                    self.sgd.partial_fit(self.feat.transform(vb), [yb])
            return
        self.sgd.partial_fit(self.feat.transform(v), [y])


def scaled(model):
    return preprocessing.TargetStandardScaler(preprocessing.StandardScaler() | model)


def sinc_stream(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-4, 4, n)
    y = np.sinc(X) + 0.1 * rng.normal(size=n)
    return [({"x": float(a)}, float(b)) for a, b in zip(X, y)]


def main():
    streams = {"trump-approval": list(datasets.TrumpApproval()), "sinc-20k": sinc_stream()}
    models = {
        "trump-approval": {
            "KRLS": lambda: scaled(KRLS(kernel=kernels.RBF(0.05), nu=0.05, ridge=1e-2)),
            **{f"river RBFSampler+LinReg lr={lr}": (lambda lr=lr: scaled(
                feature_extraction.RBFSampler(gamma=0.05, seed=0)
                | linear_model.LinearRegression(optimizer=optim.SGD(lr))
            )) for lr in (0.001, 0.01)},
            "sklearn Nystroem+SGD": lambda: scaled(SklearnNystroemSGD(gamma=0.05)),
        },
        "sinc-20k": {
            "KRLS": lambda: KRLS(kernel=kernels.RBF(1.0), nu=1e-3),
            **{f"river RBFSampler+LinReg lr={lr}": (lambda lr=lr: feature_extraction.RBFSampler(
                gamma=1.0, seed=0) | linear_model.LinearRegression(optimizer=optim.SGD(lr)))
               for lr in (0.001, 0.01)},
            "sklearn Nystroem+SGD": lambda: SklearnNystroemSGD(gamma=1.0),
        },
    }
    results = []
    print(f"machine: {platform.machine()}, python {platform.python_version()}")
    for name, stream in streams.items():
        for learner, factory in models[name].items():
            r = {"dataset": name, "learner": learner, **replay(factory(), stream)}
            results.append(r)
        base = next(r for r in results if r["dataset"] == name and r["learner"] == "KRLS")
        for r in (r for r in results if r["dataset"] == name):
            print(f"{name:<15} {r['learner']:<32} MAE {r['mae']:.4f}  MSE {r['mse']:.4f}  "
                  f"{r['us_per_sample']:8.1f} us/sample  (KRLS time ratio "
                  f"{base['us_per_sample'] / r['us_per_sample']:.2f})")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
