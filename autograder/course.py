"""The course: where things are, its nbgrader settings, and nbgrader's API bound to it.

``nbgrader_config.py`` (at the repository root) is parsed once per process, here; every
module that needs a setting asks ``nbgrader_config()`` or a ``Course`` for it.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GraderError
from .record import GradingRecord

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
SHARED = SOURCE / ".shared"  # the kit's modules (only here in git), START-HERE.md
KIT = "coursekit.py"  # the students' helper module, placed in every assignment folder
SELF_CHECK_KIT = "checkkit.py"  # self_check(), the runner: in every assignment folder too
QUIZ_KIT = "quizkit.py"  # the quizzes' helpers: in each quiz's folder only
KITS = (KIT, SELF_CHECK_KIT, QUIZ_KIT)  # every kit module, as released beside notebooks
RECORD = ".autograder.json"  # autograded/<student>/<assignment>/: what grade recorded


def assignments(source: Path = SOURCE) -> list[str]:
    """Assignment folders in course order (nbgrader skips names starting with a dot)."""
    return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))


def kind(assignment: str) -> str:
    """``"quiz"`` (NN_checkpoint_name), ``"set"`` (NN_set_name, a problem set) or ``"lesson"``.

    The folder's name says what an assignment is; only lessons have slides."""
    if "_checkpoint_" in assignment:
        return "quiz"
    if "_set_" in assignment:
        return "set"
    return "lesson"


def number(assignment: str, source: Path = SOURCE) -> str:
    """What the course calls an assignment in its tables: its folder's number ("5" for
    05_mlp), with a letter for a later folder of the same number ("5b" for 05_training,
    a lesson split in two)."""
    prefix = assignment.split("_", 1)[0]
    same = [a for a in assignments(source) if a.split("_", 1)[0] == prefix]
    place = same.index(assignment) if assignment in same else 0
    return str(int(prefix)) + ("" if place == 0 else "abcdefghijklmnopqrstuvwxyz"[place])


def kit_files(assignment: str) -> tuple[str, ...]:
    """The kit modules an assignment's folder gets: coursekit.py and checkkit.py, and in a
    quiz's folder quizkit.py (no other folder ships the quiz kit)."""
    return (KIT, SELF_CHECK_KIT, QUIZ_KIT) if kind(assignment) == "quiz" else (KIT, SELF_CHECK_KIT)


class CoursekitError(GraderError):
    """A kit module could not be placed in an assignment folder (one line says why)."""


def link_coursekit(folder: Path, shared: Path = SHARED / KIT, *, keep_copy: bool = True) -> bool:
    """Make ``folder/<shared's name>`` (coursekit.py, or another kit module) a relative link
    to ``shared`` (a copy where this system cannot link); return whether it changed. A
    right link is left alone, and so, with ``keep_copy``, is a regular file with the same
    bytes (a copied course's, nbgrader's). A missing, broken or other link and a stale
    copy are replaced, in one step."""
    folder = Path(folder)
    name = shared.name
    dest = folder / name
    target = os.path.relpath(shared, folder)
    try:
        if dest.is_symlink():
            if os.readlink(dest) == target:
                return False
        elif dest.is_dir():
            raise CoursekitError(f"{dest} is a folder: remove it, it should be {name}")
        elif keep_copy and dest.is_file() and dest.read_bytes() == shared.read_bytes():
            return False
        temp = folder / f".{name}.{os.getpid()}.{id(dest):x}.tmp"
        try:
            try:
                os.symlink(target, temp)
            except OSError:  # no symlinks here (Windows without the right): a copy
                shutil.copyfile(shared, temp)
            os.replace(temp, dest)
        finally:
            if temp.is_symlink() or temp.exists():
                temp.unlink()
    except OSError as exc:
        raise CoursekitError(f"cannot place {name} in {folder}: {exc.strerror or exc}") from None
    return True


def link_kits(folder: Path, shared: Path = SHARED, *, keep_copy: bool = True) -> list[str]:
    """``link_coursekit`` for each kit module the assignment ``folder`` gets (``kit_files``),
    from the folder ``shared`` (those of them it holds); return the names it changed."""
    folder = Path(folder)
    names = [n for n in kit_files(folder.name) if (Path(shared) / n).is_file()]
    return [n for n in names if link_coursekit(folder, shared / n, keep_copy=keep_copy)]


