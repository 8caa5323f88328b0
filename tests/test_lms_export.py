"""export --to canvas|moodle (issue 26): the exact files Canvas's and Moodle's gradebook
imports read, from a gradebook made with nbgrader's API (no grading), students named by
roster.csv. A student the LMS file cannot name is listed and left out, never guessed."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    VENV_BIN,
    ScratchCourse,
    autograder_cli,
    notebook_path,
)
from traitlets.config import Config

from autograder.errors import GraderError
from autograder.grade.export import GRADES_HEADER, export
from autograder.grade.lms import write_lms
from autograder.roster import Roster, Student, write_roster

pytestmark = [
    pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning"),  # nbgrader's add_submission
    pytest.mark.xdist_group("lms_export"),  # one gradebook for the module's tests
]

JANE = 'Smith, "JJ" Jane'
ROSTER = [
    Student("ada", "Lovelace, Ada", "ada@uni.edu", "1000", "S1000", "ada", "Sec 1"),
    Student("jane", JANE, "jane@uni.edu", "1001", "", "", "Sec 1"),
    Student("zoe", "Saldaña, Zoë", "", "1003", "S1003", "zoe", "Sec 2"),
    Student("nocanvas", "No Canvas", "n@uni.edu", "", "S2", "", ""),
    Student("absent", "Never Submitted", "a@uni.edu", "1009", "S9", "absent", "Sec 2"),
]
# (student, assignment): {grade cell: score}; zoe handed in no 02_backward
SCORES = {
    ("ada", "01_value"): {"t1": 4, "t2": 3.5},
    ("ada", "02_backward"): {"b1": 5},
    ("jane", "01_value"): {"t1": 1, "t2": 0},
    ("jane", "02_backward"): {"b1": 2.25},
    ("zoe", "01_value"): {"t1": 4, "t2": 6},
    ("nocanvas", "01_value"): {"t1": 2, "t2": 2},
    ("mallory", "01_value"): {"t1": 4, "t2": 6},
}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    from nbgrader.api import Gradebook

    from autograder.grade.gradebook import cache_alembic_version

    root = tmp_path_factory.mktemp("lms")
    cache_alembic_version()
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "autograd-from-scratch") as gb:
        gb.add_assignment("01_value")
        gb.add_notebook("value", "01_value")
        gb.add_grade_cell("t1", "value", "01_value", max_score=4, cell_type="code")
        gb.add_grade_cell("t2", "value", "01_value", max_score=6, cell_type="code")
        gb.add_assignment("02_backward")
        gb.add_notebook("backward", "02_backward")
        gb.add_grade_cell("b1", "backward", "02_backward", max_score=5, cell_type="code")
        for student in sorted({s for s, _ in SCORES}):
            gb.add_student(student)
        for (student, assignment), cells in SCORES.items():
            gb.add_submission(assignment, student)
            nb = "value" if assignment == "01_value" else "backward"
            for cell, score in cells.items():
                gb.find_grade(cell, nb, assignment, student).auto_score = score
        gb.db.commit()
    write_roster(root, Roster(ROSTER))
    return root


def _rows(path: Path, encoding: str = "utf-8") -> list[list[str]]:
    with path.open(encoding=encoding, newline="") as fh:
        return list(csv.reader(fh))


def test_canvas_csv_is_canvas_gradebook_import_format(course):
    written = export(root=course, to="canvas")
    (path,) = written
    assert path == course / "exports" / "canvas.csv"
    assert path.read_bytes().startswith(b"\xef\xbb\xbfStudent,ID,SIS User ID,")  # Canvas's BOM
    assert _rows(path, "utf-8-sig") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_value", "02_backward"],
        ["    Points Possible", "", "", "", "", "10", "5"],
        ["Lovelace, Ada", "1000", "S1000", "ada", "Sec 1", "7.5", "5"],
        [JANE, "1001", "", "", "Sec 1", "1", "2.25"],
        ["Saldaña, Zoë", "1003", "S1003", "zoe", "Sec 2", "10", "0"],
    ]
    assert '"Smith, ""JJ"" Jane",1001' in path.read_text(encoding="utf-8-sig")
    assert written.problems == [
        "mallory: not in roster.csv; left out of canvas.csv (roster import the Canvas "
        "gradebook export)",
        "nocanvas: no Canvas user id in roster.csv; left out of canvas.csv (roster import "
        "the Canvas gradebook export)",
    ]
    assert written.notes == [
        "1 student(s) of roster.csv have nothing in the gradebook and are not in canvas.csv: absent"
    ]


def test_moodle_csv_has_only_identifying_columns_every_row_fills(course):
    written = export(root=course, to="moodle", out=course / "moodle-out")
    (path,) = written
    # Jane has no ID number and Zoë no email: ID number identifies (3 students have
    # one), Jane is left out, and the email column is not written (Moodle would give
    # an empty cell's row to the student of the row before)
    assert _rows(path) == [
        ["Full name", "ID number", "Assignment: 01_value (Real)", "Assignment: 02_backward (Real)"],
        ["Lovelace, Ada", "S1000", "7.5", "5"],
        ["No Canvas", "S2", "4", "0"],
        ["Saldaña, Zoë", "S1003", "10", "0"],
    ]
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert written.problems == [
        "mallory: not in roster.csv; left out of moodle.csv (roster import the Moodle "
        "grades export)",
        "jane: no ID number in roster.csv, which identifies the students in moodle.csv; "
        "left out of it",
    ]


def _grades(*rows, final=False):
    late = ("late_penalty", "final_score")  # grades.csv's last two columns
    header = GRADES_HEADER if final else [h for h in GRADES_HEADER if h not in late]
    out = []
    for student, assignment, score, most, *rest in rows:
        row = dict.fromkeys(header, "")
        row.update(student=student, assignment=assignment, score=score, max_score=most)
        if final:
            row.update(late_penalty=rest[0], final_score=rest[1])
        out.append([row[h] for h in header])
    return header, out


def _course(root: Path, **lms) -> SimpleNamespace:
    return SimpleNamespace(
        root=root,
        config=Config({"LMS": lms}),
        assignments=lambda: ["01_value", "02_backward"],
    )


def test_the_lms_files_take_the_final_score_after_the_late_policy(tmp_path):
    write_roster(tmp_path, Roster(ROSTER[:1]))
    header, rows = _grades(("ada", "01_value", "10", "10", "2", "8"), final=True)
    path, problems, _ = write_lms("canvas", _course(tmp_path), tmp_path, header, rows)
    assert _rows(path, "utf-8-sig")[2][5] == "8" and problems == []
    header, rows = _grades(("ada", "01_value", "10", "10"))
    path, _, _ = write_lms("moodle", _course(tmp_path), tmp_path, header, rows)
    assert _rows(path) == [
        ["Full name", "ID number", "Email address", "Assignment: 01_value (Real)"],
        ["Lovelace, Ada", "S1000", "ada@uni.edu", "10"],
    ]


def test_assignments_map_onto_existing_lms_columns(tmp_path):
    write_roster(tmp_path, Roster(ROSTER[:1]))
    header, rows = _grades(("ada", "01_value", "7", "10"), ("ada", "02_backward", "5", "5"))
    course = _course(tmp_path, canvas_columns={"01_value": "Lesson 1: Value (4401)"})
    path, _, _ = write_lms("canvas", course, tmp_path, header, rows)
    assert _rows(path, "utf-8-sig")[:2] == [
        [
            *["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
            "Lesson 1: Value (4401)",
            "02_backward",
        ],
        ["    Points Possible", "", "", "", "", "", "5"],  # Canvas keeps its own points
    ]
    course = _course(tmp_path, moodle_columns={"02_backward": "Quiz: Backward"})
    path, _, _ = write_lms("moodle", course, tmp_path, header, rows)
    assert _rows(path)[0][-2:] == ["Assignment: 01_value (Real)", "Quiz: Backward (Real)"]
    for bad, message in [
        ({"03_x": "A"}, "c.LMS.canvas_columns: no assignment '03_x'"),
        ({"01_value": ""}, "c.LMS.canvas_columns['01_value']: expected a column name"),
        ({"01_value": "A", "02_backward": "A"}, "two assignments go to the column 'A'"),
    ]:
        with pytest.raises(GraderError, match=message.replace("[", r"\[").replace("]", r"\]")):
            write_lms("canvas", _course(tmp_path, canvas_columns=bad), tmp_path, header, rows)


def test_export_command_formats_and_folders(course, tmp_path):
    done = autograder_cli(
        "export", "--course", str(course), "--to", "canvas", "--out", str(tmp_path)
    )
    assert done.returncode == 1, done.stderr
    assert f"wrote {tmp_path / 'canvas.csv'}" in done.stdout
    assert "problem: mallory: not in roster.csv" in done.stdout
    assert "note: 1 student(s) of roster.csv" in done.stdout
    grades, cells, items = export(root=course, out=tmp_path / "csv")  # --to csv, the default
    assert [p.name for p in (grades, cells, items)] == ["grades.csv", "cells.csv", "items.csv"]
    assert grades.parent == tmp_path / "csv"
    folder = autograder_cli("export", "--course", str(course), "--to", str(tmp_path))
    assert folder.returncode == 2
    assert folder.stderr.strip().splitlines() == [
        f"error: --to {str(tmp_path)!r}: the format is csv, canvas, moodle or lti; the "
        "output folder is --out DIR"
    ]


@pytest.mark.slow
def test_three_commands_from_a_canvas_download_to_the_canvas_gradebook(tmp_path):
    """No roster: collect adds the Canvas users it meets (two of them with one login part),
    grade grades, export --to canvas names them by Canvas user id."""
    import os
    import zipfile

    root = ScratchCourse(tmp_path / "course", ["01_value"]).path
    solution, blank = notebook_path(SOLUTIONS, "01_value"), notebook_path(NOTEBOOKS, "01_value")
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as zf:
        zf.writestr(f"smithjane_1001_71_{solution.name}", solution.read_bytes())
        zf.writestr(f"smithjane_1002_72_{solution.name}", blank.read_bytes())
    env = dict(os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]))

    def run(*args):
        return autograder_cli(*args, cwd=root, env=env, timeout=900)

    collected = run("collect", "01_value", str(download), "--pattern", "canvas")
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "added to roster.csv: smithjane-1001 (Canvas user 1001" in collected.stdout
    graded = run("grade", "--cell-timeout", "30")
    assert graded.returncode in (0, 1), graded.stdout[-3000:] + graded.stderr[-3000:]
    exported = run("export", "--to", "canvas")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    rows = _rows(root / "exports" / "canvas.csv", "utf-8-sig")
    most = rows[1][5]
    assert rows[0] == [*["Student", "ID", "SIS User ID", "SIS Login ID", "Section"], "01_value"]
    assert rows[2:] == [
        ["smithjane-1001", "1001", "", "", "", most],
        ["smithjane-1002", "1002", "", "", "", "0"],
    ]
    assert float(most) > 0
