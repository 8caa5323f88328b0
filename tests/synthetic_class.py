"""A graded class made up without grading: nbgrader's gradebook, ``autograded/`` notebooks
with verdicts and the grader's records, as ``grade`` leaves them, for any number of
students, in seconds. For the class report's tests and its benchmark
(benchmarks/class_report.py), where grading hundreds of notebooks for real would take
hours and test nothing the report does.

- The gradebook is nbgrader's own (its ``Gradebook`` and ORM classes): each assignment with
  its notebooks and graded cells (names and points from the course's ``source/``), a due
  date a week apart, every student, and each submission with its time stamp and one
  ``Grade`` per graded cell (``auto_score``). Solution cells and comments are left out:
  neither ``export`` nor ``report`` reads them.
- Each submission's notebook is the course's executed solution (``solutions/``, the size
  of a real one) with a verdict in each test cell's metadata, and its record
  ``.autograder.json`` has the fields ``grade`` writes.
- Scores and verdicts come from a seeded mix: students of varied strength, cells of varied
  difficulty; a failing verdict's message is one a hidden test writes: a diagnosed slip
  (the function in backticks, what was expected and what came out, the hint from
  ``verdicts/hidden/diagnose.py`` in parentheses, sometimes ``also failing`` and
  ``credited`` lines with partial credit), a function not written yet, an unanswered quiz
  question or a wrong answer. Some submissions are late, some missing, some flagged.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
SOLUTIONS = ROOT / "solutions"
FIRST_DUE = datetime(2026, 9, 14, 23, 59)


@dataclass
class Made:
    """What was made, for tests to compare the report with."""

    root: Path
    students: list[str]
    assignments: list[str]
    submitted: set[tuple[str, str]] = field(default_factory=set)
    late: dict[tuple[str, str], float] = field(default_factory=dict)  # seconds late
    verdicts: dict[tuple[str, str, str], tuple[bool, str]] = field(default_factory=dict)


def graded_cells(assignment: str) -> list[tuple[str, str, float]]:
    """(notebook, grade id, points) of each graded cell of ``assignment``, in order."""
    out = []
    for path in sorted((SOURCE / assignment).glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            md = cell["metadata"].get("nbgrader", {})
            if md.get("grade"):
                out.append((path.stem, md["grade_id"], float(md.get("points", 0))))
    return out


METHOD = {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "**": "__pow__"}


def slip_pool(rng: random.Random) -> list[tuple[str, str]]:
    """(function, hint) of the classic slips the hidden tests diagnose
    (``verdicts/hidden/diagnose.py``): each op's own slips with its method, the slips of
    any op (``=`` for ``+=``, no ``* out.grad``...) with the arithmetic methods; in a
    shuffled order, the first the most common."""
    from autograder.verdicts.hidden import diagnose

    pool = [(METHOD[op], s.hint) for op in METHOD for s in diagnose.GENERIC]
    pool += [(METHOD.get(op, op), s.hint) for op, slips in diagnose.SLIPS.items() for s in slips]
    pool = list(dict.fromkeys(pool))
    rng.shuffle(pool)
    return pool


def message(rng: random.Random, assignment: str, cell: str, pool) -> tuple[str, float]:
    """A failing verdict's message as a hidden test writes it, and its credit."""
    kind = rng.random()
    question = cell.rsplit("_", 1)[-1]
    if "_checkpoint_" in assignment:
        if kind < 0.3:
            return f"{question} is not answered yet: set it in its answer cell.", 0.0
        return f"{question}: {rng.choice('abcd')!r} is not the right answer.", 0.0
    if kind < 0.25:
        name = cell.split("_test_")[-1]
        return f"{name} raised NotImplementedError (not written yet)", 0.0
    # a diagnosed slip: a few are common, most rare (as in a real class)
    function, hint = pool[min(int(rng.paretovariate(0.8)) - 1, len(pool) - 1)]
    want = round(rng.uniform(0.5, 4), 4)
    text = (
        f"`{function}`: df/dx0 should be {want:g}, got {want / 2:g}\n"
        f"with f = x0 * x0 at x0={want / 2:g}\n({hint})"
    )
    credit = 0.0
    if rng.random() < 0.3:
        text += "\nalso failing: `__rsub__`"
    if rng.random() < 0.3:
        credit = 0.75
        text += "\ncredited: `__neg__`, `__sub__`, `__truediv__` (3 of 4 shares of the points)"
    return text, credit


