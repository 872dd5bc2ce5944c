"""Tests for okoco.datasets: built-in, synthetic, files (CSV, svmlight, .mat) and the cache."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import re
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from okoco import datasets
from okoco.datasets import (
    ChecksumError,
    Dataset,
    DownloadError,
    available,
    load,
    load_csv,
    load_mat,
    load_svmlight,
    river_sk,
    synthetic,
)
from okoco.datasets import remote as remote_mod

LSOKL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "lsokl"


def assert_views_agree(ds: Dataset) -> None:
    """Iteration and arrays agree exactly (absent sparse entries are zeros in the arrays)."""
    X, y, names = ds.to_arrays()
    assert X.dtype == np.float64 and X.shape == (ds.n, ds.d)
    assert len(names) == ds.d and y.shape == (ds.n,)
    count = 0
    column = {name: j for j, name in enumerate(names)}
    rows, targets = X.tolist(), y.tolist()
    sparse = ds.is_sparse
    for i, (x, target) in enumerate(ds):
        assert all(type(v) is float for v in x.values())
        if sparse:
            row = [0.0] * ds.d
            for k, v in x.items():
                row[column[k]] = v
        else:
            assert list(x) == names
            row = list(x.values())
        assert row == rows[i]
        assert target == targets[i] and type(target) is type(targets[i])
        count += 1
    assert count == ds.n


# -- registry and built-in datasets --------------------------------------------------------------

LOCAL = [r for r in available() if r.name not in remote_mod.REMOTE]


def test_available_rows():
    rows = available()
    names = [r.name for r in rows]
    assert len(names) == len(set(names))
    for r in rows:
        assert len(r) == 5 and r.task in datasets.TASKS and r.description
    for expected in ["bananas", "phishing", "trump-approval", "chick-weights", "shuttle",
                     "diabetes", "breast-cancer", "adversarial", "rkhs", "sinc", "friedman",
                     "mackey-glass", "bernoulli-kernel", "uniform", "normal", "cauchy",
                     "cadata", "cpusmall", "abalone", "ijcnn1", "cod-rna", "a9a"]:
        assert expected in names


@pytest.mark.parametrize("row", LOCAL, ids=[r.name for r in LOCAL])
def test_builtin_shape_task_and_views(row):
    ds = load(row.name)
    assert (ds.name, ds.task) == (row.name, row.task)
    X, y, _ = ds.to_arrays()
    assert X.shape == (row.n, row.d) and (ds.n, ds.d) == (row.n, row.d)
    assert np.all(np.isfinite(X))
    if row.task == "binary":
        assert len(np.unique(y)) == 2
    elif row.task == "multiclass":
        assert len(np.unique(y)) > 2
    else:
        assert y.dtype == np.float64
    assert_views_agree(ds)


def test_river_and_sklearn_match_their_sources():
    import river.datasets
    import sklearn.datasets

    x0, y0 = next(iter(river.datasets.TrumpApproval()))
    x, y = next(iter(load("trump-approval")))
    assert x == {k: float(v) for k, v in x0.items()} and y == y0
    X, y, names = load("breast-cancer").to_arrays()
    ref = sklearn.datasets.load_breast_cancer()
    np.testing.assert_array_equal(X, ref.data)
    np.testing.assert_array_equal(y, ref.target)
    assert names == list(ref.feature_names)
    # okoco's copy of diabetes scales the raw file as load_diabetes() does (another summation
    # order: equal to the last bits)
    X, y, names = load("diabetes").to_arrays()
    ref = sklearn.datasets.load_diabetes()
    np.testing.assert_allclose(X, ref.data, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(y, ref.target)
    assert names == list(ref.feature_names) and y.dtype == np.float64


def test_unknown_dataset_parameters_are_named():
    with pytest.raises(TypeError, match=r"dataset 'sinc' has no parameter 'nosuch'; it takes n,"):
        load("sinc", nosuch=3)
    with pytest.raises(TypeError, match=r"dataset 'a9a' has no parameter 'n'; it takes data_home"):
        load("a9a", n=3)


def test_csv_text_label_column_is_not_dropped_silently(tmp_path):
    rows = "".join(f"{'cat' if i % 2 else 'dog'},{i},{i % 5}\n" for i in range(12))
    p = write(tmp_path, "l.csv", "label,a,b\n" + rows)
    with pytest.raises(ValueError, match=r"column 'label' \(and 11 more cells of that column\); "
                                         r"if it is the target, name it: target='label'"):
        load_csv(p)
    with pytest.raises(ValueError, match=r"'label' holds text labels .* last column 'b'"):
        load_csv(p, non_numeric="drop")
    assert load_csv(p, target="label").task == "binary"
    kept = load_csv(p, target="b", non_numeric="drop")
    assert kept.feature_names == ["a"] and kept.info["dropped_columns"] == ["label"]
    assert load_csv(p, target=-1, non_numeric="drop").info["target"] == "b"  # explicit index


def test_csv_text_columns_get_one_remedy_and_a_misspelt_target_a_suggestion(tmp_path):
    """Two text columns: each named once, the remedy once, naming both; a target name in
    the wrong case or misspelt gets a "did you mean"."""
    rows = "".join(f"x{i},r{i},{i},{i % 2}\n" for i in range(6))
    p = write(tmp_path, "t.csv", "city,street,area,Price\n" + rows)
    with pytest.raises(ValueError) as error:
        load_csv(p)
    message = str(error.value)
    assert message.count("to encode text columns") == 1
    assert "if one is the target, name it: target='city' or 'street'" in message
    for wrong in ("price", "Prise"):
        with pytest.raises(ValueError, match=r"no column named .*; did you mean 'Price'\?"):
            load_csv(p, target=wrong, non_numeric="encode")


@pytest.mark.parametrize("non_numeric", ["encode", "drop"])
def test_csv_numbers_with_a_typo_are_refused_in_python_too(tmp_path, non_numeric):
    """load_csv itself (not only the command line) refuses a column of numbers with a typo,
    whether text columns would be encoded or dropped; a column of text with a few numbers
    stays text."""
    rows = "".join(f"{20 + i}.5,{'Lyon' if i % 3 else str(i)},{i % 2}\n" for i in range(40))
    p = write(tmp_path, "h.csv", "m2,city,y\n" + rows.replace("27.5", "27..5", 1))
    with pytest.raises(ValueError, match=r"column 'm2' holds numbers but for 1 of its 40 filled "
                                         r"cells \('27\.\.5'\)"):
        load_csv(p, non_numeric=non_numeric)
    fixed = write(tmp_path, "f.csv", "m2,city,y\n" + rows)
    assert load_csv(fixed, non_numeric="encode").info["text_columns"] == {"city": 15}


def test_registry_names_are_case_and_underscore_insensitive():
    assert load("Mackey_Glass", n=20).name == "mackey-glass"


def test_river_non_numeric_feature_is_a_type_error(monkeypatch):
    import datetime

    import river.datasets

    class Dates:
        def __iter__(self):
            yield {"a": 1.0}, 1.0
            yield {"a": datetime.date(2020, 1, 1)}, 2.0

    monkeypatch.setattr(river.datasets, "Dates", Dates, raising=False)
    monkeypatch.setitem(river_sk.RIVER, "dates", ("Dates", 2, 1, "regression", "test"))
    with pytest.raises(TypeError, match=r"row 1: feature 'a' is not numeric"):
        river_sk.load_river("dates").to_arrays()


def test_builtin_takes_no_parameters_and_unknown_name():
    with pytest.raises(TypeError, match="takes no parameters"):
        load("bananas", n=3)
    with pytest.raises(ValueError, match="unknown dataset 'nope'.*sinc"):
        load("nope")
    with pytest.raises(FileNotFoundError, match="no such file"):
        load("missing/data.csv")


def test_dataset_validation():
    with pytest.raises(ValueError, match="task"):
        Dataset("a", "ranking", X=np.zeros((2, 1)), y=np.zeros(2))
    with pytest.raises(ValueError, match="y must have shape"):
        Dataset("a", "regression", X=np.zeros((2, 1)), y=np.zeros(3))
    with pytest.raises(ValueError, match="feature names"):
        Dataset("a", "regression", X=np.zeros((2, 2)), y=np.zeros(2), feature_names=["a"])
    ds = Dataset("a", "regression", X=np.zeros((2, 1)), y=np.zeros(2))
    X, _, _ = ds.to_arrays()
    X[0, 0] = 5.0  # a copy: the dataset is unchanged
    assert ds.take(1)[0][0] == {"x0": 0.0} and len(ds) == 2


# -- synthetic ----------------------------------------------------------------------------------

GENERATORS = ["adversarial", "rkhs", "sinc", "friedman", "mackey-glass", "bernoulli-kernel",
              "uniform", "normal", "cauchy"]


@pytest.mark.parametrize("name", GENERATORS)
def test_synthetic_reproducible_by_seed(name):
    a = load(name, n=60, seed=7).to_arrays()
    b = load(name, n=60, seed=7).to_arrays()
    c = load(name, n=60, seed=8).to_arrays()
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not (np.array_equal(a[0], c[0]) and np.array_equal(a[1], c[1]))
    assert a[0].shape[0] == 60
    assert_views_agree(load(name, n=60, seed=7))


@pytest.mark.parametrize("name", GENERATORS)
def test_synthetic_noise_parameter(name):
    clean = load(name, n=50, seed=1, noise=0.0)
    np.testing.assert_array_equal(clean.to_arrays()[1], clean.info["y_clean"])
    noisy = load(name, n=50, seed=1, noise=0.5)
    assert not np.array_equal(noisy.to_arrays()[1], clean.to_arrays()[1])
    with pytest.raises(ValueError, match="noise"):
        load(name, n=5, noise=-1.0)
    with pytest.raises(ValueError, match="n must be"):
        load(name, n=0)


def test_adversarial_alternates_on_one_point():
    X, y, _ = synthetic.adversarial(n=9, C=3.0, d=4, seed=2).to_arrays()
    assert X.shape == (9, 4) and np.all(X == X[0])
    np.testing.assert_array_equal(y, [3.0, -3.0] * 4 + [3.0])
    X, _, _ = synthetic.adversarial(n=3, x=[1.0, 2.0]).to_arrays()
    assert X.tolist() == [[1.0, 2.0]] * 3
    with pytest.raises(ValueError, match="C must be"):
        synthetic.adversarial(C=0.0)


def test_rkhs_targets_scaled_and_function_reconstructible():
    ds = synthetic.rkhs(n=200, d=3, n_centers=5, gamma=2.0, noise=0.1, seed=4)
    X, y, _ = ds.to_arrays()
    clean = ds.info["y_clean"]
    assert np.max(np.abs(clean)) == pytest.approx(1.0) and np.all(np.abs(clean) <= 1.0)
    c, a = ds.info["centers"], ds.info["coef"]
    f = [sum(a[j] * np.exp(-2.0 * np.sum((x - c[j]) ** 2)) for j in range(5)) for x in X]
    np.testing.assert_allclose(f, clean, atol=1e-12)
    assert 0.05 < np.std(y - clean) < 0.15


def test_sinc_friedman_bernoulli_formulas():
    X, y, _ = synthetic.sinc(n=100, noise=0.0).to_arrays()
    np.testing.assert_allclose(y, np.sin(X[:, 0]) / X[:, 0], rtol=1e-12)
    assert X.min() >= -10 and X.max() <= 10
    X, y, _ = synthetic.friedman(n=100, noise=0.0).to_arrays()
    ref = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
           + 10 * X[:, 3] + 5 * X[:, 4])
    np.testing.assert_allclose(y, ref)
    with pytest.raises(ValueError, match="d must be"):
        synthetic.friedman(d=4)
    from scipy.stats import beta

    X, _, _ = synthetic.bernoulli_kernel(n=500, design="quantile").to_arrays()
    np.testing.assert_allclose(X[:, 0], beta.ppf((np.arange(500) + 0.5) / 500, 0.2, 0.2))
    X, y, _ = synthetic.bernoulli_kernel(n=8, design="grid", noise=0.0).to_arrays()
    np.testing.assert_allclose(X[:, 0], np.arange(8) / 8)
    np.testing.assert_allclose(y, np.sin(2 * np.pi * X[:, 0]) + 0.5 * np.cos(6 * np.pi * X[:, 0]))
    X, _, _ = synthetic.bernoulli_kernel(n=2000, seed=0).to_arrays()
    # Beta(0.2, 0.2): mass near the borders, few points in the centre
    assert np.mean(np.abs(X - 0.5) < 0.1) < 0.1
    with pytest.raises(ValueError, match="design"):
        synthetic.bernoulli_kernel(design="sobol")


def test_mackey_glass_embedding_and_dynamics():
    ds = synthetic.mackey_glass(n=300, embedding=5, horizon=2)
    X, y, names = ds.to_arrays()
    s = ds.info["series"]
    np.testing.assert_array_equal(X, np.stack([s[k:k + 5] for k in range(300)]))
    np.testing.assert_array_equal(y, s[np.arange(300) + 6])
    assert names == ["x(t-4)", "x(t-3)", "x(t-2)", "x(t-1)", "x(t)"]
    # the attractor of the tau=30 system stays within about [0.2, 1.4]
    assert 0.1 < s.min() and s.max() < 1.5 and s.std() > 0.1


def test_input_laws():
    Xu, _, _ = synthetic.uniform(n=2000, d=2, seed=0).to_arrays()
    Xn, _, _ = synthetic.normal(n=2000, d=3, seed=0).to_arrays()
    Xc, _, _ = synthetic.cauchy(n=2000, d=1, seed=0).to_arrays()
    assert Xu.shape == (2000, 2) and Xu.min() >= 0 and Xu.max() <= 1
    assert Xn.shape == (2000, 3) and abs(Xn.std() - 1) < 0.05
    # heavy tails: the largest Cauchy draw dwarfs the largest Gaussian one
    assert np.abs(Xc).max() > 50 * np.abs(Xn).max() / 4


# -- CSV ----------------------------------------------------------------------------------------

def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_csv_header_detection_and_target_by_name_and_index(tmp_path):
    p = write(tmp_path, "h.csv", "a,b,y\n1,2,0.5\n3,4,1.5\n5,6,2.5\n")
    ds = load(str(p), target="y")
    assert (ds.n, ds.d, ds.task) == (3, 2, "regression")
    assert ds.feature_names == ["a", "b"]
    assert_views_agree(ds)
    by_index = load_csv(p, target=0)
    assert by_index.feature_names == ["b", "y"] and by_index.to_arrays()[1].tolist() == [1, 3, 5]
    assert by_index.task == "regression"
    p2 = write(tmp_path, "n.csv", "1,2,0.5\n3,4,1.5\n5,6,2.5\n")
    ds2 = load_csv(p2)  # no header: last column is the target
    assert ds2.n == 3 and ds2.feature_names == ["x0", "x1"]
    assert load_csv(p2, target=-3).feature_names == ["x1", "x2"]
    assert load_csv(p2, target="1").feature_names == ["x0", "x2"]
    with pytest.raises(ValueError, match="no header row"):
        load_csv(p2, target="y")
    with pytest.raises(ValueError, match="no column named 'z'"):
        load_csv(p, target="z")
    with pytest.raises(ValueError, match="out of range"):
        load_csv(p, target=3)
    # a header whose only numeric-looking name is still detected by the columns below it
    p3 = write(tmp_path, "m.csv", "2019,b,y\n1,2,3\n4,5,6\n")
    assert load_csv(p3).feature_names == ["2019", "b"]
    with pytest.raises(ValueError, match="line 1: non-numeric feature value 'b'"):
        load_csv(p3, header=False)


def test_csv_labels_and_task(tmp_path):
    p = write(tmp_path, "c.csv", "x,label\n1,cat\n2,dog\n3,cat\n")
    ds = load_csv(p, target="label")
    assert ds.task == "binary" and list(ds)[1] == ({"x": 2.0}, "dog")
    p = write(tmp_path, "m.csv", "x,label\n1,a\n2,b\n3,c\n")
    assert load_csv(p, target="label").task == "multiclass"
    p = write(tmp_path, "i.csv", "x,y\n1,0\n2,1\n3,2\n")
    ds = load_csv(p, task="multiclass")
    assert ds.task == "multiclass" and ds.to_arrays()[1].dtype.kind == "i"
    p = write(tmp_path, "b.csv", "x,y\n1,-1\n2,1\n")
    assert load_csv(p).task == "binary" and load_csv(p).take(1)[0][1] == -1


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        ("a,b,y\n1,2,3\n4,oops,6\n", 3, r"non-numeric feature value 'oops' in column 'b'"),
        ("a,b,y\n1,2,3\n\n4,,6\n", 4, r"missing value \(NaN\) in column 'b'"),
        ("a,b,y\n1,2,3\n4,NaN,6\n", 3, r"missing value \(NaN\) in column 'b'"),
        ("a,b,y\n1,2,3\n4,5,6\n7,8,?\n", 4, r"missing value \(NaN\) in column 'y'"),
        ("a,b,y\n1,2,3\n4,5\n", 3, r"expected 3 fields"),
        ("a,b,y\n1,2,3\n4,inf,6\n", 3, r"non-finite value 'inf'"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, text, line, pattern):
    p = write(tmp_path, "bad.csv", text)
    with pytest.raises(ValueError, match=rf"bad\.csv, line {line}: {pattern}"):
        load(str(p))


def test_csv_regression_target_must_be_numeric(tmp_path):
    p = write(tmp_path, "t.csv", "a,y\n1,2\n3,x\n")
    with pytest.raises(ValueError, match=r"line 3: non-numeric target value 'x'"):
        load_csv(p, task="regression")


def test_csv_drop_options(tmp_path):
    p = write(tmp_path, "d.csv", "a,name,y\n1,u,3\n,v,6\n7,w,9\n")
    with pytest.raises(ValueError, match="line 2: non-numeric feature value 'u'"):
        load_csv(p)
    ds = load_csv(p, na="drop", non_numeric="drop")
    X, y, names = ds.to_arrays()
    assert names == ["a"] and X.tolist() == [[1.0], [7.0]] and y.tolist() == [3.0, 9.0]
    assert ds.info["dropped_columns"] == ["name"] and ds.info["n_dropped_rows"] == 1
    p = write(tmp_path, "e.csv", "a,y\n,1\nnan,2\n")
    with pytest.raises(ValueError, match="no rows left"):
        load_csv(p, na="drop")


def test_csv_tsv_and_gzip(tmp_path):
    p = write(tmp_path, "t.tsv", "a\tb\ty\n1\t2\t3\n4\t5\t6\n")
    assert load(str(p)).to_arrays()[0].tolist() == [[1, 2], [4, 5]]
    g = tmp_path / "g.csv.gz"
    with gzip.open(g, "wt") as f:
        f.write("a,y\n1,2\n3,4\n")
    assert load(g, target="y").n == 2


# -- svmlight -----------------------------------------------------------------------------------

def test_svmlight_round_trip_against_sklearn(tmp_path):
    from sklearn.datasets import dump_svmlight_file, load_svmlight_file

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 7)) * (rng.random((30, 7)) < 0.4)
    X[:, 6] = 0.0  # a feature that never appears: n_features keeps the column
    y = rng.choice([-1.0, 1.0], size=30)
    p = tmp_path / "r.svm"
    dump_svmlight_file(X, y, str(p), zero_based=False)
    ds = load(str(p), n_features=7)
    assert (ds.n, ds.d, ds.task) == (30, 7, "binary") and ds.is_sparse
    X2, y2, names = ds.to_arrays()
    Xs, ys = load_svmlight_file(str(p), n_features=7, zero_based=False)
    np.testing.assert_array_equal(X2, Xs.toarray())
    np.testing.assert_allclose(X2, X, rtol=1e-15)
    np.testing.assert_array_equal(y2, ys.astype(int))
    assert names == [str(j) for j in range(1, 8)]
    for i, (x, target) in enumerate(ds):
        # the file holds X to 16 significant digits: compare with what sklearn reads back
        assert x == {str(j + 1): Xs[i, j] for j in range(7) if X[i, j] != 0}
        assert target == y[i]
    assert_views_agree(ds)
    assert sp.issparse(ds.to_arrays(sparse=True)[0])


def test_svmlight_zero_based_comments_qid_and_explicit_zeros(tmp_path):
    p = write(tmp_path, "z.txt", "# header comment\n2.5 qid:1 0:1 2:0 # note\n-0.5 1:3\n")
    ds = load(str(p))  # .txt sniffed as svmlight
    assert ds.task == "binary" and ds.feature_names == ["0", "1", "2"]
    assert list(ds) == [({"0": 1.0, "2": 0.0}, 2.5), ({"1": 3.0}, -0.5)]
    ds = load_svmlight(p, task="regression")
    assert ds.to_arrays()[1].dtype == np.float64


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        ("1 1:2\nx 1:2\n", 2, "bad label 'x'"),
        ("1 1:2\n1 1:2 3\n", 2, "bad feature '3'"),
        ("1 1:2\n\n1 2:a\n", 3, "bad feature '2:a'"),
        ("1 1:2 1:3\n", 1, "feature index 1 appears twice"),
        ("1 1:nan\n", 1, "bad feature '1:nan'"),
    ],
)
def test_svmlight_errors_name_the_line(tmp_path, text, line, pattern):
    p = write(tmp_path, "bad.svm", text)
    with pytest.raises(ValueError, match=rf"line {line}: {pattern}"):
        load_svmlight(p)


def test_svmlight_n_features_too_small(tmp_path):
    p = write(tmp_path, "a.svm", "1 5:1\n")
    with pytest.raises(ValueError, match="n_features=3"):
        load_svmlight(p, n_features=3)


# -- cached downloads ---------------------------------------------------------------------------

def small_svm(path: Path, d: int = 123, n: int = 5) -> bytes:
    rng = np.random.default_rng(1)
    lines = []
    for i in range(n):
        cols = sorted(rng.choice(np.arange(1, d + 1), size=3, replace=False))
        lines.append(f"{'+1' if i % 2 else '-1'} " + " ".join(f"{c}:1" for c in cols))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


def test_offline_error_says_where_to_put_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OKOCO_DATA", str(tmp_path / "cache"))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(remote_mod.urllib.request, "urlopen", offline)
    expected = tmp_path / "cache" / "a9a"
    with pytest.raises(DownloadError) as err:
        load("a9a")
    msg = str(err.value)
    assert str(expected) in msg and "'a9a'" in msg and "no network" in msg
    assert "csie.ntu.edu.tw" in msg and "\n" not in msg
    assert not expected.exists() and not (tmp_path / "cache" / "a9a.part").exists()
    with pytest.raises(DownloadError, match=re.escape(str(tmp_path / "cache" / "ijcnn1.bz2"))):
        load("ijcnn1", download=False)


def test_unreachable_host_is_a_download_error(tmp_path):
    with pytest.raises(DownloadError, match="place the file by hand at"):
        datasets.fetch("abalone", data_home=tmp_path, url="http://127.0.0.1:9/abalone",
                       timeout=2)


def test_file_placed_by_hand_and_checksum(tmp_path, monkeypatch):
    monkeypatch.setenv("OKOCO_DATA", str(tmp_path))
    data = small_svm(tmp_path / "a9a")
    ds = load("a9a")
    assert (ds.n, ds.d, ds.task) == (5, 123, "binary")
    assert_views_agree(ds)
    record = tmp_path / "a9a.sha256"
    assert record.read_text().split()[0] == hashlib.sha256(data).hexdigest()
    assert load("a9a").n == 5  # the recorded checksum matches
    (tmp_path / "a9a").write_bytes(data + b"+1 1:1\n")
    with pytest.raises(ChecksumError, match="verify=False"):
        load("a9a")
    assert load("a9a", verify=False).n == 6
    with pytest.raises(ChecksumError):
        load("a9a", sha256="0" * 64, verify=True)
    good = hashlib.sha256(data + b"+1 1:1\n").hexdigest()
    assert load("a9a", sha256=good).n == 6


def test_download_into_cache_via_url(tmp_path):
    src = tmp_path / "mirror" / "ijcnn1.bz2"
    src.parent.mkdir()
    plain = small_svm(tmp_path / "plain", d=22)
    src.write_bytes(bz2.compress(plain))
    home = tmp_path / "cache"
    ds = datasets.load_remote("ijcnn1", data_home=home, url=src.as_uri())
    assert (home / "ijcnn1.bz2").is_file() and (home / "ijcnn1.bz2.sha256").is_file()
    assert (ds.n, ds.d, ds.task) == (5, 22, "binary")
    assert set(np.unique(ds.to_arrays()[1])) == {-1, 1}


# -- LSOKL .mat files ---------------------------------------------------------------------------

def test_mat_synthetic_file(tmp_path):
    p = tmp_path / "toy.mat"
    data = np.array([[1.5, 1, 10], [2.5, 2, 20], [3.5, 3, 30]])
    scipy.io.savemat(p, {"data": data, "ID_list": np.array([[2, 3, 1], [1, 2, 3]])})
    ds = load(str(p), permutation=0)
    X, y, _ = ds.to_arrays()
    assert ds.task == "regression" and X.tolist() == [[2, 20], [3, 30], [1, 10]]
    assert y.tolist() == [2.5, 3.5, 1.5]
    assert load_mat(p).to_arrays()[1].tolist() == [1.5, 2.5, 3.5]
    with pytest.raises(ValueError, match=r"permutation must be in 0\.\.1"):
        load_mat(p, permutation=2)
    Xs, _, _ = load_mat(p, standardize=True).to_arrays()
    np.testing.assert_allclose(Xs.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Xs.std(0), 1)


@pytest.mark.skipif(not LSOKL.is_dir(), reason="shared LSOKL data not present")
def test_mat_lsokl_files():
    german = load_mat(LSOKL / "german.mat", permutation=3)
    assert (german.name, german.n, german.d, german.task) == ("german", 1000, 24, "binary")
    raw = scipy.io.loadmat(LSOKL / "german.mat")
    order = raw["ID_all"][3].astype(int) - 1
    X, y, _ = german.to_arrays()
    np.testing.assert_array_equal(X, raw["data"][order, 1:])
    np.testing.assert_array_equal(y, raw["data"][order, 0])
    assert german.info["n_permutations"] == 20
    housing = load(str(LSOKL / "housing.mat"), permutation=0)
    assert (housing.n, housing.d, housing.task) == (506, 13, "regression")
    assert housing.info["eta"] == pytest.approx(0.3) and housing.info["lambda"] == 0.03
    assert_views_agree(housing)


@pytest.mark.parametrize("name", ["trump-approval", "phishing", "chick-weights", "shuttle"])
def test_river_csv_read_directly_equals_rivers_dataset_class(name, monkeypatch):
    """The CSV datasets read without importing river.datasets give river's arrays exactly."""
    from okoco.datasets import river_sk

    X, y, names = river_sk.load_river(name).to_arrays()
    monkeypatch.delitem(river_sk._RIVER_CSV, name)  # the loader then iterates river's class
    X2, y2, names2 = river_sk.load_river(name).to_arrays()
    assert names == names2 and y.dtype == y2.dtype
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_the_cli_reads_a_dataset_before_its_replay_is_timed():
    """``experiment.load_dataset`` reads the rows, so the first step of a timed replay does not
    pay for the file (``datasets.load`` alone reads lazily)."""
    from okoco import experiment

    assert datasets.load("trump-approval")._X is None
    ds = experiment.load_dataset("trump-approval", target=None, data_params={}, seed=0,
                                 shuffle=False)
    assert ds._X is not None and ds._X.shape == (1001, 6)


