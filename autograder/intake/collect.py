"""``python -m autograder collect ASSIGNMENT PATH...``: file downloaded submissions into
``submitted/<student>/<assignment>/`` with nbgrader's ``zip_collect``.

Each PATH is a zip file (an LMS "download all", possibly with zips inside), a folder, or a
notebook. ``archives.unpack`` unpacks it within limits (nbgrader's own unpacking reads
whole members into memory and follows links); nbgrader's ZipCollectApp then copies each
notebook it is told about: ``PatternCollector`` (its collector plugin here) tells it the
student and the notebook, from the file's path inside its PATH matched against a pattern
(see ``PATTERN_HELP``).

The student is decided by the top-level name in the PATH only: that is the LMS's name for
an upload (Canvas's ``<login>_<id>_<id>_<file>``, Moodle's folder), while everything
inside an upload is the student's own, so a file or zip entry there named after another
student stays the uploader's. ``--pattern auto`` picks one preset per PATH from its top
level.

Students are then named by the class's roster (roster.csv, ``autograder/roster.py``): a
Canvas upload goes to the student with the Canvas user id in its name (a Canvas user not
in the roster is added to it, so two Canvas users with one login part stay two students);
a Moodle upload, whose number is only a participant number of the assignment, goes to the
one student of that name, or with Moodle's grading worksheet to the student of that
email. Without a roster, a Moodle upload is filed under the name, as other patterns are.
Uploads from different students still claiming one id (other LMS ids, or ids differing
only in case or Unicode form) are all refused. Files are first collected into a scratch
course, then moved into the real ``submitted/``: a student whose submission is already
there and differs is left alone unless ``--force``. Every file that is not placed is
reported with the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Dict

from ..course import open_course
from ..errors import ExitCode, GraderError
from ..roster import ROSTER, Roster, Student, clean_student_id, fold, read_roster, write_roster
from .archive_readers import fix_zip_name
from .archives import unpack
from .discovery import folder_digest

__all__ = ["clean_student_id", "collect", "fold", "print_collect_report"]

PRESETS = {
    # <student>/<notebook>.ipynb (a folder per student; notebooks at any depth inside it)
    "folders": r"(?P<student_id>[^/]+)/(?:.*/)?(?P<file_id>[^/]+\.ipynb)",
    # <student>.ipynb, for an assignment with one notebook
    "student": r"(?P<student_id>[^/]+)\.ipynb",
    # Canvas: <login>_[late_]<user id>_<submission id>_<file name>; an uploaded zip is a
    # folder of that name (without .zip), and every notebook in it is the uploader's
    "canvas": r"(?P<student_id>[^/_]+)_(?:late_|LATE_)?(?P<uploader>\d+)_\d+_"
    r"(?:[^/]*/(?:.*/)?)?(?P<file_id>[^/]+)",
    # Moodle: <Full Name>_<participant id>_assignsubmission_file_/<file name>
    "moodle": r"(?P<student_id>[^/_]+)_(?P<uploader>\d+)_assignsubmission_file_?/(?:.*/)?"
    r"(?P<file_id>[^/]+)",
}
AUTO_ORDER = ("moodle", "canvas", "folders", "student")

PATTERN_HELP = """\
File-name patterns (--pattern): a regular expression matched against each file's path
inside the PATH it came from (inside the zip for a zip file; '/' separators; a zip inside
is a folder named without .zip). It must have (?P<student_id>...), matched in the path's
top-level name (the LMS's name for the upload: what is inside an upload is the student's
and never names a student); (?P<file_id>...) names the notebook (optional when the
assignment has one notebook: any .ipynb is taken as that one); (?P<timestamp>...) is
optional (when a student has several copies, the newest is kept). Presets:
  folders  alice/value.ipynb             a folder per student (alice/work/value.ipynb too)
  student  alice.ipynb                   files named by student (one-notebook assignments)
  canvas   smithjane_12345_678_value.ipynb  (also ..._late_12345_...): the student with
           Canvas user id 12345 in roster.csv (added to it when new)
  moodle   Jane Smith_123456_assignsubmission_file_/value.ipynb: the roster's one Jane
           Smith (two: give --worksheet); without a roster, "Jane Smith"
  auto     (default) for each PATH, the preset naming most of its top-level entries
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
    uploader: str = ""  # who the LMS says uploaded it (Canvas user id, Moodle participant)
    spelling: str = ""  # the student id as the name spells it
    preset: str = ""  # the pattern that matched (canvas, moodle, folders, student, custom)


