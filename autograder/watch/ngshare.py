"""Submissions from ngshare (``c.Watch.ngshare_url``), through its API, never its database,
with the grader's JupyterHub API token (JUPYTERHUB_API_TOKEN: a hub service's own).

Who submitted is ngshare's record, which it took from the Hub's answer for the token the
submission came with: never a name from the files (nbgrader's ``--student`` only names
the student's own cache). When is ngshare's time of the submission, set by ngshare's
server as it stored it, capped at the moment the watcher first saw it: the student's
``timestamp.txt`` is their claim, kept and shown. A submission's file list is believed
only after its names and count (asked for first without contents), then its size (the
answer read no further than the bounds allow), base64 and total: see client.py. A
submission that passes is written into ``watch/ngshare/`` and taken as an inbox arrival
is (inbound.py: the same checks, archive and staging); feedback pages go back through
ngshare's feedback API, where the student's ``fetch_feedback`` asks for them.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..ngshare.client import (
    Client,
    NgshareError,
    TooLarge,
    Unreachable,
    check_files,
    pack,
    unpack,
)
from . import inbound
from .tree import Bounds

SOURCE = "ngshare"
STAMP_FORMATS = ("%Y-%m-%d %H:%M:%S.%f %Z", "%Y-%m-%d %H:%M:%S.%f")


@dataclass(frozen=True)
class Remote:
    """One submission as ngshare lists it."""

    student: str
    assignment: str
    timestamp: str  # ngshare's, as it gives it (and takes it back)

    @property
    def key(self) -> str:
        return f"{SOURCE}/{self.student}+{self.assignment}+{self.timestamp}"


def parse_key(key: str) -> Remote:
    """The submission a history key names (``Remote.key``)."""
    name = key.removeprefix(f"{SOURCE}/")
    rest, _, timestamp = name.rpartition("+")
    student, _, assignment = rest.rpartition("+")
    return Remote(student, assignment, timestamp)


def stamp_time(timestamp: str) -> datetime | None:
    """ngshare's time of a submission (UTC), or None if it does not parse."""
    for fmt in STAMP_FORMATS:
        try:
            return datetime.strptime(timestamp.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


class NgshareSource:
    """The submissions of ``course`` in ngshare, as the grader sees them."""

    def __init__(self, client: Client, course: str, folder: Path):
        self.client, self.course = client, course
        self.folder = folder  # where fetched submissions wait to be taken

    def listing(self, known: set[str]) -> list[Remote]:
        """Every submission of every assignment ngshare holds for the course whose key is
        not in ``known`` (a listing that is not as documented: none)."""
        released = self.client.get(f"assignments/{self.course}").get("assignments")
        found = []
        for assignment in released if isinstance(released, list) else []:
            if not isinstance(assignment, str) or "/" in assignment:
                continue
            rows = self.client.get(f"submissions/{self.course}/{assignment}").get("submissions")
            for row in rows if isinstance(rows, list) else []:
                student = row.get("student_id") if isinstance(row, dict) else None
                when = row.get("timestamp") if isinstance(row, dict) else None
                if isinstance(student, str) and isinstance(when, str):
                    remote = Remote(student, assignment, when)
                    if remote.key not in known:
                        found.append(remote)
        return found

    def arrivals(
        self,
        known: set[str],
        bounds: Bounds,
        refuse: Callable[[str, str], None],
        log: Callable[[str], None],
    ) -> list[inbound.Arrival]:
        """The new submissions, fetched and checked; one that cannot be believed is
        ``refuse``d (key, why), one ngshare cannot give now is left for the next cycle. An
        ngshare that cannot be listed raises NgshareError."""
        now, found = time.time(), []
        for remote in self.listing(known):
            try:
                found.append(self.fetch(remote, bounds, now))
            except Unreachable as exc:
                log(f"{remote.key} cannot be fetched now, trying again: {exc}")
            except NgshareError as exc:
                refuse(remote.key, str(exc))
        return found

    def fetch(self, remote: Remote, bounds: Bounds, now: float) -> inbound.Arrival:
        """``remote``'s files checked and written under ``folder``, as an arrival; a
        submission that cannot be believed raises ``NgshareError`` (one line)."""
        if not inbound.ID.match(remote.student) or "+" in remote.student:
            raise NgshareError(f"the student id {remote.student[:40]!r} cannot be used")
        landed = stamp_time(remote.timestamp)
        if landed is None:
            raise NgshareError(f"ngshare's time {remote.timestamp[:40]!r} does not parse")
        limits = bounds
        path = f"submission/{self.course}/{remote.assignment}/{remote.student}"
        names = self.client.get(
            path, limits.max_files * 1200 + 4096, timestamp=remote.timestamp, list_only="true"
        )
        check_files(names.get("files"), limits, contents=False)
        try:
            answer = self.client.get(path, limits.answer_bytes, timestamp=remote.timestamp)
        except TooLarge:
            raise NgshareError(f"it holds more than {limits.max_bytes / 1024**2:g} MB") from None
        files = check_files(answer.get("files"), limits)
        dest = self.folder / remote.key.replace("/", "__")
        shutil.rmtree(dest, ignore_errors=True)
        unpack(files, dest)
        seen = min(landed, datetime.fromtimestamp(now, UTC))
        claimed = inbound._claimed(dest, "")
        key = remote.key
        return inbound.Arrival(key, SOURCE, dest, remote.student, remote.assignment, claimed, seen)

    def release(self, key: str, pages: Path) -> int:
        """The pages in ``pages`` (``<notebook>.html``) as the feedback of the submission
        ``key``; how many."""
        remote = parse_key(key)
        files = pack(pages, skip=lambda rel: "/" in rel or not rel.endswith(".html"))
        self.client.post(
            f"feedback/{self.course}/{remote.assignment}/{remote.student}",
            timestamp=remote.timestamp,
            files=json.dumps(files),
        )
        return len(files)

    def clear(self) -> None:
        """Forget what was fetched (the archive keeps what was taken)."""
        shutil.rmtree(self.folder, ignore_errors=True)
