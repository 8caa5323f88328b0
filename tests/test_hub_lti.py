"""LTI 1.3 on a real JupyterHub: a student launches the course from the LMS, their score
goes back to the LMS's gradebook (docs/grading.md, "LTI 1.3: launch from the LMS, grades
back to it").

The LMS is tests/lti_platform.py, run here on 127.0.0.1 (its keys, OIDC login, signed
id_tokens, OAuth 2 token endpoint, AGS line items, scores and results). The hub is
``python -m autograder hub --plan FILE`` as root, with the plan's authenticator kind
``lti13`` and one course (a copy of the course, owned by its grader account). Unix users
are prefixed ``lt-``; every one of them, and every process they run, is removed after the
module, pass or fail; the hub's process group is stopped too.

The launch goes the way a browser goes, through an HTTP client that follows the real
redirects and posts the platform's form: platform, the hub's login URL, the platform's
authorization endpoint, the form's signed id_token to the hub's callback. Then:

- the hub shows the student (its API), in the course's group ``nbgrader-<course>``; their
  unix user was made; their server starts; the grader's record of the launch is there;
- in Chromium (Playwright), another student's click on the link in the LMS ends in their
  own JupyterLab on the hub, at the course's start page (docs/images/lti-launch-lab.png);
- forged launches (another key, a wrong nonce, audience or deployment, expired, an LMS
  course that is not on the hub) are refused, and no user is made;
- the student's submission of 01_value is graded (``python -m autograder grade``) and
  ``export --to lti`` sends the score; the test reads it back through AGS, from the
  platform's results endpoint, with the tool's key (PyLTI1p3).
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
import requests
from helpers import SOLUTIONS, ScratchCourse, notebook_path
from lti_platform import LTIPlatform, new_key, private_pem
from test_hub import (  # the hub tests' own
    chown_tree,
    environment,
    remove_users,
    shot,
    start_hub,
    stop,
    unmount_environment,
    useradd,
)

from autograder.hub import runas
from autograder.hub.config import free_port
from autograder.lti.ags import public_pem

pytestmark = [pytest.mark.hub, pytest.mark.slow, pytest.mark.xdist_group("hub_lti")]

A = "01_value"
COURSE = "autograd-lti"
PREFIX = "lt-"
START_TIMEOUT = 300  # s: the hub and its services on a busy 2-core machine
CHROMIUM = Path("/usr/bin/chromium")


@dataclass
class LTIHub:
    root: Path
    url: str
    token: str  # an admin service's API token, for the test to read the hub
    lms: LTIPlatform
    course: Path
    grader: str
    student: str  # the unix user the hub makes for the LMS user "ada"
    log: Path

    def api(self, path: str, method: str = "GET") -> dict:
        request = urllib.request.Request(f"{self.url}/hub/api{path}", method=method)
        request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
        return json.loads(body) if body else {}

    def users(self) -> set[str]:
        return {u["name"] for u in self.api("/users")}

    def as_grader(self, *argv: str) -> subprocess.CompletedProcess:
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
        return subprocess.run(
            [*runas.prefix(self.grader), *argv],
            cwd=self.course,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )


class _Form(HTMLParser):
    """The action and fields of the first form of a page."""

    def __init__(self):
        super().__init__()
        self.action, self.fields = "", {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and not self.action:
            self.action = a.get("action", "")
        elif tag == "input" and a.get("name"):
            self.fields[a["name"]] = a.get("value", "")


def launch(lms: LTIPlatform, login: str, context: str = "course-1"):
    """A student's click on the course's link in the LMS, followed as a browser follows
    it, up to the hub's answer to the platform's form: (the session, that answer)."""
    session = requests.Session()
    page = session.get(lms.launch_url(login, context), timeout=120)
    assert page.status_code == 200, (page.status_code, page.text[:500])
    form = _Form()
    form.feed(page.text)
    assert form.action.endswith("/hub/lti13/oauth_callback"), page.text[:500]
    assert set(form.fields) == {"id_token", "state"}
    answer = session.post(form.action, data=form.fields, allow_redirects=False, timeout=120)
    return session, answer


def write_plan(root: Path, port: int, lms: LTIPlatform, grader: str, instructor: str) -> Path:
    plan = root / "hub.toml"
    (root / "probe.token").write_text(secrets.token_hex(16))
    plan.write_text(
        f"""[hub]
ip = "127.0.0.1"
port = {port}
state = "state"
exchange_root = "exchange"
python = "{environment(root)}"
start_timeout = 180

