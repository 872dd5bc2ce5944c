"""The dictionaries' leaner per-step path computes exactly what it did (issue 42's speed): the
compiled record of a point's embedding, its pivot, numpy's exp by its own loop and CON-KONS's
compiled embedding each equal, bit for bit, the path they replace; and whole runs of ``Auto``
and ``CONKONS`` through dictionaries that fill (and swap) equal a twin taking that path."""

import math

import numpy as np
import pytest
from streams import shifted_friedman

import okoco.learners.auto as auto_module
from okoco import kernels
from okoco._core import _embedding, _kernels
from okoco.learners import CONKONS, Auto, BinaryClassifier
from okoco.learners.embedding import SharedEmbedding, exact_row_spec
from okoco.losses import Logistic

EXP_PATHS = ["ufunc", "loop"] if _kernels.exp_path() == "loop" else ["ufunc"]


def _bits(a) -> bytes:
    return np.asarray(a, dtype=float).tobytes()


# -- the references: the per-step path before the lean one ------------------------------------

def _reference_pivot(embedding, kappa, residual):
    """``NystromEmbedding._join_pivot`` before: Python's arithmetic."""
    full = embedding.max_size is not None and embedding._embed.size >= embedding.max_size
    if full or not residual > 1e-10 * kappa:
        return None
    return math.sqrt(max(residual, embedding._embed.min_pivot))


class _ReferenceRecord:
    """``Embedded`` before: a Python record."""

    def __init__(self, k, kappa, h, residual, pivot):
        self.k, self.kappa, self.h, self.residual = k, kappa, h, residual
        self.pivot, self.joined = pivot, False
        self.new = np.zeros(0) if pivot is None else np.array([pivot])


class _ReferenceEmbedding(SharedEmbedding):
    """A shared dictionary taking the Python path: the kernel's own row (``row_from_norms``,
    ``np.exp``), ``_embedding.embed``, the pivot by Python, a Python record."""

    def analyse(self, v):
        k, kappa = self._kernel_row_of(v)
        h, residual = _embedding.embed(self._embed.factor_storage(), self.size, k, kappa)
        return _ReferenceRecord(k, kappa, h, residual, _reference_pivot(self, kappa, residual))


class _ReferenceCONKONS(CONKONS):
    """CON-KONS with its embedding from the kernel's own row and ``half_solve``."""

    def _embedding_of(self, v):
        k, kappa = self._kernel_row_of(v)
        return k, kappa, self._embed.half_solve(k)


def _record_fields(e):
    return (e.k, e.kappa, e.h, e.residual, e.pivot, e.new, e.joined)


def _assert_same_record(fast, slow):
    for a, b in zip(_record_fields(fast), _record_fields(slow)):
        if a is None or b is None:
            assert a is b, (a, b)
        else:
            assert type(a) is type(b) or np.ndim(a) == 0, (a, b)
            assert _bits(a) == _bits(b), (a, b)


def _filled(max_size, n, d=3, gamma=0.5, seed=0, dictionary_alpha=0.1):
    rng = np.random.default_rng(seed)
    embedding = SharedEmbedding(kernels.RBF(gamma), dictionary_alpha=dictionary_alpha,
                                max_size=max_size)
    for v in rng.normal(size=(n, d)):
        embedding.offer(v, embedding.analyse(v))
    return embedding


# -- the pieces -----------------------------------------------------------------------------

@pytest.mark.parametrize(("max_size", "n"), [(None, 0), (None, 60), (12, 200), (40, 40)])
def test_the_compiled_record_is_the_tuple_with_pythons_pivot(max_size, n):
    """analyse with the dictionary's cap gives, bit for bit, the tuple of the call without it
    and the pivot, new coordinate and record of the Python step before: an empty dictionary, one
    below its cap, a full one (no pivot) and one that is never full; at random points, an atom
    itself (in the span: no pivot), rows narrower than the atoms and far points."""
    embedding = _filled(max_size, n)
    spec = exact_row_spec(embedding._kernel)
    rng = np.random.default_rng(1)
    queries = [*rng.normal(size=(15, 3)), rng.normal(size=2), 40.0 * rng.normal(size=3)]
    if embedding.size:
        queries.append(embedding._store.view()[0].copy())
    pivots = 0
    for v in queries:
        record = _embedding.analyse(spec, embedding._store, embedding._embed, v,
                                    embedding.max_size)
        k, kappa, h, residual = _embedding.analyse(spec, embedding._store, embedding._embed, v)
        expected = _ReferenceRecord(k, kappa, h, residual,
                                    _reference_pivot(embedding, kappa, residual))
        _assert_same_record(record, expected)
        _assert_same_record(embedding.analyse(v), expected)
        _assert_same_record(embedding._analyse_rows(v), expected)
        assert type(record) is _embedding.Embedded and record.k is not record.h
        pivots += record.pivot is not None
    full = max_size is not None and embedding.size >= max_size
    assert (pivots == 0) == full
    if embedding.size:
        assert embedding.analyse(embedding._store.view()[0].copy()).pivot is None


