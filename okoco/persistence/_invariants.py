"""Cross-field invariants of saved state: what the fields of one object must satisfy together
(a size against the arrays it describes, indices in range, a one-to-one column map), checked
when a file is loaded, before the compiled core sees the object.

The declarations (:data:`INVARIANTS`) are plain strings in the grammar of the shape rules of
``_saved_state`` (the fields named as in the file, ``store.n`` for a field of a field, ``self``
the object), extended
to boolean expressions: comparisons (chained), ``and``, ``or``, ``not``, ``is None``, and the
functions

``len(x)``
    a list's or mapping's length, an array's rows;
``shape(x, i)``
    an array's length on axis ``i``;
``within(x, lo, hi)``
    every entry of ``x`` (an int array, a list, or a mapping's values) in ``[lo, hi)``;
``distinct(x)``
    the entries of ``x`` that are ``>= 0`` all different;
``permutation(x)``
    the entries of ``x`` are ``0, 1, ..., len(x) - 1`` in some order;
``held(x)``
    how many entries of ``x`` are ``>= 0``;
``zero_beyond(x, n, d)``
    the rows of ``x`` from ``n`` on, and its columns from ``d`` on, all zero (spare capacity);
``width(x)``, ``ring(x)``
    the columns in use and the ring's slots of stored points (``Rows``, ``SharedPoints``,
    ``ExpertRows``);
``holds_last(inverse, points)``
    a window's inverse in the compact form holds the last atoms of the ring of ``points``;
``largest(xs, 'name')``
    the largest field ``name`` of the objects ``xs``;
``windowed(xs)``
    the objects of ``xs`` that keep a window over stored points (a declared ``window_inverse``);
``heads_on(experts, embeddings)``
    whether every dictionary head of ``experts`` is on one of ``embeddings`` as it says;
``get(x, 'name')``
    the field ``name`` of ``x``, ``None`` if ``x`` has none (a field of some classes only);
``min``, ``max``, ``sorted``
    as in Python; ``x[i]``, an item of a list or int array at a constant index; ``a if c else b``;
    ``in`` a tuple.

A file whose object breaks one is refused with a ``ValueError`` naming the object and the
invariant. They belong with each class's ``_saved_state``; they are kept here, by stable class name,
until the classes declare them (``_saved_invariants``, read first when a class has one).

Examples
--------
>>> from okoco.persistence._invariants import check_invariants
>>> from okoco._input import FeatureMap
>>> good = FeatureMap(); good.columns = {"a": 0, "b": 1}
>>> check_invariants(good, "state.features")
>>> bad = FeatureMap(); bad.columns = {"a": 0, "b": 0}
>>> check_invariants(bad, "state.features")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: state.features (FeatureMap) breaks its invariant permutation(columns): the file was ...
"""

from __future__ import annotations

import ast
import functools
from typing import Any

import numpy as np

from okoco.persistence._format import _MISSING
from okoco.persistence._registry import _key
from okoco.persistence._schema import declared_state