[authenticator]
kind = "lti13"
issuer = "{lms.issuer}"
client_id = "{lms.client_id}"
deployment_ids = ["{lms.deployment_id}"]
authorize_url = "{lms.authorize_url}"
jwks_url = "{lms.jwks_url}"
token_url = "{lms.token_url}"
tool_key = "tool-key.pem"
username_claim = "sub"
username_prefix = "{PREFIX}"

[[courses]]
id = "{COURSE}"
folder = "course"
grader = "{grader}"
instructors = ["{instructor}"]
students = []
exchange = "filesystem"
lti_contexts = ["course-1"]

[[services]]
name = "lt-probe"
url = "http://127.0.0.1:{free_port()}"
api_token_file = "{root / "probe.token"}"
admin = true
""",
        encoding="utf-8",
    )
    return plan


def wait_for_hub(hub: LTIHub, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the hub exited ({proc.returncode}):\n{hub.log.read_text()[-4000:]}")
        with contextlib.suppress(OSError):
            hub.api("/users")
            return
        time.sleep(1)
    pytest.fail(f"the hub did not start in {START_TIMEOUT} s:\n{hub.log.read_text()[-4000:]}")


@pytest.fixture(scope="module")
def hub() -> Iterator[LTIHub]:
    if os.geteuid() != 0:
        pytest.fail("the hub tests need root (the hub starts servers as its users)")
    tag = secrets.token_hex(2)  # the users' names: lt-<tag>-g, lt-s<tag>, ...
    root = Path(tempfile.mkdtemp(prefix=f"lt-hub-{tag}-"))
    root.chmod(0o755)  # the users' homes and the course are in it
    grader, instructor = f"{PREFIX}{tag}-g", f"{PREFIX}{tag}-i"
    lms_users = {"ada": f"s{tag}", "bob": f"b{tag}", "mallory": f"m{tag}", "eve": f"e{tag}"}
    made = [grader, instructor, *(PREFIX + sub for sub in lms_users.values())]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    lms = LTIPlatform(
        f"{url}/hub/lti13/oauth_login",
        f"{url}/hub/lti13/oauth_callback",
        tool_jwks_url=f"{url}/hub/lti13/jwks",
        target_link_uri=f"{url}/hub/spawn",
    )
    lms.contexts["course-2"] = {"id": "course-2", "label": "OTHER", "title": "Not here"}
    for login, sub in lms_users.items():
        lms.add_user(login, sub=sub, name=login.title())
    proc = None
    try:
        lms.start()
        for name in (grader, instructor):
            useradd(name, root / "home" / name, secrets.token_urlsafe(12))  # never used
        course = ScratchCourse(root / "course", [A]).path
        key = root / "tool-key.pem"
        key.write_text(private_pem(new_key()))
        os.chown(key, 0, pwd.getpwnam(grader).pw_gid)
        key.chmod(0o640)  # the hub (root) and the course's grader read it
        plan = write_plan(root, port, lms, grader, instructor)
        chown_tree(course, grader)
        log = root / "hub.log"
        proc = start_hub(plan, log)
        token = (root / "probe.token").read_text()
        hub = LTIHub(root, url, token, lms, course, grader, PREFIX + lms_users["ada"], log)
        wait_for_hub(hub, proc)
        yield hub
    finally:
        if proc is not None:
            stop(proc)
        lms.stop()
        remove_users(made)
        unmount_environment(root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def launched(hub: LTIHub):
    """Ada's launch from the LMS: (her session, the hub's answer to the platform's form)."""
    return launch(hub.lms, "ada")


def test_a_signed_launch_logs_the_student_in_and_their_server_starts(hub, launched):
    session, answer = launched
    assert answer.status_code == 302, (answer.status_code, answer.text[:1000])
    assert answer.headers["Location"] == "/hub/spawn"
    user = hub.api(f"/users/{hub.student}")
    assert f"nbgrader-{COURSE}" in user["groups"]
    assert pwd.getpwnam(hub.student).pw_dir == f"/home/{hub.student}"
    path = hub.course / "lti" / "launches" / f"{hub.student}.json"
    assert path.stat().st_uid == pwd.getpwnam(hub.grader).pw_uid  # the grader reads it
    record = json.loads(path.read_text())
    assert (record["sub"], record["context_id"]) == (hub.lms.users["ada"].sub, "course-1")
    assert record["lineitems"] == hub.lms.lineitems_url("course-1")
    # the student's browser goes on to /hub/spawn: their server starts, as their unix user
    session.get(f"{hub.url}/hub/spawn", allow_redirects=False, timeout=120)
    deadline = time.monotonic() + 240
    server = {}
    while time.monotonic() < deadline:
        server = hub.api(f"/users/{hub.student}").get("servers", {}).get("", {})
        if server.get("ready"):
            break
        time.sleep(2)
    assert server.get("ready"), (server, hub.log.read_text()[-3000:])
    pid = server["state"]["pid"] if "state" in server else None
    if pid:
        assert Path(f"/proc/{pid}").stat().st_uid == pwd.getpwnam(hub.student).pw_uid


