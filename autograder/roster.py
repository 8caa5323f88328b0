"""The class list: ``roster.csv`` in the course folder, one row per student, by stable id.

    id,name,email,lms_id,sis_id,login,section
    ada,"Lovelace, Ada",ada@example.edu,1000,S1000,ada,Autograd 101

- ``id``: the course's own id for a student, for ever: the folder under ``submitted/``
  and nbgrader's student id. It never changes once given, whatever the LMS later says.
- ``lms_id``: Canvas's numeric user id (Moodle's user id when it is known); ``sis_id``:
  Canvas's "SIS User ID", Moodle's "ID number"; ``login``: Canvas's "SIS Login ID",
  Moodle's username. Every field but ``id`` may be empty.

``python -m autograder roster import FILE`` merges a Canvas gradebook export or a Moodle
grades export into it (``import_roster``): a student already there keeps their id and gets
what is new about them; a new student gets an id made from the export (Canvas: the SIS
Login ID, else the SIS User ID, else the name; Moodle: the ID number, else the part of
the email before the ``@``, else the name), made unique the same way every time. No row is
ever dropped. ``collect`` files Canvas uploads by the Canvas user id in their names and
Moodle uploads by name (intake/collect.py); ``export --to canvas|moodle`` writes the
LMS's own import files from it (grade/lms.py).

The rules for an id (``clean_student_id``) are the folder-name rules ``collect`` applies
to every student, kept here so that both use one copy.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .errors import GraderError
from .spreadsheet import read_cell, write_csv

ROSTER = "roster.csv"
HEADER = ["id", "name", "email", "lms_id", "sis_id", "login", "section"]
GLOB_CHARS = set("*?[]")  # nbgrader's formgrader and feedback cannot handle these in ids
SOURCES = ("canvas", "moodle")


class RosterError(GraderError):
    """roster.csv, or a file imported into it, cannot be used (one line says where and why)."""


def clean_student_id(raw: str) -> str | None:
    """A student's folder name (NFC, single spaces), or None when it cannot be one: a path,
    a leading dot, nbgrader's glob characters, control or invisible characters (which
    make an id that looks like another), more than 100 characters."""
    raw = unicodedata.normalize("NFC", raw)
    sid = " ".join(raw.split())
    if (
        not sid
        or sid.startswith(".")
        or len(sid) > 100
        or "/" in sid
        or "\\" in sid
        or GLOB_CHARS & set(sid)
        or any(unicodedata.category(c)[0] == "C" for c in raw)
    ):
        return None
    return sid


def fold(student: str) -> str:
    """What two ids (or names) that could be taken for one student have in common (case,
    Unicode compatibility forms, spacing)."""
    return " ".join(unicodedata.normalize("NFKC", student).casefold().split())


def slug(name: str) -> str:
    """An id made from a name: ``"Smith, Jane"`` -> ``smith-jane``, accents dropped where
    a plain letter remains (``Zoë`` -> ``zoe``), other scripts kept."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", re.sub(r"[\W_]+", "-", plain.casefold()).strip("-"))


@dataclass(frozen=True)
class Student:
    """One row of roster.csv (strings; "" when unknown)."""

    id: str
    name: str = ""
    email: str = ""
    lms_id: str = ""
    sis_id: str = ""
    login: str = ""
    section: str = ""

    def row(self) -> list[str]:
        return [getattr(self, f) for f in HEADER]

    def shown(self) -> str:
        """How messages name the student: ``ada (Lovelace, Ada)``."""
        return f"{self.id} ({self.name})" if self.name and self.name != self.id else self.id