#: Invariants by stable class name (see the module's docstring); a subclass has its bases' too.
INVARIANTS: dict[str, tuple[str, ...]] = {
    # one column per feature, no two features on one column
    "FeatureMap": ("permutation(columns)",),
    "Rows": (
        # a ring holds every row appended until it is full
        "max_size is None or n <= max_size and (n == max_size or n_added == n)",
        # rows beyond the n held and columns beyond the d in use are spare capacity: zeros
        "zero_beyond(data, n, d)"),
    # what the compiled core indexes P, its diagonal and the pending terms with
    "SlotInverse": (
        "shape(P, 0) <= shape(P, 1) <= shape(P, 0) + 1",
        "len(diagonal) == shape(P, 0)",
        "size <= len(diagonal) and (capacity is None or size <= capacity)",
        "outer is None or (len(outer) <= len(diagonal) and distinct(outer)"
        " and size == held(outer) and within(outer, -1, capacity or len(outer) + size + 1))",
        # (P grown since the last pending term: none is pending, and new rows come with the next)
        "pending is None or shape(pending, 1) == shape(P, 0)"
        " or pending_terms is not None and pending_terms[0] == pending_terms[1] == 0",
        # P is recomputed when they reach 16 x its slots (at least 64): never beyond
        "modifications <= max(16 * len(diagonal), 64)",
        # (additions, subtractions, slots spanned): at most 16 of each sign (the pending rows)
        "pending_terms is None or len(pending_terms) == 3"
        " and 0 <= pending_terms[2] <= len(diagonal)"
        " and (pending is None and pending_terms[0] == pending_terms[1] == 0"
        " or 0 <= pending_terms[0] <= shape(pending, 0) // 2"
        " and 0 <= pending_terms[1] <= shape(pending, 0) // 2)",
    ),
    "SharedSquaredKONS": (
        "shape(coef, 1) == shape(Kc, 1)",
        # its inverse spans the ring of its points and holds at most its window
        "max_size is None or inverse.capacity == ring(points)"
        " and get(inverse, 'atoms') in (None, max_size + 1)",
        # a window over a shared ring holds the ring's last points (the ring's count of rows
        # appended says which it forgets next)
        "holds_last(inverse, points)"),
    # a window over a shared ring holds its last points (the count of rows appended says
    # which slot it forgets next)
    "SharedSquaredAuto": (
        "len(experts) == 0 or shape(experts[0].coef, 1) == n_classes + 1",
        "len(experts) == 0 or ring(points) is None"
        " or ring(points) == largest(experts, 'max_size') + 1"),
    # an expert's view of the shared points holds them all
    "ExpertRows": ("n == points.rows.n",),
    # a feature's count: seen at least once
    "StandardScaler": ("within(counts, 1, 2**62)",),
    "BinaryClassifier": ("learner is not self",),
    "MulticlassClassifier": (
        "learner is not self",
        "get(shared, 'coef') is None or shape(shared.coef, 1) == len(classes) + 1",
        "get(shared, 'n_classes') in (None, len(classes))",
    ),
    # the windowed experts' shared ring: one slot more than the longest window (the dictionary
    # experts keep their atoms in their shared embeddings, not in the ring)
    "Auto": (
        "len(windowed(experts)) == 0 or ring(points) is None"
        " or ring(points) == largest(windowed(experts), 'max_size') + 1",
        # each dictionary head is on one of Auto's shared dictionaries, as its settings say,
        # with one coordinate per atom
        "heads_on(experts, embeddings)",
        # fixed share's weights: one an expert (none before the first learn, or in an older file)
        "get(self, 'log_weights') is None or shape(log_weights, 0) in (0, len(experts))"),
    # a shared dictionary: one embedding coordinate per atom, at most its cap
    "SharedEmbedding": (
        "embedding.size == store.n",
        "max_size is None or embedding.size <= max_size"),
    "AdaptiveConformal": ("sorted_scores == sorted(recent_scores)",),
    "FunctionalGD": ("store.max_size == budget",),
    # the step's bound and test are the ALD's (a file with them apart learned to -inf)
    "KRLS": ("ald.max_size == max_size", "ald.nu == nu", "ald.alpha == alpha"),
    "KONS": (
        "max_size is None or window_inverse is not None"
        " and get(store, 'max_size') in (None, max_size + 1)",
        # the window's inverse spans the ring of its points (its own, or Auto's), and holds at
        # most the window (Sketched-KONS: its own slots grow 16 at a time up to it)
        "window_inverse is None or ring(store) in (None, window_inverse.capacity)",
        "get(self, 'kors') is not None or holds_last(window_inverse, store)",
        "max_size is None or get(window_inverse, 'atoms') is None"
        " or window_inverse.atoms == max_size + 1"
        " or get(self, 'kors') is not None and window_inverse.atoms <= max_size + 1",
        "within(selected_slots, 0, max(store.n, 1))",
        "window_inverse is None or window_inverse.size <= len(selected_slots)",
        # a window over a ring of its own holds its last max_size points (Sketched-KONS: the
        # atoms its dictionary kept of them)
        "get(store, 'max_size') is None or max_size is None or window_inverse.size =="
        " (kors.size if get(self, 'kors') is not None else min(store.n, max_size))",
    ),
    # the embedding spans the dictionary's atoms
    "PROSNKONS": ("embedding.size == kors.size",),
    "SketchedKONS": (
        "window_inverse is None or get(kors, 'inverse') is None"
        " or window_inverse.size == kors.size",),
    "KORS": (
        "size == max(cholesky.size, get(inverse, 'size') or 0)",
        "within(indices, 0, max(n_seen, 1))",
        "slots is None or within(slots, 0, max(len(slots), 1))",
    ),
    "ALD": ("within(indices, 0, max(n_seen, 1))",),
    # river's encoders of text features (a pipeline's file, a checkpoint): a zero feature for
    # each category seen, and the hash's seed derived from its parameter
    "river.preprocessing.one_hot.OneHotEncoder": (
        "categories is None or values is categories",
        "zero_features(values) == _zero_dict if not drop_zeros else len(_zero_dict) == 0",),
    "river.preprocessing.feature_hasher.FeatureHasher": (
        "n_features >= 1", "seed is None or _seed == hash_seed(seed)"),
}


