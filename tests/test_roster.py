"""The roster (issue 26): roster.csv by stable id, imported from Canvas's and Moodle's own
export files, and collect filing uploads under those ids: by the Canvas user id in a
Canvas file name, by name or Moodle's grading worksheet for Moodle. Two students with
one name stay two students."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers import SOLUTIONS, autograder_cli, notebook_path

from autograder import roster as ro
from autograder.errors import GraderError
from autograder.intake import collect as col

A = "01_value"
NB = notebook_path(SOLUTIONS, A).name
HONEST = notebook_path(SOLUTIONS, A).read_bytes()
OTHER = HONEST.replace(b'"cells"', b'"other": 1, "cells"', 1)
BOM = "\ufeff"

# A Canvas gradebook export as Canvas writes it (Grades > Export > Export Entire Gradebook):
# a byte order mark, the fixed leading columns, assignments as "Title (id)", the read-only
# totals, the "Manual Posting" row, the "Points Possible" row, names as Canvas's sortable
# names (a name starting with = quoted as ="..."), and Student View's Test Student last.
CANVAS = (
    BOM + "Student,ID,SIS User ID,SIS Login ID,Section,01_value (4401),Current Points,"
    "Final Points,Current Score,Unposted Current Score,Final Score,Unposted Final Score\n"
    ",,,,,Manual Posting,,,,,,\n"
    "    Points Possible,,,,,28.00,(read only),(read only),(read only),(read only),"
    "(read only),(read only)\n"
    '"Lovelace, Ada",1000,S1000,ada,Autograd 101,,0.00,0.00,,,0.00,0.00\n'
    '"Smith, Jane",1001,,,Autograd 101,,0.00,0.00,,,0.00,0.00\n'
    '"Smith, Jane",1002,,,Autograd 101,,0.00,0.00,,,0.00,0.00\n'
    '"Saldaña, Zoë",1003,S1003,,Autograd 101,,0.00,0.00,,,0.00,0.00\n'
    '"=""=cmd, Eve""",1004,,,Autograd 101,,0.00,0.00,,,0.00,0.00\n'
    '"Student, Test",1999,,,Autograd 101,,0.00,0.00,,,0.00,0.00\n'
)

# A Moodle grades export (Grades > Export > Plain text file), the default profile fields.
MOODLE = (
    "First name,Last name,ID number,Institution,Department,Email address,"
    '"Assignment: 01_value (Real)",Last downloaded from this course\n'
    "Ada,Lovelace,S1000,Uni,CS,ada@uni.edu,-,1767225600\n"
    "Jane,Smith,,Uni,CS,jane.smith@uni.edu,-,1767225600\n"
    "Jane,Smith,,Uni,Maths,jsmith2@uni.edu,-,1767225600\n"
    "Zoë,Saldaña,,Uni,CS,,-,1767225600\n"
)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _ids(root: Path) -> dict[str, ro.Student]:
    return {s.id: s for s in ro.read_roster(root)}


# ---- roster.csv --------------------------------------------------------------------------------


def test_roster_round_trips_every_value_even_formula_like_ones(tmp_path):
    students = [
        ro.Student("ada", "Lovelace, Ada", "ada@uni.edu", "1000", "S1", "ada", "A"),
        ro.Student("-x", "=2+5", "@me", "", "+1", "'quoted", "Zoë"),
        ro.Student("'y", "'=not a formula", "", "1001", "", "", ""),
    ]
    path = ro.write_roster(tmp_path, ro.Roster(students))
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == ",".join(ro.HEADER)
    assert text.splitlines()[2:] == [
        "'-x,'=2+5,'@me,,+1,''quoted,Zoë",
        "''y,''=not a formula,,1001,,,",
    ]
    assert ro.read_roster(tmp_path).students == students


def test_no_roster_is_an_empty_one(tmp_path):
    roster = ro.read_roster(tmp_path)
    assert len(roster) == 0 and list(roster) == [] and roster.get("ada") is None


