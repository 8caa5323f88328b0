"""What the grader believes of a submission from ngshare (autograder/ngshare/client.py,
autograder/watch/ngshare.py), without processes: ngshare's answers are untrusted input
(names, kinds, sizes, count, total bytes, base64), the student is ngshare's record, the
time is ngshare's capped at the watcher's. tests/test_ngshare_hub.py runs the real thing."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autograder.ngshare import exchange
from autograder.ngshare.client import (
    Limits,
    NgshareError,
    TooLarge,
    Unreachable,
    check_files,
    check_name,
    pack,
    unpack,
)
from autograder.watch.ngshare import NgshareSource, Remote, parse_key, stamp_time
from autograder.watch.tree import Bounds

LIMITS = Limits(max_bytes=1000, max_files=3, max_depth=2)
STAMP = "2026-11-28 00:20:01.123456"


def entry(path, data: bytes = b"{}") -> dict:
    return {"path": path, "content": base64.encodebytes(data).decode()}


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../x.ipynb", "leaves its folder"),
        ("a/../../x", "leaves its folder"),
        ("./x", "leaves its folder"),
        ("/etc/passwd", "not a relative path"),
        ("a//b", "not a relative path"),
        ("a/", "not a relative path"),
        ("..\\..\\x.ipynb", "not a plain name"),
        ("x\n.ipynb", "not a plain name"),
        ("x\x00", "not a plain name"),
        ("é.ipynb", "not a plain name"),
        ("a/b/c", "nests more than 2"),
        (".partial-1/x", "leaves its folder"),
        ("", "without a name"),
        (None, "without a name"),
        (7, "without a name"),
        ("x" * 300, "not a plain name"),
    ],
)
def test_a_file_name_that_could_leave_the_folder_is_refused(name, why):
    assert why in check_name(name, LIMITS)


def test_plain_names_pass():
    for name in ("01_value.ipynb", "data/x-1.csv", "timestamp.txt", "a b (1).ipynb"):
        assert check_name(name, LIMITS) == ""


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"path": "x"}, "not a list"),
        ([entry(f"f{i}") for i in range(4)], "more than 3 files"),
        ([entry("a", b"x" * 600), entry("b", b"x" * 600)], "more than 0.000953674 MB"),
        ([entry("a"), entry("a")], "comes twice"),
        ([{"path": "a", "content": "!!!not base64"}], "not valid base64"),
        ([{"path": "a", "content": "QUJ"}], "not valid base64"),
        ([{"path": "a"}], "has no content"),
        ([{"path": "a", "content": 5}], "has no content"),
        (["a"], "without a name"),
        ([entry("../a")], "leaves its folder"),
    ],
)
def test_a_file_list_past_its_bounds_or_badly_encoded_is_refused(files, why):
    with pytest.raises(NgshareError, match=why.replace("(", r"\(")):
        check_files(files, LIMITS)


def test_a_file_list_within_bounds_is_decoded(tmp_path):
    files = check_files([entry("a.ipynb", b"abc"), entry("d/b.txt", b"")], LIMITS)
    assert files == [("a.ipynb", b"abc"), ("d/b.txt", b"")]
    unpack(files, tmp_path / "out")
    assert (tmp_path / "out" / "a.ipynb").read_bytes() == b"abc"
    assert sorted(e["path"] for e in pack(tmp_path / "out")) == ["a.ipynb", "d/b.txt"]


def test_a_name_that_is_both_a_file_and_a_folder_writes_nothing(tmp_path):
    files = check_files([entry("a"), entry("a/b")], LIMITS)
    with pytest.raises(NgshareError, match="cannot be written"):
        unpack(files, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_the_longest_answer_read_covers_the_largest_allowed_submission():
    big = Limits(max_bytes=2_000_000, max_files=2)
    answer = json.dumps(
        {"success": True, "files": [entry("a", b"\xff" * 1_000_000), entry("b", b"\0" * 10**6)]}
    )
    assert len(answer) <= big.answer_bytes < 2 * len(answer)


def test_ngshare_keys_and_times_parse_back():
    remote = Remote("ada", "01_value", STAMP)
    assert parse_key(remote.key) == remote
    assert stamp_time(STAMP) == datetime(2026, 11, 28, 0, 20, 1, 123456, UTC)
    assert stamp_time(STAMP + " UTC") == stamp_time(STAMP)
    assert stamp_time("yesterday") is None


class FakeNgshare:
    """ngshare's answers, as a test writes them; ``asked`` records each limit."""

    def __init__(self, submissions: dict[tuple[str, str, str], list[dict]]):
        self.submissions = submissions
        self.asked: list[tuple[str, int, dict]] = []

    def get(self, path: str, limit: int = 1 << 26, **params: str) -> dict:
        self.asked.append((path, limit, params))
        parts = path.split("/")
        if parts[0] == "assignments":
            return {"success": True, "assignments": sorted({a for _, a, _ in self.submissions})}
        if parts[0] == "submissions":
            rows = [
                {"student_id": s, "timestamp": t}
                for s, a, t in self.submissions
                if a == parts[2] and "/" not in s
            ]
            return {"success": True, "submissions": [*rows, {"student_id": 5}, "junk"]}
        files = self.submissions[(parts[3], parts[2], params["timestamp"])]
        if params.get("list_only") == "true":
            files = [{"path": f.get("path")} for f in files]
        text = json.dumps({"success": True, "files": files})
        if len(text) > limit:
            raise TooLarge("too long")
        return json.loads(text)


