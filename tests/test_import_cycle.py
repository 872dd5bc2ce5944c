"""No import cycle between KONS's modules (issue 41, item 5): ``okoco.learners._newton`` holds
KONS, ``okoco.learners.sketched_kons`` extends it, and ``okoco.learners.kons`` (the public and
saved path of both) imports the two; neither imports it back, and each imports alone in a
fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp  # installed with import-linter (the layers contract's checker)
import pytest

import okoco

ROOT = Path(okoco.__file__).parent
KONS_MODULES = ("okoco.learners.kons", "okoco.learners.sketched_kons", "okoco.learners._newton")


def _okoco_imports(module: str) -> set[str]:
    """The okoco modules ``module`` imports, at any level of its source (a function's too)."""
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("okoco"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("okoco"))
    return found


def test_the_modules_import_one_way():
    assert {"okoco.learners._newton", "okoco.learners.sketched_kons"} <= _okoco_imports(
        "okoco.learners.kons")
    assert "okoco.learners._newton" in _okoco_imports("okoco.learners.sketched_kons")
    assert not {"okoco.learners.kons", "okoco.learners.sketched_kons"} & _okoco_imports(
        "okoco.learners._newton")
    assert "okoco.learners.kons" not in _okoco_imports("okoco.learners.sketched_kons")


def test_no_module_of_kons_lies_on_an_import_cycle():
    graph = grimp.build_graph("okoco")
    for module in KONS_MODULES:
        for imported in graph.find_modules_directly_imported_by(module):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            assert chain is None, f"{module} -> {' -> '.join(chain)}"


@pytest.mark.parametrize("module", KONS_MODULES + ("okoco.learners.auto",))
def test_each_module_imports_alone_in_a_fresh_interpreter(module):
    # the public paths (okoco.learners.auto imports both from okoco.learners.kons)
    code = (f"import {module}\n"
            "from okoco.learners.kons import KONS, SketchedKONS\n"
            "import okoco.learners as learners, okoco.learners.sketched_kons as sketched\n"
            "assert learners.KONS is KONS and learners.SketchedKONS is SketchedKONS\n"
            "assert sketched.SketchedKONS is SketchedKONS and issubclass(SketchedKONS, KONS)\n"
            "assert KONS.__module__ == SketchedKONS.__module__ == 'okoco.learners.kons'\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
