"""Unpack what ``collect`` is given (zips, tars, folders, notebooks) within limits.

A student controls everything inside their upload: names (``../``, absolute, control
characters), links and special files, sizes (a 1.5 MB zip can unpack to gigabytes; a header
can lie about a size), the number of entries and how deep archives nest. nbgrader's
``zip_collect`` reads each member whole into memory and follows links in folders, so
``collect`` unpacks here instead: every file is streamed to disk in chunks counted as they
leave the decompressor, with caps per file, per upload and per download and on the
compression ratio (``ArchiveLimits``); a zip's list of entries is only read when its end
record says it is small; archives nest at most ``depth`` deep; unsafe names, links and
special files are refused; notebooks go to one flat folder under numbered names, so no
name inside an upload decides where anything is written. Each refusal is a one-line note
naming the file and the limit; the rest is unpacked. ``Found.parts`` (archives as folders
named without their extension, as nbgrader names them) is what collect matches.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
import stat
import tarfile
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class ArchiveLimits:
    """Every limit of collect's unpacking. A notebook never needs 50 MiB; an upload is a
    few notebooks; a download is a class's uploads."""

    file_bytes: int = 50 * MiB  # one file, unpacked
    ratio: int = 100  # unpacked : packed, of a file or of a nested archive ...
    ratio_floor: int = 1 * MiB  # ... once it has unpacked more than this
    upload_entries: int = 2_000  # entries in one student's upload, nested archives included
    upload_bytes: int = 200 * MiB  # one student's upload, unpacked
    download_entries: int = 100_000  # entries in one PATH (an LMS download)
    download_bytes: int = 8 * GiB  # one PATH, unpacked
    depth: int = 3  # archives in archives: the download, an upload, one more
    header_bytes: int = 64 * KiB  # a tar's long-name or pax header
    chunk: int = 64 * KiB  # bytes decompressed at a time


LIMITS = ArchiveLimits()
ARCHIVES = (".zip", ".tar.gz", ".tgz", ".gz", ".tar")  # the format is read from the bytes


class Refused(Exception):
    """The archive (or upload) being read broke a limit and is dropped; str: why."""


class _Stop(Exception):  # the whole PATH broke a limit: nothing more of it is read
    pass


@dataclass
class Found:  # a file of the PATH
    parts: tuple[str, ...]  # path inside the PATH, archives named without extension
    shown: str  # how messages name it
    disk: Path | None = None  # the unpacked copy (notebooks only)


@dataclass
class _Member:
    name: str  # as stored in its archive or folder
    kind: str  # "file", "dir", or what it is instead ("link", "special file")
    open: Callable[[], BinaryIO] | None = None
    packed: int | None = None  # compressed size, for the ratio (None: not compressed)


@dataclass
class _Budget:
    entries: int
    bytes: int
    unpacked: int = 0  # of a nested archive: bytes its own entries unpacked to
    size: int = 0  # of a nested archive: its size

    def spend(self, entries: int, nbytes: int) -> bool:
        self.entries -= entries
        self.bytes -= nbytes
        return self.entries >= 0 and self.bytes >= 0


def fix_zip_name(name: str) -> str:
    """Zip tools that do not mark UTF-8 names get them read as cp437 ("JosÃ©" -> "Jos├⌐");
    undo that when the bytes are valid UTF-8."""
    try:
        return name if name.isascii() else name.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return name


def printable(name: str) -> str:
    """A name for a one-line message: control characters and undecodable bytes escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in name)


def safe_parts(name: str) -> tuple[tuple[str, ...] | None, str]:
    """An entry's path components, or None and why its name is unsafe to use."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None, "its name is not valid UTF-8"
    name = name.replace("\\", "/")  # kept as spelt: collect tells spellings apart
    if any(unicodedata.category(c) == "Cc" for c in name):
        return None, "its name has control characters"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return None, "an absolute path"
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        return None, "a path that climbs out with '..'"
    return (parts, "") if parts else (None, "an empty name")


def archive_suffix(name: str) -> str | None:
    """The archive extension of a file name (``.zip``, ``.tar.gz``, ...), or None."""
    low = name.lower()
    return next((s for s in ARCHIVES if low.endswith(s) and len(low) > len(s)), None)


def unpack(source: Path, label: str, dest: Path, limits: ArchiveLimits = LIMITS
           ) -> tuple[list[Found], list[tuple[str, str]]]:
    """Unpack one PATH (archive, folder or file) into ``dest``: what was found, and the
    (file, why) of everything refused."""
    dest.mkdir(parents=True, exist_ok=True)
    return _Unpacker(dest, limits).top(source, label)


