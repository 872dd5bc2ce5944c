"""The learner ``replay`` runs when -l is not given."""

#: The learner ``replay`` uses when -l is not given: ``Auto`` at its class defaults, the same
#: learner as ``-l auto``, ``compare -l auto`` and ``okoco.learners.Auto()`` in Python (a user's
#: -p is given to it as to any learner).
DEFAULT_LEARNER = "auto"
