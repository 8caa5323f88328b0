"""Grading on submit with ngshare on the course's hub (issue 43): ``python -m autograder
hub`` with a course whose exchange is "ngshare" (tests/ngshare_hub.py): ngshare as the
hub's managed service, the course's watch service grading as its grader account. Students
are real unix users (tests/exchange.py) running the real nbgrader with the environment
and settings the hub gives their servers (their own token, the exchange classes of
autograder/ngshare/exchange.py); an instructor's token releases with ``nbgrader
release_assignment`` as the grader, in the course folder. Attacks go straight to
ngshare's API with a student's token: what ngshare lets through, the watcher refuses with
a note, losing nothing and stopping nothing. A second ngshare course on the same hub is
out of reach of the first's people and services, whose tokens its instructors can read
(the last test)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from exchange import StudentUser, StudentUsers, course_id, need_student_users, shared_tmp
from helpers import SOLUTIONS, ScratchCourse, mutate, notebook_path, read
from ngshare_hub import NgshareHub, Planned, kill_processes_of, read_json_lines

from autograder.ngshare.client import Client, NgshareError

pytestmark = [pytest.mark.hub, pytest.mark.slow, pytest.mark.xdist_group("ngshare_hub")]

A = "01_value"
FEEDBACK_WITHIN = 180  # seconds from a student's submit to the page in their fetch_feedback
ADD_BUG = ("self.grad += 1.0 * out.grad", "self.grad = 1.0 * out.grad")
# the course's watcher, for these tests: a small size bound, a short pause between looks
OVERRIDES = "\nc.Watch.max_bytes = 2 * 1024**2\nc.Watch.interval = 2\n"


@dataclass
class World:
    hub: NgshareHub
    course: ScratchCourse
    grader: StudentUser
    ada: StudentUser
    bob: StudentUser
    eve: StudentUser
    mallory: StudentUser
    cleo: StudentUser  # works in her server, as the Assignments tab does
    other: Planned  # the second course (no grading there)


def other_id() -> str:
    return f"{course_id()}-b"


@pytest.fixture(scope="module")
def world():
    need_student_users()
    with shared_tmp("ns-") as folder, StudentUsers(folder / "home", None, prefix="ns-") as users:
        grader, teacher = users.make("grader"), users.make("teacher")
        students = [users.make(label) for label in ("ada", "bob", "eve", "mallory", "cleo")]
        other_grader, other_teacher, dan = (users.make(x) for x in ("graderb", "teacherb", "dan"))
        planned = []
        for cid, owner, students_of in (
            (course_id(), grader, students),
            (other_id(), other_grader, [dan]),
        ):
            course = ScratchCourse(folder / "courses" / cid, [A])
            course.release(A)  # generate_assignment: notebooks/, the gradebook
            with (course.path / "nbgrader_config.py").open("a") as fh:
                fh.write(OVERRIDES)
            subprocess.run(["chown", "-R", f"{owner.name}:", str(course.path)], check=True)
            teaches = teacher if owner is grader else other_teacher
            names = tuple(s.name for s in students_of)
            planned.append((course, Planned(cid, owner.name, teaches.name, names)))
        (course, first), (_, other) = planned
        try:
            with NgshareHub(folder, [first, other]) as hub:
                for student in students:
                    student.env = hub.student_env(student.name)
                yield World(hub, course, grader, *students, other)
        finally:
            kill_processes_of([u.uid for u in users.made])


def nb(student: StudentUser, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """nbgrader as the student; the course id as the Assignments tab passes it."""
    course = f"--CourseDirectory.course_id={course_id()}"
    return student.run("nbgrader", *args, course, check=check)


def release(world: World, *flags: str, check: bool = True) -> str:
    """The instructor's release: nbgrader in the course folder, as its grader account,
    with the instructor's token (the grader account cannot log in: it has none)."""
    world.grader.env = (f"JUPYTERHUB_API_TOKEN={world.hub.token(world.hub.instructor)}",)
    argv = [sys.executable, "-m", "nbgrader", "release_assignment", A, *flags]
    inside = 'cd "$1" && shift && exec "$@"'
    proc = world.grader.run("sh", "-c", inside, "sh", str(world.course.path), *argv, check=check)
    return proc.stdout + proc.stderr


def submit(student: StudentUser, nb_: nbformat.NotebookNode, *flags: str) -> float:
    if not (student.home / course_id() / A).is_dir():
        nb(student, "fetch_assignment", A)
    path = notebook_path(student.home / course_id(), A)  # c.Exchange.path_includes_course
    student.run("sh", "-c", 'cat > "$1"', "sh", str(path), input=nbformat.writes(nb_))
    nb(student, "submit", A, *flags)
    return time.monotonic()


