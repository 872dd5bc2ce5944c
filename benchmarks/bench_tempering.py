"""Would the KONS variance temper classification probabilities well? Log loss with and without.

``BinaryClassifier(KONS(loss=Logistic()))`` at its defaults, features standardized online,
test-then-train. Tempered: the probit approximation of the Laplace predictive probability,
``sigmoid(f / sqrt(1 + pi v / 8))`` (MacKay 1992), with ``v = phi^T A_t^{-1} phi =
s(x) / alpha`` the posterior variance of the logistic KONS (its preconditioner is the Laplace
Hessian with the curvature step)::

    python -m benchmarks.bench_tempering
"""

from __future__ import annotations

import math

from river import datasets, preprocessing

from okoco import BinaryClassifier, losses
from okoco.learners import KONS


def log_loss(stream, temper: bool) -> float:
    clf = BinaryClassifier(KONS(loss=losses.Logistic()))
    scaler = preprocessing.StandardScaler()
    total = n = 0
    for x, y in stream:
        scaler.learn_one(x)
        x = scaler.transform_one(x)
        p = min(max(clf.predict_proba_one(x).get(y, 0.0), 1e-12), 1 - 1e-12)
        learner = clf.learner
        if temper and learner.n_seen:
            analysis = learner._analyse(learner._features.encode(x, arrays=False)[0])
            v = max(analysis[1] - analysis[6], 0.0) / learner.alpha
            p = 1 / (1 + math.exp(-math.log(p / (1 - p)) / math.sqrt(1 + math.pi * v / 8)))
        total -= math.log(p)
        n += 1
        clf.learn_one(x, y)
    return total / n


def main() -> None:
    print("| stream | log loss, plain | log loss, tempered |")
    print("|---|---|---|")
    for name, make in (("Phishing", lambda: datasets.Phishing()),
                       ("Bananas, first 2,000", lambda: datasets.Bananas().take(2000))):
        print(f"| {name} | {log_loss(make(), False):.4f} | {log_loss(make(), True):.4f} |")


if __name__ == "__main__":
    main()
