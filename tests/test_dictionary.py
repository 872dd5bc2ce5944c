"""Tests of okoco.dictionary against independent dense references (np.linalg, explicit features).

Reference numbers come from the spec digests (spec/kons-kors-sketched-kons.md §3 and §7,
spec/ink-estimate-squeak.md Part E, spec/ridge-leverage-scores-oks-krls.md "Testable claims").
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from okoco.dictionary import (
    ALD,
    KORS,
    SQUEAK,
    INKEstimate,
    NystromKRR,
    approximate_ridge_leverage_scores,
    beta_paper,
    beta_proof,
    effective_dimension,
    log_det,
    max_degrees_of_freedom,
    online_effective_dimension,
    online_ridge_leverage_scores,
    ridge_leverage_scores,
    shrink_expand,
)
from okoco.kernels import RBF, Linear


# ---------------------------------------------------------------------------- helpers
class Bernoulli:
    """Bernoulli kernel (-1)^(s-1)/(2s)! B_2s({x - y}) on [0, 1] (seed 003, corrected sign)."""

    def __init__(self, s=1):
        self.s = s

    def _b(self, t):
        if self.s == 1:
            return (t * t - t + 1.0 / 6.0) / 2.0
        return -(t**4 - 2 * t**3 + t**2 - 1.0 / 30.0) / 24.0

    def __call__(self, X, Y=None):
        X = np.atleast_2d(np.asarray(X, float))
        Y = X if Y is None else np.atleast_2d(np.asarray(Y, float))
        return self._b(np.mod(X[:, :1] - Y[:, :1].T, 1.0))

    def diag(self, X):
        return np.full(np.atleast_2d(X).shape[0], self._b(0.0))


class ZeroKernel:
    def __call__(self, X, Y=None):
        X = np.atleast_2d(X)
        Y = X if Y is None else np.atleast_2d(Y)
        return np.zeros((X.shape[0], Y.shape[0]))

    def diag(self, X):
        return np.zeros(np.atleast_2d(X).shape[0])


def dense_rls(K, alpha):
    """diag(K (K + alpha I)^{-1}) by a direct solve."""
    return np.diag(np.linalg.solve(K + alpha * np.eye(len(K)), K))


def psi_error(K, alpha, w):
    """||(K+aI)^{-1/2} K^{1/2} (I - S S^T) K^{1/2} (K+aI)^{-1/2}||_2 with diag(S S^T) = w."""
    s, U = np.linalg.eigh(K)
    s = np.clip(s, 0.0, None)
    f = s / (s + alpha)
    keep = f > 1e-14
    Psi = np.sqrt(f[keep])[:, None] * U[:, keep].T
    D = (Psi * (1.0 - w)[None, :]) @ Psi.T
    return float(np.abs(np.linalg.eigvalsh(D)).max())


def weights_vector(d, n):
    w = np.zeros(n)
    w[d.indices] = d.weights
    return w


def nystrom_dense(K, idx, w, alpha):
    """K S (S^T K S + alpha I)^{-1} S^T K with pinv (alpha = 0 allowed)."""
    C = K[:, idx] * np.sqrt(w)[None, :]
    W = np.sqrt(w)[:, None] * K[np.ix_(idx, idx)] * np.sqrt(w)[None, :] + alpha * np.eye(len(idx))
    return C @ np.linalg.pinv(W) @ C.T


def beta_design(n=500):
    return beta_dist.ppf((np.arange(n) + 0.5) / n, 0.2, 0.2)[:, None]


# ---------------------------------------------------------------------------- exact utilities
def test_rls_three_forms_agree_and_basic_properties():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    K = RBF(gamma=0.5)(X, X)
    alpha = 0.3
    tau = ridge_leverage_scores(K, alpha)
    np.testing.assert_allclose(tau, dense_rls(K, alpha), rtol=1e-8, atol=1e-12)
    G = np.linalg.solve(K + alpha * np.eye(80), K)
    third = (np.diag(K) - np.einsum("ij,ij->j", K, G)) / alpha
    np.testing.assert_allclose(tau, third, rtol=1e-6, atol=1e-10)
    assert np.all(tau >= 0) and np.all(tau < 1)
    d = effective_dimension(K, alpha)
    assert d == pytest.approx(tau.sum(), rel=1e-10)
    assert d == pytest.approx(np.trace(G), rel=1e-10)
    assert max_degrees_of_freedom(K, alpha) == pytest.approx(80 * tau.max())
    assert max_degrees_of_freedom(K, alpha) >= d
    alphas = [1e-3, 1e-2, 0.1, 1.0, 10.0]
    ds = [effective_dimension(K, a) for a in alphas]
    assert all(a > b for a, b in zip(ds, ds[1:]))
    assert ds[0] <= np.linalg.matrix_rank(K)
    scores = np.array([ridge_leverage_scores(K, a) for a in alphas])
    assert np.all(np.diff(scores, axis=0) <= 1e-12)
    # eps l(lambda eps) <= l(lambda) <= l(lambda eps)
    e = 0.25
    assert np.all(e * ridge_leverage_scores(K, alpha * e) <= tau + 1e-12)
    assert np.all(tau <= ridge_leverage_scores(K, alpha * e) + 1e-12)


def test_rls_sanity_values():
    alpha = 0.5
    np.testing.assert_allclose(ridge_leverage_scores(np.eye(4), alpha), 1 / (1 + alpha))
    t = 6
    np.testing.assert_allclose(ridge_leverage_scores(np.ones((t, t)), alpha), 1 / (t + alpha))
    np.testing.assert_allclose(
        online_ridge_leverage_scores(np.ones((t, t)), alpha), 1 / (np.arange(1, t + 1) + alpha)
    )


def test_linear_kernel_effective_dimension_and_ols_limit():
    X = np.random.default_rng(1).normal(size=(60, 4))
    K = X @ X.T
    assert effective_dimension(K, 1e-3) <= 4
    hat = np.diag(X @ np.linalg.solve(X.T @ X, X.T))
    errors = [np.abs(ridge_leverage_scores(K, a) - hat).max() for a in (1e-2, 1e-4, 1e-6)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-7


def test_online_scores_log_det_and_lemma_3():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    K = RBF(gamma=1.0)(X, X)
    alpha = 0.2
    online = online_ridge_leverage_scores(K, alpha)
    ref = np.array([dense_rls(K[: t + 1, : t + 1], alpha)[t] for t in range(60)])
    np.testing.assert_allclose(online, ref, rtol=1e-9)
    d_onl = online_effective_dimension(K, alpha)
    ld = log_det(K, alpha)
    assert ld == pytest.approx(np.linalg.slogdet(K / alpha + np.eye(60))[1], rel=1e-10)
    d_eff = effective_dimension(K, alpha)
    assert d_onl <= ld <= d_eff * (1 + np.log(np.linalg.norm(K, 2) / alpha + 1))


def test_circulant_design_has_uniform_scores():
    n = 500
    x = (np.arange(n) / n)[:, None]
    K = Bernoulli(1)(x, x)
    tau = ridge_leverage_scores(K, n * 10**-3.5)
    assert tau.std() / tau.mean() < 1e-8
    assert effective_dimension(K, n * 10**-3.5) == pytest.approx(27.07, abs=0.01)
    assert max_degrees_of_freedom(K, n * 10**-3.5) == pytest.approx(27.07, abs=0.01)
    np.testing.assert_allclose(ridge_leverage_scores(K, n * 1e-6), 0.7056, atol=1e-4)


def test_non_uniform_design_scores_are_peaked_in_the_centre():
    x = beta_design()
    K = Bernoulli(1)(x, x)
    alpha = 500 * 10**-3.5
    tau = ridge_leverage_scores(K, alpha)
    assert effective_dimension(K, alpha) == pytest.approx(20.99, abs=0.01)
    assert max_degrees_of_freedom(K, alpha) == pytest.approx(45.1, abs=0.1)
    assert abs(x[np.argmax(tau), 0] - 0.5) < 0.05
    assert tau.max() / tau.min() > 10


def test_approximate_scores_are_exact_for_the_nystrom_matrix():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 2))
    k = RBF(gamma=2.0)  # keeps the sampled overlap W well conditioned, so L = C W^+ C^T is sharp
    K = k(X, X)
    alpha = 0.5
    exact = ridge_leverage_scores(K, alpha)
    for seed in range(5):
        approx, J = approximate_ridge_leverage_scores(
            X, k, alpha, n_columns=40, seed=seed, return_indices=True
        )
        L = K[:, J] @ np.linalg.pinv(K[np.ix_(J, J)], rcond=1e-12, hermitian=True) @ K[J, :]
        np.testing.assert_allclose(approx, dense_rls(L, alpha), rtol=1e-6, atol=1e-8)
        assert np.all(approx <= exact + 1e-9)
    # all columns sampled: the scores are exact
    full = approximate_ridge_leverage_scores(X, k, alpha, n_columns=5000, seed=0)
    np.testing.assert_allclose(full, exact, rtol=1e-6, atol=1e-9)


def test_approximate_scores_improve_with_more_columns():
    X = np.random.default_rng(4).normal(size=(300, 2))
    k = RBF(gamma=0.5)
    alpha = 1.0
    exact = ridge_leverage_scores(k(X, X), alpha)
    d = exact.sum()
    ratios = [
        np.median(
            [
                approximate_ridge_leverage_scores(X, k, alpha, int(c * d), seed=s).sum() / d
                for s in range(5)
            ]
        )
        for c in (1, 8)
    ]
    assert ratios[0] < ratios[1] <= 1.0 + 1e-9
    assert ratios[1] > 0.8


# ---------------------------------------------------------------------------- Nyström and KRR
def test_nystrom_krr_woodbury_equals_dense_solve():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    k = RBF(gamma=0.7)
    K = k(X, X)
    idx = np.array([3, 10, 11, 40, 77, 90, 100, 101])
    w = rng.uniform(0.5, 3.0, size=idx.size)
    for gamma in (0.0, 0.3):
        model = NystromKRR(k, alpha=0.2, regularization=gamma).fit(X, y, indices=idx, weights=w)
        Kt = nystrom_dense(K, idx, w, gamma)
        w_ref = np.linalg.solve(Kt + 0.2 * np.eye(120), y)
        np.testing.assert_allclose(model.dual_coef_, w_ref, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(model.fitted_, Kt @ w_ref, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(model.predict(X), model.fitted_, rtol=1e-10, atol=1e-12)


def test_nystrom_krr_full_landmarks_is_exact_krr_and_duplicates_merge():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 2))
    y = rng.normal(size=50)
    k = RBF(gamma=0.5)
    K = k(X, X)
    full = NystromKRR(k, alpha=0.1).fit(X, y)
    np.testing.assert_allclose(
        full.fitted_, K @ np.linalg.solve(K + 0.1 * np.eye(50), y), rtol=1e-6
    )
    dup = NystromKRR(k, alpha=0.1, regularization=0.5).fit(X, y, indices=[1, 1, 1, 4, 9])
    merged = NystromKRR(k, alpha=0.1, regularization=0.5).fit(X, y, indices=[1, 4, 9],
                                                              weights=[3, 1, 1])
    np.testing.assert_allclose(dup.fitted_, merged.fitted_, rtol=1e-10)
    plain_dup = NystromKRR(k, alpha=0.1).fit(X, y, indices=[1, 1, 4, 9], weights=[1, 5, 2, 3])
    plain = NystromKRR(k, alpha=0.1).fit(X, y, indices=[1, 4, 9])
    np.testing.assert_allclose(plain_dup.fitted_, plain.fitted_, rtol=1e-8)


def test_dictionary_nystrom_features_match_dense_formula():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 2))
    k = RBF(gamma=0.5)
    K = k(X, X)
    kors = KORS(k, alpha=0.5, eps=0.5, beta=3.0, seed=0)
    kors.update_many(X)
    S = kors.selection_matrix()
    Kt_ref = K @ S @ np.linalg.solve(S.T @ K @ S + 0.5 * np.eye(kors.size), S.T @ K)
    np.testing.assert_allclose(kors.approximate_kernel(X), Kt_ref, atol=1e-9)
    Z = kors.nystrom_features(X)
    np.testing.assert_allclose(Z @ Z.T, Kt_ref, atol=1e-9)
    # 0 <= K - K~ <= K for every S (deterministic, so it proves nothing about accuracy)
    E = K - Kt_ref
    assert np.linalg.eigvalsh(E).min() > -1e-9
    assert np.linalg.eigvalsh(K - E).min() > -1e-9
    model = NystromKRR.from_dictionary(kors, alpha=0.1).fit(X, X[:, 0])
    assert model.regularization == 0.5 and model.landmarks_.shape == (kors.size, 2)


def bernoulli_risk(H, f, sigma):
    n = len(f)
    return (np.sum(((H - np.eye(n)) @ f) ** 2) + sigma**2 * np.trace(H @ H)) / n


def test_leverage_nystrom_krr_beats_uniform_on_bernoulli_design():
    """Spec recipe R-003-B: exact-RLS sampling at p = 2 d_eff vs uniform, 100 draws each."""
    n, sigma = 500, 0.5
    x = beta_design(n)
    k = Bernoulli(1)
    K = k(x, x)
    mu = n * 10**-3.5
    f = np.sin(2 * np.pi * x[:, 0]) + 0.5 * np.cos(6 * np.pi * x[:, 0])
    base = bernoulli_risk(K @ np.linalg.inv(K + mu * np.eye(n)), f, sigma)
    assert base == pytest.approx(0.00728, rel=0.01)
    tau = ridge_leverage_scores(K, mu)
    p = int(round(2 * tau.sum()))
    rng = np.random.default_rng(0)
    ratios = {"leverage": [], "uniform": []}
    eye = np.eye(n)
    for name, probs in (("leverage", tau / tau.sum()), ("uniform", np.full(n, 1 / n))):
        for _ in range(100):
            idx = rng.choice(n, size=p, replace=True, p=probs)
            H = NystromKRR(k, alpha=mu).fit(x, eye, indices=idx,
                                            weights=1 / (p * probs[idx])).fitted_
            ratios[name].append(bernoulli_risk(H, f, sigma) / base)
    lev, uni = np.mean(ratios["leverage"]), np.mean(ratios["uniform"])
    assert 0.9 <= lev <= 1.15
    assert uni - lev > 0.15


# ---------------------------------------------------------------------------- KORS
def dense_eq4(K_prefix, kept, w, alpha, eps):
    """Second form of Eq. 4 with the temporary dictionary I ∪ {t} (t = last row of K_prefix)."""
    t = K_prefix.shape[0] - 1
    idx = np.append(kept, t).astype(int)
    ws = np.append(w, 1.0)
    kt = K_prefix[idx, t] * np.sqrt(ws)
    A = np.sqrt(ws)[:, None] * K_prefix[np.ix_(idx, idx)] * np.sqrt(ws)[None, :]
    return (
        (1 + eps)
        / alpha
        * (K_prefix[t, t] - kt @ np.linalg.solve(A + alpha * np.eye(len(idx)), kt))
    )


def test_kors_incremental_tau_equals_dense_eq4_both_forms():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(150, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    k = Linear()
    K = k(X, X)
    alpha, eps = 0.3, 0.5
    kors = KORS(k, alpha=alpha, eps=eps, beta=2.0, seed=1)
    errs2, errs1 = [], []
    for t in range(150):
        kept, w = kors.indices, kors.weights
        second = dense_eq4(K[: t + 1, : t + 1], kept, w, alpha, eps)
        # first form with explicit features: (1+eps) phi^T (Phi S S^T Phi^T + phi phi^T + aI)^-1 phi
        Phi = X[kept].T * np.sqrt(w)[None, :]
        A = Phi @ Phi.T + np.outer(X[t], X[t]) + alpha * np.eye(4)
        first = (1 + eps) * X[t] @ np.linalg.solve(A, X[t])
        kors.update(X[t])
        errs2.append(abs(kors.last_tau - second))
        errs1.append(abs(kors.last_tau - first))
    assert max(errs2) < 1e-9 and max(errs1) < 1e-9
    assert 0 < kors.size < 150  # the test exercised both kept and dropped points


def test_kors_keeping_everything_gives_exactly_one_plus_eps_times_tau():
    X = np.random.default_rng(9).normal(size=(120, 2))
    k = RBF(gamma=0.5)
    alpha, eps = 0.4, 0.3
    kors = KORS(k, alpha=alpha, eps=eps, beta=0.0, p_min=1.0, seed=0)
    taus = []
    for x in X:
        assert kors.update(x)
        taus.append(kors.last_tau)
    K = k(X, X)
    exact = np.array([dense_rls(K[: t + 1, : t + 1], alpha)[t] for t in range(120)])
    np.testing.assert_allclose(taus, (1 + eps) * exact, rtol=1e-9)
    np.testing.assert_array_equal(kors.weights, 1.0)
    np.testing.assert_array_equal(kors.indices, np.arange(120))


def test_kors_update_column_matches_kernel_driven_run_and_rescaled_eq4():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(100, 2))
    k = RBF(gamma=0.5)
    K = k(X, X)
    ref = KORS(k, alpha=0.5, eps=0.5, beta=3.0, p_min=0.05, seed=3)
    col = KORS(None, alpha=0.5, eps=0.5, beta=3.0, p_min=0.05, seed=3)
    for t in range(100):
        ref.update(X[t])
        added, tau, p = col.update_column(K[col.indices, t], K[t, t])
        # the Gram block and the learners' kernel rows round differently (matrix product vs
        # matrix-vector product): equal to 1e-12, the same coins
        assert added == ref.last_added
        assert (tau, p) == pytest.approx((ref.last_tau, ref.last_p), rel=1e-12, abs=1e-12)
        assert (col.last_tau, col.last_p) == (tau, p)
    np.testing.assert_array_equal(col.indices, ref.indices)
    np.testing.assert_allclose(col.weights, ref.weights, rtol=1e-12)
    # rescaled kernel, as Sketched-KONS uses it: Kbar = D K D
    d = rng.uniform(-2.0, 2.0, size=100)
    Kbar = d[:, None] * K * d[None, :]
    kors = KORS(None, alpha=0.5, eps=0.5, beta=3.0, seed=4)
    for t in range(100):
        kept, w = kors.indices, kors.weights
        _, tau, p = kors.update_column(Kbar[kept, t], Kbar[t, t])
        assert tau == pytest.approx(
            dense_eq4(Kbar[: t + 1, : t + 1], kept, w, 0.5, 0.5), rel=1e-9, abs=1e-12
        )
        assert p == max(min(3.0 * tau, 1.0), 0.0)
    with pytest.raises(RuntimeError):
        _ = kors.atoms


@pytest.mark.parametrize("p_min", [0.0, 0.3])
def test_kors_inverse_form_with_removals_equals_dense_eq4(p_min):
    """The inverse form (Sketched-KONS's window): atoms leave (the oldest, and one from the
    middle), and every estimate is still Eq. 4 against the atoms held, by a dense solve; the
    coins are those of the factor's form on the same stream (same seed, same removals)."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=(160, 2))
    d = np.where(rng.uniform(size=160) < 0.1, 0.0, rng.uniform(0.5, 2.0, size=160))
    Kbar = d[:, None] * RBF(gamma=0.5)(X, X) * d[None, :]
    inverse = KORS(None, alpha=0.5, eps=0.5, beta=3.0, p_min=p_min, seed=6)
    inverse._use_inverse()
    factor = KORS(None, alpha=0.5, eps=0.5, beta=3.0, p_min=p_min, seed=6)
    for t in range(160):
        kept, w = inverse.indices, inverse.weights
        column = Kbar[kept, t]
        if d[t] == 0.0:
            added = inverse._update_null()
            tau = inverse.last_tau
            assert factor._update_null() == added
        else:
            added, tau, _ = inverse.update_column(column, Kbar[t, t])
            assert factor.update_column(column, Kbar[t, t])[0] == added
        expected = dense_eq4(Kbar[: t + 1, : t + 1], kept, w, 0.5, 0.5) if d[t] else 0.0
        assert tau == pytest.approx(expected, rel=1e-9, abs=1e-12)
        for kors in (inverse, factor):
            if kors.size > 12:
                kors.remove(0)
            if t % 17 == 16 and kors.size > 3:
                kors.remove(kors.size // 2)
            kors._flush()
        np.testing.assert_array_equal(inverse.indices, factor.indices)
    assert inverse.cholesky.size == 0 and inverse._inverse.size == inverse.size == factor.size
    with pytest.raises(RuntimeError, match="before the first atom"):
        inverse._use_inverse()


def test_kors_null_point_is_update_column_with_zeros():
    """Sketched-KONS's zero-gradient step: the same coins and the same factor as passing the
    zero column, without the solve."""
    rng = np.random.default_rng(12)
    a = KORS(None, alpha=0.5, eps=0.5, beta=3.0, p_min=0.25, seed=5)
    b = KORS(None, alpha=0.5, eps=0.5, beta=3.0, p_min=0.25, seed=5)
    X = rng.normal(size=(120, 2))
    d = np.where(rng.uniform(size=120) < 0.5, 0.0, rng.uniform(0.5, 2.0, size=120))
    Kbar = d[:, None] * RBF(gamma=0.5)(X, X) * d[None, :]
    for t in range(120):
        column = Kbar[b.indices, t]
        expected = b.update_column(column, Kbar[t, t])
        if d[t] == 0.0:
            assert a._update_null() == expected[0]
            assert (a.last_tau, a.last_p, a.last_q) == (0.0, 0.25, 0.0)
            assert (b.last_tau, b.last_p, b.last_q) == (0.0, 0.25, 0.0)
        else:
            assert a.update_column(column, Kbar[t, t]) == expected
    assert a.n_seen == b.n_seen == 120 and 0 < a.size < 120
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.cholesky.half_solve(np.ones(a.size)),
                                  b.cholesky.half_solve(np.ones(b.size)))
    assert (d[a.indices] == 0).any()  # the floor kept some null points


