"""docs/authoring.md, followed literally: its worked example (softplus in lesson 3) is
applied step by step to a scratch copy of the course, touching only source/, and graded
by nbgrader; and what ``generate`` refuses, each refusal one line naming the cell."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import nbformat
import pytest
from helpers import ROOT, VENV_BIN, ScratchCourse

from autograder import markers
from autograder.content import checks

DOC = ROOT / "docs" / "authoring.md"
STEP = re.compile(r"<!-- step: (?P<name>\w+)(?P<opts>.*?) -->\n```\w*\n(?P<body>.*?)```", re.S)


def steps() -> dict[str, tuple[dict, str]]:
    """The document's steps: {name: (options, the block under it)}."""
    found = {}
    for match in STEP.finditer(DOC.read_text()):
        opts = dict(
            (k.strip(), v.strip())
            for k, _, v in (o.partition(":") for o in match["opts"].split(",") if ":" in o)
        )
        found[match["name"]] = (opts, match["body"])
    return found


def cell_metadata(grade_id: str, test: bool, points: float = 0) -> dict:
    """What nbgrader's Create Assignment toolbar writes for an answer or a test cell."""
    md = {
        "grade": test,
        "grade_id": grade_id,
        "locked": test,
        "schema_version": 3,
        "solution": not test,
        "task": False,
    }
    if test:
        md["points"] = points
    return {"nbgrader": md}


def follow_the_document(course: ScratchCourse) -> None:
    """Steps 1 and 2 of 'Add an exercise', as an author does them."""
    found = steps()
    opts, method = found["refgrad"]
    engine = course.path / "source" / ".reference" / "refgrad" / "engine.py"
    text = engine.read_text()
    anchor = "    " + opts["before"]
    assert text.count(anchor) == 1, "the document's anchor is not in the reference engine"
    engine.write_text(text.replace(anchor, method + anchor))
    path = course.path / "source" / "03_activations" / "activations.ipynb"
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "act_test_sigmoid" in str(c.metadata))
    s_opts, solution = found["solution"]
    t_opts, test = found["test"]
    new = [
        nbformat.v4.new_markdown_cell(found["markdown"][1].strip()),
        nbformat.v4.new_code_cell(solution.strip(), metadata=cell_metadata(s_opts["id"], False)),
        nbformat.v4.new_code_cell(
            test.strip(), metadata=cell_metadata(t_opts["id"], True, float(t_opts["points"]))
        ),
    ]
    nb.cells[at + 1 : at + 1] = new
    nbformat.write(nb, path)


