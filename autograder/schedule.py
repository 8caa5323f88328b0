"""The course's dates, extensions and late policy: ``c.Schedule`` in nbgrader_config.py.

    c.Schedule.dates = {
        "01_value": {"release": "2026-09-07", "due": "2026-09-14"},
        "02_backward": {"release": "2026-09-15", "due": "2026-09-21"},
        ...
    }
    c.Schedule.extensions = {"01_value": {"ada": "2026-09-16", "grace": 2}}
    c.Schedule.late_policy = {"per_day": 0.1}  # or {"zero_after": 3}; {} (default): none
    c.Schedule.timezone = "Europe/Berlin"      # default: this machine's local time

``python -m autograder release --to DIR`` ships the assignments whose release date has
come (today, or ``--as-of DATE``); with no dates at all it ships every assignment, and
none is past (a class that gets everything at once). An assignment is **past** once its
due date has passed or, without a due date, once the next assignment in course order is
released: the course's rule that a lesson is released only after the previous one's
deadline. The course's version of a past lesson ships with the student edition (its
``course/`` folder, which ``engine("course", ...)`` reads), and the edition's leak scan
lets the solution lines of past assignments through, and no others (students/edition.py).

A date is ``YYYY-MM-DD`` (a due date then lasts to the end of that day) or
``YYYY-MM-DD HH:MM``, in the course's time zone (``c.Schedule.timezone``, an IANA name;
empty: the local time of the machine that runs the command), unless it carries its own
offset (``2026-09-14 23:59+02:00``). An assignment without a release date is not
released. Internally every date is a timezone-aware ``datetime``; nbgrader's gradebook
keeps naive UTC (``to_utc_naive``, ``from_utc_naive``).

**Due dates and extensions.** An assignment's due date is ``c.Schedule.dates``'s, or,
where that gives none, the one in nbgrader's gradebook (``nbgrader db assignment add
--duedate``, which nbgrader reads as UTC). ``c.Schedule.extensions`` gives a student a
later due date, or a number of days added to the assignment's (0: none, which takes back
an extension nbgrader's gradebook holds). nbgrader's own per-student extensions count for
the students ``c.Schedule.extensions`` does not name, on assignments whose due date is
not set here (where it is, this file decides: ``grade`` writes its due date and
extensions into the gradebook, so nbgrader's lateness agrees). ``Schedule.due`` and
``Schedule.lateness`` apply these rules.

**The late policy** (``LatePolicy``, ``late_penalty``): none (lateness is shown, no
points are taken), ``{"per_day": share}`` (that share of the assignment's points lost for
each day or part of a day late, never below 0) or ``{"zero_after": days}`` (full score up
to that many days late, zero after). The gradebook keeps raw scores; ``export`` and the
feedback pages apply the policy to the schedule as it is then, so changing the policy or
an extension needs no regrading.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from traitlets import Any, Dict, Unicode
from traitlets.config import Config, Configurable

from .errors import GraderError

KEYS = ("release", "due")
DAY = 86400.0
POLICIES = ("per_day", "zero_after")
POLICY_SHAPE = '{} (none), {"per_day": 0.1} or {"zero_after": 3}'


class ScheduleError(GraderError):
    """A date or a name in ``c.Schedule`` (or on the command line) that cannot be used."""


@dataclass(frozen=True)
class Plan:
    """What a release holds: the assignments it ships, and those that are past."""

    released: list[str]
    past: list[str]
    undated: list[str] = field(default_factory=list)  # no release date: not released


def parse_date(text: object, setting: str, *, end_of_day: bool = False) -> datetime:
    """A date or date and time, for ``setting`` (named in the error); naive unless the
    text carries an offset."""
    if isinstance(text, datetime):
        return text
    if isinstance(text, date):
        text = text.isoformat()
    try:
        value = datetime.fromisoformat(str(text))
    except ValueError:
        raise ScheduleError(
            f"{setting}: {text!r} is not a date (YYYY-MM-DD, or YYYY-MM-DD HH:MM)"
        ) from None
    if end_of_day and len(str(text)) <= len("YYYY-MM-DD"):
        value = datetime.combine(value.date(), time.max)
    return value


def to_utc_naive(when: datetime) -> datetime:
    """An aware date as nbgrader's gradebook keeps it: naive UTC."""
    return when.astimezone(UTC).replace(tzinfo=None)


def from_utc_naive(when: datetime | None) -> datetime | None:
    """A date from nbgrader's gradebook (naive UTC), aware."""
    if when is None:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _student_key(student: object) -> str:
    """A student id as collect files it (Unicode NFC, single spaces)."""
    return " ".join(unicodedata.normalize("NFC", str(student)).split())


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# ---- the late policy ---------------------------------------------------------------------


