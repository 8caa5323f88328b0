"""The engine a problem set runs on: the student's own or the course's in the notebook
(coursekit.engine), always the course's when graded (verdicts/hidden/sets.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import nbformat
import pytest
from helpers import SOURCE, read

from autograder import markers
from autograder.verdicts.hidden.sets import course_engine
from autograder.verdicts.probe import runtime

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
    model = dict(zip(names, found)).get("MLP")
    out = {{"kinds": [type(f).__name__ for f in found]}}
    Value = found[0]
    out["tanh"] = Value(0.5).tanh().data
    if model is not None:
        net = model(3, [4, 1])
        out["params"] = len(net.parameters())
        out["same_value"] = type(net.parameters()[0]) is Value
    print(json.dumps(out))
"""


def course_copy(tmp_path, lessons: list[str], solved: bool = True):
    """A folder of lessons beside a problem set's folder, as in a student's my-work/."""
    for lesson in lessons:
        shutil.copytree(SOURCE / lesson, tmp_path / lesson, symlinks=False)
    (tmp_path / "07_set").mkdir()
    shutil.copy(SOURCE / ".shared" / "coursekit.py", tmp_path / "07_set" / "coursekit.py")
    return tmp_path / "07_set"


def load(folder, which: str, *names: str) -> dict:
    code = ENGINE_CALL.format(folder=str(folder), which=which, names=names)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_mine_is_the_students_lesson_3_engine_or_lesson_5_network(tmp_path):
    folder = course_copy(tmp_path, ["03_activations", "05_mlp"])
    got = load(folder, "mine", "Value")
    assert got["kinds"] == ["type"] and abs(got["tanh"] - 0.46211715726000974) < 1e-12
    got = load(folder, "mine", "Value", "MLP")
    assert got["params"] == 21 and got["same_value"]


def test_course_is_what_lesson_5_and_quiz_6_publish(tmp_path):
    folder = course_copy(tmp_path, ["05_mlp", "06_checkpoint_mlp"])
    assert abs(load(folder, "course", "Value")["tanh"] - 0.46211715726000974) < 1e-12
    got = load(folder, "course", "Value", "MLP")
    assert got["params"] == 21 and got["same_value"]


def test_a_missing_lesson_or_a_bad_call_says_so_in_one_line(tmp_path):
    folder = course_copy(tmp_path, ["05_mlp"])
    for which, names, words in [
        ("mine", ("Value",), "03_activations/activations.ipynb is not next to"),
        ("course", ("Value", "MLP"), "06_checkpoint_mlp/checkpoint_mlp.ipynb is not next"),
        ("yours", ("Value",), 'the first argument is "mine" or "course"'),
        ("mine", ("Valeu",), "name what to load"),
        ("mine", (), "name what to load"),
    ]:
        error = load(folder, which, *names)["error"]
        assert words in error and "\n" not in error, error


def test_a_broken_cell_of_the_lesson_costs_only_the_names_it_defines(tmp_path):
    folder = course_copy(tmp_path, ["05_mlp"])
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
    assert "define no MLP" in error and "mlp_linear" in error, error


def test_quiz_6_publishes_exactly_lesson_5s_network():
    """The course's network in quiz 6 is lesson 5's solution, word for word."""
    lesson = {
        c.metadata.get("nbgrader", {}).get("grade_id"): c for c in read(SOURCE, "05_mlp").cells
    }
    quiz = {
        c.metadata.get("nbgrader", {}).get("grade_id"): c
        for c in read(SOURCE, "06_checkpoint_mlp").cells
    }
    published = quiz["mlp_quiz_course_network"]
    assert published.metadata["nbgrader"]["locked"] and not markers.has(
        published.source, markers.SOLUTION
    )
    expected = [markers.solved(lesson[g].source).strip() for g in ("mlp_neuron", "mlp_mlp")]
    assert published.source.strip() == "\n\n\n".join(expected)


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
