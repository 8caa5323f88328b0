"""``python -m autograder watch``: grade each submission as it arrives, and give feedback
where students look, with nobody at the keyboard.

One cycle (``Watcher.cycle``), every ``c.Watch.interval`` seconds:

1. Look at nbgrader's exchange (``<root>/<course>/inbound``), the inbox (inbound.py) and
   ngshare (ngshare.py, ``c.Watch.ngshare_url``).
   Each new arrival is checked; a refused one gets a line in the log and in
   ``watch/refused.jsonl``, once (looked at again only if its folder changes); a taken
   one is copied into ``watch/archive/`` (regular files, within bounds: tree.py) and
   recorded as ``received`` in its history (history.py) before anything else happens,
   with the grader's time, which counts, and the student's claimed time, which is shown
   (and flagged for review when earlier by more than the interval). Whatever one
   submission holds, it ends that submission only, never the cycle.
2. For each student and assignment with received work, the latest received submission
   is staged into ``submitted/`` (earlier ones still waiting are ``superseded``: both
   are recorded, the later counts), and all of them are graded in one ``grade`` run:
   the sandbox, the limits, Dask and the gradebook, as ``grade`` does.
3. Each graded submission gets its pages (``feedback`` past the due date; before it an
   early page at the assignment's early level, early.py, with nothing of the kernel),
   with the history at the end, released through nbgrader's own ``release_feedback``
   for the exchange (students' ``fetch_feedback``, the Assignments tab) and left in
   ``feedback/`` for the inbox.
4. With ``c.Watch.policy = "best"``, a submission that scores less than an earlier one
   is graded and given its feedback, then the best one is staged and graded again, so
   the gradebook holds it.

Robust by construction: what is recorded is written whole (a temporary file, then a
rename); a submission is ``received`` until its grade is recorded, so a restart, or a
``kill -9`` at any point, grades again only what was not finished (``grade`` itself skips
what its records say is done) and loses nothing that arrived meanwhile (the exchange
keeps it). A cycle that fails is logged and the next one tries again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..course import Course, open_course
from ..errors import ExitCode, GraderError
from ..intake.discovery import folder_digest
from ..kernel import limits as oslimits
from ..ngshare.client import NgshareError
from ..record import GradingRecord
from ..schedule import Schedule
from . import early, inbound, lms
from .history import Entry, History, claim_html, known_keys, refuse, refused_marks
from .settings import Watch
from .tree import Refused, mark, remove_partials

WATCH_FOLDER = "watch"
USUAL = "usual"  # past the due date: the usual feedback page
ATTEMPTS = 3  # cycles a submission whose grade was not recorded is tried in, per start


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class CycleReport:
    """What one cycle did."""

    received: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    graded: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Watcher:
    """The watcher of one course (module docstring)."""

    def __init__(
        self,
        root: Path | str | None = None,
        *,
        db_url: str | None = None,
        jobs: int | None = None,
        limits: oslimits.Limits | None = None,
        settings: Watch | None = None,
        stream=None,
        scheduler=None,
    ):
        self.course: Course = open_course(root, db_url)
        self.settings = settings or Watch.for_course(self.course.config)
        self.folder = self.course.root / WATCH_FOLDER
        self.exchange = self.settings.exchange_root(self.course.config)
        inbox = Path(self.settings.inbox)
        self.inbox = inbox if inbox.is_absolute() else self.course.root / inbox
        self.ngshare = self.settings.ngshare(self.course.course_id, self.folder / "ngshare")
        self.jobs, self.limits, self.scheduler = jobs, limits, scheduler
        self.stream = stream or sys.stdout
        self.known = known_keys(self.folder)
        self.marks = refused_marks(self.folder)
        remove_partials(self.folder / "archive")  # what a killed run left half-made
        if (self.folder / "stage").is_dir():
            import shutil

            shutil.rmtree(self.folder / "stage", ignore_errors=True)
        self.assignments = self.course.assignments()
        for a in self.assignments:
            self.settings.level(a, self.assignments)  # a wrong c.Watch.early fails now
        self.schedule = Schedule.for_course(self.course.config).check(self.assignments)
        self.due = {
            a: d["due"] for a, d in self.schedule._checked(self.assignments).items() if "due" in d
        }
        # Work left by an earlier run: received, or graded but not what the gradebook holds.
        self.pending: set[tuple[str, str]] = set()
        self.attempts: dict[tuple[str, str], int] = {}
        for path in (self.folder / "history").glob("*/*.json"):
            self.pending.add((path.parent.name, path.stem))

    @property
    def inbound(self) -> Path | None:
        return self.exchange / self.course.course_id / "inbound" if self.exchange else None

    def log(self, message: str) -> None:
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        print(f"{stamp} {message}", file=self.stream, flush=True)

    # ---- one cycle -------------------------------------------------------------------------

    def cycle(self) -> CycleReport:
        report = CycleReport()
        self._take_arrivals(report)
        todo = self._stage(report)
        if todo:
            self._grade(todo, report)
        return report

    def _take_arrivals(self, report: CycleReport) -> None:
        self._look_again()
        for source, folder in (("exchange", self.inbound), ("inbox", self.inbox)):
            for name in inbound.odd_names(folder, self.known, source):
                key = f"{source}/{name}"
                if key not in self.known:
                    why = "not a submission folder named <student>+<assignment>+<time>"
                    self._refuse(key, why, report)
        arrivals = inbound.scan(self.inbound, "exchange", self.known) + inbound.scan(
            self.inbox, "inbox", self.known
        )
        try:
            self._take_each(arrivals + self._from_ngshare(report), report)
        finally:
            if self.ngshare is not None:
                self.ngshare.clear()

    def _from_ngshare(self, report: CycleReport) -> list[inbound.Arrival]:
        """New submissions in ngshare, fetched and checked (watch/ngshare.py); one that
        cannot be believed is refused, one ngshare cannot give now is asked for again."""
        if self.ngshare is None:
            return []
        try:
            return self.ngshare.arrivals(
                self.known,
                self.settings.bounds,
                lambda k, why: self._refuse(k, why, report),
                self.log,
            )
        except NgshareError as exc:
            report.failures.append(f"ngshare: {exc}")
            self.log(f"ngshare cannot be read, trying again in the next cycle: {exc}")
            return []

    def _take_each(self, arrivals: list[inbound.Arrival], report: CycleReport) -> None:
        for arrival in sorted(arrivals, key=lambda a: (a.submitted, a.key)):
            if arrival.key in self.known:
                continue
            try:
                self._take(arrival, report)
            except Refused as exc:
                self._refuse(arrival.key, str(exc), report, arrival.path)
            except Exception as exc:  # one submission's trouble ends that one only
                why = f"it could not be taken: {type(exc).__name__}: {exc}"
                self._refuse(arrival.key, " ".join(why.split())[:300], report, arrival.path)

    def _take(self, arrival: inbound.Arrival, report: CycleReport) -> None:
        why = inbound.problem(
            arrival,
            self.assignments,
            self.settings.max_bytes,
            self.settings.check_owner,
            self.settings.bounds,
            set(self.settings.students),
        )
        if why:
            raise Refused(why)
        history = History(self.folder, arrival.student, arrival.assignment)
        if history.find(arrival.key) is None:
            owner = inbound.owner_uid(arrival, self.settings.check_owner)
            kept = inbound.archive(arrival, self.folder / "archive", self.settings.bounds, owner)
            flag = inbound.claim_note(arrival.claimed, arrival.submitted, self.settings.interval)
            history.add(
                Entry(
                    arrival.key,
                    arrival.source,
                    arrival.submitted.isoformat(timespec="microseconds"),
                    _now(),
                    kept=str(kept.relative_to(self.folder)),
                    claimed=arrival.claimed.isoformat(timespec="microseconds")
                    if arrival.claimed
                    else "",
                    review=flag,
                    graders_time=True,
                )
            )
            history.save()
            if flag:
                self.log(f"flagged for review: {arrival.key} {flag}")
        self.known.add(arrival.key)
        self.pending.add((arrival.student, arrival.assignment))
        report.received.append(arrival.key)
        self.log(f"received {arrival.label} from the {arrival.source}")

    def _refuse(self, key: str, why: str, report: CycleReport, path: Path | None = None) -> None:
        """Record ``key`` as refused, once, with why (one line)."""
        now = mark(path) if path is not None else ""
        refuse(self.folder, key, _now(), why, now)
        self.known.add(key)
        if now:
            self.marks[key] = now
        report.refused.append(key)
        self.log(f"refused {key}: {why}")

    def _look_again(self) -> None:
        """A refused folder is looked at again once it changes (and only then)."""
        where = {"exchange": self.inbound, "inbox": self.inbox}
        for key, was in list(self.marks.items()):
            source, _, name = key.partition("/")
            folder = where.get(source)
            if folder is None or mark(folder / name) == was:
                continue
            del self.marks[key]
            self.known.discard(key)

    def _stage(self, report: CycleReport) -> dict[tuple[str, str], Entry]:
        """Stage the submission each pending history needs graded: its latest received
        one, or (policy best) the counting one when the gradebook holds another."""
        todo: dict[tuple[str, str], Entry] = {}
        for student, assignment in sorted(self.pending):
            try:
                entry = self._stage_one(student, assignment)
            except Exception as exc:  # that submission waits for a restart; the rest go on
                self.pending.discard((student, assignment))
                why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                report.failures.append(f"{student}/{assignment}: could not be staged: {why}")
                self.log(
                    f"{student}/{assignment} could not be staged ({why}); tried at the next start"
                )
                continue
            if entry is not None:
                todo[(student, assignment)] = entry
        return todo

    def _stage_one(self, student: str, assignment: str) -> Entry | None:
        """The entry of ``student``'s ``assignment`` to grade now, staged, or None."""
        history = History(self.folder, student, assignment)
        waiting = [e for e in history.entries if e.status == "received"]
        for entry in waiting[:-1]:
            entry.status = "superseded"
            entry.note = "a later submission arrived before this one was graded"
        entry = waiting[-1] if waiting else history.counting(self.settings.policy)
        history.save()
        if entry is None:
            self.pending.discard((student, assignment))
            return None
        dest = self.course.submitted / student / assignment
        kept = self.folder / entry.kept
        when = entry.when()
        record = self.course.read_record(student, assignment)
        staged = dest.is_dir() and folder_digest(dest) == _staged_digest(kept, when)
        done = staged and record is not None and record.current(folder_digest(dest))
        if entry.status == "graded" and done:
            self.pending.discard((student, assignment))
            return None
        if not staged:
            inbound.stage(kept, dest, self.folder / "stage", when)
        return entry

    def _grade(self, todo: dict[tuple[str, str], Entry], report: CycleReport) -> None:
        from ..grade.run import grade

        students = sorted({s for s, _ in todo})
        assignments = sorted({a for _, a in todo})
        started = time.monotonic()
        try:
            result = grade(
                assignments,
                students,
                root=self.course.root,
                db_url=self.course.db_url,
                jobs=self.jobs,
                limits=self.limits,
                progress=False,
                stream=_Prefixed(self),
                scheduler=self.scheduler,
            )
        except GraderError as exc:
            report.failures.append(str(exc))
            self.log(f"grading failed, trying again in the next cycle: {exc}")
            return
        for failure in result.failures:
            report.failures.append(failure)
            self.log(f"grader failure: {failure}")
        restage = []
        done: list[tuple[str, str, History, Entry]] = []
        for (student, assignment), entry in todo.items():
            if entry.status == "graded":  # the counting one, graded again for the gradebook
                self.pending.discard((student, assignment))
                self.log(f"{student}/{assignment}: the gradebook holds the best submission again")
                continue
            record = self.course.read_record(student, assignment)
            dest = self.course.submitted / student / assignment
            if record is None or not record.current(folder_digest(dest)):
                self._not_recorded(student, assignment)  # still received: tried again
                continue
            history = History(self.folder, student, assignment)
            mine = history.find(entry.key)
            mine.status = "graded"
            mine.score, mine.max_score = record.score, record.max_score
            mine.note = record.note
            mine.seconds = record.seconds
            mine.cells = {k: v for k, v in record.cells.items() if v is not None}
            if mine.review:
                self._flag_record(student, assignment, record, mine.review)
            counting = history.counting(self.settings.policy)
            for e in history.entries:
                e.counts = e is counting
            history.save()
            report.graded.append(entry.key)
            self.log(
                f"graded {student}/{assignment}: {mine.score:g}/{mine.max_score:g} in "
                f"{mine.seconds or 0:.1f} s ({mine.note or 'no problems'})"
            )
            done.append((student, assignment, history, mine))
            if counting is not mine:
                restage.append((student, assignment))
            else:
                self.pending.discard((student, assignment))
        self._feedback(done, report)
        if self.settings.lti_scores:
            self._send_scores(sorted({(s, a) for s, a, _, _ in done}), report)
        if restage:
            self.log(
                f"{len(restage)} submission(s) scored less than an earlier one: "
                "the best one goes back into the gradebook"
            )
        self.log(f"cycle done in {time.monotonic() - started:.1f} s")

    def _send_scores(self, graded: list[tuple[str, str]], report: CycleReport) -> None:
        """The graded students' scores to the LMS (lms.py); never stops the watcher."""
        report.failures += lms.send_scores(self.course, graded, self.folder, self.log)

    def _flag_record(self, student: str, assignment: str, record: GradingRecord, flag: str) -> None:
        """The claim's flag in the grader's record (``review``: grades.csv, the report)."""
        line = f"submission time: {flag}"
        if line in record.review:
            return
        flagged = replace(record, review=[*record.review, line])
        _write(self.course.record_path(student, assignment), flagged.to_json())

    def _not_recorded(self, student: str, assignment: str) -> None:
        """A submission whose grade was not recorded is tried in the next cycles, up to
        ``ATTEMPTS`` times; then it waits for the next start of the watcher."""
        tries = self.attempts[(student, assignment)] = (
            self.attempts.get((student, assignment), 0) + 1
        )
        if tries >= ATTEMPTS:
            self.pending.discard((student, assignment))
            self.log(
                f"{student}/{assignment} could not be graded in {tries} attempts (see above); "
                "it stays received and is tried again when the watcher restarts"
            )

    # ---- feedback ----------------------------------------------------------------------------

    def _feedback(self, done: list[tuple[str, str, History, Entry]], report: CycleReport) -> None:
        """Each graded submission's pages, at its assignment's level, then released. The
        usual pages are made by ``feedback`` (nbgrader's generate_feedback), an
        assignment's at once on all cores; early pages straight from the graded notebook."""
        from ..feedback.pages import feedback

        level_of = {(s, a): self._page_level(a, s) for s, a, _, _ in done}
        for assignment, level in sorted({(a, lv) for (_, a), lv in level_of.items()}):
            mine = [(s, h, e) for s, a, h, e in done if (a, level_of[s, a]) == (assignment, level)]
            if level == USUAL:
                made = feedback(
                    [assignment],
                    [s for s, _, _ in mine],
                    root=self.course.root,
                    db_url=self.course.db_url,
                    jobs=self.jobs,
                    force=True,
                )
                for failure in made.failures + made.problems:
                    report.failures.append(failure)
                    self.log(f"feedback for {assignment}: {failure}")
            for student, history, entry in mine:
                try:
                    self._pages(student, assignment, history, entry, level)
                    folder = self.course.feedback / student / assignment
                    if entry.source == "exchange" and self.exchange is not None:
                        kept = self.folder / entry.kept
                        self._release(student, assignment, folder, kept, report)
                    elif entry.source == "ngshare" and self.ngshare is not None:
                        self.ngshare.release(entry.key, folder)
                        report.released.append(f"{student}/{assignment}")
                        self.log(f"feedback released to {student} for {assignment} in ngshare")
                except Exception as exc:  # that student's pages only
                    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                    report.failures.append(f"{student}/{assignment}: feedback failed: {why}")
                    self.log(f"feedback for {student}/{assignment} failed: {why}")

    def _pages(
        self, student: str, assignment: str, history: History, entry: Entry, level: str
    ) -> None:
        """The pages in feedback/<student>/<assignment>/, each ending with the history."""
        folder = self.course.feedback / student / assignment
        points = level in (USUAL, "all")
        section = claim_html(entry) + early.history_section(history.entries, points=points)
        if level == USUAL:
            for page in sorted(folder.glob("*.html")):
                text = page.read_text(encoding="utf-8", errors="replace")
                _write(page, early.with_history(text, section))
            return
        folder.mkdir(parents=True, exist_ok=True)
        names = {p.stem for p in (self.course.source / assignment).glob("*.ipynb")}
        for page in folder.glob("*.html"):
            if page.stem not in names:
                page.unlink()
        graded = self.course.autograded / student / assignment
        for name in sorted(names):
            notebook = graded / f"{name}.ipynb"
            text = early.early_page(
                notebook if notebook.is_file() else None, level, student, assignment, entry
            )
            _write(folder / f"{name}.html", early.with_history(text, section))

    def level(self, assignment: str, student: str | None = None) -> str:
        """What the student's pages show: "all" once their due date (with their
        extension, ``c.Schedule.extensions``) has passed, else the early level."""
        if self.past_due(assignment, student):
            return "all"
        return self.settings.level(assignment, self.assignments)

    def _page_level(self, assignment: str, student: str) -> str:
        """The usual page (``USUAL``) past the due date, else the early level: an early
        page, with points at "all", never carries anything of the kernel (early.py)."""
        if self.past_due(assignment, student):
            return USUAL
        return self.settings.level(assignment, self.assignments)

    def past_due(self, assignment: str, student: str | None = None) -> bool:
        """Whether the student's due date for ``assignment`` (with their extension) has
        passed."""
        due = self.due.get(assignment)
        extended = self.schedule._extension(assignment, student)
        if isinstance(extended, timedelta):
            due = None if due is None else due + extended
        elif extended is not None:
            due = extended
        return due is not None and datetime.now(due.tzinfo) > due  # naive, or with an offset

    def _release(
        self, student: str, assignment: str, folder: Path, kept: Path, report: CycleReport
    ) -> None:
        """Put the pages where the student's ``nbgrader fetch_feedback`` finds them, with
        nbgrader's own ``release_feedback`` (it names them by the submission's secret)."""
        import shutil

        for name in (inbound.TIMESTAMP, inbound.SECRET):
            shutil.copyfile(kept / name, folder / name)
        result = self._api().release_feedback(assignment, student)
        if result.get("success"):
            report.released.append(f"{student}/{assignment}")
            self.log(f"feedback released to {student} for {assignment}")
        else:
            text = (result.get("error") or result.get("log") or "").strip().splitlines()
            why = text[-1] if text else "unknown error"
            report.failures.append(f"{student}/{assignment}: release_feedback failed: {why}")
            self.log(f"release_feedback failed for {student}/{assignment}: {why}")

    def _api(self):
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config import Config

        config = Config(self.course.config)
        config.Exchange.root = str(self.exchange)
        config.CourseDirectory.db_url = self.course.db_url
        return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def _write(path: Path, text: str) -> None:
    """Write a page whole or not at all (a student may fetch it at any moment)."""
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class _Prefixed:
    """A stream for ``grade``'s own lines, into the watcher's log."""

    def __init__(self, watcher: Watcher):
        self.watcher, self.buffer = watcher, ""

    def write(self, text: str) -> int:
        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            if line.strip():
                self.watcher.log(f"  {line}")
        return len(text)

    def flush(self) -> None:
        pass