def test_kors_edge_cases_and_reproducibility():
    X = np.random.default_rng(11).normal(size=(80, 3))
    k = RBF(gamma=0.5)
    none = KORS(k, alpha=1.0, eps=0.5, beta=0.0, p_min=0.0, seed=0)
    assert not none.update_many(X).any() and none.size == 0
    runs = [KORS(k, alpha=1.0, eps=0.5, beta=1.0, seed=s) for s in (5, 5, 6)]
    for r in runs:
        r.update_many(X)
    np.testing.assert_array_equal(runs[0].indices, runs[1].indices)
    assert not np.array_equal(runs[0].indices, runs[2].indices)
    assert np.all(runs[0].weights >= 1.0)
    np.testing.assert_array_equal(runs[0].atoms, X[runs[0].indices])


def test_beta_helpers():
    assert beta_paper(1000, 0.05, 0.5) == pytest.approx(3 * np.log(1000 / 0.05) / 0.25)
    assert beta_proof(1000, 0.05, 0.5) == pytest.approx(3 * np.log(4 * 1000**2 / 0.05) / 0.25)
    assert beta_proof(1000, 0.05, 0.5) > beta_paper(1000, 0.05, 0.5)
    for bad in (
        {"T": 0, "delta": 0.1, "eps": 0.5},
        {"T": 10, "delta": 1.0, "eps": 0.5},
        {"T": 10, "delta": 0.1, "eps": 0.0},
    ):
        with pytest.raises(ValueError):
            beta_proof(**bad)


