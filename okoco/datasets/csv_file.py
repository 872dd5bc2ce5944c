"""CSV files: :func:`load_csv` and its rules.

CSV rules
---------
* **Target**: ``target`` is a column name (needs a header) or an index (negative counts from the
  end); the default is the last column.
* **Header**: ``header=None`` detects it: the first row is a header when none of its fields is a
  number, or when some column is numeric below it but not on it. ``header=True/False`` forces it.
  Without a header, a feature is named ``x<column index>``.
* **Missing values** (an empty field, ``nan``, ``NA``, ``N/A``, ``null``, ``?``):
  ``na="error"`` (default) raises a ``ValueError`` naming the line and the column;
  ``na="drop"`` drops the row; ``na="absent"`` leaves the cell out of its sample, river's
  convention for a missing feature (the row's dict lacks that key: okoco's learners read it as
  0, which after online standardisation is the running mean of its column, and for a text
  column no category). A missing target is never learned: an error, or the row dropped.
* **Non-numeric features**: ``non_numeric="error"`` (default) raises a ``ValueError`` naming the
  line, the column and the value; ``non_numeric="drop"`` drops every column that holds a
  non-numeric value (the names are kept in ``dataset.info["dropped_columns"]``);
  ``non_numeric="encode"`` keeps such a column as text (its values are strings, named with
  their number of distinct values in ``dataset.info["text_columns"]``) for an encoder in the
  model's pipeline, such as :func:`okoco.preprocessing.encode_text` (the ``okoco`` command
  line's default). A column whose filled cells are numbers but for a few (at least
  :data:`MOSTLY_NUMBERS` of them numbers: a typo such as ``12,5``) is neither encoded nor
  dropped: an error names its bad cells. Infinite values are always an error.
* **Every bad cell at once**: the whole file is checked before the error is raised, which names
  every bad cell (the first few, and how many more) and each remedy once.
* **Targets**: numeric targets with two distinct values make a ``"binary"`` task, other numeric
  targets ``"regression"``, non-numeric targets (class names) ``"binary"`` or ``"multiclass"``;
  pass ``task=`` to override (for example ``task="multiclass"`` for integer class codes).
"""

from __future__ import annotations

import csv
import difflib
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from okoco.datasets.base import TASKS, Dataset, infer_task, tidy_labels
from okoco.datasets.files import open_text

__all__ = ["load_csv"]

_NA = {"", "na", "nan", "n/a", "null", "none", "?"}
#: A text column whose filled cells are at least this share numbers is a numeric column with bad
#: cells (a typo such as ``12,5``): refused, not encoded or dropped as text.
MOSTLY_NUMBERS = 0.95


def _number(field: str) -> float | None:
    """``float(field)`` or ``None`` when it is not a number (NA tokens are not numbers)."""
    s = field.strip()
    if s.lower() in _NA:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _is_na(field: str) -> bool:
    return field.strip().lower() in _NA


def _detect_header(rows: list[tuple[int, list[str]]]) -> bool:
    first = rows[0][1]
    if all(_number(f) is None and not _is_na(f) for f in first):
        return True
    body = rows[1:]
    for j, f in enumerate(first):
        if _number(f) is None and not _is_na(f) and body and all(
            _number(r[j]) is not None for _, r in body
        ):
            return True
    return False


