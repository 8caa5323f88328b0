"""``python -m autograder collect ASSIGNMENT PATH...``: file downloaded submissions into
``submitted/<student>/<assignment>/`` with nbgrader's ``zip_collect``.

Each PATH is a zip file (an LMS "download all", possibly with zips inside), a folder, or a
notebook. nbgrader's ZipCollectApp unpacks the archives and copies each file it is told
about; ``PatternCollector`` (its collector plugin here) tells it the student and the
notebook, from the file's path inside its PATH matched against a pattern (see
``PATTERN_HELP``). Files are first collected into a scratch course, then moved into the
real ``submitted/``: a student whose submission is already there and differs is left alone
unless ``--force``. Every file that is not placed is reported with the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Dict

from .course import open_course
from .discovery import GLOB_CHARS
from .errors import ExitCode, GraderError
from .records import folder_digest

PRESETS = {
    # <student>/<notebook>.ipynb (a folder per student; notebooks at any depth inside it)
    "folders": r"(?P<student_id>[^/]+)/(?:.*/)?(?P<file_id>[^/]+\.ipynb)",
    # <student>.ipynb, for an assignment with one notebook
    "student": r"(?P<student_id>[^/]+)\.ipynb",
    # Canvas: <login>_[late_]<user id>_<submission id>_<file name>
    "canvas": r"(?:.*/)?(?P<student_id>[^/_]+)_(?:late_|LATE_)?\d+_\d+_(?P<file_id>[^/]+)",
    # Moodle: <Full Name>_<participant id>_assignsubmission_file_/<file name>
    "moodle": r"(?:.*/)?(?P<student_id>[^/_]+)_\d+_assignsubmission_file_?/(?:.*/)?"
              r"(?P<file_id>[^/]+)",
}
AUTO_ORDER = ("moodle", "canvas", "folders", "student")

PATTERN_HELP = """\
File-name patterns (--pattern): a regular expression matched against each file's path
inside the PATH it came from (inside the zip for a zip file; '/' separators). It must
have (?P<student_id>...); (?P<file_id>...) names the notebook (optional when the assignment
has one notebook: any .ipynb is taken as that one); (?P<timestamp>...) is optional (when a
student has several copies, the newest is kept). Presets:
  folders  alice/value.ipynb             a folder per student (alice/work/value.ipynb too)
  student  alice.ipynb                   files named by student (one-notebook assignments)
  canvas   smithjane_12345_678_value.ipynb  (also ..._late_12345_...)
  moodle   Jane Smith_123456_assignsubmission_file_/value.ipynb
  auto     (default) moodle, then canvas, then folders, then student
Examples:
  python -m autograder collect 01_value ~/Downloads/submissions.zip --pattern canvas
  python -m autograder collect 01_value ~/marking/ --pattern '(?P<student_id>\\w+)-.*\\.ipynb'
