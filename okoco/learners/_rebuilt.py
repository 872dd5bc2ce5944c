r"""What a saved KONS (and Sketched-KONS) leaves out of its file and rebuilds on load.

A model file holds the model (``okoco.persistence``, format 10): the points, their weights
:math:`d_j`, coefficients and running ``K c``, not the factorizations computed from them. The
window's inverse is :math:`(\bar K_I + \alpha I)^{-1}`, :math:`\bar K_I = D K D` over the atoms
held *now* (a removal takes its atom's term out of the sum exactly), so it is rebuilt from the
points of the window, their weights and the diagonal :math:`d_j^2\kappa_j + \alpha` the steps
used (kept in the file); the unbounded learner's Cholesky factor is rebuilt from its saved
matrix. The loaded learner is the same model to rounding.
"""

from __future__ import annotations

import numpy as np

from okoco._blas import all_one_thread

__all__ = ["RebuiltOnLoad"]


class RebuiltOnLoad:
    """The rebuild hook of KONS (a base class of :class:`okoco.learners.KONS`)."""

    # What a model file leaves out and a load rebuilds from the model (:meth:`_rebuild`): the
    # window's inverse (its fields declared ``rebuilt``) and the factor of the unbounded
    # preconditioner (not its matrix, saved), by their paths in the file.
    _rebuilt_parts = {"window_inverse": None, "cholesky": ("factor",)}

    def _rebuild(self, charge) -> None:
        r"""After a load, rebuild what a model file leaves out, from the model: the window's
        inverse :math:`(\bar K_I + \alpha I)^{-1}` over the atoms held now
        (:meth:`_preconditioner_matrix`), and, unbounded, the Cholesky factor of the saved
        matrix and :math:`g = L^{-1}(D K c)_I` in it. ``charge(nbytes, what)`` bounds what the
        rebuild allocates by the file's size."""
        with all_one_thread:  # (a learner's sizes: BLAS's threads would only spin after)
            self._rebuild_now(charge)

    def _rebuild_now(self, charge) -> None:
        chol = self._chol
        if chol._L is None:
            chol.rebuild_factor(charge)
            if self.max_size is None:  # (a window keeps no factor: its inverse instead)
                store = self._store
                self._g[: chol.size] = chol.half_solve(self._gather(store.field("d")
                                                                    * store.field("Kc")))
        window = self._window
        if window is not None and window.P is None:
            self._link()
            window.rebuild(self._preconditioner_matrix, self._store.size, charge)

    def _link(self) -> None:
        """Give the window's inverse what it needs from the points (Sketched-KONS: its pair)."""

    def _points_matrix(self, slots: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """``diag(scale) K diag(scale)`` over the stored points at ``slots``."""
        store = self._store
        X = store.data[slots, : store.d]
        return scale[:, None] * np.asarray(self._kernel(X, X), dtype=float) * scale[None, :]

    def _preconditioner_matrix(self, own: np.ndarray) -> np.ndarray:
        """``M = D K D + alpha I`` over the atoms at the window inverse's own slots ``own``
        (the diagonal as the steps made it, ``d_j^2 kappa_j + alpha``, from the inverse)."""
        window = self._window
        slots = own if window._outer is None else window._outer[own]  # (compact: mapped)
        M = self._points_matrix(slots, self._store.fields["d"][slots])
        M[np.diag_indices(own.shape[0])] = window.diagonal[own]
        return M
