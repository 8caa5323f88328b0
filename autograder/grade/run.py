"""``python -m autograder grade``: autograde every pending submission into nbgrader's gradebook.

How it works (docs/grading.md has the instructor's view):

1. ``discovery`` lists what was submitted. A submission is pending unless its record
   (``records``) says it was graded from exactly these files with exactly this version
   of the assignment and grader, and the gradebook still holds those scores.
2. For each assignment, ``gradebook.sync_assignment`` records the cells in a private
   *template* gradebook (and in the course gradebook when that one is missing or out of
   date) the first time a job needs it.
3. The assignment's grading material (``material``: the grader, the source folder, the
   template gradebook) goes to every Dask worker once, and each pending submission's
   files go, as bytes, in a ``Job`` to a task (``dispatch``) on the ``cluster``: a local
   cluster of process workers, the machine's cores by default, or an existing cluster
   with ``--scheduler``. The task (``worker``) grades against its own copy of the template
   gradebook, under the ``limits``; a notebook whose kernel died or hung is run again
   with that cell skipped, so what can be graded is graded. It returns the autograded
   notebooks, events and notes as data.
4. This process alone writes the course gradebook (``gradebook.merge``: nbgrader's own
   ``SaveAutoGrades`` and ``AssignLatePenalties``), then swaps in the autograded folder
   and its record (``records.install``) with the ``notes``, as each result arrives.
   Killed at any point, a re-run redoes what was not finished and nothing else;
   re-running when nothing changed changes nothing.

Every submission ends with a score (zero for what could not run) and a one-line note.
Exit codes (``errors.ExitCode``): 0 all graded, 1 graded but some submissions (or files)
had problems, 2 the grader itself failed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# jsonschema (under nbformat) imports rfc3987_syntax when present, which builds a parser
# for seconds at every start. The IRI format check it provides is never used by nbformat.
sys.modules.setdefault("rfc3987_syntax", None)

from ..course import Course, open_course  # noqa: E402
from ..errors import GraderError  # noqa: E402
from ..intake.discovery import Submission, discover, folder_digest  # noqa: E402
from ..kernel import bounds  # noqa: E402
from ..kernel import limits as oslimits  # noqa: E402
from ..kernel.sandbox import check_for_grading  # noqa: E402
from ..messages import Job, Result, write_files  # noqa: E402
from ..record import GradingRecord  # noqa: E402
from ..schedule import Schedule  # noqa: E402
from ..worker.material import Material, material_files, pack, shared_files  # noqa: E402
from ..worker.submission import submitted_files  # noqa: E402
from .cluster import Cluster, run_token  # noqa: E402
from .dispatch import Dispatcher, Task  # noqa: E402
from .display import Display  # noqa: E402
from .gradebook import (  # noqa: E402
    auto_scores,
    cache_alembic_version,
    merge,
    sync_assignment,
    sync_schedule,
)
from .notes import compose_notes, has_problem, kernel_flags, note_line  # noqa: E402
from .records import clean_leftovers, grader_digest, install  # noqa: E402
from .report import GradeReport, Outcome  # noqa: E402
from .review.flags import flag_submission, review_note  # noqa: E402


class ClassGrading:
    """One run's grading side: it makes each assignment's material and each job, and takes
    each result into the gradebook and the autograded folder."""

    def __init__(
        self,
        course: Course,
        limits: oslimits.Limits,
        work: Path,
        display: Display,
        schedule: Schedule | None = None,
    ):
        self.course = course
        self.schedule = schedule or Schedule.for_course(course.config)
        self.limits = limits
        self.work = work
        self.display = display
        self.materials: dict[str, Material] = {}
        self.outcomes: list[Outcome] = []
        self.failures: list[str] = []
        self.finished: set[tuple[str, str]] = set()
        self.owners = _owners(course)
        self.released = {
            a: sorted(p.name for p in (course.source / a).iterdir()) for a in course.assignments()
        }
        self.shared = shared_files()  # one version of the grader for the whole run

    def notebooks(self, assignment: str) -> int:
        return sum(1 for n in self.released.get(assignment, []) if n.endswith(".ipynb"))

    def material_for(self, assignment: str) -> Material:
        """The assignment's grading material, with its template gradebook (made, and the
        course gradebook updated, the first time it is needed, so that it overlaps with
        grading other assignments)."""
        if assignment not in self.materials:
            template = sync_assignment(self.course, assignment, self.work)
            files = material_files(self.course, assignment, template, self.shared)
            self.materials[assignment] = pack(assignment, files)
        return self.materials[assignment]

    def job(self, task: Task, job_id: int) -> Job:
        sub = task.sub
        return Job(
            id=job_id,
            student=sub.student,
            assignment=sub.assignment,
            course_id=self.course.course_id,
            material=self.material_for(sub.assignment).digest,
            files=submitted_files(sub.folder),
            limits=self.limits,
            skip={k: list(v) for k, v in task.skip.items()},
            history=list(task.history),
            attempt=task.attempt,
            careful=task.careful,
            owners=self.owners,
            released=self.released.get(sub.assignment, []),
            seed=task.seed,
        )

    def finish(self, task: Task, result: Result, failure: str | None) -> None:
        """Merge ``result`` into the gradebook and install it (unless it is not to be
        recorded); ``failure`` is a failure of the grader to report. Once per submission."""
        sub = task.sub
        if (sub.student, sub.assignment) in self.finished:
            return
        self.finished.add((sub.student, sub.assignment))
        if failure:
            self.failures.append(failure)
        folder = None
        if result.autograded:
            folder = self.work / "results" / f"{task.job:05d}"
            write_files(result.autograded, folder)
        try:
            self._finish(task, result, folder)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def _finish(self, task: Task, result: Result, autograded: Path | None) -> None:
        sub = task.sub
        graded = result.graded
        notes = compose_notes(result, result.history, self.limits, autograded)
        try:
            totals = merge(
                self.course,
                sub.student,
                sub.assignment,
                sub.folder,
                autograded,
                graded,
                self.schedule,
            )
        except Exception as exc:  # the gradebook could not be written: a grader failure
            self.failures.append(
                f"{task.label}: could not write the gradebook: {type(exc).__name__}: {exc}"
            )
            self._outcome(
                Outcome(
                    sub.student,
                    sub.assignment,
                    problem=True,
                    status="failed",
                    note="not recorded: the gradebook could not be written",
                )
            )
            return
        line = note_line(notes, self.notebooks(sub.assignment), totals.late_seconds)
        problem = has_problem(notes)
        # Flags for review: in the record and the note line, never a problem or a score.
        review = flag_submission(
            sub.folder,
            self.course.source / sub.assignment,
            [e.used_file for e in result.notebooks.values() if e.used_file] or None,
        )
        review = list(dict.fromkeys(review + kernel_flags(result)))
        line = "; ".join(part for part in (line, review_note(review)) if part)
        seconds = round(result.seconds, 1)
        if result.record:
            install(
                self.course,
                sub.student,
                sub.assignment,
                autograded if graded else None,
                notes,
                GradingRecord(
                    student=sub.student,
                    assignment=sub.assignment,
                    submission_digest=task.digest,
                    grader_digest=task.grader,
                    score=totals.score,
                    max_score=totals.max_score,
                    auto_score=totals.auto_score,
                    problem=problem,
                    note=line,
                    notes={k: [t for t, _ in v] for k, v in notes.items() if v},
                    cells=totals.cells,
                    runs=result.runs,
                    seconds=seconds,
                    late_seconds=totals.late_seconds,
                    seed=task.seed,
                    isolation=result.isolation,
                    review=review,
                    graded_at=datetime.now(UTC).isoformat(timespec="seconds"),
                ),
            )
        self._outcome(
            Outcome(
                sub.student,
                sub.assignment,
                totals.score,
                totals.max_score,
                problem or not result.record,
                line,
                seconds,
                "graded" if result.record else "failed",
                totals.late_seconds,
            )
        )

    def _outcome(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.display.finished(outcome)


def _owners(course: Course) -> dict[str, str]:
    """{grade id: assignment} over the course (to name a notebook handed in by mistake)."""
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


@contextlib.contextmanager
def course_lock(course: Course):
    import fcntl

    course.autograded.mkdir(parents=True, exist_ok=True)
    path = course.autograded / ".autograder.lock"
    with open(path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise GraderError(
                f"another `grade` run is using {course.root} (lock file {path})"
            ) from exc
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
    scheduler=None,
    schedule: Schedule | None = None,
) -> GradeReport:
    """Grade pending submissions (all selected ones with ``force``); see the module doc.
    ``scheduler``: the Dask cluster to grade on (an address, a scheduler file,
    ``dask-gateway:NAME``, a ``Client`` or a cluster object; see ``cluster.Cluster``),
    else a local cluster of ``jobs`` workers. ``schedule``: the due dates and extensions
    written into the gradebook (default: the course's ``c.Schedule``)."""
    started = time.monotonic()
    stream = stream or sys.stdout
    course = open_course(root, db_url)
    limits = limits or oslimits.Limits.for_course(course.config)
    limits = limits.replace(sandbox=check_for_grading(limits.sandbox, stream))
    jobs = jobs or len(os.sched_getaffinity(0))
    limits, said = bounds.for_grading(limits, jobs if scheduler is None else None)
    print(said, file=stream, flush=True)
    unknown = [a for a in assignments or [] if a not in course.assignments()]
    if unknown:
        raise GraderError(
            f"no assignment {', '.join(unknown)} in {course.source} "
            f"(there are: {', '.join(course.assignments())})"
        )
    schedule = (schedule or Schedule.for_course(course.config)).check(course.assignments())
    with course_lock(course):
        clean_leftovers(course)
        subs, problems = discover(course, assignments, students)
        if not subs:
            return GradeReport([], problems, [], 0, 0, time.monotonic() - started)
        _remove_stale_workdirs()
        work = Path(tempfile.mkdtemp(prefix=f"autograder-{os.getpid()}-"))
        try:
            return _grade(
                GradeRun(
                    course=course,
                    subs=subs,
                    problems=problems,
                    limits=limits,
                    jobs=jobs,
                    force=force,
                    work=work,
                    stream=stream,
                    progress=progress,
                    started=started,
                    subreaper=subreaper,
                    scheduler=scheduler,
                    schedule=schedule,
                )
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True)
class GradeRun:
    """One ``grade`` run: what it grades and how (``grade``'s arguments, settled)."""

    course: Course
    subs: list[Submission]  # the submissions selected, pending or not
    problems: list[str]  # what discovery would not grade, for the report
    limits: oslimits.Limits
    jobs: int  # workers of a local cluster, at most
    force: bool  # grade again what the records say is current
    work: Path  # the run's scratch folder
    stream: Any  # where its lines go
    progress: bool  # show the progress display
    started: float  # time.monotonic() when the run started
    subreaper: bool  # adopt and kill the orphans of killed workers
    scheduler: Any  # the Dask cluster to grade on (cluster.Cluster), None: a local one
    schedule: Schedule


def _grade(run: GradeRun) -> GradeReport:
    course, subs, limits, jobs = run.course, run.subs, run.limits, run.jobs
    cache_alembic_version()
    used = sorted({s.assignment for s in subs})
    sync_schedule(course, run.schedule, used)  # due dates and extensions, graded again or not
    graders = {a: grader_digest(a, course.source) for a in used}
    candidates = []  # (submission, digest, its record if that is current)
    for sub in subs:
        digest = folder_digest(sub.folder)
        rec = course.read_record(sub.student, sub.assignment)
        current = rec is not None and rec.current(digest, graders[sub.assignment]) and not run.force
        candidates.append((sub, digest, rec if current else None))
    display = Display(0, run.stream, enabled=run.progress)
    grading = ClassGrading(course, limits, run.work, display, run.schedule)
    token = run_token()
    pending = sum(1 for _, _, rec in candidates if rec is None)
    cluster = Cluster(run.scheduler, min(jobs, max(1, pending)), run.work, token)
    dispatcher = Dispatcher(
        cluster,
        limits,
        display,
        grading.job,
        grading.finish,
        grading.material_for,
        f"autograder-progress-{token}",
    )
    if run.subreaper:  # orphans of a killed worker become ours, to be found and killed
        oslimits.become_subreaper()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        # Workers take seconds to start: start them before reading the gradebook.
        if pending:
            cluster.start()
        tasks, unchanged = [], []
        in_book = {a: auto_scores(course, a) for a in used}
        for sub, digest, rec in candidates:
            if rec is not None and in_book[sub.assignment].get(sub.student) == rec.auto_score:
                unchanged.append(
                    Outcome(
                        sub.student,
                        sub.assignment,
                        rec.score,
                        rec.max_score,
                        rec.problem,
                        rec.note,
                        rec.seconds or 0,
                        "unchanged",
                        rec.late_seconds,
                    )
                )
            else:
                tasks.append(
                    Task(sub, digest, graders[sub.assignment], grading.notebooks(sub.assignment))
                )
        if tasks:
            cluster.scale(min(jobs, len(tasks)))  # more than pending: the gradebook lost some
            display.total = len(tasks)
            print(
                f"grading {len(tasks)} submission(s) {cluster.describe()} "
                f"({limits.describe()}); "
                f"{len(unchanged)} unchanged",
                file=run.stream,
                flush=True,
            )
            dispatcher.run(tasks)
    finally:
        signal.signal(signal.SIGTERM, previous)
        dispatcher.close()
        cluster.close()
        if run.subreaper:
            oslimits.reap_orphans()
        display.close()
    changed = [a for a in used if grader_digest(a, course.source) != graders[a]]
    if changed and grading.outcomes:  # an edit, or a submission writing to the grader
        grading.failures.append(
            f"the grader or the source of {', '.join(changed)} changed while grading: check "
            "`git status`, then run `grade --force` for these assignments"
        )
    return GradeReport(
        grading.outcomes + unchanged,
        run.problems,
        grading.failures,
        len(grading.outcomes),
        len(unchanged),
        time.monotonic() - run.started,
    )


def _remove_stale_workdirs() -> None:
    """Scratch folders of grade runs that were killed (their process is gone)."""
    import psutil

    for path in Path(tempfile.gettempdir()).glob("autograder-*-*"):
        pid = path.name.split("-")[1]
        if pid.isdigit() and not psutil.pid_exists(int(pid)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