@pytest.mark.slow
def test_kors_two_sided_accuracy_with_proof_beta():
    """Thm 2 with beta = 3 log(4T^2/delta)/eps^2: in >= 1 - delta of seeds, for every checked t,
    ||Psi_t (I - S S^T) Psi_t^T|| <= eps and tau <= tau~ <= rho tau."""
    T, delta, eps, alpha = 2000, 0.1, 0.5, 10.0
    rng = np.random.default_rng(12)
    X = rng.uniform(size=(T, 1))
    k = RBF(gamma=0.5)
    K = k(X, X)
    exact_online = online_ridge_leverage_scores(K, alpha)
    d_onl = exact_online.sum()
    rho = (1 + eps) / (1 - eps)
    beta = beta_proof(T, delta, eps)
    checkpoints = (500, 1000, T)
    failures, dropped = 0, []
    seeds = range(20)
    for seed in seeds:
        kors = KORS(k, alpha=alpha, eps=eps, beta=beta, seed=seed)
        taus, ok = np.empty(T), True
        for t in range(T):
            kors.update(X[t])
            taus[t] = kors.last_tau
            if t + 1 in checkpoints:
                w = weights_vector(kors, t + 1)
                ok &= psi_error(K[: t + 1, : t + 1], alpha, w) <= eps
        ok &= bool(np.all(exact_online <= taus * (1 + 1e-12)))
        ok &= bool(np.all(taus <= rho * exact_online))
        ok &= kors.size <= 3 * rho * beta * d_onl
        failures += not ok
        dropped.append(1 - kors.size / T)
    assert failures <= delta * len(seeds)
    assert np.median(dropped) > 0.2  # sampling is active, the check is not vacuous


