"""The documentation's code runs: every Python block of a page, and the ``okoco`` command lines.

Each page's ``python`` blocks run in order as one script (a later block may use an earlier
one's names), ``__name__ == "__main__"`` as when a reader saves them to a file and runs it, in a
temporary working directory; a page that starts a Dask cluster runs as a separate
``python page.py`` process (its workers import the script) and is marked slow. The ``okoco
replay`` / ``okoco compare`` lines of the quick start and the command-line guide run through
typer's runner on their first samples (``--max-samples``). The command-line guide's figures
(example outputs, the default-learner table) are those of a fresh run, and so is every printed
region of a page (``<!-- printed -->``: what the Python block before it prints);
:mod:`benchmarks.guides` writes them. Blocks marked ``<!-- slow -->`` run in the slow tests.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.guides import PYTHON_BLOCK as MARKED_BLOCK
from benchmarks.guides import stale_regions
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


def page_script(page: Path, folder: Path) -> Path:
    """The page's Python blocks, in order, as one script file."""
    script = folder / (page.stem.replace("-", "_") + "_page.py")
    script.write_text("\n".join(PYTHON_BLOCK.findall(page.read_text())))
    return script


def stale_message(stale: list) -> str:
    return "stale (page, now):\n" + "\n\n".join(f"{a}\n{b}" for a, b in stale)


@pytest.mark.parametrize("page", pages_with_python())
def test_python_blocks_run(page, tmp_path, monkeypatch):
    """The page's blocks run, and each prints its printed region (but the slow blocks)."""
    monkeypatch.chdir(tmp_path)
    if CLUSTER.search(page.read_text()):  # spawned workers import the script: a real process
        script = page_script(page, tmp_path)
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
    else:
        stale = stale_regions(page.read_text(), slow=False)
        assert not stale, stale_message(stale)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in DOCS.rglob("*.md") if any(
    m.group(1) for m in MARKED_BLOCK.finditer(p.read_text()))], ids=lambda p: p.name)
def test_slow_blocks_print_their_regions(page):
    stale = stale_regions(page.read_text(), slow=True)
    assert not stale, stale_message(stale)


def test_printed_regions_follow_a_block():
    """A region not right after a Python block would never be checked."""
    for page in DOCS.rglob("*.md"):
        text = page.read_text()
        placed = sum(m.group(4) is not None for m in MARKED_BLOCK.finditer(text))
        assert len(re.findall(r"<!-- printed( text)? -->", text)) == placed, page


def test_cluster_code_waits_for_main():
    """A block that starts a LocalCluster calls it under ``if __name__ == "__main__":``, or
    the spawned workers, importing the script, would start the cluster again (scaling.md's grid
    did not, and failed as a script)."""
    for page in DOCS.rglob("*.md"):
        for block in PYTHON_BLOCK.findall(page.read_text()):
            call = block.find('scheduler="local"')
            if call >= 0:
                guard = block.find('if __name__ == "__main__":')
                assert 0 <= guard < call, (page.name, block[:80])


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


def test_cli_guide_example_outputs_are_current():
    """Each ``$ okoco ...`` output block of the CLI guide is what the command prints now (but
    timing and memory); ``python -m benchmarks.guides`` rewrites them."""
    from benchmarks.guides import GUIDE, stale_blocks

    stale = stale_blocks(GUIDE.read_text())
    assert not stale, "stale (page, now):\n" + "\n\n".join(f"{a}\n{b}" for a, b in stale)


def test_cli_guide_table_cells_are_current():
    """The cheap cells of the default-learner table (FunctionalGD's, on trump-approval) are a
    fresh run's; the slow test below checks every cell."""
    from benchmarks.guides import GUIDE, page_row, table_row

    page = page_row(GUIDE.read_text(), "trump-approval").split(" | ")
    fresh = table_row("trump-approval", columns=[0, 1, 2]).split(" | ")
    assert page[:5] == fresh[:5]


@pytest.mark.slow
def test_cli_guide_table_is_current():
    from benchmarks.guides import GUIDE, TABLE, quality_table

    assert TABLE.search(GUIDE.read_text()).group(2) == quality_table()


def test_auto_has_its_api_page():
    page = DOCS / "api" / "auto.md"
    assert "::: okoco.learners.Auto" in page.read_text()
    assert "api/auto.md" in (DOCS.parent / "mkdocs.yml").read_text()


def test_api_signatures_show_default_values():
    """The API reference shows ``max_size: int | None = 500``, not ``= DEFAULT_MAX_SIZE``: the
    docs' griffe extension (docs/default_values.py, in mkdocs.yml) replaces the name."""
    griffe = pytest.importorskip("griffe")
    sys.path.insert(0, str(DOCS))
    try:
        from default_values import DefaultValues
    finally:
        sys.path.remove(str(DOCS))
    assert "docs/default_values.py:DefaultValues" in (DOCS.parent / "mkdocs.yml").read_text()
    module = griffe.load("okoco.learners", resolve_aliases=False,
                         extensions=griffe.load_extensions(DefaultValues()))
    for name in ("KONS", "SketchedKONS", "Auto"):
        defaults = {p.name: str(p.default) for p in module[name].members["__init__"].parameters}
        assert defaults["max_size"].isdigit(), (name, defaults["max_size"])
