"""The engine a lesson or a problem set starts from: the student's own earlier notebooks
(``engine("mine", ...)``) or the course's past lessons (``engine("course", ...)``), in the
notebook (coursekit); always the course's when graded (verdicts/hidden/sets.py for the
problem sets, verdicts/hidden/lessons.py for lessons 2, 3 and 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import NOTEBOOKS, SOLUTIONS, SOURCE

from autograder.verdicts import api
from autograder.verdicts.hidden.common import kit
from autograder.verdicts.hidden.lessons import lesson_engine
from autograder.verdicts.hidden.sets import course_engine
from autograder.verdicts.probe import runtime

LESSONS = ["01_value", "02_backward", "03_activations", "05_mlp"]
TANH = 0.46211715726000974

ENGINE_CALL = """\
import json, sys
sys.path.insert(0, {folder!r})
from coursekit import engine
names = {names!r}
try:
    found = engine({which!r}, *names)
except Exception as exc:
    print(json.dumps({{"error": f"{{type(exc).__name__}}: {{exc}}"}}))
else:
    found = found if len(names) > 1 else (found,)
    given = dict(zip(names, found))
    Value = given.get("Value")
    out = {{"kinds": [type(f).__name__ for f in found]}}
    try:
        x = Value(2.0)
        y = x * x + x
        if hasattr(Value, "backward"):
            y.backward()
            out["grad"] = x.grad
        if hasattr(Value, "tanh"):
            out["tanh"] = Value(0.5).tanh().data
    except (NotImplementedError, TypeError):
        out["unwritten"] = True
    if "MLP" in given:
        net = given["MLP"](3, [4, 1])
        out["params"] = len(net.parameters())
        out["same_value"] = Value is None or type(net.parameters()[0]) is Value
    if "grad_check" in given:
        out["grad_check"] = given["grad_check"](lambda a, b: a * b + a, [2.0, 3.0])
    print(json.dumps(out))
