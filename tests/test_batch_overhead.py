"""A batch's validation in few calls (issue 28: ``learn_many`` on one row near ``learn_one``).

The compiled passes (``okoco._core._encode.first_bad_cell``, ``first_outside``,
``has_nan_name``, ``all_floats``, ``positional_rows``, ``named_rows``) and the Python that calls
them are checked against independent references: each cell through ``check_value`` in
row-major order, numpy's comparisons, Python's own ``name != name`` and list comparison, the
targets as ``np.asarray(y, dtype=object)`` gives them to ``check_target``, and the general
path of ``FeatureMap.encode_many`` with the compiled copies switched off. The same batch split
in small and large pieces gives the same model and the same errors as row by row, a step that
fails included.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
from streams import unit_rows

from okoco import kernels, losses
from okoco._core import _encode
from okoco._input import (
    MAX_ABS_VALUE,
    FeatureMap,
    _cells,
    check_target,
    check_targets,
    check_value,
    in_row,
)
from okoco.learners import CONKONS, KONS, KRLS, FunctionalGD

BAD = [np.nan, np.inf, -np.inf, 1e151, -1e200, 2.0 * MAX_ABS_VALUE]


def outcome(call, *args, **kwargs):
    """What a call gives: ``("ok", result)`` or ``(error type, message)``."""
    try:
        return "ok", call(*args, **kwargs)
    except (TypeError, ValueError) as error:
        return type(error), str(error)


def reference_cells(raw: np.ndarray, names: list, absent: bool) -> np.ndarray:
    """Each cell, row by row, through ``check_value`` (an absent NaN is 0); the first bad one
    raises naming its row and feature."""
    out = np.zeros(raw.shape)
    for i in range(raw.shape[0]):
        for j in range(raw.shape[1]):
            cell = raw[i, j].item()
            if absent and isinstance(cell, float) and cell != cell:
                continue
            out[i, j] = in_row(i, check_value, names[j], cell)
    return out


def same(got, expected):
    if got[0] == "ok" and expected[0] == "ok":
        np.testing.assert_array_equal(got[1], expected[1])
        return
    assert got == expected


@pytest.mark.parametrize("absent", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8, np.bool_])
def test_cells_of_numeric_arrays_equal_the_cell_by_cell_reference(dtype, absent):
    rng = np.random.default_rng(1)
    for _ in range(300):
        n, d = rng.integers(1, 7), rng.integers(1, 6)
        raw = (rng.normal(size=(n, d)) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
        if np.issubdtype(dtype, np.floating):
            for _ in range(rng.integers(0, 3)):  # bad or absent cells anywhere
                with np.errstate(over="ignore"):  # float32: beyond its range is infinite
                    raw[rng.integers(n), rng.integers(d)] = rng.choice(BAD)
        layout = rng.integers(3)  # C order, Fortran order (a DataFrame's), strided columns
        if layout == 1:
            raw = np.asfortranarray(raw)
        elif layout == 2:
            raw = np.repeat(raw, 2, axis=1)[:, ::2]
        names = [f"f{j}" for j in range(d)]
        before = raw.copy()
        same(outcome(_cells, raw, names, absent=absent),
             outcome(reference_cells, raw, names, absent))
        np.testing.assert_array_equal(raw, before)  # the caller's array is never written


def test_cells_of_other_arrays_take_the_cell_by_cell_path():
    names = ["a", "b"]
    cells = np.array([[1.0, None], [2, "x"]], dtype=object)
    assert outcome(_cells, cells, names, absent=False) == (
        TypeError, "row 0: feature 'b' is None, a missing value; leave the feature out of a "
                   "dict (an absent feature is 0), or impute it (e.g. river's "
                   "preprocessing.StatImputer; X.fillna(0) for a DataFrame)")
    np.testing.assert_array_equal(_cells(cells[:1], names, absent=True), [[1.0, 0.0]])
    assert outcome(_cells, np.array([["1", "2"]]), names, absent=False)[0] is TypeError
    assert _cells(np.zeros((0, 2)), names, absent=True).shape == (0, 2)


def test_first_bad_cell_and_first_outside_against_numpy():
    rng = np.random.default_rng(2)
    for _ in range(500):
        values = rng.normal(size=(rng.integers(0, 6), rng.integers(1, 5)))
        for _ in range(rng.integers(0, 4)):
            if values.size:
                values[rng.integers(values.shape[0]), rng.integers(values.shape[1])] = \
                    rng.choice([*BAD, MAX_ABS_VALUE, -MAX_ABS_VALUE, 0.0, -0.0])
        bad = ~(np.abs(values) <= MAX_ABS_VALUE)
        expected = int(np.flatnonzero(bad.ravel())[0]) if bad.any() else -1
        assert _encode.first_bad_cell(values.copy(), MAX_ABS_VALUE, False) == expected
        absent = values.copy()
        bad = np.abs(values) > MAX_ABS_VALUE  # NaN is absent, not bad
        expected = int(np.flatnonzero(bad.ravel())[0]) if bad.any() else -1
        assert _encode.first_bad_cell(absent, MAX_ABS_VALUE, True) == expected
        if expected < 0:  # every absent cell is now 0, every other cell as it was
            np.testing.assert_array_equal(absent, np.where(np.isnan(values), 0.0, values))
        diag = values.ravel()
        ok = (diag >= 0.0) & (diag < np.inf)
        assert _encode.first_outside(diag, 0.0, np.inf) == (-1 if ok.all() else
                                                             int(np.argmin(ok)))


class Odd:
    """A name that is never equal to itself, like NaN."""

    def __ne__(self, other):
        return True

    def __hash__(self):
        return 0


@pytest.mark.parametrize("names", [
    ["a", "b"], [], [0, 1.0, "x"], ["a", float("nan")], [np.float64("nan")], [Odd()],
    [None, pd.NaT], [pd.NA],
])
def test_has_nan_name_is_pythons_own_comparison(names):
    assert outcome(_encode.has_nan_name, names) == outcome(
        lambda: any(name != name for name in names))


def reference_targets(y, n, loss):
    targets = np.asarray(y, dtype=object).ravel()
    if len(targets) != n:
        raise ValueError(f"X has {n} rows but y has {len(targets)} targets")
    return [in_row(i, check_target, target, loss) for i, target in enumerate(targets)]


class Real(float):
    """A float subclass (not a plain float: the compiled check must not take it as one)."""


@pytest.mark.parametrize("loss", [losses.Squared(), losses.Logistic()])
@pytest.mark.parametrize("y", [
    [0.5], [1.0, -1.0, 1.0], [], [float("nan")], [1.0, 1e200], [1.0, True], [1, -1],
    [np.float64(1.0)], [[1.0], [-1.0]], [1.0, [1.0, -1.0]], (1.0, -1.0), [Real(1.0)],
    [1.0, None], [10**400], np.array([1.0, -1.0]), np.array([[1.0], [-1.0]]),
    np.array([True, False]), pd.Series([1.0, -1.0]), [1.0, 0.5], [1.0, -1.0, 1.0, -1.0, 0.5],
])
def test_batch_targets_equal_the_array_of_objects_reference(y, loss):
    n = len(np.asarray(y, dtype=object).ravel())
    for rows in (n, n + 1):
        got = outcome(check_targets, y, rows, loss)
        expected = outcome(reference_targets, y, rows, loss)
        assert got == expected
        if got[0] == "ok":
            assert [type(t) for t in got[1]] == [type(t) for t in expected[1]]


def test_all_floats_is_exact_type():
    assert _encode.all_floats([]) and _encode.all_floats([1.0, float("nan")])
    assert not _encode.all_floats([1.0, 1]) and not _encode.all_floats([Real(1.0)])
    assert not _encode.all_floats([np.float64(1.0)])


class ReadOnlyDiagonal(kernels.Polynomial):
    """A polynomial kernel whose k(x, x) comes back read-only (a view of a cache, say)."""

    def diag(self, X):
        out = super().diag(X)
        out.setflags(write=False)
        return out


@pytest.mark.parametrize("rows", [1, 5])
def test_a_read_only_diag_is_checked_too(rows):
    model = FunctionalGD(kernel=ReadOnlyDiagonal(degree=3), eta=0.1)
    model.learn_many(np.full((rows, 2), 0.5), [0.1] * rows)
    X = np.full((rows, 2), 0.5)
    X[-1] = 1e60  # k(x, x) = (x.x + 1)^3 overflows
    with np.errstate(over="ignore"), pytest.raises(ValueError, match=f"row {rows - 1}: "):
        model.learn_many(X, [0.1] * rows)
    assert model.n_seen == rows


def test_rbf_and_laplacian_k_x_x_is_one_for_every_finite_row():
    """Why _check_rows does not call their diag: it is 1 whatever the (validated) row."""
    V = np.array([[MAX_ABS_VALUE, -MAX_ABS_VALUE], [0.0, 0.0], [1e-300, 5.0]])
    normalized = kernels.RBF(gamma=0.5)
    normalized.normalize = True  # the algebra's flag: still 1
    for kernel in (kernels.RBF(gamma=1e10), kernels.Laplacian(gamma=1e-10), normalized):
        np.testing.assert_array_equal(kernel.diag(V), np.ones(3))


# -- whole batches: small and large pieces, frames and arrays --------------------------------

MAKERS = {
    "fgd": lambda: FunctionalGD(eta=0.3),
    "fgd-linear": lambda: FunctionalGD(kernel=kernels.Linear(), eta=0.1),
    "krls": lambda: KRLS(nu=1e-3),
    "kons": lambda: KONS(loss=losses.Logistic()),
    "conkons": lambda: CONKONS(seed=0),
}
COLUMNS = ["x0", "x1", "x2"]


def fed(make, as_array: bool, n: int = 12):
    model = make()
    X, y = unit_rows(n, 3, seed=4), np.sign(np.linspace(-1, 1, n) + 0.05)
    for row, target in zip(X, y):
        model.learn_one(dict(enumerate(row.tolist())) if as_array else
                        dict(zip(COLUMNS, row.tolist())), float(target))
    return model


@pytest.mark.parametrize("as_array", [False, True])
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_pieces_of_any_size_equal_row_by_row(name, as_array):
    """A batch learned in pieces of 1, 2, 3, 4 and 7 rows (short and compiled loops), from a
    DataFrame (with absent cells) or a 2-D array, predicts and learns as row by row."""
    make = MAKERS[name]
    one, many = fed(make, as_array), fed(make, as_array)
    X = unit_rows(17, 3, seed=5)
    if not as_array:
        X[[2, 9], [1, 0]] = np.nan  # absent cells: the features missing from those rows
    y = np.sign(np.linspace(1, -1, 17) + 0.05)
    expected = []
    for row, target in zip(X, y):
        x = {key: v for key, v in zip(range(3) if as_array else COLUMNS, row.tolist())
             if v == v}
        expected.append(one.predict_one(x))
        one.learn_one(x, float(target))
    got, start = [], 0
    for size in (1, 2, 3, 4, 7):
        piece = X[start : start + size]
        # absent features are filled: a DataFrame's NaN is a missing value, refused (okoco._input)
        piece = piece if as_array else pd.DataFrame(piece, columns=COLUMNS).fillna(0.0)
        got.extend(many.predict_learn_many(piece, list(y[start : start + size])))
        start += size
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert many.n_seen == one.n_seen
    probe = {0: 0.1, 1: -0.2, 2: 0.3} if as_array else {"x0": 0.1, "x1": -0.2, "x2": 0.3}
    assert many.predict_one(probe) == pytest.approx(one.predict_one(probe), abs=1e-12)


@pytest.mark.parametrize("as_array", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("bad", ["cell", "huge", "target", "label", "kernel"])
def test_a_bad_last_row_fails_every_batch_size_with_one_message(bad, rows, as_array):
    make = (lambda: FunctionalGD(kernel=kernels.Polynomial(degree=3), eta=0.1)) \
        if bad == "kernel" else MAKERS["kons"]
    model = fed(make, as_array)
    state = pickle.dumps(model)
    X = np.full((rows, 3), 0.25)
    y = [1.0] * rows
    last, name = rows - 1, repr(1 if as_array else "x1")
    expected = {
        "cell": (ValueError, f"row {last}: feature {name} is not finite (inf); impute or drop "
                             "non-finite values"),
        "huge": (ValueError, f"row {last}: feature {name} = 1e+200 is too large "
                             "(|x| > 1e+150); scale the features"),
        "target": (ValueError, f"row {last}: the target is nan; it must be finite"),
        "label": (ValueError, f"row {last}: {outcome(losses.Logistic().check_target, 0.5)[1]}"),
        "kernel": (ValueError, f"row {last}: the unclipped prediction is np.float64(inf): "
                               "float64 overflowed"),
    }[bad]
    if bad == "cell":
        X[last, 1] = np.inf
    elif bad == "huge":
        X[last, 1] = 1e200
    elif bad == "target":
        y[last] = float("nan")
    elif bad == "label":
        y[last] = 0.5  # not a label of the logistic loss
    else:
        X[last] = 1e60  # finite cells whose k(x, x) = (x.x + 1)^3 overflows
    batch = X if as_array else pd.DataFrame(X, columns=COLUMNS)
    with np.errstate(over="ignore", invalid="ignore"):
        kind, message = outcome(model.learn_many, batch, y)
    assert kind is expected[0]
    assert message.startswith(expected[1])
    assert pickle.dumps(model) == state  # nothing learned, nothing changed


def test_frame_names_are_checked_as_before():
    model = fed(MAKERS["fgd"], as_array=False)
    state = pickle.dumps(model)
    for columns, shown in ((["x0", "x0", "x2"], "'x0'"), (["x0", np.nan, "x2"], "nan")):
        frame = pd.DataFrame(np.zeros((1, 3)), columns=columns)
        with pytest.raises(ValueError, match=f"duplicate or NaN column names \\({shown}\\)"):
            model.learn_many(frame, [0.0])
    assert pickle.dumps(model) == state


def test_a_new_feature_in_a_small_frame_gets_its_column():
    fm = FeatureMap()
    fm.add(fm.encode({"a": 1.0, "b": 2.0})[1])
    values, new = fm.encode_many(pd.DataFrame({"c": [3.0], "a": [0.0], "b": [4.0]}),
                                 arrays=False)
    np.testing.assert_array_equal(values, [[0.0, 4.0, 3.0]])
    assert new == ["c"]


def positional_columns(d):
    fm = FeatureMap()
    fm.add(fm.encode(dict.fromkeys(range(d), 1.0))[1])
    return fm


def test_positional_rows_copies_plain_batches_and_declines_the_rest():
    rng = np.random.default_rng(6)
    columns = positional_columns(4).columns
    for _ in range(300):
        X = rng.normal(size=(rng.integers(0, 5), 4))
        if X.size and rng.random() < 0.5:
            X[rng.integers(X.shape[0]), rng.integers(4)] = rng.choice(BAD)
        layout = rng.integers(4)  # C, Fortran, strided, read-only
        X = [X, np.asfortranarray(X), np.repeat(X, 2, axis=1)[:, ::2], X][layout]
        X.setflags(write=layout != 3)
        got = _encode.positional_rows(X, columns, MAX_ABS_VALUE)
        if np.all(np.abs(X) <= MAX_ABS_VALUE):
            np.testing.assert_array_equal(got, X)
            assert got.flags.c_contiguous and not np.shares_memory(got, X)
        else:
            assert got is None
    X = np.zeros((2, 4))
    for other in ({0: 0, 1: 1, 2: 2}, {0: 0, 1: 1, 3: 2, 2: 3}, {0: 0, True: 1, 2: 2, 3: 3},
                  {0.0: 0, 1: 1, 2: 2, 3: 3}, {0: 0, 1: 1, 2: 2, 10**30: 3},
                  {"0": 0, 1: 1, 2: 2, 3: 3}):
        assert _encode.positional_rows(X, other, MAX_ABS_VALUE) is None
    for other in (X.astype(np.float32), X.astype(">f8"), X[0], X[None]):
        assert _encode.positional_rows(other, columns, MAX_ABS_VALUE) is None


def assert_as_general_path(fm, X, compiled: str, monkeypatch):
    """``fm.encode_many(X)`` gives what it gives with the compiled copy ``compiled`` declining
    every batch (the general path): the same values and new columns, or the same error."""
    for arrays in (False, True):
        got = outcome(fm.encode_many, X, arrays=arrays)
        with monkeypatch.context() as patch:
            patch.setattr(_encode, compiled, lambda *args: None)
            expected = outcome(fm.encode_many, X, arrays=arrays)
        if got[0] == "ok" and expected[0] == "ok":
            np.testing.assert_array_equal(got[1][0], expected[1][0])
            assert list(got[1][1]) == list(expected[1][1])
        else:
            assert got == expected


@pytest.mark.parametrize("mode", [None, "dict", "array"])
def test_arrays_by_position_encode_as_the_general_path(mode, monkeypatch):
    """The compiled copy of a plain batch (``positional_rows``) gives what the general path
    gives, whatever the columns registered; where it declines, the general path words it."""
    rng = np.random.default_rng(7)
    maps = {None: FeatureMap(), "dict": positional_columns(3), "array": FeatureMap()}
    fm = maps[mode]
    if mode == "array":
        fm.add(fm.encode(np.zeros(3))[1])
    for _ in range(100):
        X = rng.normal(size=(rng.integers(1, 6), 3))
        if rng.random() < 0.3:
            X[rng.integers(X.shape[0]), rng.integers(3)] = rng.choice(BAD)
        assert_as_general_path(fm, X, "positional_rows", monkeypatch)


def registered(names):
    fm = FeatureMap()
    fm.add(fm.encode(dict.fromkeys(names, 1.0))[1])
    return fm


def reference_named_rows(X, names, columns):
    """What ``named_rows`` must give: the cells with NaN as 0 when the names are the registered
    ones (Python's list comparison) and the cells float64 numbers (or NaN), else ``None``."""
    plain = isinstance(X, np.ndarray) and X.dtype == np.float64 and X.dtype.isnative
    if not (plain and X.ndim == 2 and X.shape[1] == len(names) and names == list(columns)):
        return None
    if np.any(np.abs(X) > MAX_ABS_VALUE):  # NaN is absent, not bad
        return None
    return np.where(np.isnan(X), 0.0, X)


class Same:
    """A name equal to every name (Python's list comparison takes it for any column)."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def test_named_rows_copies_plain_frames_and_declines_the_rest():
    rng = np.random.default_rng(8)
    columns = registered(["a", "b", 3, "d"]).columns
    variants = [["a", "b", 3, "d"], ["a", "b", 3.0, "d"], [np.str_("a"), "b", 3, "d"],
                ["b", "a", 3, "d"], ["a", "b", 3, "e"], ["a", "b", "3", "d"], ["a", Same(), 3, "d"],
                ["a", "b", True, "d"], ["a", "b", 3, np.nan]]
    for _ in range(400):
        X = rng.normal(size=(rng.integers(0, 5), 4))
        for _ in range(rng.integers(0, 3)):  # absent (NaN) or bad cells anywhere
            if X.size:
                X[rng.integers(X.shape[0]), rng.integers(4)] = rng.choice(BAD)
        layout = rng.integers(4)  # C, Fortran (a DataFrame's), strided, read-only
        X = [X, np.asfortranarray(X), np.repeat(X, 2, axis=1)[:, ::2], X.copy()][layout]
        X.setflags(write=layout != 3)
        names = variants[rng.integers(len(variants))]
        before = X.copy()
        got = _encode.named_rows(X, names, columns, MAX_ABS_VALUE)
        expected = reference_named_rows(X, names, columns)
        if expected is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, expected)
            assert got.flags.c_contiguous and not np.shares_memory(got, X)
        np.testing.assert_array_equal(X, before)  # the caller's cells are never written
    X = np.zeros((2, 4))
    names = ["a", "b", 3, "d"]
    for other in (X.astype(np.float32), X.astype(">f8"), X.astype(np.int64), X[0], X[None],
                  X[:, :3]):
        assert _encode.named_rows(other, names, columns, MAX_ABS_VALUE) is None
    for other in ({}, {"a": 0, "b": 1, 3: 2}, {"a": 0, "b": 1, 3: 2, "d": 3, "e": 4}):
        assert _encode.named_rows(X, names, other, MAX_ABS_VALUE) is None
    assert _encode.named_rows(X, names[:3], columns, MAX_ABS_VALUE) is None


FRAME_NAMES = [["x0", "x1", "x2"], ["x1", "x0", "x2"], ["x0", "x1"], ["x0", "x1", "x2", "x3"],
               ["x0", "x0", "x2"], ["x0", np.nan, "x2"], [0, 1, 2]]


@pytest.mark.parametrize("mode", [None, "dict", "array"])
def test_frames_encode_as_the_general_path(mode, monkeypatch):
    """The compiled copy of a plain frame (``named_rows``) gives what the general path gives,
    whatever the frame's names, dtypes and cells; where it declines, the general path words
    the error (duplicate or NaN names, bad cells, a map fed arrays)."""
    rng = np.random.default_rng(9)
    maps = {None: FeatureMap(), "dict": registered(["x0", "x1", "x2"]), "array": FeatureMap()}
    fm = maps[mode]
    if mode == "array":
        fm.add(fm.encode(np.zeros(3))[1])
    for _ in range(150):
        names = FRAME_NAMES[rng.integers(len(FRAME_NAMES))]
        X = rng.normal(size=(rng.integers(1, 5), len(names)))
        if rng.random() < 0.4:
            X[rng.integers(X.shape[0]), rng.integers(len(names))] = rng.choice(BAD)
        frame = pd.DataFrame(X, columns=names)
        kind = rng.integers(4)  # float64, int64, nullable Float64, object cells
        if kind == 1:
            frame = pd.DataFrame(np.round(np.clip(np.nan_to_num(X), -9, 9) * 10).astype(np.int64),
                                 columns=names)
        elif kind == 2:
            frame = frame.astype("Float64")
        elif kind == 3:
            frame = frame.astype(object)
        assert_as_general_path(fm, frame, "named_rows", monkeypatch)


class Poisoned:
    """A Gaussian kernel (not a compiled one) whose value against a row with ``x0 = 7`` is NaN:
    the batch's checks pass (``k(x, x) = 1``), the step of that row fails."""

    def __call__(self, A, B):
        K = np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
        K[:, B[:, 0] == 7.0] = np.nan
        return K

    def diag(self, X):
        return np.ones(X.shape[0])

    def __repr__(self):
        return "Poisoned()"


@pytest.mark.parametrize("predict", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 3, 5])
def test_a_step_that_fails_names_its_row_as_row_by_row(rows, predict):
    """A row whose step fails (past the batch's checks) raises ``learn_one``'s error with its
    row in front, after the rows before it were learned, as ``learn_one`` row by row."""
    make = lambda: FunctionalGD(kernel=Poisoned(), eta=0.3)  # noqa: E731
    one, many = fed(make, as_array=True), fed(make, as_array=True)
    X = unit_rows(rows, 3, seed=10)
    X[-1, 0] = 7.0
    y = [0.5] * rows
    for i, row in enumerate(X):
        x = dict(enumerate(row.tolist()))
        kind, message = outcome(one.learn_one, x, y[i])
        if kind != "ok":
            break
    assert (kind, i) == (ValueError, rows - 1)
    call = many.predict_learn_many if predict else many.learn_many
    assert outcome(call, X, y) == (ValueError, f"row {rows - 1}: {message}")
    assert many.n_seen == one.n_seen
    probe = {0: 0.1, 1: -0.2, 2: 0.3}
    assert many.predict_one(probe) == one.predict_one(probe)
