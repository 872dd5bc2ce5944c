r"""Convex losses of a scalar prediction, with the constants the regret bounds need.

The loss protocol
-----------------
A loss is any object with these methods (all vectorised over numpy arrays):

``value(y, z)``
    the loss :math:`\ell(z)` of prediction ``z`` for target ``y``;
``derivative(y, z)``
    :math:`\dot g = \partial\ell/\partial z`, the only thing an online learner observes;
``curvature(C, y_max)``
    a :math:`\sigma \ge 0` for which Assumption 2 of Calandriello et al. (2017) holds on
    :math:`[-C, C]`: :math:`\ell(z') \ge \ell(z) + \ell'(z)(z'-z) + \frac\sigma2(\ell'(z)(z'-z))^2`
    for all :math:`z, z' \in [-C, C]` (``0`` is always valid and means "no curvature");
``lipschitz(C, y_max)``
    an :math:`L` with :math:`|\ell'(z)| \le L` for :math:`|z| \le C` (Assumption 1);
``second_derivative(y, z)``
    :math:`\ell''(z)`, needed only by the curvature-exact step ``eta="hessian"`` of KONS and
    Sketched-KONS (where :math:`\ell` is not twice differentiable, a one-sided value);
``exp_concavity(C, y_max)``
    the largest :math:`\eta` for which :math:`e^{-\eta\ell(z)}` is concave on :math:`[-C, C]`,
    i.e. :math:`\min \ell''/\ell'^2` there; needed only by :class:`okoco.learners.Auto`, whose
    weighted average then has regret at most :math:`\log N/\eta` to its best expert.

``y_max`` bounds :math:`|y|`, and may be ``None``, meaning ``C`` (the learners pass ``None``);
classification losses ignore it (labels are :math:`\pm1`).
Optionally a loss may define ``check_target(y)`` that raises ``ValueError`` for a target outside
its domain; learners call it before touching their state.

The constants are those of Calandriello, Lazaric & Valko (2017), "Second-Order Kernel Online
Convex Optimization with Adaptive Sketching", with a corrected squared-hinge curvature for
``C > 1`` (the naive :math:`1/(2(1+C)^2)` is not valid there).

Examples
--------
>>> from okoco import losses
>>> loss = losses.Squared()
>>> float(loss.value(1.0, 0.5)), float(loss.derivative(1.0, 0.5))
(0.25, -1.0)
>>> loss.curvature(C=1.0, y_max=1.0)  # 1 / (8 C^2)
0.125
"""

from __future__ import annotations

import math
from numbers import Real

from okoco._core import _loss
from okoco._registry import Registry
from okoco._validation import Interval, check_param

__all__ = ["Loss", "Squared", "Logistic", "SquaredHinge"]


#: The loss classes by the names they declare (``Loss``'s class keywords): the names okoco files
#: may hold and the command line's names are read from here.
_REGISTRY = Registry("loss")


def _check_C(C: float) -> float:
    return check_param("C", C, [Interval(Real, 0, None, closed="neither")])