def source(tmp_path: Path, submissions) -> tuple[NgshareSource, FakeNgshare]:
    fake = FakeNgshare(submissions)
    return NgshareSource(fake, "course", tmp_path / "fetched"), fake


def test_the_student_is_ngshares_record_and_the_time_ngshares_capped_at_the_watchers(tmp_path):
    claim = "2020-01-01 00:00:00.000000 UTC"
    files = [entry("01_value.ipynb"), entry("timestamp.txt", claim.encode())]
    src, _ = source(tmp_path, {("bob", "01_value", STAMP): files})
    (remote,) = src.listing(set())
    assert remote == Remote("bob", "01_value", STAMP)
    early = datetime(2026, 11, 28, tzinfo=UTC).timestamp()
    arrival = src.fetch(remote, Bounds(), now=early)
    assert (arrival.student, arrival.source, arrival.key) == ("bob", "ngshare", remote.key)
    assert arrival.submitted == datetime(2026, 11, 28, tzinfo=UTC)  # capped at first sight
    assert arrival.claimed == datetime(2020, 1, 1, tzinfo=UTC)  # kept, never counted
    later = src.fetch(remote, Bounds(), now=datetime(2027, 1, 1, tzinfo=UTC).timestamp())
    assert later.submitted == stamp_time(STAMP)
    assert src.listing({remote.key}) == []


def test_an_oversized_submission_is_refused_before_its_content_is_read_whole(tmp_path):
    files = [entry("01_value.ipynb", b"x" * 5000)]
    src, fake = source(tmp_path, {("bob", "01_value", STAMP): files})
    with pytest.raises(NgshareError, match=r"more than 0\.00\d+ MB"):
        src.fetch(Remote("bob", "01_value", STAMP), Bounds(max_bytes=1000), now=2e9)
    assert fake.asked[-1][1] == Limits(1000, 500, 16).answer_bytes
    assert not (tmp_path / "fetched").exists()


def test_too_many_or_traversing_names_are_refused_before_any_content_is_asked_for(tmp_path):
    many = [entry(f"f{i}") for i in range(20)]
    bad = [entry("..\\..\\etc\\cron.d\\x")]
    src, fake = source(tmp_path, {("a", "01_value", STAMP): many, ("b", "01_value", STAMP): bad})
    for student, why in (("a", "more than 10 files"), ("b", "not a plain name")):
        with pytest.raises(NgshareError, match=why):
            src.fetch(Remote(student, "01_value", STAMP), Bounds(max_files=10), now=2e9)
        assert fake.asked[-1][2].get("list_only") == "true"
    assert not (tmp_path / "fetched").exists()


def test_a_student_id_or_time_that_cannot_be_used_is_refused(tmp_path):
    src, _ = source(tmp_path, {})
    with pytest.raises(NgshareError, match="student id"):
        src.fetch(Remote("-rf *", "01_value", STAMP), Bounds(), now=2e9)
    with pytest.raises(NgshareError, match="does not parse"):
        src.fetch(Remote("ada", "01_value", "soon"), Bounds(), now=2e9)


def test_configure_names_a_class_for_every_exchange_kind():
    from traitlets.config import Config
    from traitlets.utils.importstring import import_item

    c = Config()
    exchange.configure(c, "http://127.0.0.1:1/services/ngshare/")
    kinds = dict(c.ExchangeFactory)
    assert set(kinds) == {"exchange", *exchange.KINDS}
    for name in kinds.values():
        assert import_item(name).__module__ == exchange.__name__
    assert c.Ngshare.url.endswith("/services/ngshare/")


