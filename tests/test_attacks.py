"""Students who want points without the work: each attack is a blank notebook plus code,
graded with `python -m autograder grade` next to an honest and a blank student.

Asserted for every one: no hidden points (a blank notebook plus any code earns 0 unless
that code itself computes the right answers), the honest student keeps full marks, the
course's files and gradebook are changed only by the grader, and nothing is left running
or on disk. tests/test_sandbox.py attacks the operating system side (network, files,
processes, disk); this file attacks the verdicts.
"""

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import psutil
import pytest
from helpers import (
    NOTEBOOKS,
    ROOT,
    SOLUTIONS,
    VENV_BIN,
    ScratchCourse,
    failing_cells,
    is_test_cell,
    notebook_path,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading")]

A, QUIZ, SET = "01_value", "04_checkpoint_engine", "07_set_gradients"
MIME = "application/vnd.autograder.probe+json"


def with_code(nb, code: str):
    """A copy of ``nb`` with a student cell of ``code`` right after the setup cell."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.cells.insert(2, nbformat.v4.new_code_cell(code))
    return nb


ATTACKS = {
    # The probe's answers, replaced in the kernel before they are sent.
    "forged_empty": """
def forge(lines):
    if any("autograder_probe" in line for line in lines):
        return ["get_ipython().display_pub.publish(data={'@MIME@': {'result': []}})\\n"]
    return lines
get_ipython().input_transformers_cleanup.append(forge)
""",
    "forged_shapes": """
import ast, json
def forge(lines):
    text = "".join(lines)
    if "autograder_probe" not in text:
        return lines
    request = json.loads(ast.literal_eval(text[text.index("serve(") + 6:text.rindex(")")]))
    programs = request["args"].get("programs", [])
    answer = [{"data": p["leaves"] + [0.0] * len(p["steps"]), "grads": [1.0] * len(p["leaves"])}
              for p in programs]
    data = {"@MIME@": {"result": answer}}
    return [f"get_ipython().display_pub.publish(data={data!r})\\n"]
get_ipython().input_transformers_cleanup.append(forge)
""",
    # The reference engine, from where the course keeps it.
    "reference_import": """
import sys
sys.path.insert(0, "@REFERENCE@")
from refgrad import Value
""",
    "gc_scan": """
import gc
found = [o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == "Value"
         and o.__module__ != "__main__"]
if found:
    Value = found[0]
""",
    # Comparisons that lie.
    "lying_float": """
class Liar(float):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __sub__(self, other): return Liar(0.0)
    def __rsub__(self, other): return Liar(0.0)
    def __abs__(self): return Liar(0.0)
    def __lt__(self, other): return True
    def __le__(self, other): return True
    __hash__ = float.__hash__
class Value:
    def __init__(self, data, _parents=(), _op="", label=""):
        self.data, self.grad, self._prev = Liar(data), Liar(0.0), set(_parents)
        self._backward = lambda: None
    def __add__(self, other): return Value(0.0)
    __mul__ = __radd__ = __rmul__ = __sub__ = __truediv__ = __pow__ = __add__
    def __neg__(self): return Value(0.0)
""",
    # The kernel's own machinery, turned against the grader.
    "run_cell_patch": """
shell = get_ipython()
def refuse(*args, **kwargs):
    raise SystemExit("no hidden tests here")
shell.events.register("pre_run_cell", refuse)
import IPython.core.interactiveshell as ish
ish.InteractiveShell.run_cell = lambda self, *a, **k: None
""",
    "partial_credit": """
def score(*args):
    get_ipython().displayhook(14)
get_ipython().events.register("post_run_cell", score)
""",
    # The course's own files: the gradebook, the grader.
    "sqlite_trigger": """
import sqlite3
db = sqlite3.connect("@GRADEBOOK@")
db.execute("create trigger cheat after update on grade begin "
           "update grade set auto_score = 100; end")
db.commit()
""",
    "rewrites_grader": """
for path in ("@HIDDEN@", "@HONEST@"):
    with open(path, "w") as fh:
        fh.write("TESTS = {}\\n")
""",
}


# A problem set's blank notebook plus code right before its first check: the grader's own
# softmax (it works on any engine's Values), from where the course keeps it. Unsandboxed,
# it earns the exercise (tests/test_attacks.py::test_the_set_attack_would_work_unsandboxed).
SET_ATTACKS = {
    "set_hidden_import": """
import sys
sys.path.insert(0, "@ROOT@")
from autograder.verdicts.hidden.sg_softmax import ref_softmax as softmax
""",
}


def before_first_check(nb, code: str):
    """A copy of ``nb`` with a cell of ``code`` right before its first test cell."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    at = next(i for i, cell in enumerate(nb.cells) if is_test_cell(cell))
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    return nb


def fill(code: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        code = code.replace(f"@{key}@", value)
    return code


def snapshot(root: Path) -> dict[str, str]:
    """A hash of every file of the course that only the grader may change."""
    out = {}
    for top in ("source", "autograder", "nbgrader_config.py", "submitted"):
        base = root / top
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for path in paths:
            if "__pycache__" in path.parts:
                continue
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def run(course: Path, *args, tmp: Path) -> tuple[subprocess.CompletedProcess, int]:
    """Run a command of the course with its own temporary folder ``tmp`` (tests running
    alongside have theirs); its result, and the pid it ran as."""
    env = dict(
        os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]), TMPDIR=str(tmp)
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograder", *args],
        cwd=course,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=1500)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks") / "course"
    course = ScratchCourse(root, [A, QUIZ, SET])
    honest = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    name = notebook_path(SOLUTIONS, A).name
    paths = {
        "MIME": MIME,
        "ROOT": str(root),
        "REFERENCE": str(root / "source" / ".reference"),
        "GRADEBOOK": str(root / "gradebook.db"),
        "HIDDEN": str(root / "autograder" / "verdicts" / "hidden" / f"{A}.py"),
        "HONEST": str(root / "submitted" / "honest" / A / name),
    }

    def put(student, nb, assignment=A, filename=name):
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / filename)

    put("honest", honest)
    put("blank", blank)
    for attack, code in ATTACKS.items():
        put(attack, with_code(blank, fill(code, paths)))
    forged = nbformat.from_dict(json.loads(json.dumps(blank)))
    for cell in forged.cells:
        if is_test_cell(cell):
            cell.metadata["autograder"] = {"verdict": {"passed": True, "message": ""}}
    put("forged_verdicts", forged)
    quiz_name = notebook_path(SOLUTIONS, QUIZ).name
    quiz_blank = nbformat.read(notebook_path(NOTEBOOKS, QUIZ), as_version=4)
    put("honest", nbformat.read(notebook_path(SOLUTIONS, QUIZ), as_version=4), QUIZ, quiz_name)
    put(
        "quiz_file",
        with_code(
            quiz_blank,
            f"""
import re
text = open({str(root / "autograder" / "verdicts" / "hidden" / f"{QUIZ}.py")!r}).read()
q1 = re.search(r'"q1": letter\\("(\\w)"\\)', text).group(1)
""",
        ),
        QUIZ,
        quiz_name,
    )
    set_name = notebook_path(SOLUTIONS, SET).name
    set_blank = nbformat.read(notebook_path(NOTEBOOKS, SET), as_version=4)
    put("honest", nbformat.read(notebook_path(SOLUTIONS, SET), as_version=4), SET, set_name)
    put("blank", set_blank, SET, set_name)
    for attack, code in SET_ATTACKS.items():
        put(attack, before_first_check(set_blank, fill(code, paths)), SET, set_name)
    course.release(A)
    course.release(QUIZ)
    course.release(SET)
    before = snapshot(root)
    tmp = root.parent / "tmp"
    tmp.mkdir()
    proc, pid = run(root, "grade", "--cell-timeout", "5", "--jobs", "2", tmp=tmp)
    records = {}
    for path in (root / "autograded").glob("*/*/.autograder.json"):
        rec = json.loads(path.read_text())
        records[(rec["student"], rec["assignment"])] = rec
    return {
        "root": root,
        "proc": proc,
        "pid": pid,
        "records": records,
        "before": before,
        "after": snapshot(root),
        "tmp": sorted(os.listdir(tmp)),
    }


