"""LTI 1.3 without a hub: a launch's claims made into the grader's record and read back as
untrusted input, and ``export --to lti``'s way to the platform's gradebook through AGS
(PyLTI1p3), against the local platform of tests/lti_platform.py on 127.0.0.1. The hub's
side (a signed launch through a real JupyterHub) is tests/test_hub_lti.py."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import SimpleNamespace

import jwt
import nbformat
import pytest
from lti_platform import AGS_CLAIM, AGS_SCOPES, LTI, LTIPlatform, new_key, private_pem
from traitlets.config import Config

from autograder.errors import GraderError
from autograder.grade.export import GRADES_HEADER
from autograder.lti import launches
from autograder.lti.ags import send_scores
from autograder.lti.launches import Launch, LaunchError, read_launches


@pytest.fixture
def lms():
    with LTIPlatform("http://127.0.0.1:9/login", "http://127.0.0.1:9/callback") as platform:
        platform.tool_key = new_key()
        platform.tool_public_key = platform.tool_key.public_key()
        platform.add_user("ada", sub="sub-ada-1", name="Ada")
        platform.add_user("bob", sub="sub-bob-2", name="Bob")
        yield platform


def claims(lms: LTIPlatform, login: str, **launch) -> dict:
    """The claims of a real id_token from ``lms`` for ``login``'s launch."""
    launch = {"login": login, "context": "course-1", **launch}
    token = lms.id_token(lms.users[login], launch, nonce="n-1")
    return jwt.decode(token, options={"verify_signature": False})


def course(lms: LTIPlatform, root: Path, **settings) -> SimpleNamespace:
    key = root / "tool-key.pem"
    key.write_text(private_pem(lms.tool_key))
    lti = {
        "issuer": lms.issuer,
        "client_id": lms.client_id,
        "token_url": lms.token_url,
        "private_key_file": str(key),
        **settings,
    }
    return SimpleNamespace(root=root, config=Config({"LTI": lti}))


def grades(*rows) -> list[list[str]]:
    """grades.csv's rows: (student, assignment, final score, max, submitted)."""
    out = []
    for student, assignment, score, most, submitted in rows:
        row = dict.fromkeys(GRADES_HEADER, "")
        row.update(student=student, assignment=assignment, score=score, max_score=most)
        row.update(submitted=submitted, final_score=score, late_penalty="0")
        out.append([row[h] for h in GRADES_HEADER])
    return out


def test_a_launch_keeps_what_the_grader_needs_and_reads_back(lms, tmp_path):
    launch = Launch.from_id_token("lt-ada", claims(lms, "ada"))
    assert (launch.sub, launch.issuer, launch.client_id) == (
        "sub-ada-1",
        lms.issuer,
        "autograder-tool",
    )
    assert (launch.context_id, launch.context_label) == ("course-1", "AUTOGRAD")
    assert launch.lineitems == lms.lineitems_url("course-1") and launch.can_score
    path = launches.write(tmp_path, launch)
    assert path == tmp_path / "lti" / "launches" / "lt-ada.json"
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    assert read_launches(tmp_path) == ({"lt-ada": launch}, [])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.pop(LTI + "context"), "claim context: missing"),
        (lambda c: c.update(sub=""), "sub: empty"),
        (lambda c: c.update(sub=["x"]), "sub: expected a string"),
        (lambda c: c[AGS_CLAIM].update(lineitems="file:///etc/passwd"), "not an http(s) URL"),
        (lambda c: c[AGS_CLAIM].update(scope="score"), "scopes: expected a list"),
        (lambda c: c.pop(LTI + "deployment_id"), "deployment_id: expected a string"),
    ],
)
def test_a_launch_without_what_the_grader_needs_is_refused(lms, change, message):
    token = claims(lms, "ada")
    change(token)
    with pytest.raises(LaunchError, match=re.escape(message)):
        Launch.from_id_token("lt-ada", token)


