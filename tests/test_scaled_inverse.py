"""A first-order ONS head holds ``A^{-1} = I / alpha`` as its scalar
(``okoco.linalg.ScaledIdentity``): the compiled step's product is ``c z`` with no matrix read
(``okoco._core._ons.OnsState.bind_scaled``), a swap moves ``u`` alone
(``okoco._core._swap.vector_drop``), and a model file holds the order and the scalar."""

import copy
import json
import os
import pickle

import numpy as np
import pytest
from test_embedding import step, swap_against_dense
from test_persistence_rebuild import _dicts

import okoco
import okoco.learners.auto as auto_module
from okoco import kernels, losses, persistence
from okoco._core import _ons, _swap
from okoco.learners import Auto
from okoco.learners.embedding import SharedEmbedding, drop_rotations, rotate_coordinates
from okoco.learners.ons import DictionaryExpert, LinearExpert
from okoco.linalg import PackedSymmetric, ScaledIdentity
from okoco.persistence._invariants import check_invariants

V12 = os.path.join(os.path.dirname(__file__), "data", "format-v12-first-order")
SQUARED = 0  # okoco._core._losses' code of the squared loss (okoco.learners._codes)


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- the matrix ----------------------------------------------------------------------------
def test_a_scaled_identity_is_c_times_the_identity_and_grows_as_one():
    P = ScaledIdentity(3, 0.25)
    v = _rng().normal(size=3)
    np.testing.assert_array_equal(P.matrix(), 0.25 * np.eye(3))
    np.testing.assert_array_equal(P.matvec(v), P.matrix() @ v)
    P.append(np.zeros(3), 0.25)
    assert P.size == 4 and P.scale == 0.25
    np.testing.assert_array_equal(P.matrix(), 0.25 * np.eye(4))
    full = P.full()
    assert type(full) is PackedSymmetric and full.size == 4
    np.testing.assert_array_equal(full.matrix(), P.matrix())
    P.flush()  # (nothing pending)
    for clone in (pickle.loads(pickle.dumps(P)), copy.deepcopy(P)):
        assert (type(clone), clone.size, clone.scale) == (ScaledIdentity, 4, 0.25)
    # no m x m storage: the order and the scalar only
    assert not any(isinstance(value, np.ndarray) for value in vars(P).values())


@pytest.mark.parametrize(("column", "diagonal"), [
    (np.array([0.0, 1e-300]), 0.25), (np.zeros(2), 0.5), (np.zeros(3), 0.25)])
def test_a_border_that_is_not_the_identitys_is_refused_and_changes_nothing(column, diagonal):
    P = ScaledIdentity(2, 0.25)
    with pytest.raises(ValueError, match="column|diagonal"):
        P.append(column, diagonal)
    assert (P.size, P.scale) == (2, 0.25)


@pytest.mark.parametrize(("size", "scale"), [(-1, 1.0), (2.5, 1.0), (True, 1.0), (2, 0.0),
                                             (2, -1.0), (2, float("nan")), (2, float("inf"))])
def test_bad_sizes_and_scales_are_refused(size, scale):
    with pytest.raises(ValueError, match="size|scale"):
        ScaledIdentity(size, scale)


def test_a_file_with_a_bad_scale_breaks_the_invariant():
    bad = ScaledIdentity(2, 1.0)
    bad._scale = -1.0  # (as a damaged file would hold it)
    with pytest.raises(ValueError, match="invariant"):
        check_invariants(bad, "head.ons_inverse")
    check_invariants(ScaledIdentity(2, 1.0), "head.ons_inverse")


# -- the compiled step -----------------------------------------------------------------------
def _states(m, c, alpha, bound=1.0, hessian=False, u=None):
    """Two compiled states over copies of one ``u``: ``c I`` bound as a matrix (the full
    ``PackedSymmetric``) and as its scalar."""
    u = _rng(1).normal(size=m) if u is None else u
    full, scaled = PackedSymmetric.scaled_identity(m, c), ScaledIdentity(m, c)
    one, two = (_ons.OnsState(alpha, bound, SQUARED, hessian) for _ in range(2))
    one.bind(full.buffer, full.storage(), m, full.is_dense, u.copy())
    two.bind_scaled(scaled, c, m, u.copy())
    return one, two


