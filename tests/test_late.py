"""Due dates, extensions and the late policy (``c.Schedule``, autograder/schedule.py):
the settings' checks, each student's due date, the policy's arithmetic at its edges,
nbgrader's gradebook kept in step at grade time, grades.csv's columns and the feedback
page of a late submission. Gradebooks are built with nbgrader's API; nothing is graded."""

from __future__ import annotations

import csv
import json
import shutil
from datetime import UTC, datetime, timedelta

import pytest
from bs4 import BeautifulSoup
from helpers import SOLUTIONS, notebook_path

from autograder.feedback.late import with_late_section
from autograder.schedule import (
    LatePolicy,
    Schedule,
    ScheduleError,
    late_duration,
    late_penalty,
    to_utc_naive,
)

A = "01_value"
B = "02_backward"
ORDER = [A, B, "03_activations"]
DAY = 86400
COURSE_ID = "autograd-from-scratch"

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # add_submission


def utc(text: str) -> Schedule:
    return Schedule(dates={A: {"due": text}}, timezone="UTC")


# ---- the settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, words",
    [
        (
            {"extensions": {"99_nothing": {"ada": 2}}},
            "c.Schedule.extensions: no assignment '99_nothing'; the course has 01_value",
        ),
        (
            {"extensions": {A: {"ada": "2026-09-10"}}},
            "c.Schedule.extensions['01_value']['ada']: 2026-09-10 is before the assignment's "
            "due date, 2026-09-14 23:59 UTC",
        ),
        (
            {"extensions": {A: {"ada": "soon"}}},
            "c.Schedule.extensions['01_value']['ada']: 'soon' is not a date",
        ),
        (
            {"extensions": {A: {"ada": [2]}}},
            "c.Schedule.extensions['01_value']['ada']: expected a date (\"YYYY-MM-DD\") or a "
            "number of days, got [2]",
        ),
        ({"extensions": {A: {"ada": -1}}}, "c.Schedule.extensions['01_value']['ada']: -1 days"),
        ({"extensions": {A: ["ada"]}}, "c.Schedule.extensions['01_value']: expected {student"),
        ({"extensions": ["ada"]}, "c.Schedule.extensions: expected {assignment: {student"),
        ({"late_policy": "lots"}, 'c.Schedule.late_policy: expected {} (none), {"per_day"'),
        ({"late_policy": {"weekly": 1}}, "c.Schedule.late_policy: expected"),
        ({"late_policy": {"per_day": 0.1, "zero_after": 3}}, "c.Schedule.late_policy: expected"),
        ({"late_policy": {"per_day": 10}}, "c.Schedule.late_policy['per_day']: 10 is not a share"),
        ({"late_policy": {"per_day": 0}}, "c.Schedule.late_policy['per_day']: 0 is not a share"),
        ({"late_policy": {"per_day": True}}, "c.Schedule.late_policy['per_day']: True is not"),
        (
            {"late_policy": {"zero_after": -1}},
            "c.Schedule.late_policy['zero_after']: -1 is not a number of days",
        ),
        ({"timezone": "Mars/Olympus"}, "c.Schedule.timezone: 'Mars/Olympus' is not a time zone"),
    ],
)
def test_a_setting_that_cannot_be_used_is_one_line_naming_it(settings, words):
    schedule = Schedule(dates={A: {"due": "2026-09-14"}}, timezone="UTC")
    for key, value in settings.items():
        setattr(schedule, key, value)
    with pytest.raises(ScheduleError) as caught:
        schedule.check(ORDER)
    assert str(caught.value).startswith(words), str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "policy, kind", [({}, "none"), (None, "none"), ({"per_day": 0.25}, "per_day")]
)
def test_good_settings_pass(policy, kind):
    schedule = Schedule(
        dates={A: {"due": "2026-09-14"}},
        extensions={A: {"ada": "2026-09-16", "grace": 2, "linus": 0.5, "alan": 0}},
        late_policy=policy,
        timezone="Europe/Berlin",
    ).check(ORDER)
    assert schedule.policy().kind == kind
    assert LatePolicy.parse({"zero_after": 0}) == LatePolicy("zero_after", 0.0)


