"""What the class report shows, read once from where grading left it.

- nbgrader's gradebook (two queries, whatever the class's size): the students, each
  assignment's due date and points, each submission's score, time stamp and extension,
  and each graded cell's score (manual grades from formgrader included);
- the grader's records (``course.read_record``, checked by ``record.GradingRecord``):
  grading time (``seconds``), the note, whether it was a problem, the flags for review;
- the autograded notebooks: each test cell's verdict (``metadata.autograder.verdict``),
  for the slips the hidden tests diagnosed;
- ``submitted/``: submissions collected but not graded yet.

Everything under ``autograded/`` began as a student's file, so it is read as untrusted
input: plain ``json`` (no nbformat validation: one parse per notebook), a size limit,
every value's type checked, text cut to a length; a file that cannot be read is listed
in ``problems`` and the rest of the report is made without it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..course import Course
from ..errors import GraderError
from ..schedule import LatePolicy, Schedule, late_penalty, to_utc_naive
from .slips import MAX_MESSAGE

MAX_NOTEBOOK = 64 * 1024 * 1024  # bytes: an autograded notebook larger is not read
MAX_NOTE = 500  # characters of a record's note kept


@dataclass
class Submission:
    """One graded submission, as the gradebook and the grader's record have it."""

    student: str
    assignment: str
    score: float
    max_score: float
    timestamp: datetime | None
    late_seconds: float  # against the student's due date (schedule.py: extensions included)
    seconds: float | None = None  # grading time, from the record
    note: str = ""
    problem: bool = False
    review: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    """A test cell's verdict in an autograded notebook (validated)."""

    student: str
    assignment: str
    notebook: str
    cell: str
    passed: bool
    message: str
    credit: float | None


@dataclass(frozen=True)
class Late:
    """A late submission: how late, and what the course's late policy makes of it."""

    student: str
    assignment: str
    seconds: float
    submitted: str = ""  # the submission's time stamp, as the gradebook has it (UTC)
    penalty: str = ""  # the points the late policy takes, e.g. "-2.8" ("" : none)
    explanation: str = ""  # the policy's one line (schedule.late_penalty)


@dataclass
class ClassData:
    assignments: list[str]  # in course order
    students: list[str]  # sorted ids
    names: dict[str, str]  # id -> display name (from the roster; the id without one)
    max_scores: dict[str, float]
    due: dict[str, datetime | None]
    submissions: dict[tuple[str, str], Submission]  # (student, assignment)
    pending: set[tuple[str, str]]  # in submitted/, not in the gradebook yet
    cells: list[list[str]]  # cells.csv's rows: student, assignment, notebook, cell, score, max
    cell_order: dict[str, list[tuple[str, str]]]  # assignment -> (notebook, cell), in order
    verdicts: list[Verdict]
    problems: list[str]
    now: datetime
    policy: LatePolicy | None = None  # the course's late policy (schedule.py)
    _by_assignment: dict[str, list[Submission]] | None = field(default=None, repr=False)

    def graded(self, assignment: str) -> list[Submission]:
        """The assignment's graded submissions, by student."""
        if self._by_assignment is None:
            self._by_assignment = {}
            for (_, a), sub in sorted(self.submissions.items()):
                self._by_assignment.setdefault(a, []).append(sub)
        return self._by_assignment.get(assignment, [])

    def is_due(self, assignment: str) -> bool:
        """Whether a student without a submission is missing it: its due date has passed
        or, without one, others have handed it in."""
        due = self.due.get(assignment)
        if due is not None:
            return due <= self.now
        return any(a == assignment for _, a in [*self.submissions, *self.pending])

    def missing(self) -> list[tuple[str, list[str]]]:
        """(student, the due assignments they have no submission of), for each student
        missing any."""
        due = [a for a in self.assignments if self.is_due(a)]
        out = []
        for s in self.students:
            gone = [a for a in due if (s, a) not in self.submissions and (s, a) not in self.pending]
            if gone:
                out.append((s, gone))
        return out


