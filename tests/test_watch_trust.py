"""What the watcher believes of a submission (issue 40, classes 3 and 4), without grading:

- **Lateness is the grader's to say.** ``timestamp.txt`` and the folder's name are the
  student's; the time that counts (lateness, and order under ``latest``) is when the
  submission landed by the grader's clock (its newest ``st_ctime``, which no owner can
  set back, at most the watcher's first sight). The claim is kept and shown, and flagged
  for review when earlier by more than the polling interval.
- **One submission never stalls the class.** Pipes, sockets, folders nested 1,100 deep,
  too many files, a huge sparse file, a copy failing half-way, a ``timestamp.txt`` that
  is a pipe: each is refused once, with one line, nothing half-made is left, and everyone
  else is received.

The receive and stage steps of a real ``Watcher`` cycle run here on a scratch course;
the end to end runs (grading, the real exchange) are in test_watch.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import SOURCE, ScratchCourse, notebook_path

from autograder.record import GradingRecord
from autograder.schedule import LatePolicy, Schedule, late_penalty
from autograder.watch import inbound, tree
from autograder.watch.history import History
from autograder.watch.service import CycleReport, Watcher
from autograder.watch.settings import Watch

A = "01_value"
NOTEBOOK = notebook_path(SOURCE, A).name
DAY = timedelta(days=1)


class _Log:
    def __init__(self):
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines += [line for line in text.splitlines() if line.strip()]
        return len(text)

    def flush(self) -> None:
        pass

    def __str__(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """One scratch course, copied for each test (copying it is most of the time)."""
    return ScratchCourse(tmp_path_factory.mktemp("trust") / "course", [A]).path


@pytest.fixture
def course(scratch, tmp_path) -> Path:
    import shutil

    path = tmp_path / "course"
    shutil.copytree(scratch, path, symlinks=True)
    return path


def watcher(course: Path, **settings) -> Watcher:
    return Watcher(course, jobs=1, settings=Watch(**settings), stream=_Log())


def receive(w: Watcher) -> CycleReport:
    """The receiving and staging steps of one cycle (no grading)."""
    report = CycleReport()
    w._take_arrivals(report)
    w._stage(report)
    return report


def stamp(when: datetime) -> str:
    return when.strftime(inbound.STAMP_FORMAT)


def drop(course: Path, student: str, claim: datetime | None = None, *, text: bool = True):
    """A submission in the inbox, its files made to look a minute old (their mtimes, as
    a student can set them), with ``timestamp.txt`` saying ``claim``."""
    claim = claim or datetime.now(UTC)
    folder = course / "inbox" / f"{student}+{A}+{stamp(claim)}"
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_text("{}")
    if text:
        (folder / inbound.TIMESTAMP).write_text(stamp(claim))
    return folder


def settle(folder: Path, ago: float = 60) -> None:
    """Every mtime set ``ago`` seconds back (what ``touch -d`` lets any owner do)."""
    old = time.time() - ago
    paths = [folder, *folder.rglob("*")]
    for p in sorted(paths, key=lambda p: len(p.parts), reverse=True):
        os.utime(p, (old, old), follow_symlinks=False)


def staged_time(course: Path, student: str) -> datetime:
    from nbgrader.utils import parse_utc

    text = (course / "submitted" / student / A / inbound.TIMESTAMP).read_text()
    return parse_utc(text.strip()).replace(tzinfo=UTC)


def entries(course: Path, student: str) -> list[dict]:
    path = course / "watch" / "history" / student / f"{A}.json"
    return json.loads(path.read_text())["entries"]


# ---- 3. lateness is the grader's to say -------------------------------------------------


def test_a_late_submission_claiming_to_be_early_is_late_and_flagged(course):
    """Three days late, claiming five days early, against zero after one day: zero."""
    now = datetime.now(UTC)
    due = now - 3 * DAY
    settle(drop(course, "ada", due - 5 * DAY))
    w = watcher(course)
    receive(w)
    when = staged_time(course, "ada")
    assert abs((when - now).total_seconds()) < 30, when  # the grader's time, not the claim
    schedule = Schedule(dates={A: {"due": due.strftime("%Y-%m-%d %H:%M")}}, timezone="UTC")
    late = schedule.lateness(A, "ada", when.replace(tzinfo=None))
    assert late.seconds > 2.9 * 86400
    taken, why = late_penalty(14.0, 14.0, late.seconds, LatePolicy("zero_after", 1))
    assert taken == 14.0 and "the score is 0" in why
    (entry,) = entries(course, "ada")
    assert entry["claimed"].startswith((due - 5 * DAY).strftime("%Y-%m-%d"))  # kept
    assert "claims to have been submitted at" in entry["review"], entry
    assert "flagged for review" in str(w.stream)


def test_a_timestamp_file_nbgrader_cannot_read_is_not_what_grade_reads(course):
    """A claim that does not parse is no claim; grade must still find the grader's time
    (nbgrader stops on a timestamp.txt it cannot parse)."""
    folder = drop(course, "ada")
    (folder / inbound.TIMESTAMP).write_text("yesterday, honest")
    settle(folder)
    receive(watcher(course))
    assert datetime.now(UTC) - staged_time(course, "ada") < timedelta(seconds=30)


def test_a_name_and_mtimes_set_back_without_a_timestamp_file_do_not_count(course):
    """No timestamp.txt: the folder's name and every mtime are the student's too."""
    settle(drop(course, "ada", datetime.now(UTC) - 10 * DAY, text=False), ago=11 * 86400)
    receive(watcher(course))
    assert datetime.now(UTC) - staged_time(course, "ada") < timedelta(seconds=30)
    (entry,) = entries(course, "ada")
    assert entry["review"] and entry["claimed"]


def test_an_honest_claim_is_not_flagged_and_a_late_watcher_does_not_make_it_late(course):
    """What landed while the watcher was down counts from when it landed, not from when
    the watcher first saw it; a claim within the interval is no flag."""
    settle(drop(course, "ada"))
    time.sleep(1.2)  # the watcher looks a while later
    w = watcher(course, interval=1.0)
    receive(w)
    (entry,) = entries(course, "ada")
    assert entry["review"] == "" and "flagged" not in str(w.stream)
    landed = datetime.fromisoformat(entry["submitted"])
    assert landed < datetime.fromisoformat(entry["received"]) + timedelta(seconds=1)
    assert datetime.now(UTC) - landed > timedelta(seconds=1)


def test_under_latest_the_later_handed_in_counts_whatever_each_claims(course):
    """The first claims next year, the second last week: the second is the latest."""
    first = drop(course, "ada", datetime.now(UTC) + 365 * DAY)
    (first / NOTEBOOK).write_text('{"first": 1}')
    settle(first)
    time.sleep(0.05)
    second = drop(course, "ada", datetime.now(UTC) - 7 * DAY)
    (second / NOTEBOOK).write_text('{"second": 2}')
    settle(second)
    w = watcher(course)
    todo = w._stage(_taken(w))
    assert [e["key"] for e in entries(course, "ada")] == [
        f"inbox/{first.name}",
        f"inbox/{second.name}",
    ]
    assert [e["status"] for e in entries(course, "ada")] == ["superseded", "received"]
    assert todo[("ada", A)].key == f"inbox/{second.name}"
    assert "second" in (course / "submitted" / "ada" / A / NOTEBOOK).read_text()


def _taken(w: Watcher) -> CycleReport:
    report = CycleReport()
    w._take_arrivals(report)
    return report


def test_the_claim_is_shown_on_the_page_and_in_the_record(course):
    settle(drop(course, "ada", datetime.now(UTC) - 5 * DAY))
    w = watcher(course, early={A: "received"})
    receive(w)
    history = History(w.folder, "ada", A)
    (entry,) = history.entries
    w._pages("ada", A, history, entry, "received")
    page = (course / "feedback" / "ada" / A / NOTEBOOK.replace(".ipynb", ".html")).read_text()
    assert "by the grader's clock" in page
    assert entry.claimed[:10] in page and entry.submitted[:10] in page
    record = GradingRecord(score=1.0, review=["imports torch"])
    w.course.record_path("ada", A).parent.mkdir(parents=True)
    w._flag_record("ada", A, record, entry.review)
    kept = json.loads(w.course.record_path("ada", A).read_text())["review"]
    assert kept[0] == "imports torch" and kept[1].startswith("submission time: claims")


# ---- 4. one submission never stalls the class -------------------------------------------


def _special(kind: str, folder: Path) -> None:
    where = folder / "data" / "x"
    where.parent.mkdir()
    if kind == "pipe":
        os.mkfifo(where)
    else:
        here = os.getcwd()
        os.chdir(where.parent)  # a socket's path must be short: bind it by its name
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.bind(where.name)
        finally:
            os.chdir(here)


@pytest.mark.parametrize("kind, words", [("pipe", "a named pipe"), ("socket", "a socket")])
def test_a_pipe_or_socket_refuses_that_submission_once_and_the_class_goes_on(course, kind, words):
    bad = drop(course, "ada", datetime.now(UTC) - 9 * DAY)  # claims early: comes first
    _special(kind, bad)
    settle(bad)
    bob = drop(course, "bob")
    settle(bob)
    w = watcher(course)
    report = receive(w)
    assert report.refused == [f"inbox/{bad.name}"]
    assert report.received == [f"inbox/{bob.name}"]
    assert f"'data/x' is {words}, not a regular file" in str(w.stream)
    assert (course / "submitted" / "bob" / A / NOTEBOOK).is_file()
    again = receive(w)  # never retried while it stays the same
    assert again.refused == again.received == []
    assert not list((course / "watch" / "archive").glob(".partial-*"))
    assert bad.is_dir() and (bad / NOTEBOOK).is_file()  # nothing of the student's lost


def test_a_pipe_named_timestamp_txt_does_not_hang_the_watcher(course):
    """Reading the claim must not block: a FIFO there would wait for a writer forever."""
    bad = drop(course, "ada", text=False)
    os.mkfifo(bad / inbound.TIMESTAMP)
    settle(bad)
    settle(drop(course, "bob"))
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the watcher hung on a pipe"))
    signal.alarm(20)
    try:
        report = receive(watcher(course))
    finally:
        signal.alarm(0)
    assert len(report.refused) == 1 and len(report.received) == 1


def test_folders_nested_1100_deep_are_refused_without_recursion(course):
    bad = drop(course, "ada", datetime.now(UTC) - 9 * DAY)
    try:
        _nest(bad, 1100)
        settle(drop(course, "bob"))
        w = watcher(course)
        report = receive(w)
        assert len(report.refused) == 1 and len(report.received) == 1, str(w.stream)
        assert "nest more than 16 deep" in str(w.stream)
        with pytest.raises(tree.Refused, match="more than 100 files"):
            tree.walk(bad, tree.Bounds(max_depth=2000, max_files=100))  # entries bound it too
    finally:
        _unnest(bad / "d")


def _nest(top: Path, levels: int) -> None:
    """``levels`` folders named d, each in the last (made relative to the last one, so no
    path grows past PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def _unnest(top: Path) -> None:
    """Remove a deep chain of folders one level at a time (shutil.rmtree, and so
    pytest's own clean-up, recurse)."""
    if not top.is_dir():
        return
    while (top / "d").is_dir():
        (top / "d").rename(top.parent / "up")
        top.rmdir()
        (top.parent / "up").rename(top)
    top.rmdir()


def test_too_many_files_and_a_huge_sparse_file_are_refused_before_any_copy(course):
    many = drop(course, "ada")
    for i in range(600):
        (many / f"f{i}.txt").write_text("x")
    sparse = drop(course, "bob")
    with (sparse / "big.bin").open("wb") as fh:
        fh.truncate(50 * 1024**3)  # 50 GB that take no space
    for folder in (many, sparse):
        settle(folder)
    settle(drop(course, "carl"))
    w = watcher(course)
    started = time.monotonic()
    report = receive(w)
    assert time.monotonic() - started < 20  # nothing of the 50 GB was read
    log = str(w.stream)
    assert len(report.refused) == 2 and len(report.received) == 1, log
    assert "more than 500 files" in log and "more than 20 MB" in log
    assert (
        not (course / "watch" / "archive").is_dir()
        or len(list((course / "watch" / "archive").iterdir())) == 1
    )


def test_a_copy_failing_half_way_leaves_nothing_half_made_and_is_recorded_once(course, monkeypatch):
    bad = drop(course, "ada", datetime.now(UTC) - 9 * DAY)
    (bad / "b.txt").write_text("b")
    settle(bad)
    settle(drop(course, "bob"))
    real = tree._copy_file

    def failing(reader, rel, dst, room):
        if reader.top == bad and rel == "b.txt":
            raise OSError(5, "Input/output error")
        return real(reader, rel, dst, room)

    monkeypatch.setattr(tree, "_copy_file", failing)
    w = watcher(course)
    report = receive(w)
    assert report.refused == [f"inbox/{bad.name}"] and len(report.received) == 1
    assert "OSError" in str(w.stream) and len(w.stream.lines[0]) < 400
    archive = course / "watch" / "archive"
    assert not list(archive.glob(".partial-*")) and len(list(archive.iterdir())) == 1
    assert receive(w).refused == []  # once
    monkeypatch.setattr(tree, "_copy_file", real)
    (bad / "c.txt").write_text("fixed")  # its folder changed: looked at again
    settle(bad)
    assert receive(w).received == [f"inbox/{bad.name}"]


def test_a_half_made_copy_left_by_a_killed_run_is_removed_at_start(course):
    left = course / "watch" / "archive" / ".partial-0123"
    (left / "x").mkdir(parents=True)
    watcher(course)
    assert not left.exists()


def test_links_are_ignored_not_followed(course):
    folder = drop(course, "ada")
    (folder / "secret").symlink_to("/etc/passwd")
    (folder / "loop").symlink_to(folder)
    settle(folder)
    report = receive(watcher(course))
    assert len(report.received) == 1
    staged = course / "submitted" / "ada" / A
    assert sorted(p.name for p in staged.iterdir()) == sorted([NOTEBOOK, inbound.TIMESTAMP])
