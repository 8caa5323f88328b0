"""Each grading kernel's CPU, memory and processes: a control group of its own that it and
everything it starts stay in, whatever sessions they make, so that one student's processes
share one CPU quota (an honest student graded alongside keeps a core), one memory bound
(its processes and the in-memory files of its sandbox: tmpfs pages are charged to the
group of the process that writes them) and one process count.

Levels (``cpu_status()``, found once per process by making a group and removing it):

- ``cgroup2``: a group per kernel under this process's cgroup v2 (its ``cpu`` controller
  delegated, e.g. ``systemd-run --user --scope -p Delegate=yes``), or under the hierarchy's
  root when running as root; ``cpu.max`` caps it, ``cpu.stat`` counts its CPU time.
- ``cgroup1``: a group per kernel in the v1 ``cpu`` hierarchy (writable: usually root),
  ``cpu.cfs_quota_us`` caps it, ``cpuacct.usage`` counts its CPU time.
- ``none`` (the fallback): no share. Each process of the kernel still gets ``RLIMIT_CPU``
  (limits.py), its own CPU time, but a student who starts many processes can slow others.

Memory and processes (``memory_status()``, ``pids_status()``): ``memory.max`` (swap 0)
and ``pids.max`` in a cgroup v2 group where those controllers can be enabled, else
``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``) in the v1 ``memory``
hierarchy and ``pids.max`` in the v1 ``pids`` one; else ``none``, the fallback of
bounds.py (address space per process, size-capped tmpfs, ``RLIMIT_NPROC``).

``KernelGroup.create`` makes a kernel's group; ``launch.py`` moves the kernel into
it before exec (so nothing it starts is ever outside); ``remove`` kills what is left and
removes it. ``AUTOGRADER_CPU=none`` forces the CPU fallback, ``AUTOGRADER_MEMORY=none``
the memory and processes one (docs/grading.md, Isolation).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CPU_ENV = "AUTOGRADER_CPU"  # "none": kernels' CPU is not confined (the fallback)
MEMORY_ENV = "AUTOGRADER_MEMORY"  # "none": no cgroup bounds kernels' memory and processes
V2, V1, NONE = "cgroup2", "cgroup1", "none"
PERIOD = 100_000  # microseconds: the CFS period of a kernel's quota
LEAF = "autograder-grader"  # where a grader moves itself to delegate its cgroup v2
PREFIX = "autograder-kernel-"  # kernels' groups: PREFIX + the grader's process id + "-" ...


@dataclass(frozen=True)
class CpuStatus:
    level: str  # V2, V1 or NONE
    reason: str = ""  # why NONE, in a few words
    bases: tuple[str, ...] = ()  # folders kernels' groups are made in (v1: cpu, cpuacct)


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, type, options) of this process's cgroup mounts."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                out.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return out


def _own(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` ("" for the v2 hierarchy)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if (names == "" and controller == "") or controller in names.split(","):
                return path
    return None


def _join(mount: str, root: str, path: str) -> Path:
    if root != "/" and path.startswith(root):
        path = path[len(root) :]
    return Path(mount) / path.lstrip("/")


def _trial(base: Path, files: dict[str, str]) -> None:
    """Make a group in ``base``, write ``files`` there, remove it (raises OSError)."""
    probe = base / f"autograder-probe-{os.getpid()}-{os.urandom(3).hex()}"
    probe.mkdir()
    try:
        for name, value in files.items():
            (probe / name).write_text(value)
    finally:
        probe.rmdir()


def _v2_base(
    mount: str, root: str, controller: str = "cpu", files: dict[str, str] | None = None
) -> tuple[Path | None, str]:
    own = _own("")
    if own is None:
        return None, "this process is not in the cgroup v2 hierarchy"
    here = _join(mount, root, own)
    candidates = [here.parent if here.name == LEAF else here]
    if os.geteuid() == 0:
        candidates.append(Path(mount))
    files = files if files is not None else {"cpu.max": f"{PERIOD} {PERIOD}"}
    why = f"no {controller} controller delegated to this process's cgroup v2"
    for base in candidates:
        try:
            if controller not in (base / "cgroup.controllers").read_text().split():
                continue
            if controller not in (base / "cgroup.subtree_control").read_text().split():
                _enable(base, controller)
            _trial(base, files)
            return base, ""
        except OSError as exc:
            why = f"cannot make a cgroup v2 with {', '.join(files)}: {exc.strerror or exc}"
    return None, why


def _enable(base: Path, controller: str) -> None:
    """``+controller`` in ``base``'s subtree; a group that holds only this process moves it
    to a leaf first (cgroup v2 gives controllers only to groups without processes)."""
    try:
        (base / "cgroup.subtree_control").write_text(f"+{controller}")
    except OSError:
        procs = (base / "cgroup.procs").read_text().split()
        if procs != [str(os.getpid())]:
            raise
        (base / LEAF).mkdir(exist_ok=True)
        (base / LEAF / "cgroup.procs").write_text(str(os.getpid()))
        (base / "cgroup.subtree_control").write_text(f"+{controller}")


def _v1_base(mounts, name: str) -> Path | None:
    """This process's group in the v1 hierarchy of controller ``name`` (None: not mounted)."""
    own = _own(name)
    for root, point, kind, options in mounts:
        if kind == "cgroup" and name in options and own is not None:
            return _join(point, root, own)
    return None


