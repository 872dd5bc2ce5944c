r"""PROS-N-KONS and CON-KONS (Calandriello, Lazaric & Valko, NeurIPS 2017).

*Efficient Second-Order Online Kernel Learning with Adaptive Embedding*: a KORS dictionary
:math:`\mathcal I` over the unscaled kernel, the Nyström embedding of every point in the span of
that dictionary, and a primal Online Newton Step in :math:`\mathbb R^m`, :math:`m = |\mathcal I|`.
Per step, with :math:`L L^\top = K_{\mathcal I}` (``okoco.linalg.IncrementalCholesky``):

.. code-block:: text

    k = k_I(x_t),  kappa = k(x_t, x_t),  h = L^{-1} k        # O(m d + m^2)
    ybar = h . u;  yhat = clip(ybar, -C, C);  gdot = loss'(y_t, yhat)
    coin: KORS(k, kappa) decides whether x_t joins I        # O(m^2), skipped at max_size
    if it joins: border L (pivot sqrt(kappa - h.h)); u <- [u; 0]; P <- diag(P, 1/alpha)
    z = L^{-1} k_I(x_t)      (= [h; pivot] after a join, h otherwise)
    s = z . P z;  w = u - h(ybar) P z / s                    # oblique projection, P = A^{-1}
    q = w s;  P <- P - w (Pz)(Pz)^T / (1 + q)    # w = eta gdot^2 (or loss'' with "hessian")
    u <- w - gdot P z / (1 + q)                              # next step's u = w - A^{-1} g
    PROS-N-KONS only: after a join, restart u = 0, P = I / alpha (a new phase)

``u`` is the ONS point before the projection, so a prediction is ``clip(h . u)`` and costs one
triangular solve. Bordering leaves the first ``m`` coordinates of every embedding unchanged, so
CON-KONS's extension by a zero weight and a fresh ``alpha`` on the new coordinate is exact.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from okoco._core import _pros
from okoco._input import in_row
from okoco._validation import Interval
from okoco.dictionary import KORS
from okoco.learners.base import (
    ETA_HESSIAN,
    KernelLearner,
    compiled_kernel,
    compiled_loss,
    widened,
)
from okoco.learners.embedding import NystromEmbedding
from okoco.learners.ons import OnsHead
from okoco.linalg import IncrementalCholesky, PackedSymmetric, Rows

__all__ = ["PROSNKONS", "CONKONS"]

_NONE = np.zeros(0)  # no new coordinate (read-only)
_NONE.flags.writeable = False



class _UnitScale:
    """``noise_scale_sum`` of a model saved before the predictive variance (the field absent
    from its file): ``n_seen``, the unit scale, as KONS and KRLS upgrade theirs. A non-data
    descriptor, so the instance's own value, once set, takes precedence."""

    def __get__(self, obj, owner=None):
        return self if obj is None else float(obj.n_seen)


