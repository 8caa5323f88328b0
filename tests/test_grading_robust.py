"""`python -m autograder grade` on everything students hand in, graded in one run next to a
correct submission; then feedback, re-runs, resubmission, and a run killed half way.

The class is built from the real 01_value notebooks (solution, release) and generic
mutations (tests/hostile.py), and graded in the session's hostile class, beside the
attackers of tests/test_attacks.py; the tests that need a run of their own (killed half
way, another gradebook, a short wall limit) make their own classes. Every expectation is
relative to students graded in the same run (the solution gets full marks, a buggy
control gets what its bug costs), never a lesson's numbers.
"""

import csv
import html
import re
import signal
import sqlite3
import time
from pathlib import Path
from subprocess import DEVNULL

import nbformat
import psutil
import pytest
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    ScratchCourse,
    autograder_cli,
    gradebook_scores,
    notebook_path,
    records,
)
from hostile import HOSTILE, LIMITS, OTHER, A, with_cell

pytestmark = pytest.mark.slow


def run(course: Path, *args, timeout=900, check_codes=(0, 1)):
    return autograder_cli(*args, cwd=course, timeout=timeout, codes=check_codes)


def submission_rows(course: Path) -> int:
    con = sqlite3.connect(course / "gradebook.db")
    try:
        return con.execute("select count(*) from submitted_assignment").fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def graded(hostile_class):
    """The broken and runaway class, graded in the session's hostile class
    (tests/hostile.py, which builds it) next to the attackers of tests/test_attacks.py."""
    return hostile_class


def score(graded, student):
    return graded["records"][student]["score"]


def note(graded, student):
    return graded["records"][student]["note"]


@HOSTILE
def test_every_submission_has_a_score_and_the_run_says_there_were_problems(graded):
    students = {p.parent.name for p in graded["root"].glob(f"submitted/*/{A}")}
    assert graded["broken"] <= students
    assert set(graded["records"]) == students
    assert set(graded["book"]) == students
    for student, rec in graded["records"].items():
        assert graded["book"][student] == rec["score"], student
    assert graded["proc"].returncode == 1, graded["proc"].stdout[-3000:]
    assert "exit code 1" in graded["proc"].stdout


@HOSTILE
def test_controls(graded):
    full = graded["records"]["correct"]["max_score"]
    assert score(graded, "correct") == full
    assert score(graded, "blank") == 0
    assert 0 < score(graded, "bug") < full
    assert graded["records"]["correct"]["note"] == ""


@HOSTILE
@pytest.mark.parametrize(
    "student, words",
    [
        ("infinite_loop", "per-cell limit"),
        ("ignores_ctrl_c", "hung and was skipped"),
        ("long_sleep", "per-cell limit"),
        ("os_exit", "crashed the kernel and was skipped"),
        ("segfault", "crashed the kernel and was skipped"),
        ("huge_alloc", "ran out of memory"),
    ],
)
def test_a_runaway_cell_costs_nothing_else(graded, student, words):
    full = graded["records"]["correct"]["max_score"]
    assert score(graded, student) == full
    assert words in note(graded, student)
    assert graded["records"][student]["problem"]


@HOSTILE
def test_sys_exit_is_an_error_in_its_cell_only(graded):
    assert score(graded, "sys_exit") == score(graded, "correct")


@HOSTILE
def test_millions_of_lines_are_capped(graded):
    assert score(graded, "prints_millions") == score(graded, "correct")
    # Which limit stops it first depends on the machine's load: either is correct, as long
    # as the grade is right and the saved notebook stays small.
    said = note(graded, "prints_millions")
    assert "printed too much" in said or "per-cell limit" in said, said
    nb = graded["root"] / "autograded" / "prints_millions" / A
    assert sum(p.stat().st_size for p in nb.glob("*.ipynb")) < 5_000_000


@HOSTILE
def test_forked_processes_are_all_killed(graded):
    assert score(graded, "forks") == score(graded, "correct")
    daemons = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [])[:2] == ["sleep", "600"]
    ]
    assert daemons == []
    if graded["records"]["forks"].get("isolation") == "bubblewrap":
        return  # pids inside the sandbox's namespace mean nothing here; the daemon is gone
    pids = [int(p) for p in graded["pidfile"].read_text().split()]
    assert len(pids) == 41
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    assert alive == []


