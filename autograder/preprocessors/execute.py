"""nbgrader's ``Execute`` step for grading: ``GuardedExecute``.

It runs a submission's cells in its kernel and, at each test cell, asks the cell's hidden
test for a verdict, computed outside the kernel (verdicts/api.py, through the probe).

It never lets one cell end the whole run: a kernel that dies or a cell that ignores the
interrupt stops the notebook there and the remaining cells are marked "not run" (their
tests score 0), the notebook's wall limit is shared out over its cells, and a cell's
output is capped. Those limits, the per-cell limit and the sandbox mode are ``c.Limits``
of its configuration (``Limits``: the course's, or a job's when ``grade`` runs it), as
are its kernels' (sandbox.py). Cells listed in ``skip_cells`` (those that crashed or hung
the kernel in an earlier run) are not run at all, nor are the course's demonstrations
(cells tagged ``demo``: training runs and plots that no test needs). The cell tagged
``engine`` of a problem set or a lesson that starts from earlier ones runs the course's
engine instead of the student's choice, as its hidden tests assume (verdicts/hidden/sets.py,
lessons.py). What happened is kept as ``Event``s in ``RUNS``, one entry per notebook run
in this process.
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
from nbclient.util import ensure_async, run_hook, run_sync
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Integer, List, Unicode

from .. import markers
from ..kernel import limits as oslimits
from ..kernel import output_cap, warm
from ..kernel import sandbox as sandboxing
from ..messages import Event
from ..verdicts import answers, exercises, region
from ..verdicts import api as verdicts
from ..verdicts.probe import MIME, kernel_load, kernel_request

RUNS: list[dict] = []  # per notebook run in this process: {"notebook", "events": [Event]}

SKIPPED = "this cell crashed or hung the grading kernel in an earlier run, so it was not run again"
DEMO = "[a demonstration: not run while grading]\n"
ENGINE_TAG = "engine"  # the cell that picks the engine (coursekit.engine): sets, lessons 2-5
COURSE_ENGINE = "[graded on the course's engine: this cell ran the course's, not this line]\n"


def error_output(ename: str, text: str):
    return new_output("error", ename=ename, evalue=text, traceback=[f"{ename}: {text}"])


class GuardedExecute(Execute):
    """nbgrader's Execute, made to survive what students submit (see the module docstring).

    ``RUNS`` gets, per notebook, the ``Event``s of its run (see ``messages.Event``)."""

    skip_cells = Dict({}, help="notebook name -> indices of cells not to run").tag(config=True)
    progress_file = Unicode("", help="where to note the cell being run").tag(config=True)
    seed = Integer(
        0,
        help="the hidden tests' inputs are drawn from this seed (0: a new one for every notebook)",
    ).tag(config=True)
    student = Unicode(
        "",
        help="the id the submission was handed in under (default: nbgrader's student id; "
        "grade runs each submission in a private course, under another)",
    ).tag(config=True)
    skip_tags = List(
        ["demo", "practice"],
        help="cells with these tags are not run, unless they are solution or test cells",
    ).tag(config=True)
    warm_kernels = Bool(
        False,
        help="start the next notebook's sandboxed kernel while this one runs "
        "(kernel/warm.py; a grading worker turns it on)",
    ).tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._limits = oslimits.Limits(config=self.config)
        self._name = resources["nbgrader"]["notebook"]
        self._assignment = resources["nbgrader"].get("assignment", "")
        self._student = self.student or str(resources["nbgrader"].get("student") or "")
        shown = nb.metadata.get("autograder", {}).get("shown_id", "")  # ShownVariant's
        self._shown = shown if isinstance(shown, str) and len(shown) <= 100 else ""
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
        self._key: bytes | None = None  # the probe's, once it is loaded
        self._loaded = False
        self._course = exercises.instructor_notebook(self.config, self._assignment, self._name)
        self._targets = verdicts.exercise_targets(self._assignment)
        if self._course is not None:  # hidden tests in the notebook: their targets
            self._targets.update(
                (gid, ex.targets)
                for gid, ex in self._course.exercises.items()
                if not exercises.is_pointer(ex.hidden)
            )
        self._engine_code = verdicts.engine_code(self._assignment)
        self._pending = Counter(
            c.metadata["nbgrader"]["grade_id"] for c in nb.cells if verdicts.is_test_cell(c)
        )
        self._deferred: list[tuple[int, object]] = []
        self._passed: set[str] = set()  # exercises the student's code passed (Kernel.course)
        isolation = sandboxing.isolation_for(self._limits.sandbox)
        self.kernel_manager_class = sandboxing.kernel_manager_class(isolation)
        RUNS.append({"notebook": self._name, "events": self._events, "isolation": isolation})
        self._warm_key = self._warm_client = None
        if self.warm_kernels and isolation == sandboxing.BUBBLEWRAP and km is None:
            self._warm_key = self._spare_key(nb, resources)
            km = self._take_spare()
        try:
            return super().preprocess(nb, resources, km)
        finally:
            if km is not None and self.km is not None:  # nbclient shuts only its own down
                self._cleanup_kernel()
            self._progress(self._total)

    # -- warm kernels (kernel/warm.py) ----------------------------------------------------------

    def _kernel_arguments(self) -> list[str]:
        """The kernel's extra arguments, as nbclient's async_start_new_kernel makes them."""
        args = list(self.extra_arguments)
        if self.ipython_hist_file and not any(
            a.startswith("--HistoryManager.hist_file") for a in args
        ):
            args.append(f"--HistoryManager.hist_file={self.ipython_hist_file}")
        return args

    def _spare_key(self, nb, resources) -> str:
        self._kernel = self.kernel_name or nb.metadata.get("kernelspec", {}).get("name") or ""
        path = (resources or {}).get("metadata", {}).get("path") or None
        sandbox = {
            k: v
            for k, v in self.config.get("SandboxedKernelManager", {}).items()
            if k not in ("token", "kernel_log")
        }
        return warm.spare_key(
            self.kernel_manager_class,
            self._kernel,
            self._kernel_arguments(),
            {"limits": self._limits.as_dict(), "sandbox": sandbox},
            sandboxing.SandboxedKernelManager(config=self.config).scratch_size,
            sandboxing.bwrap.work_folder(path),
        )

    def _take_spare(self):
        """The worker's spare kernel if it is this notebook's, with a client to which it
        has answered (kept for ``start_new_kernel_client``); else None."""
        spare = warm.take(self._warm_key)
        if spare is None:
            return None
        km = spare.km
        kc = km.client()

        try:
            run_sync(warm.answered)(km, kc, self.startup_timeout)
        except Exception:
            with contextlib.suppress(Exception):
                kc.stop_channels()
            warm.discard(spare)
            return None
        km.seal()  # as SandboxedKernelClient.wait_for_ready does
        self._warm_client = kc
        return km

    def start_new_kernel_client(self):
        """nbclient's, or the client of the spare kernel taken (``_take_spare``)."""
        kc, self._warm_client = self._warm_client, None
        if kc is None:
            return super().start_new_kernel_client()
        self.kc = kc
        self.kc.allow_stdin = False
        run_sync(run_hook)(self.on_notebook_start, notebook=self.nb)
        return kc

    def _start_spare(self) -> None:
        """Start the next notebook's kernel now (the current one is up), as this one was
        started but with a token of its own (and its own output to /dev/null: a task's
        kernel.log is in the task's scratch folder)."""
        from traitlets.config import Config

        token = warm.new_token()
        cfg = Config(self.config)
        cfg.LimitedKernelManager.token = token
        cfg.LimitedKernelManager.kernel_log = ""
        km = self.kernel_manager_class(kernel_name=self._kernel, config=cfg)
        path = self.resources.get("metadata", {}).get("path") or None
        try:
            run_sync(km.start_kernel)(extra_arguments=self._kernel_arguments(), cwd=path)
        except Exception:
            with contextlib.suppress(Exception):
                km.stop_kernel_now()
            return
        warm.keep(self._warm_key, km)

    # -- one cell -------------------------------------------------------------------------

    def preprocess_cell(self, cell, resources, index):
        if not self._loaded:
            self._loaded = True
            self._load_probe()
            if self._warm_key is not None:
                self._start_spare()
        cell, resources = self._one_cell(cell, resources, index)
        if index == self._total - 1:
            self._run_deferred(final=True)
        return cell, resources

    def _one_cell(self, cell, resources, index):
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
            self._stop(
                f"the notebook used up its {self._limits.wall:g} s time limit before this cell"
            )
            cell.outputs = [error_output("NotRun", self._stopped)]
            return cell, resources
        if self._last_run is not None and not self._kernel_alive():
            # The kernel died after the previous cell had answered (exit(), a thread...).
            self._event("died", self._last_run, None)
            self._stop("the grading kernel had stopped before this cell")
            cell.outputs = [error_output("NotRun", self._stopped)]
            return cell, resources
        if self._is_engine_choice(cell):
            return self._run_course_engine(cell, index, budget), resources
        if not verdicts.is_test_cell(cell):
            return self._execute(cell, index, budget), resources
        source = cell.source  # the visible checks run in the kernel, as the student saw them
        cell.source = markers.visible(source)
        try:
            if cell.source.strip():
                cell = self._execute(cell, index, budget)
            else:
                cell.outputs = []
        finally:
            cell.source = source
        if not self._stopped:
            self._decide(cell, index)
            self._run_deferred()
        return cell, resources

    def _execute(self, cell, index: int, budget: float):
        """Run one cell in the kernel under the limits; note what went wrong."""
        timeout = self._limits.cell_timeout
        self._limit = max(1, math.ceil(min(budget, timeout or budget)))
        self._wall_bound = self._limit < (timeout or math.inf)
        self._timed_out = False
        self._kept, self._dropped = Counter(), Counter()
        hit = self._bounds_hit()
        try:
            cell = self.execute_cell(cell, index, store_history=True)
        except DeadKernelError:
            oom = self._bounds_hit()[0] > hit[0]  # the OOM killer, at the kernel's bound
            self._event("died", index, cell, "memory" if oom else None)
            cell.outputs.append(
                error_output(
                    "KernelDied",
                    "the grading kernel stopped while running this cell (exit, "
                    "os._exit, a crash or too much memory)",
                )
            )
            self._stop("the grading kernel had stopped in an earlier cell")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            # What came back was not a Jupyter message (a cell wrote into the kernel's
            # sockets): this kernel can no longer be believed.
            self._event("died", index, cell)
            cell.outputs.append(
                error_output(
                    "KernelDied", "the grading kernel sent bytes that are not a Jupyter message"
                )
            )
            self._kill_kernel()
            self._stop("the grading kernel broke its connection in an earlier cell")
        except CellTimeoutError:
            if self._timed_out:
                self._event("stuck", index, cell)
                cell.outputs.append(
                    error_output(
                        "CellTimeoutError",
                        f"this cell ran past the {self._limit} s limit and "
                        "did not stop when interrupted",
                    )
                )
                self._kill_kernel()
                self._stop("an earlier cell did not stop when interrupted")
            else:  # the reply came, the last outputs did not: carry on
                cell.outputs.append(
                    new_output(
                        "stream", name="stdout", text="\n[some output of this cell was lost]\n"
                    )
                )
        else:
            if self._timed_out:
                self._event("wall" if self._wall_bound else "timeout", index, cell)
            now = self._bounds_hit()
            if now[0] > hit[0] or any(o.get("ename") == "MemoryError" for o in cell.outputs):
                self._event("memory", index, cell)
            if now[1] > hit[1]:
                self._event("processes", index, cell)
        for name, size in self._dropped.items():
            stream = "stderr" if name == "stderr" else "stdout"
            cell.outputs.append(
                new_output(
                    "stream", name=stream, text=(f"\n[{size} more bytes of output were not kept]\n")
                )
            )
        if self._dropped:
            self._event("output", index, cell)
        self._last_run = index
        return cell

    def _is_engine_choice(self, cell) -> bool:
        md = cell.metadata.get("nbgrader", {})
        return (
            bool(self._engine_code)
            and ENGINE_TAG in cell.metadata.get("tags", [])
            and not md.get("solution")
            and not md.get("grade")
        )

    def _run_course_engine(self, cell, index: int, budget: float):
        """The ``engine`` cell: grading runs the course's engine in its place
        (the hidden tests use it too), and says so under the cell."""
        source, cell.source = cell.source, self._engine_code
        try:
            cell = self._execute(cell, index, budget)
        finally:
            cell.source = source
        cell.outputs.insert(0, new_output("stream", name="stdout", text=COURSE_ENGINE))
        return cell

    def _is_demo(self, cell) -> bool:
        md = cell.metadata.get("nbgrader", {})
        tags = cell.metadata.get("tags", [])
        return (
            any(t in tags for t in self.skip_tags)
            and not md.get("solution")
            and not md.get("grade")
        )

    # -- hidden tests ------------------------------------------------------------------------

    def _decide(self, cell, index: int) -> bool:
        """The cell's verdict, recorded with its outputs; False if it must wait
        (``verdicts.Deferred``) because the course's code for an exercise whose check has
        not run yet would go into the kernel."""
        try:
            result = self._verdict(cell, index)
        except verdicts.Deferred:
            if all(i != index for i, _ in self._deferred):
                self._deferred.append((index, cell))
            return False
        self._pending[cell.metadata["nbgrader"]["grade_id"]] -= 1
        verdicts.record(cell, result)
        if result is not None:
            cell.outputs.extend(verdicts.outputs_for(result, cell.outputs))
        return True

    def _run_deferred(self, final: bool = False) -> None:
        """Deferred verdicts whose exercises' checks are done now; at the end of the
        notebook, those that still wait score 0 (the cells they wait for did not run)."""
        progress = True
        while progress and self._deferred and not self._stopped:
            waiting, self._deferred = self._deferred, []
            progress = False
            for index, cell in waiting:
                progress |= self._decide(cell, index)
        if final:
            for _, cell in self._deferred:
                why = self._stopped or "not run: it needs an exercise whose cell did not run"
                verdicts.record(cell, None)
                cell.outputs.append(error_output("NotRun", why))
            self._deferred = []

    def _still_pending(self) -> set[str]:
        return {
            target
            for gid, n in self._pending.items()
            if n > 0
            for target in self._targets.get(gid, ())
        }

    def _verdict(self, cell, index: int) -> verdicts.Verdict | None:
        """The cell's hidden test, run here against the kernel through the probe (None if
        the kernel died or hung meanwhile: the notebook stops, the cell scores 0)."""
        budget = self._budget()
        timeout = min(budget, self._limits.cell_timeout or budget) - 1
        gid = cell.metadata["nbgrader"]["grade_id"]
        seed = verdicts.cell_seed(self._seed, gid)
        if timeout < 1:
            return verdicts.Verdict(False, "not run: the notebook's time limit ran out", seed)
        self._probe_lost = None
        kernel = verdicts.Kernel(
            lambda request: self._ask_probe(request, index, cell),
            seed,
            timeout,
            self._still_pending,
            student=self._student,
            shown=self._shown,
            passed=lambda: set(self._passed),
            budget=budget - 1,  # every request and the grader's work on them: the wall's
        )
        result, passed = region.decide(self._assignment, gid, kernel, self._course)
        self._passed |= passed
        if self._probe_lost:
            return None
        if result.grader_error:
            self._event("grader", index, cell)
        if result.flag:
            self._event("forged", index, cell, result.flag)
        return result

    def _load_probe(self) -> None:
        """Load the probe before any student cell, and take its key (a kernel that gives
        none gets every hidden test's answer refused: it scores 0)."""
        reply = run_sync(self._async_ask_probe)(
            kernel_load(self._student, verdicts.probe_parts(self._assignment)), 60
        )
        found = reply.get("replies") or []
        if len(found) == 1 and isinstance(found[0], dict) and set(found[0]) == {"key"}:
            with contextlib.suppress(TypeError, ValueError):
                self._key = bytes.fromhex(found[0]["key"])

    def _ask_probe(self, request: dict, index: int, cell) -> dict:
        if self._probe_lost:
            return {"crashed": "the grading kernel had stopped"}
        sent = answers.request_text(self._key, request)
        answer = run_sync(self._async_ask_probe)(kernel_request(sent), request["timeout"] + 10)
        if answer.get("_dead"):
            self._probe_lost = "died"
            self._event("died", index, cell)
            self._stop("the grading kernel stopped during the hidden tests of an earlier cell")
            return {"crashed": "the grading kernel stopped"}
        if answer.get("_stuck"):
            self._probe_lost = "stuck"
            self._event("stuck", index, cell)
            self._kill_kernel()
            self._stop(
                "the grading kernel stopped answering during the hidden tests of an earlier cell"
            )
            return {"crashed": "the grading kernel stopped answering"}
        return answers.open_reply(
            self._key, request["nonce"], sent, answer["replies"], answer["error"]
        )

    async def _async_ask_probe(self, code: str, timeout: float) -> dict:
        """Send code to the kernel; what it published under the probe's MIME type and the
        error it raised ({"replies", "error"}), or {"_dead"} / {"_stuck"}."""
        msg_id = self.kc.execute(
            code, silent=True, store_history=False, allow_stdin=False, stop_on_error=False
        )
        deadline = time.monotonic() + timeout
        replies: list = []
        error: str | None = None
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
            except Exception:  # bytes that are no Jupyter message: untrusted, dropped
                continue
            if not isinstance(msg, dict) or not isinstance(msg.get("content"), dict):
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg.get("content", {})
            if kind in ("display_data", "update_display_data", "execute_result"):
                data = content.get("data")
                if isinstance(data, dict) and MIME in data:
                    replies.append(data[MIME])
            elif kind == "error" and error is None:
                error = f"{content.get('ename')}: {content.get('evalue')}"[:300]
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        with contextlib.suppress(Exception):  # the reply, so that no stale one is left
            await ensure_async(self.kc.get_shell_msg(timeout=1))
        return {"replies": replies[:10], "error": error}

    # -- nbclient hooks ---------------------------------------------------------------------

    def _get_timeout(self, cell):
        return getattr(self, "_limit", None) or super()._get_timeout(cell)

    async def _async_handle_timeout(self, timeout, cell=None):
        self._timed_out = True
        why = (
            "the notebook's time limit ran out during this cell"
            if self._wall_bound
            else f"this cell ran longer than the {timeout} s limit and was stopped"
        )
        self.error_on_timeout = {
            "ename": "CellTimeoutError",
            "evalue": why,
            "traceback": [f"CellTimeoutError: {why}"],
        }
        return await super()._async_handle_timeout(timeout, cell)

    def process_message(self, msg, cell, cell_index):
        """Every iopub message of a cell is capped before nbclient stores any of it:
        ``Limits.output`` characters per cell in all (output_cap.py)."""
        if getattr(self, "_kept", None) is not None and self._limits.output:
            msg = output_cap.cap(
                msg, self._display_rewrites(msg), self._limits.output, self._kept, self._dropped
            )
            if msg is None:
                return None
        return super().process_message(msg, cell, cell_index)

    def _display_rewrites(self, msg) -> int:
        """How many stored outputs a message with a display id would rewrite."""
        content = msg.get("content")
        transient = content.get("transient") if isinstance(content, dict) else None
        found = (
            self._display_id_map.get(transient.get("display_id"))
            if isinstance(transient, dict) and isinstance(transient.get("display_id"), str)
            else None
        )
        return sum(len(v) for v in found.values()) if found else 0

    # -- helpers -----------------------------------------------------------------------------

    def _budget(self) -> float:
        if not self._limits.wall:
            return math.inf
        return self._limits.wall - (time.monotonic() - self._start)

    def _stop(self, reason: str) -> None:
        self._stopped = f"not run: {reason}"

    def _event(self, kind: str, index: int, cell, detail: str | None = None) -> None:
        gid = None
        if cell is not None:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        self._events.append(Event(kind, index, gid, detail=detail))

    def _bounds_hit(self) -> tuple[int, int]:
        """(OOM kills, refused forks) of the kernel's group so far (bounds.py)."""
        return getattr(self.km, "bounds_hit", lambda: (0, 0))()

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