@dataclass
class _Unpacker:
    dest: Path
    limits: ArchiveLimits
    found: list[Found] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    nested: list[_Budget] = field(default_factory=list)  # open nested archives, innermost last

    def top(self, source: Path, label: str) -> tuple[list[Found], list[tuple[str, str]]]:
        """Read the PATH's top-level entries: each is one upload with its own budget."""
        lim = self.limits
        self.download = _Budget(lim.download_entries, lim.download_bytes)
        uploads: dict[str, _Budget] = {}
        skip: set[str] = set()  # uploads refused as a whole
        depth = 0
        if source.is_dir():
            members, show = _folder_members(source, skip), lambda i: str(Path(label) / i)
        elif archive_suffix(source.name):
            depth, show = 1, lambda i: f"{label}: {i}"
            members = self._members(source, lim.download_entries, lim.download_bytes,
                                    f"more than {lim.download_entries} entries in one PATH")
        else:
            members = iter([_Member(source.name, "file", partial(source.open, "rb"))])
            show = lambda _: label  # noqa: E731
        try:
            for m in members:
                parts, _ = safe_parts(m.name)
                key = parts[0] if parts and len(parts) > 1 else _stem(parts[0]) if parts else ""
                if key in skip:
                    continue
                budget = uploads.setdefault(key, _Budget(lim.upload_entries, lim.upload_bytes))
                try:
                    self.entry(m, (), show, depth, budget)
                except Refused as why:
                    skip.add(key)
                    self.refuse(show(printable(m.name.replace("\\", "/").split("/")[0])),
                                str(why))
        except (_Stop, Refused) as why:  # the PATH as a whole (as an archive: too many entries)
            self.refuse(label, str(why))
        except Exception as exc:  # a PATH that is not a readable archive or folder
            self.refuse(label, f"cannot be read ({_error(exc)})")
        self.drop([f for f in self.found if f.parts[0] in skip])
        return self.found, self.refused

    def entry(self, m: _Member, prefix: tuple[str, ...], show, depth: int, budget: _Budget
              ) -> None:
        """One member: refused, listed, saved (a notebook) or unpacked (an archive)."""
        shown = show(printable(m.name))
        self.spend(budget, 1, 0)
        parts, unsafe = safe_parts(m.name)
        if parts is None:
            return self.refuse(shown, f"unsafe path ({unsafe}): not unpacked")
        if m.kind == "dir":
            return None
        if m.kind != "file":
            return self.refuse(shown, f"a {m.kind}, not a regular file: not followed")
        parts = prefix + parts
        if archive_suffix(parts[-1]):
            return self.archive(m, (*parts[:-1], _stem(parts[-1])), shown, depth + 1, budget)
        if not parts[-1].lower().endswith(".ipynb"):
            self.found.append(Found(parts, shown))
            return None
        disk = self.dest / f"{self.next_number()}.ipynb"
        why = self.save(m, disk, budget)
        if why:
            return self.refuse(shown, why)
        self.found.append(Found(parts, shown, disk))
        return None

    def archive(self, m: _Member, parts, shown: str, depth: int, budget: _Budget) -> None:
        """A nested archive: saved within limits, then its members read in turn; when it
        breaks a limit, everything found in it is dropped."""
        lim = self.limits
        if depth > lim.depth:
            return self.refuse(shown, f"refused: archives nested more than {lim.depth} deep")
        scratch = self.dest / f"{self.next_number()}.archive"
        why = self.save(m, scratch, budget)
        if why:
            return self.refuse(shown, why)
        start = len(self.found)
        self.nested.append(_Budget(0, 0, size=scratch.stat().st_size))
        try:
            cap = max(lim.ratio_floor, lim.ratio * scratch.stat().st_size)
            members = self._members(scratch, budget.entries, cap,
                                    f"more than {lim.upload_entries} entries in one upload")
            for member in members:
                self.entry(member, parts, lambda i: f"{shown}/{i}", depth, budget)
        except Refused as why:
            self.drop(self.found[start:])
            self.refuse(shown, str(why))
        except _Stop:
            raise
        except Exception as exc:  # broken, encrypted, not an archive at all
            self.drop(self.found[start:])
            self.refuse(shown, f"cannot be read as an archive ({_error(exc)})")
        finally:
            self.nested.pop()
            scratch.unlink(missing_ok=True)
        return None

    def _members(self, path: Path, entries: int, cap: int, too_many: str
                 ) -> Iterator[_Member]:
        """An archive's members: at most ``entries`` of them (else refused: ``too_many``),
        unpacking to at most ``cap`` bytes in all when that can only be seen as a whole."""
        with path.open("rb") as fh:
            head = fh.read(4)  # the format is read from the bytes: a name can lie
        if head.startswith(b"PK"):
            return _zip_members(path, entries, f"refused: {too_many}")
        big = f"refused: unpacks to more than {self.limits.ratio} times its size"
        return _tar_members(path, head[:2] == b"\x1f\x8b", cap, big, self.limits.chunk)

    def save(self, m: _Member, disk: Path, budget: _Budget) -> str | None:
        """Stream one file to ``disk``, counting its bytes: None, or why it was refused."""
        try:
            with m.open() as src, disk.open("xb") as out:
                why = self.copy(src, out, m.packed, budget)
        except (Refused, _Stop):
            disk.unlink(missing_ok=True)
            raise
        except Exception as exc:  # a broken entry, a wrong CRC, a lying size
            why = f"cannot be read ({_error(exc)})"
        if why:
            disk.unlink(missing_ok=True)
        return why

    def copy(self, src: BinaryIO, out: BinaryIO, packed: int | None, budget: _Budget
             ) -> str | None:
        lim, written = self.limits, 0
        while chunk := src.read(lim.chunk):
            written += len(chunk)
            if written > lim.file_bytes:
                return f"refused: a file may unpack to at most {lim.file_bytes // MiB} MiB"
            if packed is not None and written > max(lim.ratio_floor, lim.ratio * packed):
                return f"refused: compression ratio above {lim.ratio}:1"
            self.spend(budget, 0, len(chunk))
            out.write(chunk)
        return None

    def spend(self, budget: _Budget, entries: int, nbytes: int) -> None:
        lim = self.limits
        if not self.download.spend(entries, nbytes):
            raise _Stop(f"stopped: more than {lim.download_entries} entries or "
                        f"{lim.download_bytes // MiB} MiB unpacked in one PATH")
        if not budget.spend(entries, nbytes):
            raise Refused(f"refused: more than {lim.upload_entries} entries in one upload"
                          if budget.entries < 0 else
                          f"refused: unpacks to more than {lim.upload_bytes // MiB} MiB "
                          "in one upload")
        if self.nested:
            inner = self.nested[-1]
            inner.unpacked += nbytes
            if inner.unpacked > max(lim.ratio_floor, lim.ratio * inner.size):
                raise Refused(f"refused: unpacks to more than {lim.ratio} times its size")

    def refuse(self, shown: str, why: str) -> None:
        self.refused.append((shown, why))

    def drop(self, found: list[Found]) -> None:
        for f in found:
            if f.disk:
                f.disk.unlink(missing_ok=True)
        gone = {id(f) for f in found}
        self.found = [f for f in self.found if id(f) not in gone]

    def next_number(self) -> str:
        return f"{next(self.numbers):06d}"


