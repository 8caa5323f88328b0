"""Grading kernels in a bubblewrap sandbox (Linux user namespaces, no privileges needed).

Isolation levels, recorded with every grade:

- ``bubblewrap``: each kernel runs under ``bwrap`` in its own user, PID, network, IPC and
  mount namespaces, with no capabilities. It sees the system's ``/usr``, the Python
  environment (read-only), a private copy of its notebook's folder (without the notebooks)
  as its working folder, and an empty home and ``/tmp``; all three are size-capped tmpfs in
  memory, gone when the kernel ends. Nothing of the course is there: not ``source/``,
  ``autograder/``, the gradebook, ``submitted/`` or other students. It has no network and
  sees only its own processes, all of which die with it. It talks to the grader over
  ZeroMQ ``ipc`` sockets in one small folder; when grading as root, that folder is handed
  to ``nobody`` once the kernel is ready, so the kernel cannot write there either.
- ``none``: the kernel runs as the grader's user in the grader's environment, as before.

``sandbox_status()`` says which level this machine gives (it starts this Python in a
sandbox once per process); ``isolation_for(mode)`` picks the level for a ``Limits.sandbox``
mode (auto, require, off) and ``kernel_manager_class(level)`` the kernel manager that gives
it: ``SandboxedKernelManager`` for ``bubblewrap``. ``check_for_grading`` is what ``grade``
says and does about it, and about confining kernels' CPU. ``bwrap.py`` builds the command
line. At both levels a kernel runs in a control group of its own (cgroups.py: its CPU
share), and what it sends is capped before it is parsed (channels.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Integer, Type, Unicode

from . import bounds, bwrap, cgroups
from . import limits as oslimits
from .bwrap import BWRAP_ENV, SandboxUnavailable, bwrap_program
from .channels import AsyncContext, Guard, LimitedKernelClient, capped_context

__all__ = ["BWRAP_ENV", "SandboxUnavailable", "bwrap_program"]

BUBBLEWRAP = "bubblewrap"
NONE = "none"
MODES = oslimits.SANDBOX_MODES
MIN_VERSION = (0, 8)  # --size (tmpfs limits) and --disable-userns


@dataclass(frozen=True)
class Status:
    level: str  # BUBBLEWRAP or NONE
    reason: str = ""  # why NONE, in a few words


# -- what this machine gives ----------------------------------------------------------------


@functools.cache
def sandbox_status() -> Status:
    """The isolation this machine gives grading kernels, found once per process by starting
    this Python in a sandbox like a kernel's."""
    if not sys.platform.startswith("linux"):
        return Status(NONE, f"bubblewrap needs Linux, this is {sys.platform}")
    program = bwrap_program()
    if not program or not os.access(program, os.X_OK):
        return Status(NONE, "bubblewrap is not installed: apt-get install bubblewrap")
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=10)
        found = re.search(r"(\d+)\.(\d+)", out.stdout)
        if found and tuple(map(int, found.groups())) < MIN_VERSION:
            return Status(NONE, f"bubblewrap {found.group(0)} is too old: 0.8 or newer is needed")
        run = subprocess.run(
            python_in_sandbox(program),
            capture_output=True,
            text=True,
            timeout=30,
            env=bwrap.bwrap_env({}),
        )
    except SandboxUnavailable as exc:
        return Status(NONE, str(exc))
    except (OSError, subprocess.SubprocessError) as exc:
        return Status(NONE, f"bubblewrap did not run: {exc}")
    if run.returncode != 0:
        said = (run.stderr.strip().splitlines() or [f"exit code {run.returncode}"])[-1]
        return Status(
            NONE,
            f"bubblewrap cannot make a sandbox here: {said.strip()[:160]}; "
            "are user namespaces disabled?",
        )
    return Status(BUBBLEWRAP)


def python_in_sandbox(program: str) -> list[str]:
    """This Python running ``pass`` in a sandbox like a kernel's (bwrap ``program``)."""
    binds = [a for src, dest in bwrap.environment_binds() for a in ("--ro-bind", src, dest)]
    python = [sys.executable, "-c", "pass"]
    return [program, *bwrap.base_args(), *binds, "--remount-ro", "/", "--", *python]


def isolation_for(mode: str) -> str:
    """The isolation level kernels get for a ``Limits.sandbox`` mode."""
    if mode not in MODES:
        raise ValueError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "off":
        return NONE
    status = sandbox_status()
    if mode == "require" and status.level != BUBBLEWRAP:
        raise SandboxUnavailable(f"a sandbox is required but not available: {status.reason}")
    return status.level


