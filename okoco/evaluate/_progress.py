"""The progress bar of a replay (rich, on stderr, with samples per second)."""

from __future__ import annotations

import time

__all__ = []


class _Progress:
    """A rich progress bar on stderr, with samples per second."""

    def __init__(self, total: int | None, name: str, done: int = 0):
        # deferred: rich is only needed when a bar is shown
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._start, self._done = time.perf_counter(), done
        self._task = self._progress.add_task(name, total=total, rate="", completed=done)
        self._progress.start()

    def update(self, t: int) -> None:
        dt = time.perf_counter() - self._start
        rate = f"{(t - self._done) / dt:,.0f} samples/s" if dt > 0 else ""
        self._progress.update(self._task, completed=t, rate=rate)

    def close(self, t: int) -> None:
        self.update(t)
        self._progress.stop()
