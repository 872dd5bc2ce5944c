"""Multiclass: okoco's MulticlassClassifier against river's one-vs-rest and river's defaults.

Every model runs test-then-train (river's ``progressive_val_score``, accuracy) behind river's
``StandardScaler``, in the same process, one after the other, on

- river's ImageSegments (2,310 samples, 18 features, 7 classes), in river's order;
- scikit-learn's digits (1,797 samples, 64 features, 10 classes) and wine (178 samples,
  13 features, 3 classes), both bundled with scikit-learn, in the order of a fixed permutation
  (seed 0: wine's file is sorted by class).

Models: ``MulticlassClassifier(L)`` and river's ``OneVsRestClassifier(BinaryClassifier(L))`` for
the same okoco learner ``L``: ``KONS()`` (the squared loss: ``MulticlassClassifier()``, the
default, whose classes share one preconditioner), ``Auto()`` (the squared loss: one mixture
whose experts each share one preconditioner among the classes, the CLI's default on a
multiclass task), and KONS, FunctionalGD and Auto with the logistic loss (one preconditioner
per class); one ``BinaryClassifier(KONS())`` on the first label
against the rest (the cost of one learner); river's ``ARFClassifier``, ``KNNClassifier`` and
``HoeffdingTreeClassifier`` at their defaults, and a multinomial prototype
(:class:`SoftmaxFGD`: functional gradient descent on the softmax loss, one coefficient vector
per stored point, the same kernel, step and budget as the ``FunctionalGD`` rows), to compare
one-vs-rest with a multinomial loss on the same streams.

Run: ``python -m benchmarks.bench_multiclass [--only NAME ...] [--sets NAME ...] [--repeat N]
[--orders N]`` (``--repeat``: each pass N times, the least time kept; ``--orders``: the order
above and N - 1 shuffles of it, seeds 1 to N - 1, accuracy and time averaged); prints a
markdown table of accuracy and µs/sample: the process's CPU time of the whole pass divided by
the samples (BLAS threads included), which a machine shared with other jobs inflates less than
the wall time, printed after it in parentheses, and the model's size after the pass as
``pickle`` writes it (MiB): the same public measure for okoco's and river's models.
"""

from __future__ import annotations

import argparse
import os
import pickle
import time

import numpy as np
from river import (
    base,
    evaluate,
    forest,
    metrics,
    multiclass,
    neighbors,
    preprocessing,
    stream,
    tree,
)

from okoco import kernels, losses
from okoco.learners import KONS, Auto, BinaryClassifier, FunctionalGD, MulticlassClassifier


def _sklearn(loader) -> list:
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return list(stream.iter_array(X[order], y[order].tolist()))


def data_sets() -> dict[str, list]:
    from river import datasets
    from sklearn.datasets import load_digits, load_wine

    return {"image-segments": list(datasets.ImageSegments()), "digits": _sklearn(load_digits),
            "wine": _sklearn(load_wine)}


LEARNERS = {
    # squared loss, curvature step: MulticlassClassifier's classes share one preconditioner
    "kons-squared": KONS,
    # squared loss: one mixture of experts, each with one preconditioner for all classes
    "auto-squared": Auto,
    "kons": lambda: KONS(loss=losses.Logistic()),
    "fgd": lambda: FunctionalGD(loss=losses.Logistic(), eta=0.5),
    "auto": lambda: Auto(loss=losses.Logistic()),
}


class SoftmaxFGD(base.Classifier):
    r"""Multinomial prototype: functional gradient descent on the softmax (cross-entropy) loss.

    :math:`f(x) = \sum_i a_i k(x_i, x) \in \mathbb R^K`; at :math:`(x_t, y_t)` the point is
    stored with :math:`a_t = -\eta\,(\mathrm{softmax}(f(x_t)) - e_{y_t})`, the last ``budget``
    points kept (a ring, as ``FunctionalGD``'s budget); a class first seen later gets zero
    coefficients on the earlier points. ``RBF(1/d)`` and ``eta`` as the ``FunctionalGD`` rows;
    no projection (the softmax gradient is bounded by 1 in each coordinate)."""

    def __init__(self, eta: float = 0.5, budget: int = 1000):
        self.eta = eta
        self.budget = budget
        self.classes: list = []
        self._names: list = []
        self._X = self._A = self._kernel = None
        self._n = self._added = 0

    def _vector(self, x: dict) -> np.ndarray:
        if not self._names:
            self._names = list(x)
        return np.array([float(x.get(k, 0.0)) for k in self._names])

    def _scores(self, v: np.ndarray) -> np.ndarray:
        if not self._n:
            return np.zeros(len(self.classes))
        k = self._kernel(self._X[: self._n], v[None, :])[:, 0]
        return k @ self._A[: self._n]

    def predict_proba_one(self, x: dict) -> dict:
        if not self.classes:
            return {}
        f = self._scores(self._vector(x))
        p = np.exp(f - f.max())
        return dict(zip(self.classes, (p / p.sum()).tolist()))

    def learn_one(self, x: dict, y) -> None:
        v = self._vector(x)
        if self._kernel is None:
            self._kernel = kernels.RBF(1.0 / max(len(v), 1))
            self._X = np.zeros((self.budget, len(v)))
            self._A = np.zeros((self.budget, 0))
        if y not in self.classes:
            self.classes.append(y)
            self._A = np.hstack([self._A, np.zeros((self.budget, 1))])
        f = self._scores(v)
        p = np.exp(f - f.max())
        g = p / p.sum()
        g[self.classes.index(y)] -= 1.0
        slot = self._added % self.budget
        self._X[slot], self._A[slot] = v, -self.eta * g
        self._added += 1
        self._n = min(self._added, self.budget)


