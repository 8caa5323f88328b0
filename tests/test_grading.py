"""Fast tests of the grading commands' parts: collect's file-name patterns and report,
preparing submissions for nbgrader, notes, exit codes, the CSV export and the feedback scan.
(tests/test_grading_robust.py grades real submissions end to end.)"""

import csv
import json
import zipfile
from pathlib import Path

import nbformat
import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE, notebook_path

from autograder import commands
from autograder.course import open_course
from autograder.errors import GraderError
from autograder.grade import run as grading
from autograder.grade.display import Display
from autograder.grade.notes import compose_notes, note_line
from autograder.grade.report import Outcome
from autograder.intake import collect as col
from autograder.intake.discovery import discover
from autograder.kernel.limits import GiB, Limits, parse_size
from autograder.messages import Event, NotebookResult, Result
from autograder.worker.submission import CellSpec, Expected, make_gradable, read_notebook

A = "01_value"
NB = notebook_path(SOURCE, A).name


# ---- collect -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, path, student, file_id",
    [
        ("canvas", "smithjane_12345_678_value.ipynb", "smithjane", "value.ipynb"),
        ("canvas", "doejohn_late_222_333_value-1.ipynb", "doejohn", "value.ipynb"),
        (
            "moodle",
            "Ada Lovelace_555_assignsubmission_file_/value.ipynb",
            "Ada Lovelace",
            "value.ipynb",
        ),
        ("folders", "alice/value.ipynb", "alice", "value.ipynb"),
        ("folders", "alice/my work/value.ipynb", "alice", "value.ipynb"),
        ("student", "bob.ipynb", "bob", "value.ipynb"),
        (
            "auto",
            "Zoë Saldaña_9_assignsubmission_file_/Value (1).ipynb",
            "Zoë Saldaña",
            "value.ipynb",
        ),
        ("auto", "carol/value.ipynb", "carol", "value.ipynb"),
        (
            r"(?P<student_id>\w+)-(?P<file_id>\w+)-(?P<timestamp>[\d-]+)\.ipynb",
            "dave-value-2026-01-02.ipynb",
            "dave",
            "value.ipynb",
        ),
    ],
)
def test_patterns_place_files(pattern, path, student, file_id):
    placement, why = col.match_file(path, col._pattern(pattern), ["value.ipynb"])
    assert why == ""
    assert (placement.student, placement.file_id) == (student, file_id)


def test_file_id_kept_when_the_assignment_has_several_notebooks():
    placement, _ = col.match_file(
        "alice/part2.ipynb", col._pattern("folders"), ["part1.ipynb", "part2.ipynb"]
    )
    assert placement.file_id == "part2.ipynb"


@pytest.mark.parametrize(
    "pattern, path, reason",
    [
        ("auto", "alice/notes.txt", "not a notebook"),
        ("auto", "__MACOSX/alice/._value.ipynb", "macOS metadata"),
        ("auto", "alice/.ipynb_checkpoints/value-checkpoint.ipynb", "checkpoint"),
        ("canvas", "alice/value.ipynb", "does not match"),
        ("auto", "value.ipynb", "no student"),
    ],
)
def test_files_that_cannot_be_placed_say_why(pattern, path, reason):
    placement, why = col.match_file(path, col._pattern(pattern), ["value.ipynb"])
    assert placement is None and reason in why


def test_unusable_student_ids_are_refused():
    assert col.clean_student_id("  Zoë   Saldaña ") == "Zoë Saldaña"
    assert col.clean_student_id("Zoe\u0308") == "Zoë"  # one spelling of the same name
    for bad in ("", ".hidden", "a[1]", "what?"):
        assert col.clean_student_id(bad) is None


def test_zip_names_stored_without_the_utf8_flag_are_repaired():
    assert col.fix_zip_name("José".encode().decode("cp437")) == "José"
    assert col.fix_zip_name("plain") == "plain"


