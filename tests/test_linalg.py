"""Tests of okoco.linalg against dense numpy references (np.linalg.cholesky / solve / slogdet)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from okoco._core import _slots
from okoco.linalg import IncrementalCholesky, PackedSymmetric, SlotInverse, cholesky_rank_one


def rbf(A, B, gamma=0.5):
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * d)


def spd(n, seed=0, ridge=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return rbf(X, X) + ridge * np.eye(n)


def build(A, **kwargs):
    chol = IncrementalCholesky(**kwargs)
    for j in range(A.shape[0]):
        chol.append(A[:j, j], A[j, j])
    return chol


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


# ---------------------------------------------------------------------------- append and solves
def test_append_matches_dense_cholesky_through_capacity_doublings():
    A = spd(70, seed=1)
    chol = build(A, capacity=1)
    assert chol.size == len(chol) == 70
    assert chol.capacity >= 70
    assert rel(chol.factor(), np.linalg.cholesky(A)) < 1e-12
    np.testing.assert_allclose(chol.matrix(), A, rtol=0, atol=1e-15)


def test_solves_quad_logdet_match_dense():
    A = spd(40, seed=2)
    chol = build(A)
    L = np.linalg.cholesky(A)
    v = np.random.default_rng(3).normal(size=40)
    np.testing.assert_allclose(chol.half_solve(v), np.linalg.solve(L, v), rtol=1e-10)
    np.testing.assert_allclose(chol.back_solve(v), np.linalg.solve(L.T, v), rtol=1e-10)
    np.testing.assert_allclose(chol.solve(v), np.linalg.solve(A, v), rtol=1e-10)
    assert chol.quad(v) == pytest.approx(v @ np.linalg.solve(A, v), rel=1e-11)
    assert chol.logdet() == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-12)
    V = np.random.default_rng(4).normal(size=(40, 3))
    np.testing.assert_allclose(chol.solve(V), np.linalg.solve(A, V), rtol=1e-10)
    np.testing.assert_allclose(chol.inverse(), np.linalg.inv(A), rtol=1e-9, atol=1e-12)


def test_append_returns_schur_complement_and_accepts_half():
    A = spd(10, seed=5)
    chol = build(A[:9, :9])
    h = chol.half_solve(A[:9, 9])
    schur = chol.append(A[:9, 9], A[9, 9], half=h)
    expected = np.linalg.det(A) / np.linalg.det(A[:9, :9])
    assert schur == pytest.approx(expected, rel=1e-10)
    assert rel(chol.factor(), np.linalg.cholesky(A)) < 1e-12


def test_empty_factor():
    chol = IncrementalCholesky()
    assert chol.size == 0
    assert chol.logdet() == 0.0
    assert chol.solve(np.zeros(0)).shape == (0,)
    assert chol.quad(np.zeros(0)) == 0.0
    assert chol.matrix().shape == (0, 0)


def test_duplicate_atoms_are_clamped_and_counted():
    chol = IncrementalCholesky(min_pivot=1e-10)
    chol.append(np.zeros(0), 1.0)
    schur = chol.append(np.array([1.0]), 1.0)  # exact duplicate: Schur complement 0
    assert schur == pytest.approx(1e-10)
    assert chol.n_clamped == 1
    A = chol.matrix()
    assert A[1, 1] == pytest.approx(1.0 + 1e-10, abs=1e-15)  # the matrix actually factorized
    L = chol.factor()
    np.testing.assert_allclose(L @ L.T, A, atol=1e-14)
    assert np.all(np.isfinite(chol.solve(np.array([1.0, -1.0]))))
    chol.append(np.array([0.5, 0.5]), 2.0)  # a normal atom afterwards is not clamped
    assert chol.n_clamped == 1


# ---------------------------------------------------------------------------- remove / rescale
@pytest.mark.parametrize("i", [0, 7, 18, 19, -1])
def test_remove_matches_fresh_cholesky(i):
    A = spd(20, seed=6)
    chol = build(A)
    chol.remove(i)
    keep = np.delete(np.arange(20), i % 20)
    B = A[np.ix_(keep, keep)]
    assert chol.size == 19
    assert rel(chol.factor(), np.linalg.cholesky(B)) < 1e-12
    np.testing.assert_array_equal(chol.matrix(), B)
    v = np.arange(19.0)
    assert chol.quad(v) == pytest.approx(v @ np.linalg.solve(B, v), rel=1e-10)


@pytest.mark.parametrize("factor", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("i", [0, 5, 11])
def test_rescale_matches_reweighted_matrix(i, factor):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(12, 2))
    K = rbf(X, X)
    w = rng.uniform(0.5, 4.0, size=12)
    ridge = 0.7
    A = np.sqrt(w)[:, None] * K * np.sqrt(w)[None, :] + ridge * np.eye(12)
    chol = build(A)
    chol.rescale(i, factor, ridge=ridge)
    w[i] *= factor**2
    B = np.sqrt(w)[:, None] * K * np.sqrt(w)[None, :] + ridge * np.eye(12)
    assert rel(chol.factor(), np.linalg.cholesky(B)) < 1e-12
    np.testing.assert_allclose(chol.matrix(), B, atol=1e-13)
    assert chol.logdet() == pytest.approx(np.linalg.slogdet(B)[1], rel=1e-12)


def test_rescale_without_ridge_is_a_congruence():
    A = spd(8, seed=8)
    chol = build(A)
    chol.rescale(3, 4.0)
    D = np.eye(8)
    D[3, 3] = 4.0
    assert rel(chol.factor(), np.linalg.cholesky(D @ A @ D)) < 1e-12


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cholesky_rank_one_update_and_downdate(sign):
    A = spd(15, seed=9, ridge=2.0)
    x = np.random.default_rng(10).normal(size=15) * 0.3
    L1 = cholesky_rank_one(np.linalg.cholesky(A), x, sign)
    np.testing.assert_allclose(L1, np.linalg.cholesky(A + sign * np.outer(x, x)), atol=1e-12)


def test_cholesky_rank_one_rejects_indefinite_downdate():
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_rank_one(np.eye(2), np.array([2.0, 0.0]), -1.0)


def run_long(n_appends, window, refresh_tol, seed=0):
    """Append n_appends RBF atoms (ridge 1e-2), removing random atoms beyond `window` and
    rescaling some; return the factor and an independently rebuilt matrix."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_appends, 3))
    ridge = 1e-2
    chol = IncrementalCholesky(capacity=4, refresh_tol=refresh_tol)
    ids, weights = [], []
    n_removed = n_rescaled = 0
    for j in range(n_appends):
        w_new = rng.uniform(0.5, 2.0)
        col = np.sqrt(w_new * np.array(weights)) * rbf(X[ids], X[j : j + 1])[:, 0]
        chol.append(col, w_new + ridge)
        ids.append(j)
        weights.append(w_new)
        if len(ids) > window:
            i = int(rng.integers(len(ids)))
            chol.remove(i)
            ids.pop(i)
            weights.pop(i)
            n_removed += 1
        if j % 10 == 0:
            i = int(rng.integers(len(ids)))
            f = rng.uniform(0.5, 2.0)
            chol.rescale(i, f, ridge=ridge)
            weights[i] *= f * f
            n_rescaled += 1
    sw = np.sqrt(np.array(weights))
    A = sw[:, None] * rbf(X[ids], X[ids]) * sw[None, :] + ridge * np.eye(len(ids))
    return chol, A, n_removed, n_rescaled


