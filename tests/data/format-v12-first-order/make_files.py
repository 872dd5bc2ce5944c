"""Write ``auto.npz`` and ``expected.json`` here with the okoco of format 12 (main at commit
0146f1d, before the first-order head held its matrix as a scalar): an ``Auto`` with
dictionaries of 12 atoms whose sharp head switched to first-order steps (its ``A^{-1} = I/3``
saved as a matrix, as is the linear ``eta=0`` head's ``I/100``), and what the model loaded
from it predicted on the next 50 rows, each learned after its prediction. Run with the
format-12 okoco importable first (not a worktree of a later one): ``python make_files.py``."""

import json
import os

import numpy as np

import okoco
import okoco.learners.auto as auto_module
from okoco import persistence
from okoco.learners import Auto

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    if persistence.FORMAT_VERSION != 12:
        raise SystemExit(f"this okoco writes format {persistence.FORMAT_VERSION}, not 12")
    auto_module.DICTIONARY = (1.0, 12, 30.0, "usage")

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    rows = [({f"x{i}": float(v) for i, v in enumerate(x)}, float(t)) for x, t in zip(X, y)]
    model = Auto()
    for x, target in rows[:150]:
        model.learn_one(x, target)
    sharp = model.experts[1]
    assert (sharp.eta, sharp.alpha, sharp.dictionary_size) == (0.0, 3.0, 12)
    path = model.save(os.path.join(HERE, "auto.npz"))
    assert persistence.read_metadata(path)["format_version"] == 12
    model = okoco.load(path)  # (what a load of the file does next, its rebuilt factorizations)
    expected = []
    for x, target in rows[150:]:
        expected.append(model.predict_one(x))
        model.learn_one(x, target)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"okoco": okoco.__version__, "learned": 150, "expected": expected}, f, indent=1)


if __name__ == "__main__":
    main()
