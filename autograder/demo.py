"""``python -m autograder demo`` (``make demo``): grade a small class end to end.

It builds ``demo-class/`` (git-ignored) from the course's real notebooks: for every
assignment with a generated ``solutions/`` and ``notebooks/`` folder, eight students hand in

  ada        the solution                        full marks
  katherine  the blank notebook                  zero, no problem
  grace      a typical bug (`.grad =` for +=)    loses the checks that catch it
  linus      half the exercises done             scores for the first half
  margaret   a cell calling os._exit (a crash)   the crash cell is skipped, the rest graded
  alan       an endless `while True` loop        stopped by the per-cell limit, rest graded
  dennis     a truncated, malformed file         zero, with the reason
  barbara    the solution, a day late            full marks, marked late
  edsger     ada's quizzes, his own lessons      quiz answers for ada's variant: lost, and why

Quizzes give every student a variant of their own: each honest student's quiz notebook
holds plain answers to their own variant, as if they had typed them (``worked_quiz``).

as a Canvas-style zip per assignment. Then it runs what an instructor runs: ``collect``,
``grade``, ``feedback``, ``export``, prints the class table, and ends by writing the class
report (``report``: demo-class/reports/index.html).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import nbformat

from .course import NOTEBOOKS, ROOT, SOLUTIONS, kind

DEMO = ROOT / "demo-class"
DUE = datetime(2026, 1, 15, 23, 59)

STUDENTS = [
    ("ada", "the solution", "full marks"),
    ("katherine", "the blank notebook", "zero"),
    ("grace", "a typical bug", "loses what the bug breaks"),
    ("linus", "half the exercises", "about half"),
    ("margaret", "a cell calling os._exit", "crash skipped, rest graded"),
    ("alan", "an endless loop", "loop stopped, rest graded"),
    ("dennis", "a malformed file", "zero, reason given"),
    ("barbara", "the solution, late", "full marks, late"),
    ("edsger", "ada's quiz, copied", "loses the quiz"),
]
CANVAS_IDS = {name: (1000 + i, 5000 + i) for i, (name, _, _) in enumerate(STUDENTS)}


def demo_assignments() -> list[str]:
    from .course import assignments

    out = []
    for a in assignments():
        if list((SOLUTIONS / a).glob("*.ipynb")) and list((NOTEBOOKS / a).glob("*.ipynb")):
            out.append(a)
    return out


# ---- the synthetic submissions ---------------------------------------------------------


def _gid(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _is_solution(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def _copy(nb):
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def half_done(solution, blank):
    nb = _copy(solution)
    stubs = {_gid(c): c for c in blank.cells if _is_solution(c)}
    solved = [c for c in nb.cells if _is_solution(c)]
    for cell in solved[math.ceil(len(solved) / 2) :]:
        if _gid(cell) in stubs:
            cell.source = stubs[_gid(cell)].source
            cell.outputs = []
    return nb


def typical_bug(solution, blank):
    """`.grad = ...` wherever `.grad += ...` accumulates (else: the last exercise left
    blank)."""
    nb = _copy(solution)
    changed = False
    for cell in nb.cells:
        if _is_solution(cell) and re.search(r"\.grad \+=", cell.source):
            cell.source = re.sub(r"\.grad \+=", ".grad =", cell.source)
            changed = True
    if changed:
        return nb
    stubs = {_gid(c): c for c in blank.cells if _is_solution(c)}
    last = [c for c in nb.cells if _is_solution(c) and _gid(c) in stubs][-1:]
    for cell in last:
        cell.source = stubs[_gid(cell)].source
        cell.outputs = []
    return nb


def with_cell_after_first_test(solution, source: str):
    nb = _copy(solution)
    tests = [
        i for i, c in enumerate(nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade")
    ]
    at = tests[0] + 1 if tests else len(nb.cells)
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


def _literal(value) -> str:
    return repr(value)


def _valid_order(before: dict[str, list[str]]) -> list[str]:
    order: list[str] = []
    while len(order) < len(before):
        order.append(
            next(i for i in sorted(before) if i not in order and set(before[i]) <= set(order))
        )
    return order


def worked_quiz(solution, assignment: str, student: str):
    """The quiz as ``student`` would hand it in: plain answers to their own variant in the
    answer cells (a function keeps its body, with the variant's numbers written in), and
    the setup cell's output naming their id, as running it shows."""
    from .preprocessors.shownvariant import QUIZ_MIME
    from .verdicts.api import hidden_module
    from .verdicts.hidden import quiz

    module = hidden_module(assignment)
    nb = _copy(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        question = (_gid(cell) or "").rsplit("_", 1)[-1]
        if not _is_solution(cell) or question not in module.KEYS:
            continue
        v = quiz.variant(assignment, student, question)
        if v.kind == "function":
            numbers = ", ".join(f"{k}={x!r}" for k, x in v.values.items())
            cell.source = cell.source.replace(
                f'quiz.variant("{question}")', f"__import__('types').SimpleNamespace({numbers})"
            )
            continue
        key = module.KEYS[question].key(v)
        answer = _valid_order(key) if v.kind == "order" else key
        cell.source = f"# {question}, worked out by {student}\n{question} = {_literal(answer)}"
    setup = next(c for c in nb.cells if _gid(c) and _gid(c).endswith("_setup"))
    shown = {
        "text/plain": f"Your variant of this quiz: id {student!r}",
        QUIZ_MIME: {"assignment": assignment, "id": student},
    }
    setup.outputs = [nbformat.v4.new_output("display_data", data=shown)]
    return nb


def submissions_for(assignment: str) -> dict[str, dict[str, bytes]]:
    """{student: {notebook file name: bytes}}."""
    out: dict[str, dict[str, bytes]] = {s: {} for s, _, _ in STUDENTS}
    for path in sorted((SOLUTIONS / assignment).glob("*.ipynb")):
        solution = nbformat.read(path, as_version=4)
        blank = nbformat.read(NOTEBOOKS / assignment / path.name, as_version=4)
        text = nbformat.writes(solution)
        own = {student: solution for student, _, _ in STUDENTS}
        if kind(assignment) == "quiz":  # each their own variant's answers; edsger ada's
            own = {s: worked_quiz(solution, assignment, s) for s in own}
            own["edsger"] = own["ada"]
        made = {
            "ada": own["ada"],
            "katherine": blank,
            "grace": typical_bug(own["grace"], blank),
            "linus": half_done(own["linus"], blank),
            "margaret": with_cell_after_first_test(
                own["margaret"], "import os\n\nos._exit(1)  # a debugging leftover"
            ),
            "alan": with_cell_after_first_test(
                own["alan"], "while True:  # waiting for something that never happens\n    pass"
            ),
            "barbara": own["barbara"],
            "edsger": own["edsger"],
        }
        for student, nb in made.items():
            out[student][path.name] = nbformat.writes(nb).encode()
        out["dennis"][path.name] = text[: int(len(text) * 0.6)].encode()
    return out


def build(assignments: list[str]) -> dict[str, Path]:
    """demo-class/downloads/<assignment>.zip, named the way Canvas names files."""
    downloads = DEMO / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    zips = {}
    for a in assignments:
        path = downloads / f"{a}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for student, files in submissions_for(a).items():
                user, sub = CANVAS_IDS[student]
                late = "late_" if student == "barbara" else ""
                for name, data in files.items():
                    zf.writestr(f"{student}_{late}{user}_{sub}_{name}", data)
        zips[a] = path
    return zips


def stamp_and_schedule(assignments: list[str]) -> None:
    """Submission times (the LMS export has none) and a due date for each assignment."""
    from nbgrader.api import Gradebook

    from .course import open_course
    from .grade.gradebook import cache_alembic_version

    course = open_course(DEMO)
    for a in assignments:
        for student, _, _ in STUDENTS:
            folder = course.submitted / student / a
            if folder.is_dir():
                when = DUE + (timedelta(hours=26) if student == "barbara" else timedelta(hours=-20))
                (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S UTC"))
    cache_alembic_version()
    with Gradebook(course.db_url, course.course_id) as gb:
        for a in assignments:
            gb.update_or_create_assignment(a, duedate=DUE)


# ---- the run ---------------------------------------------------------------------------


def demo(jobs: int | None = None, keep: bool = False) -> int:
    from .errors import ExitCode
    from .feedback.pages import feedback
    from .grade.display import print_report
    from .grade.export import export
    from .grade.run import grade
    from .intake.collect import collect, print_collect_report
    from .kernel.limits import Limits
    from .report.page import report as class_report

    started = time.monotonic()
    assignments = demo_assignments()
    if not assignments:
        print("no assignment has solutions/ and notebooks/ yet: run `make generate` first")
        return ExitCode.FAILED
    if not keep and DEMO.exists():
        shutil.rmtree(DEMO)
    print(
        f"== demo class in {DEMO.relative_to(ROOT)}/: {len(STUDENTS)} students x "
        f"{len(assignments)} assignment(s): {', '.join(assignments)}"
    )
    zips = build(assignments)
    print("\n== collect ASSIGNMENT demo-class/downloads/ASSIGNMENT.zip --pattern canvas")
    for a, path in zips.items():
        report = collect(a, [str(path)], pattern="canvas", root=DEMO, force=True)
        if report.failure or report.not_placed:
            print_collect_report(report)
        if report.failure:
            return ExitCode.FAILED
        print(
            f"{a}: {len(report.placed)} notebooks filed into demo-class/submitted/, "
            f"{len(report.not_placed)} file(s) not placed"
        )
    stamp_and_schedule(assignments)

    print("\n== grade (10 s per cell in the demo; 60 s by default)")
    limits = Limits(cell_timeout=10, wall=240)
    graded = grade(root=DEMO, jobs=jobs, limits=limits, subreaper=True)
    for line in graded.problems + graded.failures:
        print(f"problem: {line}")
    print(
        f"{graded.graded} graded in {graded.seconds:.0f} s; exit code {int(graded.exit_code)} "
        "(1: graded, some submissions had problems, as this class was made to)"
    )
    if graded.exit_code == ExitCode.FAILED:
        print_report(graded)
        return ExitCode.FAILED

    print("\n== feedback")
    fb = feedback(root=DEMO, jobs=jobs)
    for line in fb.problems + fb.failures:
        print(f"problem: {line}")
    print(f"{len(fb.written)} feedback page(s) in {(DEMO / 'feedback').relative_to(ROOT)}/")
    print("\n== export")
    for path in export(root=DEMO):
        print(f"wrote {path.relative_to(ROOT)}")

    print("\n== the class\n")
    print(class_table(graded.outcomes, assignments))
    first = assignments[0]
    print(f"\nThe grader's notes for {first} (also at the top of each feedback page):")
    order = {name: i for i, (name, _, _) in enumerate(STUDENTS)}
    for o in sorted(graded.outcomes, key=lambda o: order.get(o.student, len(order))):
        if o.assignment == first and o.note:
            print(f"  {o.student:<10} {o.note}")
    print("\n== report")
    page = class_report(root=DEMO)
    for line in page.problems:
        print(f"problem: {line}")
    seconds = time.monotonic() - started
    print(
        f"\ndemo finished in {seconds:.0f} s. Look at demo-class/feedback/<student>/ and "
        "demo-class/exports/; `python -m autograder grade --course demo-class` again "
        "changes nothing. The class at a glance, in any browser:"
    )
    print(page.path)
    if fb.failures:
        return ExitCode.FAILED
    return ExitCode.PROBLEMS if page.problems else ExitCode.OK


def class_table(outcomes, assignments: list[str]) -> str:
    from .course import number

    by = {(o.student, o.assignment): o for o in outcomes}
    short = [a.split("_", 1)[0] + number(a).lstrip("0123456789") for a in assignments]
    head = ["student", "submitted", "expected", *short, "total"]
    rows = [head]
    for student, what, expected in STUDENTS:
        cells, total, best = [], 0.0, 0.0
        for a in assignments:
            o = by.get((student, a))
            if o is None:
                cells.append("-")
                continue
            mark = "!" if o.problem else ""
            cells.append(f"{o.score:g}/{o.max_score:g}{mark}")
            total += o.score
            best += o.max_score
        rows.append([student, what, expected, *cells, f"{total:g}/{best:g}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    lines.append(
        "(! = the grader noted a problem: see the notes below, the feedback pages "
        "and exports/grades.csv)"
    )
    return "\n".join(lines)
