"""The hub's plan: one TOML file naming the hub, its authenticator and its courses.

``load(path)`` reads it (``tomllib``) into a ``Plan``; ``problems(plan)`` lists what is
wrong with it, one line each; ``checked(path)`` does both and raises ``PlanError`` with
the first problem. autograder/hub/example-hub.toml shows every key.

The kinds named in a plan (``[authenticator] kind``, each course's ``exchange``) are the
keys of ``kinds.AUTHENTICATORS`` and ``kinds.EXCHANGES``; a kind may check its own keys
(the rest of its table stays in ``options``).
"""

from __future__ import annotations

import pwd
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GraderError
from ..lti.launches import STUDENT as UNIX_NAME  # a unix user name, as useradd takes it

# Course ids name JupyterHub groups (nbgrader-<id>, formgrade-<id>), a service and an
# exchange folder: letters, digits, '-' and '_'.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class PlanError(GraderError):
    """The hub's plan is wrong (one line naming the problem)."""


@dataclass(frozen=True)
class Course:
    """One course on the hub: ``folder`` is a checkout of this repository, owned by the
    unix user ``grader``, who runs its formgrader and its watcher."""

    id: str
    folder: Path
    grader: str
    instructors: tuple[str, ...]
    students: tuple[str, ...]
    exchange: str = "filesystem"
    options: dict = field(default_factory=dict)  # the course's other keys, for its kinds

    @property
    def members(self) -> tuple[str, ...]:
        return (*self.instructors, *self.students)


@dataclass(frozen=True)
class Service:
    """An extra JupyterHub service: managed (``command``) or external (``url`` only, and
    then the token it authenticates with: ``api_token_file`` or ``api_token_env``)."""

    name: str
    url: str = ""
    command: tuple[str, ...] = ()
    user: str = ""
    course: str = ""  # a course id, when the service belongs to one course
    api_token_file: str = ""
    api_token_env: str = ""
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    path: Path
    ip: str
    port: int
    state: Path  # the hub's own files: database, cookie secret, generated settings
    exchange_root: Path  # nbgrader's exchange: <exchange_root>/<course id>/...
    python: str  # the course environment's interpreter ("" = the one running the hub)
    start_timeout: int
    authenticator: str
    auth_options: dict
    admins: tuple[str, ...]
    courses: tuple[Course, ...]
    services: tuple[Service, ...] = ()
    raw: dict = field(default_factory=dict)  # the whole TOML, for kinds' own tables

    def course(self, course_id: str) -> Course:
        return next(c for c in self.courses if c.id == course_id)

    def users(self) -> set[str]:
        """Everyone who logs in: admins, instructors, students."""
        return {*self.admins, *(u for c in self.courses for u in c.members)}

    def courses_of(self, user: str) -> list[Course]:
        return [c for c in self.courses if user in c.members]

    def teaches(self, user: str) -> list[Course]:
        return [c for c in self.courses if user in c.instructors]


