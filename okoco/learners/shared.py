"""The points several KONS experts store, held once, and one expert's values over them.

:class:`SharedPoints` holds the points (a ring of ``max_size`` slots, or unbounded) and computes
each distinct kernel's row once per input; :class:`ExpertRows` is the part of
``okoco.linalg.Rows`` a KONS expert uses, over a :class:`SharedPoints`. ``Auto`` and
``MulticlassClassifier`` share one store among their experts with them, through
:class:`SharesPoints` (KONS's ``share_points``). Both are public as
``okoco.learners.auto.SharedPoints`` and ``okoco.learners.auto.ExpertRows`` (the path okoco
files name them by).
"""

from __future__ import annotations

import numpy as np

from okoco import kernels as _kernels
from okoco._input import reserve
from okoco.kernels import self_similarity
from okoco.linalg import Rows

__all__ = ["SharedPoints", "ExpertRows", "SharesPoints", "StepShared"]

_EMPTY = np.zeros(0)  # the row over no points (read-only)
_EMPTY.flags.writeable = False


class SharedPoints:
    """The points several KONS experts store, held once, and their kernel rows at one input.

    :meth:`kernel_row` returns exactly what ``Rows.kernel_row`` returns for the same points, but
    computes each distinct kernel's row once per input: squared distances are shared by every
    ``RBF``, and a ``Sum``, ``Product`` or ``Scaled`` kernel is built from its parts' rows with
    the same floating-point operations as the kernel's own call (so ``RBF(g) + g * Linear()``
    reuses the row of ``RBF(g)``). Kernels are recognised by identity: the experts should hold
    the same object for the same kernel. Any other kernel (or a normalised one) is called as is.

    With ``max_size`` the points are a ring of that many slots (``okoco.linalg.Rows``): once
    full, each new point overwrites the oldest, and :meth:`next_slot` says which slot the next
    one takes (the experts write their values there first).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF, Linear
    >>> points = SharedPoints()
    >>> points.append(np.array([0.0, 1.0])); points.append(np.array([1.0, 1.0]))
    >>> rbf = RBF(0.5)
    >>> v = np.array([1.0, 0.0])
    >>> np.array_equal(points.kernel_row(rbf + Linear(), v),
    ...                points.rows.kernel_row(rbf + Linear(), v))
    True
    """

    _saved_state = {"rows": "obj:Rows", "_memo": "cache:{}", "_at": "cache:None",
                    "_dists": "cache:None"}

    def __init__(self, max_size: int | None = None):
        self.rows = Rows(max_size=max_size)  # a ring of max_size slots (None: unbounded)
        self._forget()

    def _forget(self) -> None:
        self._memo: dict = {}  # id(kernel) -> its row at the input of self._at (read-only)
        self._at = None  # (n_added, input's key, padded points, padded input) the memo is for
        self._dists = None  # squared distances, shared by every RBF

    def __getstate__(self) -> dict:  # the memo is not state (and its keys are object ids)
        return {"rows": self.rows, "_memo": {}, "_at": None, "_dists": None}

    def append(self, v: np.ndarray) -> None:
        self.rows.append(v)

    def next_slot(self) -> int:
        """The slot the next :meth:`append` writes (the oldest point's, once a ring is full)."""
        rows = self.rows
        if rows.max_size is not None and rows.n == rows.max_size:
            return rows.n_added % rows.max_size
        return rows.n

    def kernel_block(self, kernel, V: np.ndarray) -> np.ndarray:
        return self.rows.kernel_block(kernel, V)

    def kernel_row(self, kernel, v: np.ndarray) -> np.ndarray:
        """``kernel(x_i, v)`` over the stored points (a new array), memoised per input."""
        return self.row_view(kernel, v).copy()

    def kernel_rows(self, kernels, v: np.ndarray) -> list[np.ndarray]:
        """:meth:`kernel_row` of each kernel at ``v``, each distinct kernel's row computed
        once; the rows are read-only views of the memo (no copies)."""
        return [self.row_view(kernel, v) for kernel in kernels]

    def row_view(self, kernel, v: np.ndarray) -> np.ndarray:
        """:meth:`kernel_row` as a read-only view of the memo (no copy): the experts' hot
        path (``StepShared.kernel_row``). The memo is kept while the points and the bytes of
        ``v`` are the same (equal bytes are equal rows; ``-0.0`` against ``0.0`` only computes
        again)."""
        # the input's bytes as float64 (one comparison of bytes: comparing the arrays cost a
        # microsecond a step)
        rows, at, key = self.rows, self._at, np.ascontiguousarray(v, dtype=np.float64).tobytes()
        if at is None or at[0] != rows.n_added or at[1] != key:
            if rows.n == 0:
                return _EMPTY
            self._move_to(v, key)
        row = self._memo.get(id(kernel))  # (the hit without _row's frame)
        return self._row(kernel) if row is None else row

    def _move_to(self, v: np.ndarray, key: bytes) -> None:
        """Point the memo at the input ``v`` (whose bytes as float64 are ``key``)."""
        rows = self.rows
        self._forget()
        width = v.shape[0]  # padded as Rows.kernel_row pads
        Y = np.pad(v, (0, rows.d - width)) if width < rows.d else v.copy()
        self._at = (rows.n_added, key, rows.padded(width), Y[None, :])

    def _row(self, kernel) -> np.ndarray:
        """The kernel's row at the memo's input (read-only), computed once."""
        row = self._memo.get(id(kernel))
        if row is None:
            row = self._compute(kernel)
            if row.ndim == 2:
                row = row[:, 0]
            row.flags.writeable = False  # handed out to several experts
            self._memo[id(kernel)] = row
        return row

    def _compute(self, kernel) -> np.ndarray:
        # The same operations, in the same order, as okoco.kernels' own _gram methods (on the
        # rows, 1-D, or a kernel's own (n, 1) column).
        kind = type(kernel)
        X, Y = self._at[2], self._at[3]
        if getattr(kernel, "normalize", True):
            return kernel(X, Y)
        if kind is _kernels.RBF:
            if self._dists is None:  # from the store's cached norms, as Rows.kernel_row does
                sq, sq_max = self.rows.squared_norms()
                self._dists = _kernels.sq_dist_row(X, sq, sq_max, Y[0])
            row = self._dists * -kernel.gamma
            return np.exp(row, out=row)
        if kind is _kernels.Sum:
            return self._row(kernel.left) + self._row(kernel.right)
        if kind is _kernels.Product:
            return self._row(kernel.left) * self._row(kernel.right)
        if kind is _kernels.Scaled:
            return kernel.scale * self._row(kernel.kernel)
        return kernel(X, Y)


