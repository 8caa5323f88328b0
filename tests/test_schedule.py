"""The course's dates (``c.Schedule.dates``, autograder/schedule.py): what a release ships
and what is past, by date, ``--upto`` a lesson, or by name."""

from __future__ import annotations

from datetime import datetime

import pytest
from traitlets.config import Config

from autograder import schedule
from autograder.course import assignments
from autograder.schedule import Schedule, ScheduleError
from autograder.students import edition

ORDER = ["01_value", "02_backward", "03_activations", "04_checkpoint_engine"]
DATES = {
    "01_value": {"release": "2026-09-07", "due": "2026-09-14"},
    "02_backward": {"release": "2026-09-15"},  # no due date: past once 03 is out
    "03_activations": {"release": "2026-09-22", "due": "2026-09-28 18:00"},
}


def plan(dates: dict, when: str, order=ORDER):
    return Schedule(dates=dates).plan(order, datetime.fromisoformat(when))


@pytest.mark.parametrize(
    "when, released, past",
    [
        ("2026-09-01", [], []),
        ("2026-09-07", ["01_value"], []),
        ("2026-09-14 23:00", ["01_value"], []),  # due that day: not past before it ends
        ("2026-09-15", ["01_value", "02_backward"], ["01_value"]),
        ("2026-09-21", ["01_value", "02_backward"], ["01_value"]),
        ("2026-09-22", ["01_value", "02_backward", "03_activations"], ["01_value", "02_backward"]),
        ("2026-09-28 18:01", ["01_value", "02_backward", "03_activations"], ORDER[:3]),
    ],
)
def test_released_by_release_date_past_by_due_date_or_the_next_release(when, released, past):
    got = plan(DATES, when)
    assert got.released == released and got.past == past
    assert got.undated == ["04_checkpoint_engine"]


def test_no_dates_release_everything_at_once_and_nothing_is_past():
    got = Schedule().plan(ORDER)
    assert got.released == ORDER and got.past == [] and got.undated == []


def test_upto_releases_through_a_lesson_and_the_ones_before_are_past():
    got = schedule.upto(ORDER, "03_activations")
    assert got.released == ORDER[:3] and got.past == ORDER[:2]
    with pytest.raises(ScheduleError, match="--upto: no assignment '07_nothing'"):
        schedule.upto(ORDER, "07_nothing")


@pytest.mark.parametrize(
    "dates, words",
    [
        ({"99_nothing": {"release": "2026-09-07"}}, "c.Schedule.dates: no assignment '99_nothing'"),
        ({"01_value": "2026-09-07"}, "c.Schedule.dates['01_value']: expected {\"release\""),
        ({"01_value": {"open": "2026-09-07"}}, "c.Schedule.dates['01_value']: expected"),
        (
            {"01_value": {"release": "2026-13-01"}},
            "c.Schedule.dates['01_value']['release']: '2026-13-01' is not a date",
        ),
        (
            {"01_value": {"release": "2026-09-07", "due": "2026-09-01"}},
            "c.Schedule.dates['01_value']: the due date comes before the release date",
        ),
    ],
)
def test_a_bad_date_or_name_is_one_line_naming_the_setting(dates, words):
    with pytest.raises(ScheduleError) as caught:
        Schedule(dates=dates).plan(ORDER)
    assert str(caught.value).startswith(words) and "\n" not in str(caught.value)


def test_the_schedule_is_read_from_the_course_config():
    config = Config({"Schedule": {"dates": DATES}})
    assert Schedule.for_course(config).dates == DATES
    assert Schedule.for_course().dates == {}


def with_dates(monkeypatch, dates: dict) -> None:
    monkeypatch.setattr(edition, "nbgrader_config", lambda: Config({"Schedule": {"dates": dates}}))


def test_the_edition_follows_the_dates_as_of_a_day(monkeypatch):
    with_dates(monkeypatch, DATES)
    got = edition.edition_plan(as_of=datetime(2026, 9, 22))
    assert got.released == ORDER[:3] and got.past == ORDER[:2]
    named = edition.edition_plan(["01_value"], as_of=datetime(2026, 9, 22))
    assert named.released == ["01_value"] and named.past == ORDER[:2]
    with pytest.raises(edition.ReleaseError, match="not both"):
        edition.edition_plan(["01_value"], upto="02_backward")
    with_dates(monkeypatch, {})
    everything = edition.edition_plan()
    assert everything.released == assignments() and everything.past == []


def test_release_says_what_it_shipped_and_refuses_bad_dates(monkeypatch, tmp_path, capsys):
    with_dates(monkeypatch, DATES)
    assert edition.release(tmp_path / "early", as_of="2026-09-01") == 2
    assert "nothing is released yet" in capsys.readouterr().out
    assert edition.release(tmp_path / "ed", as_of="2026-09-15") == 0
    out = capsys.readouterr().out
    assert "released: 01_value, 02_backward" in out
    assert "past, with the course's version in course/: 01_value" in out
    assert (tmp_path / "ed" / "course" / "01_value" / "value.ipynb").is_file()
    assert not (tmp_path / "ed" / "course" / "02_backward").exists()
    assert edition.release(tmp_path / "bad", as_of="15 September") == 2
    assert "release: --as-of: '15 September' is not a date" in capsys.readouterr().out
    with_dates(monkeypatch, {"01_value": {"release": "someday"}})
    assert edition.release(tmp_path / "bad2") == 2
    out = capsys.readouterr().out
    assert out.strip() == (
        "release: c.Schedule.dates['01_value']['release']: 'someday' is not a date "
        "(YYYY-MM-DD, or YYYY-MM-DD HH:MM)"
    )
