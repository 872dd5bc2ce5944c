"""okoco's compiled core: Cython over SciPy's BLAS (``scipy.linalg.cython_blas``).

Private. The functions work in place on views of numpy buffers owned by the Python objects of
:mod:`okoco.linalg`, :mod:`okoco.kernels` and the learners, which validate their input, keep
their state and turn the status codes returned here into their worded errors.

``_linalg``
    the packed Cholesky factor and the packed symmetric matrix (solves, bordering, removal,
    rank-one updates);
``_kernels``
    a kernel's row over stored points (squared distances from cached norms), and the kernels
    coded for the steps (``_kernels.pxd``; the losses' in ``_losses.pxd``);
``_steps``
    whole learner steps: the step objects of FunctionalGD and KRLS (one compiled call per
    ``predict_one`` / ``learn_one`` on the learner's buffers) and the array loops;
``_kons``, ``_slots``, ``_kors``
    the windowed KONS's step phases, the window's inverse (``SlotInverse``) operations, and
    KORS's inverse-form step;
``_multiclass``
    the phases of the shared multiclass KONS step (one preconditioner for every class);
``_pros``
    PROS-N-KONS / CON-KONS's step and its array loop (apart, so that it builds and changes on
    its own);
``_encode``
    a river row (a dict of known features) to its vector, for ``okoco._input.FeatureMap``.
"""
