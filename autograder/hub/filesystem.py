"""nbgrader's own exchange: a folder on this machine, ``<exchange_root>/<course id>/``
with nbgrader's inbound/, outbound/ and feedback/ in it (nbgrader/exchange/default/).
``c.Exchange.path_includes_course``: a student's fetched assignments go to
``~/<course id>/<assignment>/``, so two courses' lessons never share a folder."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any


def user_settings(plan: Any, courses: list) -> dict:
    return {"Exchange": {"root": str(plan.exchange_root), "path_includes_course": True}}


def course_settings(plan: Any, course: Any) -> str:
    return (
        f"c.Exchange.root = {str(plan.exchange_root)!r}\nc.Exchange.path_includes_course = True\n"
    )


def prepare(plan: Any, course: Any) -> None:
    """The exchange root as nbgrader's docs make it (anyone may add, only owners delete),
    and the course's folder in it, the grader's: only they release into it."""
    root = plan.exchange_root
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)
    folder = root / course.id
    folder.mkdir(exist_ok=True)
    user = pwd.getpwnam(course.grader)
    os.chown(folder, user.pw_uid, user.pw_gid)
    folder.chmod(0o755)


def check(plan: Any, course: Any) -> list[str]:
    root = Path(plan.exchange_root)
    if root.exists() and not root.is_dir():
        return [f"exchange_root {root} is not a folder"]
    return []