def gather(
    course: Course,
    assignments: Iterable[str] | None = None,
    now: datetime | None = None,
    schedule: Schedule | None = None,
) -> ClassData:
    """Everything the report shows, for ``assignments`` (default: every assignment the
    gradebook or ``submitted/`` has; one asked for and not there yet shows as such).
    Raises GraderError for an assignment the course does not have or a gradebook that is
    not there. ``schedule``: the due dates, extensions and late policy (default: the
    course's ``c.Schedule``), as export and the feedback pages apply them."""
    from ..grade.gradebook import cache_alembic_version

    wanted = list(assignments or [])
    if course.db_url.startswith("sqlite:///"):
        path = Path(course.db_url.removeprefix("sqlite:///"))
        if not path.is_file():
            raise GraderError(f"no gradebook at {path}: grade the class first")
    cache_alembic_version()
    problems: list[str] = []
    schedule = (schedule or Schedule.for_course(course.config)).check(course.assignments())
    gb = _read_gradebook(course, schedule)
    pending = _pending(course)
    known = set(course.assignments()) | set(gb["assignments"]) | {a for _, a in pending}
    unknown = [a for a in wanted if a not in known]
    if unknown:
        raise GraderError(
            f"no assignment {unknown[0]!r} in this course (it has: {', '.join(sorted(known))})"
        )
    order = {a: i for i, a in enumerate(course.assignments())}
    present = set(gb["assignments"]) | {a for _, a in pending}  # by default, what is there
    chosen = sorted(set(wanted) or present, key=lambda a: (order.get(a, 1e9), a))
    keep = set(chosen)
    submissions = {k: s for k, s in gb["submissions"].items() if k[1] in keep}
    pending = {(s, a) for s, a in pending if a in keep and (s, a) not in submissions}
    for sub in submissions.values():
        _add_record(course, sub, problems)
    students = sorted(set(gb["students"]) | {s for s, _ in pending})
    verdicts = []
    for s, a in sorted(submissions):
        verdicts += read_verdicts(course.autograded / s / a, s, a, course.root, problems)
    return ClassData(
        assignments=chosen,
        students=students,
        names=display_names(course, students),
        max_scores={a: gb["assignments"].get(a, (0.0, None))[0] for a in chosen},
        due={a: gb["assignments"].get(a, (0.0, None))[1] for a in chosen},
        submissions=submissions,
        pending=pending,
        cells=[row for row in gb["cells"] if row[1] in keep],
        cell_order={a: _cell_order(course, a, gb["cells"]) for a in chosen},
        verdicts=verdicts,
        problems=problems,
        now=now or datetime.now(UTC).replace(tzinfo=None),
        policy=schedule.policy(),
    )


def _read_gradebook(course: Course, schedule: Schedule) -> dict:
    """The gradebook's assignments {name: (max score, due date)}, students, submissions
    and cells.csv's rows, in a few queries (nbgrader's ORM, its own column expressions
    for scores). Due dates and lateness are the ``schedule``'s (``c.Schedule`` where it
    sets them, else the gradebook's, as export has them); dates are naive UTC."""

    from nbgrader.api import (
        Assignment,
        BaseCell,
        Grade,
        Gradebook,
        Notebook,
        Student,
        SubmittedAssignment,
        SubmittedNotebook,
    )

    with Gradebook(course.db_url, course.course_id) as gb:
        db = gb.db
        assignments = {
            name: (float(most or 0.0), _naive(schedule.regular_due(name, due)))
            for name, most, due in db.query(
                Assignment.name, Assignment.max_score, Assignment.duedate
            ).filter(Assignment.course_id == course.course_id)
        }
        students = [s for (s,) in db.query(Student.id)]
        rows = (
            db.query(
                SubmittedAssignment.student_id,
                Assignment.name,
                SubmittedAssignment.score,
                SubmittedAssignment.max_score,
                SubmittedAssignment.timestamp,
                SubmittedAssignment.extension,
                Assignment.duedate,
            )
            .join(Assignment, SubmittedAssignment.assignment)
            .filter(Assignment.course_id == course.course_id)
        )
        submissions = {}
        for student, a, score, most, stamp, extension, due in rows:
            submissions[(student, a)] = Submission(
                student=student,
                assignment=a,
                score=float(score or 0.0),
                max_score=float(most or 0.0),
                timestamp=stamp,
                late_seconds=schedule.lateness(
                    a, student, stamp, book_due=due, book_extension=extension
                ).seconds,
            )
        grades = (
            db.query(
                SubmittedAssignment.student_id,
                Assignment.name,
                Notebook.name,
                BaseCell.name,
                Grade.score,
                Grade.max_score,
            )
            .select_from(Grade)
            .join(SubmittedNotebook, Grade.notebook)
            .join(SubmittedAssignment, SubmittedNotebook.assignment)
            .join(Assignment, SubmittedAssignment.assignment)
            .join(BaseCell, Grade.cell)
            .join(Notebook, BaseCell.notebook)
            .filter(Assignment.course_id == course.course_id)
        )
        cells = [
            [s, a, nb, cell, _num(score), _num(most)]
            for s, a, nb, cell, score, most in sorted(grades, key=lambda r: r[:4])
        ]
    return {
        "assignments": assignments,
        "students": students,
        "submissions": submissions,
        "cells": cells,
    }


def _num(x) -> str:
    return f"{float(x or 0):g}"


def _naive(when: datetime | None) -> datetime | None:
    return None if when is None else to_utc_naive(when)


def _pending(course: Course) -> set[tuple[str, str]]:
    """(student, assignment) for each folder in submitted/ holding a notebook."""
    out = set()
    top = course.submitted
    if not top.is_dir():
        return out
    for student in top.iterdir():
        if not student.is_dir() or student.name.startswith("."):
            continue
        for folder in student.iterdir():
            named = folder.is_dir() and not folder.name.startswith(".")
            if named and any(folder.glob("*.ipynb")):
                out.add((student.name, folder.name))
    return out


