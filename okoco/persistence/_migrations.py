"""Every migration of an older okoco file format, in one place.

Format history (what each version changed, and where it is migrated here):

- 1 (okoco 0.1.0): the input classes lived in ``okoco.learners.features`` and the probability
  floor and ridges had other names: :func:`_upgrade_v1` rewrites the metadata tree.
- 2: ALD keeps its last solve's vectors and PackedSymmetric has a dense layout
  (:func:`_ald_before_2`, :func:`_packed_before_2`).
- 3: KRLS's state in the ALD factor's coordinates (``w``, ``M`` instead of ``beta``, ``P``:
  :func:`_krls_before_3`); the windowed KONS and Auto's target scaling came after it
  (:func:`_kons_unbounded`, :func:`_auto_unscaled`).
- 4: every saved class declares its state; files before 4 also hold the caches.
- 5: fields are named by stable public names (``as FIELD`` in ``_saved_state``), not by the
  private attributes that hold them. Every file before 5 names each field by its attribute,
  which :func:`legacy_state` maps: the only place that knows the old names.
- 6: :class:`~okoco.linalg.SlotInverse` (the window's inverse) holds ``P``'s lower triangle and
  ``M``'s strict upper one in one array, ``M``'s diagonal apart (:func:`_slot_inverse_before_6`
  rebuilds it from a file's whole ``P`` and ``M``, by attribute or public name), and
  KORS may keep its matrix by that inverse (``inverse``, ``slots``: Sketched-KONS's window),
  a short window over a longer ring keeps it over slots of its own (``atoms``, ``outer``), and
  ``MulticlassClassifier`` may hold one ``SharedSquaredKONS`` for all its classes (``shared``).
  Otherwise a version-5 file needs no migration: its KORS has a factor, and its classes are
  learners of their own.
- 7: two ``SlotInverse`` over the same slots may share one array (``keeps_m`` false, and
  ``upper`` for the second: Sketched-KONS's window and its KORS, which then keep no ``M``), and
  ``MulticlassClassifier`` may hold one ``SharedSquaredAuto`` (``MulticlassClassifier(Auto())``:
  ``Auto``'s mixture over ``SharedSquaredKONS`` experts whose ``points`` are ``ExpertRows`` of
  one ring). A version-6 file needs no migration: its inverses keep their ``M`` (the fields'
  defaults), and a Sketched-KONS loaded from it goes on with two arrays.
- 8: ``Auto``'s experts may be Sketched-KONS (its long-memory expert), over a ring longer than
  its KONS experts' windows. A version-7 file needs no migration: its ``Auto`` goes on with the
  experts and the ring it saved.
- 9: a :class:`~okoco.linalg.SlotInverse` keeps its latest rank-one changes pending
  (``pending``, ``pending_terms``: applied 16 at a time). A version-8 file needs no migration:
  its inverses hold every change (none pending, the fields' defaults).
- 10: a file holds the model, not its buffers, and names classes by stable names. The fields
  declared ``rebuilt`` (a window's inverse ``P`` and its pending terms, the unbounded KONS's
  Cholesky factor, an embedding's or ALD's matrix, KORS's factor and matrix) are left out
  when their owner rebuilds them on load (``_rebuild``: from the points, coefficients and
  weights of the model), and a class is named by the name it was
  registered with (``"KONS"``), not by its module path (:data:`LEGACY_CLASS_PATHS` maps the
  paths of the files before 10: :func:`stable_class_name`). A version-9 file needs no other
  migration: its rebuilt fields are there, and are used as saved (an optional cache).
- 11: a registered loss is saved with its parameters (``"params"`` beside its name, when it has
  any: a user's ``Huber(delta=2.0)``), rebuilt by ``cls(**params)``; a reader of 10 would have
  dropped them. A version-10 file needs no migration: its losses have no parameters.
- 12: an ``Auto``'s dictionary head may switch to first-order steps once its dictionary is
  full (``DictionaryExpert.full_alpha``); a reader of 11 would drop the field and keep the ONS
  after the fill. A version-11 file needs no migration: its heads have none (the ONS
  throughout, as they were saved).
- 13: an ONS head without curvature (``eta`` 0: ``Auto``'s drift heads and constant-step linear
  head, its sharp head once switched) holds :math:`A^{-1} = I/\alpha` as a
  ``ScaledIdentity`` (``size``, ``scale``), not as a matrix; a reader of 12 would not know the
  class. A version-12 file needs no migration: on load its ``eta`` 0 heads take the scalar form
  (``okoco.learners.ons._Expert._rebuild``), bit for bit the same steps.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from okoco._input import reserve
from okoco.persistence._format import _short
from okoco.persistence._registry import _key
from okoco.persistence._schema import _plausible

#: The class paths files before format 10 name classes by, and the stable names the classes
#: are registered under (frozen: the paths those files hold, wherever the classes live now).
LEGACY_CLASS_PATHS: dict[str, str] = {
    "okoco._input.FeatureMap": "FeatureMap",
    "okoco._input.Rows": "Rows",
    "okoco.dictionary.ald.ALD": "ALD",
    "okoco.dictionary.ink.INKEstimate": "INKEstimate",
    "okoco.dictionary.kors.KORS": "KORS",
    "okoco.dictionary.nystrom.NystromKRR": "NystromKRR",
    "okoco.dictionary.squeak.SQUEAK": "SQUEAK",
    "okoco.intervals.AdaptiveConformal": "AdaptiveConformal",
    "okoco.learners._multiclass_auto.SharedSquaredAuto": "SharedSquaredAuto",
    "okoco.learners._multiclass_shared.SharedSquaredKONS": "SharedSquaredKONS",
    "okoco.learners.auto.Auto": "Auto",
    "okoco.learners.auto.ExpertRows": "ExpertRows",
    "okoco.learners.auto.SharedPoints": "SharedPoints",
    "okoco.learners.base.StepSize": "StepSize",
    "okoco.learners.binary.BinaryClassifier": "BinaryClassifier",
    "okoco.learners.embedding.SharedEmbedding": "SharedEmbedding",
    "okoco.learners.fgd.FunctionalGD": "FunctionalGD",
    "okoco.learners.kons.KONS": "KONS",
    "okoco.learners.kons.SketchedKONS": "SketchedKONS",
    "okoco.learners.krls.KRLS": "KRLS",
    "okoco.learners.multiclass.MulticlassClassifier": "MulticlassClassifier",
    "okoco.learners.ons.DictionaryExpert": "DictionaryExpert",
    "okoco.learners.ons.LinearExpert": "LinearExpert",
    "okoco.learners.pros.CONKONS": "CONKONS",
    "okoco.learners.pros.PROSNKONS": "PROSNKONS",
    "okoco.linalg.IncrementalCholesky": "IncrementalCholesky",
    "okoco.linalg.PackedSymmetric": "PackedSymmetric",
    "okoco.linalg.SlotInverse": "SlotInverse",
    "okoco.metrics.Accuracy": "Accuracy",
    "okoco.metrics.F1": "F1",
    "okoco.metrics.LogLoss": "LogLoss",
    "okoco.metrics.MAE": "MAE",
    "okoco.metrics.MSE": "MSE",
    "okoco.metrics.R2": "R2",
    "okoco.metrics.RMSE": "RMSE",
    "okoco.preprocessing.StandardScaler": "StandardScaler",
    "okoco.regret.comparators.BestConstant": "BestConstant",
    "okoco.regret.comparators.ClippedKernelERM": "ClippedKernelERM",
    "okoco.regret.comparators.KernelERM": "KernelERM",
    "okoco.regret.comparators.KernelRidge": "KernelRidge",
    "okoco.regret.comparators.NystromKernelERM": "NystromKernelERM",
    "okoco.regret.tracker.RegretTracker": "RegretTracker",
}


def stable_class_name(name: str, version: int) -> str:
    """The stable name of the class a file of format ``version`` names ``name`` (a module
    path before format 10: mapped by :data:`LEGACY_CLASS_PATHS`; a path not in it, a user's
    registered class, is looked up by its path)."""
    if version < 10:
        return LEGACY_CLASS_PATHS.get(name, name)
    return name


# Version 2 moved the input classes to okoco._input and renamed parameters: the probability floor
# gamma -> p_min (SketchedKONS, PROS-N-KONS, CON-KONS, KORS), KRLS's and ALD's ridge -> alpha.
# A version-1 file is rewritten into the version-2 layout before anything is decoded.

_V1_RENAMES = {
    "okoco.learners.kons.SketchedKONS": {"gamma": "p_min"},
    "okoco.learners.pros.PROSNKONS": {"gamma": "p_min"},
    "okoco.learners.pros.CONKONS": {"gamma": "p_min"},
    "okoco.dictionary.kors.KORS": {"gamma": "p_min"},
    "okoco.learners.krls.KRLS": {"ridge": "alpha"},
    "okoco.dictionary.ald.ALD": {"ridge": "alpha"},
}


def _upgrade_v1(meta: dict) -> dict:
    """A version-1 metadata tree in the version-2 layout."""
    fresh_ids = itertools.count(-1, -1)  # ids of the objects version 2 adds (never in a file)

    def attributes(path: str, attrs: dict) -> tuple[str, dict]:
        attrs = {_V1_RENAMES.get(path, {}).get(k, k): v for k, v in attrs.items()}
        if path.startswith("okoco.learners.") and "n_seen" in attrs:  # a nested learner
            attrs.setdefault("_abs_target_sum", 0.0)
            attrs.setdefault("_warned_unscaled", False)
        if path == "okoco.learners.features.FeatureMap":
            return "okoco._input.FeatureMap", {**attrs, "mode": None}
        if path == "okoco.learners.features.PointStore":
            return "okoco._input.Rows", {
                "max_size": attrs["max_size"], "n": attrs["size"], "d": attrs["n_cols"],
                "n_added": attrs["n_added"], "data": attrs["_X"], "fields": attrs["_fields"]}
        if path == "okoco.dictionary._base._Rows":
            return "okoco._input.Rows", {"max_size": None, "n_added": attrs["n"],
                                         "fields": {}, **attrs}
        if "_feature_index" in attrs:  # a dictionary: its input mapping became a FeatureMap
            attrs["_features"] = {"__obj__": "okoco._input.FeatureMap", "id": next(fresh_ids),
                                  "attrs": {"columns": attrs.pop("_feature_index"),
                                            "mode": attrs.pop("_mode"), "_last": None}}
        return path, attrs

    def upgrade(tree: Any) -> Any:
        if isinstance(tree, list):
            return [upgrade(item) for item in tree]
        if not isinstance(tree, dict):
            return tree
        tree = {key: upgrade(value) for key, value in tree.items()}
        if isinstance(tree.get("__obj__"), str) and isinstance(tree.get("attrs"), dict):
            tree["__obj__"], tree["attrs"] = attributes(tree["__obj__"], tree["attrs"])
        return tree

    meta = upgrade(meta)
    if isinstance(meta.get("state"), dict) and "n_seen" in meta["state"]:  # a learner
        meta["state"].setdefault("_abs_target_sum", 0.0)  # added after 0.1.0: the target-scale
        meta["state"].setdefault("_warned_unscaled", False)  # warning's running sum and flag
    renames = _V1_RENAMES.get(meta.get("class"), {})
    for part in ("params", "state"):
        if isinstance(meta.get(part), dict):
            meta[part] = {renames.get(k, k): v for k, v in meta[part].items()}
    return meta


def _migrate(meta: dict) -> dict:
    """A metadata tree of an older format version in the current layout, where the layout can
    be rewritten as JSON (version 1's renamed classes and parameters). Objects are migrated
    when decoded (:func:`legacy_state`)."""
    if meta["format_version"] == 1:
        try:
            return _upgrade_v1(meta)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"damaged version-1 metadata: {type(error).__name__}: "
                             f"{_short(str(error))}") from None
    return meta


def legacy_state(decode: Callable, cls: type, fields: dict, attrs: dict, where: str) -> dict:
    """The attributes of a ``cls`` object saved by a file before version 5, in today's layout.

    Those files name each field by the attribute that holds it (``fields`` maps attribute
    names to declarations), and files before 4 also hold caches, which are dropped; an entry
    the class no longer declares is decoded for the migrations below, and refused if none of
    them takes it. ``decode(tree, where)`` decodes one entry.
    """
    values = {}
    for key, sub in attrs.items():
        field = fields.get(key)
        if field is not None:
            if field.cache:
                continue
            _plausible(field, sub, f"{where}.{field.name}")  # nothing deeper than the schema
            values[key] = decode(sub, f"{where}.{field.name}")
        else:  # a layout a migration below may rebuild
            values[key] = decode(sub, f"{where}.{key}")
    values = _migrate_state(cls, values)
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{where}: {cls.__name__} has no field(s) {_short(unknown)}")
    return values


def _migrate_state(cls: type, values: dict) -> dict:
    """The decoded attributes of a ``cls`` object saved in an older layout, in the current one:
    the migration of every class ``cls`` derives from, base classes first."""
    for klass in reversed(cls.__mro__):
        migrate = _STATE_MIGRATIONS.get(_key(klass))
        if migrate is not None:
            values = migrate(values)
    return values


def _ald_before_2(values: dict) -> dict:
    # okoco 0.1.0's ALD kept the last coefficients; it now keeps the last solve's vectors,
    # which a new step recomputes (the values its constructor starts from)
    if "last_coefficients" in values:
        values = {k: v for k, v in values.items() if k != "last_coefficients"}
        values.setdefault("_last_a", np.zeros(0))
        values.setdefault("_last_h", None)
    return values


def _packed_before_2(values: dict) -> dict:
    # okoco 0.1.0's PackedSymmetric was always packed (no dense layout for small matrices)
    return values if "_dense" in values else {**values, "_dense": None}


def _unit_noise_scale(values: dict) -> dict:
    # saved before the predictive variance: the unit scale (a sum of n_seen ones)
    if "noise_scale_sum" in values:
        return values
    return {**values, "noise_scale_sum": float(values.get("n_seen", 0))}


def _kons_unbounded(values: dict) -> dict:
    """A KONS (or SketchedKONS) saved before the window: unbounded, with no ``max_size``."""
    values = _unit_noise_scale(values)
    if "max_size" in values:
        return values
    values = {**values, "max_size": None, "_window": None}
    values.setdefault("_selected", np.zeros(16, dtype=np.intp))  # unused while unbounded
    return values


def _krls_before_3(values: dict) -> dict:
    """A KRLS saved with ``beta`` and ``P`` (before ``w`` and ``M``), moved to the ALD factor's
    coordinates: ``w = L^{-1} beta`` and ``M = L^{-1} P L^{-T}``, ``O(m^3)`` once."""
    values = _unit_noise_scale(values)
    if "_beta" not in values:
        return values
    values = dict(values)
    chol = values["_ald"].cholesky
    m = chol.size
    packed = values.pop("_P")
    beta, P = values.pop("_beta")[:m], packed.matrix()
    w = reserve(np.zeros(16), m)
    w[:m] = chol.half_solve(beta)
    half = chol.half_solve(P)  # L^{-1} P, then L^{-1} (L^{-1} P)^T = L^{-1} P L^{-T}
    M = chol.half_solve(np.ascontiguousarray(half.T))
    values["_w"], values["_M"] = w, type(packed).from_matrix(0.5 * (M + M.T))
    return values


def _auto_unscaled(values: dict) -> dict:
    """An ``Auto`` saved before windows and target scaling: the unbounded ``Auto`` on the
    targets as given, as it was."""
    if "max_size" in values:
        return values
    return {**values, "max_size": None, "scale_target": False, "target_count": 0,
            "target_mean": 0.0, "_target_m2": 0.0}

def _slot_inverse_before_6(values: dict) -> dict:
    """A ``SlotInverse`` that kept ``P`` and ``M`` whole, in two arrays: now one array holds
    ``P``'s lower triangle and ``M``'s strict upper one, and ``M``'s diagonal is a vector."""
    if "M" not in values:
        return values
    P, M = np.asarray(values["P"], dtype=float), np.asarray(values["M"], dtype=float)
    if P.ndim != 2 or P.shape != M.shape or P.shape[0] != P.shape[1]:
        raise ValueError(f"a SlotInverse's P and M must be square and alike, got shapes "
                         f"{P.shape} and {M.shape}")
    out = {k: v for k, v in values.items() if k != "M"}
    out["P"] = np.tril(P) + np.triu(M, 1)
    out["diagonal"] = np.diagonal(M).copy()
    return out


#: Migrations of one class's decoded attributes (keyed by attribute name), by class path; a
#: class's migration applies to its subclasses too (a SketchedKONS is a KONS).
_STATE_MIGRATIONS: dict[str, Callable[[dict], dict]] = {
    "ALD": _ald_before_2,
    "PackedSymmetric": _packed_before_2,
    "KONS": _kons_unbounded,
    "KRLS": _krls_before_3,
    "Auto": _auto_unscaled,
    "SlotInverse": _slot_inverse_before_6,
}

#: Fields a file of format 5 (public names) may hold that format 6 retired, by class path, and
#: the migration that rebuilds today's fields from them.
_RETIRED_IN_6: dict[str, tuple[frozenset, Callable[[dict], dict]]] = {
    "SlotInverse": (frozenset({"M"}), _slot_inverse_before_6),
}


def retired_field(cls: type, name: str) -> bool:
    """Whether ``name`` is a field a format-5 ``cls`` held that format 6 retired."""
    retired = _RETIRED_IN_6.get(_key(cls))
    return retired is not None and name in retired[0]


def public_state_before_6(cls: type, values: dict) -> dict:
    """The decoded attributes of a ``cls`` object of a format-5 file, in today's layout."""
    retired = _RETIRED_IN_6.get(_key(cls))
    return values if retired is None else retired[1](values)