def load_csv(path: str | os.PathLike, target: int | str | None = None, *,
             header: bool | None = None,
             delimiter: str = ",", task: str | None = None, na: str = "error",
             non_numeric: str = "error", name: str | None = None) -> Dataset:
    """Read a CSV file into a :class:`~okoco.datasets.base.Dataset` (see the module rules).

    Parameters
    ----------
    path
        The file (``.gz``/``.bz2``/``.xz`` are decompressed).
    target
        The target column, by name or by (possibly negative) index. Default (``None``): the
        last column.
    header
        ``None`` to detect, or force ``True``/``False``.
    delimiter
        Field separator.
    task
        ``"regression"``, ``"binary"``, ``"multiclass"``, or ``None`` to infer it.
    na
        ``"error"``, ``"drop"`` (the row) or ``"absent"`` (the cell left out of its sample)
        for missing feature values.
    non_numeric
        ``"error"``, ``"drop"`` (the column) or ``"encode"`` (the column kept as text, for an
        encoder) for non-numeric feature values. With the default target, dropping a column of
        text labels (every value text, at most 20 distinct values and at most half as many as
        rows) is refused: that column is most likely the target, so name the target
        explicitly.
    name
        Dataset name; default the file name.

    Raises
    ------
    ValueError
        On bad values, naming the file and every bad cell: its line number (1-based, as an
        editor shows it) and its column.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "data.csv")
    >>> _ = open(p, "w").write("a,b,y\\n1,2,0.5\\n3,4,1.5\\n5,6,2.5\\n")
    >>> ds = load_csv(p, target="y")
    >>> ds, ds.take(1)
    (Dataset(name='data.csv', n=3, d=2, task='regression'), [({'a': 1.0, 'b': 2.0}, 0.5)])
    >>> _ = open(p, "w").write("city,b,y\\nParis,,0.5\\nLyon,4,1.5\\n")
    >>> ds = load_csv(p, na="absent", non_numeric="encode")
    >>> ds.take(2), ds.info["text_columns"]
    ([({'city': 'Paris'}, 0.5), ({'city': 'Lyon', 'b': 4.0}, 1.5)], {'city': 2})
    """
    if na not in ("error", "drop", "absent"):
        raise ValueError(f"na must be 'error', 'drop' or 'absent', got {na!r}")
    if non_numeric not in ("error", "drop", "encode"):
        raise ValueError(f"non_numeric must be 'error', 'drop' or 'encode', got {non_numeric!r}")
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS} or None, got {task!r}")
    where = str(path)
    with open_text(path) as f:
        reader = csv.reader(f, delimiter=delimiter)
        rows = []
        try:
            for fields in reader:
                if fields and any(x.strip() for x in fields):
                    rows.append((reader.line_num, fields))
        except csv.Error as e:
            raise ValueError(f"{where}, line {reader.line_num}: {e}") from None
    if not rows:
        raise ValueError(f"{where}: the file holds no data")
    width = len(rows[0][1])
    for ln, fields in rows:
        if len(fields) != width:
            raise ValueError(
                f"{where}, line {ln}: expected {width} fields (as on line {rows[0][0]}), "
                f"got {len(fields)}"
            )
    if width < 2:
        first = rows[0][1][0] if rows[0][1] else ""
        other = next((d for d in (";", "\t", "|", ",") if d != delimiter and d in first), None)
        hint = "" if other is None else (
            f"; the rows look {other!r}-delimited: delimiter={other!r} (okoco replay: "
            f"-d delimiter={other!r})")
        raise ValueError(f"{where}: need at least 2 columns (features and a target), got "
                         f"{width}{hint}")
    if header is None:
        header = _detect_header(rows)
    if header:
        columns = [c.strip() for c in rows[0][1]]
        rows = rows[1:]
        if len(set(columns)) != len(columns):
            raise ValueError(f"{where}: duplicate column names in the header: {columns}")
    else:
        columns = [f"x{j}" for j in range(width)]
    if not rows:
        raise ValueError(f"{where}: the file has a header but no data rows")

    implicit_target = target is None
    if target is None:
        target = -1
    if isinstance(target, str):
        if target in columns and header:
            t = columns.index(target)
        elif not header and target.lstrip("-").isdigit():
            t = int(target)
        elif not header:
            raise ValueError(
                f"{where}: target {target!r} given by name but the file has no header row; "
                "give the column index instead"
            )
        else:
            close = difflib.get_close_matches(target, columns, n=1) or [
                c for c in columns if c.lower() == target.lower()]
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"{where}: no column named {target!r}; {hint}columns are {columns}")
    elif isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        t = int(target)
    else:
        raise TypeError(f"target must be a column name or index, got {target!r}")
    if not -width <= t < width:
        raise ValueError(f"{where}: target index {t} out of range for {width} columns")
    t %= width
    feats = [j for j in range(width) if j != t]

    text = [j for j in feats if non_numeric != "error" and any(
        _number(r[j]) is None and not _is_na(r[j]) for _, r in rows)]
    _refuse_numbers_with_typos(where, [(columns[j], [r[j] for _, r in rows]) for j in text])
    labels = next((columns[j] for j in text if implicit_target and non_numeric == "drop"
                   and _looks_like_labels([r[j] for _, r in rows])), None)
    if labels is not None:
        raise ValueError(
            f"{where}: column {labels!r} holds text labels and non_numeric='drop' would drop "
            f"it while the target defaults to the last column {columns[t]!r}; name the "
            f"target: target={labels!r} (okoco replay: -t {labels}), or "
            f"target={columns[t]!r} to keep it"
        )
    dropped = [columns[j] for j in text] if non_numeric == "drop" else []
    if non_numeric == "drop":
        feats = [j for j in feats if j not in text]
    kept_text = set() if non_numeric == "drop" else set(text)
    numeric_target = task == "regression" or all(
        _number(r[t]) is not None or _is_na(r[t]) for _, r in rows
    )
    problems = _Problems(where)
    X_rows, targets = [], []
    for ln, fields in rows:
        values: list[Any] = []
        skip = False
        for j in feats + [t]:
            field = fields[j]
            if _is_na(field):
                if na == "drop":
                    skip = True
                    break
                if na == "absent" and j != t:
                    values.append(None)
                    continue
                problems.add(ln, f"missing value (NaN) in column {columns[j]!r}",
                             "use na='drop' to skip such rows or na='absent' to leave such "
                             "cells out of their sample (okoco replay: -d na=drop)"
                             if j != t else "use na='drop' to skip such rows (okoco replay: "
                             "-d na=drop)")
                values.append(None)
                continue
            if j in kept_text or (j == t and not numeric_target):
                values.append(field.strip())
                continue
            v = _number(field)
            if v is None:
                what = "target" if j == t else "feature"
                problems.add(ln, f"non-numeric {what} value {field.strip()!r} in column "
                             f"{columns[j]!r}", key=columns[j])
                if j != t:
                    problems.text_columns[columns[j]] = None
            elif not np.isfinite(v):
                problems.add(ln, f"non-finite value {field.strip()!r} in column "
                             f"{columns[j]!r}")
            values.append(v)
        if not skip:
            X_rows.append(values[:-1])
            targets.append(values[-1])
    problems.check()
    if not X_rows:
        raise ValueError(f"{where}: no rows left after dropping rows with missing values")
    if not feats:
        raise ValueError(f"{where}: no numeric feature column left")
    mixed = bool(kept_text) or any(v is None for row in X_rows for v in row)
    X = (np.array(X_rows, dtype=object) if mixed
         else np.asarray(X_rows, dtype=np.float64)).reshape(len(X_rows), len(feats))
    y = np.asarray(targets)
    task = task or infer_task(y)
    if task != "regression" and not numeric_target:
        y = y.astype(str)
    y = tidy_labels(y, task)
    return Dataset(
        name or Path(path).name, task, X=X, y=y, feature_names=[columns[j] for j in feats],
        description=f"CSV file {where}",
        info={"path": where, "target": columns[t], "dropped_columns": dropped,
              "text_columns": {columns[j]: len({r[j].strip() for _, r in rows
                                                if not _is_na(r[j])})
                               for j in feats if j in kept_text},
              "n_dropped_rows": len(rows) - len(X_rows),
              "n_absent_cells": sum(v is None for row in X_rows for v in row)},
    )