# ---------------------------------------------------------------------------- ALD
def test_ald_gram_error_determinant_and_coverage():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(600, 2))
    k = RBF(gamma=0.5)
    nu = 0.01
    ald = ALD(k, nu=nu)
    ald.update_many(X)
    D = ald.indices
    np.testing.assert_array_equal(ald.atoms, X[D])
    G = k(X[D], X[D])
    # log det of the dictionary Gram = sum of log insertion residuals; each residual > nu
    assert np.linalg.slogdet(G)[1] == pytest.approx(np.sum(np.log(ald.residuals)), rel=1e-9)
    assert ald.logdet() == pytest.approx(np.linalg.slogdet(G)[1], rel=1e-9)
    assert np.all(ald.residuals > nu)
    # Gram error E = K - K_nD G^-1 K_Dn: PSD, entrywise <= nu, coverage (diagonal <= nu)
    K = k(X, X)
    E = K - K[:, D] @ np.linalg.solve(G, K[D, :])
    assert np.abs(E).max() <= nu
    assert np.diag(E).max() <= nu
    assert np.linalg.eigvalsh(E).min() > -1e-9
    np.testing.assert_allclose(ald.gram(), G, atol=1e-14)
    np.testing.assert_allclose(ald.gram_inverse(), np.linalg.inv(G), rtol=1e-6, atol=1e-8)