@pytest.mark.parametrize("refresh_tol", [1e-8, np.inf])
def test_many_appends_removals_rescales_match_fresh_cholesky(refresh_tol):
    chol, A, n_removed, n_rescaled = run_long(2000, window=120, refresh_tol=refresh_tol)
    assert n_removed > 1000 and n_rescaled == 200
    assert rel(chol.factor(), np.linalg.cholesky(A)) < 1e-8
    np.testing.assert_allclose(chol.matrix(), A, rtol=1e-12, atol=1e-13)
    if refresh_tol == np.inf:
        assert chol.n_refreshes == 0  # the incremental updates alone stay accurate


@pytest.mark.slow
def test_ten_thousand_appends_with_removals_match_fresh_cholesky():
    chol, A, n_removed, _ = run_long(10_000, window=150, refresh_tol=np.inf)
    assert n_removed > 9000
    assert rel(chol.factor(), np.linalg.cholesky(A)) < 1e-8


def test_residual_check_refreshes_a_drifted_factor():
    A = spd(30, seed=11)
    chol = build(A)
    assert chol.check() < 1e-14
    chol._L[: 30 * 31 // 2] *= 1.0 + 1e-6  # simulate accumulated round-off drift
    assert chol.residual() > 1e-8
    before = chol.n_refreshes
    chol.check()
    assert chol.n_refreshes == before + 1
    assert rel(chol.factor(), np.linalg.cholesky(A)) < 1e-13


def test_automatic_check_runs_during_appends():
    chol = build(spd(100, seed=12))
    assert np.isfinite(chol.last_residual) and chol.last_residual < 1e-12
    assert chol.n_refreshes == 0


def test_refresh_falls_back_to_clamped_bordering_on_singular_matrix():
    chol = IncrementalCholesky(min_pivot=1e-10)
    for _ in range(3):  # three identical atoms, no ridge
        chol.append(np.ones(chol.size), 1.0)
    assert chol.n_clamped == 2
    chol.refresh()
    L = chol.factor()
    np.testing.assert_allclose(L @ L.T, chol.matrix(), atol=1e-12)


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs", [{"capacity": 0}, {"capacity": 2.5}, {"refresh_tol": 0.0}, {"min_pivot": 0.0}]
)
def test_constructor_validation(kwargs):
    with pytest.raises(ValueError):
        IncrementalCholesky(**kwargs)