class Roster:
    """The students of roster.csv, in its order, findable by id, LMS id and name.

    Two students never share an id (nor ids differing only in case or Unicode form, which
    ``collect`` would take for one folder) or an LMS id."""

    def __init__(self, students: Iterable[Student] = ()) -> None:
        self._students: list[Student] = []
        self._ids: dict[str, Student] = {}
        self._folded: dict[str, str] = {}
        self._lms: dict[str, Student] = {}
        for student in students:
            self.add(student)

    @property
    def students(self) -> list[Student]:
        return list(self._students)

    def __iter__(self) -> Iterator[Student]:
        return iter(list(self._students))

    def __len__(self) -> int:
        return len(self._students)

    def __contains__(self, student_id: object) -> bool:
        return student_id in self._ids

    def get(self, student_id: str) -> Student | None:
        return self._ids.get(student_id)

    def by_lms_id(self, lms_id: str) -> Student | None:
        return self._lms.get(str(lms_id).strip()) if str(lms_id).strip() else None

    def named(self, name: str) -> list[Student]:
        """Every student whose name is ``name`` (compared as ``fold`` does)."""
        key = fold(name)
        return [s for s in self._students if s.name and fold(s.name) == key]

    def by_email(self, email: str) -> list[Student]:
        key = email.strip().casefold()
        return [s for s in self._students if key and s.email.strip().casefold() == key]

    def having(self, attribute: str, value: str) -> list[Student]:
        """Every student whose ``attribute`` (sis_id, login, ...) is ``value`` (not empty)."""
        value = value.strip()
        return [s for s in self._students if value and getattr(s, attribute) == value]

    def taken(self, student_id: str) -> bool:
        """Whether ``student_id``, or an id differing from it only in case or Unicode form,
        is a student's."""
        return fold(student_id) in self._folded

    def add(self, student: Student) -> None:
        problem = self._refusal(student)
        if problem:
            raise RosterError(problem)
        self._students.append(student)
        self._index(student)

    def replace(self, student: Student) -> None:
        """Put ``student`` in place of the student with the same id (its other fields may
        change, never the id)."""
        old = self._ids[student.id]
        if student.lms_id and self._lms.get(student.lms_id, old) is not old:
            other = self._lms[student.lms_id].id
            raise RosterError(f"LMS id {student.lms_id} is already {other}'s")
        self._students[self._students.index(old)] = student
        if old.lms_id:
            del self._lms[old.lms_id]
        self._index(student)

    def _index(self, student: Student) -> None:
        self._ids[student.id] = student
        self._folded[fold(student.id)] = student.id
        if student.lms_id:
            self._lms[student.lms_id] = student

    def _refusal(self, student: Student) -> str | None:
        if clean_student_id(student.id) != student.id:
            return f"id {student.id!r} cannot be a folder name under submitted/"
        if fold(student.id) in self._folded:
            twin = self._folded[fold(student.id)]
            same = "" if twin == student.id else f" (the same as {twin!r} but for case or form)"
            return f"duplicate id {student.id!r}{same}"
        if student.lms_id and student.lms_id in self._lms:
            return f"duplicate lms_id {student.lms_id} ({self._lms[student.lms_id].id}'s)"
        return None


# ---- roster.csv ------------------------------------------------------------------------------


def read_table(
    path: Path, delimiter: str | None = None
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV file's header and its rows with their line numbers, read as LMS exports come:
    UTF-8 with or without a byte order mark, separated by commas, semicolons or tabs
    (Canvas writes semicolons where a comma is the decimal mark; Moodle offers all
    three: the one that splits the header most). Empty rows are left out."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RosterError(
            f"{path}: not UTF-8 text (byte {exc.start}); save it as CSV UTF-8"
        ) from None
    except OSError as exc:
        raise RosterError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if delimiter is None:
        first = text.splitlines()[:1]
        delimiter = max(
            (",", ";", "\t"), key=lambda sep: len(next(csv.reader(first, delimiter=sep), []))
        )
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows = []
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((reader.line_num, [cell.strip() for cell in row]))
    except csv.Error as exc:
        raise RosterError(f"{path}: line {reader.line_num}: not CSV ({exc})") from None
    if not rows:
        raise RosterError(f"{path}: empty file (no header)")
    return rows[0][1], rows[1:]


