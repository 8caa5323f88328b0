"""The Jupyter settings each kind of server on the hub gets, written under the plan's
state folder and put first on the server's ``JUPYTER_CONFIG_PATH``:

- ``student-<exchange>``: nbgrader's Assignments list and Validate on; the formgrader,
  the course list and Create Assignment off (server routes and lab plugins); nbgrader's
  exchange settings, and ``JupyterHubAuthPlugin`` so each student sees only their
  courses' assignments (JupyterHub groups ``nbgrader-<course>``);
- ``instructor-<exchange>``: the same, with the course list on: it links to the
  formgrader of each course they teach (groups ``formgrade-<course>``), and no other;
- ``grader``: the course's formgrader service (run by the course's grader account in its
  folder): formgrader and Create Assignment on, the student tools off.

Every server's kernels (and Validate's) talk over unix sockets in the user's own runtime
folder, never TCP. Markdown opens rendered (the students' lab settings,
autograder/students/payload/).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from . import kinds
from .plan import Plan

PAYLOAD = Path(__file__).resolve().parent.parent / "students" / "payload" / "jupyter"
PLUGINS = "@jupyter/nbgrader:"
EXTENSIONS = "nbgrader.server_extensions."
IPC = {"transport": "ipc"}
TOOLS = ("formgrader", "assignment_list", "course_list", "validate_assignment")
ON = {
    "student": {"assignment_list", "validate_assignment"},
    "instructor": {"assignment_list", "course_list", "validate_assignment"},
    "grader": {"formgrader", "validate_assignment"},
}
# The Nbgrader menu stays: it lists only the commands of the plugins that are on.
PLUGIN_OFF = {
    "student": ("formgrader", "create-assignment", "course-list"),
    "instructor": ("formgrader", "create-assignment"),
    "grader": ("assignment-list", "course-list"),
}


def folder(plan: Plan, role: str, exchange: str = "") -> Path:
    return plan.state / "jupyter" / (f"{role}-{exchange}" if exchange else role)


def user_folder(plan: Plan, user: str) -> Path:
    """The settings of ``user``'s server: instructor's if they teach a course."""
    courses = plan.courses_of(user)
    role = "instructor" if plan.teaches(user) else "student"
    return folder(plan, role, courses[0].exchange if courses else "filesystem")


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def write_role(target: Path, role: str, nbgrader: dict) -> None:
    extensions = {EXTENSIONS + tool: tool in ON[role] for tool in TOOLS}
    settings = target / "settings"
    server: dict = {"ServerApp": {"jpserver_extensions": extensions}}
    if role == "grader":  # the Formgrader tab frames the formgrader's pages, as nbgrader's
        # demos allow it (a JupyterHub server forbids every frame by default)
        headers = {"Content-Security-Policy": "frame-ancestors 'self'"}
        server["ServerApp"]["tornado_settings"] = {"headers": headers}
    server["LabApp"] = {"app_settings_dir": str(settings)}
    # kernels' channels as unix sockets beside their connection file, in the user's 0700
    # runtime folder: no port another user can reach (a kernel's iopub on TCP is anyone's)
    server["KernelManager"] = IPC
    _write(target / "jupyter_server_config.json", server)
    off = {PLUGINS + name: True for name in PLUGIN_OFF[role]}
    off["@jupyterlab/apputils-extension:announcements"] = True
    _write(target / "labconfig" / "page_config.json", {"disabledExtensions": off})
    base = json.loads((PAYLOAD / "nbgrader_config.json").read_text(encoding="utf-8"))
    _write(target / "nbgrader_config.json", {**base, **nbgrader, "KernelManager": IPC})
    settings.mkdir(exist_ok=True)
    shutil.copy(PAYLOAD / "settings" / "overrides.json", settings / "overrides.json")


def write_all(plan: Plan) -> None:
    """Every settings folder the plan's servers use (readable by all: no secret in it)."""
    plan.state.mkdir(parents=True, exist_ok=True)
    plan.state.chmod(0o711)
    for name in sorted({c.exchange for c in plan.courses}):
        kind = kinds.EXCHANGES[name]
        users = kind.user_settings(plan, [c for c in plan.courses if c.exchange == name])
        users["Authenticator"] = {"plugin_class": "nbgrader.auth.JupyterHubAuthPlugin"}
        for role in ("student", "instructor"):
            write_role(folder(plan, role, name), role, users)
    write_role(folder(plan, "grader"), "grader", {})
    for path in [plan.state / "jupyter", *(plan.state / "jupyter").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
