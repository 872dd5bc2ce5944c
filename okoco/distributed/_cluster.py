"""Where tasks run: serially, on a LocalCluster started for the call, or on a scheduler."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

INSTALL_HINT = "okoco.distributed needs Dask for a cluster: pip install okoco[distributed]"


def import_distributed():
    """``distributed``, or an ImportError saying how to install it."""
    try:
        import distributed
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error
    return distributed


def is_serial(scheduler: Any) -> bool:
    return scheduler is None or (isinstance(scheduler, str) and scheduler == "serial")


def check_scheduler(scheduler: Any, workers: int | None) -> None:
    """Validate ``scheduler`` and ``workers`` before anything starts."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if is_serial(scheduler) or scheduler == "local":
        return
    if isinstance(scheduler, str):
        if not scheduler.strip():
            raise ValueError("scheduler must be 'serial', 'local' or an address, got ''")
        return
    if type(scheduler).__name__ != "Client":
        raise TypeError("scheduler must be None, 'serial', 'local', an address or a "
                        f"distributed.Client, got {scheduler!r}")


@contextmanager
def open_client(scheduler: Any, workers: int | None = None, *, n_tasks: int | None = None,
                timeout: float = 10.0) -> Iterator[Any]:
    """Yield a ``distributed.Client`` for ``scheduler`` (``None`` when serial); clean up after.

    ``"local"`` starts a LocalCluster of ``workers`` single-threaded worker processes on the
    loopback interface (default: the number of CPUs, at most ``n_tasks``) and stops it on exit.
    An address connects to that scheduler (``timeout`` seconds to connect and, when ``workers``
    is given, to see that many workers); a Client is used as it is and left open.
    """
    check_scheduler(scheduler, workers)
    if is_serial(scheduler):
        yield None
        return
    distributed = import_distributed()
    if isinstance(scheduler, distributed.Client):
        yield scheduler
        return
    if scheduler == "local":
        n = workers or max(1, min(os.cpu_count() or 1, n_tasks or os.cpu_count() or 1))
        with local_cluster(n) as cluster, distributed.Client(cluster) as client:
            yield client
        return
    try:
        client = distributed.Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as error:
        raise ConnectionError(f"cannot connect to the Dask scheduler at {scheduler!r}: "
                              f"{error}") from None
    try:
        if workers:
            try:
                client.wait_for_workers(workers, timeout=timeout)
            except TimeoutError:
                have = len(client.scheduler_info().get("workers", {}))
                raise ConnectionError(f"the scheduler at {scheduler!r} has {have} workers; "
                                      f"waited {timeout:g} s for {workers}") from None
        yield client
    finally:
        client.close()


def local_cluster(n_workers: int):
    """A LocalCluster of single-threaded worker processes on loopback, without dashboard."""
    distributed = import_distributed()
    with warnings.catch_warnings():
        # Without a dashboard the scheduler still serves a few HTTP routes, on port 8787 if
        # free and on a random port otherwise (another cluster running): nothing to warn about.
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        return distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                        processes=True, host="127.0.0.1",
                                        dashboard_address=None)


def worker_name() -> str:
    """Address of the Dask worker running this code, or ``"local"`` outside a worker."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "local"


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Pin BLAS to one thread (threadpoolctl, when installed) while a task runs.

    A grid's parallelism is across tasks: BLAS threads on top oversubscribe the cores, and a
    thread count that differs between the serial path and the workers could change the last
    bits of a sum. With one thread everywhere, a task gives the same numbers wherever it runs.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn and dev
        yield
        return
    with threadpool_limits(limits=1):
        yield
