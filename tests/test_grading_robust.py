"""`python -m autograder grade` on everything students hand in, graded in one run next to a
correct submission; then feedback, re-runs, resubmission, and a run killed half way.

The class is built from the real 01_value notebooks (solution, release) and generic
mutations; every expectation is relative to students graded in the same run (the solution
gets full marks, a buggy control gets what its bug costs), never a lesson's numbers.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    VENV_BIN,
    ScratchCourse,
    gradebook_scores,
    notebook_path,
    records,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading")]

A = "01_value"
OTHER = "zz_other"
LIMITS = ["--cell-timeout", "4", "--wall-limit", "90", "--memory", "2G"]


def copy(nb):
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def grade_ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def grade_cells(nb):
    return [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade")]


def with_cell(nb, source, after_test=0):
    """A copy of nb with a code cell after its n-th test cell (a plain student cell)."""
    nb = copy(nb)
    nb.cells.insert(grade_cells(nb)[after_test] + 1, nbformat.v4.new_code_cell(source))
    return nb


def patched(nb, code):
    """A copy of nb whose first solution cell ends with ``code``."""
    nb = copy(nb)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.source += "\n\n" + code
    return nb


def run(course: Path, *args, timeout=900, check_codes=(0, 1)):
    env = dict(os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode in check_codes, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def submission_rows(course: Path) -> int:
    import sqlite3

    con = sqlite3.connect(course / "gradebook.db")
    try:
        return con.execute("select count(*) from submitted_assignment").fetchone()[0]
    finally:
        con.close()


def make_other_assignment(course: ScratchCourse) -> None:
    """A second assignment (copy of 01 with other cell ids), to hand in by mistake."""
    src = course.path / "source" / A
    dest = course.path / "source" / OTHER
    dest.mkdir()
    nb = nbformat.read(notebook_path(course.path / "source", A), as_version=4)
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader")
        if md:
            md["grade_id"] = "other_" + md["grade_id"]
    nbformat.write(nb, dest / "other.ipynb")
    (dest / "coursekit.py").write_bytes((src / "coursekit.py").read_bytes())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from autograder.demo import typical_bug

    tmp = tmp_path_factory.mktemp("class")
    course = ScratchCourse(tmp / "course", [A])
    make_other_assignment(course)
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    bug = typical_bug(solution, blank)
    pidfile = tmp / "pids.txt"
    name = notebook_path(SOLUTIONS, A).name

    def put(student, nb=None, files=None, filename=name):
        folder = root / "submitted" / student / A
        folder.mkdir(parents=True, exist_ok=True)
        if nb is not None:
            nbformat.write(nb, folder / filename)
        for rel, text in (files or {}).items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)

    put("correct", solution)
    put("bug", bug)
    put("blank", blank)
    put("infinite_loop", with_cell(solution, "while True:\n    pass"))
    put(
        "ignores_ctrl_c",
        with_cell(
            solution,
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        ),
    )
    put("long_sleep", with_cell(solution, "import time\ntime.sleep(3600)"))
    put("sys_exit", with_cell(solution, "import sys\nsys.exit(3)"))
    put("os_exit", with_cell(solution, "import os\nos._exit(1)"))
    put("segfault", with_cell(solution, "import ctypes\nctypes.string_at(0)"))
    put("huge_alloc", with_cell(solution, "x = bytearray(40 * 1024**3)"))
    put("prints_millions", with_cell(solution, "for i in range(3_000_000):\n    print(i)"))
    put(
        "forks",
        with_cell(
            solution,
            f"""import os, subprocess, time
pids = []
for _ in range(40):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
    pids.append(pid)
daemon = subprocess.Popen(["sleep", "600"], env={{}}, start_new_session=True)
pids.append(daemon.pid)
try:  # outside a sandbox the test can check these pids; inside, the path is not there
    open({str(pidfile)!r}, "w").write(" ".join(map(str, pids)))
