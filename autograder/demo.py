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
  barbara    the solution, 26 h late             full marks, less the late penalty
  edsger     ada's quizzes, his own lessons      quiz answers for ada's variant: lost, and why

Quizzes give every student a variant of their own: each honest student's quiz notebook
holds plain answers to their own variant, as if they had typed them (``worked_quiz``).

The class's work is written as a Canvas-style zip per assignment (files named
``<login part>_<Canvas user id>_...``, ``lovelaceada_1000_5000_value.ipynb``), beside the
gradebook export Canvas would give for the class (``canvas-gradebook.csv``, SIS Login IDs
ada, katherine, ...). Then it runs what an instructor runs: ``roster import`` (so ada's
upload is filed as ada, by her Canvas user id), ``collect``, ``grade``, ``feedback``,
``export`` and ``export --to canvas``, prints the class table, and ends by writing the
class report (``report``: demo-class/reports/index.html).

The demo class has dates of its own, given to those commands as a ``Schedule``
(``demo_schedule``) rather than written into the repository's nbgrader_config.py, which
is every course's: each assignment due ``DUE`` (UTC), a late policy of 10% of the
points per day or part of a day late, and barbara a day's extension on the last
assignment. So barbara loses 2 days' worth on each assignment but the last, where she is
2 h late against her extended due date (grades.csv's ``late_penalty`` and
``final_score``, and her feedback pages say so).
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
    ("barbara", "the solution, 26 h late", "full marks, less 10%/day"),
    ("edsger", "ada's quiz, copied", "loses the quiz"),
]
CANVAS_IDS = {name: (1000 + i, 5000 + i) for i, (name, _, _) in enumerate(STUDENTS)}
# (first name, last name): Canvas's download names files by "<last><first>"; the ids stay
# the SIS Login IDs (ada, ...) through the roster
NAMES = {
    "ada": ("Ada", "Lovelace"),
    "katherine": ("Katherine", "Johnson"),
    "grace": ("Grace", "Hopper"),
    "linus": ("Linus", "Torvalds"),
    "margaret": ("Margaret", "Hamilton"),
    "alan": ("Alan", "Turing"),
    "dennis": ("Dennis", "Ritchie"),
    "barbara": ("Barbara", "Liskov"),
    "edsger": ("Edsger", "Dijkstra"),
}
SECTION = "Autograd from Scratch (demo)"
CANVAS_ASSIGNMENT_IDS = 4400  # the demo's assignments in Canvas: 4401, 4402, ...


LATE_POLICY = {"per_day": 0.1}


def demo_schedule(assignments: list[str]):
    """The demo class's dates (module docstring): due ``DUE`` in UTC, 10% per day late,
    and barbara one day more for the last assignment."""
    from .schedule import Schedule

    due = DUE.strftime("%Y-%m-%d %H:%M")
    return Schedule(
        dates={a: {"due": due} for a in assignments},
        extensions={assignments[-1]: {"barbara": 1}} if assignments else {},
        late_policy=LATE_POLICY,
        timezone="UTC",
    )


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
        "text/plain": f"Your variant of this quiz: questions shown for id {student!r}.",
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


def canvas_login_part(student: str) -> str:
    """The start of a Canvas download's file names: the student's name, last name first,
    lower case, without spaces (``lovelaceada``)."""
    first, last = NAMES[student]
    return f"{last}{first}".lower().replace(" ", "")


def build(assignments: list[str], downloads: Path = DEMO / "downloads") -> dict[str, Path]:
    """downloads/<assignment>.zip, named the way Canvas names files."""
    downloads.mkdir(parents=True, exist_ok=True)
    zips = {}
    for a in assignments:
        path = downloads / f"{a}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for student, files in submissions_for(a).items():
                user, sub = CANVAS_IDS[student]
                late = "late_" if student == "barbara" else ""
                for name, data in files.items():
                    zf.writestr(f"{canvas_login_part(student)}_{late}{user}_{sub}_{name}", data)
        zips[a] = path
    return zips


