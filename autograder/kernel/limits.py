"""Operating-system limits for grading: what one submission may use, and how everything it
started is found and killed afterwards.

- ``Limits``: the per-cell time limit, the whole-notebook wall limit, the kernel's memory
  (``RLIMIT_AS``), how many extra processes it may start (``RLIMIT_NPROC``, which root
  ignores), the largest file it may write, how much output one cell may keep and how many
  bytes its kernel may send, its CPU share (cgroups.py) and its CPU time (``RLIMIT_CPU``
  per process, and the whole group's where cgroups count it).
- The limits are the kernel's own: ``kernel_command`` wraps the kernel's command line in a
  few lines of Python that set them (and ``TASK_MARKER=<token>`` in its environment) and
  then exec the kernel, so the grading worker itself (a Dask worker) is never limited.
- A grading worker is a "child subreaper" (Linux): processes orphaned by a kernel become its
  children rather than init's, so ``kill_task_processes`` finds every process a task left
  behind among the worker's descendants and kills it, repeatedly, until none is left, and
  never touches what the worker itself started. Local workers also carry
  ``MARKER=<token>`` in their environment, which their kernels inherit: ``kill_marked``
  finds and kills whatever is left of a whole run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys
import time
from dataclasses import asdict, dataclass

MARKER = "AUTOGRADER_WORKER"  # a grade run's local workers and everything they start
TASK_MARKER = "AUTOGRADER_TASK"  # one task's kernels and everything they start
GiB = 1024**3
MiB = 1024**2
PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Limits:
    """What one submission may use while it is graded. These are the defaults; the
    command line (``grade --cell-timeout ...``) overrides them."""

    cell_timeout: int = 60  # seconds one cell may run before it is interrupted
    wall: int = 300  # seconds a whole notebook may run
    memory: int = 3 * GiB  # address space of each kernel
    processes: int = 256  # processes a kernel may add (only enforced for non-root users)
    file_size: int = 1 * GiB  # the largest file a kernel may write
    output: int = 1_000_000  # bytes of output kept per cell; the rest is dropped
    message: int = 32 * MiB  # the largest message a kernel may send (over ZeroMQ)
    sent: int = 256 * MiB  # bytes a kernel may send while one cell runs
    log: int = 64 * 1024  # bytes kept of the kernel's own stdout and stderr (kernel.log)
    cpus: float = 1.0  # cores a kernel and all its processes share (cgroups.py)
    cpu_time: int = 0  # CPU seconds a kernel may use in all (0: the notebook's wall limit)
    attempts: int = 3  # runs of a notebook at most (after a crash the rest is run again)
    sandbox: str = "auto"  # kernels under bubblewrap: auto, require or off (sandbox.py)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def for_course(cls, config=None, **given) -> Limits:
        """These defaults, then the course's per-cell limit (``Execute.timeout`` in
        nbgrader_config.py), then the values ``given`` that are not None."""
        limits = cls()
        timeout = (config or {}).get("Execute", {}).get("timeout")
        if isinstance(timeout, int) and timeout > 0:
            limits.cell_timeout = timeout
        for name, value in given.items():
            if value is not None:
                setattr(limits, name, value)
        return limits

    def run_seconds(self, notebooks: int) -> float:
        """How long one run of a submission's ``notebooks`` may take in all, beyond which
        it is stopped: each notebook's wall limit and a minute, and two minutes more."""
        return 120 + max(1, notebooks) * (self.wall + 60)

    def cpu_seconds(self) -> int:
        """CPU seconds a kernel may use (0: no limit): never more than a kernel held to
        ``cpus`` cores can use within the notebook's wall limit."""
        return self.cpu_time or int(self.wall * max(1.0, self.cpus))

    def describe(self) -> str:
        return (f"{self.cell_timeout} s per cell, {self.wall} s per notebook, "
                f"{self.memory / GiB:g} GiB of memory")