def test_roster_lookups(tmp_path):
    roster = ro.Roster(
        [
            ro.Student("smith-jane-1001", "Smith, Jane", lms_id="1001"),
            ro.Student("smith-jane-1002", "Smith,  JANE", lms_id="1002"),
            ro.Student("ada", "Lovelace, Ada", "Ada@Uni.edu", "1000"),
        ]
    )
    assert roster.by_lms_id("1002").id == "smith-jane-1002"
    assert roster.by_lms_id("") is None and roster.by_lms_id("7") is None
    assert [s.id for s in roster.named("smith, jane")] == ["smith-jane-1001", "smith-jane-1002"]
    assert [s.id for s in roster.by_email("ada@uni.edu")] == ["ada"]
    assert roster.get("ada").name == "Lovelace, Ada" and "ada" in roster and len(roster) == 3


@pytest.mark.parametrize(
    "text, problem",
    [
        ("name,email\nAda,a@b\n", "line 1: no header (id,...)"),
        ("ada,Ada Lovelace\n", "line 1: no header (id,...)"),
        ("id,name,notes\nada,Ada,x\n", "line 1: unknown column 'notes'"),
        ("id,name\nada,Ada\nbob,Bob\nada,Ada again\n", "line 4: duplicate id 'ada'"),
        ("id,name\nada,Ada\nADA,Ada\n", "line 3: duplicate id 'ADA' (the same as 'ada'"),
        ("id,lms_id\nada,1\nbob,1\n", "line 3: duplicate lms_id 1 (ada's)"),
        ("id\nada\nbob/x\n", "line 3: id 'bob/x' cannot be a folder name"),
        ("id\n.hidden\n", "line 2: id '.hidden' cannot be a folder name"),
        ("id\na*b\n", "line 2: id 'a*b' cannot be a folder name"),
        ("id,name\nada\n", "line 2: 1 fields, the header has 2"),
        ("id,name\n,Nobody\n", "line 2: id '' cannot be a folder name"),
    ],
)
def test_a_bad_roster_is_one_line_naming_file_line_and_problem(tmp_path, text, problem):
    _write(tmp_path / "roster.csv", text)
    with pytest.raises(ro.RosterError) as err:
        ro.read_roster(tmp_path)
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'roster.csv'}: ") and problem in message
    assert "\n" not in message and isinstance(err.value, GraderError)


# ---- roster import -----------------------------------------------------------------------------


def test_a_canvas_gradebook_export_becomes_the_roster(tmp_path):
    report = ro.import_roster(tmp_path, _write(tmp_path / "canvas.csv", CANVAS))
    assert report.source == "canvas" and report.problems == []
    students = _ids(tmp_path)
    assert list(students) == ["ada", "smith-jane-1001", "smith-jane-1002", "S1003", "cmd-eve"]
    assert students["ada"] == ro.Student(
        "ada", "Lovelace, Ada", "", "1000", "S1000", "ada", "Autograd 101"
    )
    assert students["S1003"].name == "Saldaña, Zoë"
    assert students["cmd-eve"].name == "=cmd, Eve"  # Canvas's ="..." taken off
    assert all(s.lms_id != "1999" for s in students.values())  # not the Test Student


def test_a_semicolon_canvas_export_is_read_too(tmp_path):
    text = CANVAS.replace(",", ";").replace('"Lovelace; Ada"', '"Lovelace, Ada"')
    ro.import_roster(tmp_path, _write(tmp_path / "canvas.csv", text))
    assert _ids(tmp_path)["ada"].name == "Lovelace, Ada"


def test_importing_again_keeps_ids_and_updates_what_changed(tmp_path):
    canvas = _write(tmp_path / "canvas.csv", CANVAS)
    ro.import_roster(tmp_path, canvas)
    before = _ids(tmp_path)
    again = ro.import_roster(tmp_path, canvas)
    assert (again.added, again.updated, again.unchanged, again.path) == ([], [], 5, None)
    # Ada's login changes in Canvas and a new student arrives: Ada keeps her id
    changed = CANVAS.replace("S1000,ada,", "S1000,alovelace,") + (
        '"Hopper, Grace",1005,S1005,grace,Autograd 101,,,,,,,\n'
    )
    report = ro.import_roster(tmp_path, _write(canvas, changed))
    after = _ids(tmp_path)
    assert after["ada"].login == "alovelace" and "alovelace" not in after
    assert [s.id for s in report.added] == ["grace"]
    assert [(s.id, what) for s, what in report.updated] == [("ada", ["login ada -> alovelace"])]
    assert set(before) < set(after)  # nothing dropped


