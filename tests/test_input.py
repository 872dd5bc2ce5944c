"""okoco._input's encoding of a river row: the compiled pass over a dict (okoco._core._encode)
against explicit vectors, and the rows it hands back to the Python path."""

import fractions

import numpy as np
import pytest

from okoco._core import _encode
from okoco._input import MAX_ABS_VALUE, FeatureMap


def registered(names):
    fm = FeatureMap()
    fm.add(fm.encode(dict.fromkeys(names, 1.0))[1])
    return fm


def test_known_rows_in_any_order_and_subset_are_their_explicit_vectors():
    names = [f"f{j}" for j in range(7)]
    fm = registered(names)
    rng = np.random.default_rng(0)
    for _ in range(200):
        keep = rng.permutation(7)[: rng.integers(0, 8)]
        values = rng.normal(size=len(keep)) * 10.0 ** rng.integers(-5, 5, size=len(keep))
        x = {names[j]: float(v) for j, v in zip(keep, values)}
        expected = np.zeros(7)
        expected[keep] = values
        np.testing.assert_array_equal(_encode.known_row(x, fm.columns, 7, MAX_ABS_VALUE),
                                      expected)
        vec, new = fm.encode(x)
        np.testing.assert_array_equal(vec, expected)
        assert new == []


def test_integers_are_their_float_values():
    fm = registered("ab")
    vec, _ = fm.encode({"a": 3, "b": -(2**60)})
    np.testing.assert_array_equal(vec, [3.0, -(2.0**60)])


@pytest.mark.parametrize("value", [True, np.float64(0.5), fractions.Fraction(1, 4), 10**400,
                                   float("nan"), float("inf"), 2e150, -2e150, None, "1.0"])
def test_other_values_take_the_python_path(value):
    fm = registered("ab")
    assert _encode.known_row({"a": value}, fm.columns, 2, MAX_ABS_VALUE) is None


def test_an_unknown_feature_takes_the_python_path_and_gets_a_trailing_column():
    fm = registered("ab")
    assert _encode.known_row({"b": 1.0, "c": 2.0}, fm.columns, 2, MAX_ABS_VALUE) is None
    vec, new = fm.encode({"b": 1.0, "c": 2.0})
    np.testing.assert_array_equal(vec, [0.0, 1.0, 2.0])
    assert new == ["c"]


@pytest.mark.parametrize(("value", "error"), [(float("nan"), ValueError), (2e150, ValueError),
                                              (10**400, ValueError), ("1", TypeError),
                                              (None, TypeError)])
def test_bad_values_of_known_features_are_worded_naming_the_feature(value, error):
    fm = registered("ab")
    with pytest.raises(error, match="'b'"):
        fm.encode({"a": 1.0, "b": value})
    assert fm.columns == {"a": 0, "b": 1}


def test_bools_numpy_and_fractions_keep_their_python_path_values():
    fm = registered("abc")
    vec, _ = fm.encode({"a": True, "b": np.float32(0.5), "c": fractions.Fraction(1, 4)})
    np.testing.assert_array_equal(vec, [1.0, 0.5, 0.25])