"""


def student_folder(
    tmp_path: Path, mine: list[str], course: list[str] = (), here: str = "07_set"
) -> Path:
    """A student's my-work/ with their lessons ``mine`` (the instructor notebooks: solved),
    the edition's course/ beside it with the course's ``course`` lessons (executed
    solutions), and the folder ``here`` (a lesson or a set) with its coursekit.py."""
    work = tmp_path / "my-work"
    for lesson in mine:
        shutil.copytree(SOURCE / lesson, work / lesson, symlinks=False)
    for lesson in course:
        shutil.copytree(SOLUTIONS / lesson, tmp_path / "course" / lesson, symlinks=False)
    (work / here).mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCE / ".shared" / "coursekit.py", work / here / "coursekit.py")
    return work / here


def run(folder: Path, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH="")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def load(folder: Path, which: str, *names: str) -> dict:
    proc = run(folder, ENGINE_CALL.format(folder=str(folder), which=which, names=names))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def printed(folder: Path, which: str, *names: str) -> list[str]:
    """What engine() printed, its own lines (the last line is the test's)."""
    proc = run(folder, ENGINE_CALL.format(folder=str(folder), which=which, names=names))
    return proc.stdout.strip().splitlines()[:-1]


# ---- which lesson a notebook starts from -----------------------------------------------


@pytest.mark.parametrize(
    "here, names, lesson",
    [
        ("02_backward", ("Value",), "01_value"),
        ("03_activations", ("Value", "numerical_grad", "grad_check"), "02_backward"),
        ("05_mlp", ("Value",), "03_activations"),
        ("07_set_gradients", ("Value",), "03_activations"),
        ("08_set_training", ("Value", "Module", "MLP"), "05_mlp"),
        ("09_set_arrays", ("Value", "MLP"), "05_mlp"),
        ("a-copy", ("Value",), "03_activations"),  # a folder of no lesson: after them all
    ],
)
def test_a_notebook_starts_from_the_last_lesson_before_it_that_builds_its_names(
    here, names, lesson
):
    assert kit.engine_lesson(names, here)[0] == lesson


def test_the_lessons_engine_table_names_each_lessons_notebook():
    for folder, notebook, _ in kit.ENGINE_LESSONS:
        assert (SOURCE / folder / notebook).is_file()


def test_every_engine_cell_asks_for_what_its_grading_engine_gives():
    """The cell tagged engine of each lesson and set names what the hidden module's
    ENGINE defines, so the graded notebook has every name the student's had."""
    for assignment in sorted(p.name for p in SOURCE.iterdir() if p.name[:2].isdigit()):
        (path,) = (SOURCE / assignment).glob("*.ipynb")
        cells = [
            c
            for c in nbformat.read(path, as_version=4).cells
            if "engine" in c.metadata.get("tags", [])
        ]
        engine = getattr(api._hidden(assignment), "ENGINE", None)
        assert bool(cells) == (engine is not None), assignment
        if cells:
            (cell,) = cells
            assert 'engine("mine"' in cell.source.replace("\n    ", ""), assignment
            for name in engine.names:
                assert name in cell.source, (assignment, name)


# ---- "mine": the student's own notebooks, one after the other ----------------------------


def test_mine_follows_the_lessons_engine_cells_back_to_lesson_1(tmp_path):
    folder = student_folder(tmp_path, ["01_value", "02_backward"], here="03_activations")
    got = load(folder, "mine", "Value", "numerical_grad", "grad_check")
    assert got["kinds"] == ["type", "function", "function"]
    assert got["grad"] == 5.0 and "tanh" not in got and got["grad_check"] < 1e-6
    lines = printed(folder, "mine", "Value")
    assert lines == ["Value: your own, from 02_backward (which starts from 01_value)."]


def test_mine_is_the_students_lesson_3_engine_or_lesson_5_network(tmp_path):
    folder = student_folder(tmp_path, LESSONS)
    got = load(folder, "mine", "Value")
    assert got["kinds"] == ["type"] and abs(got["tanh"] - TANH) < 1e-12
    got = load(folder, "mine", "Value", "MLP")
    assert got["params"] == 21 and got["same_value"]


def test_an_earlier_lessons_failing_checks_are_named_as_last_saved(tmp_path):
    """A check here that fails because of lesson 1 is explained where the engine loads."""
    folder = student_folder(tmp_path, ["01_value", "02_backward"], here="03_activations")
    path = folder.parent / "01_value" / "value.ipynb"
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "value_test_reflected":
            cell.execution_count = 3
            cell.outputs = [
                nbformat.v4.new_output(
                    "error",
                    ename="CheckFailed",
                    evalue="2 - a: expected data -1, got 1",
                    traceback=[],
                )
            ]
    nbformat.write(nb, path)
    lines = printed(folder, "mine", "Value")
    assert lines[0].startswith("Value: your own, from 02_backward")
    text = " ".join(lines[1:])
    assert "your 01_value notebook fails the checks of reflected" in text, lines
    assert 'switch to "course" once 01_value is past' in text
    assert all(len(line) < 90 for line in lines)


def test_an_earlier_lesson_not_written_yet_is_named(tmp_path):
    """Lesson 2 begun before lesson 1 is done: the checks here would say "not written
    yet" of code the student did write, so the engine cell says whose it is."""
    folder = student_folder(tmp_path, [], here="02_backward")
    shutil.copytree(NOTEBOOKS / "01_value", folder.parent / "01_value", symlinks=False)
    lines = printed(folder, "mine", "Value")
    assert lines[0] == "Value: your own, from 01_value."
    text = " ".join(lines[1:])
    assert (
        "your 01_value notebook has add_mul, hand_backprop, arithmetic, reflected still to "
        "write: a check here that uses them fails too"
    ) in text, lines


def test_missing_broken_or_looping_notebooks_say_so_in_one_line(tmp_path):
    folder = student_folder(tmp_path, ["02_backward"], here="03_activations")
    names = ("Value",)
    error = load(folder, "mine", *names)["error"]
    assert error == (
        "EngineNotFound: engine(): 01_value/value.ipynb is not next to your 02_backward "
        "notebook, which starts from it"
    )
    shutil.rmtree(folder.parent / "02_backward")
    error = load(folder, "mine", *names)["error"]
    assert "02_backward/backward.ipynb is not next to this notebook's folder" in error
    (folder.parent / "02_backward").mkdir()
    (folder.parent / "02_backward" / "backward.ipynb").write_text('{"cells": [')  # cut short
    error = load(folder, "mine", *names)["error"]
    assert "02_backward/backward.ipynb cannot be read (JSONDecodeError" in error, error
    # lesson 1's notebook is (a link to) lesson 2's: lesson 2's engine cell loads itself
    shutil.copytree(SOURCE / "02_backward", folder.parent / "02_backward", dirs_exist_ok=True)
    (folder.parent / "01_value").mkdir()
    (folder.parent / "01_value" / "value.ipynb").symlink_to(
        folder.parent / "02_backward" / "backward.ipynb"
    )
    error = load(folder, "mine", *names)["error"]
    assert "01_value/value.ipynb leads back to a notebook it is loading" in error, error
    for which, names, words in [
        ("yours", ("Value",), 'the first argument is "mine" or "course"'),
        ("mine", ("Valeu",), "name what to load"),
        ("mine", (), "name what to load"),
    ]:
        error = load(folder, which, *names)["error"]
        assert words in error and "\n" not in error, error


def test_lesson_1_has_no_engine_to_start_from(tmp_path):
    folder = student_folder(tmp_path, [], here="01_value")
    assert "no lesson before 01_value builds Value" in load(folder, "mine", "Value")["error"]


def test_a_broken_cell_of_the_lesson_costs_only_the_names_it_defines(tmp_path):
    folder = student_folder(tmp_path, LESSONS)
    path = folder.parent / "05_mlp" / "mlp.ipynb"
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "mlp_linear":
            cell.source = "class Linear(Module):\n    def __init__(self\n"  # a syntax error
    nbformat.write(nb, path)
    assert load(folder, "mine", "Value", "MLP")["params"] == 21
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "mlp_mlp"]
    nbformat.write(nb, path)
    error = load(folder, "mine", "MLP")["error"]
    assert "your 05_mlp notebook defines no MLP" in error and "mlp_linear" in error, error


