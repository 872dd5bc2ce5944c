"""``python -m okoco.cli``: the ``okoco`` command (importing this module runs nothing)."""

from okoco.cli import app

if __name__ == "__main__":
    app()
