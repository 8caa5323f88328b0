"""Commands run as another unix user when that user cannot reach the interpreter.

A virtualenv's python is often a link into a folder other users cannot enter (pyenv
under /root, mode 0700). The hub then starts each user's server and each course's
services through ``prefix``: as root, in a private mount namespace (``unshare --mount``)
where the closed folder is an empty tmpfs except for the interpreter's folder, bound back
from the real one; then ``setpriv`` changes to the user. Nothing on disk changes, and the
user sees nothing else of the closed folder. Where every user can reach the interpreter,
``cover()`` is None and the hub runs commands as the user directly (JupyterHub's own way).
"""

from __future__ import annotations

import os
import pwd
import stat
import sys
from pathlib import Path


def _closed(path: Path, below: Path | None = None) -> Path | None:
    """The first folder on the way to ``path`` (from ``below``, else /) others cannot enter."""
    for folder in [*reversed(path.parents), path]:
        if below is not None and not folder.is_relative_to(below):
            continue
        if not folder.stat().st_mode & stat.S_IXOTH:
            return folder
    return None


def cover(python: str = sys.executable) -> tuple[Path, Path] | None:
    """(the closed folder, the folder in it to bind back) for ``python``, or None."""
    real = Path(os.path.realpath(python)).parent.parent
    top = _closed(real)
    if top is None or os.geteuid() != 0:
        return None
    keep = top / real.relative_to(top).parts[0]
    return top, keep


def prefix(user: str, python: str = sys.executable) -> list[str]:
    """What runs the rest of a command line as ``user`` (HOME, USER, LOGNAME theirs)."""
    entry = pwd.getpwnam(user)
    as_user = [
        "setpriv",
        f"--reuid={entry.pw_uid}",
        f"--regid={entry.pw_gid}",
        "--init-groups",
        "env",
        f"HOME={entry.pw_dir}",
        f"USER={user}",
        f"LOGNAME={user}",
    ]
    covered = cover(python)
    if covered is None:
        return as_user
    # "." is still the real folder under the tmpfs; --no-canonicalize keeps mount from
    # resolving it to the path, which now names the tmpfs's empty folder.
    script = (
        'cwd=$(pwd) && cd "$2" && mount -t tmpfs -o mode=0755 tmpfs "$1" && mkdir -p "$2" '
        '&& mount --no-canonicalize --bind . "$2" && cd "$cwd" && shift 2 && exec "$@"'
    )
    return ["unshare", "--mount", "sh", "-c", script, "sh", *map(str, covered), *as_user]
