"""collect trusts only the LMS's naming of an upload, reads archives within limits, and every
CSV meant for a spreadsheet neutralises formulas (issue 20). A student controls what is
inside their upload (names, links, sizes, nesting) and their own id; none of it may file
work under another student, exhaust the grader's memory or disk, or run in a spreadsheet."""

import csv
import io
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from helpers import ROOT, SOLUTIONS, notebook_path

from autograder.intake import collect as col

A = "01_value"
NB = notebook_path(SOLUTIONS, A).name
HONEST = notebook_path(SOLUTIONS, A).read_bytes()
EVIL = HONEST.replace(b'"cells"', b'"evil": 1, "cells"', 1)
MiB = 1 << 20


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _collect(tmp_path: Path, *paths, pattern: str = "auto", **kw) -> col.CollectReport:
    return col.collect(A, [str(p) for p in paths], pattern=pattern, root=tmp_path / "course", **kw)


def _submitted(tmp_path: Path) -> dict[str, bytes]:
    """student -> the notebook filed for them."""
    base = tmp_path / "course" / "submitted"
    if not base.is_dir():
        return {}
    return {
        d.name: (d / A / NB).read_bytes() for d in sorted(base.iterdir()) if (d / A / NB).is_file()
    }


def _notes(report: col.CollectReport) -> str:
    return "\n".join(f"{name}: {why}" for name, why in report.not_placed)


# ---- an upload is filed only under the student the LMS named it after ------------------------


@pytest.mark.parametrize("pattern", ["canvas", "auto"])
@pytest.mark.parametrize(
    "inner",
    [
        f"bob_5_55_{NB}",  # Canvas naming inside the upload
        f"Bob_9_assignsubmission_file_/{NB}",  # Moodle naming inside the upload
        f"bob/{NB}",  # a folder named after bob
        f"deep/er/bob_5_55_{NB}",
    ],
)
def test_a_canvas_upload_naming_another_student_stays_the_uploaders(tmp_path, pattern, inner):
    upload = _zip(tmp_path / "work.zip", {inner: EVIL})
    download = _zip(
        tmp_path / "download.zip",
        {
            f"alice_1_11_{NB}": HONEST,
            "mallory_7_70_work.zip": upload.read_bytes(),
        },
    )
    report = _collect(tmp_path, download, pattern=pattern)
    got = _submitted(tmp_path)
    assert got.get("alice") == HONEST
    assert "bob" not in got and "Bob" not in got, _notes(report)
    assert got.get("mallory") == EVIL, _notes(report)


def test_a_zip_in_a_zip_cannot_introduce_another_student(tmp_path):
    inner = _zip(tmp_path / "inner.zip", {f"bob_5_55_{NB}": EVIL})
    upload = _zip(tmp_path / "work.zip", {"inner.zip": inner.read_bytes()})
    download = _zip(
        tmp_path / "download.zip",
        {f"bob_5_55_{NB}": HONEST, "mallory_7_70_work.zip": upload.read_bytes()},
    )
    _collect(tmp_path, download)
    got = _submitted(tmp_path)
    assert got["bob"] == HONEST
    assert got.get("mallory") == EVIL


@pytest.mark.parametrize("pattern", ["folders", "auto"])
@pytest.mark.parametrize(
    "inner", [f"bob_5_55_{NB}", f"Bob_9_assignsubmission_file_/{NB}", f"x/bob_5_55_{NB}"]
)
def test_a_students_folder_naming_another_student_stays_theirs(tmp_path, pattern, inner):
    folder = tmp_path / "marking"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / NB).write_bytes(HONEST)
    (folder / "mallory" / inner).parent.mkdir(parents=True)
    (folder / "mallory" / inner).write_bytes(EVIL)
    report = _collect(tmp_path, folder, pattern=pattern)
    got = _submitted(tmp_path)
    assert set(got) == {"alice", "mallory"}, _notes(report)
    assert got["mallory"] == EVIL


