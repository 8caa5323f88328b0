"""nbgrader's ``Execute`` step for grading: ``GuardedExecute``.

It runs a submission's cells in its kernel and, at each test cell, asks the cell's hidden
test for a verdict, computed outside the kernel (verdicts.py, through the probe).

It never lets one cell end the whole run: a kernel that dies or a cell that ignores the
interrupt stops the notebook there and the remaining cells are marked "not run" (their
tests score 0), the notebook's wall limit is shared out over its cells, and a cell's
output is capped. Cells listed in ``skip_cells`` (those that crashed or hung the kernel
in an earlier run) are not run at all, nor are the course's demonstrations (cells tagged
``demo``: training runs and plots that no test needs). What happened is kept as
``Event``s in ``RUNS``, one entry per notebook run in this process.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import secrets
import signal
import time
from collections import Counter
from pathlib import Path

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async, run_sync
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Dict, Enum, Float, Integer, List, Unicode

from . import limits as oslimits
from . import sandbox as sandboxing
from . import verdicts
from .messages import Event
from .probe import MIME, kernel_request

RUNS: list[dict] = []  # per notebook run in this process: {"notebook", "events": [Event]}

SKIPPED = ("this cell crashed or hung the grading kernel in an earlier run, so it was not "
           "run again")
DEMO = "[a demonstration: not run while grading]\n"


def error_output(ename: str, text: str):
    return new_output("error", ename=ename, evalue=text, traceback=[f"{ename}: {text}"])


class GuardedExecute(Execute):
    """nbgrader's Execute, made to survive what students submit (see the module docstring).

    ``RUNS`` gets, per notebook, the ``Event``s of its run (see ``messages.Event``)."""

    skip_cells = Dict({}, help="notebook name -> indices of cells not to run").tag(config=True)
    wall_limit = Float(0, help="seconds the whole notebook may run (0: no limit)").tag(
        config=True)
    max_output = Integer(1_000_000, help="bytes of output kept per cell").tag(config=True)
    progress_file = Unicode("", help="where to note the cell being run").tag(config=True)
    seed = Integer(0, help="the hidden tests' inputs are drawn from this seed (0: a new "
                   "one for every notebook)").tag(config=True)
    skip_tags = List(["demo"], help="cells with these tags are not run, unless they are "
                     "solution or test cells").tag(config=True)
    sandbox = Enum(sandboxing.MODES, "auto", help="kernels under bubblewrap (sandbox.py): auto "
                   "(if this machine can), require, off").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._name = resources["nbgrader"]["notebook"]
        self._assignment = resources["nbgrader"].get("assignment", "")
        self._seed = self.seed or secrets.randbits(48)
        for cell in nb.cells:  # verdicts come from this run only, never from the file
            cell.metadata.pop("autograder", None)
            if verdicts.is_test_cell(cell):
                verdicts.record(cell, None)
        self._skip = {int(i) for i in self.skip_cells.get(self._name, [])}
        self._start = time.monotonic()
        self._stopped = None
        self._events = []
        self._last_run = None
        self._total = len(nb.cells)
        isolation = sandboxing.isolation_for(self.sandbox)
        self.kernel_manager_class = sandboxing.kernel_manager_class(isolation)
        RUNS.append({"notebook": self._name, "events": self._events, "isolation": isolation})
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
        if self._is_demo(cell):
            cell.outputs = [new_output("stream", name="stdout", text=DEMO)]
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
        if not verdicts.is_test_cell(cell):
            return self._execute(cell, index, budget), resources
        source = cell.source  # the visible checks run in the kernel, as the student saw them
        cell.source = verdicts.strip_hidden(source)
        try:
            if cell.source.strip():
                cell = self._execute(cell, index, budget)
            else:
                cell.outputs = []
        finally:
            cell.source = source
        if not self._stopped:
            result = self._verdict(cell, index)
            verdicts.record(cell, result)
            if result is not None:
                cell.outputs.extend(verdicts.outputs_for(result))
        return cell, resources

    def _execute(self, cell, index: int, budget: float):
        """Run one cell in the kernel under the limits; note what went wrong."""
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
        for name, size in self._dropped.items():
            stream = "stderr" if name == "stderr" else "stdout"
            cell.outputs.append(new_output("stream", name=stream, text=(
                f"\n[{size} more bytes of output were not kept]\n")))
        if self._dropped:
            self._event("output", index, cell)
        self._last_run = index
        return cell

    def _is_demo(self, cell) -> bool:
        md = cell.metadata.get("nbgrader", {})
        tags = cell.metadata.get("tags", [])
        return (any(t in tags for t in self.skip_tags) and not md.get("solution")
                and not md.get("grade"))

    # -- hidden tests ------------------------------------------------------------------------

    def _verdict(self, cell, index: int) -> verdicts.Verdict | None:
        """The cell's hidden test, run here against the kernel through the probe (None if
        the kernel died or hung meanwhile: the notebook stops, the cell scores 0)."""
        budget = self._budget()
        timeout = min(budget, self.timeout or budget) - 1
        gid = cell.metadata["nbgrader"]["grade_id"]
        seed = verdicts.cell_seed(self._seed, gid)
        if timeout < 1:
            return verdicts.Verdict(False, "not run: the notebook's time limit ran out", seed)
        self._probe_lost = None
        kernel = verdicts.Kernel(lambda request: self._ask_probe(request, index, cell), seed,
                                 timeout)
        result = verdicts.verdict(self._assignment, gid, kernel)
        if self._probe_lost:
            return None
        if result.grader_error:
            self._event("grader", index, cell)
        return result

    def _ask_probe(self, request: dict, index: int, cell) -> dict:
        if self._probe_lost:
            return {"crashed": "the grading kernel had stopped"}
        code = kernel_request(request)
        answer = run_sync(self._async_ask_probe)(code, request["timeout"] + 10)
        if answer.get("_dead"):
            self._probe_lost = "died"
            self._event("died", index, cell)
            self._stop("the grading kernel stopped during the hidden tests of an earlier cell")
            return {"crashed": "the grading kernel stopped"}
        if answer.get("_stuck"):
            self._probe_lost = "stuck"
            self._event("stuck", index, cell)
            self._kill_kernel()
            self._stop("the grading kernel stopped answering during the hidden tests of an "
                       "earlier cell")
            return {"crashed": "the grading kernel stopped answering"}
        return answer

    async def _async_ask_probe(self, code: str, timeout: float) -> dict:
        """Send the probe to the kernel; its answer, or {"_dead"} / {"_stuck"}."""
        msg_id = self.kc.execute(code, silent=True, store_history=False, allow_stdin=False,
                                 stop_on_error=False)
        deadline = time.monotonic() + timeout
        answer: dict | None = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"_stuck": True}
            try:
                msg = await ensure_async(self.kc.get_iopub_msg(timeout=min(left, 1.0)))
            except queue.Empty:
                if not await ensure_async(self.km.is_alive()):
                    return {"_dead": True}
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg.get("content", {})
            if kind == "display_data" and isinstance(content.get("data"), dict):
                found = content["data"].get(MIME)
                if isinstance(found, dict):
                    answer = found
            elif kind == "error" and answer is None:
                answer = {"error": f"{content.get('ename')}: {content.get('evalue')}"[:300]}
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        with contextlib.suppress(Exception):  # the reply, so that no stale one is left
            await ensure_async(self.kc.get_shell_msg(timeout=1))
        return answer or {"crashed": "the kernel gave no answer"}

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
        self._events.append(Event(kind, index, gid))

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
