"""A submission folder read without trusting it: walked without recursion and within
bounds (depth, files, bytes) before anything is copied, and copied file by file.

Its owner may change it while it is read: rename a folder, or swap one for a link to a
folder they cannot read but the grader can (renameat2's RENAME_EXCHANGE). So nothing
below the folder is opened by its path: every folder is opened through its parent's
descriptor with O_DIRECTORY | O_NOFOLLOW, every file through its folder's with
O_NOFOLLOW, and each is checked (fstat) to be what the walk saw: the same kind and the
same inode (st_dev, st_ino), a file of one name (no hard link), and, when an owner is
given (the exchange: the submitting student's uid), that owner's. Anything else refuses
the copy, so a swapped link reaches nothing, and a copy is whole or refused.

Only regular files are taken: a named pipe, a socket or a device refuses the submission
(one line naming it); links are ignored (neither followed nor copied). A copy is made in
a temporary folder beside its destination and renamed into place when whole; whatever
goes wrong on the way, the half-made copy is removed and the reason is one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import shutil
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..ngshare.client import Limits

PARTIAL = ".partial-"  # the prefix of a copy being made (removed if left behind)
CHUNK = 1 << 20
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
Id = tuple[int, int]  # (st_dev, st_ino): which folder or file, whatever its name


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
    ids: dict[str, Id] = field(default_factory=dict)  # each folder's and file's ("": the top)
    owner: int | None = None  # the uid every folder and file had to have (None: any)


def walk(top: Path, bounds: Bounds, owner: int | None = None) -> Tree:
    """The regular files and folders under ``top`` (itself a folder, not a link), or
    ``Refused`` at the first entry past ``bounds``, of a kind that is not taken, not
    ``owner``'s (a uid; None: anyone's) or changed while it was read. Depth first, with
    only the folders from the top to the one being read open."""
    fd, st = _open_top(top, owner)
    tree = Tree(newest_mtime=st.st_mtime, newest_ctime=st.st_ctime, owner=owner)
    tree.ids[""] = _id(st)
    # (its descriptor, its relative path, its depth, its subfolders still to walk)
    chain: list[tuple[int, str, int, list[tuple[str, str, Id]]]] = []
    entries = 0

    def read(fd: int, rel: str, depth: int) -> None:
        nonlocal entries
        chain.append((fd, rel, depth, []))
        try:
            with os.scandir(fd) as it:
                found = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise Refused(f"{_show(rel)} cannot be read ({exc.strerror or exc})") from None
        entries += len(found)
        if entries > bounds.max_files * 2 + 100:  # folders and links count too, loosely
            raise Refused(f"it holds more than {bounds.max_files} files (c.Watch.max_files)")
        pending = chain[-1][3]
        for e in found:
            name = f"{rel}/{e.name}" if rel else e.name
            try:
                est = e.stat(follow_symlinks=False)  # fstatat(fd, name): never a link's target
            except OSError:
                continue  # gone meanwhile
            tree.newest_mtime = max(tree.newest_mtime, est.st_mtime)
            tree.newest_ctime = max(tree.newest_ctime, est.st_ctime)
            mode = est.st_mode
            if stat.S_ISLNK(mode):
                tree.links += 1
                continue
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise Refused(f"{_show(name)} is {_kind(mode)}, not a regular file")
            _check_owner(est, owner, name)
            tree.ids[name] = _id(est)
            if stat.S_ISDIR(mode):
                if depth + 1 > bounds.max_depth:
                    raise Refused(
                        f"its folders nest more than {bounds.max_depth} deep (c.Watch.max_depth)"
                    )
                tree.folders.append(name)
                pending.append((e.name, name, _id(est)))
                continue
            _check_links(est, name)
            tree.files.append((name, est.st_size))
            tree.bytes += est.st_size
            if len(tree.files) > bounds.max_files:
                raise Refused(f"it holds more than {bounds.max_files} files (c.Watch.max_files)")
            if tree.bytes > bounds.max_bytes:
                raise Refused(
                    f"it holds more than {bounds.max_bytes / 1024**2:g} MB "
                    "(the limit: c.Watch.max_bytes)"
                )
        pending.reverse()  # popped from the end: in name order

    try:
        read(fd, "", 0)
        while chain:
            parent, _, depth, pending = chain[-1]
            if not pending:
                chain.pop()
                os.close(parent)
                continue
            name, rel, seen = pending.pop()
            read(_open_folder(parent, name, rel, seen, owner), rel, depth + 1)
        return tree
    finally:
        for parent, *_ in chain:
            os.close(parent)


def copy(
    top: Path,
    tree: Tree,
    dest: Path,
    bounds: Bounds,
    skip: Callable[[str], bool] = lambda rel: False,
) -> None:
    """Copy the files of ``tree`` (a ``walk`` of ``top``) into ``dest``, which appears
    whole or not at all. A folder or file that is no longer what the walk saw (its kind,
    its inode, its owner), or a file that grew past the bounds, refuses the copy; the
    half-made copy is removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f"{PARTIAL}{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        for rel in tree.folders:
            if not skip(rel):
                (tmp / rel).mkdir(parents=True, exist_ok=True)
        total = 0
        with Reader(top, tree) as reader:
            for rel, _ in tree.files:
                if skip(rel):
                    continue
                total += _copy_file(reader, rel, tmp / rel, bounds.max_bytes - total)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class Reader:
    """The files of a walked ``tree`` opened again, each through the descriptors of the
    folders above it (each checked to be what the walk saw); used as a context manager."""

    def __init__(self, top: Path, tree: Tree):
        self.top, self.tree = top, tree
        self.chain: list[tuple[str, int]] = []  # the folders open, from the top down

    def __enter__(self) -> Reader:
        fd, st = _open_top(self.top, self.tree.owner)
        if _id(st) != self.tree.ids.get(""):
            os.close(fd)
            raise Refused("the folder changed while it was copied (another folder is there)")
        self.chain.append(("", fd))
        return self

    def __exit__(self, *exc: object) -> None:
        while self.chain:
            os.close(self.chain.pop()[1])

    def open(self, rel: str) -> int:
        """A descriptor of the regular file ``rel``, the one the walk saw."""
        folder, _, name = rel.rpartition("/")
        fd = _open_at(self._folder(folder), name, FILE, rel)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"{_show(rel)} is {_kind(st.st_mode)}, not a regular file")
            _check_owner(st, self.tree.owner, rel)
            _check_links(st, rel)
            if _id(st) != self.tree.ids.get(rel):
                raise Refused(f"{_show(rel)} changed while it was copied (another file is there)")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _folder(self, rel: str) -> int:
        """The descriptor of the walked folder ``rel``, opened from the nearest one open."""
        parts = rel.split("/") if rel else []
        keep = 1
        while keep < len(self.chain) and keep <= len(parts):
            if self.chain[keep][0] != "/".join(parts[:keep]):
                break
            keep += 1
        while len(self.chain) > keep:
            os.close(self.chain.pop()[1])
        for depth in range(len(self.chain), len(parts) + 1):
            sub = "/".join(parts[:depth])
            seen = self.tree.ids.get(sub, (-1, -1))
            fd = _open_folder(self.chain[-1][1], parts[depth - 1], sub, seen, self.tree.owner)
            self.chain.append((sub, fd))
        return self.chain[-1][1]


