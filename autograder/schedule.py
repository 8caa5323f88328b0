"""When each assignment reaches students: ``c.Schedule`` in nbgrader_config.py.

    c.Schedule.dates = {
        "01_value": {"release": "2026-09-07", "due": "2026-09-14"},
        "02_backward": {"release": "2026-09-15", "due": "2026-09-21"},
        ...
    }

``python -m autograder release --to DIR`` ships the assignments whose release date has
come (today, or ``--as-of DATE``); with no dates at all it ships every assignment, and
none is past (a class that gets everything at once). An assignment is **past** once its
due date has passed or, without a due date, once the next assignment in course order is
released: the course's rule that a lesson is released only after the previous one's
deadline. The course's version of a past lesson ships with the student edition (its
``course/`` folder, which ``engine("course", ...)`` reads), and the edition's leak scan
lets the solution lines of past assignments through, and no others (students/edition.py).

A date is ``YYYY-MM-DD`` (a due date then lasts to the end of that day) or
``YYYY-MM-DD HH:MM``. An assignment without a release date is not released.
Per-student extensions and a late policy will be settings beside ``dates``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time

from traitlets import Dict
from traitlets.config import Config, Configurable

from .errors import GraderError

KEYS = ("release", "due")


class ScheduleError(GraderError):
    """A date or a name in ``c.Schedule`` (or on the command line) that cannot be used."""


@dataclass(frozen=True)
class Plan:
    """What a release holds: the assignments it ships, and those that are past."""

    released: list[str]
    past: list[str]
    undated: list[str] = field(default_factory=list)  # no release date: not released


def parse_date(text: object, setting: str, *, end_of_day: bool = False) -> datetime:
    """A date or date and time, for ``setting`` (named in the error)."""
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


class Schedule(Configurable):
    """The course's dates: ``c.Schedule.dates`` in nbgrader_config.py (module docstring)."""

    dates = Dict(
        {},
        help='{assignment: {"release": "YYYY-MM-DD", "due": "YYYY-MM-DD"}}: when each one '
        "reaches students, and when it is due (no dates: every assignment at once)",
    ).tag(config=True)

    @classmethod
    def for_course(cls, config=None) -> Schedule:
        """The course's schedule (nbgrader_config.py's ``c.Schedule``)."""
        return cls(config=Config(config or {}))

    def _checked(self, assignments: list[str]) -> dict[str, dict[str, datetime]]:
        """``dates`` read and checked: {assignment: {"release": ..., "due": ...}}."""
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
                key: parse_date(entry[key], f"{setting}[{key!r}]", end_of_day=key == "due")
                for key in KEYS
                if entry.get(key) is not None
            }
            release, due = out[name].get("release"), out[name].get("due")
            if release is not None and due is not None and due < release:
                raise ScheduleError(f"{setting}: the due date comes before the release date")
        return out

    def plan(self, assignments: list[str], as_of: datetime | None = None) -> Plan:
        """What ships ``as_of`` (now by default), ``assignments`` in course order."""
        dates = self._checked(assignments)
        if not dates:
            return Plan(list(assignments), [])
        now = as_of or datetime.now()

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
