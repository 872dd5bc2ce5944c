"""Datasets for online learning: built-in, synthetic, files and cached benchmarks.

Every source gives a :class:`Dataset`: ``name``, ``n``, ``d``, ``task`` (``"regression"``,
``"binary"`` or ``"multiclass"``), iteration as ``(dict, target)`` pairs with float features,
and ``to_arrays() -> (X, y, feature_names)``; the two views agree exactly.

* :func:`load` takes a registry name (see :func:`available`) or a file path
  (``.csv``/``.tsv``, svmlight/LIBSVM ``.svm``/``.svmlight``/``.libsvm``/``.txt``, ``.mat``,
  optionally ``.gz``/``.bz2``/``.xz``), with keyword arguments passed on to the loader.
* Built-in: river's bundled datasets and scikit-learn's (:mod:`okoco.datasets.river_sk`).
* Synthetic, reproducible by ``seed`` (:mod:`okoco.datasets.synthetic`).
* Files: :func:`load_csv` (:mod:`okoco.datasets.csv_file`), :func:`load_svmlight` and
  :func:`load_mat` (:mod:`okoco.datasets.files`).
* Benchmarks downloaded once into a cache (:mod:`okoco.datasets.remote`).

Examples
--------
>>> from okoco import datasets
>>> ds = datasets.load("sinc", n=100, seed=1)
>>> ds
Dataset(name='sinc', n=100, d=1, task='regression')
>>> X, y, names = ds.to_arrays()
>>> X.shape, names
((100, 1), ['x0'])
>>> ("a9a", 32561, 123, "binary") == datasets.available()[-1][:4]
True
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from okoco.datasets import synthetic
from okoco.datasets.base import TASKS, Dataset
from okoco.datasets.csv_file import load_csv
from okoco.datasets.files import load_mat, load_svmlight, looks_like_svmlight
from okoco.datasets.remote import (
    REMOTE,
    ChecksumError,
    DownloadError,
    cache_dir,
    fetch,
    load_remote,
)
from okoco.datasets.river_sk import RIVER, SKLEARN, load_river, load_sklearn

__all__ = [
    "Dataset",
    "DatasetInfo",
    "TASKS",
    "load",
    "available",
    "load_csv",
    "file_loader",
    "load_svmlight",
    "load_mat",
    "load_river",
    "load_sklearn",
    "load_remote",
    "fetch",
    "cache_dir",
    "DownloadError",
    "ChecksumError",
    "synthetic",
]


class DatasetInfo(NamedTuple):
    """One row of :func:`available`.

    Examples
    --------
    >>> from okoco import datasets
    >>> row = next(r for r in datasets.available() if r.name == "bananas")
    >>> row.n, row.d, row.task
    (5300, 2, 'binary')
    """

    name: str
    n: int | None
    d: int | None
    task: str
    description: str


def _synthetic_entries() -> dict[str, tuple[Callable[..., Dataset], int, int, str]]:
    s = synthetic
    return {
        "adversarial": (s.adversarial, 1000, 1,
                        "Calandriello et al. 2017 (KONS): one point, targets alternating ±C"),
        "rkhs": (s.rkhs, 1000, 2, "RBF expansion scaled into [-1, 1] plus noise"),
        "sinc": (s.sinc, 1000, 1, "noisy sin(x)/x, x ~ U[-10, 10]"),
        "friedman": (s.friedman, 1000, 10, "Friedman #1, x ~ U[0, 1]^10"),
        "mackey-glass": (s.mackey_glass, 1000, 7, "Mackey-Glass (tau 30), 7-tap embedding"),
        "bernoulli-kernel": (s.bernoulli_kernel, 500, 1,
                             "El Alaoui & Mahoney 2015: Beta(0.2, 0.2) x, "
                             "sin 2πx + 0.5 cos 6πx + noise"),
        "uniform": (s.uniform, 1000, 1,
                    "Sun et al. 2012 (ALD size): x ~ U[0, 1]^d, y = sinc|x| + noise"),
        "normal": (s.normal, 1000, 1,
                   "Sun et al. 2012 (ALD size): x ~ N(0, I_d), y = sinc|x| + noise"),
        "cauchy": (s.cauchy, 1000, 1,
                   "Sun et al. 2012 (ALD size): standard Cauchy x, y = sinc|x| + noise"),
    }


SYNTHETIC = _synthetic_entries()


def available() -> list[DatasetInfo]:
    """Every dataset :func:`load` knows by name: ``(name, n, d, task, description)`` tuples.

    Synthetic entries show their default ``n`` and ``d`` (both are parameters); the downloaded
    benchmarks show the sizes of the LIBSVM files.

    Examples
    --------
    >>> rows = available()
    >>> [r.name for r in rows][:3]
    ['bananas', 'phishing', 'trump-approval']
    >>> next(r for r in rows if r.name == "diabetes")
    DatasetInfo(name='diabetes', n=442, d=10, task='regression', description='scikit-learn: diabetes progression')
    """  # noqa: E501
    rows = [DatasetInfo(k, n, d, task, desc) for k, (_, n, d, task, desc) in RIVER.items()]
    rows += [DatasetInfo(k, n, d, task, desc) for k, (_, n, d, task, desc) in SKLEARN.items()]
    rows += [DatasetInfo(k, n, d, "regression", desc) for k, (_, n, d, desc) in SYNTHETIC.items()]
    rows += [DatasetInfo(k, s.n, s.d, s.task, s.description) for k, s in REMOTE.items()]
    return rows


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-")


_SVM_SUFFIXES = {".svm", ".svmlight", ".libsvm", ".t"}
_CSV_SUFFIXES = {".csv", ".tsv"}


def load(name_or_path: str | os.PathLike, **kwargs: Any) -> Dataset:
    """Load a dataset by registry name or by file path.

    Parameters
    ----------
    name_or_path
        A name from :func:`available` (case and ``_``/``-`` are ignored), or a path to a CSV,
        svmlight/LIBSVM or LSOKL ``.mat`` file. A registry name wins over a file of that name.
    **kwargs
        Passed to the loader: the generator's parameters for synthetic data (``n``, ``noise``,
        ``seed``, ...), :func:`load_csv` options for CSV (``target="y"``, ``header``,
        ``delimiter``, ``na``, ``non_numeric``, ``task``), :func:`load_svmlight` options,
        :func:`load_mat` options (``permutation``, ``standardize``), or
        :func:`load_remote` options (``data_home``, ``download``, ``verify``, ``sha256``).

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones), or bad content in a file.
    FileNotFoundError
        A path that does not exist.
    DownloadError
        A benchmark that is not cached and cannot be downloaded.

    Examples
    --------
    >>> load("adversarial", n=3, x=[1.0]).take(3)
    [({'x0': 1.0}, 1.0), ({'x0': 1.0}, -1.0), ({'x0': 1.0}, 1.0)]
    >>> load("breast-cancer").task
    'binary'
    """
    if isinstance(name_or_path, str) and _normalise(name_or_path) in _all_names():
        key = _normalise(name_or_path)
        if key in RIVER or key in SKLEARN:
            if kwargs:
                raise TypeError(f"dataset {key!r} takes no parameters, got {sorted(kwargs)}")
            return load_river(key) if key in RIVER else load_sklearn(key)
        if key in SYNTHETIC:
            return _call(SYNTHETIC[key][0], f"dataset {key!r}", kwargs)
        return _call(load_remote, f"dataset {key!r}", kwargs, key)

    path = Path(name_or_path)
    if path.is_dir():
        raise IsADirectoryError(f"{str(name_or_path)!r} is a directory, not a dataset file")
    if not path.is_file():
        looks_like_path = os.sep in str(name_or_path) or path.suffix != ""
        if looks_like_path:
            raise FileNotFoundError(f"no such file: {str(name_or_path)!r}")
        close = difflib.get_close_matches(_normalise(str(name_or_path)), sorted(_all_names()),
                                          n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        raise ValueError(
            f"unknown dataset {str(name_or_path)!r} and no such file; {hint}known datasets: "
            + ", ".join(sorted(_all_names()))
        )
    loader = file_loader(path)
    if loader is load_csv and _kind(path) == ".tsv":
        kwargs.setdefault("delimiter", "\t")
    what = {load_mat: "a .mat file", load_csv: "a CSV file", load_svmlight: "an svmlight file"}
    return _call(loader, what[loader], kwargs, path)


def _kind(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz"):
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def file_loader(path: str | os.PathLike) -> Callable[..., Dataset]:
    """The loader :func:`load` reads an existing file with: :func:`load_mat`,
    :func:`load_svmlight` or :func:`load_csv` (the default), by suffix and content.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.csv")
    >>> _ = open(p, "w").write("a,y\\n1,2\\n")
    >>> file_loader(p).__name__
    'load_csv'
    """
    path = Path(path)
    kind = _kind(path)
    if kind == ".mat":
        return load_mat
    if kind in _CSV_SUFFIXES:
        return load_csv
    if kind in _SVM_SUFFIXES or looks_like_svmlight(path):
        return load_svmlight
    return load_csv


def _call(loader: Callable[..., Dataset], what: str, kwargs: dict[str, Any],
          *args: Any) -> Dataset:
    """``loader(*args, **kwargs)``, with an unknown keyword named in one line (a ``TypeError``).

    Examples
    --------
    >>> load("sinc", nosuch=3)
    Traceback (most recent call last):
    ...
    TypeError: dataset 'sinc' has no parameter 'nosuch'; it takes n, noise, low, high, seed
    """
    params = list(inspect.signature(loader).parameters.values())[len(args):]
    accepted = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in kwargs if k not in accepted]
    if unknown:
        raise TypeError(f"{what} has no parameter {unknown[0]!r}; it takes "
                        f"{', '.join(accepted)}")
    return loader(*args, **kwargs)


def _all_names() -> set[str]:
    return set(RIVER) | set(SKLEARN) | set(SYNTHETIC) | set(REMOTE)