class ExpertRows:
    """One expert's per-point values over points held by a :class:`SharedPoints`.

    The part of ``okoco.linalg.Rows`` that KONS uses (``size``, ``field``, ``append``,
    ``kernel_row``, ``kernel_block``, and the ring's ``data``, ``d``, ``n_added`` and
    ``max_size`` for a windowed expert), without a copy of the points: ``append`` stores the
    values only, at the slot the shared store's next point takes, and the owner appends the
    point to the shared store once every expert has.
    """

    _saved_state = {"points": "obj:SharedPoints", "n": "int[0,]",
                    "fields": "dict[array(>=n) float64]"}

    def __init__(self, points: SharedPoints, fields: tuple[str, ...] = ("d", "c", "Kc", "z")):
        self.points = points
        self.n = 0
        self.fields = {name: np.zeros(16) for name in fields}

    @property
    def size(self) -> int:
        return self.n

    def field(self, name: str) -> np.ndarray:
        return self.fields[name][: self.n]

    def make_room(self) -> None:
        """Room in every field for the slot the shared store's next point takes."""
        slot = self.points.next_slot()
        fields = self.fields
        if slot >= next(iter(fields.values())).shape[0]:  # full: double every field
            for name in fields:
                fields[name] = reserve(fields[name], slot + 1)

    def append(self, row: np.ndarray, **values: float) -> int:
        self.make_room()
        slot = self.points.next_slot()
        fields = self.fields
        for name, value in values.items():
            fields[name][slot] = value
        if slot >= self.n:
            self.n = slot + 1
        return slot

    @property
    def data(self) -> np.ndarray:
        return self.points.rows.data

    @property
    def d(self) -> int:
        return self.points.rows.d

    @property
    def n_added(self) -> int:
        return self.points.rows.n_added

    @property
    def max_size(self) -> int | None:
        return self.points.rows.max_size

    def kernel_row(self, kernel, v: np.ndarray) -> np.ndarray:
        return self.points.kernel_row(kernel, v)

    def kernel_block(self, kernel, V: np.ndarray) -> np.ndarray:
        return self.points.kernel_block(kernel, V)


