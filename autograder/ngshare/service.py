"""ngshare on a JupyterHub: the managed service entry (``service``), the course in it with
its instructors and students (``enrol``), and ``python -m autograder.ngshare.service``, which
runs ngshare bound to its service URL's address only (ngshare's own ``main`` binds every
interface: on one machine, 127.0.0.1 is all the Hub's proxy needs), with SQLAlchemy 2:
ngshare 0.6.0 makes a release and a submission by linking them to their course or
assignment only, which SQLAlchemy 2 no longer saves (its "backref cascade" is gone: the
release answers success and is lost), so each is also added to its session here.

Who may do what in ngshare. ngshare knows a token's owner by the name the Hub gives
for it (``/hub/api/user``); its admins (``--admins``) may do anything in every course,
an instructor anything in their course. The only admin is this service itself
(``ngshare``, and only when the Hub says the token is a service's, never a user of that
name): it makes the courses of ``AUTOGRADER_NGSHARE_COURSES`` (a JSON file
``{course: {"instructors": [...], "students": [...]}}``, root's) and enrols their people
when it starts, through its own API with its own Hub token. That token is in this
process's environment only: the process is the Hub's (root's), so no course's account can
read it (``/proc/<pid>/environ`` is its owner's). Nothing else needs an admin: a course's
services and instructors are instructors of that course alone.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

from .client import Client, NgshareError

NAME = "ngshare"
CHECKOUT = Path(__file__).resolve().parent.parent.parent  # where autograder/ is


COURSES_VARIABLE = "AUTOGRADER_NGSHARE_COURSES"
COURSES_FILE = "courses.json"  # in ngshare's folder: {course: {instructors, students}}
ENROL_WITHIN = 900  # seconds to keep trying to make the courses after ngshare starts


def service(port: int, folder: Path, python: str, host="127.0.0.1") -> dict:
    """The ``c.JupyterHub.services`` entry of ngshare at ``host:port``, keeping its database
    and files in ``folder``, making the courses of ``folder/courses.json`` when it starts;
    its only admin is itself."""
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
            NAME,
            "--database",
            f"sqlite:///{folder / 'ngshare.db'}",
            "--storage",
            f"{folder / 'files'}/",
        ],
        "cwd": str(folder),
        # the checkout running the hub: root's, like ngshare (its own folder is its cwd)
        "environment": {
            "PATH": path,
            "PYTHONPATH": str(CHECKOUT),
            "PYTHONUNBUFFERED": "1",
            COURSES_VARIABLE: str(folder / COURSES_FILE),
        },
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


def enrol_all(client: Client, courses: dict, within: float = ENROL_WITHIN) -> None:
    """Every course of ``courses`` (``{course: {"instructors", "students"}}``) in ngshare
    through ``client`` (an admin's), asking again while ngshare or the Hub cannot answer
    yet (ngshare asks the Hub who the token is); one line on stderr when done or not."""
    deadline, why = time.monotonic() + within, ""
    left = dict(courses)
    while left and time.monotonic() < deadline:
        for course, people in list(left.items()):
            try:
                enrol(client, course, list(people["instructors"]), list(people["students"]))
            except NgshareError as exc:
                why = str(exc)
                continue
            del left[course]
        if left:
            time.sleep(1)
    if left:
        print(f"ngshare: courses not made ({', '.join(left)}): {why}", file=sys.stderr)
    else:
        print(f"ngshare: courses made: {', '.join(courses)}", file=sys.stderr, flush=True)


def _enrol_when_up() -> threading.Thread | None:
    """``enrol_all`` in a thread, as this service (its own Hub token, direct to its port)."""
    path = os.environ.get(COURSES_VARIABLE, "")
    if not path:
        return None
    try:
        courses = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"ngshare: cannot read the courses to make ({path}): {exc}") from None
    base = os.environ["JUPYTERHUB_SERVICE_URL"].rstrip("/")
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{NAME}/")
    client = Client(base + prefix, os.environ.get("JUPYTERHUB_API_TOKEN", ""))
    thread = threading.Thread(target=enrol_all, args=(client, courses), daemon=True)
    thread.start()
    return thread


def _admins_are_services() -> None:
    """ngshare's admins are the Hub's services of those names, never users named so (the
    Hub's users and services are two sets of names; ngshare sees only the name)."""
    from ngshare import ngshare as app

    if getattr(app.MyHelpers.is_admin, "services_only", False):
        return
    found, named = app.MyRequestHandler.user_for_token, app.MyHelpers.is_admin

    def user_for_token(self, token):
        model = found(self, token)
        self.token_kind = model.get("kind") if isinstance(model, dict) else None
        return model

    def is_admin(self):
        return getattr(self, "token_kind", None) == "service" and named(self)

    is_admin.services_only = True
    app.MyRequestHandler.user_for_token = user_for_token
    app.MyHelpers.is_admin = is_admin


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
    _admins_are_services()
    host = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "")).hostname or "127.0.0.1"
    listen = HTTPServer.listen

    def bound(self, port, address="", **kwargs):
        return listen(self, port, host, **kwargs)

    HTTPServer.listen = bound
    from ngshare.ngshare import main as ngshare_main

    _enrol_when_up()
    ngshare_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
