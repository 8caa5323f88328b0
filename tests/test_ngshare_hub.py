"""Grading on submit with ngshare on a real JupyterHub (issue 43): the Hub and ngshare, its
managed service, on 127.0.0.1 (tests/ngshare_hub.py); students are real unix users
(tests/exchange.py) running the real nbgrader with the course's exchange classes
(autograder/ngshare/exchange.py) and their own Hub API tokens; the course's formgrader service
releases with ``nbgrader release_assignment``; ``python -m autograder watch`` runs with
the token of the course's watch service, grades what arrives in ngshare and gives the
feedback back through it. The settings are the hub's (autograder/hub/ngshare.py).
Attacks go straight to ngshare's API with a student's token: what ngshare lets through,
the watcher refuses with a note, losing nothing and stopping nothing."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from exchange import StudentUser, StudentUsers, course_id, need_student_users, shared_tmp
from helpers import SOLUTIONS, ScratchCourse, course_env, mutate, notebook_path, read
from ngshare_hub import NgshareHub, start, stop

from autograder.hub import ngshare as ngshare_kind
from autograder.ngshare import service as ngshare_service
from autograder.ngshare.client import NgshareError

pytestmark = [pytest.mark.hub, pytest.mark.slow, pytest.mark.xdist_group("ngshare_hub")]

A = "01_value"
FEEDBACK_WITHIN = 180  # seconds from a student's submit to the page in their fetch_feedback
ADD_BUG = ("self.grad += 1.0 * out.grad", "self.grad = 1.0 * out.grad")


@dataclass
class World:
    hub: NgshareHub
    ada: StudentUser
    bob: StudentUser
    eve: StudentUser
    mallory: StudentUser


@pytest.fixture(scope="module")
def world():
    need_student_users()
    with shared_tmp("ns-") as folder, StudentUsers(folder / "home", None, prefix="ns-") as users:
        students = [users.make(label) for label in ("ada", "bob", "eve", "mallory")]
        names = [s.name for s in students]
        with NgshareHub(folder / "hub", course_id(), names) as hub:
            # as the course's watcher does when it starts (it is ngshare's admin): before
            # it starts here, so that the attacks can be sent first
            (course,) = hub.plan.courses
            admin = hub.client(f"watch-{course.id}")
            ngshare_service.enrol(admin, course.id, ngshare_kind.instructors(course), names)
            for student in students:
                as_student(hub, student)
            yield World(hub, *students)


def as_student(hub: NgshareHub, student: StudentUser) -> None:
    """What a student's server on the hub has: a Hub token of their own, the exchange
    classes importable from the hub's copy, the kind's nbgrader settings (and here the
    course id, for the command line)."""
    student.env = (
        f"JUPYTERHUB_API_TOKEN={hub.token(student.name)}",
        f"JUPYTERHUB_USER={student.name}",
        f"PYTHONPATH={hub.python_path}",
    )
    (course,) = hub.plan.courses
    settings = ngshare_kind.user_settings(hub.plan, [course])
    settings["CourseDirectory"] = {"course_id": course.id}
    path = str(student.home / "nbgrader_config.json")
    student.run("sh", "-c", 'cat > "$1"', "sh", path, input=json.dumps(settings))


def grader_course(path: Path, world: World) -> tuple[ScratchCourse, dict, dict]:
    """The course folder with the settings the hub writes for it (nbgrader_config_hub.py),
    and the environments of its two services: the formgrader's (releases) and the
    watcher's, each with its Hub token."""
    course = ScratchCourse(path, [A])
    (planned,) = world.hub.plan.courses
    with (path / "nbgrader_config.py").open("a") as fh:
        fh.write("\n" + ngshare_kind.course_settings(world.hub.plan, planned))
        fh.write("c.Watch.max_bytes = 2 * 1024**2\nc.Watch.interval = 2\n")
    envs = [
        course_env(
            JUPYTERHUB_API_TOKEN=world.hub.service_tokens[name],
            JUPYTER_DATA_DIR=str(path.parent / f"{name}-data"),
        )
        for name in (planned.id, f"watch-{planned.id}")
    ]
    return course, *envs


