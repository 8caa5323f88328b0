"""The exchange copied while its owner changes it (issue 49, item 3).

A student owns their submission's folder in nbgrader's exchange, and may rename anything
in it, or in inbound/ itself (mode 2733, no sticky bit), while the watcher reads it. Here
a real unix user of the test's own, eve, runs a loop of renameat2(RENAME_EXCHANGE) (as
herself: setpriv, tests/exchange.py) while the grader (root here, who reads everything)
checks and copies her submission 200 times, as the watcher does (``problem`` then
``archive``). What she swaps in is something she cannot read but the grader can: a
folder or a file of the grader's, or a classmate's submission. No byte of it may land in
a copy, and every copy is refused or whole: her own files only, each as she wrote it,
and all those she never moves. Bounded by the rounds, not by time; no timing asserted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from exchange import Exchange, StudentUser, StudentUsers, course_id, need_student_users, shared_tmp

from autograder.watch import inbound
from autograder.watch.tree import Bounds, Refused

A = "01_value"
ROUNDS = 200
FORBIDDEN = b"FORBIDDEN"  # in every file eve must never get
EVE_TIME = "2026-11-26 10:00:00.000000 UTC"
ADA_TIME = "2001-01-01 10:00:00.000000 UTC"  # ada's claim: never eve's
pytestmark = pytest.mark.xdist_group("exchange_users")

# Run as eve: swap two names until the stop file appears (at most 60 s), ending as it began.
SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b, stop = sys.argv[1:4]
def swap():
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
swap(); swap()
print("ready", flush=True)
swaps, end = 2, time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < end:
    swap(); swaps += 1
if swaps % 2:
    swap(); swaps += 1  # as it was
print(swaps, flush=True)
"""


@dataclass
class Place:
    base: Path
    inbound: Path
    grader: Path  # root's, 0700: eve cannot read it
    eve: StudentUser
    ada: StudentUser


@pytest.fixture(scope="module")
def place() -> Iterator[Place]:
    need_student_users()
    with shared_tmp() as base:
        exchange = Exchange(base / "exchange", course_id())
        with StudentUsers(base / "home", exchange) as users:
            eve, ada = users.make("eve"), users.make("ada")
            yield Place(base, base / "inbound", base / "grader", eve, ada)


@pytest.fixture
def case(place: Place) -> Iterator[Place]:
    """Inbound (2733, as nbgrader makes it) and the grader's secret folder, new."""
    for folder in (place.inbound, place.grader):
        shutil.rmtree(folder, ignore_errors=True)
    place.inbound.mkdir()
    place.inbound.chmod(0o2733)
    # the grader's files under her files' names (what the old copy, following a swapped
    # link at any step but the last, read in their place)
    write(place.grader / "mirror", {rel: FORBIDDEN + rel.encode() for rel in EVE})
    place.grader.chmod(0o700)
    yield place
    for folder in (place.inbound, place.grader, place.base / "copies"):
        shutil.rmtree(folder, ignore_errors=True)
    (place.base / "stop").unlink(missing_ok=True)


def write(folder: Path, files: dict[str, bytes], user: StudentUser | None = None) -> None:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    if user is not None:
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, user.uid, user.uid, follow_symlinks=False)  # --user-group: gid=uid


EVE = {
    "nb.ipynb": b'{"eve": 1}',
    "data/a.txt": b"eve a",
    "data/b.txt": b"eve b",
    inbound.TIMESTAMP: EVE_TIME.encode(),
    inbound.SECRET: b"eve secret",
}


def submission(place: Place, files: dict[str, bytes] = EVE) -> Path:
    """Eve's submission folder in inbound/, hers (0755 folders as nbgrader makes them)."""
    folder = place.inbound / f"{place.eve.name}+{A}+{EVE_TIME}+abcdefabcdef"
    write(folder, files, place.eve)
    return folder