def make_class(
    root: Path,
    students: int | list[str] = 300,
    assignments: list[str] | None = None,
    *,
    seed: int = 26,
    missing: set[tuple[str, str]] | None = None,
    late: dict[tuple[str, str], float] | None = None,
    verdicts: dict[tuple[str, str, str], tuple[bool, str]] | None = None,
    course_id: str | None = None,
) -> Made:
    """Write a graded class into ``root``: ``gradebook.db``, ``autograded/`` and
    ``submitted/``. ``students``: a number (ids s000, s001...) or the ids. ``missing``
    and ``late`` (seconds) fix those submissions (default: drawn, 4 % missing, 6 % late);
    ``verdicts`` fixes (student, assignment, grade id) -> (passed, message)."""
    from autograder.course import assignments as course_assignments
    from autograder.course import open_course
    from autograder.grade.gradebook import cache_alembic_version

    rng = random.Random(seed)
    ids = [f"s{i:03d}" for i in range(students)] if isinstance(students, int) else students
    names = assignments or course_assignments()
    made = Made(root, list(ids), list(names))
    root.mkdir(parents=True, exist_ok=True)
    course = open_course(root)
    course_id = course_id or course.course_id
    pool = slip_pool(rng)
    strength = {s: rng.betavariate(4, 1.6) for s in ids}
    cache_alembic_version()
    from nbgrader.api import (
        Grade,
        Gradebook,
        SubmittedAssignment,
        SubmittedNotebook,
    )

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id) as gb:
        for s in ids:
            gb.add_student(s)
        for k, a in enumerate(names):
            due = FIRST_DUE + timedelta(days=7 * k)
            gb.add_assignment(a, duedate=due)
            cells = graded_cells(a)
            for nb in sorted({nb for nb, _, _ in cells}):
                gb.add_notebook(nb, a)
            for nb, gid, points in cells:
                gb.add_grade_cell(gid, nb, a, max_score=points, cell_type="code")
            assignment = gb.find_assignment(a)
            by_nb = {nb.name: nb for nb in assignment.notebooks}
            grade_cells = {
                (nb.name, c.name): c for nb in assignment.notebooks for c in nb.grade_cells
            }
            difficulty = {gid: rng.uniform(-0.25, 0.15) for _, gid, _ in cells}
            templates = {nb: _template(a, nb) for nb in by_nb}
            most = sum(points for _, _, points in cells)
            objects = []
            for s in ids:
                gone = (s, a) in missing if missing is not None else rng.random() < 0.04
                if gone:
                    continue
                if late is not None:
                    seconds = late.get((s, a), 0.0)
                else:
                    seconds = rng.expovariate(1 / 30000) if rng.random() < 0.06 else 0.0
                stamp = (
                    due + timedelta(seconds=seconds)
                    if seconds
                    else due - timedelta(hours=rng.uniform(1, 72))
                )
                sub = SubmittedAssignment(assignment=assignment, student_id=s, timestamp=stamp)
                objects.append(sub)
                made.submitted.add((s, a))
                if seconds:
                    made.late[(s, a)] = seconds
                notebooks = {
                    nb: SubmittedNotebook(notebook=by_nb[nb], assignment=sub) for nb in by_nb
                }
                outcome = {}
                for nb, gid, points in cells:
                    fixed = (verdicts or {}).get((s, a, gid))
                    if fixed is not None:
                        passed, text = fixed
                        credit = 0.0
                    else:
                        passed = rng.random() < min(0.98, strength[s] + difficulty[gid])
                        text, credit = ("", 0.0) if passed else message(rng, a, gid, pool)
                    made.verdicts[(s, a, gid)] = (passed, text)
                    score = points if passed else round(points * credit, 2)
                    outcome[(nb, gid)] = (passed, text, credit, score)
                    Grade(
                        cell=grade_cells[(nb, gid)],
                        notebook=notebooks[nb],
                        auto_score=score,
                        needs_manual_grade=False,
                    )
                _write_submission(course, s, a, templates, outcome, most, seconds, stamp, rng)
            gb.db.add_all(objects)
            gb.db.commit()
    return made


def _template(assignment: str, notebook: str) -> dict:
    """The notebook a submission's autograded copy is made from: the executed solution
    (the source where there is none). Its test cells' verdicts are set for each one."""
    path = SOLUTIONS / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        path = SOURCE / assignment / f"{notebook}.ipynb"
    return json.loads(path.read_text())


def _write_submission(course, s, a, templates, outcome, most, late_seconds, stamp, rng) -> None:
    from autograder.record import GradingRecord

    folder = course.autograded / s / a
    folder.mkdir(parents=True, exist_ok=True)
    total = 0.0
    cells = {}
    for nb, doc in templates.items():
        for cell in doc["cells"]:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if (nb, gid) not in outcome:
                continue
            passed, message, credit, score = outcome[(nb, gid)]
            cell["metadata"]["autograder"] = {
                "verdict": {
                    "passed": passed,
                    "message": message,
                    "credit": 1.0 if passed else credit,
                    "seed": rng.getrandbits(40),
                    "flag": "",
                    "grader_error": False,
                }
            }
        (folder / f"{nb}.ipynb").write_text(json.dumps(doc))
    for (nb, gid), (_, _, _, score) in outcome.items():
        cells[f"{nb}/{gid}"] = score
        total += score
    problem = rng.random() < 0.02
    record = GradingRecord(
        student=s,
        assignment=a,
        submission_digest="synthetic",
        grader_digest="synthetic",
        score=total,
        max_score=most,
        auto_score=total,
        problem=problem,
        note="cell 7 (`while True: …`) was stopped after the 60 s per-cell limit"
        if problem
        else "",
        notes={},
        cells=cells,
        runs=1,
        seconds=round(math.exp(rng.gauss(1.0, 0.35)) + (60 if problem else 0), 2),
        late_seconds=late_seconds,
        seed=0,
        isolation="bubblewrap",
        review=["uses IPython input transformers"] if rng.random() < 0.01 else [],
        graded_at=(stamp + timedelta(hours=2)).isoformat(),
    )
    (folder / ".autograder.json").write_text(record.to_json())
    sub = course.submitted / s / a
    sub.mkdir(parents=True, exist_ok=True)
    (sub / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S UTC"))
    for nb in templates:  # a stand-in: only grade reads what was handed in
        (sub / f"{nb}.ipynb").write_text("{}")