def read_roster(root: Path) -> Roster:
    """``root/roster.csv`` (an empty Roster when there is none). A file that cannot be
    used raises RosterError naming the line and the problem: nothing is guessed."""
    path = Path(root) / ROSTER
    if not path.exists():
        return Roster()
    header, rows = read_table(path, ",")
    unknown = [h for h in header if h not in HEADER]
    if "id" not in header:
        raise RosterError(f"{path}: line 1: no header (id,...); the header is {','.join(HEADER)}")
    if unknown:
        raise RosterError(
            f"{path}: line 1: unknown column {unknown[0]!r}; the header is {','.join(HEADER)}"
        )
    if len(set(header)) != len(header):
        raise RosterError(f"{path}: line 1: a column is named twice")
    roster = Roster()
    for line, row in rows:
        if len(row) != len(header):
            raise RosterError(
                f"{path}: line {line}: {len(row)} fields, the header has {len(header)}"
            )
        values = {h: read_cell(cell) for h, cell in zip(header, row)}
        try:
            roster.add(Student(**{f: values.get(f, "") for f in HEADER}))
        except RosterError as exc:
            raise RosterError(f"{path}: line {line}: {exc}") from None
    return roster


def write_roster(root: Path, roster: Roster) -> Path:
    """Write ``root/roster.csv`` at once (a reader never sees half of it), every cell safe
    to open in a spreadsheet and read back as it was."""
    path = Path(root) / ROSTER
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_csv(path, HEADER, (s.row() for s in roster.students), reversible=True)
    except OSError as exc:
        raise RosterError(f"cannot write {path}: {exc.strerror or exc}") from None


# ---- importing an LMS export -------------------------------------------------------------------


@dataclass
class Incoming:
    """A student as an LMS export gives them, with where they came from."""

    line: int
    student: Student  # id: "" (made when the student is new)
    bases: list[str]  # what a new id is made from, best first


@dataclass
class ImportReport:
    source: str
    added: list[Student] = field(default_factory=list)
    updated: list[tuple[Student, list[str]]] = field(default_factory=list)  # what changed
    unchanged: int = 0
    problems: list[str] = field(default_factory=list)
    path: Path | None = None
    total: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0


CANVAS_NAME = ("Student",)
CANVAS_SPLIT = ("LastName", "FirstName")
MOODLE_NAME = ("First name", "Last name")
CANVAS_TEST_STUDENT = {"student, test", "test student"}  # Canvas's Student View user


def detect(header: list[str]) -> str | None:
    """ "canvas" for a Canvas gradebook export, "moodle" for a Moodle grades export."""
    if "ID" in header and ("Student" in header[0] or header[:2] == list(CANVAS_SPLIT)):
        return "canvas"
    if set(MOODLE_NAME) <= set(header) and ({"ID number", "Email address"} & set(header)):
        return "moodle"
    return None


def canvas_students(
    header: list[str], rows: list[tuple[int, list[str]]], problems: list[str], where: str
) -> list[Incoming]:
    """The students of a Canvas gradebook export: ``Student`` (or ``LastName``,
    ``FirstName``), ``ID`` (the Canvas user id), ``SIS User ID``, ``SIS Login ID``,
    ``Section``, then assignments and totals. Canvas's own rows are not students: the
    ``Points Possible`` row, the ``Manual Posting``/``Muted`` row, and the Test Student
    of Student View."""
    col = {h: i for i, h in reversed(list(enumerate(header)))}
    out = []
    for line, row in rows:
        cell = {h: row[i] for h, i in col.items() if i < len(row)}.get
        if "Points Possible" in row[0] or all(
            re.fullmatch(r"(Muted|Manual Posting.*)?", c, re.I) for c in row
        ):
            continue
        if "Student" in header[0]:  # Canvas's importer takes "Student Name" too
            name = row[0]
        else:
            name = ", ".join(p for p in (cell("LastName", ""), cell("FirstName", "")) if p)
        if name.startswith('="') and name.endswith('"'):  # Canvas quotes names starting with =
            name = name[2:-1]
        if fold(name) in CANVAS_TEST_STUDENT and not cell("SIS Login ID", ""):
            continue
        canvas_id = cell("ID", "")
        if not canvas_id.isdigit():
            problems.append(f"{where} line {line}: Canvas ID {canvas_id!r} is not a number")
            continue
        student = Student(
            "",
            name=name,
            lms_id=canvas_id,
            sis_id=cell("SIS User ID", ""),
            login=cell("SIS Login ID", ""),
            section=cell("Section", ""),
        )
        out.append(Incoming(line, student, [student.login, student.sis_id, slug(name)]))
    return out