@dataclass(frozen=True)
class LatePolicy:
    """``c.Schedule.late_policy``, read: ``kind`` is "none", "per_day" (``value``: the
    share of the points lost per day or part of a day late) or "zero_after" (``value``:
    the days late that still get full score)."""

    kind: str = "none"
    value: float = 0.0

    @classmethod
    def parse(cls, setting: object, name: str = "c.Schedule.late_policy") -> LatePolicy:
        if setting is None or setting == {} or setting == "none":
            return cls()
        if (
            not isinstance(setting, dict)
            or len(setting) != 1
            or next(iter(setting)) not in POLICIES
        ):
            raise ScheduleError(f"{name}: expected {POLICY_SHAPE}, got {setting!r}")
        kind, value = next(iter(setting.items()))
        if kind == "per_day" and not (_is_number(value) and 0 < value <= 1):
            raise ScheduleError(
                f"{name}['per_day']: {value!r} is not a share of the points between 0 and 1 "
                "(0.1: a tenth of the points per day late)"
            )
        if kind == "zero_after" and not (_is_number(value) and value >= 0):
            raise ScheduleError(
                f"{name}['zero_after']: {value!r} is not a number of days (0 or more)"
            )
        return cls(kind, float(value))

    def describe(self) -> str:
        """The policy in words, for pages."""
        if self.kind == "per_day":
            return f"{_percent(self.value)} of the points for each day or part of a day late"
        if self.kind == "zero_after":
            if self.value == 0:
                return "a late submission scores 0"
            return f"full score up to {_days(self.value)} late, 0 after"
        return "no points are taken for lateness"


def _percent(share: float) -> str:
    return f"{round(share * 100, 4):g}%"


def _days(n: float) -> str:
    return f"{n:g} day" + ("" if n == 1 else "s")


def late_penalty(
    score: float, max_score: float, seconds_late: float, policy: LatePolicy
) -> tuple[float, str]:
    """The points ``policy`` takes from ``score`` (out of ``max_score``) for a submission
    ``seconds_late`` late, never more than ``score``, and one line saying why ("" when
    it is not late). A day late is any part of a day: one second late is one day."""
    score = max(0.0, float(score or 0))
    if seconds_late <= 0:
        return 0.0, ""
    late = late_duration(seconds_late)
    if policy.kind == "per_day":
        days = math.ceil(seconds_late / DAY)
        points = round(min(score, days * policy.value * float(max_score or 0)), 6)
        capped = " (all of the score)" if points == score and points > 0 else ""
        return points, (
            f"{late} late: {_days(days)} started × {_percent(policy.value)} of "
            f"{max_score:g} points = −{points:g} points{capped}"
        )
    if policy.kind == "zero_after":
        if seconds_late <= policy.value * DAY:
            return (
                0.0,
                f"{late} late, within the {_days(policy.value)} the policy allows: no penalty",
            )
        more = "late" if policy.value == 0 else f"more than {_days(policy.value)} late"
        return round(score, 6), f"{late} late, {more}: the score is 0 (−{score:g} points)"
    return 0.0, f"{late} late; no points are taken for lateness"


