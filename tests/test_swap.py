"""A full dictionary's swap, compiled (okoco._core._swap): the rotations of a removal against
the dense Cholesky factor without the atom, a head's projection and restriction against the
dense rotation and Schur complement, and the swap of a packed head against dense solves."""

import math

import numpy as np
import pytest
from test_embedding import step, swap_against_dense

from okoco import kernels, losses
from okoco._core import _swap
from okoco.learners.embedding import SharedEmbedding, drop_rotations, rotate_coordinates
from okoco.learners.ons import DictionaryExpert
from okoco.linalg import IncrementalCholesky, PackedSymmetric


def _factor(K):
    chol = IncrementalCholesky(capacity=4)
    for a in range(K.shape[0]):
        chol.append(K[:a, a], K[a, a])
    return chol


def _gram(m, seed=0, ridge=1e-6):
    X = np.random.default_rng(seed).normal(size=(m, 3))
    return kernels.RBF(0.5)(X, X) + ridge * np.eye(m)


@pytest.mark.parametrize("m", [1, 2, 9, 60])
def test_removal_rotations_take_the_atom_out_as_the_dense_factor_without_it(m):
    """Rotating the old factor's columns by the rotations of ``remove(j, rotations)`` zeroes
    coordinate j and leaves the dense Cholesky factor of K without atom j (and the rotations
    are those of the dense reference ``drop_rotations``)."""
    K = _gram(m)
    for j in sorted({0, m // 3, m - 2, m - 1} - {-1}):
        chol = _factor(K)
        L = chol.factor()
        rotations = np.empty((m - j - 1, 2))
        chol.remove(j, rotations)
        keep = np.arange(m) != j
        dense = np.linalg.cholesky(K[np.ix_(keep, keep)]) if m > 1 else np.zeros((0, 0))
        np.testing.assert_allclose(chol.factor(), dense, atol=1e-12)
        W = L.T.copy()  # L's columns as rows: rotate them as coordinates
        rotate_coordinates(W, j, rotations)
        W = W.T
        np.testing.assert_allclose(W[keep, j], 0.0, atol=1e-12)
        np.testing.assert_allclose(W[keep][:, keep], dense, atol=1e-12)
        np.testing.assert_allclose(rotations.reshape(-1, 2),
                                   np.array(drop_rotations(L, j)).reshape(-1, 2), atol=1e-12)
        np.testing.assert_allclose((rotations ** 2).sum(axis=1), 1.0, rtol=1e-15)


def test_a_refused_rotations_buffer_changes_nothing():
    chol = _factor(_gram(6))
    L, A = chol.factor(), chol.matrix()
    for bad in (np.empty((3, 2)), np.empty((4, 2), dtype=np.float32), np.empty((2, 4)),
                np.empty((4, 2))[::-1], [[0.0, 0.0]] * 4):
        with pytest.raises(ValueError, match="rotations must be"):
            chol.remove(1, bad)
    assert chol.size == 6
    np.testing.assert_array_equal(chol.factor(), L)
    np.testing.assert_array_equal(chol.matrix(), A)


def _reference_drop(P, u, j, rotations):
    """The dense reference: G^T u and G^T P G, coordinate j dropped (P by its Schur
    complement)."""
    u, P = u.copy(), P.copy()
    rotate_coordinates(u, j, rotations)
    rotate_coordinates(P, j, rotations)
    P = P.T.copy()
    rotate_coordinates(P, j, rotations)
    keep = np.arange(P.shape[0]) != j
    return u[keep], P[keep][:, keep] - np.outer(P[keep, j], P[j, keep]) / P[j, j]


def _rotations(k, seed):
    angle = np.random.default_rng(seed).uniform(-np.pi / 2, np.pi / 2, size=k)
    return np.ascontiguousarray(np.column_stack([np.cos(angle), np.sin(angle)]))


@pytest.mark.parametrize("m", [1, 2, 7, 40])
def test_a_head_drop_is_the_dense_rotation_and_schur_complement(m):
    """Both layouts (packed lower, dense C-ordered) against the dense reference: the order
    m - 1 result in place, u's coordinates moved up, the freed last row and entry zeroed."""
    rng = np.random.default_rng(m)
    B = rng.normal(size=(m, m))
    P = B @ B.T + np.eye(m)
    u = rng.normal(size=m)
    for j in sorted({0, m // 2, m - 1}):
        rotations = _rotations(m - j - 1, j)
        u_want, P_want = _reference_drop(P, u, j, rotations)
        packed = np.full(m * (m + 1) // 2 + 5, 7.0)  # a buffer with room to spare
        packed[: m * (m + 1) // 2] = P[np.tril_indices(m)]
        u_packed = np.append(u, 7.0)
        _swap.packed_drop(packed, m, j, rotations, u_packed)
        got = np.zeros((m - 1, m - 1))
        got[np.tril_indices(m - 1)] = packed[: (m - 1) * m // 2]
        got += np.tril(got, -1).T
        np.testing.assert_allclose(got, P_want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(u_packed[: m - 1], u_want, rtol=1e-12, atol=1e-12)
        assert u_packed[m - 1] == 0.0 and u_packed[m] == 7.0
        np.testing.assert_array_equal(packed[(m - 1) * m // 2: m * (m + 1) // 2], 0.0)
        np.testing.assert_array_equal(packed[m * (m + 1) // 2:], 7.0)
        dense, u_dense = P.copy().reshape(-1), u.copy()
        _swap.dense_drop(dense, m, j, rotations, u_dense)
        dense = dense.reshape(m, m)
        np.testing.assert_allclose(dense[: m - 1, : m - 1], P_want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(u_dense[: m - 1], u_want, rtol=1e-12, atol=1e-12)
        assert u_dense[m - 1] == 0.0
        np.testing.assert_array_equal(dense[m - 1], 0.0)
        np.testing.assert_array_equal(dense[:, m - 1], 0.0)


@pytest.mark.parametrize("call", [_swap.packed_drop, _swap.dense_drop])
def test_a_refused_head_drop_changes_nothing(call):
    m = 5
    size = m * m if call is _swap.dense_drop else m * (m + 1) // 2
    P, u = np.arange(size, dtype=float), np.arange(m, dtype=float)
    cases = [(P, m, 2, np.zeros((3, 2)), u, ValueError),   # 2 rotations are due
             (P, m, 5, np.zeros((0, 2)), u, IndexError),   # no coordinate 5
             (P[:-1], m, 1, np.zeros((3, 2)), u, ValueError),  # too small a matrix
             (P, m, 1, np.zeros((3, 2)), u[:4], ValueError)]  # too short a point
    for args in cases:
        before = [a.copy() for a in (args[0], args[4])]
        with pytest.raises(args[5], match=call.__name__):
            call(*args[:5])
        np.testing.assert_array_equal(args[0], before[0])
        np.testing.assert_array_equal(args[4], before[1])


def test_a_packed_heads_swap_projects_its_function_as_dense_solves_do():
    """Past PackedSymmetric.DENSE_MAX atoms (the packed layout): each swap's new function is
    the RKHS least-squares projection of the old one onto the remaining atoms (predictions
    by dense solves), A^{-1} the inverse of A restricted to their span, diag(K^{-1}) the
    dense one, and log det K_I grows by more than log(margin) a swap (the bound on swaps)."""
    rng = np.random.default_rng(3)
    kernel, m, margin = kernels.RBF(0.3), PackedSymmetric.DENSE_MAX + 6, 2.0
    embedding = SharedEmbedding(kernel, dictionary_alpha=0.01, max_size=m, swap_margin=margin)
    head = DictionaryExpert(embedding, losses.Squared(), alpha=0.3)
    checked, X_test = 0, rng.normal(size=(10, 4)) * 2.0
    t = 0
    while checked < 3 and t < 3000:
        v = rng.normal(size=4) * (1.0 if embedding.size < m else 2.5)
        embedded = step(embedding, [head], v, float(np.sin(v[0])))
        t += 1
        if embedding.size < m or embedded.joined:
            continue
        atoms = embedding._store.view().copy()
        K = kernel(atoms, atoms)
        coefficients = np.linalg.solve(np.linalg.cholesky(K).T, head._u[:m])
        P, logdet = head._P.matrix(), embedding._embed.logdet()
        j = embedding.swap_in(v, embedded, [head])
        if j is None:
            continue
        checked += 1
        assert not head._P.is_dense and head._P.size == m
        keep = np.arange(m) != j
        new_atoms = embedding._store.view()
        np.testing.assert_array_equal(new_atoms[:-1], atoms[keep])
        K_new = kernel(new_atoms, new_atoms)
        projected = np.linalg.solve(K[np.ix_(keep, keep)], K[keep] @ coefficients)
        after = kernel(X_test, new_atoms) @ np.linalg.solve(np.linalg.cholesky(K_new).T,
                                                            head._u[:m])
        want = kernel(X_test, atoms[keep]) @ projected
        np.testing.assert_allclose(after, want, atol=1e-9 * max(1.0, np.abs(want).max()))
        M = np.linalg.solve(np.linalg.cholesky(K[np.ix_(keep, keep)]),
                            np.linalg.cholesky(K)[keep])
        restricted = np.linalg.inv(M @ np.linalg.inv(P) @ M.T)
        got = head._P.matrix()
        np.testing.assert_allclose(got[: m - 1, : m - 1], restricted, rtol=1e-7,
                                   atol=1e-8 * np.abs(restricted).max())
        np.testing.assert_array_equal(got[m - 1, : m - 1], 0.0)
        assert got[m - 1, m - 1] == 1.0 / head.alpha and head._u[m - 1] == 0.0
        np.testing.assert_allclose(embedding.atom_residuals(),
                                   1.0 / np.diag(np.linalg.inv(K_new)), rtol=1e-7)
        assert embedding._embed.logdet() > logdet + math.log(margin)
    assert checked == 3, f"{checked} swaps in {t} steps"


def test_the_kept_inverse_diagonal_is_recomputed_every_m_swaps():
    """diag(K^{-1}) is kept by O(m) updates and recomputed afresh every m swaps (against
    drift); either way it is the dense one."""
    rng = np.random.default_rng(4)
    kernel = kernels.RBF(0.5)
    embedding = SharedEmbedding(kernel, dictionary_alpha=0.01, max_size=6, swap_margin=1.01)
    head = DictionaryExpert(embedding, losses.Squared())
    dropped = 0
    for t in range(300):
        v = rng.normal(size=2) * 0.7 + [0.02 * t, 0.0]  # a region that moves: swaps go on
        embedded = step(embedding, [head], v, 0.0)
        if embedding.swap_in(v, embedded, [head]) is None:
            continue
        if embedding._inverse_diagonal is None:
            dropped += 1
            assert embedding.n_swaps % embedding.size == 0
        atoms = embedding._store.view()
        np.testing.assert_allclose(embedding.atom_residuals(),
                                   1.0 / np.diag(np.linalg.inv(kernel(atoms, atoms))),
                                   rtol=1e-8)
    assert dropped >= 2


@pytest.mark.parametrize("rule", ["residual", "usage"])
def test_a_swapping_auto_with_packed_heads_round_trips(tmp_path, monkeypatch, rule):
    """Auto whose dictionaries swapped past PackedSymmetric.DENSE_MAX atoms: the file is the
    model (n_swaps, the atoms held now, the heads after their drops, the usage rule's
    statistics), and the loaded model answers, swaps and learns as the live one, to 1e-9 of
    the predictions' scale."""
    import functools

    import okoco
    import okoco.learners.auto as auto_module
    from okoco.learners import Auto

    size = PackedSymmetric.DENSE_MAX + 4
    monkeypatch.setattr(auto_module, "DICTIONARY", (1.0, size, 2.0, rule))
    monkeypatch.setattr(auto_module, "SharedEmbedding",
                        functools.partial(SharedEmbedding, usage_horizon=50))
    rng = np.random.default_rng(5)

    def rows(n, shift):
        X = rng.normal(size=(n, 3)) + shift
        return [({i: float(v) for i, v in enumerate(x)}, float(np.sin(x[0]) + x[1]))
                for x in X]

    model = Auto()
    for x, y in rows(300, 0.0) + rows(100, 2.0):  # the region moves after the fill
        model.learn_one(x, y)
    swaps = [e.n_swaps for e in model._embeddings]
    assert min(swaps) > 0 and all(e.size == size for e in model._embeddings)
    loaded = okoco.load(model.save(tmp_path / "auto.npz"))
    assert [e.n_swaps for e in loaded._embeddings] == swaps
    for mine, theirs in zip(model._embeddings, loaded._embeddings):
        assert (theirs.swap_rule, theirs.usage_horizon) == (rule, 50)
        if rule == "usage":
            np.testing.assert_array_equal(theirs._usage, mine._usage)
            assert (theirs._usage_count, theirs._mean_residual) == (mine._usage_count,
                                                                    mine._mean_residual)
    probes = [x for x, _ in rows(20, 1.0)]

    def agree():
        got = np.array([loaded.predict_one(x) for x in probes])
        want = np.array([model.predict_one(x) for x in probes])
        assert np.max(np.abs(got - want)) <= 1e-9 * np.max(np.abs(want))

    agree()
    for x, y in rows(40, 3.0):  # more swaps in both
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    assert [e.n_swaps for e in loaded._embeddings] == [e.n_swaps for e in model._embeddings]
    assert sum(e.n_swaps for e in model._embeddings) > sum(swaps)
    agree()


def _usage_reference(kernel, atoms, rows, residuals, horizon):
    """The usage rule's statistics replayed with dense kernels: each atom's discounted share
    of every later point's kernel row (from an even share N/m when it joined), the
    discounted count N and the mean residual over the last ``horizon`` steps' weights.
    ``atoms[t]`` are the atoms (rows) the point of step ``t`` met."""
    decay, count, mean, usage = 1.0 - 1.0 / horizon, 0.0, 0.0, {}
    for t, (x, residual) in enumerate(zip(rows, residuals)):
        k = kernel(x[None, :], atoms[t])[0]
        for key in usage:
            usage[key] *= decay
        for a, share in zip(atoms[t], k / k.sum()):
            usage[a.tobytes()] += share
        count = decay * count + 1.0
        mean += (residual - mean) / min(count, horizon)
        after = atoms[t + 1]
        for a in after:  # an atom that joined (a point or a swap's newcomer)
            usage.setdefault(a.tobytes(), count / len(after))
        usage = {a.tobytes(): usage[a.tobytes()] for a in after}
    return usage, count, mean


def test_the_usage_rule_keeps_each_atoms_discounted_share_of_the_kernel_rows():
    """On a moving stream (atoms join, then swaps): the usages, the count and the mean
    residual the rule keeps in O(m) a step are the dense replay's (_usage_reference, kernel
    rows and residuals k(x,x) - k^T K^{-1} k by dense solves), and every swap removed the
    least-used atom while it was below 1/margin of an even share, for a newcomer above the
    mean residual."""
    rng = np.random.default_rng(6)
    kernel, horizon, margin = kernels.RBF(0.5), 15, 3.0
    embedding = SharedEmbedding(kernel, dictionary_alpha=0.05, max_size=8, swap_margin=margin,
                                swap_rule="usage", usage_horizon=horizon)
    head = DictionaryExpert(embedding, losses.Squared())
    atoms, rows, residuals = [np.zeros((0, 2))], [], []
    for t in range(400):
        v = rng.normal(size=2) * 0.8 + [0.015 * t, 0.0]
        before = embedding._store.view().copy()
        if len(before):
            k = kernel(v[None, :], before)[0]
            residuals.append(1.0 - k @ np.linalg.solve(kernel(before, before), k))
        else:
            residuals.append(1.0)
        usage = None if embedding._usage is None else embedding._usage.copy()
        even = embedding._usage_count * (1 - 1 / horizon) + 1  # N after this step
        embedded = step(embedding, [head], v, float(np.sin(v[0])))
        j = embedding.swap_in(v, embedded, [head])
        rows.append(v)
        atoms.append(embedding._store.view().copy())
        if j is not None:  # the least used, dead, for a newcomer above the mean residual
            shares = usage * (1 - 1 / horizon) + k / k.sum()
            assert j == int(np.argmin(shares))
            assert shares[j] < even / (margin * embedding.size)
            assert residuals[-1] > embedding._mean_residual
    want, count, mean = _usage_reference(kernel, atoms, rows, residuals, horizon)
    got = [want[a.tobytes()] for a in embedding._store.view()]
    np.testing.assert_allclose(embedding._usage, got, rtol=1e-9)
    assert embedding._usage_count == pytest.approx(count, rel=1e-12)
    assert embedding._mean_residual == pytest.approx(mean, rel=1e-8)
    assert embedding.n_swaps >= 5


def test_a_usage_swap_keeps_the_factor_and_the_heads_as_dense_references_do():
    """Each swap of the usage rule: the embedding's factor is a fresh Cholesky of K_I over the
    atoms held now, every head's function the RKHS least-squares projection of its old one
    onto the remaining atoms, its A^{-1} the inverse of A restricted to their span, and the
    newcomer starts at an even share of the usage."""
    rng = np.random.default_rng(7)
    kernel, m = kernels.RBF(0.5), 10
    embedding = SharedEmbedding(kernel, dictionary_alpha=0.05, max_size=m, swap_margin=4.0,
                                swap_rule="usage", usage_horizon=20)
    heads = [DictionaryExpert(embedding, losses.Squared(), alpha=a) for a in (0.1, 1.0)]
    swaps, X_test = 0, rng.normal(size=(12, 2)) * 2.0 + [3.0, 0.0]
    for t in range(500):
        v = rng.normal(size=2) + [0.012 * t, 0.0]
        embedded = step(embedding, heads, v, float(np.sin(v[0]) + v[1]))
        if embedding.size < m or embedded.joined:
            assert embedding.swap_in(v, embedded, heads) is None  # (it keeps the usages)
            continue
        if swap_against_dense(embedding, heads, v, embedded, kernel, X_test) is None:
            continue
        swaps += 1
        assert embedding._usage.shape == (m,)
        assert embedding._usage[-1] == pytest.approx(embedding._usage_count / m, rel=1e-15)
    assert swaps >= 5


def _run_dictionary(embedding, regions, rng):
    """Feed ``embedding`` (no heads) points of N(centre, 1) in 2-d, ``(centre, steps)`` in
    turn; returns each region's points' residuals against the atoms they met."""
    residuals = [np.empty(steps) for _, steps in regions]
    for (centre, steps), region in zip(regions, residuals):
        for t in range(steps):
            v = rng.normal(size=2) + centre
            embedded = step(embedding, [], v, 0.0)
            region[t] = embedded.kappa - float(embedded.h @ embedded.h)
            embedding.swap_in(v, embedded, [])
    return residuals


@pytest.mark.parametrize("rule", [None, "residual", "usage"])
def test_only_the_usage_rule_moves_a_full_dictionary_to_where_the_stream_is(rule):
    """A region first seen after the fill (5 kernel widths away): the usage rule moves nearly
    every atom there and covers its points as well as the fill covered the first region's (the
    mean residual of the last 300 points); a frozen dictionary and the residual rule (whose
    newcomers stop qualifying once the atoms are spread) leave most atoms behind and the new
    points poorly covered (measured: 1.0 and 0.67, the usage rule 0.075, the first region
    0.08-0.14)."""
    rng = np.random.default_rng(8)
    embedding = SharedEmbedding(kernels.RBF(0.5), dictionary_alpha=0.05, max_size=15,
                                swap_margin=None if rule is None else 4.0,
                                swap_rule=rule or "residual", usage_horizon=30)
    centre = np.array([7.0, 0.0])
    first, new = _run_dictionary(embedding, [(np.zeros(2), 600), (centre, 600)], rng)
    moved = np.linalg.norm(embedding._store.view() - centre, axis=1) < 3.5
    if rule == "usage":
        assert moved.mean() >= 0.9 and new[-300:].mean() <= first[-300:].mean()
    else:
        assert moved.mean() <= 0.5 and new[-300:].mean() > 0.5


def test_the_usage_rule_rarely_swaps_on_a_stationary_stream():
    """On a stationary stream a dictionary full of used atoms keeps them: after the fill the
    usage rule (margin 10, horizon 30 steps) swaps fewer than once in 200 steps (measured: 2
    in 4,000), since its atoms' shares stay above a tenth of an even share."""
    rng = np.random.default_rng(9)
    embedding = SharedEmbedding(kernels.RBF(0.5), dictionary_alpha=0.05, max_size=15,
                                swap_margin=10.0, swap_rule="usage", usage_horizon=30)
    _run_dictionary(embedding, [(np.zeros(2), 400)], rng)
    assert embedding.size == 15
    before = embedding.n_swaps
    _run_dictionary(embedding, [(np.zeros(2), 4000)], rng)
    assert embedding.n_swaps - before < 4000 / 200


@pytest.mark.parametrize("bad, message", [
    ({"swap_rule": "lru"}, "swap_rule must be one of residual, usage, not 'lru'"),
    ({"swap_margin": 1.0}, "swap_margin must be None or above 1, not 1.0"),
    ({"swap_margin": float("nan")}, "swap_margin must be None or above 1"),
    ({"usage_horizon": 0}, "usage_horizon must be None or an int >= 1, not 0"),
    ({"usage_horizon": 2.5}, "usage_horizon must be None or an int >= 1, not 2.5")])
def test_a_bad_rule_is_refused(bad, message):
    arguments = {"swap_margin": 2.0, "swap_rule": "usage", **bad}
    with pytest.raises(ValueError, match=message):
        SharedEmbedding(kernels.RBF(0.5), **arguments)
