"""``python -m autograder feedback``: per-student HTML feedback, with no grading material in
it and nothing active from the submission.

nbgrader's ``generate_feedback`` writes the HTML. nbgrader_config.py sets its exporter to
``autograder.feedback.inert.InertHTMLExporter`` (no script, event handler, frame or ``javascript:``
link from a submission survives into a page) and adds ``HideGraderMaterial`` to its
preprocessors, so formgrader's feedback button is covered too:

- hidden test regions are cut out of every cell (also unbalanced or in the wrong cell);
- an error whose traceback runs through the grader or the reference engine is shown as its
  last line only, and grader paths are blanked in any output;
- an output or a cell that quotes the grader's or the reference engine's source (three
  consecutive lines of it that are not also in the students' notebooks or the solutions,
  or a hidden-test marker) is replaced by a notice. (Where grading runs without a sandbox,
  a submission could read course files and print them.)

Nothing a student wrote can make this command fail or delete a page: what should not be
shown is replaced by a notice. The command then keeps only ``*.html`` in each feedback
folder (nbgrader also copies ``coursekit.py`` and any extra file the student submitted),
writes a short page for a notebook that could not be graded at all (missing, broken...),
and checks what the grader itself controls in every page: that it was made by the inert
exporter, and that no test cell shows any of its hidden tests. A page failing that check
is deleted and reported as a grader failure (exit code 2), as is nbgrader failing.

A late submission's pages say how late it was, against which due date, and what the
course's late policy makes of its score (``late.py``), as ``c.Schedule`` is when the
command runs: pages already current get that section brought up to date too.
"""

from __future__ import annotations

import contextlib
import functools
import html
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import markers
from ..course import NOTEBOOKS, RECORD, ROOT, SOLUTIONS, SOURCE, open_course
from ..errors import ExitCode
from ..intake.discovery import GLOB_CHARS
from ..record import GradingRecord
from .inert import STAMP, is_stamp
from .late import late_section, with_late_section
from .sanitize import blank_paths_through, strip_tags

MARKERS = (markers.BEGIN_HIDDEN, markers.END_HIDDEN, "load_grader(")
REMOVED_OUTPUT = "[output removed: it showed the course's grading code]"
REMOVED_CELL = "# [removed from the feedback: this cell held the course's grading code]"
REMOVED_TEXT = "*[removed from the feedback: this cell quoted the course's grading code]*"
WINDOW = 3
MIN_LINE = 16


# ---- what counts as grading material -----------------------------------------------------


def grader_paths() -> list[str]:
    return [
        str(ROOT / "autograder"),
        str(SOURCE / ".reference"),
        str(SOURCE),
        os.path.realpath(ROOT / "autograder"),
    ]


def _norm(line: str) -> str:
    return " ".join(line.split())


def _significant(line: str) -> bool:
    return len(line) >= MIN_LINE


@functools.cache
def fingerprints() -> frozenset[tuple[str, ...]]:
    """Windows of consecutive significant lines of the grader's own files."""
    allowed = _student_lines()
    texts = []
    folders = [ROOT / "autograder" / "verdicts" / "hidden", SOURCE / ".reference"]
    for folder in folders:
        texts += [p.read_text(errors="replace") for p in folder.rglob("*.py")]
    texts += [
        markers.inside(cell.source, markers.HIDDEN)
        for nb in _notebooks(SOURCE)
        for cell in nb.cells
    ]
    windows = set()
    for text in texts:
        lines = [_norm(ln) for ln in text.splitlines()]
        lines = [ln for ln in lines if _significant(ln)]
        for i in range(len(lines) - WINDOW + 1):
            window = tuple(lines[i : i + WINDOW])
            if not all(ln in allowed for ln in window):
                windows.add(window)
    return frozenset(windows)


def _student_lines() -> set[str]:
    """Lines students legitimately have: their notebooks and the solutions."""
    lines = set()
    for folder in (NOTEBOOKS, SOLUTIONS):
        for nb in _notebooks(folder):
            for cell in nb.cells:
                lines.update(_norm(ln) for ln in cell.source.splitlines())
    for nb in _notebooks(SOURCE):
        for cell in nb.cells:
            text = markers.without(cell.source, markers.HIDDEN)
            lines.update(_norm(ln) for ln in text.splitlines())
    return lines