# ---- the hub's exchange kind "ngshare" (autograder/hub/ngshare.py) ----------------------


def ngshare_plan(tmp_path: Path):
    from helpers import ROOT

    from autograder.hub.plan import from_dict

    course = {"folder": str(ROOT), "grader": "g", "instructors": ["barbara"], "students": ["ada"]}
    raw = {
        "hub": {"ip": "0.0.0.0", "port": 8123, "state": str(tmp_path / "state")},
        "authenticator": {"kind": "dummy", "password": "x"},
        "courses": [
            {**course, "id": "fall", "exchange": "ngshare"},
            {**course, "id": "spring", "exchange": "ngshare", "grader": "h"},
        ],
    }
    return from_dict(raw, tmp_path / "hub.toml")


def test_a_plan_with_ngshare_courses_is_accepted(tmp_path):
    from autograder.hub.plan import problems

    found = problems(ngshare_plan(tmp_path), exists=lambda name: True)
    assert not [p for p in found if "exchange" in p], found


def test_the_ngshare_kind_sets_users_the_course_and_one_service(tmp_path):
    from traitlets.config import Config

    from autograder.hub import kinds
    from autograder.hub import ngshare as kind

    plan = ngshare_plan(tmp_path)
    fall, _ = plan.courses
    url = "http://127.0.0.1:8123/services/ngshare/"
    users = kind.user_settings(plan, [fall])
    assert users["Ngshare"] == {"url": url}
    assert users["ExchangeFactory"]["submit"] == "autograder.ngshare.exchange.NgshareSubmit"
    c = Config()
    exec(kind.course_settings(plan, fall), {"c": c})
    assert (c.Watch.ngshare_url, c.Watch.exchange, c.Ngshare.url) == (url, "off", url)
    assert "ngshare_course" not in c.Watch  # the watcher makes no course: it is no admin
    c = Config()
    c.JupyterHub.services = [{"name": "fall"}]
    c.Spawner.environment = {"PATH": "/bin"}
    for course in plan.courses:
        kinds.EXCHANGES["ngshare"].configure(c, plan, course)
    (entry,) = [s for s in c.JupyterHub.services if s["name"] == "ngshare"]
    assert len(c.JupyterHub.services) == 2 and entry["url"].startswith("http://127.0.0.1:")
    assert entry["command"][entry["command"].index("--admins") + 1] == "ngshare"  # itself
    assert "user" not in entry  # the hub's own (root's): no course account reads its token
    roster = plan.state / "ngshare" / "courses.json"
    assert entry["environment"]["AUTOGRADER_NGSHARE_COURSES"] == str(roster)
    assert c.Spawner.environment == {"PATH": "/bin", "PYTHONPATH": str(plan.state / "python")}
    kind.prepare(plan, fall)
    shipped = plan.state / "python" / "autograder" / "ngshare" / "exchange.py"
    assert shipped.stat().st_mode & 0o777 == 0o644
    assert (plan.state / "ngshare").stat().st_mode & 0o777 == 0o700
    assert roster.stat().st_mode & 0o777 == 0o600
    assert json.loads(roster.read_text()) == {
        "fall": {"instructors": ["fall", "watch-fall", "barbara"], "students": ["ada"]},
        "spring": {"instructors": ["spring", "watch-spring", "barbara"], "students": ["ada"]},
    }


@pytest.mark.parametrize("name", ["ngshare", "fall", "watch-spring"])
def test_a_user_named_as_a_service_ngshare_knows_is_named(tmp_path, name):
    from dataclasses import replace

    from autograder.hub.plan import problems

    plan = ngshare_plan(tmp_path)
    fall, spring = plan.courses
    plan = replace(plan, courses=(replace(fall, students=("ada", name)), spring))
    found = [p for p in problems(plan, exists=lambda n: True) if "named as a service" in p]
    assert len(found) == 1 and f"user {name} is named as a service (ngshare" in found[0], found


class Flaky:
    """ngshare not answering yet, then answering."""

    def __init__(self, misses: int):
        self.misses, self.posted = misses, []

    def post(self, path, **params):
        if self.misses:
            self.misses -= 1
            raise Unreachable(f"POST {path}: ngshare cannot be reached (refused)")
        self.posted.append(path)
        return {"success": True, "status": []}


