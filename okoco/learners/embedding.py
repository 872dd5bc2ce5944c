r"""The Nyström embedding that the Online Newton Step (:mod:`okoco.learners.ons`) runs in.

One home for each of the two halves of PROS-N-KONS / CON-KONS (:mod:`okoco.learners.pros`),
which ``Auto``'s dictionary experts share (the embedding here, the head in
:mod:`okoco.learners.ons`):

- :class:`NystromEmbedding`: a KORS dictionary :math:`\mathcal I` over the unscaled kernel, the
  bordered Cholesky factor :math:`L L^\top = K_{\mathcal I}` and the atoms' store, giving
  :math:`z = L^{-1}k_{\mathcal I}(x)` from one kernel row per step (``O(m d + m^2)``); a point
  that joins borders :math:`L`, which leaves the first :math:`m` coordinates of every embedding
  unchanged and adds a last one (the point's own: its pivot).
- :class:`~okoco.learners.ons.OnsHead`: the primal ONS point :math:`u` and :math:`A^{-1}` (packed,
  ``okoco.linalg.PackedSymmetric``) over such coordinates, and its step:

  .. code-block:: text

      ybar = z . u;  yhat = clip(ybar, -C, C);  gdot = loss'(y, yhat)
      w = eta gdot^2 (or loss''(yhat) with eta="hessian")
      new coordinates (an atom joined, a feature appeared):
          u <- [u; 0],  A^{-1} <- diag(A^{-1}, 1/alpha)
      Pz = A^{-1} z;  s = z . Pz
      u <- u - h(ybar) Pz / s                  # oblique projection onto |z . u| <= C, A-norm
      q = w s;  A^{-1} <- A^{-1} - w Pz Pz^T / (1 + q);  u <- u - gdot Pz / (1 + q)

  compiled once (``okoco._core._ons.OnsState``): checked for each way the coordinates may
  grow (every number it would store finite) before anything changes, then applied
  (``OnsHead._ons_plan``, then ``OnsHead._ons_commit``), so that a refused step changes nothing.

``PROSNKONS`` and ``CONKONS`` are one embedding and one head (mixins over their own attributes,
so their saved files keep their layout); ``Auto`` holds one :class:`SharedEmbedding` and
several :class:`DictionaryExpert` heads on it (different ridges), plus a :class:`LinearExpert`,
the same head on the explicit features :math:`[1, x]`.
"""

from __future__ import annotations

import math

import numpy as np

from okoco._blas import all_one_thread
from okoco._core import _embedding
from okoco._core._embedding import Embedded
from okoco.dictionary import KORS
from okoco.kernels import RBF, finite_row, self_similarity
from okoco.learners._codes import compiled_kernel
from okoco.learners._rebuilt import rebuild_kept_factor_matrix
from okoco.learners.base import overflow_message
from okoco.linalg import IncrementalCholesky, Rows

__all__ = ["NystromEmbedding", "SharedEmbedding", "Embedded", "drop_rotations",
           "rotate_coordinates"]

#: The rules of a full :class:`SharedEmbedding` (its ``swap_rule``).
SWAP_RULES = ("residual", "usage")

_NONE = _embedding.NO_COORDINATE  # no new coordinate (read-only)


def exact_row_spec(kernel) -> tuple | None:
    """The compiled description of ``kernel`` (``okoco.learners._codes.compiled_kernel``) if
    its compiled row over the atoms (``okoco._core._embedding.analyse``) is bit for bit its
    ``row_from_norms`` with ``k(x, x)`` and the finiteness check of the Python path: the RBF
    kernel (the same distances, scaling and numpy ``exp``; bounded: ``k(x, x) = 1``, every
    value finite). ``None`` for any other kernel (the Laplacian's Python row takes libm's
    ``exp``, the unbounded kernels' ``k(x, x)`` a different sum), which keeps the Python path."""
    return compiled_kernel(kernel) if type(kernel) is RBF else None


def step_message(y, gdot: float, yhat: float) -> str:
    return (f"the target {y!r} gives the loss derivative {gdot:g} at the prediction {yhat:g}, "
            "too large for a second-order step; rescale the targets")