def test_bad_inputs_leave_state_unchanged():
    A = spd(5, seed=13)
    chol = build(A)
    with pytest.raises(ValueError, match="length 5"):
        chol.append(np.ones(4), 1.0)
    with pytest.raises(ValueError, match="finite"):
        chol.append(np.array([np.nan, 0, 0, 0, 0]), 1.0)
    with pytest.raises(ValueError, match="half"):
        chol.append(A[:5, 0], 1.0, half=np.ones(3))
    with pytest.raises(IndexError):
        chol.remove(5)
    with pytest.raises(TypeError):
        chol.remove(1.5)
    with pytest.raises(ValueError, match="factor"):
        chol.rescale(0, -1.0)
    with pytest.raises(ValueError, match="length 5"):
        chol.solve(np.ones(3))
    assert chol.size == 5
    assert rel(chol.factor(), np.linalg.cholesky(A)) < 1e-12


def test_packed_symmetric_bordering_matvec_and_rank_one_match_dense():
    rng = np.random.default_rng(4)
    P, dense = PackedSymmetric(capacity=2), np.zeros((0, 0))
    for m in range(40):  # several capacity doublings
        c, d = rng.normal(size=m), float(rng.uniform(1, 2))
        P.append(c, d)
        dense = np.block([[dense, c[:, None]], [c[None, :], np.array([[d]])]])
        x, alpha = rng.normal(size=m + 1), float(rng.normal())
        P.rank_one(alpha, x)
        dense += alpha * np.outer(x, x)
        np.testing.assert_allclose(P.matrix(), dense, rtol=1e-12, atol=1e-12)
        v = rng.normal(size=m + 1)
        np.testing.assert_allclose(P.matvec(v), dense @ v, rtol=1e-12, atol=1e-12)
    assert P.size == 40


