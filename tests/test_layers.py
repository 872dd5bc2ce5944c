"""The architecture: every module sits in a layer of the import-linter contract, and no okoco
module imports another inside a function (that hides cycles) unless it defers a heavy optional
dependency and says so."""

from __future__ import annotations

import ast
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import okoco

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = None

ROOT = Path(okoco.__file__).parent


def _layers() -> list[str]:
    text = (ROOT.parent / "pyproject.toml").read_text()
    if tomllib is not None:
        contracts = tomllib.loads(text)["tool"]["importlinter"]["contracts"]
        layers = next(c for c in contracts if c["type"] == "layers")["layers"]
        return [m.strip(" ()") for layer in layers for m in layer.split("|")]
    return re.findall(r'"\(?(okoco\.[\w.]+)\)?', text.split("[tool.importlinter]")[1])


def test_every_module_sits_in_a_layer():
    placed = set(_layers())
    top = {f"okoco.{m.name}" for m in pkgutil.iter_modules([str(ROOT)])}
    assert top - placed == set(), "add these modules to the layers contract in pyproject.toml"


def _imports_okoco(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "okoco"
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "okoco" for alias in node.names)
    return False


def test_no_function_level_okoco_imports_without_a_reason():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        lines = path.read_text().splitlines()
        for func in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if _imports_okoco(node) and not lines[node.lineno - 2].strip().startswith(
                        "# deferred:"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def _guide_layers() -> list[set[str]]:
    """The layers of docs/architecture.md's table, top to bottom, as sets of module names."""
    page = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in table.splitlines():
        if line.startswith("| `"):
            names = re.findall(r"`([\w.]+)`", line.split("|")[1])
            layers.append({n if n.startswith("okoco") else f"okoco.{n}" for n in names})
    return layers


def test_the_architecture_guide_lists_the_contracts_layers_in_order():
    if tomllib is None:  # pragma: no cover
        pytest.skip("tomllib needs Python 3.11")
    text = (ROOT.parent / "pyproject.toml").read_text()
    contracts = tomllib.loads(text)["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    contract = [{m.strip(" ()") for m in layer.split("|")} for layer in layers]
    assert _guide_layers() == contract
