"""Shared file helpers: atomic writes that honour the umask, and JSON-ready values.

This is the ground floor of okoco (it imports nothing of okoco): the results, plots, saved
models, checkpoints, the command line and the Dask grids all write their files through
:func:`atomic_write` and turn their values into JSON through :func:`to_json_ready`.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_write", "to_json_ready"]


def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once (two system calls).
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], *,
                 binary: bool = False) -> Path:
    """Write a file through a temporary file in the same folder, renamed into place at the end.

    An interrupted or failed ``write`` leaves any previous file untouched and no partial file;
    the temporary file a killed process left behind is removed by the next write to the same
    place. A new file gets the permissions an ordinary ``open(path, "w")`` would give it
    (``0o666`` less the process umask), not the owner-only ``0o600`` of the temporary file; an
    existing file keeps its own, and one that is read-only (no owner write bit) is not replaced
    (``PermissionError``). A symbolic link is written through: its target is replaced and the
    link stays.

    Parameters
    ----------
    path
        The destination.
    write
        Called with the open temporary file (text, UTF-8, or binary if ``binary``).
    binary
        Open the temporary file in binary mode.

    Returns
    -------
    pathlib.Path
        ``path``, as given.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> _ = atomic_write(p, lambda f: f.write("hello"))
    >>> open(p).read(), os.listdir(os.path.dirname(p))
    ('hello', ['out.txt'])
    """
    path = Path(path)
    given = path
    if path.is_symlink():  # write through the link (deliberately): the link stays a link
        path = Path(os.path.realpath(path))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: no such directory {str(folder)!r}")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    else:
        if not mode & stat.S_IWUSR:
            raise PermissionError(f"cannot write {str(given)!r}: the file is read-only (mode "
                                  f"{mode:04o}); make it writable or save elsewhere")
    _remove_orphans(folder, path.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, mode)
        mode = "wb" if binary else "w"
        kwargs = {} if binary else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, mode, **kwargs) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return given


def _remove_orphans(folder: Path, name: str) -> None:
    """Remove the temporary files that interrupted writes of ``name`` left in ``folder``.

    A temporary file carries the writer's process id (``.name.PID.XXXXXXXX.tmp``); it is an
    orphan when that process is gone. Files of the older pattern without an id
    (``.name.XXXXXXXX.tmp``) are orphans once a minute old. A write still running in another
    process keeps its file.
    """
    prefix = f".{name}."
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(".tmp")):
            continue
        middle = entry[len(prefix):-4].split(".")
        if len(middle) == 2 and middle[0].isdigit():
            if _alive(int(middle[0])):
                continue
        elif len(middle) == 1 and len(middle[0]) == 8:
            try:
                if time.time() - os.stat(folder / entry).st_mtime < 60:
                    continue
            except OSError:
                continue
        else:
            continue
        with contextlib.suppress(OSError):
            os.unlink(folder / entry)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process may be writing
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def to_json_ready(obj: Any) -> Any:
    """``obj`` with mappings, sequences and numpy scalars made JSON-ready; NaN and inf become
    ``None``, keys strings, and anything else its ``repr``.

    Examples
    --------
    >>> import numpy as np
    >>> to_json_ready({"a": np.float64("nan"), 1: (np.int64(2), "x"), "f": len})
    {'a': None, '1': [2, 'x'], 'f': '<built-in function len>'}
    """
    if isinstance(obj, Mapping):
        return {str(k): to_json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json_ready(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)