def test_the_students_choice_in_an_earlier_notebook_is_kept(tmp_path):
    """Lesson 2's engine cell switched to the course's lesson 1: lesson 3's "mine" then
    runs the student's lesson 2 on the course's lesson 1."""
    folder = student_folder(tmp_path, ["02_backward"], ["01_value"], here="03_activations")
    path = folder.parent / "02_backward" / "backward.ipynb"
    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if "engine" in c.metadata.get("tags", [])]
    cell.source = cell.source.replace('engine("mine"', 'engine("course"')
    nbformat.write(nb, path)
    assert load(folder, "mine", "Value")["grad"] == 5.0


# ---- "course": the course's past lessons, shipped in course/ -----------------------------


def test_course_reads_the_past_lessons_beside_the_students_folder(tmp_path):
    folder = student_folder(tmp_path, [], ["01_value", "02_backward"], here="03_activations")
    got = load(folder, "course", "Value", "numerical_grad", "grad_check")
    assert got["grad"] == 5.0 and got["grad_check"] < 1e-6
    lines = printed(folder, "course", "Value")
    assert lines == ["Value: the course's, from 02_backward (which starts from 01_value)."]


def test_course_may_also_sit_among_the_lesson_folders(tmp_path):
    """Assignments fetched from nbgrader's exchange sit side by side in the home folder:
    a course/ folder among them serves too."""
    folder = student_folder(tmp_path, [], here="02_backward")
    shutil.copytree(SOLUTIONS / "01_value", folder.parent / "course" / "01_value")
    assert load(folder, "course", "Value")["kinds"] == ["type"]


