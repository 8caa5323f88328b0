"""ngshare's REST API (https://ngshare.readthedocs.io), as the course uses it: the
standard library only, so the same module serves students' servers (exchange.py) and
the grader's watcher (watch/ngshare.py).

Every request carries a JupyterHub API token (``Authorization: token ...``); ngshare asks
the Hub whose it is, so who submitted is the Hub's word, not the submission's. Files
travel as JSON lists of ``{"path", "content"}``, content base64: ``unpack`` believes none
of it (names, count, sizes, encoding) before writing anything.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

NAME_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+ ()[]@,=~/"
)
STAMP = "%Y-%m-%d %H:%M:%S.%f"  # ngshare's timestamps, UTC (with " UTC" or without)


class NgshareError(Exception):
    """A request ngshare refused or could not answer; the message is one line."""


class Unreachable(NgshareError):
    """ngshare (or the Hub behind it) cannot answer now: worth asking again later."""


class TooLarge(NgshareError):
    """An answer longer than the caller's limit (read no further)."""


@dataclass(frozen=True)
class Limits:
    """What a file list may hold before it is believed."""

    max_bytes: int = 20 * 1024**2
    max_files: int = 500
    max_depth: int = 16

    @property
    def answer_bytes(self) -> int:
        """The longest JSON answer that can carry ``max_bytes`` in ``max_files`` files:
        base64 with a newline every 76 characters, plus each entry's name and checksum."""
        return self.max_bytes * 137 // 100 + self.max_files * 1200 + 4096


class Client:
    """Calls to one ngshare (``url``: its base, e.g. http://127.0.0.1:8000/services/ngshare/)
    with one JupyterHub API ``token``."""

    def __init__(self, url: str, token: str, timeout: float = 60.0):
        if not url:
            raise NgshareError("no ngshare address (c.Ngshare.url or NGSHARE_URL)")
        if not token:
            raise NgshareError("no JupyterHub API token for ngshare (JUPYTERHUB_API_TOKEN)")
        self.url = url.rstrip("/") + "/"
        self.token, self.timeout = token, timeout

    def call(
        self, method: str, path: str, params: dict | None = None, limit: int = 64 * 1024**2
    ) -> dict:
        """``method`` on ``path`` (below the base, quoted here) with ``params`` (the query
        for GET and DELETE, a form for POST); the JSON answer, or ``NgshareError``."""
        quoted = "/".join(urllib.parse.quote(part, safe="") for part in path.split("/"))
        query = urllib.parse.urlencode(params or {})
        url, body = self.url + quoted, None
        if method == "POST":
            body = query.encode()
        elif query:
            url += "?" + query
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read(limit + 1)
        except urllib.error.HTTPError as exc:
            kind = Unreachable if exc.code >= 500 else NgshareError
            raise kind(f"{method} {path}: {_message(exc)}") from None
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", None) or exc
            raise Unreachable(f"{method} {path}: ngshare cannot be reached ({why})") from None
        if len(raw) > limit:
            raise TooLarge(f"{method} {path}: the answer is longer than {limit} bytes")
        try:
            answer = json.loads(raw)
        except ValueError:
            raise NgshareError(f"{method} {path}: the answer is not JSON") from None
        if not isinstance(answer, dict) or answer.get("success") is not True:
            why = answer.get("message") if isinstance(answer, dict) else None
            raise NgshareError(f"{method} {path}: {str(why or 'refused')[:200]}")
        return answer

    def get(self, path: str, limit: int = 64 * 1024**2, **params: str) -> dict:
        return self.call("GET", path, params, limit)

    def post(self, path: str, **params: str) -> dict:
        return self.call("POST", path, params)

    def delete(self, path: str) -> dict:
        return self.call("DELETE", path)


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read(4096).decode("utf-8", "replace")
        message = json.loads(text).get("message")
    except (ValueError, AttributeError, OSError):
        message = None
    return f"{exc.code} {message or exc.reason}"[:200]


# ---- files ---------------------------------------------------------------------------------


def pack(folder: Path, skip=lambda rel: False) -> list[dict]:
    """The regular files under ``folder`` as ngshare takes them (links left out)."""
    files = []
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d)))
        for name in sorted(names):
            path = Path(top) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file() or skip(rel):
                continue
            content = base64.encodebytes(path.read_bytes()).decode("ascii")
            files.append({"path": rel, "content": content})
    return files


def check_name(name: object, limits: Limits) -> str:
    """Why ``name`` cannot be a file's path in a submission ("" if it can): relative,
    no '.' or '..' or empty part, a plain set of characters, within the depth."""
    if not isinstance(name, str) or not name:
        return "a file without a name"
    shown = repr(name[:60])
    if len(name) > 255 or set(name) - NAME_CHARS:
        return f"the file name {shown} is not a plain name (letters, digits, ._-+ ...)"
    parts = name.split("/")
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return f"the file name {shown} is not a relative path"
    if any(part in (".", "..") or part.startswith(".partial") for part in parts):
        return f"the file name {shown} leaves its folder"
    if len(parts) > limits.max_depth:
        return f"the file name {shown} nests more than {limits.max_depth} deep"
    return ""


def check_files(files: object, limits: Limits, contents: bool = True) -> list[tuple[str, bytes]]:
    """The (name, bytes) of an answer's file list, each checked (``check_name``, base64,
    count, total size), or ``NgshareError`` with the first reason, in one line."""
    if not isinstance(files, list):
        raise NgshareError("the file list is not a list")
    if len(files) > limits.max_files:
        raise NgshareError(f"it holds more than {limits.max_files} files")
    taken, seen, total = [], set(), 0
    for entry in files:
        name = entry.get("path") if isinstance(entry, dict) else None
        why = check_name(name, limits)
        if why:
            raise NgshareError(why)
        if name in seen:
            raise NgshareError(f"the file name {name[:60]!r} comes twice")
        seen.add(name)
        data = b""
        if contents:
            data = _decode(entry.get("content"), name)
            total += len(data)
            if total > limits.max_bytes:
                raise NgshareError(f"it holds more than {limits.max_bytes / 1024**2:g} MB")
        taken.append((name, data))
    return taken


def _decode(content: object, name: str) -> bytes:
    if not isinstance(content, str):
        raise NgshareError(f"{name[:60]!r} has no content")
    try:
        return binascii.a2b_base64("".join(content.split()), strict_mode=True)
    except (binascii.Error, ValueError):
        raise NgshareError(f"{name[:60]!r} is not valid base64") from None


def unpack(files: list[tuple[str, bytes]], dest: Path) -> None:
    """Write checked ``files`` into ``dest`` (new), whole or not at all."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".partial-{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        for name, data in files:
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as fh:  # a name that is also a folder fails here
                fh.write(data)
        os.replace(tmp, dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise NgshareError(f"its files cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