def _notebooks(folder: Path, assignment: str = "[!.]*"):
    import nbformat

    if not folder.is_dir():
        return
    for path in sorted(folder.glob(f"{assignment}/*.ipynb")):
        with contextlib.suppress(Exception):
            yield nbformat.read(path, as_version=4)


def quotes_grader(text: str) -> bool:
    if any(marker in text for marker in MARKERS):
        return True
    prints = fingerprints()
    lines = [_norm(ln) for ln in text.splitlines()]
    lines = [ln for ln in lines if _significant(ln)]
    return any(tuple(lines[i : i + WINDOW]) in prints for i in range(len(lines) - WINDOW + 1))


MATERIAL = "/autograder-material/"  # a Dask worker's copy of the grader (plugins.py)


def mentions_grader_path(text: str) -> bool:
    return any(p in text for p in [*grader_paths(), MATERIAL])


def blank_paths(text: str) -> str:
    for p in sorted(grader_paths(), key=len, reverse=True):
        text = text.replace(p, "<course>")
    return blank_paths_through(text, MATERIAL, "<course>") if MATERIAL in text else text


# ---- the nbgrader preprocessor -------------------------------------------------------------


def clean_output(out):
    """``out`` without grading material: never raises, whatever the output holds."""
    from nbformat.v4 import new_output

    try:
        return _clean_output(out)
    except Exception:
        return new_output("stream", name="stdout", text="[output not shown in the feedback]\n")


def _clean_output(out):
    from nbformat.v4 import new_output

    kind = out.get("output_type")
    if kind == "error":
        tb = "\n".join(out.get("traceback", []))
        evalue = str(out.get("evalue", ""))
        if quotes_grader(tb) or mentions_grader_path(tb):
            evalue = blank_paths(evalue)
            if quotes_grader(evalue):
                evalue = "(details hidden)"
            return new_output(
                "error",
                ename=out.get("ename", "Error"),
                evalue=evalue,
                traceback=[f"{out.get('ename', 'Error')}: {evalue}"],
            )
        return out
    texts = []
    if kind == "stream":
        texts = [out.get("text", "")]
    elif kind in ("display_data", "execute_result"):
        texts = [
            v if isinstance(v, str) else "\n".join(v)
            for k, v in out.get("data", {}).items()
            if k.startswith("text/") or k in ("application/javascript", "image/svg+xml")
        ]
    joined = "\n".join(texts)
    if quotes_grader(joined) or quotes_grader(_html_text(joined)):
        return new_output(
            "stream",
            name=out.get("name", "stdout") if kind == "stream" else "stdout",
            text=REMOVED_OUTPUT + "\n",
        )
    if mentions_grader_path(joined):
        if kind == "stream":
            out["text"] = blank_paths(out["text"])
        else:
            for k, v in list(out.get("data", {}).items()):
                if isinstance(v, str):
                    out["data"][k] = blank_paths(v)
    return out


def _html_text(text: str) -> str:
    return html.unescape(strip_tags(text))


# ---- the command -----------------------------------------------------------------------------


@dataclass
class FeedbackReport:
    written: list[str] = field(default_factory=list)
    current: int = 0
    problems: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        if self.failures:
            return ExitCode.FAILED
        return ExitCode.PROBLEMS if self.problems else ExitCode.OK


def graded_submissions(course, assignments, students) -> list[tuple[str, str]]:
    """(student, assignment) of every graded submission selected."""
    found = [
        (r.parent.parent.name, r.parent.name)
        for r in sorted(course.autograded.glob(f"*/*/{RECORD}"))
    ]
    return [
        (s, a)
        for s, a in found
        if (not assignments or a in assignments) and (not students or s in students)
    ]


