"""What a student's account can read on the hub's machine that it must not: ``problems``.

Students have a shell there (JupyterLab's terminal). The hub (and ``hub --check``) looks at
what every one of them could open, one line per problem:

- each course folder (solutions, hidden tests, every submission, the gradebook): its
  grader's alone; the hub closes it when it starts, ``--check`` says when it is open;
- each user's HOME and ``~/<course>``: their own alone (0700), so that no classmate reads
  their notebooks or nbgrader's ``submission_secret.txt``;
- the environment every server runs from (``[hub] python``) and the checkout it lives in
  (README: ``/srv/autograder/.venv``): nothing reachable there may hold an answer. A folder
  named like the instructor's material (``source``, ``solutions``, the reference engine,
  git's history) is one problem; any other file is read as the student edition's leak
  scan reads it (autograder/students/edition.py) and is one when it holds a whole solution
  or hidden-test region of a course's lessons. The grader's package (``autograder/``) is
  public and the environment's own packages (``.venv``) are left out.

"Reachable" is by the permission bits: every folder on the way lets others (or a group a
student is in) through, and the file lets them read.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .. import markers
from ..students import edition
from .plan import Plan

# Folders of a checkout that hold the instructor's material, by name.
ANSWER_FOLDERS = {
    "source": "the lessons' solutions and hidden tests",
    "solutions": "the solved lessons",
    ".reference": "the reference engine",
    "refgrad": "the reference engine",
    ".git": "its history holds every solution",
}
PUBLIC = {"autograder", ".venv"}  # at the checkout's top: the grader's package, packages
SKIPPED = {"__pycache__", ".ipynb_checkpoints", "node_modules"}
SCANNED = {".py", ".ipynb", ".md", ".txt", ".html", ".json", ".cfg", ".toml", ""}
MAX_BYTES = 2_000_000  # larger files are data, not code a student pastes
MIN_REGION = 2  # lines: a region this long, whole in a file, is an answer


class Reader:
    """Who counts as a student: the plan's students (and everyone else, through 'other')."""

    def __init__(self, plan: Plan):
        import pwd

        self.gids: set[int] = set()
        for course in plan.courses:
            for name in course.students:
                try:
                    entry = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.gids.update(os.getgrouplist(name, entry.pw_gid))

    def can(self, st: os.stat_result, bit: int) -> bool:
        """Whether a student (not the owner) has ``bit`` (4 read, 1 enter) on ``st``."""
        if st.st_mode & bit:  # others
            return True
        return st.st_gid in self.gids and bool(st.st_mode & (bit << 3))

    def reaches(self, path: Path) -> bool:
        """Whether a student can get to ``path``: every folder above it lets them through."""
        for folder in reversed(path.parents):
            try:
                if not self.can(folder.stat(), 1):
                    return False
            except OSError:
                return False
        return True


def _open_to_others(path: Path) -> str | None:
    try:
        mode = stat.S_IMODE(path.lstat().st_mode)
    except OSError:
        return None
    return f"{mode:04o}" if mode & 0o077 else None


def home(user: str) -> Path | None:
    import pwd

    try:
        return Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        return None


def private_folders(plan: Plan, home_of=home) -> list[str]:
    """Homes and ``~/<course>`` of the plan's people, course folders: open ones.
    ``home_of(user)``: the user's HOME (None: no such user)."""
    found = []
    for course in plan.courses:
        mode = _open_to_others(course.folder)
        if mode:
            found.append(
                f"course {course.id!r}: {course.folder} is open to others ({mode}): "
                "the hub makes it 0700"
            )
    for user in sorted(plan.users()):
        folder = home_of(user)
        if folder is None:
            continue
        mode = _open_to_others(folder)
        if mode:
            found.append(f"{user}'s home {folder} is open to others ({mode}): chmod 0700 {folder}")
        for course in plan.courses_of(user):
            inner = folder / course.id
            mode = _open_to_others(inner) if inner.is_dir() else None
            if mode:
                found.append(f"{user}'s {inner} is open to others ({mode}): chmod 0700 {inner}")
    return found


def environment_of(python: str) -> Path | None:
    """The checkout the interpreter's environment lives in (the nearest folder above its
    ``sys.prefix`` that has an ``nbgrader_config.py``), else None."""
    try:
        prefix = subprocess.run(
            [python, "-I", "-c", "import sys; print(sys.prefix)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    for folder in Path(prefix).resolve().parents:
        if (folder / "nbgrader_config.py").is_file():
            return folder
    return None


def answer_regions(sources: Iterable[Path]) -> list[tuple[str, frozenset[str]]]:
    """Each solution and hidden-test region of the lessons in ``sources`` (the course's
    ``source/`` folders) as its secret lines (the edition's: lines students are given
    nowhere), with the lesson it belongs to; regions of fewer than MIN_REGION such lines
    are left out (``return x`` alone is no answer)."""
    regions = []
    for source in sources:
        if not source.is_dir():
            continue
        secret = edition.secret_lines(source=source)
        for notebook in sorted(source.glob("*/*.ipynb")):
            for cell in edition._cells(notebook):
                text = edition._source(cell)
                for region in (markers.SOLUTION, markers.HIDDEN):
                    lines = edition._stripped(markers.inside(text, region)) & secret
                    if len(lines) >= MIN_REGION:
                        regions.append((notebook.parent.name, frozenset(lines)))
    return regions


def holds_answer(path: Path, regions: list[tuple[str, frozenset[str]]]) -> str | None:
    """The lesson whose solution or hidden-test region ``path`` holds whole, or None."""
    try:
        texts = edition._texts(path)
    except (OSError, ValueError):
        return None
    lines = {line.strip() for text in texts for line in text.splitlines()}
    for lesson, region in regions:
        if region <= lines:
            return lesson
    return None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:  # gone meanwhile, or not ours to look at
        return None


def readable_answers(top: Path, reader: Reader, regions) -> list[str]:
    """What in ``top`` a student can reach and read that holds an answer."""
    found = []
    for folder, subfolders, files in os.walk(top):
        here = Path(folder)
        for name in sorted(subfolders):
            path = here / name
            st = _lstat(path)
            if st is None:
                continue
            if name in SKIPPED or (name in PUBLIC and here == top) or stat.S_ISLNK(st.st_mode):
                subfolders.remove(name)
            elif not reader.can(st, 1):
                subfolders.remove(name)  # closed: nothing below is reachable
            elif name in ANSWER_FOLDERS:
                subfolders.remove(name)
                found.append(f"{path} is readable by students ({ANSWER_FOLDERS[name]})")
        for name in sorted(files):
            path = here / name
            st = _lstat(path)
            if st is None or not stat.S_ISREG(st.st_mode) or not reader.can(st, 4):
                continue
            if path.suffix not in SCANNED or st.st_size > MAX_BYTES:
                continue
            lesson = holds_answer(path, regions)
            if lesson:
                found.append(f"{path} is readable by students and holds an answer ({lesson})")
    return found


def problems(plan: Plan, python: str) -> list[str]:
    """Everything a student could read that they must not, one line each."""
    found = private_folders(plan)
    checkout = environment_of(python)
    if checkout is not None:
        sources = [checkout / "source", *(c.folder / "source" for c in plan.courses)]
        regions = answer_regions(dict.fromkeys(sources))
        reader = Reader(plan)
        if reader.reaches(checkout) and reader.can(checkout.stat(), 1):
            found += readable_answers(checkout, reader, regions)
    return found