def test_the_compiled_pivot_is_pythons_at_its_edges():
    """join_pivot against Python's formula at the span tolerance, min_pivot, zero, negative and
    non-finite residuals, full and capless dictionaries."""
    embedding = SharedEmbedding(kernels.RBF(1.0), max_size=3)
    for size in (0, 2, 3):
        embedding._embed = type(embedding._embed)()
        for _ in range(size):
            embedding._embed.append(np.zeros(embedding._embed.size), 1.0)
        for cap in (None, 3):
            embedding.max_size = cap
            for kappa in (1.0, 0.25, 1e-300, 0.0):
                for residual in (1.0, 1e-10 * kappa, math.nextafter(1e-10 * kappa, 1.0), 1e-13,
                                 1e-12, 0.0, -0.0, -1.0, math.inf, -math.inf, math.nan, 0.7):
                    got = _embedding.join_pivot(embedding.size, cap, kappa, residual,
                                                embedding._embed.min_pivot)
                    want = _reference_pivot(embedding, kappa, residual)
                    assert (got is None and want is None) or _bits(got) == _bits(want), (
                        size, cap, kappa, residual, got, want)
                    assert embedding._join_pivot(kappa, residual) == got or got is None


def test_the_record_refuses_what_the_tuple_refuses_and_keeps_its_arrays():
    """A store out of step with its factor raises as before; a row wider than the buffer
    declines (None); two records of the same point own their arrays (a caller keeps one from
    predict_one to learn_one); the Python path's record is the same type."""
    embedding = _filled(None, 30)
    spec = exact_row_spec(embedding._kernel)
    v = np.array([0.3, -0.2, 0.1])
    a, b = embedding.analyse(v), embedding.analyse(v)
    assert a.k is not b.k and a.h is not b.h and _bits(a.h) == _bits(b.h)
    a.h[:] = 0.0
    assert _bits(b.h) == _bits(embedding.analyse(v).h)
    assert _embedding.analyse(spec, embedding._store, embedding._embed, np.ones(9), None) is None
    strided = np.array([[0.3, 7.0], [-0.2, 7.0], [0.1, 7.0]])[:, 0]  # a row of any stride
    _assert_same_record(embedding.analyse(strided), embedding.analyse(v))
    for bad in (v.astype(np.float32), np.ones((1, 3)), [0.3, -0.2, 0.1]):
        with pytest.raises((ValueError, TypeError)):
            embedding.analyse(bad)
    assert type(embedding._analyse_rows(v)) is _embedding.Embedded
    embedding._store.append(np.ones(3))
    with pytest.raises(ValueError, match="stored atoms for a factor of order"):
        _embedding.analyse(spec, embedding._store, embedding._embed, v, None)


def test_a_non_finite_row_keeps_the_python_paths_numbers_and_errors():
    """An RBF row of a point with an infinite or NaN feature is the Python path's (the input
    checks of the learners refuse such points before); an unbounded kernel's overflow still
    raises the Python path's error and changes nothing."""
    embedding = _filled(None, 20)
    for v in (np.array([np.inf, 0.0, 1.0]), np.array([np.nan, 0.0, 1.0]),
              np.array([1e200, -1e200, 0.0])):
        fast, slow = embedding.analyse(v), embedding._analyse_rows(v)
        _assert_same_record(fast, slow)
    linear = SharedEmbedding(kernels.Linear())
    linear.offer(np.array([1.0, 0.0]), linear.analyse(np.array([1.0, 0.0])))
    before = linear._embed.factor_storage().copy()
    with pytest.raises(ValueError, match="float64 overflowed"):
        linear.analyse(np.array([1e200, 1e200]))
    assert _bits(before) == _bits(linear._embed.factor_storage()) and linear.size == 1