def read_small(top: Path, tree: Tree, rel: str, owner: int | None = None, limit: int = 200) -> str:
    """The start of the walked regular file ``rel`` of ``top`` ("" if it is not one, not
    the one the walk saw, or, ``owner`` given, not that uid's, nor every folder above)."""
    if owner is not None:
        tree = replace(tree, owner=owner)
    try:
        with Reader(top, tree) as reader:
            fd = reader.open(rel)
            try:
                return os.read(fd, limit).decode("ascii", errors="replace")
            finally:
                os.close(fd)
    except (OSError, Refused):
        return ""


def _copy_file(reader: Reader, rel: str, dst: Path, room: int) -> int:
    fd = reader.open(rel)
    with os.fdopen(fd, "rb") as fh:
        written = 0
        dst.parent.mkdir(parents=True, exist_ok=True)
        with dst.open("xb") as out:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                written += len(chunk)
                if written > room:
                    raise Refused(
                        f"it holds more than the limit (c.Watch.max_bytes): {_show(rel)} grew"
                    )
                out.write(chunk)
    return written


def _open_top(top: Path, owner: int | None) -> tuple[int, os.stat_result]:
    """``top`` opened as a folder, never through a link at its last step (the folders
    above it are the grader's, or the exchange's, which students cannot rename)."""
    try:
        fd = os.open(top, FOLDER)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused("it is not a folder") from None
        raise
    st = os.fstat(fd)
    try:
        _check_owner(st, owner, "")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _open_folder(parent: int, name: str, rel: str, seen: Id, owner: int | None) -> int:
    """The subfolder ``name`` of ``parent`` (a descriptor), the one the walk saw there."""
    fd = _open_at(parent, name, FOLDER, rel)
    try:
        st = os.fstat(fd)
        _check_owner(st, owner, rel)
        if _id(st) != seen:
            raise Refused(f"{_show(rel)} changed while it was read (another folder is there)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_at(parent: int, name: str, flags: int, rel: str) -> int:
    try:
        return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.ENXIO):
            # a link, a file or nothing where the walk saw a folder or a file
            raise Refused(
                f"{_show(rel)} changed while it was read (it is not what was there)"
            ) from None
        raise Refused(f"{_show(rel)} cannot be read ({exc.strerror or exc})") from None


def _check_owner(st: os.stat_result, owner: int | None, rel: str) -> None:
    if owner is not None and st.st_uid != owner:
        raise Refused(
            f"{_show(rel)} belongs to the unix user {_user(st.st_uid)}, not {_user(owner)}"
        )


def _check_links(st: os.stat_result, rel: str) -> None:
    if st.st_nlink > 1:
        raise Refused(f"{_show(rel)} is a hard link ({st.st_nlink} names): not taken")


def _id(st: os.stat_result) -> Id:
    return (st.st_dev, st.st_ino)


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"#{uid}"


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
