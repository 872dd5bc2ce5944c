"""Build of okoco's compiled core (``okoco._core``): Cython over SciPy's BLAS.

The project's metadata is in pyproject.toml; this file only declares the extension modules.
Build isolation brings Cython and SciPy (whose ``scipy/linalg/cython_blas.pxd`` the modules
cimport, as scikit-learn's ``sklearn/utils/_cython_blas.pyx`` does): the BLAS is SciPy's, found
at run time through ``scipy.linalg.cython_blas``, so nothing links against a BLAS here.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = ["_linalg", "_slots", "_kernels", "_steps", "_kons", "_kors", "_pros", "_multiclass",
           "_encode", "_loss"]

# -g0: no debug information (Python's own flags add -g: eight modules of 1.2-1.7 MB each, a
# fifth of that without it)
extensions = [
    Extension(f"okoco._core.{name}", [f"okoco/_core/{name}.pyx"], extra_compile_args=["-g0"])
    for name in MODULES
]

setup(
    ext_modules=cythonize(
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
