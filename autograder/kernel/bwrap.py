"""The bwrap command line of a sandboxed grading kernel (see sandbox.py for what it gives).

``sandboxed_command`` builds it: namespaces and no capabilities (``base_args``), the system and
the Python environment read-only (``environment_binds``), size-capped tmpfs for home,
``/tmp`` and ``/dev/shm``, a copy of the kernel's folder made by bwrap from descriptors
opened here (``copy_folder``), the ipc folder, and the kernel's command without startup
files it could not read (``kernel_arguments``). ``bwrap_env`` is the whole environment of
bwrap and the kernel; ``hard_limits`` makes the grader's limits hard ones;
``matplotlib_cache`` is matplotlib's font list, made once inside a sandbox.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import functools
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import GraderError

BWRAP_ENV = "AUTOGRADER_BWRAP"  # the bwrap program (default: bwrap on PATH)

UID = GID = 1000
HOME = "/home/student"
WORK = f"{HOME}/work"
MiB = 1024**2
SCRATCH_SIZE = 1024 * MiB  # default size of the kernel's home (with its folder) and of /tmp
SHM_SIZE = 64 * MiB
MAX_FILES = 400  # files copied into a kernel's folder (each takes a descriptor)
NOBODY = 65534
KEEP_ENV = (
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NBGRADER_EXECUTION",
)
PASSWD = f"student:x:{UID}:{GID}:student:{HOME}:/bin/sh\nnobody:x:{NOBODY}:{NOBODY}::/:/bin/false\n"
GROUP = f"student:x:{GID}:\nnogroup:x:{NOBODY}:\n"


class SandboxUnavailable(GraderError):
    """The sandbox was required but this machine cannot give it."""


def bwrap_program() -> str | None:
    given = os.environ.get(BWRAP_ENV)
    return given if given else shutil.which("bwrap")


def base_args(shm: int = SHM_SIZE) -> list[str]:
    """Namespaces, no capabilities, and the system (read-only) without the Python
    environment or any writable place but size-capped tmpfs (``shm`` bytes of /dev/shm)."""
    args = [
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(UID),
        "--gid",
        str(GID),
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "grading",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    for name in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/fonts",
        "/etc/alternatives",
        "/etc/localtime",
        "/etc/mime.types",
        "/var/cache/fontconfig",
    ):
        if os.path.exists(name):
            args += ["--ro-bind", name, name]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(shm),
        "--tmpfs",
        "/dev/shm",
        "--remount-ro",
        "/dev",
    ]
    return args


def environment_binds() -> list[tuple[str, str]]:
    """(host path, path inside) read-only binds the Python environment needs: derived from
    sys.prefix, sys.base_prefix, the real executable and site-packages, each at its own
    path and at its real path. A path that holds this course's code is never bound."""
    import site
    import sysconfig

    from ..course import ROOT

    wanted = {
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        *site.getsitepackages(),
    }
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
            raise SandboxUnavailable(
                f"the Python environment at {real} contains the course "
                f"folder {root}: install it elsewhere to sandbox kernels"
            )
    return [p for p in sorted(pairs, key=lambda p: (len(p[1]), p)) if not _covered(p, pairs)]


def _covered(pair: tuple[str, str], pairs) -> bool:
    """``pair`` is inside another bind that already shows the same files there."""
    src, dest = pair
    for src2, dest2 in pairs:
        if (
            (src2, dest2) != pair
            and dest.startswith(dest2.rstrip("/") + "/")
            and os.path.join(src2, os.path.relpath(dest, dest2)) == src
        ):
            return True
    return False


