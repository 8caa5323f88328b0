"""``python -m autograder export``: the gradebook as CSV files (``--to csv``, the default),
or as the LMS's gradebook import file (``--to canvas``, ``--to moodle``: grade/lms.py),
or sent to the LMS's gradebook through LTI 1.3 AGS (``--to lti``: autograder/lti/ags.py).

- ``grades.csv``: one row per student and assignment: ``student, assignment, score,
  max_score``, then ``submitted`` (yes/no), ``late_seconds``, ``problem`` (yes/no),
  ``note`` (the grader's one-line note), ``isolation`` (``bubblewrap`` or ``none``: how
  its grading kernels were sandboxed, see docs/grading.md) and ``review`` (why the code
  should be looked at, from ``review/flags.py``; empty when nothing was flagged; a flag is not
  a penalty), then ``late_penalty`` (the points the course's late policy takes,
  ``c.Schedule.late_policy``) and ``final_score`` (score minus penalty, never below 0;
  what goes to the LMS). Scores are nbgrader's, so manual grades given in formgrader
  count. ``late_seconds`` is worked out now from the submission's time and the due date
  with the student's extension (schedule.py), so a changed policy or extension needs no
  regrading, only another export. Every student in the gradebook gets a row for every
  assignment (0 and ``submitted=no`` when there is no submission).
- ``cells.csv``: one row per graded cell: ``student, assignment, notebook, cell, score,
  max_score``.

- ``items.csv``: for each checkpoint quiz, one row per question (item statistics):
  ``assignment, question, cell, points, students`` (who handed the quiz in), ``share_right``
  (the share of them who got it right), ``discrimination`` (the item-rest correlation: how
  well getting it right goes with a strong score on the rest of the quiz; near 0 or below,
  the question separates nothing, or misleads the strong) and ``upper_lower`` (the share
  right among the best 27% of quizzes minus among the weakest 27%). Empty where it cannot
  be told (fewer than 2 students, or everyone alike).

All are written by ``spreadsheet.write_csv``: a cell that a spreadsheet would run as a
formula (a student id ``=2+5``, a note starting with ``@``) gets a leading ``'``.
"""

from __future__ import annotations

from pathlib import Path

from ..spreadsheet import write_csv

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
    "late_penalty",
    "final_score",
]
CELLS_HEADER = ["student", "assignment", "notebook", "cell", "score", "max_score"]
ITEMS_HEADER = [
    "assignment",
    "question",
    "cell",
    "points",
    "students",
    "share_right",
    "discrimination",
    "upper_lower",
]
GROUP = 0.27  # the upper and lower groups of the upper-lower index (Kelley's 27%)


def _num(x) -> str:
    x = float(x or 0)
    return f"{x:g}"


class Exported(list):
    """The files ``export`` wrote (a list of paths), and ``problems``: students an LMS
    file had to leave out, one line each (exit code 1); ``notes``: what else to know."""

    def __init__(self, paths=(), problems=(), notes=()):
        super().__init__(paths)
        self.problems, self.notes = list(problems), list(notes)


