r"""K one-vs-rest squared-loss KONS learners that share one preconditioner: the multiclass core.

With the squared loss and the curvature step (``eta="hessian"``, KONS's default) the weight of
every step is :math:`w_t = \ell''(\hat y_t) = 2` whatever the target, so :math:`d_t =
\sqrt 2` for every class and every class's preconditioner :math:`\bar K_I + \alpha I = 2 K_W +
\alpha I` over the stored points is the same matrix. One :class:`~okoco.linalg.SlotInverse`
(one solve :math:`h = P e`, one append and one removal per step, ``O(m^2)``) then serves all
``K`` classes; each class keeps only its coefficients :math:`c` and running :math:`K c`, one
column each of two ``(m, K + 1)`` matrices, ``O(m K)`` per step in a few BLAS calls:

.. code-block:: text

    k = K(x_i, x) over the slots,  e = d * k,  h = P e,  s = kappa - h . e       (shared)
    ybar = (k^T C - (d h)^T KC) / alpha                                  (one row of K + 1)
    yhat = clip(ybar, -C, C);  c_t = 2 yhat - 2 (yhat - y) - alpha h(ybar) / s   (per class)
    KC += k c_t^T;  store x with c_t and KC_t = k^T C + kappa c_t;  border P with sqrt(2) h

which is, column by column, the arithmetic of :class:`~okoco.learners.KONS`'s windowed step
(``okoco._core._kons``: analysis, check, apply, forget): the clipped projection's shift stays
each class's own. Each phase is one compiled call (``okoco._core._multiclass``) on the kernel
row the learner computes; Python keeps the store, the room the buffers need and the wording of
a refused step. The unbounded learner (``max_size=None``) keeps the same inverse form (an
inverse that only grows) where a standalone KONS keeps a Cholesky factor: the same predictions to
rounding (tested to 1e-8), with the window's conditioning caveat (KONS's ``max_size``).

**A class first seen at sample t** starts with zero coefficients (and zero ``K c``) on the
points stored before it: it is exactly the KONS that learned the target ``0`` on the samples
before its first one (with ``y = 0`` such a KONS predicts 0, so its ``c_t`` is 0, step after
step), and ``+1``/``-1`` from then on. The other exact choice, the target ``-1`` on those
samples (the one-vs-rest targets of a learner that knew every class from the start: column 0
learns ``-1`` on every sample, and a new class would start as its copy), was less accurate:
mean test-then-train accuracy over five orders of each stream 0.9401 against 0.9311 on wine and
0.9524 against 0.9503 on digits (9 of 10 orders better or equal), and 0.9194 against 0.9177 on
ImageSegments (``benchmarks/bench_multiclass.py`` at commit 2fefa42, rows "new class starts at
-1"). Column 0 is kept (one column, ``O(m)`` a step).
"""

from __future__ import annotations

import math

import numpy as np

from okoco._blas import all_one_thread, scipy_one_thread
from okoco._core import _multiclass
from okoco.kernels import RBF, self_similarity
from okoco.learners._codes import compiled_kernel
from okoco.learners._protocol import Memo, StepProtocol
from okoco.learners._rebuilt import window_matrix
from okoco.learners.base import overflow_message
from okoco.learners.kons import (
    _MAX_D,
    _MIN_RIDGE_RATIO,
    _MIN_S,
    _S_RTOL,
    singular_message,
)
from okoco.linalg import Rows, SlotInverse

__all__ = ["SharedSquaredKONS"]

_WEIGHT = 2.0  # the squared loss's second derivative: every step's w_t, every class's
_D = math.sqrt(_WEIGHT)
_GUARDS = (_MIN_S, _S_RTOL, _MIN_RIDGE_RATIO, _MAX_D)  # KONS's numerical guards


def _grown(a: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows, a.shape[1]))
    out[: a.shape[0]] = a
    return out


