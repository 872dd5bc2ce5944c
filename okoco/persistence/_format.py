"""The file format's names, version and loading bounds, shared by every part."""

from __future__ import annotations

import collections
import functools
import reprlib
from typing import Any

from okoco import kernels, losses
from okoco._version import __version__

FORMAT_NAME = "okoco-model"
CHECKPOINT_FORMAT_NAME = "okoco-replay-checkpoint"
FORMAT_VERSION = 13
SUPPORTED_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)
#: The first version that names fields by their public names (see _migrations).
PUBLIC_NAMES_VERSION = 5
META_KEY = "__okoco__"

#: What loading a file may allocate (its arrays read, padded back to capacity, and its
#: metadata), as a multiple of the file's own size plus ``_BUDGET_SLACK`` bytes. A saved model
#: needs at most ~4x (a packed triangular buffer of capacity ``2m`` restored from ``m`` rows).
MAX_EXPANSION = 8
_BUDGET_SLACK = 8 << 20
#: Bounds on the JSON metadata: nesting depth, containers, and the length of an error message.
_MAX_DEPTH = 40
_MAX_CONTAINERS = 200_000
_MAX_MESSAGE = 600
_MISSING = object()
_NEW_LOCK = object()  # a cache field holding a threading.Lock: a new one on loading

#: The kernels and losses a file may name, by the stable names their classes declare
#: (``okoco.kernels.Kernel``'s and ``okoco.losses.Loss``'s class keyword ``name``).
_KERNELS = kernels._REGISTRY
_LOSSES = losses._REGISTRY
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_FACTORIES = {"float": float, "int": int, "list": list, "dict": dict, "set": set,
              "defaultdict(float)": functools.partial(collections.defaultdict, float)}


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters: messages never echo a file's bulk."""
    text = reprlib.repr(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _version() -> str:
    return __version__
