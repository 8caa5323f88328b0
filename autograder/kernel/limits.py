"""Operating-system limits for grading: what one submission may use, and how everything it
started is found and killed afterwards.

- ``Limits``: the per-cell time limit, the whole-notebook wall limit, the kernel's memory
  (``RLIMIT_AS``), how many extra processes it may start (``RLIMIT_NPROC``, which root
  ignores), the largest file it may write, how much output one cell may keep and how many
  bytes its kernel may send, its CPU share (cgroups.py), its CPU time (``RLIMIT_CPU``
  per process, and the whole group's where cgroups count it) and the sandbox mode. It is
  traitlets configuration, ``c.Limits.<name>`` in nbgrader_config.py, so ``grade``,
  ``nbgrader autograde`` and formgrader grade under the same limits: GuardedExecute and
  the kernel managers (sandbox.py) read ``Limits(config=...)`` of their configuration,
  into which a grading worker writes its job's limits.
- The limits are the kernel's own: ``limited_command`` wraps the kernel's command line in a
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
import re
import sys
import time

from traitlets import Enum, Float, Integer, TraitError, default
from traitlets.config import Config, Configurable

from ..errors import GraderError

MARKER = "AUTOGRADER_WORKER"  # a grade run's local workers and everything they start
TASK_MARKER = "AUTOGRADER_TASK"  # one task's kernels and everything they start
GiB = 1024**3
MiB = 1024**2
PR_SET_CHILD_SUBREAPER = 36
SANDBOX_MODES = ("auto", "require", "off")  # Limits.sandbox (sandbox.py)


class LimitError(GraderError):
    """A limit that is not a value it can take (nbgrader_config.py or the command line)."""


class Bytes(Integer):
    """A number of bytes: an int, or a size such as "3G" or "512M" (``parse_size``)."""

    info_text = "a number of bytes or a size such as 3G or 512M"

    def validate(self, obj, value):
        if isinstance(value, str):
            try:
                value = parse_size(value)
            except ValueError:
                self.error(obj, value)
        return super().validate(obj, value)

    def from_string(self, s: str) -> str:
        return s  # --Limits.memory=3G on nbgrader's command line: validate() reads it


class Limits(Configurable):
    """What one submission may use while it is graded: ``c.Limits.<name>`` in
    nbgrader_config.py, read alike by ``grade``, ``nbgrader autograde`` and formgrader.
    ``grade``'s command line overrides some for one run (``for_course``), and its workers
    get the run's values as configuration (``as_config``)."""

    cell_timeout = Integer(
        min=0,
        help="seconds one cell may run before it is interrupted "
        "(0: no limit; default: c.Execute.timeout, else 60)",
    ).tag(config=True)
    wall = Integer(300, min=0, help="seconds a whole notebook may run (0: no limit)").tag(
        config=True
    )
    memory = Bytes(
        3 * GiB,
        min=1,
        help="memory of each kernel: all its processes and in-memory files where a cgroup "
        "bounds them, else each process's address space (bounds.py)",
    ).tag(config=True)
    processes = Integer(
        256,
        min=0,
        help="processes a kernel may add (a pids cgroup, else RLIMIT_NPROC for non-root users)",
    ).tag(config=True)
    file_size = Bytes(1 * GiB, min=0, help="the largest file a kernel may write").tag(config=True)
    output = Bytes(1_000_000, min=0, help="bytes of output kept per cell; the rest is dropped").tag(
        config=True
    )
    message = Bytes(
        32 * MiB, min=1, help="the largest message a kernel may send (over ZeroMQ)"
    ).tag(config=True)
    sent = Bytes(256 * MiB, min=1, help="bytes a kernel may send while one cell runs").tag(
        config=True
    )
    log = Bytes(
        64 * 1024, min=0, help="bytes kept of the kernel's own stdout and stderr (kernel.log)"
    ).tag(config=True)
    cpus = Float(1.0, min=0.01, help="cores a kernel and all its processes share (cgroups.py)").tag(
        config=True
    )
    cpu_time = Integer(
        0, min=0, help="CPU seconds a kernel may use in all (0: the notebook's wall limit)"
    ).tag(config=True)
    attempts = Integer(
        3, min=1, help="runs of a notebook at most (after a crash the rest is run again)"
    ).tag(config=True)
    sandbox = Enum(
        SANDBOX_MODES,
        "auto",
        help="kernels under bubblewrap: auto (when this machine can), require or off (sandbox.py)",
    ).tag(config=True)

    def __init__(self, **kwargs):
        """``Limits(wall=240, ...)``, ``Limits(config=...)`` or ``Limits(parent=...)``:
        the defaults, then ``c.Limits`` of the configuration, then the values given."""
        unknown = set(kwargs) - set(self.names()) - {"config", "parent"}
        if unknown:
            raise TypeError(f"Limits has no {', '.join(sorted(unknown))}")
        try:
            super().__init__(**kwargs)
        except TraitError as exc:
            found = re.search(r"'(\w+)' trait", str(exc))
            setting = f"c.Limits.{found.group(1)}" if found else "c.Limits"
            raise LimitError(
                f"bad limit {setting} (nbgrader_config.py, or grade's command line): {exc}"
            ) from None

    @default("cell_timeout")
    def _execute_timeout(self) -> int:
        """nbgrader's own per-cell limit, ``c.Execute.timeout``, when ``c.Limits.
        cell_timeout`` is not set (a new section is not made by looking)."""
        timeout = self.config.get("Execute", {}).get("timeout")
        return timeout if isinstance(timeout, int) and timeout > 0 else 60

    @classmethod
    def names(cls) -> list[str]:
        """The limits, in the order they are defined."""
        settings = cls.class_traits(config=True)
        return [name for name in vars(cls) if name in settings]

    @classmethod
    def for_course(cls, config=None, **given) -> Limits:
        """The defaults, then the course's ``config`` (nbgrader_config.py: ``c.Limits``,
        and ``c.Execute.timeout`` per cell unless ``c.Limits.cell_timeout`` is set), then
        the values ``given`` that are not None (the command line)."""
        chosen = {name: value for name, value in given.items() if value is not None}
        return cls(config=Config(config or {}), **chosen)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.names()}

    def as_config(self) -> Config:
        """These values as configuration, ``c.Limits.<name>``: given to nbgrader's
        Autograde by a grading worker, they win over the course's own settings."""
        return Config({"Limits": self.as_dict()})

    def replace(self, **changes) -> Limits:
        """A copy with ``changes`` (like ``dataclasses.replace``)."""
        return type(self)(**{**self.as_dict(), **changes})

    def __eq__(self, other) -> bool:
        if not isinstance(other, Limits):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # equal by value, and mutable

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in self.as_dict().items())
        return f"Limits({values})"

    def __reduce__(self):
        """Pickled (in a ``Job``, to Dask workers) as its values alone: not the
        configuration or parent it was made with."""
        return _from_values, (self.as_dict(),)

    def run_seconds(self, notebooks: int) -> float:
        """How long one run of a submission's ``notebooks`` may take in all, beyond which
        it is stopped: each notebook's wall limit and a minute, and two minutes more."""
        return 120 + max(1, notebooks) * (self.wall + 60)

    def cpu_seconds(self) -> int:
        """CPU seconds a kernel may use (0: no limit): never more than a kernel held to
        ``cpus`` cores can use within the notebook's wall limit."""
        return self.cpu_time or int(self.wall * max(1.0, self.cpus))

    def describe(self) -> str:
        return (
            f"{self.cell_timeout} s per cell, {self.wall} s per notebook, "
            f"{self.memory / GiB:g} GiB of memory"
        )


