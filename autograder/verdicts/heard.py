"""A hidden test's message without what the student's kernel said: for early feedback.

A hidden test's message is the grader's own words (the expression it built, the values
it expected and got) and, now and then, text the kernel sent back: an exception's
message (``error_text``: "ValueError: ..."), a ``repr``, a type's name. The student's
code chooses that text, and before the due date it must not reach a page, or a notebook
could read out anything in the grading kernel through it. ``Kernel.run`` keeps every
string of every answer (``heard_texts``); ``without_heard`` replaces each of them in a
message, also cut short ("...") or after its "Name: " part, by a fixed text: an
exception by its class name when that is one of Python's own exceptions, anything else
by "…". What is left is the grader's; the early page (feedback/early_text.py) still
keeps only words of the grader's own vocabulary and numbers from it.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable

GRADER_ERROR = "the hidden test could not run: a course content error, not yours"
NOT_SHOWN = "run the notebook to see its message"
DROPPED = "…"
ERROR = re.compile(r"([A-Za-z_][\w.]{0,80}): (.+)", re.S)
SINGLE = re.compile(r"[\w.+-]{1,24}")  # one short word or number: the vocabulary decides
PREFIX = 12  # a text cut short still matches from this many characters on
MAX_TEXTS = 20_000


def heard_texts(answer: object, out: list[str] | None = None) -> list[str]:
    """Every string in a kernel's answer (dict keys too), at most ``MAX_TEXTS``."""
    out = [] if out is None else out
    todo = [answer]
    while todo and len(out) < MAX_TEXTS:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            todo += list(item)
    return out


def builtin_error(name: str) -> bool:
    """Whether ``name`` is one of Python's own exception classes."""
    found = getattr(builtins, name, None)
    return isinstance(found, type) and issubclass(found, BaseException)


def replacement(text: str) -> str:
    """What stands for a text the kernel sent: an exception's class, when Python's."""
    match = ERROR.fullmatch(text.strip())
    name = match.group(1) if match else text.strip()
    if builtin_error(name):
        return f"{name} ({NOT_SHOWN})"
    return f"an exception ({NOT_SHOWN})" if match else DROPPED


def _pieces(heard: Iterable[str]) -> dict[str, str]:
    """{text to find: what replaces it}, from the kernel's texts."""
    pieces: dict[str, str] = {}
    for raw in heard:
        text = raw.strip()
        if not text or SINGLE.fullmatch(text):
            continue
        pieces.setdefault(text, replacement(text))
        match = ERROR.fullmatch(text)
        if match and len(match.group(2).strip()) >= 4:  # the message alone
            pieces.setdefault(match.group(2).strip(), DROPPED)
    return pieces


def without_heard(message: str, heard: Iterable[str]) -> str:
    """``message`` with every text the kernel sent replaced (module docstring): each
    occurrence, and each occurrence of its first ``PREFIX`` characters or more (a text
    cut short); exceptions first, then the longest texts first."""
    pieces = _pieces(heard)
    spans: list[tuple[int, int, str]] = []
    taken = [False] * len(message)
    for text in sorted(pieces, key=lambda t: (pieces[t] == DROPPED, -len(t))):
        head = text[: min(len(text), PREFIX)]
        start = message.find(head)
        while start >= 0:
            end = start + len(head)
            while (
                end < len(message) and end - start < len(text) and message[end] == text[end - start]
            ):
                end += 1
            if not any(taken[start:end]):
                spans.append((start, end, pieces[text]))
                taken[start:end] = [True] * (end - start)
            start = message.find(head, end)
    out, at = [], 0
    for start, end, shown in sorted(spans):
        out += [message[at:start], shown]
        at = end
    return "".join([*out, message[at:]])