def _entries(x: Any) -> np.ndarray:
    if isinstance(x, dict):
        x = list(x.values())
    array = np.asarray(x)
    if array.dtype.kind not in "iub" and array.size:
        raise TypeError("not integers")
    return array.reshape(-1).astype(np.int64, copy=False)


def _within(x: Any, lo: int, hi: int) -> bool:
    entries = _entries(x)
    return not entries.size or (int(entries.min()) >= lo and int(entries.max()) < hi)


def _distinct(x: Any) -> bool:
    entries = _entries(x)
    held = entries[entries >= 0]
    return np.unique(held).size == held.size


def _permutation(x: Any) -> bool:
    entries = _entries(x)
    return np.array_equal(np.sort(entries), np.arange(entries.size))


def _held(x: Any) -> int:
    return int(np.count_nonzero(_entries(x) >= 0))


def _zero_beyond(x: Any, rows: int, columns: int | None = None) -> bool:
    array = np.asarray(x)
    if array.ndim == 0 or rows < 0 or (columns is not None and columns < 0):
        return False
    spare = array[rows:]
    if columns is not None and array.ndim == 2:
        spare = np.concatenate([spare.reshape(-1), array[:rows, columns:].reshape(-1)])
    return not np.any(spare)


def _rows(points: Any) -> Any:
    """The ``Rows`` of stored points (themselves, the rows of ``SharedPoints``, or of the
    ``SharedPoints`` of ``ExpertRows``; ``None`` for none)."""
    for name in ("points", "rows"):
        inner = _field(points, name) if points is not None and _declares(points, name) else None
        if inner is not None:
            return _rows(inner)
    return points


def _width(points: Any) -> int:
    """The columns in use of stored points (0 for none)."""
    rows = _rows(points)
    return 0 if rows is None else _field(rows, "d")


def _ring(points: Any) -> int | None:
    """The slots of stored points kept in a ring (``None``: not a ring, or no points)."""
    rows = _rows(points)
    return None if rows is None else _field(rows, "max_size")


def _holds_last(inverse: Any, points: Any) -> bool:
    """Whether a window's inverse in the compact form over a shared ring holds the ring's
    last atoms, as many as it holds (``True`` if it is not in that form): the atoms the window
    forgets next are found from the ring's count of rows appended."""
    rows = _rows(points)
    outer = _field(inverse, "outer") if inverse is not None else None
    if outer is None or rows is None or _field(rows, "max_size") is None:
        return True
    held = _entries(outer)
    held = held[held >= 0]
    ring, added = _field(rows, "max_size"), _field(rows, "n_added")
    return set(held.tolist()) == {(added - 1 - k) % ring for k in range(held.size)}


def _largest(objects: list, name: str) -> int:
    """The largest field ``name`` of ``objects`` (``None`` counts as unbounded)."""
    values = [_field(o, name) for o in objects]
    return None if None in values or not values else max(values)


def _declares(owner: Any, name: str) -> bool:
    """Whether ``owner``'s class declares a saved field of file name ``name``."""
    return name in (f.name for f in (declared_state(type(owner)) or {}).values())


def _windowed(objects: list) -> list:
    """The objects among ``objects`` that keep a window over stored points (a declared
    ``window_inverse``: KONS, Sketched-KONS)."""
    return [o for o in objects if _declares(o, "window_inverse")]


def _heads_on(experts: list, embeddings: list | None) -> bool:
    """Whether every expert with a declared ``dictionary`` (an ONS head on a shared dictionary)
    names one of ``embeddings`` whose kernel and cap its own settings repeat, and holds one
    coordinate per atom of it."""
    embeddings = embeddings or []
    for head in experts:
        if not _declares(head, "dictionary"):
            continue
        index = _field(head, "dictionary")
        if not 0 <= index < len(embeddings):
            return False
        shared = embeddings[index]
        if (repr(_field(head, "kernel")) != repr(_field(shared, "kernel"))
                or _field(head, "max_size") != _field(shared, "max_size")
                or _field(_field(head, "ons_inverse"), "size")
                != _field(_field(shared, "embedding"), "size")):
            return False
    return True