class PROSNKONS(NystromEmbedding, OnsHead, KernelLearner):
    r"""PROS-N-KONS: second-order online kernel learning in an adaptive Nyström embedding.

    Calandriello, Lazaric & Valko (2017), *Efficient Second-Order Online Kernel Learning with
    Adaptive Embedding* (NeurIPS), Algorithm 1. A KORS dictionary :math:`\mathcal I` (Kernel
    Online Row Sampling over the unscaled kernel, ridge ``dictionary_alpha``) decides whether
    :math:`x_t` joins; every point is embedded as
    :math:`z_t = L^{-1} k_{\mathcal I}(x_t)` with :math:`L L^\top = K_{\mathcal I}`, so that
    :math:`z_t^\top z_{t'} = k_{\mathcal I}(x_t)^\top K_{\mathcal I}^{-1} k_{\mathcal I}(x_{t'})`
    (the Nyström approximation), and an Online Newton Step runs on :math:`z_t`:

    .. math::

        u_t = w_{t-1} - A_{t-1}^{-1} g_{t-1},\quad
        w_t = \Pi^{A_{t-1}}_{\{|z_t^\top w| \le C\}}(u_t),\quad
        A_t = A_{t-1} + \eta_t g_t g_t^\top,\ g_t = \dot g_t z_t,

    with :math:`A = \alpha I` at the start of every phase. PROS-N-KONS starts a new phase
    (:math:`u = 0`, :math:`A = \alpha I` in :math:`\mathbb R^{m+1}`) each time the dictionary
    grows; :class:`CONKONS` continues instead. :math:`A^{-1}` is kept packed and updated by
    Sherman-Morrison (BLAS ``dspr``), the embedding factor is bordered, so a step costs
    :math:`O(m d + m^2)` whatever ``t`` is, and memory is :math:`O(m^2 + m d)`.

    The restarts give a regret bound of the form (number of phases :math:`J`, at most the
    dictionary size, :math:`O(d_{\rm eff}(\gamma)\log^2 T)` with high probability under KORS's
    conditions) times (an ONS regret of order :math:`d_{\rm eff}\log T` per phase), plus the
    Nyström approximation error controlled by the KORS accuracy ``eps`` and ridge. That is our
    reading of the paper's abstract; its Theorem 1 could not be checked (the user guide's page on
    PROS-N-KONS says what was compared, against two public ports of the algorithm).

    Choices the paper leaves open, made here:

    - the point that joins the dictionary is embedded over the *new* dictionary in its own step
      (exactly, :math:`z_t = [h; \text{pivot}]`); the restart then takes effect from the next
      step, which is the paper's "reset when :math:`z_{t-1} = 1`" and keeps ``predict_one``
      equal to the prediction the update uses;
    - :math:`L` is the bordered Cholesky factor rather than the paper's eigendecomposition
      :math:`\Sigma^{-1/2}U^\top`: the two embeddings differ by a rotation (same inner
      products, same ONS), and bordering costs :math:`O(m^2)` instead of :math:`O(m^3)`;
    - a point whose residual :math:`k(x,x) - h^\top h` is below :math:`10^{-10} k(x, x)` is
      already in the span of the dictionary to working precision and is not offered to KORS
      (as an atom it would add a coordinate of amplified rounding noise; KORS's regularized
      score can still be large for it);
    - ``max_size`` freezes the dictionary once full (KORS is no longer consulted).

    Parameters
    ----------
    kernel
        An ``okoco.kernels`` kernel; ``None`` means ``RBF(gamma=1/d)``, ``d`` the number of
        features at the first learn (as for :class:`okoco.learners.KONS`).
    loss
        An ``okoco.losses`` loss; ``None`` means ``Squared()``.
    C
        Predictions are clipped to ``[-C, C]``; the default 3 suits standardized targets.
    alpha
        Ridge of the preconditioner, :math:`A = \alpha I` at the start of a phase, > 0.
    eta
        :math:`\eta_t`: ``"hessian"`` (the default, as for :class:`okoco.learners.KONS`: the
        weight :math:`\eta_t\dot g_t^2` of :math:`z_t z_t^\top` in :math:`A` is the loss's
        second derivative :math:`\ell''(\hat y_t)`; not covered by the theorem),
        ``"exp-concave"`` (:math:`\sigma` of the loss: the step of the regret guarantee;
        public ports of PROS-N-KONS weight :math:`g_t g_t^\top` by :math:`\sigma/2`, i.e.
        ``eta=sigma / 2``), ``"sqrt"``, a number or a callable of ``t``.
    dictionary_alpha
        The KORS regularizer (the paper's :math:`\gamma`), > 0: smaller keeps more atoms and
        embeds more accurately.
    eps
        KORS accuracy in ``(0, 1]``.
    beta
        KORS oversampling, >= 0 (``okoco.dictionary.beta_proof`` gives the theoretical value;
        the default 3 was chosen by measurement on families of streams, docs/defaults.md).
    p_min
        KORS's floor of the sampling probability, in ``[0, 1]`` (``1`` keeps every point).
    max_size
        Hard cap on the dictionary (memory :math:`O(\text{max\_size}^2)`; the default 500 was
        chosen by measurement, docs/defaults.md). Once full, the embedding is frozen and ONS
        continues in it; the regret guarantee no longer holds (the embedding's error is then
        not controlled). On river's Friedman #1 (``benchmarks/bench_long_streams.py``)
        ``CONKONS()`` has MAE 1.10 over the first 10,000 steps and 0.97-0.99 over every later
        10,000 up to 100,000 (the Bayes MAE is 0.80): its frozen dictionary of ``RBF(1/d)``
        stops improving there (a rule that replaces atoms once full,
        ``okoco.learners.embedding.SharedEmbedding.swap_in``, did not do better on the streams
        measured: ``okoco.learners.auto.DICTIONARY``). ``None``: no cap, the learner of the
        theorem.
    seed
        Seed of KORS's coins.

    Attributes
    ----------
    n_seen
        Steps learned.
    dictionary_size
        Atoms :math:`m` (the embedding's dimension).
    n_restarts
        Phases started after the first (PROS-N-KONS; always 0 for CON-KONS).
    online_effective_dimension
        :math:`\sum_t q_t/(1+q_t)`, :math:`q_t = \eta_t g_t^\top A_{t-1}^{-1} g_t`.
    log_det
        :math:`\log\det(A_t/\alpha)` of the current phase.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from okoco import kernels
    >>> from okoco.learners import PROSNKONS
    >>> model = preprocessing.TargetStandardScaler(
    ...     preprocessing.StandardScaler() | PROSNKONS(kernel=kernels.RBF(0.1), C=3.0, seed=0))
    >>> evaluate.progressive_val_score(datasets.TrumpApproval().take(300), model, metrics.MAE())
    MAE: ...
    """

    _restart = True
    noise_scale_sum = _UnitScale()
    _hessian_step = True  # eta="hessian" is a policy here
    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "eta": ETA_HESSIAN,
        "dictionary_alpha": [Interval(Real, 0, None, closed="neither")],
        "eps": KORS._parameter_constraints["eps"],
        "beta": KORS._parameter_constraints["beta"],
        "p_min": KORS._parameter_constraints["p_min"],
        "max_size": [None, Interval(Integral, 1, None, closed="left")],
        "seed": ["seed"],
    }

    _saved_state = {"alpha": "number", "eta": "str|number", "dictionary_alpha": "number",
                    "eps": "number", "beta": "number", "p_min": "number", "max_size": "int|none",
                    "seed": "int|none|rng", "_kors": "obj:KORS as kors",
                    "_store": "obj:Rows as store",
                    "_embed": "obj:IncrementalCholesky as embedding",
                    "_u": "array(>=embedding.size) float64 as ons_point",
                    "_P": "obj:PackedSymmetric as ons_inverse", "noise_scale_sum": "opt float",
                    "n_restarts": "int[0,]", "online_effective_dimension": "float",
                    "log_det": "float", "_ons": "cache:None"}

    def __init__(self, kernel=None, loss=None, C: float = 3.0, alpha: float = 0.1,
                 eta="hessian", dictionary_alpha: float = 1.0, eps: float = 0.5,
                 beta: float = 3.0, p_min: float = 0.0, max_size: int | None = 500,
                 seed: int | None = None):
        self.kernel = kernel
        self.loss = loss
        self.C = C
        self.alpha = alpha
        self.eta = eta
        self.dictionary_alpha = dictionary_alpha
        self.eps = eps
        self.beta = beta
        self.p_min = p_min
        self.max_size = max_size
        self.seed = seed
        self._setup()

    def _reset_state(self) -> None:
        self._kors = KORS(kernel=None, alpha=self.dictionary_alpha, eps=self.eps,
                          beta=self.beta, p_min=self.p_min, seed=self._rng)
        self._store = Rows()  # the atoms, for kernel rows
        self._embed = IncrementalCholesky()  # L L^T = K_I
        self._u = np.zeros(16)  # the ONS point before projection, in a doubling buffer
        self._P = PackedSymmetric()  # A^{-1} of the current phase
        self._ons = None  # the head's compiled state (okoco.learners.ons.OnsHead._ons_state)
        self.n_restarts = 0
        self.online_effective_dimension = 0.0
        self.log_det = 0.0
        # sum of (y_t - yhat_t)^2 / (spread_t + alpha/2): the predictive variance's scale
        self.noise_scale_sum = 0.0

    # -- embedding -----------------------------------------------------------------------

    def _analyse(self, v: np.ndarray):
        """Kernel row, diagonal and embedding ``h = L^{-1} k_I(v)`` (no state change)."""
        return self._cached(v, self._analyse_now)

    def _analyse_now(self, v: np.ndarray):
        # the last entry will hold (A^{-1} z, s) once computed (_direction): the variance of
        # predict_one(x, with_dist=True) and the step of learn_one on the same row share it
        return (*self._embedding_of(v), [])

    def _direction(self, analysis) -> tuple[np.ndarray, float]:
        """``(A^{-1} z, s)`` of an :meth:`_analyse` result, computed once per analysis."""
        memo = analysis[3]
        if not memo:
            memo.append(self._ons_direction(analysis[2], self.eta == "hessian"))
        return memo[0]

    def embed(self, x: dict) -> np.ndarray:
        """The embedding :math:`z = L^{-1} k_{\\mathcal I}(x)` of one point (a new array).

        Inner products of embeddings are the Nyström approximation
        :math:`k_{\\mathcal I}(x)^\\top K_{\\mathcal I}^{-1} k_{\\mathcal I}(x')`.
        """
        return self._analyse(self._features.encode(x, arrays=False)[0])[2].copy()

    # -- protocol ------------------------------------------------------------------------

    def _predict_vec(self, v: np.ndarray) -> float:
        return self._ons_predict(self._analyse(v)[2])

    def _predictive_variance(self, v: np.ndarray) -> float:
        r""":math:`\hat\tau^2(s(x) + \alpha/2)` for ``predict_one(x, with_dist=True)``.

        :math:`s(x) = \alpha\,z^\top A^{-1} z + (k(x, x) - z^\top z)`, with
        :math:`z = L^{-1}k_{\mathcal I}(x)` the embedding and :math:`A` the current phase's
        preconditioner: the :math:`A`-norm of :math:`\phi(x)` scaled by :math:`\alpha`, as
        for :class:`okoco.learners.KONS`, in the RKHS where :math:`A` is :math:`\alpha I`
        outside the span of the dictionary (the Nyström residual :math:`k(x, x) - z^\top z`).
        With the squared loss and the curvature step (no clipping) the ONS point is ridge
        regression on the embeddings with ridge :math:`\alpha/2`, and this is its
        Gaussian-process posterior variance with noise ratio :math:`\alpha/2`; with every point
        in the dictionary (CON-KONS, ``p_min=1``) that of the exact kernel,
        :math:`k(x, x) - k^\top(K + \frac\alpha2 I)^{-1}k`. At a PROS-N-KONS restart
        :math:`A = \alpha I` and :math:`s(x) = k(x, x)`, the prior. The scale
        :math:`\hat\tau^2 = (1 + \sum_u (y_u - \hat y_u)^2 / (s_u + \alpha/2)) / (1 + t)`
        is estimated online from the a-priori errors (one unit pseudo-observation keeps it
        above 0). One product with :math:`A^{-1}` beyond the prediction's solve,
        :math:`O(m^2)`, which ``learn_one`` on the same row then reuses for its step.
        """
        analysis = self._analyse(v)
        _, kappa, h, _ = analysis
        return self._ons_variance(self._direction(analysis)[1], kappa - float(h @ h),
                                  self.n_seen)

    def _predict_vecs(self, V: np.ndarray) -> np.ndarray:
        H = self._embed.half_solve(self._store.kernel_block(self._kernel, V))
        return self._u[: self._embed.size] @ H

    def _learn_vec(self, v: np.ndarray, y: float, eta: float) -> None:
        """One step: the head's (:class:`okoco.learners.embedding.OnsHead`) in the
        embedding's coordinates, planned for both outcomes of KORS's coin before it is drawn,
        so that a refused step changes nothing."""
        analysis = self._analyse(v)
        k, kappa, h, _ = analysis
        residual = kappa - float(h @ h)
        pivot = self._join_pivot(kappa, residual)  # if it can join: a new coordinate, its pivot
        state = self._ons_plan(y, h, self._ons_predict(h), eta,
                               _NONE if pivot is None else np.array([pivot]), True)
        joined = pivot is not None and self._offer(v, k, kappa, h)
        self._ons_commit(state, y, residual, 1 if joined else 0)
        if joined and self._restart:
            self._new_phase(self._embed.size)

    def _learn_vecs(self, V: np.ndarray, targets: list, etas: list,
                    predict: bool) -> np.ndarray | None:
        """The test-then-train loop over the rows in compiled code (:meth:`_run`); a row whose
        point joins, or whose values need a worded error, takes the Python step."""
        spec, loss = compiled_kernel(self._kernel), compiled_loss(self._loss)
        rows = len(targets)
        if spec is None or loss is None or not rows or not V.shape[1]:
            return super()._learn_vecs(V, targets, etas, predict)
        self._store.make_room(0, V.shape[1])
        V = widened(V, self._store.d)
        hessian = etas[0] is None  # eta="hessian": the weight of g g^T is loss'' itself
        eta = np.zeros(rows) if hessian else np.asarray(etas, dtype=float)
        y = np.asarray(targets, dtype=float)
        predictions = np.empty(rows)
        first, t, block = self.n_seen, 0, 64
        while t < rows:
            t, status = self._run(V, y, eta, hessian, predictions, t, block)
            self.n_seen, self._cache = first + t, None
            if status == _pros.STATUS_NEED_COINS:
                block *= 2
            elif status:  # a row for the Python step
                if predict:
                    z = in_row(t, self._predict_vec, V[t])
                    predictions[t] = self._clip(z) if math.isfinite(z) else z
                in_row(t, self._learn_vec, V[t], targets[t], etas[t])
                t += 1
                self.n_seen, self._cache = first + t, None
        return predictions if predict else None

    def _run(self, V: np.ndarray, y: np.ndarray, eta: np.ndarray, hessian: bool,
             predictions: np.ndarray, t: int, block: int) -> tuple[int, int]:
        """The compiled steps over rows ``t ..`` of ``V`` (``_pros.pros_run``) until a row
        needs the Python step; returns that row and the status. KORS's coins are drawn ahead,
        ``block`` at most; the generator is then set back to where only the coins of the rows
        learned were drawn, so the Python step draws the same coin as row by row."""
        store, kors = self._store, self._kors
        rng = kors.rng
        state = rng.bit_generator.state
        coins = rng.random(min(block, V.shape[0] - t))
        head = self._ons_state(hessian)
        stop, status, used, seen, q, tau, p, counters = _pros.pros_run(
            compiled_kernel(self._kernel),
            (store.data, store.squared_norms()[0], self._embed.factor_storage(), store.d), head,
            (kors.weight_storage(), kors.cholesky.factor_storage(), float(kors.alpha),
             float(kors.eps), float(kors.beta), float(kors.p_min)),
            coins, eta, self.max_size or 0,
            (self.online_effective_dimension, self.log_det, self.noise_scale_sum),
            (V, y, t, predictions))
        self.online_effective_dimension, self.log_det, self.noise_scale_sum = counters
        if used < coins.shape[0]:
            rng.bit_generator.state = state
            rng.random(used)
        if seen:  # the points KORS scored and did not keep
            kors.record_rejected(seen, q, tau, p)
        return stop, status

    def _new_phase(self, m: int) -> None:
        """PROS-N-KONS's restart: ``u = 0`` and ``A = alpha I`` over the new dictionary."""
        self._u[:m] = 0.0
        self._P = PackedSymmetric.scaled_identity(m, 1.0 / self.alpha)
        self.log_det = 0.0
        self.n_restarts += 1

    @property
    def dictionary_size(self) -> int:
        return self._embed.size

    @property
    def weights(self) -> np.ndarray:
        """The ONS point :math:`u` in embedding coordinates (a copy; the next prediction at
        ``x`` is ``clip(embed(x) . weights)``)."""
        return self._u[: self._embed.size].copy()

    @property
    def atoms(self) -> np.ndarray:
        """The dictionary points, ``(dictionary_size, n_features)`` (a copy)."""
        return self._store.view().copy()

    @classmethod
    def _unit_test_params(cls):
        yield {"seed": 0}
        yield {"p_min": 1.0, "max_size": 20, "seed": 1}


class CONKONS(PROSNKONS):
    r"""CON-KONS: :class:`PROSNKONS` without restarts.

    Calandriello, Lazaric & Valko (2017), *Efficient Second-Order Online Kernel Learning with
    Adaptive Embedding* (NeurIPS), the continuous variant of PROS-N-KONS. When a point joins
    the dictionary, the ONS point is extended by a zero and :math:`A` by :math:`\alpha` on the
    new coordinate; since the bordered factor leaves the existing coordinates of every
    embedding unchanged, the function learned so far is kept exactly. With every point in the
    dictionary (``p_min=1``) this is the primal ONS on the Nyström features of all the points.
    Parameters, attributes and costs are those of :class:`PROSNKONS` (``n_restarts`` stays 0).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco import kernels
    >>> from okoco.learners import CONKONS
    >>> model = CONKONS(kernel=kernels.RBF(1.0), C=1.0, seed=0)
    >>> for x in np.random.default_rng(0).uniform(-3, 3, 1000):
    ...     model.learn_one({"x": x}, float(np.sin(x)))
    >>> bool(abs(model.predict_one({"x": 1.0}) - np.sin(1.0)) < 0.02), model.dictionary_size < 50
    (True, True)
    """

    _restart = False
