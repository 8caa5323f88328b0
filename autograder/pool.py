"""The pool of grading workers that ``grade`` hands submissions to.

Up to ``jobs`` worker processes (``python -m autograder.worker``) each grade one submission
at a time: the pool sends a worker a ``Job`` on its stdin and reads one line back when the
job's ``result.json`` is written. It watches every worker:

- a worker whose kernel died or hung in a cell is fine: the notebook stopped there, and the
  submission is graded again with that cell skipped, up to ``Limits.attempts`` runs, so
  what can be graded is graded (``retry``);
- a worker that exits or takes longer than its deadline is killed with everything it
  started, and replaced; its submission is run again without the cell it was on;
- a worker that died outside any notebook, or whose kernel could not start, is the
  grader's fault, not the student's: the submission is not recorded (graded next run).

The pool knows nothing of gradebooks: ``Grader`` (in grading.py) makes each job and takes
each result.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import limits as oslimits
from .course import ROOT
from .discovery import Submission
from .display import Display
from .errors import GraderError
from .messages import Event, Job, Result

KERNEL_START_ERRORS = ("Kernel didn't respond", "Kernel died before replying to kernel_info",
                       "No such kernel named")
WORKER_START_SECONDS = 300


@dataclass
class Task:
    """A submission in the pool, over all the runs it takes."""

    sub: Submission
    digest: str  # of the submitted folder
    grader: str  # digest of the grading material
    seed: int = field(default_factory=lambda: secrets.randbits(48))  # hidden tests' inputs
    attempt: int = 1
    skip: dict[str, list[int]] = field(default_factory=dict)  # notebook -> cells to skip
    history: list[Event] = field(default_factory=list)  # why cells were skipped
    last: Result | None = None  # the previous run's result (used if no later run finishes)
    started: float = 0.0
    first_started: float = 0.0
    jobdir: Path | None = None

    @property
    def label(self) -> str:
        return f"{self.sub.student}/{self.sub.assignment}"

    def progress(self) -> tuple[str, int, int] | None:
        """(notebook, cell index, cells) the worker last noted, if any."""
        with contextlib.suppress(OSError, ValueError, TypeError):
            nb, index, total = (self.jobdir / "progress").read_text().split("\t")
            return nb, int(index), int(total)
        return None


# The grading side: makes the job for a task, and takes what became of it.
JobFactory = Callable[[Task, Path], Job]
Finish = Callable[[Task, Result, "Path | None", "str | None"], None]


class WorkerProcess:
    def __init__(self, limits: oslimits.Limits, log: Path, root: Path):
        self.token = os.urandom(8).hex()
        env = dict(os.environ, **{oslimits.MARKER: self.token,
                                  "AUTOGRADER_WORKER_LOG": str(log),
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

    def send(self, job: Job) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((job.to_json() + "\n").encode())
        self.proc.stdin.flush()

    def lines(self) -> list[dict]:
        """The worker's protocol lines read so far ({"eof": True} once it has exited)."""
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