def test_ald_coefficients_residual_three_ways_and_project():
    rng = np.random.default_rng(14)
    X = rng.normal(size=(200, 2))
    k = RBF(gamma=0.5)
    ald = ALD(k, nu=0.05)
    for t in range(200):
        D = ald.indices
        a_p, d_p = ald.project(X[t])
        assert ald.n_seen == t  # project changes nothing
        ald.update(X[t])
        if len(D) == 0:
            assert ald.last_residual == pytest.approx(1.0)
            continue
        G = k(X[D], X[D])
        g = k(X[D], X[t : t + 1])[:, 0]
        a = np.linalg.solve(G, g)
        np.testing.assert_allclose(ald.last_coefficients, a, rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(a_p, a, rtol=1e-7, atol=1e-10)
        delta = 1.0 - g @ a
        assert ald.last_residual == pytest.approx(delta, abs=1e-10)
        assert d_p == pytest.approx(delta, abs=1e-10)
        np.testing.assert_allclose(ald.last_kernel_column, g)
        Gx = k(X[np.append(D, t)], X[np.append(D, t)])
        ratio = np.exp(np.linalg.slogdet(Gx)[1] - np.linalg.slogdet(G)[1])
        assert ald.last_residual == pytest.approx(ratio, abs=1e-9)
        assert ald.last_added == (delta > 0.05)


def test_ald_max_size():
    X = np.random.default_rng(15).normal(size=(300, 2))
    ald = ALD(RBF(gamma=0.5), nu=1e-3, max_size=7)
    ald.update_many(X)
    assert ald.size == 7
    assert ald.last_residual > 1e-3  # later points would have been added without the budget


@pytest.mark.parametrize("nu, expected", [(0.1, 2), (0.01, 3), (0.001, 4)])
def test_ald_saturates_on_compact_inputs(nu, expected):
    X = np.random.default_rng(16).uniform(size=(10_000, 1))
    ald = ALD(RBF(gamma=0.5), nu=nu)
    ald.update_many(X[:1000])
    size_1000 = ald.size
    ald.update_many(X[1000:])
    assert size_1000 == ald.size == expected


@pytest.mark.slow
def test_ald_grows_logarithmically_on_gaussian_inputs():
    ns = [10**2, 10**3, 10**4, 10**5]
    sizes = np.zeros((3, len(ns)))
    for seed in range(3):
        X = np.random.default_rng(100 + seed).normal(size=(ns[-1], 1))
        ald = ALD(RBF(gamma=0.5), nu=0.01)
        seen = 0
        for j, n in enumerate(ns):
            ald.update_many(X[seen:n])
            seen = n
            sizes[seed, j] = ald.size
    mean = sizes.mean(0)
    b = np.polyfit(np.log10(ns), mean, 1)[0]
    slope = np.polyfit(np.log(ns), np.log(mean), 1)[0]
    assert 1.0 <= b <= 4.0
    assert slope < 0.15
    assert mean[-1] <= 25
    # and saturation on U[0, 1] holds up to 1e5 too
    ald = ALD(RBF(gamma=0.5), nu=0.01)
    X = np.random.default_rng(7).uniform(size=(10**5, 1))
    ald.update_many(X[:1000])
    s = ald.size
    ald.update_many(X[1000:])
    assert ald.size == s == 3


# ---------------------------------------------------------------------------- SQUEAK
def squeak_eq5_literal(K, sq, t, eps, gamma, qbar):
    """Eq. 5 with every copy as its own column (q̄ copies of the new point at weight 1/q̄)."""
    cols, wts = [], []
    for i, Q, p in zip(sq.indices, sq.copies, sq.probabilities):
        cols += [i] * Q
        wts += [1.0 / (qbar * p)] * Q
    cols += [t] * qbar
    wts += [1.0 / qbar] * qbar
    cols, s = np.array(cols), np.sqrt(np.array(wts))
    Sbar = np.zeros((t + 1, len(cols)))
    Sbar[cols, np.arange(len(cols))] = s
    Kt = K[: t + 1, : t + 1]
    M = Sbar.T @ Kt @ Sbar + gamma * np.eye(len(cols))
    out = []
    for i in list(sq.indices) + [t]:
        ki = Kt[:, i]
        out.append((1 - eps) / gamma * (Kt[i, i] - ki @ Sbar @ np.linalg.solve(M, Sbar.T @ ki)))
    return np.array(out)


def test_squeak_compressed_estimator_equals_literal_eq5_and_invariants():
    rng = np.random.default_rng(17)
    X = rng.normal(size=(120, 2))
    k = RBF(gamma=0.5)
    K = k(X, X)
    eps, gamma, qbar = 0.5, 2.0, 8
    sq = SQUEAK(k, alpha=gamma, eps=eps, qbar=qbar, seed=0)
    history, ever_dropped = {}, set()
    for t in range(120):
        if t % 10 == 5:
            np.testing.assert_allclose(
                sq.estimate_scores(X[t]),
                squeak_eq5_literal(K, sq, t, eps, gamma, qbar),
                rtol=1e-8,
                atol=1e-12,
            )
        before = set(sq.indices.tolist())
        sq.update(X[t])
        after = set(sq.indices.tolist())
        ever_dropped |= before - after
        assert not (after & ever_dropped)  # no re-entry
        for i, p in zip(sq.indices, sq.probabilities):
            assert p <= history.get(i, 1.0) + 1e-15  # min rule: non-increasing, <= 1
            history[i] = p
        np.testing.assert_allclose(sq.weights, sq.copies / (qbar * sq.probabilities))
    assert ever_dropped  # shrinking happened


@pytest.mark.parametrize("rule", ["min", "max"])
def test_squeak_printed_max_rule_breaks_p_below_tau(rule):
    """The printed line 5, max(min(tau~, p~), p~/2), halves at most per step and lets a fresh
    point enter with p~ >= 1/2 > tau~, violating p~ <= tau~; the min rule never does."""
    X = np.random.default_rng(18).normal(size=(100, 2))
    sq = SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=10, rule=rule, seed=1)
    last, above = {}, 0
    for t, x in enumerate(X):
        sq.update(x)
        new_tau = sq.last_scores[-1]
        for i, p in zip(sq.indices, sq.probabilities):
            if rule == "max":
                assert p >= last.get(i, 1.0) / 2 - 1e-15
            if i == t:
                above += p > new_tau + 1e-15
            last[i] = p
    assert (above > 0) == (rule == "max")


