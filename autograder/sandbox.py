"""Grading kernels in a bubblewrap sandbox (Linux user namespaces, no privileges needed).

Isolation levels, recorded with every grade:

- ``bubblewrap``: each kernel runs under ``bwrap`` in its own user, PID, network, IPC and
  mount namespaces, with no capabilities. It sees the system's ``/usr``, the Python
  environment (read-only), a private copy of its notebook's folder (without the notebooks)
  as its working folder, and an empty home and ``/tmp``; all three are size-capped tmpfs in
  memory, gone when the kernel ends. Nothing of the course is there: not ``source/``,
  ``autograder/``, the gradebook, ``submitted/`` or other students. It has no network and
  sees only its own processes, all of which die with it. It talks to the grader over
  ZeroMQ ``ipc`` sockets in one small folder; once the kernel is ready, that folder is made
  read-only for it (for good when grading as root: it is handed to ``nobody``).
- ``none``: the kernel runs as the grader's user in the grader's environment, as before.

``sandbox_status()`` says which level this machine gives (it starts this Python in a
sandbox once per process); ``isolation_for(mode)`` picks the level for a ``GuardedExecute.sandbox``
mode (auto, require, off) and ``kernel_manager_class(level)`` the kernel manager that gives
it: ``SandboxedKernelManager`` for ``bubblewrap``. ``check_for_grading`` is what ``grade``
says and does about it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Integer, Type

from .errors import GraderError

BUBBLEWRAP = "bubblewrap"
NONE = "none"
MODES = ("auto", "require", "off")
BWRAP_ENV = "AUTOGRADER_BWRAP"  # the bwrap program (default: bwrap on PATH)
MIN_VERSION = (0, 8)  # --size (tmpfs limits) and --disable-userns

UID = GID = 1000
HOME = "/home/student"
WORK = f"{HOME}/work"
MiB = 1024**2
SCRATCH_SIZE = 1024 * MiB  # default size of the kernel's home (with its folder) and of /tmp
SHM_SIZE = 64 * MiB
MAX_FILES = 400  # files copied into a kernel's folder (each takes a descriptor)
NOBODY = 65534
KEEP_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS", "NBGRADER_EXECUTION")
PASSWD = f"student:x:{UID}:{GID}:student:{HOME}:/bin/sh\nnobody:x:{NOBODY}:{NOBODY}::/:/bin/false\n"
GROUP = f"student:x:{GID}:\nnogroup:x:{NOBODY}:\n"


class SandboxUnavailable(GraderError):
    """The sandbox was required but this machine cannot give it."""


@dataclass(frozen=True)
class Status:
    level: str  # BUBBLEWRAP or NONE
    reason: str = ""  # why NONE, in a few words


# -- what this machine gives ----------------------------------------------------------------


def bwrap_program() -> str | None:
    given = os.environ.get(BWRAP_ENV)
    return given if given else shutil.which("bwrap")


@functools.cache
def sandbox_status() -> Status:
    """The isolation this machine gives grading kernels, found once per process by starting
    this Python in a sandbox like a kernel's."""
    if not sys.platform.startswith("linux"):
        return Status(NONE, f"bubblewrap needs Linux, this is {sys.platform}")
    bwrap = bwrap_program()
    if not bwrap or not os.access(bwrap, os.X_OK):
        return Status(NONE, "bubblewrap is not installed: apt-get install bubblewrap")
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
        found = re.search(r"(\d+)\.(\d+)", out.stdout)
        if found and tuple(map(int, found.groups())) < MIN_VERSION:
            return Status(NONE, f"bubblewrap {found.group(0)} is too old: 0.8 or newer is needed")
        binds = [arg for src, dest in environment_binds() for arg in ("--ro-bind", src, dest)]
        run = subprocess.run([bwrap, *_base_args(), *binds, "--remount-ro", "/", "--",
                              sys.executable, "-c", "pass"],
                             capture_output=True, text=True, timeout=30, env=_bwrap_env({}))
    except SandboxUnavailable as exc:
        return Status(NONE, str(exc))
    except (OSError, subprocess.SubprocessError) as exc:
        return Status(NONE, f"bubblewrap did not run: {exc}")
    if run.returncode != 0:
        said = (run.stderr.strip().splitlines() or [f"exit code {run.returncode}"])[-1]
        return Status(NONE, f"bubblewrap cannot make a sandbox here: {said.strip()[:160]}; "
                            "are user namespaces disabled?")
    return Status(BUBBLEWRAP)


