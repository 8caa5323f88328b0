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
``archive_readers`` reads the members of each kind of archive and of folders.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

from .archive_readers import (
    Member,
    Refused,
    error_text,
    folder_members,
    printable,
    tar_members,
    zip_members,
)

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
    download_bytes: int = 4 * GiB  # one PATH, unpacked (notebooks and nested archives)
    depth: int = 3  # archives in archives: the download, an upload, one more
    header_bytes: int = 64 * KiB  # a tar's long-name or pax header
    chunk: int = 64 * KiB  # bytes decompressed at a time


LIMITS = ArchiveLimits()
ARCHIVES = (".zip", ".tar.gz", ".tgz", ".gz", ".tar")  # the format is read from the bytes


class _Stop(Exception):  # the whole PATH broke a limit: nothing more of it is read
    pass


@dataclass
class Found:  # a file of the PATH
    parts: tuple[str, ...]  # path inside the PATH, archives named without extension
    shown: str  # how messages name it
    disk: Path | None = None  # the unpacked copy (notebooks only)


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


def unpack(
    source: Path, label: str, dest: Path, limits: ArchiveLimits = LIMITS
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
            members, show = folder_members(source, skip), lambda i: str(Path(label) / i)
        elif archive_suffix(source.name):
            depth, show = 1, lambda i: f"{label}: {i}"
            members = self._members(
                source,
                lim.download_entries,
                lim.download_bytes,
                f"more than {lim.download_entries} entries in one PATH",
            )
        else:
            members = iter([Member(source.name, "file", partial(source.open, "rb"))])
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
                    self.refuse(show(printable(m.name.replace("\\", "/").split("/")[0])), str(why))
        except (_Stop, Refused) as why:  # the PATH as a whole (as an archive: too many entries)
            self.refuse(label, str(why))
        except Exception as exc:  # a PATH that is not a readable archive or folder
            self.refuse(label, f"cannot be read ({error_text(exc)})")
        self.drop([f for f in self.found if f.parts[0] in skip])
        return self.found, self.refused

    def entry(self, m: Member, prefix: tuple[str, ...], show, depth: int, budget: _Budget) -> None:
        """One member: refused, listed, saved (a notebook) or unpacked (an archive)."""
        shown = show(printable(m.name))
        self.spend(budget, 1, 0)
        parts, unsafe = safe_parts(m.name)
        if parts is None:
            return self.refuse(shown, f"unsafe path ({unsafe}): not unpacked")
        if m.kind == "dir":
            return None
        if m.kind != "file":
            return self.refuse(shown, m.kind)
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

    def archive(self, m: Member, parts, shown: str, depth: int, budget: _Budget) -> None:
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
            members = self._members(
                scratch,
                budget.entries,
                cap,
                f"more than {lim.upload_entries} entries in one upload",
            )
            for member in members:
                self.entry(member, parts, lambda i: f"{shown}/{i}", depth, budget)
        except Refused as why:
            self.drop(self.found[start:])
            self.refuse(shown, str(why))
        except _Stop:
            raise
        except Exception as exc:  # broken, encrypted, not an archive at all
            self.drop(self.found[start:])
            self.refuse(shown, f"cannot be read as an archive ({error_text(exc)})")
        finally:
            self.nested.pop()
            scratch.unlink(missing_ok=True)
        return None

    def _members(self, path: Path, entries: int, cap: int, too_many: str) -> Iterator[Member]:
        """An archive's members: at most ``entries`` of them (else refused: ``too_many``),
        unpacking to at most ``cap`` bytes in all when that can only be seen as a whole."""
        with path.open("rb") as fh:
            head = fh.read(4)  # the format is read from the bytes: a name can lie
        if head.startswith(b"PK"):
            return zip_members(path, entries, f"refused: {too_many}")
        big = f"refused: unpacks to more than {self.limits.ratio} times its size"
        return tar_members(
            path, head[:2] == b"\x1f\x8b", cap, big, self.limits.chunk, self.limits.header_bytes
        )

    def save(self, m: Member, disk: Path, budget: _Budget) -> str | None:
        """Stream one file to ``disk``, counting its bytes: None, or why it was refused."""
        try:
            with m.open() as src, disk.open("xb") as out:
                why = self.copy(src, out, m.packed, budget)
        except (Refused, _Stop):
            disk.unlink(missing_ok=True)
            raise
        except Exception as exc:  # a broken entry, a wrong CRC, a lying size
            why = f"cannot be read ({error_text(exc)})"
        if why:
            disk.unlink(missing_ok=True)
        return why

    def copy(self, src: BinaryIO, out: BinaryIO, packed: int | None, budget: _Budget) -> str | None:
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
            raise _Stop(
                f"stopped: more than {lim.download_entries} entries or "
                f"{lim.download_bytes // MiB} MiB unpacked in one PATH"
            )
        if not budget.spend(entries, nbytes):
            raise Refused(
                f"refused: more than {lim.upload_entries} entries in one upload"
                if budget.entries < 0
                else f"refused: unpacks to more than {lim.upload_bytes // MiB} MiB in one upload"
            )
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
