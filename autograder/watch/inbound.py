"""What has arrived: submissions in nbgrader's exchange (its ``inbound/`` folder, where
``nbgrader submit`` puts them) and in a plain inbox folder, each one folder named as
nbgrader names them, ``<student>+<assignment>+<timestamp>[+<random>]``.

A folder is taken once it is whole: the exchange's once nbgrader wrote its
``submission_secret.txt`` (its last file), the inbox's once nothing in it changed for
``SETTLE`` seconds. Each is checked before it is believed (``problem``): a known
assignment, a usable student id, what it holds (walked within bounds, regular files
only: tree.py), and for the exchange that the unix user who owns the folder, and every
folder and file in it, is the student its name claims (the exchange's inbound folder is
writable by every student, and each submission's folder by anyone who knows its name);
the copy checks it again through descriptors, so a folder swapped meanwhile (for a link,
or for a classmate's folder) refuses it (tree.py). A submission taken is copied into
the watcher's archive (``archive``), from which it is staged for grading (``stage``):
nothing a student sends is lost, whatever happens to the exchange or to ``submitted/``
later.

When it was handed in is the grader's to say, never the student's: ``timestamp.txt`` and
the folder's name are written by the student. ``Arrival.seen`` is the newest change time
(``st_ctime``) of the folder and everything in it, which no owner can set back, capped
at the moment the watcher first saw it; ``Arrival.claimed`` is the student's own time,
kept and shown, never used for lateness or order.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import stat
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..intake.discovery import GLOB_CHARS
from .tree import Bounds, Refused, Tree, copy, read_small, walk

SETTLE = 2.0  # seconds an inbox folder must be still before it is taken
SECRET = "submission_secret.txt"
TIMESTAMP = "timestamp.txt"
STAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's (CourseDirectory.timestamp_format)
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")


@dataclass(frozen=True)
class Arrival:
    """One submission as it sits in the exchange or the inbox."""

    key: str  # "exchange/<folder>" or "inbox/<folder>": unique, and how it is remembered
    source: str  # "exchange" or "inbox"
    path: Path
    student: str
    assignment: str
    claimed: datetime | None  # when the student says they submitted it (UTC): shown only
    seen: datetime | None = None  # when the grader's side saw it land (UTC): what counts
    trouble: str = ""  # why its folder could not be walked ("" if it could)

    @property
    def submitted(self) -> datetime:
        """The time that counts (lateness, order): the grader's, never the claim."""
        if self.seen is not None:
            return self.seen
        return self.claimed or datetime.fromtimestamp(0, UTC)

    @property
    def label(self) -> str:
        return f"{self.student}/{self.assignment} ({self.submitted:%Y-%m-%d %H:%M:%S} UTC)"


def scan(
    folder: Path | None, source: str, known: set[str] = frozenset(), now: float | None = None
) -> list[Arrival]:
    """The whole submissions in ``folder`` (an exchange's inbound folder or an inbox) whose
    keys are not in ``known``, in the order they were submitted; a name that does not
    parse is skipped here (``odd_names``). A known folder is passed over by its name
    alone: a semester's thousands cost one listing a cycle."""
    if folder is None or not folder.is_dir():
        return []
    now = time.time() if now is None else now
    exchange = source == "exchange"
    found = []
    for entry in os.scandir(folder):
        if f"{source}/{entry.name}" in known:
            continue
        path = Path(entry.path)
        if path.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        parts = path.name.rsplit("+", 3)
        if len(parts) < 3:
            continue
        if source == "exchange" and not os.path.isfile(path / SECRET):
            continue  # nbgrader is still copying it
        try:
            tree, trouble = walk(path, LOOK), ""
        except Refused as exc:  # refused by problem(), once
            tree, trouble = None, str(exc)
        except OSError:
            continue  # gone meanwhile
        if source == "inbox" and tree is not None and now - tree.newest_mtime < SETTLE:
            continue
        stamp = ""
        if tree is not None:  # in the exchange, only the student its name claims is heard
            stamp = read_small(path, tree, TIMESTAMP, _uid(parts[0]) if exchange else None)
        claimed = _claimed(path, parts[2], stamp)
        seen = _seen(path, tree, now)
        found.append(
            Arrival(
                f"{source}/{path.name}", source, path, parts[0], parts[1], claimed, seen, trouble
            )
        )
    return sorted(found, key=lambda a: (a.submitted, a.key))


# what scan reads of a folder before problem() applies the course's own bounds
LOOK = Bounds(max_bytes=1 << 62, max_files=10_000, max_depth=64)


