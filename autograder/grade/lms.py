"""``export --to canvas|moodle``: the grades as the LMS's own gradebook import file.

Both are built from ``grades.csv``'s rows (``export.GRADES_HEADER``), by column name: a
student's score is ``final_score`` where grades.csv has that column (after the late
policy), else ``score``; a missing submission is 0, as in grades.csv. Students are named
as the LMS knows them, from the roster (roster.csv, ``autograder/roster.py``); a graded
student the LMS file cannot name is a problem (listed, exit code 1) and left out of the
file, never guessed.

**Canvas** (``exports/canvas.csv``, Grades > Import): the columns of Canvas's own
gradebook export, ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column per
assignment, and the ``Points Possible`` row after the header, as Canvas exports it and its
importer reads it. Canvas finds each student by ``ID`` (the Canvas user id), so a student
without one in the roster is a problem. An assignment's column is its name, which Canvas
matches with an assignment of that title or creates (with the points possible given); map
it onto an existing Canvas assignment with ``c.LMS.canvas_columns = {"01_value": "Lesson
1 (4401)"}`` (the column's name in Canvas's export, its id in brackets), whose points
possible are then left as they are in Canvas. The file starts with a byte order mark, as
Canvas's exports do.

**Moodle** (``exports/moodle.csv``, Grades > Import > CSV file): ``Full name``, ``ID
number`` and ``Email address`` (what Moodle's import maps to ``useridnumber`` and
``useremail``), then one column per grade item, named as Moodle's own export names them,
``Assignment: 01_value (Real)``, which Moodle's import maps onto the grade item of that
name itself; ``c.LMS.moodle_columns = {"01_value": "Assignment: Lesson 1"}`` names another.
Moodle's import reads a row whose identifying cell is empty as the previous row's
student, so an identifying column is written only if every row has it: ID number when all
have one, else email; a student with neither (or without the one written) is a problem.
"""

from __future__ import annotations

from pathlib import Path

from traitlets import Dict
from traitlets.config import Configurable

from ..errors import GraderError
from ..roster import ROSTER, Roster, read_roster
from ..spreadsheet import write_csv

FORMATS = ("csv", "canvas", "moodle", "lti")  # lti: sent through AGS, autograder/lti/
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS = "    Points Possible"  # the first cell of Canvas's second row, spaces and all
MOODLE_REAL = " (Real)"  # Moodle's export: the grade as a number ("real"), its import too


class LMS(Configurable):
    """``c.LMS`` in nbgrader_config.py: which LMS column each assignment goes to."""

    canvas_columns = Dict(
        {},
        help='{assignment: "Canvas column"}: export --to canvas writes the assignment\'s '
        'grades into this column, e.g. an existing assignment "Lesson 1 (4401)" as '
        "Canvas's gradebook export names it (default: the assignment's name)",
    ).tag(config=True)
    moodle_columns = Dict(
        {},
        help='{assignment: "Moodle grade item"}: export --to moodle writes the '
        'assignment\'s grades for this grade item, e.g. "Assignment: Lesson 1" (default: '
        '"Assignment: <assignment>")',
    ).tag(config=True)

    def columns(self, lms: str, assignments: list[str]) -> dict[str, str]:
        """The checked setting for ``lms``: {assignment: column}."""
        setting = f"c.LMS.{lms}_columns"
        given = getattr(self, f"{lms}_columns")
        for name, column in given.items():
            if name not in assignments:
                raise GraderError(
                    f"{setting}: no assignment {name!r}; the course has {', '.join(assignments)}"
                )
            if not isinstance(column, str) or not column.strip():
                raise GraderError(f"{setting}[{name!r}]: expected a column name, got {column!r}")
        taken = [c.strip() for c in given.values()]
        twice = next((c for c in taken if taken.count(c) > 1), None)
        if twice:
            raise GraderError(f"{setting}: two assignments go to the column {twice!r}")
        return {name: column.strip() for name, column in given.items()}


