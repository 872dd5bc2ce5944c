"""Merge-tree SQUEAK dictionaries: one dictionary per partition, merged pairwise in a tree.

Seed 002 closes with the remark that SQUEAK dictionaries built in parallel on disjoint data can be
merged recursively into a dictionary of the union; the papers give no algorithm, and the spec
(``spec/ink-estimate-squeak.md``, "Distributed variant") sketches the merge rule implemented by
:meth:`okoco.dictionary.SQUEAK.merge`. This module runs it as a Dask task tree::

    X[0:n/4]   X[n/4:n/2]   X[n/2:3n/4]   X[3n/4:n]      partitions (scattered once)
       |           |             |            |
    SQUEAK      SQUEAK        SQUEAK       SQUEAK        one task each, in parallel
        \\         /              \\          /
         merge(0,1)               merge(2,3)             level 1
                  \\              /
                   merge(01, 23)                         level 2: the dictionary of X

Partitions are contiguous blocks in the data's order and every merge joins two adjacent blocks,
left first, so the merged dictionary's ``indices`` are row numbers of ``X``. Seeds come from one
``numpy.random.SeedSequence(seed)`` spawned into one child per partition and per merge, so the
result depends on ``seed`` and ``partitions`` only, not on the scheduler: the serial path and any
cluster build the same dictionary.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from okoco.dictionary import SQUEAK, NystromKRR
from okoco.distributed._cluster import (
    check_scheduler,
    import_distributed,
    one_blas_thread,
    open_client,
)

__all__ = ["merge_tree", "nystrom_krr", "plan"]


def plan(partitions: int) -> list[list[tuple[int, int]]]:
    """The merge tree as levels of ``(left, right)`` positions in the previous level.

    An odd node at the end of a level moves up unchanged.

    Examples
    --------
    >>> plan(5)
    [[(0, 1), (2, 3)], [(0, 1)], [(0, 1)]]
    >>> plan(1)
    []
    """
    levels = []
    n = partitions
    while n > 1:
        levels.append([(i, i + 1) for i in range(0, n - 1, 2)])
        n = (n + 1) // 2
    return levels


def _build(X: np.ndarray, kernel: Any, squeak: dict[str, Any], seed: Any):
    with one_blas_thread():
        dictionary = SQUEAK(kernel, seed=seed, **squeak)
        dictionary.update_many(X)
    return dictionary


def _merge(left: Any, right: Any, seed: Any):
    with one_blas_thread():
        return left.merge(right, seed=seed)


def _as_array(X: Any) -> np.ndarray:
    if hasattr(X, "to_arrays") and hasattr(X, "task"):
        X = X.to_arrays()[0]
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains non-finite values")
    return X


def merge_tree(
    X: Any,
    kernel: Any,
    *,
    partitions: int | None = None,
    alpha: float = 2.0,
    eps: float = 0.5,
    qbar: int = 50,
    rule: str = "min",
    seed: int | None = None,
    scheduler: Any = None,
    workers: int | None = None,
    timeout: float = 10.0,
    timings: dict[str, float] | None = None,
):
    """Build a SQUEAK dictionary of ``X`` from per-partition dictionaries merged in a tree.

    Parameters
    ----------
    X
        Points ``(n, d)`` (an array, a sparse matrix or a :class:`~okoco.datasets.Dataset`).
    kernel
        Kernel object.
    partitions
        Number of contiguous blocks (default: the cluster's worker threads, 1 when serial).
        ``partitions=1`` is plain sequential SQUEAK.
    alpha, eps, qbar, rule
        SQUEAK parameters, shared by every partition and merge.
    seed
        Seed of the whole tree (see the module docstring); same seed and ``partitions``, same
        dictionary wherever it is built.
    scheduler, workers, timeout
        Where to run, as in :func:`okoco.distributed.grid`: ``None``/``"serial"``, ``"local"``,
        an address or a ``distributed.Client``.
    timings
        If a dict is given, it receives ``build_s`` (until the last partition dictionary is
        done), ``merge_s`` (the merges after that) and ``total_s`` (scattering included).

    Returns
    -------
    okoco.dictionary.SQUEAK
        The dictionary of all of ``X``; ``indices`` are row numbers of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> d = merge_tree(X, RBF(gamma=0.5), partitions=3, qbar=20, seed=0)
    >>> d.n_seen, bool(d.size < 300), bool(np.all(np.diff(d.indices) > 0))
    (300, True, True)
    """
    X = _as_array(X)
    SQUEAK(kernel, alpha=alpha, eps=eps, qbar=qbar, rule=rule)  # validate before any work
    if partitions is not None and (isinstance(partitions, bool)
                                   or not isinstance(partitions, (int, np.integer))
                                   or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, got {partitions!r}")
    check_scheduler(scheduler, workers)
    squeak = {"alpha": alpha, "eps": eps, "qbar": qbar, "rule": rule}
    start = time.perf_counter()
    with open_client(scheduler, workers, timeout=timeout) as client:
        if partitions is None:
            partitions = 1 if client is None else max(1, sum(client.nthreads().values()))
        partitions = int(min(partitions, max(X.shape[0], 1)))
        levels = plan(partitions)
        children = np.random.SeedSequence(seed).spawn(partitions + sum(map(len, levels)))
        leaf_seeds, merge_seeds = children[:partitions], iter(children[partitions:])
        blocks = np.array_split(X, partitions)
        if client is None:
            nodes = [_build(b, kernel, squeak, s) for b, s in zip(blocks, leaf_seeds)]
            built = time.perf_counter()
            for level in levels:
                nodes = _merge_level(nodes, level, lambda a, b, s: _merge(a, b, s), merge_seeds)
            result = nodes[0]
        else:
            distributed = import_distributed()
            parts = client.scatter(blocks, hash=False)
            nodes = [client.submit(_build, p, kernel, squeak, s, pure=False)
                     for p, s in zip(parts, leaf_seeds)]
            distributed.wait(nodes)
            built = time.perf_counter()
            for level in levels:
                nodes = _merge_level(nodes, level,
                                     lambda a, b, s: client.submit(_merge, a, b, s, pure=False),
                                     merge_seeds)
            result = nodes[0].result()
            del parts, nodes  # dropping the futures releases the partitions on the workers
    end = time.perf_counter()
    if timings is not None:
        timings.update(build_s=built - start, merge_s=end - built, total_s=end - start)
    return result


def _merge_level(nodes: list, level: list[tuple[int, int]], merge, seeds) -> list:
    out = [merge(nodes[a], nodes[b], next(seeds)) for a, b in level]
    if len(nodes) % 2:
        out.append(nodes[-1])
    return out


def nystrom_krr(
    X: Any,
    y: Any,
    kernel: Any,
    *,
    alpha: float = 1.0,
    partitions: int | None = None,
    dictionary_alpha: float = 2.0,
    eps: float = 0.5,
    qbar: int = 50,
    seed: int | None = None,
    scheduler: Any = None,
    workers: int | None = None,
    timeout: float = 10.0,
):
    """Nyström kernel ridge regression on a merge-tree SQUEAK dictionary of ``X``.

    The dictionary is built by :func:`merge_tree` (on the cluster); the regression itself,
    ``O(n m^2 + m^3)`` for ``m`` atoms, is fitted here by
    :class:`~okoco.dictionary.NystromKRR` with the dictionary's atoms and weights.

    Parameters
    ----------
    X, y
        Training points ``(n, d)`` and targets ``(n,)`` (or ``(n, k)``).
    kernel
        Kernel object.
    alpha
        The regression's ridge ``> 0``.
    partitions, eps, qbar, seed, scheduler, workers, timeout
        As :func:`merge_tree`.
    dictionary_alpha
        The dictionary's ridge ``> 0`` (SQUEAK's ``alpha``, passed to :func:`merge_tree`).

    Returns
    -------
    okoco.dictionary.NystromKRR
        The fitted model; its ``dictionary_`` attribute is the merged dictionary.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(400, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=400)
    >>> model = nystrom_krr(X, y, RBF(gamma=0.5), alpha=0.1, partitions=4, qbar=10, seed=0)
    >>> bool(np.mean((model.predict(X) - np.sin(X[:, 0])) ** 2) < 0.01)
    True
    """
    X = _as_array(X)
    dictionary = merge_tree(X, kernel, partitions=partitions, alpha=dictionary_alpha, eps=eps,
                            qbar=qbar, seed=seed, scheduler=scheduler, workers=workers,
                            timeout=timeout)
    model = NystromKRR.from_dictionary(dictionary, alpha=alpha).fit(X, y)
    model.dictionary_ = dictionary
    return model
