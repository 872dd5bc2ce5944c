"""Is Auto's shortfall the mixing or the grid? (issue 29)

``Auto()`` mixes five experts (``okoco.learners.auto.EXPERTS``) with the exponentially weighted
mixture of ``okoco.learners._mixture``. Its error on a stream over the best single KONS setting
(the ratio the families are scored by) splits into two factors::

    Auto / best KONS setting = (Auto / its best own expert) x (its best own expert / best setting)
                                 mixing                        grid

The first factor is what the mixture loses to the oracle that picks, in hindsight, the best of
the five it mixes; the second is what the five lose to the best setting of the KONS grid. Both
are measured offline: each expert's predictions are recorded once per stream (the pool of
``bench_families`` and the long-memory expert's record of ``bench_long_memory``, the same
records ``bench_long_memory --part select`` scores ``Auto()`` from), and mixed with Auto's own
arithmetic (:func:`mix_errors` reproduces ``bench_families.mixture_error``, which equals real
replays of ``Auto``).

``--part rules`` then scores aggregation rules other than Auto's on the *training* families only
(the rule is chosen there), and reports the chosen rule on the held-out families and the
defaults table as confirmation. Every rule keeps Auto's guarantee: the guaranteed average and
the slack are Auto's; only the fast average the slack is spent on (``Rule``) changes, and the
guarantee holds for any fast average chosen before the target is seen
(``okoco.learners.auto``'s docstring).

Usage::

    python -m benchmarks.bench_mixing --part decompose   # mixing vs grid, stream by stream
    python -m benchmarks.bench_mixing --part rules       # aggregation rules, training only
    python -m benchmarks.bench_mixing --report           # tables from the results file

Records are read from (or made into) ``bench_families``' pool cache (``OKOCO_POOL_DIR``) and
``bench_long_memory``'s (``OKOCO_LONG_MEMORY_DIR``); results go to
``benchmarks/results/mixing.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from benchmarks import bench_defaults, bench_families
from benchmarks.bench_families import (
    POOL,
    Recorded,
    held_out_families,
    kons_names,
    record_pool,
    training_families,
)
from benchmarks.bench_long_memory import (
    auto_columns,
    candidates,
    in_target_units,
    merge,
    record_auto_experts,
    record_expert,
)
from okoco.learners.auto import DEFAULT_WINDOW, EXPERTS, LONG_MEMORY

RESULTS = Path(__file__).resolve().parent / "results" / "mixing.json"
FAMILIES = bench_families.RESULTS
DEFAULTS = Path(__file__).resolve().parent / "results" / "defaults.json"
#: ``bench_long_memory``'s name of Auto's long-memory expert (``LONG_MEMORY`` over 2.5 x 400).
LONG_NAME = "SKONS(rbf=0.2/d, alpha=0.03, beta=3, W=1000)"
#: Where the long-memory expert sits in ``EXPERTS`` (it replaced the medium KONS, the second).
LONG_AT = EXPERTS.index(LONG_MEMORY)


# -- records: Auto's five, in EXPERTS' order --------------------------------------------------


def _in_auto_order(rec: np.ndarray) -> np.ndarray:
    """A merged record (the four pool KONS, then the long-memory expert) in ``EXPERTS``' order."""
    order = [0, 4, 1, 2, 3]
    assert LONG_AT == 1
    return np.hstack([rec[:, order], rec[:, [5 + j for j in order]], rec[:, 10:]])


def family_records(split: str, n: int, seeds: list[int]) -> dict:
    """stream -> (task, the record of Auto's five experts) on a family split."""
    families = training_families(n, seeds) if split == "training" else held_out_families(n, seeds)
    four = [c for j, c in enumerate(auto_columns()) if j != LONG_AT]
    out = {}
    for s, (task, loader) in families.items():
        pool = record_pool(s, task, loader, n)
        long = record_expert(s, task, loader(n), candidates()[LONG_NAME], LONG_NAME)
        out[s] = (task, _in_auto_order(merge(pool, four, [long])))
    return out


