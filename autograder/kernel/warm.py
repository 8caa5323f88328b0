"""A grading worker's spare kernel: started while a notebook runs, so that the next
notebook finds its kernel already up (``GuardedExecute.warm_kernels``).

Starting a sandboxed kernel takes about half a second (its Python, ipykernel, the
sandbox), most of it waiting. A worker that grades one notebook after another starts
the next notebook's kernel as soon as the current one is ready; the next notebook takes
it if it would have started the very same kernel (``spare_key``: the kernel manager, the
kernel, its arguments, the limits, the sandbox's size and the files of its folder), and
otherwise the spare is shut down and a kernel is started as before. A spare is used once
and then destroyed like every kernel: it has run nothing before it is taken (no student
code, no probe), and it is never handed to a second notebook.

While it waits, a spare is not a task's process: ``limits.kill_task_processes``, which
kills what a notebook left behind, spares its process and that process's descendants
(``exempt``), which have run nothing of any student; once a notebook takes it, nothing
protects it and it is killed with that notebook's processes. Only sandboxed kernels are
kept warm: a sandbox's environment is made from a fixed list (bwrap.bwrap_env), so a
spare's is the one the next kernel would get. A spare's own output goes nowhere (a
task's kernel.log lives in the task's scratch folder).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import queue
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from nbclient.util import ensure_async

from . import bwrap


@dataclass
class Spare:
    key: str
    km: object  # a started SandboxedKernelManager
    process: object = None  # psutil.Process of its launcher (bwrap), once started


_lock = threading.Lock()
_spare: Spare | None = None


def spare_key(
    manager: type,
    kernel_name: str,
    arguments: list[str],
    limits: dict,
    scratch_size: int,
    folder: Path | None,
) -> str:
    """What makes two kernels start the same way (see the module docstring)."""
    parts = [
        f"{manager.__module__}.{manager.__qualname__}",
        kernel_name,
        list(arguments),
        limits,
        scratch_size,
        bwrap.folder_digest(folder) if folder is not None else None,
        {name: os.environ.get(name) for name in bwrap.KEEP_ENV},
    ]
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def exempt():
    """The waiting spare's process (a ``psutil.Process``, whose descendants are its own),
    if it is still that process (psutil compares start times: a pid used again by
    another process is not it); else None."""
    with _lock:
        proc = _spare.process if _spare is not None else None
    return proc if proc is not None and proc.is_running() else None


def new_token() -> str:
    """A spare's own TASK_MARKER (limits.py), not the task's it is started in."""
    return secrets.token_hex(8)


def keep(key: str, km) -> None:
    """Keep ``km`` (started) as the spare; a spare already kept is shut down."""
    import psutil

    global _spare
    try:
        process = psutil.Process(km.provisioner.pid)
    except (AttributeError, psutil.Error):
        process = None
    with _lock:
        old, _spare = _spare, Spare(key, km, process)
    if old is not None:
        discard(old)


def take(key: str) -> Spare | None:
    """The spare, if it starts as a kernel for ``key`` would (else it is shut down);
    never the same one twice."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is None:
        return None
    if spare.key != key:
        discard(spare)
        return None
    return spare


def discard(spare: Spare) -> None:
    """Shut a spare down, now."""
    from nbclient.util import run_sync

    with contextlib.suppress(Exception):
        run_sync(spare.km.shutdown_kernel)(now=True)
    with contextlib.suppress(Exception):
        spare.km.stop_kernel_now()


def discard_all() -> None:
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is not None:
        discard(spare)


atexit.register(discard_all)


async def answered(km, kc, timeout: float) -> None:
    """Wait for the spare's kernel_info reply (what wait_for_ready waits for, without its
    0.2 s of draining iopub: replies are told apart by their parent's id anyway)."""
    kc.start_channels()
    msg_id = kc.kernel_info()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not await ensure_async(km.is_alive()):
            raise RuntimeError("the spare kernel died")
        try:
            msg = await ensure_async(kc.get_shell_msg(timeout=1))
        except queue.Empty:
            continue
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            return
    raise RuntimeError("the spare kernel did not answer")
