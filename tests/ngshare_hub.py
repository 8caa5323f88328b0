"""The course's hub with ngshare courses, started as README's "Run it on a JupyterHub"
starts it: ``python -m autograder hub --plan hub.toml`` as root, on free ports of
127.0.0.1, each course's exchange ``"ngshare"`` (autograder/hub/ngshare.py). The hub runs
ngshare as its managed service (which makes the courses in it) and each course's
formgrader and watch services as the course's grader account; the users are real unix
users (tests/exchange.py, prefix ``ns-``). The first course is the one the tests grade in.
Users' API tokens come from ``jupyterhub token`` (JupyterHub's own command, on the hub's
database), as each user's server gets one. Everything is stopped (the hub's whole process
group) and removed at the end, whether the test passed or failed.

    with NgshareHub(folder, [Planned(course, grader, instructor, students), ...]) as hub:
        hub.token(user), hub.client(user), hub.student_env(user), hub.watch_log()
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

from helpers import VENV_BIN
from test_hub import (  # the hub tests' own
    environment,
    processes_of,
    start_hub,
    stop,
    unmount_environment,
)

from autograder.hub import settings
from autograder.hub.config import free_port
from autograder.hub.launch import CONFIG, PLAN_VARIABLE
from autograder.hub.ngshare import python_folder, url
from autograder.hub.plan import Plan, checked
from autograder.ngshare.client import Client, NgshareError

START = 300  # seconds for the hub, ngshare and the course's services, on two busy cores


class Planned(NamedTuple):  # one course of the plan: id, grader, instructor, students
    id: str
    grader: str
    instructor: str
    students: tuple[str, ...]


def write_plan(folder: Path, courses: list[Planned]) -> Path:
    path = folder / "hub.toml"
    tables = [
        f'[[courses]]\nid = "{c.id}"\nfolder = "courses/{c.id}"\ngrader = "{c.grader}"\n'
        f"instructors = {json.dumps([c.instructor])}\nstudents = {json.dumps(list(c.students))}"
        '\nexchange = "ngshare"\n'
        for c in courses
    ]
    path.write_text(
        f'[hub]\nip = "127.0.0.1"\nport = {free_port()}\nstate = "state"\n'
        f'exchange_root = "exchange"\npython = "{environment(folder)}"\nstart_timeout = 180\n\n'
        '[authenticator]\nkind = "dummy"\npassword = "unused: tokens only"\n\n' + "\n".join(tables),
        encoding="utf-8",
    )
    return path


class NgshareHub:
    def __init__(self, folder: Path, courses: list[Planned]):
        self.folder, self.courses = folder, courses
        first = courses[0]
        self.course, self.grader, self.instructor = first.id, first.grader, first.instructor
        self.plan_path = write_plan(folder, courses)
        self.course_folder = folder / "courses" / first.id
        self.proc: subprocess.Popen | None = None
        self.log = folder / "hub.log"
        self.tokens: dict[str, str] = {}

    @property
    def plan(self) -> Plan:
        return checked(self.plan_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.plan.port}"

    @property
    def ngshare_url(self) -> str:
        return url(self.plan)

    def __enter__(self) -> NgshareHub:
        self.proc = start_hub(self.plan_path, self.log)
        try:
            self._wait()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop(self.proc, wait=60)
            self.proc = None
        unmount_environment(self.folder)

    def _wait(self) -> None:
        """Until the hub, ngshare and every course's watch service answer, and ngshare has
        made the courses (each course's instructor can list its students)."""
        deadline = time.monotonic() + START
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the hub exited:\n{self.tail()}")
            if self._up():
                return
            time.sleep(1)
        raise AssertionError(f"the hub was not ready in {START} s:\n{self.tail()}")

    def _up(self) -> bool:
        for address in (f"{self.url}/hub/api/", f"{self.ngshare_url}healthz"):
            try:
                with urllib.request.urlopen(address, timeout=10):
                    pass
            except (urllib.error.URLError, OSError):
                return False
        if self.tail(1_000_000).count(f"and {self.ngshare_url} every") < len(self.courses):
            return False  # a watch service has not started watching yet
        try:
            for course in self.courses:
                self.client(course.instructor).get(f"students/{course.id}")
        except NgshareError:
            return False
        return True

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def token(self, user: str) -> str:
        """An API token of ``user``, made by ``jupyterhub token`` on the hub's database."""
        if user not in self.tokens:
            env = {**os.environ, PLAN_VARIABLE: str(self.plan_path)}
            proc = subprocess.run(
                [f"{VENV_BIN}/jupyterhub", "token", "-f", str(CONFIG), user],
                cwd=self.plan.state,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            self.tokens[user] = proc.stdout.strip().splitlines()[-1]
        return self.tokens[user]

    def client(self, user: str) -> Client:
        return Client(self.ngshare_url, self.token(user))

    def student_env(self, user: str) -> tuple[str, ...]:
        """What the hub gives ``user``'s server: their token, the hub's API, the settings
        folder the hub wrote for them (the kind's nbgrader settings) and the exchange
        classes' copy on PYTHONPATH."""
        plan = self.plan
        return (
            f"JUPYTERHUB_API_TOKEN={self.token(user)}",
            f"JUPYTERHUB_USER={user}",
            f"JUPYTERHUB_API_URL={self.url}/hub/api",
            f"JUPYTER_CONFIG_PATH={settings.user_folder(plan, user)}",
            f"PYTHONPATH={python_folder(plan)}",
        )

    def watch_log(self) -> str:
        """The watch service's lines in the hub's log."""
        return "\n".join(
            line for line in self.tail(1_000_000).splitlines() if not line.startswith("[")
        )


def read_json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def kill_processes_of(uids: list[int]) -> None:
    """SIGKILL every process of these users (the test's own, by uid), before userdel."""
    for pid in processes_of(set(uids)):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