def _widest(objects: list | None) -> int:
    """The most columns in use of the objects' stored points (``store``: a shared dictionary's
    atoms; 0 for none)."""
    return max([_width(_field(o, "store")) for o in objects or []], default=0)


def _linear_features(experts: list) -> int:
    """The most features an ONS head on ``[1, x]`` (one with an ``ons_inverse`` and no
    ``dictionary``) holds a coordinate for: its order less the intercept (0 for none)."""
    return max([_field(_field(e, "ons_inverse"), "size") - 1 for e in experts
                if _declares(e, "ons_inverse") and not _declares(e, "dictionary")], default=0)


def _zero_features(values: Any) -> dict:
    """The features a river ``OneHotEncoder`` outputs as 0 before it sets a sample's to 1:
    ``"<column>_<category>"`` for each category seen."""
    return {f"{column}_{value}": 0 for column, seen in values.items() for value in seen}


def _hash_seed(seed: int) -> int:
    """The 32-bit seed river's ``FeatureHasher`` derives from its ``seed`` parameter."""
    return int(np.random.RandomState(seed).randint(0, 2**32, dtype=np.uint32))


def _sorted(x: Any) -> list:
    return sorted(x)


def _length(x: Any) -> int:
    return x.shape[0] if isinstance(x, np.ndarray) and x.ndim else len(x)


def _shape(x: Any, axis: int) -> int:
    return x.shape[axis] if isinstance(x, np.ndarray) and 0 <= axis < x.ndim else -1


_FUNCTIONS = {"len": _length, "shape": _shape, "within": _within, "distinct": _distinct,
              "permutation": _permutation, "held": _held, "min": min, "max": max,
              "zero_beyond": _zero_beyond, "sorted": _sorted, "width": _width,
              "ring": _ring, "largest": _largest, "holds_last": _holds_last,
              "windowed": _windowed, "heads_on": _heads_on, "zero_features": _zero_features,
              "widest": _widest, "linear_features": _linear_features,
              "hash_seed": _hash_seed}


@functools.cache
def _parse(rule: str) -> ast.expr:
    tree = ast.parse(rule, mode="eval").body
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and (node.func.id in _FUNCTIONS or
                                                         node.func.id == "get")):
                raise SyntaxError(f"unknown function in the invariant {rule!r}")
        elif not isinstance(node, (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
                                   ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt,
                                   ast.GtE, ast.Is, ast.IsNot, ast.BinOp, ast.Add, ast.Sub,
                                   ast.Mult, ast.FloorDiv, ast.Pow, ast.Constant, ast.Name,
                                   ast.Attribute, ast.Load, ast.Subscript, ast.In, ast.NotIn,
                                   ast.Tuple, ast.IfExp)):
            raise SyntaxError(f"{type(node).__name__} is not allowed in the invariant {rule!r}")
    return tree


def _field(owner: Any, name: str) -> Any:
    """The saved field ``name`` of ``owner``: its declared attribute of that file name (an
    optional one absent from the file: the class default); of a class that declares no
    state (river's), its attribute ``name``."""
    fields = declared_state(type(owner))
    if fields is None:
        attr = name if type(owner).__module__.startswith("river.") else None
    else:
        attr = next((f.attr for f in fields.values() if f.name == name and not f.cache), None)
    value = getattr(owner, attr, _MISSING) if attr is not None else _MISSING
    if value is _MISSING:
        raise LookupError(name)
    return value


_OPERATORS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
              ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
              ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
              ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
              ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Pow: lambda a, b: a**b,
              ast.FloorDiv: lambda a, b: a // b if b else 0,
              ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _value(node: ast.expr, obj: Any) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return obj if node.id == "self" else _field(obj, node.id)
    if isinstance(node, ast.Attribute):
        return _field(_value(node.value, obj), node.attr)
    if isinstance(node, ast.Subscript):  # an item of a list or int array, at a constant index
        items, index = _value(node.value, obj), node.slice
        if not (isinstance(index, ast.Constant) and type(index.value) is int):
            raise SyntaxError("only constant indices")
        return items[index.value] if type(items) is list else int(_entries(items)[index.value])
    if isinstance(node, ast.Tuple):
        return tuple(_value(e, obj) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _value(node.body if _value(node.test, obj) else node.orelse, obj)
    if isinstance(node, ast.Call) and node.func.id == "get":  # get(x, 'name'): None if absent
        owner, name = _value(node.args[0], obj), node.args[1].value
        try:
            return _field(owner, name)
        except LookupError:
            return None
    if isinstance(node, ast.Call):
        return _FUNCTIONS[node.func.id](*(_value(a, obj) for a in node.args))
    if isinstance(node, ast.BoolOp):  # as Python's: the deciding operand
        for operand in node.values:
            value = _value(operand, obj)
            if bool(value) is isinstance(node.op, ast.Or):
                break
        return value
    if isinstance(node, ast.UnaryOp):
        value = _value(node.operand, obj)
        return not value if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BinOp):
        return _OPERATORS[type(node.op)](_value(node.left, obj), _value(node.right, obj))
    left = _value(node.left, obj)
    for op, right_node in zip(node.ops, node.comparators):
        right = _value(right_node, obj)
        if not _OPERATORS[type(op)](left, right):
            return False
        left = right
    return True


