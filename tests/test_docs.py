"""The documentation's code runs: every Python block of a page, and the ``okoco`` command lines.

Each page's ``python`` blocks run in order in one namespace (a later block may use an earlier
one's names), in a temporary working directory. The ``okoco replay`` / ``okoco compare`` lines of
the quick start and the command-line guide run through typer's runner on their first samples
(``--max-samples``). Pages or lines that start a Dask cluster are marked slow.
"""

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from okoco.cli import app

DOCS = Path(__file__).parent.parent / "docs"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
SHELL_BLOCK = re.compile(r"^```(?:bash|console|sh)\n(.*?)^```", re.M | re.S)
CLUSTER = re.compile(r"scheduler=\"local\"|--scheduler")


def pages_with_python() -> list:
    pages = sorted(p for p in DOCS.rglob("*.md") if PYTHON_BLOCK.search(p.read_text()))
    return [pytest.param(p, id=str(p.relative_to(DOCS)),
                         marks=[pytest.mark.slow] if CLUSTER.search(p.read_text()) else [])
            for p in pages]


@pytest.mark.parametrize("page", pages_with_python())
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(PYTHON_BLOCK.findall(page.read_text())):
        exec(compile(code, f"{page.name}, block {i + 1}", "exec"), namespace)


def cli_lines() -> list:
    lines = []
    for name in ("quickstart.md", "guide/cli.md"):
        for block in SHELL_BLOCK.findall((DOCS / name).read_text()):
            for line in block.splitlines():
                command = line.split("#")[0].split("&&")[-1].strip().removeprefix("$ ")
                if command.startswith("okoco replay") or command.startswith("okoco compare"):
                    marks = [pytest.mark.slow] if CLUSTER.search(command) else []
                    lines.append(pytest.param(command, id=command[:60], marks=marks))
    assert len(lines) >= 8  # the pages were found and parsed
    return lines


@pytest.mark.parametrize("command", cli_lines())
def test_cli_lines_run(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = "\n".join(f"{i % 7},{i % 5},{(i % 7) * 2.5 + i % 5}" for i in range(60))
    Path("data.csv").write_text("rooms,age,price\n" + rows + "\n")  # the guide's data.csv
    args = shlex.split(command)[1:] + ["--max-samples", "60"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for flag in ("--output", "--plot"):
        if flag in args:
            assert Path(args[args.index(flag) + 1]).stat().st_size > 0