def squeak_check(seed, n=400, qbar=50, eps=0.5, gamma=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 10] *= 4.0
    k = RBF(gamma=0.5)
    K = k(X, X)
    sq = SQUEAK(k, alpha=gamma, eps=eps, qbar=qbar, seed=seed)
    ok = True
    for t in range(n):
        sq.update(X[t])
        if t + 1 in (n // 4, n // 2, n):
            Kt = K[: t + 1, : t + 1]
            d_eff = effective_dimension(Kt, gamma)
            ok &= psi_error(Kt, gamma, weights_vector(sq, t + 1)) <= eps
            ok &= sq.probabilities.sum() <= d_eff  # p~ <= tau when the dictionary is accurate
            ok &= sq.n_copies <= qbar * d_eff + 3 * np.sqrt(qbar * d_eff)
            ok &= sq.n_copies >= 0.2 * qbar * d_eff
            ok &= sq.size < t + 1 or t + 1 < 200
    return ok


def test_squeak_size_and_accuracy_small_problem():
    assert squeak_check(seed=0)


@pytest.mark.slow
def test_squeak_size_and_accuracy_over_seeds():
    assert sum(squeak_check(seed) for seed in range(10)) >= 9


# ---------------------------------------------------------------------------- INK-Estimate
def test_shrink_expand_martingale_and_survival():
    rng = np.random.default_rng(19)
    qbar, reps = 10.0, 20_000
    path = [0.5, 0.2, 0.05, 0.03, 0.011]
    b = np.ones(reps, dtype=np.int64)
    for p in path:
        b = shrink_expand(b, np.full(reps, p), qbar, rng)
        assert abs(b.mean() - 1.0) < 3 * b.std() / np.sqrt(reps) + 1e-12
    target = 10  # smallest integer > 1 / (10 * 0.011)
    assert set(np.unique(b)) <= {0, target}
    assert abs(np.mean(b > 0) - 1 / target) < 3 * np.sqrt(0.1 * 0.9 / reps)
    once = shrink_expand(np.ones(reps, dtype=np.int64), np.full(reps, 0.05), qbar, rng)
    assert abs(np.mean(once > 0) - 1 / 3) < 3 * np.sqrt(2 / 9 / reps)
    kept = shrink_expand(np.array([2, 1]), np.array([0.9, 0.2]), qbar, rng)
    np.testing.assert_array_equal(kept, [2, 1])  # q̄ p b > 1: untouched
    assert shrink_expand(np.array([3]), np.array([0.0]), qbar, rng)[0] == 0


def test_ink_scores_and_deff_match_dense_eq14_eq15():
    rng = np.random.default_rng(20)
    X = rng.normal(size=(90, 2))
    k = RBF(gamma=0.5)
    K = k(X, X)
    gamma, eps = 2.0, 0.5
    a = (2 - eps) / (1 - eps)
    ink = INKEstimate(k, alpha=gamma, eps=eps, qbar=300.0, seed=0)
    for t in range(90):
        idx, b = ink.indices, ink.weights
        if len(idx):
            S = np.zeros((t, len(idx)))
            S[idx, np.arange(len(idx))] = np.sqrt(b)
            Kt = (
                K[:t, :t]
                @ S
                @ np.linalg.solve(S.T @ K[:t, :t] @ S + gamma * np.eye(len(idx)), S.T @ K[:t, :t])
            )
        else:
            Kt = np.zeros((t, t))
        Kbar = K[: t + 1, : t + 1].copy()
        Kbar[:t, :t] = Kt
        G = np.linalg.inv(Kbar + a * gamma * np.eye(t + 1))
        cols = list(idx) + [t]
        ref = [(K[i, i] - K[: t + 1, i] @ G @ K[: t + 1, i]) / (a * gamma) for i in cols]
        kb = K[:t, t]
        R = np.linalg.inv(Kt + a * gamma * np.eye(t))
        R2 = np.linalg.inv(Kt + gamma * np.eye(t))
        num = K[t, t] - kb @ R @ kb - (1 - eps) ** 2 / 4 * gamma * kb @ R2 @ R2 @ kb
        den = K[t, t] + gamma - kb @ R @ kb
        d_before = ink.deff_estimate
        ink.update(X[t])
        np.testing.assert_allclose(ink.last_scores, np.clip(ref, 0, None), rtol=1e-7, atol=1e-10)
        assert ink.deff_estimate - d_before == pytest.approx(
            a * max(num / den, 0.0), rel=1e-7, abs=1e-10
        )


def ink_check(seed, n=300, qbar=3000.0, eps=0.5, gamma=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 10] *= 4.0
    k = RBF(gamma=0.5)
    K = k(X, X)
    ink = INKEstimate(k, alpha=gamma, eps=eps, qbar=qbar, seed=seed)
    sizes = []
    for x in X:
        ink.update(x)
        sizes.append(ink.size)
    d_eff = effective_dimension(K, gamma)
    return (
        max(sizes) <= 8 * qbar,
        ink.size <= qbar,
        d_eff <= ink.deff_estimate,
        psi_error(K, gamma, weights_vector(ink, n)) <= eps,
        ink.n_negative_increments,
    )


def test_ink_size_and_accuracy_small_problem():
    size_ok, budget_ok, deff_ok, acc_ok, _ = ink_check(seed=0, qbar=6000.0)
    assert size_ok and budget_ok and deff_ok and acc_ok


@pytest.mark.slow
def test_ink_size_and_accuracy_over_seeds():
    results = [ink_check(seed, qbar=6000.0) for seed in range(10)]
    assert all(r[0] and r[1] and r[2] for r in results)
    assert sum(r[3] for r in results) >= 9


def test_ink_guards_on_degenerate_kernel_and_small_budget():
    ink = INKEstimate(ZeroKernel(), alpha=2.0, eps=0.5, qbar=10.0, seed=0)
    ink.update_many(np.ones((5, 1)))
    assert ink.n_deff_guard == 5 and ink.deff_estimate == 0.0
    X = np.random.default_rng(21).normal(size=(150, 3))
    small = INKEstimate(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=50.0, seed=0)
    previous = 0.0
    for x in X:
        small.update(x)
        assert small.deff_estimate >= previous  # increments are clamped at 0
        previous = small.deff_estimate


# ---------------------------------------------------------------------------- common interface
@pytest.mark.parametrize(
    "make",
    [
        lambda: KORS(RBF(gamma=0.5), alpha=1.0, eps=0.5, beta=2.0, seed=0),
        lambda: ALD(RBF(gamma=0.5), nu=0.05),
        lambda: SQUEAK(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=10, seed=0),
        lambda: INKEstimate(RBF(gamma=0.5), alpha=2.0, eps=0.5, qbar=200.0, seed=0),
    ],
)
def test_dict_input_with_appearing_features_equals_padded_arrays(make):
    rng = np.random.default_rng(22)
    X = rng.normal(size=(60, 3))
    X[:20, 2] = 0.0  # feature "c" appears only from row 20 on
    dicts = [
        {"a": r[0], "b": r[1]} if i < 20 else {"c": r[2], "a": r[0], "b": r[1]}
        for i, r in enumerate(X)
    ]
    d1, d2 = make(), make()
    flags1 = d1.update_many(dicts)
    flags2 = d2.update_many(X)
    np.testing.assert_array_equal(flags1, flags2)
    np.testing.assert_array_equal(d1.indices, d2.indices)
    np.testing.assert_allclose(d1.weights, d2.weights)
    np.testing.assert_allclose(d1.atoms, d2.atoms)
    assert d1.feature_names == ["a", "b", "c"]
    np.testing.assert_allclose(
        d1.nystrom_features(dicts[:5]), d2.nystrom_features(X[:5]), atol=1e-10
    )
    # a missing feature counts as 0
    np.testing.assert_allclose(d1.kernel_column({"a": 1.0}), d2.kernel_column([1.0, 0.0, 0.0]))


def test_dataframe_rows_are_dicts_keyed_by_column():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(23).normal(size=(40, 2))
    df = pd.DataFrame(X, columns=["u", "v"])
    a, b = ALD(RBF(gamma=0.5), nu=0.05), ALD(RBF(gamma=0.5), nu=0.05)
    np.testing.assert_array_equal(a.update_many(df), b.update_many(X))
    assert a.feature_names == ["u", "v"]
    np.testing.assert_allclose(a.nystrom_features(df), b.nystrom_features(X))


@pytest.mark.parametrize("cls", [KORS, ALD, SQUEAK, INKEstimate])
def test_bad_input_is_rejected_and_leaves_state_unchanged(cls):
    kwargs = {"nu": 0.1} if cls is ALD else {}
    d = cls(RBF(gamma=0.5), **kwargs)
    d.update({"a": 1.0})
    state = (d.n_seen, d.size, d.indices.tolist())
    with pytest.raises(ValueError, match="'b'"):
        d.update({"a": 1.0, "b": float("nan")})
    with pytest.raises(TypeError, match="'b'"):
        d.update({"a": 1.0, "b": "x"})
    with pytest.raises(TypeError):
        d.update(np.array([1.0]))
    assert (d.n_seen, d.size, d.indices.tolist()) == state
    assert d.feature_names == ["a"]
    arr = cls(RBF(gamma=0.5), **kwargs)
    arr.update(np.zeros(2))
    with pytest.raises(ValueError, match="features"):
        arr.update(np.zeros(3))
    with pytest.raises(ValueError, match="not finite"):
        arr.update(np.array([0.0, np.inf]))
    assert arr.n_seen == 1


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: KORS(RBF(), alpha=0.0), "alpha"),
        (lambda: KORS(RBF(), eps=1.5), "eps"),
        (lambda: KORS(RBF(), beta=-1.0), "beta"),
        (lambda: KORS(RBF(), p_min=2.0), "p_min"),
        (lambda: ALD(RBF(), nu=0.0), "nu"),
        (lambda: ALD(RBF(), nu=0.1, max_size=0), "max_size"),
        (lambda: SQUEAK(RBF(), alpha=-1.0), "alpha"),
        (lambda: SQUEAK(RBF(), qbar=0), "qbar"),
        (lambda: SQUEAK(RBF(), rule="median"), "rule"),
        (lambda: INKEstimate(RBF(), eps=1.0), "eps"),
        (lambda: INKEstimate(RBF(), qbar=-5.0), "qbar"),
        (lambda: NystromKRR(RBF(), alpha=0.0), "alpha"),
    ],
)
def test_parameter_validation(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_kernel_and_column_validation():
    with pytest.raises(TypeError, match="kernel"):
        KORS(kernel=lambda X, Y: X)
    kors = KORS(None, alpha=1.0)
    with pytest.raises(ValueError, match="length 0"):
        kors.update_column(np.ones(2), 1.0)
    with pytest.raises(ValueError, match="k_diag"):
        kors.update_column(np.zeros(0), -1.0)
    assert kors.n_seen == 0
    with pytest.raises(RuntimeError):
        kors.update(np.zeros(2))


def test_ald_update_column_matches_update_and_ridge_uses_the_regularized_residual():
    X = np.random.default_rng(5).normal(size=(400, 2))
    k = RBF(gamma=0.5)
    for ridge in (0.0, 1e-4):
        by_point, by_column = ALD(k, nu=1e-3, alpha=ridge), ALD(None, nu=1e-3, alpha=ridge)
        for x in X:
            by_point.update(x)
            col = k(X[by_column.indices], x)[:, 0]
            projection = by_column.project_column(col, 1.0)
            by_column.update_column(col, 1.0, projection)
            assert by_column.last_residual == by_point.last_residual
        np.testing.assert_array_equal(by_column.indices, by_point.indices)
        G = k(X[by_point.indices]) + ridge * np.eye(by_point.size)
        np.testing.assert_allclose(by_column.gram(), G, rtol=1e-12, atol=1e-12)
        z = np.array([0.3, -0.2])  # the regularized residual k(z,z) - g^T (G + rI)^{-1} g
        g = k(X[by_point.indices], z)[:, 0]
        a, delta = by_point.project(z)
        np.testing.assert_allclose(a, np.linalg.solve(G, g), rtol=1e-7, atol=1e-9)  # cond(G) ~ 1e5
        assert delta == pytest.approx(1.0 - g @ np.linalg.solve(G, g), abs=1e-10)
    plain, loaded = ALD(k, nu=1e-3), ALD(k, nu=1e-3, alpha=1e-4)
    plain.update_many(X)
    loaded.update_many(X)
    assert plain.size <= loaded.size <= 1.5 * plain.size < len(X) / 4
    with pytest.raises(RuntimeError, match="update_column"):
        by_column.update(X[0])
