"""What the watcher does, per course: ``c.Watch`` in nbgrader_config.py.

    c.Watch.early = {"01_value": "hidden", "04_checkpoint_engine": "received"}
    c.Watch.policy = "best"

Early feedback (before an assignment's due date, ``c.Schedule.dates``) shows, per the
assignment's level: ``received`` — that the work arrived, and the visible checks;
``hidden`` — also each hidden test's pass or fail, with its message, but no points;
``all`` — also the points. None carries any text of the kernel (watch/early.py): no
output and no exception message of the student's code. After the due date every page is
the usual one.
"""

from __future__ import annotations

import os
from pathlib import Path

from traitlets import Bool, Dict, Enum, Float, Integer, List, Unicode
from traitlets.config import Config, Configurable

from ..errors import GraderError
from .tree import Bounds

LEVELS = ("received", "hidden", "all")


class WatchError(GraderError):
    """A ``c.Watch`` setting (or a ``watch`` option) that cannot be used."""


class Watch(Configurable):
    """The watcher's settings (module docstring)."""

    exchange = Unicode(
        "",
        help="nbgrader's exchange folder to take submissions from (default: "
        "c.Exchange.root, when that folder exists; 'off': no exchange)",
    ).tag(config=True)
    ngshare_url = Unicode(
        "",
        help="ngshare to take submissions from too ('': none), e.g. http://127.0.0.1:8000"
        "/services/ngshare/, with the grader's Hub token in JUPYTERHUB_API_TOKEN",
    ).tag(config=True)
    inbox = Unicode(
        "inbox",
        help="a folder of submissions for courses without the exchange, relative to the "
        "course: one folder per submission named <student>+<assignment>+<anything>",
    ).tag(config=True)
    interval = Float(5.0, min=0.2, help="seconds between looks for new work").tag(config=True)
    policy = Enum(
        ["latest", "best"],
        "latest",
        help="which of a student's graded submissions counts in the gradebook",
    ).tag(config=True)
    early = Dict(
        {},
        help='{assignment: "received" | "hidden" | "all"}: what feedback shows before '
        "the due date (others: early_default)",
    ).tag(config=True)
    early_default = Enum(list(LEVELS), "hidden", help="early feedback level").tag(config=True)
    max_bytes = Integer(
        20 * 1024**2, min=1, help="largest submission taken (bytes, all its files)"
    ).tag(config=True)
    max_files = Integer(500, min=1, help="most files a submission may hold (all its folders)").tag(
        config=True
    )
    max_depth = Integer(16, min=1, help="deepest its folders may nest").tag(config=True)
    students = List(
        Unicode(),
        [],
        help="the course's people: only their submissions are taken (empty: anyone's with "
        "a usable id); on a hub, the plan's students and instructors",
    ).tag(config=True)
    check_owner = Bool(
        True,
        help="refuse an exchange submission whose folder is not owned by the unix user "
        "its name claims (as nbgrader's collect warns)",
    ).tag(config=True)

    lti_scores = Bool(
        False,
        help="after each grading cycle, send the graded students' scores to the LMS "
        "through LTI 1.3 AGS (export --to lti, c.LTI.*); the hub's lti13 kind sets it",
    ).tag(config=True)

    @property
    def bounds(self) -> Bounds:
        """What a submission may hold (tree.py), checked before anything is copied."""
        return Bounds(self.max_bytes, self.max_files, self.max_depth)

    @classmethod
    def for_course(cls, config=None) -> Watch:
        return cls(config=Config(config or {}))

    def level(self, assignment: str, assignments: list[str]) -> str:
        """The early feedback level of ``assignment``."""
        for name, level in self.early.items():
            if name not in assignments:
                raise WatchError(
                    f"c.Watch.early: no assignment {name!r}; the course has "
                    f"{', '.join(assignments)}"
                )
            if level not in LEVELS:
                raise WatchError(
                    f"c.Watch.early[{name!r}]: {level!r} is not one of {', '.join(LEVELS)}"
                )
        return self.early.get(assignment, self.early_default)

    def exchange_root(self, config) -> Path | None:
        """The exchange folder submissions come from, or None without one."""
        if self.exchange == "off":
            return None
        if self.exchange:
            path = Path(self.exchange)
            if not path.is_dir():
                raise WatchError(f"c.Watch.exchange: {path} is not a folder")
            return path
        root = Path(config.get("Exchange", {}).get("root", "/srv/nbgrader/exchange"))
        return root if root.is_dir() else None

    def ngshare(self, course_id: str, folder: Path):
        """The course's submissions in ngshare (watch/ngshare.py), or None without."""
        if not self.ngshare_url:
            return None
        token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
        if not token:
            raise WatchError("c.Watch.ngshare_url is set but JUPYTERHUB_API_TOKEN is not")
        from ..ngshare.client import Client
        from .ngshare import NgshareSource

        return NgshareSource(Client(self.ngshare_url, token), course_id, folder)