@pytest.mark.parametrize("pattern", ["moodle", "auto"])
def test_a_moodle_upload_naming_another_participant_stays_the_uploaders(tmp_path, pattern):
    download = _zip(
        tmp_path / "moodle.zip",
        {
            f"Ann Lee_1_assignsubmission_file_/{NB}": HONEST,
            f"Mal Ory_7_assignsubmission_file_/Bob Jones_9_assignsubmission_file_/{NB}": EVIL,
            f"Mal Ory_7_assignsubmission_file_/x/bob_5_55_{NB}": EVIL,
        },
    )
    report = _collect(tmp_path, download, pattern=pattern)
    got = _submitted(tmp_path)
    assert set(got) == {"Ann Lee", "Mal Ory"}, _notes(report)


@pytest.mark.parametrize(
    "pattern, path, group",
    [
        (
            r"(?:.*/)?(?P<student_id>\w+)-(?P<file_id>\w+)\.ipynb",
            "mallory/bob-value.ipynb",
            "student id",
        ),
        (
            r"(?P<student_id>\w+)/(?:.*/)?(?P<timestamp>[\d-]+)\.ipynb",
            "mallory/2020-01-01.ipynb",
            "timestamp",
        ),
    ],
)
def test_a_custom_pattern_cannot_take_a_student_or_time_from_inside_an_upload(pattern, path, group):
    placement, why = col.match_file(path, col._pattern(pattern), [NB])
    assert placement is None and group in why and "inside an upload" in why


@pytest.mark.parametrize(
    "names",
    [
        ("Zoë", "Zoe\u0308"),  # one name in two Unicode spellings
        ("alice", "Alice"),  # differing only by case
        ("bob", "bob "),  # a trailing space
    ],
)
def test_two_uploads_claiming_one_student_are_both_refused(tmp_path, names):
    folder = tmp_path / "marking"
    for name, data in zip(names, (HONEST, EVIL)):
        (folder / name).mkdir(parents=True)
        (folder / name / NB).write_bytes(data)
    report = _collect(tmp_path, folder, pattern="folders")
    assert _submitted(tmp_path) == {}
    assert len(report.not_placed) == 2 and report.exit_code == 1, _notes(report)


def test_two_canvas_users_with_one_login_stay_two_students(tmp_path):
    """Canvas's user id in the name tells them apart (issue 26): each is filed under
    <login>-<canvas id> and added to roster.csv; neither gets the other's work."""
    download = _zip(
        tmp_path / "download.zip",
        {f"bob_5_55_{NB}": HONEST, f"bob_6_66_{NB}": EVIL, f"carl_3_33_{NB}": HONEST},
    )
    report = _collect(tmp_path, download, pattern="canvas")
    assert _submitted(tmp_path) == {"bob-5": HONEST, "bob-6": EVIL, "carl": HONEST}
    assert report.exit_code == 0 and len(report.roster_added) == 3, _notes(report)


def test_an_id_differing_only_by_case_from_a_collected_student_is_refused(tmp_path):
    first = tmp_path / "first"
    (first / "alice").mkdir(parents=True)
    (first / "alice" / NB).write_bytes(HONEST)
    _collect(tmp_path, first, pattern="folders")
    second = tmp_path / "second"
    (second / "ALICE").mkdir(parents=True)
    (second / "ALICE" / NB).write_bytes(EVIL)
    report = _collect(tmp_path, second, pattern="folders")
    assert _submitted(tmp_path) == {"alice": HONEST}
    assert report.exit_code == 1 and "ALICE" in _notes(report) and not report.placed


@pytest.mark.parametrize(
    "entry",
    [
        f"../../escaped_{NB}",
        f"/tmp/escaped_{NB}",
        f"..\\..\\escaped_{NB}",
        f"mallory_7_70_x/../../escaped_{NB}",
        f"mallory_7_70_x/../bob_5_55_{NB}",
    ],
)
def test_path_traversal_entries_are_refused_with_a_note(tmp_path, entry):
    (tmp_path / "d").mkdir()
    download = _zip(tmp_path / "d" / "download.zip", {f"alice_1_11_{NB}": HONEST, entry: EVIL})
    report = _collect(tmp_path, download, pattern="canvas")
    assert _submitted(tmp_path) == {"alice": HONEST}
    assert not list(tmp_path.rglob(f"escaped_{NB}"))
    assert not Path(f"/tmp/escaped_{NB}").exists()
    ((name, why),) = report.not_placed
    assert re.split(r"[/\\]", entry)[-1] in name and "path" in why, _notes(report)