def pages(student: StudentUser) -> tuple[list[Path], str]:
    """fetch_feedback: the pages it fetched, and what it said."""
    said = nb(student, "fetch_feedback", A)
    found = (student.home / course_id() / A / "feedback").rglob("*.html")
    return sorted(found), said.stderr[-2000:]


def pages_within(world: World, student: StudentUser, since: float) -> tuple[list[Path], float]:
    said = ""
    while time.monotonic() - since < FEEDBACK_WITHIN:
        assert world.hub.proc.poll() is None, world.hub.tail()
        found, said = pages(student)
        if found:
            return found, time.monotonic() - since
        time.sleep(3)
    log = world.hub.watch_log()[-3000:]
    raise AssertionError(f"no feedback in {FEEDBACK_WITHIN} s:\n{log}\nfetch_feedback:\n{said}")


def history(world: World, student: str) -> list[dict]:
    path = world.course.path / "watch" / "history" / student / f"{A}.json"
    return json.loads(path.read_text())["entries"] if path.is_file() else []


def refused(world: World) -> dict[str, str]:
    rows = read_json_lines(world.course.path / "watch" / "refused.jsonl")
    return {row["key"]: row["why"] for row in rows}


def files(name: str, data: bytes) -> str:
    return json.dumps([{"path": name, "content": base64.encodebytes(data).decode()}])


def test_what_ngshare_lets_through_the_watcher_refuses_with_a_note(world):
    assert "Released to ngshare" in release(world)
    teacher = world.hub.client(world.hub.instructor)
    teacher.post(f"assignment/{course_id()}/99_unknown", files=files("x.ipynb", b"{}"))
    mallory = world.hub.client(world.mallory.name)
    big = os.urandom(3 * 1024**2)
    where = f"submission/{course_id()}"
    sent = {
        "oversized": mallory.post(f"{where}/{A}", files=files("a.ipynb", big)),
        "traversal": mallory.post(f"{where}/{A}", files=files("..\\..\\etc\\x.ipynb", b"{}")),
        "unknown": mallory.post(f"{where}/99_unknown", files=files("x.ipynb", b"{}")),
    }
    with pytest.raises(NgshareError, match="400 Illegal path"):  # ngshare's own check
        mallory.post(f"{where}/{A}", files=files("../x.ipynb", b"{}"))
    with pytest.raises(NgshareError, match="403"):  # another's submissions: instructors only
        mallory.get(f"submissions/{course_id()}/{A}")
    deadline = time.monotonic() + 120
    while len(refused(world)) < 3 and time.monotonic() < deadline:
        assert world.hub.proc.poll() is None, world.hub.tail()
        time.sleep(1)
    by_time = {s["timestamp"]: kind for kind, s in sent.items()}
    why = {by_time[key.rsplit("+", 1)[1]]: note for key, note in refused(world).items()}
    assert why.get("oversized") == "it holds more than 2 MB", world.hub.watch_log()[-3000:]
    assert "is not a plain name" in why["traversal"]
    assert why["unknown"] == "no assignment '99_unknown' in the course"
    assert history(world, world.mallory.name) == []
    kept = teacher.get(f"submissions/{course_id()}/{A}")["submissions"]  # nothing lost
    assert {s["timestamp"] for s in kept if s["student_id"] == world.mallory.name} >= {
        sent["oversized"]["timestamp"],
        sent["traversal"]["timestamp"],
    }
    assert "the cycle failed" not in world.hub.watch_log()


def test_students_submit_through_ngshare_and_fetch_the_watchers_feedback(world):
    # again, as a course does after a fix: ngshare would drop the release and the
    # submissions it holds (mallory's, the test before), so --force is refused
    teacher = world.hub.client(world.hub.instructor)
    held = len(teacher.get(f"submissions/{course_id()}/{A}")["submissions"])
    said = release(world, "--force", check=False)
    assert f"--force would delete the {held} submissions of {A} in ngshare" in said, said
    assert len(teacher.get(f"submissions/{course_id()}/{A}")["submissions"]) == held
    listed = nb(world.ada, "list")
    assert f"{course_id()} {A}" in listed.stdout + listed.stderr
    solved = read(SOLUTIONS, A)
    ada_sent = submit(world.ada, solved)
    submit(world.bob, mutate(solved, *ADD_BUG))
    # eve in ada's name: nbgrader's JupyterHubAuthPlugin stops it in eve's own server (her
    # token cannot read ada's groups); eve owns that server, so she turns the plugin off:
    # ngshare still files it as eve's, from her token
    nb(world.eve, "fetch_assignment", A)
    forged = nb(world.eve, "submit", A, f"--student={world.ada.name}", check=False)
    assert forged.returncode != 0 and "404 for api_path: /users/" in forged.stderr
    no_plugin = "--Authenticator.plugin_class=nbgrader.auth.NoAuthPlugin"
    submit(world.eve, solved, f"--student={world.ada.name}", no_plugin)
    (page,), seconds = pages_within(world, world.ada, ada_sent)
    print(f"ada: submit to feedback fetched in {seconds:.1f} s")
    text = page.read_text()
    assert "✓ passed" in text and "Your submissions" in text
    listed = nb(world.ada, "list", "--cached")  # the Assignments tab's list of submissions
    assert "(feedback already fetched)" in listed.stdout + listed.stderr
    (bobs,), _ = pages_within(world, world.bob, time.monotonic())
    assert "__add__" in bobs.read_text()
    pages_within(world, world.eve, time.monotonic())
    # ngshare said who sent each: eve's work is eve's, ada's history holds only her own
    (entry,) = history(world, world.ada.name)
    assert entry["status"] == "graded" and entry["graders_time"], world.hub.watch_log()
    assert entry["review"] == ""  # ngshare's time, close to her own claim
    assert [e["key"].split("/")[1].split("+")[0] for e in history(world, world.eve.name)] == [
        world.eve.name
    ]
    assert "the cycle failed" not in world.hub.watch_log()