@dataclass
class CollectReport:
    placed: list[str] = field(default_factory=list)  # "student/assignment/file"
    not_placed: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    students: dict[str, str] = field(default_factory=dict)  # student -> new|replaced|...
    failure: str | None = None
    roster_added: list[str] = field(default_factory=list)  # "id (Canvas user 123)"

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
    for preset, pattern in patterns:
        m = pattern.fullmatch(rel)
        if m is None:
            continue
        top = rel.find("/")
        inside = [
            g
            for g in ("student_id", "uploader", "timestamp")
            if g in pattern.groupindex and top >= 0 and m.end(g) > top
        ]
        if inside:
            return None, (
                f"the {inside[0].replace('_', ' ')} must come from the top-level "
                "name (the LMS's name for the upload), not from inside an upload"
            )
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
        return Placement(
            sid,
            file_id,
            stamp,
            uploader=groups.get("uploader") or "",
            spelling=groups["student_id"],
            preset=preset,
        ), ""
    return None, "the file name does not match the pattern"


def choose_preset(rels: list[str], notebooks: list[str]) -> list[tuple[str, re.Pattern]]:
    """--pattern auto for one PATH: the preset that places files from the most top-level
    entries (ties: AUTO_ORDER). Only the top level is the LMS's naming, so a preset that
    would only match names inside uploads (a student's own) is never chosen for them."""
    best, most = AUTO_ORDER[0], -1
    for name in AUTO_ORDER:
        pattern = [(name, re.compile(PRESETS[name]))]
        tops = {r.split("/", 1)[0] for r in rels if match_file(r, pattern, notebooks)[0]}
        if len(tops) > most:
            best, most = name, len(tops)
    return [(best, re.compile(PRESETS[best]))]


def collect(
    assignment: str,
    paths: list[str],
    *,
    pattern: str = "auto",
    root=None,
    force: bool = False,
    worksheet: str | None = None,
) -> CollectReport:
    """File ``paths`` for ``assignment`` (module docstring). With a roster (roster.csv),
    Canvas uploads are filed under the id of the student with that Canvas user id (a
    Canvas user who is not in it is added) and Moodle uploads under the id of the one
    student of that name, or, with Moodle's grading ``worksheet``, of that email."""
    course = open_course(root)
    if assignment not in course.assignments():
        raise GraderError(f"no assignment {assignment!r} in {course.source}")
    try:
        patterns = _pattern(pattern)
    except ValueError as exc:
        raise GraderError(str(exc)) from exc
    notebooks = sorted(p.name for p in (course.source / assignment).glob("*.ipynb"))
    roster = read_roster(course.root)
    sheet = read_worksheet(Path(worksheet)) if worksheet else None
    if sheet is not None and not len(roster):
        raise GraderError(
            f"--worksheet needs the class's {ROSTER} to look the emails up in: "
            "`python -m autograder roster import` Moodle's grades export first"
        )
    report = CollectReport()
    with tempfile.TemporaryDirectory(prefix="autograder-collect-") as tmp:
        staging = Path(tmp)
        app = _zip_collect_app(course, assignment, staging)
        extracted = Path(app._format_collect_path(app.extracted_directory))
        placements = _gather(paths, extracted, patterns, notebooks, report)
        added = _canvas_by_id(placements, roster, report)
        if len(roster):
            _moodle_by_roster(placements, roster, sheet, report)
        if added:
            write_roster(course.root, roster)
        _refuse_ambiguous(placements, report)
        winners = _resolve_duplicates(placements, report)
        if not winners:
            return report
        try:
            staged = _zip_collect(app, assignment, staging, winners, report)
        except SystemExit as exc:
            report.failure = f"nbgrader zip_collect stopped ({exc})"
            return report
        _move_into_course(course, assignment, staged, force, report)
    return report


def _refuse(placements: dict[str, Placement], path: str, why: str, report) -> None:
    report.not_placed.append((placements.pop(path).origin, why))