def place_coursekit(root: Path = ROOT) -> list[Path]:
    """Give every assignment folder of the course at ``root`` that exists, in ``source/``,
    ``notebooks/`` and ``solutions/``, its kit modules (``kit_files``: ``coursekit.py``,
    ``checkkit.py``, a quiz's ``quizkit.py``): links to the ones in git, in
    ``source/.shared/`` (``link_coursekit``). Return the files it wrote.

    Called wherever the course is opened (nbgrader_config.py, so by every nbgrader
    command; ``python -m autograder``; ``open_course``; scripts/setup; the tests), so a
    fresh clone needs no extra step. Raises CoursekitError if a folder cannot be written."""
    root = Path(root)
    shared = root / "source" / ".shared"
    if not (shared / KIT).is_file():
        return []
    written = []
    for top in ("source", "notebooks", "solutions"):
        if (root / top).is_dir():
            for name in assignments(root / top):
                changed = link_kits(root / top / name, shared)
                written += [root / top / name / kit for kit in changed]
    return written


def venv_path() -> None:
    """Put this Python's bin/ first on PATH: nbgrader runs `alembic` from PATH."""
    bindir = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if parts[:1] != [bindir]:
        os.environ["PATH"] = os.pathsep.join([bindir, *parts])


@functools.cache
def _parsed_config(folder: Path = ROOT):
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()


def folder_config(folder: Path):
    """A fresh copy of the settings of ``folder``'s nbgrader_config.py (a worker's grading
    material is laid out like the course), parsed once per process."""
    return copy.deepcopy(_parsed_config(Path(folder)))


def nbgrader_config(**course_directory):
    """A fresh copy of nbgrader_config.py's settings, with ``CourseDirectory`` settings
    given as keywords (``root=...``, ``db_url=...``) merged in."""
    from traitlets.config import Config

    config = copy.deepcopy(_parsed_config())
    extra = Config()
    for key, value in course_directory.items():
        setattr(extra.CourseDirectory, key, value)
    config.merge(extra)
    return config


def nbgrader_api(root: Path = ROOT, **settings):
    """nbgrader's own API for the course at ``root``, with the course's settings and any
    ``CourseDirectory`` settings given as keywords (e.g. ``db_url=...``)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    venv_path()
    config = nbgrader_config(root=str(root), **settings)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


@dataclass
class Course:
    """A class's grading state: ``root`` holds submitted/, autograded/, feedback/ (and
    gradebook.db by default); ``source`` the assignments it is graded against."""

    root: Path
    source: Path
    db_url: str
    course_id: str
    config: object  # traitlets Config: nbgrader_config.py with this course's folders
    submitted: Path = field(init=False)
    autograded: Path = field(init=False)
    feedback: Path = field(init=False)

    def __post_init__(self) -> None:
        cd = self.coursedir()
        self.submitted = Path(cd.format_path(cd.submitted_directory, ".", ".")).resolve()
        self.autograded = Path(cd.format_path(cd.autograded_directory, ".", ".")).resolve()
        self.feedback = Path(cd.format_path(cd.feedback_directory, ".", ".")).resolve()

    def coursedir(self, **settings):
        from nbgrader.coursedir import CourseDirectory

        cd = CourseDirectory(config=self.config)
        for key, value in settings.items():
            setattr(cd, key, value)
        return cd

    def api(self, **settings):
        base = {"source_directory": str(self.source), "db_url": self.db_url}
        return nbgrader_api(self.root, **{**base, **settings})

    def assignments(self) -> list[str]:
        return assignments(self.source)

    def record_path(self, student: str, assignment: str) -> Path:
        return self.autograded / student / assignment / RECORD

    def read_record(self, student: str, assignment: str) -> GradingRecord | None:
        """The grader's record of a submission, checked (None: none, or not a record)."""
        return GradingRecord.read(self.record_path(student, assignment))


def open_course(root: Path | str | None = None, db_url: str | None = None) -> Course:
    """The course at ``root`` (the repository by default) with nbgrader_config.py's settings;
    ``source/`` is the root's own if it has one, else the repository's."""
    from nbgrader.coursedir import CourseDirectory

    venv_path()
    root = Path(root or ROOT).resolve()
    source = root / "source" if (root / "source").is_dir() else SOURCE
    place_coursekit(source.parent)
    settings = {"root": str(root), "source_directory": str(source)}
    if db_url:
        settings["db_url"] = db_url
    config = nbgrader_config(**settings)
    cd = CourseDirectory(config=config)
    return Course(root, source, cd.db_url, cd.course_id, config)
