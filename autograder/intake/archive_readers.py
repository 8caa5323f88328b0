"""Read the members of a zip, a tar or a folder one at a time, for ``archives``.

Each member says what it is (a file, a folder, or why it is not read: a link, a device, a
zip entry compressed with bzip2 or lzma, which zipfile decompresses a whole chunk at a
time) and opens as a stream; nothing here reads a member whole. A zip's list of entries
is only read once its end record says it is small, and a tar is one capped stream whose
long-name and pax headers are refused when large (tarfile reads those whole).
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

KiB = 1 << 10
LINK = "a link: not followed"
SPECIAL = "a device, FIFO or socket, not a regular file: not read"
PACKED = "compressed with bzip2 or lzma, which cannot be read in bounded steps: not read"


class Refused(Exception):
    """The archive (or upload) being read broke a limit and is dropped; str: why."""


@dataclass
class Member:
    name: str  # as stored in its archive or folder
    kind: str  # "file", "dir", or why it is not read (LINK, SPECIAL, ...)
    open: Callable[[], BinaryIO] | None = None
    packed: int | None = None  # compressed size, for the ratio (None: not compressed)


def fix_zip_name(name: str) -> str:
    """Zip tools that do not mark UTF-8 names get them read as cp437 ("JosÃ©" -> "Jos├⌐");
    undo that when the bytes are valid UTF-8."""
    try:
        return name if name.isascii() else name.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return name


def printable(name: str) -> str:
    """A name for a one-line message: control characters and undecodable bytes escaped."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name
    )


def error_text(exc: Exception) -> str:
    """An exception as a short part of a one-line message."""
    return printable(f"{type(exc).__name__}: {exc}")[:200]


def zip_members(path: Path, entries: int, too_many: str) -> Iterator[Member]:
    """A zip's members. Reading its list of entries is what takes memory, so the end record
    is checked first: no more entries, and no larger a list, than ``entries`` can need."""
    with path.open("rb") as fh:
        end = zipfile._EndRecData(fh)  # the end record, zip64 aware (Python 2.6 to 3.13)
    if end is None:
        raise Refused("refused: not a zip file")
    if (
        end[zipfile._ECD_ENTRIES_TOTAL] > entries
        or end[zipfile._ECD_SIZE] > entries * KiB + 64 * KiB
    ):
        raise Refused(too_many)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > entries:
            raise Refused(too_many)
        for info in infos:
            name = info.filename if info.flag_bits & 0x800 else fix_zip_name(info.filename)
            yield Member(name, _zip_kind(info), partial(zf.open, info), info.compress_size)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    """What a zip entry is; zipfile decompresses bzip2 and lzma a whole chunk at a time
    (a few compressed bytes can be gigabytes), so those are not read."""
    mode = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
    if info.is_dir() or mode not in (0, stat.S_IFREG):
        return "dir" if info.is_dir() else LINK if mode == stat.S_IFLNK else SPECIAL
    return "file" if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) else PACKED


class _Capped:
    """A stream that refuses to yield more than ``cap`` bytes: a tar is read as one
    decompressed stream, so this bounds all of it, headers and skipped members included."""

    def __init__(self, raw: BinaryIO, cap: int, why: str, chunk: int):
        self.raw, self.left, self.why, self.chunk = raw, cap, why, chunk

    def read(self, n: int | None = -1) -> bytes:
        data = self.raw.read(min(self.chunk if n is None or n < 0 else n, self.left + 1))
        self.left -= len(data)
        if self.left < 0:
            raise Refused(self.why)
        return data


class _SmallHeaders(tarfile.TarInfo):
    """A tar header whose long name or pax data is bigger than ``limit`` bytes is refused
    before tarfile reads it whole into memory."""

    LONG = (
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
    )
    limit = 64 * KiB

    def _proc_member(self, tarfile_):
        if self.type in self.LONG and self.size > self.limit:
            raise Refused(f"refused: a tar header larger than {self.limit} bytes")
        return super()._proc_member(tarfile_)


