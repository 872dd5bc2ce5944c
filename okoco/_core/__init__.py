"""okoco's compiled core: Cython over SciPy's BLAS (``scipy.linalg.cython_blas``).

Private. The functions work in place on views of numpy buffers owned by the Python objects of
:mod:`okoco.linalg`, :mod:`okoco.kernels` and the learners, which validate their input, keep
their state and turn the status codes returned here into their worded errors. A step reads no
private attribute of another object and calls nothing above it.

``_linalg``
    the packed Cholesky factor and the packed symmetric matrix (solves, bordering, removal,
    rank-one updates);
``_kernels``
    a kernel's row over stored points (squared distances from cached norms), and the kernels
    coded for the steps (``KernelCode``; the losses' in ``_losses.pxd``);
``_steps``
    the stored rows' core (``StepCore``) and FunctionalGD's step, once (``fgd_step``), on its
    typed state (``FGDState``, views of the learner's buffers) with its array loop;
``_krls``
    KRLS's step and the ALD's analysis and test, once, on a typed state (``KRLSState``), with
    the array loop;
``_kons``, ``_slots``, ``_kors``
    the windowed KONS's step phases, the window's inverse (``SlotInverse``) operations, and
    KORS's inverse-form step and its Eq. 4 score (``kors_score``);
``_multiclass``
    the phases of the shared multiclass KONS step (one preconditioner for every class);
``_pros``
    PROS-N-KONS / CON-KONS's step and its array loop (apart, so that it builds and changes on
    its own);
``_encode``
    a river row (a dict of known features) to its vector, for ``okoco._input.FeatureMap``;
``_mixture``
    the per-step work of ``Auto``'s mixture of experts (weights, slack, averages, share,
    fixed share's record) on a typed state whose arrays are the learner's (``Mixture``);
``_embedding``, ``_swap``
    a shared Nyström embedding's per-step work (the embedding and its residual, the usage
    rule's statistics and pick), and a full dictionary's swap (the rotations that take an
    atom out, their action on the ONS heads).
"""
