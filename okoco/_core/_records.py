"""The named records of KONS's compiled step (``okoco._core._kons``), which its callers
(``KONS``, ``Auto``, ``MulticlassClassifier``) read by name: the step protocol's records."""

from collections import namedtuple

#: The records of a step (named tuples): ``analyse``'s, the kernel row ``k`` over the stored
#: points, ``kappa = k(x, x)``, ``e = D k`` over the atoms, ``h`` its solve (``P e`` for the
#: window, ``L^{-1} e`` for the factor), the unclipped prediction ``ybar``, ``kc = k . c`` and
#: ``hh = e^T (Kbar_I + alpha I)^{-1} e``; ``check``'s, the step's scalars (``s`` the spread,
#: ``shift`` the projection's, ``yhat``, ``gdot``, ``weight``, ``d_t`` and the noise term).
Analysis = namedtuple("Analysis", "k kappa e h ybar kc hh", module=__name__)
Step = namedtuple("Step", "s shift yhat gdot weight d_t noise", module=__name__)
