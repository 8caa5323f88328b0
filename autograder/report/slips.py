"""The slips the hidden tests diagnosed, read back from their verdicts' messages.

A hidden test that recognises a classic mistake says so in its failing message
(``verdicts/hidden/common.py``, ``diagnose.py`` and each assignment's module): the first
line names the function at fault in backticks (``"`__mul__`: df/dx0 should be 2, got 1"``,
after a word such as ``"Fixed: "`` in problem set 1), or starts with the function's call
(``"grad_check(f, xs) should be ..."``), and each diagnosis is a line of its own in
parentheses (``"(a node used more than once must add up its gradient: use += in
_backward, not =)"``). Lines such as ``also failing: ...`` and ``credited: ...`` follow.

A message comes from an autograded notebook, which a student's file became: it is read
as untrusted text (any type, any size) and only what fits these shapes is taken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_MESSAGE = 4000  # characters of a message read (the grader's are a few hundred)

# `name` at the start, perhaps after one short word and a colon ("Fixed: `tanh`: ...").
_BACKTICKED = re.compile(r"(?:[A-Za-z][\w ]{0,19}: )?`([^`\n]{1,80})`")
# or a call or name at the start: "grad_check(f, xs) ...", "backward(): ...",
# "backprop_by_hand: ...", "SGD(params, ...)"
_LEADING = re.compile(r"([A-Za-z_][\w.]{0,79})(?=\(|\[|:| raised\b)")
_HINT = re.compile(r"\((.{1,300})\)")


@dataclass(frozen=True)
class Slip:
    """One diagnosis in a failing verdict: the function at fault ("" when the message
    names none) and the hint the grader gave."""

    function: str
    hint: str


def parse_slips(message: object) -> list[Slip]:
    """The slips a failing verdict's message diagnosed (none for a message that gives no
    hint line, or for anything that is not text)."""
    if not isinstance(message, str) or not message.strip():
        return []
    lines = message[:MAX_MESSAGE].splitlines()
    hints = []
    for line in lines[1:]:
        m = _HINT.fullmatch(line.strip())
        if m and m.group(1).strip():
            hints.append(" ".join(m.group(1).split()))
    if not hints:
        return []
    first = lines[0].strip()
    m = _BACKTICKED.match(first) or _LEADING.match(first)
    function = m.group(1).strip() if m else ""
    seen: list[Slip] = []
    for hint in hints:
        slip = Slip(function, hint)
        if slip not in seen:
            seen.append(slip)
    return seen


@dataclass(frozen=True)
class SlipCount:
    """A slip counted across the class: how many students made it, and who."""

    assignment: str
    function: str
    hint: str
    students: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.students)


def count_slips(verdicts, order: list[str] | None = None) -> list[SlipCount]:
    """Distinct students per (assignment, function, hint) over the failing ``verdicts``
    (objects with ``student``, ``assignment``, ``passed`` and ``message``): the most
    common first, then in course order (``order``: the assignments), function, hint."""
    by: dict[tuple[str, str, str], set[str]] = {}
    for v in verdicts:
        if v.passed:
            continue
        for slip in parse_slips(v.message):
            by.setdefault((v.assignment, slip.function, slip.hint), set()).add(v.student)
    rank = {a: i for i, a in enumerate(order or [])}
    keys = sorted(by, key=lambda k: (-len(by[k]), rank.get(k[0], len(rank)), k))
    return [SlipCount(a, f, h, tuple(sorted(by[(a, f, h)]))) for a, f, h in keys]