@pytest.mark.parametrize("m", [1, 7, PackedSymmetric.DENSE_MAX + 5])  # dense, then packed
def test_the_scaled_product_and_step_are_the_full_matrixs_bit_for_bit(m):
    """``(A^{-1}z, s)`` and the step's new ``u`` (projection and gradient, a new coordinate)
    on ``c I`` held as a scalar equal, bit for bit, those on the matrix ``c I`` (its row
    products' other terms are exact zeros), and the scalar form reads no matrix."""
    alpha = 3.0
    one, two = _states(m, 1.0 / alpha, alpha)
    assert two.scaled and not one.scaled and not two.deferred
    rng = _rng(2)
    for _ in range(5):
        z = rng.normal(size=m)
        (p1, s1), (p2, s2) = one.direction(z), two.direction(z)
        np.testing.assert_array_equal(p1, p2)
        assert s1 == s2 and s1 == pytest.approx(z @ z / alpha, rel=1e-12)
        np.testing.assert_allclose(p2, z / alpha, rtol=1e-15, atol=0)
        y, ybar = 5.0 * rng.normal(), float(z @ one.u_obj[:m])
        for state in (one, two):
            assert state.plan(z, y, ybar, 0.0, np.zeros(0), False) == _ons.OK
            state.commit(y, 0.0, 0)
        np.testing.assert_array_equal(one.u_obj, two.u_obj)


def test_a_curved_step_on_a_scaled_identity_is_refused_and_changes_nothing():
    """A step that would update ``A^{-1}`` (weight != 0: ``eta > 0`` or the hessian policy)
    is refused on the scalar form (``CURVED``) before anything changed."""
    for eta, hessian in ((0.5, False), (0.0, True)):
        _, state = _states(4, 0.5, 2.0, hessian=hessian)
        u = state.u_obj.copy()
        z = _rng(3).normal(size=4)
        assert state.plan(z, 1.0, float(z @ u), eta, np.zeros(0), False) == _ons.CURVED
        np.testing.assert_array_equal(state.u_obj, u)
    with pytest.raises(ValueError, match="scale"):
        _ons.OnsState(1.0, 1.0, SQUARED, False).bind_scaled(None, 0.0, 2, np.zeros(2))


@pytest.mark.parametrize("m", [1, 2, 9, PackedSymmetric.DENSE_MAX + 3])  # dense, then packed
def test_a_scaled_heads_drop_is_the_dense_rotation_and_keeps_c_i(m):
    """``vector_drop``: ``u`` rotated (``G^T u``, dense reference) with coordinate ``j``
    dropped and the last 0, as ``packed_drop`` moves it; the matrix ``c I`` that
    ``packed_drop`` rotates and restricts stays ``c I`` (to its rounding)."""
    rng, c = _rng(4), 0.25
    X = rng.normal(size=(m, 3))
    L = np.linalg.cholesky(kernels.RBF(0.5)(X, X) + 1e-6 * np.eye(m))
    for j in range(m):
        rotations = np.array(drop_rotations(L, j), dtype=float).reshape(-1, 2)
        u = rng.normal(size=m + 2)
        want = u[:m].copy()
        rotate_coordinates(want, j, list(map(tuple, rotations)))
        want = np.append(np.delete(want, j), 0.0)
        got = u.copy()
        _swap.vector_drop(m, j, rotations, got)
        np.testing.assert_allclose(got[:m], want, rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(got[m:], u[m:])
        full, other = PackedSymmetric.scaled_identity(m, c), u.copy()
        if full.is_dense:
            _swap.dense_drop(full.storage(), m, j, rotations, other)
        else:
            _swap.packed_drop(full.storage(), m, j, rotations, other)
        np.testing.assert_array_equal(got, other)
        restricted = full.matrix()[: m - 1, : m - 1]
        np.testing.assert_allclose(restricted, c * np.eye(m - 1), rtol=0, atol=1e-15)
    with pytest.raises(IndexError):
        _swap.vector_drop(m, m, np.zeros((0, 2)), np.zeros(m))
    with pytest.raises(ValueError, match="rotations"):
        _swap.vector_drop(m, 0, np.zeros((m, 2)), np.zeros(m))


# -- the heads -------------------------------------------------------------------------------
def _stream(n, seed=0):
    rng = _rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]


def _swapping(n):
    """Rows whose first 150 are close together (the atoms they leave have small residuals)
    and whose later ones then swap them out of a dictionary of ``RBF(0.2)`` with
    ``swap_margin=1.5``."""
    X, y = _stream(n)
    X[:150] *= 0.3
    return X, y, kernels.RBF(0.2)


def _first_order(head, u, z, y, C, alpha, loss):
    """The projected gradient step from ``u`` at ``z`` (dense reference)."""
    ybar = z @ u
    yhat = min(max(ybar, -C), C)
    return u - (ybar - yhat) * z / (z @ z) - loss.derivative(y, yhat) * z / alpha, ybar != yhat