def test_the_settings_are_read_from_the_course_config():
    from traitlets.config import Config

    config = Config({"Schedule": {"extensions": {A: {"ada": 1}}, "late_policy": {"zero_after": 3}}})
    schedule = Schedule.for_course(config)
    assert schedule.extensions == {A: {"ada": 1}}
    assert schedule.policy() == LatePolicy("zero_after", 3.0)
    assert Schedule.for_course().policy() == LatePolicy()


# ---- due dates -------------------------------------------------------------------------------


def test_due_with_extensions_a_date_or_days():
    schedule = Schedule(
        dates={A: {"due": "2026-09-14 18:00"}},
        extensions={A: {"ada": "2026-09-16", "grace": 2, "alan": 0, "Zoë": 1}},
        timezone="UTC",
    )
    due = datetime(2026, 9, 14, 18, 0, tzinfo=UTC)
    assert schedule.due(A) == due
    assert schedule.due(A, "linus") == due  # no extension
    assert schedule.due(A, "alan") == due  # 0 days: none
    assert schedule.due(A, "grace") == due + timedelta(days=2)
    end_of_16th = schedule.due(A, "ada")
    assert (end_of_16th.date(), end_of_16th.hour, end_of_16th.minute) == (
        datetime(2026, 9, 16).date(),
        23,
        59,
    )
    assert schedule.due(A, "Zoe\u0308") == due + timedelta(days=1)  # Zoë, decomposed
    assert schedule.due(B, "ada") is None  # no due date anywhere


def test_dates_are_in_the_course_time_zone_and_the_gradebook_in_utc():
    berlin = Schedule(dates={A: {"due": "2026-09-14 23:59"}}, timezone="Europe/Berlin")
    assert to_utc_naive(berlin.due(A)) == datetime(2026, 9, 14, 21, 59)  # CEST, UTC+2
    assert berlin.show(berlin.due(A)) == "2026-09-14 23:59 CEST"
    winter = Schedule(dates={A: {"due": "2026-01-14 23:59"}}, timezone="Europe/Berlin")
    assert to_utc_naive(winter.due(A)) == datetime(2026, 1, 14, 22, 59)  # CET, UTC+1
    offset = Schedule(dates={A: {"due": "2026-09-14 23:59+05:00"}}, timezone="Europe/Berlin")
    assert to_utc_naive(offset.due(A)) == datetime(2026, 9, 14, 18, 59)  # its own offset wins
    # A submission time from nbgrader (naive UTC) against the Berlin due date:
    on_time = berlin.lateness(A, "ada", datetime(2026, 9, 14, 21, 59))
    late = berlin.lateness(A, "ada", datetime(2026, 9, 14, 21, 59, 1))
    assert (on_time.seconds, late.seconds) == (0, 1)
    # Releases work on offsets too (an aware date beside naive ones).
    plan = offset.plan(ORDER, datetime(2026, 9, 15, 0, 0))
    assert plan.past == [A]


def test_the_gradebook_due_date_and_extensions_count_where_the_course_sets_none():
    book_due = datetime(2026, 9, 14, 12, 0)  # naive UTC, as nbgrader keeps it
    ext = timedelta(days=1)
    none_here = Schedule(extensions={A: {"grace": 2, "alan": 0}}, timezone="UTC")
    assert none_here.due(A, "ada", book_due=book_due) == book_due.replace(tzinfo=UTC)
    assert none_here.due(A, "ada", book_due=book_due, book_extension=ext) == (
        book_due.replace(tzinfo=UTC) + ext
    )  # nbgrader's own extension
    assert none_here.due(A, "grace", book_due=book_due, book_extension=ext) == (
        book_due.replace(tzinfo=UTC) + timedelta(days=2)
    )  # c.Schedule.extensions names grace: its extension, not nbgrader's
    assert none_here.due(A, "alan", book_due=book_due, book_extension=ext) == (
        book_due.replace(tzinfo=UTC)
    )  # 0 takes nbgrader's back
    # Where c.Schedule sets the due date, it decides: the gradebook's copy is not added again.
    here = utc("2026-09-14 18:00")
    assert here.due(A, "ada", book_due=book_due, book_extension=ext) == here.due(A)
    # A date extension before the gradebook's due date is refused when it is known.
    early = Schedule(extensions={A: {"ada": "2026-09-01"}}, timezone="UTC").check(ORDER)
    with pytest.raises(ScheduleError, match=r"\['ada'\]: 2026-09-01 23:59 UTC is before"):
        early.due(A, "ada", book_due=book_due)