"""



@dataclass
class Placement:
    student: str
    file_id: str
    timestamp: object = None  # datetime or None
    origin: str = ""  # how to name the file in messages
    order: int = 0


@dataclass
class CollectReport:
    placed: list[str] = field(default_factory=list)  # "student/assignment/file"
    not_placed: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    students: dict[str, str] = field(default_factory=dict)  # student -> new|replaced|...
    failure: str | None = None

    @property
    def exit_code(self) -> ExitCode:
        if self.failure:
            return ExitCode.FAILED
        kept = any(v == "kept" for v in self.students.values())
        return ExitCode.PROBLEMS if self.not_placed or kept else ExitCode.OK


def _pattern(name: str) -> list[tuple[str, re.Pattern]]:
    if name == "auto":
        return [(n, re.compile(PRESETS[n])) for n in AUTO_ORDER]
    if name in PRESETS:
        return [(name, re.compile(PRESETS[name]))]
    try:
        compiled = re.compile(name)
    except re.error as exc:
        raise ValueError(f"--pattern is not a valid regular expression: {exc}") from exc
    if "student_id" not in compiled.groupindex:
        raise ValueError("--pattern needs a (?P<student_id>...) group")
    return [("custom", compiled)]


def clean_student_id(raw: str) -> str | None:
    sid = " ".join(unicodedata.normalize("NFC", raw).split())
    if not sid or sid.startswith(".") or "/" in sid or "\\" in sid or GLOB_CHARS & set(sid):
        return None
    return sid


def fix_zip_name(name: str) -> str:
    """Zip tools that do not mark UTF-8 names get them read as cp437 ("JosÃ©" -> "Jos├⌐");
    undo that when the bytes are valid UTF-8."""
    if name.isascii():
        return name
    try:
        fixed = name.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return name
    return fixed


def match_file(rel: str, patterns, notebooks: list[str]) -> tuple[Placement | None, str]:
    """Where a file (path relative to its PATH) goes, or why it goes nowhere."""
    from nbgrader.utils import parse_utc

    rel = fix_zip_name(rel)
    base = rel.rsplit("/", 1)[-1]
    if "__MACOSX/" in rel or base.startswith("._"):
        return None, "macOS metadata, not a submission"
    if not base.endswith(".ipynb"):
        return None, "not a notebook"
    if ".ipynb_checkpoints/" in rel:
        return None, "a Jupyter checkpoint copy, not the submission"
    for _, pattern in patterns:
        m = pattern.fullmatch(rel)
        if m is None:
            continue
        groups = m.groupdict()
        sid = clean_student_id(groups.get("student_id") or "")
        if sid is None:
            return None, f"student id {groups.get('student_id')!r} cannot be a folder name"
        if any(sid.lower() == nb.lower().removesuffix(".ipynb") for nb in notebooks):
            return None, "no student in the path (that is the notebook's own name)"
        file_id = groups.get("file_id") or base
        file_id = file_id.rsplit("/", 1)[-1]
        if not file_id.endswith(".ipynb"):
            file_id += ".ipynb"
        if len(notebooks) == 1:
            file_id = notebooks[0]
        stamp = None
        if groups.get("timestamp"):
            try:
                stamp = parse_utc(groups["timestamp"])
            except (ValueError, OverflowError):
                stamp = None
        return Placement(sid, file_id, stamp), ""
    return None, "the file name does not match the pattern"


def collect(assignment: str, paths: list[str], *, pattern: str = "auto", root=None,
            force: bool = False) -> CollectReport:
    course = open_course(root)
    if assignment not in course.assignments():
        raise GraderError(f"no assignment {assignment!r} in {course.source}")
    try:
        patterns = _pattern(pattern)
    except ValueError as exc:
        raise GraderError(str(exc)) from exc
    notebooks = sorted(p.name for p in (course.source / assignment).glob("*.ipynb"))
    report = CollectReport()
    with tempfile.TemporaryDirectory(prefix="autograder-collect-") as tmp:
        staging = Path(tmp)
        archive = staging / "downloaded" / assignment / "archive"
        inputs = _stage_inputs(paths, archive, report)
        if not inputs:
            return report
        try:
            staged = _zip_collect(course, assignment, staging, inputs, patterns, notebooks,
                                  report)
        except SystemExit as exc:
            report.failure = f"nbgrader zip_collect stopped ({exc})"
            return report
        _move_into_course(course, assignment, staged, force, report)
    return report


def _stage_inputs(paths, archive: Path, report: CollectReport) -> list[tuple[Path, str]]:
    """Copy each PATH to archive/<n>/...; returns (folder in extracted/, label) pairs."""
    inputs = []
    for n, raw in enumerate(paths):
        src = Path(raw).expanduser()
        slot = archive / f"{n:03d}"
        if not src.exists():
            report.not_placed.append((raw, "no such file or folder"))
            continue
        if src.is_dir():
            shutil.copytree(src, slot, symlinks=False, ignore_dangling_symlinks=True)
            inputs.append((Path(f"{n:03d}"), raw))
        elif src.suffix.lower() in (".zip", ".gz"):
            slot.mkdir(parents=True)
            shutil.copy(src, slot / src.name)
            stem = src.name[:-len(src.suffix)]
            if stem.endswith(".tar"):
                stem = stem[:-4]
            inputs.append((Path(f"{n:03d}") / stem, raw))
        else:
            slot.mkdir(parents=True)
            shutil.copy(src, slot / src.name)
            inputs.append((Path(f"{n:03d}"), str(src.parent) or "."))
    return inputs


def _zip_collect(course, assignment, staging, inputs, patterns, notebooks, report):
    from nbgrader.apps.zipcollectapp import ZipCollectApp
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.plugins import FileNameCollectorPlugin
    from traitlets.config import Config

    class PatternCollector(FileNameCollectorPlugin):
        """Answers nbgrader with the placements decided beforehand (None: skip)."""

        decisions = Dict({})

        def collect(self, submitted_file):
            found = self.decisions.get(os.path.abspath(submitted_file))
            return dict(found) if found else None

    cfg = Config()
    cfg.CourseDirectory.root = str(staging)
    cfg.CourseDirectory.submitted_directory = "submitted"
    cfg.CourseDirectory.release_directory = str(course.source)  # valid notebook names
    cfg.CourseDirectory.assignment_id = assignment
    cfg.ZipCollectApp.downloaded_directory = "downloaded"
    cfg.ZipCollectApp.collector_plugin = PatternCollector
    cfg.ZipCollectApp.force = True
    app = ZipCollectApp(config=cfg)
    app.coursedir = CourseDirectory(config=cfg)
    app.log.setLevel("ERROR")
    app.init_plugins()
    app.extract_archive_files()
    extracted = Path(app._format_collect_path(app.extracted_directory))

    placements: dict[str, Placement] = {}
    for order, (folder, label) in enumerate(inputs):
        base = extracted / folder
        files = sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for path in files:
            rel = fix_zip_name(path.relative_to(base).as_posix())
            shown = f"{label}: {rel}" if label.endswith((".zip", ".gz")) else (
                str(Path(label) / rel))
            placement, why = match_file(rel, patterns, notebooks)
            if placement is None:
                report.not_placed.append((shown, why))
                continue
            placement.origin, placement.order = shown, order
            placements[str(path.resolve())] = placement
    winners = _resolve_duplicates(placements, report)
    app.collector_plugin_inst.decisions = {
        path: {"student_id": p.student, "file_id": p.file_id,
               **({"timestamp": p.timestamp.isoformat(" ")} if p.timestamp else {})}
        for path, p in winners.items()
    }
    app.process_extracted_files()
    submitted = staging / "submitted"
    for p in winners.values():
        if (submitted / p.student / assignment / p.file_id).exists():
            report.placed.append(f"{p.student}/{assignment}/{p.file_id} <- {p.origin}")
        else:
            report.not_placed.append((p.origin, "nbgrader zip_collect did not copy it"))
    return submitted


def _resolve_duplicates(placements: dict[str, Placement], report) -> dict[str, Placement]:
    """One file per student and notebook: the newest timestamp, else the later PATH, else
    the later file name. The others are reported."""
    best: dict[tuple[str, str], tuple[str, Placement]] = {}

    def rank(p: Placement):
        return (p.timestamp is not None, p.timestamp or 0, p.order, p.origin)

    for path, p in placements.items():
        key = (p.student, p.file_id)
        if key not in best:
            best[key] = (path, p)
            continue
        other = best[key][1]
        try:
            newer = rank(p) > rank(other)
        except TypeError:
            newer = p.order > other.order
        loser, winner = (other, p) if newer else (p, other)
        if newer:
            best[key] = (path, p)
        report.not_placed.append((loser.origin, f"another copy for {winner.student}'s "
                                  f"{winner.file_id} was kept: {winner.origin}"))
    return {path: p for path, p in best.values()}


def _move_into_course(course, assignment, staged: Path, force: bool, report) -> None:
    if not staged.is_dir():
        return
    for sdir in sorted(staged.iterdir()):
        src = sdir / assignment
        if not src.is_dir():
            continue
        dest = course.submitted / sdir.name / assignment
        if dest.exists():
            if folder_digest(dest) == folder_digest(src):
                report.students[sdir.name] = "unchanged"
                continue
            if not force:
                report.students[sdir.name] = "kept"
                for f in sorted(src.iterdir()):
                    report.not_placed.append((f"{sdir.name}/{f.name}", "this student already "
                                              "has a different submission in submitted/ "
                                              "(use --force to replace it)"))
                continue
            report.students[sdir.name] = "replaced"
            old = dest.with_name(f".{assignment}.old")
            if old.exists():
                shutil.rmtree(old)
            dest.rename(old)
            shutil.copytree(src, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(src, dest)
            report.students[sdir.name] = "new"
    with contextlib.suppress(OSError):
        course.submitted.mkdir(parents=True, exist_ok=True)


def print_collect_report(report: CollectReport, stream=None) -> None:
    stream = stream or sys.stdout
    for line in report.placed:
        print(f"collected {line}", file=stream)
    counts = {}
    for state in report.students.values():
        counts[state] = counts.get(state, 0) + 1
    if report.not_placed:
        print(f"\nNOT PLACED ({len(report.not_placed)}):", file=stream)
        for name, why in report.not_placed:
            print(f"  {name}: {why}", file=stream)
    if report.failure:
        print(f"GRADER FAILURE: {report.failure}", file=stream)
    summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none"
    print(f"\nstudents: {summary}; {len(report.not_placed)} file(s) not placed", file=stream)
