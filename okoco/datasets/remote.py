"""The standard benchmarks of the online kernel literature, downloaded once into a cache.

The files come from the LIBSVM data sets page (Chang & Lin,
https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/) in svmlight format and are kept as
downloaded in the cache directory: ``$OKOCO_DATA`` if set, else ``~/.cache/okoco``.

Offline use: when a file is missing and cannot be downloaded, a :class:`DownloadError` says
where to put it by hand (the full path, with the file name the cache expects). Any copy of the
LIBSVM file placed there is used as is.

Checksums (trust on first use): okoco ships no sha256 for these files, because none could be
verified when this module was written (the build machine had no access to the LIBSVM site). The
first time a file is used, its sha256 is written next to it (``<file>.sha256``); every later load
checks the file against that record and raises :class:`ChecksumError` on a mismatch. Pass
``sha256=`` to check against a known value instead, or ``verify=False`` to skip the check.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from okoco.datasets.base import Dataset
from okoco.datasets.files import load_svmlight

__all__ = ["REMOTE", "RemoteSpec", "DownloadError", "ChecksumError", "cache_dir", "fetch",
           "load_remote"]

LIBSVM_URL = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets"


@dataclass(frozen=True)
class RemoteSpec:
    """Where a benchmark file comes from and what it holds.

    Examples
    --------
    >>> from okoco.datasets import REMOTE
    >>> spec = REMOTE["abalone"]
    >>> spec.filename, spec.n, spec.d, spec.task
    ('abalone', 4177, 8, 'regression')
    """

    filename: str
    url: str
    n: int
    d: int
    task: str
    description: str
    sha256: str | None = None  # None: recorded on first use (see the module docstring)


REMOTE: dict[str, RemoteSpec] = {
    "cadata": RemoteSpec("cadata", f"{LIBSVM_URL}/regression/cadata", 20640, 8, "regression",
                         "LIBSVM: California housing prices (download)"),
    "cpusmall": RemoteSpec("cpusmall", f"{LIBSVM_URL}/regression/cpusmall", 8192, 12,
                           "regression", "LIBSVM: computer activity, CPU user time (download)"),
    "abalone": RemoteSpec("abalone", f"{LIBSVM_URL}/regression/abalone", 4177, 8, "regression",
                          "LIBSVM: abalone age from measurements (download)"),
    "ijcnn1": RemoteSpec("ijcnn1.bz2", f"{LIBSVM_URL}/binary/ijcnn1.bz2", 49990, 22, "binary",
                         "LIBSVM: IJCNN 2001 challenge, training set (download)"),
    "cod-rna": RemoteSpec("cod-rna", f"{LIBSVM_URL}/binary/cod-rna", 59535, 8, "binary",
                          "LIBSVM: non-coding RNA detection, training set (download)"),
    "a9a": RemoteSpec("a9a", f"{LIBSVM_URL}/binary/a9a", 32561, 123, "binary",
                      "LIBSVM: UCI adult income, binarised features (download)"),
}


class DownloadError(OSError):
    """A benchmark file is not in the cache and could not be downloaded.

    Examples
    --------
    >>> import tempfile
    >>> from okoco.datasets import DownloadError, load_remote
    >>> try:
    ...     load_remote("abalone", data_home=tempfile.mkdtemp(), download=False)
    ... except DownloadError as error:
    ...     print(str(error)[:41])
    dataset 'abalone' is not in the cache; pl
    """


class ChecksumError(ValueError):
    """A cached file does not match its expected sha256.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from okoco.datasets import ChecksumError, load_remote
    >>> home = tempfile.mkdtemp()
    >>> _ = Path(home, "abalone").write_text("1 1:0.5\\n")
    >>> try:
    ...     load_remote("abalone", data_home=home, download=False, sha256="0" * 64)
    ... except ChecksumError:
    ...     print("corrupt")
    corrupt
    """


def cache_dir(data_home: str | os.PathLike | None = None) -> Path:
    """The cache directory: ``data_home``, else ``$OKOCO_DATA``, else ``~/.cache/okoco``.

    Examples
    --------
    >>> str(cache_dir("/tmp/okoco-data"))
    '/tmp/okoco-data'
    """
    if data_home is None:
        data_home = os.environ.get("OKOCO_DATA") or Path.home() / ".cache" / "okoco"
    return Path(data_home).expanduser()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download(url: str, target: Path, timeout: float) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            for block in iter(lambda: response.read(1 << 20), b""):
                out.write(block)
        os.replace(part, target)  # never leave a half-written file under the real name
    finally:
        part.unlink(missing_ok=True)


def fetch(name: str, *, data_home: str | os.PathLike | None = None, download: bool = True,
          verify: bool = True, sha256: str | None = None, url: str | None = None,
          timeout: float = 30.0) -> Path:
    """Path of a benchmark file in the cache, downloading it first if needed.

    Parameters
    ----------
    name
        A key of ``REMOTE`` (``cadata``, ``cpusmall``, ``abalone``, ``ijcnn1``, ``cod-rna``,
        ``a9a``).
    data_home
        Cache directory (default: ``$OKOCO_DATA`` or ``~/.cache/okoco``).
    download
        Try to download a missing file; if ``False`` a missing file is an error at once.
    verify
        Check the file's sha256 (against ``sha256``, else against the value recorded on first use).
    sha256
        Expected checksum, overriding the recorded one.
    url
        Download from this address instead (a mirror; ``file://`` works too).
    timeout
        Network timeout in seconds.

    Raises
    ------
    DownloadError
        The file is missing and could not be downloaded; the message gives the path to place it at.
    ChecksumError
        The file does not match the expected checksum.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     fetch("a9a", data_home=tempfile.mkdtemp(), download=False)
    ... except DownloadError as e:
    ...     print(str(e)[:40])
    dataset 'a9a' is not in the cache; place
    """
    if name not in REMOTE:
        raise ValueError(f"unknown benchmark {name!r}; choose from {sorted(REMOTE)}")
    spec = REMOTE[name]
    home = cache_dir(data_home)
    path = home / spec.filename
    source = url or spec.url
    hint = (f"place the file by hand at {path} (file name {spec.filename!r}, from {spec.url}; "
            "the cache directory is $OKOCO_DATA, else ~/.cache/okoco)")
    if not path.is_file():
        if not download:
            raise DownloadError(f"dataset {name!r} is not in the cache; {hint}")
        try:
            _download(source, path, timeout)
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            raise DownloadError(
                f"cannot download dataset {name!r} from {source} ({reason}); {hint}"
            ) from e
    record = path.with_name(path.name + ".sha256")
    if verify:
        expected = sha256 or spec.sha256
        if expected is None and record.is_file():
            expected = record.read_text().split()[0] if record.read_text().split() else None
        actual = _sha256(path)
        if expected is None:
            record.write_text(f"{actual}  {spec.filename}\n")  # trust on first use
        elif actual.lower() != expected.lower():
            raise ChecksumError(
                f"{path} has sha256 {actual}, expected {expected}; the file is corrupt or a "
                f"different version: delete it (and {record.name}) to fetch it again, or pass "
                "verify=False to use it anyway"
            )
    return path


def load_remote(name: str, *, data_home: str | os.PathLike | None = None, download: bool = True,
                verify: bool = True, sha256: str | None = None, url: str | None = None,
                timeout: float = 30.0) -> Dataset:
    """Load a LIBSVM benchmark (see :func:`fetch` for the cache and the checks).

    Examples
    --------
    >>> import os, tempfile
    >>> home = tempfile.mkdtemp()
    >>> _ = open(os.path.join(home, "cpusmall"), "w").write("90 1:0.5 12:1\\n80 2:0.25\\n")
    >>> ds = load_remote("cpusmall", data_home=home)   # placed by hand, checksum recorded
    >>> ds.n, ds.d, ds.task
    (2, 12, 'regression')
    """
    spec = REMOTE.get(name)
    if spec is None:
        raise ValueError(f"unknown benchmark {name!r}; choose from {sorted(REMOTE)}")
    path = fetch(name, data_home=data_home, download=download, verify=verify, sha256=sha256,
                 url=url, timeout=timeout)
    ds = load_svmlight(path, n_features=spec.d, zero_based=False, task=spec.task, name=name)
    ds.description = spec.description
    return ds
