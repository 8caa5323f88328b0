"""What an early page (watch/early.py) may say of a test cell: only what the grader
composed, never text from the grading kernel, and only so much.

Before the due date a page must not carry anything of the grading kernel: a notebook
could read the course's code there, or any file, and put it in an exception's message,
a print, a picture or a ``repr``. So an early page shows, per test cell:

- the visible check: passed, or failed, with the exception's class when that is one of
  Python's own or the course's ``CheckFailed`` (the kernel chose the rest, including the
  message and any output, and none of it is shown);
- the hidden test: passed, or its message as the grader composed it, without what the
  kernel sent (``Verdict.plain``, verdicts/heard.py); a verdict without it shows a fixed
  sentence;
- the grader's note, the same way.

Every text shown also goes through ``grader_words``: a word that is not in the grader's
own vocabulary (its verdict code, coursekit.py, the students' notebooks; numbered or
with a "d" in front: ``x12``, ``dx0``) or one of Python's exception classes becomes "…",
as does any character but ASCII punctuation and a few signs, and the text is cut to
``MAX_LINES`` lines and ``MAX_CHARS`` characters. Whatever escaped the grader's
bookkeeping thus carries words the student already has, and little of them.
"""

from __future__ import annotations

import functools
import re
import string

from ..course import NOTEBOOKS, ROOT, SHARED
from ..verdicts.heard import builtin_error

MAX_CHARS = 400  # per test cell
MAX_LINES = 8
MAX_NOTE = 300
MAX_NUMBER = 24  # characters of one number
DROPPED = "…"
COURSE_ERRORS = {"CheckFailed"}  # coursekit.py's, raised by the visible checks
SIGNS = set(string.punctuation) | set("✓✗…→←≈≠≤≥×·∂√−±²³∞")
TOKEN = re.compile(
    r"(?P<word>[^\W\d]\w*)"
    r"|(?P<num>\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)",
    re.S,
)
RUNS = re.compile(rf"{DROPPED}(?:[ \t]*{DROPPED})+")
VISIBLE_FAILED = "run the notebook to see the check's message"
HIDDEN_UNKNOWN = "did not pass (its message comes with your feedback after the due date)"


@functools.cache
def vocabulary() -> frozenset[str]:
    """Every word of the grader's verdict code, coursekit.py and the students' notebooks."""
    texts = [
        p.read_text(errors="replace") for p in (ROOT / "autograder" / "verdicts").rglob("*.py")
    ]
    helpers = SHARED / "coursekit.py"
    texts += [helpers.read_text(errors="replace")] if helpers.is_file() else []
    texts += [p.read_text(errors="replace") for p in NOTEBOOKS.glob("*/*.ipynb")]
    return frozenset(m.group() for text in texts for m in re.finditer(r"[^\W\d]\w*", text))


def known(word: str) -> bool:
    """A word of the grader's: in its vocabulary, one of Python's exceptions, or a name
    the hidden tests number or differentiate (``x12``, ``dx0``)."""
    if word in vocabulary() or builtin_error(word):
        return True
    stem = word.rstrip(string.digits)
    if stem != word and stem in vocabulary():
        return True
    return word.startswith("d") and len(word) > 1 and known(word[1:])


def _word(word: str) -> str:
    return word if known(word) else DROPPED


def grader_words(text: str, limit: int = MAX_CHARS, lines: int = MAX_LINES) -> str:
    """``text`` with only the grader's words, numbers, punctuation and spaces (module
    docstring), at most ``lines`` lines and ``limit`` characters."""
    out = []
    for match in TOKEN.finditer(str(text)[: limit * 4]):
        kind, token = match.lastgroup, match.group()
        if kind == "word":
            out.append(_word(token))
        elif kind == "num":
            out.append(token if len(token) <= MAX_NUMBER else DROPPED)
        elif kind == "space":
            out.append("\n" if "\n" in token else " " * min(len(token), 4))
        else:
            out.append(token if token in SIGNS else DROPPED)
    kept = RUNS.sub(DROPPED, "".join(out)).strip().split("\n")[:lines]
    shown = "\n".join(kept)
    return shown if len(shown) <= limit else shown[: limit - 1] + DROPPED


def visible_check(errors: list[dict]) -> str:
    """A failed visible check's line ("" when it passed): the exception's class when it
    is Python's or the course's, never its message."""
    if not errors:
        return ""
    name = str(errors[0].get("ename", ""))
    if name in COURSE_ERRORS:
        return f"the check failed ({VISIBLE_FAILED})"
    if builtin_error(name):
        return f"{name} ({VISIBLE_FAILED})"
    return f"an exception ({VISIBLE_FAILED})"


def hidden_test(verdict: dict) -> str:
    """A hidden test's line that did not pass: its message without the kernel's texts."""
    plain = verdict.get("plain")
    if not isinstance(plain, str) or not plain.strip():
        return HIDDEN_UNKNOWN
    return grader_words(plain)


def note(text: str) -> str:
    """The grader's note on the submission, in the grader's words: a flag for review
    without its reasons, nbgrader's error without its text."""
    text = str(text)
    if "flagged for review" in text:
        text = text[: text.index("flagged for review")] + "flagged for review"
    text = re.sub(r"(nbgrader could not grade `[^`]*`):[^;]*", r"\1", text)
    return grader_words(text, MAX_NOTE, 3)