def kernel_manager_class(level: str) -> type:
    """The kernel manager for grading kernels at ``level``: always under the configured
    limits (``c.Limits``), and under bubblewrap for ``bubblewrap``."""
    return SandboxedKernelManager if level == BUBBLEWRAP else LimitedKernelManager


def check_for_grading(mode: str, stream) -> str:
    """What ``grade`` does about the sandbox and the kernels' CPU: the mode its workers
    get ("require" when the sandbox works, else "off"), after one line on ``stream`` if
    either is missing. Raises SandboxUnavailable when the sandbox is required and either
    is not available."""
    if mode == "off":
        return "off"
    status, cpu = sandbox_status(), cgroups.cpu_status()
    if mode == "require" and status.level != BUBBLEWRAP:
        raise SandboxUnavailable(
            f"--require-sandbox: grading kernels cannot be sandboxed: {status.reason}"
        )
    if mode == "require" and cpu.level == cgroups.NONE:
        raise SandboxUnavailable(
            f"--require-sandbox: grading kernels' CPU cannot be confined: {cpu.reason}"
        )
    said = []
    if status.level != BUBBLEWRAP:
        said.append(
            f"isolation: none ({status.reason}): grading kernels run unsandboxed, as before"
        )
    if cpu.level == cgroups.NONE:
        said.append(f"cpu: not confined ({cpu.reason}): a kernel may slow the others")
    if said:
        print(
            "; ".join(said) + "; see docs/grading.md, Isolation (--require-sandbox makes "
            "this an error)",
            file=stream,
            flush=True,
        )
    return "require" if status.level == BUBBLEWRAP else "off"


# -- the kernel manager -------------------------------------------------------------------------


class SandboxedKernelClient(LimitedKernelClient):
    """The client of a sandboxed kernel: when the kernel is ready, its manager seals it."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        await LimitedKernelClient.wait_for_ready(self, timeout)
        seal = getattr(self.parent, "seal", None)
        if seal is not None:
            seal()


class LimitedKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager with the kernel started under the limits of its
    configuration (``limits``; ``limits.limited_command``: memory, file size, CPU time,
    processes, no core dumps, the task's marker), in a control group of its own
    (cgroups.py: its CPU share), its own stdout and stderr going to ``kernel_log`` (made
    anew, capped, removed with the kernel), and what it sends capped and watched by its
    ``Guard`` (channels.py)."""

    token = Unicode("", help="marks the kernel and what it starts as this task's").tag(config=True)
    kernel_log = Unicode("", help="file for the kernel's own stdout and stderr").tag(config=True)

    client_class = DottedObjectName("autograder.kernel.channels.LimitedKernelClient")
    client_factory = Type(LimitedKernelClient, klass=AsyncKernelClient)
    guard: Guard | None = None
    _group: cgroups.KernelGroup | None = None
    _last_group: cgroups.KernelGroup | None = None  # removed: what it counted stays

    @property
    def limits(self) -> oslimits.Limits:
        """``c.Limits`` of the configuration this manager was made with (GuardedExecute
        gives it its own): the course's, or a job's when ``grade`` runs it."""
        return oslimits.Limits(config=self.config)

    def _context_default(self):
        self._created_context = True
        return capped_context(AsyncContext(), self.limits.message)

    def limited(self, cmd: list[str]) -> list[str]:
        """``cmd`` started through ``launch.py``, under the limits, in a new group."""
        limits = self.limits
        self._remove_group()
        self._remove_log()
        self._group = cgroups.KernelGroup.create(
            limits.cpus, limits.memory, bounds.tasks_bound(limits)
        )
        self.guard = Guard(self, limits)
        procs = self._group.procs_files if self._group is not None else []
        return oslimits.limited_command(
            cmd,
            limits,
            self.token,
            self.kernel_log or None,
            cgroups=procs,
            log_cap=limits.log,
            address_space=bounds.address_space(limits, self._group),
        )

    def format_kernel_cmd(self, extra_arguments=None):
        return self.limited(super().format_kernel_cmd(extra_arguments))

    def cpu_used(self) -> float | None:
        """CPU seconds used by the kernel and all it started (None: not counted here)."""
        return self._group.cpu_seconds() if self._group is not None else None

    def bounds_hit(self) -> tuple[int, int]:
        """(OOM kills, refused forks) in the kernel's group so far: (0, 0) where there is
        no group or no memory or pids bound (bounds.py)."""
        group = self._group or self._last_group
        return (group.oom_kills(), group.refused_forks()) if group else (0, 0)

    def stop_kernel_now(self) -> None:
        """SIGKILL the kernel and everything it started (its group, its descendants)."""
        if self._group is not None:
            self._group.kill(seconds=1)
        pid = getattr(self.provisioner, "pid", None)
        if pid:
            oslimits.kill_descendants(pid, rounds=5)
            with contextlib.suppress(OSError):
                os.kill(pid, 9)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            self._remove_group()
            self._remove_log()

    def _remove_group(self) -> None:
        if self._group is not None:
            self._group.remove()
            self._last_group, self._group = self._group, None

    def _remove_log(self) -> None:
        """What one kernel wrote is never there for the next (the file is also made anew)."""
        if self.kernel_log:
            with contextlib.suppress(OSError):
                os.unlink(self.kernel_log)

    # AsyncKernelManager binds this name to KernelManager's coroutine, not to overrides.
    cleanup_resources = _async_cleanup_resources


