"""``python -m autograder watch`` (issue 25): grading on submit, as a service.

Real grading in scratch courses: submissions dropped into the inbox (folders named as
nbgrader's exchange names them), and through the real exchange by student unix users of
their own calling ``nbgrader submit`` and ``fetch_feedback`` (tests/exchange.py) while
the watcher runs as the instructor. Each test is one of the issue's promises: feedback
soon after a submission, the early levels, the score policy, both of two submissions in
one second recorded, bad files noted without stopping anything, a restart or a kill -9
losing nothing and grading nothing twice, and a forged submission refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from exchange import shared_exchange, shared_tmp_path, student_users  # noqa: F401
from helpers import (
    ROOT,
    SOURCE,
    ScratchCourse,
    autograder_cli,
    course_env,
    mutate,
    notebook_path,
    read,
)

from autograder.watch import inbound
from autograder.watch.history import Entry, History
from autograder.watch.service import Watcher
from autograder.watch.settings import Watch, WatchError

A = "01_value"
NOTEBOOK = notebook_path(SOURCE, A).name
ADD_BUG = ("self.grad += 1.0 * out.grad", "self.grad = 1.0 * out.grad")  # costs add_mul


def solution() -> nbformat.NotebookNode:
    return read(SOURCE, A)


def buggy() -> nbformat.NotebookNode:
    return mutate(solution(), *ADD_BUG)


def course_at(path: Path) -> ScratchCourse:
    course = ScratchCourse(path, [A])
    course.release(A)
    return course


def stamp(when: datetime) -> str:
    return when.strftime(inbound.STAMP_FORMAT)


def drop(
    course: ScratchCourse,
    student: str,
    nb: nbformat.NotebookNode | str | bytes,
    when: datetime | None = None,
    assignment: str = A,
) -> Path:
    """A submission in the course's inbox, settled (its files a minute old)."""
    when = when or datetime.now(UTC)
    folder = course.path / "inbox" / f"{student}+{assignment}+{stamp(when)}"
    folder.mkdir(parents=True)
    path = folder / NOTEBOOK
    if isinstance(nb, bytes):
        path.write_bytes(nb)
    elif isinstance(nb, str):
        path.write_text(nb)
    else:
        nbformat.write(nb, path)
    old = time.time() - 60
    for p in (*folder.iterdir(), folder):
        os.utime(p, (old, old))
    return folder


def watcher(course: ScratchCourse, **settings) -> Watcher:
    return Watcher(course.path, jobs=2, settings=Watch(**settings), stream=_Log())


class _Log:
    """The watcher's log, kept for the test to read."""

    def __init__(self):
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines += [line for line in text.splitlines() if line.strip()]
        return len(text)

    def flush(self) -> None:
        pass

    def __str__(self) -> str:
        return "\n".join(self.lines)


def until_idle(w: Watcher, cycles: int = 4) -> list:
    reports = []
    for _ in range(cycles):
        reports.append(w.cycle())
        if not w.pending:
            break
    return reports


def history(course: ScratchCourse, student: str) -> list[dict]:
    path = course.path / "watch" / "history" / student / f"{A}.json"
    return json.loads(path.read_text())["entries"]


def page(course: ScratchCourse, student: str) -> str:
    return (course.path / "feedback" / student / A / f"{Path(NOTEBOOK).stem}.html").read_text()


# ---- fast: what is believed of an arrival -------------------------------------------------


