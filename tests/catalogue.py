"""The checks every lesson's catalogue of bugs and variants makes, written once, and the
results of grading each mutated notebook, computed once per test session.

A lesson's test file keeps its tables (BUGS, VARIANTS, MESSAGES, HINTS, DEPARTURES...) and
calls these functions from its own short tests. ``graded`` is ``helpers.failing_cells``
over the whole notebook (every test cell's hidden verdict, or with ``visible`` every
visible check), cached per session in a directory both xdist workers share (conftest.py
makes it and removes it at the end of the session): the catalogue test computes a
notebook's results, and the message tests of the same notebook (its lesson's MESSAGES and
HINTS, tests/test_messages.py) read them. One JSON file per key, written atomically; a
lock per key makes the second worker wait for the first instead of running the notebook
again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path

import nbformat
from helpers import (
    SEED,
    SOURCE,
    STUDENT,
    failing_cells,
    is_demo,
    mutate,
    passes_after,
    read,
)

CACHE_ENV = "CATALOGUE_CACHE"  # the session's directory, set by conftest.py
_memo: dict[str, dict[str, str]] = {}  # this process's copy of what it has read or run


def solution(assignment: str) -> nbformat.NotebookNode:
    """The instructor's notebook of ``assignment`` (read once per process)."""
    if assignment not in _solutions:
        _solutions[assignment] = read(SOURCE, assignment)
    return _solutions[assignment]


_solutions: dict[str, nbformat.NotebookNode] = {}


# ---- the tables -------------------------------------------------------------------------


def ids(rows) -> list[str]:
    """The pytest ids of a table's rows: their names."""
    return [row[0] for row in rows]


def changes_of(row) -> list[tuple[str, str]]:
    """The (old, new) changes of a table's row: (name, old, new, ...) or (name, [(old,
    new), ...], ...)."""
    if isinstance(row[1], str):
        return [(row[1], row[2])]
    return list(row[1])


def find(rows, name: str):
    """The row of the table ``rows`` called ``name``."""
    (found,) = [row for row in rows if row[0] == name]
    return found


def changed(nb: nbformat.NotebookNode, changes) -> nbformat.NotebookNode:
    """``nb`` with every (old, new) change of ``changes`` made (helpers.mutate)."""
    for old, new in changes:
        nb = mutate(nb, old, new)
    return nb


def broken(nb: nbformat.NotebookNode, *tables, name: str) -> nbformat.NotebookNode:
    """``nb`` with the changes of the row called ``name`` in the first of ``tables`` that
    has one (BUGS, DEPARTURES...)."""
    for rows in tables:
        found = [row for row in rows if row[0] == name]
        if found:
            return changed(nb, changes_of(found[0]))
    raise KeyError(name)


