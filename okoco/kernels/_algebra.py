"""The kernel base class and the kernel algebra: sums, products and positive multiples."""

from __future__ import annotations

from numbers import Real

import numpy as np

from okoco._registry import Registry
from okoco._validation import Interval, check_params
from okoco.kernels._distances import _as_rows

#: The constraint of every kernel scale ``gamma``.
SCALE = [Interval(Real, 0, None, closed="neither")]

#: The kernel classes by the names they declare (``Kernel``'s class keywords): the names okoco
#: files may hold and the command line's names are read from here.
_REGISTRY = Registry("kernel")


class Kernel:
    """Base class: subclasses implement ``_gram`` and ``_diag``; this adds normalisation.

    A user kernel may subclass this (implementing ``_gram(X, Y)`` and ``_diag(X)``) or be any
    object with the same ``__call__`` and ``diag`` methods.

    A subclass declares its facts once, as keywords of its ``class`` statement; each holds for
    exactly that class (a subclass of it declares its own, and has none by default):

    - ``name``: the stable name okoco files give it (saved by name and ``_params()``, rebuilt
      by its constructor); without it, a learner holding it cannot be saved;
    - ``cli_name``: its name on the command line (``okoco.experiment.KERNELS``);
    - ``bounded``: ``k(x, x) = 1`` and every value in ``[0, 1]`` for finite inputs (RBF,
      Laplacian), so that the learners skip the finiteness checks of its rows and take
      ``k(x, x) = 1`` without a call (read as the class attribute ``bounded``; an attribute
      ``bounded = True`` in the class body declares it too);
    - ``code``: its member of ``okoco._core._kernels.KernelCode``, for okoco's built-in kernels
      whose rows the compiled steps compute (their branch in ``okoco/_core/_kernels.pyx``).

    Examples
    --------
    >>> import numpy as np
    >>> from okoco.kernels import Kernel
    >>> class Cosine(Kernel):
    ...     def _gram(self, X, Y):
    ...         return X @ Y.T
    ...     def _diag(self, X):
    ...         return np.einsum("ij,ij->i", X, X)
    >>> k = Cosine()
    >>> k.normalize = True
    >>> np.round(k(np.array([[1.0, 0.0], [1.0, 1.0]])), 4)
    array([[1.    , 0.7071],
           [0.7071, 1.    ]])
    >>> class Tent(Kernel, bounded=True):  # (name=..., cli_name=...: saved, on the command line)
    ...     def _gram(self, X, Y):
    ...         return np.maximum(1.0 - np.abs(X[:, None, :] - Y[None, :, :]).sum(-1), 0.0)
    ...     def _diag(self, X):
    ...         return np.ones(X.shape[0])
    >>> Tent.bounded, Tent().bounded, Cosine.bounded
    (True, True, False)
    """

    normalize: bool = False
    bounded: bool = False
    _code: int | None = None  # its member of okoco._core._kernels.KernelCode, if compiled

    def __init_subclass__(cls, *, name: str | None = None, cli_name: str | None = None,
                          bounded: bool | None = None, code: int | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY.add(cls, name, cli_name)
        # (a ``bounded = True`` in the class body counts as the keyword; never inherited)
        cls.bounded = bool(vars(cls).get("bounded", False) if bounded is None else bounded)
        cls._code = None if code is None else int(code)  # not inherited (see compiled_kernel)

    def __call__(self, X, Y=None) -> np.ndarray:
        X = _as_rows(X)
        Y = X if Y is None else _as_rows(Y)
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
        K = self._gram(X, Y)
        if self.normalize:
            K = K / np.sqrt(np.outer(self._self_similarity(X), self._self_similarity(Y)))
        return K

    def diag(self, X) -> np.ndarray:
        X = _as_rows(X)
        if self.normalize:
            self._self_similarity(X)  # validates
            return np.ones(X.shape[0])
        return self._diag(X)

    def _self_similarity(self, X: np.ndarray) -> np.ndarray:
        """``k(x, x)`` before normalisation; 0 (e.g. the zero vector, linear kernel) is an error."""
        d = self._diag(X)
        bad = np.flatnonzero(~(d > 0))
        if bad.size:
            raise ValueError(
                f"normalize=True is undefined for row {int(bad[0])}: its k(x, x) is "
                f"{float(d[bad[0]])!r} (e.g. the zero vector under a linear kernel)"
            )
        return d

    def _gram(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _diag(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _params(self) -> dict:
        return {}

    def __repr__(self) -> str:
        params = dict(self._params())
        if self.normalize:
            params["normalize"] = True
        inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    # -- kernel algebra: k1 + k2, k1 * k2, c * k --------------------------------------------

    def __add__(self, other):
        return Sum(self, other) if isinstance(other, Kernel) else NotImplemented

    def __mul__(self, other):
        if isinstance(other, Kernel):
            return Product(self, other)
        if isinstance(other, Real) and not isinstance(other, bool):
            return Scaled(other, self)
        return NotImplemented

    def __rmul__(self, other):
        if isinstance(other, Real) and not isinstance(other, bool):
            return Scaled(other, self)
        return NotImplemented


class _OkocoKernel:
    """The constraint on the parts of a kernel sum, product or multiple: okoco kernels."""

    def accepts_type(self, value) -> bool:
        return isinstance(value, Kernel)

    def convert(self, value):
        return value

    def __str__(self) -> str:
        return "an okoco kernel"

_PARTS = {"left": [_OkocoKernel()], "right": [_OkocoKernel()], "normalize": ["boolean"]}


class _Pair(Kernel):
    """Two kernels combined entrywise (the shared part of :class:`Sum` and :class:`Product`)."""

    _parameter_constraints = _PARTS

    def __init__(self, left: Kernel, right: Kernel, normalize: bool = False):
        self.left = left
        self.right = right
        self.normalize = normalize
        check_params(self)
        self.normalize = bool(normalize)

    def _params(self):
        return {"left": self.left, "right": self.right}


class Sum(_Pair, name="Sum"):
    """Sum of two kernels, ``k(x, y) = left(x, y) + right(x, y)``; usually written ``left + right``.

    Parameters
    ----------
    left, right
        okoco kernels (their own ``normalize`` applies first).
    normalize
        Divide the sum by ``sqrt(k(x, x) k(y, y))``.

    Examples
    --------
    >>> from okoco.kernels import RBF, Linear
    >>> k = RBF(gamma=1.0) + Linear()
    >>> float(k([1.0, 0.0], [1.0, 2.0])[0, 0]) == float(__import__("numpy").exp(-4.0)) + 1.0
    True
    >>> float(k.diag([[1.0, 2.0]])[0])  # 1 + ||x||^2
    6.0
    """


    def _gram(self, X, Y):
        return self.left(X, Y) + self.right(X, Y)  # new arrays: a user kernel may cache its own

    def _diag(self, X):
        return self.left.diag(X) + self.right.diag(X)


class Product(_Pair, name="Product"):
    """Elementwise product of two kernels, ``k(x, y) = left(x, y) * right(x, y)``;
    usually written ``left * right``. PSD by the Schur product theorem.

    Parameters
    ----------
    left, right
        okoco kernels (their own ``normalize`` applies first).
    normalize
        Divide the product by ``sqrt(k(x, x) k(y, y))``.

    Examples
    --------
    >>> from okoco.kernels import Linear
    >>> k = Linear() * Linear()  # the homogeneous quadratic kernel <x, y>^2
    >>> float(k([1.0, 2.0], [3.0, 4.0])[0, 0])
    121.0
    """


    def _gram(self, X, Y):
        return self.left(X, Y) * self.right(X, Y)

    def _diag(self, X):
        return self.left.diag(X) * self.right.diag(X)


class Scaled(Kernel, name="Scaled"):
    """A kernel times a positive constant, ``k(x, y) = scale * kernel(x, y)``; usually written
    ``scale * kernel``.

    Parameters
    ----------
    scale
        The factor, finite and > 0.
    kernel
        An okoco kernel.

    Examples
    --------
    >>> from okoco.kernels import RBF
    >>> k = 0.5 * RBF(gamma=2.0)
    >>> k
    Scaled(scale=0.5, kernel=RBF(gamma=2.0))
    >>> k.diag([[3.0], [4.0]])
    array([0.5, 0.5])
    """

    _parameter_constraints = {"scale": SCALE, "kernel": [_OkocoKernel()]}

    def __init__(self, scale: float, kernel: Kernel):
        self.scale = scale
        self.kernel = kernel
        check_params(self)

    def _gram(self, X, Y):
        return self.scale * self.kernel(X, Y)

    def _diag(self, X):
        return self.scale * self.kernel.diag(X)

    def _params(self):
        return {"scale": self.scale, "kernel": self.kernel}
