"""The packed primitives of okoco._core._linalg (compiled kernels by rows, four rows at a time
for the back substitution; portable and AVX) against dense numpy references, at orders that
leave every remainder of the kernels (a row's columns mod 8, the rows mod 4), in both layouts
and on both instruction sets; and the two instruction sets give the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from okoco._core import _linalg

SIZES = [*range(10), 31, 64, 257]
ISAS = ["portable", "avx"]  # (the fixture isa: conftest.py)


def spd(m, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, m))
    return A @ A.T / max(m, 1) + np.eye(m)


def packed(S):
    """The row-major lower packed buffer of S, with spare room after it (as a capacity)."""
    m = S.shape[0]
    return np.concatenate([S[np.tril_indices(m)], np.full(m + 3, np.nan)])


def layout(S, dense):
    return np.ascontiguousarray(S).reshape(-1).copy() if dense else packed(S)


def close(got, want):
    scale = max(np.abs(want).max(initial=0.0), 1.0)
    return np.abs(got - want).max(initial=0.0) <= 1e-12 * scale


@pytest.mark.parametrize("m", SIZES)
@pytest.mark.parametrize("dense", [False, True])
def test_matvec_and_rank_one_match_dense_numpy(isa, m, dense):
    S = spd(m, seed=m)
    v = np.random.default_rng(100 + m).standard_normal(m)
    P = layout(S, dense)
    out = np.full(m, np.nan)
    _linalg.matvec(P, m, dense, v, out)
    assert close(out, S @ v)
    _linalg.sym_update(P, m, dense, -0.7, v)
    want = S - 0.7 * np.outer(v, v)
    got = P.reshape(m, m) if dense else P[: m * (m + 1) // 2]
    assert close(got, want if dense else want[np.tril_indices(m)])
    if not dense:
        assert np.isnan(P[m * (m + 1) // 2:]).all()  # nothing written past the triangle


@pytest.mark.parametrize("m", SIZES)
def test_inverse_update_is_sherman_morrison(isa, m):
    S = spd(m, seed=m + 1)
    a = np.random.default_rng(200 + m).standard_normal(m)
    P, Pa = packed(S), np.empty(m)
    s = _linalg.inverse_update(P, m, False, a, Pa)
    assert close(Pa, S @ a)
    assert s == pytest.approx(1.0 / (1.0 + a @ S @ a), rel=1e-12)
    want = np.linalg.inv(np.linalg.inv(S) + np.outer(a, a)) if m else S
    assert close(P[: m * (m + 1) // 2], want[np.tril_indices(m)])


@pytest.mark.parametrize("m", SIZES)
def test_triangular_solves_match_dense_numpy(isa, m):
    L = np.linalg.cholesky(spd(m, seed=m + 2)) if m else np.zeros((0, 0))
    v = np.random.default_rng(300 + m).standard_normal(m)
    buf = packed(L)
    x = v.copy()
    _linalg.half_solve(buf, m, x)
    assert close(x, np.linalg.solve(L, v) if m else v)
    assert close(L @ x, v)
    y = v.copy()
    _linalg.back_solve(buf, m, y)
    assert close(y, np.linalg.solve(L.T, v) if m else v)
    assert close(L.T @ y, v)


def test_the_instruction_sets_give_the_same_bits():
    if _linalg.kernels() != "avx":
        pytest.skip("no AVX on this processor")
    m = 257
    S = spd(m, seed=7)
    L = packed(np.linalg.cholesky(S))
    v = np.random.default_rng(8).standard_normal(m)
    results = {}
    try:
        for name in ISAS:
            _linalg.kernels(name)
            P, out, x, y = packed(S), np.empty(m), v.copy(), v.copy()
            _linalg.matvec(P, m, False, v, out)
            _linalg.sym_update(P, m, False, 0.3, v)
            _linalg.half_solve(L, m, x)
            _linalg.back_solve(L, m, y)
            results[name] = [out, P, x, y]
    finally:
        _linalg.kernels("avx")
    for a, b in zip(results["portable"], results["avx"]):
        np.testing.assert_array_equal(a, b)


def test_kernels_refuses_an_unknown_instruction_set():
    before = _linalg.kernels()
    with pytest.raises(ValueError, match="isa"):
        _linalg.kernels("sse9")
    assert _linalg.kernels() == before
