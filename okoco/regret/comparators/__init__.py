r"""Offline comparators: the best function in hindsight on a prefix of the stream.

Every comparator follows one protocol: ``fit(X, y) -> self`` and ``predict(X)``, plus the
fitted attributes ``fitted_values_`` (its predictions on the training rows), ``objective_``
(the value of the objective it minimised) and ``rkhs_norm2_`` (:math:`\lVert f\rVert_{\mathcal
H}^2`, ``nan`` when undefined). :class:`~okoco.regret.RegretTracker` refits a comparator on each
prefix :math:`x_1, \dots, x_t` and scores the learner against it.

Objective scaling
-----------------
All kernel comparators minimise, over :math:`f` in the RKHS :math:`\mathcal H` of the kernel,

.. math:: \sum_{t=1}^T \ell(y_t, f(x_t)) + \alpha \lVert f\rVert_{\mathcal H}^2

with the *sum* of the losses (no :math:`1/T`, no :math:`1/2`) and okoco's losses
(``Squared`` is :math:`(y - z)^2`). For the squared loss this is exactly the objective of
``sklearn.kernel_ridge.KernelRidge(alpha=alpha)`` (:math:`\lVert y - K a\rVert^2 + \alpha
a^\top K a`), so the same ``alpha`` gives the same function. :class:`ClippedKernelERM` adds the
paper's constraint :math:`|f(x_t)| \le C` on the training points (the comparator class
:math:`\mathcal S` of Calandriello et al. 2017, Sect. 2).

Long streams
------------
The exact comparators cost :math:`O(T^3)` time and :math:`O(T^2)` memory (a few seconds at
:math:`T = 5{,}000`). :class:`NystromKernelERM` restricts :math:`f` to the span of ``m``
landmarks, :math:`f = \sum_{j} \beta_j k(z_j, \cdot)`, for any loss and with or without the
box, solves an ``m``-dimensional problem in :math:`O(T m^2)` on the Nyström features of
:class:`okoco.dictionary.NystromKRR`, and reports the approximation instead of hiding it:
``residual_trace_`` (:math:`\mathrm{Tr}(K - \widetilde K)/T`, on all rows) and
:meth:`NystromKernelERM.objective_gap` (exact vs. Nyström objective on a subsample). A Nyström
solution is a genuine RKHS function, so its objective is never below the exact comparator's
optimum: regret measured against it is a lower estimate of the regret against the exact one.

Examples
--------
>>> import numpy as np
>>> from okoco import kernels, losses
>>> from okoco.regret import ClippedKernelERM, KernelRidge
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(50, 2)); y = np.sin(3 * X[:, 0])
>>> krr = KernelRidge(kernels.RBF(gamma=2.0), alpha=0.1).fit(X, y)
>>> erm = ClippedKernelERM(kernels.RBF(gamma=2.0), losses.Squared(), C=10.0, alpha=0.1).fit(X, y)
>>> bool(np.allclose(krr.predict(X), erm.predict(X), atol=1e-5))
True
"""

# one name a line, in the order of the API page (mkdocstrings lists them as imported here)
from okoco.regret.comparators._exact import KernelRidge  # noqa: I001
from okoco.regret.comparators._exact import KernelERM
from okoco.regret.comparators._exact import BestConstant
from okoco.regret.comparators._clipped import ClippedKernelERM
from okoco.regret.comparators._nystrom import NystromKernelERM

__all__ = [
    "BestConstant",
    "ClippedKernelERM",
    "KernelERM",
    "KernelRidge",
    "NystromKernelERM",
]

# One module per comparator family (_exact, _clipped, _nystrom, and _common for what they
# share); each class keeps the public path okoco.regret.comparators.NAME, which is also the
# class path its saved state is filed under.
for _cls in (BestConstant, ClippedKernelERM, KernelERM, KernelRidge, NystromKernelERM):
    _cls.__module__ = __name__
del _cls
