"""Starts a grading kernel under its limits: ``python -I -S kernel_launch.py SPEC ARGV...``.

``limits.kernel_command`` puts this in front of the kernel's command line. SPEC (JSON)
gives the resource limits (``[["RLIMIT_AS", bytes], ...]``, never above the hard limits
this process has), environment variables to unset, to set, and to set only when missing,
and a file for the kernel's own stdout and stderr (notebook output travels over ZeroMQ, not
there). Then it execs ARGV: the kernel keeps this process id, so the kernel manager
signals and watches the kernel itself. Standard library only: it runs before the
course's environment is imported, and quickly.
"""

import json
import os
import resource
import sys


def main() -> None:
    spec = json.loads(sys.argv[1])
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
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    argv = sys.argv[2:]
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