def test_ngshare_makes_its_courses_when_it_can_and_says_when_it_cannot(capsys):
    from autograder.ngshare.service import enrol_all

    people = {"fall": {"instructors": ["fall", "watch-fall", "barbara"], "students": ["ada"]}}
    flaky = Flaky(misses=1)
    enrol_all(flaky, people, within=30)
    assert flaky.posted == [
        "course/fall",
        "instructor/fall/fall",
        "instructor/fall/watch-fall",
        "instructor/fall/barbara",
        "students/fall",
    ]
    assert capsys.readouterr().err == "ngshare: courses made: fall\n"
    enrol_all(Flaky(misses=10**6), people, within=0.5)
    said = capsys.readouterr().err
    assert said.startswith("ngshare: courses not made (fall): POST course/fall: ngshare cannot")
    assert said.count("\n") == 1


class Handler:
    """What ngshare's checks read of a request: the token's user, the admins."""

    def __init__(self, name: str, kind: str):
        from types import SimpleNamespace

        self.model = {"name": name, "kind": kind}
        self.user = SimpleNamespace(id=name)
        self.application = SimpleNamespace(admin=["ngshare"])


def test_ngshares_admin_is_the_service_never_a_user_of_its_name(monkeypatch):
    from ngshare import ngshare as app

    from autograder.ngshare import service

    monkeypatch.setattr(app.MyRequestHandler, "user_for_token", lambda self, t: self.model)
    monkeypatch.setattr(app.MyHelpers, "is_admin", app.MyHelpers.is_admin)
    service._admins_are_services()
    service._admins_are_services()  # once is enough: a second call changes nothing

    def admin(name: str, kind: str) -> bool:
        handler = Handler(name, kind)
        app.MyRequestHandler.user_for_token(handler, "t")
        return app.MyHelpers.is_admin(handler)

    assert admin("ngshare", "service")
    assert not admin("ngshare", "user")
    assert not admin("watch-fall", "service")


class Api:
    """ngshare for a release: the assignment exists; ``submissions`` of it."""

    def __init__(self, submissions: int):
        self.submissions, self.calls = submissions, []

    def post(self, path, **params):
        self.calls.append(("POST", path))
        if len(self.calls) == 1:
            raise NgshareError(f"POST {path}: 409 Assignment already exists")
        return {"success": True}

    def get(self, path, **params):
        self.calls.append(("GET", path))
        return {"success": True, "submissions": [{"student_id": "ada"}] * self.submissions}

    def delete(self, path):
        self.calls.append(("DELETE", path))
        return {"success": True}


@pytest.mark.parametrize("submissions", [0, 2])
def test_a_forced_release_never_deletes_students_submissions(tmp_path, monkeypatch, submissions):
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError

    api = Api(submissions)
    monkeypatch.setattr(exchange.Ngshare, "api", property(lambda self: api))
    monkeypatch.setattr(exchange.default.ExchangeReleaseAssignment, "copy_files", lambda s: None)
    coursedir = CourseDirectory(course_id="fall", assignment_id="01_value")
    step = exchange.NgshareReleaseAssignment(coursedir=coursedir, authenticator=None, force=True)
    step.dest_path = str(tmp_path)
    if not submissions:
        step.copy_files()
        assert ("DELETE", "assignment/fall/01_value") in api.calls
        return
    with pytest.raises(ExchangeError) as raised:
        step.copy_files()
    assert str(raised.value) == (
        "Not released: --force would delete the 2 submissions of 01_value in ngshare"
    )
    assert [m for m, _ in api.calls] == ["POST", "GET"]  # nothing deleted


def test_a_watch_on_ngshare_without_a_token_says_so(tmp_path, monkeypatch):
    from autograder.watch.settings import Watch, WatchError

    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    assert Watch().ngshare("c", tmp_path) is None
    url = "http://127.0.0.1:1/services/ngshare/"
    with pytest.raises(WatchError, match=r"^c\.Watch\.ngshare_url is set but JUPYTERHUB_API_TOKEN"):
        Watch(ngshare_url=url).ngshare("c", tmp_path)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "t")
    assert Watch(ngshare_url=url).ngshare("c", tmp_path).course == "c"


@pytest.mark.parametrize("kind", ["NgshareCollect", "NgshareReleaseFeedback"])
def test_collect_and_release_feedback_say_in_one_line_that_watch_does_them(kind):
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError

    step = getattr(exchange, kind)(coursedir=CourseDirectory(), authenticator=None)
    with pytest.raises(ExchangeError, match=r"^With ngshare, `python -m autograder watch` "):
        step.start()
