"""The course on a real JupyterHub, as README "Run it on a JupyterHub" runs it.

One hub for the module, started by ``python -m autograder hub --plan FILE`` (README's
command) as root, on free ports of 127.0.0.1, with two courses: each a copy of this
repository owned by its grader account, its own instructor and student, nbgrader's
filesystem exchange in a temporary folder, a formgrader service and a watch service.
The users are real unix users (useradd, prefix ``hb-``), removed after the module with
every process they still run; the hub's process group is stopped too, pass or fail.
They log in with their passwords through PAM (``kind = "pam"``, as a class would).

Chromium (Playwright, /usr/bin/chromium) then does what a class does: a student of the
first course fetches 01_value in the Assignments tab, fills it (the solution's code, put
through the Jupyter contents API), validates and submits it; that course's watch service
grades it and the student fetches the feedback in the tab; the instructor sees the
submission in the course's formgrader. The second course's student sees neither the
first course's assignment nor its feedback; the first course's instructor is refused the
second course's formgrader. Screenshots go to docs/images/. The tests run in this order
(one xdist group): the instructor's and the second course's follow the first student's
submission.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT, SOLUTIONS

from autograder.hub import runas
from autograder.hub.config import free_port

pytestmark = [pytest.mark.hub, pytest.mark.xdist_group("hub")]

CHROMIUM = Path("/usr/bin/chromium")
A = "01_value"
PREFIX = "hb-"
START_TIMEOUT = 300  # s: the hub, its services, on a busy 2-core machine
FEEDBACK_WITHIN = 180  # s: from Submit to the feedback in the Assignments tab
TIMEOUT = 180_000  # ms: each browser step

# README "Run it on a JupyterHub" shows these command lines; the tests run them.
HUB_COMMAND = "python -m autograder hub --plan hub.toml"
RELEASE_COMMANDS = (
    "nbgrader generate_assignment 01_value --force",
    "nbgrader release_assignment 01_value --force",
)
# In the environment's checkout (/srv/autograder): students reach .venv and nothing else.
CLOSE_COMMAND = "chmod 0711 . && find . -mindepth 1 -maxdepth 1 ! -name .venv -exec chmod go= {} +"
PROBE = Path(__file__).with_name("hub_probe.py")
GRADING_SLEEP = 40  # s: the resubmitted notebook keeps its grading cluster up this long


# ---- the hub: users, courses, plan, process ---------------------------------------------


@dataclass
class Hub:
    root: Path
    url: str
    password: str
    users: dict[str, str]  # role (g1, i1, s1, g2, i2, s2) -> unix user
    courses: dict[str, Path]  # course id -> folder
    log: Path
    pid: int = 0  # the hub's process (JupyterHub, once the command has prepared)

    def grader_run(self, course: str, *argv: str) -> subprocess.CompletedProcess:
        """``argv`` as the course's grader in its folder (README's commands do this)."""
        grader = self.users["g1" if course == COURSES[0] else "g2"]
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
        proc = subprocess.run(
            [*runas.prefix(grader), *argv],
            cwd=self.courses[course],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stderr[-3000:]}"
        return proc

    def home(self, role: str) -> Path:
        return self.root / "home" / self.users[role]


COURSES = ("autograd-a", "autograd-b")


def useradd(name: str, home: Path, password: str) -> None:
    """A unix user with a HOME of their own (0700) and a password (PAM logs them in)."""
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
        check=True,
        capture_output=True,
    )
    home.chmod(0o700)
    subprocess.run(["chpasswd"], input=f"{name}:{password}", text=True, check=True)


def processes_of(uids: set[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
    return found


def remove_users(names: list[str]) -> None:
    """Stop every process of these users (by pid), then userdel them with their HOME."""
    uids = set()
    for name in names:
        with contextlib.suppress(KeyError):
            uids.add(pwd.getpwnam(name).pw_uid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes_of(uids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while processes_of(uids) and time.monotonic() < deadline:
            time.sleep(0.2)
    for name in names:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


def copy_course(dest: Path) -> None:
    """A checkout of this repository: its tracked files as they are in the work tree."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name, follow_symlinks=False)


def chown_tree(top: Path, user: str) -> None:
    subprocess.run(["chown", "-R", f"{user}:{user}", str(top)], check=True)


