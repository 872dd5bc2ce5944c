"""okoco's benchmark suite: okoco's learners against their peers, side by side in one run.

Run from the repository root (needs the ``bench`` extra: ``pip install -e ".[bench]"``)::

    python -m benchmarks            # the full suite (about 13 minutes on 2 cores)
    python -m benchmarks --quick    # a smoke run on small prefixes (under a minute)
    python -m benchmarks report     # docs/benchmarks.md from the stored results

See ``benchmarks/README.md`` for the other scripts and ``python -m benchmarks --help``.

Modules: :mod:`benchmarks.data` (streams), :mod:`benchmarks.learners` (okoco and peer
drivers), :mod:`benchmarks.measure` (timed runs, memory, floors, machine),
:mod:`benchmarks.report` (Markdown and plots), :mod:`benchmarks.run` (the command).
"""
