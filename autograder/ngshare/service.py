"""ngshare on a JupyterHub: the managed service entry (``service``), the course in it with
its instructors and students (``enrol``), and ``python -m autograder.ngshare.service``, which
runs ngshare bound to its service URL's address only (ngshare's own ``main`` binds every
interface: on one machine, 127.0.0.1 is all the Hub's proxy needs), with SQLAlchemy 2:
ngshare 0.6.0 makes a release and a submission by linking them to their course or
assignment only, which SQLAlchemy 2 no longer saves (its "backref cascade" is gone: the
release answers success and is lost), so each is also added to its session here."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import urlparse

from .client import Client, NgshareError

NAME = "ngshare"
CHECKOUT = Path(__file__).resolve().parent.parent.parent  # where autograder/ is


def service(port: int, folder: Path, python: str, admins: list[str], host="127.0.0.1") -> dict:
    """The ``c.JupyterHub.services`` entry of ngshare at ``host:port``, keeping its database
    and files in ``folder``; ``admins`` (hub users) may create courses in it."""
    folder = Path(folder).resolve()
    path = os.pathsep.join([os.path.dirname(python), "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "name": NAME,
        "url": f"http://{host}:{port}",
        "command": [
            python,
            "-m",
            "autograder.ngshare.service",
            "--admins",
            ",".join(admins),
            "--database",
            f"sqlite:///{folder / 'ngshare.db'}",
            "--storage",
            f"{folder / 'files'}/",
        ],
        "cwd": str(folder),
        # the checkout running the hub: root's, like ngshare (its own folder is its cwd)
        "environment": {"PATH": path, "PYTHONPATH": str(CHECKOUT), "PYTHONUNBUFFERED": "1"},
    }


def url(hub_url: str) -> str:
    """ngshare's address through the Hub's proxy (``hub_url``: the Hub's public one)."""
    return hub_url.rstrip("/") + f"/services/{NAME}/"


def enrol(client: Client, course: str, instructors: list[str], students: list[str]) -> None:
    """``course`` in ngshare (made if new, by an ngshare admin's ``client``) with its
    ``instructors`` and ``students`` (hub user names); students already there stay."""
    try:
        client.post(f"course/{course}", instructors=json.dumps(instructors))
    except NgshareError as exc:
        if "already exists" not in str(exc):
            raise
    for name in instructors:
        client.post(f"instructor/{course}/{name}", first_name="", last_name="", email="")
    if students:
        rows = [{"username": s, "first_name": "", "last_name": "", "email": ""} for s in students]
        answer = client.post(f"students/{course}", students=json.dumps(rows))
        failed = [r for r in answer.get("status", []) if not r.get("success")]
        if failed:
            raise NgshareError(f"ngshare refused {failed[0].get('username')}: {failed[0]}")


def _saved_with_sqlalchemy_2() -> None:
    """A new Assignment or Submission goes into the session of what it belongs to."""
    from ngshare.database import database
    from sqlalchemy.orm import object_session

    for cls, parent in ((database.Assignment, "course"), (database.Submission, "assignment")):
        made = cls.__init__

        def init(self, *args, _made=made, _parent=parent, **kwargs):
            _made(self, *args, **kwargs)
            session = object_session(getattr(self, _parent))
            if session is not None:
                session.add(self)

        cls.__init__ = init


def main(argv: list[str] | None = None) -> None:
    """ngshare's own ``main``, listening on its service URL's host only."""
    from tornado.httpserver import HTTPServer

    _saved_with_sqlalchemy_2()
    host = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "")).hostname or "127.0.0.1"
    listen = HTTPServer.listen

    def bound(self, port, address="", **kwargs):
        return listen(self, port, host, **kwargs)

    HTTPServer.listen = bound
    from ngshare.ngshare import main as ngshare_main

    ngshare_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