def test_a_canvas_user_added_by_collect_is_completed_by_the_import(tmp_path):
    ro.write_roster(tmp_path, ro.Roster([ro.Student("lovelaceada", lms_id="1000")]))
    ro.import_roster(tmp_path, _write(tmp_path / "canvas.csv", CANVAS))
    students = _ids(tmp_path)
    assert students["lovelaceada"].login == "ada" and "ada" not in students
    assert students["lovelaceada"].name == "Lovelace, Ada"


def test_a_new_id_never_takes_one_in_the_roster(tmp_path):
    ro.write_roster(tmp_path, ro.Roster([ro.Student("Ada", "Byron, Ada", lms_id="7")]))
    ro.import_roster(tmp_path, _write(tmp_path / "canvas.csv", CANVAS))
    students = _ids(tmp_path)
    assert students["Ada"].name == "Byron, Ada" and students["ada-1000"].lms_id == "1000"


def test_rows_that_cannot_be_taken_are_listed_and_the_rest_imported(tmp_path):
    bad = CANVAS + '"Nobody, Noone",abc,,,X,,,,,,,\n' + '"Lovelace, Ada",1000,S1000,ada,B,,,,,,,\n'
    report = ro.import_roster(tmp_path, _write(tmp_path / "canvas.csv", bad))
    assert report.exit_code == 1 and len(report.problems) == 2
    assert "line 10: Canvas ID 'abc' is not a number" in report.problems[0]
    assert "line 11: the same student as line 4" in report.problems[1]
    assert len(_ids(tmp_path)) == 5


def test_a_row_matching_two_roster_students_is_not_guessed(tmp_path):
    ro.write_roster(
        tmp_path,
        ro.Roster([ro.Student("a", lms_id="1000"), ro.Student("b", login="ada", sis_id="S1000")]),
    )
    report = ro.import_roster(tmp_path, _write(tmp_path / "canvas.csv", CANVAS))
    assert any("matches a (by Canvas ID), b (by SIS User ID)" in p for p in report.problems)
    assert _ids(tmp_path)["a"].name == ""  # left alone


def test_a_moodle_grades_export_becomes_the_roster(tmp_path):
    report = ro.import_roster(tmp_path, _write(tmp_path / "moodle.csv", MOODLE))
    assert report.source == "moodle" and report.problems == []
    students = _ids(tmp_path)
    assert list(students) == ["S1000", "jane.smith", "jsmith2", "zoe-saldana"]
    assert students["jane.smith"] == ro.Student("jane.smith", "Jane Smith", "jane.smith@uni.edu")
    # the same export again: matched by ID number, email, or (Zoë has neither) name
    again = ro.import_roster(tmp_path, tmp_path / "moodle.csv")
    assert (again.added, again.updated, again.unchanged) == ([], [], 4)


def test_moodle_students_whose_ids_would_clash_are_numbered(tmp_path):
    text = MOODLE.replace("jsmith2@uni.edu", "jane.smith@other.edu")
    ro.import_roster(tmp_path, _write(tmp_path / "moodle.csv", text))
    students = _ids(tmp_path)
    assert students["jane.smith-1"].email == "jane.smith@uni.edu"
    assert students["jane.smith-2"].email == "jane.smith@other.edu"


def test_an_unknown_file_or_the_wrong_lms_is_one_line(tmp_path):
    other = _write(tmp_path / "x.csv", "name,score\nAda,3\n")
    with pytest.raises(ro.RosterError, match="neither a Canvas gradebook export"):
        ro.import_roster(tmp_path, other)
    with pytest.raises(ro.RosterError, match="not a Moodle export"):
        ro.import_roster(tmp_path, _write(tmp_path / "c.csv", CANVAS), "moodle")
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("Student,ID\nZoë,1\n".encode("latin-1"))
    with pytest.raises(ro.RosterError, match="not UTF-8"):
        ro.import_roster(tmp_path, latin1)
    assert not (tmp_path / "roster.csv").exists()


