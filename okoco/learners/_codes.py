"""What okoco's compiled steps (``okoco._core._steps``) know of a learner's kernel and loss,
and the array layout its loops take (re-exported by ``okoco.learners.base``)."""

from __future__ import annotations

import numpy as np

from okoco import kernels as _kernels
from okoco import losses as _losses

# The kernels and losses okoco's compiled steps know (okoco._core._steps codes them by these
# numbers); a learner with another kernel or loss (a user's, a normalized one, a sum) takes the
# Python path, with the same results.
_KERNEL_CODES = {_kernels.RBF: 0, _kernels.Laplacian: 1, _kernels.Linear: 2,
                 _kernels.Polynomial: 3}
_LOSS_CODES = {cls: cls._code for cls in (_losses.Squared, _losses.Logistic, _losses.SquaredHinge)}


def compiled_kernel(kernel) -> tuple | None:
    """The compiled steps' description of ``kernel``, or ``None`` if it has none."""
    code = _KERNEL_CODES.get(type(kernel))
    if code is None or getattr(kernel, "normalize", False):
        return None
    return (code, float(getattr(kernel, "gamma", 1.0)), float(getattr(kernel, "coef0", 0.0)),
            float(getattr(kernel, "degree", 1)), _kernels._NEAR_FACTOR, _kernels._DIRECT_SIZE)


def widened(V: np.ndarray, width: int) -> np.ndarray:
    """The rows of ``V`` over ``width`` columns (zeros after its own), C-contiguous."""
    if V.shape[1] == width:
        return np.ascontiguousarray(V)
    out = np.zeros((V.shape[0], width))
    out[:, : V.shape[1]] = V
    return out


def compiled_loss(loss) -> int | None:
    """The compiled steps' code of ``loss``, or ``None`` if it has none."""
    return _LOSS_CODES.get(type(loss))