@HOSTILE
def test_deleted_and_edited_grade_cells(graded):
    full = graded["records"]["correct"]["max_score"]
    assert score(graded, "deleted_test") == full
    assert "deleted test cells restored" in note(graded, "deleted_test")
    assert "deleted" in note(graded, "deleted_solution_and_test")
    assert score(graded, "deleted_solution_and_test") < full
    assert score(graded, "edited_test") == score(graded, "bug")
    assert "edited read-only cells restored" in note(graded, "edited_test")


@HOSTILE
def test_duplicates_extra_files_renamed_and_stripped_notebooks(graded):
    full = graded["records"]["correct"]["max_score"]
    for student in ("duplicated", "extra_files", "renamed", "no_metadata"):
        assert score(graded, student) == full, (student, note(graded, student))
    assert "duplicated cells" in note(graded, "duplicated")
    assert "notes.txt" in note(graded, "extra_files")
    assert "value-Copy1.ipynb" in note(graded, "extra_files")
    assert "as `value.ipynb`" in note(graded, "renamed")
    assert "metadata" in note(graded, "no_metadata")


@HOSTILE
def test_what_cannot_be_graded_scores_zero_with_the_reason(graded):
    assert score(graded, "missing") == 0
    assert "no `value.ipynb` was submitted" in note(graded, "missing")
    assert score(graded, "corrupt") == 0
    assert "broken JSON" in note(graded, "corrupt")
    assert score(graded, "other_assignment") == 0
    assert OTHER in note(graded, "other_assignment")
    for student in ("missing", "corrupt", "other_assignment"):
        assert graded["records"][student]["problem"]


@HOSTILE
def test_student_ids_with_spaces_and_accents(graded):
    for student in ("Zoë Saldaña", "jean luc"):
        assert score(graded, student) == score(graded, "correct")


@HOSTILE
def test_planted_modules_and_monkeypatching_earn_nothing(graded):
    assert score(graded, "planted_fakes") == score(graded, "bug")
    assert "autograder/verdicts/hidden/01_value.py" in note(graded, "planted_fakes")
    assert score(graded, "monkeypatched") == score(graded, "bug")
    assert "flagged for review" in note(graded, "monkeypatched")
    assert score(graded, "patches_during_test") <= score(graded, "bug")


@HOSTILE
def test_feedback_never_shows_grading_material(graded):
    from autograder.feedback.pages import fingerprints, quotes_grader

    root = graded["root"]
    students = graded["broken"]  # this class's (the hostile class's attackers are others)
    chosen = [arg for student in sorted(students) for arg in ("--student", student)]
    proc = run(root, "feedback", A, *chosen, check_codes=(0,))
    assert "page(s) written" in proc.stdout
    pages = list((root / "feedback").rglob("*"))
    files = [p for p in pages if p.is_file()]
    assert {p.suffix for p in files} == {".html"}
    assert {p.parent.parent.name for p in files} == students
    secret = [str(root / "autograder"), "BEGIN HIDDEN TESTS", "load_grader("]
    assert fingerprints()  # the scan has something to look for
    for page in files:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        for word in secret:
            assert word not in text, (page, word)
        assert not quotes_grader(text), page
    leaked = [p.name for p in (root / "autograded" / "leaks_grader" / A).iterdir()]
    assert not any(name.endswith(".stolen.txt") for name in leaked)  # a sandbox or not:
    # the kernel has no load_grader to find the grader by, and its files stay in it
    corrupt = next((root / "feedback" / "corrupt" / A).glob("*.html")).read_text()
    assert "broken JSON" in corrupt