def test_packed_symmetric_is_dense_while_small_then_packed_and_matches_numpy():
    """Bordering past ``DENSE_MAX`` switches the storage once; every product, rank-one and
    Sherman-Morrison update matches numpy to 1e-12 on both sides and through the switch (and
    the packed buffer's capacity doublings after it), and the dense form stays symmetric to
    rounding."""
    rng = np.random.default_rng(6)
    P, dense = PackedSymmetric(capacity=2), np.zeros((0, 0))
    top = PackedSymmetric.DENSE_MAX + 40
    for m in range(top):
        c, d = rng.normal(size=m) * 0.01, float(rng.uniform(1, 2))
        P.append(c, d)
        dense = np.block([[dense, c[:, None]], [c[None, :], np.array([[d]])]])
        assert P.is_dense == (m + 1 <= PackedSymmetric.DENSE_MAX)
        if m % 7 == 0 or m + 1 in (PackedSymmetric.DENSE_MAX, PackedSymmetric.DENSE_MAX + 1):
            x, alpha = rng.normal(size=m + 1) * 0.1, float(rng.normal())
            P.rank_one(alpha, x)
            dense += alpha * np.outer(x, x)
            a = rng.normal(size=m + 1) * 0.1
            Pa, s = P.inverse_update(a)
            np.testing.assert_allclose(Pa, dense @ a, rtol=1e-12, atol=1e-12)
            assert s == pytest.approx(1.0 / (1.0 + a @ dense @ a), rel=1e-12)
            dense = dense - s * np.outer(dense @ a, dense @ a)
            np.testing.assert_allclose(P.matrix(), dense, rtol=1e-12, atol=1e-12)
            v = rng.normal(size=m + 1)
            np.testing.assert_allclose(P.matvec(v), dense @ v, rtol=1e-12, atol=1e-12)
            M = P.matrix()
            assert np.abs(M - M.T).max() <= 1e-15 * np.abs(M).max()
    assert P.size == top and not P.is_dense
    for m in (5, PackedSymmetric.DENSE_MAX + 3):
        A = rng.normal(size=(m, m))
        A = A + A.T
        Q = PackedSymmetric.from_matrix(A)
        assert Q.size == m and Q.is_dense == (m <= PackedSymmetric.DENSE_MAX)
        np.testing.assert_array_equal(Q.matrix(), A)
        Q.append(np.ones(m), 2.0)  # and it keeps growing
        np.testing.assert_array_equal(Q.matrix()[:m, :m], A)


@pytest.mark.parametrize("m", [0, 1, 5, PackedSymmetric.DENSE_MAX, PackedSymmetric.DENSE_MAX + 1,
                               200])
def test_scaled_identity_is_the_identity_from_matrix_holds(m):
    """PROS-N-KONS's restart: ``value * I`` built directly, in the state ``from_matrix``
    gives the dense identity (bit for bit), and it goes on growing and updating alike."""
    value = 1.0 / 0.3
    P, Q = PackedSymmetric.scaled_identity(m, value), PackedSymmetric.from_matrix(np.eye(m) * value)
    assert (P.size, P.is_dense, P._cap) == (Q.size, Q.is_dense, Q._cap)
    np.testing.assert_array_equal(P.matrix(), value * np.eye(m))
    np.testing.assert_array_equal(P.storage(), Q.storage())
    v = np.linspace(-1.0, 1.0, m + 1)
    for R in (P, Q):
        R.append(v[:m], 2.0)
        R.rank_one(-0.25, v)
    np.testing.assert_array_equal(P.matrix(), Q.matrix())


