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

import bisect
import builtins
import re
from collections.abc import Iterable

GRADER_ERROR = "the hidden test could not run: a course content error, not yours"
NOT_SHOWN = "run the notebook to see its message"
DROPPED = "…"
ERROR = re.compile(r"([A-Za-z_][\w.]{0,80}): (.+)", re.S)
SINGLE = re.compile(r"[\w.+-]{1,24}")  # one short word or number: the vocabulary decides
PREFIX = 12  # a text cut short still matches from this many characters on
MAX_TEXTS = 20_000  # distinct texts kept of one test's answers
MAX_ITEMS = 2_000_000  # items of one test's answers walked to find them


def heard_texts(answer: object, out: list[str] | None = None) -> list[str]:
    """Every string in a kernel's answer (dict keys too), at most ``MAX_TEXTS``."""
    heard = Heard(out or [])
    heard.add(answer)
    return heard.texts


class Heard:
    """The texts a test's answers carried, each once, within bounds: past ``MAX_TEXTS``
    texts or ``MAX_ITEMS`` items walked it stops and is no longer ``complete`` (then no
    message of that test can be shown without the kernel's texts: early pages show none
    of it)."""

    def __init__(self, texts: Iterable[str] = ()):
        self.texts: list[str] = []
        self._seen: set[str] = set()
        self.items = 0
        self.complete = True
        for text in texts:
            self._keep(text)

    def _keep(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.texts.append(text)

    def add(self, answer: object) -> None:
        todo = [answer]
        while todo and self.complete:
            item = todo.pop()
            self.items += 1
            if isinstance(item, str):
                self._keep(item)
            elif isinstance(item, dict):
                todo += [*item.keys(), *item.values()]
            elif isinstance(item, list | tuple):
                todo += item
            if len(self.texts) > MAX_TEXTS or self.items > MAX_ITEMS:
                self.complete = False


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
    cut short). Where several overlap, the stretch they cover together is replaced once,
    by an exception's replacement when one of them is an exception, else by the longest's.

    Linear in the message and the texts, whatever the kernel sent: at each position of
    the message, set lookups find the texts shorter than ``PREFIX`` that occur there,
    and a bisection among the longer texts that begin with the same ``PREFIX``
    characters finds the one that runs on furthest."""
    short: dict[str, str] = {}
    long: dict[str, list[str]] = {}
    pieces = _pieces(heard)
    for text, shown in pieces.items():
        if len(text) < PREFIX:
            short[text] = shown
        else:
            long.setdefault(text[:PREFIX], []).append(text)
    for group in long.values():
        group.sort()
    found: list[tuple[int, int, str]] = []
    size = len(message)
    for at in range(size):
        for n in range(1, min(PREFIX - 1, size - at) + 1):
            shown = short.get(message[at : at + n])
            if shown is not None:
                found.append((at, at + n, shown))
        group = long.get(message[at : at + PREFIX])
        if group:
            end, text = _furthest(message, at, group)
            found.append((at, end, pieces[text]))
    out, last = [], 0
    merged: list[list] = []
    for start, end, shown in sorted(found):
        if merged and start < merged[-1][1]:
            span = merged[-1]
            better = (shown != DROPPED, end - start) > (span[2] != DROPPED, span[3])
            span[1] = max(span[1], end)
            if better:
                span[2], span[3] = shown, end - start
        else:
            merged.append([start, end, shown, end - start])
    for start, end, shown, _ in merged:
        out += [message[last:start], shown]
        last = end
    return "".join([*out, message[last:]])


def _furthest(message: str, at: int, group: list[str]) -> tuple[int, str]:
    """(end, text): of the sorted texts ``group``, which all begin as the message does at
    ``at``, the one that runs on furthest there, and where it stops."""
    longest = max(len(t) for t in group)
    query = message[at : at + longest]
    k = bisect.bisect_left(group, query)
    best_end, best = at + PREFIX, group[min(k, len(group) - 1)]
    for text in group[max(k - 1, 0) : k + 1]:
        common = _common(query, text)
        if at + common > best_end or (at + common == best_end and len(text) > len(best)):
            best_end, best = at + common, text
    return best_end, best


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of a and b (a bisection on slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
