"""What has arrived: submissions in nbgrader's exchange (its ``inbound/`` folder, where
``nbgrader submit`` puts them) and in a plain inbox folder, each one folder named as
nbgrader names them, ``<student>+<assignment>+<timestamp>[+<random>]``.

A folder is taken once it is whole: the exchange's once nbgrader wrote its
``submission_secret.txt`` (its last file), the inbox's once nothing in it changed for
``SETTLE`` seconds. Each is checked before it is believed (``problem``): a known
assignment, a usable student id, its size, and for the exchange that the unix user who
owns the folder is the student its name claims (the exchange's inbound folder is
writable by every student). A submission taken is copied whole into the watcher's
archive (``archive``), from which it is staged for grading (``stage``): nothing a
student sends is lost, whatever happens to the exchange or to ``submitted/`` later.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..intake.discovery import GLOB_CHARS

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
    submitted: datetime  # when the student submitted it (UTC)

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
    found = []
    for entry in os.scandir(folder):
        if f"{source}/{entry.name}" in known:
            continue
        path = Path(entry.path)
        if path.name.startswith(".") or not path.is_dir() or path.is_symlink():
            continue
        parts = path.name.rsplit("+", 3)
        if len(parts) < 3:
            continue
        if source == "exchange" and not (path / SECRET).is_file():
            continue  # nbgrader is still copying it
        if source == "inbox" and now - _newest(path) < SETTLE:
            continue
        submitted = _submitted(path, parts[2])
        found.append(Arrival(f"{source}/{path.name}", source, path, parts[0], parts[1], submitted))
    return sorted(found, key=lambda a: (a.submitted, a.key))


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


def _newest(path: Path) -> float:
    newest = path.lstat().st_mtime
    for dirpath, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                newest = max(newest, os.lstat(os.path.join(dirpath, name)).st_mtime)
    return newest


def _submitted(path: Path, stamp: str) -> datetime:
    """When it was submitted: its timestamp.txt, else its name, else its folder's time."""
    from nbgrader.utils import parse_utc

    for text in (_read_small(path / TIMESTAMP), stamp):
        if text:
            try:
                when = parse_utc(text.strip())
            except (ValueError, OverflowError, TypeError):
                continue
            return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return datetime.fromtimestamp(path.lstat().st_mtime, UTC)


def _read_small(path: Path, limit: int = 200) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(limit).decode("ascii", errors="replace")
    except OSError:
        return ""


def problem(arrival: Arrival, assignments: list[str], max_bytes: int, check_owner: bool) -> str:
    """Why ``arrival`` cannot be taken ("" if it can), in one line."""
    if not ID.match(arrival.student) or GLOB_CHARS & set(arrival.student):
        return f"the student id {arrival.student[:40]!r} cannot be used (letters, digits, ._@-)"
    if arrival.assignment not in assignments:
        return f"no assignment {arrival.assignment[:40]!r} in the course"
    if arrival.source == "exchange" and check_owner:
        owner = _owner(arrival.path)
        if owner != arrival.student:
            return f"it claims to be {arrival.student}'s but belongs to the unix user {owner}"
    size = _size(arrival.path, max_bytes)
    if size > max_bytes:
        return f"it holds more than {max_bytes / 1024**2:g} MB (the limit: c.Watch.max_bytes)"
    return ""


def _owner(path: Path) -> str:
    uid = path.lstat().st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"#{uid}"


def _size(path: Path, limit: int) -> int:
    """The bytes of the files under ``path`` (links not followed), counted up to past
    ``limit``."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
            if total > limit:
                return total
    return total


# ---- keeping and staging ------------------------------------------------------------------


def archive(arrival: Arrival, folder: Path) -> Path:
    """Copy the submission whole into ``folder``/<its key> (links kept as links), with a
    timestamp.txt in nbgrader's format if it had none; the copy appears at once or not
    at all."""
    dest = folder / arrival.key.replace("/", "__")
    if dest.is_dir():
        return dest
    tmp = folder / f".partial-{uuid.uuid4().hex}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(arrival.path, tmp, symlinks=True)
    if not (tmp / TIMESTAMP).is_file():
        (tmp / TIMESTAMP).write_text(arrival.submitted.strftime(STAMP_FORMAT))
    os.replace(tmp, dest)
    return dest


def stage(kept: Path, dest: Path, scratch: Path) -> None:
    """Make ``dest`` (submitted/<student>/<assignment>) a copy of ``kept``."""
    scratch.mkdir(parents=True, exist_ok=True)
    new = scratch / f"new-{uuid.uuid4().hex}"
    shutil.copytree(kept, new, symlinks=True, ignore=shutil.ignore_patterns(SECRET))
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() or dest.is_symlink():
        old = scratch / f"old-{uuid.uuid4().hex}"
        os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, dest)
