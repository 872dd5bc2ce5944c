"""What every benchmark script shares: the test-then-train loop (:func:`prequential`) of a
learner wrapped as a user runs it (:func:`as_user`), forked runs whose peak memory is their own
(:func:`in_child`), a busy process beside a run (:func:`busy_process`), the machine, its load
and Markdown tables.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from importlib import metadata

# -- memory and forked runs -------------------------------------------------------------------


def status_kb(field: str) -> int | None:
    """A field of ``/proc/self/status`` in KiB (``VmRSS``, ``VmHWM``), ``None`` elsewhere."""
    value = _first_field("/proc/self/status", field + ":")
    return None if value is None else int(value.split()[0])


def reset_peak() -> int | None:
    """Return freed heap to the system, reset the peak resident set to the current one and
    return it (KiB), or ``None`` where the kernel does not allow it."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return status_kb("VmRSS")


def memory_method() -> str | None:
    """``"fork+VmHWM"`` where a run's peak memory can be measured, else ``None``."""
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return None
    if status_kb("VmHWM") is None or not os.access("/proc/self/clear_refs", os.W_OK):
        return None
    return "fork+VmHWM"


def _outcome(fn: Callable[[], dict], caught: type = Exception) -> dict:
    """``fn()``, or ``{"error": traceback}`` if it raised ``caught``."""
    try:
        return fn()
    except caught:
        return {"error": traceback.format_exc(limit=6)}


def in_child(fn: Callable[[], dict], fork: bool = True) -> dict:
    """``fn()`` in a forked child (its result through a pipe), or in-process; a failure is
    returned as ``{"error": traceback}``."""
    if not fork:
        return _outcome(fn)
    import gc

    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    # (any failure of the child, an exit included, is reported to the parent, which carries on)
    proc = ctx.Process(target=lambda: child.send(_outcome(fn, BaseException)))
    gc.freeze()  # the child's collections then neither copy nor walk the parent's heap
    try:
        proc.start()
    finally:
        gc.unfreeze()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = {"error": f"child process died (exit code {proc.exitcode})"}
    proc.join()
    return result


@contextlib.contextmanager
def busy_process():
    """One process spinning on a core for the duration: a laptop or a shared server."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it get scheduled
        yield proc
    finally:
        proc.terminate()
        proc.wait()


# -- test-then-train --------------------------------------------------------------------------


def as_user(factory: Callable, task: str, own_scaling: bool = False, scaler: str = "okoco"):
    """``factory(loss)`` as a user runs it (the README): ``scaler``'s ``StandardScaler`` in front
    (okoco or river); regression targets through ``TargetStandardScaler`` (unless the learner
    scales them itself, ``own_scaling``), binary labels through ``BinaryClassifier``."""
    from okoco import BinaryClassifier, losses
    preprocessing = importlib.import_module(f"{scaler}.preprocessing")
    if task == "regression":
        model = preprocessing.StandardScaler() | factory(None)
        return model if own_scaling else preprocessing.TargetStandardScaler(model)
    return preprocessing.StandardScaler() | BinaryClassifier(factory(losses.Logistic()))


def prequential(model, rows: Iterable, task: str, every: int = 0, window: int = 0) -> dict:
    """Test-then-train over ``rows`` (river's ``progressive_val_score``: a step without a
    prediction is not scored). The error is the MAE (regression) or the error rate; ``us`` and
    ``cpu_us`` are the wall and CPU µs per step. With ``every``, a record every ``every`` steps:
    the µs per step over its last ``window`` steps, the peak RSS (MB) and the error so far."""
    from river import metrics

    metric = metrics.MAE() if task == "regression" else metrics.Accuracy()
    window = window or every
    records, t = [], 0
    perf = time.perf_counter
    start, cpu = perf(), time.process_time()
    window_start = start
    for t, (x, y) in enumerate(rows, start=1):
        y_pred = model.predict_one(x)
        if y_pred is not None:
            metric.update(y, y_pred)
        model.learn_one(x, y)
        if every and t % every == 0:
            now = perf()
            records.append({"t": t, "us": 1e6 * (now - window_start) / window,
                            "rss_mb": (status_kb("VmHWM") or 0) / 1024.0,
                            "error": _error(metric, task), "elapsed": now - start})
        if every and t % every == (every - window) % every:
            window_start = perf()
    seconds = perf() - start
    return {"error": _error(metric, task), "us": 1e6 * seconds / max(t, 1),
            "cpu_us": 1e6 * (time.process_time() - cpu) / max(t, 1), "steps": t,
            "seconds": seconds, "records": records}


def _error(metric, task: str) -> float:
    return float(metric.get() if task == "regression" else 1.0 - metric.get())


# -- the machine ------------------------------------------------------------------------------


def load() -> list[float] | None:
    """The load average (1, 5, 15 min), ``None`` where there is none."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _first_field(path: str, prefix: str) -> str | None:
    """The value of the first line of ``path`` that starts with ``prefix`` (any case)."""
    with contextlib.suppress(OSError):
        with open(path) as f:
            for line in f:
                if line.lower().startswith(prefix.lower()):
                    return line.split(":", 1)[1].strip()
    return None


def git_commit() -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5, cwd=os.path.dirname(__file__)
                              ).stdout.strip() or None
    return None


def machine() -> dict:
    """Platform, CPU, cores, memory, load, BLAS, library versions, commit."""
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: info.get(k) for k in ("internal_api", "version", "num_threads",
                                          "threading_layer", "architecture")}
                for info in threadpool_info()]
    except ImportError:
        blas = []
    memory = _first_field("/proc/meminfo", "MemTotal")
    return {
        "platform": platform.platform(), "python": platform.python_version(),
        "cpu": _first_field("/proc/cpuinfo", "model name") or platform.machine(),
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else None,
        "memory_bytes": 1024 * int(memory.split()[0]) if memory else None,
        "load_average": load(), "blas": blas,
        "versions": {d: next((m.version for m in metadata.distributions(name=d)), None)
                     for d in ("okoco", "numpy", "scipy", "river", "scikit-learn",
                               "vowpalwabbit")},
        "git_commit": git_commit(), "memory_method": memory_method(),
    }


def select(names: list[str], only: list[str]) -> list[str]:
    """The ``names`` that ``only`` asks for (all if it is empty): a full name selects that
    name alone (``KONS()`` is not ``CONKONS()``), a part of names every one it is in.

    >>> select(["KONS()", "CONKONS()"], ["KONS()"]), select(["KONS()", "CONKONS()"], ["KONS"])
    (['KONS()'], ['KONS()', 'CONKONS()'])
    """
    return [n for n in names if not only or any(
        o == n or (o not in names and o in n) for o in only)]


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table, one line each.

    >>> table(["a", "b"], [[1, "x"]])
    ['| a | b |', '|---|---|', '| 1 | x |']
    """
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(map(str, r)) + " |" for r in rows]