def renamed(files: dict[str, bytes], old: str, new: str) -> dict[str, bytes]:
    """``files`` with the folder or file ``old`` named ``new`` (the other state)."""
    return {
        (new + rel[len(old) :] if rel == old or rel.startswith(old + "/") else rel): data
        for rel, data in files.items()
    }


def race(place: Place, folder: Path, a: Path, b: Path, allowed: list[dict]) -> dict[str, int]:
    """Eve swaps ``a`` and ``b`` while the grader takes ``folder`` ROUNDS times; every
    copy must be one of ``allowed`` (whole), none may hold a forbidden byte."""
    stop = place.base / "stop"
    stop.unlink(missing_ok=True)
    proc = subprocess.Popen(
        place.eve.command("python", "-c", SWAPPER, str(a), str(b), str(stop)),
        cwd=place.eve.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    outcomes = {"taken": 0, "refused": 0}
    try:
        assert proc.stdout.readline().strip() == "ready", proc.communicate(timeout=30)[1]
        for i in range(ROUNDS):
            outcome = take(place, folder, i, allowed)
            outcomes[outcome] += 1
    finally:
        stop.touch()
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    assert proc.returncode == 0, err
    outcomes["swaps"] = int(out.split()[-1])
    print(f"{folder.name}: {outcomes}")
    return outcomes


def take(place: Place, folder: Path, i: int, allowed: list[dict]) -> str:
    """What the watcher does with an arrival (service.Watcher._take): scan, problem,
    archive; "taken" (and the copy checked) or "refused"."""
    for seen in inbound.scan(place.inbound, "exchange"):
        if seen.path == folder:
            assert seen.claimed is None or seen.claimed.year != 2001, "ada's claim was read"
    key = f"exchange/{folder.name}"
    arrival = inbound.Arrival(key, "exchange", folder, place.eve.name, A, None)
    if inbound.problem(arrival, [A], 10**6, check_owner=True):
        return "refused"
    copies = place.base / "copies" / str(i)
    try:
        owner = inbound.owner_uid(arrival, True)
        kept = inbound.archive(arrival, copies, Bounds(), owner)
    except Refused:
        assert not copies.is_dir() or not any(copies.iterdir()), "a half-made copy was left"
        return "refused"
    got = {str(p.relative_to(kept)): p.read_bytes() for p in sorted(kept.rglob("*")) if p.is_file()}
    assert not any(FORBIDDEN in data for data in got.values()), f"round {i}: {got}"
    # each file whole and hers; those she never moves always there (one she renames
    # between two entries' looks may be seen twice or not at all: hers to lose)
    hers = set().union(*(state.items() for state in allowed))
    always = set.intersection(*(set(state.items()) for state in allowed))
    assert always <= got.items() <= hers, f"round {i}: not whole: {sorted(got)}"
    shutil.rmtree(copies)
    return "taken"


def test_a_subfolder_swapped_for_a_link_to_the_graders_folder_reaches_nothing(case):
    """The issue's attack: data/ and a link to a folder of the grader's with the same
    names swap places; the old copy (O_NOFOLLOW on the last step only) took its files."""
    folder = submission(case)
    (folder / "swap").symlink_to(case.grader / "mirror" / "data")
    os.chown(folder / "swap", case.eve.uid, case.eve.uid, follow_symlinks=False)
    allowed = [EVE, renamed(EVE, "data", "swap")]
    done = race(case, folder, folder / "data", folder / "swap", allowed)
    assert done["swaps"] >= 2
    assert take(case, folder, ROUNDS, allowed) == "taken"  # still: a whole copy is taken


def test_a_file_swapped_for_a_link_to_the_graders_file_reaches_nothing(case):
    folder = submission(case)
    (folder / "link").symlink_to(case.grader / "mirror" / "nb.ipynb")
    os.chown(folder / "link", case.eve.uid, case.eve.uid, follow_symlinks=False)
    allowed = [EVE, renamed(EVE, "nb.ipynb", "link")]
    race(case, folder, folder / "nb.ipynb", folder / "link", allowed)
    assert take(case, folder, ROUNDS, allowed) == "taken"


def test_her_folder_swapped_with_a_classmates_submission_is_never_taken_as_hers(case):
    """inbound/ has no sticky bit: eve may rename ada's folder (0700, unreadable to her)
    into her own submission's name and back while the grader walks and copies it."""
    folder = submission(case)
    theirs = case.inbound / f"{case.ada.name}+{A}+{ADA_TIME}+012345012345"
    ada = {"nb.ipynb": FORBIDDEN + b" ada", "data/a.txt": FORBIDDEN}
    write(theirs, {**ada, inbound.TIMESTAMP: ADA_TIME.encode()}, case.ada)
    theirs.chmod(0o700)
    race(case, folder, folder, theirs, [EVE])
    assert take(case, folder, ROUNDS, [EVE]) == "taken"


def test_her_folder_swapped_for_a_link_to_the_graders_folder_reaches_nothing(case):
    folder = submission(case)
    link = case.inbound / "elsewhere"
    link.symlink_to(case.grader / "mirror")
    os.chown(link, case.eve.uid, case.eve.uid, follow_symlinks=False)
    race(case, folder, folder, link, [EVE])
    assert take(case, folder, ROUNDS, [EVE]) == "taken"


def test_a_classmates_file_or_a_hard_link_in_her_folder_refuses_it(case):
    """Her folder is 0777 (nbgrader's): a file planted in it by someone else is not
    hers; nor is a hard link (a second name of a file, hers or not)."""
    folder = submission(case)
    planted = folder / "data" / "z.txt"
    planted.write_bytes(b"planted")
    os.chown(planted, case.ada.uid, case.ada.uid)
    arrival = inbound.Arrival("k", "exchange", folder, case.eve.name, A, None)
    why = inbound.problem(arrival, [A], 10**6, check_owner=True)
    assert why == f"'data/z.txt' belongs to the unix user {case.ada.name}, not {case.eve.name}"
    planted.unlink()
    os.link(folder / "nb.ipynb", folder / "data" / "again.ipynb")
    why = inbound.problem(arrival, [A], 10**6, check_owner=True)
    assert why == "'nb.ipynb' is a hard link (2 names): not taken"  # the first seen


def test_the_hub_never_sets_a_course_folder_a_student_made_in_the_exchange(place):
    """The exchange root is every user's (1777); the hub, as root, makes and chowns each
    course's folder in it at each start. One eve made first, a link to a folder of
    root's or a folder of hers, is refused, and nothing it points at changes."""
    from types import SimpleNamespace

    from autograder.errors import GraderError
    from autograder.hub import filesystem

    root = place.base / "hubexchange"
    root.mkdir(mode=0o1777)
    target = place.base / "roots"
    target.mkdir(mode=0o700)
    plan = SimpleNamespace(exchange_root=root)
    course = SimpleNamespace(id="c1", grader=place.ada.name)  # ada stands for the grader
    try:
        (root / "c1").symlink_to(target)
        os.chown(root / "c1", place.eve.uid, place.eve.uid, follow_symlinks=False)
        with pytest.raises(GraderError, match="is not a folder"):
            filesystem.prepare(plan, course)
        assert target.stat().st_uid == 0 and target.stat().st_mode & 0o777 == 0o700
        (root / "c1").unlink()
        (root / "c1").mkdir()
        os.chown(root / "c1", place.eve.uid, place.eve.uid)
        with pytest.raises(GraderError, match=f"belongs to the unix user {place.eve.name}"):
            filesystem.prepare(plan, course)
        (root / "c1").rmdir()
        filesystem.prepare(plan, course)  # made by the hub: the grader's
        made = (root / "c1").stat()
        assert (made.st_uid, made.st_mode & 0o7777) == (place.ada.uid, 0o755)
        filesystem.prepare(plan, course)  # and again at the next start
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