# ---- the policy ------------------------------------------------------------------------------

PER_DAY = LatePolicy("per_day", 0.1)
ZERO_AFTER = LatePolicy("zero_after", 3)


@pytest.mark.parametrize(
    "policy, seconds, penalty",
    [
        (PER_DAY, 0, 0),  # exactly on time
        (PER_DAY, 1, 1.4),  # one second late: one started day
        (PER_DAY, DAY, 1.4),  # exactly one day
        (PER_DAY, DAY + 1, 2.8),  # one second more: two
        (PER_DAY, 26 * 3600, 2.8),
        (PER_DAY, 9 * DAY + 1, 12),  # ten days' worth of 14 points, capped at the score (12)
        (ZERO_AFTER, 1, 0),
        (ZERO_AFTER, 3 * DAY, 0),  # exactly N days: still full score
        (ZERO_AFTER, 3 * DAY + 1, 12),  # one second more: 0
        (LatePolicy("zero_after", 0), 1, 12),
        (LatePolicy(), 30 * DAY, 0),
    ],
)
def test_the_policy_at_its_edges(policy, seconds, penalty):
    points, why = late_penalty(12, 14, seconds, policy)
    assert points == pytest.approx(penalty)
    assert 12 - points >= 0
    assert (why == "") == (seconds == 0) and "\n" not in why


def test_the_explanations_say_how_late_and_what_it_costs():
    assert late_penalty(12, 14, 26 * 3600, PER_DAY)[1] == (
        "1 day 2 h 00 min late: 2 days started × 10% of 14 points = −2.8 points"
    )
    assert late_penalty(1, 14, 26 * 3600, PER_DAY)[1].endswith("= −1 points (all of the score)")
    assert late_penalty(12, 14, 3 * DAY, ZERO_AFTER)[1] == (
        "3 days 0 h 00 min late, within the 3 days the policy allows: no penalty"
    )
    assert late_penalty(12, 14, 3 * DAY + 1, ZERO_AFTER)[1] == (
        "3 days 0 h 00 min late, more than 3 days late: the score is 0 (−12 points)"
    )
    assert late_penalty(12, 14, 90, LatePolicy())[1] == (
        "1 min late; no points are taken for lateness"
    )
    assert [late_duration(s) for s in (0.2, 59, 61, 3600 * 5 + 300)] == [
        "1 s",
        "59 s",
        "1 min",
        "5 h 05 min",
    ]


@pytest.mark.parametrize(
    "submitted, seconds",
    [
        ("2026-09-14 18:00:00", 0),  # exactly on time
        ("2026-09-14 18:00:01", 1),  # one second late
        ("2026-09-14 17:00:00", 0),
        ("2026-09-17 18:00:00", 3 * DAY),  # exactly three days
    ],
)
def test_lateness_in_whole_seconds(submitted, seconds):
    schedule = utc("2026-09-14 18:00")
    assert schedule.lateness(A, "ada", datetime.fromisoformat(submitted)).seconds == seconds


def test_a_due_day_lasts_to_its_end():
    schedule = utc("2026-09-14")
    assert schedule.lateness(A, "ada", datetime(2026, 9, 14, 23, 59, 59)).seconds == 0
    assert schedule.lateness(A, "ada", datetime(2026, 9, 15, 0, 0, 0)).seconds == 1


# ---- the gradebook, at grade time ------------------------------------------------------------


