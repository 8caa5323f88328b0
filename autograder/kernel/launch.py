"""Starts a grading kernel under its limits: ``python -I -S launch.py SPEC ARGV...``.

``limits.limited_command`` puts this in front of the kernel's command line. SPEC (JSON)
gives the control groups to move into first (cgroups.py: the kernel and all it starts stay
there), the resource limits (``[["RLIMIT_AS", bytes], ...]``, never above the hard limits
this process has), environment variables to unset, to set, and to set only when missing,
and a file for the kernel's own stdout and stderr (notebook output travels over ZeroMQ, not
there), made anew; with ``log_cap``, a small process of the kernel's group keeps that many
bytes of them in the file and drops the rest. Then it execs ARGV: the kernel keeps this
process id, so the kernel manager signals and watches the kernel itself. Standard library
only: it runs before the course's environment is imported, and quickly.
"""

import json
import os
import resource
import signal
import sys

NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


def join_groups(files: list) -> None:
    """Into the kernel's control groups, or no kernel at all: it must not run unconfined."""
    for path in files:
        try:
            with open(path, "w") as fh:
                fh.write(str(os.getpid()))
        except OSError as exc:
            sys.stderr.write(f"autograder: cannot enter the kernel's cgroup {path}: {exc}\n")
            sys.exit(70)


def keep_log(path: str, cap: int) -> None:
    """Our stdout and stderr into a pipe; a child keeps ``cap`` bytes of it in ``path``
    and drops the rest, however much the kernel writes (no file limit applies to a pipe)."""
    read, write = os.pipe()
    if os.fork() == 0:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the kernel's
            os.closerange(3, read)
            os.closerange(read + 1, 1 << 16)
            log = os.open(path, NEW_FILE, 0o600)
            _copy_capped(read, log, cap)
        finally:
            os._exit(0)
    os.close(read)
    os.dup2(write, 1)
    os.dup2(write, 2)
    os.close(write)


def _copy_capped(read: int, log: int, cap: int) -> None:
    kept = dropped = 0
    null = os.open(os.devnull, os.O_WRONLY)
    while True:
        if kept < cap:
            chunk = os.read(read, min(1 << 16, cap - kept))
            if not chunk:
                break
            kept += os.write(log, chunk)
            continue
        try:
            moved = os.splice(read, null, 1 << 20)
        except (AttributeError, OSError):
            moved = len(os.read(read, 1 << 16))
        if not moved:
            break
        dropped += moved
    if dropped:
        os.write(log, f"\n[{dropped} more bytes were not kept]\n".encode())


def main() -> None:
    spec = json.loads(sys.argv[1])
    join_groups(spec.get("cgroups") or [])
    for name, soft in spec.get("rlimits", []):
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        try:
            _, hard = resource.getrlimit(limit)
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(limit, (soft, soft))  # hard too: the kernel cannot raise it
        except (ValueError, OSError):
            pass
    for name in spec.get("unset", []):
        os.environ.pop(name, None)
    os.environ.update(spec.get("env", {}))
    for name, value in spec.get("defaults", {}).items():
        os.environ.setdefault(name, value)
    log = spec.get("log")
    if log and spec.get("log_cap") is not None and log != os.devnull:
        keep_log(log, int(spec["log_cap"]))
    elif log:
        fd = os.open(log, NEW_FILE if log != os.devnull else os.O_WRONLY, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    argv = sys.argv[2:]
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