def moodle_students(
    header: list[str], rows: list[tuple[int, list[str]]], problems: list[str], where: str
) -> list[Incoming]:
    """The students of a Moodle grades export (Grades > Export > Plain text file): ``First
    name``, ``Last name``, ``ID number``, ``Institution``, ``Department``, ``Email
    address`` (the profile fields the site exports), then grade items."""
    col = {h: i for i, h in reversed(list(enumerate(header)))}
    out = []
    for line, row in rows:
        cell = {h: row[i] for h, i in col.items() if i < len(row)}.get
        name = " ".join(p for p in (cell("First name", ""), cell("Last name", "")) if p)
        email = cell("Email address", "")
        if not (name or email or cell("ID number", "")):
            problems.append(f"{where} line {line}: no name, email or ID number")
            continue
        student = Student(
            "",
            name=name,
            email=email,
            sis_id=cell("ID number", ""),
            login=cell("Username", ""),
        )
        local = email.split("@", 1)[0] if "@" in email else ""
        out.append(Incoming(line, student, [student.sis_id, local, slug(name)]))
    return out


def import_roster(root: Path, file: Path, source: str = "auto") -> ImportReport:
    """Merge an LMS export into ``root/roster.csv`` (module docstring); write it when
    anything changed. Rows that cannot be taken are the report's problems."""
    header, rows = read_table(Path(file))
    found = detect(header)
    if source == "auto":
        if found is None:
            raise RosterError(
                f"{file}: neither a Canvas gradebook export (Student, ID, SIS User ID, ...) "
                f"nor a Moodle grades export (First name, Last name, ID number, ...): "
                f"its header starts {', '.join(header[:4])}"
            )
        source = found
    elif source not in SOURCES:
        raise RosterError(f"--from {source!r}: expected canvas, moodle or auto")
    elif found != source:
        raise RosterError(
            f"{file}: not a {source.capitalize()} export (its header starts "
            f"{', '.join(header[:4])})"
        )
    report = ImportReport(source)
    where = Path(file).name
    read = canvas_students if source == "canvas" else moodle_students
    incoming = read(header, rows, report.problems, where)
    roster = read_roster(root)
    merge(roster, incoming, source, report, where)
    report.total = len(roster)
    if report.added or report.updated:
        report.path = write_roster(root, roster)
    return report


KEYS = {
    "canvas": (("lms_id", "Canvas ID"), ("sis_id", "SIS User ID"), ("login", "SIS Login ID")),
    "moodle": (("sis_id", "ID number"), ("email", "email"), ("login", "username")),
}


def merge(
    roster: Roster, incoming: list[Incoming], source: str, report: ImportReport, where: str
) -> None:
    """Match each incoming student with the roster (``KEYS``, in order) and update them,
    or give them a new id; the roster changes in place."""
    seen: dict[tuple[str, str], int] = {}
    new: list[Incoming] = []
    for inc in incoming:
        s = inc.student
        keys = [(a, label, getattr(s, a)) for a, label in KEYS[source] if getattr(s, a)]
        again = next((seen[(a, v)] for a, _, v in keys if (a, v) in seen), None)
        if again is not None:
            report.problems.append(
                f"{where} line {inc.line}: the same student as line {again} ({s.name})"
            )
            continue
        for a, _, v in keys:
            seen[(a, v)] = inc.line
        matches: dict[str, str] = {}
        for attribute, label, value in keys:
            for hit in _matching(roster, attribute, value):
                matches.setdefault(hit.id, label)
        if not keys and s.name:  # nothing but a name to go by
            matches = {hit.id: "name" for hit in roster.named(s.name)}
        if len(matches) > 1:
            which = ", ".join(f"{sid} (by {label})" for sid, label in matches.items())
            report.problems.append(
                f"{where} line {inc.line}: {s.name or 'this student'} matches {which} in "
                f"{ROSTER}: fix {ROSTER} by hand"
            )
            continue
        if not matches:
            new.append(inc)
            continue
        old = roster.get(next(iter(matches)))
        changes = {f.name: getattr(s, f.name) for f in fields(s) if f.name != "id"}
        changes = {k: v for k, v in changes.items() if v and v != getattr(old, k)}
        if not changes:
            report.unchanged += 1
            continue
        try:
            roster.replace(replace(old, **changes))
        except RosterError as exc:
            report.problems.append(f"{where} line {inc.line}: {exc}")
            continue
        report.updated.append(
            (
                roster.get(old.id),
                [f"{k} {getattr(old, k) or '-'} -> {v}" for k, v in changes.items()],
            )
        )
    for inc, sid in zip(new, new_ids(roster, new, source)):
        if sid is None:
            report.problems.append(
                f"{where} line {inc.line}: no usable id for {inc.student.name or 'this student'}"
                " (no login, ID number, email or name that can be a folder name)"
            )
            continue
        student = replace(inc.student, id=sid)
        try:
            roster.add(student)
        except RosterError as exc:
            report.problems.append(f"{where} line {inc.line}: {exc}")
            continue
        report.added.append(student)


