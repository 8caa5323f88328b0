"""The hostile classes of the end-to-end tests, each graded once per session with
`python -m autograder grade`; the tests of several modules read that run's records,
gradebook, graded notebooks and feedback (registered as fixtures in tests/conftest.py).

- ``hostile_class``: 01_value, a quiz and a problem set, handed in by students who attack
  the verdicts (tests/test_attacks.py) and by everything students hand in that is broken
  or runs away (tests/test_grading_robust.py), next to correct, buggy and blank controls,
  all in one run under the limits ``LIMITS``. tests/test_dask_grading.py grades some of
  them again on a Dask cluster and compares.
- ``confined_class``: 01_value handed in by students who attack the operating system from
  inside the sandbox (tests/test_sandbox.py) and who try to starve the others with a CPU
  hog and floods of output (tests/test_starve.py); a victim graded alone before them, and
  an honest student graded beside them. Its limits are longer (``CONFINED_LIMITS``): the
  hog must run beside the honest student, and filling the disk takes a while.

A session fixture is made once per xdist worker: every test that uses one carries its
group's mark (``HOSTILE`` or ``CONFINED``), so that loadgroup runs them on one worker, and
the two classes may be graded at the same time on the two.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import textwrap
import uuid
from pathlib import Path

import nbformat
import pytest
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    ScratchCourse,
    autograder_cli,
    course_env,
    gradebook_scores,
    is_test_cell,
    notebook_path,
    records,
)

from autograder.kernel import sandbox

HOSTILE = pytest.mark.xdist_group("hostile_class")  # the tests that read hostile_class
CONFINED = pytest.mark.xdist_group("confined_class")  # the tests that read confined_class

A, QUIZ, SET = "01_value", "04_checkpoint_engine", "07_set_gradients"
OTHER = "zz_other"  # a second assignment, to hand in by mistake
LIMITS = ["--cell-timeout", "4", "--wall-limit", "90", "--memory", "2G"]
CONFINED_LIMITS = ["--cell-timeout", "30", "--wall-limit", "120", "--memory", "2G"]
MIME = "application/vnd.autograder.probe+json"


def copy(nb):
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def put(root: Path, student: str, assignment: str, nb=None, files=None, filename=None) -> None:
    """Hand in ``nb`` (as ``filename``, default the assignment's notebook name) and
    ``files`` ({relative path: text}) as ``student``."""
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    if nb is not None:
        nbformat.write(nb, folder / (filename or notebook_path(SOLUTIONS, assignment).name))
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


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


# ---- attacks on the verdicts (tests/test_attacks.py) ----------------------------------------


def with_code(nb, code: str):
    """A copy of ``nb`` with a student cell of ``code`` right after the setup cell."""
    nb = copy(nb)
    nb.cells.insert(2, nbformat.v4.new_code_cell(code))
    return nb


ATTACKS = {
    # The probe's answers, replaced in the kernel before they are sent.
    "forged_empty": """
def forge(lines):
    if any("autograder.probe" in line for line in lines):
        return ["get_ipython().display_pub.publish(data={'@MIME@': {'result': []}})\\n"]
    return lines
get_ipython().input_transformers_cleanup.append(forge)
""",
    "forged_shapes": """
import ast, json
def forge(lines):
    text = "".join(lines)
    if "autograder.probe" not in text:
        return lines
    start = text.index("'autograder.probe', ") + 20
    request = json.loads(ast.literal_eval(text[start:text.rindex(")")]))
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
    nb = copy(nb)
    at = next(i for i, cell in enumerate(nb.cells) if is_test_cell(cell))
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    return nb


def fill(code: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        code = code.replace(f"@{key}@", value)
    return code


def hand_in_attacks(root: Path) -> None:
    """An honest and a blank student, and the attackers, of A, QUIZ and SET."""
    honest = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    paths = {
        "MIME": MIME,
        "ROOT": str(root),
        "REFERENCE": str(root / "source" / ".reference"),
        "GRADEBOOK": str(root / "gradebook.db"),
        "HIDDEN": str(root / "autograder" / "verdicts" / "hidden" / f"{A}.py"),
        "HONEST": str(root / "submitted" / "honest" / A / notebook_path(SOLUTIONS, A).name),
    }
    put(root, "honest", A, honest)
    put(root, "blank", A, blank)
    for attack, code in ATTACKS.items():
        put(root, attack, A, with_code(blank, fill(code, paths)))
    forged = copy(blank)
    for cell in forged.cells:
        if is_test_cell(cell):
            cell.metadata["autograder"] = {"verdict": {"passed": True, "message": ""}}
    put(root, "forged_verdicts", A, forged)
    quiz_blank = nbformat.read(notebook_path(NOTEBOOKS, QUIZ), as_version=4)
    put(root, "honest", QUIZ, nbformat.read(notebook_path(SOLUTIONS, QUIZ), as_version=4))
    hidden_quiz = str(root / "autograder" / "verdicts" / "hidden" / f"{QUIZ}.py")
    code = f"""
import re
text = open({hidden_quiz!r}).read()
q1 = re.search(r'"q1": letter\\("(\\w)"\\)', text).group(1)
"""
    put(root, "quiz_file", QUIZ, with_code(quiz_blank, code))
    set_blank = nbformat.read(notebook_path(NOTEBOOKS, SET), as_version=4)
    put(root, "honest", SET, nbformat.read(notebook_path(SOLUTIONS, SET), as_version=4))
    put(root, "blank", SET, set_blank)
    for attack, code in SET_ATTACKS.items():
        put(root, attack, SET, before_first_check(set_blank, fill(code, paths)))


# ---- broken and runaway submissions (tests/test_grading_robust.py) -------------------------


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


def hand_in_broken(course: ScratchCourse, pidfile: Path) -> set[str]:
    """Controls (correct, bug, blank) and everything broken or runaway, of A: the
    students handed in."""
    from autograder.demo import typical_bug

    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    bug = typical_bug(solution, blank)
    name = notebook_path(SOLUTIONS, A).name
    students: set[str] = set()

    def hand_in(student, nb=None, files=None, filename=name):
        students.add(student)
        put(root, student, A, nb, files, filename)

    hand_in("correct", solution)
    hand_in("bug", bug)
    hand_in("blank", blank)
    hand_in("infinite_loop", with_cell(solution, "while True:\n    pass"))
    hand_in(
        "ignores_ctrl_c",
        with_cell(
            solution,
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        ),
    )
    hand_in("long_sleep", with_cell(solution, "import time\ntime.sleep(3600)"))
    hand_in("sys_exit", with_cell(solution, "import sys\nsys.exit(3)"))
    hand_in("os_exit", with_cell(solution, "import os\nos._exit(1)"))
    hand_in("segfault", with_cell(solution, "import faulthandler\nfaulthandler._sigsegv()"))
    hand_in("huge_alloc", with_cell(solution, "x = bytearray(40 * 1024**3)"))
    hand_in("prints_millions", with_cell(solution, "for i in range(3_000_000):\n    print(i)"))
    hand_in(
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
    hand_in("deleted_test", deleted)
    both = copy(solution)
    first_test = grade_cells(both)[0]
    del both.cells[first_test]
    solution_cells = [
        i for i, c in enumerate(both.cells) if c.metadata.get("nbgrader", {}).get("solution")
    ]
    del both.cells[solution_cells[0]]
    hand_in("deleted_solution_and_test", both)
    edited = copy(bug)
    for i in grade_cells(edited):
        edited.cells[i].source = "pass"
    hand_in("edited_test", edited)
    dup = copy(solution)
    dup.cells = [
        c
        for cell in dup.cells
        for c in ([cell, copy(cell)] if cell.cell_type == "code" else [cell])
    ]
    for i, cell in enumerate(dup.cells):
        cell.id = f"cell-{i}"
    hand_in("duplicated", dup)
    hand_in("missing", files={"readme.txt": "I forgot the notebook"})
    hand_in(
        "extra_files",
        solution,
        {"notes.txt": "x", "data/points.csv": "1,2", "value-Copy1.ipynb": nbformat.writes(blank)},
    )
    hand_in("corrupt", files={name: nbformat.writes(solution)[:5000]})
    other = nbformat.read(course.path / "source" / OTHER / "other.ipynb", as_version=4)
    hand_in("other_assignment", other)
    hand_in("Zoë Saldaña", solution)
    hand_in("jean luc", solution)
    hand_in("renamed", solution, filename="Value (1).ipynb")
    stripped = copy(solution)
    for cell in stripped.cells:
        cell.metadata.pop("nbgrader", None)
    hand_in("no_metadata", stripped)
    fake = "def check(*a, **k):\n    pass\nclass Value:\n    pass\n"
    hand_in(
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
    hand_in(
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
    hand_in(
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
    hand_in(
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
    return students


@pytest.fixture(scope="session")
def hostile_class(tmp_path_factory):
    """The attackers of the verdicts and the broken and runaway class, graded in one run
    with its own temporary folder (tests running alongside have theirs)."""
    base = tmp_path_factory.mktemp("hostile")
    root = base / "course"
    course = ScratchCourse(root, [A, QUIZ, SET])
    make_other_assignment(course)
    pidfile = base / "pids.txt"
    hand_in_attacks(root)
    broken = hand_in_broken(course, pidfile)
    handed_in = {  # as handed in: a test may hand in again (test_grading_robust)
        p.parent.parent.name: p.read_bytes() for p in root.glob(f"submitted/*/{A}/*.ipynb")
    }
    for assignment in (A, QUIZ, SET):
        course.release(assignment)
    before = snapshot(root)
    tmp = base / "tmp"
    tmp.mkdir()
    run = autograder_cli(
        "grade", *LIMITS, "--jobs", "2", cwd=root, env=course_env(TMPDIR=str(tmp)), wait=False
    )
    out, err = run.communicate(timeout=1500)
    by_assignment = {}
    for path in (root / "autograded").glob("*/*/.autograder.json"):
        rec = json.loads(path.read_text())
        by_assignment[(rec["student"], rec["assignment"])] = rec
    return {
        "root": root,
        "proc": subprocess.CompletedProcess(run.args, run.returncode, out, err),
        "pid": run.pid,
        "by_assignment": by_assignment,  # {(student, assignment): record}
        "records": records(root, A),  # {student: record} of A
        "book": gradebook_scores(root, A),
        "before": before,
        "after": snapshot(root),
        "tmp": sorted(os.listdir(tmp)),
        "pidfile": pidfile,
        "broken": broken,  # the students of tests/test_grading_robust.py
        "handed_in": handed_in,  # {student: the bytes of their notebook of A}
    }


# ---- attacks on the machine, and on the other students (test_sandbox, test_starve) ---------


def os_attacks(course: Path, token: str) -> dict[str, str]:
    """Cells that try what students tried, by student name."""
    c = str(course)
    return {
        "reads_course": f"""
            import os
            print("FOUND", os.path.exists({c!r}), sum(len(f) for _, _, f in os.walk({c!r})))
            print(open({c!r} + "/autograder/verdicts/hidden/quiz.py").read())
            """,
        "writes_course": f"""
            for path in ["/autograder/verdicts/hidden/quiz.py", "/source/{A}/coursekit.py",
                         "/nbgrader_config.py", "/submitted/victim/{A}/value.ipynb",
                         "/autograded/victim/{A}/.autograder.json", "/gradebook.db"]:
                try:
                    open({c!r} + path, "w").write("pwned")
                except OSError as exc:
                    print(path, exc)
            import sqlite3
            db = sqlite3.connect({c!r} + "/gradebook.db")
            db.execute("create trigger t after insert on grade begin "
                       "update grade set auto_score = 1000; end")
            db.commit()
            """,
        "plants_startup": """
            import os, site, sys
            startup = os.path.expanduser("~/.ipython/profile_default/startup")
            os.makedirs(startup, exist_ok=True)
            open(os.path.join(startup, "00-evil.py"), "w").write(
                "import builtins; builtins.abs = lambda x: 0")
            for folder in site.getsitepackages() + [site.getusersitepackages()]:
                try:
                    os.makedirs(folder, exist_ok=True)
                    open(os.path.join(folder, "evil.pth"), "w").write(
                        "import builtins; builtins.abs = lambda x: 0")
                except OSError as exc:
                    print(exc)
            """,
        "daemon": f"""
            import os, subprocess, sys
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", "{token}"],
                             start_new_session=True)
            if os.fork() == 0:
                os.setsid()
                os.execv(sys.executable, [sys.executable, "-c",
                         "import time; time.sleep(900)", "{token}"])
            """,
        "fills_disk": """
            import os
            block = b"x" * (1 << 20)
            for path in ("/tmp/fill", "fill", os.path.expanduser("~/fill")):
                try:
                    with open(path, "wb") as fh:
                        for _ in range(3500):
                            fh.write(block)
                except OSError as exc:
                    print(path, exc)
            """,
        "kills_grader": """
            import os, signal
            os.kill(os.getppid(), signal.SIGKILL)
            for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
                if pid != os.getpid():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            """,
        "network": """
            import socket
            for host in [("1.1.1.1", 53), ("127.0.0.1", 22), ("pypi.org", 443)]:
                try:
                    socket.create_connection(host, 3)
                    print("connected", host)
                except OSError as exc:
                    print(host, exc)
            """,
    }


PROBE_LATER = """
import builtins, os
startup = os.path.expanduser("~/.ipython/profile_default/startup")
print("PROBE", builtins.abs(-3), sorted(os.listdir(startup)) if os.path.isdir(startup) else [])
"""

SPINNERS = """
import os, subprocess, sys, time
spin = "import time\\nend = time.time() + {seconds}\\nwhile time.time() < end: pass"
for _ in range({n}):
    subprocess.Popen([sys.executable, "-c", spin, "{token}"], start_new_session=True)
if os.fork() == 0:  # a double-forked daemon in a session of its own
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", spin, "{token}"])
    os._exit(0)
os.wait()
"""

STARVE_TOKEN = uuid.uuid4().hex  # on the command lines of the hog's spinners
STARVERS = {
    "hog": SPINNERS.format(n=8, seconds=90, token=STARVE_TOKEN) + "\nwhile True: pass",
    "big_message": "from IPython.display import display\n"
    "display({'text/plain': 'x' * (200 << 20)}, raw=True)",
    "long_traceback": "raise ValueError('v' * (50 << 20))",
    "log_flood": "import os, sys\nfd = sys.stderr._original_stdstream_copy\n"
    "for _ in range(16):\n    os.write(fd, b'x' * (64 << 20))",
    "update_storm": "from IPython.display import display\n"
    "h = display({'text/plain': 'a'}, raw=True, display_id='d')\n"
    "for _ in range(200):\n    display({'text/plain': 'a'}, raw=True, "
    "display_id='d')\nfor _ in range(30):\n    h.update({'text/plain': "
    "'u' * 100_000}, raw=True)",
}


def with_first_cell(nb, source: str):
    """A copy of ``nb`` with a code cell of ``source`` (dedented) first but one."""
    nb = copy(nb)
    nb.cells.insert(1, nbformat.v4.new_code_cell(textwrap.dedent(source)))
    return nb


def files_of(folder: Path, skip=()) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(part in skip for part in p.relative_to(folder).parts)
    }


@pytest.fixture(scope="session")
def confined_class(tmp_path_factory):
    """The victim graded alone; then, in one run (sandboxed if the machine can, each
    process of it tagged with SANDBOX_TEST_RUN=token), the attackers of the machine, two
    students after them, the starvers, and an honest student."""
    token = uuid.uuid4().hex
    root = ScratchCourse(tmp_path_factory.mktemp("confined") / "course", [A]).path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    put(root, "victim", A, solution)
    # The victim is graded first, alone: its results must not change after the attacks.
    autograder_cli("grade", A, *CONFINED_LIMITS, cwd=root, timeout=1200, codes=(0, 1))
    victim_record = records(root)["victim"]
    for student, source in os_attacks(root, token).items():
        put(root, student, A, with_first_cell(solution, source))
    for i in range(2):  # kernels after the attacks, in the same workers
        put(root, f"zz_later{i}", A, with_first_cell(solution, PROBE_LATER))
    put(root, "honest", A, solution)
    for student, code in STARVERS.items():
        put(root, student, A, with_first_cell(solution, code))
    skip = {"autograded", "gradebook.db", "__pycache__"}
    book_before = gradebook_scores(root)
    course_before = files_of(root, skip)
    tmp_before = set(os.listdir(tempfile.gettempdir()))
    required = ["--require-sandbox"] if sandbox.sandbox_status().level == sandbox.BUBBLEWRAP else []
    proc = autograder_cli(
        "grade",
        A,
        *CONFINED_LIMITS,
        "--jobs",
        "2",
        *required,
        cwd=root,
        env=course_env(SANDBOX_TEST_RUN=token),
        timeout=1200,
        codes=(0, 1),
    )
    return {
        "root": root,
        "token": token,
        "proc": proc,
        "victim": victim_record,
        "book_before": book_before,
        "course_before": course_before,
        "course_after": files_of(root, skip),
        "tmp_new": set(os.listdir(tempfile.gettempdir())) - tmp_before,
    }
