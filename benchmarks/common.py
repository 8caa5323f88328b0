"""The plumbing every benchmark shares (issue 41): one place, so that each script holds
only what it measures.

A script run as ``python benchmarks/<name>.py`` has benchmarks/ first on ``sys.path``, so
it imports this module as ``common``; importing it puts the repository's root on
``sys.path`` too (``autograder`` importable without installing). What is here:

  paths       ROOT, TESTS, REFERENCE and ``on_path`` (more folders first on sys.path);
  commands    ``venv_env`` (the environment with this venv's bin/ first on PATH, as
              nbgrader runs ``alembic`` from PATH), ``run_timed`` (a command's seconds);
  courses     ``scratch`` (a temporary folder, removed unless kept), ``copy_course``
              (this checkout's grader and source), ``old_course`` (an older commit's
              grader and kit with this checkout's assignments), ``git_archive``, ``write_class`` (a
              class of synthetic submissions), ``quiet_stderr``;
  repeats     ``alternate`` (peers in turn, so that both see the same machine load),
              ``load_average``;
  the line    ``parser`` (argparse described by the docstring), ``add_jobs``, ``add_keep``.

Nothing here is timed itself or prints. Not a benchmark (tests/test_benchmarks.py
skips it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
REFERENCE = ROOT / "source" / ".reference"


def on_path(*folders: Path) -> None:
    """Put ``folders`` first on ``sys.path``, in that order (each once)."""
    for folder in reversed(folders):
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
        sys.path.insert(0, str(folder))


on_path(ROOT)


# ---- commands ------------------------------------------------------------------------


def venv_env(base: dict | None = None) -> dict:
    """``base`` (default ``os.environ``) with this Python's bin/ first on PATH."""
    base = os.environ if base is None else base
    bindir = str(Path(sys.executable).parent)
    return dict(base, PATH=os.pathsep.join([bindir, base.get("PATH", "")]))


def run_timed(cmd: list[str], cwd: Path, env: dict | None = None):
    """(wall seconds, the finished process) of ``cmd`` run in ``cwd`` with its output
    captured as text; ``env`` defaults to ``venv_env()``. The caller judges the result."""
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=venv_env() if env is None else env, capture_output=True, text=True
    )
    return time.perf_counter() - start, proc


# ---- courses -------------------------------------------------------------------------