def test_a_switched_head_holds_a_scalar_and_takes_the_projected_gradient_step():
    """After the switch the sharp head's ``A^{-1}`` is ``I / full_alpha`` held as a scalar
    (no ``m x m`` array); through swaps and projections its ``u`` is the projected gradient
    step (dense reference) and each swap the dense rotation and projection
    (``swap_against_dense``); a twin on the same embedding holding ``I / full_alpha`` as the
    full matrix (main's path) agrees bit for bit until the first swap, then to rounding (its
    rotated matrix carries rounding; the scalar form stays exact)."""
    loss, C, a = losses.Squared(), 1.0, 3.0
    X, y, kernel = _swapping(400)
    embedding = SharedEmbedding(kernel, 1.0, max_size=8, seed=3, swap_margin=1.5)
    head, twin = (DictionaryExpert(embedding, loss, alpha=0.1, C=C, full_alpha=a)
                  for _ in range(2))
    t = 0
    while head.eta == "hessian":
        embedded = step(embedding, [head, twin], X[t], 4 * y[t])
        embedding.swap_in(X[t], embedded, [head, twin])
        t += 1
    assert type(head._P) is ScaledIdentity and head._P.size == 8 and head._P.scale == 1 / a
    assert not any(isinstance(value, np.ndarray) for value in vars(head._P).values())
    twin._P, twin._ons = PackedSymmetric.scaled_identity(8, 1 / a), None  # main's matrix
    swaps = projected = before = 0
    for s in range(t, X.shape[0]):
        u, z = head._u[:8].copy(), embedding.analyse(X[s]).h
        expected, clipped = _first_order(head, u, z, 4 * y[s], C, a, loss)
        projected += clipped
        embedded = step(embedding, [head, twin], X[s], 4 * y[s])
        np.testing.assert_allclose(head._u[:8], expected, rtol=1e-12, atol=1e-12)
        if not swaps:
            np.testing.assert_array_equal(head._u, twin._u)
            before += 1
        swaps += swap_against_dense(embedding, [head, twin], X[s], embedded, kernel,
                                    X[:20]) is not None
        np.testing.assert_allclose(head._u[:8], twin._u[:8], rtol=1e-11, atol=1e-11)
        assert type(head._P) is ScaledIdentity and head._ons.P_obj is head._P
        np.testing.assert_array_equal(head._P.matrix(), np.eye(8) / a)  # exact, for good
    np.testing.assert_allclose(twin._P.matrix(), np.eye(8) / a, rtol=0, atol=1e-14)
    assert swaps >= 3 and projected > 0 and before >= 10  # all exercised


