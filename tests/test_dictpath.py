"""The lean per-step path of Auto's dictionaries and ONS heads (issue 42's speed): the compiled
calls against their Python/numpy references, bit for bit where they replace a Python path, and
against independent dense references (explicit distances, a dense Cholesky solve)."""

import numpy as np
import pytest

from okoco import kernels, losses
from okoco._core import _embedding, _heads
from okoco.learners._codes import compiled_kernel
from okoco.learners.embedding import SharedEmbedding, exact_row_spec
from okoco.learners.ons import LinearExpert


def _grown(embedding, rows):
    """``embedding`` after every row of ``rows`` was offered (KORS's coins)."""
    for v in rows:
        embedding.offer(v, embedding._analyse_rows(v))
    return embedding


def _fields(e):
    return (e.k, e.kappa, e.h, e.residual, e.pivot, e.new)


def _assert_same(fast, slow):
    for a, b in zip(_fields(fast), _fields(slow)):
        if a is None or b is None:
            assert a is b
        else:
            assert np.array_equal(a, b), (a, b)


@pytest.mark.parametrize(("d", "n_rows"), [(3, 40), (10, 300)])  # direct and expansion rows
def test_the_compiled_analysis_is_the_python_paths_bit_for_bit(d, n_rows):
    """SharedEmbedding.analyse (one compiled call: the RBF row, h, the residual, the pivot)
    equals the kernel's own row_from_norms path (_analyse_rows) bit for bit, at rows as wide as
    the atoms, narrower (features absent: 0), wider within the buffer, and at an atom itself
    (a zero distance; no pivot: in the span); and the dense references to 1e-12."""
    rng = np.random.default_rng(d)
    gamma = 0.7 / d
    embedding = _grown(SharedEmbedding(kernels.RBF(gamma), dictionary_alpha=0.1, max_size=None),
                       rng.normal(size=(n_rows, d)))
    m = embedding.size
    assert m > 5 and embedding._store.n * embedding._store.d > 100
    X = embedding._store.view()
    L = np.linalg.cholesky(kernels.RBF(gamma)(X, X))
    queries = [*rng.normal(size=(20, d)), rng.normal(size=d - 1), X[3].copy()]
    for v in queries:
        fast, slow = embedding.analyse(v), embedding._analyse_rows(v)
        _assert_same(fast, slow)
        x = np.pad(v, (0, d - v.shape[0]))
        k = np.exp(-gamma * ((X - x) ** 2).sum(axis=1))
        np.testing.assert_allclose(fast.k, k, rtol=1e-12, atol=1e-14)
        h = np.linalg.solve(L, k)
        np.testing.assert_allclose(fast.h, h, rtol=1e-8, atol=1e-8)
        assert fast.kappa == 1.0
        assert fast.residual == pytest.approx(1.0 - h @ h, abs=1e-8)
    assert embedding.analyse(X[3].copy()).pivot is None  # an atom: in the span


def test_a_row_wider_than_the_buffer_or_a_full_dictionary_keeps_the_python_numbers():
    """A row wider than the atoms' buffer takes the Python path (the compiled call declines:
    None), with today's numbers; a full dictionary offers no pivot, nor new coordinate."""
    rng = np.random.default_rng(1)
    embedding = _grown(SharedEmbedding(kernels.RBF(0.5), max_size=6),
                       [*rng.normal(size=(5, 2)), rng.normal(size=3), *rng.normal(size=(50, 2))])
    store = embedding._store
    assert embedding.size == 6 and store.d == 3 and store.data.shape[1] == 4
    spec = exact_row_spec(embedding._kernel)
    within = rng.normal(size=4)  # wider than the atoms, within the buffer's spare column
    assert _embedding.analyse(spec, store, embedding._embed, within) is not None
    _assert_same(embedding.analyse(within), embedding._analyse_rows(within))
    wide = rng.normal(size=5)
    assert _embedding.analyse(spec, store, embedding._embed, wide) is None
    _assert_same(embedding.analyse(wide), embedding._analyse_rows(wide))
    v = rng.normal(size=2) * 3.0
    fast = embedding.analyse(v)
    _assert_same(fast, embedding._analyse_rows(v))
    assert fast.pivot is None and fast.new.shape == (0,) and fast.residual > 1e-6
    # below the cap the same point would join, its pivot sqrt(residual)
    embedding.max_size = 7
    assert embedding.analyse(v).pivot == np.sqrt(fast.residual)


