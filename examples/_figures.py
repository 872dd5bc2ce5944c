"""What the example scripts share: their command line and how they write a figure.

Each script takes ``--small`` (a run of seconds, used by the tests) and ``--out DIR`` (where the
PNG files go, the current directory by default). Figures are drawn with matplotlib's Agg backend,
so the scripts run on machines without a display.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")


def parse(argv, doc: str) -> argparse.Namespace:
    """The ``--small`` / ``--out`` command line, described by the first line of ``doc``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a short run (seconds)")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the PNG files")
    return parser.parse_args(argv)


def save(fig, out: Path, name: str, *, dpi: int = 100, rect=None) -> Path:
    """Lay out ``fig`` (within ``rect``, leaving room for a figure legend), write it as
    ``out/name`` (creating ``out``), close it, return the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout(rect=rect)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def finish(ax, title: str, *, legend: int | None = 8, **props) -> None:
    """Set ``props`` (``xlabel``, ``xscale``, ...), a small title, a legend and a light grid."""
    ax.set(**props)
    ax.set_title(title, fontsize=9)
    if legend:
        ax.legend(fontsize=legend)
    ax.grid(alpha=0.3)