def _from_values(values: dict) -> Limits:
    return Limits(**values)


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


def kernel_rlimits(limits: Limits, address_space: int | None = None) -> list[tuple[str, int]]:
    """The resource limits a grading kernel starts with: its address space (its memory,
    or ``address_space`` where a cgroup bounds its memory: bounds.py), the largest file it
    may write, no core dumps, the CPU time of each of its processes, and
    ``limits.processes`` more tasks than this user runs now (RLIMIT_NPROC counts every
    thread of the user, machine-wide; root is exempt, see docs/grading.md)."""
    out = [
        ("RLIMIT_AS", address_space or limits.memory),
        ("RLIMIT_FSIZE", limits.file_size),
        ("RLIMIT_CORE", 0),
    ]
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


def limited_command(
    argv: list[str],
    limits: Limits,
    token: str,
    log: str | None = None,
    cgroups: list[str] = (),
    log_cap: int | None = None,
    address_space: int | None = None,
) -> list[str]:
    """``argv`` (a kernel's command line) started through ``launch.py``, which moves
    itself into the kernel's control group (``cgroups``: its ``cgroup.procs`` files), sets
    the kernel's limits and ``TASK_MARKER=token``, sends its own stdout and stderr to
    ``log`` (a new file; with ``log_cap``, through a pipe of which a small process keeps
    that many bytes), and then execs it (same process: nothing stays in between)."""
    spec = {
        "rlimits": kernel_rlimits(limits, address_space),
        "env": {TASK_MARKER: token},
        "defaults": {name: "1" for name in KERNEL_THREADS},
        "log": log or os.devnull,
        "log_cap": log_cap if log else None,
        "cgroups": list(cgroups),
        "unset": ["MALLOC_TRIM_THRESHOLD_"],
    }  # Dask sets it for its workers: not kernels
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


def kill_task_processes(spare: set[int], rounds: int = 20, keep=None) -> int:
    """SIGKILL, until none is left, every descendant of this process except ``spare``
    (``own_processes()`` from before the task: the worker's own helpers) and the process
    ``keep`` (a ``psutil.Process``) with its descendants (the worker's spare kernel,
    warm.py: looked up at each round, as it may still be starting), and reap orphans
    that already exited. A worker
    grades one task at a time (worker/task.py), so everything else is what the task's
    kernels left behind."""
    import psutil

    def find() -> list:
        try:
            found = psutil.Process().children(recursive=True)
        except psutil.Error:
            return []
        kept = set(spare)
        if keep is not None:
            with contextlib.suppress(psutil.Error):
                if keep.is_running():
                    kept |= {keep.pid, *(p.pid for p in keep.children(recursive=True))}
        return [p for p in found if p.pid not in kept]

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