def _names(table: dict, key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{where}: {key} must be a list of user names")
    return tuple(value)


def _course(table: dict, base: Path, n: int) -> Course:
    where = f"courses[{n}]"
    if not isinstance(table, dict) or "id" not in table:
        raise PlanError(f"{where}: no id")
    where = f"course {table['id']!r}"
    for key in ("folder", "grader"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise PlanError(f"{where}: no {key}")
    known = {"id", "folder", "grader", "instructors", "students", "exchange"}
    return Course(
        id=str(table["id"]),
        folder=(base / table["folder"]).resolve(),
        grader=table["grader"],
        instructors=_names(table, "instructors", where),
        students=_names(table, "students", where),
        exchange=str(table.get("exchange", "filesystem")),
        options={k: v for k, v in table.items() if k not in known},
    )


def _service(table: dict, n: int) -> Service:
    if not isinstance(table, dict) or not table.get("name"):
        raise PlanError(f"services[{n}]: no name")
    known = {"name", "url", "command", "user", "course", "api_token_file", "api_token_env"}
    return Service(
        **{k: (tuple(v) if k == "command" else v) for k, v in table.items() if k in known},
        options={k: v for k, v in table.items() if k not in known},
    )


def load(path: Path | str) -> Plan:
    """The plan in the TOML file ``path`` (relative folders are relative to it), unchecked
    beyond its shape."""
    path = Path(path).resolve()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the plan ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: not TOML ({exc})") from exc
    return from_dict(raw, path)


def from_dict(raw: dict, path: Path) -> Plan:
    base = path.parent
    hub = raw.get("hub", {})
    auth = dict(raw.get("authenticator", {}))
    return Plan(
        path=path,
        ip=str(hub.get("ip", "127.0.0.1")),
        port=int(hub.get("port", 8000)),
        state=(base / hub.get("state", "hub-state")).resolve(),
        exchange_root=(base / hub.get("exchange_root", "/srv/nbgrader/exchange")).resolve(),
        python=str(hub.get("python", "")),
        start_timeout=int(hub.get("start_timeout", 120)),
        authenticator=str(auth.pop("kind", "pam")),
        auth_options=auth,
        admins=_names(hub, "admins", "hub"),
        courses=tuple(_course(t, base, n) for n, t in enumerate(raw.get("courses", []))),
        services=tuple(_service(t, n) for n, t in enumerate(raw.get("services", []))),
        raw=raw,
    )


def unix_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _duplicates(names: list[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({n for n in names if n in seen or seen.add(n)})


def _course_problems(course: Course, exists: Callable[[str], bool]) -> list[str]:
    where = f"course {course.id!r}"
    found = []
    if not NAME.match(course.id):
        found.append(f"{where}: the id may have only letters, digits, '-' and '_'")
    if not course.folder.is_dir():
        found.append(f"{where}: no folder {course.folder}")
    elif not (course.folder / "nbgrader_config.py").is_file():
        found.append(f"{where}: {course.folder} is not a checkout of the course")
    for name in _duplicates(list(course.members)):
        found.append(f"{where}: {name} is listed twice")
    if not course.instructors:
        found.append(f"{where}: no instructors")
    for name in (course.grader, *course.members):
        if not UNIX_NAME.fullmatch(name):
            found.append(f"{where}: {name!r} is not a unix user name")
        elif not exists(name):
            found.append(f"{where}: unknown user {name} (no such unix user)")
    return found


def problems(plan: Plan, exists: Callable[[str], bool] = unix_user) -> list[str]:
    """What is wrong with ``plan``, one line each (empty: nothing). ``exists`` tells
    whether a unix user exists."""
    from . import kinds

    found: list[str] = []
    if not plan.courses:
        found.append("no courses: add at least one [[courses]] table")
    ids = [c.id for c in plan.courses]
    found += [f"course id {i!r} is used twice" for i in _duplicates(ids)]
    if plan.authenticator not in kinds.AUTHENTICATORS:
        known = ", ".join(sorted(kinds.AUTHENTICATORS))
        found.append(f"authenticator: unknown kind {plan.authenticator!r} (known: {known})")
    else:
        found += kinds.AUTHENTICATORS[plan.authenticator].check(plan)
    for course in plan.courses:
        found += _course_problems(course, exists)
        if course.exchange not in kinds.EXCHANGES:
            known = ", ".join(sorted(kinds.EXCHANGES))
            found.append(f"course {course.id!r}: unknown exchange {course.exchange!r} ({known})")
        else:
            found += kinds.EXCHANGES[course.exchange].check(plan, course)
    graders = {c.grader for c in plan.courses}
    for user in sorted(plan.users() & graders):
        found.append(f"{user} is a course's grader account and cannot log in too")
    for user in sorted(plan.users()):
        exchanges = {c.exchange for c in plan.courses_of(user)}
        if len(exchanges) > 1:
            found.append(f"{user} is in courses with different exchanges ({sorted(exchanges)})")
    for user in plan.admins:
        if not plan.courses_of(user) and not exists(user):
            found.append(f"hub admins: unknown user {user}")
    found += _roster_problems(plan)
    found += _service_problems(plan, set(ids))
    return found


def _roster_problems(plan: Plan) -> list[str]:
    """[users] lists everyone expected to log in (optional): each must be in a course."""
    users = plan.raw.get("users", {})
    found = []
    for role in ("students", "instructors"):
        for name in _names(users, role, "users"):
            if not any(name in getattr(c, role) for c in plan.courses):
                found.append(f"users: {role[:-1]} {name} is in no course")
    return found


def _service_problems(plan: Plan, ids: set[str]) -> list[str]:
    found = []
    names = [s.name for s in plan.services] + list(ids)
    found += [
        f"service name {n!r} is used twice (course ids name services)" for n in _duplicates(names)
    ]
    for s in plan.services:
        if s.course and s.course not in ids:
            found.append(f"service {s.name!r}: unknown course id {s.course!r}")
        if not s.command and not s.url:
            found.append(f"service {s.name!r}: neither a command nor a url")
        if not s.command and not (s.api_token_file or s.api_token_env):
            found.append(f"service {s.name!r}: no api token (api_token_file or api_token_env)")
    return found


def checked(path: Path | str, exists: Callable[[str], bool] = unix_user) -> Plan:
    """The plan at ``path``, or ``PlanError`` naming its first problem."""
    plan = load(path)
    found = problems(plan, exists)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise PlanError(f"{plan.path.name}: {found[0]}{more}")
    return plan