class SharesPoints:
    """The sharing protocol of :class:`okoco.learners.kons.KONS` (a mixin): its points held in
    a :class:`SharedPoints` with other learners (``Auto``'s windowed experts,
    ``MulticlassClassifier``'s classes), set up by :meth:`share_points`, so that no owner sets
    a KONS's private state."""

    def share_points(self, points, kernel=None) -> None:
        """Store this learner's points in ``points`` (an ``okoco.learners.shared.SharedPoints``)
        that other learners hold too, in place of a store of its own; before its first step.

        The points ``points`` already holds count as points this learner learned nothing from
        (``d = c = K c = 0``): it predicts 0 there, as a KONS that saw no gradient does. The
        unbounded learner takes them as atoms (its factor's rows ``sqrt(alpha) e_i``); a window
        takes its slots from the shared ring (the earlier points are no atoms and leave it as
        no-ops, so it forgets its own points when a standalone KONS would).

        The owner then drives the step (the step protocol,
        ``okoco.learners.base.StepProtocol``): every sharer's :meth:`analyse` from one
        :class:`StepShared` (one kernel row per distinct kernel), every :meth:`check` before
        any :meth:`apply`, the point stored (``StepShared.store_point``) once every sharer
        applied its step, then each sharer's :meth:`forget`.

        Parameters
        ----------
        points
            The shared points; a ring (``points.rows.max_size``) at least one slot longer than
            this learner's window.
        kernel
            The kernel object of the sharers (its rows are then computed once per input, by
            identity), or ``None`` to keep this learner's own.
        """
        ring = points.rows.max_size
        if self.n_seen or self._store.size:
            raise ValueError(f"share_points on a {type(self).__name__} that has learned "
                             f"{self.n_seen} steps; share points before the first step")
        if self.max_size is not None and (ring is None or ring < self.max_size + 1):
            raise ValueError(f"share_points: a window of {self.max_size} points needs a ring of "
                             f"at least {self.max_size + 1} slots, got {ring}")
        if kernel is not None:
            self._kernel = kernel
        store = self._store = ExpertRows(points)
        n = points.rows.n
        for name in store.fields:  # fresh zero buffers: d = c = Kc = 0 for every point
            store.fields[name] = reserve(store.fields[name], n)
        store.n = n
        if self.max_size is None:
            store.fields["z"][:n] = 1.0  # every stored point is an atom of the unbounded KONS
            for m in range(n):
                self._chol.append(np.zeros(m), self.alpha, half=np.zeros(m))
            self._g = reserve(self._g, self._chol.size)
            return
        self._window.capacity = ring  # the window's slots are the shared ring's
        if n:
            self._window.make_room(n)


class StepShared:
    """What the experts of one owner share in one step at the row ``v``: the ``shared`` of the
    step protocol's ``analyse(v, shared)`` (``okoco.learners.base.StepProtocol``).

    ``kernel_row(kernel)`` is the kernel's row over the owner's shared points (a
    :class:`SharedPoints`; read-only, computed once per distinct kernel), ``kappa(kernel)``
    is ``k(v, v)``, ``embedded`` the embeddings of ``v`` by the owner's dictionaries, in the
    owner's order (``SharedEmbedding.analyse``). An expert that reads the shared points stores
    its values at the slot ``v`` takes, so ``v`` joins them (:meth:`store_point`, once every
    expert applied its step) exactly when one did.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import RBF
    >>> points = SharedPoints()
    >>> points.append(np.array([0.0, 1.0]))
    >>> shared = StepShared(np.array([1.0, 1.0]), points)
    >>> rbf = RBF(0.5)
    >>> shared.kernel_row(rbf) is shared.kernel_row(rbf), shared.kappa(rbf)
    (True, 1.0)
    >>> shared.store_point(); points.rows.n
    2
    """

    __slots__ = ("v", "points", "embedded", "reads_points")

    def __init__(self, v: np.ndarray, points: SharedPoints | None = None, embedded=()):
        self.v = v
        self.points = points
        self.embedded = embedded
        self.reads_points = False  # whether an expert read the shared points in this step

    def kernel_row(self, kernel) -> np.ndarray:
        """``kernel(x_i, v)`` over the shared points (read-only; memoised per kernel object)."""
        self.reads_points = True
        return self.points.row_view(kernel, self.v)

    def kappa(self, kernel) -> float:
        """``kernel(v, v)``."""
        return self_similarity(kernel, self.v)

    def store_point(self) -> None:
        """Store ``v`` in the shared points if an expert read them (it wrote its values at
        the slot ``v`` takes); the owner calls it once every expert applied its step."""
        if self.reads_points:
            self.points.append(self.v)

# okoco files name classes by module path: keep the path these classes were saved under
SharedPoints.__module__ = ExpertRows.__module__ = "okoco.learners.auto"