def _matching(roster: Roster, attribute: str, value: str) -> list[Student]:
    if attribute == "lms_id":
        hit = roster.by_lms_id(value)
        return [hit] if hit else []
    if attribute == "email":
        return roster.by_email(value)
    return roster.having(attribute, value)


def new_ids(roster: Roster, new: list[Incoming], source: str) -> list[str | None]:
    """Ids for new students: the first of their bases that can be a folder name; when
    that is taken, or two new students would share it, each of them gets a suffix: the
    Canvas ID (``smith-jane-1234``) or, from Moodle, their place among them (``-1``, ``-2``).
    The same export and roster always give the same ids (None: no id can be made)."""
    bases = []
    for inc in new:
        usable = [clean_student_id(b) for b in inc.bases if b]
        bases.append(next((b for b in usable if b), None))
    groups: dict[str, list[int]] = {}
    for i, base in enumerate(bases):
        if base is not None:
            groups.setdefault(fold(base), []).append(i)
    taken = {fold(s.id) for s in roster}
    clashing = []
    for key, members in groups.items():
        if len(members) == 1 and key not in taken:
            taken.add(key)
        else:
            clashing.append(members)
    out: list[str | None] = list(bases)
    for members in clashing:
        n = 0
        for i in members:
            if source == "canvas":
                candidate = f"{bases[i]}-{new[i].student.lms_id}"
            else:
                n += 1
                while fold(f"{bases[i]}-{n}") in taken:
                    n += 1
                candidate = f"{bases[i]}-{n}"
            ok = clean_student_id(candidate) == candidate and fold(candidate) not in taken
            out[i] = candidate if ok else None
            taken.add(fold(candidate))
    return out


def print_import_report(report: ImportReport, stream=None) -> None:
    import sys

    stream = stream or sys.stdout
    for s in report.added:
        lms = f"; Canvas id {s.lms_id}" if s.lms_id else ""
        print(f"added {s.id} ({s.name or 'no name'}{lms})", file=stream)
    for s, changes in report.updated:
        print(f"updated {s.id}: {'; '.join(changes)}", file=stream)
    for line in report.problems:
        print(f"problem: {line}", file=stream)
    written = f"wrote {report.path}" if report.path else f"{ROSTER} unchanged"
    print(
        f"{written}: {report.total} students ({len(report.added)} added, "
        f"{len(report.updated)} updated, {report.unchanged} unchanged, "
        f"{len(report.problems)} row(s) not taken)",
        file=stream,
    )


def roster_notes(roster: Roster) -> list[str]:
    """What an instructor should know about a roster: students without an LMS id (an
    upload from Canvas cannot be matched to them), names two students share (Moodle
    uploads need the grading worksheet, ``collect --worksheet``)."""
    notes = []
    missing = [s.id for s in roster if not s.lms_id]
    if missing:
        notes.append(
            f"{len(missing)} without an LMS id: {', '.join(missing[:10])}"
            + (" ..." if len(missing) > 10 else "")
        )
    names: dict[str, list[str]] = {}
    for s in roster:
        if s.name:
            names.setdefault(fold(s.name), []).append(s.id)
    for ids in names.values():
        if len(ids) > 1:
            notes.append(
                f"one name, {len(ids)} students: {', '.join(ids)} (Moodle uploads "
                "by this name need collect --worksheet)"
            )
    return notes
