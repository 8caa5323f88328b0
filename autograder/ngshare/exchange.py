"""nbgrader's pluggable exchange over ngshare, for nbgrader 0.9 (ngshare-exchange, written
for nbgrader 0.7, pins jupyter-core<4.11.2, which the course's jupyter-server 2 excludes).

Each class is nbgrader's own default one, working on a private mirror of what ngshare
holds for this user (``<jupyter data dir>/nbgrader_ngshare``, in place of
``c.Exchange.root``): the mirror is filled from ngshare before nbgrader reads it, and
what nbgrader writes there (a release, a submission) is sent to ngshare after. So the
Assignments tab, ``nbgrader list``, ``fetch_assignment``, ``submit`` and
``fetch_feedback`` behave as with the filesystem exchange. In ``nbgrader_config.py``:

    c.ExchangeFactory.exchange = "autograder.ngshare.exchange.NgshareExchange"
    c.ExchangeFactory.collect = "autograder.ngshare.exchange.NgshareCollect"  # says: watch
    c.ExchangeFactory.fetch_assignment = "autograder.ngshare.exchange.NgshareFetchAssignment"
    c.ExchangeFactory.fetch_feedback = "autograder.ngshare.exchange.NgshareFetchFeedback"
    c.ExchangeFactory.list = "autograder.ngshare.exchange.NgshareList"
    c.ExchangeFactory.release_assignment = "autograder.ngshare.exchange.NgshareReleaseAssignment"
    c.ExchangeFactory.release_feedback = "autograder.ngshare.exchange.NgshareReleaseFeedback"
    c.ExchangeFactory.submit = "autograder.ngshare.exchange.NgshareSubmit"
    c.Ngshare.url = "http://127.0.0.1:8000/services/ngshare/"  # or NGSHARE_URL

(``configure``, below, sets them.) The token is the server's JUPYTERHUB_API_TOKEN. A
submission's cache folder keeps ngshare's own time of it (``ngshare_timestamp.txt``),
by which its feedback is asked for, as the Hub user (JUPYTERHUB_USER) who sent it:
ngshare records the token's user, whatever ``--student`` named the cache. Collecting
is the watcher's (watch/ngshare.py).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import uuid
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir
from nbgrader.exchange import default
from nbgrader.utils import notebook_hash
from traitlets import Unicode
from traitlets.config import LoggingConfigurable

from .client import Client, Limits, NgshareError, check_files, pack, unpack

NGSHARE_STAMP = "ngshare_timestamp.txt"
KINDS = (
    "collect",
    "fetch_assignment",
    "fetch_feedback",
    "list",
    "release_assignment",
    "release_feedback",
    "submit",
)
# what a student takes from ngshare: an instructor's release, the grader's feedback
TRUSTED = Limits(max_bytes=200 * 1024**2, max_files=2000, max_depth=16)


def configure(c, url: str = "") -> None:
    """Set ``c`` (an nbgrader config) to use these classes (and ngshare at ``url``)."""
    here = __name__
    c.ExchangeFactory.exchange = f"{here}.NgshareExchange"
    for kind in KINDS:
        name = "".join(part.title() for part in kind.split("_"))
        setattr(c.ExchangeFactory, kind, f"{here}.Ngshare{name}")
    if url:
        c.Ngshare.url = url


class Ngshare(LoggingConfigurable):
    """Where ngshare is, and this user's mirror of it."""

    url = Unicode(
        os.environ.get("NGSHARE_URL", ""),
        help="ngshare's address, e.g. http://127.0.0.1:8000/services/ngshare/ "
        "(default: $NGSHARE_URL)",
    ).tag(config=True)

    @property
    def api(self) -> Client:
        return Client(self.url, os.environ.get("JUPYTERHUB_API_TOKEN", ""))

    def ensure_root(self) -> None:
        """The mirror replaces the exchange root: this user's alone."""
        self.root = os.path.join(jupyter_data_dir(), "nbgrader_ngshare")
        os.makedirs(self.root, mode=0o700, exist_ok=True)

    def start(self):
        self.ensure_root()
        try:
            return super().start()
        except NgshareError as exc:
            self.fail(str(exc))

    def course(self) -> str:
        course = self.coursedir.course_id
        if not course:
            self.fail("No course id specified. Re-run with --course flag.")
        return course

    def pull_assignment(self, course: str, assignment: str) -> str:
        """The released ``assignment`` from ngshare into the mirror's outbound folder."""
        answer = self.api.get(f"assignment/{course}/{assignment}")
        files = check_files(answer.get("files"), TRUSTED)
        dest = os.path.join(self.root, course, "outbound", assignment)
        _replace(files, Path(dest))
        return dest

    def pull_feedback(self, course: str, assignment: str) -> None:
        """The feedback of each cached submission of ``assignment`` ("*": all) into the
        mirror's feedback folder, named as nbgrader's fetch_feedback looks for it."""
        folder = os.path.join(self.root, course, "feedback")
        os.makedirs(folder, exist_ok=True)
        cache = os.path.join(self.cache, course)
        for path in sorted(glob.glob(os.path.join(cache, f"*+{glob.escape(assignment)}+*"))):
            when, secret = _read(path, NGSHARE_STAMP), _read(path, "submission_secret.txt")
            named, assignment_id = os.path.basename(path).split("+")[:2]
            student = os.environ.get("JUPYTERHUB_USER") or named  # who ngshare knows
            if not when or not secret:
                continue
            try:
                answer = self.api.get(
                    f"feedback/{course}/{assignment_id}/{student}", timestamp=when
                )
            except NgshareError as exc:
                self.log.warning("No feedback for %s: %s", os.path.basename(path), exc)
                continue
            for name, data in check_files(answer.get("files"), TRUSTED):
                notebook = os.path.splitext(os.path.basename(name))[0]
                page = os.path.join(
                    folder, f"{notebook_hash(secret=secret, notebook_id=notebook)}.html"
                )
                with open(page, "wb") as fh:
                    fh.write(data)


