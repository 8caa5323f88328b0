"""A student's LTI 1.3 launch, as the grader needs it: ``Launch``.

The hub makes one from each launch's id_token after ltiauthenticator has checked its
signature, issuer, audience, nonce and age (``Launch.from_id_token``, which checks the
claims the grader relies on) and writes it to ``<course>/lti/launches/<student>.json``
(``write``), the latest launch replacing the one before. ``export --to lti`` reads them
(``read_launches``). A file there is read as untrusted input: larger than ``MAX_BYTES``,
not JSON, not an object, a field missing or of the wrong type, a URL not http(s), a
string over ``MAX_TEXT``: the file is a problem, named in one line, and its student is
left out, never guessed.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

LAUNCHES = Path("lti") / "launches"  # under the course's root
MAX_BYTES = 64 * 1024
MAX_TEXT = 2000
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
STUDENT = re.compile(r"[a-z_][a-z0-9_-]{0,31}")  # a unix user name, as useradd takes it


class LaunchError(ValueError):
    """A launch or a launch file the grader cannot use: one line saying why."""


@dataclass(frozen=True)
class Launch:
    """One student's latest launch: who (``sub`` at ``issuer``), from which LMS course,
    and where AGS takes their scores."""

    student: str  # the hub's user name, nbgrader's student id
    sub: str  # the platform's id of the student: AGS's userId
    issuer: str
    client_id: str
    deployment_id: str
    context_id: str
    context_label: str
    lineitems: str  # AGS: the LMS course's line items
    lineitem: str  # AGS: the launched link's own line item ("" if none)
    scopes: tuple[str, ...]
    launched_at: str  # ISO 8601, UTC

    @classmethod
    def from_id_token(cls, student: str, token: dict) -> Launch:
        """The launch from a checked id_token's claims; LaunchError when a claim the
        grader needs is missing or wrong."""
        context = _mapping(token, LTI + "context")
        ags = token.get(AGS)
        aud = token.get("aud")
        client_id = token.get("azp") or (aud[0] if isinstance(aud, list) and aud else aud)
        data = {
            "student": student,
            "sub": token.get("sub"),
            "issuer": token.get("iss"),
            "client_id": client_id,
            "deployment_id": token.get(LTI + "deployment_id"),
            "context_id": context.get("id"),
            "context_label": context.get("label", ""),
            "lineitems": ags.get("lineitems", "") if isinstance(ags, dict) else "",
            "lineitem": ags.get("lineitem", "") if isinstance(ags, dict) else "",
            "scopes": ags.get("scope", []) if isinstance(ags, dict) else [],
            "launched_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data) -> Launch:
        if not isinstance(data, dict):
            raise LaunchError("not a JSON object")
        values = {}
        for f in fields(cls):
            value = data.get(f.name)
            if f.name == "scopes":
                if not isinstance(value, list | tuple) or not all(
                    isinstance(s, str) and len(s) <= MAX_TEXT for s in value
                ):
                    raise LaunchError("scopes: expected a list of strings")
                values[f.name] = tuple(value)
                continue
            if not isinstance(value, str) or len(value) > MAX_TEXT:
                raise LaunchError(f"{f.name}: expected a string, got {_short(value)}")
            values[f.name] = value
        launch = cls(**values)
        launch.check()
        return launch

    def check(self) -> None:
        if not STUDENT.fullmatch(self.student):
            raise LaunchError(f"student: {self.student!r} is not a user name")
        for name in ("sub", "issuer", "client_id", "deployment_id", "context_id"):
            if not getattr(self, name):
                raise LaunchError(f"{name}: empty")
        for name in ("issuer", "lineitems", "lineitem"):
            url = getattr(self, name)
            if url and urlparse(url).scheme not in ("http", "https"):
                raise LaunchError(f"{name}: {_short(url)} is not an http(s) URL")

    @property
    def can_score(self) -> bool:
        """The platform gave AGS for this launch, with the score scope."""
        return bool(self.lineitems or self.lineitem) and SCORE_SCOPE in self.scopes

    def to_json(self) -> str:
        data = asdict(self)
        data["scopes"] = list(self.scopes)
        return json.dumps(data, indent=1, sort_keys=True) + "\n"


def path_of(root: Path, student: str) -> Path:
    if not STUDENT.fullmatch(student):
        raise LaunchError(f"student: {student!r} is not a user name")
    return Path(root) / LAUNCHES / f"{student}.json"


def write(root: Path, launch: Launch) -> Path:
    """Write ``launch`` under the course at ``root``, atomically (mode 0640), owned by
    whoever owns the course folder (its grader reads it; the hub writes it as root)."""
    path = path_of(root, launch.student)
    owner = Path(root).stat()
    for folder in (path.parent.parent, path.parent):
        if not folder.is_dir():
            folder.mkdir(mode=0o750)
            os.chown(folder, owner.st_uid, owner.st_gid)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".launch-")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(launch.to_json())
        os.chmod(tmp, 0o640)
        os.chown(tmp, owner.st_uid, owner.st_gid)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read(path: Path) -> Launch:
    """The launch in ``path``; LaunchError naming the file and what is wrong."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise LaunchError(f"larger than {MAX_BYTES} bytes")
        data = json.loads(path.read_bytes())
        launch = Launch.from_dict(data)
        if launch.student != path.stem:
            raise LaunchError(f"student: {launch.student!r} in the file of {path.stem!r}")
        return launch
    except LaunchError as e:
        raise LaunchError(f"{path}: {e}") from None
    except ValueError:  # json's errors, and bytes that are not UTF-8
        raise LaunchError(f"{path}: not JSON") from None
    except OSError as e:
        raise LaunchError(f"{path}: cannot read it ({e.strerror})") from None


def read_launches(root: Path) -> tuple[dict[str, Launch], list[str]]:
    """{student: launch} of the course at ``root``, and the problems (one line per file
    that could not be read)."""
    launches, problems = {}, []
    folder = Path(root) / LAUNCHES
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            launch = read(path)
        except LaunchError as e:
            problems.append(str(e))
            continue
        launches[launch.student] = launch
    return launches, problems


def _mapping(token: dict, claim: str) -> dict:
    value = token.get(claim)
    if not isinstance(value, dict):
        raise LaunchError(f"claim {claim.rsplit('/', 1)[-1]}: missing")
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