def bwrap_env(host: dict) -> dict:
    """The whole environment of bwrap and the kernel: nothing of the grader's."""
    bindir = os.path.dirname(sys.executable)
    path = [bindir] + [p for p in ("/usr/local/bin", "/usr/bin", "/bin") if p != bindir]
    env = {
        "PATH": os.pathsep.join(path),
        "HOME": HOME,
        "USER": "student",
        "LOGNAME": "student",
        "SHELL": "/bin/sh",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "COURSEKIT_NO_SELF_CHECK": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
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


# Files of a notebook's folder that are nbgrader's business, not the kernel's: the
# notebooks beside it and the submission's time (which would make every student's
# folder different, and no kernel could be started ahead for the next: warm.py).
NOT_COPIED = ("*.ipynb", "timestamp.txt")


def folder_entries(folder: Path):
    """What a kernel's copy of ``folder`` holds, in order: ("dir", rel, None), ("link",
    rel, target) and ("file", rel, path), without the top folder's NOT_COPIED files."""
    for top, dirs, files in os.walk(folder):
        rel = os.path.relpath(top, folder)
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        dirs[:] = sorted(d for d in dirs if d not in links)
        for name in dirs:
            yield "dir", os.path.normpath(os.path.join(rel, name)), None
        for name in sorted(files + links):
            path = os.path.join(top, name)
            if rel == "." and any(fnmatch.fnmatch(name, p) for p in NOT_COPIED):
                continue
            inside = os.path.normpath(os.path.join(rel, name))
            if os.path.islink(path):
                yield "link", inside, os.readlink(path)
            else:
                yield "file", inside, path


def copy_folder(folder: Path, dest: str, fds: list[int]) -> list[str]:
    """bwrap arguments that recreate ``folder`` (without NOT_COPIED files) at ``dest``:
    each file is read by bwrap from a descriptor opened here (appended to ``fds``)."""
    args = []
    for kind, rel, what in folder_entries(folder):
        inside = f"{dest}/{rel}"
        if kind == "dir":
            args += ["--dir", inside]
        elif kind == "link":
            args += ["--symlink", what, inside]
        else:
            try:
                fd = os.open(what, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            if not os.path.isfile(f"/proc/self/fd/{fd}"):
                os.close(fd)
                continue
            fds.append(fd)
            if len(fds) > MAX_FILES:
                raise SandboxUnavailable(f"{folder} holds more than {MAX_FILES} files")
            args += ["--file", str(fd), inside]
    return args


def folder_digest(folder: Path) -> str:
    """A hash of what a kernel's copy of ``folder`` would hold (names, links, bytes)."""
    h = hashlib.sha256()
    for kind, rel, what in folder_entries(folder):
        h.update(f"{kind}\0{rel}\0".encode())
        if kind == "link":
            h.update(what.encode())
        elif kind == "file":
            h.update(_file_hash(what))
        h.update(b"\n")
    return h.hexdigest()


def _file_hash(path: str) -> bytes:
    """The hash of a regular file's bytes (opened as copy_folder opens it), else b"-"."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b"-"
    with os.fdopen(fd, "rb") as fh:
        if not os.path.isfile(f"/proc/self/fd/{fd}"):
            return b"-"
        return hashlib.sha256(fh.read()).digest()


def _data_fd(text: str, fds: list[int]) -> str:
    fd = os.memfd_create("autograder-sandbox")
    os.write(fd, text.encode())
    os.lseek(fd, 0, os.SEEK_SET)
    fds.append(fd)
    return str(fd)


def work_folder(cwd: str | None) -> Path | None:
    """The folder to copy into the kernel: its cwd, unless there is none or it holds this
    course's code (then the kernel starts in an empty folder)."""
    from ..course import ROOT

    if not cwd:
        return None
    real, root = os.path.realpath(cwd), os.path.realpath(ROOT)
    if real == root or root.startswith(real.rstrip("/") + "/") or real == "/":
        return None
    return Path(real)


def sandboxed_command(
    kernel_cmd: list[str],
    cwd: Path | None,
    ipc: Path,
    fds: list[int],
    size: int = SCRATCH_SIZE,
    shm: int = SHM_SIZE,
) -> list[str]:
    """The whole ``bwrap ... -- kernel`` command line (see the module docstring)."""
    binds = environment_binds()
    args = [
        bwrap_program() or "bwrap",
        *base_args(shm),
        "--size",
        str(size),
        "--tmpfs",
        "/tmp",
        "--size",
        str(size),
        "--tmpfs",
        HOME,
        "--ro-bind-data",
        _data_fd(PASSWD, fds),
        "/etc/passwd",
        "--ro-bind-data",
        _data_fd(GROUP, fds),
        "/etc/group",
    ]
    for src, dest in binds:
        args += ["--ro-bind", src, dest]
    fonts = matplotlib_cache()
    if fonts is not None:
        args += [
            "--dir",
            f"{HOME}/.cache/matplotlib",
            *copy_folder(fonts, f"{HOME}/.cache/matplotlib", fds),
        ]
    args += [
        "--dir",
        WORK,
        *(copy_folder(cwd, WORK, fds) if cwd else []),
        "--bind",
        str(ipc),
        str(ipc),
        "--remount-ro",
        "/",
        "--chdir",
        WORK,
        "--setenv",
        "JPY_PARENT_PID",
        "1",
        "--unsetenv",
        "AUTOGRADER_TASK",
        "--",
    ]  # the launcher's marker: host-side only
    return args + kernel_arguments(kernel_cmd, binds)


def hard_limits() -> None:
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
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    except OSError:
        return None  # no cache: kernels that import matplotlib build their own
    try:
        binds = environment_binds()
        cmd = [
            bwrap_program() or "bwrap",
            *base_args(),
            "--size",
            str(SCRATCH_SIZE),
            "--tmpfs",
            "/tmp",
            "--size",
            str(SCRATCH_SIZE),
            "--tmpfs",
            HOME,
        ]
        for src, dest in binds:
            cmd += ["--ro-bind", src, dest]
        cmd += [
            "--bind",
            str(building),
            f"{HOME}/.cache/matplotlib",
            "--remount-ro",
            "/",
            "--chdir",
            HOME,
            "--",
            sys.executable,
            "-c",
            "import matplotlib.font_manager",
        ]
        run = subprocess.run(cmd, env=bwrap_env(dict(os.environ)), capture_output=True, timeout=300)
        if run.returncode != 0 or not any(building.glob("fontlist-*.json")):
            return None
        with contextlib.suppress(OSError):  # unless another worker made it first
            building.rename(folder)
        return folder if folder.is_dir() else None
    except (OSError, subprocess.SubprocessError, SandboxUnavailable):
        return None
    finally:
        shutil.rmtree(building, ignore_errors=True)