def nbgrader(course: ScratchCourse, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"nbgrader {' '.join(args)}:\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def submit(student: StudentUser, nb: nbformat.NotebookNode, *flags: str) -> float:
    student.run("nbgrader", "fetch_assignment", A)
    path = notebook_path(student.home / course_id(), A)  # c.Exchange.path_includes_course
    student.run("sh", "-c", 'cat > "$1"', "sh", str(path), input=nbformat.writes(nb))
    student.run("nbgrader", "submit", A, *flags)
    return time.monotonic()


def pages(student: StudentUser) -> tuple[list[Path], str]:
    """fetch_feedback: the pages it fetched, and what it said."""
    said = student.run("nbgrader", "fetch_feedback", A)
    return sorted((student.home / course_id() / A / "feedback").rglob("*.html")), said.stderr[
        -2000:
    ]


def pages_within(student: StudentUser, since: float, watcher: subprocess.Popen, log: Path):
    said = ""
    while time.monotonic() - since < FEEDBACK_WITHIN:
        assert watcher.poll() is None, f"watch exited:\n{log.read_text()[-3000:]}"
        found, said = pages(student)
        if found:
            return found, time.monotonic() - since
        time.sleep(3)
    raise AssertionError(
        f"no feedback in {FEEDBACK_WITHIN} s:\n{log.read_text()[-3000:]}\nfetch_feedback:\n{said}"
    )


def history(course: ScratchCourse, student: str) -> list[dict]:
    path = course.path / "watch" / "history" / student / f"{A}.json"
    return json.loads(path.read_text())["entries"] if path.is_file() else []


def refused(course: ScratchCourse) -> list[dict]:
    path = course.path / "watch" / "refused.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def files(name: str, data: bytes) -> str:
    return json.dumps([{"path": name, "content": base64.encodebytes(data).decode()}])


@contextlib.contextmanager
def watching(course: ScratchCourse, env: dict[str, str], log: Path):
    argv = [sys.executable, "-m", "autograder", "watch", "--course", str(course.path), "-j", "2"]
    proc = start(argv, course.path, env, log)
    try:
        yield proc
    finally:
        stop(proc)


def test_what_ngshare_lets_through_the_watcher_refuses_with_a_note(world, tmp_path):
    course, formgrader, watch = grader_course(tmp_path / "course", world)
    course.release(A)
    nbgrader(course, formgrader, "release_assignment", A)
    grader = world.hub.client(course_id())  # the formgrader's identity: an instructor
    grader.post(f"assignment/{course_id()}/99_unknown", files=files("x.ipynb", b"{}"))
    mallory = world.hub.client(world.mallory.name)
    big = os.urandom(3 * 1024**2)
    sent = {
        "oversized": mallory.post(f"submission/{course_id()}/{A}", files=files("a.ipynb", big)),
        "traversal": mallory.post(
            f"submission/{course_id()}/{A}", files=files("..\\..\\etc\\x.ipynb", b"{}")
        ),
        "unknown": mallory.post(
            f"submission/{course_id()}/99_unknown", files=files("x.ipynb", b"{}")
        ),
    }
    with pytest.raises(NgshareError, match="400 Illegal path"):  # ngshare's own check
        mallory.post(f"submission/{course_id()}/{A}", files=files("../x.ipynb", b"{}"))
    with pytest.raises(NgshareError, match="403"):  # another's submissions: instructors only
        mallory.get(f"submissions/{course_id()}/{A}")
    log = tmp_path / "watch.log"
    with watching(course, watch, log) as watcher:
        deadline = time.monotonic() + 120
        while len(refused(course)) < 3 and time.monotonic() < deadline:
            assert watcher.poll() is None, log.read_text()[-3000:]
            time.sleep(1)
        notes = {row["key"]: row["why"] for row in refused(course)}
        assert watcher.poll() is None
    by_time = {f"{s['timestamp']}": kind for kind, s in sent.items()}
    why = {by_time[key.rsplit("+", 1)[1]]: note for key, note in notes.items()}
    assert why["oversized"] == "it holds more than 2 MB", log.read_text()
    assert "is not a plain name" in why["traversal"]
    assert why["unknown"] == "no assignment '99_unknown' in the course"
    assert history(course, world.mallory.name) == []
    kept = grader.get(f"submissions/{course_id()}/{A}")["submissions"]  # nothing lost
    assert {s["timestamp"] for s in kept if s["student_id"] == world.mallory.name} >= {
        sent["oversized"]["timestamp"],
        sent["traversal"]["timestamp"],
    }
    assert "the cycle failed" not in log.read_text()


def test_students_submit_through_ngshare_and_fetch_the_watchers_feedback(world, tmp_path):
    course, formgrader, watch = grader_course(tmp_path / "course", world)
    course.release(A)
    # again, as a course does after a fix: ngshare drops the release and its submissions
    assert "Released to ngshare" in nbgrader(course, formgrader, "release_assignment", A, "--force")
    listed = world.ada.run("nbgrader", "list")
    assert f"{course_id()} {A}" in listed.stdout + listed.stderr
    solved = read(SOLUTIONS, A)
    log = tmp_path / "watch.log"
    with watching(course, watch, log) as watcher:
        ada_sent = submit(world.ada, solved)
        submit(world.bob, mutate(solved, *ADD_BUG))
        submit(world.eve, solved, f"--student={world.ada.name}")  # in ada's name
        (page,), seconds = pages_within(world.ada, ada_sent, watcher, log)
        print(f"ada: submit to feedback fetched in {seconds:.1f} s")
        text = page.read_text()
        assert "✓ passed" in text and "Your submissions" in text
        listed = world.ada.run("nbgrader", "list", "--cached")  # the Assignments tab's list
        assert "(feedback already fetched)" in listed.stdout + listed.stderr
        (bobs,), _ = pages_within(world.bob, time.monotonic(), watcher, log)
        assert "__add__" in bobs.read_text()
        (_eves,), _ = pages_within(world.eve, time.monotonic(), watcher, log)
        assert watcher.poll() is None
    # ngshare said who sent each: eve's work is eve's, ada's history holds only her own
    assert [e["status"] for e in history(course, world.ada.name)] == ["graded"], log.read_text()
    assert [e["key"].split("/")[1].split("+")[0] for e in history(course, world.eve.name)] == [
        world.eve.name
    ]
    (entry,) = history(course, world.ada.name)
    assert entry["review"] == "" and entry["graders_time"]  # ngshare's time, close to hers
    assert "stopped" in log.read_text() and "the cycle failed" not in log.read_text()
