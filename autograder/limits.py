"""Operating-system limits for grading: what one submission may use, and how everything it
started is found and killed afterwards.

- ``Limits``: the per-cell time limit, the whole-notebook wall limit, the kernel's memory
  (``RLIMIT_AS``), how many extra processes it may start (``RLIMIT_NPROC``, which root
  ignores), the largest file it may write, and how much output one cell may keep.
- Every grading worker runs in its own session and carries ``MARKER=<token>`` in its
  environment; its kernel and anything the kernel forks inherit both. The worker is a
  "child subreaper" (Linux), so processes orphaned by a kernel become its children rather
  than init's. ``kill_marked`` finds every process with a token and kills it, repeatedly,
  until none is left; ``kill_descendants`` kills a process's whole tree.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import time
from dataclasses import asdict, dataclass

MARKER = "AUTOGRADER_WORKER"
GiB = 1024**3
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Limits:
    """What one submission may use while it is graded. These are the defaults; the
    command line (``grade --cell-timeout ...``) overrides them."""

    cell_timeout: int = 60  # seconds one cell may run before it is interrupted
    wall: int = 300  # seconds a whole notebook may run
    memory: int = 3 * GiB  # address space of the worker and of each kernel it starts
    processes: int = 256  # processes a kernel may add (only enforced for non-root users)
    file_size: int = 1 * GiB  # the largest file a kernel may write
    output: int = 1_000_000  # bytes of output kept per cell; the rest is dropped
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


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Receive ``sig`` when the parent process exits (Linux only)."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def _set(limit: int, soft: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        _, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(limit, (soft, hard))


def apply_memory_limits(limits: Limits) -> None:
    """Limits inherited by every kernel this process starts from now on."""
    _set(resource.RLIMIT_AS, limits.memory)
    _set(resource.RLIMIT_FSIZE, limits.file_size)
    _set(resource.RLIMIT_CORE, 0)


def apply_process_limit(limits: Limits) -> None:
    """Allow ``limits.processes`` more tasks than this user runs now (RLIMIT_NPROC counts
    every thread of the user, machine-wide; root is exempt, see docs/grading.md)."""
    if os.geteuid() == 0:
        return
    import psutil

    uid = os.getuid()
    tasks = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if proc.info["uids"].real == uid:
                tasks += proc.info["num_threads"] or 1
    _set(resource.RLIMIT_NPROC, tasks + limits.processes)


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


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


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


def reap_orphans() -> None:
    """Reap exited children of this (subreaper) process."""
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if child.status() == psutil.STATUS_ZOMBIE:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(child.pid, os.WNOHANG)