def run_generate(course: ScratchCourse, *extra: str) -> subprocess.CompletedProcess:
    """The document's generate command, in the scratch course, which has the generated
    folders a checkout has (lesson 3's solution runs lesson 2's, next to it)."""
    for folder in ("notebooks", "solutions"):
        for lesson in ("01_value", "02_backward"):
            if not (course.path / folder / lesson).exists():
                shutil.copytree(ROOT / folder / lesson, course.path / folder / lesson)
    command = steps()["generate"][1].split()
    assert command[:3] == ["python", "-m", "autograder"]
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(course.path)}
    return subprocess.run(
        [sys.executable, *command[1:], *extra],
        cwd=course.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_document_has_every_step():
    assert set(steps()) == {"refgrad", "markdown", "solution", "test", "generate"}


@pytest.mark.slow
def test_adding_softplus_by_the_document_touches_only_source_and_grades(tmp_path):
    course = ScratchCourse(tmp_path / "course", ["03_activations"])
    follow_the_document(course)
    done = run_generate(course)
    assert done.returncode == 0, done.stderr[-3000:]
    source = course.path / "source" / "03_activations" / "activations.ipynb"
    solved = nbformat.read(source, as_version=4)
    for cell in solved.cells:
        cell.source = markers.solved(cell.source)
    slip = nbformat.read(source, as_version=4)
    for cell in slip.cells:
        cell.source = markers.solved(cell.source).replace(
            "self.grad += s * out.grad", "self.grad += s * (1 - s) * out.grad"
        )
    blank = nbformat.read(course.path / "notebooks" / "03_activations" / source.name, 4)
    for student, nb in [("sol", solved), ("blank", blank), ("slip", slip)]:
        course.submit(student, "03_activations", nb)
    scores = course.autograde("03_activations")
    assert course.max_scores("03_activations")["act_test_softplus"] == 2
    assert scores["sol"]["act_test_softplus"] == 2
    assert scores["blank"]["act_test_softplus"] == 0
    assert scores["slip"]["act_test_softplus"] == 0
    graded = course.autograded("slip", "03_activations")
    cell = next(c for c in graded.cells if "act_test_softplus" in str(c.metadata))
    message = cell.metadata["autograder"]["verdict"]["message"]
    assert message.startswith("softplus: d softplus/dx at x = ")
    assert "expected" in message and "got" in message


def scratch_source(tmp_path, edit) -> ScratchCourse:
    course = ScratchCourse(tmp_path / "course", ["03_activations"])
    follow_the_document(course)
    path = course.path / "source" / "03_activations" / "activations.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "act_test_softplus" in str(c.metadata))
    edit(nb, cell)
    nbformat.write(nb, path)
    return course


def module_tests(assignment: str) -> set[str]:
    from autograder.verdicts import api

    return set(api.hidden_tests(assignment))


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda nb, cell: cell.update(source=markers.visible(cell.source)),
            "a graded cell with no hidden test",
        ),
        (
            lambda nb, cell: cell.metadata["nbgrader"].update(points=3),
            "its heading says 2 points, its test cells have 3",
        ),
        (
            lambda nb, cell: cell.update(
                source=cell.source.replace("cases = []", "cases = []\nassert Value is not None")
            ),
            "uses `is`",
        ),
        (
            lambda nb, cell: cell.update(
                source=cell.source.replace(
                    "cases = []", "cases = []\nassert isinstance(Value, type)"
                )
            ),
            "calls isinstance()",
        ),
        (
            lambda nb, cell: cell.update(source=cell.source.replace("for x in [", "for x in (")),
            "does not parse",
        ),
    ],
)
def test_generate_refuses_content_that_would_break_at_grading(tmp_path, edit, expected):
    course = scratch_source(tmp_path, edit)
    found = checks.problems("03_activations", module_tests, course.path / "source")
    assert found and all(expected in line for line in found), found
    assert all(line.startswith("source/03_activations/activations.ipynb") for line in found)


def test_a_pointer_to_a_test_the_module_lacks_is_refused(tmp_path):
    course = ScratchCourse(tmp_path / "course", ["03_activations"])
    found = checks.problems("03_activations", lambda a: {"act_test_gone"}, course.path / "source")
    assert any("TESTS['act_test_gone'] tests no cell" in line for line in found)


@pytest.mark.slow
def test_generate_refuses_a_test_the_solution_fails_or_the_stub_passes(tmp_path):
    """An operation the reference engine lacks (the document's step 1 forgotten) and a
    test that cannot fail: generate names the cell and rebuilds nothing."""
    course = ScratchCourse(tmp_path / "course", ["03_activations"])
    follow_the_document(course)
    engine = course.path / "source" / ".reference" / "refgrad" / "engine.py"
    engine.write_text((ROOT / "source" / ".reference" / "refgrad" / "engine.py").read_text())
    done = run_generate(course)
    assert done.returncode == 1
    assert "act_test_softplus): the course's solution fails its hidden test" in done.stderr
    assert "softplus" in done.stderr and "nothing was rebuilt" in done.stderr
    assert not (course.path / "notebooks" / "03_activations").exists()
    path = course.path / "source" / "03_activations" / "activations.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "act_test_softplus" in str(c.metadata))
    hidden = markers.inside(cell.source, markers.HIDDEN)
    cell.source = cell.source.replace(hidden, "assert 1 + 1 == 2")
    nbformat.write(nb, path)
    done = run_generate(course)
    assert "its hidden test passes the exercise's stub: it cannot fail" in done.stderr