def _add_record(course: Course, sub: Submission, problems: list[str]) -> None:
    """The grader's record's grading time, note, problem and flags (checked by
    ``GradingRecord``: a wrong field is its default), the texts cut for the page."""
    record = course.read_record(sub.student, sub.assignment)
    if record is None:
        path = course.record_path(sub.student, sub.assignment)
        if path.exists():
            problems.append(f"{_rel(path, course.root)}: the grader's record cannot be read")
        return
    sub.seconds = record.seconds
    sub.note = record.note[:MAX_NOTE]
    sub.problem = record.problem
    sub.review = [r[:MAX_NOTE] for r in record.review]


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def read_verdicts(
    folder: Path, student: str, assignment: str, root: Path, problems: list[str]
) -> list[Verdict]:
    """The test cells' verdicts in the autograded notebooks of one submission. Each
    notebook is parsed once, with ``json``; one that cannot be read is listed in
    ``problems`` (and gives no verdicts)."""
    out: list[Verdict] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.ipynb")):
        where = _rel(path, root)
        try:
            if path.is_symlink() or not path.is_file():
                raise ValueError("not a regular file")
            if path.stat().st_size > MAX_NOTEBOOK:
                raise ValueError(f"larger than {MAX_NOTEBOOK // 2**20} MiB")
            nb = json.loads(path.read_bytes())
            cells = nb.get("cells") if isinstance(nb, dict) else None
            if not isinstance(cells, list):
                raise ValueError("no list of cells")
        except (OSError, ValueError, RecursionError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            problems.append(f"{where}: unreadable autograded notebook ({_short(reason)})")
            continue
        notebook = path.stem
        for cell in cells:
            meta = cell.get("metadata") if isinstance(cell, dict) else None
            if isinstance(meta, dict) and "autograder" in meta:  # test cells only
                v = _verdict(meta, student, assignment, notebook)
                if v is not None:
                    out.append(v)
    return out


def _short(reason: object, n: int = 120) -> str:
    text = " ".join(str(reason).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _verdict(meta: dict, student: str, assignment: str, notebook: str) -> Verdict | None:
    """A test cell's verdict from its metadata, each value's type checked (None where
    there is no well-formed verdict)."""
    nbg, ag = meta.get("nbgrader"), meta.get("autograder")
    if not isinstance(nbg, dict) or not isinstance(ag, dict):
        return None
    gid, v = nbg.get("grade_id"), ag.get("verdict")
    if not isinstance(gid, str) or not isinstance(v, dict) or len(gid) > 200:
        return None
    passed = v.get("passed")
    if not isinstance(passed, bool):
        return None
    message = v.get("message")
    credit = v.get("credit")
    return Verdict(
        student=student,
        assignment=assignment,
        notebook=notebook,
        cell=gid,
        passed=passed,
        message=message[:MAX_MESSAGE] if isinstance(message, str) else "",
        credit=float(credit) if _is_number(credit) and 0 <= credit <= 1 else None,
    )


def _cell_order(course: Course, assignment: str, cells: list[list[str]]) -> list[tuple[str, str]]:
    """The assignment's graded cells (notebook, grade id) in the order of the course's own
    notebooks in source/ (which the grader trusts); cells the gradebook has that the
    source lacks come after, by name."""
    order: list[tuple[str, str]] = []
    for path in sorted((course.source / assignment).glob("*.ipynb")):
        try:
            nb = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        for cell in nb.get("cells", []):
            md = cell.get("metadata", {}).get("nbgrader", {})
            if md.get("grade") and md.get("grade_id"):
                order.append((path.stem, md["grade_id"]))
    seen = set(order)
    extra = sorted({(nb, c) for _, a, nb, c, _, _ in cells if a == assignment} - seen)
    return order + extra


def late_rows(data: ClassData) -> list[Late]:
    """Every late submission, latest first within each assignment.

    How late is against the student's own due date (``c.Schedule``, extensions
    included; ``gather``), and the penalty is the course's late policy's
    (``schedule.late_penalty``), as export and the feedback pages have them.
    """
    out = []
    for a in data.assignments:
        subs = [s for s in data.graded(a) if s.late_seconds > 0]
        for s in sorted(subs, key=lambda s: (-s.late_seconds, s.student)):
            stamp = s.timestamp.strftime("%Y-%m-%d %H:%M") if s.timestamp else ""
            points, why = (
                late_penalty(s.score, s.max_score, s.late_seconds, data.policy)
                if data.policy is not None
                else (0.0, "")
            )
            out.append(
                Late(s.student, a, s.late_seconds, stamp, f"−{points:g}" if points else "", why)
            )
    return out


def display_names(course: Course, students: list[str]) -> dict[str, str]:
    """{student id: name to show}: the roster's name (``roster.csv``) where it has one,
    else the id. A roster that cannot be read stops the report with its one-line error,
    as it stops every command that reads it."""
    from ..roster import read_roster

    names = {s: s for s in students}
    for row in read_roster(course.root):
        if row.id in names and row.name.strip():
            names[row.id] = row.name.strip()[:MAX_NOTE]
    return names
