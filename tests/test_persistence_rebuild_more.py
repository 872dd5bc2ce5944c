"""Format 10 beyond KONS: what PROS-N-KONS / CON-KONS, Auto's shared embeddings and KRLS leave
out of a model file and rebuild on load (issue 41, deliverable 4).

A Cholesky factor whose :math:`L` is the model's coordinates (the embedding's, whose
coordinates the ONS heads' points and inverses are in; ALD's, whose coordinates KRLS's weights
are in) stays in the file; its matrix (the kernel over the atoms, with the diagonal the steps
factorized) is rebuilt. Checked against the live model (predictions, then more steps, to 1e-9
of the predictions' scale) and against the kernel matrix built from the raw points.
"""

import numpy as np
import pytest

import okoco
from okoco import persistence
from okoco.learners import CONKONS, KRLS, PROSNKONS, Auto
from okoco.learners import auto as auto_module


def _rows(n, seed, d=10):
    rng = np.random.default_rng(seed)
    return [{f"x{j}": float(v) for j, v in enumerate(rng.normal(size=d))} for _ in range(n)]


def _target(x):
    return float(np.tanh(x["x0"] - 0.5 * x["x1"]))


def _trained(make, n, seed=0):
    model = make()
    for x in _rows(n, seed):
        model.learn_one(x, _target(x))
    return model


def _agree(got, want):
    """Equal to 1e-9 relative to the predictions' scale."""
    got, want = np.asarray(got), np.asarray(want)
    assert np.max(np.abs(got - want)) <= 1e-9 * max(np.max(np.abs(want)), 1e-300)


def _answers_and_learns_as(loaded, model):
    probes = _rows(25, seed=9)
    _agree([loaded.predict_one(x) for x in probes], [model.predict_one(x) for x in probes])
    for x in _rows(5, seed=11):  # more steps, then the predictions again
        loaded.learn_one(x, _target(x))
        model.learn_one(x, _target(x))
        _agree([loaded.predict_one(x) for x in probes], [model.predict_one(x) for x in probes])


def _dense_gram(kernel, store):
    """The kernel over the stored atoms, from the raw points (a reference)."""
    X = np.array(store.view())
    return np.array([[float(kernel(X[i:i + 1], X[j:j + 1])[0, 0]) for j in range(len(X))]
                     for i in range(len(X))])


def _embeddings(model):
    return list(model._embeddings) if isinstance(model, Auto) else [model]


EMBEDDED = {
    "CONKONS": lambda: CONKONS(seed=0),
    "CONKONS-full-40": lambda: CONKONS(seed=0, max_size=40),
    "PROSNKONS": lambda: PROSNKONS(seed=1, max_size=60),
    "Auto": Auto,
}


@pytest.mark.parametrize("name", sorted(EMBEDDED))
def test_an_embedding_is_saved_without_its_matrix_and_rebuilt(name, tmp_path):
    model = _trained(EMBEDDED[name], 400)
    path = model.save(tmp_path / "m.npz")
    loaded = okoco.load(path)
    for live, again in zip(_embeddings(model), _embeddings(loaded)):
        want = _dense_gram(live._kernel, live._store)
        assert again._embed.size == want.shape[0] > 0
        np.testing.assert_allclose(again._embed.matrix(), want, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(again._embed.factor(), live._embed.factor())  # kept
    meta = persistence.read_metadata(path)["state"]
    parts = meta["embeddings"] if name == "Auto" else [{"attrs": meta}]
    for part in parts:
        embedding = part["attrs"]["embedding"]["attrs"]
        assert "matrix" not in embedding and "factor" in embedding
    _answers_and_learns_as(loaded, model)


def test_auto_after_swaps_rebuilds_the_matrix_of_the_atoms_held_now(tmp_path, monkeypatch):
    """Swaps remove atoms from the embedding (its matrix loses their rows): the rebuilt
    matrix is that of the atoms held now."""
    monkeypatch.setattr(auto_module, "DICTIONARY", (1.0, 30, 1.5))  # small, swapping
    model = _trained(lambda: Auto(), 300)
    assert all(e.n_swaps for e in model._embeddings)
    path = model.save(tmp_path / "auto.npz")
    for part in persistence.read_metadata(path)["state"]["embeddings"]:
        assert "matrix" not in part["attrs"]["embedding"]["attrs"]
    loaded = okoco.load(path)
    for live, again in zip(model._embeddings, loaded._embeddings):
        np.testing.assert_allclose(again._embed.matrix(), live._embed.matrix(), rtol=0,
                                   atol=1e-12)
        np.testing.assert_allclose(again._embed.matrix(), _dense_gram(live._kernel, live._store),
                                   rtol=0, atol=1e-12)
    _answers_and_learns_as(loaded, model)


@pytest.mark.parametrize("make", [lambda: KRLS(nu=0.1), lambda: KRLS(nu=0.01, alpha=0.3),
                                  lambda: KRLS(nu=0.05, max_size=40)],
                         ids=["KRLS", "KRLS-alpha", "KRLS-full-40"])
def test_krls_is_saved_without_ald_matrix_and_rebuilt(make, tmp_path):
    """ALD's matrix is G_D + alpha I over the dictionary (the kernel from the raw points plus
    the ridge on the diagonal); its factor, in whose coordinates the weights are, stays."""
    model = _trained(make, 300)
    path = model.save(tmp_path / "krls.npz")
    ald = persistence.read_metadata(path)["state"]["ald"]["attrs"]["cholesky"]["attrs"]
    assert "matrix" not in ald and "factor" in ald
    loaded = okoco.load(path)
    want = _dense_gram(model._kernel, model._store) + model.alpha * np.eye(model._ald.size)
    assert want.shape[0] == loaded._ald.size > 1
    np.testing.assert_allclose(loaded._ald.cholesky.matrix(), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model._ald.cholesky.matrix(), want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(loaded._ald.cholesky.factor(), model._ald.cholesky.factor())
    _answers_and_learns_as(loaded, model)


@pytest.mark.parametrize("make", [lambda: KRLS(), lambda: CONKONS(seed=0), Auto])
def test_an_unfitted_model_round_trips(make, tmp_path):
    """Nothing to rebuild before the first step (no kernel resolved yet)."""
    loaded = okoco.load(make().save(tmp_path / "m.npz"))
    x = _rows(1, seed=3)[0]
    loaded.learn_one(x, 0.5)
    assert np.isfinite(loaded.predict_one(x))