def test_a_linear_head_with_eta_0_holds_a_scalar_as_it_grows():
    """``LinearExpert(eta=0)`` starts with ``ScaledIdentity`` and keeps it as features
    appear; its steps are gradient descent with step ``1/alpha`` after the projection (dense
    reference) and, bit for bit, those of a twin holding the full matrix."""
    loss, alpha, bound = losses.Logistic(), 100.0, 2.0
    head = LinearExpert(loss, alpha=alpha, eta=0.0, bound=bound)
    twin = LinearExpert(loss, alpha=alpha, eta=0.0, bound=bound)
    twin._P = PackedSymmetric()
    assert type(head._P) is ScaledIdentity and head._P.size == 0
    rng = _rng(5)
    for t in range(60):
        d = min(2 + t // 10, 6)  # a feature first seen every 10 rows
        v = np.zeros(6)
        v[:d] = 3 * rng.normal(size=d)
        y = 1.0 if v[0] + v[1] > 0 else -1.0
        m = head._P.size
        z = np.concatenate([[1.0], v[:d]])
        u = np.append(head._u[:m], np.zeros(d + 1 - m))
        expected, _ = _first_order(head, u, z, y, bound, alpha, loss)
        for h in (head, twin):
            analysis = h.analyse(v[:d])
            h.apply(v[:d], analysis, h.check(y, analysis))
        assert head._P.size == d + 1 and type(head._P) is ScaledIdentity
        np.testing.assert_allclose(head._u[: d + 1], expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(head._u, twin._u)


def test_a_curved_step_turns_the_scalar_into_the_full_matrix_first():
    """A head whose ``eta`` becomes positive (its ``A^{-1}`` then changes) holds the full
    matrix from its next step on, and steps as a head that always held it; a refused step
    changes nothing."""
    loss = losses.Squared()
    head, twin = LinearExpert(loss, alpha=2.0, eta=0.0), LinearExpert(loss, alpha=2.0, eta=0.0)
    twin._P = PackedSymmetric()
    rng = _rng(6)
    rows = [(rng.normal(size=3), float(rng.normal())) for _ in range(20)]
    for i, (v, y) in enumerate(rows):
        if i == 10:
            head.eta = twin.eta = 0.5
        if i == 5:  # refused: nothing changes
            u, P = head._u.copy(), head._P
            with pytest.raises(ValueError):
                head.check(float("nan"), head.analyse(v))
            assert head._P is P
            np.testing.assert_array_equal(head._u, u)
        for h in (head, twin):
            analysis = h.analyse(v)
            h.apply(v, analysis, h.check(y, analysis))
        assert type(head._P) is (ScaledIdentity if i < 10 else PackedSymmetric)
        np.testing.assert_array_equal(head._u, twin._u)
        np.testing.assert_array_equal(head._P.matrix(), twin._P.matrix())
    assert not np.allclose(head._P.matrix(), np.eye(4) / 2.0)  # curved since


def test_a_pickled_switched_head_goes_on_identically():
    X, y, kernel = _swapping(300)
    embedding = SharedEmbedding(kernel, 1.0, max_size=6, seed=3, swap_margin=1.5)
    head = DictionaryExpert(embedding, losses.Squared(), alpha=0.1, C=1.0, full_alpha=3.0)
    for t in range(100):
        embedded = step(embedding, [head], X[t], y[t])
        embedding.swap_in(X[t], embedded, [head])
    assert type(head._P) is ScaledIdentity
    embedding2, head2 = pickle.loads(pickle.dumps((embedding, head)))
    assert type(head2._P) is ScaledIdentity and head2._P.size == 6
    swaps = embedding.n_swaps
    for t in range(100, 300):
        for e, h in ((embedding, head), (embedding2, head2)):
            embedded = step(e, [h], X[t], y[t])
            e.swap_in(X[t], embedded, [h])
        np.testing.assert_array_equal(head._u, head2._u)
    assert embedding.n_swaps == embedding2.n_swaps > swaps  # swaps after the copy


# -- files -----------------------------------------------------------------------------------
def _rows(n, seed=1):
    X, y = _stream(n, seed)
    return [({f"x{i}": float(v) for i, v in enumerate(x)}, float(t)) for x, t in zip(X, y)]


def test_a_saved_auto_holds_the_order_and_scalar_and_goes_on_identically(tmp_path,
                                                                          monkeypatch):
    """The file of an ``Auto`` whose sharp head switched holds that head's ``A^{-1}`` (and
    the ``eta=0`` linear head's) as ``{size, scale}``, no matrix; loaded, it predicts and
    learns on as the original."""
    monkeypatch.setattr(auto_module, "DICTIONARY", (1.0, 12, 30.0, "usage"))
    rows = _rows(200)
    model = Auto()
    for x, target in rows[:150]:
        model.learn_one(x, target)
    sharp, linear = model.experts[1], model.experts[3]
    assert (sharp.eta, linear.eta) == (0.0, 0.0)
    assert type(sharp._P) is ScaledIdentity and type(linear._P) is ScaledIdentity
    path = model.save(tmp_path / "auto.npz")
    assert persistence.read_metadata(path)["format_version"] == 13
    held = [node["attrs"] for node in _dicts(persistence.read_metadata(path))
            if node.get("__obj__") == "ScaledIdentity"]
    assert sorted(held, key=lambda a: a["size"]) == [
        {"size": 4, "scale": 1 / 100.0}] + [{"size": 12, "scale": 1 / 3.0}] * 3
    loaded = okoco.load(path)
    assert type(loaded.experts[1]._P) is ScaledIdentity
    for x, target in rows[150:]:
        assert loaded.predict_one(x) == pytest.approx(model.predict_one(x), rel=1e-9, abs=1e-9)
        model.learn_one(x, target)
        loaded.learn_one(x, target)


def test_a_format_12_file_loads_to_the_scalar_form_and_goes_on_as_it_did():
    """``format-v12-first-order/auto.npz`` (written by the format-12 okoco: the switched
    heads' ``I/3`` and ``I/100`` saved as matrices) loads with those heads holding their
    scalar, and predicts on the next 50 rows, learning each, as the format-12 okoco's model
    loaded from it did (``expected.json``, ``make_files.py``)."""
    path = os.path.join(V12, "auto.npz")
    with open(os.path.join(V12, "expected.json")) as f:
        reference = json.load(f)
    assert persistence.read_metadata(path)["format_version"] == 12
    model = okoco.load(path)
    assert [type(e._P) for e in model.experts[:4]] == [PackedSymmetric, ScaledIdentity,
                                                        PackedSymmetric, ScaledIdentity]
    assert (model.experts[1]._P.size, model.experts[1]._P.scale) == (12, 1 / 3.0)
    rows = _rows(200)[reference["learned"]:]
    got = []
    for x, target in rows:
        got.append(model.predict_one(x))
        model.learn_one(x, target)
    assert got == pytest.approx(reference["expected"], rel=1e-9, abs=1e-12)