except OSError:
    pass""",
        ),
    )
    deleted = copy(solution)
    del deleted.cells[grade_cells(deleted)[0]]
    put("deleted_test", deleted)
    both = copy(solution)
    first_test = grade_cells(both)[0]
    del both.cells[first_test]
    solution_cells = [
        i for i, c in enumerate(both.cells) if c.metadata.get("nbgrader", {}).get("solution")
    ]
    del both.cells[solution_cells[0]]
    put("deleted_solution_and_test", both)
    edited = copy(bug)
    for i in grade_cells(edited):
        edited.cells[i].source = "pass"
    put("edited_test", edited)
    dup = copy(solution)
    dup.cells = [
        c
        for cell in dup.cells
        for c in ([cell, copy(cell)] if cell.cell_type == "code" else [cell])
    ]
    for i, cell in enumerate(dup.cells):
        cell.id = f"cell-{i}"
    put("duplicated", dup)
    put("missing", files={"readme.txt": "I forgot the notebook"})
    put(
        "extra_files",
        solution,
        {"notes.txt": "x", "data/points.csv": "1,2", "value-Copy1.ipynb": nbformat.writes(blank)},
    )
    put("corrupt", files={name: nbformat.writes(solution)[:5000]})
    other = nbformat.read(course.path / "source" / OTHER / "other.ipynb", as_version=4)
    put("other_assignment", other)
    put("Zoë Saldaña", solution)
    put("jean luc", solution)
    put("renamed", solution, filename="Value (1).ipynb")
    stripped = copy(solution)
    for cell in stripped.cells:
        cell.metadata.pop("nbgrader", None)
    put("no_metadata", stripped)
    fake = "def check(*a, **k):\n    pass\nclass Value:\n    pass\n"
    put(
        "planted_fakes",
        patched(bug, "import sys, types\nsys.modules['refgrad'] = types.ModuleType('refgrad')"),
        {
            "refgrad/__init__.py": fake,
            "refgrad/engine.py": fake,
            "coursekit.py": fake,
            "autograder/__init__.py": "",
            "autograder/verdicts/hidden/__init__.py": "",
            "autograder/verdicts/hidden/01_value.py": fake,
            "kernel_startup.py": fake,
        },
    )
    put(
        "monkeypatched",
        patched(
            bug,
            """import builtins, math, coursekit
builtins.abs = lambda x: 0.0
math.isnan = lambda x: True
math.isclose = lambda *a, **k: True
coursekit.check = lambda *a, **k: None
check = coursekit.check

def load_grader(name):
    class Anything:
        def __getattr__(self, attr):
            return lambda *a, **k: None
    return Anything()""",
        ),
    )
    put(
        "patches_during_test",
        patched(
            bug,
            """_plain_add = Value.__add__
def _sneaky_add(self, other):
    import builtins
    builtins.abs = lambda x: 0.0
    return _plain_add(self, other)
Value.__add__ = _sneaky_add""",
        ),
    )
    put(
        "leaks_grader",
        with_cell(
            solution,
            """import os, glob
here = os.path.dirname(load_grader.__defaults__[0])
for path in glob.glob(os.path.join(here, "hidden", "*.py")) + glob.glob(
        os.path.join(here, "..", "source", ".reference", "refgrad", "*.py")):
    text = open(path).read()
    print(text)
    open(os.path.basename(path) + ".stolen.txt", "w").write(text)
