"""The course as a whole: source/ -> notebooks/ + solutions/ stays in step, and nothing
secret is released."""

import ast
import json
import re

import nbformat
import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE, is_test_cell, load_kit

from autograder.course import assignments, kind, kit_files

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


def test_generate_finds_nothing_stale():
    """The cheap check `generate` starts with agrees that the committed folders are up to
    date, so `python -m autograder generate` with nothing changed rebuilds nothing."""
    from autograder.content.generate import stale
    from autograder.verdicts.api import practice_round

    found = {a: stale(a, practice_round) for a in ASSIGNMENTS}
    assert {a: why for a, why in found.items() if why} == {}


def test_measured_cells_keep_their_lines_without_the_times():
    from autograder.content.generate import MEASURED_FIGURE, MEASURED_TAG, without_measurements

    log = "step 1/3   loss 0.8962\ntrained in 13.9 s; accuracy 100%\n"
    table = "width  16:  scalar     4.39 ms   Tensor  0.059 ms       74 times faster\n"
    figure = nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "F"})
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(metadata={"tags": [MEASURED_TAG]}),
        nbformat.v4.new_code_cell(),  # untagged: left alone
    ]
    for cell in nb.cells:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=log + table), figure]
    without_measurements(nb)
    measured, other = (cell.outputs for cell in nb.cells)
    assert measured[0].text == (
        "step 1/3   loss 0.8962\ntrained in … s; accuracy 100%\n"
        "width  16:  scalar     … ms   Tensor  … ms       … times faster\n"
    )
    assert measured[1] == nbformat.v4.new_output("stream", name="stdout", text=MEASURED_FIGURE)
    assert other[0].text == log + table and other[1] == figure


@pytest.mark.slow
def test_generate_twice_writes_the_same_bytes_and_then_rebuilds_nothing(tmp_path, capsys):
    """Generating one assignment twice (forced) gives byte-identical folders; a default run
    after that finds it up to date and writes nothing."""
    from autograder.content.generate import generate

    assignment = "01_value"  # small and quick, and no engine of an earlier lesson to load

    def files(root):
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    first, second = tmp_path / "first", tmp_path / "second"
    assert generate([assignment], force=True, dest=first) == [assignment]
    assert generate([assignment], force=True, dest=second) == [assignment]
    made = files(first)
    assert f"solutions/{assignment}/value.ipynb" in made
    assert f"notebooks/{assignment}/value.ipynb" in made
    assert not any("__pycache__" in name for name in made)
    assert files(second) == made
    capsys.readouterr()
    assert generate([assignment], dest=first) == []
    assert capsys.readouterr().out == f"{assignment}: up to date\n"
    assert files(first) == made


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_folder_holds_only_what_students_need(assignment):
    names = sorted(p.name for p in (SOURCE / assignment).iterdir() if p.name != "__pycache__")
    notebooks = [n for n in names if n.endswith(".ipynb")]
    assert len(notebooks) == 1, names
    quiz = {"questions.py"} if kind(assignment) == "quiz" else set()  # what variants show
    assert quiz <= set(names), names
    kits = set(kit_files(assignment))
    data = sorted(set(names) - set(notebooks) - kits - quiz)
    assert kits <= set(names) and all(n.endswith(".csv") for n in data), names
    text = (SOURCE / assignment / notebooks[0]).read_text()
    for name in data:  # a data set students load: the notebook names it and its licence
        assert f"`{name}`" in text and "licence" in text, f"{assignment}/{name}"
    for kit in kits:
        link = SOURCE / assignment / kit
        assert link.is_symlink() and link.resolve() == (SOURCE / ".shared" / kit)


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