def environment(root: Path) -> Path:
    """README's /srv/autograder: a checkout of this repository with its environment in
    ``.venv``, closed by README's CLOSE_COMMAND; returns its python. The environment is
    the tests' own, bound there read-only (``mount --bind``: a real folder, as bubblewrap
    needs it for grading kernels); ``unmount_environment`` undoes it, before the folder
    is removed."""
    top = root / "srv" / "autograder"
    copy_course(top)
    venv = top / ".venv"
    venv.mkdir()
    subprocess.run(["mount", "--bind", str(Path(sys.prefix).resolve()), str(venv)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(venv)], check=True)
    subprocess.run(["sh", "-c", CLOSE_COMMAND], cwd=top, check=True)
    return venv / "bin" / "python"


def unmount_environment(root: Path) -> None:
    """Undo ``environment``'s mount (what removes ``root`` then cannot reach the tests'
    environment; read-only, it could not delete it either)."""
    venv = root / "srv" / "autograder" / ".venv"

    def mounted() -> bool:  # a bind mount on the same filesystem: os.path.ismount misses it
        return subprocess.run(["mountpoint", "-q", str(venv)]).returncode == 0

    for _ in range(5):
        if not mounted():
            return
        subprocess.run(["umount", str(venv)], capture_output=True)
        if mounted():
            subprocess.run(["umount", "--lazy", str(venv)], capture_output=True)
    raise RuntimeError(f"{venv} is still mounted")


def write_plan(root: Path, port: int, users: dict[str, str], python: Path) -> Path:
    def course(n: int, course_id: str) -> str:
        return (
            f'[[courses]]\nid = "{course_id}"\nfolder = "courses/{course_id}"\n'
            f'grader = "{users[f"g{n}"]}"\ninstructors = ["{users[f"i{n}"]}"]\n'
            f'students = ["{users[f"s{n}"]}"]\nexchange = "filesystem"\n'
        )

    plan = root / "hub.toml"
    plan.write_text(
        f'[hub]\nip = "127.0.0.1"\nport = {port}\nstate = "state"\n'
        f'exchange_root = "exchange"\npython = "{python}"\nstart_timeout = 180\n\n'
        '[authenticator]\nkind = "pam"\n\n'
        f'[users]\nstudents = ["{users["s1"]}", "{users["s2"]}"]\n\n'
        + course(1, COURSES[0])
        + "\n"
        + course(2, COURSES[1]),
        encoding="utf-8",
    )
    return plan