def test_course_is_the_lessons_engine_for_the_sets(tmp_path):
    folder = student_folder(tmp_path, [], LESSONS)
    assert abs(load(folder, "course", "Value")["tanh"] - TANH) < 1e-12
    got = load(folder, "course", "Value", "MLP")
    assert got["params"] == 21 and got["same_value"]


def test_course_says_in_one_line_that_a_lesson_is_not_out_yet(tmp_path):
    folder = student_folder(tmp_path, LESSONS, ["01_value"], here="03_activations")
    error = load(folder, "course", "Value")["error"]
    assert error == (
        "EngineNotFound: engine(): the course's 02_backward is not out yet: it comes once "
        '02_backward is past its due date (until then, use "mine"; on your own, without '
        "due dates? the self-paced edition has it: see README.md)"
    )


# ---- dot: a fused neuron for any Value of the lessons' engine ----------------------------


def test_dot_is_one_node_with_the_long_sums_value_and_gradients(tmp_path):
    folder = student_folder(tmp_path, ["01_value", "02_backward"], here="03_activations")
    code = f"""
import json, sys
sys.path.insert(0, {str(folder)!r})
from coursekit import dot, engine, graph_nodes
Value = engine("mine", "Value")
ws = [Value(0.5), Value(-1.0), Value(2.0)]
xs = [1.0, Value(2.0), 3.0]
b = Value(0.25)
out = dot(ws, xs, b)
out.backward()
long = [Value(w.data) for w in ws], Value(xs[1].data), Value(0.25)
total = long[2] + long[0][0] * 1.0 + long[0][1] * long[1] + long[0][2] * 3.0
total.backward()
try:
    dot(ws, [1.0], b)
except ValueError as exc:
    short = str(exc)
print(json.dumps({{
    "data": [out.data, total.data],
    "grads": [[w.grad for w in ws], [w.grad for w in long[0]]],
    "x_grad": [xs[1].grad, long[1].grad], "b_grad": [b.grad, long[2].grad],
    "ops": sum(1 for n in graph_nodes(out) if n._op), "short": short,
}}))
"""
    got = json.loads(run(folder, code).stdout.strip().splitlines()[-1])
    assert got["data"] == [4.75, 4.75]
    assert got["grads"][0] == got["grads"][1] == [1.0, 2.0, 3.0]
    assert got["x_grad"] == [-1.0, -1.0] and got["b_grad"] == [1.0, 1.0]
    assert got["ops"] == 1 and got["short"] == "dot(): 3 weights but 1 inputs"


# ---- grading: the course's engine in place of the engine cell ----------------------------


@pytest.mark.parametrize(
    "assignment, names, lessons",
    [
        ("02_backward", ("Value",), ("01_value",)),
        ("03_activations", ("Value", "numerical_grad", "grad_check"), ("01_value", "02_backward")),
        ("05_mlp", ("Value", "dot"), ("01_value", "02_backward", "03_activations")),
    ],
)
def test_a_lessons_grading_engine_is_the_course_solutions_of_the_lessons_before_it(
    assignment, names, lessons, monkeypatch
):
    engine = api._hidden(assignment).ENGINE
    assert engine.names == names and engine.lessons == lessons and engine.given is None
    assert api.engine_lessons(assignment) == lessons
    monkeypatch.syspath_prepend(str(SOURCE / assignment))  # coursekit, as in a kernel there
    ns: dict = {}
    exec(engine.code, ns)
    assert {n for n in ns if not n.startswith("__")} == set(names)
    x = ns["Value"](2.0)
    y = x * x + x
    assert y.data == 6.0 and hasattr(y, "backward") == (assignment != "02_backward")
    assert "BEGIN SOLUTION" not in engine.code
    assert lesson_engine(assignment, *names).code == engine.code