def call(url: str, token: str, method: str = "GET", body: dict | None = None) -> dict:
    """A JSON request to the hub or a user's server, with ``token``."""
    data = json.dumps(body).encode() if body is not None else (b"" if method != "GET" else None)
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"token {token}")
    with urllib.request.urlopen(request, timeout=300) as response:
        text = response.read()
    return json.loads(text) if text.strip() else {}


def statuses(listed: dict) -> list[str]:
    """The statuses of 01_value in the Assignments tab's list (the course has others)."""
    return [e["status"] for e in listed["value"] if e["assignment_id"] == A]


def tab_feedback(listed: dict) -> bool:
    """Whether the Assignments tab's list shows a submission whose feedback is fetched."""
    assert listed.get("success"), listed
    return any(
        sub.get("has_local_feedback")
        for entry in listed["value"]
        if entry["status"] == "submitted"
        for sub in entry["submissions"]
    )


def test_the_assignments_tab_in_a_students_server_fetches_submits_and_shows_feedback(world):
    """What the tab's buttons call (nbgrader's assignment_list server extension), in cleo's
    own server started by the hub: the exchange classes run there, as the tab runs them."""
    hub, cleo = world.hub, world.cleo
    token = hub.token(cleo.name)
    call(f"{hub.url}/hub/api/users/{cleo.name}/server", token, "POST")
    try:
        deadline = time.monotonic() + 180
        while (
            not call(f"{hub.url}/hub/api/users/{cleo.name}", token)["servers"]
            .get("", {})
            .get("ready")
        ):
            assert time.monotonic() < deadline, hub.tail()
            time.sleep(1)
        base = f"{hub.url}/user/{cleo.name}"
        query = f"course_id={course_id()}&assignment_id={A}"
        released = call(f"{base}/assignments?course_id={course_id()}", token)
        assert statuses(released) == ["released"], released
        fetched = call(f"{base}/assignments/fetch?{query}", token, "POST")
        assert statuses(fetched) == ["fetched"], fetched
        name = notebook_path(SOLUTIONS, A).name
        solved = {"type": "notebook", "format": "json", "content": read(SOLUTIONS, A)}
        call(f"{base}/api/contents/{course_id()}/{A}/{name}", token, "PUT", solved)
        sent = time.monotonic()
        submitted = call(f"{base}/assignments/submit?{query}", token, "POST")
        assert "submitted" in statuses(submitted), submitted
        while not tab_feedback(call(f"{base}/assignments/fetch_feedback?{query}", token, "POST")):
            assert time.monotonic() - sent < FEEDBACK_WITHIN, world.hub.watch_log()[-3000:]
            time.sleep(3)
        print(f"cleo: Submit to feedback in the tab in {time.monotonic() - sent:.1f} s")
        (page,) = (cleo.home / course_id() / A / "feedback").rglob("*.html")
        assert "✓ passed" in page.read_text()
    finally:
        call(f"{hub.url}/hub/api/users/{cleo.name}/server", token, "DELETE")


def service_token(grader: StudentUser, marker: bytes) -> str:
    """The Hub token of the grader account's service whose command line holds ``marker``,
    read as its instructors can: from the process's environment, as the grader account
    (a terminal in the course's formgrader runs as it)."""
    pids = [
        entry.name
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and _owner(entry) == grader.uid
        and marker in _read_bytes(entry / "cmdline")
    ]
    assert pids, f"no process of {grader.name} with {marker!r}"
    environ = grader.run("cat", f"/proc/{pids[0]}/environ").stdout.split("\0")
    (token,) = [v.split("=", 1)[1] for v in environ if v.startswith("JUPYTERHUB_API_TOKEN=")]
    return token