def parse_size(text: str) -> int:
    """'3G', '512M', '2GiB' or a number of bytes."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    units = {"K": 1024, "M": 1024**2, "G": GiB, "T": 1024 * GiB}
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(float(t))


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (Linux only)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def kernel_rlimits(limits: Limits) -> list[tuple[str, int]]:
    """The resource limits a grading kernel starts with: its memory, the largest file it
    may write, no core dumps, the CPU time of each of its processes, and
    ``limits.processes`` more tasks than this user runs now (RLIMIT_NPROC counts every
    thread of the user, machine-wide; root is exempt, see docs/grading.md)."""
    out = [("RLIMIT_AS", limits.memory), ("RLIMIT_FSIZE", limits.file_size),
           ("RLIMIT_CORE", 0)]
    if limits.cpu_seconds() > 0:
        out.append(("RLIMIT_CPU", limits.cpu_seconds()))
    if os.geteuid() != 0:
        out.append(("RLIMIT_NPROC", _user_tasks() + limits.processes))
    return out


def _user_tasks() -> int:
    import psutil

    uid = os.getuid()
    tasks = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if proc.info["uids"].real == uid:
                tasks += proc.info["num_threads"] or 1
    return tasks


def kernel_command(argv: list[str], limits: Limits, token: str, log: str | None = None,
                   cgroups: list[str] = (), log_cap: int | None = None) -> list[str]:
    """``argv`` (a kernel's command line) started through ``launch.py``, which moves
    itself into the kernel's control group (``cgroups``: its ``cgroup.procs`` files), sets
    the kernel's limits and ``TASK_MARKER=token``, sends its own stdout and stderr to
    ``log`` (a new file; with ``log_cap``, through a pipe of which a small process keeps
    that many bytes), and then execs it (same process: nothing stays in between)."""
    spec = {"rlimits": kernel_rlimits(limits), "env": {TASK_MARKER: token},
            "defaults": {name: "1" for name in KERNEL_THREADS}, "log": log or os.devnull,
            "log_cap": log_cap if log else None, "cgroups": list(cgroups),
            "unset": ["MALLOC_TRIM_THRESHOLD_"]}  # Dask sets it for its workers: not kernels
    spec["env"]["PYTHONDONTWRITEBYTECODE"] = "1"
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")
    return [sys.executable, "-I", "-S", launcher, json.dumps(spec), *argv]


# Kernels run side by side, one per core: BLAS threads would only compete.
KERNEL_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _marked(proc, token: str) -> bool:
    import psutil

    try:
        return proc.environ().get(MARKER) == token
    except (psutil.Error, OSError):
        return False


def _kill_until_none(find, rounds: int) -> int:
    """SIGKILL what ``find()`` returns, again and again until it returns nothing (a process
    may fork while we look) or ``rounds`` run out. Returns how many were killed."""
    import psutil

    killed = 0
    for _ in range(rounds):
        found = [p for p in find() if _alive(p)]
        if not found:
            break
        for proc in found:
            with contextlib.suppress(psutil.Error):
                proc.kill()
                killed += 1
        _reap(found)
    return killed


def kill_marked(token: str, rounds: int = 20) -> int:
    """SIGKILL every other process whose environment has ``MARKER=token``, until none is
    left."""
    import psutil

    me = os.getpid()
    return _kill_until_none(
        lambda: [p for p in psutil.process_iter() if p.pid != me and _marked(p, token)],
        rounds,
    )


def kill_descendants(pid: int | None = None, rounds: int = 20) -> int:
    """SIGKILL every descendant of ``pid`` (this process by default), repeatedly."""
    import psutil

    def children() -> list:
        try:
            return psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return []  # the process is gone: nothing more to find

    return _kill_until_none(children, rounds)


def _task_token(proc) -> str | None:
    import psutil

    try:
        return proc.environ().get(TASK_MARKER)
    except (psutil.Error, OSError):
        return None


def own_processes() -> set[int]:
    """This process's descendants that no grading task started: the worker's own
    helpers, which ``kill_task_processes`` spares."""
    import psutil

    try:
        found = psutil.Process().children(recursive=True)
    except psutil.Error:
        return set()
    return {p.pid for p in found if _task_token(p) is None}


def kill_task_processes(spare: set[int], rounds: int = 20) -> int:
    """SIGKILL, until none is left, every descendant of this process except ``spare``
    (``own_processes()`` from before the task: the worker's own helpers), and reap
    orphans that already exited. A worker grades one task at a time (worker.py), so
    everything else is what the task's kernels left behind."""
    import psutil

    def find() -> list:
        try:
            found = psutil.Process().children(recursive=True)
        except psutil.Error:
            return []
        return [p for p in found if p.pid not in spare]

    killed = _kill_until_none(find, rounds)
    reap_orphans(spare)
    return killed


def _alive(proc) -> bool:
    import psutil

    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _reap(procs) -> None:
    """Collect the exit status of our own children among ``procs`` (no zombies left)."""
    deadline = time.monotonic() + 2
    me = os.getpid()
    for proc in procs:
        try:
            if proc.ppid() != me:
                continue
        except Exception:
            continue
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(proc.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            time.sleep(0.01)


def reap_orphans(spare: set[int] = frozenset()) -> None:
    """Reap exited children of this (subreaper) process, except those in ``spare``."""
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if child.pid not in spare and child.status() == psutil.STATUS_ZOMBIE:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(child.pid, os.WNOHANG)