class SharedSquaredKONS(Memo, StepProtocol):
    r"""The scores of ``K`` one-vs-rest squared-loss KONS learners over one store of points and
    one preconditioner (see the module's docstring).

    Parameters
    ----------
    kernel, C, alpha, max_size
        As :class:`~okoco.learners.KONS` (``kernel=None``: ``RBF(1/d)`` fixed at the first
        learn); the loss is the squared loss and the step the curvature step.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.learners._multiclass_shared import SharedSquaredKONS
    >>> shared = SharedSquaredKONS(kernel=None, C=3.0, alpha=0.1, max_size=5)
    >>> shared.add_class(); shared.add_class()
    >>> for i in range(8):
    ...     shared.learn(np.array([i / 8, 1.0 - i / 8]), i % 2)
    >>> shared.n_classes, shared.dictionary_size, shared.scores(np.array([0.5, 0.5])).shape
    (2, 5, (2,))
    """

    _saved_state = {"kernel": "kernel|none", "C": "number|none", "alpha": "number",
                    "max_size": "int[1,]|none", "n_seen": "int[0,]",
                    "points": "obj:Rows,ExpertRows", "inverse": "obj:SlotInverse",
                    "coef": "array(>=points.n, *) float64",
                    "Kc": "array(>=points.n, *) float64", "_cache": "cache:None"}

    eta = "hessian"  # the curvature step, always (as KONS names it)

    # What a model file leaves out and a load rebuilds (:meth:`_rebuild`): the shared
    # inverse's P and pending terms (its diagonal stays).
    _rebuilt_parts = {"inverse": None}

    def _rebuild(self, charge) -> None:
        r"""After a load, the shared inverse :math:`(2 K_W + \alpha I)^{-1}` over the points
        held now (``okoco.linalg.SlotInverse.rebuild``, :math:`O(m^2 d + m^3)`)."""
        inverse = self.inverse
        if inverse.P is not None:  # (a file that holds it: used as saved)
            return
        with all_one_thread:
            inverse.rebuild(lambda own: window_matrix(self.kernel, self.points, _D, inverse, own),
                            self.points.size, charge)

    def __init__(self, kernel=None, C: float | None = 3.0, alpha: float = 0.1,
                 max_size: int | None = 500):
        self.kernel = kernel
        self.C = C
        self.alpha = alpha
        self.max_size = max_size
        self.n_seen = 0
        # a window of W points is a ring of W + 1 slots, as in KONS: the new point takes the
        # slot the oldest left at the previous step
        ring = None if max_size is None else max_size + 1
        self.points = Rows(fields=("d",), max_size=ring)
        self.inverse = SlotInverse(ring)
        self.coef = np.zeros((0, 1))  # (slots, 1 + classes): column 0 is the unseen class
        self.Kc = np.zeros((0, 1))  # running K c of each column
        self._cache = None

    @property
    def n_classes(self) -> int:
        return self.coef.shape[1] - 1

    @property
    def dictionary_size(self) -> int:
        return self.inverse.size

    # What a class first seen at sample t has learned on the samples before it: "zero" (the
    # target 0: zero coefficients) or "rest" (the target -1: a copy of column 0); chosen by
    # measurement (see the module's docstring)
    _start = "zero"

    def add_class(self) -> None:
        """A new class, with zero coefficients (it learned 0 on every sample so far)."""
        start = self.coef[:, :1] if self._start == "rest" else np.zeros((self.coef.shape[0], 1))
        self.coef = np.hstack([self.coef, start])
        start = self.Kc[:, :1] if self._start == "rest" else np.zeros((self.Kc.shape[0], 1))
        self.Kc = np.hstack([self.Kc, start])
        self._cache = None  # its scores have one column less

    def drop_class(self) -> None:
        """Undo :meth:`add_class` (its first step was refused)."""
        self.coef = np.ascontiguousarray(self.coef[:, :-1])
        self.Kc = np.ascontiguousarray(self.Kc[:, :-1])
        self._cache = None

    # -- the core -------------------------------------------------------------------------

    def _kernel_at(self, v: np.ndarray):
        """The kernel (``None``: ``RBF(1/d)`` of the row ``v``, fixed at the first step)."""
        return self.kernel if self.kernel is not None else RBF(1.0 / max(v.shape[0], 1))

    def _analyse(self, v: np.ndarray):
        """:meth:`analyse`, kept for the current state, so that a step after a prediction on
        the same row reuses it. Callers run it in a one-thread BLAS scope."""
        return self._memoised(self.n_seen, v, self.analyse)

    def analyse(self, v: np.ndarray, shared=None):
        """The step protocol's analysis (``okoco.learners.base.StepProtocol``; no change): the
        kernel row over the stored points (``shared``'s, ``okoco.learners.shared.StepShared``,
        over points shared with other experts: ``points`` an ``ExpertRows``), the shared solve
        and every column's unclipped score, the record ``okoco._core._multiclass.Analysis``."""
        kernel = self._kernel_at(v)
        if shared is not None and type(self.points) is not Rows:  # points shared: its row
            k, kappa = shared.kernel_row(kernel), shared.kappa(kernel)
        else:
            k, kappa = self.points.kernel_row(kernel, v), self_similarity(kernel, v)
        return _multiclass.analyse(self, kernel, np.ascontiguousarray(k, dtype=float), kappa)

    def scores(self, v: np.ndarray) -> np.ndarray:
        """Every seen class's clipped score at ``v``, in the order the classes were added."""
        with scipy_one_thread:  # the window's products on one thread (okoco._blas)
            return self.scores_of(self._analyse(v))

    def scores_of(self, analysis) -> np.ndarray:
        """The clipped scores of the seen classes from an analysis."""
        ybar = analysis.ybar[1:]
        return ybar if self.C is None else np.clip(ybar, -self.C, self.C)

    def learn(self, v: np.ndarray, label: int) -> None:
        """One KONS step of every column: target +1 for column ``label + 1``, -1 for the others
        (column 0 included), by the step protocol's phases. Checked before any state changes:
        a refused step changes nothing."""
        with scipy_one_thread:
            analysis = self._analyse(v)
            self.apply(v, analysis, self.check(label, analysis))
            self.forget()

    def check(self, y: int, analysis):
        """The step protocol's check (no change) at the label ``y`` (the class's index): the
        record ``okoco._core._multiclass.Step``, or a ``ValueError`` if the step must be
        refused (``okoco._core._multiclass.check``)."""
        step = _multiclass.check(self, analysis, y, _GUARDS)
        if type(step) is _multiclass.Step:
            return step
        kernel, kappa = analysis.kernel, analysis.kappa
        if step == _multiclass.STATUS_OVERFLOW:
            bad = analysis.ybar[~np.isfinite(analysis.ybar)]
            raise ValueError(overflow_message(kernel, float(bad[0]) if bad.size else kappa))
        if step == _multiclass.STATUS_SINGULAR:
            raise ValueError(singular_message(kernel, kappa, self.alpha))
        raise ValueError("a multiclass step overflowed; scale the features "
                         "(e.g. river's StandardScaler)")

    def apply(self, v: np.ndarray, analysis, step) -> None:
        """The step's new point, its columns and the bordering of the inverse (deferred to
        :meth:`forget`; ``okoco._core._multiclass.store``), counted. Over a store shared with
        other learners (``points`` an ``ExpertRows``: ``Auto``'s multiclass experts), the owner
        stores ``v`` itself before :meth:`forget`."""
        points = self.points
        slot = points.append(v, d=_D)
        size = max(points.data.shape[0], slot + 1)  # a shared store holds v only after this
        if self.coef.shape[0] < size:  # as many rows as the store's buffer, no more
            self.coef, self.Kc = _grown(self.coef, size), _grown(self.Kc, size)
        self.inverse.make_room(points.size)
        _multiclass.store(self, analysis, step, slot, points.size)
        if self.kernel is None:
            self.kernel = analysis.kernel  # RBF(1/d) of the first row, fixed from then on
        self.n_seen += 1
        self._cache = None

    def forget(self) -> None:
        """The step protocol's end: once more than ``max_size`` points are stored (the step's
        point included), the oldest leaves the preconditioner
        and every column's running ``K c`` (one kernel row, one rank-one update:
        ``okoco._core._multiclass.forget``)."""
        points, window = self.points, self.max_size
        oldest = points.n_added - 1 - window if window is not None else -1
        if oldest < 0:
            return
        slot = oldest % points.max_size
        row = None
        if _multiclass.nonzero(self, slot):  # its kernel row is needed to take it out of K c
            spec = compiled_kernel(self.kernel)
            if spec is not None:  # over the store's rows (a shared ring's, for Auto's experts)
                rows = points if type(points) is Rows else points.points.rows
                row = _multiclass.oldest_row(spec, rows, slot)
            else:
                row = np.ascontiguousarray(points.kernel_row(
                    self.kernel, points.data[slot, : points.d].copy()), dtype=float)
        _multiclass.forget(self, slot, row)
