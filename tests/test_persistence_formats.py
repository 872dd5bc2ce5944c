"""Files of older okoco file formats load and predict as the models that wrote them did.

The files are in ``tests/data/format-v3`` and ``tests/data/format-v4``, written by
``tests/data/make_format_files.py`` with the okoco of each format (its docstring names the
commits); ``expected.json`` beside them holds what each saved model predicted at three probes,
before and after one more learning step.
"""

import json
import os

import numpy as np
import pytest

import okoco
from okoco import kernels, persistence

DATA = os.path.join(os.path.dirname(__file__), "data")


def _files(version: int) -> list[tuple[int, str]]:
    folder = os.path.join(DATA, f"format-v{version}")
    return [(version, name[:-4]) for name in sorted(os.listdir(folder)) if name.endswith(".npz")]


CASES = _files(3) + _files(4)


def _label(name: str, y: float):
    if name == "binary":
        return "yes" if y > 0 else "no"
    if name == "multiclass":
        return "lo" if y < -0.3 else ("mid" if y < 0.3 else "hi")
    return y


def _predictions(name: str, model, probes: list) -> list:
    if name == "binary":
        return [model.learner.predict_one(x) for x in probes]
    if name == "multiclass":
        return [model.predict_proba_one(x) for x in probes]
    return [model.predict_one(x) for x in probes]


def _close(got: list, want: list) -> None:
    if want and isinstance(want[0], dict):  # class probabilities
        assert [sorted(g) for g in got] == [sorted(w) for w in want]
        got = [g[k] for g in got for k in sorted(g)]
        want = [w[k] for w in want for k in sorted(w)]
    # 1e-12: a loaded model's kernel rows may be computed on another code path than the saving
    # okoco's (cached norms, the compiled core), rounding differently
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("version", "name"), CASES, ids=[f"v{v}-{n}" for v, n in CASES])
def test_older_files_load_and_predict_as_saved(version, name, tmp_path):
    folder = os.path.join(DATA, f"format-v{version}")
    with open(os.path.join(folder, "expected.json")) as f:
        reference = json.load(f)
    path = os.path.join(folder, f"{name}.npz")
    assert persistence.read_metadata(path)["format_version"] == version
    model = okoco.load(path)
    probes = reference["probes"]
    _close(_predictions(name, model, probes), reference["expected"][name])
    # and it saves in today's format, which loads to the same model
    again = okoco.load(model.save(tmp_path / "again.npz"))
    assert persistence.read_metadata(tmp_path / "again.npz")["format_version"] == \
        persistence.FORMAT_VERSION
    assert _predictions(name, again, probes) == _predictions(name, model, probes)
    for m in (model, again):
        m.learn_one({"a": 0.1, "d": 0.5}, _label(name, 0.3))
        _close(_predictions(name, m, probes), reference["expected"][name + "+step"])


def test_krls_state_with_beta_and_p_is_migrated_to_w_and_m():
    """A KRLS saved before w and M (state ``_beta = G alpha~``, ``_P = (A^T A)^{-1}``) is
    rebuilt into the current layout by the migrations and predicts as the model it came from:
    checked against ``w = L^{-1} beta`` and ``M = L^{-1} P L^{-T}`` built here densely."""
    from okoco.learners import KRLS
    from okoco.linalg import PackedSymmetric
    from okoco.persistence import _migrations

    rng = np.random.default_rng(4)
    model = KRLS(kernel=kernels.RBF(gamma=0.7), nu=0.01, alpha=1e-3)
    rows = [{"x": float(v)} for v in rng.uniform(-3, 3, 200)]
    for x in rows:
        model.learn_one(x, float(np.sinc(x["x"])))
    L = model._ald.cholesky.factor()
    m = model.dictionary_size
    state = dict(vars(model))
    w, M = state.pop("_w"), state.pop("_M")
    state["_beta"] = np.concatenate([L @ w[:m], np.zeros(3)])  # the old layout, densely
    state["_P"] = PackedSymmetric.from_matrix(L @ M.matrix() @ L.T)
    del state["noise_scale_sum"]  # and from before the predictive variance
    upgraded = _migrations._migrate_state(KRLS, state)
    assert set(upgraded) == set(vars(model))
    np.testing.assert_allclose(upgraded["_w"][:m], np.linalg.solve(L, L @ w[:m]), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(upgraded["_M"].matrix(), M.matrix(), rtol=1e-9, atol=1e-12)
    assert upgraded["noise_scale_sum"] == float(model.n_seen)
    old = KRLS.__new__(KRLS)
    old.__dict__.update(upgraded)
    for x in rows[:20]:
        assert old.predict_one(x) == pytest.approx(model.predict_one(x), abs=1e-10)
