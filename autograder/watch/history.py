"""Every submission the watcher has seen, per student and assignment:
``watch/history/<student>/<assignment>.json``, written whole or not at all.

An entry's ``status``: ``received`` (taken, not graded yet: a restart grades it),
``superseded`` (a later one arrived before it was graded), ``graded``; ``refused``
arrivals (``watch/refused.jsonl``) are never taken. ``counts`` marks the graded entry
the gradebook holds, by ``c.Watch.policy``.
"""

from __future__ import annotations

import html
import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

STATUSES = ("received", "superseded", "graded")


@dataclass
class Entry:
    key: str
    source: str
    submitted: str  # ISO time, UTC: when the grader's side saw it land (what counts)
    received: str  # ISO time, UTC: when the watcher took it
    status: str = "received"
    kept: str = ""  # its copy in the archive, relative to the watch folder
    note: str = ""
    score: float | None = None
    max_score: float | None = None
    cells: dict[str, float] = field(default_factory=dict)  # notebook/grade id: points
    seconds: float | None = None
    counts: bool = False
    claimed: str = ""  # ISO time, UTC: when the student's files say it was submitted
    review: str = ""  # a flag for review: a claim earlier than the grader's time
    graders_time: bool = False  # ``submitted`` is the grader's (False: recorded before)

    def when(self) -> datetime | None:
        """The time staged for lateness (``submitted``); None for an entry recorded
        before the grader kept its own, staged as its archive keeps it."""
        if not self.graders_time:
            return None
        try:
            when = datetime.fromisoformat(self.submitted)
        except ValueError:
            return None
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when


class History:
    """One student's submissions of one assignment, oldest first."""

    def __init__(self, folder: Path, student: str, assignment: str):
        self.path = folder / "history" / student / f"{assignment}.json"
        self.student, self.assignment = student, assignment
        self.entries: list[Entry] = []
        try:
            raw = json.loads(self.path.read_text())
            self.entries = [Entry(**e) for e in raw.get("entries", [])]
        except FileNotFoundError:
            pass

    def find(self, key: str) -> Entry | None:
        return next((e for e in self.entries if e.key == key), None)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.entries.sort(key=lambda e: (e.submitted, e.key))

    def counting(self, policy: str) -> Entry | None:
        """The graded entry that counts: the latest, or the best (the later on a tie)."""
        graded = [e for e in self.entries if e.status == "graded"]
        if not graded:
            return None
        if policy == "best":
            return max(reversed(graded), key=lambda e: e.score or 0.0)
        return graded[-1]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}")
        data = {
            "student": self.student,
            "assignment": self.assignment,
            "entries": [asdict(e) for e in self.entries],
        }
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.path)


def claim_html(entry: Entry) -> str:
    """The note on a page: the grader's time, and the student's own when it differs."""
    if not entry.claimed or entry.claimed[:19] == entry.submitted[:19]:
        return ""
    said = html.escape(entry.claimed[:19].replace("T", " "))
    seen = html.escape(entry.submitted[:19].replace("T", " "))
    return (
        '<section id="submission-time"><p>Received at '
        f"{seen} UTC by the grader's clock, which is what counts for the due date. "
        f"Your submission gave its own time as {said} UTC.</p></section>"
    )


def refused_marks(folder: Path) -> dict[str, str]:
    """{key: the mark of its folder when refused} of refusals that carry one: such a
    folder is looked at again only when its mark changes."""
    marks: dict[str, str] = {}
    refused = folder / "refused.jsonl"
    if refused.is_file():
        for line in refused.read_text().splitlines():
            try:
                row = json.loads(line)
                marks[row["key"]] = str(row.get("mark") or "")
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
    return {k: m for k, m in marks.items() if m}


def known_keys(folder: Path) -> set[str]:
    """Every key the watcher has recorded (histories and refusals)."""
    keys = set()
    for path in (folder / "history").glob("*/*.json"):
        try:
            keys |= {e["key"] for e in json.loads(path.read_text()).get("entries", [])}
        except (OSError, ValueError, KeyError, TypeError):
            continue
    refused = folder / "refused.jsonl"
    if refused.is_file():
        for line in refused.read_text().splitlines():
            try:
                keys.add(json.loads(line)["key"])
            except (ValueError, KeyError, TypeError):
                continue
    return keys


def refuse(folder: Path, key: str, when: str, why: str, mark: str = "") -> None:
    """Record that the arrival ``key`` was refused, and why (one JSON line, appended);
    ``mark``: its folder's, to look at it again only if that changes."""
    folder.mkdir(parents=True, exist_ok=True)
    row = {"key": key, "when": when, "why": why, **({"mark": mark} if mark else {})}
    with (folder / "refused.jsonl").open("a") as fh:
        fh.write(json.dumps(row) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