def test_roster_commands(tmp_path):
    course = str(tmp_path / "course")
    shown = autograder_cli("roster", "--course", course)
    assert shown.returncode == 0 and "roster import FILE" in shown.stdout
    canvas = _write(tmp_path / "canvas.csv", CANVAS + '"Bad, Row",x,,,,,,,,,,\n')
    done = autograder_cli("roster", "import", str(canvas), "--course", course)
    assert done.returncode == 1, done.stderr
    assert "added ada (Lovelace, Ada; Canvas id 1000)" in done.stdout
    assert "problem: canvas.csv line 10: Canvas ID 'x' is not a number" in done.stdout
    shown = autograder_cli("roster", "show", "--course", course)
    assert shown.returncode == 0 and "roster.csv: 5 students" in shown.stdout
    assert "smith-jane-1001, smith-jane-1002" in shown.stdout
    (tmp_path / "course" / "roster.csv").write_text("id\nada\nada\n")
    broken = autograder_cli("roster", "--course", course)
    assert broken.returncode == 2 and "line 3: duplicate id 'ada'" in broken.stderr


# ---- collect by stable id ----------------------------------------------------------------------


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _submitted(course: Path) -> dict[str, bytes]:
    base = course / "submitted"
    if not base.is_dir():
        return {}
    return {d.name: (d / A / NB).read_bytes() for d in sorted(base.iterdir())}


def _notes(report) -> str:
    return "\n".join(f"{name}: {why}" for name, why in report.not_placed)


def test_canvas_uploads_are_filed_by_canvas_user_id(tmp_path):
    course = tmp_path / "course"
    ro.import_roster(course, _write(tmp_path / "canvas.csv", CANVAS))
    download = _zip(
        tmp_path / "download.zip",
        {
            f"lovelaceada_1000_55_{NB}": HONEST,  # Canvas's login part is not the id
            f"smithjane_1001_56_{NB}": HONEST,  # two Janes, one login part
            f"smithjane_late_1002_57_{NB}": OTHER,
        },
    )
    report = col.collect(A, [str(download)], pattern="auto", root=course)
    assert _submitted(course) == {
        "ada": HONEST,
        "smith-jane-1001": HONEST,
        "smith-jane-1002": OTHER,
    }
    assert report.exit_code == 0 and report.roster_added == [], _notes(report)


def test_a_canvas_download_without_a_roster_makes_one(tmp_path, capsys):
    course = tmp_path / "course"
    download = _zip(
        tmp_path / "download.zip",
        {f"bob_6_66_{NB}": OTHER, f"bob_5_55_{NB}": HONEST, f"carl_3_33_{NB}": HONEST},
    )
    report = col.collect(A, [str(download)], pattern="canvas", root=course)
    assert _submitted(course) == {"bob-5": HONEST, "bob-6": OTHER, "carl": HONEST}
    assert [(s.id, s.lms_id) for s in ro.read_roster(course)] == [
        ("carl", "3"),
        ("bob-5", "5"),
        ("bob-6", "6"),
    ]
    col.print_collect_report(report)
    assert "added to roster.csv: carl (Canvas user 3)" in capsys.readouterr().out
    # the next download: same ids, and a newcomer with a known login part gets its own
    later = _zip(tmp_path / "later.zip", {f"carl_3_34_{NB}": OTHER, f"carl_9_90_{NB}": OTHER})
    report = col.collect(A, [str(later)], pattern="canvas", root=course, force=True)
    assert _submitted(course)["carl"] == OTHER and _submitted(course)["carl-9"] == OTHER
    assert report.roster_added == [
        "carl-9 (Canvas user 9; its login part 'carl' is shared or taken)"
    ]
    assert ro.read_roster(course).get("carl").lms_id == "3"


def _moodle_roster(course: Path, tmp_path: Path) -> None:
    ro.import_roster(course, _write(tmp_path / "moodle.csv", MOODLE))


def _moodle_download(tmp_path: Path) -> Path:
    return _zip(
        tmp_path / "moodle.zip",
        {
            f"Ada Lovelace_11_assignsubmission_file_/{NB}": HONEST,
            f"Jane Smith_12_assignsubmission_file_/{NB}": HONEST,
            f"Jane Smith_13_assignsubmission_file_/{NB}": OTHER,
        },
    )


def test_moodle_uploads_go_to_the_one_student_of_that_name(tmp_path):
    course = tmp_path / "course"
    _moodle_roster(course, tmp_path)
    report = col.collect(A, [str(_moodle_download(tmp_path))], root=course)
    assert _submitted(course) == {"S1000": HONEST}
    notes = _notes(report)
    assert report.exit_code == 1 and notes.count("2 students in roster.csv are named") == 2
    assert "jane.smith, jsmith2): give collect --worksheet" in notes


