"""``python -m autograder grade``: autograde every pending submission into nbgrader's gradebook.

How it works (docs/grading.md has the instructor's view):

1. For each assignment, nbgrader ``generate_assignment`` records the cells in a private
   *template* gradebook, and in the course gradebook too when the one there is missing or
   out of date (any database URL nbgrader accepts; SQLite by default).
2. A submission is pending unless ``autograded/<student>/<assignment>/.autograder.json``
   says it was graded from exactly these files with exactly this version of the assignment
   and grader, and the gradebook still holds those scores.
3. Up to ``--jobs`` workers (``autograder.worker``; the machine's cores by default) grade
   pending submissions in parallel, each against its own copy of the template gradebook,
   under the limits of ``autograder.limits``. A notebook whose kernel died or hung is run
   again with that cell skipped, so what can be graded is graded.
4. This process alone writes the course gradebook: nbgrader's own ``SaveAutoGrades`` and
   ``AssignLatePenalties`` applied to each autograded notebook. Then the autograded folder
   and its record are swapped in. Killed at any point, a re-run redoes what was not
   finished and nothing else; re-running when nothing changed changes nothing.

Every submission ends with a score (zero for what could not run) and a one-line note.
Exit codes: 0 all graded, 1 graded but some submissions (or files) had problems,
2 the grader itself failed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

# jsonschema (under nbformat) imports rfc3987_syntax when present, which builds a parser
# for seconds at every start. The IRI format check it provides is never used by nbformat.
sys.modules.setdefault("rfc3987_syntax", None)

from . import limits as oslimits  # noqa: E402
from .course import ROOT, SOURCE, venv_path  # noqa: E402

RECORD = ".autograder.json"
GRADER_VERSION = "1"
OK, PROBLEMS, FAILED = 0, 1, 2
GLOB_CHARS = set("*?[]")
KERNEL_START_ERRORS = ("Kernel didn't respond", "Kernel died before replying to kernel_info",
                       "No such kernel named")


class GraderError(RuntimeError):
    """The grader itself could not do its job (exit code 2)."""


# ---- the course ------------------------------------------------------------------------


@dataclass
class Course:
    root: Path  # holds submitted/, autograded/, feedback/ (and gradebook.db by default)
    source: Path
    db_url: str
    course_id: str
    config: object  # traitlets Config from nbgrader_config.py, with the overrides
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
        from .course import nbgrader_api

        base = {"source_directory": str(self.source), "db_url": self.db_url}
        return nbgrader_api(self.root, **{**base, **settings})

    def assignments(self) -> list[str]:
        from .course import assignments

        return assignments(self.source)

    def record_path(self, student: str, assignment: str) -> Path:
        return self.autograded / student / assignment / RECORD

    def read_record(self, student: str, assignment: str) -> dict | None:
        try:
            return json.loads(self.record_path(student, assignment).read_text())
        except (OSError, ValueError):
            return None


def open_course(root: Path | str | None = None, db_url: str | None = None) -> Course:
    """The course at ``root`` (the repository by default) with nbgrader_config.py's settings;
    ``source/`` is the root's own if it has one, else the repository's."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    venv_path()
    root = Path(root or ROOT).resolve()
    source = root / "source" if (root / "source").is_dir() else SOURCE
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    extra = Config()
    extra.CourseDirectory.root = str(root)
    extra.CourseDirectory.source_directory = str(source)
    if db_url:
        extra.CourseDirectory.db_url = db_url
    config.merge(extra)
    from nbgrader.coursedir import CourseDirectory

    cd = CourseDirectory(config=config)
    return Course(root, source, cd.db_url, cd.course_id, config)


# ---- digests and records ---------------------------------------------------------------


def folder_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if ".ipynb_checkpoints" in rel.parts or "__pycache__" in rel.parts:
            continue
        if path.is_symlink():
            h.update(b"L" + str(rel).encode() + b"\0" + os.readlink(path).encode() + b"\0")
        elif path.is_file():
            h.update(b"F" + str(rel).encode() + b"\0")
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()[:24]


def grader_digest(assignment: str, source: Path) -> str:
    from .generate import source_digest

    h = hashlib.sha256(f"{GRADER_VERSION}\0{source_digest(assignment, source)}".encode())
    here = Path(__file__).resolve().parent
    for path in sorted([here / "kernel_startup.py", *(here / "hidden").glob("*.py"),
                        *(SOURCE / ".reference").rglob("*.py")]):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:24]


@dataclass
class Outcome:
    student: str
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    problem: bool = False
    note: str = ""
    seconds: float = 0.0
    status: str = "graded"  # graded | unchanged | failed
    late_seconds: float = 0.0

    @property
    def mark(self) -> str:
        return "✗" if self.problem or self.status == "failed" else "✓"