def test_the_compiled_analysis_of_an_empty_dictionary_and_bad_inputs():
    embedding = SharedEmbedding(kernels.RBF(0.5))
    e = embedding.analyse(np.array([1.0, 2.0]))
    assert e.k.shape == e.h.shape == (0,) and e.kappa == e.residual == 1.0 and e.pivot == 1.0
    assert np.array_equal(e.new, [1.0])
    _grown(embedding, [np.array([1.0, 2.0]), np.array([0.0, 0.5])])
    spec = exact_row_spec(embedding._kernel)
    embedding._store.append(np.array([3.0, 3.0]))  # a store out of step with its factor
    with pytest.raises(ValueError, match="stored atoms for a factor of order"):
        _embedding.analyse(spec, embedding._store, embedding._embed, np.ones(2))


def test_only_the_rbf_takes_the_compiled_row_and_an_overflow_keeps_its_error():
    """The kernels whose compiled row would differ in the last bit keep their Python row; a
    non-finite kernel value still raises the Python path's ValueError (nothing changed); the
    compiled call itself declines an unbounded kernel's non-finite row."""
    assert exact_row_spec(kernels.RBF(0.3)) == compiled_kernel(kernels.RBF(0.3))
    for kernel in (kernels.Laplacian(0.3), kernels.Linear(), kernels.Polynomial(2, 1.0, 1.0)):
        assert exact_row_spec(kernel) is None
    embedding = _grown(SharedEmbedding(kernels.Linear()), [np.array([1.0, 0.0])])
    before = embedding._embed.factor_storage().copy()
    with pytest.raises(ValueError, match="float64 overflowed"):
        embedding.analyse(np.array([1e200, 1e200]))
    assert np.array_equal(before, embedding._embed.factor_storage()) and embedding.size == 1
    spec = compiled_kernel(kernels.Linear())
    assert _embedding.analyse(spec, embedding._store, embedding._embed,
                              np.array([1e308, 1e308])) is None
    ok = _embedding.analyse(spec, embedding._store, embedding._embed, np.array([2.0, 1.0]))
    assert ok[0][0] == 2.0 and ok[1] == 5.0


def test_the_usage_rule_keeps_its_numbers_through_swaps():
    """The usage rule's lean call (the atoms' number passed once) swaps as its rule says: a
    5-atom dictionary on a shifting stream swaps, and every swap keeps h = L^{-1} k."""
    rng = np.random.default_rng(4)
    embedding = SharedEmbedding(kernels.RBF(1.0), max_size=5, swap_margin=1.5,
                                swap_rule="usage", usage_horizon=20)
    for t in range(400):
        v = rng.normal(size=2) + (0.0 if t < 200 else 4.0)
        e = embedding.analyse(v)
        embedding.offer(v, e)
        embedding.swap_in(v, e, [])
    assert embedding.n_swaps > 0 and embedding.size == 5
    assert embedding._usage.shape == (5,)
    X = embedding._store.view()
    v = rng.normal(size=2) + 4.0
    e = embedding.analyse(v)
    L = np.linalg.cholesky(kernels.RBF(1.0)(X, X))
    np.testing.assert_allclose(e.h, np.linalg.solve(L, e.k), rtol=1e-8, atol=1e-10)


def test_predict_is_numpys_dot_bit_for_bit():
    rng = np.random.default_rng(2)
    for m in (0, 1, 7, 64, 501):
        z, u = rng.normal(size=m), rng.normal(size=m + 5) * 3.0
        p = _heads.predict(z, u)
        assert type(p) is float and p == float(z @ u[:m])
    with pytest.raises(ValueError, match="coordinates for a point of"):
        _heads.predict(np.ones(3), np.ones(2))


