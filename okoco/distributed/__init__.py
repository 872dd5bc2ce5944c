"""Scale out on Dask: parallel experiment grids and merge-tree SQUEAK dictionaries.

Online learning is sequential within a stream, so the parallelism is across streams and data:

* :func:`grid` runs learner x parameters x dataset x seed, one :func:`okoco.evaluate.replay`
  per task, serially or on a Dask cluster, and returns a :class:`GridResult` (one record per
  task, in task order; a failing task gives an error record with its parameters while the
  others complete). The same seeds give the same metrics wherever a task runs.
* :func:`merge_tree` partitions a dataset, builds one :class:`~okoco.dictionary.SQUEAK`
  dictionary per partition and merges them pairwise in a tree (:meth:`SQUEAK.merge`, an
  extension of seed 002); :func:`nystrom_krr` fits a :class:`~okoco.dictionary.NystromKRR` on it.

``scheduler`` selects where tasks run: ``None`` or ``"serial"`` (this process, no Dask needed),
``"local"`` (a ``distributed.LocalCluster`` of ``workers`` processes started and stopped for the
call), an address such as ``"tcp://10.0.0.5:8786"`` (an existing scheduler; ``workers`` then
waits for that many workers), or a ``distributed.Client``. Dask is imported only when a cluster
is used: ``pip install okoco[distributed]``. See the user guide page "Scaling out".

Examples
--------
>>> from okoco import distributed
>>> res = distributed.grid(["fgd"], "sinc", params={"eta": [0.1, 0.5]}, seeds=2,
...                        data_params={"n": 50})
>>> len(res.records), [r["status"] for r in res.records]
(4, ['ok', 'ok', 'ok', 'ok'])
>>> res.records[0]["learner"], res.records[0]["params"], res.records[0]["seed"]
('fgd', {'eta': 0.1}, 0)
"""

from okoco.distributed._grid import GridResult, Task, grid
from okoco.distributed.merge import merge_tree, nystrom_krr

__all__ = ["grid", "GridResult", "Task", "merge_tree", "nystrom_krr"]
