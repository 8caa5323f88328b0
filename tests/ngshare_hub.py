"""A real JupyterHub on 127.0.0.1 (free ports) with ngshare as its managed service
(autograder/ngshare/hub.py), for tests: users' API tokens come from the Hub's API (an
admin service of the test's own), as a user's server gets one; the grader is ngshare's
admin and the course's instructor there. Stopped (its whole process group) and its
folder removed at the end, whether the test passed or failed.

    with NgshareHub(folder, grader="ns-grader-1a2b3c", users=[...]) as hub:
        token = hub.token("ns-ada-...")
        hub.enrol("autograd-from-scratch", students=[...])
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from helpers import VENV_BIN

from autograder.ngshare import hub as ngshare_hub
from autograder.ngshare.client import Client

START = 240  # seconds for the Hub and ngshare to answer, on two busy cores
ADMIN = "ns-test-admin"  # the test's own service: makes users' tokens


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NgshareHub:
    def __init__(self, folder: Path, grader: str, users: list[str]):
        self.folder, self.grader, self.users = folder, grader, users
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ngshare_url = ngshare_hub.url(self.url)
        self.admin_token = secrets.token_hex(32)
        self.proc: subprocess.Popen | None = None
        self.log = folder / "jupyterhub.log"

    def config(self) -> str:
        ngshare = ngshare_hub.service(
            free_port(), self.folder / "ngshare", sys.executable, [self.grader]
        )
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
                f"c.Authenticator.allowed_users = {set([self.grader, *self.users])!r}",
                f"c.JupyterHub.services = {json.dumps([ngshare, admin])}",
                f"c.JupyterHub.load_roles = {json.dumps([role])}",
            ]
        )

    def __enter__(self) -> NgshareHub:
        (self.folder / "ngshare").mkdir(parents=True, exist_ok=True)
        (self.folder / "jupyterhub_config.py").write_text(self.config())
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
        env["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), env.get("PYTHONPATH", "")])
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [f"{VENV_BIN}/jupyterhub", "-f", str(self.folder / "jupyterhub_config.py")],
                cwd=self.folder,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait(f"{self.url}/hub/api/", "the Hub")
            self._wait(f"{self.ngshare_url}healthz", "ngshare")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        # the proxy and ngshare run in the Hub's session: whatever is left of it goes too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
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
        return Client(self.ngshare_url, self.token(user))