def test_an_arrival_is_checked_before_it_is_believed(tmp_path):
    def arrival(name: str) -> inbound.Arrival:
        folder = tmp_path / name
        folder.mkdir()
        (folder / NOTEBOOK).write_text("{}")
        (folder / inbound.SECRET).write_text("s")
        (found,) = [a for a in inbound.scan(tmp_path, "exchange") if a.path == folder]
        return found

    me = __import__("pwd").getpwuid(os.getuid()).pw_name
    ok = arrival(f"{me}+{A}+2026-11-26 10:00:00.000000 UTC+abc")
    assert inbound.problem(ok, [A], 10**6, check_owner=True) == ""
    assert ok.claimed == datetime(2026, 11, 26, 10, 0, tzinfo=UTC)  # kept, not believed
    assert ok.submitted == ok.seen and ok.seen > ok.claimed
    forged = arrival(f"ada+{A}+2026-11-26 10:00:01.000000 UTC+abc")
    assert "claims to be ada's but belongs to" in inbound.problem(forged, [A], 10**6, True)
    assert inbound.problem(forged, [A], 10**6, check_owner=False) == ""
    assert "no assignment" in inbound.problem(ok, ["02_backward"], 10**6, True)
    assert "more than" in inbound.problem(ok, [A], 1, True)
    people = {"ada", "grace"}  # c.Watch.students: the course's people, and nobody else
    assert inbound.problem(forged, [A], 10**6, False, students=people) == ""
    assert inbound.problem(ok, [A], 10**6, True, students=people) == (
        f"{me} is not one of the course's students (c.Watch.students)"
    )
    for bad in ("../x", "a*b", ".hidden", "x" * 200):
        odd = inbound.Arrival("k", "inbox", ok.path, bad, A, ok.submitted)
        assert "cannot be used" in inbound.problem(odd, [A], 10**6, False), bad
    unfinished = tmp_path / f"{me}+{A}+2026-11-26 10:00:02.000000 UTC+abc"
    unfinished.mkdir()  # no submission_secret.txt yet: nbgrader is still copying it
    assert all(a.path != unfinished for a in inbound.scan(tmp_path, "exchange"))


def test_the_counting_submission_follows_the_policy(tmp_path):
    h = History(tmp_path, "ada", A)
    for i, score in enumerate([5.0, 9.0, 7.0, 9.0]):
        h.add(Entry(f"k{i}", "inbox", f"2026-11-26T10:00:0{i}", "", "graded", score=score))
    h.add(Entry("k9", "inbox", "2026-11-26T10:00:09", "", "received"))
    assert h.counting("latest").key == "k3"
    assert h.counting("best").key == "k3"  # the later of two equal bests
    h.entries[3].score = 8.0
    assert h.counting("best").key == "k1"
    h.save()
    assert [e.key for e in History(tmp_path, "ada", A).entries] == [e.key for e in h.entries]


def test_a_wrong_setting_is_one_clear_error():
    with pytest.raises(WatchError, match=r"c\.Watch\.early: no assignment '99_x'"):
        Watch(early={"99_x": "all"}).level(A, [A])
    with pytest.raises(WatchError, match="'some' is not one of received, hidden, all"):
        Watch(early={A: "some"}).level(A, [A])


# ---- real grading, from the inbox -------------------------------------------------------


@pytest.mark.slow
def test_a_submission_gets_early_feedback_and_a_restart_grades_nothing_twice(tmp_path):
    course = course_at(tmp_path / "course")
    drop(course, "ada", buggy())
    w = watcher(course)
    report = w.cycle()
    assert len(report.graded) == 1, str(w.stream)
    assert course.scores(A)["ada"]["value_test_add_mul"] < 4.0
    text = page(course, "ada")
    # the default early level, "hidden": each hidden test's verdict and message, no points
    assert "hidden tests" in text and "__add__" in text, text
    assert "Your submissions" in text and "score" not in text.lower().split("your submissions")[1]
    assert "graded" in text
    again = watcher(course)  # a restart: nothing graded twice
    assert again.cycle().graded == []
    drop(course, "ada", solution())  # what arrives while it is down is taken
    later = until_idle(watcher(course))
    assert sum(len(r.graded) for r in later) == 1
    assert course.scores(A)["ada"]["value_test_add_mul"] == 4.0
    entries = history(course, "ada")
    assert [e["status"] for e in entries] == ["graded", "graded"]
    assert [e["counts"] for e in entries] == [False, True]