def test_bad_patterns_are_refused():
    with pytest.raises(ValueError, match="student_id"):
        col._pattern(r"(?P<who>\w+)\.ipynb")
    with pytest.raises(ValueError, match="regular expression"):
        col._pattern("(unclosed")


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_collect_files_lms_downloads_and_reports_every_file_it_did_not_place(tmp_path):
    solution = notebook_path(SOLUTIONS, A).read_bytes()
    blank = notebook_path(NOTEBOOKS, A).read_bytes()
    first = _zip(
        tmp_path / "first.zip",
        {
            f"smithjane_1_11_{NB}": solution,
            f"doejohn_late_2_22_{NB}": blank,
            "smithjane_1_11_notes.txt": b"notes",
            "README": b"from the LMS",
        },
    )
    course = tmp_path / "course"
    report = col.collect(A, [str(first)], pattern="canvas", root=course)
    assert report.exit_code == 1
    assert sorted(report.students) == ["doejohn", "smithjane"]
    assert (course / "submitted" / "smithjane" / A / NB).read_bytes() == solution
    reasons = dict(report.not_placed)
    assert reasons == {
        f"{first}: smithjane_1_11_notes.txt": "not a notebook",
        f"{first}: README": "not a notebook",
    }

    # A second download: a resubmission and a duplicate. Without --force nothing that is
    # already there is replaced; every file not placed is listed.
    folder = tmp_path / "second"
    (folder / "smithjane").mkdir(parents=True)
    (folder / "smithjane" / NB).write_bytes(blank)
    (folder / "kim").mkdir()
    (folder / "kim" / NB).write_bytes(solution)
    (folder / "kim" / "old").mkdir()
    (folder / "kim" / "old" / NB).write_bytes(blank)
    report = col.collect(A, [str(folder)], pattern="folders", root=course)
    assert report.students == {"smithjane": "kept", "kim": "new"}
    assert any("already has a different submission" in why for _, why in report.not_placed)
    assert any("another copy" in why for _, why in report.not_placed)
    assert (course / "submitted" / "smithjane" / A / NB).read_bytes() == solution
    report = col.collect(A, [str(folder)], pattern="folders", root=course, force=True)
    assert report.students["smithjane"] == "replaced"
    assert (course / "submitted" / "smithjane" / A / NB).read_bytes() == blank


# ---- preparing a submission ------------------------------------------------------------------


@pytest.fixture(scope="module")
def expected() -> list[Expected]:
    """What the gradebook records for 01_value, built from the release notebook."""
    from autograder.worker.submission import _released_checksum

    nb = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    cells = []
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader")
        if not md:
            continue
        spec = CellSpec(
            md["grade_id"],
            cell.cell_type,
            cell.source,
            md.get("locked", False),
            md.get("checksum"),
            md.get("grade", False),
            md.get("solution", False),
            md.get("task", False),
            float(md.get("points", 0)),
        )
        spec.released_checksum = _released_checksum(spec)
        cells.append(spec)
    return [Expected(Path(NB).stem, cells)]


def _submit(folder: Path, nb=None, name=NB, **files) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if nb is not None:
        nbformat.write(nb, folder / name)
    for rel, text in files.items():
        (folder / rel).write_text(text)
    return folder


def _ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def test_the_solution_needs_nothing(tmp_path, expected):
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    (prep,), notes = make_gradable(_submit(tmp_path, nb), expected)
    assert prep.notebook is not None and prep.notes == [] and notes == []


def test_a_deleted_test_cell_comes_back_after_its_exercise(tmp_path, expected):
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    tests = [c for c in expected[0].cells if c.grade]
    gone = tests[1].name
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != gone]
    (prep,), _ = make_gradable(_submit(tmp_path, nb), expected)
    ids = _ids(prep.notebook)
    order = [c.name for c in expected[0].cells]
    assert ids.index(gone) == ids.index(order[order.index(gone) - 1]) + 1
    assert "deleted test cells restored" in prep.notes[0].text


