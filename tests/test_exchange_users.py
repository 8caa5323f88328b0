"""The exchange harness (tests/exchange.py) with plain nbgrader: student unix users fetch
and submit lesson 01_value through a real exchange, root collects and releases feedback,
and the students fetch it. No grader runs here."""

from __future__ import annotations

import grp
import pwd
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from exchange import (
    Exchange,
    StudentUser,
    StudentUsers,
    course_id,
    need_student_users,
    shared_exchange,  # noqa: F401 (a fixture student_users uses)
    shared_tmp,
    shared_tmp_path,  # noqa: F401 (a fixture student_users uses)
    student_users,  # noqa: F401 (a fixture)
)
from helpers import ScratchCourse, notebook_path
from nbformat.v4 import new_markdown_cell
from nbgrader.utils import notebook_hash, parse_utc

A = "01_value"
# One worker for the module: its tests share one exchange and one hand-in (the fixture).
pytestmark = pytest.mark.xdist_group("exchange_users")


@dataclass
class HandedIn:
    course: ScratchCourse
    exchange: Exchange
    ada: StudentUser
    bob: StudentUser
    ada_inbound: Path
    bob_first: Path
    bob_second: Path
    notes: dict[str, str]  # student name: the note in their last submission
    collect_log: str


def with_note(folder: Path, note: str) -> nbformat.NotebookNode:
    nb = nbformat.read(notebook_path(folder.parent, folder.name), as_version=4)
    nb.cells.append(new_markdown_cell(note))
    return nb


@pytest.fixture(scope="module")
def handed_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HandedIn]:
    """01_value released into a real exchange; student users ada and bob fetched it, ada
    submitted once, bob twice (only the second time with a note); root collected."""
    need_student_users()
    course = ScratchCourse(tmp_path_factory.mktemp("course"), [A])
    with shared_tmp() as base:
        exchange = Exchange(base / "exchange", course_id())
        with StudentUsers(base / "home", exchange) as users:
            exchange.release(course, A)
            ada, bob = users.make("ada"), users.make("bob")
            notes = {
                ada.name: f"ada {secrets.token_hex(4)}",
                bob.name: f"bob {secrets.token_hex(4)}",
            }
            ada_folder, bob_folder = ada.fetch(A), bob.fetch(A)
            ada_inbound = ada.submit(A, with_note(ada_folder, notes[ada.name]))
            bob_first = bob.submit(A)
            bob_second = bob.submit(A, with_note(bob_folder, notes[bob.name]))
            log = course.nbgrader("collect", A, *exchange.flags).stderr
            yield HandedIn(
                course, exchange, ada, bob, ada_inbound, bob_first, bob_second, notes, log
            )


@pytest.mark.slow
def test_collect_takes_each_students_latest_submission(handed_in: HandedIn):
    h = handed_in
    assert h.exchange.root.stat().st_mode & 0o7777 == 0o1777
    assert h.exchange.inbound() == sorted([h.ada_inbound, h.bob_first, h.bob_second])
    for student, folder in [(h.ada, h.ada_inbound), (h.bob, h.bob_first), (h.bob, h.bob_second)]:
        assert folder.name.startswith(f"{student.name}+{A}+")
        for path in [folder, *folder.rglob("*")]:
            assert path.stat().st_uid == student.uid, path
    assert "cheating" not in h.collect_log  # collect's check that the owner is the student

    submitted = h.course.path / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted([h.ada.name, h.bob.name])
    first, second = ((f / "timestamp.txt").read_text() for f in (h.bob_first, h.bob_second))
    assert parse_utc(first) < parse_utc(second)
    assert (submitted / h.bob.name / A / "timestamp.txt").read_text() == second
    for student in (h.ada, h.bob):
        nb = nbformat.read(notebook_path(submitted / student.name, A), as_version=4)
        assert nb.cells[-1].source == h.notes[student.name]


@pytest.mark.slow
def test_feedback_released_by_root_reaches_only_its_student(handed_in: HandedIn):
    h = handed_in
    collected = h.course.path / "submitted" / h.ada.name / A
    notebook = notebook_path(collected.parent, A).stem
    feedback = h.course.path / "feedback" / h.ada.name / A
    feedback.mkdir(parents=True)
    page = f"<html><body><p>Well done, {h.ada.name} ({secrets.token_hex(4)})</p></body></html>"
    (feedback / f"{notebook}.html").write_text(page)
    for name in ("timestamp.txt", "submission_secret.txt"):
        shutil.copy(collected / name, feedback / name)
    h.course.nbgrader("release_feedback", A, *h.exchange.flags)

    secret = (collected / "submission_secret.txt").read_text()
    released = h.exchange.course_path / "feedback"
    name = notebook_hash(secret=secret, notebook_id=notebook)
    assert [p.name for p in released.iterdir()] == [f"{name}.html"]

    (got,) = h.ada.fetch_feedback(A)
    timestamp = (collected / "timestamp.txt").read_text()
    assert got == h.ada.home / A / "feedback" / timestamp / f"{notebook}.html"
    assert got.read_text() == page
    assert got.stat().st_uid == h.ada.uid
    assert h.bob.fetch_feedback(A) == []


@pytest.mark.slow
def test_a_student_cannot_list_inbound_nor_read_another_students_home(
    handed_in: HandedIn,
    student_users,  # noqa: F811 (the fixture imported above)
):
    h = handed_in
    eve = student_users("eve", h.exchange)
    inbound = h.exchange.course_path / "inbound"
    (cache,) = (h.ada.home / ".local/share/jupyter/nbgrader_cache" / h.exchange.course_id).iterdir()
    fetched = notebook_path(h.ada.home, A)
    targets = [cache / "submission_secret.txt", fetched]
    assert all(path.is_file() for path in targets)  # root sees them

    def denied(user: StudentUser, *argv: str) -> bool:
        proc = user.run(*argv, check=False)
        return proc.returncode != 0 and "Permission denied" in proc.stderr

    assert denied(eve, "ls", str(inbound)) and denied(h.ada, "ls", str(inbound))
    for path in targets:
        assert denied(eve, "cat", str(path)), path
        assert h.ada.run("cat", str(path)).stdout, path
    # nbgrader hides a submission by its name, not its mode: whoever knows the name reads it.
    known = eve.run("cat", str(notebook_path(inbound, h.ada_inbound.name)))
    assert h.notes[h.ada.name] in known.stdout


@pytest.mark.slow
def test_student_users_run_as_themselves_and_are_removed_afterwards():
    need_student_users()
    with shared_tmp() as base:
        exchange = Exchange(base / "exchange", course_id())
        with pytest.raises(RuntimeError), StudentUsers(base / "home", exchange) as users:
            zoe = users.make("zoe")
            out = zoe.run("sh", "-c", 'id -un; id -u; echo "$HOME"; pwd; touch mine').stdout
            assert out.split() == [zoe.name, str(zoe.uid), str(zoe.home), str(zoe.home)]
            assert (zoe.home / "mine").stat().st_uid == zoe.uid
            assert zoe.home.stat().st_mode & 0o777 == 0o700
            raise RuntimeError("a failing test")
        with pytest.raises(KeyError):
            pwd.getpwnam(zoe.name)
        with pytest.raises(KeyError):
            grp.getgrnam(zoe.name)
        assert not zoe.home.exists()