def tar_members(
    path: Path, gz: bool, cap: int, why: str, chunk: int, header_bytes: int
) -> Iterator[Member]:
    """A tar's members, read as one stream of at most ``cap`` bytes (else refused: why)."""
    headers = type("Headers", (_SmallHeaders,), {"limit": header_bytes})
    with gzip.open(path, "rb") if gz else path.open("rb") as raw:
        stream = _Capped(raw, cap, why, chunk)
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=headers) as tf:
            for info in tf:
                kind = (
                    "dir"
                    if info.isdir()
                    else "file"
                    if info.isreg()
                    else LINK
                    if info.issym() or info.islnk()
                    else SPECIAL
                )
                yield Member(info.name, kind, partial(tf.extractfile, info))


def folder_members(folder: Path, skip: set[str]) -> Iterator[Member]:
    """A folder's entries in name order, never following a link; top-level folders named
    in ``skip`` (uploads refused meanwhile) are not walked further. Whoever can write in
    the folder may rename in it while it is read, so below ``folder`` nothing is opened
    by its path: each subfolder through its parent's descriptor with O_NOFOLLOW, each
    file through its folder's (while its member is the one being read), and each must be
    what was listed there (st_dev, st_ino): a link swapped in meanwhile reaches nothing."""
    chain: list[tuple[int, list[tuple[str, str, tuple[int, int]]]]] = []
    fd, rel = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), ""
    try:
        while fd >= 0:
            pending: list[tuple[str, str, tuple[int, int]]] = []
            chain.append((fd, pending))
            try:
                with os.scandir(fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                if not rel:
                    raise
                yield Member(rel.rstrip("/"), f"a folder that cannot be read ({error_text(exc)})")
                entries = []
            for e in entries:
                name = f"{rel}{e.name}"
                try:
                    st = e.stat(follow_symlinks=False)  # fstatat(fd, name): never followed
                except OSError:
                    continue  # gone meanwhile
                if stat.S_ISLNK(st.st_mode):
                    yield Member(name, LINK)
                elif stat.S_ISDIR(st.st_mode):
                    yield Member(name, "dir")
                    pending.append((e.name, name + "/", (st.st_dev, st.st_ino)))
                elif stat.S_ISREG(st.st_mode):
                    seen = (st.st_dev, st.st_ino)
                    yield Member(name, "file", partial(_open_regular, fd, e.name, seen))
                else:
                    yield Member(name, SPECIAL)
            pending.reverse()  # popped from the end: in name order
            fd = -1
            while chain and fd < 0:
                parent, left = chain[-1]
                if not left:
                    os.close(chain.pop()[0])
                    continue
                name, rel, seen = left.pop()
                if rel.split("/", 1)[0] in skip:
                    continue
                try:
                    fd = _open_below(parent, name, os.O_DIRECTORY, seen)
                except OSError as exc:
                    why = f"a folder that changed while it was read ({error_text(exc)})"
                    yield Member(rel.rstrip("/"), why)
    finally:
        for parent, _ in chain:
            os.close(parent)


def _open_below(parent: int, name: str, flags: int, seen: tuple[int, int]) -> int:
    """``name`` in the folder ``parent`` (a descriptor), never through a link, and only if
    it is what was listed there (``seen``: its st_dev, st_ino)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=parent)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != seen:
        os.close(fd)
        raise OSError(f"{printable(name)} is not what was listed there")
    return fd


def _open_regular(parent: int, name: str, seen: tuple[int, int]) -> BinaryIO:
    """Open a file that must still be the regular file listed (not swapped for a link, a
    FIFO or another file)."""
    fd = _open_below(parent, name, os.O_NONBLOCK, seen)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{printable(name)} is not a regular file")
    return os.fdopen(fd, "rb")
