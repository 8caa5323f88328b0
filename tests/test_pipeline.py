"""The course as a whole: source/ -> notebooks/ + solutions/ stays in step, and nothing
secret is released."""

import json
import re

import nbformat
import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE, is_test_cell

from autograder.course import assignments, kind

ASSIGNMENTS = assignments()
SECRET_MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS")


def test_course_has_assignments_in_order():
    assert ASSIGNMENTS[0] == "01_value"
    assert all(re.fullmatch(r"\d\d_[a-z_]+", a) for a in ASSIGNMENTS), ASSIGNMENTS
    assert sorted(ASSIGNMENTS) == ASSIGNMENTS


def test_reference_engine_is_not_an_nbgrader_assignment():
    from autograder.course import nbgrader_api

    api = nbgrader_api(db_url="sqlite:///:memory:")
    listed = set(api.get_source_assignments())
    assert listed == set(ASSIGNMENTS)
    assert not any("reference" in a or "shared" in a for a in listed)


def test_generated_folders_are_up_to_date():
    from autograder.content.generate import check_generated
    from autograder.verdicts.api import practice_round

    problems = check_generated(practice=practice_round)  # as `python -m autograder` does
    assert problems == [], "\n".join(problems) + "\nrun: make generate"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_folder_holds_only_what_students_need(assignment):
    names = sorted(p.name for p in (SOURCE / assignment).iterdir() if p.name != "__pycache__")
    notebooks = [n for n in names if n.endswith(".ipynb")]
    assert len(notebooks) == 1, names
    quiz = {"questions.py"} if kind(assignment) == "quiz" else set()  # what variants show
    assert quiz <= set(names), names
    data = sorted(set(names) - set(notebooks) - {"coursekit.py"} - quiz)
    assert "coursekit.py" in names and all(n.endswith(".csv") for n in data), names
    text = (SOURCE / assignment / notebooks[0]).read_text()
    for name in data:  # a data set students load: the notebook names it and its licence
        assert f"`{name}`" in text and "licence" in text, f"{assignment}/{name}"
    link = SOURCE / assignment / "coursekit.py"
    assert link.is_symlink() and link.resolve() == (SOURCE / ".shared" / "coursekit.py")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebooks_have_no_outputs(assignment):
    for path in (SOURCE / assignment).glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


def test_nothing_secret_reaches_notebooks():
    for path in NOTEBOOKS.rglob("*"):
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        assert not SECRET_MARKERS.search(text), f"{path}: solution or hidden-test marker"
        assert "load_grader" not in text, f"{path}: hidden test code"
        assert "refgrad" not in text, f"{path}: mentions the reference engine"
        assert not path.name.startswith("refgrad")


def test_no_hidden_tests_or_reference_in_solutions():
    for path in SOLUTIONS.rglob("*.ipynb"):
        text = path.read_text()
        assert "HIDDEN TESTS" not in text and "load_grader" not in text, path
        assert "refgrad" not in text, path


def _test_cell_outputs():
    for path in sorted(SOLUTIONS.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and is_test_cell(cell):
                yield path, cell


def test_solutions_are_executed_without_errors():
    for path in sorted(SOLUTIONS.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), f"{path} was not executed"
        errors = [o for c in code for o in c.outputs if o.output_type == "error"]
        assert errors == [], f"{path}: {errors[0].ename}: {errors[0].evalue}"


def test_test_cells_print_short_lines_and_nothing_to_stderr():
    seen = 0
    for path, cell in _test_cell_outputs():
        seen += 1
        for out in cell.outputs:
            assert not (out.output_type == "stream" and out.name == "stderr"), (
                f"{path}: a test cell wrote to stderr: {out.text[:200]}"
            )
            text = out.get("text", "") or json.dumps(out.get("data", {}).get("text/plain", ""))
            for line in str(text).splitlines():
                assert len(line) < 90, f"{path}: output line of {len(line)} chars: {line}"
    assert seen


def test_every_test_cell_reads_like_a_check():
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(next((SOURCE / assignment).glob("*.ipynb")), as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and is_test_cell(cell):
                assert cell.source.startswith('"""'), f"{assignment}: {cell.source[:60]}"
                assert max(len(line) for line in cell.source.splitlines()) < 100


def test_readme_table_lists_every_assignment():
    """The README's table and the students' start page name every assignment in source/."""
    from autograder.course import assignments

    readme = (ROOT / "README.md").read_text()
    start = (ROOT / "source" / ".shared" / "START-HERE.md").read_text()
    for number, assignment in enumerate(assignments(), 1):
        assert f"| {number} | `{assignment}` |" in readme, assignment
        assert f"]({assignment}/" in start, assignment


def test_readme_names_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
