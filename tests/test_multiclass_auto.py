"""MulticlassClassifier(Auto()): one mixture of multiclass KONS experts, classes sharing each
expert's preconditioner (okoco.learners._multiclass_auto)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from river import checks

import okoco
from okoco import kernels, losses
from okoco.learners import KONS, Auto, MulticlassClassifier
from okoco.learners.auto import KONS_EXPERTS


def rows(n: int, seed: int = 0, classes=("a", "b", "c", "d")):
    """Gaussian blobs in 2-D, the label of each row drawn uniformly; the first five rows are
    "a" and the last class joins after row 25 (its rows are "b" before), once the short
    windows have wrapped."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.5, size=(len(classes), 2))
    drawn = rng.integers(len(classes), size=n)
    X = centres[drawn] + rng.normal(size=(n, 2))
    labels = [classes[0] if i < 5 else classes[1] if k == len(classes) - 1 and i < 25
              else classes[k] for i, k in enumerate(drawn.tolist())]
    return [({"u": u, "v": v}, label) for (u, v), label in zip(X.tolist(), labels)]


def grid(d: int, window: int | None) -> list[dict]:
    """Auto's experts, from its documented grid: RBF(c/d), ridge alpha, the newest ``share``
    of the window (at least 2 points; with no window only the experts of share 1)."""
    out = []
    for c, alpha, eta, share in KONS_EXPERTS:
        if window is None and share < 1:
            continue
        out.append({"gamma": c * (1.0 / d), "alpha": alpha, "eta": eta,
                    "max_size": window if window is None or share >= 1
                    else max(2, int(share * window))})
    return out


def worst_excess(fast: np.ndarray, safe: np.ndarray) -> float:
    """max over the targets that can come (each class's code, or all -1 for a new class) of
    the summed squared loss of ``fast`` minus that of ``safe``, by enumeration."""
    K = fast.shape[0]
    targets = [-np.ones(K)] + [np.where(np.arange(K) == k, 1.0, -1.0) for k in range(K)]
    return max(float(((fast - y) ** 2).sum() - ((safe - y) ** 2).sum()) for y in targets)