def test_packed_symmetric_saved_before_the_dense_form_stays_packed():
    """A matrix restored from a file without ``_dense`` (the packed-only layout) works as
    saved: the class default makes it packed."""
    P = PackedSymmetric()
    for m in range(4):
        P.append(np.full(m, 0.1), 1.0)
    old = PackedSymmetric.__new__(PackedSymmetric)
    buf = np.zeros(10 * 11 // 2)
    buf[:10] = P.matrix()[np.tril_indices(4)]
    old.__dict__.update({"_cap": 10, "_buf": buf, "_m": 4})
    assert not old.is_dense
    np.testing.assert_array_equal(old.matrix(), P.matrix())
    a = np.array([0.3, -0.2, 0.1, 0.4])
    np.testing.assert_allclose(old.inverse_update(a)[0], P.inverse_update(a)[0], rtol=1e-14)
    np.testing.assert_allclose(old.matrix(), P.matrix(), rtol=1e-13, atol=1e-15)


def set_matrix(inverse, M):
    """Write M into a SlotInverse's storage: its strict upper triangle and its diagonal."""
    k = M.shape[0]
    inverse.P[:k, :k] = np.triu(M, 1)
    inverse.diagonal[:k] = np.diag(M)


@pytest.mark.parametrize("flush", [False, True])
def test_slot_inverse_follows_a_sliding_window_against_dense_inverses(flush):
    # a ring of 6 slots, a window of 5 atoms: each step removes the oldest atom and borders the
    # new one into the freed slot; P over the atoms is the dense inverse of M over them. The
    # changes stay pending (16 of each sign, then applied at once), or are applied every step
    # (flush): solves of the live object include them, inverses of a copy apply them
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + 0.1 * np.eye(60)
    ring, inverse, slots, most = 6, SlotInverse(6), {}, 0
    for t in range(60):
        if len(slots) == ring - 1:
            oldest = min(slots, key=slots.get)
            del slots[oldest]
            order = sorted(slots)
            pivot = np.linalg.inv(K[np.ix_([slots[s] for s in order] + [t - 5],
                                           [slots[s] for s in order] + [t - 5])])[-1, -1]
            assert inverse.remove(oldest, ring) == pytest.approx(np.log(pivot), rel=1e-9)
        slot = next(s for s in range(ring) if s not in slots)
        n = max(max(slots, default=-1), slot) + 1
        column = np.zeros(n)
        for s, i in slots.items():
            column[s] = K[i, t]
        a = inverse.solve(column)
        inverse.append(slot, a, K[t, t] - column @ a, column, K[t, t], n)
        if flush:
            inverse.flush()
        terms = inverse.pending_terms
        # (pending: at least this append, unless P was just recomputed from M: 96 changes)
        assert terms[:2].sum() == 0 if flush else (terms[0] >= 1 or inverse._mods == 0)
        most = max(most, terms[1])
        slots[slot] = t
        order = sorted(slots)
        dense = np.linalg.inv(K[np.ix_([slots[s] for s in order], [slots[s] for s in order])])
        solved = np.column_stack([inverse.solve(e) for e in np.eye(n)])  # pending included
        np.testing.assert_allclose(solved[np.ix_(order, order)], dense, rtol=1e-9, atol=1e-10)
        assert np.all(solved[[s for s in range(n) if s not in slots]] == 0.0)  # free: exactly
        P = copy.deepcopy(inverse).inverse()[np.ix_(order, order)]
        np.testing.assert_allclose(P, dense, rtol=1e-9, atol=1e-10)
    assert inverse.size == ring - 1
    # the subtractions filled their block, then went in
    assert most == (0 if flush else _slots.PENDING_ROWS // 2)


@pytest.mark.parametrize("atoms", [6, 3])
def test_slot_inverse_compact_form_follows_a_short_window_over_a_long_ring(atoms):
    """Auto's short windows: 5 atoms at a time over a caller's ring of 12 slots, kept over
    slots of its own (``atoms`` of them, or more once that is too few); solves, inverses and
    removal pivots in the caller's slots equal the dense inverse of M over the atoms held."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(50, 3))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + 0.1 * np.eye(50)
    ring, window = 12, 5
    inverse, held = SlotInverse(ring, atoms=atoms), {}  # caller's slot -> point
    for t in range(50):
        slot = t % ring  # the caller's ring: point t in slot t % 12
        n = min(t + 1, ring)
        column = np.zeros(n)
        for s, i in held.items():
            column[s] = K[i, t]
        a = inverse.solve(column)
        inverse.append(slot, a, K[t, t] - column @ a, column, K[t, t], n)
        held[slot] = t
        if len(held) > window:
            oldest = min(held, key=held.get)
            order = sorted(held)
            dense = np.linalg.inv(K[np.ix_([held[s] for s in order], [held[s] for s in order])])
            pivot = dense[order.index(oldest), order.index(oldest)]
            assert inverse.remove(oldest, n) == pytest.approx(np.log(pivot), rel=1e-9)
            del held[oldest]
        order = sorted(held)
        dense = np.linalg.inv(K[np.ix_([held[s] for s in order], [held[s] for s in order])])
        np.testing.assert_allclose(inverse.inverse(n)[np.ix_(order, order)], dense,
                                   rtol=1e-9, atol=1e-10)
        v = rng.normal(size=n)
        expected = np.zeros(n)
        expected[order] = dense @ v[order]
        np.testing.assert_allclose(inverse.solve(v), expected, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(inverse.solve(np.eye(n))[np.ix_(order, order)], dense,
                                   rtol=1e-9, atol=1e-10)
    # (3 own slots grow by 16, up to the ring's 12)
    assert inverse.size == window and inverse.P.shape[0] == (6 if atoms == 6 else ring)
    clone = pickle.loads(pickle.dumps(inverse))
    np.testing.assert_array_equal(clone.inverse(ring), inverse.inverse(ring))


def test_slot_inverse_compact_form_with_atoms_coming_and_going_anywhere():
    """Sketched-KONS's preconditioner: a compact form over a ring of 20 slots whose atoms
    come (into the lowest free own slot) and go in any order, so the own slots in use shrink
    and grow (the products then run over those only): every removal pivot, solve and inverse
    equals the dense one over the atoms held, and the own slots never exceed the ring's."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(120, 3))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + 0.1 * np.eye(120)
    ring = 20
    inverse, held = SlotInverse(ring, atoms=2), {}  # caller's slot -> point
    for t in range(120):
        slot = t % ring
        n = min(t + 1, ring)
        if slot in held or (held and rng.random() < 0.45):  # one leaves: its slot, or any
            gone = slot if slot in held else int(rng.choice(sorted(held)))
            order = sorted(held)
            dense = np.linalg.inv(K[np.ix_([held[s] for s in order], [held[s] for s in order])])
            pivot = dense[order.index(gone), order.index(gone)]
            assert inverse.remove(gone, n) == pytest.approx(np.log(pivot), rel=1e-9)
            del held[gone]
        if rng.random() < 0.7:  # the point joins
            column = np.zeros(n)
            for s, i in held.items():
                column[s] = K[i, t]
            a = inverse.solve(column)
            inverse.append(slot, a, K[t, t] - column @ a, column, K[t, t], n)
            held[slot] = t
        assert inverse.size == len(held)
        if not held:
            continue
        order = sorted(held)
        dense = np.linalg.inv(K[np.ix_([held[s] for s in order], [held[s] for s in order])])
        v = rng.normal(size=n)
        expected = np.zeros(n)
        expected[order] = dense @ v[order]
        np.testing.assert_allclose(inverse.solve(v), expected, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(inverse.inverse(n)[np.ix_(order, order)], dense,
                                   rtol=1e-9, atol=1e-10)
    assert inverse.P.shape[0] <= ring


@pytest.mark.parametrize(("atoms", "every"), [(None, 7), (3, 7), (None, 41), (3, 41)])
def test_slot_inverse_pair_shares_one_array_against_dense_inverses(atoms, every):
    """Two inverses in one array (M1 = K + 0.1 I over the caller's slots, or its own in the
    compact form, ``atoms=3``, which grows; M2 = S K S + 0.2 I over slots numbered by the
    second's caller, the lowest free first), the second in the first's strict upper triangle:
    solves, removal pivots and the recomputations (from the callers' M, at ``settle``, forced
    every ``every`` steps) equal the dense inverses through a sliding window; between
    recomputations 41 steps apart, the pending terms fill their blocks and go into each
    triangle (a rank-16 update of the lower one, and of the upper one shifted by a column)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    s = rng.uniform(0.5, 2.0, size=60)
    M1 = K + 0.1 * np.eye(60)
    M2 = s[:, None] * K * s[None, :] + 0.2 * np.eye(60)
    ring, window = 9, 6
    first = SlotInverse(ring, atoms=atoms)
    second = first.pair()
    held, second_slot = {}, {}  # caller's slot -> point, and -> the second's slot

    def first_matrix(slots):  # over the first's slots (own ones, in the compact form)
        callers = slots if first._outer is None else first._outer[slots]
        points = [held[int(c)] for c in callers]
        return M1[np.ix_(points, points)]

    def second_matrix(slots):
        mine = {v: held[c] for c, v in second_slot.items()}
        points = [mine[int(j)] for j in slots]
        return M2[np.ix_(points, points)]

    first._source, second._source = first_matrix, second_matrix
    applied = {id(first): 0, id(second): 0}  # blocks of pending terms that went into P
    full = _slots.PENDING_ROWS // 2  # a block's terms
    for t in range(60):
        slot = t % ring
        n = min(t + 1, ring)
        if len(held) == window:
            oldest = min(held, key=held.get)
            others = sorted(held, key=held.get)
            pts = [held[c] for c in others]
            for inverse, M, key, size in ((first, M1, oldest, n),
                                          (second, M2, second_slot[oldest],
                                           max(second_slot.values()) + 1)):
                pivot = np.linalg.inv(M[np.ix_(pts, pts)])[0, 0]  # the oldest is first
                assert inverse.remove(key, size) == pytest.approx(np.log(pivot), rel=1e-9)
            del held[oldest], second_slot[oldest]
        mine = min(set(range(ring)) - set(second_slot.values()))
        size2 = max([*second_slot.values(), mine]) + 1
        for inverse, M, key, size, keys in (
                (second, M2, mine, size2, second_slot),
                (first, M1, slot, n, {c: c for c in held})):
            column = np.zeros(size)
            for c, i in held.items():
                column[keys[c]] = M[i, t]
            inverse.make_room(size)
            a = inverse.solve(column)
            before = inverse.pending_terms.copy() if inverse.pending_terms is not None \
                else np.zeros(3, dtype=np.intp)
            mods = inverse._mods
            inverse.append(key, a, M[t, t] - column @ a, column, M[t, t], size)
            if before[0] == full and inverse._mods == mods + 1:  # a full block, no refresh
                assert inverse.pending_terms[0] == 1  # went into P: this append is pending
                applied[id(inverse)] += 1
        held[slot], second_slot[slot] = t, mine
        if t % every == 0:
            first._mods = second._mods = 10**6  # a recomputation is due at the next change
        first.settle(), second.settle()
        assert first.P is second.P and first.P.shape[1] == first.P.shape[0] + 1
        pts = [held[c] for c in sorted(held)]
        for inverse, M, keys, size in ((first, M1, sorted(held), n),
                                       (second, M2, [second_slot[c] for c in sorted(held)],
                                        max(second_slot.values()) + 1)):
            v = rng.normal(size=size)
            expected = np.zeros(size)
            expected[keys] = np.linalg.solve(M[np.ix_(pts, pts)], v[keys])
            np.testing.assert_allclose(inverse.solve(v), expected, rtol=1e-8, atol=1e-10)
    assert first.n_refreshes > 0 and second.n_refreshes > 0
    assert atoms is None or first.P.shape[0] == ring  # grew from 3 (by 16, to the ring's 9)
    assert (applied[id(first)] > 0 and applied[id(second)] > 0) == (every > full)


def test_slot_inverse_refresh_of_a_numerically_singular_matrix_is_finite():
    """A window's matrix beyond float64 (rank 2 at scale 1e24 plus a ridge 0.1, condition
    1e25): its Cholesky fails, and the refresh must still leave a finite, symmetric positive
    definite inverse (before, it zeroed P and raised, and every later prediction raised);
    a well-conditioned matrix is refreshed to its exact inverse."""
    rng = np.random.default_rng(0)
    F = rng.normal(size=(8, 2)) * 1e12
    M = F @ F.T + 0.1 * np.eye(8)
    assert np.linalg.eigvalsh(M)[0] < 0  # to float64, M is indefinite: no Cholesky
    inverse = SlotInverse()
    inverse.make_room(8)
    set_matrix(inverse, M)
    inverse.size = 8
    inverse.refresh()
    P = inverse.inverse(8)
    assert np.all(np.isfinite(P)) and np.array_equal(P, P.T)
    assert np.linalg.eigvalsh(P)[0] > 0
    good = spd(8)
    set_matrix(inverse, good)
    inverse.refresh()
    np.testing.assert_allclose(inverse.inverse(8), np.linalg.inv(good), rtol=1e-10, atol=1e-12)


def test_the_package_keeps_every_public_path():
    """okoco.linalg is a package of private modules: each public name keeps the path files and
    pickles record (okoco.linalg.X)."""
    import pickle

    import okoco.linalg

    for name in okoco.linalg.__all__:
        obj = getattr(okoco.linalg, name)
        assert obj.__module__ == "okoco.linalg"
    chol = IncrementalCholesky()
    chol.append(np.zeros(0), 2.0)
    assert b"okoco.linalg" in pickle.dumps(chol)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(chol)).factor(), chol.factor())


def test_slot_inverse_removal_with_a_pivot_lost_to_rounding_recomputes_the_inverse():
    """Exactly, P_jj >= 1 / M_jj; a drifted inverse whose P_jj is far below that (here 1e-300,
    positive) must not be downdated by it (P would overflow): the removal recomputes P from
    the other atoms' M."""
    M = spd(5)
    inverse = SlotInverse()
    inverse.make_room(5)
    set_matrix(inverse, M)
    inverse.size = 5
    inverse.refresh()
    inverse.P[0, 0] = 1e-300  # the oldest atom's pivot, lost
    assert inverse.remove(0, 5) == 0.0
    assert np.all(np.isfinite(inverse.P))
    np.testing.assert_allclose(inverse.inverse(5)[1:, 1:], np.linalg.inv(M[1:, 1:]), rtol=1e-10)
    assert np.all(np.tril(inverse.P)[0] == 0.0) and inverse.size == 4
    np.testing.assert_array_equal(inverse.matrix(np.arange(1, 5)), M[1:, 1:])
    assert np.all(inverse.matrix()[0] == 0.0)


@pytest.mark.parametrize("atoms", [None, 3])
def test_slot_inverse_counts_each_change_and_recomputes_every_16_n(atoms):
    """The compiled append and removal count each change by ``count_modification``: ``P`` is
    recomputed from ``M`` at every ``max(16 n, 64)``-th change (``n`` the slots), and the
    compact form's map of held slots follows each atom that comes or goes."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    K = rbf(X, X) + 0.1 * np.eye(80)
    ring, inverse, slots, changes = 4, SlotInverse(4, atoms=atoms), {}, 0
    for t in range(80):
        if len(slots) == 3:
            oldest = min(slots, key=slots.get)
            inverse.remove(oldest, ring)
            del slots[oldest]
            changes += 1
        slot = next(s for s in range(ring) if s not in slots)
        column = np.zeros(ring)
        for s, i in slots.items():
            column[s] = K[i, t]
        inverse.make_room(ring)
        a = inverse.solve(column)
        inverse.append(slot, a, K[t, t] - column @ a, column, K[t, t], ring)
        slots[slot] = t
        changes += 1
        assert inverse.n_refreshes == changes // 64, t
        order = sorted(slots)
        points = [slots[s] for s in order]
        np.testing.assert_allclose(inverse.inverse(ring)[np.ix_(order, order)],
                                   np.linalg.inv(K[np.ix_(points, points)]), rtol=1e-9)
    assert changes > 128


def test_slot_inverse_of_a_pair_recomputes_when_its_caller_settles():
    """One of a pair takes ``M`` from its caller's points, which may be half-way through a
    step: a recomputation it schedules (``schedule_refresh``, or the 64th change) waits for
    :meth:`SlotInverse.settle`; one that keeps ``M`` recomputes at once."""
    alone, first = SlotInverse(), SlotInverse()
    second = first.pair()
    first._source = second._source = lambda slots: np.zeros((len(slots), len(slots)))
    alone.schedule_refresh()
    assert alone.n_refreshes == 1
    for _ in range(64):
        first.count_modification(1)
    second.schedule_refresh()
    assert first.n_refreshes == second.n_refreshes == 0
    first.settle(), second.settle()
    assert first.n_refreshes == second.n_refreshes == 1
    first.settle()
    assert first.n_refreshes == 1  # nothing waits any more


def test_rows_record_what_a_compiled_step_wrote_in_place():
    """A compiled step writes a row, its squared norm and its field into the buffers in place
    (``make_room``, ``norms_buffer``) and then records the counters (``record_rows``): the
    store then reads as if the row had been appended."""
    from okoco.linalg import Rows

    appended, written = Rows(fields=("coef",)), Rows(fields=("coef",))
    row = np.array([3.0, -4.0])
    appended.append(np.array([1.0, 0.0]), coef=0.5)
    written.append(np.array([1.0, 0.0]), coef=0.5)
    appended.append(row, coef=2.0)
    written.make_room(1, 2)
    written.data[1, :2], written.fields["coef"][1] = row, 2.0
    written.norms_buffer()[1] = row @ row
    written.record_rows(2, 2, 2, max(written.max_squared_norm, row @ row))
    np.testing.assert_array_equal(written.view(), appended.view())
    np.testing.assert_array_equal(written.field("coef"), appended.field("coef"))
    assert written.squared_norms()[1] == appended.squared_norms()[1] == appended.max_squared_norm
    np.testing.assert_array_equal(written.squared_norms()[0], appended.squared_norms()[0])
    assert (written.n, written.d, written.n_added) == (2, 2, 2)