def test_launch_files_are_untrusted_input(lms, tmp_path):
    good = launches.write(tmp_path, Launch.from_id_token("lt-ada", claims(lms, "ada")))
    folder = good.parent
    (folder / "lt-bob.json").write_text(good.read_text())  # ada's launch in bob's file
    (folder / "lt-eve.json").write_text("[1, 2]")
    (folder / "lt-big.json").write_text(" " * (launches.MAX_BYTES + 1))
    (folder / "lt-bad.json").write_text("{not json")
    data = json.loads(good.read_text()) | {"student": "lt-url", "issuer": "javascript:x"}
    (folder / "lt-url.json").write_text(json.dumps(data))
    found, problems = read_launches(tmp_path)
    assert list(found) == ["lt-ada"]
    assert [p.split(": ", 1)[1] for p in problems] == [
        "not JSON",
        f"larger than {launches.MAX_BYTES} bytes",
        "student: 'lt-ada' in the file of 'lt-bob'",
        "not a JSON object",
        "issuer: 'javascript:x' is not an http(s) URL",
    ]
    assert all(len(p.splitlines()) == 1 for p in problems)
    with pytest.raises(LaunchError, match="is not a user name"):
        launches.path_of(tmp_path, "../root")


def test_scores_reach_the_platform_through_ags(lms, tmp_path):
    for login in ("ada", "bob"):
        launches.write(tmp_path, Launch.from_id_token(f"lt-{login}", claims(lms, login)))
    rows = grades(
        ("lt-ada", "01_value", "7.5", "10", "yes"),
        ("lt-bob", "01_value", "0", "10", "no"),
        ("lt-zed", "01_value", "9", "10", "yes"),  # never launched
    )
    path, problems, notes = send_scores(course(lms, tmp_path), tmp_path, GRADES_HEADER, rows)
    (item,) = lms.lineitems["course-1"]  # made by the tool: the LMS course had none
    assert (item["label"], item["tag"], item["scoreMaximum"]) == ("01_value", "01_value", 10)
    (score,) = lms.scores[item["id"]]
    assert {k: score[k] for k in ("userId", "scoreGiven", "scoreMaximum")} == {
        "userId": "sub-ada-1",
        "scoreGiven": 7.5,
        "scoreMaximum": 10,
    }
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")
    assert score["timestamp"].endswith("+00:00")
    assert lms.results(item["id"]) == [
        {
            "id": f"{item['id']}/results/sub-ada-1",
            "scoreOf": item["id"],
            "userId": "sub-ada-1",
            "resultScore": 7.5,
            "resultMaximum": 10,
        }
    ]
    assert problems == [
        "lt-zed: never launched the course from the LMS (no lti/launches/lt-zed.json); "
        "score not sent"
    ]
    assert notes[0] == f"1 score(s) sent to {lms.issuer}"
    assert path.read_text().splitlines()[1] == f"lt-ada,01_value,sub-ada-1,{item['id']},7.5,10"
    # a second export finds the line item the first made (by its tag) and makes no other
    rows = grades(("lt-ada", "01_value", "8", "10", "yes"))
    send_scores(course(lms, tmp_path), tmp_path, GRADES_HEADER, rows)
    assert len(lms.lineitems["course-1"]) == 1
    assert [r["resultScore"] for r in lms.results(item["id"])] == [8]


def test_an_existing_line_item_is_used_and_a_missing_one_is_named(lms, tmp_path):
    lms.add_lineitem("course-1", "Lesson 1: Value", 10, resourceId="lesson-1")
    scopes = [s for s in AGS_SCOPES if not s.endswith("/lineitem")]
    token = claims(lms, "ada")
    token[AGS_CLAIM]["scope"] = scopes  # the LMS lets the tool score, not make line items
    launches.write(tmp_path, Launch.from_id_token("lt-ada", token))
    rows = grades(
        ("lt-ada", "01_value", "6", "10", "yes"), ("lt-ada", "02_backward", "5", "5", "yes")
    )
    mapped = course(lms, tmp_path, lineitems={"01_value": "Lesson 1: Value"})
    _, problems, _ = send_scores(mapped, tmp_path, GRADES_HEADER, rows)
    (item,) = lms.lineitems["course-1"]
    assert [r["resultScore"] for r in lms.results(item["id"])] == [6]
    assert problems == [
        "02_backward: no line item '02_backward' in LMS course AUTOGRAD and no scope to "
        "create it; add it in the LMS"
    ]