def points_possible(assignment: str) -> float:
    """An assignment's points, as its Canvas assignment would have them."""
    total = 0.0
    for path in sorted((SOLUTIONS / assignment).glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            md = cell.get("metadata", {}).get("nbgrader", {})
            if md.get("grade"):
                total += float(md.get("points") or 0)
    return total


def canvas_gradebook(assignments: list[str], downloads: Path = DEMO / "downloads") -> Path:
    """downloads/canvas-gradebook.csv: the class's gradebook export as Canvas gives it
    before anything is graded (Grades > Export): a byte order mark, the fixed columns,
    one column per assignment with its Canvas id, the read-only totals, the Points
    Possible row, students by sortable name, and Student View's Test Student."""
    from .spreadsheet import write_csv

    totals = ["Current Score", "Unposted Current Score", "Final Score", "Unposted Final Score"]
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    header += [f"{a} ({CANVAS_ASSIGNMENT_IDS + i})" for i, a in enumerate(assignments, 1)]
    header += ["Current Points", "Final Points", *totals]
    rows = [
        ["    Points Possible", "", "", "", ""]
        + [f"{points_possible(a):.2f}" for a in assignments]
        + ["(read only)"] * (2 + len(totals))
    ]
    blank = [""] * len(assignments) + ["0.00", "0.00", "", "", "0.00", "0.00"]
    for student, _, _ in sorted(STUDENTS, key=lambda s: NAMES[s[0]][::-1]):
        first, last = NAMES[student]
        user, _ = CANVAS_IDS[student]
        rows.append([f"{last}, {first}", user, f"2026{user}", student, SECTION, *blank])
    rows.append(["Student, Test", 1999, "", "", SECTION, *blank])
    downloads.mkdir(parents=True, exist_ok=True)
    return write_csv(downloads / "canvas-gradebook.csv", header, rows, bom=True)


def stamp(assignments: list[str]) -> None:
    """Submission times (the LMS export has none), in UTC: 20 h before ``DUE``, barbara's
    26 h after. (``grade`` writes the due dates into the gradebook, from
    ``demo_schedule``.)"""
    from .course import open_course

    course = open_course(DEMO)
    for a in assignments:
        for student, _, _ in STUDENTS:
            folder = course.submitted / student / a
            if folder.is_dir():
                when = DUE + (timedelta(hours=26) if student == "barbara" else timedelta(hours=-20))
                (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S UTC"))


# ---- the run ---------------------------------------------------------------------------


def demo(jobs: int | None = None, keep: bool = False) -> int:
    from .errors import ExitCode
    from .feedback.pages import feedback
    from .grade.display import print_report
    from .grade.export import export
    from .grade.run import grade
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
    if not _roster_and_collect(assignments):
        return ExitCode.FAILED
    stamp(assignments)
    schedule = demo_schedule(assignments)

    print("\n== grade (10 s per cell in the demo; 60 s by default)")
    limits = Limits(cell_timeout=10, wall=240)
    graded = grade(root=DEMO, jobs=jobs, limits=limits, subreaper=True, schedule=schedule)
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
    fb = feedback(root=DEMO, jobs=jobs, schedule=schedule)
    for line in fb.problems + fb.failures:
        print(f"problem: {line}")
    print(f"{len(fb.written)} feedback page(s) in {(DEMO / 'feedback').relative_to(ROOT)}/")
    print("\n== export, export --to canvas")
    written = export(root=DEMO, schedule=schedule)
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    canvas = export(root=DEMO, to="canvas", schedule=schedule)
    for path in canvas:
        print(f"wrote {path.relative_to(ROOT)} (Canvas: Grades > Import)")
    for line in canvas.problems:
        print(f"problem: {line}")
    print(late_summary(written[0], schedule))

    print("\n== the class\n")
    print(class_table(graded.outcomes, assignments))
    first = assignments[0]
    print(f"\nThe grader's notes for {first} (also at the top of each feedback page):")
    order = {name: i for i, (name, _, _) in enumerate(STUDENTS)}
    for o in sorted(graded.outcomes, key=lambda o: order.get(o.student, len(order))):
        if o.assignment == first and o.note:
            print(f"  {o.student:<10} {o.note}")
    print("\n== report")
    page = class_report(root=DEMO, schedule=schedule)
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


def _roster_and_collect(assignments: list[str]) -> bool:
    """The class's downloads built, the roster imported from Canvas's gradebook export and
    every assignment collected; False (with what went wrong printed) if it failed."""
    from .intake.collect import collect, print_collect_report
    from .roster import import_roster, print_import_report

    zips = build(assignments)
    gradebook = canvas_gradebook(assignments)
    print(f"\n== roster import {gradebook.relative_to(ROOT)} (Canvas's gradebook export)")
    imported = import_roster(DEMO, gradebook)
    if imported.problems:
        print_import_report(imported)
        return False
    print(
        f"{imported.total} students in demo-class/roster.csv, by SIS Login ID "
        f"({', '.join(s.id for s in imported.added) or 'none new'})"
    )
    print("\n== collect ASSIGNMENT demo-class/downloads/ASSIGNMENT.zip --pattern canvas")
    for a, path in zips.items():
        report = collect(a, [str(path)], pattern="canvas", root=DEMO, force=True)
        if report.failure or report.not_placed:
            print_collect_report(report)
        if report.failure:
            return False
        print(
            f"{a}: {len(report.placed)} notebooks filed into demo-class/submitted/, "
            f"{len(report.not_placed)} file(s) not placed"
        )
    return True


def late_summary(grades_csv: Path, schedule) -> str:
    """The late rows of grades.csv, as the demo's late policy scores them."""
    import csv

    with grades_csv.open(encoding="utf-8", newline="") as fh:
        late = [r for r in csv.DictReader(fh) if float(r["late_seconds"] or 0) > 0]
    lines = [f"\nLate submissions (demo late policy: {schedule.policy().describe()}):"]
    for r in late:
        lines.append(
            f"  {r['student']:<10} {r['assignment']:<22} {r['note'] or 'late'}: "
            f"{r['score']} - {r['late_penalty']} = {r['final_score']} / {r['max_score']}"
        )
    return "\n".join(lines) if late else ""


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