def isolation_for(mode: str) -> str:
    """The isolation level kernels get for a ``GuardedExecute.sandbox`` mode."""
    if mode not in MODES:
        raise ValueError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "off":
        return NONE
    status = sandbox_status()
    if mode == "require" and status.level != BUBBLEWRAP:
        raise SandboxUnavailable(f"a sandbox is required but not available: {status.reason}")
    return status.level


def kernel_manager_class(level: str) -> type:
    return SandboxedKernelManager if level == BUBBLEWRAP else AsyncKernelManager


def check_for_grading(mode: str, stream) -> str:
    """What ``grade`` does about the sandbox: the mode its workers get ("require" when the
    sandbox works, else "off" after one line on ``stream``). Raises SandboxUnavailable when
    the sandbox is required and not available."""
    if mode == "off":
        return "off"
    status = sandbox_status()
    if status.level == BUBBLEWRAP:
        return "require"
    if mode == "require":
        raise SandboxUnavailable(f"--require-sandbox: grading kernels cannot be sandboxed: "
                                 f"{status.reason}")
    print(f"isolation: none ({status.reason}): grading kernels run unsandboxed, as before; "
          "see docs/grading.md, Isolation (--require-sandbox makes this an error)",
          file=stream, flush=True)
    return "off"


# -- the bwrap command line -------------------------------------------------------------------


def _base_args() -> list[str]:
    """Namespaces, no capabilities, and the system (read-only) without the Python
    environment or any writable place but size-capped tmpfs."""
    args = ["--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(GID),
            "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "grading", "--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/fonts",
                 "/etc/alternatives", "/etc/localtime", "/etc/mime.types",
                 "/var/cache/fontconfig"):
        if os.path.exists(name):
            args += ["--ro-bind", name, name]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(SHM_SIZE), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    return args


def environment_binds() -> list[tuple[str, str]]:
    """(host path, path inside) read-only binds the Python environment needs: derived from
    sys.prefix, sys.base_prefix, the real executable and site-packages, each at its own
    path and at its real path. A path that holds this course's code is never bound."""
    import site
    import sysconfig

    from .course import ROOT

    wanted = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable)), *site.getsitepackages()}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            wanted.add(sysconfig.get_paths()[key])
    pairs = set()
    for path in wanted:
        if not path or not os.path.isdir(path):
            continue
        real = os.path.realpath(path)
        pairs.add((real, real))
        pairs.add((real, os.path.abspath(path)))
    root = os.path.realpath(ROOT)
    for real, _ in pairs:
        if root == real or root.startswith(real.rstrip("/") + "/"):
            raise SandboxUnavailable(f"the Python environment at {real} contains the course "
                                     f"folder {root}: install it elsewhere to sandbox kernels")
    return [p for p in sorted(pairs, key=lambda p: (len(p[1]), p)) if not _covered(p, pairs)]


def _covered(pair: tuple[str, str], pairs) -> bool:
    """``pair`` is inside another bind that already shows the same files there."""
    src, dest = pair
    for src2, dest2 in pairs:
        if ((src2, dest2) != pair and dest.startswith(dest2.rstrip("/") + "/")
                and os.path.join(src2, os.path.relpath(dest, dest2)) == src):
            return True
    return False


