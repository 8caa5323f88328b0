"""``python -m autograder release --to DIR``: the student edition, a folder without answers.

This repository is the instructor's course: it holds the solutions, the hidden tests, the
reference engine and the grader. Students get the **student edition** instead::

    DIR/README.md            for students: one command to start, how lessons and checks work
    DIR/lab.py               the launcher: sets up .venv, seeds my-work/, starts JupyterLab
    DIR/requirements.txt     what students install: requirements-student.txt as it is
    DIR/LICENSE              the course's licence (code MIT, course text CC BY 4.0)
    DIR/jupyter/             the student JupyterLab's settings (Validate on, instructor
                             tools off, Validate's time limit, Markdown opens rendered)
    DIR/lessons/NN_name/     the released notebooks (notebooks/) and the kit's modules
    DIR/lessons/START-HERE.md  the page JupyterLab opens on (its links are relative to
                             lessons/, and to my-work/, where lab.py copies it; on a
                             JupyterHub, students can work in lessons/ itself)
    DIR/course/NN_name/      the course's version of each lesson that is past its due
                             date (its executed solution notebook), which a notebook's
                             engine("course", ...) runs; none without a past lesson
    DIR/slides/              each released lesson's slides as web pages that open from
                             disk with no network (autograder/content/slides.py: made from
                             the student notebooks, so no slide shows an answer)
    DIR/.gitignore           my-work/ and .venv/ stay out of git

``--self-paced`` writes the edition for a learner on their own, who has no due dates:
every assignment, and the course's version of every lesson in ``course/`` from the start,
so that a set or a later lesson can switch to ``engine("course", ...)`` whenever the
learner chooses (quizzes and problem sets ship unsolved, as in every edition).

``--solutions`` writes the self-learners' download instead: the executed solution
notebooks (``solutions/``), with a README, and nothing else. ``--zip`` also writes
``DIR.zip``; ``--git`` makes DIR a git repository and commits the release in it.

What the edition holds follows the course's dates (``c.Schedule``, schedule.py): the
assignments released by then, and the past ones' course versions; ``--upto`` a lesson or
named assignments instead. Releasing into a folder that holds a previous release of the
same kind replaces its files and keeps ``.git``, ``my-work/`` and ``.venv/``; any other
non-empty folder is refused. Before it finishes, ``leaks()`` scans what was written for
anything a student must not see (solution code of an assignment that is not past, hidden
tests, the reference engine, the grader, quiz answers) and the release fails if it finds
any.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import zipfile
from datetime import datetime
from pathlib import Path

from .. import markers, schedule
from ..content import slides
from ..course import (
    KITS,
    NOTEBOOKS,
    ROOT,
    SHARED,
    SOLUTIONS,
    SOURCE,
    assignments,
    kind,
    nbgrader_config,
)
from ..errors import GraderError
from ..schedule import Plan

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent  # the whole grader
LAUNCHER = HERE / "launcher.py"
FILES = HERE / "payload"  # README.md and gitignore of the student edition
LAB_CONFIG = FILES / "jupyter"
START_PAGE = SHARED / "START-HERE.md"
STUDENT_REQUIREMENTS = ROOT / "requirements-student.txt"  # the one list of students' packages
LICENSE = ROOT / "LICENSE"  # code MIT, course text CC BY 4.0; ships with every release
MARKER = ".edition.json"  # what kind of release a folder holds, and what is past in it
COURSE_FOLDER = "course"  # the course's past lessons (coursekit.COURSE_FOLDER reads them)
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


class Secrets:
    """What a release must not hold, read from the instructor notebooks, when the
    assignments in ``past`` are past their due dates (``course.schedule``).

    - Each line of a solution region of an assignment that is not past, unless students
      are given it anyway: it appears outside solution and hidden-test regions in
      the kit modules, in that assignment's own notebooks or in an assignment before it in
      course order (a line like ``return out``), or in the solution of a past one. A
      later assignment never makes it public: a lesson that repeated an earlier lesson's
      answers in a locked cell would give them away to a class that gets both at once.
    - Each line of a hidden-test region that students are given nowhere, and each line
      of a quiz's hidden answers (``verdicts/hidden/<quiz>.py``) that names a question,
      option, wording or listing by its id (``"q2"``, ``"o2"``, ``{"s1", "s3"}``,
      ``"m1": 7``): which of them is right is the grader's alone.
    """

    def __init__(self, past=(), source: Path = SOURCE):
        self.past = set(past)
        self.order = assignments(source)
        kit = [(SHARED / name).read_text(encoding="utf-8") for name in KITS]
        self.kit = {line.strip() for text in kit for line in text.splitlines()}
        self.solution: dict[str, set[str]] = {}
        self.given: dict[str, set[str]] = {}
        hidden: set[str] = set()
        for assignment in self.order:
            self.solution[assignment], self.given[assignment] = set(), set()
            for path in sorted((source / assignment).glob("*.ipynb")):
                for cell in _cells(path):
                    text = _source(cell)
                    solution = markers.inside(text, markers.SOLUTION)
                    self.solution[assignment].update(_stripped(solution))
                    hidden.update(_stripped(markers.inside(text, markers.HIDDEN)))
                    given = markers.without(text, markers.SOLUTION, markers.HIDDEN)
                    self.given[assignment].update(_stripped(given))
                    if cell.get("cell_type") == "markdown":  # as a slide shows it: a table's
                        self.given[assignment].update(_shown(given))  # cells, `code`
            for path in sorted((source / assignment).glob("*.py")):  # released beside it
                if path.name not in KITS:  # (a quiz's questions.py); the kit is read above
                    self.given[assignment].update(_stripped(path.read_text(encoding="utf-8")))
        keys = set().union(*(_quiz_key_lines(a) for a in self.order if kind(a) == "quiz"))
        self.hidden = (hidden | keys) - self.kit - set().union(*self.given.values())
        self._answers = self._not_past_answers()
        self._cache: dict[str | None, set[str]] = {}

    def _not_past_answers(self) -> set[str]:
        answers: set[str] = set()
        public = set(self.kit).union(*(self.solution[a] for a in self.past if a in self.order))
        for assignment in self.order:
            public |= self.given[assignment]  # given by it or by an assignment before it
            if assignment not in self.past:
                answers |= self.solution[assignment] - public
        return answers

    def in_files_of(self, assignment: str | None) -> set[str]:
        """The secret lines for a file of ``assignment`` (None: a file of no assignment,
        such as the README or the launcher)."""
        if assignment not in self._cache:
            self._cache[assignment] = self._answers | self.hidden
        return self._cache[assignment]


QUIZ_ID = re.compile(r'"(?:[qoms]\d+|\w+)"(?::\s*\d|\s*[,:}])')  # "q1": "o2", "m1": 7


def _quiz_key_lines(assignment: str) -> set[str]:
    """The lines of a quiz's hidden answers that say which id is right."""
    path = PACKAGE / "verdicts" / "hidden" / f"{assignment}.py"
    if not path.is_file():
        return set()
    return {line for line in _stripped(path.read_text(encoding="utf-8")) if QUIZ_ID.search(line)}