def family_pools(split: str, n: int, seeds: list[int]) -> dict:
    """stream -> the record of ``bench_families``' pool of KONS experts over Auto's window."""
    families = training_families(n, seeds) if split == "training" else held_out_families(n, seeds)
    return {s: record_pool(s, task, loader, n) for s, (task, loader) in families.items()}


def _pool_name(j: int) -> str:
    c, alpha, eta, share = POOL[j]
    step = "" if eta == "hessian" else f", {eta}"
    return f"KONS(rbf={c:g}/d, alpha={alpha:g}{step}, W={int(share * DEFAULT_WINDOW)})"


def defaults_records(n: int = 1000) -> dict:
    """stream -> (task, record of Auto's five) on the defaults table's streams, regression
    inside a ``TargetStandardScaler`` as the table's ``Auto()`` row runs it (errors in the
    targets' units): ``bench_long_memory``'s records of the grid before the long-memory expert
    (``KONS_EXPERTS``) and of that expert, merged as ``EXPERTS`` orders them."""
    four = [j for j in range(5) if j != LONG_AT]
    out = {}
    for s, (task, loader) in bench_defaults.STREAMS.items():
        rows = loader(n)
        mode = "tss" if task == "regression" else "own"
        pool = record_auto_experts(s, task, rows, mode)  # the KONS_EXPERTS grid
        long = record_expert(s, task, rows, candidates()[LONG_NAME], LONG_NAME, mode)
        rec = _in_auto_order(merge(pool, four, [long]))
        if mode == "tss":
            rec = in_target_units(rec, [y for _, y in rows])
        out[s] = (task, rec)
    return out


# -- the mixture, offline, with other fast averages -------------------------------------------


@dataclass(frozen=True)
class Rule:
    """How the fast average weighs the experts (Auto's rule: the defaults).

    ``rate``/``discount``: exponential weights at ``rate`` on losses discounted by ``discount``
    per step (Auto's ``fast_rate``, ``fast_discount``). ``share``: fixed share (Herbster &
    Warmuth 1998) on those weights, each step mixing ``share`` of the uniform weights in (a
    prior on switching between experts). ``adaptive``: AdaHedge's rate (de Rooij et al. 2014),
    ``log N / Delta`` with ``Delta`` the (discounted) sum of the mixability gaps, in place of
    ``rate``. ``leader``: all the weight on the expert of smallest discounted loss.
    ``spend``: the share of the slack a step may spend (1: Auto's, all of it)."""

    rate: float = 1.0
    discount: float = 0.99
    share: float = 0.0
    adaptive: bool = False
    leader: bool = False
    spend: float = 1.0

    @property
    def label(self) -> str:
        if self.leader:
            return f"leader(discount={self.discount:g})"
        parts = ["AdaHedge" if self.adaptive else f"rate={self.rate:g}",
                 f"discount={self.discount:g}"]
        if self.share:
            parts.append(f"share={self.share:g}")
        if self.spend != 1.0:
            parts.append(f"spend={self.spend:g}")
        return ", ".join(parts)


AUTO_RULE = Rule()


