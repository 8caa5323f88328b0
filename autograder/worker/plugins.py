"""The Dask worker side of the grading material: ``GradingMaterial``, a worker plugin.

``grade`` registers one plugin per assignment (material.py says what goes in it). On every
worker, including workers that join later or restart, the plugin

- unpacks its zip into ``<worker's local directory>/autograder-material/<digest>/`` and
  checks that the files there have exactly that digest (a folder already there and intact
  is reused);
- makes sure the worker runs the grader code of that material: ``autograder`` is imported
  from the material folder, unless the worker already imported the very same code (a
  local worker started by ``grade`` from the course itself);
- makes the worker process a child subreaper (Linux), so that whatever a kernel leaves
  behind stays among the worker's descendants, to be killed after each notebook;
- starts importing nbgrader in the background, so the first task does not wait for it.

Tasks (``task_function``) find their material by digest (``locate``) and refuse to run
without it. When ``grade`` is done it unregisters the plugin, which removes the folder
and shuts down the worker's spare kernel (kernel/warm.py).

This module is sent to workers by value (cloudpickle), since they may have nothing of the
course installed: it imports only the standard library and ``distributed``.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import io
import os
import shutil
import sys
import threading
import zipfile
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

PREFIX = "autograder-material-"
FOLDER = "autograder-material"
CODE = "autograder"  # the grader's package, inside the material
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints")


class MaterialError(RuntimeError):
    """The task's grading material is not on this worker (or is not what it should be)."""


def files_digest(files) -> str:
    """A hash of (path, bytes) pairs, in any order."""
    h = hashlib.sha256()
    for rel, data in sorted(files):
        h.update(rel.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:24]


def read_tree(root: Path, prefix: str = "") -> list[tuple[str, bytes]]:
    """(path relative to ``root``, bytes) of every file under ``root`` (links followed;
    caches left out), paths starting with ``prefix``."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIPPED_PARTS for part in rel.parts) or path.suffix == ".pyc":
            continue
        if path.is_file():
            out.append((prefix + rel.as_posix(), path.read_bytes()))
    return out


def code_digest(package: Path) -> str:
    """The digest of a grader package folder's files (as material.py packs them)."""
    return files_digest(read_tree(package, f"{CODE}/"))


class GradingMaterial(WorkerPlugin):
    """One assignment's grading material on every worker (see the module docstring)."""

    idempotent = True  # the same digest is the same material

    def __init__(self, digest: str, code: str, archive: bytes):
        self.name = PREFIX + digest
        self.digest = digest
        self.code = code  # digest of the grader's package inside
        self.archive = archive
        self.path: Path | None = None

    def setup(self, worker):
        base = Path(worker.local_directory) / FOLDER
        self.path = unpack(self.archive, base / self.digest, self.digest)
        self.archive = b""  # unpacked: no need to keep it in memory
        use_code(self.path, self.code)
        become_subreaper()
        threading.Thread(target=_warm_up, name="autograder-warm-up", daemon=True).start()

    def teardown(self, worker):
        warm = sys.modules.get(f"{CODE}.kernel.warm")
        if warm is not None:  # the worker's spare kernel (kernel/warm.py) goes with the run
            with contextlib.suppress(Exception):
                warm.discard_all()
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


class QuietWorker(WorkerPlugin):
    """For the workers ``grade`` starts on this machine: their output (Dask's logs, Python
    warnings) goes to ``worker.log`` in their local directory, not to the terminal."""

    name = "autograder-quiet"
    idempotent = True

    def setup(self, worker):
        log = Path(worker.local_directory) / "worker.log"
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)


def task_function():
    """The Dask task as the scheduler sees it: a pickled ``Job`` in, a pickled ``("ok",
    Result)`` or ``("error", line, traceback)`` out. The scheduler unpickles every task it
    is given, and it has nothing of the course either: only this function, made here so
    that it travels by value, and bytes reach it. The grading is ``worker.grade``,
    imported on the worker from the material."""

    def run_task(payload: bytes) -> bytes:
        import pickle
        import traceback

        try:
            job = pickle.loads(payload)
            result = importlib.import_module(f"{CODE}.worker.task").grade_job(job)
            return pickle.dumps(("ok", result))
        except Exception as exc:
            return pickle.dumps(
                ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()[-3000:])
            )

    return run_task


def locate(worker, digest: str) -> Path:
    """The folder of the material with ``digest`` on this worker (MaterialError if the
    plugin did not set it up here)."""
    plugin = worker.plugins.get(PREFIX + digest)
    path = getattr(plugin, "path", None)
    if path is None or not Path(path).is_dir():
        raise MaterialError(
            f"the grading material {digest} is not on worker {worker.address} "
            "(its plugin failed to set up there: see the worker's log)"
        )
    return Path(path)


def unpack(archive: bytes, dest: Path, digest: str) -> Path:
    """The files of ``archive`` in ``dest``, checked against ``digest``."""
    if dest.is_dir() and files_digest(read_tree(dest)) == digest:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        for info in zf.infolist():
            rel = Path(info.filename)
            if rel.is_absolute() or ".." in rel.parts:
                raise MaterialError(f"unsafe path in the grading material: {info.filename}")
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
    found = files_digest(read_tree(tmp))
    if found != digest:
        shutil.rmtree(tmp, ignore_errors=True)
        raise MaterialError(f"the grading material unpacked with digest {found}, not {digest}")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def use_code(root: Path, code: str) -> None:
    """Import the grader's package from ``root`` from now on, unless the very same code is
    imported already."""
    loaded = sys.modules.get(CODE)
    where = getattr(loaded, "__file__", None)
    if where and code_digest(Path(where).parent) == code:
        return
    for name in [n for n in sys.modules if n == CODE or n.startswith(CODE + ".")]:
        del sys.modules[name]  # another version of the grader: forget it
    sys.path[:] = [p for p in sys.path if f"/{FOLDER}/" not in p]
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # SUBREAPER
    return False


def _warm_up() -> None:
    with contextlib.suppress(Exception):
        importlib.import_module(f"{CODE}.worker.task").warm_up()