def test_a_semicolon_csv_gets_a_delimiter_hint_in_both_forms(tmp_path):
    p = write(tmp_path, "semi.csv", "a;b;y\n1;2;3\n4;5;6\n")
    with pytest.raises(ValueError, match=r"delimiter=';' \(okoco replay: -d delimiter=';'\)"):
        load_csv(p)
    assert load_csv(p, delimiter=";").d == 2


def test_the_missing_value_hint_gives_the_cli_form_too(tmp_path):
    p = write(tmp_path, "na.csv", "a,b,y\n1,,3\n4,5,6\n")
    with pytest.raises(ValueError, match=r"na='drop' .*\(okoco replay: -d na=drop\)"):
        load_csv(p)


def test_csv_string_labels_make_a_multiclass_task(tmp_path):
    rows = "".join(f"{i},{i % 5},{('cat', 'dog', 'bird')[i % 3]}\n" for i in range(30))
    ds = load_csv(write(tmp_path, "three.csv", "a,b,kind\n" + rows))
    assert ds.task == "multiclass" and sorted(set(y for _, y in ds)) == ["bird", "cat", "dog"]


def test_listed_synthetic_sets_name_their_papers_not_internal_labels():
    text = " ".join(r.description for r in available())
    assert "seed 00" not in text
    assert "Sun et al. 2012" in text and "El Alaoui & Mahoney 2015" in text