def _visible_messages():
    """(assignment, message) for every expect() and check_close() of every check cell,
    as a student would read it: a placeholder stands for each value put into an f-string,
    and check_close's own ": expected ..., got ..." ends it (a value is about 8 characters)."""
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(next((SOURCE / assignment).glob("*.ipynb")), as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code" or not is_test_cell(cell):
                continue
            for node in ast.walk(ast.parse(cell.source.split("### BEGIN HIDDEN")[0])):
                name = getattr(getattr(node, "func", None), "id", None)
                if name == "expect" and len(node.args) > 1:
                    arg, tail = node.args[1], ""
                elif name == "check_close" and node.args:
                    arg, tail = node.args[0], ": expected -0.123456, got -0.123456."
                else:
                    continue
                if isinstance(arg, ast.JoinedStr):
                    parts = [
                        v.value if isinstance(v, ast.Constant) else "-0.12345" for v in arg.values
                    ]
                    yield assignment, "".join(parts) + tail
                elif isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield assignment, arg.value + tail


def test_every_visible_failure_is_one_sentence_in_at_most_three_short_lines():
    """What the students' guide promises: a check that fails says in one sentence what is
    wrong (and, in brackets, how to fix it), starting with ✗, in at most three lines that
    nbgrader's Validate does not cut (under 90)."""
    failed = load_kit().CheckFailed
    seen = 0
    for assignment, message in _visible_messages():
        seen += 1
        lines = failed(message)._render_traceback_()
        assert lines[0].startswith("✗ ") and len(lines) <= 3, (assignment, lines)
        assert all(len(line) < 90 for line in lines), (assignment, lines)
    assert seen > 150
    long = failed("x" * 300)._render_traceback_()  # wrapped, never cut
    assert "".join(line.lstrip("✗ ") for line in long) == "x" * 300


def test_every_test_cell_reads_like_a_check():
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(next((SOURCE / assignment).glob("*.ipynb")), as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and is_test_cell(cell):
                assert cell.source.startswith('"""'), f"{assignment}: {cell.source[:60]}"
                assert max(len(line) for line in cell.source.splitlines()) < 100


def test_readme_table_lists_every_assignment():
    """The README's table and the students' start page name every assignment in source/,
    numbered as the course numbers them (a lesson split in two: 5 and 5b)."""
    from autograder.course import assignments, number

    readme = (ROOT / "README.md").read_text()
    start = (ROOT / "source" / ".shared" / "START-HERE.md").read_text()
    for assignment in assignments():
        assert f"| {number(assignment)} | `{assignment}` |" in readme, assignment
        assert f"]({assignment}/" in start, assignment


def test_a_lesson_split_in_two_is_numbered_with_a_letter(tmp_path):
    from autograder.course import number

    for name in ("01_value", "05_mlp", "05_training", "06_checkpoint_mlp", ".shared"):
        (tmp_path / name).mkdir()
    got = [number(a, tmp_path) for a in ("01_value", "05_mlp", "05_training", "06_checkpoint_mlp")]
    assert got == ["1", "5", "5b", "6"]


@pytest.mark.parametrize("assignment", [a for a in ASSIGNMENTS if kind(a) == "lesson"])
def test_every_lesson_has_prose_and_an_exercise(assignment):
    nb = nbformat.read(next((SOURCE / assignment).glob("*.ipynb")), as_version=4)
    words = sum(len(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    exercises = sum(1 for c in nb.cells if c.cell_type == "code" and is_test_cell(c))
    assert exercises >= 1 and words >= 500, assignment


def test_generate_advises_splitting_a_lesson_too_long_for_one_sitting(tmp_path):
    """The length of a lesson is the author's choice: generate says when one grows past
    what fits a sitting (checks.length_notes), and refuses nothing for it."""
    from autograder.content import checks

    assert checks.length_notes("03_activations") == []
    folder = tmp_path / "source" / "03_activations"
    folder.mkdir(parents=True)
    nb = nbformat.read(next((SOURCE / "03_activations").glob("*.ipynb")), as_version=4)
    nb.cells += [c for c in nb.cells if is_test_cell(c)][:1]
    nbformat.write(nb, folder / "activations.ipynb")
    (note,) = checks.length_notes("03_activations", tmp_path / "source")
    assert "7 graded exercises" in note and "consider splitting" in note


def test_readme_names_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