# ---- what is submitted -----------------------------------------------------------------


@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path


def discover(course: Course, assignments: list[str] | None, students: list[str] | None,
             ) -> tuple[list[Submission], list[str]]:
    """Submissions to consider, and problems with the submitted folder (never ignored)."""
    known = set(course.assignments())
    wanted_a = list(dict.fromkeys(assignments or []))
    wanted_s = list(dict.fromkeys(students or []))
    problems: list[str] = []
    found: list[Submission] = []
    if not course.submitted.is_dir():
        return [], [*problems, f"{course.submitted} does not exist: nothing was submitted"]
    for sdir in sorted(course.submitted.iterdir(), key=lambda p: p.name):
        if sdir.name.startswith(".") and sdir.name in (".ipynb_checkpoints", ".DS_Store"):
            continue
        if wanted_s and sdir.name not in wanted_s:
            continue
        if not sdir.is_dir():
            problems.append(f"submitted/{sdir.name} is a file, not a student folder: not graded")
            continue
        if sdir.name.startswith("."):
            problems.append(f"submitted/{sdir.name}: a hidden folder is not a student: "
                            "not graded")
            continue
        for adir in sorted(sdir.iterdir(), key=lambda p: p.name):
            if adir.name in (".ipynb_checkpoints", ".DS_Store"):
                continue
            if not adir.is_dir():
                problems.append(f"submitted/{sdir.name}/{adir.name} is not in an assignment "
                                "folder: not graded")
            elif adir.name not in known:
                if not wanted_a:
                    problems.append(f"submitted/{sdir.name}/{adir.name}: no such assignment "
                                    "in source/: not graded")
            elif not wanted_a or adir.name in wanted_a:
                found.append(Submission(sdir.name, adir.name, adir))
    have = {s.student for s in found}
    for student in wanted_s:
        if student not in have:
            problems.append(f"no submission from student {student!r}"
                            + (f" for {', '.join(wanted_a)}" if wanted_a else ""))
    return found, problems


# ---- the gradebook -----------------------------------------------------------------------


def cells_fingerprint(db_url: str, assignment: str, course_id: str):
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return None
        rows = []
        for nb in a.notebooks:
            rows += [("s", nb.name, c.name, c.cell_type, bool(c.locked), c.checksum, c.source)
                     for c in nb.source_cells]
            rows += [("g", nb.name, c.name, float(c.max_score)) for c in nb.grade_cells]
            rows += [("o", nb.name, c.name) for c in nb.solution_cells]
        return sorted(rows, key=repr)


def sync_assignment(course: Course, assignment: str, work: Path) -> Path:
    """A template gradebook with the assignment's cells (returned), and the course
    gradebook brought up to date the same way (nbgrader generate_assignment)."""
    template = work / f"template-{assignment}.db"
    fresh = _generate(course, assignment, f"sqlite:///{template}", work / "release-template")
    if cells_fingerprint(course.db_url, assignment, course.course_id) != cells_fingerprint(
        f"sqlite:///{template}", assignment, course.course_id
    ):
        _generate(course, assignment, course.db_url, work / "release-course")
    return fresh


def _generate(course: Course, assignment: str, db_url: str, release: Path) -> Path:
    api = course.api(release_directory=str(release), db_url=db_url)
    result = api.generate_assignment(assignment, force=True, create=True)
    if not result.get("success"):
        raise GraderError(f"nbgrader generate_assignment {assignment} failed:\n"
                          f"{(result.get('log') or '')[-2000:]}{result.get('error') or ''}")
    return Path(db_url.removeprefix("sqlite:///"))


