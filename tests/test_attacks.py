"""Students who want points without the work: each attack is a blank notebook plus code,
graded with `python -m autograder grade` next to an honest and a blank student, in the
session's hostile class (tests/hostile.py, where the attacks are).

Asserted for every one: no hidden points (a blank notebook plus any code earns 0 unless
that code itself computes the right answers), the honest student keeps full marks, the
course's files and gradebook are changed only by the grader, and nothing is left running
or on disk. tests/test_sandbox.py attacks the operating system side (network, files,
processes, disk); this file attacks the verdicts.
"""

import sqlite3

import nbformat
import psutil
import pytest
from helpers import NOTEBOOKS, ROOT, failing_cells, notebook_path
from hostile import ATTACKS, HOSTILE, QUIZ, SET, SET_ATTACKS, A, before_first_check, fill

pytestmark = pytest.mark.slow


@pytest.fixture
def graded(hostile_class):
    """The attackers, graded in the session's hostile class (tests/hostile.py) next to an
    honest and a blank student (and the broken class of tests/test_grading_robust.py)."""
    return {**hostile_class, "records": hostile_class["by_assignment"]}


@HOSTILE
def test_every_submission_was_graded(graded):
    assert graded["proc"].returncode in (0, 1), graded["proc"].stdout[-3000:]
    students = {(p.parent.name, p.name) for p in (graded["root"] / "submitted").glob("*/*")}
    assert set(graded["records"]) == students


@HOSTILE
def test_no_attack_earns_a_point(graded):
    scores = {key: rec["score"] for key, rec in graded["records"].items()}
    assert scores[("blank", A)] == 0
    for attack in [*ATTACKS, "forged_verdicts"]:
        assert scores[(attack, A)] == 0, (attack, graded["records"][(attack, A)]["note"])
    assert scores[("quiz_file", QUIZ)] == 0
    assert scores[("blank", SET)] == 0
    for attack in SET_ATTACKS:
        assert scores[(attack, SET)] == 0, (attack, graded["records"][(attack, SET)]["note"])


@HOSTILE
def test_answers_that_are_not_the_probes_are_flagged(graded):
    for attack in ("forged_empty", "forged_shapes"):
        review = "; ".join(graded["records"][(attack, A)]["review"] or [])
        assert "did not come from the grading code" in review, (attack, review)
    assert not graded["records"][("honest", A)]["review"]


@HOSTILE
def test_the_honest_student_keeps_full_marks(graded):
    for assignment in (A, QUIZ, SET):
        rec = graded["records"][("honest", assignment)]
        assert rec["score"] == rec["max_score"] > 0, rec["note"]
        assert rec["isolation"] == "bubblewrap"


@HOSTILE
def test_only_the_grader_changed_the_course(graded):
    assert graded["after"] == graded["before"]
    db = sqlite3.connect(graded["root"] / "gradebook.db")
    try:
        assert (
            db.execute("select count(*) from sqlite_master where type = 'trigger'").fetchone()[0]
            == 0
        )
    finally:
        db.close()


@HOSTILE
def test_nothing_is_left_running_or_on_disk(graded):
    mine = (str(graded["root"]), f"autograder-{graded['pid']}-")  # its folders, its sandboxes
    leftovers = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(m in cmdline for m in mine):
            leftovers.append(cmdline[:200])
    assert leftovers == []
    assert graded["tmp"] == []  # its own temporary folder: work folders, sandboxes, Dask


def test_the_set_attack_would_work_unsandboxed():
    """Run in this process, with the course's files in reach, the attack earns the
    exercise: so its 0 under grading is the sandbox's doing, not the attack's failure."""
    blank = nbformat.read(notebook_path(NOTEBOOKS, SET), as_version=4)
    for attack, code in SET_ATTACKS.items():
        nb = before_first_check(blank, fill(code, {"ROOT": str(ROOT)}))
        assert "grads_test_softmax" not in failing_cells(nb, SET), attack
