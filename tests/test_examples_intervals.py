"""``examples/intervals.py --small``: its figure, and its figures against a plain recomputation."""

from __future__ import annotations

import math
import runpy
from pathlib import Path

from PIL import Image

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_intervals_example_draws_the_band_and_reports_the_coverage(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # as ``python examples/intervals.py`` would
    module = runpy.run_path(str(EXAMPLES / "intervals.py"))
    result = module["main"](["--small", "--out", str(tmp_path)])
    (path,) = result["figures"]
    assert Path(path) == tmp_path / "intervals.png"
    with Image.open(path) as image:
        assert image.format == "PNG" and min(image.size) > 200
    assert "intervals.png" in capsys.readouterr().out
    # the coverage it prints is the share of targets inside the intervals of the same model
    # run by hand over the same stream (600 samples, seed 0)
    from okoco import datasets

    model = module["make_model"]()
    inside = n = 0
    for x, y in datasets.load("sinc", n=600, seed=0):
        low, high = model.predict_one(x, with_interval=True)
        inside += low <= y <= high
        n += 1
        model.learn_one(x, y)
    assert result["coverage"]["sinc"] == inside / n
    for name, coverage in result["coverage"].items():
        assert abs(coverage - 0.9) < 0.03, name  # the calibration holds on both streams
        assert math.isfinite(result["width"][name]) and result["width"][name] > 0