def _staged_digest(kept: Path, when: datetime | None) -> str:
    """The digest ``submitted/`` has when ``kept`` is staged there (without its secret)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        inbound.stage(kept, Path(tmp) / "s", Path(tmp) / "scratch", when)
        return folder_digest(Path(tmp) / "s")


def watch(
    root: Path | str | None = None,
    *,
    db_url: str | None = None,
    jobs: int | None = None,
    limits: oslimits.Limits | None = None,
    once: bool = False,
    stream=None,
) -> int:
    """Run the watcher until SIGTERM or Ctrl-C (``once``: until nothing is left to do)."""
    watcher = Watcher(root, db_url=db_url, jobs=jobs, limits=limits, stream=stream)
    where = [str(p) for p in (watcher.inbound, watcher.inbox) if p is not None]
    where += [watcher.settings.ngshare_url] if watcher.ngshare is not None else []
    watcher.log(
        f"watching {' and '.join(where)} every {watcher.settings.interval:g} s "
        f"(policy: {watcher.settings.policy}; course {watcher.course.root})"
    )
    stop: list[bool] = []
    busy: list[bool] = []

    def on_signal(*_) -> None:
        # Between cycles: stop after the pause. During one: stop now (what was not
        # recorded stays received, and the next start grades it).
        stop.append(True)
        if busy:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    failed = interrupted = False
    try:
        while not stop:
            try:
                busy.append(True)
                report = watcher.cycle()
                failed = bool(report.failures)
            except KeyboardInterrupt:
                interrupted = True
                watcher.log("stopped in the middle of a cycle: the next start finishes it")
                break
            except Exception:  # a cycle never ends the service: log it, try again
                failed = True
                watcher.log("the cycle failed (traceback below); trying again")
                traceback.print_exc(file=watcher.stream)
            finally:
                busy.clear()
            if once and not watcher.pending:
                break
            if once and failed:
                break
            deadline = time.monotonic() + watcher.settings.interval
            while not stop and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError):
                signal.signal(sig, handler)
    watcher.log("stopped")
    if interrupted:
        return ExitCode.INTERRUPTED
    if stop and not once:
        return ExitCode.OK
    return ExitCode.FAILED if failed else ExitCode.OK