def test_links_in_folders_are_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / NB).write_bytes(EVIL)
    folder = tmp_path / "marking"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / NB).write_bytes(HONEST)
    (folder / "mallory").mkdir()
    (folder / "mallory" / NB).symlink_to(secret / NB)
    (folder / "bob").symlink_to(secret)
    os.mkfifo(folder / "alice" / "pipe.ipynb")
    report = _collect(tmp_path, folder, pattern="folders")
    assert _submitted(tmp_path) == {"alice": HONEST}
    notes = _notes(report)
    assert "mallory" in notes and "bob" in notes and "pipe.ipynb" in notes, notes
    assert all("\n" not in why for _, why in report.not_placed)


def test_a_folder_or_file_swapped_for_a_link_while_it_is_read_is_not_followed(tmp_path):
    """Whoever can write in the folder collect reads may swap a subfolder or a file for a
    link between its listing and its reading (issue 49, item 3): nothing is reached."""
    from autograder.intake.archive_readers import folder_members

    secret = tmp_path / "secret"
    (secret / "alice").mkdir(parents=True)
    (secret / NB).write_bytes(EVIL)
    (secret / "alice" / NB).write_bytes(EVIL)
    folder = tmp_path / "marking"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / NB).write_bytes(HONEST)
    members = folder_members(folder, set())
    assert next(members).name == "alice"  # listed as a folder; swapped before it is read
    (folder / "alice").rename(tmp_path / "was")
    (folder / "alice").symlink_to(secret / "alice")
    (rest,) = list(members)
    assert rest.name == "alice" and "changed while it was read" in rest.kind, rest
    (folder / "alice").unlink()
    (tmp_path / "was").rename(folder / "alice")
    for swap in ("link", "another file"):
        (folder / "alice" / NB).unlink()
        (folder / "alice" / NB).write_bytes(HONEST)
        members = folder_members(folder, set())
        next(members)
        file = next(members)  # alice's notebook, listed; swapped before it is opened
        assert file.name == f"alice/{NB}"
        other = folder / "alice" / "other"  # made first: it cannot reuse the inode
        if swap == "link":
            other.symlink_to(secret / NB)
        else:
            other.write_bytes(EVIL)
        other.replace(folder / "alice" / NB)
        with pytest.raises(OSError):
            file.open()
        members.close()


def test_a_symlink_entry_in_a_zip_is_refused(tmp_path):
    path = tmp_path / "download.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"alice_1_11_{NB}", HONEST)
        link = zipfile.ZipInfo(f"mallory_7_70_{NB}")
        link.create_system = 3
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
    report = _collect(tmp_path, path, pattern="canvas")
    assert _submitted(tmp_path) == {"alice": HONEST}
    assert "link" in _notes(report)


# ---- archives are read within limits ---------------------------------------------------------


