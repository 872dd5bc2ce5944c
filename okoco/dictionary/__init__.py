"""Ridge-leverage-score dictionaries shared by the okoco learners.

One interface for every selection rule: ``update(x)`` (``x`` a dict or a 1-D array) returns whether
the point joined the dictionary; ``indices``, ``weights``, ``size``, ``atoms``, ``n_seen``;
``nystrom_features(X)`` and ``approximate_kernel(X, Y)`` give the regularized Nyström
approximation ``K~ = K S (S^T K S + gamma I)^{-1} S^T K``.

=====================  ==========================================================================
:class:`KORS`          Kernel Online Row Sampling (Calandriello et al. 2017, Alg. 2), ``O(m^2)``
:class:`ALD`           approximate linear dependence / OKS (Engel et al. 2004), ``O(m^2)``
:class:`SQUEAK`        sequential RLS sampling with shrinking (seed 002, Alg. 1), ``O(m^3)``
:class:`INKEstimate`   sequential RLS sampling with estimated ``d_eff`` (seed 000, Alg. 3)
:class:`NystromKRR`    kernel ridge regression on any dictionary (Woodbury, ``O(n m^2 + m^3)``)
=====================  ==========================================================================

Exact references (``O(n^3)``): :func:`ridge_leverage_scores`, :func:`effective_dimension`,
:func:`max_degrees_of_freedom`, :func:`online_ridge_leverage_scores`,
:func:`online_effective_dimension`, :func:`log_det`; seed 003's fast scores
:func:`approximate_ridge_leverage_scores`; KORS oversampling :func:`beta_paper`, :func:`beta_proof`.

Examples
--------
>>> import numpy as np
>>> from okoco.kernels import RBF
>>> from okoco.dictionary import KORS
>>> kors = KORS(RBF(gamma=1.0), alpha=1.0, eps=0.5, beta=5.0, seed=0)
>>> kors.update({"a": 0.1, "b": 2.0})
True
>>> kors.indices, kors.weights
(array([0]), array([1.]))
"""

from okoco import persistence
from okoco.dictionary._base import Dictionary
from okoco.dictionary.ald import ALD
from okoco.dictionary.exact import (
    approximate_ridge_leverage_scores,
    effective_dimension,
    log_det,
    max_degrees_of_freedom,
    online_effective_dimension,
    online_ridge_leverage_scores,
    ridge_leverage_scores,
)
from okoco.dictionary.ink import INKEstimate, shrink_expand
from okoco.dictionary.kors import KORS, beta_paper, beta_proof
from okoco.dictionary.nystrom import NystromKRR
from okoco.dictionary.squeak import SQUEAK

# okoco.save / okoco.load take these whole (KORS and ALD are saved as parts of the learners)
persistence.register(SQUEAK, INKEstimate, NystromKRR, learner=True)

__all__ = [
    "Dictionary",
    "KORS",
    "ALD",
    "SQUEAK",
    "INKEstimate",
    "NystromKRR",
    "ridge_leverage_scores",
    "effective_dimension",
    "max_degrees_of_freedom",
    "online_ridge_leverage_scores",
    "online_effective_dimension",
    "log_det",
    "approximate_ridge_leverage_scores",
    "beta_paper",
    "beta_proof",
    "shrink_expand",
]