def test_the_usage_step_refuses_a_strided_read_only_or_other_typed_buffer():
    """The usage step reads its buffers without memoryview objects: a strided, read-only or
    float32 usage (or row) is refused as a typed memoryview refused it, and changes nothing."""
    usage = np.arange(8.0)
    strided, read_only = usage[::2], np.ones(4)
    read_only.flags.writeable = False
    for bad_usage, row in ((strided, np.ones(4)), (read_only, np.ones(4)),
                           (np.ones(4, dtype=np.float32), np.ones(4)),
                           (np.ones(4), np.ones(8)[::2]), (np.ones(4), np.ones(4, np.float32))):
        before = np.array(bad_usage, copy=True)
        with pytest.raises((ValueError, BufferError)):
            _embedding.usage_step(bad_usage, row, 0.5, 1.0, 0.0, 10.0, 2.0)
        assert _bits(before) == _bits(np.asarray(bad_usage, dtype=float))
    empty = np.zeros(0)
    assert _embedding.usage_step(empty, np.zeros(0), 0.5, 1.0, 0.25, 10.0, 2.0) == (
        0.9 * 1.0 + 1.0, 0.25 + (0.5 - 0.25) / 1.9, -1)


@pytest.mark.parametrize("path", EXP_PATHS)
@pytest.mark.parametrize("gamma", [0.05, 3.0, 400.0])  # up to exponents past exp's underflow
def test_numpys_exp_by_its_loop_gives_np_exp_bits(path, gamma):
    """The compiled rows' exp (numpy's float64 loop, checked at import; or np.exp) gives the
    bits of the kernel's own row (np.exp) at every dictionary size from 0 to 140 and at 520
    (every tail length of a vector loop), and the path in use is restored."""
    in_use = _kernels.exp_path()
    try:
        _kernels.exp_path(path)
        rng = np.random.default_rng(int(gamma))
        embedding = SharedEmbedding(kernels.RBF(gamma), dictionary_alpha=1e-9, p_min=1.0,
                                    max_size=None)
        spec = exact_row_spec(embedding._kernel)
        for n in [*range(141), 520]:
            while embedding.size < n:
                v = rng.normal(size=4)
                embedding._embed.append(embedding._store.kernel_row(embedding._kernel, v),
                                        1.0)
                embedding._store.append(v)
            if n % 7 and n != 520:
                continue
            for v in rng.normal(size=(3, 4)):
                k = _embedding.analyse(spec, embedding._store, embedding._embed, v)[0]
                assert _bits(k) == _bits(embedding._store.kernel_row(embedding._kernel, v))
    finally:
        _kernels.exp_path(in_use)
    assert _kernels.exp_path() == in_use
    with pytest.raises(ValueError, match="path must be"):
        _kernels.exp_path("libm")


def test_conkons_embedding_is_the_kernels_own_row_and_solve():
    """CON-KONS's embedding (one compiled call for an RBF kernel) equals the kernel's own row
    and the factor's solve at every step, from the first (whose default kernel is set by the
    step: the compiled description follows the kernel) to a full dictionary, with features
    first seen on the way; a Laplacian kernel keeps the Python path."""
    rng = np.random.default_rng(5)
    for model in (CONKONS(dictionary_alpha=0.05, max_size=70, seed=1),
                  CONKONS(kernel=kernels.Laplacian(0.3), max_size=20, seed=2)):
        for t in range(300):
            x = {f"x{i}": float(v) for i, v in enumerate(rng.normal(size=3 + (t > 150)))}
            if t:
                v = model._features.encode(x, arrays=False)[0]
                k, kappa, h = model._embedding_of(v)
                k_ref, kappa_ref = model._kernel_row_of(v)
                assert _bits(k) == _bits(k_ref) and kappa == kappa_ref
                assert _bits(h) == _bits(model._embed.half_solve(k_ref))
            model.predict_one(x)
            model.learn_one(x, math.tanh(x["x0"]))
        assert model.dictionary_size == model.max_size