def test_every_submission_was_graded(graded):
    assert graded["proc"].returncode in (0, 1), graded["proc"].stdout[-3000:]
    students = {(p.parent.name, p.name) for p in (graded["root"] / "submitted").glob("*/*")}
    assert set(graded["records"]) == students


def test_no_attack_earns_a_point(graded):
    scores = {key: rec["score"] for key, rec in graded["records"].items()}
    assert scores[("blank", A)] == 0
    for attack in [*ATTACKS, "forged_verdicts"]:
        assert scores[(attack, A)] == 0, (attack, graded["records"][(attack, A)]["note"])
    assert scores[("quiz_file", QUIZ)] == 0
    assert scores[("blank", SET)] == 0
    for attack in SET_ATTACKS:
        assert scores[(attack, SET)] == 0, (attack, graded["records"][(attack, SET)]["note"])


def test_answers_that_are_not_the_probes_are_flagged(graded):
    for attack in ("forged_empty", "forged_shapes"):
        review = "; ".join(graded["records"][(attack, A)]["review"] or [])
        assert "did not come from the grading code" in review, (attack, review)
    assert not graded["records"][("honest", A)]["review"]


def test_the_honest_student_keeps_full_marks(graded):
    for assignment in (A, QUIZ, SET):
        rec = graded["records"][("honest", assignment)]
        assert rec["score"] == rec["max_score"] > 0, rec["note"]
        assert rec["isolation"] == "bubblewrap"


def test_only_the_grader_changed_the_course(graded):
    assert graded["after"] == graded["before"]
    db = sqlite3.connect(graded["root"] / "gradebook.db")
    try:
        assert (
            db.execute("select count(*) from sqlite_master where type = 'trigger'").fetchone()[0]
            == 0
        )
    finally:
        db.close()


def test_nothing_is_left_running_or_on_disk(graded):
    mine = (str(graded["root"]), f"autograder-{graded['pid']}-")  # its folders, its sandboxes
    leftovers = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(m in cmdline for m in mine):
            leftovers.append(cmdline[:200])
    assert leftovers == []
    assert graded["tmp"] == []  # its own temporary folder: work folders, sandboxes, Dask


def test_the_set_attack_would_work_unsandboxed():
    """Run in this process, with the course's files in reach, the attack earns the
    exercise: so its 0 under grading is the sandbox's doing, not the attack's failure."""
    blank = nbformat.read(notebook_path(NOTEBOOKS, SET), as_version=4)
    for attack, code in SET_ATTACKS.items():
        nb = before_first_check(blank, fill(code, {"ROOT": str(ROOT)}))
        assert "grads_test_softmax" not in failing_cells(nb, SET), attack