class _Problems:
    """The bad cells of a file, gathered over the whole file and reported in one error: each
    with its line, then each distinct hint once."""

    #: Cells named in the message; the others are counted.
    SHOWN = 8

    def __init__(self, where: str):
        self.where = where
        self.cells: list[str] = []
        self.hints: dict[str, None] = {}
        self.repeats: dict[str, list] = {}  # key -> [index in cells, cells counted]
        self.text_columns: dict[str, None] = {}  # feature columns holding text, in order

    def add(self, line: int, message: str, hint: str | None = None, *,
            key: str | None = None) -> None:
        """One bad cell; the cells of one ``key`` (a text column) are named once, counted."""
        if hint:
            self.hints[hint] = None
        if key is not None and key in self.repeats:
            self.repeats[key][1] += 1
            return
        if key is not None:
            self.repeats[key] = [len(self.cells), 1]
        self.cells.append(f"line {line}: {message}")

    def check(self) -> None:
        """Raise the ``ValueError`` naming every bad cell (the first :attr:`SHOWN` of them)."""
        for index, count in self.repeats.values():
            if count > 1:
                self.cells[index] += f" (and {count - 1} more cells of that column)"
        if not self.cells:
            return
        if self.text_columns:  # one remedy for every text column
            names = " or ".join(repr(c) for c in self.text_columns)
            first = next(iter(self.text_columns))
            self.hints[f"if {'it' if len(self.text_columns) == 1 else 'one'} is the target, "
                       f"name it: target={names} (okoco replay: -t {first}); to encode text "
                       "columns: non_numeric='encode', to drop them: non_numeric='drop' (-d "
                       "non_numeric=drop)"] = None
        hints = "".join(f"; {h}" for h in self.hints)
        if len(self.cells) == 1:
            raise ValueError(f"{self.where}, {self.cells[0]}{hints}")
        more = len(self.cells) - self.SHOWN
        shown = "; ".join(self.cells[:self.SHOWN]) + (f"; and {more} more" if more > 0 else "")
        raise ValueError(f"{self.where}: {len(self.cells)} bad cells: {shown}{hints}")