class Loss:
    """Base class: a readable ``repr`` and equality by type; see the module docstring.

    A subclass declares its facts once, as keywords of its ``class`` statement:

    - ``name``: the stable name okoco files give it (saved by name, rebuilt by ``cls()``; the
      loss then takes no parameters); without it, a learner holding it cannot be saved;
    - ``cli_name``: its name on the command line (``okoco.experiment.LOSSES``);
    - ``code``: its member of ``okoco._core._loss.LossCode`` (the enum of
      ``okoco/_core/_losses.pxd``), for okoco's built-in losses, which the compiled steps
      evaluate (a subclass inherits the evaluation but not the compiled steps, as it may
      override a method).

    The names hold for exactly the declaring class (a subclass declares its own).

    Examples
    --------
    >>> from okoco import losses
    >>> losses.Squared(), losses.Squared() == losses.Squared()
    (Squared(), True)
    >>> losses.Squared() == losses.Logistic()
    False
    """

    def __init_subclass__(cls, *, name: str | None = None, cli_name: str | None = None,
                          code: int | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY.add(cls, name, cli_name)
        if code is not None:
            cls._code = int(code)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def check_target(self, y: float) -> None:
        """Raise ``ValueError`` if ``y`` is outside the loss's domain (any real by default)."""


class _Compiled(Loss):
    """A built-in loss: its value and derivatives are the compiled core's (``_losses.pxd``,
    their one definition, which okoco's compiled steps use too), on scalars or broadcast
    arrays. A subclass names its member of ``LossCode`` in its class keyword ``code``."""

    _code: int

    def value(self, y, z):
        return _loss.evaluate(self._code, _loss.VALUE, y, z)

    def derivative(self, y, z):
        return _loss.evaluate(self._code, _loss.DERIVATIVE, y, z)

    def second_derivative(self, y, z):
        return _loss.evaluate(self._code, _loss.SECOND_DERIVATIVE, y, z)


class Squared(_Compiled, name="Squared", cli_name="squared", code=_loss.LossCode.SQUARED):
    r"""Squared loss :math:`\ell(z) = (y - z)^2`.

    :math:`\sigma = 1/(2(C+Y)^2)` and :math:`L = 2(C+Y)` for :math:`|y| \le Y`; with
    :math:`Y = C` this is the paper's :math:`\sigma = 1/(8C^2)`, and it is tight.

    Examples
    --------
    >>> from okoco.losses import Squared
    >>> Squared().lipschitz(C=1.0, y_max=1.0)
    4.0
    """

    def curvature(self, C: float, y_max: float | None = None) -> float:
        C = _check_C(C)
        Y = C if y_max is None else float(y_max)
        return 1.0 / (2.0 * (C + Y) * (C + Y))  # a product overflows to inf, ** would raise

    def lipschitz(self, C: float, y_max: float | None = None) -> float:
        C = _check_C(C)
        Y = C if y_max is None else float(y_max)
        return 2.0 * (C + Y)

    def exp_concavity(self, C: float, y_max: float | None = None) -> float:
        r"""With :math:`u = z - y`, :math:`(e^{-\eta u^2})'' = (4\eta^2u^2 - 2\eta)e^{-\eta u^2}
        \le 0` iff :math:`u^2 \le 1/(2\eta)`; :math:`|u| \le C + Y` gives
        :math:`\eta = 1/(2(C+Y)^2)`."""
        return self.curvature(C, y_max)


def _check_label(y) -> None:
    if y not in (-1, 1) or isinstance(y, bool):
        raise ValueError(
            f"this loss needs targets in {{-1, +1}}, got {y!r}; "
            "wrap the learner in okoco.BinaryClassifier to use any two labels"
        )


class Logistic(_Compiled, name="Logistic", cli_name="logistic",
               code=_loss.LossCode.LOGISTIC):
    r"""Logistic loss :math:`\ell(z) = \log(1 + e^{-yz})`, :math:`y \in \{-1, +1\}`.

    :math:`\sigma = e^{-C}` (from :math:`\ell'' \ge e^C/(1+e^C)^2` and
    :math:`|\ell'| \le e^C/(1+e^C)` on :math:`[-C, C]`), :math:`L = e^C/(1+e^C)`.

    Examples
    --------
    >>> from okoco.losses import Logistic
    >>> round(float(Logistic().value(1, 0.0)), 6)  # log 2
    0.693147
    >>> float(Logistic().second_derivative(1, 0.0))  # p (1 - p) at p = 1/2
    0.25
    """

    def curvature(self, C: float, y_max: float | None = None) -> float:
        return math.exp(-_check_C(C))

    def lipschitz(self, C: float, y_max: float | None = None) -> float:
        C = _check_C(C)
        return 1.0 / (1.0 + math.exp(-C))

    def exp_concavity(self, C: float, y_max: float | None = None) -> float:
        r""":math:`\ell''/\ell'^2 = p(1-p)/(1-p)^2 = e^{yz} \ge e^{-C}` with
        :math:`p = \sigma(yz)`, so :math:`\eta = e^{-C}`."""
        return math.exp(-_check_C(C))

    def check_target(self, y) -> None:
        _check_label(y)


class SquaredHinge(_Compiled, name="SquaredHinge", cli_name="squared-hinge",
                   code=_loss.LossCode.SQUARED_HINGE):
    r"""Squared hinge loss :math:`\ell(z) = \max(0, 1 - yz)^2`, :math:`y \in \{-1, +1\}`.

    :math:`\sigma = 1/(2(1+C)^2)` for :math:`C \le 1` and
    :math:`\sigma = (3C-1)/(8C^2(1+C))` for :math:`C > 1` (the best constant of the scalar
    Assumption 2; the naive first form fails for :math:`C > 1`); :math:`L = 2(1+C)`.

    Examples
    --------
    >>> from okoco.losses import SquaredHinge
    >>> SquaredHinge().curvature(C=1.0)
    0.125
    >>> round(SquaredHinge().curvature(C=3.0), 6)  # (3C - 1) / (8 C^2 (1 + C))
    0.027778
    """

    def curvature(self, C: float, y_max: float | None = None) -> float:
        C = _check_C(C)
        if C <= 1.0:
            return 1.0 / (2.0 * (1.0 + C) ** 2)
        return (3.0 * C - 1.0) / (8.0 * C * C * (1.0 + C))

    def lipschitz(self, C: float, y_max: float | None = None) -> float:
        return 2.0 * (1.0 + _check_C(C))

    def exp_concavity(self, C: float, y_max: float | None = None) -> float:
        r"""Inside the margin, with :math:`u = 1 - yz \in (0, 1 + C]`,
        :math:`\ell''/\ell'^2 = 2/(4u^2) \ge 1/(2(1+C)^2)`; on the flat part
        :math:`e^{-\eta\ell} = 1`, and the two pieces meet with slope 0, so
        :math:`\eta = 1/(2(1+C)^2)`."""
        return 1.0 / (2.0 * (1.0 + _check_C(C)) ** 2)

    def check_target(self, y) -> None:
        _check_label(y)