def test_platform_unreachable_token_refused_settings_missing(lms, tmp_path):
    launches.write(tmp_path, Launch.from_id_token("lt-ada", claims(lms, "ada")))
    rows = grades(("lt-ada", "01_value", "6", "10", "yes"))
    lms.tool_public_key = new_key().public_key()  # the LMS has another key for the tool
    with pytest.raises(GraderError) as refused:
        send_scores(course(lms, tmp_path), tmp_path, GRADES_HEADER, rows)
    assert str(refused.value).startswith(
        "the LTI platform refused the tool's token request (HTTP 401: client assertion: "
    )
    assert lms.token_requests[-1][0] == 401 and lms.scores == {}
    with pytest.raises(GraderError, match=r"^c.LTI.token_url is not set in nbgrader_config"):
        send_scores(course(lms, tmp_path, token_url=""), tmp_path, GRADES_HEADER, rows)
    settings = course(lms, tmp_path)
    lms.stop()
    with pytest.raises(GraderError, match=r"^the LTI platform is unreachable: http://127"):
        send_scores(settings, tmp_path, GRADES_HEADER, rows)


def test_a_launch_from_another_platform_is_not_scored(lms, tmp_path):
    token = claims(lms, "ada") | {"iss": "https://other.lms.example"}
    launches.write(tmp_path, Launch.from_id_token("lt-ada", token))
    rows = grades(("lt-ada", "01_value", "6", "10", "yes"))
    _, problems, _ = send_scores(course(lms, tmp_path), tmp_path, GRADES_HEADER, rows)
    assert problems == [
        "lt-ada: launched from https://other.lms.example, not c.LTI.issuer; score not sent"
    ]
    assert lms.scores == {}


# ---- the hub's plan: the authenticator kind lti13 (autograder/hub/lti.py) ---------------


def lti_plan(tmp_path: Path, **auth):
    from autograder.hub.plan import from_dict

    (tmp_path / "course").mkdir(exist_ok=True)
    (tmp_path / "course" / "nbgrader_config.py").write_text("")
    (tmp_path / "key.pem").write_text(private_pem(new_key()))
    lms = "https://lms.example.edu"
    raw = {
        "hub": {"ip": "127.0.0.1"},
        "authenticator": {
            "kind": "lti13",
            "issuer": lms,
            "client_id": "tool-1",
            "deployment_ids": ["d-1"],
            "authorize_url": f"{lms}/authorize",
            "jwks_url": f"{lms}/jwks",
            "token_url": f"{lms}/token",
            "tool_key": "key.pem",
            **auth,
        },
        "courses": [
            {
                "id": "autograd",
                "folder": "course",
                "grader": "g",
                "instructors": ["i"],
                "lti_contexts": ["AUTOGRAD-101"],
            }
        ],
    }
    return from_dict(raw, tmp_path / "hub.toml")


def test_the_plan_names_what_an_lti13_hub_misses(tmp_path):
    from autograder.hub.plan import problems

    assert problems(lti_plan(tmp_path), exists=lambda _: True) == []
    bad = lti_plan(
        tmp_path, token_url="", jwks_url="http://lms.example.edu/jwks", tool_key="nokey.pem"
    )
    bad.courses[0].options["lti_contexts"] = []
    assert problems(bad, exists=lambda _: True) == [
        "authenticator lti13: no token_url",
        "authenticator lti13: jwks_url must be https, not http://lms.example.edu/jwks",
        f"authenticator lti13: no tool_key file {tmp_path / 'nokey.pem'}",
        "authenticator lti13: no course has lti_contexts (its LMS courses)",
    ]
    assert (
        "deployment_ids must be a list"
        in problems(lti_plan(tmp_path, deployment_ids="d-1"), exists=lambda _: True)[0]
    )


