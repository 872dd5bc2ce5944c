"""Datasets bundled with river, and two of scikit-learn's shipped with okoco (no download needed).

Only river datasets shipped inside the river wheel itself are offered (river 0.26: bananas,
phishing, trump-approval, chick-weights, shuttle, image-segments). river datasets that download at
run time are not, and neither are the bundled ones whose only feature is a date
(airline-passengers, water-flow) or that have several targets (solar-flare, yeast).

Non-numeric features: every feature value is converted with ``float`` (``bool`` and ``int`` are
fine). A value that cannot be converted raises a ``TypeError`` naming the dataset, the row and the
feature; none of the datasets offered here has one. Categorical codes stored as numbers (the
``chick`` and ``diet`` columns of chick-weights) are kept as numbers. Labels keep river's values
(``bool`` for bananas and phishing, ``int`` 0/1 for shuttle, ``str`` for image-segments).

scikit-learn's diabetes and breast-cancer sets are shipped inside okoco (60 KB, in
``okoco/datasets/data``), so they load without scikit-learn: installing scikit-learn only for them
would add 50 MB and slow every replay's start-up, since river imports it when it is present. They
give the arrays of scikit-learn's ``load_diabetes()`` (features centred and scaled to unit norm per
column, as there) and ``load_breast_cancer()``. Sources: diabetes, Efron, Hastie, Johnstone and
Tibshirani (2004), "Least Angle Regression"; breast cancer, Wolberg, Street and Mangasarian, "Breast
Cancer Wisconsin (Diagnostic)", UCI Machine Learning Repository (CC BY 4.0).

river is imported only when one of its datasets is loaded. The CSV files among them
(trump-approval, phishing, chick-weights, shuttle) are read straight from river's package
folder, with river's own conversions: importing ``river.datasets`` costs about a second
(it imports scikit-learn, pandas and scipy.stats when they are installed), more than a short
replay.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
from pathlib import Path

import numpy as np

from okoco.datasets.base import Dataset

__all__ = ["RIVER", "SKLEARN", "load_river", "load_sklearn"]

#: name -> (river class name, n, d, task, description)
RIVER: dict[str, tuple[str, int, int, str, str]] = {
    "bananas": ("Bananas", 5300, 2, "binary", "river: 2-D banana-shaped classes"),
    "phishing": ("Phishing", 1250, 9, "binary", "river: phishing web pages"),
    "trump-approval": ("TrumpApproval", 1001, 6, "regression",
                       "river: Trump approval rating from pollsters"),
    "chick-weights": ("ChickWeights", 578, 3, "regression",
                      "river: chick weight vs time and diet (codes kept as numbers)"),
    "shuttle": ("Shuttle", 49097, 9, "binary", "river: Statlog shuttle, anomaly (1) vs normal"),
    "image-segments": ("ImageSegments", 2310, 18, "multiclass",
                       "river: UCI image segmentation, 7 classes"),
}

#: name -> (file in okoco/datasets/data, n, d, task, description)
SKLEARN: dict[str, tuple[str, int, int, str, str]] = {
    "diabetes": ("diabetes.csv.gz", 442, 10, "regression", "scikit-learn: diabetes progression"),
    "breast-cancer": ("breast_cancer.csv.gz", 569, 30, "binary",
                      "scikit-learn: Wisconsin breast cancer, 0 malignant / 1 benign"),
}

_DATA = Path(__file__).with_name("data")

#: river datasets read without ``river.datasets``: name -> (file, target column, label type);
#: the label conversions are those of river's dataset classes
_RIVER_CSV: dict[str, tuple[str, str, object]] = {
    "trump-approval": ("trump_approval.csv.gz", "five_thirty_eight", float),
    "phishing": ("phishing.csv.gz", "is_phishing", lambda v: v == "1"),
    "chick-weights": ("chick-weights.csv", "weight", int),
    "shuttle": ("shuttle.csv.gz", "anomaly", int),
}


def _read_river_csv(name: str) -> tuple[list[str], list[list[float]], list]:
    """Feature names, rows and labels of a CSV dataset in river's package folder."""
    file, target, label = _RIVER_CSV[name]
    path = Path(importlib.util.find_spec("river").origin).parent / "datasets" / file
    opener = gzip.open if file.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        reader = csv.DictReader(f)
        names = [k for k in reader.fieldnames if k != target]
        rows, targets = [], []
        for row in reader:
            rows.append([float(row[k]) for k in names])
            targets.append(label(row[target]))
    return names, rows, targets


def load_river(name: str) -> Dataset:
    """A river bundled dataset by okoco name (see ``RIVER``), read on first use.

    Examples
    --------
    >>> ds = load_river("phishing")
    >>> ds.n, ds.d, ds.task
    (1250, 9, 'binary')
    >>> x, y = next(iter(ds))
    >>> type(x["long_url"]), y
    (<class 'float'>, True)
    """
    if name not in RIVER:
        raise ValueError(f"unknown river dataset {name!r}; choose from {sorted(RIVER)}")
    cls_name, n, d, task, desc = RIVER[name]

    def loader():
        if name in _RIVER_CSV:
            names, rows, targets = _read_river_csv(name)
            y = np.asarray(targets, dtype=np.float64 if task == "regression" else None)
            return np.asarray(rows, dtype=np.float64), y, names
        import river.datasets

        rows, targets, names = [], [], None
        for i, (x, y) in enumerate(getattr(river.datasets, cls_name)()):
            if names is None:
                names = list(x)
            try:
                rows.append([float(x[k]) for k in names])
            except (TypeError, ValueError, KeyError):
                bad = next(
                    k for k in names if k not in x or not isinstance(x[k], (int, float, np.number))
                )
                raise TypeError(
                    f"{name}: row {i}: feature {bad!r} is not numeric ({x.get(bad)!r})"
                ) from None
            targets.append(y)
        X = np.asarray(rows, dtype=np.float64)
        y = np.asarray(targets, dtype=np.float64 if task == "regression" else None)
        return X, y, names

    return Dataset(name, task, loader=loader, n=n, d=d, description=desc)


def load_sklearn(name: str) -> Dataset:
    """A scikit-learn dataset by okoco name (see ``SKLEARN``), from the copy shipped with okoco.

    Examples
    --------
    >>> ds = load_sklearn("diabetes")
    >>> ds.n, ds.d, ds.task, ds.feature_names[:3]
    (442, 10, 'regression', ['age', 'sex', 'bmi'])
    >>> X, y, _ = ds.to_arrays()
    >>> bool(abs(X.mean(axis=0)).max() < 1e-15), float((X ** 2).sum(axis=0)[0]), y[0]
    (True, 1.0..., np.float64(151.0))
    """
    if name not in SKLEARN:
        raise ValueError(f"unknown scikit-learn dataset {name!r}; choose from {sorted(SKLEARN)}")
    file, n, d, task, desc = SKLEARN[name]

    def loader():
        with gzip.open(_DATA / file, "rt") as f:
            names = f.readline().strip().split(",")[:-1]
            table = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
        X, y = table[:, :-1], table[:, -1]
        if name == "diabetes":  # scikit-learn's load_diabetes(scaled=True)
            X = X - X.mean(axis=0)
            X /= X.std(axis=0) * np.sqrt(X.shape[0])
        return X, y.astype(np.float64 if task == "regression" else np.int64), names

    return Dataset(name, task, loader=loader, n=n, d=d, description=desc)
