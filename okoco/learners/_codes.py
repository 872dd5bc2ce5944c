"""What okoco's compiled steps (``okoco._core._steps``) know of a learner's kernel and loss,
and the array layout its loops take (re-exported by ``okoco.learners.base``)."""

from __future__ import annotations

import numpy as np

from okoco import kernels as _kernels


def compiled_kernel(kernel) -> tuple | None:
    """The compiled steps' description of ``kernel`` (``okoco._core._kernels.make_kernel``'s
    tuple), or ``None`` if it has none: a kernel whose own class declares a ``code`` (a
    subclass, a user's kernel, a normalized one or a sum takes the Python path, with the same
    results)."""
    code = vars(type(kernel)).get("_code")
    if code is None or getattr(kernel, "normalize", False):
        return None
    return (code, bool(kernel.bounded), float(getattr(kernel, "gamma", 1.0)),
            float(getattr(kernel, "coef0", 0.0)), float(getattr(kernel, "degree", 1)),
            _kernels._NEAR_FACTOR, _kernels._DIRECT_SIZE)


def widened(V: np.ndarray, width: int) -> np.ndarray:
    """The rows of ``V`` over ``width`` columns (zeros after its own), C-contiguous."""
    if V.shape[1] == width:
        return np.ascontiguousarray(V)
    out = np.zeros((V.shape[0], width))
    out[:, : V.shape[1]] = V
    return out


def compiled_loss(loss) -> int | None:
    """The compiled steps' code of ``loss`` (its member of ``okoco._core._loss.LossCode``), or
    ``None`` if its own class declares none (a subclass, a user's loss)."""
    return vars(type(loss)).get("_code")
