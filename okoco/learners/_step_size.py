r"""The step size :math:`\eta_t` of the first-order and second-order steps: the ``eta``
parameter's policies (:class:`StepSize`, public and saved as ``okoco.learners.base.StepSize``)
and their constraints."""

from __future__ import annotations

import math
import numbers
from numbers import Real

from okoco._validation import Interval, Options

__all__ = ["StepSize", "ETA", "ETA_HESSIAN"]

#: The ``eta`` parameter's constraints (``ETA_HESSIAN``: where ``"hessian"`` is a policy).
ETA = [Options({"exp-concave", "sqrt"}, "a policy name"),
       Interval(Real, 0, None, closed="neither"), "callable"]
ETA_HESSIAN = [Options({"exp-concave", "hessian", "sqrt"}, "a policy name"), *ETA[1:]]


class StepSize:
    r"""Resolve an ``eta`` parameter into :math:`\eta_t`, ``t = 1, 2, ...``.

    ``"exp-concave"``
        :math:`\eta_t = \sigma`, the loss's curvature on :math:`[-C, C]` (Theorem 1);
    ``"sqrt"``
        :math:`\eta_t = 1/(L C \sqrt t)` with :math:`L` the loss's Lipschitz constant;
    ``"hessian"`` (only where the learner passes ``hessian=True``)
        :math:`\eta_t \dot g_t^2 = \ell''(\hat y_t)`, known only after the prediction: the
        call returns ``None`` and the learner uses ``loss.second_derivative`` as the weight
        :math:`\eta_t \dot g_t^2` itself, so :math:`\dot g_t = 0` needs no division;
    a positive float
        constant;
    a callable
        :math:`\eta_t` = ``eta(t)``, checked to be finite and positive at every step.

    Examples
    --------
    >>> from okoco.losses import Squared
    >>> StepSize("exp-concave", Squared(), C=1.0)(7)
    0.125
    >>> StepSize("sqrt", Squared(), C=1.0)(4)
    0.125
    >>> StepSize("hessian", Squared(), C=1.0, hessian=True)(4) is None
    True
    """

    #: Saved state (okoco.persistence).
    _saved_state = {"eta": "str|number", "decreasing": "bool", "_scale": "opt float as sqrt_scale",
                    "_const": "opt float as constant"}

    def __init__(self, eta, loss, C: float, *, hessian: bool = False):
        self.eta = eta
        self.decreasing = False
        if isinstance(eta, str):
            if eta == "hessian" and hessian:
                if not callable(getattr(loss, "second_derivative", None)):
                    raise TypeError(f"eta='hessian' needs loss.second_derivative: {loss!r}")
            elif eta == "exp-concave":
                sigma = loss.curvature(C, None)
                if not sigma > 0:
                    raise ValueError(
                        f"eta='exp-concave' needs a curved loss, but {loss!r} has sigma = "
                        f"{sigma!r} on [-C, C]; use eta='sqrt' or a number"
                    )
                self._const = float(sigma)
            elif eta == "sqrt":
                self._scale = 1.0 / (loss.lipschitz(C, None) * C)
                self.decreasing = True
            else:
                names = "'exp-concave', 'hessian', 'sqrt'" if hessian else "'exp-concave', 'sqrt'"
                raise ValueError(f"unknown eta policy {eta!r}; use {names}, a number or a callable")
        elif callable(eta):
            self.decreasing = True
        elif isinstance(eta, numbers.Real) and not isinstance(eta, bool):
            if not (math.isfinite(eta) and eta > 0):
                raise ValueError(f"eta must be finite and > 0, got {eta!r}")
            self._const = float(eta)
        else:
            raise TypeError(f"eta must be a policy name, a number or a callable, got {eta!r}")

    def __call__(self, t: int) -> float | None:
        if self.eta == "hessian":
            return None
        if isinstance(self.eta, str):
            return self._const if self.eta == "exp-concave" else self._scale / math.sqrt(t)
        if callable(self.eta):
            value = self.eta(t)
            if not (isinstance(value, numbers.Real) and math.isfinite(value) and value > 0):
                raise ValueError(f"eta({t}) returned {value!r}; it must be finite and > 0")
            return float(value)
        return self._const


StepSize.__module__ = "okoco.learners.base"  # its public path (files name it "StepSize")