def test_an_lti13_plan_configures_the_hub_and_the_graders_export(tmp_path):
    from autograder.hub import lti
    from autograder.hub.launch import course_settings

    plan = lti_plan(tmp_path, username_claim="email", username_prefix="u-")
    c = Config()
    lti.configure(c, plan)
    a = c.CourseLTI13Authenticator
    assert c.JupyterHub.authenticator_class == lti.AUTHENTICATOR
    from autograder.hub.kinds import AUTHENTICATORS

    assert not AUTHENTICATORS["lti13"].plan_users_only  # the LMS says who, not the plan
    assert (a.client_id, a.deployment_ids) == ({"tool-1"}, {"d-1"})
    assert (a.username_key, a.username_prefix, a.uri_scheme) == ("email", "u-", "auto")
    assert a.courses == {"AUTOGRAD-101": "autograd"}
    assert a.course_roots == {"autograd": str(tmp_path / "course")}
    grader = plan.courses[0].grader  # nobody launches into a grader's or a service's name
    assert a.no_login == {grader, "autograd", "watch-autograd", "ngshare"}
    text = course_settings(plan, plan.courses[0])
    exec(compile(text, "nbgrader_config_hub.py", "exec"), {"c": (c := Config())})
    assert c.Watch.lti_scores is True
    assert dict(c.LTI) == {
        "issuer": "https://lms.example.edu",
        "client_id": "tool-1",
        "token_url": "https://lms.example.edu/token",
        "private_key_file": str(tmp_path / "key.pem"),
    }


