"""The ONS head and the shared Nyström embedding (okoco.learners.embedding): the full
dictionary's swap against dense references, the linear expert against the dense ONS."""

import numpy as np
import pytest
from streams import as_dicts

from okoco import kernels, losses
from okoco.learners.embedding import SharedEmbedding, drop_rotations, rotate_coordinates
from okoco.learners.ons import DictionaryExpert, LinearExpert
from okoco.learners.shared import StepShared


def step(embedding, heads, v, y):
    """One step of the heads on the shared embedding, as Auto takes it."""
    embedded = embedding.analyse(v)
    shared = StepShared(v, None, [embedded])  # what the heads share
    analyses = [h.analyse(v, shared) for h in heads]
    steps = [h.check(y, a) for h, a in zip(heads, analyses)]
    embedding.offer(v, embedded)
    for head, analysis, planned in zip(heads, analyses, steps):
        head.apply(v, analysis, planned)
    return embedded


def test_drop_rotations_give_the_factor_without_the_atom():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 3))
    K = kernels.RBF(0.5)(X, X)
    L = np.linalg.cholesky(K)
    for j in (0, 4, 8):
        keep = np.arange(9) != j
        reference = np.linalg.cholesky(K[np.ix_(keep, keep)])
        W = L.T.copy()  # columns of L as rows: rotate them as coordinates
        rotate_coordinates(W, j, drop_rotations(L, j))
        W = W.T
        assert np.allclose(W[keep, j], 0.0, atol=1e-12)  # coordinate j: only atom j
        np.testing.assert_allclose(W[keep][:, keep], reference, atol=1e-12)


def swap_against_dense(embedding, heads, v, embedded, kernel, X):
    """``embedding.swap_in`` checked against dense references, whatever its rule: the atoms
    held after it (the others in order, then ``v``), the factor a fresh Cholesky of their
    K_I, every head's function at ``X`` the RKHS least-squares projection of its old one onto
    the remaining atoms (the newcomer's weight 0), its A^{-1} the inverse of A restricted to
    their span (1/alpha for the newcomer). Returns the atom that left, or None."""
    atoms, m = embedding._store.view().copy(), embedding.size
    K = kernel(atoms, atoms)
    L = np.linalg.cholesky(K)
    coefficients = [np.linalg.solve(L.T, h._u[:m]) for h in heads]
    inverses = [h._P.matrix() for h in heads]
    j = embedding.swap_in(v, embedded, heads)
    if j is None:
        return None
    keep = np.arange(m) != j
    new_atoms = embedding._store.view()
    np.testing.assert_array_equal(new_atoms, np.vstack([atoms[keep], v]))
    L_new = np.linalg.cholesky(kernel(new_atoms, new_atoms))
    np.testing.assert_allclose(embedding._embed.factor(), L_new, atol=1e-10)
    M = np.linalg.solve(np.linalg.cholesky(K[np.ix_(keep, keep)]), L[keep])
    for head, c, P in zip(heads, coefficients, inverses):
        want = kernel(X, atoms[keep]) @ np.linalg.solve(K[np.ix_(keep, keep)], K[keep] @ c)
        after = kernel(X, new_atoms) @ np.linalg.solve(L_new.T, head._u[:m])
        np.testing.assert_allclose(after, want, atol=1e-9 * max(1.0, np.abs(want).max()))
        restricted = np.linalg.inv(M @ np.linalg.inv(P) @ M.T)
        np.testing.assert_allclose(head._P.matrix()[: m - 1, : m - 1], restricted,
                                   rtol=1e-8, atol=1e-8 * np.abs(restricted).max())
        assert head._u[m - 1] == 0.0 and head._P.size == m
        assert head._P.matrix()[m - 1, m - 1] == 1.0 / head.alpha
    return j


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic()])
def test_a_swap_projects_the_function_and_restricts_A_as_dense_references_do(loss):
    """Once full, a newcomer of residual above twice the smallest atom residual replaces that
    atom: every head's new function is the least-squares projection in the RKHS of its old one
    onto the remaining atoms (plus a zero weight on the newcomer), its A^{-1} the inverse of A
    restricted to their span, and diag(K^{-1}) the dense one."""
    rng = np.random.default_rng(1)
    kernel = kernels.RBF(0.5)
    embedding = SharedEmbedding(kernel, dictionary_alpha=0.1, max_size=12, swap_margin=2.0)
    heads = [DictionaryExpert(embedding, loss, alpha=a) for a in (0.1, 1.0)]
    swaps = 0
    for t in range(220):
        v = rng.normal(size=2) * (1.0 if t < 110 else 3.0)  # a wider region after the fill
        y = float(np.sin(v[0])) if isinstance(loss, losses.Squared) else float(np.sign(v[0]))
        embedded = step(embedding, heads, v, y)
        if embedding.size < embedding.max_size or embedded.joined:
            continue
        X = rng.normal(size=(15, 2)) * 2.0
        if swap_against_dense(embedding, heads, v, embedded, kernel, X) is None:
            continue
        swaps += 1
        K_new = kernel(embedding._store.view(), embedding._store.view())
        np.testing.assert_allclose(embedding.atom_residuals(),
                                   1.0 / np.diag(np.linalg.inv(K_new)), rtol=1e-8)
        assert embedding.size == embedding.max_size
    assert swaps >= 3 and embedding.n_swaps == swaps


