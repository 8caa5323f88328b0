"""ngshare as a course's exchange (``exchange = "ngshare"`` in the plan): no shared folder,
an API (autograder/ngshare/). One ngshare, a managed service of the hub
(``/services/ngshare/``), keeps every ngshare course's releases, submissions and feedback
in ``<state>/ngshare/``.

- Servers of the course's users: nbgrader's exchange classes over ngshare
  (autograder/ngshare/exchange.py), importable from ``<state>/python`` (a copy of the
  three modules they need: the course folder is the grader's alone); each server's own
  Hub token is its identity in ngshare.
- The course folder (``nbgrader_config_hub.py``): the same classes for its nbgrader
  (the formgrader's release_assignment), and ``c.Watch.ngshare_url``: ``watch-<course>``
  takes submissions from ngshare. In ngshare the course's instructors are the plan's and
  the course's two services (``<course>``, the formgrader, and ``watch-<course>``), whose
  Hub tokens are theirs: instructors of that course alone.

Who makes the courses in ngshare: ngshare itself, its only admin (service.py). An ngshare
admin may read and write every course, so no course may hold one: a course's services run
as its grader account, which its instructors reach (a terminal in the formgrader reads
the watcher's environment, its token). ``prepare`` writes every ngshare course of the plan
with its people into ``<state>/ngshare/courses.json`` (root's, 0600, in a 0700 folder);
the ngshare service, a process of the Hub's (root's), makes them through its own API with
its own Hub token when it starts. The simplest design with no admin token outside root:
no extra service, no step after the Hub is up, no token written anywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from ..ngshare import exchange, service

# a plan.Plan and a plan.Course (not imported: plan imports kinds, which imports this)
Plan = Course = Any

PACKAGE = Path(__file__).resolve().parent.parent  # autograder/
SHIPPED = ("__init__.py", "ngshare/__init__.py", "ngshare/client.py", "ngshare/exchange.py")


def url(plan: Plan) -> str:
    """ngshare through the hub's proxy, as every server and service on this machine reaches
    it (the plan's port: known before the hub starts)."""
    host = "127.0.0.1" if plan.ip in ("", "0.0.0.0") else plan.ip
    return service.url(f"http://{host}:{plan.port}")


def factory() -> dict:
    from traitlets.config import Config

    c = Config()
    exchange.configure(c)
    return dict(c.ExchangeFactory)


def user_settings(plan: Plan, courses: list[Course]) -> dict:
    return {
        "ExchangeFactory": factory(),
        "Ngshare": {"url": url(plan)},
        "Exchange": {"path_includes_course": True},
    }


def instructors(course: Course) -> list[str]:
    return [course.id, f"watch-{course.id}", *course.instructors]


def course_settings(plan: Plan, course: Course) -> str:
    lines = [f"c.ExchangeFactory.{k} = {v!r}" for k, v in factory().items()]
    return "\n".join(
        [
            *lines,
            f"c.Ngshare.url = {url(plan)!r}",
            "c.Exchange.path_includes_course = True",
            f"c.Watch.ngshare_url = {url(plan)!r}",
            "c.Watch.exchange = 'off'",
            "",
        ]
    )


def check(plan: Plan, course: Course) -> list[str]:
    """ngshare knows people by name only: a user named as a service would be it there."""
    services = {course.id, f"watch-{course.id}"}
    if course == next(c for c in plan.courses if c.exchange == "ngshare"):
        services.add(service.NAME)  # named once, with the first ngshare course
    return [
        f"course {course.id!r}: user {name} is named as a service (ngshare would mix them)"
        for name in sorted(plan.users() & services)
    ]


def python_folder(plan: Plan) -> Path:
    return plan.state / "python"


def courses(plan: Plan) -> dict:
    """What ngshare makes when it starts: each ngshare course with its people."""
    return {
        c.id: {"instructors": instructors(c), "students": list(c.students)}
        for c in plan.courses
        if c.exchange == "ngshare"
    }


def prepare(plan: Plan, course: Course) -> None:
    """The exchange classes where every server can import them (readable by all), and
    ngshare's folder (the hub's: root's) with the courses it makes (service.py)."""
    target = python_folder(plan) / "autograder"
    for name in SHIPPED:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / name, target / name)
    for path in [python_folder(plan), *python_folder(plan).rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    folder = plan.state / "ngshare"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    roster = folder / service.COURSES_FILE
    roster.unlink(missing_ok=True)
    fd = os.open(roster, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(courses(plan), out, indent=2)


def configure(c: Any, plan: Plan, course: Course) -> None:
    """ngshare's service (once for the hub; its own only admin), and the exchange classes
    importable in users' servers."""
    services = [s for s in c.JupyterHub.services if s.get("name") != service.NAME]
    python = plan.python or sys.executable  # as config.python_of (not imported: a cycle)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    entry = service.service(port, plan.state / "ngshare", python)
    c.JupyterHub.services = [*services, entry]
    environment = dict(c.Spawner.environment)
    environment["PYTHONPATH"] = str(python_folder(plan))
    c.Spawner.environment = environment