@contextlib.contextmanager
def scratch(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A new folder in the temporary directory (unique: /tmp may be shared), removed at
    the end unless ``keep``."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


SKIP = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")


def copy_course(dest: Path) -> None:
    """A private copy of the course: this checkout's grader, config and source/."""
    dest.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", dest)
    shutil.copytree(ROOT / "autograder", dest / "autograder", ignore=SKIP)
    shutil.copytree(ROOT / "source", dest / "source", ignore=SKIP)  # links become files


def git_archive(dest: Path, commit: str, paths: Sequence[str]) -> Path:
    """``paths`` as they were at ``commit``, extracted into the new folder ``dest``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, *paths], capture_output=True, check=True
    ).stdout
    dest.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def old_course(dest: Path, commit: str) -> Path:
    """The course with the grader of ``commit`` and this checkout's assignments: the
    commit's autograder/, nbgrader_config.py and kit (its source/.shared/: the grader
    loads coursekit.py from there, and its hidden tests use the kit's insides), placed in
    every assignment folder as that commit placed it (``place_kit``); this checkout's
    assignment folders (notebooks, data) without today's kit files."""
    git_archive(dest, commit, ["autograder", "nbgrader_config.py", "source/.shared"])
    source = ROOT / "source"
    today = {p.name for p in (source / ".shared").iterdir()}

    def ignore(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        mine = [".shared"] if here == source else today if here.parent == source else ()
        return [n for n in names if n in mine] + list(SKIP(folder, names))

    shutil.copytree(source, dest / "source", ignore=ignore, dirs_exist_ok=True)
    place_kit(dest, commit)
    return dest


PLACE = """
try:
    from autograder.course import place_coursekit
except ImportError:
    raise SystemExit(3)
place_coursekit()
"""


def place_kit(course: Path, commit: str) -> None:
    """The kit of ``course`` (an ``old_course`` of ``commit``) in each assignment folder:
    by the commit's own ``place_coursekit``, or, before there was one, as links to
    source/.shared/ named like those its assignment folders held in git."""
    proc = subprocess.run(
        [sys.executable, "-c", PLACE], cwd=course, env=venv_env(), capture_output=True, text=True
    )
    if proc.returncode == 0:
        return
    if proc.returncode != 3:
        raise RuntimeError(f"place_coursekit of {commit} failed:\n{proc.stderr[-2000:]}")
    tree = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "-r", commit, "--", "source"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    linked = {
        Path(path).name
        for line in tree.splitlines()
        for meta, path in [line.split("\t", 1)]
        if meta.startswith("120000 ") and not Path(path).parent.name.startswith(".")
    }
    for folder in (course / "source").iterdir():
        if folder.is_dir() and not folder.name.startswith("."):
            for name in sorted(linked):
                (folder / name).symlink_to(Path("..") / ".shared" / name)


KINDS = ("honest", "bug", "half", "blank")


def in_turn(i: int) -> str:
    """Student i's kind: the four KINDS in turn (grading_throughput.py, grading_dask.py)."""
    return KINDS[i % len(KINDS)]


def half_honest(i: int) -> str:
    """Student i's kind: half honest, the rest a typical bug, half done, blank in turn
    (class_scale.py, grading_profile.py)."""
    if i % 2 == 0:
        return "honest"
    return ("bug", "half", "blank")[(i // 2) % 3]


def write_class(
    course: Path,
    assignments: list[str],
    students: int,
    kind_of: Callable[[int], str],
    *,
    worked_quizzes: bool = False,
) -> int:
    """``course/submitted/student<i>/<assignment>/`` for ``students`` students, student i
    handing in ``kind_of(i)`` (``in_turn``, ``half_honest``; one of KINDS: the solution,
    autograder/demo.py's typical bug, half done, the blank notebook) of each assignment
    with solutions; with
    ``worked_quizzes`` a quiz's solution is worked out for the student's own variant.
    Returns the number of notebooks written."""
    import nbformat

    from autograder.course import NOTEBOOKS, SOLUTIONS, kind
    from autograder.demo import half_done, typical_bug, worked_quiz

    def made(which: str, own, blank):
        if which == "bug":
            return typical_bug(own, blank)
        if which == "half":
            return half_done(own, blank)
        return blank if which == "blank" else own

    count = 0
    for a in assignments:
        own_variant = worked_quizzes and kind(a) == "quiz"
        for path in sorted((SOLUTIONS / a).glob("*.ipynb")):
            solution = nbformat.read(path, as_version=4)
            blank = nbformat.read(NOTEBOOKS / a / path.name, as_version=4)
            shared: dict[str, object] = {}
            for i in range(students):
                student, which = f"student{i:03d}", kind_of(i)
                if own_variant:
                    nb = made(which, worked_quiz(solution, a, student), blank)
                else:
                    if which not in shared:
                        shared[which] = made(which, solution, blank)
                    nb = shared[which]
                folder = course / "submitted" / student / a
                folder.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, folder / path.name)
                count += 1
    return count


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null meanwhile (kernels' start-up chatter)."""
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# ---- repeats -------------------------------------------------------------------------


def alternate(peers: Sequence, round_index: int) -> list:
    """``peers`` in order on even rounds, reversed on odd ones, so that each sees the
    machine's load as the others do."""
    return list(peers) if round_index % 2 == 0 else list(reversed(peers))


def load_average(count: int = 1, digits: int = 1, sep: str = " ") -> str:
    """The first ``count`` load averages, ``digits`` after the point ("unknown" where the
    platform has none)."""
    try:
        return sep.join(f"{x:.{digits}f}" for x in os.getloadavg()[:count])
    except (AttributeError, OSError):
        return "unknown"


# ---- the command line ----------------------------------------------------------------


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def parser(doc: str, *, paragraph: bool = False) -> argparse.ArgumentParser:
    """An ArgumentParser described by ``doc``'s first line (or its first paragraph)."""
    return argparse.ArgumentParser(
        description=doc.split("\n\n")[0] if paragraph else doc.splitlines()[0]
    )


def add_jobs(parser: argparse.ArgumentParser, default: int = 0, help: str | None = None) -> None:
    """``--jobs``: grading workers, by default the cores here."""
    parser.add_argument("--jobs", type=int, default=default or cores(), help=help)


def add_keep(parser: argparse.ArgumentParser) -> None:
    """``--keep``: keep the scratch folder (see ``scratch``)."""
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
