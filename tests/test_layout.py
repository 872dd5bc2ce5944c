"""The package's layout: no module in okoco/ is over 500 lines (issue 31: split by job)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "okoco"
LIMIT = 500


def _modules() -> dict[str, int]:
    return {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
            for pattern in ("*.py", "*.pyx", "*.pxd") for path in ROOT.rglob(pattern)}


def test_no_module_is_over_500_lines():
    modules = _modules()
    assert len(modules) > 50  # the walk found the package
    over = {name: n for name, n in modules.items() if n > LIMIT}
    assert over == {}, f"modules over {LIMIT} lines (split them by job): {over}"