def feedback(
    assignments=None,
    students=None,
    *,
    root=None,
    db_url=None,
    jobs=None,
    force=False,
    schedule=None,
) -> FeedbackReport:
    """Pages for the selected graded submissions (module docstring); ``schedule``: the
    due dates, extensions and late policy they state (default: the course's
    ``c.Schedule``)."""
    from ..schedule import Schedule

    course = open_course(root, db_url)
    schedule = (schedule or Schedule.for_course(course.config)).check(course.assignments())
    report = FeedbackReport()
    todo = []
    selected = graded_submissions(course, assignments, students)
    for student, assignment in selected:
        if GLOB_CHARS & set(student):
            report.problems.append(
                f"{student}/{assignment}: nbgrader cannot make feedback for an id with *?[] in it"
            )
            continue
        record = course.record_path(student, assignment)
        folder = course.feedback / student / assignment
        pages = list(folder.glob("*.html")) if folder.is_dir() else []
        if (
            not force
            and pages
            and min(p.stat().st_mtime for p in pages) >= (record.stat().st_mtime)
        ):
            report.current += 1
            continue
        todo.append((student, assignment))
    if todo:
        _render(course, todo, jobs, report)
    mark_late(course, selected, schedule)
    return report


def _render(course, todo, jobs, report: FeedbackReport) -> None:
    jobs = max(1, min(jobs or len(os.sched_getaffinity(0)), len(todo)))
    results = _run_all(course, todo, jobs)
    for (student, assignment), (ok, message) in zip(todo, results):
        if not ok:
            report.failures.append(
                f"{student}/{assignment}: nbgrader generate_feedback failed: {message}"
            )
            continue
        try:
            pages = finish_folder(course, student, assignment)
        except LeakError as exc:
            report.failures.append(str(exc))
            continue
        report.written += [
            str(p.relative_to(course.root)) if p.is_relative_to(course.root) else str(p)
            for p in pages
        ]


def mark_late(course, submissions: list[tuple[str, str]], schedule) -> None:
    """Each page of the ``(student, assignment)`` submissions with its late section as
    ``schedule`` has it now (none when on time), from the gradebook's timestamp, due date,
    extension and scores; a page is written only when that changes."""
    from nbgrader.api import Gradebook, MissingEntry

    if not submissions:
        return
    policy = schedule.policy()
    with Gradebook(course.db_url, course.course_id) as gb:
        for student, assignment in submissions:
            folder = course.feedback / student / assignment
            pages = sorted(folder.glob("*.html")) if folder.is_dir() else []
            if not pages:
                continue
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            section = late_section(
                schedule,
                policy,
                assignment,
                schedule.submission_lateness(sub),
                float(sub.score or 0),
                float(sub.max_score or 0),
            )
            for page in pages:
                text = page.read_text(encoding="utf-8", errors="replace")
                marked = with_late_section(text, section)
                if marked != text:
                    page.write_text(marked, encoding="utf-8")


def _run_all(course, todo, jobs):
    if jobs == 1:
        return [_one(course.root, course.db_url, s, a) for s, a in todo]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
        futures = [pool.submit(_one, course.root, course.db_url, s, a) for s, a in todo]
        return [f.result() for f in futures]


def _one(root, db_url, student, assignment) -> tuple[bool, str]:
    course = open_course(root, db_url)
    folder = course.feedback / student / assignment
    graded = course.autograded / student / assignment
    if not any(graded.glob("*.ipynb")):
        return True, ""  # nothing nbgrader can render: finish_folder writes a page
    api = course.api()
    result = api.generate_feedback(assignment, student, force=True)
    if not result.get("success"):
        text = (result.get("error") or result.get("log") or "").strip().splitlines()
        return False, (text[-1] if text else "unknown error")[:300]
    return folder.is_dir(), "no feedback folder was written"


class LeakError(RuntimeError):
    pass


def finish_folder(course, student: str, assignment: str) -> list[Path]:
    """Keep only the HTML pages, add pages for notebooks that could not be graded, and
    check what the grader controls in every page (``check_page``)."""
    record = course.read_record(student, assignment) or GradingRecord()
    folder = course.feedback / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.rmdir()
        elif path.suffix != ".html" or path.parent != folder:
            path.unlink()
    graded = {p.stem for p in (course.autograded / student / assignment).glob("*.ipynb")}
    expected = [p.stem for p in (course.source / assignment).glob("*.ipynb")]
    for name in expected:
        if name not in graded:
            notes = [*record.notes.get(name, []), *record.notes.get("", [])]
            write_note_page(folder / f"{name}.html", student, assignment, name, record, notes)
    pages = sorted(folder.glob("*.html"))
    for page in pages:
        tests = (
            _test_cells(course.source / assignment / f"{page.stem}.ipynb")
            if (page.stem in graded)
            else 0
        )
        trouble = check_page(
            page.read_text(errors="replace"), hidden_lines(str(course.source / assignment)), tests
        )
        if trouble:
            page.unlink()
            raise LeakError(
                f"{student}/{assignment}: {page.name} was deleted: {trouble}; please report this"
            )
    return pages


