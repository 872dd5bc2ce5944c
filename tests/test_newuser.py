"""What the new-user hour of issue 43 found, redone from a clean clone: each test failed on the
code before its fix (named in its docstring)."""

import csv
import json
import math

import pytest
from typer.testing import CliRunner

import okoco.cli
from okoco.cli import app


def run(*args):
    return CliRunner().invoke(app, list(args))


def write_csv(path, rows, header=("m2", "rooms", "city", "price")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def flats(n=120):
    """Rows of a small housing file: surface, rooms, a city, a price of about 500k."""
    cities = ["Paris", "Lyon", "Nice"]
    return [[f"{20 + (7 * i) % 150:.1f}", 1 + i % 5, cities[i % 3], 3000 * (20 + (7 * i) % 150)]
            for i in range(n)]


@pytest.mark.parametrize("typo", ["12,5", "three", "1.2.3"])
def test_a_typo_in_a_numeric_column_is_refused_not_encoded_as_text(tmp_path, typo):
    """Before: exit 0, the column one-hot encoded or hashed as text (one typo in a surface
    column of 2,000 rows made it 1,900 hashed categories: MAE 238,622 against 54,572)."""
    rows = flats()
    rows[10][0], rows[50][1] = typo, "n/a"  # "n/a" is a missing cell, not a typo
    result = run("replay", write_csv(tmp_path / "flats.csv", rows), "-t", "price")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and \
        "flats.csv: column 'm2'" in lines[0], lines
    assert f"1 of its 120 filled cells ({typo!r})" in lines[0] and "'rooms'" not in lines[0]


def test_every_numeric_column_with_typos_is_named_at_once(tmp_path):
    """Before: exit 0 (both columns encoded as text)."""
    rows = flats()
    rows[3][0], rows[4][0], rows[5][1] = "12,5", "?x", "two"
    line = run("replay", write_csv(tmp_path / "flats.csv", rows), "-t", "price").stderr
    assert "column 'm2' holds numbers but for 2 of its 120 filled cells ('12,5', '?x')" in line
    assert "column 'rooms' holds numbers but for 1 of its 120 filled cells ('two')" in line


def test_text_columns_with_some_numbers_are_still_encoded(tmp_path):
    """The rule's other side (passed before too): a column that is mostly text stays a
    category column, numbers among its values included, and so does a column of codes."""
    rows = flats()
    for i, row in enumerate(rows):
        row[2] = str(75000 + i % 3) if i % 4 == 0 else row[2]
    result = run("replay", write_csv(tmp_path / "flats.csv", rows), "-t", "price")
    assert result.exit_code == 0, result.output
    assert "one-hot 'city'" in result.stderr


def test_ctrl_c_while_importing_says_interrupted_and_exits_130(monkeypatch):
    """Before: exit 130 with nothing printed (typer's own handler), while a Ctrl-C a moment
    later, loading the data, printed "interrupted"."""
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(okoco.cli, "_load_api", interrupted)
    result = run("replay", "sinc", "-d", "n=20")
    assert result.exit_code == 130 and result.stderr.strip() == "interrupted", result.output


def test_quick_start_summary_is_a_fresh_runs():
    """The quick start's example summary is what ``okoco replay trump-approval`` prints now
    (but its time and memory). Before: typed by hand, MAE 0.358884 against 0.341415 today,
    and no test looked at it; ``python -m benchmarks.guides`` now rewrites it."""
    from benchmarks.guides import OUTPUT_PAGES, TEXT_BLOCK, stale_blocks

    quickstart = next(p for p in OUTPUT_PAGES if p.name == "quickstart.md").read_text()
    assert TEXT_BLOCK.findall(quickstart)
    stale = stale_blocks(quickstart)
    assert not stale, stale


def test_no_minus_zero_in_the_json_summary_or_the_curves(tmp_path):
    """river's ROCAUC is -0.0 before both classes were seen. Before: the printed summary said
    0, but ``--json`` and the curves written by ``-o`` said -0.0."""
    def signs(values):
        return [math.copysign(1.0, float(v)) for v in values]

    for out in ("run.json", "run.csv"):
        path = tmp_path / out
        result = run("replay", "phishing", "-n", "1", "-m", "rocauc", "--json", "-o", str(path))
        assert result.exit_code == 0, result.output
        assert signs([json.loads(result.stdout)["metrics"]["ROCAUC"]]) == [1.0]
        curve = (json.loads(path.read_text())["columns"]["ROCAUC"] if out.endswith("json")
                 else [row["ROCAUC"] for row in csv.DictReader(path.open())])
        assert curve and signs(curve) == [1.0] * len(curve), curve


def test_an_identifier_column_is_named_in_a_note(tmp_path):
    """A text column with a different value on (almost) every row is hashed like any other,
    and a note says it looks like an identifier; an ordinary text column gets no such note.
    Before: no note (an identifier cost a churn file 1.3 points of accuracy, silently)."""
    rows = [[f"C{i:05d}", ("Lyon", "Nice")[i % 2], i % 7, float(i % 2)] for i in range(60)]
    path = tmp_path / "churn.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["customer_id", "city", "age", "churn"], *rows])
    result = run("replay", str(path), "-t", "churn", "-n", "60")
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "identifier" in line]
    assert len(notes) == 1 and "'customer_id' has a different value" in notes[0], notes
    assert "'city'" not in notes[0]
