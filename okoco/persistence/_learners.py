"""Saving and loading one learner (a model file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from okoco.persistence._archive import _Archive, _Damaged, _read, _write
from okoco.persistence._decode import _Decoder
from okoco.persistence._encode import _Encoder
from okoco.persistence._format import FORMAT_NAME, FORMAT_VERSION, _short, _version
from okoco.persistence._invariants import check_invariants, check_model
from okoco.persistence._registry import _LEARNERS, _class_path, _init_params


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
    ('okoco-model', 'okoco.learners.kons.KONS')
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
    cls_path = _class_path(type(model))
    if cls_path not in _LEARNERS:
        names = ", ".join(c.rpartition(".")[2] for c in _LEARNERS)
        raise TypeError(f"okoco.save saves okoco learners ({names}), not "
                        f"{type(model).__qualname__}")
    name = type(model).__name__
    enc = _Encoder()
    enc._new_id(model)
    params = {p: enc.encode(getattr(model, p), f"{name}.{p}") for p in _init_params(type(model))}
    state = enc.fields(model, name)
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "okoco_version": _version(),
            "class": cls_path, "params": params, "state": state}
    return _write(path, meta, enc.arrays, compress)


def load(path: str | os.PathLike) -> Any:
    """Load a learner saved by :func:`save` (or ``learner.save``).

    The archive is read without pickle and only allow-listed classes are built, so loading
    never executes code from the file. Every field is checked against its class's declaration
    (kind, dtype, shape in terms of the other fields) before the learner is built, and what
    the file may allocate is bounded by its own size. Predictions and further learning are
    bit-identical to those of the learner that was saved.

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


def _load_learner(path: str | os.PathLike, meta: dict, archive: _Archive) -> Any:
    """The learner of a model file already read by :func:`_read` (closes ``archive``)."""
    with archive, _Damaged(path):
        cls_path = meta.get("class")
        if not isinstance(cls_path, str) or cls_path not in _LEARNERS:
            raise ValueError(f"{str(path)!r} holds a {_short(cls_path)}, which is not an okoco "
                             "learner")
        cls = _LEARNERS[cls_path]
        dec = _Decoder(archive, version=meta["format_version"])
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
        model.__dict__.clear()
        model.__dict__.update(state)
        check_invariants(model, "state")
        check_model(model, "state")
    return model