def _canvas_by_id(placements: dict[str, Placement], roster: Roster, report) -> list[Student]:
    """Canvas names each upload with its uploader's Canvas user id: file it under the
    roster's student with that id. A Canvas user the roster does not have is added, with
    the file name's login part as id, or ``<login>-<canvas id>`` for each of them when two
    Canvas users share a login part (or the roster has it already): the same download
    and roster always give the same ids, and no id in the roster ever changes."""
    canvas = {path: p for path, p in placements.items() if p.preset == "canvas" and p.uploader}
    prefixes: dict[str, str] = {}
    for p in sorted(canvas.values(), key=lambda p: (p.order, p.origin)):
        if roster.by_lms_id(p.uploader) is None:
            prefixes.setdefault(p.uploader, p.student)
    sharing: dict[str, list[str]] = defaultdict(list)
    for uploader, prefix in prefixes.items():
        sharing[fold(prefix)].append(uploader)
    added = []
    for uploader, prefix in sorted(prefixes.items(), key=lambda item: int(item[0])):
        alone = len(sharing[fold(prefix)]) == 1 and not roster.taken(prefix)
        sid = prefix if alone else f"{prefix}-{uploader}"
        if clean_student_id(sid) != sid or roster.taken(sid):
            continue  # refused below, with the reason
        student = Student(sid, lms_id=uploader)
        roster.add(student)
        added.append(student)
        how = "" if alone else f"; its login part {prefix!r} is shared or taken"
        report.roster_added.append(f"{sid} (Canvas user {uploader}{how})")
    for path, p in canvas.items():
        student = roster.by_lms_id(p.uploader)
        if student is None:
            _refuse(
                placements,
                path,
                f"Canvas user {p.uploader} could not be added to "
                f"{ROSTER} (no free id from {p.student!r}); file it by hand",
                report,
            )
            continue
        p.student = p.spelling = student.id
    return added


def _moodle_by_roster(placements: dict[str, Placement], roster: Roster, sheet, report) -> None:
    """Moodle's number in a folder name is a participant number of this assignment, not
    a user id: file each upload under the roster's one student of that name, or, with the
    grading worksheet (participant -> ID number or email), under that student. Uploads it
    cannot tell apart are refused, each with the reason."""
    for path, p in list(placements.items()):
        if p.preset != "moodle":
            continue
        student, why = None, ""
        if sheet is not None:
            student, why = _by_worksheet(p, roster, sheet)
        if student is None and not why:
            named = roster.named(p.student)
            if len(named) == 1:
                student = named[0]
            elif not named:
                why = (
                    f"no student named {p.student!r} in {ROSTER}: add them "
                    "(roster import) and collect again, or file it by hand"
                )
            else:
                why = (
                    f"{len(named)} students in {ROSTER} are named {p.student!r} "
                    f"({', '.join(s.id for s in named)}): give collect --worksheet "
                    "(Moodle's grading worksheet of this assignment) to tell them apart"
                )
        if student is None:
            _refuse(placements, path, f"refused: {why}", report)
            continue
        p.student = p.spelling = student.id


@dataclass(frozen=True)
class WorksheetRow:
    line: int
    name: str
    email: str
    id_number: str


def read_worksheet(path: Path) -> dict[str, WorksheetRow]:
    """Moodle's grading worksheet of an assignment (Assignment > View all submissions >
    Download grading worksheet): ``Identifier`` ("Participant 123456", the number in the
    download's folder names), ``Full name``, ``Email address`` (and ``ID number`` where
    the site shows it): {participant number: row}."""
    from ..roster import read_table

    header, rows = read_table(path)
    if not {"Identifier", "Full name"} <= set(header) or not (
        {"Email address", "ID number"} & set(header)
    ):
        raise GraderError(
            f"{path}: not a Moodle grading worksheet (Identifier, Full name, Email address, "
            f"...): its header starts {', '.join(header[:4])}"
        )
    col = {h: i for i, h in reversed(list(enumerate(header)))}
    out = {}
    for line, row in rows:
        cell = {h: row[i] for h, i in col.items() if i < len(row)}.get
        number = re.fullmatch(r"\D*?(\d+)", cell("Identifier", ""))
        if number is None:
            raise GraderError(
                f"{path}: line {line}: Identifier {cell('Identifier', '')!r} "
                "is not 'Participant <number>'"
            )
        out[number.group(1)] = WorksheetRow(
            line, cell("Full name", ""), cell("Email address", ""), cell("ID number", "")
        )
    return out


def _by_worksheet(p: Placement, roster: Roster, sheet) -> tuple[Student | None, str]:
    row = sheet.get(p.uploader)
    if row is None:
        return None, f"participant {p.uploader} is not in the worksheet given"
    if fold(row.name) != fold(p.student):
        return None, (
            f"the worksheet's participant {p.uploader} is {row.name!r}, not "
            f"{p.student!r}: is it this assignment's worksheet?"
        )
    found = roster.having("sis_id", row.id_number) if row.id_number else []
    found = found or roster.by_email(row.email)
    if len(found) == 1:
        return found[0], ""
    if found:
        return None, f"{len(found)} students in {ROSTER} have {row.email or row.id_number}"
    return None, ""  # not in the roster by email: the name decides