def _bwrap_env(host: dict) -> dict:
    """The whole environment of bwrap and the kernel: nothing of the grader's."""
    bindir = os.path.dirname(sys.executable)
    path = [bindir] + [p for p in ("/usr/local/bin", "/usr/bin", "/bin") if p != bindir]
    env = {"PATH": os.pathsep.join(path), "HOME": HOME, "USER": "student",
           "LOGNAME": "student", "SHELL": "/bin/sh", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "COURSEKIT_NO_SELF_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.update({name: host[name] for name in KEEP_ENV if host.get(name)})
    return env


def _visible(path: str, binds: list[tuple[str, str]]) -> bool:
    return any(path == dest or path.startswith(dest.rstrip("/") + "/") for _, dest in binds)


def kernel_arguments(cmd: list[str], binds: list[tuple[str, str]]) -> list[str]:
    """The kernel's command without startup files it could not read inside the sandbox
    (``--IPKernelApp.exec_files=[...]`` naming course files)."""
    out = []
    for arg in cmd:
        if arg.startswith("--IPKernelApp.exec_files="):
            try:
                files = ast.literal_eval(arg.split("=", 1)[1])
            except (ValueError, SyntaxError):
                continue
            keep = [f for f in files if _visible(os.path.abspath(f), binds)]
            if keep:
                out.append(f"--IPKernelApp.exec_files={keep!r}")
            continue
        out.append(arg)
    return out


def _copy_folder(folder: Path, dest: str, fds: list[int]) -> list[str]:
    """bwrap arguments that recreate ``folder`` (without notebooks) at ``dest``: each file
    is read by bwrap from a descriptor opened here (appended to ``fds``)."""
    args = []
    for top, dirs, files in os.walk(folder):
        rel = os.path.relpath(top, folder)
        inside = dest if rel == "." else f"{dest}/{rel}"
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        dirs[:] = sorted(d for d in dirs if d not in links)
        for name in dirs:
            args += ["--dir", f"{inside}/{name}"]
        for name in sorted(files + links):
            path = os.path.join(top, name)
            if name.endswith(".ipynb") and rel == ".":
                continue  # the notebook is the grader's business, not the kernel's
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), f"{inside}/{name}"]
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            if not os.path.isfile(f"/proc/self/fd/{fd}"):
                os.close(fd)
                continue
            fds.append(fd)
            if len(fds) > MAX_FILES:
                raise SandboxUnavailable(f"{folder} holds more than {MAX_FILES} files")
            args += ["--file", str(fd), f"{inside}/{name}"]
    return args


def _data_fd(text: str, fds: list[int]) -> str:
    fd = os.memfd_create("autograder-sandbox")
    os.write(fd, text.encode())
    os.lseek(fd, 0, os.SEEK_SET)
    fds.append(fd)
    return str(fd)


def _work_folder(cwd: str | None) -> Path | None:
    """The folder to copy into the kernel: its cwd, unless there is none or it holds this
    course's code (then the kernel starts in an empty folder)."""
    from .course import ROOT

    if not cwd:
        return None
    real, root = os.path.realpath(cwd), os.path.realpath(ROOT)
    if real == root or root.startswith(real.rstrip("/") + "/") or real == "/":
        return None
    return Path(real)


def sandbox_command(kernel_cmd: list[str], cwd: Path | None, ipc: Path, fds: list[int],
                    size: int = SCRATCH_SIZE) -> list[str]:
    """The whole ``bwrap ... -- kernel`` command line (see the module docstring)."""
    binds = environment_binds()
    args = [bwrap_program() or "bwrap", *_base_args(),
            "--size", str(size), "--tmpfs", "/tmp", "--size", str(size), "--tmpfs", HOME,
            "--ro-bind-data", _data_fd(PASSWD, fds), "/etc/passwd",
            "--ro-bind-data", _data_fd(GROUP, fds), "/etc/group"]
    for src, dest in binds:
        args += ["--ro-bind", src, dest]
    fonts = matplotlib_cache()
    if fonts is not None:
        args += ["--dir", f"{HOME}/.cache/matplotlib",
                 *_copy_folder(fonts, f"{HOME}/.cache/matplotlib", fds)]
    args += ["--dir", WORK, *(_copy_folder(cwd, WORK, fds) if cwd else []),
             "--bind", str(ipc), str(ipc), "--remount-ro", "/",
             "--chdir", WORK, "--setenv", "JPY_PARENT_PID", "1", "--"]
    return args + kernel_arguments(kernel_cmd, binds)


def _hard_limits() -> None:
    """In the kernel's process, before bwrap: the grader's soft limits become hard ones,
    so code in the kernel cannot raise them (Popen's preexec_fn)."""
    for limit in (resource.RLIMIT_AS, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE):
        with contextlib.suppress(ValueError, OSError):
            soft, _ = resource.getrlimit(limit)
            resource.setrlimit(limit, (soft, soft))