def _refuse_numbers_with_typos(where: str, columns: list[tuple[str, list[str]]]) -> None:
    """Refuse the text columns that are numbers but for a few cells (:data:`MOSTLY_NUMBERS`):
    encoded as text (or dropped) such a column would lose its numbers without a word (one typo
    made a 2,000-row surface column 1,900 hashed categories). All of them are named at once.

    Examples
    --------
    >>> _refuse_numbers_with_typos("h.csv", [("m2", [str(i) for i in range(40)] + ["12,5"]),
    ...                                      ("city", ["Lyon", "Nice", "7"])])
    Traceback (most recent call last):
    ...
    ValueError: h.csv: column 'm2' holds numbers but for 1 of its 41 filled cells ('12,5'); \
correct them, or leave them empty (a missing cell)
    """
    found = []
    for name, fields in columns:
        counts = Counter(f.strip() for f in fields if not _is_na(f))  # each value parsed once
        bad = [value for value in counts if _number(value) is None]
        n_bad, n_filled = sum(counts[value] for value in bad), sum(counts.values())
        if n_filled - n_bad >= MOSTLY_NUMBERS * n_filled:
            shown = ", ".join(map(repr, bad[:5])) + (", ..." if len(bad) > 5 else "")
            found.append(f"column {name!r} holds numbers but for {n_bad:,} of its "
                         f"{n_filled:,} filled cells ({shown})")
    if found:
        raise ValueError(f"{where}: {'; '.join(found)}; correct them, or leave them empty "
                         "(a missing cell)")


def _looks_like_labels(values: list[str]) -> bool:
    """Every value is text (none numeric or missing) and few distinct ones repeat: class labels,
    not names or identifiers."""
    text = [v.strip() for v in values]
    return (all(_number(v) is None and not _is_na(v) for v in text)
            and len(set(text)) <= min(20, len(text) // 2))


