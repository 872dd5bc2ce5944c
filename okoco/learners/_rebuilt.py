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

__all__ = ["RebuiltOnLoad", "rebuild_kept_factor_matrix", "window_matrix"]


def rebuild_kept_factor_matrix(chol, kernel, store, charge) -> None:
    r"""After a load, the matrix :math:`A` of a Cholesky factor kept in the file (an
    ``okoco.linalg.IncrementalCholesky`` whose factor :math:`L` is the model's coordinates:
    PROS-N-KONS's embedding, KRLS's ALD), if the file left it out: ``kernel`` over the atoms of
    ``store`` (``okoco.linalg.Rows``, in the factor's order) off the diagonal, as the steps
    appended its columns, and on the diagonal :math:`A_{jj} = \|L_{j,:}\|^2`, the entry the
    steps factorized (a clamped pivot's :math:`\|h\|^2 + \text{min\_pivot}`, a ridge, as
    well as :math:`k(x_j, x_j)`), to rounding. ``O(m^2 d)``; ``charge(nbytes, what)`` is called
    before anything is allocated."""
    if chol.has_matrix or not chol.has_factor:  # (held by the file, used as saved; or
        return  # no factor to take the diagonal from: the load refuses the file, as it lacks it)
    m = chol.size
    charge(8 * (chol.factor_storage().shape[0] + 3 * m * m), "a Cholesky factor's matrix")
    with all_one_thread:
        X = store.view()
        gram = np.array(kernel(X, X), dtype=float) if m else np.zeros((0, 0))
        L = chol.factor()
        gram[np.diag_indices(m)] = np.einsum("ij,ij->i", L, L)
    chol.restore_matrix(gram)


def window_matrix(kernel, points, scale, window, own: np.ndarray) -> np.ndarray:
    r"""``M = D K D + alpha I`` over the atoms at a window inverse's own slots ``own``
    (``okoco.linalg.SlotInverse``; compact: mapped to the caller's slots): ``kernel`` over the
    rows of ``points.data`` (``okoco.linalg.Rows`` or a shared store's ``ExpertRows``) scaled by
    ``scale`` (the weights :math:`d_j` by slot, or one number for all), with the diagonal as
    the steps made it, :math:`d_j^2 \kappa_j + \alpha`, from the inverse."""
    slots = own if window.outer is None else window.outer[own]
    X = points.data[slots, : points.d]
    d = scale[slots] if np.ndim(scale) else np.full(slots.shape[0], float(scale))
    M = d[:, None] * np.asarray(kernel(X, X), dtype=float) * d[None, :]
    M[np.diag_indices(own.shape[0])] = window.diagonal[own]
    return M


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
        if not chol.has_factor:
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
        (:func:`window_matrix`)."""
        store = self._store
        return window_matrix(self._kernel, store, store.fields["d"], self._window, own)