@HOSTILE
def test_rerun_changes_nothing_then_a_resubmission_replaces_the_old_grade(graded):
    root = graded["root"]
    before = submission_rows(root)
    proc = run(root, "grade", A, *LIMITS)
    assert "0 graded" in proc.stdout, proc.stdout[-2000:]
    assert submission_rows(root) == before
    assert gradebook_scores(root) == graded["book"]
    # The same student hands in again: one submission, the new score.
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    nbformat.write(solution, root / "submitted" / "bug" / A / notebook_path(SOLUTIONS, A).name)
    proc = run(root, "grade", A, *LIMITS, "--student", "bug", "--student", "bug")
    assert "1 graded" in proc.stdout, proc.stdout[-2000:]
    assert submission_rows(root) == before
    assert gradebook_scores(root)["bug"] == graded["records"]["correct"]["max_score"]


def test_killed_mid_run_then_rerun_loses_and_duplicates_nothing(tmp_path):
    course = ScratchCourse(tmp_path / "course", [A])
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    name = notebook_path(SOLUTIONS, A).name
    students = {f"s{i}": (solution if i % 2 else blank) for i in range(8)}
    for student, nb in students.items():
        (root / "submitted" / student / A).mkdir(parents=True)
        nbformat.write(nb, root / "submitted" / student / A / name)
    proc = autograder_cli(
        "grade", A, "-q", *LIMITS, cwd=root, wait=False, stdout=DEVNULL, stderr=DEVNULL
    )
    deadline = time.monotonic() + 600
    while len(records(root)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed"
    workers = [p for p in psutil.Process(proc.pid).children(recursive=True)]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 2 <= len(records(root)) < len(students)
    # Orphaned workers notice their parent died and stop (with their kernels).
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]

    again = run(root, "grade", A, *LIMITS)
    assert "exit code 0" in again.stdout, again.stdout[-2000:]
    recs = records(root)
    assert set(recs) == set(students)
    assert submission_rows(root) == len(students)
    full = recs["s1"]["max_score"]
    for student, nb in students.items():
        assert recs[student]["score"] == (full if nb is solution else 0)
    assert gradebook_scores(root) == {s: r["score"] for s, r in recs.items()}
    assert not list((root / "autograded").glob("*/.*.new-*"))


def test_a_database_url_is_used_for_everything(tmp_path):
    """--db: grade, feedback and export use that gradebook; no gradebook.db appears."""
    course = ScratchCourse(tmp_path / "course", [A])
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    for student in ("ann", "ben"):
        (root / "submitted" / student / A).mkdir(parents=True)
        nbformat.write(
            solution, root / "submitted" / student / A / notebook_path(SOLUTIONS, A).name
        )
    url = f"sqlite:///{tmp_path / 'elsewhere' / 'grades.sqlite'}"
    (tmp_path / "elsewhere").mkdir()
    proc = run(root, "grade", A, "--db", url, *LIMITS)
    assert "exit code 0" in proc.stdout, proc.stdout[-2000:]
    run(root, "feedback", "--db", url, check_codes=(0,))
    run(root, "export", "--db", url, check_codes=(0,))
    assert not (root / "gradebook.db").exists()
    rows = list(csv.DictReader((root / "exports" / "grades.csv").open(encoding="utf-8")))
    assert sorted(r["student"] for r in rows) == ["ann", "ben"]
    assert all(r["score"] == r["max_score"] != "0" for r in rows)
    assert len(list((root / "feedback").rglob("*.html"))) == 2


def test_the_whole_notebook_wall_limit(tmp_path):
    """Cells that each stay under the per-cell limit but together pass the notebook's wall
    limit: the notebook is stopped there, what ran is graded, the rest scores 0."""
    course = ScratchCourse(tmp_path / "course", [A])
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    slow = solution
    for _ in range(6):
        slow = with_cell(slow, "import time\ntime.sleep(3)")  # after the first test cell
    for student, nb in (("slow", slow), ("correct", solution)):
        (root / "submitted" / student / A).mkdir(parents=True)
        nbformat.write(nb, root / "submitted" / student / A / notebook_path(SOLUTIONS, A).name)
    proc = run(root, "grade", A, "--cell-timeout", "5", "--wall-limit", "14")
    recs = records(root)
    assert recs["correct"]["score"] == recs["correct"]["max_score"], proc.stdout[-2000:]
    assert 0 < recs["slow"]["score"] < recs["slow"]["max_score"]
    assert "ran out of its 14 s time limit" in recs["slow"]["note"]
    assert proc.returncode == 1