def gradebook(root, students: dict[str, str | None], duedate=None):
    """A gradebook with 01_value (one notebook, two cells: 14 points) and a submission per
    student at the given UTC time (None: not submitted); returns its URL."""
    from nbgrader.api import Gradebook

    from autograder.grade.gradebook import cache_alembic_version

    cache_alembic_version()
    url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(url, COURSE_ID) as gb:
        gb.add_assignment(A, duedate=duedate)
        gb.add_notebook("value", A)
        gb.add_grade_cell("t1", "value", A, max_score=10, cell_type="code")
        gb.add_grade_cell("t2", "value", A, max_score=4, cell_type="code")
        for student, when in students.items():
            gb.add_student(student)
            if when is not None:
                gb.add_submission(A, student, timestamp=when)
                gb.find_grade("t1", "value", A, student).auto_score = 10
                gb.find_grade("t2", "value", A, student).auto_score = 2
        gb.db.commit()
    return url


def submission(url, student):
    from nbgrader.api import Gradebook

    with Gradebook(url, COURSE_ID) as gb:
        sub = gb.find_submission(A, student)
        return sub.assignment.duedate, sub.extension, sub.total_seconds_late


def test_merge_writes_the_due_date_and_extension_so_nbgrader_agrees(tmp_path):
    from autograder.course import open_course
    from autograder.grade.gradebook import merge, sync_schedule

    url = gradebook(tmp_path, {"ada": None, "grace": None})
    course = open_course(tmp_path)
    schedule = Schedule(
        dates={A: {"due": "2026-09-14 18:00"}},
        extensions={A: {"grace": 1}},
        timezone="Europe/Berlin",  # 16:00 UTC
    ).check(course.assignments())
    for student in ("ada", "grace"):
        folder = tmp_path / "submitted" / student / A
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2026-09-15 17:00:00 UTC")  # 25 h late
        totals = merge(course, student, A, folder, None, set(), schedule)
        assert totals.late_seconds == (25 * 3600 if student == "ada" else 3600)
    assert submission(url, "ada") == (datetime(2026, 9, 14, 16, 0), None, 25 * 3600)
    assert submission(url, "grace") == (datetime(2026, 9, 14, 16, 0), timedelta(days=1), 3600)

    # Extensions changed in c.Schedule: the next grade run (sync_schedule) brings every
    # submission in step, graded again or not. Where c.Schedule sets the due date, an
    # extension taken out of it is taken out of the gradebook too.
    changed = Schedule(
        dates={A: {"due": "2026-09-14 18:00"}},
        extensions={A: {"ada": "2026-09-16"}},
        timezone="Europe/Berlin",
    )
    sync_schedule(course, changed, [A])
    assert submission(url, "ada")[1:] == (
        timedelta(days=2, hours=5, minutes=59, seconds=59.999999),
        0,
    )
    assert submission(url, "grace")[1:] == (None, 25 * 3600)


def test_without_a_due_date_here_the_gradebook_keeps_its_own(tmp_path):
    from nbgrader.api import Gradebook

    from autograder.course import open_course
    from autograder.grade.gradebook import sync_schedule

    url = gradebook(
        tmp_path,
        {"ada": datetime(2026, 9, 15, 11, 0), "grace": datetime(2026, 9, 15, 11, 0)},
        duedate=datetime(2026, 9, 14, 12, 0),
    )
    with Gradebook(url, COURSE_ID) as gb:
        gb.grant_extension(A, "ada", days=1)  # nbgrader's own extension
    sync_schedule(open_course(tmp_path), Schedule(extensions={B: {"ada": 1}}), [A])
    assert submission(url, "ada") == (datetime(2026, 9, 14, 12), timedelta(days=1), 0)
    assert submission(url, "grace") == (datetime(2026, 9, 14, 12), None, 23 * 3600)


# ---- export ----------------------------------------------------------------------------------


