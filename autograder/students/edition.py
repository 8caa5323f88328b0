"""``python -m autograder release --to DIR``: the student edition, a folder without answers.

This repository is the instructor's course: it holds the solutions, the hidden tests, the
reference engine and the grader. Students get the **student edition** instead::

    DIR/README.md            for students: one command to start, how lessons and checks work
    DIR/lab.py               the launcher: sets up .venv, seeds my-work/, starts JupyterLab
    DIR/requirements.txt     what students install: requirements-student.txt as it is
    DIR/LICENSE              the course's licence (code MIT, course text CC BY 4.0)
    DIR/jupyter/             the student JupyterLab's settings (Validate on, instructor
                             tools off, Validate's time limit, Markdown opens rendered)
    DIR/lessons/NN_name/     the released notebooks (notebooks/) and coursekit.py
    DIR/lessons/START-HERE.md  the page JupyterLab opens on (its links are relative to
                             lessons/, and to my-work/, where lab.py copies it; on a
                             JupyterHub, students can work in lessons/ itself)
    DIR/slides/              each released lesson's slides as web pages that open from
                             disk with no network (autograder/content/slides.py: made from
                             the student notebooks, so no slide shows an answer)
    DIR/.gitignore           my-work/ and .venv/ stay out of git

``--solutions`` writes the self-learners' download instead: the executed solution
notebooks (``solutions/``), with a README, and nothing else. ``--zip`` also writes
``DIR.zip``; ``--git`` makes DIR a git repository and commits the release in it.

Releasing into a folder that holds a previous release of the same kind replaces its files
and keeps ``.git``, ``my-work/`` and ``.venv/``; any other non-empty folder is refused.
Before it finishes, ``leaks()`` scans what was written for anything a student must not see
(solution code, hidden tests, the reference engine, the grader, quiz answers) and the
release fails if it finds any.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from .. import markers
from ..content import slides
from ..course import NOTEBOOKS, ROOT, SHARED, SOLUTIONS, SOURCE, assignments, kind

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent  # the whole grader
LAUNCHER = HERE / "launcher.py"
FILES = HERE / "payload"  # README.md and gitignore of the student edition
LAB_CONFIG = FILES / "jupyter"
START_PAGE = SHARED / "START-HERE.md"
STUDENT_REQUIREMENTS = ROOT / "requirements-student.txt"  # the one list of students' packages
LICENSE = ROOT / "LICENSE"  # code MIT, course text CC BY 4.0; ships with every release
MARKER = ".edition.json"  # what kind of release a folder holds
KEEP = {".git", "my-work", ".venv", MARKER}  # never removed when releasing again
SKIP = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc")

# What must never reach students, as text anywhere in a release.
FORBIDDEN_TEXT = [
    *markers.ALL,
    "load_grader",
    "refgrad",
    "kernel_startup",
    "kernel_guard",
    "autograder.hidden",
    "autograder/hidden",
    "autograder.verdicts",
    "autograder/verdicts",
    "GradingFailure(",
]
# Files and folders of the instructor's course, by name: every module of the grader (read
# from the whole package, so a new one is covered), except the launcher, which ships as lab.py.
FORBIDDEN_NAMES = {
    "source",
    "solutions",
    "autograder",
    "hidden",
    "probe",
    "refgrad",
    ".reference",
    "submitted",
    "autograded",
    "feedback",
    "exports",
    "gradebook.db",
    "nbgrader_config.py",
    ".autograder.json",
    *(
        path.name
        for path in PACKAGE.rglob("*.py")
        if path.name not in {"__init__.py", "__main__.py", "launcher.py", "lab.py"}
    ),
    *(
        path.name
        for path in PACKAGE.iterdir()
        if path.is_dir() and path != HERE and path.name != "__pycache__"
    ),
}


class ReleaseError(RuntimeError):
    pass


# ---- what is secret ----------------------------------------------------------------------


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8")).get("cells", [])


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def secret_lines(released: list[str] | None = None, source: Path = SOURCE) -> set[str]:
    """Every line of every solution and hidden-test region in the instructor notebooks that
    does not also appear, outside such regions, in what students are given: the notebooks
    of the ``released`` assignments (default: all) and coursekit. A line like ``return
    out`` in a locked cell is no secret, nor is lesson 1's engine once lesson 2, which
    gives it in a locked cell, is released."""
    secret: set[str] = set()
    public: set[str] = set((SHARED / "coursekit.py").read_text(encoding="utf-8").splitlines())
    given = set(assignments(source) if released is None else released)
    for assignment in assignments(source):
        for path in sorted((source / assignment).glob("*.ipynb")):
            for cell in _cells(path):
                text = _source(cell)
                secret.update(markers.inside(text, markers.SOLUTION, markers.HIDDEN).split("\n"))
                if assignment in given:
                    public.update(
                        markers.without(text, markers.SOLUTION, markers.HIDDEN).split("\n")
                    )
    stripped_public = {line.strip() for line in public}
    return {  # a line of brackets alone (a list's closing "]") tells nothing
        line.strip()
        for line in secret
        if re.search(r"\w", line) and line.strip() not in stripped_public
    }


def _texts(path: Path) -> list[str]:
    """The text in a file: for a notebook, every cell's source and every text output."""
    if path.suffix == ".ipynb":
        try:
            cells = _cells(path)
        except (ValueError, AttributeError):  # not a notebook after all: read it as text
            cells = [{"source": path.read_text(encoding="utf-8", errors="replace")}]
        texts = []
        for cell in cells:
            texts.append(_source(cell))
            for output in cell.get("outputs", []):
                for value in [
                    output.get("text", ""),
                    *output.get("data", {}).values(),
                    output.get("evalue", ""),
                ]:
                    texts.append("".join(value) if isinstance(value, list) else str(value))
        return texts
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return [path.read_bytes().decode("latin-1")]
    if path.suffix in (".html", ".htm"):  # and as a browser shows it: code is split in tags
        return [text, html.unescape(re.sub(r"<[^>]*>", "", text))]
    return [text]


