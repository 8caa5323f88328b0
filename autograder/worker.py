"""A grading worker: ``python -m autograder.worker LIMITS``, started by ``pool.Pool``.

It reads ``Job``s (one JSON object per line) on stdin; for each it builds a private copy
of the course in the job's folder (the submission's notebooks made gradable by
``submission.prepare``, and a copy of the assignment's template gradebook), runs
nbgrader's own ``Autograde`` converter there once per notebook with ``GuardedExecute``
(execute.py) in place of nbgrader's ``Execute``, writes ``result.json`` (a ``Result``) and
answers with one line on its protocol pipe. The pool merges results into the gradebook.

The worker is a child subreaper in its own session, with the memory limits (``Limits``,
given once on its command line) that its kernels inherit; after every notebook it kills
whatever the kernel left behind. Which preprocessors run is nbgrader_config.py's
``Autograde.autograde_preprocessors`` (GuardedExecute and SaveVerdicts among them), the
same as for ``nbgrader autograde``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # see grading.py: saves seconds of start-up

from . import limits as oslimits  # noqa: E402
from .execute import RUNS  # noqa: E402
from .messages import Job, NotebookResult, Result  # noqa: E402

STUDENT = "student"  # the student id inside a private course (the real one may be anything)


class Worker:
    def __init__(self, limits: oslimits.Limits):
        from .course import nbgrader_config

        self.limits = limits
        self.base_config = nbgrader_config()
        self._expected: dict[tuple, list] = {}

    def expected(self, template_db: str, assignment: str, course_id: str, source: Path):
        from .submission import expected_from_gradebook, order_from_notebook

        key = (template_db, assignment)
        if key not in self._expected:
            exp = expected_from_gradebook(f"sqlite:///{template_db}", assignment, course_id)
            order_from_notebook(exp, source / assignment)
            self._expected[key] = exp
        return self._expected[key]

    def config(self, job: Job, private: Path, notebook: str):
        from traitlets.config import Config

        cfg = copy.deepcopy(self.base_config)
        extra = Config()
        extra.CourseDirectory.root = str(private)
        extra.CourseDirectory.source_directory = job.source
        extra.CourseDirectory.db_url = f"sqlite:///{private / 'gradebook.db'}"
        extra.CourseDirectory.course_id = job.course_id
        extra.CourseDirectory.assignment_id = job.assignment
        extra.CourseDirectory.student_id = STUDENT
        extra.CourseDirectory.notebook_id = notebook
        extra.GuardedExecute.timeout = int(self.limits.cell_timeout)
        extra.GuardedExecute.wall_limit = float(self.limits.wall)
        extra.GuardedExecute.max_output = int(self.limits.output)
        extra.GuardedExecute.skip_cells = job.skip
        extra.GuardedExecute.seed = job.seed
        extra.GuardedExecute.progress_file = str(Path(job.dir) / "progress")
        extra.GuardedExecute.shutdown_kernel = "immediate"
        extra.GuardedExecute.iopub_timeout = 10
        extra.GuardedExecute.sandbox = self.limits.sandbox
        cfg.merge(extra)
        return cfg

    def run(self, job: Job) -> Result:
        import nbformat
        from nbgrader.converters import Autograde
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.utils import capture_log

        from .submission import prepare

        started = time.monotonic()
        private = Path(job.dir) / "course"
        if private.exists():
            shutil.rmtree(private)
        target = private / "submitted" / STUDENT / job.assignment
        target.mkdir(parents=True)
        source = Path(job.source)
        expected = self.expected(job.template, job.assignment, job.course_id, source)
        prepared, folder_notes = prepare(Path(job.submission), expected, job.owners,
                                         set(job.released))
        stamp = Path(job.submission) / "timestamp.txt"
        if stamp.is_file() and not stamp.is_symlink():
            shutil.copy(stamp, target / "timestamp.txt")
        shutil.copy(job.template, private / "gradebook.db")
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
            cfg = self.config(job, private, prep.name)
            app = Autograde(coursedir=CourseDirectory(config=cfg), config=cfg)
            app.force = True
            app.create_student = True
            outcome = capture_log(app)
            oslimits.kill_descendants()
            oslimits.reap_orphans()  # the sandboxes' bwrap processes, once they have ended
            out = private / "autograded" / STUDENT / job.assignment / f"{prep.name}.ipynb"
            entry.graded = bool(outcome.get("success")) and out.exists()
            entry.events = [e for run in RUNS for e in run["events"]]
            entry.isolation = next((run["isolation"] for run in RUNS), None)
            if not entry.graded:
                entry.error = _last_error(outcome)
                entry.log = ((outcome.get("log") or "") + (outcome.get("error") or ""))[-3000:]
        return Result(notebooks=notebooks, folder_notes=folder_notes,
                      autograded=str(private / "autograded" / STUDENT / job.assignment),
                      seconds=round(time.monotonic() - started, 2))


def _last_error(outcome: dict) -> str:
    """The exception line of nbgrader's logged traceback (else its last error line)."""
    text = (outcome.get("log") or "") + "\n" + (outcome.get("error") or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b:?", ln)]
    errors = [ln for ln in lines if ln.startswith("[ERROR]") and "Please see" not in ln]
    return ((raised or errors or lines or ["nbgrader failed"])[-1])[:300]


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    log_path = os.environ.get("AUTOGRADER_WORKER_LOG") or os.devnull
    log = open(log_path, "a")  # noqa: SIM115 (open for the life of the process)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    oslimits.become_subreaper()
    oslimits.die_with_parent(signal.SIGTERM)

    def stop(signum, frame):
        raise SystemExit(1)

    signal.signal(signal.SIGTERM, stop)
    limits = oslimits.Limits(**json.loads(sys.argv[1]))
    oslimits.apply_memory_limits(limits)
    worker = Worker(limits)
    import nbgrader.converters  # noqa: F401 (import once, before the first job)

    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            job = Job.from_json(line)
            oslimits.apply_process_limit(limits)
            try:
                result = worker.run(job)
            except Exception:
                result = Result(crash=traceback.format_exc()[-3000:])
            finally:
                oslimits.kill_descendants()
            path = Path(job.dir) / "result.json"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(result.to_json())
            tmp.replace(path)
            proto.write(json.dumps({"done": job.id}) + "\n")
    finally:
        oslimits.kill_descendants()
    return 0


if __name__ == "__main__":
    sys.exit(main())