@pytest.mark.slow
def test_bad_files_get_a_note_and_never_stop_the_watcher(tmp_path):
    course = course_at(tmp_path / "course")
    crash = solution()
    crash.cells.insert(3, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    drop(course, "ada", solution())
    drop(course, "bob", "this is not a notebook")
    drop(course, "carl", crash)
    drop(course, "dora", b"\x00" * 4096)
    drop(course, "erin", solution(), assignment="07_nothing")
    (course.path / "inbox" / "stray.txt").write_text("dropped by mistake")
    huge = drop(course, "finn", solution())
    (huge / "data.bin").write_bytes(os.urandom(2 * 1024**2))
    for path in (huge / "data.bin", huge):  # settled, as drop() leaves the others
        os.utime(path, (time.time() - 60, time.time() - 60))
    w = watcher(course, max_bytes=1024**2)
    reports = until_idle(w)
    graded = {k.split("+")[0].split("/")[1] for r in reports for k in r.graded}
    refused = {k for r in reports for k in r.refused}
    assert graded == {"ada", "bob", "carl", "dora"}, str(w.stream)
    assert {k.split("/")[1].split("+")[0] for k in refused} == {"erin", "stray.txt", "finn"}
    scores = {s: sum(c.values()) for s, c in course.scores(A).items()}
    assert scores["ada"] == 14.0 and scores["bob"] == scores["dora"] == 0.0
    log = str(w.stream)
    assert "refused inbox/finn" in log and "more than 1 MB" in log
    assert "no assignment '07_nothing'" in log
    assert "not a submission folder" in log
    for student in ("bob", "carl", "dora"):
        (entry,) = history(course, student)
        assert entry["status"] == "graded" and entry["note"], entry
    refusals = (course.path / "watch" / "refused.jsonl").read_text().splitlines()
    assert len(refusals) == 3


@pytest.mark.slow
def test_two_submissions_in_one_second_are_both_recorded_and_the_later_counts(tmp_path):
    course = course_at(tmp_path / "course")
    second = datetime.now(UTC).replace(microsecond=0)
    drop(course, "ada", solution(), second + timedelta(microseconds=300_000))
    drop(course, "ada", buggy(), second + timedelta(microseconds=700_000))
    w = watcher(course, early={A: "received"})
    until_idle(w)
    entries = history(course, "ada")
    assert [e["status"] for e in entries] == ["superseded", "graded"], entries
    assert entries[1]["counts"] and entries[1]["claimed"].endswith(".700000+00:00")
    assert course.scores(A)["ada"]["value_test_add_mul"] < 4.0
    text = page(course, "ada")
    assert "visible checks" in text and "hidden tests" not in text  # level "received"


@pytest.mark.slow
def test_policy_best_keeps_the_best_in_the_gradebook_and_the_page_shows_points_after_due(
    tmp_path,
):
    course = course_at(tmp_path / "course")
    first = datetime.now(UTC) - timedelta(minutes=5)
    drop(course, "ada", solution(), first)
    w = watcher(course, policy="best")
    w.due[A] = datetime(2000, 1, 1)  # as c.Schedule.dates would say: past its due date
    until_idle(w)
    drop(course, "ada", buggy(), first + timedelta(minutes=1))
    until_idle(w)
    assert sum(course.scores(A)["ada"].values()) == 14.0, str(w.stream)
    entries = history(course, "ada")
    assert [e["counts"] for e in entries] == [True, False]
    assert entries[1]["score"] < 14.0
    text = page(course, "ada")  # the usual page (past due), with the history and points
    assert "Your submissions" in text and "14 / 14" in text and "(counts)" in text
    assert watcher(course, policy="best").cycle().graded == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill -9", "Ctrl-C"])
def test_stopped_in_the_middle_of_grading_it_loses_no_submission(tmp_path, sig):
    """kill -9, or Ctrl-C in its terminal (SIGINT to the whole process group), while a
    submission is being graded: Ctrl-C stops it at once (exit code 130), and either way
    the next start grades that submission and what arrived meanwhile, each once."""
    course = course_at(tmp_path / "course")
    slow = solution()  # its grading lasts long enough to be killed in the middle
    slow.cells.insert(3, nbformat.v4.new_code_cell("import time\ntime.sleep(4)"))
    drop(course, "ada", slow)
    log = tmp_path / "watch.log"
    env = course_env(PYTHONPATH=str(ROOT))
    cmd = ["watch", "--course", str(course.path)]
    with log.open("w") as out:
        proc = autograder_cli(
            *cmd,
            env=env,
            wait=False,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while "grading 1 submission" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(proc.pid, sig)
        code = proc.wait(timeout=60)
    assert "grading 1 submission" in log.read_text()
    if sig == signal.SIGINT:
        assert code == 130, log.read_text()
        with contextlib.suppress(ProcessLookupError):  # whatever of the run is left
            os.killpg(proc.pid, signal.SIGKILL)
    assert [e["status"] for e in history(course, "ada")] == ["received"]
    drop(course, "bob", solution())  # arrives while the watcher is down
    done = autograder_cli(*cmd, "--once", env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    for student in ("ada", "bob"):
        assert [e["status"] for e in history(course, student)] == ["graded"]
        assert sum(course.scores(A)[student].values()) == 14.0
    assert done.stdout.count("graded ") == 2, done.stdout


# ---- the real exchange, with student users of their own -----------------------------------


@pytest.mark.slow
def test_students_submit_from_the_exchange_and_fetch_feedback_a_minute_later(
    tmp_path,
    shared_exchange,  # noqa: F811
    student_users,  # noqa: F811
):
    course = course_at(tmp_path / "course")
    shared_exchange.release(course, A)
    ada, bob, eve = student_users("ada"), student_users("bob"), student_users("eve")
    for student in (ada, bob, eve):
        student.fetch(A)
    ada.submit(A, solution())
    bob.submit(A, buggy())
    eve.nbgrader("submit", A, f"--student={ada.name}")  # in ada's name: refused
    started = time.monotonic()
    w = watcher(course, exchange=str(shared_exchange.root))
    until_idle(w)
    pages = ada.fetch_feedback(A)
    seconds = time.monotonic() - started
    print(f"submitted to feedback fetched: {seconds:.1f} s for 2 submissions")
    assert len(pages) == 1, str(w.stream)
    assert "✓ passed" in pages[0].read_text() and "Your submissions" in pages[0].read_text()
    (bobs,) = bob.fetch_feedback(A)
    assert "__add__" in bobs.read_text()
    assert eve.fetch_feedback(A) == []
    assert f"claims to be {ada.name}'s but belongs to the unix user {eve.name}" in str(w.stream)
    assert [e["status"] for e in history(course, ada.name)] == ["graded"]


@pytest.mark.slow
def test_a_student_who_rewrites_timestamp_txt_in_the_exchange_is_late_by_the_graders_clock(
    tmp_path,
    shared_exchange,  # noqa: F811
    student_users,  # noqa: F811
):
    """nbgrader's inbound folder is the student's (0777, their files): ada submits, then
    rewrites its timestamp.txt to five days earlier before the watcher looks."""
    course = course_at(tmp_path / "course")
    shared_exchange.release(course, A)
    ada = student_users("ada")
    ada.fetch(A)
    folder = ada.submit(A, solution())
    lie = stamp(datetime.now(UTC) - timedelta(days=5))
    ada.run("sh", "-c", 'printf %s "$2" > "$1/timestamp.txt"', "sh", str(folder), lie)
    assert (folder / "timestamp.txt").read_text() == lie
    w = watcher(course, exchange=str(shared_exchange.root), early={A: "received"})
    until_idle(w)
    (entry,) = history(course, ada.name)
    assert entry["status"] == "graded", str(w.stream)
    assert entry["claimed"].startswith(lie[:10]) and "claims to have been" in entry["review"]
    staged = (course.path / "submitted" / ada.name / A / "timestamp.txt").read_text()
    assert datetime.now(UTC) - datetime.strptime(staged, "%Y-%m-%d %H:%M:%S.%f %Z").replace(
        tzinfo=UTC
    ) < timedelta(minutes=10), staged
    record = json.loads(
        (course.path / "autograded" / ada.name / A / ".autograder.json").read_text()
    )
    assert any(r.startswith("submission time: claims") for r in record["review"]), record
    (page,) = ada.fetch_feedback(A)
    assert "by the grader's clock" in page.read_text()


@pytest.mark.slow
def test_a_pipe_and_1100_nested_folders_claiming_to_come_first_stall_nobody(tmp_path):
    course = course_at(tmp_path / "course")
    early = datetime.now(UTC) - timedelta(days=9)
    pipe = drop(course, "ada", solution(), early)
    os.mkfifo(pipe / "fifo")
    deep = drop(course, "bob", solution(), early)
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    for folder in (pipe, deep):
        os.utime(folder, (time.time() - 60, time.time() - 60))
    drop(course, "carl", solution())
    w = watcher(course)
    try:
        reports = until_idle(w)
        assert [k.split("/")[1].split("+")[0] for r in reports for k in r.graded] == ["carl"]
        assert sorted(k.split("/")[1].split("+")[0] for r in reports for k in r.refused) == [
            "ada",
            "bob",
        ]
        assert sum(course.scores(A)["carl"].values()) == 14.0
        assert w.cycle().refused == []  # recorded once
        assert not list((course.path / "watch" / "archive").glob(".partial-*"))
    finally:
        top = deep / "d"
        while (top / "d").is_dir():
            (top / "d").rename(deep / "up")
            top.rmdir()
            (deep / "up").rename(top)
        top.rmdir()