#: Invariants of a learner that encodes its own rows (the object a file holds, a pipeline's
#: step, a BinaryClassifier's learner): a feature for every column of its stored points (it
#: may know more: a point not stored). The KONS experts of Auto and the class learners of a
#: MulticlassClassifier leave their feature maps to the wrapper, which encodes for them.
MODEL_INVARIANTS: dict[str, tuple[str, ...]] = {
    "KONS": ("store.d <= len(features.columns)",),
    "FunctionalGD": ("store.d <= len(features.columns)",),
    "KRLS": ("store.d <= len(features.columns)",),
    "PROSNKONS": ("store.d <= len(features.columns)",),
    # (the window's points, the dictionaries' atoms, the linear heads' coordinates)
    "Auto": ("max(width(points), widest(get(self, 'embeddings')), linear_features(experts))"
             " <= len(features.columns)",),
    "MulticlassClassifier": (
        "max(width(points), width(get(shared, 'points'))) <= len(features.columns)",),
}

#: The learners inside a wrapper that encode their own rows, by the wrapper's class path: a
#: BinaryClassifier's learner; a MulticlassClassifier's class learners when they share
#: neither points nor a preconditioner (each then learns from the rows as given).
_ENCODING_INSIDE = {
    "BinaryClassifier": lambda o: {"learner": o.learner},
    "MulticlassClassifier": lambda o: {
        f"learners[{i}]": learner for i, learner in enumerate(o.learners)
        if getattr(o, "_points", None) is None and getattr(o, "_shared", None) is None},
}


def check_model(obj: Any, where: str) -> None:
    """The :data:`MODEL_INVARIANTS` of a model's learner that encodes its own rows (the object
    a file holds, a pipeline's step), and of those inside it that do too."""
    for klass in type(obj).__mro__:
        _check_rules(obj, MODEL_INVARIANTS.get(_key(klass), ()), where)
    inside = _ENCODING_INSIDE.get(_key(type(obj)))
    for name, inner in (inside(obj) if inside else {}).items():
        check_model(inner, f"{where}.{name}")


def invariants_of(cls: type) -> tuple[str, ...]:
    """The invariants of ``cls``'s saved state: its own ``_saved_invariants`` and those
    :data:`INVARIANTS` holds for it and its bases."""
    rules: list = []
    for klass in reversed(cls.__mro__):
        rules.extend(vars(klass).get("_saved_invariants", ()))
        rules.extend(INVARIANTS.get(_key(klass), ()))
    return tuple(rules)


def check_invariants(obj: Any, where: str, unless: frozenset = frozenset()) -> None:
    """Raise ``ValueError`` naming the first invariant of ``obj``'s class that it breaks (an
    invariant that cannot be evaluated, a field of the wrong kind or missing, is broken);
    those that name a field of ``unless`` (fields yet to be rebuilt) are left out."""
    rules = invariants_of(type(obj))
    if unless:
        rules = tuple(r for r in rules if not unless & _names(r))
    _check_rules(obj, rules, where)


@functools.cache
def _names(rule: str) -> frozenset:
    """The names a rule refers to."""
    return frozenset(n.id for n in ast.walk(_parse(rule)) if isinstance(n, ast.Name))


def _check_rules(obj: Any, rules: tuple[str, ...], where: str) -> None:
    for rule in rules:
        try:
            ok = bool(_value(_parse(rule), obj))
        except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError):
            ok = False
        if not ok:
            raise ValueError(f"{where} ({type(obj).__name__}) breaks its invariant {rule}: the "
                             "file was edited or is damaged")