def check_page(page: str, hidden: frozenset[str], test_cells: int) -> str:
    """What is wrong with a feedback page in what the grader controls ("" if nothing):
    it must be stamped by the inert exporter, and its ``test_cells`` test cells (whose
    code is the course's, not the student's) must show no hidden-test line."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, features="html.parser")
    if not any(is_stamp(m) for m in soup.find_all("meta")):
        return (
            "it was not made by autograder.feedback.inert.InertHTMLExporter "
            "(nbgrader_config.py: GenerateFeedback.exporter_class)"
        )
    labels = [
        s
        for s in soup.find_all("span", class_="nbgrader-label")
        if s.get_text().startswith("Grade cell")
    ]
    if len(labels) != test_cells:
        return (
            f"{len(labels)} of its {test_cells} test cells were found in the page "
            "(did nbgrader's feedback template change?)"
        )
    for label in labels:
        panel = label.find_parent("div", class_="nbgrader_cell")
        code = panel.find("div", class_="input_area") if panel else None
        text = code.get_text() if code else ""
        shown = {_norm(line) for line in text.splitlines()}
        if any(m in text for m in MARKERS[:2]) or shown & hidden:
            return f"test cell {label.get_text()[len('Grade cell:') :].strip()} showed hidden tests"
    return ""


@functools.cache
def hidden_lines(source_folder: str) -> frozenset[str]:
    """Lines of an assignment's hidden tests that are nowhere else in its notebooks."""
    folder = Path(source_folder)
    cells = [c.source for nb in _notebooks(folder.parent, folder.name) for c in nb.cells]
    hidden = {
        _norm(ln) for text in cells for ln in markers.inside(text, markers.HIDDEN).splitlines()
    }
    shown = {
        _norm(ln) for text in cells for ln in markers.without(text, markers.HIDDEN).splitlines()
    }
    return frozenset(hidden - shown - {""})


@functools.cache
def _test_cells(path: Path) -> int:
    """Test cells (graded, not the student's answer) in a notebook of the course."""
    import nbformat

    cells = nbformat.read(path, as_version=4).cells if path.exists() else []
    return sum(
        1
        for c in cells
        if c.cell_type == "code"
        and c.metadata.get("nbgrader", {}).get("grade")
        and not c.metadata.get("nbgrader", {}).get("solution")
    )


def write_note_page(
    path: Path, student, assignment, name, record: GradingRecord, notes: list[str]
) -> None:
    esc = html.escape
    score = f"{record.score:g} / {record.max_score:g}"
    items = "".join(f"<li>{esc(n.replace('`', ''))}</li>" for n in notes) or (
        "<li>this notebook could not be graded</li>"
    )
    path.write_text(
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>{STAMP}"
        f"<title>{esc(assignment)}: {esc(name)}</title></head><body>"
        f"<h1>{esc(assignment)}: {esc(name)}.ipynb</h1>"
        f"<p>Student: {esc(student)}. Score for the assignment: {esc(score)}.</p>"
        f"<p>This notebook was not graded:</p><ul>{items}</ul></body></html>\n",
        encoding="utf-8",
    )


def print_feedback_report(report: FeedbackReport, stream=None) -> None:
    stream = stream or sys.stdout
    for page in report.written:
        print(f"wrote {page}", file=stream)
    for line in report.problems:
        print(f"problem: {line}", file=stream)
    for line in report.failures:
        print(f"GRADER FAILURE: {line}", file=stream)
    print(
        f"{len(report.written)} page(s) written, {report.current} submission(s) already "
        "had current feedback",
        file=stream,
    )
