"""The ``.npz`` archive: bounded reading of the metadata and arrays, atomic writing, and
one ``ValueError`` for a damaged file."""

from __future__ import annotations

import functools
import gc
import io
import json
import math
import os
import re
import struct
import threading
import tokenize
import traceback
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from okoco._io import atomic_write
from okoco.persistence._format import (
    _BUDGET_SLACK,
    _MAX_CONTAINERS,
    _MAX_DEPTH,
    _MAX_MESSAGE,
    CHECKPOINT_FORMAT_NAME,
    FORMAT_NAME,
    MAX_EXPANSION,
    META_KEY,
    SUPPORTED_VERSIONS,
    _short,
    _version,
)
from okoco.persistence._migrations import _migrate

#: The least bytes a saved atom takes in a file: its point (one float at least) and its
#: values (weight, coefficient, running ``K c``, coin, the diagonal of ``M``), float64 each.
_ATOM_BYTES = 6 * 8


def rebuild_budget(file_size: int) -> int:
    """Bytes the rebuild hooks of a file of ``file_size`` bytes may allocate in all: an
    ``(n, n)`` float64 square for the ``n = file_size / 48`` atoms the file could describe at
    most (:data:`_ATOM_BYTES`), plus ``_BUDGET_SLACK``: what the model it describes holds. A
    rebuild is quadratic in the atoms, so a crafted file cannot make a load allocate more than
    the model that file could be (30 MB for a ``KONS()`` file of 80 KB)."""
    return (file_size // _ATOM_BYTES) ** 2 * 8 + _BUDGET_SLACK


class _CollectorPause:
    """The cyclic garbage collector held off while files are read, on every thread at once.

    Reading a file builds many short-lived containers (the JSON tree, its decoded values), and
    every few hundred of them start a collection, now and then a full one, whose cost is that
    of the *whole* heap: 80-160 ms in a process that imported okoco and river. A refused file
    then took more than 0.1 s while its own checks took a few milliseconds. Those containers
    are freed by their reference counts once the load returns or raises, so holding the
    collector off costs nothing; a loaded model's objects join the heap and count toward the
    next collection as any others. The collector's switch is process-wide: the first reader
    turns it off (if it was on), the last one turns it on again, and a collector the user
    turned off stays off.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._readers = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._readers == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._readers += 1

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._readers -= 1
            if self._readers == 0 and self._was_enabled:
                gc.enable()


_COLLECTOR_PAUSE = _CollectorPause()


def collector_paused(read):
    """``read`` (a function that reads an okoco file) run with the garbage collector held off
    (:class:`_CollectorPause`): its cost is the file's, not a collection of the heap."""

    @functools.wraps(read)
    def paused(*args, **kwargs):
        with _COLLECTOR_PAUSE:
            try:
                return read(*args, **kwargs)
            except BaseException as error:
                release_frames(error)
                raise

    return paused


def release_frames(error: BaseException) -> None:
    """Clear the local variables of the finished frames ``error`` and the exceptions chained
    to it hold (their lines stay in the traceback): a refused file's JSON tree and decoded
    objects, which those frames keep alive, are freed by their counts while the collector is
    still off, instead of being carried into the next collections (and, now and then, into a
    full one within the caller's handling of the error)."""
    pending, seen = [error], set()
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        pending += [exc.__cause__, exc.__context__]


class _Archive:
    """The arrays of an okoco archive, read one by one when the metadata refers to them.

    Every read is charged to a byte budget bounded by the file's own size (see
    :data:`MAX_EXPANSION`), checked from the member's ``.npy`` header *before* anything is
    allocated, so a small crafted file cannot ask for gigabytes (a huge declared shape, a
    compressed member of zeros). Each member may be referred to once, and :meth:`finish`
    refuses members nobody referred to.
    """

    def __init__(self, zf: zipfile.ZipFile | None, members: dict[str, zipfile.ZipInfo],
                 budget: int, file_size: int = 0):
        self.zf, self.members, self.budget = zf, members, budget
        self.used: set[str] = set()
        #: What rebuilding a model's factorizations may allocate: they are square in the
        #: atoms the file holds (see :func:`rebuild_budget`).
        self.rebuild_budget = rebuild_budget(file_size)

    def charge_rebuilt(self, nbytes: int, where: str) -> None:
        """Charge ``nbytes`` a rebuild hook is about to allocate (a square buffer over the
        saved points), refused beyond :func:`rebuild_budget` of the file."""
        if nbytes > self.rebuild_budget:
            raise ValueError(f"{where} would take {nbytes} bytes to rebuild, more than a file "
                             "of this size can describe")
        self.rebuild_budget -= nbytes

    def charge(self, nbytes: int, where: str) -> None:
        if nbytes > self.budget:
            raise ValueError(f"{where} asks for {nbytes} bytes, more than a file of this size "
                             "can hold")
        self.budget -= nbytes

    def get(self, name: Any, where: str) -> np.ndarray:
        if type(name) is not str or name not in self.members:
            raise ValueError(f"{where} refers to an array {_short(name)} that is not in the file")
        if name in self.used:
            raise ValueError(f"{where} refers to the array {name!r} a second time")
        self.used.add(name)
        info = self.members[name]
        self.charge(info.file_size, where)
        with self.zf.open(info) as fp:
            return _read_npy(fp, info.file_size, where)

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.zf is not None:
            self.zf.close()
            self.zf = None

    def finish(self) -> None:
        unused = sorted(set(self.members) - self.used)
        if unused:
            raise ValueError(f"the archive holds member(s) {_short(unused)} that the metadata "
                             "does not refer to")


def _read_npy(fp, size: int, where: str) -> np.ndarray:
    """One ``.npy`` member, its header checked before its data is allocated."""
    shape, fortran, dtype = _npy_header(fp, size, where)
    array = np.empty(shape[::-1] if fortran else shape, dtype=dtype)
    view = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
    got = 0
    while got < len(view):
        n = fp.readinto(view[got:])
        if not n:
            raise ValueError(f"{where}: the array's data is cut short")
        got += n
    return array.T if fortran else array


def _npy_header(fp, size: int, where: str) -> tuple:
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp, max_header_size=2000)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp, max_header_size=2000)
    else:
        raise ValueError(f"{where}: unsupported .npy version {version}")
    if dtype.hasobject:
        raise ValueError("the archive holds object arrays (pickled Python objects); okoco files "
                         "never do and loading them could run code, so it is refused")
    if dtype.kind not in "biufcUS" or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{where}: arrays of dtype {_short(str(dtype))} are not okoco state")
    if len(shape) > 8 or any(type(n) is not int or n < 0 for n in shape):
        raise ValueError(f"{where}: bad array shape {_short(shape)}")
    count = math.prod(shape)
    if count * dtype.itemsize > size:
        raise ValueError(f"{where}: an array of shape {_short(shape)} cannot fit in its "
                         f"{size}-byte member")
    return shape, fortran, dtype


