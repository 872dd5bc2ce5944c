"""Incremental factorizations of a growing symmetric positive-definite matrix.

Every learner of okoco that keeps a kernel matrix over a growing set of *atoms* (KONS,
Sketched-KONS, KRLS, the KORS / ALD / SQUEAK / INK-Estimate dictionaries) factorizes it with
:class:`IncrementalCholesky`: a lower Cholesky factor ``L`` (``A = L L^T``) that is *bordered*
when an atom arrives, updated by a rank-one modification when an atom leaves or is re-weighted,
and refreshed from scratch when a residual check detects drift. The window's inverse
(:class:`SlotInverse`) is kept over the slots of a ring, and the points themselves, with their
per-point coefficients and cached squared norms, in the point store :class:`Rows` (a buffer that
doubles, or a ring of ``max_size`` rows).

Storage is *packed*: row ``r`` of ``L`` occupies ``r + 1`` consecutive slots of a flat buffer
(``L`` row-major lower packed, which is ``L^T`` column-major upper packed, the BLAS ``tp`` layout).
Appending an atom therefore writes ``m + 1`` numbers at the end of the buffer, the factor of the
leading ``m x m`` block is always one contiguous slice, and triangular solves call BLAS ``dtpsv`` on
it without any copy: ``O(m^2)`` per solve and per append, with the buffer doubling its capacity.

Complexities (``m`` atoms)
--------------------------
======================  ==============  =====================================================
operation               cost            how
======================  ==============  =====================================================
``half_solve``          ``O(m^2)``      ``L^{-1} v`` by packed forward substitution
``back_solve``          ``O(m^2)``      ``L^{-T} h``
``solve``, ``quad``     ``O(m^2)``      two / one triangular solves
``append``              ``O(m^2)``      bordering: ``h = L^{-1} c``, pivot ``sqrt(d - h.h)``
``remove``              ``O(m^2)``      delete row/column, rank-one *update* of the trailing block
``rescale``             ``O(m^2)``      scale row/column, rank-one update or downdate
``logdet``              ``O(m)``        ``2 sum log diag(L)``
residual check          ``O(m^3)``      every ``max(m, 16)`` modifications: ``O(m^2)`` amortised
======================  ==============  =====================================================

The steps run in okoco's compiled core (``okoco._core._linalg``, Cython over SciPy's BLAS) on
the buffers these objects own, in place: the solves are BLAS ``dtpsv`` on the packed factor, a
removal moves the rows below up and updates the trailing block by the rank-one rotations of
LINPACK's ``dchud`` (no dense temporary), and a failed downdate is a status code turned into the
error below. The state is only the numpy buffers, so copying, pickling and saving see arrays.

Examples
--------
>>> import numpy as np
>>> from okoco.linalg import IncrementalCholesky
>>> A = np.array([[4.0, 2.0, 0.4], [2.0, 3.0, 0.5], [0.4, 0.5, 2.0]])
>>> chol = IncrementalCholesky()
>>> for j in range(3):
...     _ = chol.append(A[:j, j], A[j, j])
>>> bool(np.allclose(chol.solve([1.0, 2.0, 3.0]), np.linalg.solve(A, [1.0, 2.0, 3.0])))
True
>>> bool(np.isclose(chol.logdet(), np.linalg.slogdet(A)[1]))
True
"""

import inspect

from okoco.linalg._cholesky import IncrementalCholesky, cholesky_rank_one
from okoco.linalg._rows import Rows
from okoco.linalg._scaled import ScaledIdentity
from okoco.linalg._symmetric import PackedSymmetric
from okoco.linalg._window import SlotInverse

__all__ = ["IncrementalCholesky", "PackedSymmetric", "Rows", "ScaledIdentity", "SlotInverse",
           "cholesky_rank_one"]

# The public path of each name is okoco.linalg (saved files and pickles name the class by it;
# the modules of this package are an implementation detail).
for _public in (IncrementalCholesky, PackedSymmetric, Rows, ScaledIdentity, SlotInverse,
                cholesky_rank_one):
    _public.__module__ = __name__
del _public
# doctest finds the classes here, but not their methods' examples (the methods' globals are
# their module's): listed for it
__test__ = {f"{cls.__name__}.{name}": getattr(cls, name)
            for cls in (IncrementalCholesky, PackedSymmetric, Rows, ScaledIdentity, SlotInverse)
            for name in vars(cls)
            if not name.startswith("_") and inspect.isroutine(getattr(cls, name))
            and ">>>" in (getattr(cls, name).__doc__ or "")}