@pytest.mark.slow
def test_watch_sends_each_graded_score_to_the_lms(lms, tmp_path):
    """c.Watch.lti_scores: a submission dropped in the inbox is graded by `watch --once`
    and its score is on the platform after it."""
    from helpers import SOLUTIONS, autograder_cli, notebook_path
    from test_watch import course_at, drop

    scratch = course_at(tmp_path / "course")
    key = tmp_path / "tool-key.pem"
    key.write_text(private_pem(lms.tool_key))
    with (scratch.path / "nbgrader_config.py").open("a") as fh:
        fh.write(
            f"\nc.LTI.issuer = {lms.issuer!r}\nc.LTI.client_id = {lms.client_id!r}\n"
            f"c.LTI.token_url = {lms.token_url!r}\nc.LTI.private_key_file = {str(key)!r}\n"
            "c.Watch.lti_scores = True\nc.Watch.exchange = 'off'\n"
        )
    launches.write(scratch.path, Launch.from_id_token("ada", claims(lms, "ada")))
    drop(scratch, "ada", nbformat.read(notebook_path(SOLUTIONS, "01_value"), as_version=4))
    done = autograder_cli("watch", "--once", cwd=scratch.path, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"01_value: LMS: 1 score(s) sent to {lms.issuer}" in done.stdout, done.stdout[-3000:]
    (item,) = lms.lineitems["course-1"]
    (result,) = lms.results(item["id"])
    assert result["userId"] == "sub-ada-1"
    assert result["resultScore"] == result["resultMaximum"] == item["scoreMaximum"] > 0


# ---- the hub's side of a launch, after ltiauthenticator's checks (hub/lti_auth.py) ----------


def authenticator(tmp_path: Path, **settings):
    from autograder.hub.lti_auth import CourseLTI13Authenticator

    defaults = {
        "deployment_ids": {"deployment-1"},
        "courses": {"course-1": "autograd"},
        "course_roots": {"autograd": str(tmp_path)},
        "username_prefix": "lt-",
        "create_system_users": False,
        "instructors": {"lt-teacher"},
        "no_login": {"lt-grader"},
    }
    return CourseLTI13Authenticator(**(defaults | settings))


def refused(auth, token) -> str:
    from tornado.web import HTTPError

    with pytest.raises(HTTPError) as e:
        asyncio.run(auth.authenticate(SimpleNamespace(), token))
    assert e.value.status_code == 403
    return e.value.log_message


def test_a_checked_launch_logs_in_records_and_joins_the_course(lms, tmp_path):
    auth, handler = authenticator(tmp_path), SimpleNamespace()
    assert asyncio.run(auth.authenticate(handler, claims(lms, "ada"))) == {"name": "lt-sub-ada-1"}
    assert handler.lti_group == "nbgrader-autograd"
    assert read_launches(tmp_path)[0]["lt-sub-ada-1"].sub == "sub-ada-1"
    assert auth.username_key == "sub" and auth.allow_all


def test_the_hub_refuses_a_launch_it_cannot_place(lms, tmp_path):
    auth = authenticator(tmp_path)
    wrong = claims(lms, "ada") | {LTI + "deployment_id": "deployment-2"}
    assert refused(auth, wrong) == "deployment_id 'deployment-2' is not this tool's"
    lms.contexts["course-2"] = {"id": "course-2", "label": "OTHER", "title": "Other"}
    other = claims(lms, "ada", context="course-2")
    assert refused(auth, other) == "LMS course 'OTHER' is not a course of this hub"
    long = claims(lms, "ada") | {"sub": "f" * 36}
    assert refused(auth, long) == f"sub {'f' * 36!r}: not a unix user name"
    teacher = claims(lms, "ada") | {"sub": "teacher"}
    assert refused(auth, teacher) == "lt-teacher is an instructor: the LMS gave no instructor role"
    teacher[LTI + "roles"] = ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]
    handler = SimpleNamespace()
    assert asyncio.run(auth.authenticate(handler, teacher)) == {"name": "lt-teacher"}
    assert not hasattr(handler, "lti_group")  # the plan's groups hold instructors
    grader = claims(lms, "ada") | {"sub": "GRADER"}
    assert (
        refused(auth, grader) == "lt-grader is a grader's or a service's name: nobody logs in as it"
    )
    root = authenticator(tmp_path, username_prefix="")
    assert refused(root, claims(lms, "ada") | {"sub": "root"}) == (
        "root is a system account: nobody logs in as it"
    )
    assert list(read_launches(tmp_path)[0]) == ["lt-teacher"]


def test_the_hub_serves_the_tools_public_key(tmp_path):
    from pylti1p3.registration import Registration

    from autograder.lti.ags import public_pem

    key = tmp_path / "tool-key.pem"
    key.write_text(private_pem(new_key()))
    jwk = authenticator(tmp_path, tool_key_file=str(key)).tool_jwk()
    assert jwk == dict(Registration.get_jwk(public_pem(key.read_text())))
    assert jwk["kid"] and jwk["alg"] == "RS256" and "d" not in jwk  # no private part


def test_a_launch_opens_no_account_of_the_machine_that_no_launch_made(lms, tmp_path):
    """With accounts made on first launch, a claim that names an existing account (a staff
    member's, a service's) is refused unless the plan names it or a launch made it."""
    import os
    import secrets
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root: makes a unix account")
    staff = f"lt-staff-{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", staff], check=True)
    try:
        made = tmp_path / "made"
        auth = authenticator(tmp_path, username_prefix="", create_system_users=True)
        auth.made_dir = str(made)
        token = claims(lms, "ada") | {"sub": staff}
        assert refused(auth, token) == f"{staff} is an account of this machine that no launch made"
        made.mkdir()
        (made / staff).touch()  # an earlier launch made it
        assert asyncio.run(auth.authenticate(SimpleNamespace(), token)) == {"name": staff}
        auth.made_dir, auth.plan_users = "", {staff}  # or the plan names it
        assert asyncio.run(auth.authenticate(SimpleNamespace(), token)) == {"name": staff}
    finally:
        subprocess.run(["userdel", staff], check=False)
