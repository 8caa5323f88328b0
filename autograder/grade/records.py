"""What ``grade`` keeps per submission: the autograded folder and its record.

A submission is graded again only when ``folder_digest`` of what was submitted or
``grader_digest`` of the assignment's grading material differs from its record
(``autograded/<student>/<assignment>/.autograder.json``, a ``record.GradingRecord``:
an incomplete record is never current). ``install`` swaps a new
autograded folder and its record in at once; ``clean_leftovers`` removes what a killed
run left half-installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

from ..course import RECORD, SOURCE, Course
from ..record import GradingRecord
from .notes import Notes

GRADER_VERSION = "1"  # bump to grade every submission again


def grader_digest(assignment: str, source: Path) -> str:
    """A hash of the assignment's source and of everything that grades it: the grader's
    package, every file of it as workers receive it (worker/material.py), the reference
    engine, and the sources of the lessons its course engine is read from (a lesson's)."""
    from ..content.generate import source_digest
    from ..verdicts.api import engine_lessons
    from ..worker.plugins import code_digest, files_digest, read_tree

    h = hashlib.sha256(f"{GRADER_VERSION}\0{source_digest(assignment, source)}".encode())
    for lesson in engine_lessons(assignment):
        h.update(source_digest(lesson, source).encode())
    h.update(code_digest(Path(__file__).resolve().parents[1]).encode())
    h.update(files_digest(read_tree(SOURCE / ".reference")).encode())
    return h.hexdigest()[:24]


def install(
    course: Course,
    student: str,
    assignment: str,
    autograded: Path | None,
    notes: Notes,
    record: GradingRecord,
) -> None:
    """Swap the new autograded folder (with a note cell on top of notebooks that have
    notes, and the record) in place of the old one."""
    import nbformat

    parent = course.autograded / student
    parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    staging = parent / f".{assignment}.new-{tag}"
    if autograded is not None and autograded.is_dir():
        shutil.copytree(autograded, staging)
    else:
        staging.mkdir()
    for name, items in notes.items():
        path = staging / f"{name}.ipynb"
        texts = [t for t, _ in items] + [t for t, _ in notes.get("", [])]
        if not name or not texts or not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        lines = "\n".join(f"- {t}" for t in dict.fromkeys(texts))
        cell = nbformat.v4.new_markdown_cell(f"**Autograder notes**\n\n{lines}")
        cell.metadata["autograder"] = {"note": True}
        nb.cells.insert(0, cell)
        mode = path.stat().st_mode
        path.unlink()
        nbformat.write(nb, path)
        os.chmod(path, mode & 0o777)
    (staging / RECORD).write_text(record.to_json(), encoding="utf-8")
    dest = parent / assignment
    old = parent / f".{assignment}.old-{tag}"
    if dest.exists():
        dest.rename(old)
    staging.rename(dest)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def clean_leftovers(course: Course) -> None:
    """Remove half-installed folders left by a grade run that was killed."""
    if not course.autograded.is_dir():
        return
    for parent in course.autograded.iterdir():
        if not parent.is_dir():
            continue
        for entry in parent.iterdir():
            if entry.name.startswith(".") and (".new-" in entry.name or ".old-" in entry.name):
                shutil.rmtree(entry, ignore_errors=True)
