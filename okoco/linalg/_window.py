"""The inverse of a symmetric positive-definite matrix over a ring of slots
(:class:`SlotInverse`, the windowed KONS's preconditioner); see :mod:`okoco.linalg`."""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotri

from okoco._blas import all_one_thread, scipy_one_thread
from okoco._core import _linalg, _slots


def _block(atoms: np.ndarray):
    """The index of the block over ``atoms`` (increasing): a slice when they are ``0..k-1``
    (a full window), a much cheaper copy than a fancy index."""
    k = atoms.shape[0]
    if k and atoms[-1] == k - 1:
        return slice(0, k), slice(0, k)
    return np.ix_(atoms, atoms)


class SlotInverse:
    r"""The inverse :math:`P = M^{-1}` of a symmetric positive-definite matrix over a ring of
    slots (zero rows and columns for the slots that hold no atom), and :math:`M` itself for the
    periodic recomputation. The windowed KONS keeps its preconditioner
    :math:`M = \bar K_I + \alpha I` here, indexed by its store's slots.

    The window adds an atom at the end and removes the oldest, which a Cholesky factor can
    only do by updating the whole trailing factor; the inverse does both by one rank-one
    update (bordering, and the Schur complement of a removed atom), ``O(m^2)``. ``P`` is kept
    in its lower triangle (half the arithmetic and memory traffic of the full matrix; see
    Storage below), updated in the compiled core. The rank-one changes are kept *pending*,
    up to 16 of each sign (``pending``: their vectors; the products include them), and applied
    16 at a time by one rank-16 update (a ``dsyrk``: measured on one thread, four to five
    times a rank-one update's cost, where one at a time would be sixteen passes over the
    triangle; :meth:`flush` applies them at once). Every ``16 n`` modifications (``n`` slots)
    ``P`` is recomputed from ``M`` (``O(n^3)``, ``O(n^2)`` amortised), so rounding does not
    accumulate over an unbounded stream.

    With ``atoms`` below ``capacity`` (a window shorter than the caller's ring: ``Auto``'s
    forgetting experts, 80 points over a shared ring of 401 slots), ``P`` is kept over slots
    of its own, ``atoms`` of them, and the caller's slots are mapped to them: the work and the
    memory are those of the window, not of the ring (more atoms than announced: the own slots
    grow by 16 at a time, up to the caller's).

    Storage: one ``(n, n)`` array holds ``P`` in its lower triangle (diagonal included) and
    ``M`` in its strict upper one, ``M``'s diagonal in a vector (``diagonal``; 0 for a slot
    with no atom): both symmetric matrices in the memory of one.

    **A pair** (:meth:`pair`): two inverses of at most ``n`` atoms each (Sketched-KONS's
    preconditioner and KORS's matrix, over the same points) share one ``(n, n + 1)`` array, the
    first's ``P`` in its lower triangle, the second's in its strict upper one (row ``r`` holds
    its ``P[r, r:]`` from column ``r + 1``), each over slots of its own numbering; the array
    grows with the first. Neither keeps ``M``: at each recomputation it comes from the caller
    (``_source``, a function of the slots of the atoms, computing it from the stored points).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.linalg import SlotInverse
    >>> M = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> inverse = SlotInverse()
    >>> inverse.append(0, np.zeros(0), 2.0, np.zeros(0), 2.0, 1)
    >>> a = inverse.solve(M[:1, 1])  # P c over the slots so far
    >>> inverse.append(1, a, M[1, 1] - M[:1, 1] @ a, M[:1, 1], M[1, 1], 2)
    >>> bool(np.allclose(inverse.inverse(2), np.linalg.inv(M)))
    True
    >>> bool(np.isclose(inverse.remove(0, 2), np.log(np.linalg.inv(M)[0, 0])))  # log P_00
    True
    >>> float(inverse.inverse(2)[1, 1])  # slot 1 alone: 1 / M[1, 1]
    1.0
    """

    # P and the pending terms are rebuilt on load from M over the atoms (``rebuilt``: a model
    # file leaves them out when the owner rebuilds them, see :meth:`rebuild`); the diagonal
    # of M is kept (it is the model's, as the pivots it used)
    _saved_state = {"capacity": "int[1,]|none", "P": "rebuilt array(*, *) float64",
                    "diagonal": "array(*) float64", "size": "int[0,]",
                    "_mods": "int[0,] as modifications", "n_refreshes": "int[0,]",
                    "atoms": "opt int[1,]|none", "_outer": "opt array(*) intp|none as outer",
                    "_keeps_m": "opt bool as keeps_m", "_upper": "opt bool as upper",
                    "pending": f"rebuilt array({_slots.PENDING_ROWS}, *) float64|none",
                    "pending_terms": "rebuilt array(3) intp|none",
                    "_held_slots": "cache:None",
                    "_partner": "cache:None", "_source": "cache:None", "_due": "cache:None"}

    pending = None  # the pending terms' rows (none: a file from before format 9)
    pending_terms = None  # (additions, subtractions, the slots they span)
    atoms = None  # (nor a compact form: a saved model from before it)
    _outer = None
    _held_slots = None
    _keeps_m = True  # M in the strict upper triangle (False: one of a pair, M from _source)
    _upper = False  # P in the strict upper triangle of the array (the second of a pair)
    _partner = None  # the other inverse of a pair (linked again by the caller after a load)
    _source = None  # a pair's M over given slots (set by the caller)
    _due = None  # one of a pair whose recomputation waits for the caller (settle): True

    def __init__(self, capacity: int | None = None, atoms: int | None = None):
        self.capacity = capacity  # slots at most (None: any number, for a caller's ring)
        # the most atoms held at once, if the caller knows it: with fewer than the caller's
        # slots (a short window over a longer shared ring), P is kept over slots of its own
        self.atoms = atoms
        self._outer = None  # the compact form: the caller's slot at each own slot (-1: free)
        # P's lower triangle and M's strict upper one share one array; M's diagonal apart
        self.P = np.zeros((16, 16))
        self.diagonal = np.zeros(16)
        self.size = 0  # atoms
        self._mods = 0
        self.n_refreshes = 0
        self.pending = None  # (32, n): the pending terms, scaled; the compiled core's
        self.pending_terms = None

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_held_slots"] = None  # a cache of the compact form's map, rebuilt on use
        state.pop("_source", None)  # the caller's function: set again by the caller
        return state

    def pair(self) -> SlotInverse:
        """A second inverse, kept in this one's array (see **A pair** above; before the first
        atom; its slots below this one's rows: its ``make_room`` grows this one). Neither keeps
        ``M`` from then on: set ``_source`` of both to functions giving ``M`` over given slots,
        from the caller's points. A recomputation then waits for the caller (``_due``, at the
        end of its step, when its points and the atoms agree): :meth:`settle`."""
        if self.size:
            raise RuntimeError("an inverse is paired before its first atom")
        self._keeps_m = False
        second = SlotInverse(self.capacity)
        second._keeps_m, second._upper = False, True
        self._partner, second._partner = second, self
        self._resize(self.P.shape[0])  # one more column: the second's P
        return second

    @property
    def outer(self) -> np.ndarray | None:
        """The compact form's map from its own slots to the caller's (-1: free), or ``None``
        (the inverse is over the caller's slots themselves)."""
        return self._outer

    @property
    def upper(self) -> bool:
        """Whether ``P`` is kept in the strict upper triangle of the array, shifted by one
        column (the second of a pair)."""
        return self._upper

    @property
    def keeps_m(self) -> bool:
        """Whether ``M`` is kept in the strict upper triangle (false for a pair, whose ``M``
        comes from the caller's ``_source``)."""
        return self._keeps_m

    def solve(self, e: np.ndarray) -> np.ndarray:
        """``P e`` over the first ``len(e)`` slots (``e`` a vector or a matrix of columns)."""
        if e.ndim == 1:
            out = np.empty(e.shape[0])
            with scipy_one_thread:
                _slots.solve(self, np.ascontiguousarray(e, dtype=float), out)
            return out
        if self._outer is None:
            return self._inverse(e.shape[0]) @ e
        own, theirs = self._held()
        v = np.zeros((self._outer.shape[0], *e.shape[1:]))
        v[own] = e[theirs]
        out = np.zeros(e.shape)
        out[theirs] = (self._inverse() @ v)[own]
        return out

    def _held(self) -> tuple[np.ndarray, np.ndarray]:
        """The compact form's occupied own slots and the caller's slots they hold (kept until
        an atom comes or goes)."""
        if self._held_slots is None:
            own = (self._outer >= 0).nonzero()[0]
            self._held_slots = own, self._outer[own]
        return self._held_slots

    def inverse(self, n: int | None = None) -> np.ndarray:
        """``P`` over the first ``n`` slots (all by default), both triangles (a new array)."""
        if self._outer is None:
            return self._inverse(n)
        own, theirs = self._held()
        n = self.capacity if n is None else n
        out = np.zeros((n, n))
        out[np.ix_(theirs, theirs)] = self._inverse()[np.ix_(own, own)]
        return out

    def _inverse(self, n: int | None = None) -> np.ndarray:
        """``P`` over the first ``n`` slots of its array with the pending terms (which stay
        pending: reading the inverse changes no state)."""
        n = self.P.shape[0] if n is None else n
        if self._upper:
            upper = np.triu(self.P[:n, 1 : n + 1])
            full = upper + np.triu(upper, 1).T
        else:
            lower = np.tril(self.P[:n, :n])
            full = lower + np.tril(lower, -1).T
        terms = self.pending_terms
        if terms is not None and terms[:2].any():
            half = self.pending.shape[0] // 2  # additions, then subtractions
            added = self.pending[: terms[0], :n]
            removed = self.pending[half : half + terms[1], :n]
            full += added.T @ added - removed.T @ removed
        return full

    def flush(self) -> None:
        """Apply the pending terms to ``P``."""
        if self.pending_terms is not None and self.pending_terms[:2].any():
            with scipy_one_thread:
                _slots.flush_pending(self)

    def settle(self) -> None:
        """Make a recomputation that was waiting for the caller's step to end (one of a
        pair)."""
        if self._due:
            self.refresh()

    def _grow(self, n: int) -> None:
        if n > self.P.shape[0]:
            size = max(n, 2 * self.P.shape[0])
            self._resize(size if self.capacity is None else min(size, self.capacity))

    def _resize(self, size: int) -> None:
        self.flush()
        second = self._partner
        if second is not None:
            second.flush()
        extra = 0 if self._keeps_m else 1  # a pair's array: one more column
        P, diagonal = np.zeros((size, size + extra)), np.zeros(size)
        m = min(size, self.P.shape[0])
        cols = min(m + extra, self.P.shape[1])
        P[:m, :cols], diagonal[:m] = self.P[:m, :cols], self.diagonal[:m]
        self.P, self.diagonal = P, diagonal
        if second is not None:  # the second of the pair lives in the same array
            grown = np.zeros(size)
            grown[:m] = second.diagonal[:m]
            second.P, second.diagonal = P, grown

    def append(self, slot: int, a: np.ndarray, sigma: float, column: np.ndarray,
               diagonal: float, n: int) -> None:
        """Border with the atom at ``slot``: ``a = P c`` over the old slots (``c`` its column
        of ``M``), ``sigma = diagonal - c^T P c`` the Schur complement (``> 0``)."""
        self.make_room(n)
        with scipy_one_thread:
            _slots.append(self, slot, np.ascontiguousarray(a, dtype=float), sigma,
                          np.ascontiguousarray(column, dtype=float), diagonal, n)

    def make_room(self, n: int) -> None:
        """Room for one more atom over the caller's first ``n`` slots: ``P`` grows, or the
        compact form is created (at the first atom) or doubled (more atoms than announced)."""
        if self._upper:
            self._partner.make_room(n)  # the second of a pair: the array is the first's
            return
        if self._outer is None and self.size == 0 and self.atoms is not None and \
                self.capacity is not None and self.atoms < self.capacity:
            self._outer = np.full(self.atoms, -1, dtype=np.intp)  # the compact form
            self._resize(self.atoms)
        if self._outer is None:
            self._grow(n)
        elif self.size >= self._outer.shape[0]:  # more atoms than announced: room for 16 more
            # (at most the caller's slots): the array stays within 16 of the most atoms held
            # at once (Sketched-KONS's sketch); its copies, ~capacity^3 / 48 numbers in all
            k = self._outer.shape[0]
            size = k + 16 if self.capacity is None else max(min(k + 16, self.capacity), k + 1)
            self._outer = np.concatenate([self._outer, np.full(size - k, -1, dtype=np.intp)])
            self._resize(size)
            self.atoms = size
            self._held_slots = None

    def remove(self, slot: int, n: int) -> float:
        """Remove the atom at ``slot`` of the first ``n``; returns ``log P_jj``, the change of
        ``log det M`` (the Schur complement of the other atoms). Should rounding have spoilt
        the pivot (below half its lower bound ``1 / M_jj``), ``P`` is recomputed from ``M``
        instead, and 0 is returned."""
        with scipy_one_thread:
            return _slots.remove(self, slot, n)

    def count_modification(self, n: int) -> None:
        """One more modification (an atom came or went) over ``n`` slots: ``P`` is recomputed
        from ``M`` every ``16 n`` of them (measured: ``P M - I`` stays within 2e-12 at
        ``alpha = 0.01`` after ``4 n`` and after ``16 n``, within 1e-10 at 0.001)."""
        self._held_slots = None
        mods = self._mods = self._mods + 1
        if mods >= 16 * n and mods >= 64:  # (max(16 n, 64) without the call: a hot path)
            self.schedule_refresh()

    def schedule_refresh(self) -> None:
        """``P`` recomputed from ``M`` now or, for one of a pair (whose ``M`` comes from the
        caller's points, which may be half-way through a step), when the caller ends its step
        (:meth:`settle`)."""
        self._held_slots = None
        if self._keeps_m:
            self.refresh()
        else:
            self._due = True

    def refresh(self) -> None:
        """``P`` recomputed from ``M`` over the atoms (``O(m^3)``).

        If ``M`` is numerically singular (its Cholesky factorization fails: a condition number
        near ``1 / eps``), ``P`` is the inverse of ``M`` with its eigenvalues raised to the
        rounding level ``m eps lambda_max``: finite and positive definite, never an error.
        """
        self._mods = 0
        self._due = None
        self.n_refreshes += 1
        self._recompute()

    def rebuild(self, matrix, slots: int, charge=None) -> None:
        r"""Rebuild ``P`` after a load, from ``M`` over the atoms: ``matrix(own)`` gives ``M``
        over the own slots ``own`` (increasing), ``slots`` is the caller's slots in use (the
        array holds at most twice them, as :meth:`make_room` grows it), ``charge(nbytes, what)``
        is called before the array is allocated. The same model: ``P = M^{-1}`` with
        :math:`M = \alpha I + \sum_{j \in \text{window}} d_j^2 \phi_j \phi_j^\top` in the
        slots' coordinates, the sum over the atoms held *now* (a removal is exact: the atom's
        term leaves the sum), which is what the incremental updates kept up to rounding;
        the counters (``modifications``, ``n_refreshes``) are kept, no term is pending.

        One of a pair (``_source`` set on both by the caller) is rebuilt by the first, which
        allocates the array the two share. The array is as small as the atoms allow (it grows
        with the caller's slots, :meth:`make_room`): the compact form's own slots, or up to
        the last atom's slot.
        """
        if self._upper:
            return  # rebuilt by the first of its pair
        atoms = np.flatnonzero(self.diagonal)
        if atoms.size != self.size:
            raise ValueError(f"a SlotInverse of {self.size} atoms has {atoms.size} nonzero "
                             "diagonal entries")
        n = self.diagonal.shape[0]  # the array's side when saved
        if self._outer is not None:
            if not self.atoms == self._outer.shape[0] == n or \
                    np.count_nonzero(self._outer >= 0) != self.size:
                raise ValueError("a SlotInverse's compact form disagrees with its atoms")
        elif n > max(16, 2 * slots):
            raise ValueError(f"a SlotInverse over {slots} slots cannot have {n}")
        extra = 0 if self._keeps_m else 1
        if charge is not None:  # the array, M over the atoms and the factorization's copies
            charge(8 * (n * (n + extra) + 3 * atoms.size * atoms.size), "a window's inverse")
        self.P = np.zeros((n, n + extra))
        self.pending = self.pending_terms = None
        self._held_slots = None
        partner = self._partner
        if partner is not None:
            partner.P = self.P
            partner.pending = partner.pending_terms = None
            partner._held_slots = None
        sub = None
        if atoms.size and self._keeps_m:  # M's strict upper triangle, kept beside P
            sub = np.asarray(matrix(atoms), dtype=float)
            self.P[_block(atoms)] += np.triu(sub, 1)
        self._recompute(sub, fresh=True)
        if partner is not None:
            partner._recompute(fresh=True)

    def _recompute(self, sub: np.ndarray | None = None, fresh: bool = False) -> None:
        """``P`` from ``M`` over the atoms, no term pending (:meth:`refresh`'s work); ``sub``:
        ``M`` over the atoms if the caller has it, ``fresh``: ``P``'s triangle is zeros."""
        if self.pending_terms is not None:  # M holds the pending terms' atoms already
            self.pending_terms[:] = 0
        atoms = np.flatnonzero(self.diagonal)
        inverse = None
        if atoms.size:
            if sub is None:
                with all_one_thread:  # (a pair's M from the caller's points: a kernel's products)
                    sub = self.matrix(atoms)
            with scipy_one_thread:  # at these sizes OpenBLAS's threads cost more than they give
                # sub is symmetric: its transpose is its Fortran-ordered view, whose upper
                # triangle (lower=0) is the lower one here; dpotri keeps that triangle
                factor, info = dpotrf(sub.T, lower=0, clean=0, overwrite_a=0)
                if info == 0:
                    factor, info = dpotri(factor, lower=0, overwrite_c=1)
            if info == 0 and _linalg.all_finite(factor.reshape(-1, order="F")):
                inverse = factor.T
            else:
                values, vectors = np.linalg.eigh(sub)
                floor = atoms.size * np.finfo(float).eps * max(float(values[-1]), 0.0)
                values = np.maximum(values, floor if floor > 0.0 else 1.0)
                inverse = (vectors / values) @ vectors.T
            inverse = np.tril(inverse)  # the lower triangle, mirrored: both exactly symmetric
            inverse += np.tril(inverse, -1).T
        n = self.P.shape[0]
        if self._upper:  # the second of a pair: P by the upper triangle from column 1
            own, part = self.P[:, 1 : n + 1], np.triu
        else:
            own, part = self.P[:, :n], np.tril
        if not fresh:
            own -= part(own)  # P's triangle is recomputed; the other (M, or the pair's) is kept
        if inverse is not None:  # (the atoms in increasing order: P's block is lower there)
            own[_block(atoms)] += part(inverse)

    def matrix(self, slots: np.ndarray | None = None) -> np.ndarray:
        """``M`` over ``slots`` (increasing; all by default), both triangles (a new array);
        for one of a pair, from the caller's ``_source``."""
        if not self._keeps_m:
            atoms = np.flatnonzero(self.diagonal) if slots is None else np.asarray(slots)
            sub = self._source(atoms)
            if slots is not None:
                return sub
            M = np.zeros((self.P.shape[0],) * 2)
            M[np.ix_(atoms, atoms)] = sub
            return M
        M = self.P if slots is None else self.P[np.ix_(slots, slots)]
        upper = np.triu(M, 1)
        diagonal = self.diagonal if slots is None else self.diagonal[slots]
        return upper + upper.T + np.diag(diagonal)