@pytest.mark.parametrize("window, C", [(12, 3.0), (12, 0.8), (None, 1.0)])
def test_experts_are_standalone_kons_per_class_and_the_mixture_is_auto_by_hand(window, C):
    # Independent reference: for each expert of Auto's grid and each class, a standalone KONS
    # (squared loss, curvature step) fed +1/-1 from the class's first sample and 0 before it;
    # the mixture recomputed from their clipped scores: exponential weights at rate
    # eta / K (eta = 1 / (2 (C + 1)^2), K the classes seen so far) on the summed class losses,
    # weights at fast_rate / K on the discounted ones, and the largest share of the way to the fast
    # average whose worst case (enumerated) the slack Phi - A affords.
    data = rows(60, seed=1)
    auto = Auto(C=C, max_size=window)
    model = MulticlassClassifier(auto)
    assert model.shares_preconditioner and model.learners == []
    specs = grid(2, window)
    alone = [{c: KONS(kernel=kernels.RBF(s["gamma"]), loss=losses.Squared(), C=C,
                      alpha=s["alpha"], eta=s["eta"], max_size=s["max_size"]) for c in "abcd"}
             for s in specs]
    N, eta = len(specs), 1.0 / (2.0 * (C + 1.0) ** 2)
    L, R, A = np.zeros(N), np.zeros(N), 0.0
    seen: list = []
    shares, clipped = [], 0
    for x, y in data:
        K = len(seen)
        preds = [np.array([expert[c].predict_one(x) for c in seen]) for expert in alone]
        clipped += sum(int(np.any(np.abs(p) == C)) for p in preds)
        rate = eta / max(K, 1)
        safe_w = np.exp(-rate * (L - L.min()))
        safe_w /= safe_w.sum()
        fast_w = np.exp(-auto.fast_rate / max(K, 1) * (R - R.min()))
        fast_w /= fast_w.sum()
        phi = L.min() - math.log(np.mean(np.exp(-rate * (L - L.min())))) / rate
        safe = sum(w * p for w, p in zip(safe_w, preds))
        fast = sum(w * p for w, p in zip(fast_w, preds))
        slack, worst = max(phi - A, 0.0), worst_excess(fast, safe) if K else 0.0
        share = 1.0 if worst <= slack else slack / worst
        own = safe + share * (fast - safe)
        if K and model._shared.experts:
            shares.append(share)
            np.testing.assert_allclose(model._scores(x), own, rtol=0, atol=1e-8)
            np.testing.assert_allclose(model._shared.weights, safe_w, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(model._shared.fast_weights, fast_w, rtol=1e-9,
                                       atol=1e-12)
            for mine, p in zip(model._shared.experts, preds):
                np.testing.assert_allclose(mine.scores(model._features.encode(
                    x, arrays=False)[0]), p, rtol=0, atol=1e-8)
            p = np.clip((1.0 + own) / 2.0, 0.0, 1.0)
            proba = model.predict_proba_one(x)
            np.testing.assert_allclose(list(proba.values()), p / p.sum(), rtol=0, atol=1e-8)
            assert model.predict_one(x) == seen[int(np.argmax(own))]
        if y not in seen:
            seen.append(y)
        codes = np.array([1.0 if c == y else -1.0 for c in seen])
        padded = [np.append(p, 0.0) if len(p) < len(seen) else p for p in preds]
        losses_t = np.array([((p - codes) ** 2).sum() for p in padded])
        L, R = L + losses_t, auto.fast_discount * R + losses_t
        own = np.append(own, 0.0) if len(own) < len(seen) else own
        A += float(((own - codes) ** 2).sum())
        for expert in alone:
            for c, m in expert.items():
                m.learn_one(x, (1.0 if c == y else -1.0) if c in seen else 0.0)
        model.learn_one(x, y)
        assert model._shared.cumulative_loss == pytest.approx(A, rel=1e-9)
        np.testing.assert_allclose(model._shared.cumulative_losses, L, rtol=1e-9)
    assert model.classes == seen == ["a", "b", "c", "d"]
    assert any(s < 1.0 for s in shares) and any(s == 1.0 for s in shares)
    if C < 3:  # the projection (each class's own, in each expert) was exercised
        assert clipped > 10
    # the guarantee: the summed class losses within K log N / eta of the best expert's
    assert A <= L.min() + len(seen) * math.log(N) / eta
    assert model.dictionary_size == (60 if window is None else window)


def test_which_auto_shares_and_what_it_shares():
    assert MulticlassClassifier(Auto()).shares_preconditioner
    assert MulticlassClassifier(Auto(max_size=None)).shares_preconditioner
    for other in (Auto(loss=losses.Logistic()), Auto(loss=losses.SquaredHinge())):
        model = MulticlassClassifier(other)
        assert not model.shares_preconditioner and model._shared is None
    model = MulticlassClassifier(Auto(max_size=20))
    for x, y in rows(50, seed=2):
        model.learn_one(x, y)
    shared = model._shared
    experts = shared.experts
    # one ring of points for every expert, one kernel object per RBF scale
    assert len({id(e.points.points) for e in experts}) == 1
    assert experts[0].points.points is shared._points
    assert experts[0].kernel is experts[3].kernel
    assert [e.dictionary_size for e in experts] == [20, 20, 20, 10, 4]
    assert [e.n_classes for e in experts] == [4] * 5
    assert shared.rate == pytest.approx(1 / (2 * 4.0**2) / 4)
    best = experts[int(np.argmin(shared.cumulative_losses))]  # as Auto: the leader's window
    assert model.dictionary_size == best.dictionary_size
    assert shared.leader == (f"KONS(kernel={best.kernel!r}, alpha={best.alpha:g}, "
                             f"eta='hessian', max_size={best.max_size})")


def test_river_check_estimator():
    checks.check_estimator(MulticlassClassifier(Auto(max_size=8)))


def test_refused_step_changes_nothing():
    model = MulticlassClassifier(Auto(max_size=6))
    data = rows(12, seed=3)
    for x, y in data:
        model.learn_one(x, y)
    shared = model._shared
    before = (list(model.classes), model.n_seen, shared.cumulative_losses.copy(),
              [e.coef.copy() for e in shared.experts], shared._points.rows.n_added)
    scores = model._scores(data[0][0])
    for label in ("a", "new class"):
        with pytest.raises(ValueError):
            model.learn_one({"u": 1e200, "v": math.inf}, label)
    assert before[:2] == (model.classes, model.n_seen)
    assert np.array_equal(before[2], shared.cumulative_losses)
    assert all(np.array_equal(a, e.coef) for a, e in zip(before[3], shared.experts))
    assert before[4] == shared._points.rows.n_added
    assert np.array_equal(model._scores(data[0][0]), scores)


@pytest.mark.parametrize("window", [7, None])
def test_save_load_round_trip_continues_identically(window, tmp_path):
    data = rows(40, seed=4)
    model = MulticlassClassifier(Auto(max_size=window))
    for x, y in data[:22]:
        model.learn_one(x, y)
    loaded = okoco.load(model.save(tmp_path / "mc-auto.npz"))
    assert type(loaded._shared) is type(model._shared) and loaded.shares_preconditioner
    assert loaded.classes == model.classes
    for x, y in data[22:]:  # the same model to rounding (its inverses rebuilt on load)
        got, want = loaded.predict_proba_one(x), model.predict_proba_one(x)
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[c] for c in want], list(want.values()), rtol=0,
                                   atol=1e-9)
        model.learn_one(x, y)
        loaded.learn_one(x, y)
    np.testing.assert_allclose(loaded._shared.weights, model._shared.weights, rtol=1e-9)
    assert loaded._shared.slack == pytest.approx(model._shared.slack, rel=1e-9, abs=1e-12)
    # a model that has learned nothing yet (no experts) saves and learns as a new one
    fresh = okoco.load(MulticlassClassifier(Auto(max_size=window)).save(tmp_path / "new.npz"))
    again = MulticlassClassifier(Auto(max_size=window))
    for x, y in data[:10]:
        fresh.learn_one(x, y)
        again.learn_one(x, y)
    assert fresh.predict_proba_one(data[11][0]) == again.predict_proba_one(data[11][0])


