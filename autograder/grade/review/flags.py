"""Flags for review: code a student wrote that belongs to a class of code honest work for
this course never needs, with where it is: ``cell 7, line 3: calls gc.get_objects:
introspection of the process``.

The classes (review/rules.py holds their members): another autodiff engine; the grader's
code or files; introspection of the process (``gc``, frames, ``ctypes``, ``sys.modules``,
closures and code objects); process tricks (``subprocess``, ``os.fork``/``exec``/``kill``,
signals, sockets, ``mmap``, ``sqlite3``: the gradebook is SQLite); changes to how the
kernel runs code (patched modules or builtins, IPython transformers, events, display
publisher and hooks, trace and profile functions, the recursion limit); hidden code
(``exec``/``eval``/``compile``/``run_cell`` of strings built at run time, imports by
computed name, magics the course does not use, ``%%writefile`` then ``%run`` or import).
How a cell is read is in review/cells.py (``ast`` through every alias, strings built from
constants worked out, ``%%writefile`` bodies read as code) and review/syntax.py (IPython's
syntax set aside as IPython does; a cell that does not parse searched as words).

Only code the student wrote counts: a cell whose code is the same as one of the
assignment's cells as released (or as in ``source/``) is the course's, whatever it
imports. Cells are numbered as the notebook shows them (1 is the first cell, Markdown
included), lines within the cell.

Every scan is linear in the notebook's size, and bounded first: at most ``MAX_CELL``
characters of a cell and ``MAX_REVIEWED`` of a submission's code are read, and a cut is
itself a flag (too long to review).

A flag is a reason to look, never a verdict: it changes no score and no exit code.
``grade`` keeps the flags in each submission's record (``review``), adds ``flagged for
review: ...`` to its note (class table, grades.csv) and ``export`` writes them in the
``review`` column of grades.csv. Students do not see them.
"""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path
from typing import NamedTuple

from ... import markers
from .cells import flag_cell, learn
from .rules import TOO_LONG, UNREADABLE, show
from .values import Memory

MAX_CELL = 100_000  # characters of one cell read (honest cells hold a few thousand)
MAX_REVIEWED = 500_000  # characters of a submission's own code read, in all (a few s)
MAX_FLAGS = 12  # flags listed for one submission; the rest are counted


class Flag(NamedTuple):
    """One thing to review: where (cell of the notebook, line of the cell), what, class."""

    cell: int
    line: int
    what: str
    kind: str

    @property
    def reason(self) -> str:
        return f"{self.what}: {self.kind}"

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.reason}"


# ---- what the course gave ----------------------------------------------------------------


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _released(source: str, stub: str) -> list[str]:
    """``source`` without hidden tests, and also with its solution replaced by the stub."""
    out, stubbed = [], []
    for line in markers.read(source):
        if line.region == markers.HIDDEN:
            continue
        if line.marker and markers.BEGIN_SOLUTION in line.text:
            indent = line.text[: len(line.text) - len(line.text.lstrip())]
            stubbed += [indent + s for s in stub.splitlines()]
        elif not line.marker:
            out.append(line.text)
            if line.region != markers.SOLUTION:
                stubbed.append(line.text)
    return ["\n".join(out), "\n".join(stubbed)]


@functools.cache
def given_code(source_folder: str) -> frozenset[str]:
    """The code cells of an assignment as the course wrote and released them."""
    import nbformat

    stub = "# YOUR CODE HERE\nraise NotImplementedError()"
    with contextlib.suppress(Exception):
        from ...course import nbgrader_config

        stub = nbgrader_config().ClearSolutions.code_stub.get("python", stub)
    folder = Path(source_folder)
    released = folder.parent.parent / "notebooks" / folder.name
    given = set()
    for path in [*sorted(folder.glob("*.ipynb")), *sorted(released.glob("*.ipynb"))]:
        with contextlib.suppress(Exception):
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type == "code":
                    given.update(_norm(s) for s in [cell.source, *_released(cell.source, stub)])
    return frozenset(given)


