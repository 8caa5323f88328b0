"""A submission folder read without trusting it: walked without recursion and within
bounds (depth, files, bytes) before anything is copied, and copied file by file.

Only regular files are taken: a named pipe, a socket or a device refuses the submission
(one line naming it); links are ignored (neither followed nor copied). A copy is made in
a temporary folder beside its destination and renamed into place when whole; whatever
goes wrong on the way, the half-made copy is removed and the reason is one line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..ngshare.client import Limits

PARTIAL = ".partial-"  # the prefix of a copy being made (removed if left behind)
CHUNK = 1 << 20


class Refused(Exception):
    """A submission that cannot be taken; its message is the one-line reason."""


# What a submission may hold (bytes, files, depth): the one kind of bounds, also for
# ngshare's file lists (autograder/ngshare/client.py: the standard library only).
Bounds = Limits


@dataclass
class Tree:
    """What a walk found: regular files (relative paths, in walk order) and folders."""

    files: list[tuple[str, int]] = field(default_factory=list)  # (relative path, size)
    folders: list[str] = field(default_factory=list)
    links: int = 0
    bytes: int = 0
    newest_mtime: float = 0.0
    newest_ctime: float = 0.0  # a time the owner cannot set back: the last change landing


def walk(top: Path, bounds: Bounds) -> Tree:
    """The regular files and folders under ``top`` (itself a folder, not a link), or
    ``Refused`` at the first entry past ``bounds`` or of a kind that is not taken."""
    st = os.lstat(top)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused("it is not a folder")
    tree = Tree(newest_mtime=st.st_mtime, newest_ctime=st.st_ctime)
    stack: list[tuple[str, int]] = [("", 0)]
    entries = 0
    while stack:
        rel, depth = stack.pop()
        try:
            with os.scandir(top / rel if rel else top) as it:
                found = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise Refused(f"{_show(rel)} cannot be read ({exc.strerror or exc})") from None
        entries += len(found)
        if entries > bounds.max_files * 2 + 100:  # folders and links count too, loosely
            raise Refused(f"it holds more than {bounds.max_files} files (c.Watch.max_files)")
        for e in found:
            name = f"{rel}/{e.name}" if rel else e.name
            try:
                est = e.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            tree.newest_mtime = max(tree.newest_mtime, est.st_mtime)
            tree.newest_ctime = max(tree.newest_ctime, est.st_ctime)
            mode = est.st_mode
            if stat.S_ISLNK(mode):
                tree.links += 1
            elif stat.S_ISDIR(mode):
                if depth + 1 > bounds.max_depth:
                    raise Refused(
                        f"its folders nest more than {bounds.max_depth} deep (c.Watch.max_depth)"
                    )
                tree.folders.append(name)
                stack.append((name, depth + 1))
            elif stat.S_ISREG(mode):
                tree.files.append((name, est.st_size))
                tree.bytes += est.st_size
                if len(tree.files) > bounds.max_files:
                    raise Refused(
                        f"it holds more than {bounds.max_files} files (c.Watch.max_files)"
                    )
                if tree.bytes > bounds.max_bytes:
                    raise Refused(
                        f"it holds more than {bounds.max_bytes / 1024**2:g} MB "
                        "(the limit: c.Watch.max_bytes)"
                    )
            else:
                raise Refused(f"{_show(name)} is {_kind(mode)}, not a regular file")
    return tree


def copy(
    top: Path,
    tree: Tree,
    dest: Path,
    bounds: Bounds,
    skip: Callable[[str], bool] = lambda rel: False,
) -> None:
    """Copy the files of ``tree`` (a ``walk`` of ``top``) into ``dest``, which appears
    whole or not at all. A file that is no longer a regular file, or that grew past the
    bounds, refuses the copy; the half-made copy is removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f"{PARTIAL}{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        for rel in tree.folders:
            if not skip(rel):
                (tmp / rel).mkdir(parents=True, exist_ok=True)
        total = 0
        for rel, _ in tree.files:
            if skip(rel):
                continue
            total += _copy_file(top / rel, tmp / rel, bounds.max_bytes - total, rel)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _copy_file(src: Path, dst: Path, room: int, rel: str) -> int:
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Refused(f"{_show(rel)} cannot be read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(f"{_show(rel)} is {_kind(mode)}, not a regular file")
        written = 0
        dst.parent.mkdir(parents=True, exist_ok=True)
        with dst.open("wb") as out:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                written += len(chunk)
                if written > room:
                    raise Refused(
                        f"it holds more than the limit (c.Watch.max_bytes): {_show(rel)} grew"
                    )
                out.write(chunk)
    return written


def mark(path: Path) -> str:
    """What changes when a folder does (an entry added, removed or renamed in it)."""
    try:
        st = path.lstat()
    except OSError:
        return "gone"
    return f"{st.st_mtime_ns}:{st.st_ctime_ns}"


def remove_partials(folder: Path) -> int:
    """Remove the half-made copies a killed run left in ``folder``; how many."""
    gone = 0
    with contextlib.suppress(OSError):
        for path in folder.glob(f"{PARTIAL}*"):
            shutil.rmtree(path, ignore_errors=True)
            gone += 1
    return gone


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _show(rel: str) -> str:
    if not rel:
        return "the folder"
    text = rel if len(rel) <= 80 else f"{rel[:38]}...{rel[-38:]}"
    return repr(text.encode("utf-8", "replace").decode("ascii", "backslashreplace"))