def late_duration(seconds: float) -> str:
    """How late, in words: "40 s", "5 min", "3 h 05 min", "1 day 2 h 00 min"."""
    seconds = math.ceil(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{_days(days)} {hours} h {minutes:02d} min"


# ---- lateness ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lateness:
    """A submission against its due date: ``due`` the student's (extension included),
    ``regular`` the assignment's; all aware, None where unknown."""

    submitted: datetime | None
    due: datetime | None
    regular: datetime | None

    @property
    def seconds(self) -> float:
        """Seconds late (a started second counts whole); 0 when on time or undated."""
        if self.submitted is None or self.due is None:
            return 0.0
        return float(max(0, math.ceil((self.submitted - self.due).total_seconds())))

    @property
    def extended(self) -> bool:
        return self.due is not None and self.due != self.regular


# ---- the settings --------------------------------------------------------------------------


class Schedule(Configurable):
    """The course's dates, extensions and late policy: ``c.Schedule`` in
    nbgrader_config.py (module docstring)."""

    dates = Dict(
        {},
        help='{assignment: {"release": "YYYY-MM-DD", "due": "YYYY-MM-DD"}}: when each one '
        "reaches students, and when it is due (no dates: every assignment at once)",
    ).tag(config=True)
    extensions = Any(
        {},
        help='{assignment: {student: "YYYY-MM-DD" or days}}: a later due date for a '
        "student, or days added to the assignment's due date (0: no extension)",
    ).tag(config=True)
    late_policy = Any(
        {},
        help=f"what lateness costs: {POLICY_SHAPE}: a share of the points lost per day or "
        "part of a day late (never below 0), or full score up to N days late and 0 after",
    ).tag(config=True)
    timezone = Unicode(
        "",
        help="the time zone of the dates, an IANA name such as Europe/Berlin (empty: this "
        "machine's local time); a date may also carry its own offset",
    ).tag(config=True)

    @classmethod
    def for_course(cls, config=None) -> Schedule:
        """The course's schedule (nbgrader_config.py's ``c.Schedule``)."""
        return cls(config=Config(config or {}))

    # -- reading the settings --

    def zone(self) -> tzinfo | None:
        """The course's time zone (None: this machine's local time)."""
        if not self.timezone:
            return None
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ScheduleError(
                f"c.Schedule.timezone: {self.timezone!r} is not a time zone (an IANA name "
                "such as Europe/Berlin, or empty for this machine's local time)"
            ) from None

    def aware(self, when: datetime) -> datetime:
        """``when`` with the course's time zone, unless it has an offset of its own."""
        if when.tzinfo is not None:
            return when
        zone = self.zone()
        return when.astimezone() if zone is None else when.replace(tzinfo=zone)

    def show(self, when: datetime) -> str:
        """A date for people, in the course's time zone: ``2026-09-14 23:59 CEST``."""
        zone = self.zone()
        local = when.astimezone(zone) if zone is not None else when.astimezone()
        return local.strftime("%Y-%m-%d %H:%M %Z").strip()

    def _checked(self, assignments: list[str]) -> dict[str, dict[str, datetime]]:
        """``dates`` read and checked: {assignment: {"release": ..., "due": ...}}, aware."""
        out: dict[str, dict[str, datetime]] = {}
        for name, entry in self.dates.items():
            setting = f"c.Schedule.dates[{name!r}]"
            if name not in assignments:
                raise ScheduleError(
                    f"c.Schedule.dates: no assignment {name!r}; the course has "
                    f"{', '.join(assignments)}"
                )
            if not isinstance(entry, dict) or not entry or set(entry) - set(KEYS):
                raise ScheduleError(
                    f'{setting}: expected {{"release": "YYYY-MM-DD", "due": "YYYY-MM-DD"}}, '
                    f"got {entry!r}"
                )
            out[name] = {
                key: self.aware(
                    parse_date(entry[key], f"{setting}[{key!r}]", end_of_day=key == "due")
                )
                for key in KEYS
                if entry.get(key) is not None
            }
            release, due = out[name].get("release"), out[name].get("due")
            if release is not None and due is not None and due < release:
                raise ScheduleError(f"{setting}: the due date comes before the release date")
        return out

    def check(self, assignments: list[str]) -> Schedule:
        """Every setting read and checked against the course's ``assignments`` (a
        ScheduleError names the first that cannot be used); returns the schedule."""
        self.zone()
        self._checked(assignments)
        self.policy()
        extensions = self.extensions
        if extensions is None:
            extensions = {}
        if not isinstance(extensions, dict):
            raise ScheduleError(
                f'c.Schedule.extensions: expected {{assignment: {{student: "YYYY-MM-DD" or '
                f"days}}}}, got {extensions!r}"
            )
        for name, students in extensions.items():
            if name not in assignments:
                raise ScheduleError(
                    f"c.Schedule.extensions: no assignment {name!r}; the course has "
                    f"{', '.join(assignments)}"
                )
            if not isinstance(students, dict):
                raise ScheduleError(
                    f'c.Schedule.extensions[{name!r}]: expected {{student: "YYYY-MM-DD" or '
                    f"days}}, got {students!r}"
                )
            for student in students:
                self._extension(name, student)
        return self

    def policy(self) -> LatePolicy:
        """``c.Schedule.late_policy``, read and checked."""
        return LatePolicy.parse(self.late_policy)

    def set_due(self, assignment: str) -> datetime | None:
        """The due date ``c.Schedule.dates`` gives ``assignment`` (None: none here)."""
        entry = self.dates.get(assignment)
        if not isinstance(entry, dict) or entry.get("due") is None:
            return None
        setting = f"c.Schedule.dates[{assignment!r}]['due']"
        return self.aware(parse_date(entry["due"], setting, end_of_day=True))

    def _extension(self, assignment: str, student: str | None) -> datetime | timedelta | None:
        """``c.Schedule.extensions``'s entry for the student: a due date, days (a
        timedelta, 0 included), or None when it does not name them."""
        table = self.extensions if isinstance(self.extensions, dict) else {}
        students = table.get(assignment)
        if student is None or not isinstance(students, dict):
            return None
        wanted = _student_key(student)
        for name, value in students.items():
            if _student_key(name) != wanted:
                continue
            setting = f"c.Schedule.extensions[{assignment!r}][{name!r}]"
            if _is_number(value):
                if value < 0:
                    raise ScheduleError(f"{setting}: {value!r} days is not an extension")
                return timedelta(days=value)
            if not isinstance(value, str | date):
                raise ScheduleError(
                    f'{setting}: expected a date ("YYYY-MM-DD") or a number of days, got {value!r}'
                )
            when = self.aware(parse_date(value, setting, end_of_day=True))
            due = self.set_due(assignment)
            if due is not None and when < due:
                raise ScheduleError(
                    f"{setting}: {value} is before the assignment's due date, {self.show(due)}"
                )
            return when
        return None

    # -- due dates and lateness --

    def regular_due(self, assignment: str, book_due: datetime | None = None) -> datetime | None:
        """The assignment's due date: ``c.Schedule.dates``'s, else ``book_due`` (nbgrader's
        gradebook's, naive UTC)."""
        return self.set_due(assignment) or from_utc_naive(book_due)

    def due(
        self,
        assignment: str,
        student: str | None = None,
        *,
        book_due: datetime | None = None,
        book_extension: timedelta | None = None,
    ) -> datetime | None:
        """The student's due date for ``assignment``, their extension included (None: no
        due date). ``book_due`` and ``book_extension`` are what nbgrader's gradebook holds
        (its assignment's ``duedate``, its submission's ``extension``), used as the module
        docstring says."""
        regular = self.regular_due(assignment, book_due)
        extension = self._extension(assignment, student)
        if extension is None:
            if book_extension and regular is not None and self.set_due(assignment) is None:
                return regular + book_extension
            return regular
        if isinstance(extension, timedelta):
            return None if regular is None else regular + extension
        if regular is not None and extension < regular:  # the gradebook's due date is later
            raise ScheduleError(
                f"c.Schedule.extensions[{assignment!r}][{student!r}]: "
                f"{self.show(extension)} is before the assignment's due date, "
                f"{self.show(regular)}"
            )
        return extension

    def lateness(
        self,
        assignment: str,
        student: str,
        submitted: datetime | None,
        *,
        book_due: datetime | None = None,
        book_extension: timedelta | None = None,
    ) -> Lateness:
        """The submission of ``student`` at ``submitted`` (naive: UTC, as nbgrader keeps
        it) against their due date."""
        due = self.due(assignment, student, book_due=book_due, book_extension=book_extension)
        return Lateness(
            from_utc_naive(submitted), due, self.regular_due(assignment, book_due) or due
        )

    def book_extension(
        self,
        assignment: str,
        student: str,
        book_due: datetime | None,
        book_extension: timedelta | None = None,
    ) -> timedelta | None:
        """The extension nbgrader's gradebook should hold for the student (its
        ``SubmittedAssignment.extension``), ``book_due`` being its due date."""
        due = self.due(assignment, student, book_due=book_due, book_extension=book_extension)
        regular = self.regular_due(assignment, book_due)
        if due is None or regular is None or due == regular:
            return None
        return due - regular

    def submission_lateness(self, submission) -> Lateness:
        """``lateness`` of an nbgrader ``SubmittedAssignment`` (its timestamp, its
        assignment's due date and its extension)."""
        return self.lateness(
            submission.assignment.name,
            submission.student.id,
            submission.timestamp,
            book_due=submission.assignment.duedate,
            book_extension=submission.extension,
        )

    # -- releases --

    def plan(self, assignments: list[str], as_of: datetime | None = None) -> Plan:
        """What ships ``as_of`` (now by default), ``assignments`` in course order."""
        dates = self._checked(assignments)
        if not dates:
            return Plan(list(assignments), [])
        now = self.aware(as_of) if as_of is not None else datetime.now(UTC)

        def released(name: str) -> bool:
            when = dates.get(name, {}).get("release")
            return when is not None and when <= now

        past = []
        for i, name in enumerate(assignments):
            due = dates.get(name, {}).get("due")
            following = assignments[i + 1] if i + 1 < len(assignments) else None
            if due is not None:
                is_past = due < now
            else:  # the next assignment is released only after this one's deadline
                is_past = following is not None and released(following)
            if is_past:
                past.append(name)
        undated = [a for a in assignments if "release" not in dates.get(a, {})]
        return Plan([a for a in assignments if released(a)], past, undated)


def upto(assignments: list[str], last: str) -> Plan:
    """Every assignment up to and including ``last``; the ones before it are past."""
    if last not in assignments:
        raise ScheduleError(
            f"--upto: no assignment {last!r}; the course has {', '.join(assignments)}"
        )
    end = assignments.index(last)
    return Plan(assignments[: end + 1], assignments[:end])


def as_of_date(text: str | None) -> datetime | None:
    """``--as-of DATE``: the start of that day (or that time), None for now."""
    if text is None:
        return None
    return parse_date(text, "--as-of")
