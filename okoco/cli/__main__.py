"""``python -m okoco.cli``: the ``okoco`` command."""

from okoco.cli import app

app()