def test_every_grading_material_holds_what_any_hidden_test_reads():
    """A worker imports the grader from the first material it gets, and the hidden tests
    read the course's files from there, whichever assignment they grade: every material
    holds the lessons a course engine is read from, and every assignment's files that are
    not notebooks (a quiz's questions.py, problem set 2's iris.csv: a demo class whose
    worker got lesson 1's material first lost every quiz point without them)."""
    from autograder.course import SOURCE, assignments
    from autograder.worker.material import shared_files

    shared = shared_files()
    notebooks = {p.split("/")[1] for p in shared if p.startswith("source/") and ".ipynb" in p}
    assert notebooks == {"01_value", "02_backward", "03_activations"}
    for a in assignments():
        for path in (SOURCE / a).iterdir():
            if path.suffix != ".ipynb":
                assert shared[f"source/{a}/{path.name}"] == path.read_bytes(), (a, path.name)
    assert "source/04_checkpoint_engine/questions.py" in shared
    assert "source/08_set_training/iris.csv" in shared


@pytest.mark.parametrize("names", [("Value",), ("Value", "dot", "MLP"), ("Module", "Layer")])
def test_the_course_engine_for_grading_defines_its_names_once(names):
    engine = course_engine(*names)
    ns: dict = {}
    exec(engine.code, ns)
    assert {n for n in ns if not n.startswith("__")} == set(names)
    kernel_ns = {"Value": object, "MLP": None}
    runtime.attach(kernel_ns, engine.given.as_dict())
    assert all(kernel_ns[n] is not None for n in names)
    if "MLP" in names:  # one run of the source: the network is made of that Value
        net = kernel_ns["MLP"](2, [1])
        assert type(net.parameters()[0]) is kernel_ns["Value"]


def test_course_engine_refuses_names_it_does_not_have():
    with pytest.raises(ValueError, match="unknown names"):
        course_engine("Tensor")
    with pytest.raises(ValueError):
        course_engine()


@pytest.mark.slow
def test_grading_runs_the_course_engine_in_place_of_the_engine_cell(monkeypatch, tmp_path):
    """In a real kernel: the cell tagged ``engine`` runs the course's code, says so, and
    keeps its text; a solution cell tagged ``engine`` still runs as written."""
    from autograder.kernel.limits import Limits
    from autograder.preprocessors import execute
    from autograder.verdicts import api

    monkeypatch.setattr(api, "engine_code", lambda assignment: course_engine("Value").code)
    choice = nbformat.v4.new_code_cell('raise RuntimeError("the student\'s line ran")')
    choice.metadata["tags"] = ["engine"]
    solution = nbformat.v4.new_code_cell("answer = 42")
    solution.metadata = {"tags": ["engine"], "nbgrader": {"solution": True, "grade_id": "s"}}
    probe = nbformat.v4.new_code_cell("print(type(Value(1.0)).__name__, Value(0.5).tanh().data)")
    nb = nbformat.v4.new_notebook(cells=[choice, solution, probe])
    (tmp_path / "set.ipynb").write_text(nbformat.writes(nb))
    ex = execute.GuardedExecute(
        config=Limits(sandbox="off").as_config(),
        shutdown_kernel="immediate",
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
    )
    ex.preprocess(
        nb,
        {
            "nbgrader": {"notebook": "set", "assignment": "07_set"},
            "metadata": {"path": str(tmp_path)},
        },
    )
    assert nb.cells[0].source == choice.source
    assert [o.get("text") for o in nb.cells[0].outputs] == [execute.COURSE_ENGINE]
    assert not any(o.output_type == "error" for c in nb.cells for o in c.outputs), nb.cells
    assert nb.cells[2].outputs[0]["text"].startswith("Value 0.46211715")
