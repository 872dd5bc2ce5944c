"""okoco's compiled core (okoco._core) through the classes that own its buffers, against dense
references: sliding-window removals, the kernel rows of every compiled kernel, and the compiled
test-then-train loops of the learners against their one-row steps."""

from __future__ import annotations

import numpy as np
import pytest

from okoco import kernels, losses
from okoco.learners import KRLS, FunctionalGD
from okoco.linalg import IncrementalCholesky, Rows


def _rbf(A, B, gamma):
    return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


def test_sliding_window_removal_of_the_oldest_atom_matches_a_fresh_cholesky():
    """remove(0) on every step (a sliding window) keeps the factor of the window's Gram."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    A = _rbf(X, X, 0.5) + 0.1 * np.eye(300)
    chol, window = IncrementalCholesky(refresh_tol=np.inf), []
    for t in range(300):
        chol.append(A[window, t], A[t, t])
        window.append(t)
        if len(window) > 40:
            chol.remove(0)
            window.pop(0)
        if t % 37 == 0 or t == 299:
            G = A[np.ix_(window, window)]
            np.testing.assert_allclose(chol.factor(), np.linalg.cholesky(G), atol=1e-10)
            np.testing.assert_allclose(chol.matrix(), G, atol=0)
    assert chol.n_refreshes == 0


def test_rescale_that_fails_leaves_the_factor_unchanged():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 2))
    A = _rbf(X, X, 0.5) + 1e-3 * np.eye(8)
    chol = IncrementalCholesky()
    for j in range(8):
        chol.append(A[:j, j], A[j, j])
    L, M = chol.factor(), chol.matrix()
    with pytest.raises(np.linalg.LinAlgError, match="indefinite"):
        chol.rescale(2, 50.0, ridge=1.0)  # the downdate of the ridge exceeds the matrix
    np.testing.assert_array_equal(chol.factor(), L)
    np.testing.assert_array_equal(chol.matrix(), M)


@pytest.mark.parametrize("kernel", [kernels.RBF(0.3), kernels.Laplacian(0.4), kernels.Linear(),
                                    kernels.Polynomial(degree=3, gamma=0.5, coef0=1.0)])
def test_compiled_kernel_rows_match_the_kernels_blocks(kernel):
    """Rows.kernel_row (compiled) is the kernel's block within 1e-12, for a row narrower and a
    row wider than the stored ones, and over a ring buffer."""
    rng = np.random.default_rng(2)
    rows = Rows(max_size=50)
    for x in rng.normal(size=(70, 4)):
        rows.append(x)
    stored = rows.view()
    for x in (rng.normal(size=4), rng.normal(size=2), rng.normal(size=6)):
        wide = max(4, x.shape[0])
        Xp = np.pad(stored, ((0, 0), (0, wide - 4)))
        xp = np.pad(x, (0, wide - x.shape[0]))
        want = kernel(Xp, xp[None, :])[:, 0]
        np.testing.assert_allclose(rows.kernel_row(kernel, x), want, rtol=1e-12, atol=1e-12)


CASES = [
    dict(kernel=kernels.RBF(0.5)),
    dict(kernel=kernels.Laplacian(0.3), loss=losses.Logistic(), C=2.0),
    dict(kernel=kernels.Linear(), eta=0.05, lam=0.5),
    dict(kernel=kernels.Polynomial(degree=2, gamma=0.2), loss=losses.SquaredHinge(), C=1.0),
    dict(kernel=kernels.RBF(0.5), budget=17, lam=0.1),
    dict(kernel=None),
]


@pytest.mark.parametrize("params", CASES)
def test_fgd_compiled_loop_equals_its_one_row_steps(params):
    """learn_many / predict_learn_many over an array (the compiled loop) give the predictions
    and the model of predict_one + learn_one row by row."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = np.sign(X[:, 0] - X[:, 1] + 0.1)
    one, many = FunctionalGD(**params), FunctionalGD(**params)
    predictions = []
    for x, target in zip(X, y):
        x = {str(j): float(v) for j, v in enumerate(x)}
        predictions.append(one.predict_one(x))
        one.learn_one(x, float(target))
    import pandas as pd

    frame = pd.DataFrame(X, columns=["0", "1", "2"])
    got = many.predict_learn_many(frame.iloc[:50], y[:50])
    many.learn_many(frame.iloc[50:51], y[50:51])
    got = np.concatenate([got, [predictions[50]], many.predict_learn_many(frame.iloc[51:], y[51:])])
    np.testing.assert_allclose(got, predictions, rtol=1e-12, atol=1e-13)
    assert many.n_seen == one.n_seen == 120
    assert many.dictionary_size == one.dictionary_size
    np.testing.assert_allclose(many._store.field("coef"), one._store.field("coef"), rtol=1e-12,
                               atol=1e-13)
    Q = {"0": 0.3, "1": -0.2, "2": 0.1}
    assert many.predict_one(Q) == pytest.approx(one.predict_one(Q), rel=1e-12, abs=1e-13)


