"""nbgrader's gradebook, as ``grade`` uses it.

- ``sync_assignment``: a private *template* gradebook that knows the assignment's cells
  (nbgrader ``generate_assignment``), and the course gradebook brought up to date the same
  way when its cells differ;
- ``auto_scores``: what the gradebook holds now, to tell whether a record is current;
- ``merge``: one submission's scores written with ``SaveVerdicts`` (each test cell's
  verdict) and nbgrader's ``AssignLatePenalties`` (only the grading process writes the
  course gradebook), with the assignment's due date and the student's extension from
  ``c.Schedule`` (``sync_dates``), so nbgrader's own lateness (formgrader, its late note)
  agrees with ours; ``sync_schedule`` does the same for every submission of the
  assignments a run looks at, graded again or not. Scores stay raw: the late policy is
  applied by ``export`` and the feedback pages.

Any database URL nbgrader accepts works; SQLite by default.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..course import Course
from ..errors import GraderError
from ..schedule import Schedule, to_utc_naive


def cache_alembic_version() -> None:
    """nbgrader runs `alembic heads` (a new process, seconds) for every new gradebook;
    the answer cannot change while we run."""
    import nbgrader.api

    if not hasattr(nbgrader.api.get_alembic_version, "cache_info"):
        nbgrader.api.get_alembic_version = functools.cache(nbgrader.api.get_alembic_version)


def cells_fingerprint(db_url: str, assignment: str, course_id: str):
    """Everything the gradebook knows about the assignment's cells (None: not there)."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return None
        rows = []
        for nb in a.notebooks:
            rows += [
                ("s", nb.name, c.name, c.cell_type, bool(c.locked), c.checksum, c.source)
                for c in nb.source_cells
            ]
            rows += [("g", nb.name, c.name, float(c.max_score)) for c in nb.grade_cells]
            rows += [("o", nb.name, c.name) for c in nb.solution_cells]
        return sorted(rows, key=repr)


def sync_assignment(course: Course, assignment: str, work: Path) -> Path:
    """A template gradebook with the assignment's cells (returned), and the course
    gradebook brought up to date the same way (nbgrader generate_assignment)."""
    template = work / f"template-{assignment}.db"
    fresh = _generate(course, assignment, f"sqlite:///{template}", work / "release-template")
    if cells_fingerprint(course.db_url, assignment, course.course_id) != cells_fingerprint(
        f"sqlite:///{template}", assignment, course.course_id
    ):
        _generate(course, assignment, course.db_url, work / "release-course")
    return fresh


def _generate(course: Course, assignment: str, db_url: str, release: Path) -> Path:
    api = course.api(release_directory=str(release), db_url=db_url)
    result = api.generate_assignment(assignment, force=True, create=True)
    if "KeyboardInterrupt" in (result.get("error") or ""):  # nbgrader caught Ctrl-C
        raise KeyboardInterrupt
    if not result.get("success"):
        raise GraderError(
            f"nbgrader generate_assignment {assignment} failed:\n"
            f"{(result.get('log') or '')[-2000:]}{result.get('error') or ''}"
        )
    return Path(db_url.removeprefix("sqlite:///"))


def auto_scores(course: Course, assignment: str) -> dict[str, float]:
    """{student: sum of autograder scores} for the assignment's submissions in the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    if (
        course.db_url.startswith("sqlite:///")
        and not Path(course.db_url.removeprefix("sqlite:///")).exists()
    ):
        return out  # no gradebook yet (and no need to create one just to read it)
    with Gradebook(course.db_url, course.course_id) as gb:
        try:
            subs = gb.assignment_submissions(assignment)
        except MissingEntry:
            return out
        for sub in subs:
            out[sub.student.id] = round(
                sum(g.auto_score or 0 for nb in sub.notebooks for g in nb.grades), 6
            )
    return out


def sync_dates(gb, schedule: Schedule, assignment: str, students: list[str] | None = None) -> None:
    """``c.Schedule``'s due date of ``assignment`` (when it sets one) and each student's
    extension into nbgrader's gradebook ``gb`` (``students``: those submissions only),
    committed. Nothing else changes: nbgrader's own due date stays where the course
    sets none, and its own extensions where ``Schedule.due`` lets them count."""
    from nbgrader.api import MissingEntry

    try:
        row = gb.find_assignment(assignment)
    except MissingEntry:
        return
    due = schedule.set_due(assignment)
    if due is not None and row.duedate != to_utc_naive(due):
        row.duedate = to_utc_naive(due)
    for sub in row.submissions:
        if students is not None and sub.student.id not in students:
            continue
        extension = schedule.book_extension(assignment, sub.student.id, row.duedate, sub.extension)
        if sub.extension != extension:
            sub.extension = extension
    gb.db.commit()


def sync_schedule(course: Course, schedule: Schedule, assignments: list[str]) -> None:
    """``sync_dates`` for every submission of ``assignments`` in the course gradebook."""
    if (
        course.db_url.startswith("sqlite:///")
        and not Path(course.db_url.removeprefix("sqlite:///")).exists()
    ):
        return  # no gradebook yet: merge syncs each submission as it creates it

    def run():
        from nbgrader.api import Gradebook

        with Gradebook(course.db_url, course.course_id) as gb:
            for assignment in assignments:
                sync_dates(gb, schedule, assignment)

    retry_locked(run)


@dataclass
class Totals:
    """A submission's scores as the gradebook has them after a merge."""

    score: float
    max_score: float
    auto_score: float
    late_seconds: float
    cells: dict[str, float | None]  # "notebook/cell" -> autograder score


