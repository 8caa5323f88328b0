"""A real JupyterHub on 127.0.0.1 (free ports) with ngshare as its managed service, set as
``python -m autograder hub`` sets a course whose exchange is "ngshare" (the plan's kind,
autograder/hub/ngshare.py: its ``configure`` gives the service entry, its ``prepare``
the exchange classes' copy in ``<state>/python``). The course's services are here too,
by the names the launcher gives them (``<course>``, the formgrader, and
``watch-<course>``), with tokens the test knows; users' API tokens come from the Hub's
API (an admin service of the test's own), as a user's server gets one. Stopped (its
whole process group) at the end, whether the test passed or failed.

    with NgshareHub(folder, course_id, students=[...]) as hub:
        token = hub.token("ns-ada-...")
        hub.service_tokens[f"watch-{course_id}"]
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from helpers import VENV_BIN

from autograder.hub import kinds
from autograder.hub.ngshare import python_folder, url
from autograder.hub.plan import Plan, from_dict
from autograder.ngshare.client import Client

START = 240  # seconds for the Hub and ngshare to answer, on two busy cores
ADMIN = "ns-test-admin"  # the test's own service: makes users' tokens


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """``argv`` in a session of its own (``stop`` ends all of it), its output into ``log``."""
    with log.open("w") as out:
        return subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen, wait: float = 60) -> None:
    """SIGTERM to ``proc``'s whole process group (started with start_new_session), then
    SIGKILL to what is left of it after ``wait`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(wait)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


class NgshareHub:
    def __init__(self, folder: Path, course: str, students: list[str]):
        self.folder, self.course = folder, course
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.plan: Plan = from_dict(
            {
                "hub": {"ip": "127.0.0.1", "port": self.port, "state": str(folder)},
                "authenticator": {"kind": "dummy"},
                "courses": [
                    {
                        "id": course,
                        "folder": str(folder / "course"),
                        "grader": "nobody",
                        "students": students,
                        "exchange": "ngshare",
                    }
                ],
            },
            folder / "hub.toml",
        )
        self.ngshare_url = url(self.plan)
        self.python_path = python_folder(self.plan)
        self.admin_token = secrets.token_hex(32)
        names = (course, f"watch-{course}")
        self.service_tokens = {name: secrets.token_hex(32) for name in names}
        self.proc: subprocess.Popen | None = None
        self.log = folder / "jupyterhub.log"

    def config(self) -> str:
        from traitlets.config import Config

        (course,) = self.plan.courses
        kind = kinds.EXCHANGES[course.exchange]
        kind.prepare(self.plan, course)
        c = Config()
        c.JupyterHub.services = [
            {"name": name, "api_token": token} for name, token in self.service_tokens.items()
        ]
        c.Spawner.environment = {}
        kind.configure(c, self.plan, course)
        admin = {"name": ADMIN, "api_token": self.admin_token}
        role = {"name": ADMIN, "scopes": ["admin:users", "tokens"], "services": [ADMIN]}
        state = self.folder
        return "\n".join(
            [
                f"c.JupyterHub.ip = '127.0.0.1'\nc.JupyterHub.port = {self.port}",
                f"c.JupyterHub.hub_ip = '127.0.0.1'\nc.JupyterHub.hub_port = {free_port()}",
                f"c.JupyterHub.db_url = 'sqlite:///{state / 'jupyterhub.sqlite'}'",
                f"c.JupyterHub.cookie_secret_file = '{state / 'cookie_secret'}'",
                f"c.ConfigurableHTTPProxy.command = ['{VENV_BIN}/configurable-http-proxy']",
                f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'",
                f"c.ConfigurableHTTPProxy.pid_file = '{state / 'proxy.pid'}'",
                "c.JupyterHub.authenticator_class = 'dummy'",
                f"c.Authenticator.allowed_users = {self.plan.users()!r}",
                f"c.JupyterHub.services = {json.dumps([*c.JupyterHub.services, admin])}",
                f"c.JupyterHub.load_roles = {json.dumps([role])}",
            ]
        )

    def __enter__(self) -> NgshareHub:
        (self.folder / "ngshare").mkdir(parents=True, exist_ok=True)
        (self.folder / "jupyterhub_config.py").write_text(self.config())
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
        config = str(self.folder / "jupyterhub_config.py")
        self.proc = start([f"{VENV_BIN}/jupyterhub", "-f", config], self.folder, env, self.log)
        try:
            self._wait(f"{self.url}/hub/api/", "the Hub")
            self._wait(f"{self.ngshare_url}healthz", "ngshare")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop(self.proc)  # the proxy and ngshare run in the Hub's session: they go too
            self.proc = None

    def _wait(self, url: str, what: str) -> None:
        deadline = time.monotonic() + START
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"JupyterHub exited:\n{self.tail()}")
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"{what} did not answer at {url} in {START} s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def token(self, user: str) -> str:
        """A new API token of ``user``, as the Hub gives a user's server one."""
        request = urllib.request.Request(
            f"{self.url}/hub/api/users/{user}/tokens",
            data=json.dumps({"note": "test", "expires_in": 3600}).encode(),
            method="POST",
            headers={"Authorization": f"token {self.admin_token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())["token"]

    def client(self, user: str) -> Client:
        """ngshare as ``user`` (a Hub user, or one of the course's services)."""
        token = self.service_tokens.get(user) or self.token(user)
        return Client(self.ngshare_url, token)