def _v1_bases(mounts) -> tuple[tuple[Path, ...], str]:
    found = {n: b for n in ("cpu", "cpuacct") if (b := _v1_base(mounts, n)) is not None}
    if "cpu" not in found:
        return (), "no cgroup v1 cpu hierarchy is mounted"
    try:
        _trial(found["cpu"], {"cpu.cfs_period_us": str(PERIOD), "cpu.cfs_quota_us": str(PERIOD)})
    except OSError as exc:
        return (), f"cannot make a cgroup v1 cpu group: {exc.strerror or exc}"
    bases = [found["cpu"]]
    acct = found.get("cpuacct")
    if acct is not None and acct != found["cpu"]:
        with contextlib.suppress(OSError):
            _trial(acct, {})
            bases.append(acct)
    return tuple(bases), ""


@functools.cache
def cpu_status() -> CpuStatus:
    """How this machine confines grading kernels' CPU (see the module docstring)."""
    if os.environ.get(CPU_ENV, "").lower() in ("none", "off", "0"):
        return CpuStatus(NONE, f"{CPU_ENV}=none")
    mounts = _mounts()
    if not mounts:
        return CpuStatus(NONE, "no cgroup file system is mounted")
    reasons = []
    for root, point, kind, _ in mounts:
        if kind == "cgroup2":
            base, why = _v2_base(point, root)
            if base is not None:
                return CpuStatus(V2, bases=(str(base),))
            reasons.append(why)
    bases, why = _v1_bases(mounts)
    if bases:
        return CpuStatus(V1, bases=tuple(map(str, bases)))
    reasons.append(why)
    return CpuStatus(NONE, "; ".join(reasons))


# What a trial group takes, per controller and level: a bound written, then removed.
BOUND_FILES = {
    ("memory", V2): {"memory.max": str(1 << 30)},
    ("memory", V1): {"memory.limit_in_bytes": str(1 << 30)},
    ("pids", V2): {"pids.max": "100"},
    ("pids", V1): {"pids.max": "100"},
}


def _bound_status(controller: str) -> CpuStatus:
    """Where kernels' groups with a ``controller`` (memory, pids) bound are made."""
    if os.environ.get(MEMORY_ENV, "").lower() in ("none", "off", "0"):
        return CpuStatus(NONE, f"{MEMORY_ENV}=none")
    mounts = _mounts()
    if not mounts:
        return CpuStatus(NONE, "no cgroup file system is mounted")
    reasons = []
    for root, point, kind, _ in mounts:
        if kind == "cgroup2":
            base, why = _v2_base(point, root, controller, BOUND_FILES[controller, V2])
            if base is not None:
                return CpuStatus(V2, bases=(str(base),))
            reasons.append(why)
    base = _v1_base(mounts, controller)
    if base is None:
        reasons.append(f"no cgroup {controller} controller is mounted")
        return CpuStatus(NONE, "; ".join(reasons))
    try:
        _trial(base, BOUND_FILES[controller, V1])
    except OSError as exc:
        reasons.append(f"cannot make a cgroup v1 {controller} group: {exc.strerror or exc}")
        return CpuStatus(NONE, "; ".join(reasons))
    return CpuStatus(V1, bases=(str(base),))


@functools.cache
def memory_status() -> CpuStatus:
    """How this machine bounds all of a kernel's memory (processes and in-memory files)."""
    return _bound_status("memory")


@functools.cache
def pids_status() -> CpuStatus:
    """How this machine bounds the number of a kernel's processes (and threads)."""
    return _bound_status("pids")


def sweep(status: CpuStatus) -> None:
    """Remove the groups of kernels whose grader process is gone (killed before it could
    remove them), with whatever is left in them."""
    for base in status.bases:
        for folder in Path(base).glob(f"{PREFIX}*"):
            with contextlib.suppress(ValueError, IndexError):
                pid = int(folder.name[len(PREFIX) :].split("-")[0])
                if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
                    KernelGroup(status.level, [folder]).remove()


