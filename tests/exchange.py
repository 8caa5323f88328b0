"""Real nbgrader exchange tests with real student unix users.

An ``Exchange`` is an nbgrader exchange folder on this machine. The instructor side
(release_assignment, collect, release_feedback) runs as root in a ``ScratchCourse``. Each
``StudentUser`` is a unix user made with ``useradd`` for one test, with a HOME of its own,
who runs the real ``nbgrader fetch_assignment``, ``submit`` and ``fetch_feedback``.
``userdel`` removes it afterwards, whether the test passed or failed.

    # the fixtures, with the ones student_users uses (pytest finds them by name)
    from exchange import shared_exchange, shared_tmp_path, student_users  # noqa: F401

    def test_x(shared_exchange, student_users, tmp_path):  # noqa: F811
        course = ScratchCourse(tmp_path / "course", ["01_value"])
        shared_exchange.release(course, "01_value")
        ada = student_users("ada")
        ada.fetch("01_value")
        inbound = ada.submit("01_value")

For state shared by a module's tests, use ``shared_tmp`` and ``StudentUsers`` as context
managers in a module-scoped fixture (after ``need_student_users()``).

How a command runs as a student: root runs ``setpriv --reuid --regid --init-groups`` with a
clean environment (HOME, USER, LOGNAME, PATH with the venv's bin first) in the student's
HOME. setpriv rather than runuser: no PAM session, only the ids change. ``unshare --user
--map-user=UID`` is not used: it maps ids inside a namespace only, so a student's files
would be owned by the caller on disk, and the owner checks of nbgrader's collect (and of
the watcher) would test nothing. So these tests need root; without it they skip.

Folders: pytest's tmp_path is under /tmp/pytest-of-root, mode 0700, which students cannot
enter. Opening it would expose every test's files, so ``shared_tmp`` makes a folder of its
own under /tmp, mode 0755, for the exchange and the homes (each home 0700, as a real one).
The scratch course stays in tmp_path: only root, the instructor, works in it.

The interpreter: the venv's python may be a link to where students cannot go (here
/root/.pyenv, under /root, mode 0700). Then each student command runs in a private mount
namespace (``unshare --mount``) where that closed folder is an empty tmpfs (mode 0755)
except for the interpreter's folder, bound from the real one. Nothing on disk changes.

What nbgrader's exchange keeps private (nbgrader/exchange/default/): inbound/ is 0733, so
a student cannot list others' submissions. A submission's folder is 0777 and its files
0644: it is hidden by its name (a timestamp and 12 random characters), not by its mode.
Feedback in feedback/ (0711) is named by a hash of the submission's secret, kept in the
student's cache in their HOME.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT, VENV_BIN, ScratchCourse, notebook_path

PREFIX = "nbx-"  # every student user's name starts so: leftovers are easy to find
TIMEOUT = 300  # seconds for one command run as a student


@functools.cache
def course_id() -> str:
    """The course id in the repository's nbgrader_config.py."""
    from autograder.course import open_course

    return open_course(ROOT).course_id


def closed_folder(path: Path, start: Path | None = None) -> Path | None:
    """The first folder from ``start`` (default /) down to ``path`` that other users
    cannot enter, or None."""
    folders = [*reversed(path.parents), path]
    if start is not None:
        folders = [f for f in folders if f.is_relative_to(start)]
    for folder in folders:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return folder
    return None


def unreadable(top: Path) -> Path | None:
    """The first file under ``top`` other users cannot read (or folder they cannot list
    and enter), or None."""
    stack = [top]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    if mode & 0o005 != 0o005:
                        return Path(entry.path)
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                    return Path(entry.path)
    return None


