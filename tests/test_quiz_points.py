"""A quiz question's points are written once, in ``POINTS`` of its questions.py
(autograder/content/quizpoints.py): ``sync`` writes them into the quiz notebook (the test
cell's nbgrader points, the heading, the totals line) and ``problems`` names whatever
disagrees. Changing one question's points in a copy of the course is one edit: after
``sync``, the notebook, nbgrader's gradebook and the grade all follow."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from helpers import (
    SOLUTIONS,
    SOURCE,
    ScratchCourse,
    autograder_cli,
    grade_id,
    notebook_path,
    read,
)

from autograder.content import quizpoints

ENGINE, MLP = "04_checkpoint_engine", "06_checkpoint_mlp"
NOTEBOOK = f"source/{ENGINE}/checkpoint_engine.ipynb"
QUESTIONS = f"source/{ENGINE}/questions.py"


def copy_quiz(tmp_path, assignment=ENGINE):
    """source/<assignment> alone, in a source/ folder of its own."""
    source = tmp_path / "source"
    shutil.copytree(SOURCE / assignment, source / assignment, symlinks=True)
    return source


def set_points(source, question: str, new: str, assignment=ENGINE) -> None:
    """Change one entry of POINTS in questions.py, as an author would."""
    path = source / assignment / "questions.py"
    text = path.read_text()
    old = f'"{question}": {quizpoints.points(assignment)[question]},'
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, f'"{question}": {new},' if new else ""))


def edit_notebook(source, change, assignment=ENGINE) -> None:
    path = notebook_path(source, assignment)
    nb = json.loads(path.read_text())
    change(nb["cells"])
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def cell(cells, gid):
    (found,) = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id") == gid]
    return found


def shown(nb, q):
    """(nbgrader points of q's test cell, q's heading, the notebook's first cell)."""
    (test,) = [c for c in nb.cells if grade_id(c) == f"engine_quiz_test_{q}"]
    (heading,) = [c.source for c in nb.cells if c.source.startswith(f"### Question {q[1:]} ")]
    return test.metadata.nbgrader.points, heading, nb.cells[0].source


def test_the_course_s_quizzes_agree_and_sync_changes_nothing():
    for assignment in (ENGINE, MLP):
        before = notebook_path(SOURCE, assignment).read_bytes()
        assert quizpoints.problems(assignment) == []
        assert quizpoints.sync(assignment) is False
        assert notebook_path(SOURCE, assignment).read_bytes() == before
    assert quizpoints.problems("01_value") == [] and quizpoints.sync("01_value") is False


@pytest.mark.slow  # starts real kernels
def test_changing_one_question_s_points_is_one_edit(tmp_path):
    """q2: 2 points to 3, in a copy of the course: before sync, problems name the test cell,
    the heading and the totals line; after it, all three say 3, and nbgrader, then grading,
    give the question 3 points. The hidden module needs no edit."""
    course = ScratchCourse(tmp_path / "course", [ENGINE])
    source = course.path / "source"
    points = quizpoints.points(ENGINE)
    total = sum(points.values())
    set_points(source, "q2", "3")  # the one edit

    found = quizpoints.problems(ENGINE, source)
    assert len(found) == 3, found
    assert found[0].startswith(f"{NOTEBOOK}, cell engine_quiz_test_q2: nbgrader points 2, ")
    assert f"but POINTS in {QUESTIONS} gives q2 3 points" in found[0]
    assert found[1].startswith(f"{NOTEBOOK}, the heading of q2 (before cell engine_quiz_test_q2)")
    assert f"says '{len(points)} questions, {total} points'" in found[2]
    assert all(f"sync-points {ENGINE}" in line for line in found)

    assert quizpoints.sync(ENGINE, source) is True
    assert quizpoints.problems(ENGINE, source) == []
    assert quizpoints.sync(ENGINE, source) is False  # once is enough
    nb = read(source, ENGINE)
    n, heading, intro = shown(nb, "q2")
    assert n == 3
    assert heading == "### Question 2 · predict a number (3 points)"
    assert f"**{len(points)} questions, {total + 1} points.**" in intro
    assert [shown(nb, q)[0] for q in points if q != "q2"] == [
        n for q, n in points.items() if q != "q2"
    ]

    # the grader: the hidden module reads the same table, and nbgrader scores out of it
    assert _in_course(course.path, f"print(quiz.points({ENGINE!r})['q2'])") == "3"
    course.release(ENGINE)
    most = course.max_scores(ENGINE)
    assert most["engine_quiz_test_q2"] == 3 and sum(most.values()) == total + 1


@pytest.mark.slow
def test_a_question_s_new_points_are_what_grading_gives(tmp_path):
    """Graded for real (nbgrader autograde) after one edit of POINTS: the worked solution
    gets the new points for that question, and the new total."""
    course = ScratchCourse(tmp_path / "course", [ENGINE])
    source = course.path / "source"
    total = sum(quizpoints.points(ENGINE).values())
    set_points(source, "q13", "5")
    assert quizpoints.sync(ENGINE, source) is True
    course.submit("ada", ENGINE, read(SOLUTIONS, ENGINE))
    scores = course.autograde(ENGINE)["ada"]
    assert scores["engine_quiz_test_q13"] == 5
    assert sum(scores.values()) == total + 3


def test_problems_name_the_notebook_the_cell_and_the_file_to_edit(tmp_path):
    source = copy_quiz(tmp_path)
    edit_notebook(
        source,
        lambda cells: cell(cells, "engine_quiz_test_q5")["metadata"]["nbgrader"].update(points=4),
    )
    (line,) = quizpoints.problems(ENGINE, source)
    assert line == (
        f"{NOTEBOOK}, cell engine_quiz_test_q5: nbgrader points 4, but POINTS in "
        f"{QUESTIONS} gives q5 1 point: run `python -m autograder sync-points {ENGINE}` "
        "(or generate)"
    )
    assert quizpoints.sync(ENGINE, source) is True
    assert quizpoints.problems(ENGINE, source) == []


def test_what_sync_cannot_mend_is_named(tmp_path):
    """A question without points (or with points that are not a whole number > 0), an
    entry for no question, a test cell or heading that is missing: problems name each,
    and sync leaves the rest of the notebook right (the totals line alone, since the
    total is not known)."""
    source = copy_quiz(tmp_path)
    set_points(source, "q7", "")  # q7 dropped from POINTS
    set_points(source, "q8", "1.5")
    set_points(source, "q9", '1, "q99": 1')
    set_points(source, "q2", "3")

    def damage(cells):
        cells.remove(cell(cells, "engine_quiz_test_q3"))
        (heading,) = [c for c in cells if "".join(c["source"]).startswith("### Question 4 ")]
        heading["source"] = ["### Question 4 · give an order"]

    edit_notebook(source, damage)
    before = read(source, ENGINE).cells[0].source
    assert quizpoints.sync(ENGINE, source) is True
    nb = read(source, ENGINE)
    assert shown(nb, "q2")[:2] == (3, "### Question 2 · predict a number (3 points)")
    assert nb.cells[0].source == before
    found = quizpoints.problems(ENGINE, source)
    assert found == [
        f"{QUESTIONS}: q7 has no points: add 'q7' to POINTS",
        f"{QUESTIONS}: POINTS['q8'] = 1.5: points are a whole number > 0",
        f"{QUESTIONS}: POINTS names 'q99', which is not a question: remove it",
        f"{NOTEBOOK}: no test cell for q3 (a graded cell whose grade_id ends in _test_q3): "
        "add it, with the question's check",
        f"{NOTEBOOK}: no heading for q4 ('### Question 4 · ... (N points)' before cell "
        "engine_quiz_test_q4): add it",
    ]


def test_a_questions_file_without_points_is_one_problem(tmp_path):
    source = copy_quiz(tmp_path)
    path = source / ENGINE / "questions.py"
    text = path.read_text()
    start = text.index("POINTS = {")
    path.write_text(text[:start] + text[text.index("}  # fmt: skip", start) + 14 :])
    (line,) = quizpoints.problems(ENGINE, source)
    assert line.startswith(f"{QUESTIONS}: no POINTS table: give each question its points")
    assert quizpoints.sync(ENGINE, source) is False


def test_sync_points_command(tmp_path):
    course = ScratchCourse(tmp_path / "course", [ENGINE])
    set_points(course.path / "source", "q1", "2")
    proc = autograder_cli("sync-points", cwd=course.path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [f"{ENGINE}: points written (from questions.py)"]
    assert shown(read(course.path / "source", ENGINE), "q1")[0] == 2
    proc = autograder_cli("sync-points", ENGINE, "01_value", cwd=course.path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{ENGINE}: up to date (from questions.py)",
        "problem: 01_value: not a quiz (no questions.py)",
    ]


def _in_course(root, code: str) -> str:
    """Run ``code`` with the copied course's hidden quiz module (``quiz``) imported."""
    proc = subprocess.run(
        [sys.executable, "-c", f"from autograder.verdicts.hidden import quiz\n{code}"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()
