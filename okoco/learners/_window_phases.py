"""KONS's step around its compiled phases (okoco._core._kons.KONSCore), windowed or not.

The compiled phases work on the learner's store, preconditioner (the window's inverse, or the
unbounded learner's Cholesky factor and ``g``) and atoms' slots, handed to each call, and
return a status (``okoco._core._steps.STEP_*``) and their results in the core's fields; this
mixin of :class:`okoco.learners.kons.KONS` makes what they leave to Python: it grows the
buffers and calls the phase again (``STEP_NEED_ROOM``), writes back the store's counters
after a row written in place, adds the running statistics' terms, and lets the selection
follow an atom that left (``STEP_FORGOT_ATOM``: Sketched-KONS's KORS).
"""

from __future__ import annotations

import numpy as np

from okoco._core._steps import STEP_FORGOT_ATOM, STEP_NEED_ROOM, STEP_OK, STEP_SKIPPED


class WindowPhases:
    """The Python side of the step, for :class:`okoco.learners.kons.KONS` (which defines
    ``_step_core``, ``_preconditioner``, ``_coin``, ``_make_room``, ``_forget_atom``,
    ``_settle`` and the statistics)."""

    def _learn_step(self, v: np.ndarray, analysis, step) -> None:
        """:meth:`apply` but the count (``learn_one`` counts its steps itself): the coin
        (``_coin``, which may refuse: before any change), then ``KONSCore.apply`` (once more
        after :meth:`_make_room` if a buffer lacked room), the store's counters and the running
        statistics. One frame over the compiled call: the windowed experts' hot path."""
        z = self._coin(analysis.e, analysis.kappa, step.d_t)
        self.noise_scale_sum += step.noise
        core, store, preconditioner = self._step_core(), self._store, self._preconditioner
        status = core.apply(store, preconditioner, self._selected, v, analysis, step, z,
                            self.alpha, self._g)
        if status == STEP_NEED_ROOM:
            self._make_room(v, core.needed)  # (a new array of the atoms' slots, maybe)
            status = core.apply(store, preconditioner, self._selected, v, analysis, step, z,
                                self.alpha, self._g)
        if status == STEP_SKIPPED:
            return
        if status != STEP_OK:
            raise RuntimeError(f"the window's step returned the status {status}")
        if core.wrote_row:  # into the learner's own Rows: its counters and norms' bound
            store.record_rows(core.size, core.width, store.n_added + 1,
                              max(store.max_squared_norm, core.row_norm))
        self.online_effective_dimension += core.tau
        self.rg_sum += core.rg_term
        if z:
            self.log_det += core.log_det_term

    def forget(self) -> None:
        """The step protocol's last phase: once more than ``max_size`` points are stored,
        remove the oldest from :math:`A_t` and :math:`b_t`: its atom from the window's inverse
        (a Schur complement, ``O(m^2)``; ``_forget_atom`` then, the selection following it)
        and its coefficient from the running ``K c`` (one kernel row at it, ``O(m d)``), in one
        compiled call (``KONSCore.forget``). The unbounded learner forgets nothing. Then what
        waited for the step's end (``_settle``). Over shared points, after the owner stored
        the step's point."""
        if self.max_size is not None:
            core = self._step_core()
            if core.forget(self._store, self._window, self._selected, self.max_size,
                           self.alpha) == STEP_FORGOT_ATOM:
                self.log_det += core.log_det_term
                self._forget_atom()
        self._settle()