@functools.cache
def _setup() -> tuple[str, tuple[Path, Path] | None]:
    """(why students cannot run nbgrader here, or ""; when the interpreter is out of their
    reach, the closed folder to cover with a tmpfs and the folder in it to bind back)."""
    if os.geteuid() != 0:
        return "needs root to add student users", None
    missing = [tool for tool in ("useradd", "userdel", "setpriv") if shutil.which(tool) is None]
    if missing:
        return f"needs {', '.join(missing)} to run commands as student users", None
    import nbgrader

    site = Path(nbgrader.__file__).resolve().parent.parent
    for path in (Path(VENV_BIN), site):
        closed = closed_folder(path)
        if closed is not None:
            return f"other users cannot enter {closed}, on the way to {path}", None
    bad = unreadable(site)
    if bad is not None:
        return f"site-packages is not readable by other users: {bad}", None
    real = Path(os.path.commonpath([Path(sys.executable).resolve(), Path(sys.base_prefix)]))
    closed = closed_folder(real)
    if closed is None:
        return "", None
    if closed == real:
        return f"other users cannot enter the interpreter's folder {real}", None
    keep = closed / real.relative_to(closed).parts[0]
    inner = closed_folder(real, start=keep)
    if inner is not None:
        return f"other users cannot enter {inner}, on the way to {real}", None
    if shutil.which("unshare") is None:
        return f"needs unshare: the interpreter is under {closed}, closed to others", None
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a mount namespace: {probe.stderr.strip()}", None
    return "", (closed, keep)


def need_student_users() -> None:
    """Skip the calling test when student users cannot run nbgrader here."""
    reason, _ = _setup()
    if reason:
        pytest.skip(reason)