def leaks(
    folder: Path, secrets: set[str] | None = None, *, allow_solutions: bool = False
) -> list[str]:
    """What in ``folder`` a student must not see, one line per finding (an empty list if
    nothing). ``secrets`` defaults to ``secret_lines`` of the lessons in the folder.
    ``allow_solutions``: the self-learners' download, where solution code is the point,
    but hidden tests, the grader and the reference engine are still not."""
    if secrets is None and not allow_solutions:
        lessons = folder / "lessons"
        released = sorted(p.name for p in lessons.glob("*") if p.is_dir())
        secrets = secret_lines(released)
    secrets = secrets or set()
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if rel.parts[0] in (".git", ".venv", "my-work"):
            continue
        if path.name in FORBIDDEN_NAMES:
            found.append(f"{rel}: a file or folder of the instructor's course")
        if not path.is_file():
            continue
        if path.suffix == ".zip":
            found.append(f"{rel}: an archive (its contents cannot be checked)")
            continue
        for text in _texts(path):
            for word in FORBIDDEN_TEXT:
                if word in text and not (allow_solutions and "SOLUTION" in word):
                    found.append(f"{rel}: contains {word!r}")
            if not allow_solutions:
                lines = {line.strip() for line in text.splitlines()}
                for line in sorted(lines & secrets)[:3]:
                    found.append(f"{rel}: solution or hidden-test line {line[:60]!r}")
    return sorted(set(found))


# ---- writing a release -------------------------------------------------------------------


def _clear_release_folder(dest: Path, kind: str) -> None:
    """Make ``dest`` an empty release folder of ``kind`` (keeping KEEP), or refuse."""
    if dest.exists() and not dest.is_dir():
        raise ReleaseError(f"{dest} is a file, not a folder")
    if dest.resolve() == ROOT or ROOT.is_relative_to(dest.resolve()):
        raise ReleaseError(f"{dest} is the course itself (or holds it): choose another folder")
    if dest.resolve().is_relative_to(ROOT / "source"):
        raise ReleaseError(f"{dest} is inside source/: choose another folder")
    marker = dest / MARKER
    if dest.is_dir() and any(dest.iterdir()):
        if not marker.exists():
            raise ReleaseError(
                f"{dest} is not empty and holds no earlier release: choose an empty folder"
            )
        previous = json.loads(marker.read_text()).get("kind")
        if previous != kind:
            raise ReleaseError(f"{dest} holds a {previous} release, not a {kind} one")
        for path in dest.iterdir():
            if path.name in KEEP:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"kind": kind}) + "\n")


def _selected(selected: list[str] | None) -> list[str]:
    unknown = sorted(set(selected or []) - set(assignments()))
    if unknown:
        raise ReleaseError(
            f"no assignment {', '.join(unknown)}; the course has {', '.join(assignments())}"
        )
    return [a for a in assignments() if selected is None or a in selected]