def test_export_applies_the_policy_and_the_extensions_as_they_are_now(tmp_path):
    from autograder.grade.export import GRADES_HEADER, export

    gradebook(
        tmp_path,
        {
            "ada": datetime(2026, 9, 14, 17, 0),  # on time
            "barbara": datetime(2026, 9, 15, 20, 0),  # 26 h late
            "grace": datetime(2026, 9, 15, 20, 0),  # 26 h late, with 2 days more: on time
            "katherine": None,
        },
    )
    record = tmp_path / "autograded" / "grace" / A / ".autograder.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"note": "cell 3 crashed; submitted 26 h 00 min late"}))
    schedule = Schedule(
        dates={A: {"due": "2026-09-14 18:00"}},
        extensions={A: {"grace": 2}},
        late_policy={"per_day": 0.1},
        timezone="UTC",
    )
    grades = export(root=tmp_path, schedule=schedule)[0]
    with grades.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == GRADES_HEADER and GRADES_HEADER[-2:] == ["late_penalty", "final_score"]
    by = {r["student"]: r for r in rows}
    got = {
        s: (r["score"], r["late_seconds"], r["late_penalty"], r["final_score"])
        for s, r in by.items()
    }
    assert got == {
        "ada": ("12", "0", "0", "12"),
        "barbara": ("12", "93600", "2.8", "9.2"),
        "grace": ("12", "0", "0", "12"),
        "katherine": ("0", "0", "0", "0"),
    }
    assert by["grace"]["note"] == "cell 3 crashed"  # no longer late: the note says so

    # Another policy, no regrading: export again.
    schedule.late_policy = {"zero_after": 1}
    with export(root=tmp_path, schedule=schedule)[0].open(encoding="utf-8") as fh:
        barbara = next(r for r in csv.DictReader(fh) if r["student"] == "barbara")
    assert (barbara["late_penalty"], barbara["final_score"]) == ("12", "0")


def test_export_refuses_a_schedule_it_cannot_use(tmp_path):
    from autograder.grade.export import export

    gradebook(tmp_path, {"ada": datetime(2026, 9, 14, 17, 0)})
    with pytest.raises(ScheduleError, match=r"^c.Schedule.late_policy\['per_day'\]: 5"):
        export(root=tmp_path, schedule=Schedule(late_policy={"per_day": 5}))


# ---- the feedback page ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def late_class(tmp_path_factory):
    """A course folder whose gradebook knows 01_value's cells (nbgrader
    generate_assignment), with ada on time and barbara 26 h late, each "autograded" as the
    solution notebook, with feedback written for a per-day policy."""
    from nbgrader.api import Gradebook

    from autograder.course import open_course
    from autograder.feedback.pages import feedback
    from autograder.grade.gradebook import cache_alembic_version, sync_assignment

    root = tmp_path_factory.mktemp("late-class")
    cache_alembic_version()
    course = open_course(root)
    work = root / "work"
    work.mkdir()
    sync_assignment(course, A, work)
    shutil.rmtree(work)
    solution = notebook_path(SOLUTIONS, A)
    with Gradebook(course.db_url, COURSE_ID) as gb:
        cells = [c.name for nb in gb.find_assignment(A).notebooks for c in nb.grade_cells]
        for student, when in (
            ("ada", datetime(2026, 1, 14, 23, 0)),
            ("barbara", datetime(2026, 1, 17, 1, 59)),
        ):
            gb.add_student(student)
            gb.add_submission(A, student, timestamp=when)
            for cell in cells:
                grade = gb.find_grade(cell, solution.stem, A, student)
                grade.auto_score = grade.max_score
            gb.db.commit()
            folder = root / "autograded" / student / A
            folder.mkdir(parents=True)
            shutil.copy(solution, folder / solution.name)
            (folder / ".autograder.json").write_text(json.dumps({"score": 14, "max_score": 14}))
    schedule = Schedule(
        dates={A: {"due": "2026-01-15 23:59"}}, late_policy={"per_day": 0.1}, timezone="UTC"
    )
    report = feedback(root=root, jobs=1, schedule=schedule)
    assert not report.failures and not report.problems, report
    return root, solution.stem


def page_of(root, student, name) -> str:
    return (root / "feedback" / student / A / f"{name}.html").read_text(encoding="utf-8")


def late_text(page: str) -> str | None:
    section = BeautifulSoup(page, "html.parser").find(id="autograder-late")
    return None if section is None else " ".join(section.get_text(" ").split())