@pytest.mark.parametrize(
    ("forge", "status", "why"),
    [
        ({"key": True}, 400, "Signature verification failed"),
        ({"nonce": "0" * 64}, 400, "OAuth nonce mismatch"),
        ({"aud": "another-tool"}, 401, "Audience doesn't match"),
        ({"expired": True}, 400, "Signature has expired"),
        ({"deployment_id": "another-deployment"}, 403, "is not this tool's"),
    ],
    ids=["key", "nonce", "audience", "expired", "deployment"],
)
def test_a_forged_launch_is_refused(hub, forge, status, why):
    hub.lms.forge(**forge)
    _, answer = launch(hub.lms, "mallory")
    assert answer.status_code == status, (answer.status_code, answer.text[-1500:])
    assert why in html.unescape(answer.text)
    mallory = PREFIX + hub.lms.users["mallory"].sub
    assert mallory not in hub.users()
    with pytest.raises(KeyError):
        pwd.getpwnam(mallory)


def test_a_launch_from_an_lms_course_not_on_the_hub_is_refused(hub):
    _, answer = launch(hub.lms, "eve", context="course-2")
    assert answer.status_code == 403, (answer.status_code, answer.text[-1500:])
    assert "LMS course 'OTHER' is not a course of this hub" in html.unescape(answer.text)
    assert PREFIX + hub.lms.users["eve"].sub not in hub.users()


def test_the_graded_score_reaches_the_lms_gradebook(hub, launched):
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.lineitem import LineItem
    from pylti1p3.registration import Registration
    from pylti1p3.service_connector import ServiceConnector

    assert launched[1].status_code == 302
    done = hub.as_grader("nbgrader", "generate_assignment", A, "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    folder = hub.course / "submitted" / hub.student / A
    folder.mkdir(parents=True)
    shutil.copy(notebook_path(SOLUTIONS, A), folder / notebook_path(SOLUTIONS, A).name)
    chown_tree(folder.parent, hub.grader)
    graded = hub.as_grader(sys.executable, "-m", "autograder", "grade", A)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    sent = hub.as_grader(sys.executable, "-m", "autograder", "export", A, "--to", "lti")
    assert sent.returncode == 0, sent.stdout[-2000:] + sent.stderr[-2000:]
    assert f"note: 1 score(s) sent to {hub.lms.issuer}" in sent.stdout
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}", COURSE) as gb:
        submission = gb.find_submission(A, hub.student)
        score, most = submission.score, submission.max_score
    assert score == most > 0
    # read it back through AGS, as the LMS's gradebook has it, with the tool's key
    key = (hub.root / "tool-key.pem").read_text()
    registration = (
        Registration()
        .set_issuer(hub.lms.issuer)
        .set_client_id(hub.lms.client_id)
        .set_auth_token_url(hub.lms.token_url)
        .set_tool_private_key(key)
        .set_tool_public_key(public_pem(key))  # its kid
    )
    record = json.loads((hub.course / "lti" / "launches" / f"{hub.student}.json").read_text())
    ags = AssignmentsGradesService(
        ServiceConnector(registration),
        {"scope": record["scopes"], "lineitems": record["lineitems"]},
    )
    (item,) = [i for i in ags.get_lineitems() if i.get("tag") == A]
    assert item["scoreMaximum"] == most
    (result,) = ags.get_grades(LineItem(item))
    assert result["userId"] == hub.lms.users["ada"].sub
    assert (result["resultScore"], result["resultMaximum"]) == (score, most)
    assert re.fullmatch(r"lt-s[0-9a-f]{4}", hub.student)


def test_in_chromium_a_click_in_the_lms_opens_the_students_lab(hub):
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: scripts/setup --test installs it")
    bob = PREFIX + hub.lms.users["bob"].sub
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(240_000)
            page.goto(hub.lms.launch_url("bob"))  # the platform's form posts itself
            page.wait_for_url(re.compile(rf"/user/{bob}/lab"), timeout=240_000)
            page.wait_for_selector("#jp-main-dock-panel", timeout=240_000)
            page.wait_for_selector(".jp-RenderedMarkdown h1", timeout=240_000)
            assert "START-HERE.md" in page.url
            assert "Start here" in page.inner_text(".jp-RenderedMarkdown h1")
            shot(page, "lti-launch-lab.png")
        finally:
            browser.close()
    assert f"nbgrader-{COURSE}" in hub.api(f"/users/{bob}")["groups"]