def _write(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray],
           compress: bool) -> Path:
    text = json.dumps(meta, allow_nan=False, separators=(",", ":"))
    payload = {META_KEY: np.array(text), **arrays}
    saver = np.savez_compressed if compress else np.savez
    return atomic_write(path, lambda f: saver(f, **payload), binary=True)

_MEMBER = re.compile(r"\w{1,64}\.npy")


def _no_constant(literal: str) -> float:
    """``NaN`` and ``Infinity`` are not JSON, and okoco never writes them (a non-finite float
    is the entry ``{"__float__": "nan"}``): a file holding them was edited."""
    raise ValueError(f"the okoco metadata holds the number {literal}, which okoco never writes "
                     "(a non-finite float is saved as {\"__float__\": ...})")


def _finite_float(text: str) -> float:
    """A JSON number as a float, refused if it overflows (``1e999``: an edited file)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the okoco metadata holds the number {text[:40]}, beyond a float's "
                         "range")
    return value


def _depth_and_size(tree: Any) -> None:
    """Refuse JSON nested deeper than :data:`_MAX_DEPTH` (level by level: no recursion)."""
    level, depth = [tree], 0
    while level:
        if depth > _MAX_DEPTH:
            raise ValueError(f"the okoco metadata is nested more than {_MAX_DEPTH} levels deep")
        deeper: list = []
        for node in level:
            kind = type(node)
            if kind is dict:
                deeper.extend(node.values())
            elif kind is list:
                deeper.extend(node)
        level, depth = deeper, depth + 1


def _read(path: str | os.PathLike, expected: str | None) -> tuple[dict, _Archive]:
    """The checked metadata of an okoco file and its (unread) arrays, or one ``ValueError``.

    The zip archive is opened directly (not through ``numpy.load``), its members are checked
    by name before anything is read, and the metadata's size is bounded by the file's.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    where = repr(str(path))
    try:
        return _read_zip(path, expected)
    except ValueError as error:
        text = str(error)
        if len(text) > _MAX_MESSAGE:
            text = text[: _MAX_MESSAGE - 3] + "..."
        if where not in text:
            text = f"{where}: {text}"
        raise ValueError(text) from None
    except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error,
            RecursionError, MemoryError, OverflowError, KeyError, TypeError, UnicodeError,
            SyntaxError, tokenize.TokenError) as error:
        # a cut or edited archive: zipfile, zlib and numpy raise all of these
        raise ValueError(f"{where} is not a readable okoco file (damaged archive: "
                         f"{type(error).__name__}: {_short(str(error), 200)})") from None