@pytest.mark.xdist_group("late_pages")
def test_a_late_page_says_how_late_against_what_and_what_it_costs(late_class):
    root, name = late_class
    page = page_of(root, "barbara", name)
    assert late_text(page) == (
        "Late submission. Submitted 2026-01-17 01:59 UTC, 1 day 2 h 00 min after the due "
        "date, 2026-01-15 23:59 UTC. Late policy: 10% of the points for each day or part of "
        "a day late. 1 day 2 h 00 min late: 2 days started × 10% of 14 points = −2.8 "
        "points. Score for 01_value: 14 − 2.8 = 11.2 / 14 ."
    )
    soup = BeautifulSoup(page, "html.parser")
    heading = soup.find("h4")
    assert heading.find_next_sibling() is soup.find(id="autograder-late")  # under the title
    assert late_text(page_of(root, "ada", name)) is None  # on time: nothing new
    assert "Late submission" not in page_of(root, "ada", name)


@pytest.mark.xdist_group("late_pages")
def test_the_page_follows_a_new_extension_or_policy_without_grading(late_class):
    from autograder.feedback.pages import feedback

    root, name = late_class
    extended = Schedule(
        dates={A: {"due": "2026-01-15 23:59"}},
        extensions={A: {"barbara": "2026-01-16 23:00"}},
        late_policy={"zero_after": 3},
        timezone="UTC",
    )
    before = page_of(root, "barbara", name)
    report = feedback(root=root, jobs=1, schedule=extended)
    assert report.written == [] and report.current == 2  # nbgrader did not run again
    text = late_text(page_of(root, "barbara", name))
    assert text.startswith(
        "Late submission. Submitted 2026-01-17 01:59 UTC, 2 h 59 min after your extended due "
        "date, 2026-01-16 23:00 UTC (the assignment's: 2026-01-15 23:59 UTC). Late policy: "
        "full score up to 3 days late, 0 after."
    )
    assert text.endswith("Score for 01_value: 14 / 14 .")
    assert page_of(root, "barbara", name).count('id="autograder-late"') == 1
    on_time = Schedule(
        dates={A: {"due": "2026-01-15 23:59"}}, extensions={A: {"barbara": 2}}, timezone="UTC"
    )
    feedback(root=root, jobs=1, schedule=on_time)
    assert late_text(page_of(root, "barbara", name)) is None
    # Back as it was: the same page as first written.
    feedback(
        root=root,
        jobs=1,
        schedule=Schedule(
            dates={A: {"due": "2026-01-15 23:59"}}, late_policy={"per_day": 0.1}, timezone="UTC"
        ),
    )
    assert page_of(root, "barbara", name) == before


def test_the_section_goes_in_one_place_whatever_the_notebook_holds():
    section = '<section id="autograder-late">late</section>'
    page = "<html><body><h4>value (Score: 1 / 2)</h4><h1>x</h1><p>y</p></body></html>"
    once = with_late_section(page, section)
    assert once == page.replace("</h4>", "</h4>" + section)
    assert with_late_section(once, section) == once
    assert with_late_section(once, "") == page
    note_page = "<html><body><h1>01_value: value.ipynb</h1><p>not graded</p></body></html>"
    assert with_late_section(note_page, section) == note_page.replace("</h1>", "</h1>" + section)


# ---- where else the schedule is read -----------------------------------------------------------


def test_grade_refuses_a_schedule_it_cannot_use_before_grading(tmp_path):
    from autograder.grade.run import grade

    bad = Schedule(extensions={A: {"ada": "next week"}})
    with pytest.raises(ScheduleError, match=r"^c.Schedule.extensions\['01_value'\]\['ada'\]"):
        grade(root=tmp_path, schedule=bad, progress=False)
    assert not (tmp_path / "gradebook.db").exists()


def test_the_watcher_shows_points_once_the_students_own_due_date_is_past(tmp_path):
    import io

    from autograder.watch.service import Watcher
    from autograder.watch.settings import Watch

    w = Watcher(tmp_path, settings=Watch(exchange="off"), stream=io.StringIO())
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="seconds")
    w.schedule = Schedule(
        dates={A: {"due": an_hour_ago}}, extensions={A: {"ada": 1, "grace": an_hour_ago}}
    )
    w.due = {A: w.schedule.set_due(A)}
    assert w.level(A, "linus") == w.level(A, "grace") == "all"  # past their due date
    assert w.level(A, "ada") == "hidden"  # a day more: early feedback still
    assert w.level(B, "ada") == "hidden"  # no due date