class KernelGroup:
    """One kernel's control group (in each hierarchy of ``cpu_status().bases``, and in
    those of ``memory_status()`` and ``pids_status()``: ``memory`` and ``tasks`` are
    (level, folder) where its memory and process count are bounded)."""

    def __init__(self, level: str, folders: list[Path], memory=None, tasks=None):
        self.level = level  # the CPU's: V2, V1 or NONE
        self.folders = folders
        self.memory: tuple[str, Path] | None = memory
        self.tasks: tuple[str, Path] | None = tasks
        self.ooms = 0  # OOM kills counted when the group was removed

    @classmethod
    def create(cls, cpus: float, memory: int = 0, tasks: int = 0) -> KernelGroup | None:
        """A new group capped at ``cpus`` cores and, where this machine can and they are
        given, at ``memory`` bytes in all (no swap) and ``tasks`` processes and threads
        (None when nothing is confined here)."""
        cpu = cpu_status()
        bounds = [(memory_status() if memory else CpuStatus(NONE), "memory")]
        bounds.append((pids_status() if tasks else CpuStatus(NONE), "pids"))
        name = f"{PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        folders = [Path(base) / name for base in cpu.bases if cpu.level != NONE]
        found = {}
        for status, what in bounds:
            if status.level != NONE:
                sweep(status)
                found[what] = (status.level, Path(status.bases[0]) / name)
                if found[what][1] not in folders:
                    folders.append(found[what][1])
        if not folders:
            return None
        sweep(cpu)
        group = cls(cpu.level, folders, found.get("memory"), found.get("pids"))
        quota = max(1000, int(cpus * PERIOD))
        try:
            for folder in group.folders:
                folder.mkdir()
            if cpu.level == V2:
                (group.folders[0] / "cpu.max").write_text(f"{quota} {PERIOD}")
            elif cpu.level == V1:
                (group.folders[0] / "cpu.cfs_period_us").write_text(str(PERIOD))
                (group.folders[0] / "cpu.cfs_quota_us").write_text(str(quota))
            if group.memory is not None:
                group._bound_memory(memory)
            if group.tasks is not None:
                (group.tasks[1] / "pids.max").write_text(str(tasks))
        except OSError:
            group.remove()
            raise
        return group

    def _bound_memory(self, memory: int) -> None:
        level, folder = self.memory
        if level == V2:
            (folder / "memory.max").write_text(str(memory))
            with contextlib.suppress(FileNotFoundError):  # no swap accounting: no swap
                (folder / "memory.swap.max").write_text("0")
            return
        (folder / "memory.limit_in_bytes").write_text(str(memory))
        with contextlib.suppress(FileNotFoundError):
            (folder / "memory.memsw.limit_in_bytes").write_text(str(memory))
        with contextlib.suppress(OSError):
            (folder / "memory.swappiness").write_text("0")

    def _count(self, bound, files: dict[str, str], key: str) -> int:
        """The ``key`` counter of ``bound``'s events file (``files[level]``), or 0."""
        if bound is None:
            return 0
        level, folder = bound
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in (folder / files[level]).read_text().splitlines():
                if line.split()[0] == key:
                    return int(line.split()[1])
        return 0

    def oom_kills(self) -> int:
        """Processes of the group the OOM killer killed at its memory bound (so far)."""
        found = {V2: "memory.events", V1: "memory.oom_control"}
        return max(self.ooms, self._count(self.memory, found, "oom_kill"))

    def refused_forks(self) -> int:
        """Forks (and new threads) refused at the group's process bound (so far)."""
        return self._count(self.tasks, {V2: "pids.events", V1: "pids.events"}, "max")

    @property
    def procs_files(self) -> list[str]:
        """The files ``launch.py`` writes its own process id to."""
        return [str(folder / "cgroup.procs") for folder in self.folders]

    def pids(self) -> set[int]:
        found = set()
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return found

    def cpu_seconds(self) -> float | None:
        """CPU time used by everything that ran in the group."""
        try:
            if self.level == V2:
                for line in (self.folders[0] / "cpu.stat").read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
            for folder in self.folders:
                usage = folder / "cpuacct.usage"
                if usage.exists():
                    return int(usage.read_text()) / 1e9
        except (OSError, ValueError):
            pass
        return None

    def kill(self, seconds: float = 5) -> bool:
        """SIGKILL everything in the group, again until it is empty; True if it is."""
        if self.level == V2:
            with contextlib.suppress(OSError):
                (self.folders[0] / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + seconds
        while True:
            pids = self.pids()
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left in the group and remove it."""
        self.kill()
        self.ooms = self.oom_kills()
        for folder in self.folders:
            for _ in range(200):  # a killed task leaves its group when the kernel reaps it
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
