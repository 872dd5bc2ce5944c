"""Datasets read from files: svmlight / LIBSVM and the MATLAB files of the LSOKL benchmark (CSV
files: :mod:`okoco.datasets.csv_file`).

Files are read completely on load (so every error is reported at once, with its line number) and
may be compressed (``.gz``, ``.bz2``, ``.xz``, by file suffix).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
from pathlib import Path
from typing import Any

import numpy as np

from okoco.datasets.base import TASKS, Dataset, infer_task, tidy_labels

__all__ = ["load_svmlight", "load_mat", "open_text"]

def open_text(path: str | os.PathLike) -> io.TextIOBase:
    """Open a text file for reading, decompressing ``.gz``, ``.bz2`` and ``.xz`` by suffix.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(p, "w").write("hello")
    >>> with open_text(p) as f:
    ...     f.read()
    'hello'
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(path.suffix.lower())
    if opener is not None:
        return opener(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def load_svmlight(path: str | os.PathLike, *, n_features: int | None = None,
                  zero_based: bool | str = "auto", task: str | None = None,
                  name: str | None = None) -> Dataset:
    """Read an svmlight / LIBSVM file (``label index:value ...``) as a sparse dataset.

    Iteration yields, for each line, a dict holding only the features written on that line
    (keyed by their index as written, e.g. ``"3"``); ``to_arrays()`` gives the dense matrix with
    zeros elsewhere. ``qid:`` tokens and ``#`` comments are ignored.

    Parameters
    ----------
    n_features
        Number of columns (default: the largest index seen). Needed when the last features
        never appear in a file.
    zero_based
        Whether indices start at 0. ``"auto"`` (as scikit-learn): 0-based if an index 0 occurs.
    task
        Task, inferred from the labels when ``None`` (two values: ``"binary"``).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.svm")
    >>> _ = open(p, "w").write("+1 1:0.5 3:2\\n-1 2:1\\n")
    >>> ds = load_svmlight(p)
    >>> ds, list(ds)
    (Dataset(name='a.svm', n=2, d=3, task='binary'), [({'1': 0.5, '3': 2.0}, 1), ({'2': 1.0}, -1)])
    """
    import scipy.sparse as sp

    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS} or None, got {task!r}")
    where = str(path)
    labels: list[float] = []
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    with open_text(path) as f:
        for ln, line in enumerate(f, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            tokens = line.split()
            try:
                label = float(tokens[0])
            except ValueError:
                raise ValueError(
                    f"{where}, line {ln}: bad label {tokens[0]!r} (multi-label files are not "
                    "supported)"
                ) from None
            if not np.isfinite(label):
                raise ValueError(f"{where}, line {ln}: non-finite label {tokens[0]!r}")
            pairs = []
            for tok in tokens[1:]:
                key, sep, val = tok.partition(":")
                if key == "qid":
                    continue
                try:
                    if not sep:
                        raise ValueError
                    j, v = int(key), float(val)
                except ValueError:
                    raise ValueError(
                        f"{where}, line {ln}: bad feature {tok!r} (expected index:value)"
                    ) from None
                if j < 0 or not np.isfinite(v):
                    raise ValueError(f"{where}, line {ln}: bad feature {tok!r}")
                pairs.append((j, v))
            pairs.sort()
            for (a, _), (b, _) in zip(pairs, pairs[1:]):
                if a == b:
                    raise ValueError(f"{where}, line {ln}: feature index {a} appears twice")
            labels.append(label)
            indices.extend(j for j, _ in pairs)
            data.extend(v for _, v in pairs)
            indptr.append(len(indices))
    if not labels:
        raise ValueError(f"{where}: the file holds no data")
    idx = np.asarray(indices, dtype=np.int64)
    if zero_based == "auto":
        zero_based = bool(idx.size and idx.min() == 0)
    if not zero_based:
        if idx.size and idx.min() == 0:
            raise ValueError(f"{where}: index 0 in a file read as 1-based")
        idx = idx - 1
    d_seen = int(idx.max()) + 1 if idx.size else 0
    d = d_seen if n_features is None else int(n_features)
    if d < d_seen:
        raise ValueError(f"{where}: n_features={d} but the file has feature index {d_seen}")
    X = sp.csr_matrix((np.asarray(data, dtype=np.float64), idx, np.asarray(indptr)),
                      shape=(len(labels), d))
    y = np.asarray(labels, dtype=np.float64)
    task = task or infer_task(y)
    offset = 0 if zero_based else 1
    return Dataset(name or Path(path).name, task, X=X, y=tidy_labels(y, task),
                   feature_names=[str(j + offset) for j in range(d)],
                   description=f"svmlight file {where}", info={"path": where})


def load_mat(path: str | os.PathLike, permutation: int | None = None, *,
             standardize: bool = False, name: str | None = None) -> Dataset:
    """Read a dataset of the LSOKL MATLAB benchmark (Lu et al., JMLR 2016), e.g. german, housing.

    The file holds ``data`` (n x (d+1), label in column 0) and ``ID_all`` or ``ID_list``
    (P x n, each row a 1-based permutation of the rows). The protocol runs the learner once per
    permutation and reports mean ± std. Labels in {-1, +1} make a ``"binary"`` task, others
    ``"regression"``.

    Parameters
    ----------
    permutation
        Row ``k`` (0-based, ``0 <= k < P``) of the stored permutations gives the sample order;
        ``None`` keeps the file order.
    standardize
        z-score each feature over the whole file (population std; constant columns are left
        centred). The README asks for it on german, whose raw features are integers 0-184.

    Examples
    --------
    >>> import tempfile, os, numpy as np, scipy.io
    >>> p = os.path.join(tempfile.mkdtemp(), "toy.mat")
    >>> scipy.io.savemat(p, {"data": np.array([[1, 5.0], [-1, 6.0], [1, 7.0]]),
    ...                      "ID_all": np.array([[3, 1, 2], [1, 2, 3]])})
    >>> ds = load_mat(p, permutation=0)
    >>> ds, list(ds)[0], ds.info["n_permutations"]
    (Dataset(name='toy', n=3, d=1, task='binary'), ({'x0': 7.0}, 1), 2)
    """
    from scipy.io import loadmat

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    m = loadmat(path)
    if "data" not in m:
        found = sorted(k for k in m if not k.startswith("_"))
        raise ValueError(f"{path}: no 'data' variable (found {found})")
    data = np.asarray(m["data"], dtype=np.float64)
    if data.ndim != 2 or data.shape[1] < 2:
        raise ValueError(f"{path}: 'data' must be n x (d+1), got shape {data.shape}")
    n = data.shape[0]
    ids = next((m[k] for k in ("ID_all", "ID_list") if k in m), None)
    info: dict[str, Any] = {"path": str(path), "n_permutations": 0}
    if ids is not None:
        ids = np.asarray(ids, dtype=np.int64)
        info["n_permutations"] = int(ids.shape[0])
    if "options" in m:
        opts = m["options"]
        for field in opts.dtype.names or ():
            try:
                info[field] = float(np.asarray(opts[field][0, 0]).ravel()[0])
            except (TypeError, ValueError, IndexError):
                pass
    order = np.arange(n)
    if permutation is not None:
        if ids is None:
            raise ValueError(f"{path}: the file stores no permutations (ID_all / ID_list)")
        k = int(permutation)
        if not 0 <= k < ids.shape[0]:
            raise ValueError(
                f"permutation must be in 0..{ids.shape[0] - 1} for {path.name}, got {permutation}"
            )
        order = ids[k] - 1
        if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
            raise ValueError(f"{path}: row {k} of the permutations is not a permutation of 1..{n}")
    info["permutation"] = permutation
    X, y = data[order, 1:], data[order, 0]
    if standardize:
        std = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    task = "binary" if set(np.unique(y).tolist()) <= {-1.0, 1.0} else "regression"
    return Dataset(name or path.stem, task, X=X, y=tidy_labels(y, task),
                   description=f"LSOKL MATLAB file {path}", info=info)


def looks_like_svmlight(path: str | os.PathLike) -> bool:
    """Whether the first data line of a file looks like ``label index:value ...``.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(p, "w").write("# comment\\n1 1:2.0\\n")
    >>> looks_like_svmlight(p)
    True
    """
    with open_text(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                tokens = line.split()
                if len(tokens) == 1 and "," not in line:
                    continue  # a label-only svmlight line or a one-column file: look further
                return len(tokens) > 1 and all(":" in tok for tok in tokens[1:])
    return False
