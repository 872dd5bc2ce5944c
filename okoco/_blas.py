"""Keep okoco's small BLAS calls out of OpenBLAS's thread pool, without changing user settings.

OpenBLAS, the BLAS of numpy's and scipy's wheels, hands some level-1 and level-2 routines to its
thread pool at sizes where waking the pool costs far more than the arithmetic: packed symmetric
products and rank-one updates (``dspmv``, ``dspr``) at 100 rows or more, dot products over more
than 10,000 elements. With any other busy process on the machine a call of a few microseconds
then waits milliseconds for a core. okoco's hot paths avoid that in two ways, chosen by
measurement (``docs/benchmarks.md``, section "BLAS threads"):

* routines that never thread: packed triangular solves (OpenBLAS has no threaded ``tpsv``),
  and calls split into blocks below OpenBLAS's threading thresholds: :func:`dot` and
  :func:`axpy` here, and in the compiled core (``okoco._core``) the kernel rows' products (rows
  in blocks of 8,192 numbers) and the packed symmetric updates (one dot product and one
  ``axpy`` per row);
* for the dense ``O(m^3)`` work (the periodic checks of a factorization, SQUEAK's and
  INK-Estimate's updates), a :class:`OneThread` scope: the library's thread
  count is set to one on entry and the user's count restored on exit, two or three direct calls
  into the library (a few microseconds, where ``threadpoolctl.threadpool_limits`` costs
  milliseconds per use because it inspects every loaded library each time).

Importing okoco changes nothing; the libraries are located (by ``threadpoolctl``, which only
reads) on the first use of a scope. A scope is also a decorator: the dictionaries whose step is
dense linear algebra (SQUEAK, INK-Estimate) run their ``update`` inside one. While a scope is
active, other Python threads calling the same library also run it on one thread; scopes nest and
are safe to use from several threads.

Examples
--------
>>> import numpy as np
>>> from okoco._blas import dot, scipy_one_thread
>>> a = np.ones(25_000)
>>> dot(a, a)
25000.0
>>> with scipy_one_thread:
...     pass
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import threading

import numpy as np
from scipy.linalg.blas import daxpy as _daxpy

__all__ = ["OneThread", "all_one_thread", "axpy", "dot", "scipy_one_thread"]

# OpenBLAS computes ddot and daxpy on one thread up to 10,000 elements (kernel/x86_64/ddot.c and
# the other architectures' kernels; interface/axpy.c); blocks of this length stay below that.
DOT_BLOCK = 8192


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` for 1-D float arrays, never on BLAS threads (blocks of ``DOT_BLOCK``).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco._blas import dot
    >>> dot(np.arange(3.0), np.ones(3))
    3.0
    """
    n = a.shape[0]
    if n <= DOT_BLOCK:
        return float(a.dot(b))  # the bits of a @ b (both BLAS ddot), half its call cost
    total = 0.0
    for i in range(0, n, DOT_BLOCK):
        total += a[i : i + DOT_BLOCK].dot(b[i : i + DOT_BLOCK])
    return float(total)


def axpy(alpha: float, x: np.ndarray, y: np.ndarray) -> None:
    """``y[:len(x)] += alpha * x`` in place, never on BLAS threads (blocks of ``DOT_BLOCK``).

    ``y`` must be a contiguous float64 array at least as long as ``x`` (a learner's own
    buffer): one BLAS ``daxpy``, where numpy takes a slice, a product and an in-place sum.

    Examples
    --------
    >>> import numpy as np
    >>> from okoco._blas import axpy
    >>> y = np.zeros(4)
    >>> axpy(2.0, np.ones(3), y)
    >>> y
    array([2., 2., 2., 0.])
    """
    n = x.shape[0]
    if 0 < n <= DOT_BLOCK:
        if _daxpy(x, y, n, alpha) is not y:  # f2py worked on a copy: y is not as required
            raise ValueError("axpy: y must be a contiguous float64 array")
        return
    for i in range(0, n, DOT_BLOCK):  # n, a, offx, incx, offy, incy
        if _daxpy(x, y, min(DOT_BLOCK, n - i), alpha, i, 1, i, 1) is not y:
            raise ValueError("axpy: y must be a contiguous float64 array")


