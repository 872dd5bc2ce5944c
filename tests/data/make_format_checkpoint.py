"""Write a replay checkpoint of the running okoco's file format beside the tests:

    python tests/data/make_format_checkpoint.py 4 tests/data/format-v4-checkpoint

(with the okoco of format 4: commit a0bdb7f). The checkpoint holds a river pipeline of okoco's
StandardScaler and a KONS inside okoco's TargetStandardScaler, and okoco's MAE and R2, after 40
rows; ``expected.json`` holds the pipeline's predictions at three probes and the metrics' values.
``tests/test_persistence_formats.py`` restores it into a fresh, identically built run.
"""

import json
import sys

import numpy as np

from okoco import kernels, metrics, persistence, preprocessing
from okoco.learners import KONS


def build():
    model = preprocessing.StandardScaler() | preprocessing.TargetStandardScaler(
        KONS(kernel=kernels.RBF(0.7), C=2.0, max_size=20))
    return model, [metrics.MAE(), metrics.R2()]


PROBES = [{"a": 0.2, "b": -0.4}, {"a": 1.5, "b": 0.1}, {"a": -0.7, "b": 0.3}]


def main() -> None:
    version, out = int(sys.argv[1]), sys.argv[2]
    assert persistence.FORMAT_VERSION == version, persistence.FORMAT_VERSION
    model, metric_list = build()
    rng = np.random.default_rng(0)
    for _ in range(40):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        y = float(np.tanh(x["a"] - x["b"]))
        p = model.predict_one(x)
        for m in metric_list:
            m.update(y, p)
        model.learn_one(x, y)
    persistence.save_checkpoint(f"{out}/checkpoint.npz", model, metric_list, {"t": 40})
    with open(f"{out}/expected.json", "w") as f:
        json.dump({"format_version": version, "probes": PROBES,
                   "predictions": [model.predict_one(x) for x in PROBES],
                   "metrics": [m.get() for m in metric_list]}, f, indent=1)


if __name__ == "__main__":
    main()
