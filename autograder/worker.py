"""A grading worker: ``python -m autograder.worker``, started by ``grading.Coordinator``.

It reads jobs (one JSON object per line) on stdin; for each it builds a private copy of
the course in the job's folder (the submission's notebooks made gradable by
``submission.prepare``, and a copy of the assignment's gradebook), runs nbgrader's own
``Autograde`` converter there once per notebook, writes ``result.json`` and answers with one
line on its protocol pipe. The coordinator merges results into the real gradebook.

nbgrader's ``Execute`` step is replaced by ``GuardedExecute``, which never lets one cell end
the whole run: a kernel that dies or a cell that ignores the interrupt stops the notebook
there and the remaining cells are marked "not run" (so nbgrader still saves every score),
the notebook's wall limit is shared out over its cells, and a cell's output is capped.
The coordinator re-runs such a notebook with the guilty cell skipped, to grade the rest.

The worker is a child subreaper in its own session, with memory limits that its kernels
inherit; after every notebook it kills whatever the kernel left behind.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # see grading.py: saves seconds of start-up

from nbclient.exceptions import CellTimeoutError, DeadKernelError  # noqa: E402
from nbclient.util import ensure_async, run_sync  # noqa: E402
from nbformat.v4 import new_output  # noqa: E402
from nbgrader.preprocessors import Execute  # noqa: E402
from traitlets import Dict, Float, Integer, Unicode  # noqa: E402

from . import limits as oslimits  # noqa: E402

RUNS: list[dict] = []  # what GuardedExecute saw in each notebook run of this process
STUDENT = "student"  # the student id inside a private course (the real one may be anything)

TAMPER = "which the tests rely on: it was undone"  # kernel_guard.py's message
SKIPPED = ("this cell crashed or hung the grading kernel in an earlier run, so it was not "
           "run again")


def error_output(ename: str, text: str):
    return new_output("error", ename=ename, evalue=text, traceback=[f"{ename}: {text}"])


class GuardedExecute(Execute):
    """nbgrader's Execute, made to survive what students submit (see the module docstring).

    ``RUNS`` gets, per notebook, a list of events ``{"kind", "cell", "grade_id"}`` with
    kind one of: died, stuck, timeout, wall, memory, output, skipped."""

    skip_cells = Dict({}, help="notebook name -> indices of cells not to run").tag(config=True)
    wall_limit = Float(0, help="seconds the whole notebook may run (0: no limit)").tag(
        config=True)
    max_output = Integer(1_000_000, help="bytes of output kept per cell").tag(config=True)
    progress_file = Unicode("", help="where to note the cell being run").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._name = resources["nbgrader"]["notebook"]
        self._skip = {int(i) for i in self.skip_cells.get(self._name, [])}
        self._start = time.monotonic()
        self._stopped = None
        self._events = []
        self._last_run = None
        self._total = len(nb.cells)
        RUNS.append({"notebook": self._name, "events": self._events})
        try:
            return super().preprocess(nb, resources, km)
        finally:
            self._progress(self._total)

    # -- one cell -------------------------------------------------------------------------

    def preprocess_cell(self, cell, resources, index):
        self._check_assign_resources(resources)
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        self._progress(index)
        if self._stopped:
            cell.outputs = [error_output("NotRun", self._stopped)]
            return cell, resources
        if index in self._skip:
            cell.outputs = [error_output("Skipped", SKIPPED)]
            self._event("skipped", index, cell)
            return cell, resources
        budget = self._budget()
        if budget <= 0:
            self._event("wall", index, cell)
            self._stop(f"the notebook used up its {self.wall_limit:g} s time limit before "
                       "this cell")
            cell.outputs = [error_output("NotRun", self._stopped)]
            return cell, resources
        if self._last_run is not None and not self._kernel_alive():
            # The kernel died after the previous cell had answered (exit(), a thread...).
            self._event("died", self._last_run, None)
            self._stop("the grading kernel had stopped before this cell")
            cell.outputs = [error_output("NotRun", self._stopped)]
            return cell, resources

        self._limit = max(1, math.ceil(min(budget, self.timeout or budget)))
        self._wall_bound = self._limit < (self.timeout or math.inf)
        self._timed_out = False
        self._kept, self._dropped = Counter(), Counter()
        try:
            cell = self.execute_cell(cell, index, store_history=True)
        except DeadKernelError:
            self._event("died", index, cell)
            cell.outputs.append(error_output(
                "KernelDied", "the grading kernel stopped while running this cell (exit, "
                "os._exit, a crash or too much memory)"))
            self._stop("the grading kernel had stopped in an earlier cell")
        except CellTimeoutError:
            if self._timed_out:
                self._event("stuck", index, cell)
                cell.outputs.append(error_output(
                    "CellTimeoutError", f"this cell ran past the {self._limit} s limit and "
                    "did not stop when interrupted"))
                self._kill_kernel()
                self._stop("an earlier cell did not stop when interrupted")
            else:  # the reply came, the last outputs did not: carry on
                cell.outputs.append(new_output("stream", name="stdout",
                                               text="\n[some output of this cell was lost]\n"))
        else:
            if self._timed_out:
                self._event("wall" if self._wall_bound else "timeout", index, cell)
            if any(o.get("ename") == "MemoryError" for o in cell.outputs):
                self._event("memory", index, cell)
        if any(o.get("name") == "stderr" and TAMPER in o.get("text", "")
               for o in cell.outputs):
            self._event("tamper", index, cell)
        for name, size in self._dropped.items():
            stream = "stderr" if name == "stderr" else "stdout"
            cell.outputs.append(new_output("stream", name=stream, text=(
                f"\n[{size} more bytes of output were not kept]\n")))
        if self._dropped:
            self._event("output", index, cell)
        self._last_run = index
        return cell, resources

    # -- nbclient hooks ---------------------------------------------------------------------

    def _get_timeout(self, cell):
        return getattr(self, "_limit", None) or super()._get_timeout(cell)

    async def _async_handle_timeout(self, timeout, cell=None):
        self._timed_out = True
        why = ("the notebook's time limit ran out during this cell" if self._wall_bound
               else f"this cell ran longer than the {timeout} s limit and was stopped")
        self.error_on_timeout = {"ename": "CellTimeoutError", "evalue": why,
                                 "traceback": [f"CellTimeoutError: {why}"]}
        return await super()._async_handle_timeout(timeout, cell)

    def output(self, outs, msg, display_id, cell_index):
        kind = msg.get("msg_type")
        if self.max_output and kind in ("stream", "display_data", "execute_result"):
            content = msg.get("content", {})
            if kind == "stream":
                key, size = content.get("name", "stdout"), len(content.get("text", ""))
            else:
                key = "display"
                size = sum(len(str(v)) for v in content.get("data", {}).values())
            kept = getattr(self, "_kept", None)
            if kept is not None:
                if kept[key] + size > self.max_output:
                    self._dropped[key] += size
                    return None
                kept[key] += size
        return super().output(outs, msg, display_id, cell_index)

    # -- helpers -----------------------------------------------------------------------------

    def _budget(self) -> float:
        if not self.wall_limit:
            return math.inf
        return self.wall_limit - (time.monotonic() - self._start)

    def _stop(self, reason: str) -> None:
        self._stopped = f"not run: {reason}"

    def _event(self, kind: str, index: int, cell) -> None:
        gid = None
        if cell is not None:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        self._events.append({"kind": kind, "cell": index, "grade_id": gid})

    def _kernel_alive(self) -> bool:
        async def alive():
            return await ensure_async(self.km.is_alive())

        try:
            return bool(run_sync(alive)())
        except Exception:
            return False

    def _kill_kernel(self) -> None:
        pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
        if pid:
            oslimits.kill_descendants(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _progress(self, index: int) -> None:
        if self.progress_file:
            with contextlib.suppress(OSError):
                Path(self.progress_file).write_text(f"{self._name}\t{index}\t{self._total}\n")


# ---- one job ---------------------------------------------------------------------------


class Worker:
    def __init__(self, root: str):
        from traitlets.config.loader import PyFileConfigLoader

        self.root = root
        self.base_config = PyFileConfigLoader("nbgrader_config.py", path=root).load_config()
        self._expected: dict[tuple, list] = {}

    def expected(self, template_db: str, assignment: str, course_id: str, source: Path):
        from .submission import expected_from_gradebook, order_from_notebook

        key = (template_db, assignment)
        if key not in self._expected:
            exp = expected_from_gradebook(f"sqlite:///{template_db}", assignment, course_id)
            order_from_notebook(exp, source / assignment)
            self._expected[key] = exp
        return self._expected[key]

    def config(self, job: dict, private: Path, notebook: str):
        import copy

        from nbconvert.preprocessors import ClearMetadataPreprocessor
        from nbgrader.preprocessors import (
            AssignLatePenalties,
            CheckCellMetadata,
            IgnorePattern,
            LimitOutput,
            SaveAutoGrades,
        )
        from traitlets.config import Config

        cfg = copy.deepcopy(self.base_config)
        extra = Config()
        extra.CourseDirectory.root = str(private)
        extra.CourseDirectory.source_directory = job["source"]
        extra.CourseDirectory.db_url = f"sqlite:///{private / 'gradebook.db'}"
        extra.CourseDirectory.course_id = job["course_id"]
        extra.CourseDirectory.assignment_id = job["assignment"]
        extra.CourseDirectory.student_id = STUDENT
        extra.CourseDirectory.notebook_id = notebook
        extra.Autograde.autograde_preprocessors = [
            GuardedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
            SaveAutoGrades, AssignLatePenalties, CheckCellMetadata,
        ]
        limits = job["limits"]
        extra.GuardedExecute.timeout = int(limits["cell_timeout"])
        extra.GuardedExecute.wall_limit = float(limits["wall"])
        extra.GuardedExecute.max_output = int(limits["output"])
        extra.GuardedExecute.skip_cells = job.get("skip", {})
        extra.GuardedExecute.progress_file = str(Path(job["dir"]) / "progress")
        extra.GuardedExecute.shutdown_kernel = "immediate"
        extra.GuardedExecute.iopub_timeout = 10
        cfg.merge(extra)
        return cfg

    def run(self, job: dict) -> dict:
        from nbgrader.converters import Autograde
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.utils import capture_log

        from .submission import prepare

        started = time.monotonic()
        jobdir = Path(job["dir"])
        private = jobdir / "course"
        if private.exists():
            shutil.rmtree(private)
        target = private / "submitted" / STUDENT / job["assignment"]
        target.mkdir(parents=True)
        source = Path(job["source"])
        expected = self.expected(job["template"], job["assignment"], job["course_id"], source)
        prepared, folder_notes = prepare(
            Path(job["submission"]), expected, job.get("owners"), set(job.get("released", []))
        )
        stamp = Path(job["submission"]) / "timestamp.txt"
        if stamp.is_file() and not stamp.is_symlink():
            shutil.copy(stamp, target / "timestamp.txt")
        shutil.copy(job["template"], private / "gradebook.db")
        notebooks = {}
        for prep in prepared:
            entry = {"notes": [n.__dict__ for n in prep.notes], "used_file": prep.used_file,
                     "graded": False, "events": [], "error": None}
            notebooks[prep.name] = entry
            if prep.notebook is None:
                continue
            import nbformat

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
            out = private / "autograded" / STUDENT / job["assignment"] / f"{prep.name}.ipynb"
            entry["graded"] = bool(outcome.get("success")) and out.exists()
            entry["events"] = [e for run in RUNS for e in run["events"]]
            if not entry["graded"]:
                entry["error"] = _last_error(outcome)
                entry["log"] = ((outcome.get("log") or "") + (outcome.get("error") or ""))[-3000:]
        return {"id": job["id"], "notebooks": notebooks,
                "folder_notes": [n.__dict__ for n in folder_notes],
                "autograded": str(private / "autograded" / STUDENT / job["assignment"]),
                "seconds": round(time.monotonic() - started, 2)}


def _last_error(outcome: dict) -> str:
    """The exception line of nbgrader's logged traceback (else its last error line)."""
    import re

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
    worker = Worker(os.environ.get("AUTOGRADER_ROOT", os.getcwd()))
    import nbgrader.converters  # noqa: F401 (import once, before the first job)

    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            oslimits.apply_process_limit(oslimits.Limits(**job["limits"]))
            try:
                result = worker.run(job)
            except Exception:
                result = {"id": job["id"], "crash": traceback.format_exc()[-3000:]}
            finally:
                oslimits.kill_descendants()
            path = Path(job["dir"]) / "result.json"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(result))
            tmp.replace(path)
            proto.write(json.dumps({"done": job["id"]}) + "\n")
    finally:
        oslimits.kill_descendants()
    return 0


if __name__ == "__main__":
    sys.exit(main())
