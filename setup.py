"""Build of okoco's compiled core (``okoco._core``): Cython over SciPy's BLAS.

The project's metadata is in pyproject.toml; this file only declares the extension modules.
Build isolation brings Cython and SciPy (whose ``scipy/linalg/cython_blas.pxd`` the modules
cimport, as scikit-learn's ``sklearn/utils/_cython_blas.pyx`` does): the BLAS is SciPy's, found
at run time through ``scipy.linalg.cython_blas``, so nothing links against a BLAS here.

Install once: an editable install (``pip install -e ".[extra]"``) whose compiled modules are
already in ``okoco/_core`` and newer than every ``.pyx``/``.pxd`` there does not build them
again. Without this, each such install recompiled the whole core (about 2.5 minutes): build
isolation installs a fresh SciPy whose ``cython_blas.pxd``, which the modules cimport, is then
newer than the generated C files. Edit a ``.pyx``/``.pxd`` (or delete a compiled module) and the
next install builds the core again; ``python setup.py build_ext --inplace`` always checks.
"""

import sys
import sysconfig
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = ["_linalg", "_slots", "_kernels", "_steps", "_krls", "_kons", "_kors", "_ons", "_pros",
           "_multiclass", "_encode", "_loss", "_swap", "_mixture", "_embedding", "_heads"]

# -g0: no debug information (Python's own flags add -g: eight modules of 1.2-1.7 MB each, a
# fifth of that without it)
extensions = [
    Extension(f"okoco._core.{name}", [f"okoco/_core/{name}.pyx"], extra_compile_args=["-g0"])
    for name in MODULES
]

CORE = Path(__file__).resolve().parent / "okoco" / "_core"


def compiled_core_is_current() -> bool:
    """Whether every compiled module of this interpreter is in ``okoco/_core``, newer than every
    Cython source there (``.pyx``, ``.pxd``)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = [CORE / f"{name}{suffix}" for name in MODULES]
    sources = [*CORE.glob("*.pyx"), *CORE.glob("*.pxd")]
    if not sources or not all(path.is_file() for path in built):
        return False
    return min(p.stat().st_mtime for p in built) >= max(p.stat().st_mtime for p in sources)


# an editable install uses the modules in okoco/_core where they are (see the module note)
editable = any(arg in ("editable_wheel", "develop") for arg in sys.argv)

setup(
    ext_modules=[] if editable and compiled_core_is_current() else cythonize(
        extensions,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "initializedcheck": False,
            "cdivision": True,
        },
    ),
)