print(open(load_grader.__defaults__[0]).read())""",
        ),
    )

    started = time.monotonic()
    proc = run(root, "grade", A, *LIMITS, "--jobs", "2")
    seconds = time.monotonic() - started
    return {
        "root": root,
        "proc": proc,
        "records": records(root),
        "book": gradebook_scores(root),
        "pidfile": pidfile,
        "seconds": seconds,
    }


def score(graded, student):
    return graded["records"][student]["score"]


def note(graded, student):
    return graded["records"][student]["note"]


def test_every_submission_has_a_score_and_the_run_says_there_were_problems(graded):
    students = {p.name for p in (graded["root"] / "submitted").iterdir()}
    assert set(graded["records"]) == students
    assert set(graded["book"]) == students
    for student, rec in graded["records"].items():
        assert graded["book"][student] == rec["score"], student
    assert graded["proc"].returncode == 1, graded["proc"].stdout[-3000:]
    assert "exit code 1" in graded["proc"].stdout


def test_controls(graded):
    full = graded["records"]["correct"]["max_score"]
    assert score(graded, "correct") == full
    assert score(graded, "blank") == 0
    assert 0 < score(graded, "bug") < full
    assert graded["records"]["correct"]["note"] == ""


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


def test_sys_exit_is_an_error_in_its_cell_only(graded):
    assert score(graded, "sys_exit") == score(graded, "correct")


def test_millions_of_lines_are_capped(graded):
    assert score(graded, "prints_millions") == score(graded, "correct")
    # Which limit stops it first depends on the machine's load: either is correct, as long
    # as the grade is right and the saved notebook stays small.
    said = note(graded, "prints_millions")
    assert "printed too much" in said or "per-cell limit" in said, said
    nb = graded["root"] / "autograded" / "prints_millions" / A
    assert sum(p.stat().st_size for p in nb.glob("*.ipynb")) < 5_000_000


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


def test_deleted_and_edited_grade_cells(graded):
    full = graded["records"]["correct"]["max_score"]
    assert score(graded, "deleted_test") == full
    assert "deleted test cells restored" in note(graded, "deleted_test")
    assert "deleted" in note(graded, "deleted_solution_and_test")
    assert score(graded, "deleted_solution_and_test") < full
    assert score(graded, "edited_test") == score(graded, "bug")
    assert "edited read-only cells restored" in note(graded, "edited_test")


def test_duplicates_extra_files_renamed_and_stripped_notebooks(graded):
    full = graded["records"]["correct"]["max_score"]
    for student in ("duplicated", "extra_files", "renamed", "no_metadata"):
        assert score(graded, student) == full, (student, note(graded, student))
    assert "duplicated cells" in note(graded, "duplicated")
    assert "notes.txt" in note(graded, "extra_files")
    assert "value-Copy1.ipynb" in note(graded, "extra_files")
    assert "as `value.ipynb`" in note(graded, "renamed")
    assert "metadata" in note(graded, "no_metadata")


def test_what_cannot_be_graded_scores_zero_with_the_reason(graded):
    assert score(graded, "missing") == 0
    assert "no `value.ipynb` was submitted" in note(graded, "missing")
    assert score(graded, "corrupt") == 0
    assert "broken JSON" in note(graded, "corrupt")
    assert score(graded, "other_assignment") == 0
    assert OTHER in note(graded, "other_assignment")
    for student in ("missing", "corrupt", "other_assignment"):
        assert graded["records"][student]["problem"]


def test_student_ids_with_spaces_and_accents(graded):
    for student in ("Zoë Saldaña", "jean luc"):
        assert score(graded, student) == score(graded, "correct")


def test_planted_modules_and_monkeypatching_earn_nothing(graded):
    assert score(graded, "planted_fakes") == score(graded, "bug")
    assert "autograder/verdicts/hidden/01_value.py" in note(graded, "planted_fakes")
    assert score(graded, "monkeypatched") == score(graded, "bug")
    assert "flagged for review" in note(graded, "monkeypatched")
    assert score(graded, "patches_during_test") <= score(graded, "bug")


def test_feedback_never_shows_grading_material(graded):
    from autograder.feedback.pages import fingerprints, quotes_grader

    root = graded["root"]
    proc = run(root, "feedback", check_codes=(0,))
    assert "page(s) written" in proc.stdout
    pages = list((root / "feedback").rglob("*"))
    files = [p for p in pages if p.is_file()]
    assert {p.suffix for p in files} == {".html"}
    students = {p.name for p in (root / "submitted").iterdir()}
    assert {p.parent.parent.name for p in files} == students
    secret = [str(root / "autograder"), "BEGIN HIDDEN TESTS", "load_grader("]
    import html
    import re

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
    env = dict(os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", A, "-q", *LIMITS],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
    import csv

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
