"""Running the jobs on the cluster (``Dispatcher``) and what becomes of them.

The dispatcher registers each assignment's grading material (material.py) before its
first job, keeps a few jobs per worker thread submitted (the task is
``plugins.task_function``, which runs ``worker.grade``), shows the progress workers report
(Dask events), and hands every result to the grading side as it arrives. Faults:

- a task whose kernel died or hung in a cell runs that notebook again without the cell,
  inside the task (worker/task.py);
- a worker that dies takes no result with it: Dask runs its task again elsewhere (up to
  ``distributed.scheduler.allowed-failures`` times). A submission that keeps killing
  workers (``KilledWorker``) runs once more reporting each cell before it runs
  (``Job.careful``), then without the cell it was on, and is noted;
- a task that runs far past its limits is cancelled (its worker restarted) and noted;
- a task that failed outside any notebook (the grader's fault, not the student's) is not
  recorded: the next run grades it again.

The dispatcher knows nothing of gradebooks: ``ClassGrading`` (grade/run.py) makes each job
and takes each result. Each submission is finished exactly once, even when Dask ran its
task twice.
"""

from __future__ import annotations

import contextlib
import pickle
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import GraderError
from ..intake.discovery import Submission
from ..kernel import limits as oslimits
from ..messages import Event, Job, Progress, Result
from ..worker.plugins import task_function
from .cluster import Cluster
from .display import Display

KERNEL_START_ERRORS = (
    "Kernel didn't respond",
    "Kernel died before replying to kernel_info",
    "No such kernel named",
)
NO_WORKERS_SECONDS = 300  # a cluster without workers for this long is a failure


@dataclass
class Task:
    """A submission in the dispatcher, over all the tasks it takes."""

    sub: Submission
    digest: str  # of the submitted folder
    grader: str  # grader_digest of the assignment
    notebooks: int = 1  # in the assignment
    attempt: int = 1  # the next task's first run
    skip: dict[str, list[int]] = field(default_factory=dict)  # notebook -> cells to skip
    history: list[Event] = field(default_factory=list)  # why cells were skipped
    job: int = 0  # the current task's job id
    future: object | None = None
    progress: Progress | None = None  # what the current task reported last
    started: float = 0.0  # when the current task started running (monotonic)
    careful: bool = False  # its workers died under it: it reports each cell before it runs
    seed: int = field(default_factory=lambda: secrets.randbits(48))  # hidden tests' inputs

    @property
    def label(self) -> str:
        return f"{self.sub.student}/{self.sub.assignment}"


# The grading side: makes the job for a task (given its id), registers an assignment's
# material (returns it), and takes what became of a task.
JobFactory = Callable[[Task, int], Job]
Finish = Callable[[Task, Result, "str | None"], None]


