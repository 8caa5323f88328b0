"""``python -m autograder export``: the gradebook as two CSV files.

- ``grades.csv``: one row per student and assignment: ``student, assignment, score,
  max_score``, then ``submitted`` (yes/no), ``late_seconds``, ``problem`` (yes/no),
  ``note`` (the grader's one-line note), ``isolation`` (``bubblewrap`` or ``none``: how
  its grading kernels were sandboxed, see docs/grading.md) and ``review`` (why the code
  should be looked at, from ``review/flags.py``; empty when nothing was flagged; a flag is not
  a penalty). Scores are nbgrader's, so manual grades given in formgrader count. Every
  student in the gradebook gets a row for every assignment (0 and ``submitted=no`` when
  there is no submission).
- ``cells.csv``: one row per graded cell: ``student, assignment, notebook, cell, score,
  max_score``.

Both are written by ``spreadsheet.write_csv``: a cell that a spreadsheet would run as a
formula (a student id ``=2+5``, a note starting with ``@``) gets a leading ``'``.
"""

from __future__ import annotations

from pathlib import Path

from .spreadsheet import write_csv

GRADES_HEADER = [
    "student",
    "assignment",
    "score",
    "max_score",
    "submitted",
    "late_seconds",
    "problem",
    "note",
    "isolation",
    "review",
]
CELLS_HEADER = ["student", "assignment", "notebook", "cell", "score", "max_score"]


def _num(x) -> str:
    x = float(x or 0)
    return f"{x:g}"


def export(assignments=None, *, root=None, db_url=None, to=None) -> list[Path]:
    from nbgrader.api import Gradebook, MissingEntry

    from ..course import open_course

    course = open_course(root, db_url)
    out = Path(to) if to else course.root / "exports"
    out.mkdir(parents=True, exist_ok=True)
    grades, cells = [], []
    with Gradebook(course.db_url, course.course_id) as gb:
        names = [a.name for a in gb.assignments]
        names = [a for a in names if not assignments or a in assignments]
        students = sorted(s.id for s in gb.students)
        for a in names:
            assignment = gb.find_assignment(a)
            for student in students:
                try:
                    sub = gb.find_submission(a, student)
                except MissingEntry:
                    grades.append(
                        [
                            student,
                            a,
                            "0",
                            _num(assignment.max_score),
                            "no",
                            "0",
                            "no",
                            "no submission",
                            "",
                            "",
                        ]
                    )
                    continue
                record = course.read_record(student, a) or {}
                grades.append(
                    [
                        student,
                        a,
                        _num(sub.score),
                        _num(sub.max_score),
                        "yes",
                        _num(sub.total_seconds_late),
                        "yes" if record.get("problem") else "no",
                        record.get("note", ""),
                        record.get("isolation") or "",
                        "; ".join(record.get("review") or []),
                    ]
                )
                for nb in sub.notebooks:
                    for grade in sorted(nb.grades, key=lambda g: g.name):
                        cells.append(
                            [
                                student,
                                a,
                                nb.name,
                                grade.name,
                                _num(grade.score),
                                _num(grade.max_score),
                            ]
                        )
    return [
        write_csv(out / "grades.csv", GRADES_HEADER, grades),
        write_csv(out / "cells.csv", CELLS_HEADER, cells),
    ]