def auto_scores(course: Course, assignment: str) -> dict[str, float]:
    """{student: sum of autograder scores} for the assignment's submissions in the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    if course.db_url.startswith("sqlite:///") and not Path(
            course.db_url.removeprefix("sqlite:///")).exists():
        return out  # no gradebook yet (and no need to create one just to read it)
    with Gradebook(course.db_url, course.course_id) as gb:
        try:
            subs = gb.assignment_submissions(assignment)
        except MissingEntry:
            return out
        for sub in subs:
            out[sub.student.id] = round(sum(
                g.auto_score or 0 for nb in sub.notebooks for g in nb.grades), 6)
    return out


def merge(course: Course, sub: Submission, autograded: Path | None, graded: set[str]) -> dict:
    """Write one submission's scores into the course gradebook with nbgrader's own
    SaveAutoGrades and AssignLatePenalties (notebooks not in ``graded`` score zero)."""
    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings():  # nbgrader's add_submission warns about its own session
        warnings.simplefilter("ignore", SAWarning)
        return _merge(course, sub, autograded, graded)


def _merge(course: Course, sub: Submission, autograded: Path | None, graded: set[str]) -> dict:
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

    a, s = sub.assignment, sub.student
    stamp = course.coursedir().get_existing_timestamp(str(sub.folder))
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.update_or_create_student(s)
        kwargs = {"timestamp": stamp} if stamp else {}
        submission = gb.update_or_create_submission(a, s, **kwargs)
        names = [nb.name for nb in gb.find_assignment(a).notebooks]
        have = {g.name for nb in submission.notebooks for g in nb.grades}
        want = {c.name for nb in gb.find_assignment(a).notebooks for c in nb.grade_cells}
        if have != want:  # the assignment's cells changed since this entry was made
            gb.remove_submission(a, s)
            gb.update_or_create_submission(a, s, **kwargs)
    for name in names:
        path = autograded / f"{name}.ipynb" if autograded else None
        if name in graded and path is not None and path.exists():
            nb = nbformat.read(path, as_version=4)
            resources = {"nbgrader": {"notebook": name, "assignment": a, "student": s,
                                      "db_url": course.db_url}}
            SaveAutoGrades(config=course.config).preprocess(nb, resources)
            AssignLatePenalties(config=course.config).preprocess(nb, resources)
        else:
            with Gradebook(course.db_url, course.course_id) as gb:
                snb = gb.find_submission_notebook(name, a, s)
                for grade in snb.grades:
                    grade.auto_score = 0
                    grade.needs_manual_grade = False
                snb.late_submission_penalty = None
                gb.db.commit()
    with Gradebook(course.db_url, course.course_id) as gb:
        try:
            submission = gb.find_submission(a, s)
        except MissingEntry as exc:
            raise GraderError(f"{s}/{a} is missing from the gradebook after grading") from exc
        return {
            "score": float(submission.score), "max_score": float(submission.max_score),
            "auto_score": round(sum(g.auto_score or 0 for nb in submission.notebooks
                                    for g in nb.grades), 6),
            "late_seconds": float(submission.total_seconds_late or 0),
            "cells": {f"{nb.name}/{g.name}": g.auto_score for nb in submission.notebooks
                      for g in nb.grades},
        }


# ---- notes -------------------------------------------------------------------------------


EVENT_TEXT = {
    "died": "the kernel died in {cell}",
    "stuck": "{cell} ran past the time limit and ignored the interrupt",
    "timeout": "{cell} was stopped after the {limit} s per-cell limit",
    "wall": "the notebook ran out of its {wall} s time limit at {cell}",
    "memory": "{cell} ran out of memory (limit {memory})",
    "output": "{cell} printed too much; only the first {output} kept",
    "tamper": "{cell} changed functions the tests rely on (undone; a test cell where this "
              "happens scores 0)",
}
PROBLEM_EVENTS = {"died", "stuck", "timeout", "wall", "memory", "tamper"}


def describe_cell(event: dict, nb) -> str:
    index = event.get("cell")
    if index is None:
        return "a cell"
    what = f"cell {index + 1}"
    gid = event.get("grade_id")
    if gid:
        return f"{what} (`{gid}`)"
    if nb is not None and 0 <= index < len(nb.cells):
        first = next((ln.strip() for ln in nb.cells[index].source.splitlines() if ln.strip()),
                     "")
        if first:
            first = first.replace("`", "'")
            return f"{what} (`{first[:40]}{'…' if len(first) > 40 else ''}`)"
    return what


def compose_notes(result: dict, history: list[dict], limits: oslimits.Limits,
                  autograded: Path | None) -> dict[str, list[tuple[str, bool]]]:
    """{notebook name or "": [(note, is_problem)]} from a worker result and the events of
    earlier runs (cells that crashed or hung and were then skipped)."""
    import nbformat

    fmt = {"limit": limits.cell_timeout, "wall": limits.wall,
           "memory": f"{limits.memory / oslimits.GiB:g} GiB",
           "output": f"{limits.output // 1000} kB"}
    out: dict[str, list[tuple[str, bool]]] = {"": [(n["text"], n["problem"])
                                                  for n in result.get("folder_notes", [])]}
    for name, entry in result.get("notebooks", {}).items():
        notes = [(n["text"], n["problem"]) for n in entry.get("notes", [])]
        nb = None
        path = autograded / f"{name}.ipynb" if autograded else None
        if path is not None and path.exists():
            with contextlib.suppress(Exception):
                nb = nbformat.read(path, as_version=4)
        earlier = [e for e in history if e.get("notebook") == name]
        for event in earlier:
            verb = "crashed the kernel" if event["kind"] == "died" else "hung"
            notes.append((f"{describe_cell(event, nb)} {verb} and was skipped; the rest was "
                          "graded", True))
        for event in entry.get("events", []):
            kind = event["kind"]
            if kind == "skipped" or kind not in EVENT_TEXT:
                continue
            text = EVENT_TEXT[kind].format(cell=describe_cell(event, nb), **fmt)
            if kind in ("died", "stuck"):
                text += "; later cells were not run"
            notes.append((text, kind in PROBLEM_EVENTS))
        if entry.get("error") and not entry.get("graded") and entry.get("used_file"):
            notes.append((f"nbgrader could not grade `{name}.ipynb`: {entry['error'][:160]}",
                          True))
        out[name] = notes
    return out


def note_line(notes: dict[str, list[tuple[str, bool]]], n_notebooks: int, late: float) -> str:
    parts = []
    for name, items in notes.items():
        for text, _ in items:
            prefix = f"{name}: " if name and n_notebooks > 1 else ""
            parts.append(prefix + text)
    if late > 0:
        parts.append(f"submitted {_duration(late)} late")
    return "; ".join(dict.fromkeys(parts))


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    hours = minutes // 60
    return f"{hours} h {minutes % 60:02d} min" if hours < 48 else f"{hours // 24} days"


def install(course: Course, sub: Submission, autograded: Path | None,
            notes: dict[str, list[tuple[str, bool]]], record: dict) -> None:
    """Swap the new autograded folder (with a note cell on top of notebooks that have
    notes, and the record) in place of the old one."""
    import nbformat

    parent = course.autograded / sub.student
    parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    staging = parent / f".{sub.assignment}.new-{tag}"
    if autograded is not None and autograded.is_dir():
        shutil.copytree(autograded, staging)
    else:
        staging.mkdir()
    for name, items in notes.items():
        path = staging / f"{name}.ipynb"
        texts = [t for t, _ in items] + [t for t, _ in notes.get("", [])]
        if not name or not texts or not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        lines = "\n".join(f"- {t}" for t in dict.fromkeys(texts))
        cell = nbformat.v4.new_markdown_cell(f"**Autograder notes**\n\n{lines}")
        cell.metadata["autograder"] = {"note": True}
        nb.cells.insert(0, cell)
        mode = path.stat().st_mode
        path.unlink()
        nbformat.write(nb, path)
        os.chmod(path, mode & 0o777)
    (staging / RECORD).write_text(json.dumps(record, indent=1, ensure_ascii=False))
    dest = parent / sub.assignment
    old = parent / f".{sub.assignment}.old-{tag}"
    if dest.exists():
        dest.rename(old)
    staging.rename(dest)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def clean_leftovers(course: Course) -> None:
    """Remove half-installed folders left by a grade run that was killed."""
    if not course.autograded.is_dir():
        return
    for parent in course.autograded.iterdir():
        if not parent.is_dir():
            continue
        for entry in parent.iterdir():
            if entry.name.startswith(".") and (".new-" in entry.name or ".old-" in entry.name):
                shutil.rmtree(entry, ignore_errors=True)


# ---- the worker pool ----------------------------------------------------------------------


@dataclass
class Task:
    sub: Submission
    digest: str
    grader: str
    attempt: int = 1
    skip: dict[str, list[int]] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    last: dict | None = None  # the result of the previous attempt (a fallback)
    started: float = 0.0
    first_started: float = 0.0
    jobdir: Path | None = None


class WorkerProcess:
    def __init__(self, limits: oslimits.Limits, log: Path, root: Path):
        self.token = os.urandom(8).hex()
        env = dict(os.environ, **{oslimits.MARKER: self.token,
                                  "AUTOGRADER_WORKER_LOG": str(log),
                                  "AUTOGRADER_ROOT": str(ROOT),
                                  "PYTHONDONTWRITEBYTECODE": "1"})
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, "1")  # kernels run side by side; BLAS threads only compete
        env.pop("PYTHONSTARTUP", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.worker", json.dumps(limits.as_dict())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(root), env=env,
            start_new_session=True, text=False,
        )
        self.buffer = b""
        self.ready = False
        self.task: Task | None = None
        self.deadline = 0.0
        self.spawned = time.monotonic()

    def send(self, job: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()

    def lines(self) -> list[dict]:
        assert self.proc.stdout is not None
        try:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return [{"eof": True}]
        self.buffer += chunk
        out = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def kill(self) -> None:
        oslimits.kill_group(self.proc.pid)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        oslimits.kill_marked(self.token)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()


class Coordinator:
    def __init__(self, course: Course, limits: oslimits.Limits, jobs: int, work: Path,
                 display: Display):
        self.course = course
        self.limits = limits
        self.jobs = max(1, jobs)
        self.work = work
        self.display = display
        self.templates: dict[str, Path] = {}
        self.outcomes: list[Outcome] = []
        self.failures: list[str] = []
        self.selector = selectors.DefaultSelector()
        self.workers: list[WorkerProcess] = []
        self.counter = 0
        self.owners = _owners(course)
        self.released = {a: sorted(p.name for p in (course.source / a).iterdir())
                         for a in course.assignments()}
        self.startup_failures = 0
        self.kernel_failures = 0

    # -- workers --
    def spawn(self) -> WorkerProcess:
        w = WorkerProcess(self.limits, self.work / f"worker-{len(self.workers)}.log", ROOT)
        assert w.proc.stdout is not None
        self.selector.register(w.proc.stdout, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    def retire(self, w: WorkerProcess) -> None:
        with contextlib.suppress(Exception):
            assert w.proc.stdout is not None
            self.selector.unregister(w.proc.stdout)
        w.kill()
        self.workers.remove(w)

    def start(self, n: int) -> None:
        while len(self.workers) < min(n, self.jobs):
            self.spawn()

    def template(self, assignment: str) -> Path:
        """The assignment's template gradebook, made (and the course gradebook updated) the
        first time it is needed, so that it overlaps with grading other assignments."""
        if assignment not in self.templates:
            self.templates[assignment] = sync_assignment(self.course, assignment, self.work)
        return self.templates[assignment]

    def run(self, tasks: list[Task]) -> None:
        queue = deque(sorted(tasks, key=lambda t: (t.sub.assignment, t.sub.student)))
        self.start(len(queue))
        if queue:
            self.template(queue[0].sub.assignment)
        while queue or any(w.task for w in self.workers):
            for w in self.workers:
                if w.ready and w.task is None and queue:
                    self.assign(w, queue.popleft())
            if queue and queue[0].sub.assignment not in self.templates:
                self.template(queue[0].sub.assignment)  # while the workers are busy
                continue
            for key, _ in self.selector.select(timeout=0.2):
                w = key.data
                for msg in w.lines():
                    if "ready" in msg:
                        w.ready = True
                    elif "done" in msg and w.task is not None:
                        task, w.task = w.task, None
                        self.finished(task, queue)
                    elif "eof" in msg:
                        self.lost(w, queue, "the grading worker exited unexpectedly")
                        break
            now = time.monotonic()
            for w in list(self.workers):
                if w.task is not None and now > w.deadline:
                    self.lost(w, queue, "grading took longer than the time limit")
                elif not w.ready and now - w.spawned > 300:
                    self.lost(w, queue, "a grading worker did not start")
            self.display.draw(self.busy())
            if self.startup_failures >= 3:
                raise GraderError("grading workers keep failing to start; see the logs in "
                                  f"{self.work}")
        for w in list(self.workers):
            self.retire(w)

    def busy(self) -> list[tuple[str, str, float]]:
        rows = []
        for w in self.workers:
            if w.task is None:
                continue
            name, frac = "", 0.0
            with contextlib.suppress(OSError, ValueError, AssertionError):
                assert w.task.jobdir is not None
                nb, index, total = (w.task.jobdir / "progress").read_text().split("\t")
                name, frac = nb, int(index) / max(1, int(total))
            label = f"{w.task.sub.student} / {w.task.sub.assignment}"
            if w.task.attempt > 1:
                label += f" (run {w.task.attempt})"
            rows.append((label, name, frac))
        return rows

    def assign(self, w: WorkerProcess, task: Task) -> None:
        self.counter += 1
        task.jobdir = self.work / "jobs" / f"{self.counter:05d}"
        task.jobdir.mkdir(parents=True)
        task.started = time.monotonic()
        task.first_started = task.first_started or task.started
        n = max(1, len(self.released_notebooks(task.sub.assignment)))
        w.deadline = task.started + 120 + n * (self.limits.wall + 60)
        w.task = task
        job = {
            "id": self.counter, "dir": str(task.jobdir), "assignment": task.sub.assignment,
            "student": task.sub.student, "submission": str(task.sub.folder),
            "template": str(self.template(task.sub.assignment)),
            "source": str(self.course.source), "course_id": self.course.course_id,
            "limits": self.limits.as_dict(), "skip": task.skip, "owners": self.owners,
            "released": self.released.get(task.sub.assignment, []),
        }
        with contextlib.suppress(OSError):  # a dead worker shows up as end-of-file next
            w.send(job)

    def lost(self, w: WorkerProcess, queue: deque, why: str) -> None:
        """A worker died or was killed: re-run its task without the cell it was on."""
        task = w.task
        if not w.ready:
            self.startup_failures += 1
        self.retire(w)
        if queue or task is not None:
            self.spawn()
        if task is None:
            return
        where = None
        with contextlib.suppress(OSError, ValueError, AssertionError):
            assert task.jobdir is not None
            nb, index, _ = (task.jobdir / "progress").read_text().split("\t")
            where = (nb, int(index))
        if where and task.attempt < self.limits.attempts:
            task.history.append({"notebook": where[0], "cell": where[1], "kind": "stuck",
                                 "grade_id": None})
            task.skip.setdefault(where[0], []).append(where[1])
            task.attempt += 1
            queue.appendleft(task)
            return
        if where is None and task.last is None:
            # The worker died outside any notebook: the grader's fault, not the student's.
            self.failures.append(f"{task.sub.student}/{task.sub.assignment}: {why} before "
                                 f"running a notebook (worker log: {self.work})")
            self.finalize(task, {"notebooks": {}, "folder_notes": [{
                "text": f"not graded: {why} (it will be graded again next run)",
                "problem": True}]}, None, record=False)
            if len(self.failures) >= 3 and not self.outcomes_ok():
                raise GraderError(f"grading workers keep dying ({why}); is --memory too "
                                  "small?")
            return
        result = task.last or {"notebooks": {}, "folder_notes": [
            {"text": f"{why}: 0 points for what was not graded", "problem": True}]}
        self.finalize(task, result, task.jobdir if task.last else None)

    def outcomes_ok(self) -> bool:
        return any(o.status == "graded" for o in self.outcomes)

    def finished(self, task: Task, queue: deque) -> None:
        assert task.jobdir is not None
        try:
            result = json.loads((task.jobdir / "result.json").read_text())
        except (OSError, ValueError):
            result = {"crash": "the worker gave no result"}
        if "crash" in result:
            self.failures.append(f"{task.sub.student}/{task.sub.assignment}: the grader failed:"
                                 f"\n{result['crash']}")
            self.finalize(task, {"notebooks": {}, "folder_notes": [{
                "text": "the grader failed on this submission (it will be graded again "
                        "next run)", "problem": True}]}, None, record=False)
            return
        errors = [(e.get("error") or "") + (e.get("log") or "")
                  for e in result["notebooks"].values()]
        if any(marker in text for text in errors for marker in KERNEL_START_ERRORS):
            # Nothing a student hands in stops a kernel from starting: the machine did.
            detail = "" if self.kernel_failures else (
                f" (is --memory too small?):\n{errors[0][-1500:]}")
            self.kernel_failures += 1
            self.failures.append(f"{task.sub.student}/{task.sub.assignment}: the grading "
                                 f"kernel did not start{detail}")
            self.finalize(task, {"notebooks": {}, "folder_notes": [{
                "text": "not graded: the grading kernel did not start (it will be graded "
                        "again next run)", "problem": True}]}, None, record=False)
            return
        stops = [(name, e) for name, entry in result["notebooks"].items()
                 for e in entry.get("events", []) if e["kind"] in ("died", "stuck")]
        if stops and task.attempt < self.limits.attempts:
            for name, event in stops:
                task.history.append({**event, "notebook": name})
                task.skip.setdefault(name, []).append(event["cell"])
            task.attempt += 1
            task.last = result
            task.last["_jobdir"] = str(task.jobdir)
            queue.appendleft(task)
            return
        self.finalize(task, result, task.jobdir)

    def finalize(self, task: Task, result: dict, jobdir: Path | None, record: bool = True,
                 ) -> None:
        sub = task.sub
        autograded = Path(result["autograded"]) if result.get("autograded") else None
        graded = {name for name, e in result.get("notebooks", {}).items() if e.get("graded")}
        notes = compose_notes(result, task.history, self.limits, autograded)
        try:
            totals = _retry_locked(lambda: merge(self.course, sub, autograded, graded))
        except Exception as exc:  # the gradebook could not be written: a grader failure
            self.failures.append(f"{sub.student}/{sub.assignment}: could not write the "
                                 f"gradebook: {type(exc).__name__}: {exc}")
            outcome = Outcome(sub.student, sub.assignment, problem=True, status="failed",
                              note="not recorded: the gradebook could not be written")
            self.outcomes.append(outcome)
            self.display.finished(outcome)
            return
        n_notebooks = len(self.released_notebooks(sub.assignment))
        line = note_line(notes, n_notebooks, totals["late_seconds"])
        problem = any(p for items in notes.values() for _, p in items)
        seconds = round(time.monotonic() - task.first_started, 1)
        rec = {
            "student": sub.student, "assignment": sub.assignment,
            "submission_digest": task.digest, "grader_digest": task.grader,
            "score": totals["score"], "max_score": totals["max_score"],
            "auto_score": totals["auto_score"], "problem": problem, "note": line,
            "notes": {k: [t for t, _ in v] for k, v in notes.items() if v},
            "cells": totals["cells"], "runs": task.attempt, "seconds": seconds,
            "late_seconds": totals["late_seconds"],
            "graded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if record:
            install(self.course, sub, autograded if graded else None, notes, rec)
        outcome = Outcome(sub.student, sub.assignment, totals["score"], totals["max_score"],
                          problem or not record, line, seconds,
                          "graded" if record else "failed", totals["late_seconds"])
        self.outcomes.append(outcome)
        self.display.finished(outcome)
        if jobdir is not None:
            shutil.rmtree(jobdir, ignore_errors=True)

    def released_notebooks(self, assignment: str) -> list[str]:
        return [n for n in self.released.get(assignment, []) if n.endswith(".ipynb")]


def _retry_locked(fn, tries: int = 6):
    """Run fn, again after a pause while the database is locked (formgrader writing)."""
    from sqlalchemy.exc import OperationalError

    for attempt in range(tries):
        try:
            return fn()
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(1 + attempt)
    return None


def _owners(course: Course) -> dict[str, str]:
    import nbformat

    owners = {}
    for a in course.assignments():
        for path in (course.source / a).glob("*.ipynb"):
            with contextlib.suppress(Exception):
                for cell in nbformat.read(path, as_version=4).cells:
                    gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                    if gid:
                        owners[gid] = a
    return owners


# ---- display ---------------------------------------------------------------------------


class Display:
    """A progress bar per submission being graded, a line per finished one."""

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stdout
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.drawn = 0
        self.last = 0.0

    def _clear(self) -> None:
        if self.tty and self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0

    def finished(self, o: Outcome) -> None:
        if not self.enabled:
            return
        self.done += 1
        self._clear()
        width = len(str(self.total))
        score = f"{_num(o.score)}/{_num(o.max_score)}"
        line = (f"[{self.done:>{width}}/{self.total}] {o.mark} {o.student:<16} "
                f"{o.assignment:<22} {score:>9}  {o.seconds:5.1f} s")
        if o.note and o.problem:
            line += f"  {o.note[:100]}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def draw(self, rows: list[tuple[str, str, float]]) -> None:
        if not self.tty or time.monotonic() - self.last < 0.2:
            return
        self.last = time.monotonic()
        self._clear()
        for label, notebook, frac in rows:
            filled = int(frac * 20)
            bar = "█" * filled + "░" * (20 - filled)
            self.stream.write(f"  {label[:34]:<34} {bar} {notebook[:16]}\n")
        self.drawn = len(rows)
        self.stream.flush()

    def close(self) -> None:
        self._clear()


def _num(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.2f}"


def summary_table(outcomes: list[Outcome]) -> str:
    if not outcomes:
        return "nothing to show"
    rows = [("student", "assignment", "score", "status", "note")]
    for o in sorted(outcomes, key=lambda o: (o.assignment, o.student)):
        status = "FAILED" if o.status == "failed" else ("problem" if o.problem else "ok")
        if o.status == "unchanged":
            status += " (unchanged)"
        rows.append((o.student, o.assignment, f"{_num(o.score)}/{_num(o.max_score)}", status,
                     o.note))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, r in enumerate(rows):
        head = "  ".join(f"{c:<{w}}" if k != 2 else f"{c:>{w}}"
                         for k, (c, w) in enumerate(zip(r[:4], widths)))
        lines.append(f"{head}  {r[4]}".rstrip())
        if i == 0:
            lines.append("-" * min(120, len(lines[0]) + 20))
    return "\n".join(lines)


# ---- the command -----------------------------------------------------------------------


@dataclass
class GradeReport:
    outcomes: list[Outcome]
    problems: list[str]
    failures: list[str]
    graded: int
    unchanged: int
    seconds: float

    @property
    def exit_code(self) -> int:
        if self.failures:
            return FAILED
        if self.problems or any(o.problem for o in self.outcomes):
            return PROBLEMS
        return OK


@contextlib.contextmanager
def course_lock(course: Course):
    import fcntl

    course.autograded.mkdir(parents=True, exist_ok=True)
    path = course.autograded / ".autograder.lock"
    with open(path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise GraderError(f"another `grade` run is using {course.root} "
                              f"(lock file {path})") from exc
        yield


def grade(
    assignments: list[str] | None = None,
    students: list[str] | None = None,
    *,
    root: Path | str | None = None,
    db_url: str | None = None,
    jobs: int | None = None,
    limits: oslimits.Limits | None = None,
    force: bool = False,
    stream=None,
    progress: bool = True,
    subreaper: bool = False,
) -> GradeReport:
    """Grade pending submissions (all selected ones with ``force``); see the module doc."""
    started = time.monotonic()
    stream = stream or sys.stdout
    course = open_course(root, db_url)
    limits = limits or oslimits.Limits(cell_timeout=_config_timeout(course))
    jobs = jobs or len(os.sched_getaffinity(0))
    unknown = [a for a in assignments or [] if a not in course.assignments()]
    if unknown:
        raise GraderError(f"no assignment {', '.join(unknown)} in {course.source} "
                          f"(there are: {', '.join(course.assignments())})")
    with course_lock(course):
        clean_leftovers(course)
        subs, problems = discover(course, assignments, students)
        for sub in subs:
            if GLOB_CHARS & set(sub.student):
                problems.append(f"student id {sub.student!r} has characters (*?[]) that "
                                "nbgrader's formgrader and feedback cannot handle: rename "
                                "the folder")
        if not subs:
            return GradeReport([], problems, [], 0, 0, time.monotonic() - started)
        _remove_stale_workdirs()
        work = Path(tempfile.mkdtemp(prefix=f"autograder-{os.getpid()}-"))
        try:
            return _grade(course, subs, problems, limits, jobs, force, work, stream,
                          progress, started, subreaper)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _grade(course, subs, problems, limits, jobs, force, work, stream, progress, started,
           subreaper):
    _cache_alembic_version()
    used = sorted({s.assignment for s in subs})
    graders = {a: grader_digest(a, course.source) for a in used}
    candidates = []  # (submission, digest, its record if that is current)
    for sub in subs:
        digest = folder_digest(sub.folder)
        rec = course.read_record(sub.student, sub.assignment)
        current = (rec is not None and rec.get("submission_digest") == digest
                   and rec.get("grader_digest") == graders[sub.assignment] and not force)
        candidates.append((sub, digest, rec if current else None))
    display = Display(0, stream, enabled=progress)
    coordinator = Coordinator(course, limits, jobs, work, display)
    if subreaper:  # orphans of a killed worker become ours, to be found and killed
        oslimits.become_subreaper()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        # Workers take seconds to import nbgrader: start them before reading the gradebook.
        coordinator.start(sum(1 for _, _, rec in candidates if rec is None))
        tasks, unchanged = [], []
        in_book = {a: auto_scores(course, a) for a in used}
        for sub, digest, rec in candidates:
            if rec is not None and in_book[sub.assignment].get(sub.student) == rec.get(
                    "auto_score"):
                unchanged.append(Outcome(sub.student, sub.assignment, rec["score"],
                                         rec["max_score"], rec.get("problem", False),
                                         rec.get("note", ""), rec.get("seconds", 0),
                                         "unchanged", rec.get("late_seconds", 0)))
            else:
                tasks.append(Task(sub, digest, graders[sub.assignment]))
        if tasks:
            display.total = len(tasks)
            print(f"grading {len(tasks)} submission(s) with {min(jobs, len(tasks))} "
                  f"worker(s) ({limits.describe()}); {len(unchanged)} unchanged",
                  file=stream, flush=True)
            coordinator.run(tasks)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for w in list(coordinator.workers):
            coordinator.retire(w)
        if subreaper:
            oslimits.reap_orphans(set())
        display.close()
    changed = [a for a in used if grader_digest(a, course.source) != graders[a]]
    if changed and coordinator.outcomes:  # an edit, or a submission writing to the grader
        coordinator.failures.append(
            f"the grader or the source of {', '.join(changed)} changed while grading: check "
            "`git status`, then run `grade --force` for these assignments")
    return GradeReport(coordinator.outcomes + unchanged, problems, coordinator.failures,
                       len(coordinator.outcomes), len(unchanged), time.monotonic() - started)


def _remove_stale_workdirs() -> None:
    """Scratch folders of grade runs that were killed (their process is gone)."""
    import psutil

    for path in Path(tempfile.gettempdir()).glob("autograder-*-*"):
        pid = path.name.split("-")[1]
        if pid.isdigit() and not psutil.pid_exists(int(pid)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _cache_alembic_version() -> None:
    """nbgrader runs `alembic heads` (a new process, seconds) for every new gradebook;
    the answer cannot change while we run."""
    import functools

    import nbgrader.api

    if not hasattr(nbgrader.api.get_alembic_version, "cache_info"):
        nbgrader.api.get_alembic_version = functools.cache(nbgrader.api.get_alembic_version)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _config_timeout(course: Course) -> int:
    with contextlib.suppress(Exception):
        value = course.config.Execute.timeout
        if isinstance(value, int) and value > 0:
            return value
    return oslimits.Limits.cell_timeout


def print_report(report: GradeReport, stream=None) -> None:
    stream = stream or sys.stdout
    if report.outcomes:
        print("\n" + summary_table(report.outcomes), file=stream)
    for line in report.problems:
        print(f"problem: {line}", file=stream)
    for line in report.failures:
        print(f"GRADER FAILURE: {line}", file=stream)
    n_problem = sum(1 for o in report.outcomes if o.problem)
    print(f"\n{report.graded} graded, {report.unchanged} unchanged, {n_problem} with "
          f"problems, in {report.seconds:.0f} s", file=stream)
    meaning = {OK: "all graded", PROBLEMS: "graded; some submissions had problems (see notes)",
               FAILED: "the grader itself failed"}
    print(f"exit code {report.exit_code}: {meaning[report.exit_code]}", file=stream)