def _stripped(text: str) -> set[str]:
    """The lines of ``text`` that say something: a line of brackets alone (a list's
    closing ``]``) tells nothing."""
    return {line.strip() for line in text.split("\n") if re.search(r"\w", line)}


def _shown(markdown: str) -> set[str]:
    """Pieces of a Markdown cell that a page shows on lines of their own: table cells
    and `code` spans (the leak scan reads slides as a browser shows them)."""
    cells = {part.strip() for line in markdown.split("\n") for part in line.split("|")}
    spans = {span.strip() for span in re.findall(r"`([^`\n]+)`", markdown)}
    return {piece for piece in cells | spans if piece}


def secret_lines(past=(), source: Path = SOURCE) -> set[str]:
    """The lines no file of a release may hold when the assignments in ``past`` are past
    (``Secrets``: a file of no assignment; default: none is past, every answer is secret)."""
    return Secrets(past, source).in_files_of(None)


def _carrier(rel: Path) -> str | None:
    """The assignment a file of a release belongs to: lessons/<it>/..., course/<it>/...,
    slides/<it>.slides.html (None for the edition's own files)."""
    parts = rel.parts
    if len(parts) >= 3 and parts[0] in ("lessons", COURSE_FOLDER):
        return parts[1]
    if len(parts) == 2 and parts[0] == "slides" and parts[1].endswith(".slides.html"):
        return parts[1].removesuffix(".slides.html")
    return None


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
    folder: Path, secrets: set[str] | Secrets | None = None, *, allow_solutions: bool = False
) -> list[str]:
    """What in ``folder`` a student must not see, one line per finding (an empty list if
    nothing). ``secrets`` defaults to the ``Secrets`` of the release in the folder (its
    past assignments are in its marker file); a set of lines is looked for in every file.
    ``allow_solutions``: the self-learners' download, where solution code is the point,
    but hidden tests, the grader and the reference engine are still not."""
    if secrets is None and not allow_solutions:
        secrets = Secrets(_marker(folder).get("past", []))
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
        if isinstance(secrets, Secrets):
            lines_here = secrets.in_files_of(_carrier(rel))
        else:
            lines_here = secrets or set()
        for text in _texts(path):
            for word in FORBIDDEN_TEXT:
                if word in text and not (allow_solutions and "SOLUTION" in word):
                    found.append(f"{rel}: contains {word!r}")
            if not allow_solutions:
                lines = {line.strip() for line in text.splitlines()}
                for line in sorted(lines & lines_here)[:3]:
                    found.append(f"{rel}: solution or hidden-test line {line[:60]!r}")
    return sorted(set(found))