KRLS_CASES = [
    dict(nu=1e-4),
    dict(kernel=kernels.Laplacian(0.5), nu=0.05, C=2.0),  # 304 atoms: M goes packed
    dict(kernel=kernels.Polynomial(degree=2, gamma=0.3), nu=0.01, alpha=1e-3),
    dict(kernel=kernels.RBF(2.0), nu=1e-3, max_size=120, alpha=1e-4),
]


@pytest.mark.parametrize("params", KRLS_CASES)
def test_krls_compiled_loop_equals_its_one_row_steps(params):
    """KRLS's compiled loop over an array (through the dense-to-packed switch of M, the drift
    checks and a full budget) gives the predictions and the model of the row-by-row steps."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(400, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.normal(size=400)
    one, many = KRLS(**params), KRLS(**params)
    predictions = []
    for x, target in zip(X, y):
        x = {0: float(x[0]), 1: float(x[1])}
        predictions.append(one.predict_one(x))
        one.learn_one(x, float(target))
    got = np.concatenate([many.predict_learn_many(X[:150], y[:150]),
                          many.predict_learn_many(X[150:], y[150:])])
    np.testing.assert_allclose(got, predictions, rtol=1e-9, atol=1e-9)
    assert many.dictionary_size == one.dictionary_size
    assert many._M.is_dense == one._M.is_dense
    assert many.n_seen == one.n_seen == 400
    np.testing.assert_allclose(many.weights, one.weights, rtol=1e-7, atol=1e-7)
    np.testing.assert_array_equal(many._ald.indices, one._ald.indices)
    np.testing.assert_allclose(many._ald.residuals, one._ald.residuals, rtol=1e-9, atol=1e-12)
    assert many.last_residual == pytest.approx(one.last_residual, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(many._ald.last_coefficients, one._ald.last_coefficients,
                               rtol=1e-7, atol=1e-9)
    Q = rng.uniform(-2, 2, size=(20, 2))
    np.testing.assert_allclose(many.predict_many(Q), one.predict_many(Q), rtol=1e-8, atol=1e-9)


def _compiled_signatures(path):
    """``(name, number of parameters)`` of every function and method of a .pyx file
    (``self`` not counted)."""
    import re

    text = open(path).read()
    out = []
    for match in re.finditer(r"^\s*(?:c?p?def)\s+(?:[\w\[\]:, ]+\s+)?(\w+)\(([^)]*)\)", text,
                             re.M):
        plain = re.sub(r"\[[^\]]*\]", "", match.group(2))  # no commas of memoryview types
        params = [p for p in plain.replace("\n", " ").split(",") if p.strip()]
        params = [p for p in params if p.split()[-1] != "self"]
        out.append((match.group(1), len(params)))
    return out


def _private_reads(path):
    """``(object, attribute)`` of every private attribute of another object that the code of a
    .pyx file names (not its own: ``self`` / ``s`` / ``state``; docstrings, comments and
    imports aside)."""
    import re

    text = re.sub(r'"""(?:.|\n)*?"""', "", path.read_text())  # docstrings name others freely
    code = "\n".join(line.split("#")[0] for line in text.splitlines()
                     if not line.lstrip().startswith(("from ", "cimport ", "import ")))
    return re.findall(r"\b(?!self\b|s\b|state\b)([A-Za-z_]\w*)\.(_[a-z]\w*)", code)


def test_the_steps_take_at_most_ten_arguments_and_read_no_private_attribute():
    """Issue 41's measure for the compiled steps (FunctionalGD's, KRLS's, KORS's, the windowed
    KONS's and the shared multiclass step's): no compiled function takes more than 10
    arguments (krls_run took 28), and the steps read no private attribute of another object
    (only their own state, ``self`` / ``s`` / ``state``) nor call one of a learner (KONS's
    step called ``learner._make_room``, ``_settle`` and ``_forget_atom``), nor do the window
    inverse's kernels (``_slots``: 12 reads of ``SlotInverse``'s buffers and counters before
    it gave them public accessors)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "okoco" / "_core"
    for name in ("_steps.pyx", "_krls.pyx", "_kors.pyx", "_kons.pyx", "_multiclass.pyx",
                 "_slots.pyx"):
        signatures = _compiled_signatures(root / name)
        assert len(signatures) >= 1 and all(count >= 0 for _, count in signatures)
        assert max(count for _, count in signatures) <= 10, signatures
        assert _private_reads(root / name) == [], name
