"""Grading one submission on a Dask worker: ``grade_job(job) -> Result``, the task that
``grade`` (cluster.py) submits.

The task finds its assignment's grading material on the worker (plugins.py; it refuses
to run without exactly that material), writes the submitted files it carries into a
scratch folder, and builds there a private copy of the course: the notebooks made
gradable by ``submission.make_gradable`` and a copy of the assignment's template gradebook. It
runs nbgrader's own ``Autograde`` converter once per notebook with ``GuardedExecute``
(execute.py) in place of nbgrader's ``Execute``, and returns a ``Result`` that carries the
autograded files as bytes. Only the grader's main process writes the gradebook.

Per task:

- a notebook whose kernel died or hung in a cell is run again with that cell skipped, up
  to ``Limits.attempts`` runs, so what can be graded is graded;
- the job's limits are written into nbgrader's configuration as ``c.Limits``, which
  GuardedExecute and its kernel managers read: kernels start under them
  (``sandbox.LimitedKernelManager``: memory, file size, processes; see limits.py), never
  the worker itself, and under bubblewrap when the machine allows it
  (``sandbox.SandboxedKernelManager``);
- after every notebook, whatever the kernel left behind is killed (the worker is a child
  subreaper, so even a double-forked process is found), but nothing the Dask worker
  started itself;
- the cell being run is reported as ``Progress`` (a Dask event), and a run that goes far
  past its limits is stopped by killing its kernel;
- one task at a time per worker process (a lock): give grading workers one thread each.

Which preprocessors Autograde runs is nbgrader_config.py's ``Autograde.
autograde_preprocessors`` (GuardedExecute and SaveVerdicts among them), as for
``nbgrader autograde``.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # see grade/run.py: saves seconds of start-up

from ..kernel import limits as oslimits  # noqa: E402
from ..kernel import warm  # noqa: E402
from ..messages import (  # noqa: E402
    Event,
    File,
    Job,
    NotebookResult,
    Progress,
    Result,
    read_files,
    write_files,
)
from ..preprocessors.execute import RUNS  # noqa: E402
from .plugins import locate  # noqa: E402

STUDENT = "student"  # the student id inside a private course (the real one may be anything)
ONE_AT_A_TIME = threading.Lock()  # RUNS and the process clean-up are per process


class Worker:
    """What a worker process keeps between tasks: the cells each assignment expects, read
    once per grading material (nbgrader's settings are, in course.py)."""

    def __init__(self):
        self._expected: dict[tuple[Path, str], list] = {}

    def expected(self, material: Path, assignment: str, course_id: str):
        from .material import template_path
        from .submission import expected_from_gradebook, order_from_notebook

        key = (material, assignment)
        if key not in self._expected:
            db = material / template_path(assignment)
            exp = expected_from_gradebook(f"sqlite:///{db}", assignment, course_id)
            order_from_notebook(exp, material / "source" / assignment)
            self._expected[key] = exp
        return self._expected[key]

    def config(
        self,
        job: Job,
        material: Path,
        scratch: Path,
        notebook: str,
        skip: dict[str, list[int]],
        token: str,
        announce=None,
    ):
        from traitlets.config import Config

        from ..course import folder_config

        private = scratch / "course"
        cfg = folder_config(material)
        extra = Config()
        extra.CourseDirectory.root = str(private)
        extra.CourseDirectory.source_directory = str(material / "source")
        extra.CourseDirectory.db_url = f"sqlite:///{private / 'gradebook.db'}"
        extra.CourseDirectory.course_id = job.course_id
        extra.CourseDirectory.assignment_id = job.assignment
        extra.CourseDirectory.student_id = STUDENT
        extra.CourseDirectory.notebook_id = notebook
        extra.merge(job.limits.as_config())  # c.Limits: the job's, over the course's
        extra.GuardedExecute.skip_cells = skip
        extra.GuardedExecute.progress_file = str(scratch / "progress")
        extra.GuardedExecute.shutdown_kernel = "immediate"
        extra.GuardedExecute.iopub_timeout = 10
        extra.GuardedExecute.seed = job.seed
        extra.GuardedExecute.student = job.student  # a quiz grades this id's variant
        extra.GuardedExecute.warm_kernels = True  # the next notebook's kernel starts early
        extra.LimitedKernelManager.token = token
        extra.LimitedKernelManager.kernel_log = str(scratch / "kernel.log")
        if announce is not None:  # before each cell is sent to the kernel
            extra.GuardedExecute.on_cell_execute = lambda cell, cell_index: announce(
                notebook, cell_index
            )
        cfg.merge(extra)
        return cfg

    def run(
        self,
        job: Job,
        material: Path,
        scratch: Path,
        skip: dict[str, list[int]],
        token: str,
        cleanup,
        announce=None,
    ) -> Result:
        """One run of every notebook of the submission in ``scratch/submitted``
        (``announce(notebook, cell)`` before each cell, if given)."""
        import nbformat
        from nbgrader.converters import Autograde
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.utils import capture_log

        from .material import template_path
        from .submission import make_gradable

        private = scratch / "course"
        if private.exists():
            shutil.rmtree(private)
        target = private / "submitted" / STUDENT / job.assignment
        target.mkdir(parents=True)
        submitted = scratch / "submitted"
        expected = self.expected(material, job.assignment, job.course_id)
        prepared, folder_notes = make_gradable(submitted, expected, job.owners, set(job.released))
        stamp = submitted / "timestamp.txt"
        if stamp.is_file() and not stamp.is_symlink():
            shutil.copy(stamp, target / "timestamp.txt")
        shutil.copy(material / template_path(job.assignment), private / "gradebook.db")
        notebooks = {}
        for prep in prepared:
            notebooks[prep.name] = NotebookResult(notes=prep.notes, used_file=prep.used_file)
            if prep.notebook is not None:
                nbformat.write(prep.notebook, target / f"{prep.name}.ipynb")
        for prep in prepared:
            if prep.notebook is None:
                continue
            entry = notebooks[prep.name]
            del RUNS[:]
            cfg = self.config(job, material, scratch, prep.name, skip, token, announce)
            app = Autograde(coursedir=CourseDirectory(config=cfg), config=cfg)
            app.force = True
            app.create_student = True
            outcome = capture_log(app)
            cleanup()
            out = private / "autograded" / STUDENT / job.assignment / f"{prep.name}.ipynb"
            entry.graded = bool(outcome.get("success")) and out.exists()
            entry.events = [e for run in RUNS for e in run["events"]]
            entry.isolation = next((run["isolation"] for run in RUNS), None)
            if not entry.graded:
                entry.error = _last_error(outcome)
                entry.log = ((outcome.get("log") or "") + (outcome.get("error") or ""))[-3000:]
        autograded = private / "autograded" / STUDENT / job.assignment
        return Result(
            notebooks=notebooks, folder_notes=folder_notes, autograded=autograded_files(autograded)
        )


# Files a notebook wrote next to itself travel back too, up to this many bytes in all
# (notebooks always do).
MAX_OTHER_FILES = 16 * 1024**2


def autograded_files(folder: Path) -> dict[str, File]:
    if not folder.is_dir():
        return {}
    paths = [
        p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.relative_to(folder).parts
    ]
    budget = MAX_OTHER_FILES
    kept = []
    for path in paths:
        size = path.stat().st_size
        if path.suffix == ".ipynb" and path.parent == folder:
            kept.append(path)
        elif size <= budget:
            budget -= size
            kept.append(path)
    return read_files(folder, kept)


def _last_error(outcome: dict) -> str:
    """The exception line of nbgrader's logged traceback (else its last error line)."""
    text = (outcome.get("log") or "") + "\n" + (outcome.get("error") or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b:?", ln)]
    errors = [ln for ln in lines if ln.startswith("[ERROR]") and "Please see" not in ln]
    return ((raised or errors or lines or ["nbgrader failed"])[-1])[:300]


# ---- the Dask task ---------------------------------------------------------------------------

_worker: Worker | None = None


def warm_up() -> None:
    """Import what grading needs (seconds), before the first task asks for it."""
    import nbgrader.converters
    import nbgrader.preprocessors  # noqa: F401


def grade_job(job: Job) -> Result:
    """The Dask task: grade one submission (see the module docstring)."""
    from distributed import get_worker

    global _worker
    dask_worker = get_worker()
    material = locate(dask_worker, job.material)
    with ONE_AT_A_TIME:
        _worker = _worker or Worker()
        scratch = Path(tempfile.mkdtemp(prefix="autograder-job-", dir=dask_worker.local_directory))
        spare = oslimits.own_processes()

        def cleanup() -> None:  # all but the spare kernel, which has run nothing yet
            oslimits.kill_task_processes(spare, keep=warm.exempt())

        monitor = Monitor(job, dask_worker, scratch / "progress", cleanup)
        try:
            write_files(job.files, scratch / "submitted")
            return _runs(_worker, job, material, scratch, monitor, cleanup)
        finally:
            monitor.stop()
            cleanup()
            shutil.rmtree(scratch, ignore_errors=True)


def _runs(
    worker: Worker, job: Job, material: Path, scratch: Path, monitor: Monitor, cleanup
) -> Result:
    """Run the notebooks until no cell crashes or hangs the kernel, skipping each cell that
    did in the next run, up to ``Limits.attempts`` runs."""
    started = time.monotonic()
    skip = {name: list(cells) for name, cells in job.skip.items()}
    history = list(job.history)
    attempt = job.attempt
    n = max(1, sum(1 for name in job.released if name.endswith(".ipynb")))
    token = secrets.token_hex(8)
    while True:
        monitor.begin(attempt, job.limits.run_seconds(n))
        try:
            result = worker.run(
                job,
                material,
                scratch,
                skip,
                token,
                cleanup,
                monitor.announce if job.careful else None,
            )
        except Exception:
            result = Result(crash=traceback.format_exc()[-3000:])
            break
        stops = result.stops()
        if monitor.overdue:  # the kernel was killed at the deadline: the cell hung
            where = monitor.where
            stops = [Event("stuck", e.cell, e.grade_id, e.notebook) for e in stops] or (
                [Event("stuck", where.cell, None, where.notebook)] if where else []
            )
        if not stops or attempt >= job.limits.attempts:
            break
        for event in stops:
            history.append(event)
            skip.setdefault(event.notebook, []).append(event.cell)
        attempt += 1
    result.history = history
    result.runs = attempt
    result.seconds = round(time.monotonic() - started, 2)
    return result


class Monitor:
    """Reports the cell a task is on (``Progress`` events on the job's topic) and stops a
    run that goes past its deadline by killing its kernel (``overdue`` is then set)."""

    def __init__(self, job: Job, dask_worker, progress_file: Path, kill):
        self.job = job
        self.dask_worker = dask_worker
        self.file = progress_file
        self.kill = kill
        self.attempt = job.attempt
        self.deadline = 0.0
        self.overdue = False
        self.where: Progress | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="autograder-monitor", daemon=True)
        self._thread.start()

    def begin(self, attempt: int, seconds: float) -> None:
        with contextlib.suppress(OSError):
            self.file.unlink()
        self.attempt = attempt
        self.overdue = False
        self.where = None
        self.deadline = time.monotonic() + seconds
        self._publish(Progress(self.job.id, attempt, self.dask_worker.address))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        last = None
        while not self._stop.wait(0.25):
            try:
                text = self.file.read_text()
            except OSError:
                text = None
            if text and text != last:
                last = text
                with contextlib.suppress(ValueError):
                    name, index, total = text.strip().split("\t")
                    self.where = Progress(
                        self.job.id,
                        self.attempt,
                        self.dask_worker.address,
                        name,
                        int(index),
                        int(total),
                    )
                    if not self.job.careful:  # else announce() tells, in order
                        self._publish(self.where)
            if self.deadline and time.monotonic() > self.deadline and not self.overdue:
                self.overdue = True
                self.kill()

    def announce(self, notebook: str, cell: int) -> None:
        """Tell the scheduler the cell about to run, and wait until it has it: if that cell
        kills the worker, the grader still learns which one it was (``Job.careful``)."""
        from distributed import get_client

        where = Progress(self.job.id, self.attempt, self.dask_worker.address, notebook, cell)
        with contextlib.suppress(Exception):
            get_client().log_event(self.job.topic, where.to_wire())

    def _publish(self, progress: Progress) -> None:
        if self.job.topic:
            with contextlib.suppress(Exception):
                self.dask_worker.log_event(self.job.topic, progress.to_wire())
