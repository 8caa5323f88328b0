"""What the problem sets share: they are graded on the course's engine.

A problem set (07_set_gradients, 08_set_training, 09_set_arrays) uses the engine and the
network the student built in the lessons. In the notebook the student picks whose (the
cell tagged ``engine``: ``engine("mine", ...)`` or ``engine("course", ...)``, see
coursekit); grading always uses the course's, so that a slip in a lesson costs nothing
in a set. Lesson 5b (05_training), which trains lesson 5's network, gets it the same way.
A set's hidden module says which names it needs::

    ENGINE = course_engine("Value", "MLP")

and then (verdicts/api.py) every request of that assignment attaches the course's
versions of those names in the probe's copy of the kernel (``CourseEngine.given``), and
grading runs ``CourseEngine.code`` in place of the student's ``engine`` cell, so that
the visible checks in the grading kernel run on the same engine as the hidden tests.

The course's engine is the reference engine ``refgrad`` (engine.py, and nn.py for the
network), as one piece of code: the same classes the lessons publish, with the same API.
Only what ``names`` need of it goes (needed.py): nn.py also holds lesson 5b's losses,
which are exercises, and the kernel, whose history holds that code, must never hold the
course's version of an exercise of the assignment it grades or of a later one
(tests/test_kernel_contents.py). refgrad itself, the hidden tests' oracle, is untouched.
This runs in the grader, never in a kernel: only the code it makes goes there.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from ..api import Given
from .common import COURSE
from .needed import needed

REFGRAD = COURSE / "source" / ".reference" / "refgrad"
ENGINE_NAMES = ("Value", "dot")  # refgrad/engine.py
NETWORK_NAMES = ("Module", "Neuron", "Layer", "MLP")  # refgrad/nn.py


@dataclass(frozen=True)
class CourseEngine:
    """The course's versions of ``names``: ``given`` for the probe's requests (None: the
    kernel's own are the course's), ``code`` for the grading kernel's ``engine`` cell, and
    the ``lessons`` whose source folders that code is read from (lessons.py)."""

    names: tuple[str, ...]
    given: Given | None
    code: str
    lessons: tuple[str, ...] = ()


def _without_package_imports(path: Path) -> str:
    """A module's text without ``from __future__`` and relative imports (the pieces are
    run as one)."""
    source = path.read_text()
    lines = source.splitlines()
    drop: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__"):
            drop.update(range(node.lineno - 1, node.end_lineno))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            drop.update(range(node.lineno - 1, node.end_lineno))
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop)


@functools.cache
def _code(names: tuple[str, ...]) -> str:
    """The code that defines ``names``: of refgrad's engine.py (and nn.py for the
    network), only what they need."""
    parts = [_without_package_imports(REFGRAD / "engine.py")]
    if set(names) & set(NETWORK_NAMES):
        parts.append(_without_package_imports(REFGRAD / "nn.py"))
    whole = "from __future__ import annotations\n\n" + "\n\n".join(parts) + "\n"
    return needed(whole, names)


def course_engine(*names: str) -> CourseEngine:
    """The course's ``names`` (from ``ENGINE_NAMES`` and ``NETWORK_NAMES``)."""
    unknown = set(names) - {*ENGINE_NAMES, *NETWORK_NAMES}
    if not names or unknown:
        raise ValueError(f"course_engine: unknown names {sorted(unknown)} (or none given)")
    code = _code(tuple(names))
    listed = ",".join(names)
    cell = (
        f"exec(compile({code!r}, '<the course engine>', 'exec'), _course := {{}})\n"
        f"{', '.join(names)}, = (_course[_name] for _name in {names!r})\n"
        "del _course\n"
    )
    return CourseEngine(tuple(names), Given(listed, listed, code), cell)