def build_student_edition(dest: Path, selected: list[str] | None = None) -> list[str]:
    """Write the student edition of the ``selected`` assignments (default: all) into
    ``dest``; return its files (relative paths)."""
    chosen = _selected(selected)
    missing = [a for a in chosen if not (NOTEBOOKS / a).is_dir()]
    if missing:
        raise ReleaseError(f"notebooks/ lacks {', '.join(missing)}: run `make generate` first")
    _clear_release_folder(dest, "student")
    for assignment in chosen:
        shutil.copytree(NOTEBOOKS / assignment, dest / "lessons" / assignment, ignore=SKIP)
    shutil.copy(LAUNCHER, dest / "lab.py")
    shutil.copytree(LAB_CONFIG, dest / "jupyter", ignore=SKIP)
    shutil.copy(START_PAGE, dest / "lessons" / START_PAGE.name)
    shutil.copy(FILES / "README.md", dest / "README.md")
    shutil.copy(FILES / "gitignore", dest / ".gitignore")
    shutil.copy(STUDENT_REQUIREMENTS, dest / "requirements.txt")
    shutil.copy(LICENSE, dest / "LICENSE")
    with_slides = [a for a in chosen if kind(a) == "lesson"]
    if with_slides:
        try:
            slides.build(with_slides, dest / "slides")
        except slides.SlidesError as exc:
            raise ReleaseError(f"the slides: {exc}") from exc
    return _files(dest)


def build_solutions(dest: Path, selected: list[str] | None = None) -> list[str]:
    """Write the self-learners' solutions download into ``dest``; return its files."""
    chosen = _selected(selected)
    missing = [a for a in chosen if not (SOLUTIONS / a).is_dir()]
    if missing:
        raise ReleaseError(f"solutions/ lacks {', '.join(missing)}: run `make generate` first")
    _clear_release_folder(dest, "solutions")
    for assignment in chosen:
        shutil.copytree(SOLUTIONS / assignment, dest / assignment, ignore=SKIP)
    shutil.copy(FILES / "SOLUTIONS-README.md", dest / "README.md")
    shutil.copy(LICENSE, dest / "LICENSE")
    return _files(dest)


def _files(dest: Path) -> list[str]:
    return sorted(
        str(p.relative_to(dest))
        for p in dest.rglob("*")
        if p.is_file() and not {".git", ".venv", "my-work"} & set(p.relative_to(dest).parts)
    )


def write_zip(folder: Path) -> Path:
    """``folder.zip`` next to ``folder``, everything under one top folder of its name."""
    archive = folder.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in _files(folder):
            zf.write(folder / rel, f"{folder.name}/{rel}")
    return archive


def commit(folder: Path, message: str) -> str:
    """Make ``folder`` a git repository if it is not one, and commit everything in it."""

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ReleaseError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout.strip()

    if not (folder / ".git").exists():
        git("init", "-q", "-b", "main")
    git("add", "-A")
    if not git("status", "--porcelain"):
        return "nothing changed since the last commit"
    git(
        "-c",
        "user.name=Autograd from Scratch",
        "-c",
        "user.email=course@localhost",
        "commit",
        "-q",
        "-m",
        message,
    )
    return git("log", "--oneline", "-1")


def release(
    dest: Path,
    selected: list[str] | None = None,
    *,
    solutions: bool = False,
    zip_: bool = False,
    git: bool = False,
) -> int:
    """The ``release`` command: 0 when written and clean, 1 when something leaked, 2 when
    it could not be written."""
    dest = Path(dest).resolve()
    build = build_solutions if solutions else build_student_edition
    try:
        files = build(dest, selected)
    except ReleaseError as exc:
        print(f"release: {exc}")
        return 2
    what = "solutions download" if solutions else "student edition"
    found = leaks(dest, allow_solutions=solutions)
    if found:
        print(f"release: the {what} in {dest} holds what students must not see:")
        for line in found[:20]:
            print(f"  {line}")
        print("Nothing was published; fix the course and release again.")
        return 1
    size = sum((dest / f).stat().st_size for f in files)
    print(f"{what}: {len(files)} files, {size / 1024:.0f} KiB in {dest}")
    if zip_:
        archive = write_zip(dest)
        print(f"zip: {archive} ({archive.stat().st_size / 1024:.0f} KiB)")
    if git:
        try:
            print(f"git: {commit(dest, f'Release of the {what}')}")
        except ReleaseError as exc:
            print(f"release: {exc}")
            return 2
    if not solutions:
        print("Students: python3 lab.py in that folder (README.md says more).")
    return 0