def _deflated(data: bytes) -> tuple[bytes, int, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(), zlib.crc32(data), len(data), zipfile.ZIP_DEFLATED


def _stored(data: bytes) -> tuple[bytes, int, int, int]:
    return data, zlib.crc32(data), len(data), zipfile.ZIP_STORED


def _zeros(mib: int) -> tuple[bytes, int, int, int]:
    """``mib`` MiB of zeros, deflated, in milliseconds: after a sync flush every further MiB
    compresses to the same bytes (about 1 KiB)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(MiB)
    first = c.compress(chunk) + c.flush(zlib.Z_SYNC_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_SYNC_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(chunk, crc)
    return first + again * (mib - 1) + c.flush(), crc, mib * MiB, zipfile.ZIP_DEFLATED


def _raw_zip(path: Path, members: dict[str, tuple[bytes, int, int, int]]) -> Path:
    """A zip of already compressed members (name -> data, crc, size, method), written the
    way a bomb's author writes one (the sizes in the headers are whatever they say)."""
    local, central = bytearray(), bytearray()
    for name, (data, crc, size, method) in members.items():
        raw, offset = name.encode(), len(local)
        local += (
            struct.pack(
                "<4s5H3L2H",
                b"PK\x03\x04",
                20,
                0x800,
                method,
                0,
                33,
                crc,
                len(data),
                size,
                len(raw),
                0,
            )
            + raw
            + data
        )
        central += (
            struct.pack(
                "<4s6H3L5H2L",
                b"PK\x01\x02",
                20,
                20,
                0x800,
                method,
                0,
                33,
                crc,
                len(data),
                size,
                len(raw),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + raw
        )
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(local), 0
    )
    path.write_bytes(bytes(local + central + end))
    return path


def _collect_in_child(tmp_path: Path, download: Path) -> tuple[int, str]:
    """collect in a child limited to 1 GiB of address space and 128 MiB per written file
    (today's code would otherwise fill memory or disk); returns its peak RSS (MiB) and
    its notes. The peak is the child's own (VmHWM): Linux carries ``ru_maxrss`` over
    ``execve`` from the process that spawned it, so it would report the pytest worker's
    peak (over 800 MiB after test_engine's million-node chain) instead of collect's."""
    script = f"""
import resource, sys
def peak_mib():
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) // 1024 for line in status
                        if line.startswith("VmHWM:"))
    except (OSError, StopIteration):  # no procfs: ru_maxrss, in bytes on macOS
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak >> (20 if sys.platform == "darwin" else 10)
resource.setrlimit(resource.RLIMIT_AS, ({1 << 30}, {1 << 30}))
resource.setrlimit(resource.RLIMIT_FSIZE, ({128 * MiB}, {128 * MiB}))
sys.path.insert(0, {str(ROOT)!r})
from autograder.intake.collect import collect
r = collect({A!r}, [{str(download)!r}], pattern="canvas", root={str(tmp_path / "course")!r})
print(peak_mib())
for name, why in r.not_placed:
    print(name, why, sep=": ")
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    peak, _, notes = proc.stdout.partition("\n")
    return int(peak), notes


@pytest.mark.parametrize("pack", [_stored, _deflated])  # how the LMS stored the upload
def test_a_small_zip_bomb_upload_is_refused_without_taking_memory(tmp_path, pack):
    bomb = _raw_zip(tmp_path / "work.zip", {NB: _zeros(1536)})  # 1.5 GiB in 1.5 MB
    assert bomb.stat().st_size < 2 * MiB
    download = _raw_zip(
        tmp_path / "download.zip",
        {
            f"alice_1_11_{NB}": _deflated(HONEST),
            "mallory_7_70_work.zip": pack(bomb.read_bytes()),
            f"eve_8_80_{NB}": _zeros(1536),
        },
    )
    peak, notes = _collect_in_child(tmp_path, download)
    assert peak < 400, f"collect peaked at {peak} MiB"
    assert _submitted(tmp_path) == {"alice": HONEST}
    lines = notes.splitlines()
    assert any("mallory_7_70_work.zip" in line for line in lines), notes
    assert any(f"eve_8_80_{NB}" in line for line in lines), notes
    assert all(re.search(r"MiB|ratio", line) for line in lines), notes


def test_nested_zip_bombs_and_deep_nesting_are_refused(tmp_path):
    inner = _raw_zip(tmp_path / "inner.zip", {NB: _zeros(512)})
    nested = _raw_zip(
        tmp_path / "nested.zip", {f"copy{i}.zip": _stored(inner.read_bytes()) for i in range(8)}
    )
    deep = _zip(tmp_path / "d0.zip", {NB: EVIL})
    for level in range(1, 6):
        deep = _zip(tmp_path / f"d{level}.zip", {deep.name: deep.read_bytes()})
    download = _raw_zip(
        tmp_path / "download.zip",
        {
            f"alice_1_11_{NB}": _deflated(HONEST),
            "mallory_7_70_nested.zip": _stored(nested.read_bytes()),
            "trudy_9_90_deep.zip": _stored(deep.read_bytes()),
        },
    )
    peak, notes = _collect_in_child(tmp_path, download)
    assert peak < 400, f"collect peaked at {peak} MiB"
    assert _submitted(tmp_path) == {"alice": HONEST}
    assert f"mallory_7_70_nested.zip/copy0.zip/{NB}: refused" in notes, notes
    assert "mallory_7_70_nested.zip: refused" in notes, notes
    assert re.search(r"trudy_9_90_deep.zip/\S+: refused: .* deep", notes), notes


def test_an_upload_with_too_many_entries_is_one_note(tmp_path):
    upload = _zip(tmp_path / "many.zip", {f"f{i}.txt": b"x" for i in range(2500)})
    download = _zip(
        tmp_path / "download.zip",
        {f"alice_1_11_{NB}": HONEST, "mallory_7_70_many.zip": upload.read_bytes()},
    )
    report = _collect(tmp_path, download, pattern="canvas")
    assert _submitted(tmp_path) == {"alice": HONEST}
    assert len(report.not_placed) == 1, _notes(report)[:2000]
    assert "mallory_7_70_many.zip" in _notes(report) and "entries" in _notes(report)


def test_a_header_that_lies_about_the_size_is_refused(tmp_path):
    data, crc, _, method = _zeros(64)
    download = _raw_zip(
        tmp_path / "download.zip",
        {f"alice_1_11_{NB}": _deflated(HONEST), f"mallory_7_70_{NB}": (data, crc, 10, method)},
    )
    report = _collect(tmp_path, download, pattern="canvas")
    assert _submitted(tmp_path) == {"alice": HONEST}
    assert [name for name, _ in report.not_placed] == [f"{download}: mallory_7_70_{NB}"]


class _Zeros:
    """A file of zeros, read by tarfile without holding it."""

    def __init__(self, size: int):
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)


def test_a_tar_upload_is_read_within_the_same_rules(tmp_path):
    upload = tmp_path / "work.tar.gz"
    with tarfile.open(upload, "w:gz", compresslevel=1) as tf:
        for name, data in ((f"work/{NB}", EVIL), (f"../../escaped_{NB}", EVIL)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo(f"work/bob_5_55_{NB}")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz", compresslevel=1) as tf:
        info = tarfile.TarInfo(NB)
        info.size = 256 * MiB
        tf.addfile(info, _Zeros(info.size))
    assert bomb.stat().st_size < 2 * MiB
    download = _raw_zip(
        tmp_path / "download.zip",
        {
            f"alice_1_11_{NB}": _deflated(HONEST),
            "mallory_7_70_work.tar.gz": _stored(upload.read_bytes()),
            "eve_8_80_bomb.tar.gz": _stored(bomb.read_bytes()),
        },
    )
    report = _collect(tmp_path, download)
    assert _submitted(tmp_path) == {"alice": HONEST, "mallory": EVIL}, _notes(report)
    notes = _notes(report)
    assert f"escaped_{NB}: unsafe path" in notes and "a link" in notes, notes
    assert f"eve_8_80_bomb.tar.gz/{NB}: refused: a file may unpack to at most" in notes
    assert "eve_8_80_bomb.tar.gz: refused: unpacks to more than 100 times its size" in notes
    assert not list(tmp_path.rglob(f"escaped_{NB}"))


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_entries_zipfile_cannot_decompress_in_bounded_steps_are_refused(tmp_path, method):
    """zipfile decompresses bzip2 and lzma a whole chunk at a time: 208 bytes of bzip2 are
    256 MiB of zeros, so such entries are not read at all."""
    upload = tmp_path / "work.zip"
    with zipfile.ZipFile(upload, "w", method) as zf:
        zf.writestr(NB, bytes(16 * MiB))
    download = _raw_zip(
        tmp_path / "download.zip",
        {
            f"alice_1_11_{NB}": _deflated(HONEST),
            "mallory_7_70_work.zip": _stored(upload.read_bytes()),
        },
    )
    report = _collect(tmp_path, download)
    assert _submitted(tmp_path) == {"alice": HONEST}
    ((name, why),) = report.not_placed
    assert name.endswith(f"mallory_7_70_work.zip/{NB}") and "bzip2 or lzma" in why


# ---- honest collection is unchanged -----------------------------------------------------------


@pytest.mark.parametrize("pattern", ["canvas", "auto"])
def test_an_honest_canvas_download_is_collected_as_before(tmp_path, pattern):
    upload = _zip(tmp_path / "work.zip", {f"work/{NB}": HONEST, "work/notes.txt": b"hi"})
    download = _zip(
        tmp_path / "download.zip",
        {
            f"alice_1_11_{NB}": HONEST,
            "bob_late_2_22_value-1.ipynb": EVIL,
            "carol_3_33_work.zip": upload.read_bytes(),
            "README": b"from the LMS",
        },
    )
    report = _collect(tmp_path, download, pattern=pattern)
    assert _submitted(tmp_path) == {"alice": HONEST, "bob": EVIL, "carol": HONEST}
    assert {why for _, why in report.not_placed} == {"not a notebook"}, _notes(report)


def test_honest_folders_and_moodle_downloads_are_collected_as_before(tmp_path):
    folder = tmp_path / "marking"
    for name in ("alice", "Zoë Saldaña", "=2+5"):
        (folder / name / "work").mkdir(parents=True)
        (folder / name / "work" / NB).write_bytes(HONEST)
    moodle = _zip(tmp_path / "moodle.zip", {f"Ann Lee_1_assignsubmission_file_/{NB}": EVIL})
    report = _collect(tmp_path, folder, moodle)
    assert _submitted(tmp_path) == {
        "=2+5": HONEST,
        "Ann Lee": EVIL,
        "Zoë Saldaña": HONEST,
        "alice": HONEST,
    }
    assert report.exit_code == 0, _notes(report)


def test_one_student_in_a_download_and_a_folder_is_not_ambiguous(tmp_path):
    download = _zip(tmp_path / "download.zip", {f"alice_1_11_{NB}": EVIL})
    folder = tmp_path / "late"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / NB).write_bytes(HONEST)
    report = _collect(tmp_path, download, folder)
    assert _submitted(tmp_path) == {"alice": HONEST}  # the later PATH, as before
    assert [why for _, why in report.not_placed] == [
        f"another copy for alice's {NB} was kept: {folder / 'alice' / NB}"
    ]


# ---- spreadsheets: no cell is a formula ------------------------------------------------------


@pytest.mark.parametrize(
    "text, cell",
    [
        ("=2+5", "'=2+5"),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("-2+3", "'-2+3"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-1.5", "-1.5"),
        ("7", "7"),
        ("0.25", "0.25"),
        ("-3e2", "-3e2"),
        ("alice", "alice"),
        ("", ""),
    ],
)
def test_spreadsheet_cells_are_never_formulas(text, cell):
    from autograder.spreadsheet import safe_cell

    assert safe_cell(text) == cell


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission
def test_export_neutralises_formula_ids_and_notes(tmp_path):
    from nbgrader.api import Gradebook

    from autograder.grade.export import export
    from autograder.grade.gradebook import cache_alembic_version

    cache_alembic_version()
    ids = ["=2+5", "+cmd", "@SUM(A1)", "-2+3", "alice"]
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "autograd-from-scratch") as gb:
        gb.add_assignment(A)
        gb.add_notebook("value", A)
        gb.add_grade_cell("t1", "value", A, max_score=4, cell_type="code")
        for student in ids:
            gb.add_student(student)
            gb.add_submission(A, student)
            gb.find_grade("t1", "value", A, student).auto_score = 3
        gb.db.commit()
    record = tmp_path / "autograded" / "=2+5" / A / ".autograder.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"note": '=HYPERLINK("http://x")', "review": ["@x"]}))
    grades, cells, _items = export(root=tmp_path)
    rows = list(csv.DictReader(grades.open(encoding="utf-8")))
    assert sorted(r["student"] for r in rows) == sorted("'" + s if s != "alice" else s for s in ids)
    assert {(r["score"], r["max_score"]) for r in rows} == {("3", "4")}
    by = {r["student"]: r for r in rows}
    assert (by["'=2+5"]["note"], by["'=2+5"]["review"]) == ('\'=HYPERLINK("http://x")', "'@x")
    students = {r["student"] for r in csv.DictReader(cells.open(encoding="utf-8"))}
    assert students == {r["student"] for r in rows}


def test_every_csv_the_grader_writes_goes_through_the_one_helper():
    writers = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "autograder").rglob("*.py")
        if re.search(r"csv\.(writer|DictWriter)\b", p.read_text())
    ]
    assert writers == ["autograder/spreadsheet.py"]


def test_ids_with_invisible_or_control_characters_are_refused():
    for bad in ("alice\u200b", "bob\nx", "carl\x00", "dave\u202e", "x" * 200):
        assert col.clean_student_id(bad) is None, repr(bad)
    assert col.clean_student_id("=2+5") == "=2+5"
