"""ngshare as a course's exchange (``exchange = "ngshare"`` in the plan): no shared folder,
an API (autograder/ngshare/). One ngshare, a managed service of the hub
(``/services/ngshare/``), keeps every ngshare course's releases, submissions and feedback
in ``<state>/ngshare/``.

- Servers of the course's users: nbgrader's exchange classes over ngshare
  (autograder/ngshare/exchange.py), importable from ``<state>/python`` (a copy of the
  three modules they need: the course folder is the grader's alone); each server's own
  Hub token is its identity in ngshare.
- The course folder (``nbgrader_config_hub.py``): the same classes for its nbgrader
  (the formgrader's release_assignment), and ``c.Watch.ngshare_*``: ``watch-<course>``
  takes submissions from ngshare, and makes the course there with its instructors and
  students when it starts (it is an ngshare admin). In ngshare the instructors are the
  plan's, and the course's two services (``<course>``, the formgrader, and
  ``watch-<course>``), whose Hub tokens are theirs.
"""

from __future__ import annotations

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
    people = {"instructors": instructors(course), "students": list(course.students)}
    return "\n".join(
        [
            *lines,
            f"c.Ngshare.url = {url(plan)!r}",
            "c.Exchange.path_includes_course = True",
            f"c.Watch.ngshare_url = {url(plan)!r}",
            "c.Watch.exchange = 'off'",
            f"c.Watch.ngshare_course = {people!r}",
            "",
        ]
    )


def python_folder(plan: Plan) -> Path:
    return plan.state / "python"


def prepare(plan: Plan, course: Course) -> None:
    """The exchange classes where every server can import them (readable by all), and
    ngshare's folder (the hub's: root's)."""
    target = python_folder(plan) / "autograder"
    for name in SHIPPED:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / name, target / name)
    for path in [python_folder(plan), *python_folder(plan).rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    folder = plan.state / "ngshare"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)


def configure(c: Any, plan: Plan, course: Course) -> None:
    """ngshare's service (once for the hub; each ngshare course's watcher an admin of it),
    and the exchange classes importable in users' servers."""
    admins = [f"watch-{x.id}" for x in plan.courses if x.exchange == "ngshare"]
    services = [s for s in c.JupyterHub.services if s.get("name") != service.NAME]
    python = plan.python or sys.executable  # as config.python_of (not imported: a cycle)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    entry = service.service(port, plan.state / "ngshare", python, admins)
    c.JupyterHub.services = [*services, entry]
    environment = dict(c.Spawner.environment)
    environment["PYTHONPATH"] = str(python_folder(plan))
    c.Spawner.environment = environment
