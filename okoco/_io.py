"""Shared file helpers: atomic writes that honour the umask, and JSON-ready values.

This is the ground floor of okoco (it imports nothing of okoco): the results, plots, saved
models, checkpoints, the command line and the Dask grids all write their files through
:func:`atomic_write` and turn their values into JSON through :func:`to_json_ready`.
"""

from __future__ import annotations

import math
import os
import tempfile
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

    An interrupted or failed ``write`` leaves any previous file untouched and no partial file.
    The file gets the permissions an ordinary ``open(path, "w")`` would give it (``0o666`` less
    the process umask), not the owner-only ``0o600`` of the temporary file.

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
        ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> _ = atomic_write(p, lambda f: f.write("hello"))
    >>> open(p).read(), os.listdir(os.path.dirname(p))
    ('hello', ['out.txt'])
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: no such directory {str(folder)!r}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
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
    return path


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