def odd_names(folder: Path | None, known: set[str] = frozenset(), source: str = "") -> list[str]:
    """Entries of ``folder`` that are no submission folder nbgrader could have made (those
    whose keys are not in ``known`` already)."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(
        e.name
        for e in os.scandir(folder)
        if f"{source}/{e.name}" not in known
        and not e.name.startswith(".")
        and (not e.is_dir(follow_symlinks=False) or len(e.name.rsplit("+", 3)) < 3)
    )


def _seen(path: Path, tree: Tree | None, now: float) -> datetime:
    """When the grader's side saw it land: the newest change time of the folder and its
    entries (``st_ctime``: set by the kernel on every change, never settable back by the
    owner), at most ``now`` (the watcher's first sight)."""
    newest = tree.newest_ctime if tree is not None else path.lstat().st_ctime
    return datetime.fromtimestamp(min(newest, now), UTC)


def _claimed(path: Path, stamp: str, written: str | None = None) -> datetime | None:
    """When the student says it was submitted: its timestamp.txt (``written`` when read
    already, else read from ``path``, a folder of the grader's), else its name."""
    from nbgrader.utils import parse_utc

    for text in (_read_small(path / TIMESTAMP) if written is None else written, stamp):
        if text:
            try:
                when = parse_utc(text.strip())
            except (ValueError, OverflowError, TypeError):
                continue
            return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return None


def _read_small(path: Path, limit: int = 200) -> str:
    """The start of a small regular file (a pipe or a link there reads as nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, limit).decode("ascii", errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def claim_note(claimed: datetime | None, seen: datetime, tolerance: float) -> str:
    """A flag for review when the student's claim is earlier than the grader's time by
    more than ``tolerance`` seconds (the polling interval), else ""."""
    if claimed is None or (seen - claimed).total_seconds() <= tolerance:
        return ""
    return (
        f"claims to have been submitted at {claimed:%Y-%m-%d %H:%M:%S} UTC, "
        f"but it landed at {seen:%Y-%m-%d %H:%M:%S} UTC (the grader's time counts)"
    )


def problem(
    arrival: Arrival,
    assignments: list[str],
    max_bytes: int,
    check_owner: bool,
    bounds: Bounds | None = None,
    students: frozenset[str] | set[str] = frozenset(),
) -> str:
    """Why ``arrival`` cannot be taken ("" if it can), in one line. ``students``: the
    course's people (c.Watch.students), when it names them: nobody else's is taken."""
    if not ID.match(arrival.student) or GLOB_CHARS & set(arrival.student):
        return f"the student id {arrival.student[:40]!r} cannot be used (letters, digits, ._@-)"
    if students and arrival.student not in students:
        return f"{arrival.student} is not one of the course's students (c.Watch.students)"
    if arrival.assignment not in assignments:
        return f"no assignment {arrival.assignment[:40]!r} in the course"
    if arrival.source == "exchange" and check_owner:
        owner = _owner(arrival.path)
        if owner != arrival.student:
            return f"it claims to be {arrival.student}'s but belongs to the unix user {owner}"
    bounds = bounds or Bounds()
    try:
        uid = owner_uid(arrival, check_owner)
        walk(arrival.path, Bounds(max_bytes, bounds.max_files, bounds.max_depth), uid)
    except Refused as exc:
        return str(exc)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    return arrival.trouble


def owner_uid(arrival: Arrival, check_owner: bool) -> int | None:
    """The uid every folder and file of ``arrival`` must have: its student's, for the
    exchange with ``check_owner`` (None: no owner is checked)."""
    if arrival.source != "exchange" or not check_owner:
        return None
    try:
        return pwd.getpwnam(arrival.student).pw_uid
    except KeyError:
        raise Refused(f"there is no unix user {arrival.student[:40]!r}") from None


def _uid(name: str) -> int:
    """The unix user ``name``'s uid (-1, nobody's, if there is none)."""
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return -1


def _owner(path: Path) -> str:
    uid = path.lstat().st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"#{uid}"


# ---- keeping and staging ------------------------------------------------------------------


def archive(arrival: Arrival, folder: Path, bounds: Bounds, owner: int | None = None) -> Path:
    """Copy the submission's regular files into ``folder``/<its key> (links left out),
    walked within ``bounds`` first (``Refused``, one line, past them; or when a folder or
    file is not ``owner``'s, a uid, or changes meanwhile: tree.py), with a
    timestamp.txt in nbgrader's format if it had none (the student's own is kept as it
    is: their claim); the copy appears whole or not at all."""
    dest = folder / arrival.key.replace("/", "__")
    if dest.is_dir():
        return dest
    tree = walk(arrival.path, bounds, owner)
    copy(arrival.path, tree, dest, bounds)
    if not (dest / TIMESTAMP).is_file():
        (dest / TIMESTAMP).write_text(arrival.submitted.strftime(STAMP_FORMAT))
    return dest


def stage(kept: Path, dest: Path, scratch: Path, when: datetime | None = None) -> None:
    """Make ``dest`` (submitted/<student>/<assignment>) a copy of ``kept``, whose
    timestamp.txt (what ``grade`` reads for lateness) says ``when``: the grader's time,
    not the student's (None: as kept, for a history from before the grader kept one)."""
    scratch.mkdir(parents=True, exist_ok=True)
    new = scratch / f"new-{uuid.uuid4().hex}"
    drop = (SECRET, TIMESTAMP) if when is not None else (SECRET,)
    shutil.copytree(kept, new, symlinks=True, ignore=shutil.ignore_patterns(*drop))
    if when is not None:
        (new / TIMESTAMP).write_text(when.astimezone(UTC).strftime(STAMP_FORMAT))
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() or dest.is_symlink():
        old = scratch / f"old-{uuid.uuid4().hex}"
        os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, dest)
