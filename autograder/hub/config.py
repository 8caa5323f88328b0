"""JupyterHub's configuration from a plan: ``configure(c, plan)``.

- JupyterHub on ``plan.ip``/``plan.port`` behind the Python configurable-http-proxy, its
  own API and the proxy's on free ports of 127.0.0.1; its database and cookie secret in
  ``<state>/hub/`` (root's only: the database holds every token's hash).
- Users log in with the plan's authenticator kind (kinds.AUTHENTICATORS); only the plan's
  users may. Each gets a server started as their own unix user (LocalProcessSpawner),
  opening on the course's start page (START-HERE.md, copied into ``~/<course>/``).
- Groups, as nbgrader's "multiple courses" docs name them: ``nbgrader-<course>``
  (its students and instructors: whose assignments they see) and ``formgrade-<course>``
  (its instructors: who may open its formgrader). Roles grant exactly that.
- Per course, two managed services run as its grader account in its folder: ``<course>``,
  the formgrader (a Jupyter server, as nbgrader's docs run it), and ``watch-<course>``,
  ``python -m autograder watch`` (grading on submit).
"""

from __future__ import annotations

import os
import pwd
import socket
import sys
from pathlib import Path
from typing import Any

from ..watch.deploy.jupyterhub_service import service_path, watch_service
from . import kinds, runas, settings
from .plan import Course, Plan

START_PAGE = Path("source") / ".shared" / "START-HERE.md"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def private_folder(plan: Plan) -> Path:
    """The hub's own files: root's only."""
    return plan.state / "hub"


def python_of(plan: Plan) -> str:
    return plan.python or sys.executable


def bin_path(plan: Plan) -> str:
    """PATH with the course environment's bin/ first (nbgrader runs `alembic` from it)."""
    return service_path(python_of(plan))


def as_user(plan: Plan, user: str, entry: dict) -> dict:
    """A managed service ``entry`` run as ``user``: by JupyterHub itself, or through
    runas.prefix when the user cannot reach the interpreter."""
    if runas.cover(python_of(plan)) is None:
        return {**entry, "user": user}
    entry = {k: v for k, v in entry.items() if k != "user"}  # root starts it: runas drops
    return {**entry, "command": [*runas.prefix(user, python_of(plan)), *entry["command"]]}