def test_edited_and_retyped_test_cells_are_noted(tmp_path, expected):
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    test.source = "pass"
    test.metadata["nbgrader"]["points"] = 1000
    (prep,), _ = make_gradable(_submit(tmp_path, nb), expected)
    texts = " ".join(n.text for n in prep.notes)
    assert "edited read-only cells restored" in texts and "cell settings reset" in texts
    fixed = next(c for c in prep.notebook.cells if c.metadata.get("nbgrader", {}).get("grade"))
    assert fixed.metadata["nbgrader"]["points"] != 1000


def test_broken_missing_and_foreign_notebooks_are_not_run(tmp_path, expected):
    (prep,), _ = make_gradable(_submit(tmp_path / "a", None, **{NB: '{"cells": ['}), expected)
    assert prep.notebook is None and prep.notes[0].problem and "JSON" in prep.notes[0].text
    (prep,), notes = make_gradable(_submit(tmp_path / "b", None, **{"notes.txt": "x"}), expected)
    assert prep.notebook is None and "was submitted" in prep.notes[0].text
    assert "notes.txt" in notes[0].text and not notes[0].problem
    foreign = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    for cell in foreign.cells:
        if "nbgrader" in cell.metadata:
            cell.metadata["nbgrader"]["grade_id"] = "other_" + cell.metadata["nbgrader"]["grade_id"]
    owners = {i: "02_other" for i in _ids(foreign) if i}
    (prep,), _ = make_gradable(_submit(tmp_path / "c", foreign), expected, owners)
    assert prep.notebook is None and "02_other" in prep.notes[0].text


def test_a_renamed_notebook_is_graded_and_extra_files_are_left_out(tmp_path, expected):
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    folder = _submit(tmp_path, nb, name="Value (1).ipynb", **{"refgrad.py": "x = 1"})
    (folder / "link.py").symlink_to(SOURCE / ".reference" / "refgrad" / "engine.py")
    (prep,), notes = make_gradable(folder, expected, released={"coursekit.py"})
    assert prep.notebook is not None and prep.used_file == "Value (1).ipynb"
    assert "refgrad.py" in notes[0].text and "link.py" not in notes[0].text


def test_text_no_file_can_hold_is_replaced(tmp_path):
    """A lone surrogate ("\\ud800" in the JSON) would make writing the grading copy fail."""
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    nb.cells[0].source += " \ud800 and \U0001f600"
    path = tmp_path / NB
    path.write_text(json.dumps(nb))  # ASCII JSON: the surrogate stays an escape
    read, note = read_notebook(path)
    assert note is None and read.cells[0].source.endswith(" ? and \U0001f600")
    nbformat.writes(read).encode("utf-8")


def test_a_damaged_notebook_structure_is_repaired(tmp_path, expected):
    data = json.loads(notebook_path(SOLUTIONS, A).read_text())
    data["cells"][0]["bogus"] = 1
    del data["metadata"]
    path = tmp_path / NB
    path.write_text(json.dumps(data))
    nb, note = read_notebook(path)
    assert nb is not None and "recovered" in note.text


# ---- notes, exit codes, options -----------------------------------------------------------


def test_notes_name_the_cell_and_the_limit():
    result = Result(
        notebooks={
            "value": NotebookResult(
                events=[
                    Event("timeout", 9, None),
                    Event("memory", 12, "value_test_add_mul"),
                ],
                graded=True,
            )
        }
    )
    history = [Event("died", 4, None, "value")]
    notes = compose_notes(result, history, Limits(cell_timeout=7), None)
    line = note_line(notes, 1, late=3 * 3600)
    assert "cell 10 was stopped after the 7 s per-cell limit" in line
    assert "cell 13 (`value_test_add_mul`) ran out of memory (limit 3 GiB)" in line
    assert "cell 5 crashed the kernel and was skipped" in line
    assert line.endswith("submitted 3 h 00 min late")
    assert all(problem for _, problem in notes["value"])


