"""What was submitted: ``submitted/<student>/<assignment>/`` folders to grade, and every
entry there that will not be graded, with the reason (nothing is silently ignored), and
``folder_digest``, which tells whether a submitted folder changed."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..course import Course
from ..roster import GLOB_CHARS  # nbgrader's formgrader and feedback cannot handle these in ids

__all__ = ["GLOB_CHARS", "Submission", "discover", "folder_digest"]
IGNORED = (".ipynb_checkpoints", ".DS_Store")


@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path


def discover(
    course: Course,
    assignments: list[str] | None,
    students: list[str] | None,
) -> tuple[list[Submission], list[str]]:
    """Submissions to consider, and problems with the submitted folder (never ignored)."""
    known = set(course.assignments())
    wanted_a = list(dict.fromkeys(assignments or []))
    wanted_s = list(dict.fromkeys(students or []))
    problems: list[str] = []
    found: list[Submission] = []
    if not course.submitted.is_dir():
        return [], [f"{course.submitted} does not exist: nothing was submitted"]
    for sdir in sorted(course.submitted.iterdir(), key=lambda p: p.name):
        if sdir.name in IGNORED or (wanted_s and sdir.name not in wanted_s):
            continue
        if not sdir.is_dir():
            problems.append(f"submitted/{sdir.name} is a file, not a student folder: not graded")
            continue
        if sdir.name.startswith("."):
            problems.append(f"submitted/{sdir.name}: a hidden folder is not a student: not graded")
            continue
        found += _assignments_of(sdir, known, wanted_a, problems)
    have = {s.student for s in found}
    for student in wanted_s:
        if student not in have:
            problems.append(
                f"no submission from student {student!r}"
                + (f" for {', '.join(wanted_a)}" if wanted_a else "")
            )
    for sub in found:
        if GLOB_CHARS & set(sub.student):
            problems.append(
                f"student id {sub.student!r} has characters (*?[]) that "
                "nbgrader's formgrader and feedback cannot handle: rename "
                "the folder"
            )
    return found, problems


def _assignments_of(
    sdir: Path,
    known: set[str],
    wanted: list[str],
    problems: list[str],
) -> list[Submission]:
    """One student's submitted assignment folders (``wanted`` ones, or all); what else is
    in the student's folder goes to ``problems``."""
    found = []
    for adir in sorted(sdir.iterdir(), key=lambda p: p.name):
        if adir.name in IGNORED:
            continue
        if not adir.is_dir():
            problems.append(
                f"submitted/{sdir.name}/{adir.name} is not in an assignment folder: not graded"
            )
        elif adir.name not in known:
            if not wanted:
                problems.append(
                    f"submitted/{sdir.name}/{adir.name}: no such assignment in source/: not graded"
                )
        elif not wanted or adir.name in wanted:
            found.append(Submission(sdir.name, adir.name, adir))
    return found


def folder_digest(folder: Path) -> str:
    """A hash of a folder's files and links (checkpoints and caches left out)."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if ".ipynb_checkpoints" in rel.parts or "__pycache__" in rel.parts:
            continue
        if path.is_symlink():
            h.update(b"L" + str(rel).encode() + b"\0" + os.readlink(path).encode() + b"\0")
        elif path.is_file():
            h.update(b"F" + str(rel).encode() + b"\0")
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()[:24]
