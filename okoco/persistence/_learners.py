"""Saving and loading one learner (a model file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from okoco.persistence._archive import _Archive, _Damaged, _read, _write, collector_paused
from okoco.persistence._decode import _REBUILT, _Decoder
from okoco.persistence._encode import _Encoder
from okoco.persistence._format import FORMAT_NAME, FORMAT_VERSION, _short, _version
from okoco.persistence._invariants import check_model
from okoco.persistence._migrations import stable_class_name
from okoco.persistence._registry import (
    _LEARNERS,
    _NAMES,
    _class_path,
    _init_params,
    _stable_name,
)


@collector_paused
def read_metadata(path: str | os.PathLike) -> dict:
    """The JSON metadata of an okoco file (model or checkpoint), checked but not loaded.

    Raises ``ValueError`` for a file that is not an okoco ``.npz`` archive, that holds object
    (pickled) arrays, or whose format version this okoco does not read.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> path = persistence.save(KONS(), Path(tempfile.mkdtemp(), "kons.npz"))
    >>> meta = persistence.read_metadata(path)
    >>> meta["format"], meta["class"]
    ('okoco-model', 'KONS')
    """
    meta, archive = _read(path, None)
    archive.close()
    return meta


def save(model: Any, path: str | os.PathLike, *, compress: bool = False) -> Path:
    """Save an okoco learner (or ``BinaryClassifier``) to ``path``, atomically.

    The file is written to a temporary file in the same folder and renamed into place, so an
    interruption leaves any previous file intact (and the next save to the same place removes
    the temporary file an interrupted one left). ``path`` is used as given (no suffix added);
    an existing file keeps its permissions, a read-only one is not replaced
    (``PermissionError``), and a symbolic link is written through (its target is replaced).

    Parameters
    ----------
    model
        An okoco learner (``KONS``, ``SketchedKONS``, ``FunctionalGD``, ``KRLS``, ``PROSNKONS``,
        ``CONKONS``, ``Auto``), a ``BinaryClassifier``, a ``SQUEAK`` / ``INKEstimate``
        dictionary, a ``NystromKRR`` or a ``RegretTracker`` (what :func:`registered` lists
        with ``learners=True``).
    path
        Destination, conventionally ``*.npz``.
    compress
        Use ``numpy.savez_compressed`` (smaller, slower; the spare capacity of the buffers is
        zeros and compresses well).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        The model is not one of those, or holds something that cannot be saved without code
        (a user's kernel or loss class, a callable step size), or state its class does not
        declare; the message names the attribute.
    PermissionError
        ``path`` is a read-only file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> model = KONS()
    >>> model.learn_one({"x": 1.0}, 0.5)
    >>> persistence.save(model, Path(tempfile.mkdtemp(), "kons.npz")).name
    'kons.npz'
    """
    if _class_path(type(model)) not in _LEARNERS:
        names = ", ".join(c.rpartition(".")[2] for c in _LEARNERS)
        raise TypeError(f"okoco.save saves okoco learners ({names}), not "
                        f"{type(model).__qualname__}")
    name = type(model).__name__
    enc = _Encoder(rebuild=True)
    enc._new_id(model)
    params = {p: enc.encode(getattr(model, p), f"{name}.{p}") for p in _init_params(type(model))}
    state = enc.fields(model, name)
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "okoco_version": _version(),
            "class": _stable_name(type(model)), "params": params, "state": state}
    return _write(path, meta, enc.arrays, compress)


@collector_paused
def load(path: str | os.PathLike) -> Any:
    """Load a learner saved by :func:`save` (or ``learner.save``).

    The archive is read without pickle and only allow-listed classes are built, so loading
    never executes code from the file. Every field is checked against its class's declaration
    (kind, dtype, shape in terms of the other fields) before the learner is built, and what
    the file may allocate is bounded by its own size. The factorizations the file leaves out
    are rebuilt from the model (see :mod:`okoco.persistence`): predictions and further
    learning equal those of the learner that was saved up to rounding (1e-9 relative).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not an okoco model file, an unsupported format version (the message names the version
        found and those supported), object arrays in the archive, a field that breaks its
        declaration (named), or a damaged file (cut short, edited): always one ``ValueError``
        naming the file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco import persistence
    >>> from okoco.learners import KONS
    >>> model = KONS()
    >>> model.learn_one({"x": 1.0}, 0.5)
    >>> path = persistence.save(model, Path(tempfile.mkdtemp(), "kons.npz"))
    >>> persistence.load(path).predict_one({"x": 1.0}) == model.predict_one({"x": 1.0})
    True
    """
    meta, archive = _read(path, FORMAT_NAME)
    return _load_learner(path, meta, archive)


def _learner_class(name: Any, version: int) -> type | None:
    """The learner class a file names (a stable name; a module path before format 10)."""
    if not isinstance(name, str):
        return None
    name = stable_class_name(name, version)
    cls = _NAMES.get(name)
    cls = cls if cls is not None else _LEARNERS.get(name)
    return cls if cls is not None and _class_path(cls) in _LEARNERS else None


def _load_learner(path: str | os.PathLike, meta: dict, archive: _Archive) -> Any:
    """The learner of a model file already read by :func:`_read` (closes ``archive``)."""
    with archive, _Damaged(path):
        cls = _learner_class(meta.get("class"), meta["format_version"])
        if cls is None:
            raise ValueError(f"{str(path)!r} holds a {_short(meta.get('class'))}, which is not "
                             "an okoco learner")
        dec = _Decoder(archive, version=meta["format_version"], rebuild=True)
        params = meta["params"]
        if type(params) is not dict:
            raise ValueError("params must be a mapping")
        params = {k: dec.decode(v, f"params.{k}") for k, v in params.items()}
        model = cls(**params)  # the constructor validates the saved parameters
        dec.objects[0] = model
        state = meta["state"]
        if type(state) is not dict:
            raise ValueError("state must be a mapping")
        state = dec.state(cls, state, "state")
        archive.finish()
        later = state.pop(_REBUILT, False)
        model.__dict__.clear()
        model.__dict__.update(state)
        dec.completed(model, "state", later)
        check_model(model, "state")  # every structural check before the rebuild's work
        dec.rebuild()  # the factorizations, from the model (parts first, the learner last)
    return model