def test_cli_default_on_a_multiclass_csv_is_the_shared_auto(tmp_path):
    from typer.testing import CliRunner

    from okoco.cli import app

    text = "a,b,kind\n" + "".join(f"{i % 7},{i % 5},{('cat', 'dog', 'bird')[i % 3]}\n"
                                  for i in range(60))
    path = tmp_path / "three.csv"
    path.write_text(text)
    runner = CliRunner()
    result = runner.invoke(app, ["replay", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["task"] == "multiclass" and summary["n_samples"] == 60
    result = runner.invoke(app, ["replay", str(path)])
    assert "learner     auto (MulticlassClassifier(Auto()))" in result.stdout
    assert "leader      KONS(kernel=RBF(" in result.stdout  # the one mixture's leading expert
    rows_ = {r["name"]: r for r in json.loads(runner.invoke(app, ["learners", "--json"]).stdout)}
    assert rows_["auto"]["runs"]["multiclass"] == "MulticlassClassifier(Auto())"
    # and the model it names is the shared form, as in Python
    from okoco.experiment import build_model

    _, learner = build_model("auto", "multiclass", loss=None, kernel=None, C=3.0, params={},
                             seed=0, scale=True, scale_target=True)
    assert learner.shares_preconditioner and type(learner.learner) is Auto


def test_same_stream_same_scores_in_any_grouping_of_steps():
    # learn_many is learn_one in order: the shared form has no hidden batch state
    data = rows(30, seed=5)
    one, many = MulticlassClassifier(Auto(max_size=10)), MulticlassClassifier(Auto(max_size=10))
    for x, y in data:
        one.learn_one(x, y)
    many.learn_many([x for x, _ in data], [y for _, y in data])
    for x, _ in itertools.islice(data, 5):
        assert one.predict_proba_one(x) == many.predict_proba_one(x)
