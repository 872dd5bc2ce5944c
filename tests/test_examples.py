import runpy
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_quickstart_runs_and_learns(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["quickstart.py", "--small"])
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"))
    results = module["main"](500)
    # Bananas is balanced: a learner that did not learn sits near 0.5.
    assert results["KONS"] > 0.75 and results["SketchedKONS"] > 0.75
    assert "SketchedKONS" in capsys.readouterr().out