def write_lms(
    lms: str, course, out: Path, header: list[str], rows: list[list[str]]
) -> tuple[Path, list[str], list[str]]:
    """Write ``out/<lms>.csv`` from grades.csv's ``header`` and ``rows``; return its path,
    the problems (students left out, each one line) and notes."""
    col = {name: i for i, name in enumerate(header)}
    score = col["final_score"] if "final_score" in col else col["score"]
    grades: dict[str, dict[str, str]] = {}
    points: dict[str, str] = {}
    for row in rows:
        student, assignment = row[col["student"]], row[col["assignment"]]
        grades.setdefault(student, {})[assignment] = row[score]
        points.setdefault(assignment, row[col["max_score"]])
    assignments = list(points)
    roster = read_roster(course.root)
    columns = LMS(config=course.config).columns(lms, course.assignments())
    write = _canvas if lms == "canvas" else _moodle
    path, problems = write(out / f"{lms}.csv", grades, assignments, points, roster, columns)
    absent = [s.id for s in roster if s.id not in grades]
    notes = []
    if absent and grades:
        shown = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
        notes.append(
            f"{len(absent)} student(s) of {ROSTER} have nothing in the gradebook and are "
            f"not in {path.name}: {shown}"
        )
    return path, problems, notes


def _canvas(path, grades, assignments, points, roster: Roster, columns):
    header = CANVAS_FIXED + [columns.get(a, a) for a in assignments]
    points_row = [CANVAS_POINTS, "", "", "", ""] + [
        "" if a in columns else points[a] for a in assignments
    ]
    rows, problems = [points_row], []
    for sid, scores in grades.items():
        student = roster.get(sid)
        if student is None or not student.lms_id:
            why = f"not in {ROSTER}" if student is None else f"no Canvas user id in {ROSTER}"
            problems.append(
                f"{sid}: {why}; left out of {path.name} (roster import the Canvas gradebook export)"
            )
            continue
        rows.append(
            [
                student.name or student.id,
                student.lms_id,
                student.sis_id,
                student.login,
                student.section,
                *(scores.get(a, "0") for a in assignments),
            ]
        )
    return write_csv(path, header, rows, bom=True), problems


def _moodle(path, grades, assignments, points, roster: Roster, columns):
    problems, known = [], []
    for sid in grades:
        student = roster.get(sid)
        if student is None:
            problems.append(
                f"{sid}: not in {ROSTER}; left out of {path.name} (roster import the "
                "Moodle grades export)"
            )
        elif not (student.sis_id or student.email):
            problems.append(
                f"{sid}: neither ID number nor email in {ROSTER}; left out of {path.name}"
            )
        else:
            known.append(student)
    key = "sis_id" if all(s.sis_id for s in known) else "email"
    if not all(getattr(s, key) for s in known):
        key = max(("sis_id", "email"), key=lambda k: sum(bool(getattr(s, k)) for s in known))
    label = {"sis_id": "ID number", "email": "Email address"}
    listed = [s for s in known if getattr(s, key)]
    for s in known:
        if not getattr(s, key):
            problems.append(
                f"{s.id}: no {label[key]} in {ROSTER}, which identifies the students in "
                f"{path.name}; left out of it"
            )
    other = "email" if key == "sis_id" else "sis_id"
    keys = [key] + ([other] if listed and all(getattr(s, other) for s in listed) else [])
    keys.sort(key=["sis_id", "email"].index)
    header = ["Full name", *(label[k] for k in keys)] + [
        columns.get(a, f"Assignment: {a}") + MOODLE_REAL for a in assignments
    ]
    rows = [
        [
            s.name or s.id,
            *(getattr(s, k) for k in keys),
            *(grades[s.id].get(a, "0") for a in assignments),
        ]
        for s in listed
    ]
    return write_csv(path, header, rows), problems
