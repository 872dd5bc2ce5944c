"""Auto's predictions on river's Friedman #1 (seed 0, standardized features, raw targets),
test-then-train, saved as the reference of tests/test_ons_core.py.

Run at main's commit with main's okoco (the file was made at ca40f85, before the compiled ONS
head)::

    cd <main checkout> && PYTHONPATH=. python <this file> tests/data/auto-friedman-ca40f85.npy
"""

import sys

import numpy as np


def auto_friedman_predictions(n: int = 3000) -> np.ndarray:
    from river import preprocessing
    from river.datasets import synth

    from okoco.learners import Auto

    model, scaler, out = Auto(), preprocessing.StandardScaler(), []
    for x, y in synth.Friedman(seed=0).take(n):
        xs = scaler.learn_one(x) or scaler.transform_one(x)
        out.append(model.predict_one(xs))
        model.learn_one(xs, y)
    return np.array(out)


if __name__ == "__main__":
    np.save(sys.argv[1], auto_friedman_predictions())