def runtime_folder(plan: Plan, user: str) -> Path:
    """``<state>/run/<uid>/``, the user's alone (0700): their servers' Jupyter runtime
    folder (connection files, and the unix sockets of their kernels' channels, whose
    paths must stay under 108 bytes: a HOME's ~/.local/share/jupyter/runtime may not)."""
    entry = pwd.getpwnam(user)
    run = plan.state / "run"
    run.mkdir(parents=True, exist_ok=True)
    run.chmod(0o711)
    folder = run / str(entry.pw_uid)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    folder.mkdir(mode=0o700, exist_ok=True)
    if os.geteuid() == 0:  # the hub (root); a test of the settings may not be
        os.chown(folder, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    folder.chmod(0o700)
    return folder


def formgrader_service(plan: Plan, course: Course) -> dict:
    singleuser = str(Path(python_of(plan)).parent / "jupyterhub-singleuser")
    entry = {
        "name": course.id,
        "url": f"http://127.0.0.1:{free_port()}",
        "command": [singleuser, f"--ServerApp.root_dir={course.folder}"],
        "cwd": str(course.folder),
        "environment": {
            "PATH": bin_path(plan),
            "JUPYTER_CONFIG_PATH": str(settings.folder(plan, "grader")),
            "JUPYTERHUB_DEFAULT_URL": "/lab",
            "JUPYTER_RUNTIME_DIR": str(runtime_folder(plan, course.grader)),
            "PYTHONUNBUFFERED": "1",
        },
        "oauth_no_confirm": True,
    }
    return as_user(plan, course.grader, entry)


def course_services(plan: Plan, course: Course) -> list[dict]:
    watch = watch_service(str(course.folder), course.grader, python_of(plan), f"watch-{course.id}")
    return [formgrader_service(plan, course), as_user(plan, course.grader, watch)]


def groups_and_roles(plan: Plan) -> tuple[dict, list[dict]]:
    groups: dict[str, list[str]] = {}
    roles: list[dict] = [{"name": "server", "scopes": ["inherit"]}]
    for course in plan.courses:
        groups[f"nbgrader-{course.id}"] = sorted(course.members)
        groups[f"formgrade-{course.id}"] = sorted(course.instructors)
        roles.append(
            {
                "name": f"formgrade-{course.id}",
                "groups": [f"formgrade-{course.id}"],
                "scopes": [f"access:services!service={course.id}"],
            }
        )
        roles.append(
            {
                "name": f"nbgrader-{course.id}",
                "groups": [f"nbgrader-{course.id}"],
                # the course list finds the course's formgrader among the services
                "scopes": ["list:services", f"read:services!service={course.id}"],
            }
        )
    return groups, roles


def _open_below(parent: int, name: str, uid: int, gid: int) -> int:
    """The folder ``name`` in the folder ``parent`` (a descriptor), made for the user if
    missing (theirs alone: 0700); never through a link (the user owns their HOME)."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
        os.chown(name, uid, gid, dir_fd=parent, follow_symlinks=False)
    except FileExistsError:
        pass
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)


def place_start_page(user: str, course: Course) -> None:
    """The course's START-HERE.md into ``~user/<course>/`` (where nbgrader fetches its
    assignments), unless one is there: its links then reach the fetched lessons."""
    entry = pwd.getpwnam(user)
    source = course.folder / START_PAGE
    home = os.open(entry.pw_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        inner = _open_below(home, course.id, entry.pw_uid, entry.pw_gid)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(START_PAGE.name, flags, 0o600, dir_fd=inner)
        except FileExistsError:
            return
        finally:
            os.close(inner)
        with os.fdopen(fd, "wb") as out:
            os.fchown(out.fileno(), entry.pw_uid, entry.pw_gid)
            out.write(source.read_bytes())
    finally:
        os.close(home)


def pre_spawn_hook(plan: Plan):
    def hook(spawner: Any) -> None:
        user = spawner.user.name
        # the plan's members, and who joined a course's group since (an LTI launch)
        groups = {g.name for g in spawner.user.groups}
        courses = [c for c in plan.courses if user in c.members or f"nbgrader-{c.id}" in groups]
        for course in courses:
            place_start_page(user, course)
        spawner.environment["JUPYTER_CONFIG_PATH"] = str(settings.user_folder(plan, user))
        spawner.environment["JUPYTER_RUNTIME_DIR"] = str(runtime_folder(plan, user))
        if courses:
            spawner.default_url = f"/lab/tree/{courses[0].id}/{START_PAGE.name}"

    return hook


def spawner_class(plan: Plan):
    """LocalProcessSpawner; through runas.prefix when users cannot reach the interpreter
    (root then starts the server, which runs as the user from its first instruction)."""
    from jupyterhub.spawner import LocalProcessSpawner

    python = python_of(plan)
    if runas.cover(python) is None:
        return LocalProcessSpawner

    class CoveredSpawner(LocalProcessSpawner):
        def make_preexec_fn(self, name):
            return None

        async def start(self):
            saved, kwargs = self.cmd, self.popen_kwargs
            self.cmd = [*runas.prefix(self.user.name, python), *saved]
            # in the user's HOME, as LocalProcessSpawner's own preexec_fn starts it
            self.popen_kwargs = {**kwargs, "cwd": pwd.getpwnam(self.user.name).pw_dir}
            try:
                return await super().start()
            finally:
                self.cmd, self.popen_kwargs = saved, kwargs

    return CoveredSpawner


def configure(c: Any, plan: Plan) -> None:
    """Everything JupyterHub needs for ``plan`` (the plan is checked already)."""
    state = private_folder(plan)
    bindir = Path(python_of(plan)).parent
    c.JupyterHub.ip = plan.ip
    c.JupyterHub.port = plan.port
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = free_port()
    c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
    # the Python configurable-http-proxy, with room for a class arriving at once (proxy.py)
    proxy = str(Path(__file__).with_name("proxy.py"))  # -I: not its folder on sys.path
    c.ConfigurableHTTPProxy.command = [python_of(plan), "-I", proxy]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{free_port()}"
    c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

    authenticator = kinds.AUTHENTICATORS[plan.authenticator]
    authenticator.configure(c, plan)
    if authenticator.plan_users_only:
        c.Authenticator.allowed_users = plan.users()
    c.Authenticator.admin_users = set(plan.admins)

    c.JupyterHub.spawner_class = spawner_class(plan)
    c.Spawner.cmd = [str(bindir / "jupyterhub-singleuser")]
    c.Spawner.start_timeout = plan.start_timeout
    c.Spawner.http_timeout = plan.start_timeout
    c.Spawner.environment = {"PATH": bin_path(plan), "PYTHONUNBUFFERED": "1"}
    c.Spawner.pre_spawn_hook = pre_spawn_hook(plan)

    groups, roles = groups_and_roles(plan)
    c.JupyterHub.load_groups = groups
    c.JupyterHub.load_roles = roles
    services = [s for course in plan.courses for s in course_services(plan, course)]
    c.JupyterHub.services = services + [extra_service(s) for s in plan.services]
    for course in plan.courses:
        kinds.EXCHANGES[course.exchange].configure(c, plan, course)


def extra_service(service) -> dict:
    entry: dict[str, Any] = {"name": service.name}
    if service.url:
        entry["url"] = service.url
    if service.command:
        entry["command"] = list(service.command)
    if service.user:
        entry["user"] = service.user
    if service.api_token_file:
        entry["api_token"] = Path(service.api_token_file).read_text().strip()
    elif service.api_token_env:
        entry["api_token"] = os.environ[service.api_token_env]
    return {**entry, **service.options}