@contextlib.contextmanager
def shared_tmp(prefix: str = PREFIX) -> Iterator[Path]:
    """A new folder under the temp folder that every user may enter (mode 0755); removed
    with all its files at the end."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        path.chmod(0o755)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Exchange:
    """An nbgrader exchange at ``root`` for ``course_id``, shared by all users as nbgrader's
    docs set one up: mode 1777 (anyone may add, only owners delete). nbgrader makes
    <course>/inbound, outbound and feedback in it itself."""

    def __init__(self, root: Path, course_id: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o1777)
        closed = closed_folder(root)
        if closed is not None:
            raise ValueError(f"students cannot reach {root}: {closed} is closed to others")
        self.root = root
        self.course_id = course_id

    @property
    def course_path(self) -> Path:
        return self.root / self.course_id

    @property
    def flags(self) -> list[str]:
        """What every nbgrader command given this exchange gets."""
        return [f"--Exchange.root={self.root}", f"--CourseDirectory.course_id={self.course_id}"]

    def release(self, course: ScratchCourse, assignment: str) -> Path:
        """Generate ``assignment`` in ``course`` (once) and run the real release_assignment
        into this exchange; returns its outbound folder."""
        course.release(assignment)
        course.nbgrader("release_assignment", assignment, "--force", *self.flags)
        return self.course_path / "outbound" / assignment

    def inbound(self) -> list[Path]:
        """Every submission in inbound/, as root sees it."""
        folder = self.course_path / "inbound"
        return sorted(folder.iterdir()) if folder.is_dir() else []


@dataclass
class StudentUser:
    """A unix user who runs the real nbgrader as a student of ``exchange``; ``name`` is
    their student id in nbgrader too."""

    name: str
    uid: int
    home: Path
    exchange: Exchange
    env: tuple[str, ...] = ()  # more NAME=value for every command (a hub token, ...)

    def command(self, *argv: str) -> list[str]:
        """``argv`` as this user, in a clean environment (see the module's docstring)."""
        env = [
            "env",
            "-i",
            f"HOME={self.home}",
            f"USER={self.name}",
            f"LOGNAME={self.name}",
            f"PATH={VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
            "LANG=C.UTF-8",
            *self.env,
        ]
        user = ["setpriv", f"--reuid={self.name}", f"--regid={self.name}", "--init-groups"]
        cmd = [*user, *env, *argv]
        _, cover = _setup()
        if cover is None:
            return cmd
        closed, keep = cover
        # "." is the real folder still, under the tmpfs: --no-canonicalize keeps mount from
        # turning it into the path, which now names the tmpfs's empty folder.
        script = (
            'cd "$2" && mount -t tmpfs -o mode=0755 tmpfs "$1" && mkdir "$2" '
            '&& mount --no-canonicalize --bind . "$2" && cd "$3" && shift 3 && exec "$@"'
        )
        where = [str(closed), str(keep), str(self.home)]
        return ["unshare", "--mount", "sh", "-c", script, "sh", *where, *cmd]

    def run(
        self, *argv: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` as this user in their HOME; with ``check``, a failure raises
        AssertionError with its stderr."""
        proc = subprocess.run(
            self.command(*argv),
            cwd=self.home,
            input=input,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} as {self.name} failed ({proc.returncode}):\n"
                f"{proc.stderr[-3000:]}"
            )
        return proc

    def nbgrader(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """The real nbgrader CLI on the exchange, as this user."""
        return self.run("nbgrader", *argv, *self.exchange.flags)

    def fetch(self, assignment: str) -> Path:
        """fetch_assignment; returns the fetched folder in HOME."""
        self.nbgrader("fetch_assignment", assignment)
        folder = self.home / assignment
        assert folder.is_dir(), f"fetch_assignment made no {folder}"
        return folder

    def submit(self, assignment: str, notebook: nbformat.NotebookNode | None = None) -> Path:
        """Write ``notebook`` (if given) over the fetched one, as this user, and submit;
        returns the inbound folder the submission made."""
        if notebook is not None:
            path = notebook_path(self.home, assignment)
            self.run("sh", "-c", 'cat > "$1"', "sh", str(path), input=nbformat.writes(notebook))
        mine = f"{self.name}+{assignment}+"
        before = {p for p in self.exchange.inbound() if p.name.startswith(mine)}
        self.nbgrader("submit", assignment)
        new = [p for p in self.exchange.inbound() if p.name.startswith(mine) and p not in before]
        assert len(new) == 1, f"submit made {len(new)} inbound folders: {new}"
        return new[0]

    def fetch_feedback(self, assignment: str) -> list[Path]:
        """fetch_feedback; returns the html files under HOME/<assignment>/feedback/."""
        self.nbgrader("fetch_feedback", assignment)
        return sorted((self.home / assignment / "feedback").rglob("*.html"))


class StudentUsers:
    """Makes student users with homes in ``homes`` (``make``) and removes them all, homes
    too, at the end of a ``with`` block (or on ``remove``)."""

    def __init__(self, homes: Path, exchange: Exchange, prefix: str = PREFIX) -> None:
        self.homes = homes
        self.exchange = exchange
        self.prefix = prefix
        self.made: list[StudentUser] = []

    def __enter__(self) -> StudentUsers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def make(self, label: str = "student", exchange: Exchange | None = None) -> StudentUser:
        """A new user named <prefix><label>-<6 hex digits> (prefix: nbx- unless the pool
        was given another), a student of ``exchange`` (by default this pool's).
        ``label``: 1 to 12 lowercase letters and digits."""
        if not re.fullmatch(r"[a-z][a-z0-9]{0,11}", label):
            raise ValueError(f"label {label!r}: 1 to 12 lowercase letters and digits")
        name = f"{self.prefix}{label}-{secrets.token_hex(3)}"
        home = self.homes / name
        self.homes.mkdir(mode=0o755, parents=True, exist_ok=True)
        useradd = [
            "useradd",
            "--no-create-home",
            "--home-dir",
            str(home),
            "--shell",
            "/usr/sbin/nologin",
            "--user-group",
            name,
        ]
        proc = subprocess.run(useradd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"useradd {name} failed: {proc.stderr.strip()}")
        entry = pwd.getpwnam(name)
        user = StudentUser(name, entry.pw_uid, home, exchange or self.exchange)
        self.made.append(user)
        home.mkdir(mode=0o700)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        return user

    def remove(self) -> None:
        """userdel every user made (their groups go with them) and delete their homes."""
        failed = []
        while self.made:
            user = self.made.pop()
            proc = subprocess.run(["userdel", "--force", user.name], capture_output=True, text=True)
            if proc.returncode != 0:
                failed.append(f"{user.name}: {proc.stderr.strip()}")
            shutil.rmtree(user.home, ignore_errors=True)
        if failed:
            raise AssertionError("userdel failed for " + "; ".join(failed))


# ---- fixtures: import them into a test module by name -------------------------------------


@pytest.fixture
def shared_tmp_path() -> Iterator[Path]:
    """A shared_tmp folder for one test; skips the test where student users cannot run."""
    need_student_users()
    with shared_tmp() as path:
        yield path


@pytest.fixture
def shared_exchange(shared_tmp_path: Path) -> Exchange:
    """An empty exchange for this course, for one test."""
    return Exchange(shared_tmp_path / "exchange", course_id())


@pytest.fixture
def student_users(
    shared_tmp_path: Path, shared_exchange: Exchange
) -> Iterator[Callable[..., StudentUser]]:
    """``make(label, exchange=shared_exchange) -> StudentUser``; every user made is removed
    after the test, passed or failed."""
    with StudentUsers(shared_tmp_path / "home", shared_exchange) as users:
        yield users.make
