"""The probe: the only grading code that ever runs inside a student's kernel.

It holds no secret: no reference engine, no expected value, no comparison. It is loaded
once, before any student cell runs (``kernel_load()``), binds everything it uses and draws
a key it tells the grader. For each hidden test the grader sends a request
(``kernel_request()``): an operation, the names of the student's functions to use, inputs
the grader drew for this submission and a nonce. The probe builds the inputs with the
student's own classes and functions and answers with plain values (numbers, lists,
strings, the text of an exception), signed with its key. The grader believes an answer
only once it has checked that the probe signed it and that it is complete
(``autograder/verdicts/answers.py``), then compares it with the reference engine outside the
kernel and decides the cell's score.

Every request runs in a forked copy of the kernel (``runtime.run_isolated``): whatever the
student's code does meanwhile (loops forever, crashes, changes classes or builtins,
prints) ends with that copy, and the kernel itself is left as it was. A request may attach
*given* code to the student's classes in that copy only: the course's own version of an
earlier exercise, so that a test grades one exercise and not the ones it builds on. The
grader sends it only once that exercise's own checks are done (``verdicts.Deferred``).

- ``runtime.py``: loading, running a request, plain values, graphs of Values;
- ``guard.py``: the audit hook that is the probe's only entry and keeps its key, and what
  no student code may do (frames, gc, tracing, ctypes, signal handlers...);
- ``engine.py``: operations for lessons 1 to 3 and the quizzes;
- ``nn.py``: operations for lessons 5 and 5b (modules; losses, training);
- ``set_gradients.py``, ``set_training.py``, ``set_arrays.py``: the problem sets' (their
  names start ``sg_``, ``st_``, ``sa_``: the parts share one namespace in the kernel);
- ``script.py``: hidden tests written in the notebook (verdicts/region.py), replayed
  step by step on the student's objects, answered with snapshots of plain data.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

# Each part registers its operations in OPERATIONS when imported.
from . import engine, nn, script, set_arrays, set_gradients, set_training  # noqa: F401
from .runtime import ENTRY, MIME, OPERATIONS, run_isolated

__all__ = [
    "MIME",
    "OPERATIONS",
    "PARTS",
    "SET_PARTS",
    "kernel_code",
    "kernel_load",
    "kernel_request",
    "run_isolated",
]

SET_PARTS = {  # a problem set's operations, and the prefix of their names
    "set_gradients.py": "sg_",
    "set_training.py": "st_",
    "set_arrays.py": "sa_",
}
PARTS = ("runtime.py", "guard.py", "engine.py", "nn.py", *SET_PARTS, "script.py")


@functools.cache
def kernel_code(parts: tuple[str, ...] = PARTS) -> str:
    """The probe as one piece of code for a kernel: the files of ``parts`` (of PARTS, in
    order), without their imports of each other; it defines ``install()`` and
    ``serve(request_json)``. A grading kernel loads the problem sets' parts its hidden
    tests use and no other (``verdicts.api.probe_parts``): none holds another set's
    operations, such as set 08's cross-entropy in the kernel of set 07."""
    pieces = ["from __future__ import annotations"]
    for name in [p for p in PARTS if p in parts]:
        source = (Path(__file__).parent / name).read_text()
        lines = source.splitlines()
        drop: set[int] = set()
        for node in ast.parse(source).body:
            if isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__"):
                drop.update(range(node.lineno - 1, node.end_lineno))
        pieces.append("\n".join(ln for i, ln in enumerate(lines) if i not in drop))
    return "\n\n".join(pieces) + "\n"


STUDENT_ID_ENV = "COURSEKIT_STUDENT_ID"  # quizkit.STUDENT_ID_ENV: whose quiz variant


def kernel_load(student: str = "", parts: tuple[str, ...] = PARTS) -> str:
    """The cell a kernel runs once, before any student cell: the probe compiled and run in
    a namespace of its own, with a private copy of the builtins (so none of its names land
    in, or shadow, the student's, and no later change to ``builtins`` reaches it); it binds
    what it uses and publishes its key (runtime.install). With ``student``, the id the
    submission is graded under, it also tells coursekit whose quiz variant to show.
    ``parts``: which of the probe's files (``kernel_code``)."""
    source = f"{kernel_code(tuple(parts))}\ninstall()\n"
    who = f"__import__('os').environ[{STUDENT_ID_ENV!r}] = {student!r}\n" if student else ""
    return who + (
        f"exec(compile({source!r}, '<autograder probe>', 'exec'), "
        "{'__name__': 'autograder_probe', "
        "'__builtins__': dict(__import__('builtins').__dict__)})\n"
    )


def kernel_request(sent: str) -> str:
    """The cell a kernel runs for one request (``sent``: answers.request_text): the audit
    event the probe's guard serves. Whatever answers in its place cannot sign its answer,
    and an answer to any other request does not pass for this one's."""
    return f"__import__('sys').audit({ENTRY!r}, {sent!r})\n"
