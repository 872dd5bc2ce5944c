"""The guides' figures, regenerated from fresh runs: ``python -m benchmarks.guides``.

Three kinds of figures live on the guides, and all come from here, never typed by hand:

* **printed regions** (any guide): a ```` ```python ```` block followed by a region between
  ``<!-- printed -->`` and ``<!-- /printed -->`` (markdown: a table renders as one; with
  ``<!-- printed text -->``, in a ```` ```text ```` fence). The region is what that block
  prints when the page's Python blocks run in order as one script, as tests/test_docs.py runs
  them (and checks the regions). A block after a ``<!-- slow -->`` line runs in the slow tests
  only (it must not define names that blocks not so marked use).
* the **example outputs** of the command-line guide (docs/guide/cli.md) and the quick start
  (docs/quickstart.md): a ```` ```text ```` block whose first line is ``$ okoco ...``. Its
  other lines are lines of that command's output (found by their first word), ``...``
  standing for lines left out; a table row's timing and memory cells (``compare``) differ from
  run to run and are not compared.
* the command-line guide's **default-learner table**, between ``<!-- quality-table -->`` and
  ``<!-- /quality-table -->``: the final metric of every candidate of the CLI's default-learner
  study (``CANDIDATES``) on its streams (``STREAMS``).

``python -m benchmarks.guides`` rewrites the pages (a few minutes on 2 cores: the table's
exact KONS and Auto runs); ``--check`` only says which figures are stale (exit code 1).
tests/test_docs.py checks the example outputs, the printed regions (the slow blocks' in its
slow tests) and a few cells of the table on every run, the whole table in its slow tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

GUIDES = Path(__file__).resolve().parent.parent / "docs" / "guide"
GUIDE = GUIDES / "cli.md"
#: The pages with example outputs (``$ okoco ...`` blocks).
OUTPUT_PAGES = [GUIDE, GUIDES.parent / "quickstart.md"]
#: The guides with printed regions.
PRINTED_PAGES = [GUIDES / "intervals.md", GUIDES / "evaluation.md", GUIDES / "auto.md"]
#: A Python block: the slow marker before it, its code, the printed region after it.
PYTHON_BLOCK = re.compile(r"(<!-- slow -->\n)?^```python\n(.*?)^```\n"
                          r"(?:\n?<!-- printed( text)? -->\n(.*?)<!-- /printed -->\n)?",
                          re.M | re.S)
TEXT_BLOCK = re.compile(r"^```text\n(\$ okoco .*?)^```", re.M | re.S)
TABLE = re.compile(r"(<!-- quality-table -->\n\n)(.*?)(\n<!-- /quality-table -->)", re.S)
#: Table columns whose cells change from run to run (left as the page has them).
VARYING = ("µs/sample", "memory (KiB)")


def run_blocks(text: str, slow: bool = True) -> list[tuple[str, str | None]]:
    """Run the page's Python blocks in order as one script (``__name__ == "__main__"``, in a
    temporary folder); each block's (output, region) pair, the output as its region shows it
    (in a ```` ```text ```` fence for ``<!-- printed text -->``), the region ``None`` where the
    page shows none. With ``slow=False`` the blocks marked slow are left out."""
    namespace, pairs, home = {"__name__": "__main__"}, [], os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)  # contextlib.chdir needs Python 3.11
        try:
            for match in PYTHON_BLOCK.finditer(text):
                if match.group(1) and not slow:
                    continue
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(match.group(2), "<guide block>", "exec"), namespace)
                fenced = f"```text\n{out.getvalue()}```\n" if match.group(3) else out.getvalue()
                pairs.append((fenced, match.group(4)))
        finally:
            os.chdir(home)
    return pairs


def stale_regions(text: str, slow: bool = True) -> list[tuple[str, str]]:
    """The printed regions of ``text`` that a fresh run does not reproduce, as (on the page,
    fresh) pairs."""
    return [(region, out) for out, region in run_blocks(text, slow)
            if region is not None and region != out]


def refreshed_regions(text: str) -> str:
    """The page with every printed region from a fresh run."""
    if "<!-- printed" not in text:
        return text
    outputs = iter([out for out, region in run_blocks(text) if region is not None])
    return PYTHON_BLOCK.sub(lambda m: m.group(0) if m.group(4) is None else
                            m.group(0)[:m.start(4) - m.start(0)] + next(outputs)
                            + "<!-- /printed -->\n", text)


def output_of(command: str) -> str:
    """The stdout of an ``okoco`` command line, run in this process."""
    from typer.testing import CliRunner

    from okoco.cli import app

    result = CliRunner().invoke(app, shlex.split(command)[1:])
    if result.exit_code != 0:
        raise RuntimeError(f"{command!r} failed: {result.output}")
    return result.stdout


def refreshed_block(block: str) -> str:
    """An example-output block from a fresh run of its command: the output's lines whose first
    word the block shows, in the output's order, with ``...`` for lines left out if the block
    leaves some out."""
    command, *shown = block.rstrip("\n").split("\n")
    output = output_of(command.removeprefix("$ ")).rstrip("\n").split("\n")
    keys = {line.split()[0] for line in shown if line.split() and line.strip() != "..."}
    elide = any(line.strip() == "..." for line in shown)
    lines = [command]
    for line in output:
        if line.split() and line.split()[0] in keys:
            lines.append(line)
        elif elide and lines[-1] != "...":
            lines.append("...")
    return "\n".join(lines) + "\n"


def stable(block: str) -> list[str]:
    """The figures of a block that a fresh run must reproduce: every line, a table row
    without its timing and memory cells."""
    lines = block.rstrip("\n").split("\n")
    header = next((line for line in lines if line.split()[:1] == ["learner"]), None)
    if header is None:
        return lines
    heads = re.split(r"\s{2,}", header.strip())
    keep = [i for i, head in enumerate(heads) if head not in VARYING]
    out = []
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        out.append(" | ".join(cells[i] for i in keep if i < len(cells))
                   if len(cells) == len(heads) else line)
    return out


def stale_blocks(text: str) -> list[tuple[str, str]]:
    """The example-output blocks of ``text`` whose figures a fresh run does not reproduce, as
    (on the page, fresh) pairs."""
    pairs = [(block, refreshed_block(block)) for block in TEXT_BLOCK.findall(text)]
    return [(old, new) for old, new in pairs if stable(old) != stable(new)]


#: The default-learner table's runs: okoco replay's options, the candidates, the streams (the
#: study that chose the CLI's default, benchmarks/cli_default.py at commit 2fefa42, left the tree)
BASE = {"kernel": "rbf", "gamma": None, "degree": None, "coef0": None, "normalize": False,
        "loss": None, "C": 3.0, "metric": [], "max_samples": None, "checkpoints": 5,
        "scale": True, "scale_target": True}
CANDIDATES = [("fgd", {"budget": 1000, "eta": 0.2}), ("fgd", {"budget": 1000, "eta": 0.5}),
              ("fgd", {}), ("pros-n-kons", {}), ("con-kons", {}), ("kons", {}), ("auto", {})]
STREAMS = ["trump-approval", "chick-weights", "diabetes", "sinc", "friedman", "mackey-glass",
           "rkhs", "phishing", "breast-cancer", "bananas", "shuttle"]


def quality_table() -> str:
    """The default-learner table: every candidate on every stream."""
    heads = [_candidate(learner, params) for learner, params in CANDIDATES]
    lines = ["| dataset (samples) | metric | " + " | ".join(heads) + " |",
             "|---|---|" + "---|" * len(heads)]
    lines += [table_row(name) for name in STREAMS]
    return "\n".join(lines) + "\n"


def table_row(name: str, columns: list[int] | None = None) -> str:
    """The table's row of stream ``name``; with ``columns`` (candidate indices), only those
    cells are run, the others left empty."""
    from okoco.experiment import load_dataset, run_one

    ds = load_dataset(name, target=None, data_params={}, seed=0, shuffle=False)
    n = min(ds.n, 5300)
    cells = []
    for i, (learner, params) in enumerate(CANDIDATES):
        if columns is not None and i not in columns:
            cells.append("")
        elif learner in ("kons", "auto") and n > 1300:
            cells.append("not run")
        else:
            r = run_one(ds, learner, options=dict(BASE, params=params, max_samples=n), seed=0)
            cells.append(_figure(r.final[r.metrics[0]]))
    what = f"{name} ({n})" if n == ds.n else f"{name} (first {n})"
    metric = "MAE" if ds.task == "regression" else "accuracy"
    cells[0] = f"**{cells[0]}**" if cells[0] else ""
    return f"| {what} | {metric} | " + " | ".join(cells) + " |"


def page_row(text: str, name: str) -> str:
    """The table's row of stream ``name`` as the page has it."""
    table = TABLE.search(text).group(2)
    return next(line for line in table.splitlines() if line.startswith(f"| {name} ("))


def _candidate(learner: str, params: dict) -> str:
    if learner == "fgd" and params == {"budget": 1000, "eta": 0.2}:
        return "**former default** (fgd, budget 1000, η 0.2)"
    if learner == "fgd" and params:
        return "fgd η " + str(params["eta"])
    return f"`-l {learner}`"


def _figure(value: float) -> str:
    """Three significant digits (four above 0.99, where accuracies differ in the fourth)."""
    return f"{value:#.4g}" if 0.99 < value < 1 else f"{value:#.3g}"


def refreshed_page(text: str, table: bool = True) -> str:
    """The guide with every example output (and the table, if ``table``) from fresh runs."""
    text = TEXT_BLOCK.sub(lambda m: "```text\n" + refreshed_block(m.group(1)) + "```", text)
    if table:
        text = TABLE.sub(lambda m: m.group(1) + quality_table() + m.group(3), text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale figures")
    parser.add_argument("--no-table", action="store_true",
                        help="not the CLI guide's default-learner table (seconds, not minutes)")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}")
    stale = []
    table = not args.no_table
    for page in [*OUTPUT_PAGES, *PRINTED_PAGES]:
        old = page.read_text()
        if args.check:
            if page in OUTPUT_PAGES:
                stale += [f"{page.name}: {new.split(chr(10))[0]}" for _, new in stale_blocks(old)]
            if page == GUIDE and table and TABLE.search(old).group(2) != quality_table():
                stale.append(f"{page.name}: the default-learner table")
            stale += [f"{page.name}: {new.split(chr(10))[0]}" for _, new in stale_regions(old)]
            continue
        new = refreshed_page(old, table=table and page == GUIDE) if page in OUTPUT_PAGES else old
        page.write_text(refreshed_regions(new))
        print(f"{page}: figures rewritten")
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.check:
        for what in stale:
            print(f"stale: {what}")
        print("stale figures; run python -m benchmarks.guides" if stale
              else "every figure is current")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
