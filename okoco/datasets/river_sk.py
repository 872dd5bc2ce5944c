"""Datasets bundled with river and scikit-learn (no download needed).

Only river datasets shipped inside the river wheel itself are offered (river 0.26: bananas,
phishing, trump-approval, chick-weights, shuttle, image-segments). river datasets that download at
run time are not, and neither are the bundled ones whose only feature is a date
(airline-passengers, water-flow) or that have several targets (solar-flare, yeast).

Non-numeric features: every feature value is converted with ``float`` (``bool`` and ``int`` are
fine). A value that cannot be converted raises a ``TypeError`` naming the dataset, the row and the
feature; none of the datasets offered here has one. Categorical codes stored as numbers (the
``chick`` and ``diet`` columns of chick-weights) are kept as numbers. Labels keep river's values
(``bool`` for bananas and phishing, ``int`` 0/1 for shuttle, ``str`` for image-segments).

river and scikit-learn are imported only when such a dataset is loaded.
"""

from __future__ import annotations

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

#: name -> (sklearn loader, n, d, task, description)
SKLEARN: dict[str, tuple[str, int, int, str, str]] = {
    "diabetes": ("load_diabetes", 442, 10, "regression", "scikit-learn: diabetes progression"),
    "breast-cancer": ("load_breast_cancer", 569, 30, "binary",
                      "scikit-learn: Wisconsin breast cancer, 0 malignant / 1 benign"),
}


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
    """A scikit-learn bundled dataset by okoco name (see ``SKLEARN``).

    Examples
    --------
    >>> ds = load_sklearn("diabetes")
    >>> ds.n, ds.d, ds.task, ds.feature_names[:3]
    (442, 10, 'regression', ['age', 'sex', 'bmi'])
    """
    if name not in SKLEARN:
        raise ValueError(f"unknown scikit-learn dataset {name!r}; choose from {sorted(SKLEARN)}")
    fn, n, d, task, desc = SKLEARN[name]

    def loader():
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, fn)()
        y = bunch.target.astype(np.float64 if task == "regression" else np.int64)
        return bunch.data, y, [str(f) for f in bunch.feature_names]

    return Dataset(name, task, loader=loader, n=n, d=d, description=desc)