class Dispatcher:
    def __init__(
        self,
        cluster: Cluster,
        limits: oslimits.Limits,
        display: Display,
        make_job: JobFactory,
        finish: Finish,
        material_for: Callable[[str], object],
        topic: str,
    ):
        self.cluster = cluster
        self.limits = limits
        self.display = display
        self.make_job = make_job
        self.finish = finish
        self.material_for = material_for  # -> material.Material, for an assignment's first job
        self.topic = topic
        self.client = None
        self.registered: dict[str, str] = {}  # assignment -> plugin name
        self.inflight: dict[int, Task] = {}  # job id -> task
        self.by_key: dict[str, Task] = {}  # Dask key -> task
        self.counter = 0
        self.completed = 0
        self.lost_outside = 0
        self.kernel_failures = 0
        self.window = 2
        self.checked = 0.0
        self.run_task = task_function()
        self.no_workers_since: float | None = None

    # -- the loop --
    def run(self, tasks: list[Task]) -> None:
        from distributed import as_completed

        from ..worker.material import send_by_value

        send_by_value()
        queue = deque(sorted(tasks, key=lambda t: (t.sub.assignment, t.sub.student)))
        if queue:  # the first template gradebook overlaps with the cluster starting
            self._register(queue[0].sub.assignment)
        self.client.subscribe_topic(self.topic, self._on_progress)
        done = as_completed(loop=self.client.loop)
        while queue or self.inflight:
            self._check_workers()
            while queue and len(self.inflight) < self.window:
                task = queue.popleft()
                self._register(task.sub.assignment)
                self._submit(task, done)
            for future in done.next_batch(block=False) if not done.is_empty() else []:
                task = self.by_key.pop(future.key, None)
                if task is not None and task.job in self.inflight:
                    self._done(task, future, queue)
            self._deadlines(queue)
            self.display.draw(self.busy())
            time.sleep(0.05)

    def close(self) -> None:
        client = self.client
        if client is None:
            return
        with contextlib.suppress(Exception):
            client.unsubscribe_topic(self.topic)
        for task in self.inflight.values():
            with contextlib.suppress(Exception):
                task.future.cancel()
        for name in self.registered.values():
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(name)

    def _register(self, assignment: str) -> None:
        if assignment in self.registered:
            return
        material = self.material_for(assignment)  # may take seconds: the workers are busy
        if self.client is None:
            self.client = self.cluster.client()
            self._refresh_window(force=True)
        try:
            self.client.register_plugin(material.plugin())
        except Exception as exc:
            raise GraderError(
                f"the grading material of {assignment} could not be set up "
                f"on the workers: {type(exc).__name__}: {exc}"
            ) from exc
        self.registered[assignment] = material.name

    def _submit(self, task: Task, done) -> None:
        self.counter += 1
        task.job = self.counter
        job = self.make_job(task, self.counter)
        job.topic = self.topic
        task.progress = None
        task.started = 0.0
        task.future = self.client.submit(
            self.run_task,
            pickle.dumps(job),
            key=f"grade-{self.topic}-{self.counter}",
            pure=False,
            retries=0,
        )
        self.inflight[task.job] = task
        self.by_key[task.future.key] = task
        done.add(task.future)

    def _refresh_window(self, force: bool = False) -> None:
        """Keep two jobs per worker thread (and two more) submitted: a worker never waits
        for the grader to merge a result before it has its next job."""
        now = time.monotonic()
        if not force and now - self.checked < 5:
            return
        self.checked = now
        threads = self.cluster.threads()
        self.window = max(2, 2 * threads + 2)
        if threads:
            self.no_workers_since = None
        elif self.no_workers_since is None:
            self.no_workers_since = now

    def _check_workers(self) -> None:
        self._refresh_window()
        if self.no_workers_since and time.monotonic() - self.no_workers_since > NO_WORKERS_SECONDS:
            raise GraderError(
                f"no grading workers for {NO_WORKERS_SECONDS} s: is the "
                "cluster running? (the next run grades what is left)"
            )

    # -- what workers tell --
    def _on_progress(self, event) -> None:
        """Called on the client's event loop with (time, message) for each Progress."""
        with contextlib.suppress(Exception):
            progress = Progress.from_wire(event[1])
            task = self.inflight.get(progress.job)
            if task is None:
                return
            if not progress.notebook and (
                task.progress is None or progress.attempt <= task.attempt
            ):
                task.started = time.monotonic()  # a (new) start of the task
            task.progress = progress

    def busy(self) -> list[tuple[str, str, float]]:
        rows = []
        for task in self.inflight.values():
            p = task.progress
            if p is None:
                continue
            label = f"{task.sub.student} / {task.sub.assignment}"
            if p.attempt > 1:
                label += f" (run {p.attempt})"
            rows.append((label, p.notebook, p.cell / max(1, p.cells)))
        return rows

    # -- what came back --
    def _done(self, task: Task, future, queue: deque) -> None:
        from distributed import KilledWorker

        del self.inflight[task.job]
        task.future = None
        status = future.status
        if status == "finished":
            try:
                kind, *answer = pickle.loads(future.result())
            except Exception as exc:  # the result could not be fetched
                self._grader_failure(task, f"{type(exc).__name__}: {exc}")
            else:
                if kind == "ok":
                    self._finished(task, answer[0])
                else:
                    self._grader_failure(task, f"{answer[0]}\n{answer[1]}")
        elif status == "error":
            exc = future.exception()
            if isinstance(exc, KilledWorker):
                self._killed(task, queue)
            else:
                self._grader_failure(task, f"{type(exc).__name__}: {exc}")
        else:
            self._grader_failure(task, f"its task was {status}")
        with contextlib.suppress(Exception):
            future.release()

    def _grader_failure(self, task: Task, why: str) -> None:
        self.finish(
            task,
            Result.failed("the grader failed on this submission", again=True),
            f"{task.label}: the grader failed: {why}",
        )

    def _finished(self, task: Task, result: Result) -> None:
        if result.crash is not None:
            self.finish(
                task,
                Result.failed("the grader failed on this submission", again=True),
                f"{task.label}: the grader failed:\n{result.crash}",
            )
            return
        errors = [(nb.error or "") + (nb.log or "") for nb in result.notebooks.values()]
        if any(marker in text for text in errors for marker in KERNEL_START_ERRORS):
            # Nothing a student hands in stops a kernel from starting: the machine did.
            self.finish(
                task,
                Result.failed("the grading kernel did not start", again=True),
                f"{task.label}: the grading kernel did not start" + self._kernel_detail(errors),
            )
            return
        self.completed += 1
        self.finish(task, result, None)

    def _killed(self, task: Task, queue: deque) -> None:
        """The task's workers kept dying (``KilledWorker``). Run it again, telling the
        grader each cell before it runs (``Job.careful``) to learn which cell it is, then
        without that cell; when runs are used up, it is noted (or, if it never got to a
        notebook, not recorded: the grader's fault)."""
        where = task.progress
        if not task.careful:
            task.careful = True
            queue.appendleft(task)
            return
        if where is not None and where.notebook and where.attempt < self.limits.attempts:
            event = Event("lost", where.cell, None, where.notebook)
            task.history.append(event)
            task.skip.setdefault(where.notebook, []).append(where.cell)
            task.attempt = where.attempt + 1
            queue.appendleft(task)
            return
        if where is None or not where.notebook:
            self.lost_outside += 1
            self.finish(
                task,
                Result.failed("the grading workers kept stopping", again=True),
                f"{task.label}: its grading workers kept stopping before it ran a notebook",
            )
            if self.lost_outside >= 3 and not self.completed:
                raise GraderError(
                    "grading workers keep dying before running a notebook: see the workers' logs"
                )
            return
        result = Result.failed(
            "grading this submission stopped the grading worker again and again", again=False
        )
        result.history = list(task.history)
        result.runs = where.attempt
        self.finish(task, result, None)

    def _deadlines(self, queue: deque) -> None:
        """Cancel a task far past its limits (its worker is restarted) and note it."""
        now = time.monotonic()
        for task in list(self.inflight.values()):
            limit = self.limits.attempts * self.limits.run_seconds(task.notebooks) + 60
            if not task.started or now - task.started < limit:
                continue
            del self.inflight[task.job]
            worker = task.progress.worker if task.progress else None
            with contextlib.suppress(Exception):
                task.future.cancel()
            if worker:
                with contextlib.suppress(Exception):
                    self.client.restart_workers([worker], timeout=60, raise_for_error=False)
            result = Result.failed("grading took longer than the time limit", again=False)
            result.history = list(task.history)
            self.finish(task, result, None)

    def _kernel_detail(self, errors: list[str]) -> str:
        """The first kernel failure's log, once per run."""
        self.kernel_failures += 1
        if self.kernel_failures > 1:
            return ""
        return f":\n{errors[0][-1500:]}"
