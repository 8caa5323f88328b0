"""``python -m autograder hub --plan FILE``: check the plan, prepare the folders, then run
JupyterHub (``jupyterhub -f autograder/hub/jupyterhub_config.py``) in the foreground.

Then it refuses to start while a student could read what they must not (exposure.py: a
home open to others, an answer in the environment's checkout), one line per problem.

Preparing, as root: the settings folders of the servers (settings.py), each course's
``nbgrader_config_hub.py`` (its course id and exchange, which the course's
nbgrader_config.py loads last: every nbgrader command in the folder, the formgrader and
``watch`` read them), and each course's exchange folders (kinds.EXCHANGES).
"""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

from ..errors import ExitCode
from . import config, exposure, kinds, settings
from .plan import Course, Plan, PlanError, checked, load, problems

CONFIG = Path(__file__).resolve().parent / "jupyterhub_config.py"
COURSE_SETTINGS = "nbgrader_config_hub.py"  # loaded by nbgrader_config.py when present
PLAN_VARIABLE = "AUTOGRADER_HUB_PLAN"


def course_settings(plan: Plan, course: Course) -> str:
    lines = [
        f"# Written by `python -m autograder hub --plan {plan.path}`: this folder as course",
        f"# {course.id!r} on the hub. nbgrader_config.py loads it last; do not edit.",
        f"c.CourseDirectory.course_id = {course.id!r}",
        kinds.EXCHANGES[course.exchange].course_settings(plan, course),
        kinds.AUTHENTICATORS[plan.authenticator].course_settings(plan, course),
    ]
    if kinds.AUTHENTICATORS[plan.authenticator].plan_users_only:
        # nobody else's submission is taken (the exchange's inbound is every user's)
        lines.append(f"c.Watch.students = {sorted(course.members)!r}\n")
    return "\n".join(lines)


def write_course_settings(plan: Plan, course: Course) -> Path:
    path = course.folder / COURSE_SETTINGS
    path.unlink(missing_ok=True)
    path.write_text(course_settings(plan, course), encoding="utf-8")
    user = pwd.getpwnam(course.grader)
    os.chown(path, user.pw_uid, user.pw_gid)
    path.chmod(0o644)
    return path


def prepare(plan: Plan) -> None:
    settings.write_all(plan)
    private = config.private_folder(plan)
    private.mkdir(exist_ok=True)
    private.chmod(0o700)
    for course in plan.courses:
        # the course folder holds the solutions (source/), every submission and the
        # gradebook: its grader's alone (its services run as the grader; students get
        # their work through the exchange, and the start page is copied by the hub)
        course.folder.chmod(0o700)
        write_course_settings(plan, course)
        kinds.EXCHANGES[course.exchange].prepare(plan, course)


def command(plan: Plan) -> list[str]:
    jupyterhub = Path(plan.python or sys.executable).parent / "jupyterhub"
    return [str(jupyterhub), "-f", str(CONFIG)]


def hub(plan_path: str, check_only: bool = False) -> int:
    """Check and prepare, then replace this process with JupyterHub (Ctrl-C stops it);
    with ``check_only``, say whether the plan is right and stop there."""
    if check_only:
        plan = load(plan_path)
        found = problems(plan)
        if not found:  # what students could read (the plan's folders and users exist)
            found = exposure.problems(plan, config.python_of(plan))
        for line in found:
            print(f"{plan.path.name}: {line}", file=sys.stderr)
        if found:
            return ExitCode.PROBLEMS
        users = len(plan.users())
        print(f"{plan.path.name}: {len(plan.courses)} courses, {users} users: no problems")
        return ExitCode.OK
    plan = checked(plan_path)
    if os.geteuid() != 0:
        raise PlanError("the hub starts servers as its users: run it as root")
    prepare(plan)
    exposed = exposure.problems(plan, config.python_of(plan))
    for line in exposed:
        print(f"{plan.path.name}: {line}", file=sys.stderr)
    if exposed:
        print("hub: not started: students could read the above (README: Run it on a JupyterHub)")
        return ExitCode.PROBLEMS
    env = {**os.environ, PLAN_VARIABLE: str(plan.path)}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    os.chdir(config.private_folder(plan))
    print(f"hub: http://{plan.ip}:{plan.port}/ ({len(plan.courses)} courses)", flush=True)
    argv = command(plan)
    os.execve(argv[0], argv, env)
    return 0  # not reached