WORKSHEET = (
    BOM + "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    '"Last modified (submission)","Last modified (grade)",Feedback comments\n'
    "Participant 11,Ada Lovelace,ada@uni.edu,Submitted for grading,,28.00,Yes,-,-,\n"
    "Participant 12,Jane Smith,jsmith2@uni.edu,Submitted for grading,,28.00,Yes,-,-,\n"
    "Participant 13,Jane Smith,jane.smith@uni.edu,Submitted for grading,,28.00,Yes,-,-,\n"
)


def test_moodles_grading_worksheet_tells_two_students_of_one_name_apart(tmp_path):
    course = tmp_path / "course"
    _moodle_roster(course, tmp_path)
    sheet = _write(tmp_path / "worksheet.csv", WORKSHEET)
    report = col.collect(A, [str(_moodle_download(tmp_path))], root=course, worksheet=str(sheet))
    assert _submitted(course) == {"S1000": HONEST, "jane.smith": OTHER, "jsmith2": HONEST}
    assert report.exit_code == 0, _notes(report)


def test_a_worksheet_of_another_assignment_is_not_trusted(tmp_path):
    course = tmp_path / "course"
    _moodle_roster(course, tmp_path)
    wrong = WORKSHEET.replace("Participant 11,Ada Lovelace", "Participant 11,Zoë Saldaña")
    sheet = _write(tmp_path / "worksheet.csv", wrong)
    report = col.collect(A, [str(_moodle_download(tmp_path))], root=course, worksheet=str(sheet))
    assert "S1000" not in _submitted(course)
    assert "the worksheet's participant 11 is 'Zoë Saldaña', not 'Ada Lovelace'" in _notes(report)


def test_moodle_uploads_without_a_roster_keep_their_names(tmp_path):
    course = tmp_path / "course"
    download = _zip(
        tmp_path / "moodle.zip", {f"Ada Lovelace_11_assignsubmission_file_/{NB}": HONEST}
    )
    report = col.collect(A, [str(download)], root=course)
    assert _submitted(course) == {"Ada Lovelace": HONEST} and report.exit_code == 0
    assert not (course / "roster.csv").exists()
    with pytest.raises(GraderError, match=r"--worksheet needs the class's roster\.csv"):
        col.collect(
            A, [str(download)], root=course, worksheet=str(_write(tmp_path / "w.csv", WORKSHEET))
        )


def test_a_moodle_student_not_in_the_roster_is_refused_with_the_reason(tmp_path):
    course = tmp_path / "course"
    _moodle_roster(course, tmp_path)
    download = _zip(tmp_path / "m.zip", {f"Alan Turing_14_assignsubmission_file_/{NB}": HONEST})
    report = col.collect(A, [str(download)], root=course)
    assert _submitted(course) == {}
    assert "no student named 'Alan Turing' in roster.csv" in _notes(report)


# ---- the demo's Canvas class -------------------------------------------------------------------


def test_the_demo_class_comes_from_canvas_by_its_roster(tmp_path):
    """The demo's Canvas gradebook export, imported as the roster, files each of its
    Canvas-named uploads (lovelaceada_1000_...) under the student's SIS Login ID (ada)."""
    from autograder import demo

    downloads = tmp_path / "downloads"
    gradebook = demo.canvas_gradebook(["01_value", "02_backward"], downloads)
    assert gradebook.read_bytes().startswith(b"\xef\xbb\xbfStudent,ID,SIS User ID,SIS Login ID,")
    course = tmp_path / "course"
    report = ro.import_roster(course, gradebook)
    assert report.problems == [] and report.source == "canvas"
    students = _ids(course)
    assert sorted(students) == sorted(name for name, _, _ in demo.STUDENTS)
    assert students["ada"] == ro.Student(
        "ada", "Lovelace, Ada", "", "1000", "20261000", "ada", demo.SECTION
    )
    (zipped,) = demo.build(["01_value"], downloads).values()
    with zipfile.ZipFile(zipped) as zf:
        assert f"lovelaceada_1000_5000_{NB}" in zf.namelist()
        assert f"liskovbarbara_late_1007_5007_{NB}" in zf.namelist()
    filed = col.collect(A, [str(zipped)], pattern="canvas", root=course)
    assert filed.roster_added == [] and filed.not_placed == [], _notes(filed)
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(students)