class SandboxedKernelManager(LimitedKernelManager):
    """jupyter_client's kernel manager with the kernel started under bubblewrap (see the
    module docstring), itself started under the configured limits. Interrupts are messages
    (a signal to bwrap would not reach the kernel); shutting the kernel down removes
    everything it had."""

    scratch_size = Integer(
        bwrap.SCRATCH_SIZE,
        help="bytes the kernel may keep in its home "
        "(with its working folder), and again in /tmp (tmpfs, in memory)",
    ).tag(config=True)

    client_class = DottedObjectName("autograder.kernel.sandbox.SandboxedKernelClient")
    client_factory = Type(SandboxedKernelClient, klass=AsyncKernelClient)
    _scratch: Path | None = None

    async def _async_pre_start_kernel(self, **kw):
        self._remove_scratch()
        self._scratch = Path(tempfile.mkdtemp(prefix=f"autograder-{os.getpid()}-sandbox-"))
        ipc = self._scratch / "ipc"
        ipc.mkdir()
        self.transport = "ipc"
        self.ip = str(ipc / "kernel")
        self.connection_file = str(ipc / "kernel.json")
        assert self.kernel_spec is not None
        self.kernel_spec.interrupt_mode = "message"
        try:
            return await super()._async_pre_start_kernel(**kw)
        except BaseException:
            self._remove_scratch()
            raise

    def format_kernel_cmd(self, extra_arguments=None):
        # The kernel's own command: bwrap goes around it, and the limits around bwrap, when
        # it is launched (the launcher must run outside the sandbox, which has no course).
        return AsyncKernelManager.format_kernel_cmd(self, extra_arguments)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        assert self._scratch is not None
        fds: list[int] = []
        try:
            cmd = bwrap.sandboxed_command(
                kernel_cmd,
                bwrap.work_folder(kw.get("cwd")),
                self._scratch / "ipc",
                fds,
                *bounds.scratch_sizes(self.scratch_size, self.limits),
            )
            kw.update(
                env=bwrap.bwrap_env(kw.get("env") or {}),
                cwd=str(self._scratch),
                pass_fds=tuple(fds),
                preexec_fn=bwrap.hard_limits,
            )
            await super()._async_launch_kernel(self.limited(cmd), **kw)
        except BaseException:
            self._remove_scratch()
            raise
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def seal(self) -> None:
        """When grading as root, hand the kernel's ipc folder (the one host folder it can
        write) and its connection file to ``nobody``, read-only, once the kernel is ready
        (its sockets exist and it has read the file): the kernel can no longer write there.
        (A kernel of another user owns them and could undo any change, so they stay.)"""
        if self._scratch is None or os.geteuid() != 0:
            return
        ipc = self._scratch / "ipc"
        with contextlib.suppress(OSError):
            for path, mode in ((self.connection_file, 0o444), (ipc, 0o555)):
                os.chown(path, bwrap.NOBODY, bwrap.NOBODY)
                os.chmod(path, mode)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if not restart:
                self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    # AsyncKernelManager binds these names to KernelManager's coroutines, not to overrides.
    pre_start_kernel = _async_pre_start_kernel
    cleanup_resources = _async_cleanup_resources
