"""Every CSV the course writes for a spreadsheet goes through ``write_csv`` here.

A cell a spreadsheet reads as a formula runs when the file is opened: a student id such as
``=2+5`` or ``=HYPERLINK(...)``, or a note quoting a student's error message, would compute or
link in the instructor's grade sheet. Following OWASP's advice on CSV injection, a cell that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (or their full-width forms,
which some spreadsheets also accept) gets a leading ``'``, which spreadsheets show as text;
a genuine number (``-1.5``, ``+3``, ``2e-3``) is left alone so it stays a number.

A file the course reads back (``roster.csv``) is written ``reversible``: a cell that already
starts with ``'`` gets one more, so ``read_cell`` can take exactly one away and every value
comes back as it was (a student id ``-x`` stays ``-x``, and ``'x`` stays ``'x``).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _formula(text: str) -> bool:
    return text.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(text)


def safe_cell(value: object, *, reversible: bool = False) -> str:
    """The text of one cell, never a formula (``reversible``: see the module's docstring)."""
    text = "" if value is None else str(value)
    if _formula(text) or (reversible and text.startswith("'")):
        return "'" + text
    return text


def read_cell(text: str) -> str:
    """A cell written by ``safe_cell(..., reversible=True)``, as it was before."""
    rest = text[1:]
    if text.startswith("'") and (rest.startswith("'") or _formula(rest)):
        return rest
    return text


def write_csv(
    path: Path,
    header: list[str],
    rows: Iterable[Iterable[object]],
    *,
    reversible: bool = False,
    bom: bool = False,
) -> Path:
    """Write a CSV atomically (a reader never sees half a file), every cell made safe;
    ``bom``: starting with the UTF-8 byte order mark, as Excel on Windows needs to read
    UTF-8 (Canvas's own exports have one)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([safe_cell(c, reversible=reversible) for c in header])
        writer.writerows([safe_cell(c, reversible=reversible) for c in row] for row in rows)
    tmp.replace(path)
    return path