def _owner(path: Path) -> int:
    try:
        return path.stat().st_uid
    except OSError:
        return -1


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_one_courses_people_and_services_have_no_rights_in_anothers(world):
    """Course A's watch and formgrader tokens (its instructors can read them) and A's
    people are refused in course B: B's submissions, feedback, releases, assignments.
    ngshare's only admin, ngshare itself, keeps its token where A's grader cannot read it."""
    hub, other = world.hub, world.other
    b_teacher, dan = hub.client(other.instructor), hub.client(other.students[0])
    b_teacher.post(f"assignment/{other.id}/{A}", files=files(f"{A}.ipynb", b"{}"))
    sent = dan.post(f"submission/{other.id}/{A}", files=files(f"{A}.ipynb", b"{}"))
    listed = b_teacher.get(f"submissions/{other.id}/{A}")["submissions"]
    assert [s["student_id"] for s in listed] == [other.students[0]]  # B's own see it
    grader = world.grader
    for marker in (b"watch\0--course", b"jupyterhub-singleuser"):
        a_service = Client(hub.ngshare_url, service_token(grader, marker))
        a_service.get(f"students/{course_id()}")  # an instructor of its own course
        refused = {
            "submissions": lambda c=a_service: c.get(f"submissions/{other.id}/{A}"),
            "a submission": lambda c=a_service: c.get(
                f"submission/{other.id}/{A}/{other.students[0]}", timestamp=sent["timestamp"]
            ),
            "feedback": lambda c=a_service: c.post(
                f"feedback/{other.id}/{A}/{other.students[0]}",
                timestamp=sent["timestamp"],
                files=files("x.html", b"<p>forged</p>"),
            ),
            "a release": lambda c=a_service: c.post(
                f"assignment/{other.id}/99_forged", files=files("x.ipynb", b"{}")
            ),
            "a course": lambda c=a_service: c.post("course/forged-course"),
            "an instructor": lambda c=a_service: c.post(
                f"instructor/{other.id}/{world.ada.name}", first_name="", last_name="", email=""
            ),
        }
        for what, call in refused.items():
            try:
                call()
            except NgshareError as exc:
                assert ": 403 Permission denied" in str(exc), (marker, what, str(exc))
            else:
                pytest.fail(f"a token of course A's {marker!r} got {what} in course B")
        assert a_service.get("courses")["courses"] == [course_id()]  # no admin: its own only
    for person in (hub.instructor, world.ada.name):
        with pytest.raises(NgshareError, match=r": 403 Permission denied"):
            hub.client(person).get(f"assignments/{other.id}")
    assert b_teacher.get(f"assignments/{other.id}")["assignments"] == [A]  # nothing added
    feedback = dan.get(f"feedback/{other.id}/{A}/{other.students[0]}", timestamp=sent["timestamp"])
    assert feedback["files"] == []  # nothing forged reached dan
    ngshare_pids = [
        e.name
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and b"autograder.ngshare.service" in _read_bytes(e / "cmdline")
    ]
    assert ngshare_pids
    for pid in ngshare_pids:  # the admin's token: root's process, closed to the grader
        said = grader.run("cat", f"/proc/{pid}/environ", check=False)
        assert said.returncode != 0 and "Permission denied" in said.stderr, said.stdout[:200]


def test_a_students_shell_finds_no_door_to_ngshare_the_hub_or_its_services(world):
    """The other course's student tries every socket of the hub, ngshare, the services and
    the users' processes with tests/hub_probe.py (what each speaks: HTTP, Dask, ZeroMQ):
    none serves without a token; ngshare's port is among them."""
    import psutil
    from test_hub import PROBE, listening_inodes, processes_of

    hub = world.hub
    assert hub.proc is not None
    people = [world.grader, world.ada, world.bob, world.eve, world.mallory, world.cleo]
    tree = psutil.Process(hub.proc.pid).children(recursive=True)
    pids = {hub.proc.pid, *(p.pid for p in tree), *processes_of({u.uid for u in people})}
    sockets = listening_inodes(pids)
    api = urllib.parse.urlsplit(hub.ngshare_url).path  # ngshare's API, as a student calls it
    paths = ["--path", f"{api}courses", "--path", f"{api}assignments/{course_id()}"]
    said = world.cleo.run("python", "-I", str(PROBE), *paths, *map(str, sockets)).stdout
    tried = [json.loads(line) for line in said.splitlines()]
    print(f"{len(tried)} sockets tried:", *(json.dumps(t) for t in tried), sep="\n")
    assert [t for t in tried if t["served"]] == [], tried
    ngshare = urllib.parse.urlsplit(hub.ngshare_url).port
    assert any(t["address"].endswith(f":{ngshare}") for t in tried), (ngshare, tried)