def test_exit_codes_separate_problems_from_grader_failures():
    ok = Outcome("a", A, 14, 14)
    bad = Outcome("b", A, 0, 14, problem=True)
    assert grading.GradeReport([ok], [], [], 1, 0, 1).exit_code == 0
    assert grading.GradeReport([ok, bad], [], [], 2, 0, 1).exit_code == 1
    assert grading.GradeReport([ok], ["stray file"], [], 1, 0, 1).exit_code == 1
    assert grading.GradeReport([ok, bad], [], ["db down"], 2, 0, 1).exit_code == 2

    @commands._guard
    def fails(args):
        raise GraderError("no gradebook")

    @commands._guard
    def crashes(args):
        raise RuntimeError("bug")

    @commands._guard
    def interrupted(args):
        raise KeyboardInterrupt

    assert (fails(None), crashes(None), interrupted(None)) == (2, 2, 130)


def test_grade_command_exit_codes(tmp_path, capsys):
    from autograder.__main__ import main

    assert main(["grade", "no_such_assignment", "--course", str(tmp_path)]) == 2
    assert main(["grade", "--course", str(tmp_path), "-q"]) == 1  # nothing submitted
    assert "does not exist" in capsys.readouterr().out


def test_discover_reports_what_it_will_not_grade(tmp_path):
    sub = tmp_path / "submitted"
    (sub / "alice" / A).mkdir(parents=True)
    (sub / "alice" / "01-value").mkdir()
    (sub / "alice" / "loose.ipynb").write_text("{}")
    (sub / "stray.txt").write_text("x")
    course = open_course(tmp_path)
    found, problems = discover(course, None, ["alice", "alice", "nobody"])
    assert [(s.student, s.assignment) for s in found] == [("alice", A)]
    text = "\n".join(problems)
    assert "01-value: no such assignment" in text
    assert "loose.ipynb is not in an assignment folder" in text
    assert "no submission from student 'nobody'" in text
    assert "stray.txt" not in text  # only students asked for are looked at
    _, problems = discover(course, None, None)
    assert any("stray.txt is a file" in p for p in problems)


def test_nbgrader_config_is_parsed_once_per_process():
    from autograder import course

    course._parsed_config.cache_clear()
    course.open_course()
    course.nbgrader_api()
    course.open_course(db_url="sqlite:///elsewhere.db")
    assert course._parsed_config.cache_info().misses == 1
    others = [
        p
        for p in (ROOT / "autograder").rglob("*.py")
        if p.name != "course.py" and "PyFileConfigLoader" in p.read_text()
    ]
    assert others == []


def test_limits_come_from_one_place():
    """Defaults live in Limits; the course's Execute.timeout and given values override."""
    config = {"Execute": {"timeout": 25}}
    limits = Limits.for_course(config, wall=None, memory=2 * GiB)
    assert (limits.cell_timeout, limits.wall, limits.memory) == (25, Limits().wall, 2 * GiB)
    assert Limits.for_course(None, cell_timeout=5).cell_timeout == 5


def test_limits():
    assert parse_size("3G") == parse_size("3GiB") == 3 * GiB
    assert parse_size("512M") == 512 * 1024**2 and parse_size("1000") == 1000
    assert "60 s per cell" in Limits().describe()


def test_display_without_a_terminal_prints_one_line_per_submission():
    import io

    out = io.StringIO()
    display = Display(2, out)
    display.draw([("alice / 01_value", "value", 0.5)])
    display.finished(Outcome("alice", A, 14, 14, seconds=3.2))
    display.finished(Outcome("bob", A, 0, 14, True, "no notebook", 0.1))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("[1/2] ✓ alice")
    assert lines[1].endswith("no notebook") and "✗ bob" in lines[1]