def _read(folder: str, name: str) -> str:
    try:
        with open(os.path.join(folder, name)) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _replace(files: list[tuple[str, bytes]], dest: Path) -> None:
    new = dest.with_name(f".new-{uuid.uuid4().hex}")
    unpack(files, new)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(new, dest)


class NgshareExchange(Ngshare, default.Exchange):
    pass


class NgshareFetchAssignment(Ngshare, default.ExchangeFetchAssignment):
    def init_src(self):
        self.pull_assignment(self.course(), self.coursedir.assignment_id)
        super().init_src()


class NgshareList(Ngshare, default.ExchangeList):
    def init_dest(self):
        courses = [self.coursedir.course_id] if self.coursedir.course_id else None
        if courses is None:
            courses = self.api.get("courses").get("courses") or []
        for course in courses:
            if self.inbound or self.cached:
                self.pull_feedback(course, self.coursedir.assignment_id or "*")
            else:
                self._pull_released(course)
        super().init_dest()

    def _pull_released(self, course: str) -> None:
        released = self.api.get(f"assignments/{course}").get("assignments") or []
        wanted = self.coursedir.assignment_id
        for assignment in released:
            if isinstance(assignment, str) and (not wanted or wanted == assignment):
                self.pull_assignment(course, assignment)
        outbound = os.path.join(self.root, course, "outbound")
        for old in glob.glob(os.path.join(outbound, "*")):
            if os.path.basename(old) not in released:
                shutil.rmtree(old, ignore_errors=True)

    def remove_files(self):
        self.fail("Removing from ngshare is the instructor's (release_assignment --force).")


class NgshareSubmit(Ngshare, default.ExchangeSubmit):
    def init_dest(self):
        os.makedirs(os.path.join(self.root, self.course(), "inbound"), exist_ok=True)
        super().init_dest()

    def init_release(self):
        self.pull_assignment(self.course(), self.coursedir.assignment_id)
        super().init_release()

    def copy_files(self):
        super().copy_files()
        sent = os.path.join(self.inbound_path, self.assignment_filename)
        cached = os.path.join(self.cache_path, self.assignment_filename.rsplit("+", 1)[0])
        if not self.add_random_string:
            cached = os.path.join(self.cache_path, self.assignment_filename)
        course, assignment = self.course(), self.coursedir.assignment_id
        try:
            files = json.dumps(pack(Path(sent)))
            answer = self.api.post(f"submission/{course}/{assignment}", files=files)
        except NgshareError as exc:
            shutil.rmtree(cached, ignore_errors=True)
            self.fail(f"Not submitted: {exc}")
        finally:
            shutil.rmtree(sent, ignore_errors=True)
        with open(os.path.join(cached, NGSHARE_STAMP), "w") as fh:
            fh.write(str(answer.get("timestamp", "")))
        self.log.info("Submitted to ngshare at %s", answer.get("timestamp"))


class NgshareFetchFeedback(Ngshare, default.ExchangeFetchFeedback):
    def init_src(self):
        self.pull_feedback(self.course(), self.coursedir.assignment_id or "*")
        super().init_src()


class NgshareReleaseAssignment(Ngshare, default.ExchangeReleaseAssignment):
    def init_dest(self):
        super().init_dest()
        if os.path.isdir(self.dest_path):  # the mirror's: ngshare says what exists
            shutil.rmtree(self.dest_path)

    def copy_files(self):
        super().copy_files()
        course, assignment = self.course(), self.coursedir.assignment_id
        path = f"assignment/{course}/{assignment}"
        files = json.dumps(pack(Path(self.dest_path)))
        try:
            self.api.post(path, files=files)
        except NgshareError as exc:
            if not self.force or ": 409 " not in str(exc):
                self.fail(f"Not released: {exc}")
            self.refuse_losing_submissions(course, assignment)
            self.api.delete(path)
            self.api.post(path, files=files)
        self.log.info("Released to ngshare: %s %s", course, assignment)

    def refuse_losing_submissions(self, course: str, assignment: str) -> None:
        """ngshare deletes an assignment's submissions with it: --force stops at any."""
        rows = self.api.get(f"submissions/{course}/{assignment}").get("submissions")
        count = len(rows) if isinstance(rows, list) else 0
        if count:
            self.fail(
                f"Not released: --force would delete the {count} submissions of {assignment} "
                "in ngshare"
            )


class NgshareCollect(Ngshare, default.ExchangeCollect):
    def start(self):
        self.fail("With ngshare, `python -m autograder watch` collects (c.Watch.ngshare_url).")


class NgshareReleaseFeedback(Ngshare, default.ExchangeReleaseFeedback):
    def start(self):
        self.fail("With ngshare, `python -m autograder watch` releases the feedback.")