def _marker(folder: Path) -> dict:
    try:
        return json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return {}


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


def edition_plan(
    selected: list[str] | None = None,
    *,
    as_of: datetime | None = None,
    upto: str | None = None,
    self_paced: bool = False,
) -> Plan:
    """What a student edition holds (course/schedule.py): the ``selected`` assignments,
    or those up to and including ``upto`` (the ones before it past), or what the course's
    ``c.Schedule.dates`` release by ``as_of`` (all of them, none past, without dates).
    ``self_paced``: every assignment, with every lesson past, for a learner on their own
    who switches to the course's engine when they choose (quizzes and sets stay unsolved)."""
    if self_paced:
        if selected or upto is not None or as_of is not None:
            raise ReleaseError(
                "--self-paced releases every assignment: no names, --upto or --as-of"
            )
        every = assignments()
        return Plan(every, [a for a in every if kind(a) == "lesson"])
    if upto is not None:
        if selected:
            raise ReleaseError("name the assignments to release or give --upto, not both")
        return schedule.upto(assignments(), upto)
    plan = schedule.Schedule.for_course(nbgrader_config()).plan(assignments(), as_of)
    if selected:
        return Plan(_selected(selected), plan.past)
    return plan


def build_student_edition(
    dest: Path, selected: list[str] | None = None, past: list[str] | tuple = ()
) -> list[str]:
    """Write the student edition of the ``selected`` assignments (default: all) into
    ``dest``, with the course's version of each lesson in ``past`` (its executed solution
    notebook, in ``course/``, where ``engine("course", ...)`` finds it); return its files
    (relative paths)."""
    chosen = _selected(selected)
    missing = [a for a in chosen if not (NOTEBOOKS / a).is_dir()]
    missing += [f"solutions/{a}" for a in past if not (SOLUTIONS / a).is_dir()]
    if missing:
        raise ReleaseError(f"the course lacks {', '.join(missing)}: run `make generate` first")
    _clear_release_folder(dest, "student")
    (dest / MARKER).write_text(
        json.dumps({"kind": "student", "released": chosen, "past": sorted(past)}) + "\n"
    )
    for assignment in chosen:
        shutil.copytree(NOTEBOOKS / assignment, dest / "lessons" / assignment, ignore=SKIP)
    shipped = [a for a in _selected(list(past)) if kind(a) == "lesson"] if past else []
    for lesson in shipped:
        (dest / COURSE_FOLDER / lesson).mkdir(parents=True)
        for notebook in sorted((SOLUTIONS / lesson).glob("*.ipynb")):
            shutil.copy(notebook, dest / COURSE_FOLDER / lesson / notebook.name)
    if shipped:
        shutil.copy(FILES / "COURSE-README.md", dest / COURSE_FOLDER / "README.md")
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
    as_of: str | None = None,
    upto: str | None = None,
    self_paced: bool = False,
) -> int:
    """The ``release`` command: 0 when written and clean, 1 when something leaked, 2 when
    it could not be written. The student edition holds what ``edition_plan`` says (the
    course's dates as of ``as_of``, ``upto`` a lesson, or the ``selected`` assignments);
    the solutions download the ``selected`` assignments (default: all)."""
    dest = Path(dest).resolve()
    try:
        if solutions:
            if as_of is not None or upto is not None or self_paced:
                raise ReleaseError("--as-of, --upto and --self-paced are for the student edition")
            files = build_solutions(dest, selected)
        else:
            plan = edition_plan(
                selected, as_of=schedule.as_of_date(as_of), upto=upto, self_paced=self_paced
            )
            if not plan.released:
                raise ReleaseError("nothing is released yet by c.Schedule.dates")
            files = build_student_edition(dest, plan.released, plan.past)
    except (ReleaseError, GraderError) as exc:
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
    if not solutions:
        print(f"released: {', '.join(plan.released)}")
        shipped = [a for a in plan.past if kind(a) == "lesson"]
        if shipped:
            print(f"past, with the course's version in {COURSE_FOLDER}/: {', '.join(shipped)}")
        if plan.undated:
            print(f"not released (no release date in c.Schedule.dates): {', '.join(plan.undated)}")
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