def export(
    assignments=None,
    *,
    root=None,
    db_url=None,
    out=None,
    to="csv",
    schedule=None,
    students=None,
) -> Exported:
    """Write ``to`` (``csv``: grades.csv, cells.csv, items.csv; ``canvas``, ``moodle``: the
    LMS's import file, grade/lms.py) into ``out`` (default: <course>/exports).
    ``schedule``: the due dates, extensions and late policy to apply (default: the
    course's ``c.Schedule``); ``students``: only these (default: everyone)."""
    from ..errors import GraderError
    from .lms import FORMATS

    if to not in FORMATS:
        raise GraderError(
            f"--to {to!r}: the format is csv, canvas, moodle or lti; the output folder is --out DIR"
        )
    from nbgrader.api import Gradebook, MissingEntry

    from ..course import open_course
    from ..record import GradingRecord
    from ..schedule import Schedule, late_penalty
    from .notes import with_lateness

    course = open_course(root, db_url)
    schedule = (schedule or Schedule.for_course(course.config)).check(course.assignments())
    policy = schedule.policy()
    out = Path(out) if out else course.root / "exports"
    out.mkdir(parents=True, exist_ok=True)
    grades, cells = [], []
    with Gradebook(course.db_url, course.course_id) as gb:
        names = [a.name for a in gb.assignments]
        names = [a for a in names if not assignments or a in assignments]
        only = students
        students = sorted(s.id for s in gb.students if not only or s.id in only)
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
                            "0",
                            "0",
                        ]
                    )
                    continue
                record = course.read_record(student, a) or GradingRecord()
                late = schedule.submission_lateness(sub).seconds
                penalty, _ = late_penalty(sub.score, sub.max_score, late, policy)
                grades.append(
                    [
                        student,
                        a,
                        _num(sub.score),
                        _num(sub.max_score),
                        "yes",
                        _num(late),
                        "yes" if record.problem else "no",
                        with_lateness(record.note, late),
                        record.isolation or "",
                        "; ".join(record.review),
                        _num(penalty),
                        _num(max(0.0, float(sub.score or 0) - penalty)),
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
    if to == "lti":
        from ..lti.ags import send_scores

        path, problems, notes = send_scores(course, out, GRADES_HEADER, grades)
        return Exported([path], problems, notes)
    if to != "csv":
        from .lms import write_lms

        path, problems, notes = write_lms(to, course, out, GRADES_HEADER, grades)
        return Exported([path], problems, notes)
    return Exported(
        [
            write_csv(out / "grades.csv", GRADES_HEADER, grades),
            write_csv(out / "cells.csv", CELLS_HEADER, cells),
            write_csv(out / "items.csv", ITEMS_HEADER, item_rows(cells)),
        ]
    )


def item_rows(cells: list[list[str]]) -> list[list[str]]:
    """items.csv's rows, from cells.csv's, for the quizzes."""
    from ..course import kind

    by: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    for student, a, _, cell, score, most in cells:
        if kind(a) == "quiz":
            by.setdefault(a, {}).setdefault(cell, {})[student] = (float(score), float(most))
    rows = []
    for a, items in by.items():
        stats = item_statistics(
            {c: {s: sc / m for s, (sc, m) in v.items()} for c, v in items.items()}
        )
        for cell, (students, right, rest, upper_lower) in sorted(stats.items(), key=_in_order):
            points = max(m for _, m in items[cell].values())
            rows.append(
                [
                    a,
                    cell.rsplit("_", 1)[-1],
                    cell,
                    _num(points),
                    str(students),
                    _fmt(right),
                    _fmt(rest),
                    _fmt(upper_lower),
                ]
            )
    return rows


def _in_order(item) -> tuple:
    """q2 before q10: the numbers in a cell's name compared as numbers."""
    import re

    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", item[0]))


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def item_statistics(
    items: dict[str, dict[str, float]],
) -> dict[str, tuple[int, float | None, float | None, float | None]]:
    """{item: (students, share right, item-rest correlation, upper-lower index)} from
    {item: {student: the share of the item's points they got}}. A student's total is
    their share summed over the items; "right" is full points."""
    students = sorted({s for scores in items.values() for s in scores})
    total = {s: sum(scores.get(s, 0.0) for scores in items.values()) for s in students}
    ranked = sorted(students, key=lambda s: total[s])
    k = max(1, round(GROUP * len(students)))
    lower, upper = set(ranked[:k]), set(ranked[-k:])
    out = {}
    for item, scores in items.items():
        x = [scores.get(s, 0.0) for s in students]
        rest = [total[s] - xi for s, xi in zip(students, x)]
        n = len(students)
        right = sum(xi >= 1.0 for xi in x) / n if n else None
        spread = n >= 2 and len(set(total.values())) > 1
        upper_lower = (
            sum(scores.get(s, 0.0) >= 1.0 for s in upper) / k
            - sum(scores.get(s, 0.0) >= 1.0 for s in lower) / k
            if spread
            else None
        )
        out[item] = (n, right, _correlation(x, rest) if n >= 2 else None, upper_lower)
    return out


def _correlation(x: list[float], y: list[float]) -> float | None:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sxy / (sxx * syy) ** 0.5