class FastWeights:
    """The fast weights of every rule of ``rules`` over ``N`` experts, step by step:
    :meth:`weights` before a step, :meth:`update` with the step's losses (one per expert)."""

    def __init__(self, rules: list[Rule], N: int):
        self.N = N
        self.rate = np.array([r.rate for r in rules])[:, None]
        self.gamma = np.array([r.discount for r in rules])[:, None]
        self.share = np.array([r.share for r in rules])[:, None]
        self.adaptive = np.array([r.adaptive for r in rules])
        self.leader = np.array([r.leader for r in rules])
        B = len(rules)
        self.R = np.zeros((B, N))  # the discounted losses
        self.logw = np.zeros((B, N))  # fixed share's weights' logarithms (up to a constant)
        self.gap = np.zeros(B)  # AdaHedge's (discounted) sum of mixability gaps

    def rates(self) -> np.ndarray:
        """(B, 1): the rule's rate, or AdaHedge's ``log N / Delta`` (infinite while
        ``Delta = 0``: the leaders, evenly)."""
        with np.errstate(divide="ignore"):
            ada = math.log(self.N) / self.gap
        return np.where(self.adaptive, ada, self.rate[:, 0])[:, None]

    def weights(self) -> np.ndarray:
        rel = self.R - self.R.min(1, keepdims=True)
        with np.errstate(invalid="ignore"):  # an infinite rate times 0: the leaders' weight 1
            fast = np.where(rel == 0, 1.0, np.exp(-self.rates() * rel))
        fast = np.where(self.leader[:, None], (rel == 0).astype(float), fast)
        fast = np.where(self.share > 0, np.exp(self.logw - self.logw.max(1, keepdims=True)),
                        fast)
        return fast / fast.sum(1, keepdims=True)

    def update(self, lp: np.ndarray) -> None:
        if self.adaptive.any():  # the step's mixability gap at the rate its weights had
            fast, r = self.weights(), np.minimum(self.rates(), 1e12)
            base = np.where(fast > 0, lp, np.inf).min(1, keepdims=True)  # over the support
            inside = np.exp(-r * np.where(fast > 0, lp - base, 0.0))
            m = base[:, 0] - np.log((fast * inside).sum(1)) / r[:, 0]
            self.gap = self.gamma[:, 0] * self.gap + np.where(
                self.adaptive, np.maximum(fast @ lp - m, 0.0), 0.0)
        self.R = self.gamma * self.R + lp
        if (self.share > 0).any():  # fixed share: discounted weights' update, uniform mixed in
            u = self.gamma * self.logw - self.rate * lp
            w = np.exp(u - u.max(1, keepdims=True))
            with np.errstate(divide="ignore"):  # the rules without a share: not used
                self.logw = np.log((1 - self.share) * w / w.sum(1, keepdims=True)
                                   + self.share / self.N)


def mix_errors(rec: np.ndarray, task: str, rules: list[Rule], C: float = 3.0,
               trace: bool = False):
    """The error (MAE, or 1 - accuracy) of the mixture of every expert of ``rec`` under each
    rule, all rules at once: Auto's guaranteed average, slack and worst-case spending
    (``bench_families.mixture_error``'s arithmetic), with each rule's fast average. With
    ``trace``, also a dict of each rule's mean share ``lambda`` of the way to the fast average,
    its ``regret`` (its loss minus the best expert's, per step: the quantity the mixture's
    guarantee bounds) and the best expert's loss per step."""
    r = Recorded(rec, task, C)
    Q, P = r.Q, r.P
    B, N = len(rules), Q.shape[1]
    spend = np.array([rule.spend for rule in rules])
    fast_weights = FastWeights(rules, N)
    L = np.zeros(N)  # the guaranteed side: the same for every rule (but its own loss A)
    A, err, lam = np.zeros(B), np.zeros(B), np.zeros(B)

    def combine(p, safe, fast, slack):
        s = safe @ p
        f = fast @ p
        share = r.share(s, f, spend * slack)
        return s + share * (f - s), share

    for t in range(P.shape[0]):
        low = L.min()
        safe = np.exp(-r.rate * (L - low))
        ssum = safe.sum()
        slack = np.maximum(low - math.log(ssum / N) / r.rate - A, 0.0)
        safe = safe / ssum
        fast = fast_weights.weights()
        own, share = combine(Q[t], safe, fast, slack)
        lam += share
        err += r.error(t, own)
        lp = r.loss.value(np.full(N, r.ys[t]), P[t])
        A += r.loss.value(np.full(B, r.ys[t]), combine(P[t], safe, fast, slack)[0])
        L = L + lp
        fast_weights.update(lp)
    T = P.shape[0]
    out = err / T
    if not trace:
        return out
    return out, {"lambda": lam / T, "regret": (A - L.min()) / T, "best_loss": L.min() / T}


# -- 1. mixing or grid? -----------------------------------------------------------------------