@pytest.mark.parametrize("m", [0, 1, 3, 4, 6])
def test_linear_coordinates_are_one_and_x_split_at_the_heads_coordinates(m):
    v = np.array([2.0, -3.0, 0.5])
    known, new = _heads.linear_coordinates(v, m)
    z = np.concatenate([[1.0], v])
    assert np.array_equal(known, np.pad(z, (0, max(m - 4, 0)))[:m])
    if m >= 4:
        assert new is None
    else:
        assert np.array_equal(new, z[m:])
    strided = np.arange(8.0)[::2]  # a row view of any stride
    assert np.array_equal(_heads.linear_coordinates(strided, 5)[0], [1.0, 0.0, 2.0, 4.0, 6.0])
    with pytest.raises(ValueError, match="coordinates"):
        _heads.linear_coordinates(v, -1)


def test_a_linear_heads_analysis_owns_its_coordinates():
    """Each analysis holds its own [1, x] (a step's record is kept until apply, and Auto keeps
    predict_one's for learn_one): a later analysis does not overwrite it."""
    head = LinearExpert(losses.Squared(), alpha=1.0)
    first = head.analyse(np.array([1.0, 2.0]))
    head.apply(np.array([1.0, 2.0]), first, head.check(0.5, first))
    a, b = head.analyse(np.array([3.0, 4.0])), head.analyse(np.array([-1.0, 0.0, 5.0]))
    assert np.array_equal(a.z, [1.0, 3.0, 4.0]) and a.extra.shape == (0,)
    assert np.array_equal(b.z, [1.0, -1.0, 0.0]) and np.array_equal(b.extra, [5.0])
    assert a.ybar == pytest.approx(head._u[:3] @ [1.0, 3.0, 4.0], abs=0)


def test_one_dictionary_row_per_step_for_every_head(monkeypatch):
    """One kernel row over the dictionary's atoms per step (predict_one then learn_one on the
    same row share it), whatever the number of heads on the dictionary, counting the compiled
    rows and the Python path's alike."""
    from streams import as_dicts

    from okoco.learners import Auto
    from okoco.learners.auto import DEFAULT_EXPERTS
    from okoco.learners.ons import DictionaryExpert

    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (60, 3)), rng.uniform(-1, 1, 60)
    rows = list(zip(as_dicts(X), y))
    model = Auto(scale_target=False)
    two_heads = (*DEFAULT_EXPERTS, ("dictionary", 0.2, 1.0, "hessian"))
    model._build_experts = lambda d: Auto._build_experts(model, d, two_heads)
    for x, target in rows[:20]:
        model.learn_one(x, target)
    assert sum(isinstance(e, DictionaryExpert) and e.dictionary == 0
               for e in model.experts) == 3
    calls = []
    compiled, store = _embedding.analyse, model._embeddings[0]._store
    original = store.kernel_row
    monkeypatch.setattr(_embedding, "analyse", lambda spec, atoms, *rest: (
        calls.append(atoms) or compiled(spec, atoms, *rest)))
    store.kernel_row = lambda kernel, v: calls.append(store) or original(kernel, v)
    for x, target in rows[20:]:
        model.predict_one(x)
        model.learn_one(x, target)
    assert sum(atoms is store for atoms in calls) == 40


def test_the_compiled_per_step_calls_take_at_most_ten_arguments_and_read_no_private_attribute():
    """Issue 41's measure (tests/test_core.py's) for the embedding's and the heads' calls."""
    from pathlib import Path

    from test_core import _compiled_signatures, _private_reads

    core = Path(__file__).resolve().parents[1] / "okoco" / "_core"
    for name in ("_embedding.pyx", "_heads.pyx"):
        signatures = _compiled_signatures(core / name)
        assert signatures and max(count for _, count in signatures) <= 10, signatures
        assert _private_reads(core / name) == [], name