# ---- a submission ---------------------------------------------------------------------------


def flag_code(source: str) -> list[str]:
    """Reasons to review one cell's code (``what: class``, in the order of its lines, each
    once)."""
    found = sorted(flag_cell(source, Memory()), key=lambda f: f[0])
    return list(dict.fromkeys(f"{what}: {kind}" for _, what, kind in found))


def flag_notebook(
    nb, given: frozenset[str] = frozenset(), memory: Memory | None = None
) -> list[Flag]:
    """What to review in the student-written code cells of notebook ``nb``, in order."""
    memory = memory if memory is not None else Memory(left=MAX_REVIEWED)
    flags: list[Flag] = []
    for number, cell in enumerate(nb.get("cells", []), 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        if _norm(source) in given:
            with contextlib.suppress(Exception):
                learn(source, memory)
            continue
        if memory.left <= 0:
            flags.append(
                Flag(number, 1, f"not read: past {MAX_REVIEWED:,} characters of code", TOO_LONG)
            )
            break
        if len(source) > MAX_CELL:
            flags.append(
                Flag(
                    number, 1, f"{len(source):,} characters: the first {MAX_CELL:,} read", TOO_LONG
                )
            )
            source = source[:MAX_CELL]
        memory.left -= len(source)
        try:
            found = flag_cell(source, memory)
        except Exception as exc:  # a bug of review's: the cell is listed, grading goes on
            found = [(1, type(exc).__name__, UNREADABLE)]
        flags += [Flag(number, *f) for f in sorted(found, key=lambda f: f[0])]
    return flags


def flag_submission(folder: Path, source_folder: Path, files: list[str] | None = None) -> list[str]:
    """What to review in the notebooks of a submission folder: ``files`` (the notebooks
    that were graded), or every notebook at its top level; each reason once, where it is
    first found, at most ``MAX_FLAGS``. Never raises."""
    flags: list[str] = []
    try:
        given = given_code(str(source_folder))
        paths = [folder / f for f in files] if files is not None else sorted(folder.glob("*.ipynb"))
        memory = Memory(left=MAX_REVIEWED)  # one kernel directory: files written are shared
        for path in paths:
            if path.is_file() and not path.is_symlink():
                prefix = f"{show(path.name, 30)} " if len(paths) > 1 else ""
                flags += [
                    prefix + str(f) for f in _first(flag_notebook(_read(path), given, memory))
                ]
    except Exception as exc:  # a flag is a hint: never a reason to fail grading
        flags.append(f"could not be checked ({type(exc).__name__})")
    if len(flags) > MAX_FLAGS:
        flags = [*flags[: MAX_FLAGS - 1], f"and {len(flags) - MAX_FLAGS + 1} more flags"]
    return flags


def _first(flags: list[Flag]) -> list[Flag]:
    """Each reason once, where it is first found."""
    seen: dict[str, Flag] = {}
    for flag in flags:
        seen.setdefault(flag.reason, flag)
    return list(seen.values())


def _read(path: Path) -> dict:
    """A notebook's cells, read leniently (any nbformat, damaged structure): ``{}`` if the
    file is not a notebook (grading says so; there is nothing to review)."""
    from ...worker.submission import MAX_NOTEBOOK_BYTES

    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return {}
    try:
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    cells = data.get("cells")
    if cells is None:  # nbformat 3
        cells = [
            c
            for ws in data.get("worksheets") or []
            if isinstance(ws, dict)
            for c in ws.get("cells") or []
        ]
        cells = [{**c, "source": c.get("input", "")} for c in cells if isinstance(c, dict)]
    return {"cells": cells if isinstance(cells, list) else []}


def review_note(reasons: list[str]) -> str:
    return f"flagged for review: {'; '.join(reasons)}" if reasons else ""