#: An archive of more members than this has its count checked against its metadata's array
#: references before the zip directory is read (whose cost grows with the count: ~9 us each).
_FEW_MEMBERS = 1024
#: A zip local file header: signature, version, flags, method, time, date, CRC, compressed
#: size, size, name length, extra field length.
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def _member_count(fp) -> int:
    """The number of members the zip's end record announces (nothing else read)."""
    end = zipfile._EndRecData(fp)
    if end is None:
        raise ValueError("not an .npz archive")
    return end[zipfile._ECD_ENTRIES_TOTAL]


def _first_member(fp, budget: int) -> tuple[str, bytes]:
    """The name and data of the archive's first member, read from its local header (okoco
    writes the metadata first), at most ``budget`` bytes."""
    fp.seek(0)
    head = fp.read(_LOCAL_HEADER.size)
    if len(head) < _LOCAL_HEADER.size:
        raise ValueError("the archive is cut short")
    magic, _, flags, method, _, _, _, packed, size, name_len, extra_len = \
        _LOCAL_HEADER.unpack(head)
    name, extra = fp.read(name_len), fp.read(extra_len)
    if magic != b"PK\x03\x04" or flags & 0x8 or method not in (zipfile.ZIP_STORED,
                                                               zipfile.ZIP_DEFLATED):
        raise ValueError("its first member is not stored as okoco writes its metadata")
    if 0xFFFFFFFF in (packed, size):  # the sizes are in the zip64 extra field
        while len(extra) >= 4:
            tag, length = struct.unpack_from("<2H", extra)
            if tag == 1:
                wide = iter(struct.unpack_from(f"<{length // 8}Q", extra, 4))
                size = next(wide) if size == 0xFFFFFFFF else size
                packed = next(wide) if packed == 0xFFFFFFFF else packed
                break
            extra = extra[4 + length:]
    if max(size, packed) > budget:
        raise ValueError("its metadata is larger than a file of this size can hold")
    data = fp.read(packed)
    if method == zipfile.ZIP_DEFLATED:
        data = zlib.decompressobj(-15).decompress(data, size)
    return name.decode("utf-8", "replace"), data


def _check_member_count(path: Path, budget: int) -> None:
    """Refuse an archive with more members than its metadata refers to before its zip
    directory is read: a file of 50,000 tiny members is refused in milliseconds."""
    with open(path, "rb") as fp:
        count = _member_count(fp)
        if count <= _FEW_MEMBERS:
            return
        name, data = _first_member(fp, budget)
        if name != META_KEY + ".npy":
            raise ValueError(f"{str(path)!r} is not an okoco file ({count} archive members, "
                             f"the first not its metadata)")
        text = str(_read_npy(io.BytesIO(data), len(data), "the okoco metadata"))
    references = text.count('"__array__"') + text.count('"__padded__"')
    if count > references + 1:
        raise ValueError(f"{str(path)!r} holds {count} archive members, but its metadata "
                         f"refers to {references} arrays")


