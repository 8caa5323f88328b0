"""The grader's notes on a submission: what happened while it was graded, in words.

``compose_notes`` turns a worker's ``Result`` (and the events of earlier runs of the same
submission) into notes per notebook; ``note_line`` joins them into the one line shown in
the class table, grades.csv and on top of the autograded notebook.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from ..kernel import bounds
from ..kernel.limits import Limits
from ..messages import Event, Result

EVENT_TEXT = {
    "died": "the kernel died in {cell}",
    "stuck": "{cell} ran past the time limit and ignored the interrupt",
    "timeout": "{cell} was stopped after the {limit} s per-cell limit",
    "wall": "the notebook ran out of its {wall} s time limit at {cell}",
    "memory": "{cell} ran out of memory (limit {memory})",
    "processes": "{cell} hit the limit on processes ({processes} per kernel)",
    "output": "{cell} printed too much; only the first {output} kept",
    "grader": "the hidden test of {cell} could not run: a course content error (the "
    "course's to fix, not this submission's): see its message",
}
HISTORY_VERB = {
    "died": "crashed the kernel",
    "stuck": "hung",
    "lost": "stopped its grading worker",
}  # a cell skipped in a later run
PROBLEM_EVENTS = {"died", "stuck", "timeout", "wall", "memory", "processes", "grader"}

Notes = dict[str, list[tuple[str, bool]]]  # notebook name ("" for the folder) -> (text, problem)


def describe_cell(event: Event, nb) -> str:
    """``cell 7 (`value_test_add_mul`)``, or the cell's first line when it has no id."""
    if event.cell is None:
        return "a cell"
    what = f"cell {event.cell + 1}"
    if event.grade_id:
        return f"{what} (`{event.grade_id}`)"
    if nb is not None and 0 <= event.cell < len(nb.cells):
        first = next(
            (ln.strip() for ln in nb.cells[event.cell].source.splitlines() if ln.strip()), ""
        )
        if first:
            first = first.replace("`", "'")
            return f"{what} (`{first[:40]}{'…' if len(first) > 40 else ''}`)"
    return what


def compose_notes(
    result: Result, history: list[Event], limits: Limits, autograded: Path | None
) -> Notes:
    """Notes per notebook from a worker's result and the events of earlier runs (cells
    that crashed or hung and were then skipped)."""
    import nbformat

    fmt = {
        "limit": limits.cell_timeout,
        "wall": limits.wall,
        "memory": bounds.shown(limits.memory),
        "processes": bounds.tasks_bound(limits),
        "output": f"{limits.output // 1000} kB",
    }
    out: Notes = {"": [(n.text, n.problem) for n in result.folder_notes]}
    for name, entry in result.notebooks.items():
        notes = [(n.text, n.problem) for n in entry.notes]
        nb = None
        path = autograded / f"{name}.ipynb" if autograded else None
        if path is not None and path.exists():
            with contextlib.suppress(Exception):
                nb = nbformat.read(path, as_version=4)
        for event in (e for e in history if e.notebook == name):
            verb = HISTORY_VERB.get(event.kind, "hung")
            if event.kind == "died" and event.detail == "memory":
                verb = f"ran out of memory (limit {fmt['memory']})"
            notes.append(
                (f"{describe_cell(event, nb)} {verb} and was skipped; the rest was graded", True)
            )
        for event in entry.events:
            if event.kind not in EVENT_TEXT:
                continue
            kind = "memory" if event.detail == "memory" else event.kind  # killed at its bound
            text = EVENT_TEXT[kind].format(cell=describe_cell(event, nb), **fmt)
            if event.kind in ("died", "stuck"):
                text += "; later cells were not run"
            notes.append((text, event.kind in PROBLEM_EVENTS))
        if entry.error and not entry.graded and entry.used_file:
            notes.append((f"nbgrader could not grade `{name}.ipynb`: {entry.error[:160]}", True))
        out[name] = notes
    return out


def kernel_flags(result: Result) -> list[str]:
    """Reasons for review that the run itself showed: answers to hidden tests that did
    not come from the grading code, or not whole (see answers.py)."""
    return list(
        dict.fromkeys(
            f"{name}: {event.grade_id}: {event.detail}"[:300]
            for name, entry in result.notebooks.items()
            for event in entry.events
            if event.kind == "forged"
        )
    )


def note_line(notes: Notes, n_notebooks: int, late: float) -> str:
    """Every note once, joined with "; " (prefixed by its notebook when there are several)."""
    parts = []
    for name, items in notes.items():
        for text, _ in items:
            prefix = f"{name}: " if name and n_notebooks > 1 else ""
            parts.append(prefix + text)
    if late > 0:
        parts.append(f"submitted {duration(late)} late")
    return "; ".join(dict.fromkeys(parts))


LATE_NOTE = re.compile(r"submitted (?:\d+ min|\d+ h \d\d min|\d+ days) late")


def with_lateness(note: str, late: float) -> str:
    """A recorded note line with its lateness as it is now (an extension given, or a due
    date moved, since grading): its "submitted ... late" part replaced, dropped or added."""
    now = f"submitted {duration(late)} late" if late > 0 else ""
    parts = note.split("; ") if note else []
    kept = [now if LATE_NOTE.fullmatch(part) else part for part in parts]
    if now and now not in kept:
        kept.append(now)
    return "; ".join(part for part in kept if part)


def has_problem(notes: Notes) -> bool:
    return any(problem for items in notes.values() for _, problem in items)


def duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    hours = minutes // 60
    return f"{hours} h {minutes % 60:02d} min" if hours < 48 else f"{hours // 24} days"