def test_a_frozen_dictionary_never_swaps():
    rng = np.random.default_rng(2)
    embedding = SharedEmbedding(kernels.RBF(0.5), max_size=5, swap_margin=None)
    head = DictionaryExpert(embedding, losses.Squared())
    for _ in range(100):
        v = rng.normal(size=2) * 3
        embedded = step(embedding, [head], v, 0.5)
        assert embedding.swap_in(v, embedded, [head]) is None
    assert embedding.size == 5 and embedding.n_swaps == 0


@pytest.mark.parametrize("bound", [None, 1e3])
def test_the_linear_expert_is_the_dense_ons_on_one_and_x(bound):
    """The head's step on [1, x] against primal ONS written with dense matrices (a feature
    first seen later adds a coordinate at u = 0, A = alpha), projecting onto |z.u| <= bound
    (None: C = 1); the predictions it gives the mixture are clipped to C = 1 either way."""
    from primal import primal_ons

    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 3))
    X[:30, 2] = 0.0
    y = np.clip(X @ [0.5, -0.3, 0.8] + 0.1 * rng.normal(size=80), -1, 1)
    head = LinearExpert(losses.Squared(), alpha=0.5, C=1.0, bound=bound)
    rows = [{k: v for k, v in x.items() if not (k == "x2" and i < 30)}
            for i, x in enumerate(as_dicts(X))]
    got, raw = [], []
    for x, target in zip(rows, y):
        v = np.array([x[k] for k in ("x0", "x1", "x2") if k in x])
        analysis = head.analyse(v)
        raw.append(analysis.ybar)
        got.append(min(max(raw[-1], -1.0), 1.0))  # C = 1
        head.apply(v, analysis, head.check(float(target), analysis))
    Phi = np.hstack([np.ones((80, 1)), X])
    expected, active, _ = primal_ons(Phi, y, losses.Squared(), bound or 1.0, 0.5, "hessian")
    np.testing.assert_allclose(got, np.clip(expected, -1, 1), atol=1e-10)
    if bound is not None:  # the head goes past C = 1 inside without projecting
        assert active == 0 and max(abs(r) for r in raw) > 1.0


def test_the_linear_expert_with_eta_0_is_gradient_descent_with_step_one_over_alpha():
    """eta=0: A stays alpha I, so the step is u <- u - loss'(z.u) z / alpha (the logistic loss,
    labels +-1, a bound it does not reach): river's LogisticRegression with SGD(1 / alpha),
    step for step."""
    from river import linear_model, optim

    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4))
    y = np.where(X @ [1.0, -2.0, 0.5, 0.0] + 0.3 * rng.normal(size=200) > 0, 1.0, -1.0)
    head = LinearExpert(losses.Logistic(), alpha=20.0, eta=0.0, C=3.0, bound=1e3)
    river_lr = linear_model.LogisticRegression(optimizer=optim.SGD(0.05), intercept_lr=0.05)
    u, got, river_scores, expected = np.zeros(5), [], [], []
    for x, v, target in zip(as_dicts(X), X, y):
        z = np.concatenate([[1.0], v])
        analysis = head.analyse(v)
        got.append(analysis.ybar)
        expected.append(z @ u)
        river_scores.append(river_lr._raw_dot_one(x))
        u = u - float(losses.Logistic().derivative(target, expected[-1])) * z / 20.0
        head.apply(v, analysis, head.check(float(target), analysis))
        river_lr.learn_one(x, target > 0)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_allclose(got, river_scores, atol=1e-10)
    assert max(abs(g) for g in got) > 3.0  # past C inside: no projection onto |z.u| <= C


def test_a_linear_expert_saved_before_the_bound_projects_onto_c():
    """A file written before ``bound`` existed restores no such attribute: the class default
    is the old rule, |z.u| <= C (Auto's own experts get 10 C)."""
    head = LinearExpert(losses.Squared(), C=2.0, bound=20.0)
    assert head._ons_bound == 20.0
    del head.bound  # as restored from such a file
    assert head._ons_bound == 2.0 and LinearExpert(losses.Squared(), C=2.0)._ons_bound == 2.0