class Pool:
    def __init__(self, limits: oslimits.Limits, jobs: int, work: Path, display: Display,
                 make_job: JobFactory, finish: Finish,
                 prepare: Callable[[str], None] = lambda assignment: None):
        self.limits = limits
        self.jobs = max(1, jobs)
        self.work = work
        self.display = display
        self.make_job = make_job
        self.finish = finish
        self.prepare = prepare  # called for an assignment before its first job (may be slow)
        self.prepared: set[str] = set()
        self.selector = selectors.DefaultSelector()
        self.workers: list[WorkerProcess] = []
        self.counter = 0
        self.startup_failures = 0
        self.lost_outside = 0  # workers lost before running any notebook
        self.completed = 0  # results that came back from a worker
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
        """Start workers for ``n`` submissions (they take seconds to import nbgrader)."""
        while len(self.workers) < min(n, self.jobs):
            self.spawn()

    def close(self) -> None:
        for w in list(self.workers):
            self.retire(w)

    def _prepare(self, assignment: str) -> None:
        if assignment not in self.prepared:
            self.prepare(assignment)
            self.prepared.add(assignment)

    # -- the loop --
    def run(self, tasks: list[Task]) -> None:
        queue = deque(sorted(tasks, key=lambda t: (t.sub.assignment, t.sub.student)))
        self.start(len(queue))
        if queue:
            self._prepare(queue[0].sub.assignment)
        while queue or any(w.task for w in self.workers):
            for w in self.workers:
                if w.ready and w.task is None and queue:
                    self.assign(w, queue.popleft())
            if queue and queue[0].sub.assignment not in self.prepared:
                self._prepare(queue[0].sub.assignment)  # while the workers are busy
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
                elif not w.ready and now - w.spawned > WORKER_START_SECONDS:
                    self.lost(w, queue, "a grading worker did not start")
            self.display.draw(self.busy())
            if self.startup_failures >= 3:
                raise GraderError("grading workers keep failing to start; see the logs in "
                                  f"{self.work}")
        self.close()

    def busy(self) -> list[tuple[str, str, float]]:
        rows = []
        for w in self.workers:
            if w.task is None:
                continue
            where = w.task.progress()
            name, frac = (where[0], where[1] / max(1, where[2])) if where else ("", 0.0)
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
        job = self.make_job(task, task.jobdir)
        job.id = self.counter
        n = max(1, sum(1 for name in job.released if name.endswith(".ipynb")))
        w.deadline = task.started + 120 + n * (self.limits.wall + 60)
        w.task = task
        with contextlib.suppress(OSError):  # a dead worker shows up as end-of-file next
            w.send(job)

    def retry(self, task: Task, result: Result | None, stops: list[Event],
              queue: deque) -> bool:
        """Run ``task`` again with the cells in ``stops`` skipped, if it has runs left."""
        if not stops or task.attempt >= self.limits.attempts:
            return False
        for event in stops:
            task.history.append(event)
            task.skip.setdefault(event.notebook, []).append(event.cell)
        task.attempt += 1
        if result is not None:
            task.last = result
        queue.appendleft(task)
        return True

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
        where = task.progress()
        stops = [Event("stuck", where[1], None, where[0])] if where else []
        if self.retry(task, None, stops, queue):
            return
        if where is None and task.last is None:
            # The worker died outside any notebook: the grader's fault, not the student's.
            self.lost_outside += 1
            self.finish(task, Result.failed(why, again=True), None,
                        f"{task.label}: {why} before running a notebook (worker log: "
                        f"{self.work})")
            if self.lost_outside >= 3 and not self.completed:
                raise GraderError(f"grading workers keep dying ({why}); is --memory too "
                                  "small?")
            return
        if task.last is not None:
            self.finish(task, task.last, task.jobdir, None)
        else:
            self.finish(task, Result.failed(why, again=False), None, None)

    def finished(self, task: Task, queue: deque) -> None:
        assert task.jobdir is not None
        try:
            result = Result.from_json((task.jobdir / "result.json").read_text())
        except (OSError, ValueError, TypeError):
            result = Result(crash="the worker gave no result")
        if result.crash is not None:
            self.finish(task, Result.failed("the grader failed on this submission", again=True),
                        None, f"{task.label}: the grader failed:\n{result.crash}")
            return
        errors = [(nb.error or "") + (nb.log or "") for nb in result.notebooks.values()]
        if any(marker in text for text in errors for marker in KERNEL_START_ERRORS):
            # Nothing a student hands in stops a kernel from starting: the machine did.
            self.finish(task, Result.failed("the grading kernel did not start", again=True),
                        None, f"{task.label}: the grading kernel did not start"
                        + self._kernel_detail(errors))
            return
        self.completed += 1
        if self.retry(task, result, result.stops(), queue):
            return
        self.finish(task, result, task.jobdir, None)

    def _kernel_detail(self, errors: list[str]) -> str:
        """The first kernel failure's log, once per run (is --memory too small?)."""
        self.kernel_failures += 1
        if self.kernel_failures > 1:
            return ""
        return f" (is --memory too small?):\n{errors[0][-1500:]}"
