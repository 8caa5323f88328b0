"""nbgrader's own exchange: a folder on this machine, ``<exchange_root>/<course id>/``
with nbgrader's inbound/, outbound/ and feedback/ in it (nbgrader/exchange/default/).
``c.Exchange.path_includes_course``: a student's fetched assignments go to
``~/<course id>/<assignment>/``, so two courses' lessons never share a folder."""

from __future__ import annotations

import contextlib
import os
import pwd
from pathlib import Path
from typing import Any

from ..errors import GraderError


def user_settings(plan: Any, courses: list) -> dict:
    return {"Exchange": {"root": str(plan.exchange_root), "path_includes_course": True}}


def course_settings(plan: Any, course: Any) -> str:
    return (
        f"c.Exchange.root = {str(plan.exchange_root)!r}\nc.Exchange.path_includes_course = True\n"
    )


def prepare(plan: Any, course: Any) -> None:
    """The exchange root as nbgrader's docs make it (anyone may add, only owners delete),
    and the course's folder in it, the grader's: only they release into it. Every user
    may make entries in the root, so the course's folder is made and set through
    descriptors, never through a link, and one found there that is neither the grader's
    nor root's (a student's, made before the hub's first start) is refused."""
    root = plan.exchange_root
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)
    user = pwd.getpwnam(course.grader)
    parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(course.id, 0o755, dir_fd=parent)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(course.id, flags, dir_fd=parent)
        except OSError as exc:
            raise GraderError(
                f"the exchange's {root / course.id} is not a folder ({exc.strerror}): remove it"
            ) from None
    finally:
        os.close(parent)
    try:
        owner = os.fstat(fd).st_uid
        if owner not in (0, user.pw_uid):
            raise GraderError(
                f"the exchange's {root / course.id} belongs to the unix user {_name(owner)}, "
                f"not the grader {course.grader}: remove it"
            )
        os.fchown(fd, user.pw_uid, user.pw_gid)
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"#{uid}"


def check(plan: Any, course: Any) -> list[str]:
    root = Path(plan.exchange_root)
    if root.exists() and not root.is_dir():
        return [f"exchange_root {root} is not a folder"]
    return []
