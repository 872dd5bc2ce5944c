"""Format 10 beyond KONS: what PROS-N-KONS / CON-KONS, Auto's shared embeddings and KRLS leave
out of a model file and rebuild on load (issue 41, deliverable 4).

A Cholesky factor whose :math:`L` is the model's coordinates (the embedding's, whose
coordinates the ONS heads' points and inverses are in; ALD's, whose coordinates KRLS's weights
are in) stays in the file; its matrix (the kernel over the atoms, with the diagonal the steps
factorized) is rebuilt. Checked against the live model (predictions, then more steps, to 1e-9
of the predictions' scale) and against the kernel matrix built from the raw points.
"""

import json

import numpy as np
import pytest

import okoco
from okoco import persistence
from okoco.learners import CONKONS, KONS, KRLS, PROSNKONS, Auto, MulticlassClassifier
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


def _kors_parts(meta, name):
    parts = meta["embeddings"] if name == "Auto" else [{"attrs": meta}]
    return [part["attrs"]["kors"]["attrs"]["cholesky"]["attrs"] for part in parts]


@pytest.mark.parametrize("name", sorted(EMBEDDED))
def test_kors_factor_and_matrix_are_rebuilt_while_its_atoms_are_the_stores(name, tmp_path):
    """KORS's atoms are the store's (none leaves before a swap), so its S K S + gamma I (S^2
    its weights, the diagonal w_j k(x_j, x_j) + gamma) and its factor are rebuilt."""
    model = _trained(EMBEDDED[name], 400)
    path = model.save(tmp_path / "m.npz")
    for kors in _kors_parts(persistence.read_metadata(path)["state"], name):
        assert "matrix" not in kors and "factor" not in kors
    loaded = okoco.load(path)
    for live_part, again_part in zip(_embeddings(model), _embeddings(loaded)):
        live, again = live_part._kors, again_part._kors
        s = np.sqrt(live.weights)
        X = live_part._store.view()
        want = s[:, None] * _dense_gram(live_part._kernel, live_part._store) * s[None, :] \
            + live.alpha * np.eye(live.size)
        np.testing.assert_allclose(want.diagonal(),
                                   s * s * live_part._kernel.diag(X) + live.alpha)
        scale = np.abs(want).max()
        for chol in (live.cholesky, again.cholesky):
            np.testing.assert_allclose(chol.matrix(), want, rtol=0, atol=1e-12 * scale)
        L = again.cholesky.factor()
        np.testing.assert_allclose(L @ L.T, want, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(L, live.cholesky.factor(), rtol=0, atol=1e-9)
    _answers_and_learns_as(loaded, model)


def test_auto_after_swaps_rebuilds_the_matrix_of_the_atoms_held_now(tmp_path, monkeypatch):
    """Swaps remove atoms from the embedding (its matrix loses their rows): the rebuilt
    matrix is that of the atoms held now."""
    monkeypatch.setattr(auto_module, "DICTIONARY", (1.0, 30, 1.1, "residual"))  # small, swapping
    model = _trained(lambda: Auto(), 300)
    assert all(e.n_swaps for e in model._embeddings)
    path = model.save(tmp_path / "auto.npz")
    for part in persistence.read_metadata(path)["state"]["embeddings"]:
        assert "matrix" not in part["attrs"]["embedding"]["attrs"]
        kors = part["attrs"]["kors"]["attrs"]["cholesky"]["attrs"]  # no longer the store's
        assert "matrix" in kors and "factor" in kors
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


# -- multiclass: one shared window inverse ------------------------------------------------------


def _labelled(n, seed):
    rows = _rows(n, seed, d=4)
    return [(x, int(x["x0"] > 0) + int(x["x1"] > 0.5)) for x in rows]


def _shared_parts(model):
    shared = model._shared
    return list(shared.experts) if hasattr(shared, "experts") else [shared]


@pytest.mark.parametrize("make", [lambda: MulticlassClassifier(KONS(max_size=40)),
                                  lambda: MulticlassClassifier(KONS(max_size=None)),
                                  lambda: MulticlassClassifier(Auto(max_size=30))],
                         ids=["KONS-window-40", "KONS-unbounded", "Auto"])
def test_a_multiclass_file_holds_no_shared_inverse_and_rebuilds_it(make, tmp_path):
    """SharedSquaredKONS's inverse is (2 K_W + alpha I)^{-1} over the points held now: left
    out of the file, rebuilt equal to np.linalg.inv of that matrix from the raw points, and
    the loaded classifier scores and learns as the live one."""
    model = make()
    for x, label in _labelled(120, seed=1):
        model.learn_one(x, label)
    path = model.save(tmp_path / "mc.npz")
    text = json.dumps(persistence.read_metadata(path)["state"])
    assert '"SlotInverse"' in text and '"P"' not in text and '"pending' not in text
    loaded = okoco.load(path)
    for live, again in zip(_shared_parts(model), _shared_parts(loaded)):
        inverse = live.inverse
        slots = np.flatnonzero(inverse.diagonal)  # the atoms' (own) slots; compact: mapped
        slots = slots if inverse._outer is None else np.sort(inverse._outer[slots])
        assert slots.size == inverse.size > 0
        X = live.points.data[slots, : live.points.d]
        dense = np.linalg.inv(2.0 * np.asarray(live.kernel(X, X))
                              + live.alpha * np.eye(slots.size))
        for m in (live, again):
            np.testing.assert_allclose(m.inverse.inverse()[np.ix_(slots, slots)], dense,
                                       rtol=1e-9, atol=1e-9 * np.abs(dense).max())
    probes = [x for x, _ in _labelled(20, seed=2)]

    def scores(m):
        return [[p.get(c, 0.0) for c in range(3)] for p in map(m.predict_proba_one, probes)]

    _agree(scores(loaded), scores(model))
    for x, label in _labelled(5, seed=3):
        loaded.learn_one(x, label)
        model.learn_one(x, label)
        _agree(scores(loaded), scores(model))