ONE = "one BinaryClassifier(kons-squared), first label vs rest (binary accuracy)"


def models() -> dict[str, callable]:
    out = {}
    notes = {"kons-squared": ") (the default, MulticlassClassifier()",
             "auto-squared": ") (the CLI's default, MulticlassClassifier(Auto())",
             "auto": ") (the CLI's default before the shared Auto"}
    for name, make in LEARNERS.items():
        label = name + notes.get(name, "")
        out[f"okoco MulticlassClassifier({label})"] = lambda make=make: MulticlassClassifier(make())
        out[f"river OvR(BinaryClassifier({name}))"] = (
            lambda make=make: multiclass.OneVsRestClassifier(BinaryClassifier(make())))
    # the cost of one learner, to compare with K classes sharing one preconditioner: a binary
    # task (the first label against the rest), its accuracy that of this task
    out[ONE] = lambda: BinaryClassifier(KONS())
    out["river ARFClassifier()"] = lambda: forest.ARFClassifier(seed=0)
    out["river KNNClassifier()"] = neighbors.KNNClassifier
    out["river HoeffdingTreeClassifier()"] = tree.HoeffdingTreeClassifier
    out["multinomial prototype SoftmaxFGD(eta=0.5)"] = SoftmaxFGD
    return out


def _mib(model) -> str:
    """The model's size as ``pickle`` writes it, in MiB."""
    return f"{len(pickle.dumps(model)) / 2**20:.2f}"


def _orders(data: list, n: int) -> list[list]:
    """``data``, then ``n - 1`` shuffles of it (``default_rng(seed)``, seeds 1 to n - 1)."""
    return [data] + [[data[i] for i in np.random.default_rng(seed).permutation(len(data))]
                     for seed in range(1, n)]


def _run(data: list, make, repeat: int) -> tuple:
    """Accuracy, CPU and wall µs/sample of a test-then-train pass (least time of ``repeat``),
    and the model it leaves."""
    us = wall = float("inf")
    for _ in range(repeat):
        model = preprocessing.StandardScaler() | make()
        start, cpu = time.perf_counter(), time.process_time()
        acc = evaluate.progressive_val_score(data, model, metrics.Accuracy()).get()
        us = min(us, 1e6 * (time.process_time() - cpu) / len(data))
        wall = min(wall, 1e6 * (time.perf_counter() - start) / len(data))
    return acc, us, wall, model


def main(argv=None) -> list[list[str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="substrings of the model names to run")
    parser.add_argument("--sets", nargs="*", help="data sets to run (default: all three)")
    parser.add_argument("--repeat", type=int, default=1, help="passes per cell (least time)")
    parser.add_argument("--orders", type=int, default=1,
                        help="orders of each set (the fixed one, then shuffles): means")
    args = parser.parse_args(argv)
    sets = {k: v for k, v in data_sets().items() if not args.sets or k in args.sets}
    print(f"load {os.getloadavg()[0]:.2f} at start; {args.orders} order(s) of each set")
    print("| model | " + " | ".join(f"{n} acc. | CPU (wall) µs/sample | MiB" for n in sets)
          + " |")
    print("|---|" + "---|---|---|" * len(sets))
    table = []
    for label, make in models().items():
        if args.only and not any(s in label for s in args.only):
            continue
        cells = []
        for data in sets.values():
            if label == ONE:
                data = [(x, y == data[0][1]) for x, y in data]
            runs = [_run(ordered, make, args.repeat) for ordered in _orders(data, args.orders)]
            acc, us, wall = (float(np.mean([run[i] for run in runs])) for i in range(3))
            model = runs[0][3]  # the memory of the first order's model
            cells += [f"{acc:.4f}", f"{us:,.0f} ({wall:,.0f})", _mib(model)]
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
        table.append([label, *cells])
    print(f"load {os.getloadavg()[0]:.2f} at end")
    return table


if __name__ == "__main__":
    main()
