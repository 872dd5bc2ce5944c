"""Positive-definite kernels, vectorised over rows.

Every kernel is a small immutable object with two methods:

- ``k(X, Y)`` returns the ``(n, m)`` Gram block between the rows of ``X`` and ``Y``;
- ``k.diag(X)`` returns ``k(x_i, x_i)`` for every row, without forming the block.

Kernels combine: ``k1 + k2`` (:class:`Sum`), ``k1 * k2`` (:class:`Product`, elementwise) and
``c * k`` for ``c > 0`` (:class:`Scaled`) are kernels again, positive semi-definite because sums,
Schur products and positive multiples of PSD matrices are (Schur 1911). ``RBF(0.1) + Linear()``
lets an RBF fit the shape while the linear part extrapolates a trend.

A 1-D argument is treated as a single row. ``normalize=True`` turns any kernel into
``k(x, y) / sqrt(k(x, x) k(y, y))`` so that ``k(x, x) = 1``, the assumption under which the
KONS bounds are stated (Calandriello et al. 2017, Sect. 2). RBF and Laplacian kernels are
normalised already.

Examples
--------
>>> import numpy as np
>>> from okoco import kernels
>>> k = kernels.RBF(gamma=0.5)
>>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
>>> np.round(k(X, X), 4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])
>>> k.diag(X)
array([1., 1.])
>>> trend = 2.0 * kernels.RBF(gamma=0.5) + kernels.Linear()
>>> trend
Sum(left=Scaled(scale=2.0, kernel=RBF(gamma=0.5)), right=Linear())
>>> np.round(trend(X, X), 4)
array([[2.    , 1.2131],
       [1.2131, 3.    ]])
"""

# one name a line, in the order of the API page (mkdocstrings lists them as imported here)
from okoco.kernels._algebra import Kernel  # noqa: I001
from okoco.kernels._classic import RBF
from okoco.kernels._classic import Laplacian
from okoco.kernels._classic import Polynomial
from okoco.kernels._classic import Linear
from okoco.kernels._algebra import Sum
from okoco.kernels._algebra import Product
from okoco.kernels._algebra import Scaled
from okoco.kernels._distances import sq_dist_row
from okoco.kernels._classic import rbf_row
from okoco.kernels._classic import finite_row
from okoco.kernels._classic import self_similarity
from okoco.kernels._algebra import SCALE
from okoco.kernels._distances import _DIRECT_SIZE, _NEAR_FACTOR  # noqa: F401
from okoco.kernels._algebra import _REGISTRY  # noqa: F401  (the classes by their declared names)

__all__ = ["Kernel", "RBF", "Laplacian", "Polynomial", "Linear", "Sum", "Product", "Scaled",
           # the rows and checks the learners use beside the kernels
           "SCALE", "sq_dist_row", "rbf_row", "finite_row", "self_similarity"]

# One module per job (_distances: squared distances; _algebra: the base class, sums, products
# and multiples; _classic: the kernels themselves and the checks on their rows). Each class
# keeps the public path okoco.kernels.NAME; okoco files name a kernel by its declared ``name``.
for _cls in (Kernel, RBF, Laplacian, Polynomial, Linear, Sum, Product, Scaled):
    _cls.__module__ = __name__
del _cls