def without_demos(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as grading runs it: without the cells it skips (``demo``)."""
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if not is_demo(c)]
    return nb


# ---- grading a notebook, once per session -------------------------------------------------


def _key(nb, assignment: str, seed: int, visible: bool, student: str, shown: str) -> str:
    cells = [
        (
            i,
            cell.source,
            cell.metadata.get("nbgrader", {}),
            cell.metadata.get("tags", []),
        )
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
    ]
    blob = json.dumps([assignment, cells, seed, visible, student, shown], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def graded(
    nb: nbformat.NotebookNode,
    assignment: str,
    *,
    seed: int = SEED,
    visible: bool = False,
    student: str = STUDENT,
    shown: str = "",
) -> dict[str, str]:
    """``helpers.failing_cells`` of the whole notebook ({failed cell: its message}, in the
    notebook's order), run at most once per session for the same code cells and flags."""
    key = _key(nb, assignment, seed, visible, student, shown)
    if key in _memo:
        return dict(_memo[key])

    def run() -> dict[str, str]:
        known = None if visible else _known(nb, assignment, seed, student, shown)
        return failing_cells(
            nb, assignment, seed, visible, student=student, shown=shown, known=known
        )

    result = _once(key, run)
    _memo[key] = result
    return dict(result)


def _once(key: str, run):
    """``run()``, or what it returned earlier this session (in the session's folder, which
    both workers share: the second waits for the first), by ``key``; JSON values."""
    folder = os.environ.get(CACHE_ENV)
    if not folder:
        return run()
    path = Path(folder) / f"{key}.json"
    with _locked(Path(folder) / f"{key}.lock"):
        if path.exists():
            return json.loads(path.read_text())
        result = run()
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(result))
        os.replace(scratch, path)
        return result


def _known(nb, assignment: str, seed: int, student: str, shown: str) -> dict[int, set[str]]:
    """The test cells of ``nb`` whose hidden verdicts are the solution's, which passes them
    all: those before the first code cell where ``nb`` differs from the solution. Every
    cell up to there runs exactly as in the solution (the same code, in the same order,
    the same seed), so its hidden test would decide the same again; a catalogue of slips
    in a lesson's last exercise need not run the earlier ones' tests once per slip. What
    each passed test adds to the exercises passed so far (``failing_cells``) is kept."""
    base = solution(assignment)
    first = next(
        (
            i
            for i, (a, b) in enumerate(zip(base.cells, nb.cells, strict=False))
            if _cell(a) != _cell(b)
        ),
        min(len(base.cells), len(nb.cells)),
    )
    if first == 0:
        return {}
    key = "trace-" + _key(base, assignment, seed, False, student, shown)
    after = _once(key, lambda: _plain(passes_after(base, assignment, seed, student, shown)))
    if after is None:
        return {}
    return {int(i): set(names) for i, names in after.items() if int(i) < first}


def _cell(cell) -> tuple:
    return (
        cell.cell_type,
        cell.source,
        cell.metadata.get("nbgrader", {}),
        cell.metadata.get("tags", []),
    )


def _plain(after: dict[int, set[str]] | None):
    """JSON of ``passes_after``'s answer (keys become text, sets sorted lists)."""
    return None if after is None else {str(i): sorted(s) for i, s in after.items()}


def first_failure(results: dict[str, str]) -> dict[str, str]:
    """The first of a notebook's failures, as ``failing_cells(first=True)`` reports it (the
    cells run in order, so it is the first of the whole run's)."""
    return dict(list(results.items())[:1])


# ---- the checks ---------------------------------------------------------------------------


def assert_short(message: str) -> None:
    """Every line of a message a student reads is under 90 characters."""
    assert all(len(line) < 90 for line in message.splitlines()), message


def assert_passes(nb: nbformat.NotebookNode, assignment: str, *, visible: bool = False) -> None:
    """Full marks (and with ``visible``, every visible check passes too)."""
    assert graded(nb, assignment) == {}
    if visible:
        assert graded(nb, assignment, visible=True) == {}


def assert_catches(
    nb: nbformat.NotebookNode,
    assignment: str,
    cells: set[str],
    *,
    names: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, str]:
    """``nb`` fails exactly the test cells ``cells``, each message's lines under 90; with
    ``names``, each message names one of its cell's functions. Returns the failures."""
    failed = graded(nb, assignment)
    assert set(failed) == set(cells), failed
    for cell, message in failed.items():
        assert_short(message)
        if names is not None:
            assert any(name in message for name in names[cell]), message
    return failed


def assert_visible_fails(
    nb: nbformat.NotebookNode, assignment: str, cells: set[str], *, exactly: bool = True
) -> dict[str, str]:
    """The visible checks of ``cells`` fail (exactly those, or at least those), each
    message's lines under 90. Returns the failures."""
    seen = graded(nb, assignment, visible=True)
    assert set(seen) == set(cells) if exactly else set(cells) <= set(seen), seen
    for message in seen.values():
        assert_short(message)
    return seen


def hidden_message(nb: nbformat.NotebookNode, assignment: str, cell: str) -> str:
    """The message of the hidden test of ``cell``, which must fail, as grading the whole
    notebook gives it (read from the session's cache when the catalogue ran it)."""
    failed = graded(nb, assignment)
    assert cell in failed, failed
    assert_short(failed[cell])
    return failed[cell]


def flat(message: str) -> str:
    """A message on one line: its words, one space apart."""
    return " ".join(message.split())


def assert_visible_and_hidden_fail(nb: nbformat.NotebookNode, assignment: str, cell: str) -> str:
    """The visible check of ``cell`` fails (its message short), and so does its hidden
    test, on the notebook's own definitions. Returns the hidden test's message."""
    seen = graded(nb, assignment, visible=True)
    assert cell in seen, seen
    assert_short(seen[cell])
    return hidden_message(nb, assignment, cell)