class NystromEmbedding:
    r"""The embedding :math:`z = L^{-1}k_{\mathcal I}(x)` over a KORS dictionary (a mixin).

    Its object holds ``_kernel``, ``_kors`` (``okoco.dictionary.KORS`` over the unscaled
    kernel), ``_store`` (the atoms, ``okoco.linalg.Rows``), ``_embed``
    (``okoco.linalg.IncrementalCholesky``, :math:`L L^\top = K_{\mathcal I}`) and ``max_size``
    (``None``: no cap; once full the dictionary is frozen).
    """

    # What a model file leaves out and a load rebuilds (:meth:`_rebuild`): the matrix K_I of
    # the embedding's factor (the factor stays: the heads' coordinates are L's), and KORS's
    # factor and matrix, whose atoms are the store's.
    _rebuilt_parts = {"embedding": ("matrix",), "kors.cholesky": None}
    _saved_state = {"_row_spec": "cache:None"}
    _row_spec = None  # (kernel, its compiled description or False) for analyse (a cache)

    def _rebuild(self, charge) -> None:
        r"""After a load, the embedding's matrix :math:`K_{\mathcal I}` from the atoms
        (:func:`okoco.learners._rebuilt.rebuild_kept_factor_matrix`, ``O(m^2 d)``), and KORS's
        factor and matrix if the file left them out (:meth:`_rebuild_kors`)."""
        with all_one_thread:  # (a learner's sizes: BLAS's threads would only spin after)
            rebuild_kept_factor_matrix(self._embed, self._kernel, self._store, charge)
            if not self._kors.cholesky.has_matrix:
                self._rebuild_kors(charge)

    def _rebuild_kors(self, charge) -> None:
        r"""KORS's :math:`S K_{\mathcal I} S + \gamma I` (:math:`S^2` its weights, the diagonal
        :math:`w_j k(x_j, x_j) + \gamma` as its appends made it) over the store's atoms, and its
        Cholesky factor, ``O(m^2 d + m^3)``."""
        chol, store = self._kors.cholesky, self._store
        m = chol.size
        if store.n != m:
            raise ValueError(f"KORS holds {m} atoms but the store {store.n}")
        charge(8 * (chol.capacity * (chol.capacity + 1) // 2 + 2 * m * m), "KORS's matrix")
        M = np.zeros((m, m))
        if m:
            X = store.view()
            s = np.sqrt(self._kors.weight_storage()[:m])
            M = s[:, None] * np.asarray(self._kernel(X, X), dtype=float) * s[None, :]
            M[np.diag_indices(m)] = s * s * self._kernel.diag(X) + self._kors.alpha
        chol.restore_matrix(M)
        chol.rebuild_factor(charge)

    def _embedding_of(self, v: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        """``(k, kappa, h)``: the kernel row over the atoms, ``k(v, v)`` and ``L^{-1} k``, for
        an RBF kernel in one compiled call (``okoco._core._embedding.analyse``, the same
        numbers), else from the kernel's own row (:meth:`_kernel_row_of`)."""
        spec = self._row_spec_of()
        parts = spec and _embedding.analyse(spec, self._store, self._embed, v)
        if parts:
            return parts[:3]
        k, kappa = self._kernel_row_of(v)
        return k, kappa, self._embed.half_solve(k)

    def _row_spec_of(self) -> tuple | bool:
        """The kernel's compiled description if its compiled row is its own bit for bit
        (:func:`exact_row_spec`), else ``False``; kept with the kernel it describes
        (``_row_spec``: a learner sets its default kernel at its first step)."""
        kept = self._row_spec
        if type(kept) is not tuple or kept[0] is not self._kernel:  # (or an older bare spec)
            kept = self._row_spec = (self._kernel, exact_row_spec(self._kernel) or False)
        return kept[1]

    def _kernel_row_of(self, v: np.ndarray) -> tuple[np.ndarray, float]:
        """``(k, kappa)``: the kernel row over the atoms and ``k(v, v)``, checked finite."""
        k = self._store.kernel_row(self._kernel, v)
        kappa = self_similarity(self._kernel, v)  # (1 without a call for a bounded kernel)
        if not (math.isfinite(kappa) and finite_row(self._kernel, k)):
            bad = kappa if not math.isfinite(kappa) else k[~np.isfinite(k)][0] \
                if not np.isfinite(k).all() else float(k.sum())  # (a sum that overflowed)
            raise ValueError(overflow_message(self._kernel, bad))
        return k, kappa

    def _join_pivot(self, kappa: float, residual: float) -> float | None:
        """The pivot the point would take as an atom (its coordinate in its own embedding),
        from its ``residual`` ``k(x, x) - h.h`` against the atoms, or ``None`` if it cannot
        join: the dictionary is full, or the point lies in its span to working precision
        (``okoco._core._embedding.join_pivot``)."""
        return _embedding.join_pivot(self._embed.size, self.max_size, kappa, residual,
                                     self._embed.min_pivot)

    def _offer(self, v: np.ndarray, k: np.ndarray, kappa: float, h: np.ndarray) -> bool:
        """KORS's coin for a point that can join (:meth:`_join_pivot`); if it lands, the point
        becomes the last atom (``O(m^2)``). Returns whether it joined."""
        if not self._kors.update_column(k, kappa)[0]:
            return False
        self._embed.append(k, kappa, half=h)
        self._store.append(v)
        return True


class SharedEmbedding(NystromEmbedding):
    r"""A :class:`NystromEmbedding` of its own, for experts that share it (``Auto``).

    Parameters are those of :class:`okoco.learners.CONKONS`'s dictionary: ``kernel`` (an
    ``okoco.kernels`` kernel), KORS's ``dictionary_alpha``, ``eps``, ``beta``, ``p_min`` and
    ``seed``, and the cap ``max_size``; and the rule of a full dictionary, ``swap_margin``
    :math:`\mu` and ``swap_rule``:

    - ``swap_margin=None``: frozen once full (as ``CONKONS``);
    - ``swap_rule="residual"`` (by residual, :meth:`_least_distinct`): a point whose residual
      :math:`k(x,x) - h^\top h` against the atoms exceeds :math:`\mu > 1` times the smallest
      atom residual :math:`r_j = 1/[K_{\mathcal I}^{-1}]_{jj}` (atom :math:`j` against the
      others) replaces that atom: greedy maximization of :math:`\det K_{\mathcal I}`, which
      each swap multiplies by more than :math:`\mu`, so the number of swaps on any stream is at
      most :math:`\log_\mu(\kappa^m / \det K_{\mathcal I})` at the fill,
      :math:`\kappa = \sup_x k(x,x)`; and none once every :math:`r_j > \kappa/\mu`;
    - ``swap_rule="usage"`` (by usage, :meth:`_usage_rule`): each atom keeps its discounted
      share of the recent points' kernel rows, :math:`U_j = \sum_s \gamma^{t-s}
      k(x_s, x_j) / \sum_i k(x_s, x_i)` (:math:`\gamma = 1 - 1/H`, ``usage_horizon``
      :math:`H` steps, ``max_size`` by default; ``O(m)`` a step, ~5 µs at 500 atoms), beside
      the discounted count :math:`N = \sum_s \gamma^{t-s}` and the recent points' mean
      residual :math:`\bar r`. A point that did not join and whose residual exceeds
      :math:`\bar r` replaces the least-used atom if its usage is below :math:`1/\mu` of an
      even share, :math:`U_j < N / (\mu m)`; the newcomer starts at an even share
      :math:`N/m`. The atoms thus follow where the stream is now (an atom far from every
      recent point gets no share and leaves after about :math:`H \ln \mu` steps), and a
      stationary stream whose atoms are all used keeps them. No bound on the number of swaps
      like the residual rule's, only a rate: once :math:`N` is near :math:`H` (a few horizons
      into the stream), a newcomer cannot leave for about :math:`H \ln \mu` steps (its usage
      decays by at most :math:`\gamma` a step), so beyond the first :math:`m` swaps at most
      about :math:`m / (H \ln \mu)` a step on average, and one a step at most.

    Either rule swaps after the step on the point (:meth:`swap_in`, compiled, ``O(m^2)``).
    What a swap does to the guarantees: the heads' functions are projected onto the new span
    (the removed atom's direction is dropped) and their :math:`A` restricted to it, so
    neither CON-KONS's regret theorem nor KORS's accuracy covers the embedding after a swap
    (the usage rule keeps, heuristically, the atoms that carry the recent points' kernel
    mass: what it drops had less than :math:`1/(\mu m)` of it); the bound of ``Auto``'s
    mixture to its best expert does not depend on what the experts are and holds as stated.
    Measured (docs/guide/auto.md; ``benchmarks/bench_long_streams.py``, ``Auto`` at its
    defaults but the rule): the residual rule cost accuracy on stationary streams (river's
    Friedman #1, 100k steps: MAE 0.882 frozen, 0.899 with :math:`\mu = 2`) and did not
    repair a covariate shift (a burst of swaps after it, then none); the usage rule
    (:math:`\mu = 30`, :math:`H = 500`; seeds 0 and 1) left Friedman #1 and RandomRBF as the
    frozen dictionary left them (MAE 0.8753 and 0.8738, no swap; error 0.0539 and 0.0364,
    16-17 swaps) and lowered the MAE of ``--stream friedman-shift`` from 4.127 and 4.122 to
    3.683 and 3.754 (8-9% in the second 10,000 steps after the shift, 11-16% a block after;
    967-988 swaps, all in ``RBF(3/d)``).
    """

    _saved_state = {"_kernel": "kernel as kernel", "max_size": "int|none",
                    "swap_margin": "number|none", "n_swaps": "int[0,]",
                    "_kors": "obj:KORS as kors", "_store": "obj:Rows as store",
                    "_embed": "obj:IncrementalCholesky as embedding",
                    "_inverse_diagonal": "cache:None", "swap_rule": "opt str",
                    "usage_horizon": "opt int[1,]", "_usage": "opt array(*) float64 as usage",
                    "_usage_count": "opt float as usage_count",
                    "_mean_residual": "opt float as mean_residual"}
    # (a file saved before the usage rule: the residual rule, no usages yet)
    swap_rule, usage_horizon, _usage, _usage_count, _mean_residual = "residual", 500, None, 0.0, 0.0

    @property
    def _rebuilt_parts(self) -> dict:
        """What a model file leaves out (:meth:`NystromEmbedding._rebuild`): KORS's factor and
        matrix only until a swap, after which its atoms are no longer the store's (KORS, never
        consulted by a full dictionary, keeps them in the file)."""
        parts = {"embedding": ("matrix",)}
        if not self.n_swaps:
            parts["kors.cholesky"] = None
        return parts

    def __init__(self, kernel, dictionary_alpha: float = 1.0, eps: float = 0.5,
                 beta: float = 3.0, p_min: float = 0.0, max_size: int | None = 500,
                 seed: int | None = 0, swap_margin: float | None = None,
                 swap_rule: str = "residual", usage_horizon: int | None = None):
        if swap_rule not in SWAP_RULES:
            raise ValueError(f"swap_rule must be one of {', '.join(SWAP_RULES)}, not "
                             f"{swap_rule!r}")
        if swap_margin is not None and not swap_margin > 1:
            raise ValueError(f"swap_margin must be None or above 1, not {swap_margin!r}")
        if usage_horizon is not None and not (isinstance(usage_horizon, int)
                                              and usage_horizon >= 1):
            raise ValueError(f"usage_horizon must be None or an int >= 1, not "
                             f"{usage_horizon!r}")
        self._kernel = kernel
        self.max_size = max_size
        self.swap_margin = swap_margin
        self.swap_rule = swap_rule
        self.usage_horizon = usage_horizon or max_size or 500
        self.n_swaps = 0
        self._inverse_diagonal = None  # diag(K_I^{-1}) once full (a cache, rebuilt on load)
        self._kors = KORS(kernel=None, alpha=dictionary_alpha, eps=eps, beta=beta, p_min=p_min,
                          seed=np.random.default_rng(seed))
        self._store = Rows()
        self._embed = IncrementalCholesky()

    @property
    def size(self) -> int:
        return self._embed.size

    def analyse(self, v: np.ndarray) -> Embedded:
        """The embedding of ``v`` (no state change): for an RBF kernel its record (kernel row,
        ``h``, the residual and the pivot) in one compiled call
        (``okoco._core._embedding.analyse``, the numbers of :meth:`_analyse_rows`); else
        :meth:`_analyse_rows`."""
        spec = self._row_spec_of()
        embedded = spec and _embedding.analyse(spec, self._store, self._embed, v, self.max_size)
        return embedded or self._analyse_rows(v)

    def _analyse_rows(self, v: np.ndarray) -> Embedded:
        """The embedding of ``v`` from the kernel's own row (:meth:`_kernel_row_of`, any
        kernel), then ``h`` and the residual in one compiled call
        (``okoco._core._embedding.embed``)."""
        k, kappa = self._kernel_row_of(v)
        h, residual = _embedding.embed(self._embed.factor_storage(), self.size, k, kappa)
        return Embedded(k, kappa, h, residual, self._join_pivot(kappa, residual))

    def offer(self, v: np.ndarray, embedded: Embedded) -> None:
        """KORS's coin for ``v`` (if it can join); records the outcome in ``embedded``."""
        if embedded.pivot is not None:
            embedded.joined = self._offer(v, embedded.k, embedded.kappa, embedded.h)

    def atom_residuals(self) -> np.ndarray:
        r""":math:`r_j = 1/[K_{\mathcal I}^{-1}]_{jj}`: each atom's squared distance in the
        RKHS to the span of the others (``O(m^3)`` once, then kept by the swaps)."""
        if self._inverse_diagonal is None or self._inverse_diagonal.shape[0] != self.size:
            with all_one_thread:  # (a learner's sizes: BLAS's threads would only spin)
                inverse = self._embed.half_solve(np.eye(self.size))  # L^{-1}
            self._inverse_diagonal = np.einsum("ij,ij->j", inverse, inverse)
        return 1.0 / self._inverse_diagonal

    def swap_in(self, v: np.ndarray, embedded: Embedded, heads) -> int | None:
        """The full-dictionary rule (class docstring), after the step on ``v`` (called every
        step: the usage rule keeps its usages from the first): if the rule picks an atom
        ``j`` to leave (:meth:`_least_distinct` or :meth:`_usage_rule`), ``j`` leaves
        (:meth:`_remove`: the factor without it and the rotations that take its coordinate out
        of the embedding), every head rotates and drops that coordinate and frees its last one
        (``OnsHead._ons_drop``), and ``v`` joins as the last atom there (a zero weight), all
        compiled, ``O(m^2)`` for the embedding and for each head. Returns ``j``, or ``None``
        if nothing changed."""
        if self.swap_margin is None:
            return None
        m = self._embed.size
        full = (self.max_size is not None and m >= self.max_size and not embedded.joined
                and m >= 2)
        if self.swap_rule == "usage":
            j = self._usage_rule(embedded, full, m)
        else:
            j = self._least_distinct(embedded.residual) if full else None
        if j is None:
            return None
        self._replace(j, v, embedded, heads)
        return j

    def _least_distinct(self, residual: float) -> int | None:
        """The residual rule: the atom of smallest residual :math:`r_j`, if the newcomer's
        ``residual`` exceeds ``swap_margin`` times it."""
        r = self.atom_residuals()
        j = int(np.argmin(r))
        return j if residual > self.swap_margin * r[j] else None

    def _usage_rule(self, embedded: Embedded, full: bool, m: int) -> int | None:
        r"""The usage rule after a step, ``O(m)``, compiled (``_embedding.usage_step``):
        each atom's discounted share :math:`U_j \leftarrow \gamma U_j + k_j / \sum_i k_i` of
        the point's kernel row, the discounted count :math:`N \leftarrow \gamma N + 1` and mean
        residual, with :math:`\gamma = 1 - 1/H` (``usage_horizon`` steps); an atom that joins
        starts at an even share :math:`N/m` (``m`` the dictionary's atoms now, the point's row
        ``embedded.k`` over those before it). Returns the atom to leave if the dictionary is
        ``full``: the least used, if its usage is below ``1 / swap_margin`` of an even share
        and the newcomer's residual exceeds the recent points' mean (else ``None``)."""
        k, usage = embedded.k, self._usage
        if usage is None or usage.shape[0] != k.shape[0]:  # (first use)
            usage = self._usage = np.full(k.shape[0], self._usage_count / max(k.shape[0], 1))
        self._usage_count, self._mean_residual, j = _embedding.usage_step(
            usage, k, embedded.residual, self._usage_count, self._mean_residual,
            self.usage_horizon, self.swap_margin if full else 0.0)
        if m > usage.shape[0]:  # the point joined: an even share
            self._usage = np.append(usage, self._usage_count / m)
        return None if j < 0 else j

    def _replace(self, j: int, v: np.ndarray, embedded: Embedded, heads) -> None:
        """Atom ``j`` leaves, the heads drop its coordinate and ``v`` joins last (the swap of
        :meth:`swap_in`), with ``diag(K^{-1})`` and the usages kept."""
        m = self.size
        rotations = self._remove(j)
        for head in heads:
            head._ons_drop(j, rotations)
        k = np.delete(embedded.k, j)
        h = self._embed.half_solve(k)
        pivot_sq = self._embed.append(k, embedded.kappa, half=h)
        self._store.append(v)
        # bordering: diag(K^{-1}) gains b^2 / s, b = K^{-1} k = L^{-T} h, and 1 / s for v
        b = self._embed.leading_back_solve(h)
        self._inverse_diagonal = np.append(self._inverse_diagonal + b * b / pivot_sq,
                                           1.0 / pivot_sq)
        if self._usage is not None:
            self._usage = np.append(np.delete(self._usage, j), self._usage_count / m)
        self.n_swaps += 1
        if self.n_swaps % m == 0:  # diag(K^{-1}) afresh every m swaps (O(m^2) amortized)
            self._inverse_diagonal = None

    def _remove(self, j: int) -> np.ndarray:
        """Atom ``j`` leaves the factor, the store and ``diag(K^{-1})``, ``O(m^2)``; returns
        the rotations that take its coordinate out of the embedding
        (``IncrementalCholesky.remove``, ``(m - j - 1, 2)``)."""
        self.atom_residuals()  # diag(K^{-1}) at hand
        m = self.size
        unit = np.zeros(m)
        unit[j] = 1.0
        column = self._embed.solve(unit)  # K^{-1} e_j
        self._inverse_diagonal = np.delete(
            self._inverse_diagonal - column * column / column[j], j)
        rotations = np.empty((m - j - 1, 2))
        self._embed.remove(j, rotations)
        mask = np.ones(m, dtype=bool)
        mask[j] = False
        self._store.keep(mask)
        return rotations


def drop_rotations(L: np.ndarray, j: int) -> list:
    r"""The Givens rotations that take coordinate ``j`` of the embedding over a factor ``L``
    out of it: with :math:`W = [l, L_{33}]` (``l = L[j+1:, j]``, the trailing block of ``L``
    without row ``j``), :math:`W G_0 \cdots G_{k-1} = [0, L_{33}']`, :math:`L_{33}'` the
    trailing block of the factor without atom ``j`` (positive diagonal). Rotation ``i`` acts
    on coordinates ``j`` and ``j + 1 + i``: ``(c, s)``, :math:`v_j \leftarrow c v_j - s
    v_{j+1+i}`, :math:`v_{j+1+i} \leftarrow s v_j + c v_{j+1+i}` for a vector of coordinates
    (:math:`G^\top v`). ``O(k^2)``, ``k = m - j - 1``. The dense reference of the compiled
    rotations (``IncrementalCholesky.remove(j, rotations)``, ``okoco._core._swap``), which
    :meth:`SharedEmbedding.swap_in` uses."""
    W = np.array(L[j + 1:, j:], dtype=float)
    rotations = []
    for i in range(W.shape[0]):
        a, b = W[i, i + 1], W[i, 0]
        r = math.hypot(a, b)
        c, s = (1.0, 0.0) if r == 0 else (a / r, b / r)
        first, other = W[i:, 0].copy(), W[i:, i + 1].copy()
        W[i:, i + 1] = c * other + s * first
        W[i:, 0] = c * first - s * other
        rotations.append((c, s))
    return rotations


def rotate_coordinates(v: np.ndarray, j: int, rotations: list) -> None:
    """Apply :func:`drop_rotations`'s rotations to the coordinates of ``v`` in place (its
    rows: ``v`` a vector or a matrix whose rows are coordinates); the dense reference of
    ``okoco._core._swap``'s."""
    for i, (c, s) in enumerate(rotations):
        first, other = v[j].copy(), v[j + 1 + i].copy()
        v[j] = c * first - s * other
        v[j + 1 + i] = s * first + c * other