# -- matplotlib's font cache, made once inside a sandbox ----------------------------------------


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autograder"


@functools.cache
def matplotlib_cache() -> Path | None:
    """A folder with matplotlib's font list as a sandboxed kernel finds it, so that kernels
    do not build it (seconds, and a message on stderr) on their first import. Made once
    (inside a sandbox) per environment and set of fonts, and kept in the grader's cache."""
    from importlib import metadata

    try:
        version = metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        return None
    h = hashlib.sha256(f"{version}\0{sys.prefix}\0{sys.version}".encode())
    for place in ("/usr/share/fonts", "/usr/local/share/fonts", "/etc/fonts"):
        with contextlib.suppress(OSError):
            h.update(f"{place}\0{os.stat(place).st_mtime_ns}\0".encode())
    folder = _cache_home() / f"matplotlib-{h.hexdigest()[:16]}"
    if folder.is_dir() and any(folder.glob("fontlist-*.json")):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        binds = environment_binds()
        cmd = [bwrap_program() or "bwrap", *_base_args(), "--size", str(SCRATCH_SIZE),
               "--tmpfs", "/tmp", "--size", str(SCRATCH_SIZE), "--tmpfs", HOME]
        for src, dest in binds:
            cmd += ["--ro-bind", src, dest]
        cmd += ["--bind", str(building), f"{HOME}/.cache/matplotlib", "--remount-ro", "/",
                "--chdir", HOME, "--", sys.executable, "-c",
                "import matplotlib.font_manager"]
        run = subprocess.run(cmd, env=_bwrap_env(dict(os.environ)), capture_output=True,
                             timeout=300)
        if run.returncode != 0 or not any(building.glob("fontlist-*.json")):
            return None
        with contextlib.suppress(OSError):  # unless another worker made it first
            building.rename(folder)
        return folder if folder.is_dir() else None
    except (OSError, subprocess.SubprocessError, SandboxUnavailable):
        return None
    finally:
        shutil.rmtree(building, ignore_errors=True)


# -- the kernel manager -------------------------------------------------------------------------


class SandboxedKernelClient(AsyncKernelClient):
    """The client of a sandboxed kernel: when the kernel is ready, its manager seals it."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        await AsyncKernelClient.wait_for_ready(self, timeout)
        seal = getattr(self.parent, "seal", None)
        if seal is not None:
            seal()


class SandboxedKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager with the kernel started under bubblewrap (see the
    module docstring). Interrupts are messages (a signal to bwrap would not reach the
    kernel); shutting the kernel down removes everything it had."""

    scratch_size = Integer(SCRATCH_SIZE, help="bytes the kernel may keep in its home (with "
                           "its working folder), and again in /tmp (tmpfs, in memory)").tag(
                               config=True)

    client_class = DottedObjectName("autograder.sandbox.SandboxedKernelClient")
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

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        assert self._scratch is not None
        fds: list[int] = []
        try:
            cmd = sandbox_command(kernel_cmd, _work_folder(kw.get("cwd")),
                                  self._scratch / "ipc", fds, self.scratch_size)
            kw.update(env=_bwrap_env(kw.get("env") or {}), cwd=str(self._scratch),
                      pass_fds=tuple(fds), preexec_fn=_hard_limits)
            await super()._async_launch_kernel(cmd, **kw)
        except BaseException:
            self._remove_scratch()
            raise
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def seal(self) -> None:
        """Make the kernel's ipc folder (the one host folder it can write) read-only for it,
        once the kernel is ready (its sockets exist and it has read its connection file).
        When grading as root, the folder and the file go to ``nobody``, so the kernel
        cannot make them writable again."""
        if self._scratch is None:
            return
        ipc = self._scratch / "ipc"
        with contextlib.suppress(OSError):
            if os.geteuid() == 0:
                os.chown(self.connection_file, NOBODY, NOBODY)
                os.chown(ipc, NOBODY, NOBODY)
            os.chmod(self.connection_file, 0o444)
            os.chmod(ipc, 0o555)

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