class _Library:
    """Direct get/set of one loaded BLAS's thread count, and the scope's nesting state."""

    __slots__ = ("get", "set", "depth", "saved")

    def __init__(self, get, set_):
        self.get, self.set = get, set_
        self.depth = 0
        self.saved = 1


def _openblas_functions(dynlib):
    """``(get, set)`` ctypes functions of an OpenBLAS, whatever its symbol prefix and suffix."""
    for prefix, suffix in itertools.product(("", "scipy_"), ("", "64_", "_64")):
        name = f"{prefix}openblas_get_num_threads{suffix}"
        if hasattr(dynlib, name):
            get = getattr(dynlib, name)
            set_ = getattr(dynlib, f"{prefix}openblas_set_num_threads{suffix}")
            get.restype, set_.restype = ctypes.c_int, None
            # no argtypes: ctypes passes a Python int as a C int anyway, at half the cost of
            # a call through declared types (a scope's two calls every step of a learner)
            return get, set_
    return None


def _discover() -> dict[str, list[_Library]]:
    """The loaded BLAS libraries by the package they serve (``"numpy"``, ``"scipy"``)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a dependency; without it the scopes do nothing
        return {"numpy": [], "scipy": []}
    found: dict[str, list[_Library]] = {"numpy": [], "scipy": [], "": []}
    for controller in ThreadpoolController().lib_controllers:
        if controller.user_api != "blas":
            continue
        functions = None
        if controller.internal_api == "openblas" and controller.threading_layer != "openmp":
            functions = _openblas_functions(controller.dynlib)
        if functions is None:  # MKL, BLIS, OpenMP OpenBLAS: threadpoolctl's own setters
            functions = (controller.get_num_threads, controller.set_num_threads)
        path = os.path.normcase(controller.filepath)
        role = next((r for r in ("numpy", "scipy") if f"{os.sep}{r}" in path), "")
        found[role].append(_Library(*functions))
    shared = found.pop("")  # a system or conda BLAS serves both packages
    return {role: libs + shared for role, libs in found.items()}


_LOCK = threading.Lock()
_LIBRARIES: dict[str, list[_Library]] | None = None


def find_libraries() -> dict[str, list[_Library]]:
    """The loaded BLAS libraries by package, found once per process (about 10 ms: threadpoolctl
    inspects every loaded shared library) and cached.

    The first :class:`OneThread` scope calls it; a learner calls it when it is built, so that
    the search does not fall in the middle of a timed replay (KRLS enters its first scope when
    its dictionary passes ``PackedSymmetric.DENSE_MAX`` atoms).
    """
    global _LIBRARIES
    with _LOCK:
        if _LIBRARIES is None:
            import scipy.linalg  # noqa: F401 - scipy loads its BLAS lazily; find it too

            _LIBRARIES = _discover()
        return _LIBRARIES


class OneThread:
    """A reusable scope that runs the BLAS of the named packages on one thread.

    On entry each library's thread count is read and, if above one, set to one; on exit the
    count read is restored. Nested and concurrent scopes share a counter per library, so only the
    outermost one touches the library.

    Parameters
    ----------
    *packages
        ``"numpy"`` and/or ``"scipy"``: whose BLAS to limit (numpy's and scipy's wheels each
        bundle their own OpenBLAS).
    """

    def __init__(self, *packages: str):
        self.packages = packages
        self._libs: list[_Library] | None = None

    def _libraries(self) -> list[_Library]:
        found = find_libraries()
        libs = {id(lib): lib for p in self.packages for lib in found[p]}
        return list(libs.values())

    def __enter__(self) -> OneThread:
        libs = self._libs
        if libs is None:
            libs = self._libs = self._libraries()
        with _LOCK:
            for lib in libs:
                if lib.depth == 0:
                    saved = lib.saved = lib.get()
                    if saved > 1:
                        lib.set(1)
                lib.depth += 1
        return self

    def __exit__(self, *exc) -> None:
        with _LOCK:
            for lib in self._libs:
                depth = lib.depth = lib.depth - 1
                if depth == 0 and lib.saved > 1:
                    lib.set(lib.saved)

    def __call__(self, function):
        """Use the scope as a decorator: ``function`` runs inside it."""

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with self:
                return function(*args, **kwargs)

        return wrapper

    def __repr__(self) -> str:
        return f"OneThread{self.packages!r}"


scipy_one_thread = OneThread("scipy")
all_one_thread = OneThread("numpy", "scipy")