# ---- export ----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission
def test_export_writes_grades_and_cells(tmp_path):
    from nbgrader.api import Gradebook

    from autograder.grade.gradebook import cache_alembic_version

    cache_alembic_version()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url, "autograd-from-scratch") as gb:
        gb.add_assignment(A)
        gb.add_notebook("value", A)
        gb.add_grade_cell("t1", "value", A, max_score=4, cell_type="code")
        gb.add_grade_cell("t2", "value", A, max_score=3, cell_type="code")
        for student in ("alice", "Zoë", "carl"):
            gb.add_student(student)
        for student, scores in (("alice", (4, 3)), ("Zoë", (0, 3))):
            gb.add_submission(A, student)
            for cell, points in zip(("t1", "t2"), scores):
                gb.find_grade(cell, "value", A, student).auto_score = points
        gb.db.commit()
    (tmp_path / "autograded" / "Zoë" / A).mkdir(parents=True)
    (tmp_path / "autograded" / "Zoë" / A / ".autograder.json").write_text(
        json.dumps(
            {
                "problem": True,
                "note": "cell 3 was stopped",
                "review": ["imports torch", "calls os.kill"],
            }
        )
    )
    grades_csv, cells_csv, _items = commands_export(tmp_path)
    rows = list(csv.DictReader(grades_csv.open(encoding="utf-8")))
    assert list(rows[0])[:4] == ["student", "assignment", "score", "max_score"]
    by = {r["student"]: r for r in rows}
    assert (by["alice"]["score"], by["alice"]["max_score"]) == ("7", "7")
    assert (by["Zoë"]["score"], by["Zoë"]["problem"], by["Zoë"]["note"]) == (
        "3",
        "yes",
        "cell 3 was stopped",
    )
    assert (by["carl"]["score"], by["carl"]["submitted"]) == ("0", "no")
    assert list(rows[0])[-3:] == ["review", "late_penalty", "final_score"]
    assert (by["Zoë"]["review"], by["alice"]["review"], by["carl"]["review"]) == (
        "imports torch; calls os.kill",
        "",
        "",
    )
    cells = list(csv.DictReader(cells_csv.open(encoding="utf-8")))
    assert list(cells[0]) == ["student", "assignment", "notebook", "cell", "score", "max_score"]
    assert len(cells) == 4
    assert {(c["student"], c["cell"], c["score"]) for c in cells} >= {("Zoë", "t1", "0")}


def commands_export(root: Path):
    from autograder.grade.export import export

    return export(root=root)


# ---- feedback: nothing of the grader gets out ------------------------------------------------


def test_grader_source_is_recognised_and_student_code_is_not():
    from autograder.feedback.pages import quotes_grader

    engine = (SOURCE / ".reference" / "refgrad" / "engine.py").read_text()
    common = (ROOT / "autograder" / "verdicts" / "hidden" / "common.py").read_text()
    assert quotes_grader(engine) and quotes_grader(common)
    assert quotes_grader(common[len(common) // 2 :][:800])
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    for cell in solution.cells:
        assert not quotes_grader(cell.source), cell.source[:200]
    assert quotes_grader('x = 1\nload_grader("01_value").add_mul(Value)')


def test_feedback_preprocessor_hides_tests_tracebacks_and_paths():
    from nbformat.v4 import new_code_cell, new_output

    from autograder.feedback.pages import REMOVED_OUTPUT
    from autograder.preprocessors.hidegradermaterial import HideGraderMaterial

    common = ROOT / "autograder" / "verdicts" / "hidden" / "common.py"
    cell = new_code_cell(
        'check(1)\n### BEGIN HIDDEN TESTS\nload_grader("x").y()\n### END HIDDEN TESTS\nprint(2)'
    )
    cell.outputs = [
        new_output(
            "error",
            ename="KeyboardInterrupt",
            evalue="",
            traceback=[f'File "{common}", line 200', "    secret = compare(...)"],
        ),
        new_output("stream", name="stdout", text=common.read_text()[:3000]),
        new_output("stream", name="stdout", text=f"looked at {common}\n"),
    ]
    nb = nbformat.v4.new_notebook(cells=[cell, new_code_cell("# BEGIN HIDDEN TESTS\nx = 1")])
    nb, _ = HideGraderMaterial().preprocess(nb, {})
    first = nb.cells[0]
    assert "HIDDEN" not in first.source and "load_grader" not in first.source
    assert first.source.endswith("print(2)")
    assert first.outputs[0].traceback == ["KeyboardInterrupt: "]
    assert first.outputs[1].text.strip() == REMOVED_OUTPUT
    assert str(common) not in first.outputs[2].text
    assert nb.cells[1].source == ""  # an unbalanced marker hides the rest of that cell