def _geo(values) -> float:
    return math.exp(statistics.fmean(map(math.log, values)))


def decompose(records: dict, n: int, pools: dict | None = None) -> dict:
    """stream -> Auto's error, each of its experts' alone, the best KONS setting's (the cached
    families table: KONS at its defaults of then, a window of 500) and the two factors
    ``mixing = Auto / best own`` and ``grid = best own / best setting``. With ``pools``
    (:func:`family_pools`), also the best expert of ``bench_families``' pool (61 KONS over
    Auto's window of 400 or a share of it), which splits the grid factor into ``settings =
    best own / best pool expert`` (what Auto's five lack among those settings) and ``window =
    best pool expert / best setting`` (what the window of 400 costs against the reference's)."""
    store = json.loads(FAMILIES.read_text())["results"]
    out = {}
    for s, (task, rec) in records.items():
        k = (rec.shape[1] - 5) // 2
        errors, trace = mix_errors(rec, task, [AUTO_RULE], trace=True)
        auto = float(errors[0])
        alone = bench_families.mixture_error(rec, task, np.arange(k)[:, None]).tolist()
        best_own = min(alone)
        ref = store[f"{s}@{n}"]
        best_name = min(kons_names(), key=lambda name: ref[name][0])
        best = ref[best_name][0]
        out[s] = {"task": task, "auto": auto, "alone": alone, "best_own": best_own,
                  "best_kons": best, "best_kons_name": best_name, "mixing": auto / best_own,
                  "grid": best_own / best, "ratio": auto / best,
                  "regret": float(trace["regret"][0]), "best_loss": float(trace["best_loss"]),
                  "lambda": float(trace["lambda"][0])}
        if pools is not None:
            pool = pools[s]
            m = (pool.shape[1] - 5) // 2
            pooled = bench_families.mixture_error(pool, task, np.arange(m)[:, None])
            j = int(np.argmin(pooled))
            out[s].update(best_pool=float(pooled[j]), best_pool_name=_pool_name(j),
                          settings=best_own / float(pooled[j]), window=float(pooled[j]) / best)
    return out