def _stem(name: str) -> str:
    suffix = archive_suffix(name)
    return name[: -len(suffix)] if suffix else name


def _error(exc: Exception) -> str:
    return printable(f"{type(exc).__name__}: {exc}")[:200]


def _zip_members(path: Path, entries: int, too_many: str) -> Iterator[_Member]:
    """A zip's members. Reading its list of entries is what takes memory, so the end record
    is checked first: no more entries, and no larger a list, than ``entries`` can need."""
    with path.open("rb") as fh:
        end = zipfile._EndRecData(fh)  # the end record, zip64 aware (Python 2.6 to 3.13)
    if end is None:
        raise Refused("refused: not a zip file")
    if (end[zipfile._ECD_ENTRIES_TOTAL] > entries
            or end[zipfile._ECD_SIZE] > entries * KiB + 64 * KiB):
        raise Refused(too_many)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > entries:
            raise Refused(too_many)
        for info in infos:
            name = info.filename if info.flag_bits & 0x800 else fix_zip_name(info.filename)
            yield _Member(name, _zip_kind(info), partial(zf.open, info), info.compress_size)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
    return ("dir" if info.is_dir() else "file" if mode in (0, stat.S_IFREG) else
            "link" if mode == stat.S_IFLNK else "special file")


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
    """A tar header whose long name or pax data is bigger than ``header_bytes`` is refused
    before tarfile reads it whole into memory."""

    LONG = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
            tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)

    def _proc_member(self, tarfile_):
        if self.type in self.LONG and self.size > LIMITS.header_bytes:
            raise Refused(f"refused: a tar header larger than {LIMITS.header_bytes} bytes")
        return super()._proc_member(tarfile_)


def _tar_members(path: Path, gz: bool, cap: int, why: str, chunk: int) -> Iterator[_Member]:
    """A tar's members, read as one stream of at most ``cap`` bytes (else refused: why)."""
    with (gzip.open(path, "rb") if gz else path.open("rb")) as raw:
        stream = _Capped(raw, cap, why, chunk)
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=_SmallHeaders) as tf:
            for info in tf:
                kind = ("dir" if info.isdir() else "file" if info.isreg() else
                        "link" if info.issym() or info.islnk() else "special file")
                yield _Member(info.name, kind, partial(tf.extractfile, info))


def _folder_members(folder: Path, skip: set[str]) -> Iterator[_Member]:
    """A folder's entries in name order, never following a link; top-level folders named
    in ``skip`` (uploads refused meanwhile) are not walked further."""
    stack: list[tuple[str, Path]] = [("", folder)]
    while stack:
        rel, path = stack.pop()
        if rel and rel.split("/", 1)[0] in skip:
            continue
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if not rel:
                raise
            yield _Member(rel.rstrip("/"), f"folder that cannot be read ({_error(exc)})")
            continue
        folders = []
        for e in entries:
            name = f"{rel}{e.name}"
            if e.is_symlink():
                yield _Member(name, "link")
            elif e.is_dir(follow_symlinks=False):
                yield _Member(name, "dir")
                folders.append((name + "/", Path(e.path)))
            elif e.is_file(follow_symlinks=False):
                yield _Member(name, "file", partial(_open_regular, e.path))
            else:
                yield _Member(name, "special file")
        stack.extend(reversed(folders))


def _open_regular(path: str) -> BinaryIO:
    """Open a file that must still be a regular file (not swapped for a link or a FIFO)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return os.fdopen(fd, "rb")