def _read_zip(path: Path, expected: str | None) -> tuple[dict, _Archive]:
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{str(path)!r} is not an okoco file (not an .npz archive)")
    budget = MAX_EXPANSION * path.stat().st_size + _BUDGET_SLACK
    _check_member_count(path, budget)
    zf = zipfile.ZipFile(path)
    try:
        infos = zf.infolist()
        names = [info.filename for info in infos]
        if META_KEY + ".npy" not in names:
            raise ValueError(f"{str(path)!r} is an .npz archive but not an okoco file (no "
                             f"{META_KEY!r} entry)")
        bad = [n for n in names if not _MEMBER.fullmatch(n)]
        if bad or len(set(names)) != len(names) or len(names) > _MAX_CONTAINERS:
            raise ValueError(f"{str(path)!r} is not an okoco file (unexpected or repeated "
                             f"archive member(s) {_short(bad or names)})")
        for info in infos:  # headers only: no data is read (object arrays would need pickle)
            with zf.open(info) as fp:
                _npy_header(fp, info.file_size, f"archive member {info.filename!r}")
        members = {info.filename[:-4]: info for info in infos}
        archive = _Archive(zf, {k: v for k, v in members.items() if k != META_KEY}, budget,
                           path.stat().st_size)
        meta_info = members[META_KEY]
        archive.charge(meta_info.file_size, "the okoco metadata")
        with zf.open(meta_info) as fp:
            text_array = _read_npy(fp, meta_info.file_size, "the okoco metadata")
        if text_array.dtype.kind != "U" or text_array.ndim != 0:
            raise ValueError("the okoco metadata is not a text entry")
        text = str(text_array)
        del text_array
        # JSON containers cost ~100 bytes each once parsed: their count, not the text's length,
        # bounds the memory a crafted document can take
        if text.count("{") + text.count("[") > _MAX_CONTAINERS:
            raise ValueError(f"the okoco metadata has more than {_MAX_CONTAINERS} JSON "
                             "containers")
        # and each JSON value (at most one per ',' or ':') costs tens of bytes as an object
        archive.charge(48 * (text.count(",") + text.count(":")), "the okoco metadata")
        try:
            meta = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
        except (json.JSONDecodeError, RecursionError) as error:
            raise ValueError(f"the okoco metadata is not valid JSON "
                             f"({_short(str(error), 200)})") from None
        del text
        _depth_and_size(meta)
        if not isinstance(meta, dict) or meta.get("format") not in (FORMAT_NAME,
                                                                    CHECKPOINT_FORMAT_NAME):
            found = meta.get("format") if isinstance(meta, dict) else None
            raise ValueError(f"{str(path)!r} is not an okoco file (unknown format "
                             f"{_short(found)})")
        version = meta.get("format_version")
        if type(version) is not int or version not in SUPPORTED_VERSIONS:
            supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
            raise ValueError(
                f"{str(path)!r} has okoco file format version {_short(version)} (written by "
                f"okoco {_short(meta.get('okoco_version', '?'))}); this okoco {_version()} "
                f"reads format version {supported} only"
            )
        meta = _migrate(meta)
        if expected is not None and meta["format"] != expected:
            what = "a replay checkpoint" if meta["format"] == CHECKPOINT_FORMAT_NAME else "a model"
            raise ValueError(f"{str(path)!r} is {what} ({meta['format']!r}), not {expected!r}")
        return meta, archive
    except BaseException:
        zf.close()
        raise


class _Damaged:
    """Turn any error met while rebuilding a file's objects into one ``ValueError``.

    A file that passed :func:`_read` can still be damaged inside (an entry missing, a list
    where a mapping belongs, a reference to an array that is not there, saved parameters the
    constructor refuses, a member whose compressed data is corrupt): the decoder then raises
    ``KeyError``, ``TypeError``, ``IndexError``, ``AttributeError``, ``OverflowError``,
    ``zlib.error``, ... and the user gets one ``ValueError`` naming the file, of bounded length.
    """

    _CAUGHT = (KeyError, TypeError, IndexError, AttributeError, ValueError, ArithmeticError,
               RecursionError, MemoryError, zlib.error, zipfile.BadZipFile, EOFError, OSError,
               NotImplementedError, UnicodeError, SyntaxError, tokenize.TokenError)

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)

    def __enter__(self) -> _Damaged:
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if kind is None or not issubclass(kind, self._CAUGHT) or issubclass(kind,
                                                                           FileNotFoundError):
            return False
        if issubclass(kind, ValueError) and not issubclass(kind, UnicodeError):
            text = str(error)
            if len(text) > _MAX_MESSAGE:
                text = text[: _MAX_MESSAGE - 3] + "..."
            if repr(self.path) in text and len(str(error)) <= _MAX_MESSAGE:
                return False  # already says which file
            raise ValueError(text if repr(self.path) in text else f"{self.path!r}: {text}"
                             ) from error
        detail = f"missing entry {_short(str(error))}" if kind is KeyError else \
            _short(str(error), 200)
        raise ValueError(f"{self.path!r} is damaged or was edited ({kind.__name__}: {detail})"
                         ) from error
