"""One bound on all of a grading kernel's memory, one on its processes, and what ``grade``
says about them at start.

- **cgroup** (where cgroups.py can bound memory: ``memory_status()``): a kernel's group
  holds ``Limits.memory`` bytes in all, without swap: every process it starts and what it
  writes to its in-memory home, ``/tmp`` and ``/dev/shm`` (tmpfs pages are charged to the
  group of the process that writes them). Past it the OOM killer kills one of its
  processes, and the cell's note says it ran out of memory. Each process also keeps
  ``RLIMIT_AS`` at 1 GiB more (address space reserved, not used: a kernel reserves
  650 MB for 60 MB it uses), so one huge allocation is a ``MemoryError``.
- **fallback** (no memory controller): ``RLIMIT_AS`` per process, as before, and the
  sandbox's home and ``/tmp`` capped at a quarter of ``Limits.memory`` each (``/dev/shm``
  at 64 MiB), so in-memory files are bounded too; what several processes hold is not.
- Processes: ``pids.max`` of ``Limits.processes`` + ``BASE_TASKS`` (the kernel's own
  threads, bwrap, its log keeper) in the group where the pids controller is; else
  ``RLIMIT_NPROC`` (limits.py), which root ignores.
- ``fit_memory``: the bound is never more than every kernel running at once can have on
  this machine (``for_grading``: what ``grade`` grades with and says).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from . import bwrap, cgroups
from .limits import GiB, Limits, MiB

BASE_TASKS = 64  # tasks of a kernel that are not the student's: its threads, bwrap, a logger
RESERVE = 2 * GiB  # the system and the grader
PER_WORKER = GiB // 2  # a grading worker's own memory (its kernels have theirs)
KERNELS_PER_WORKER = 2  # the kernel grading, and the spare started meanwhile (warm.py)
MIN_MEMORY = 256 * MiB
MIN_SCRATCH = 16 * MiB
HEADROOM = GiB  # address space beyond the memory bound, where the cgroup is the bound


def by_cgroup() -> bool:
    return cgroups.memory_status().level != cgroups.NONE


def tasks_bound(limits: Limits) -> int:
    """``pids.max`` of a kernel's group."""
    return limits.processes + BASE_TASKS


def scratch_sizes(size: int, limits: Limits) -> tuple[int, int]:
    """The sizes of the sandbox's home and ``/tmp`` (each), and of its ``/dev/shm``. With
    the cgroup, ``size`` and as much for ``/dev/shm``: the kernel's memory bounds them
    together. In the fallback, a quarter of the kernel's memory each at most, and 64 MiB."""
    if by_cgroup():
        return size, size
    return min(size, max(MIN_SCRATCH, limits.memory // 4)), bwrap.SHM_SIZE


def address_space(limits: Limits, group: cgroups.KernelGroup | None) -> int:
    """A kernel's ``RLIMIT_AS``: its memory, and ``HEADROOM`` more where its group bounds
    its memory (a kernel reserves far more address space than it uses: 650 MB for 60 MB)."""
    return limits.memory + (HEADROOM if group is not None and group.memory else 0)


def machine_memory() -> int:
    """This machine's memory, or less when the grader's own cgroup is bounded lower."""
    total = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
    mounts = cgroups._mounts()
    own = [cgroups._v1_base(mounts, "memory")]
    for root, point, kind, _ in mounts:
        path = cgroups._own("")
        if kind == "cgroup2" and path is not None:
            own.append(cgroups._join(point, root, path))
    for folder in own:
        for name in ("memory.max", "memory.limit_in_bytes"):
            with contextlib.suppress(OSError, ValueError, TypeError):
                bound = int((folder / name).read_text())
                total = min(total, bound) if total else bound
    return total


def fit_memory(memory: int, workers: int, total: int | None = None) -> int:
    """``memory``, or less so that every kernel of ``workers`` local workers fits the
    machine (``total`` bytes) at once: (total - reserve) / kernels, at least MIN_MEMORY."""
    total = machine_memory() if total is None else total
    if not total:
        return memory
    kernels = max(1, workers) * KERNELS_PER_WORKER
    share = (total - RESERVE - max(1, workers) * PER_WORKER) // kernels
    return max(min(memory, MIN_MEMORY), min(memory, share))


def shown(n: int) -> str:
    return f"{n / GiB:.3g} GiB" if n >= GiB else f"{n / MiB:.4g} MiB"


def describe(limits: Limits, asked: int | None = None, workers: int = 0) -> str:
    """One line: the bound on each kernel's memory and on its processes, and how."""
    mem, pids = cgroups.memory_status(), cgroups.pids_status()
    if mem.level != cgroups.NONE:
        memory = f"{shown(limits.memory)} per kernel, all its processes and in-memory files"
        memory += f" ({mem.level} memory limit)"
    else:
        home, shm = scratch_sizes(bwrap.SCRATCH_SIZE, limits)
        files = 2 * home + shm
        memory = (
            f"{shown(limits.memory)} per process (address space), in-memory files "
            f"{shown(files)} more (fallback: {mem.reason})"
        )
    if asked is not None and asked > limits.memory:
        memory += (
            f", not the {shown(asked)} asked, so that {workers * KERNELS_PER_WORKER} "
            f"kernels fit this machine's {shown(machine_memory())}"
        )
    if pids.level != cgroups.NONE:
        procs = f"{tasks_bound(limits)} per kernel with its threads ({pids.level} pids.max)"
    elif os.geteuid() == 0:
        procs = f"not bounded when grading as root (no pids cgroup: {pids.reason})"
    else:
        procs = f"{limits.processes} more than the user runs (RLIMIT_NPROC)"
    return f"memory: {memory}; processes: {procs}"


def for_grading(limits: Limits, workers: int | None) -> tuple[Limits, str]:
    """The limits ``grade`` grades with (the memory fitted to ``workers`` local workers;
    None: a cluster, whose machines are not known here) and its line about them."""
    if workers is None:
        return limits, describe(limits)
    fitted = limits.replace(memory=fit_memory(limits.memory, workers))
    return fitted, describe(fitted, limits.memory, workers)