def wait_for_hub(hub: Hub, proc: subprocess.Popen) -> None:
    """Until the hub answers, both formgrader services answer through it and both watch
    services say what they watch (in the hub's log), or the deadline."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the hub exited ({proc.returncode}):\n{hub.log.read_text()[-4000:]}")
        if all(service_up(hub, c) and watching(hub, c) for c in COURSES):
            return
        time.sleep(1)
    pytest.fail(f"the hub did not start in {START_TIMEOUT} s:\n{hub.log.read_text()[-4000:]}")


def service_up(hub: Hub, course: str) -> bool:
    """The course's formgrader service answers through the hub's proxy (its /api, open)."""
    try:
        with urllib.request.urlopen(f"{hub.url}/services/{course}/api", timeout=10) as r:
            return "version" in json.loads(r.read())
    except (OSError, ValueError):
        return False


def watching(hub: Hub, course: str) -> bool:
    inbound = hub.root / "exchange" / course / "inbound"
    return f"watching {inbound}" in hub.log.read_text(errors="replace")


def start_hub(plan: Path, log: Path) -> subprocess.Popen:
    """README's command for ``plan``, in a session of its own (``stop`` ends it), its output
    into ``log``."""
    command = HUB_COMMAND.replace("python", sys.executable, 1).replace("hub.toml", str(plan))
    with log.open("wb") as out:
        return subprocess.Popen(
            command.split(), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen, wait: float = 30) -> None:
    """SIGTERM to the hub's process group, SIGKILL to what is left of it after ``wait``
    seconds; then to whatever the hub started in a session of its own and left running
    (JupyterHub starts its proxy so, and stops it only when it stops cleanly)."""
    import psutil

    try:
        started = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        started = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(wait)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    for child in started:
        with contextlib.suppress(psutil.Error):
            child.kill()


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    if os.geteuid() != 0:
        pytest.fail("the hub tests need root (the hub starts servers as its users)")
    root = Path(tempfile.mkdtemp(prefix="hb-hub-"))
    root.chmod(0o755)
    tag = secrets.token_hex(2)
    users = {role: f"{PREFIX}{tag}-{role}" for role in ("g1", "i1", "s1", "g2", "i2", "s2")}
    proc = None
    try:
        password = secrets.token_urlsafe(12)
        for name in users.values():
            useradd(name, root / "home" / name, password)
        courses = {}
        for n, course_id in enumerate(COURSES, 1):
            folder = root / "courses" / course_id
            copy_course(folder)
            chown_tree(folder, users[f"g{n}"])
            courses[course_id] = folder
        port = free_port()
        plan = write_plan(root, port, users, environment(root))
        log = root / "hub.log"
        proc = start_hub(plan, log)
        hub = Hub(root, f"http://127.0.0.1:{port}", password, users, courses, log, proc.pid)
        wait_for_hub(hub, proc)
        for course in COURSES:  # README's commands, as the course's grader in its folder
            for line in RELEASE_COMMANDS:
                hub.grader_run(course, *line.split())
        yield hub
    finally:
        if proc is not None:
            stop(proc)
        remove_users(list(users.values()))
        unmount_environment(root)
        shutil.rmtree(root, ignore_errors=True)


# ---- the browser ------------------------------------------------------------------------

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
# A notebook's new content, through the Jupyter contents API, as JupyterLab saves it.
PUT_NOTEBOOK = """async ([base, path, content]) => {
  const xsrf = decodeURIComponent((document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '');
  const r = await fetch(base + 'api/contents/' + path, {method: 'PUT',
    headers: {'Content-Type': 'application/json', 'X-XSRFToken': xsrf},
    body: JSON.stringify({type: 'notebook', format: 'json', content})});
  return r.status;
}"""


@pytest.fixture(scope="module")
def browser(hub):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@contextlib.contextmanager
def logged_in(browser, hub: Hub, role: str):
    """A page of ``role``'s own browser, logged in on the hub's login page, on their lab."""
    user = hub.users[role]
    context = browser.new_context(viewport={"width": 1300, "height": 800})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    try:
        page.goto(f"{hub.url}/hub/login")
        page.fill("#username_input", user)
        page.fill("#password_input", hub.password)
        page.click("#login_submit")
        page.wait_for_url(re.compile(f"/user/{user}/lab"))
        page.wait_for_selector(".lm-MenuBar-itemLabel >> text=Nbgrader")
        yield page
    finally:
        context.close()


def open_assignments(page) -> None:
    """nbgrader's Assignments tab, from the Nbgrader menu."""
    page.click(".lm-MenuBar-itemLabel >> text=Nbgrader")
    page.click(".lm-Menu-itemLabel >> text=Assignment List")
    page.wait_for_selector("#released_assignments_list")


def solved_release(course: Path) -> dict:
    """The released 01_value with the solution's code in its answer cells (a student's
    work: nbgrader's metadata as released, the code as solutions/ has it)."""
    released = nbformat.read(course / "notebooks" / A / "value.ipynb", as_version=4)
    solved = nbformat.read(SOLUTIONS / A / "value.ipynb", as_version=4)
    for cell, answer in zip(released.cells, solved.cells, strict=True):
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = answer.source
    return json.loads(nbformat.writes(released))


def api_json(page, hub: Hub, role: str, path: str):
    """GET ``path`` on ``role``'s own server with their browser's cookies."""
    response = page.request.get(f"{hub.url}/user/{hub.users[role]}/{path}", max_redirects=0)
    assert response.status == 200, (path, response.status, response.text()[:300])
    return response.json()


def test_a_student_fetches_validates_submits_and_reads_feedback_in_the_tab(hub, browser):
    course = COURSES[0]
    user = hub.users["s1"]
    with logged_in(browser, hub, "s1") as page:
        assert page.url.endswith(f"/lab/tree/{course}/START-HERE.md"), page.url
        page.wait_for_selector(".jp-RenderedMarkdown >> text=Start here")
        open_assignments(page)
        page.click(f"#released_assignments_list .list_item:has-text('{A}') >> text=Fetch")
        page.wait_for_selector(f"#fetched_assignments_list .list_item:has-text('{A}')")
        path = f"{course}/{A}/value.ipynb"  # Exchange.path_includes_course
        status = page.evaluate(
            PUT_NOTEBOOK, [f"/user/{user}/", path, solved_release(hub.courses[course])]
        )
        assert status == 200, status

        page.goto(f"{hub.url}/user/{user}/lab/tree/{path}")
        page.click(".jp-NotebookPanel-toolbar >> text=Validate")
        page.wait_for_function(
            "() => /Success|failed|error/i.test("
            "document.querySelector('.jp-Dialog-content')?.innerText ?? '')"
        )
        assert "Success! Your notebook passes all the tests." in page.inner_text(
            ".jp-Dialog-content"
        )
        page.click(".jp-Dialog-button >> text=Ok")

        open_assignments(page)
        page.click(f"#fetched_assignments_list .list_item:has-text('{A}') >> text=Submit")
        submitted = page.locator("#submitted_assignments_list")
        submitted.locator(f".list_item:has-text('{A}')").first.wait_for()
        started = time.monotonic()
        while "feedback available to fetch" not in submitted.inner_text():
            assert time.monotonic() - started < FEEDBACK_WITHIN, hub.log.read_text()[-3000:]
            page.click("#refresh_assignments_list")
            page.wait_for_timeout(3000)
        page.click("#submitted_assignments_list >> text=Fetch Feedback")
        submitted.locator("text=view feedback").wait_for()
        seconds = time.monotonic() - started
        print(f"submitted to feedback in the tab: {seconds:.0f} s")
        assert seconds < FEEDBACK_WITHIN
        shot(page, "hub-student-feedback.png")

        # what fetch_feedback put in the student's HOME: the watch service's page
        (fetched,) = (hub.home("s1") / course / A / "feedback").glob("*/value.html")
        text = fetched.read_text()
        assert "✓ passed" in text and "Your submissions" in text


def shot(page, name: str) -> None:
    """A screenshot of the page. The docs' (docs/images/) are made anew only when asked,
    `SCREENSHOTS=docs/images make hub`; otherwise it goes to a scratch folder (it is still
    taken: the page renders)."""
    wanted = os.environ.get("SCREENSHOTS")
    folder = Path(wanted) if wanted else Path(tempfile.gettempdir()) / "hub-shots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name))


def test_the_instructor_sees_the_submission_in_the_courses_formgrader(hub, browser):
    course = COURSES[0]
    with logged_in(browser, hub, "i1") as page:
        # nbgrader's course list: a link to the formgrader of each course they teach
        courses = api_json(page, hub, "i1", "formgraders")
        (link,) = courses["value"]
        assert link["course_id"] == course, courses
        page.goto(link["url"])  # the service's lab, opening nbgrader's Formgrader tab
        formgrader = page.frame_locator("#formgrader iframe")
        formgrader.locator("text=Manage Assignments").first.wait_for()
        page.goto(f"{hub.url}/services/{course}/formgrader/manage_submissions/{A}")
        row = page.locator(f"tr:has-text('{hub.users['s1']}')")
        row.wait_for()
        assert "graded" in row.inner_text(), row.inner_text()
        shot(page, "hub-formgrader.png")


def test_the_other_course_sees_nothing_of_the_first(hub, browser):
    first, second = COURSES
    with logged_in(browser, hub, "s2") as page:
        assert page.url.endswith(f"/lab/tree/{second}/START-HERE.md"), page.url
        assert api_json(page, hub, "s2", "courses")["value"] == [second]
        page.click(".lm-MenuBar-itemLabel >> text=Nbgrader")  # a student's tools only
        shown = page.locator(".lm-Menu-itemLabel:visible").all_inner_texts()
        assert shown == ["Assignment List"], shown
        page.keyboard.press("Escape")
        open_assignments(page)
        released = page.locator(f"#released_assignments_list .list_item:has-text('{A}')")
        released.first.wait_for()
        assert first not in page.inner_text("#assignments")
        listing = api_json(page, hub, "s2", f"assignments?course_id={first}")
        assert listing["value"] == [], listing
        response = page.goto(f"{hub.url}/services/{first}/formgrader")
        assert response.status == 403


def test_an_instructor_is_refused_the_other_courses_formgrader(hub, browser):
    with logged_in(browser, hub, "i1") as page:
        response = page.goto(f"{hub.url}/services/{COURSES[1]}/formgrader")
        assert response.status == 403
        assert f"permission to access JupyterHub service {COURSES[1]}" in page.inner_text("body")
        response = page.goto(f"{hub.url}/services/{COURSES[0]}/formgrader")
        assert response.status == 200


def test_the_hubs_own_files_are_roots_and_each_course_has_its_own_exchange(hub):
    private = hub.root / "state" / "hub"
    assert (private / "jupyterhub.sqlite").is_file()
    assert private.stat().st_mode & 0o077 == 0
    for course in COURSES:  # solutions, submissions, the gradebook: the grader's alone
        assert hub.courses[course].stat().st_mode & 0o077 == 0, course
        solution = next((hub.courses[course] / "source" / A).glob("*.ipynb"))
        student = pwd.getpwnam(hub.users["s1"])
        ids = [f"--reuid={student.pw_uid}", f"--regid={student.pw_gid}", "--init-groups"]
        read = subprocess.run(["setpriv", *ids, "cat", str(solution)], capture_output=True)
        assert read.returncode != 0 and b"Permission denied" in read.stderr, read
    for n, course in enumerate(COURSES, 1):
        folder = hub.root / "exchange" / course
        assert folder.owner() == hub.users[f"g{n}"]
        assert (folder / "outbound" / A).is_dir()
        assert (hub.courses[course] / "nbgrader_config_hub.py").read_text().count(course) >= 1


# ---- what a student's shell reaches -------------------------------------------------------


def as_student(hub: Hub, role: str, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    """``argv`` run as ``role``'s unix user (setpriv --reuid/--regid --init-groups)."""
    python = str(hub.root / "srv" / "autograder" / ".venv" / "bin" / "python")
    env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run(
        [*runas.prefix(hub.users[role], python), *argv],
        env={**env, **kwargs.pop("env", {})},
        capture_output=True,
        text=True,
        timeout=kwargs.pop("timeout", 120),
        **kwargs,
    )


def test_a_student_reads_no_answer_and_no_classmates_home(hub):
    env = hub.root / "srv" / "autograder"
    course = hub.courses[COURSES[0]]
    closed = [
        env / "solutions" / A / "value.ipynb",
        env / "source" / A / "value.ipynb",
        env / "source" / ".reference" / "refgrad" / "engine.py",
        env / "tests" / "pasted_engines.py",
        course / "source" / A / "value.ipynb",
        course / "gradebook.db",
        hub.home("s1") / COURSES[0] / "START-HERE.md",
        hub.home("i1") / ".bashrc",
    ]
    for path in closed:
        assert path.exists(), path
        read = as_student(hub, "s2", "cat", str(path))
        assert read.returncode != 0 and "Permission denied" in read.stderr, (path, read)
    listing = as_student(hub, "s2", "ls", str(hub.home("s1")))
    assert "Permission denied" in listing.stderr, listing
    opened = as_student(hub, "s2", "cat", str(env / ".venv" / "pyvenv.cfg"))  # what it needs
    assert opened.returncode == 0 and "home" in opened.stdout, opened
    for role in ("s1", "s2", "i1"):
        home = hub.home(role)
        assert home.stat().st_mode & 0o077 == 0, role
        inner = home / (COURSES[0] if role != "s2" else COURSES[1])
        assert inner.stat().st_mode & 0o077 == 0, (role, oct(inner.stat().st_mode))


def test_hub_check_names_a_planted_answer_and_an_open_home_one_line_each(hub):
    env = hub.root / "srv" / "autograder"
    plan = hub.root / "hub.toml"
    command = [sys.executable, "-m", "autograder", "hub", "--plan", str(plan), "--check"]
    clean = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr
    planted = env / "notes"
    planted.mkdir(mode=0o755)
    planted.chmod(0o755)
    shutil.copy(SOLUTIONS / A / "value.ipynb", planted / "mine.ipynb")
    (planted / "mine.ipynb").chmod(0o644)
    home = hub.home("s2")
    home.chmod(0o755)
    try:
        found = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(planted)
        home.chmod(0o700)
    assert found.returncode == 1, found
    lines = found.stderr.splitlines()
    assert lines == [
        f"hub.toml: {hub.users['s2']}'s home {home} is open to others (0755): chmod 0700 {home}",
        f"hub.toml: {planted / 'mine.ipynb'} is readable by students and holds an answer ({A})",
    ], lines


def listening_inodes(pids: set[int]) -> dict[int, int]:
    """The sockets the processes ``pids`` hold: inode -> pid."""
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        found[int(target[8:-1])] = pid
    return found


def hubs_processes(hub: Hub) -> set[int]:
    """The hub's processes, its services' and every hub user's (the graders' included)."""
    import psutil

    uids = {pwd.getpwnam(u).pw_uid for u in hub.users.values()}
    tree = psutil.Process(hub.pid).children(recursive=True)
    return {hub.pid, *(p.pid for p in tree), *processes_of(uids)}


def commands_of(uid: int) -> list[str]:
    import psutil

    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.uids().real == uid:
                found.append(" ".join(proc.cmdline())[:160])
    return found


def sandboxed_kernel_sockets(uid: int) -> list[str]:
    """The unix sockets of the grading kernels ``uid`` runs under bubblewrap: in the ipc
    folder its command binds (kernel/bwrap.py), in a network of the sandbox's own."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            argv = proc.cmdline()
            if proc.uids().real == uid and Path(argv[0]).name == "bwrap":
                for at, arg in enumerate(argv[:-2]):
                    if arg == "--bind" and argv[at + 1].endswith("/ipc"):
                        found += [str(p) for p in Path(argv[at + 1]).glob("kernel-*")]
    return list(dict.fromkeys(found))  # bwrap in bwrap: each names the folder


def test_a_students_shell_finds_no_door_to_the_grader_during_grading(hub):
    """s1 submits again (a changed notebook, so that it is graded); while the course's
    watch grades it, s2 tries every socket of the hub and its services with the probe."""
    import psutil

    course = COURSES[0]
    notebook = hub.home("s1") / course / A / "value.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source += f"\nimport time\ntime.sleep({GRADING_SLEEP})  # the cluster stays up"
    nbformat.write(nb, notebook)
    user = pwd.getpwnam(hub.users["s1"])
    os.chown(notebook, user.pw_uid, user.pw_gid)
    config = hub.root / "state" / "jupyter" / "student-filesystem"
    submit = as_student(
        hub,
        "s1",
        "nbgrader",
        "submit",
        A,
        "--course",
        course,
        # the CLI, not the server: no hub token to ask for the groups with (it only checks)
        "--Authenticator.plugin_class=nbgrader.auth.base.NoAuthPlugin",
        cwd=hub.home("s1"),
        env={"JUPYTER_CONFIG_PATH": str(config), "HOME": str(hub.home("s1"))},
    )
    assert submit.returncode == 0, submit.stderr[-2000:]
    grader = pwd.getpwnam(hub.users["g1"]).pw_uid
    deadline = time.monotonic() + FEEDBACK_WITHIN
    cluster: set[int] = set()
    # the formgrader's port, and the cluster's: its scheduler, a nanny and a worker
    while time.monotonic() < deadline and len(cluster) < 4:
        cluster = set()
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.uids().real == grader:
                    for c in proc.net_connections("tcp"):
                        if c.status == psutil.CONN_LISTEN:
                            cluster.add(c.laddr.port)
        time.sleep(0.2)
    assert len(cluster) >= 4, f"no grading cluster seen: {cluster}\n{hub.log.read_text()[-2000:]}"
    kernels: list[str] = []  # the grading kernel's channels: its sandbox's own network
    within = time.monotonic() + GRADING_SLEEP / 2
    while time.monotonic() < within and not kernels:
        kernels = sandboxed_kernel_sockets(grader)
        time.sleep(0.2)
    running = commands_of(grader)
    print("the grader runs:", *running, sep="\n")
    sockets = listening_inodes(hubs_processes(hub))  # the grader's first: it grades now
    order = sorted(sockets, key=lambda inode: psutil.Process(sockets[inode]).uids().real != grader)
    paths = [f"/user/{u}/api/contents" for u in hub.users.values()]
    paths += [f"/services/{c}/api/contents" for c in COURSES]
    paths = [x for path in paths for x in ("--path", path)]
    paths += [x for path in kernels for x in ("--socket", path)]
    probe = as_student(hub, "s2", "python", "-I", str(PROBE), *paths, *map(str, order), timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    tried = [json.loads(line) for line in probe.stdout.splitlines()]
    print(f"{len(tried)} sockets tried:", *(json.dumps(t) for t in tried), sep="\n")
    served = [t for t in tried if t["served"]]
    assert served == [], served
    ports = {int(t["address"].rsplit(":", 1)[1]) for t in tried if t["kind"] != "unix"}
    assert cluster & ports, (cluster, ports)  # the grading cluster's, tried while it ran
    refused = {t["address"] for t in tried if "Permission denied" in t["detail"]}
    assert kernels and set(kernels) <= refused, (kernels, running, tried)
    protocols = {t["protocol"] for t in tried}
    assert {"http", "dask"} <= protocols, tried  # the cluster's ports answered (refusing)
