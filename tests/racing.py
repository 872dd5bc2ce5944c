"""Running test workers on threads that switch as often as the interpreter can."""

from __future__ import annotations

import sys
import threading


def run_threads(work, n: int) -> None:
    """``work(k)`` on ``n`` threads at once (``k = 0 .. n - 1``), the interpreter switching
    threads every microsecond, so that unlocked state gets interleaved; returns once all end."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work, args=(k,)) for k in range(n)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(previous)