# -- whole runs -----------------------------------------------------------------------------

def _run(model, xs, targets, kind):
    out = []
    for x, target in zip(xs, targets):
        out.append(model.predict_one(x) if kind != "binary" else
                   model.predict_proba_one(x)[True])
        model.learn_one(x, target)
    return out


def _auto_state(model):
    auto = model.learner if isinstance(model, BinaryClassifier) else model
    state = [auto.cumulative_losses, auto.recent_losses]
    for e in auto._embeddings:
        state += [e._embed.factor_storage()[: e.size * (e.size + 1) // 2], e._store.view(),
                  e._usage, [e._usage_count, e._mean_residual, e.n_swaps]]
    for expert in auto.experts:
        state += [expert._u, expert._P.matrix()]
    return state


@pytest.mark.parametrize("kind", ["auto", "binary"])
def test_auto_equals_its_twin_on_the_python_dictionary_path(kind, monkeypatch):
    """1,500 steps of Auto (and of BinaryClassifier(Auto(Logistic()))) through a covariate
    shift, with dictionaries of 70 atoms (past numpy's exp threshold of the compiled rows) that
    fill and swap by the usage rule: every prediction and the final state equal, bit for bit,
    a twin whose dictionaries take the Python path (the kernel's own row, np.exp, Python's
    pivot and record)."""
    monkeypatch.setattr(auto_module, "DICTIONARY", (1.0, 70, 3.0, "usage"))
    xs, y, _ = shifted_friedman(1500)
    targets = [float(t) for t in y] if kind == "auto" else [bool(t > np.median(y)) for t in y]
    make = (Auto if kind == "auto" else lambda: BinaryClassifier(Auto(loss=Logistic())))
    lean = make()
    got = _run(lean, xs, targets, kind)
    monkeypatch.setattr(auto_module, "SharedEmbedding", _ReferenceEmbedding)
    twin = make()
    want = _run(twin, xs, targets, kind)
    auto, other = (lean.learner, twin.learner) if kind == "binary" else (lean, twin)
    assert [type(e) for e in auto._embeddings] == [SharedEmbedding] * 2
    assert [type(e) for e in other._embeddings] == [_ReferenceEmbedding] * 2
    assert all(e.size == 70 for e in auto._embeddings)
    assert sum(e.n_swaps for e in auto._embeddings) > 0  # the swap path ran
    assert _bits(got) == _bits(want)
    for a, b in zip(_auto_state(lean), _auto_state(twin)):
        assert _bits(a) == _bits(b)


@pytest.mark.parametrize("max_size", [30, 90])  # below and past numpy's exp threshold
def test_conkons_equals_its_twin_on_the_python_path(max_size):
    """CONKONS through a dictionary that fills: predict_one/learn_one equal, bit for bit, a
    twin taking the Python embedding (the kernel's own row and half_solve); and the compiled
    loop (predict_learn_many, whose rows raise numpy's exp by its loop) equals the same loop
    raising it by np.exp."""
    xs, y, _ = shifted_friedman(900, seed=4)
    lean = CONKONS(dictionary_alpha=0.02, max_size=max_size, seed=0)
    twin = _ReferenceCONKONS(dictionary_alpha=0.02, max_size=max_size, seed=0)
    targets = np.tanh((y - y.mean()) / y.std())
    got, want = _run(lean, xs, targets, "auto"), _run(twin, xs, targets, "auto")
    assert lean.dictionary_size == max_size
    assert _bits(got) == _bits(want)
    assert _bits(lean._u) == _bits(twin._u) and _bits(lean._P.matrix()) == _bits(twin._P.matrix())
    X = np.array([[x[f"x{i}"] for i in range(10)] for x in xs])
    in_use, runs = _kernels.exp_path(), []
    try:
        for path in EXP_PATHS:
            _kernels.exp_path(path)
            model = CONKONS(dictionary_alpha=0.02, max_size=max_size, seed=0)
            runs.append(model.predict_learn_many(X, targets))
    finally:
        _kernels.exp_path(in_use)
    assert all(_bits(r) == _bits(runs[0]) for r in runs)
    np.testing.assert_allclose(runs[0], got, rtol=0, atol=1e-12)