def _gather(paths, extracted: Path, patterns, notebooks, report) -> dict[str, Placement]:
    """Unpack each PATH (within archives.LIMITS) into extracted/<n>/ and decide where each
    notebook goes: {its unpacked copy: placement}."""
    placements: dict[str, Placement] = {}
    for order, raw in enumerate(paths):
        src = Path(raw).expanduser()
        if not src.exists():
            report.not_placed.append((raw, "no such file or folder"))
            continue
        found, refused = unpack(src, raw, extracted / f"{order:03d}")
        report.not_placed.extend(refused)
        rels = ["/".join(f.parts) for f in found]
        chosen = patterns if len(patterns) == 1 else choose_preset(rels, notebooks)
        for f, rel in zip(found, rels):
            placement, why = match_file(rel, chosen, notebooks)
            if placement is None or f.disk is None:
                report.not_placed.append((f.shown, why or "not a notebook"))
                continue
            placement.origin, placement.order = f.shown, order
            placements[str(f.disk.resolve())] = placement
    return placements


def _zip_collect_app(course, assignment: str, staging: Path):
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
    return app


def _zip_collect(
    app, assignment: str, staging: Path, winners: dict[str, Placement], report
) -> Path:
    """nbgrader copies the chosen notebooks into staging/submitted/ (its own unpacking is
    not used: archives.unpack did it within limits)."""
    app.collector_plugin_inst.decisions = {
        path: {
            "student_id": p.student,
            "file_id": p.file_id,
            **({"timestamp": p.timestamp.isoformat(" ")} if p.timestamp else {}),
        }
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


def _refuse_ambiguous(placements: dict[str, Placement], report) -> None:
    """Uploads from different students claiming one student (two LMS ids, or spellings
    that differ only in case, spacing or Unicode form) are all refused: names cannot tell
    which of them is that student's."""
    spellings: dict[str, set] = defaultdict(set)
    uploaders: dict[str, set] = defaultdict(set)
    for p in placements.values():
        spellings[fold(p.student)].add(p.spelling)
        uploaders[fold(p.student)].add(p.uploader or None)
    for path, p in list(placements.items()):
        key = fold(p.student)
        claimants = max(len(spellings[key]), len(uploaders[key] - {None}))
        if claimants > 1:
            del placements[path]
            report.not_placed.append(
                (
                    p.origin,
                    f"refused: {claimants} different uploads "
                    f"claim student {p.student!r}; file it by hand",
                )
            )


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
        report.not_placed.append(
            (
                loser.origin,
                f"another copy for {winner.student}'s {winner.file_id} was kept: {winner.origin}",
            )
        )
    return {path: p for path, p in best.values()}


def _move_into_course(course, assignment, staged: Path, force: bool, report) -> None:
    if not staged.is_dir():
        return
    known = (
        {fold(d.name): d.name for d in course.submitted.iterdir()}
        if (course.submitted.is_dir())
        else {}
    )
    for sdir in sorted(staged.iterdir()):
        src = sdir / assignment
        if not src.is_dir():
            continue
        dest = course.submitted / sdir.name / assignment
        twin = known.get(fold(sdir.name), sdir.name)
        if twin != sdir.name:
            report.students[sdir.name] = "refused"
            report.placed = [p for p in report.placed if not p.startswith(f"{sdir.name}/")]
            report.not_placed += [
                (
                    f"{sdir.name}/{f.name}",
                    f"refused: submitted/{twin} is "
                    "the same id but for case or Unicode form; file it by hand",
                )
                for f in sorted(src.iterdir())
            ]
            continue
        if dest.exists():
            if folder_digest(dest) == folder_digest(src):
                report.students[sdir.name] = "unchanged"
                continue
            if not force:
                report.students[sdir.name] = "kept"
                for f in sorted(src.iterdir()):
                    report.not_placed.append(
                        (
                            f"{sdir.name}/{f.name}",
                            "this student already "
                            "has a different submission in submitted/ "
                            "(use --force to replace it)",
                        )
                    )
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
    for line in report.roster_added:
        print(f"added to {ROSTER}: {line}", file=stream)
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
