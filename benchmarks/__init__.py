"""okoco's benchmarks: scripts a user runs to check the figures of the docs (see README.md).

``python -m benchmarks`` runs the suite (okoco against its peers); ``python -m benchmarks
report`` writes ``docs/benchmarks.md`` from the stored results; :mod:`benchmarks.harness` is
what every script shares.
"""