def decompose_table(rows: dict) -> str:
    names = [f"{e[0]:g}/d, {e[1]:g}, x{e[3]:g}" for e in EXPERTS]
    lines = ["| stream | Auto | its best expert (which) | best KONS setting (which; W=500) | "
             "Auto / best setting | mixing: Auto / best own | grid: best own / best setting | "
             "loss per step: Auto's minus the best expert's (the best's) | mean lambda |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, r in rows.items():
        which = names[int(np.argmin(r["alone"]))]
        lines.append(f"| {s} | {r['auto']:.4g} | {r['best_own']:.4g} ({which}) | "
                     f"{r['best_kons']:.4g} ({r['best_kons_name'][5:-1]}) | {r['ratio']:.3f} | "
                     f"{r['mixing']:.3f} | {r['grid']:.3f} | {r['regret']:+.4f} "
                     f"({r['best_loss']:.4f}) | {r['lambda']:.3f} |")
    ratio = [r["ratio"] for r in rows.values()]
    mixing = [r["mixing"] for r in rows.values()]
    grid = [r["grid"] for r in rows.values()]
    lines.append(f"| geo-mean ({len(rows)} streams) | | | | {_geo(ratio):.3f} | "
                 f"{_geo(mixing):.3f} | {_geo(grid):.3f} |")
    lines.append(f"| median / worst | | | | {statistics.median(ratio):.3f} / {max(ratio):.3f} | "
                 f"{statistics.median(mixing):.3f} / {max(mixing):.3f} | "
                 f"{statistics.median(grid):.3f} / {max(grid):.3f} |")
    lines.append(f"| within 3% | | | | {sum(q <= 1.03 for q in ratio)} | "
                 f"{sum(q <= 1.03 for q in mixing)} | {sum(q <= 1.03 for q in grid)} |")
    if all("settings" in r for r in rows.values()):
        lines += ["", "The grid factor split by the best of the recorded pool (61 KONS over the "
                  "window of 400 or a share of it):", "",
                  "| stream | grid | settings: best own / best pool expert | window: best pool "
                  "expert / best setting (W=500) | best pool expert |", "|---|---:|---:|---:|---|"]
        for s, r in rows.items():
            lines.append(f"| {s} | {r['grid']:.3f} | {r['settings']:.3f} | {r['window']:.3f} | "
                         f"{r['best_pool']:.4g} ({r['best_pool_name']}) |")
        settings = [r["settings"] for r in rows.values()]
        window = [r["window"] for r in rows.values()]
        lines.append(f"| geo-mean | {_geo(grid):.3f} | {_geo(settings):.3f} | {_geo(window):.3f} "
                     "| |")
        lines.append(f"| within 3% | {sum(q <= 1.03 for q in grid)} | "
                     f"{sum(q <= 1.03 for q in settings)} | {sum(q <= 1.03 for q in window)} | |")
    return "\n".join(lines)


# -- 2. other aggregation rules, chosen on the training families -------------------------------


def rule_grid() -> list[Rule]:
    """Auto's rule first, then the alternatives scored: its rate and discount varied, the
    discounted leader, AdaHedge's adaptive rate, fixed share, and half the slack spent."""
    rules = [AUTO_RULE]
    for rate in (0.3, 1.0, 3.0, 10.0):
        for discount in (0.95, 0.98, 0.99, 0.995, 1.0):
            rule = Rule(rate=rate, discount=discount)
            if rule != AUTO_RULE:
                rules.append(rule)
    rules += [Rule(leader=True, discount=d) for d in (0.95, 0.98, 0.99, 0.995)]
    rules += [Rule(adaptive=True, discount=d) for d in (0.98, 0.99, 0.995, 1.0)]
    rules += [Rule(rate=rate, discount=d, share=a) for rate in (1.0, 3.0) for d in (0.99, 1.0)
              for a in (0.001, 0.01, 0.05)]
    rules += [Rule(spend=0.5)]
    return rules


def score_rules(records: dict, rules: list[Rule], n: int | None) -> list[dict]:
    """Each rule's errors on ``records`` and, with ``n`` (families), its ratios to the best
    KONS setting and to ``KONS()`` (the cached families table), scored as
    ``bench_families.selection_score`` scores a grid at one discount: streams within 3% of the
    best setting, minus streams over 2% worse than ``KONS()``, minus 40 x the mean log ratio."""
    mixed = {s: mix_errors(rec, task, rules, trace=True) for s, (task, rec) in records.items()}
    errors = {s: e for s, (e, _) in mixed.items()}
    out = []
    for b, rule in enumerate(rules):
        row = {"rule": rule.label, **asdict(rule),
               "errors": {s: float(e[b]) for s, e in errors.items()},
               "lambda": {s: float(m["lambda"][b]) for s, (_, m) in mixed.items()},
               "regret": {s: float(m["regret"][b]) for s, (_, m) in mixed.items()},
               "best_loss": {s: float(m["best_loss"]) for s, (_, m) in mixed.items()}}
        if n is not None:
            store = json.loads(FAMILIES.read_text())["results"]
            best = np.array([errors[s][b] / min(store[f"{s}@{n}"][k][0] for k in kons_names())
                             for s in records])
            dflt = np.array([errors[s][b] / store[f"{s}@{n}"][bench_families.DEFAULT_KONS][0]
                             for s in records])
            row.update(within_3pct=int((best <= 1.03).sum()), worse_2pct=int((dflt > 1.02).sum()),
                       median=float(np.median(best)), worst=float(best.max()),
                       geo_mean=float(np.exp(np.log(best).mean())),
                       score=float((best <= 1.03).sum() - (dflt > 1.02).sum()
                                   - 40 * np.log(best).mean()))
        out.append(row)
    return out


def rules_table(rows: list[dict], top: int | None = None) -> str:
    lines = ["| rule | score | within 3% | median / worst | geo-mean | > 2% worse than KONS() "
             "| streams better / worse than Auto's rule | mean lambda | loss regret to the best "
             "expert per step (mean; streams with a lower regret than Auto's rule) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ranked = sorted(rows, key=lambda r: -r["score"])
    base = next(r for r in rows if r["rule"] == AUTO_RULE.label)
    for r in ranked[:top] if top else ranked:
        mark = " (Auto's)" if r is base else ""
        lower = sum(r["regret"][s] < base["regret"][s] - 1e-12 for s in r["regret"])
        lines.append(f"| {r['rule']}{mark} | {r['score']:.3f} | {r['within_3pct']}/"
                     f"{len(r['errors'])} | {r['median']:.3f} / {r['worst']:.3f} | "
                     f"{r['geo_mean']:.3f} | {r['worse_2pct']} | "
                     "{} / {} | ".format(*paired(r, base))
                     + f"{statistics.fmean(r['lambda'].values()):.3f} | "
                     f"{statistics.fmean(r['regret'].values()):+.5f} ({lower}) |")
    return "\n".join(lines)


def paired(rows: list[dict], base: dict) -> tuple[int, int]:
    """Streams where a rule's error is below / above ``base``'s (by over 0.1%)."""
    q = [rows["errors"][s] / base["errors"][s] for s in base["errors"]]
    return sum(x < 0.999 for x in q), sum(x > 1.001 for x in q)


def oracle_row(rows: list[dict], n: int) -> dict:
    """The best rule of ``rows`` per stream, in hindsight: what any of them could give."""
    store = json.loads(FAMILIES.read_text())["results"]
    streams = rows[0]["errors"]
    best = [min(r["errors"][s] for r in rows) / min(store[f"{s}@{n}"][k][0]
                                                     for k in kons_names()) for s in streams]
    return {"within_3pct": sum(q <= 1.03 for q in best), "median": statistics.median(best),
            "worst": max(best), "geo_mean": _geo(best)}


def rules_part(n: int, seeds: list[int], held_seeds: list[int]) -> dict:
    """Every rule of :func:`rule_grid` on the training families (the choice: the best score),
    then every rule on the held-out families and the defaults table (reported only)."""
    rules = rule_grid()
    training = score_rules(family_records("training", n, seeds), rules, n)
    held = score_rules(family_records("held-out", n, held_seeds), rules, n)
    dft = score_rules(defaults_records(), rules, None)
    chosen = max(range(len(rules)), key=lambda b: training[b]["score"])
    return {"training": training, "held-out": held, "defaults": dft,
            "chosen": training[chosen]["rule"], "oracle": oracle_row(training, n),
            "oracle_held_out": oracle_row(held, n), "load": os.getloadavg()}


def confirmation_table(part: dict) -> str:
    """Auto's rule and the rule chosen on training, side by side on the three sets."""
    unbounded = json.loads(DEFAULTS.read_text())["results"]["Auto(max_size=None)"]
    labels = [AUTO_RULE.label] + ([part["chosen"]] if part["chosen"] != AUTO_RULE.label else [])
    lines = ["| rule | training: score / within 3% / median / worst / geo-mean | streams better "
             "/ worse than Auto's rule (training) | held-out: score / within 3% / median / "
             "worst / geo-mean | streams better / worse (held-out) | defaults: within 2% of "
             "Auto(max_size=None) | defaults: ratios |", "|---|---|---:|---|---:|---:|---|"]
    index = {r["rule"]: b for b, r in enumerate(part["training"])}
    for label in labels:
        b = index[label]
        t, h, d = part["training"][b], part["held-out"][b], part["defaults"][b]
        cells = []
        for row, base in ((t, part["training"][0]), (h, part["held-out"][0])):
            cells += [f"{row['score']:.2f} / {row['within_3pct']}/{len(row['errors'])} / "
                      f"{row['median']:.3f} / {row['worst']:.3f} / {row['geo_mean']:.3f}",
                      "{} / {}".format(*paired(row, base))]
        q = {s: e / unbounded[s][0] for s, e in d["errors"].items()}
        cells += [f"{sum(v <= 1.02 for v in q.values())}/{len(q)}",
                  ", ".join(f"{s} {v:.3f}" for s, v in q.items())]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(results: dict) -> str:
    parts = []
    for split, title in (("training", "Training families"), ("held-out", "Held-out families")):
        if split in results.get("decompose", {}):
            parts += [f"## {title}: mixing or grid?", "",
                      decompose_table(results["decompose"][split]), ""]
    if "defaults" in results.get("decompose", {}):
        parts += ["## Defaults table (regression in a TargetStandardScaler): Auto over its "
                  "best own expert and over Auto(max_size=None)", "",
                  defaults_decompose_table(results["decompose"]["defaults"]), ""]
    if "rules" in results:
        r = results["rules"]
        o, oh = r["oracle"], r["oracle_held_out"]
        parts += ["## Aggregation rules on the training families (ranked by score; the choice "
                  "is made here)", "", rules_table(r["training"]), "",
                  f"The best rule per stream in hindsight (an oracle over the {len(r['training'])}"
                  f" rules): training {o['within_3pct']}/20 within 3%, median / worst "
                  f"{o['median']:.3f} / {o['worst']:.3f}, geo-mean {o['geo_mean']:.3f}; held-out "
                  f"{oh['within_3pct']}/12, {oh['median']:.3f} / {oh['worst']:.3f}, geo-mean "
                  f"{oh['geo_mean']:.3f}.", "",
                  f"## The rule chosen on training ({r['chosen']}) against Auto's, confirmed "
                  "on the held-out families and the defaults table", "",
                  confirmation_table(r), ""]
    return "\n".join(parts)


def defaults_decompose(records: dict) -> dict:
    unbounded = json.loads(DEFAULTS.read_text())["results"]["Auto(max_size=None)"]
    out = {}
    for s, (task, rec) in records.items():
        k = (rec.shape[1] - 5) // 2
        auto = float(mix_errors(rec, task, [AUTO_RULE])[0])
        alone = bench_families.mixture_error(rec, task, np.arange(k)[:, None]).tolist()
        out[s] = {"task": task, "auto": auto, "alone": alone, "best_own": min(alone),
                  "unbounded": unbounded[s][0], "mixing": auto / min(alone),
                  "to_unbounded": auto / unbounded[s][0],
                  "best_own_to_unbounded": min(alone) / unbounded[s][0]}
    return out


def defaults_decompose_table(rows: dict) -> str:
    lines = ["| stream | Auto() | its best expert | Auto(max_size=None) | Auto() / "
             "Auto(max_size=None) | mixing: Auto() / best own | best own / Auto(max_size=None) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for s, r in rows.items():
        lines.append(f"| {s} | {r['auto']:.4g} | {r['best_own']:.4g} | {r['unbounded']:.4g} | "
                     f"{r['to_unbounded']:.3f} | {r['mixing']:.3f} | "
                     f"{r['best_own_to_unbounded']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("decompose", "rules", "all"), default="all")
    parser.add_argument("--n", type=int, default=1500, help="samples per family stream")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--held-seeds", default="0")
    parser.add_argument("--report", action="store_true", help="only print the tables")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = json.loads(args.output.read_text()) if args.output.exists() else {}
    if not args.report:
        seeds = [int(s) for s in args.seeds.split(",") if s]
        held = [int(s) for s in args.held_seeds.split(",") if s]
        if args.part in ("decompose", "all"):
            results["decompose"] = {
                "training": decompose(family_records("training", args.n, seeds), args.n,
                                      family_pools("training", args.n, seeds)),
                "held-out": decompose(family_records("held-out", args.n, held), args.n,
                                      family_pools("held-out", args.n, held)),
                "defaults": defaults_decompose(defaults_records())}
        if args.part in ("rules", "all"):
            results["rules"] = rules_part(args.n, seeds, held)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=0))
    text = report(results)
    print(text)
    return text


if __name__ == "__main__":
    main()