def merge(
    course: Course,
    student: str,
    assignment: str,
    folder: Path,
    autograded: Path | None,
    graded: set[str],
    schedule: Schedule | None = None,
) -> Totals:
    """Write one submission's scores into the course gradebook with SaveVerdicts and
    nbgrader's AssignLatePenalties (notebooks not in ``graded`` score zero), with its
    due date and extension from ``schedule`` (default: the course's ``c.Schedule``).
    ``folder`` is the submitted folder (for its timestamp.txt). A locked SQLite gradebook
    (formgrader writing) is tried again after a pause."""
    from sqlalchemy.exc import SAWarning

    schedule = schedule or Schedule.for_course(course.config)
    with warnings.catch_warnings():  # nbgrader's add_submission warns about its own session
        warnings.simplefilter("ignore", SAWarning)
        return retry_locked(
            lambda: _merge(course, student, assignment, folder, autograded, graded, schedule)
        )


def _merge(
    course: Course,
    s: str,
    a: str,
    folder: Path,
    autograded: Path | None,
    graded: set[str],
    schedule: Schedule,
) -> Totals:
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import AssignLatePenalties

    from ..preprocessors.saveverdicts import SaveVerdicts

    stamp = course.coursedir().get_existing_timestamp(str(folder))
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.update_or_create_student(s)
        kwargs = {"timestamp": stamp} if stamp else {}
        submission = gb.update_or_create_submission(a, s, **kwargs)
        names = [nb.name for nb in gb.find_assignment(a).notebooks]
        have = {g.name for nb in submission.notebooks for g in nb.grades}
        want = {c.name for nb in gb.find_assignment(a).notebooks for c in nb.grade_cells}
        if have != want:  # the assignment's cells changed since this entry was made
            gb.remove_submission(a, s)
            gb.update_or_create_submission(a, s, **kwargs)
        sync_dates(gb, schedule, a, [s])  # before AssignLatePenalties reads the lateness
    for name in names:
        path = autograded / f"{name}.ipynb" if autograded else None
        if name in graded and path is not None and path.exists():
            nb = nbformat.read(path, as_version=4)
            resources = {
                "nbgrader": {
                    "notebook": name,
                    "assignment": a,
                    "student": s,
                    "db_url": course.db_url,
                }
            }
            SaveVerdicts(config=course.config).preprocess(nb, resources)
            AssignLatePenalties(config=course.config).preprocess(nb, resources)
        else:
            with Gradebook(course.db_url, course.course_id) as gb:
                snb = gb.find_submission_notebook(name, a, s)
                for grade in snb.grades:
                    grade.auto_score = 0
                    grade.needs_manual_grade = False
                snb.late_submission_penalty = None
                gb.db.commit()
    with Gradebook(course.db_url, course.course_id) as gb:
        try:
            submission = gb.find_submission(a, s)
        except MissingEntry as exc:
            raise GraderError(f"{s}/{a} is missing from the gradebook after grading") from exc
        return Totals(
            score=float(submission.score),
            max_score=float(submission.max_score),
            auto_score=round(
                sum(g.auto_score or 0 for nb in submission.notebooks for g in nb.grades), 6
            ),
            late_seconds=schedule.submission_lateness(submission).seconds,
            cells={
                f"{nb.name}/{g.name}": g.auto_score
                for nb in submission.notebooks
                for g in nb.grades
            },
        )


def retry_locked(fn, tries: int = 6):
    """Run fn, again after a pause while the database is locked (formgrader writing)."""
    from sqlalchemy.exc import OperationalError

    for attempt in range(tries):
        try:
            return fn()
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(1 + attempt)
    return None
