"""Hidden tests decide outside the student's kernel: a ``Verdict`` for every test cell.

When grading reaches a test cell, ``GuardedExecute`` (execute.py) runs the cell's visible
checks in the kernel as the student saw them, then asks this module for the cell's
verdict. The hidden test (``autograder/hidden/<assignment>.py``, ``TESTS[grade id]``)
runs here, in the grader's process: it draws inputs from a seed that is new for every
submission, asks the probe in the kernel to build them with the student's code
(``Kernel.run``), and compares the plain values it gets back with the reference engine.
Neither the reference, nor the expected values, nor the comparison ever enter the kernel.

The cell's score is its verdict and nothing else (``SaveVerdicts`` replaces nbgrader's
``SaveAutoGrades``, which scores a cell by whether it raised): an error, a lost output or
an ``execute_result`` in the cell change nothing. nbgrader_config.py puts both steps in
nbgrader's own Autograde, so ``nbgrader autograde`` and formgrader's button grade the
same way as ``python -m autograder grade``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import random
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from nbgrader import utils
from nbgrader.preprocessors import SaveAutoGrades

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
MAX_LINE = 88  # nbgrader validate cuts lines at 90 characters


class GradingFailure(AssertionError):
    """A hidden test that did not pass; its message says why, in a few short lines."""


def fail(message: str) -> None:
    raise GradingFailure(message)


def wrap(message: str, width: int = MAX_LINE) -> list[str]:
    lines: list[str] = []
    for paragraph in str(message).splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, width, break_on_hyphens=False) or [""])
    return lines


@dataclass
class Verdict:
    """What the hidden test of one cell decided."""

    passed: bool
    message: str = ""  # why not, in lines under 90 characters
    seed: int = 0  # the inputs were drawn from this seed (to reproduce a verdict)
    grader_error: bool = False  # the hidden test itself failed: a course error

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Given:
    """The course's version of an earlier exercise, attached to the student's code for
    one test (see the probe): ``source`` defines ``name``, which replaces ``target``."""

    target: str  # "Value.__add__" or a name in the notebook such as "topological_order"
    name: str
    source: str

    def as_dict(self) -> dict:
        return asdict(self)


class Kernel:
    """What a hidden test talks to: ``run`` asks the probe in the student's kernel and
    returns its result; ``rng`` draws this submission's inputs."""

    def __init__(self, ask: Callable[[dict], dict], seed: int, timeout: float = 30.0):
        self.ask = ask
        self.seed = seed
        self.rng = random.Random(seed)
        self.timeout = timeout

    def run(self, op: str, *, given: Sequence[Given] = (), what: str = "your code",
            **args):
        """The probe's answer to ``op`` with ``args``; a timeout, crash or error becomes a
        GradingFailure that names ``what`` was running."""
        answer = self.ask({"op": op, "args": args, "given": [g.as_dict() for g in given],
                           "timeout": self.timeout})
        if not isinstance(answer, dict):
            fail(f"{what}: the kernel gave no answer")
        if "result" in answer:
            return _complete(op, args, answer["result"], what)
        if "timeout" in answer:
            fail(f"{what} did not finish within {answer['timeout']:g} s (an endless loop?)")
        if "crashed" in answer:
            fail(f"{what} stopped the test: {answer['crashed']}")
        fail(f"{what}: {answer.get('error') or 'the kernel gave no answer'}")
        return None  # not reached


# Operations that answer one entry per item of one of their arguments.
ALIGNED = {"graphs": "programs", "zero_grad": "programs", "hand": "graphs", "calls": "calls",
           "neuron": "cases", "loss": "cases", "train": "runs", "function_at": "points",
           "order": "programs"}


def _complete(op: str, args: dict, result, what: str):
    """The probe's result, if it has the shape the probe gives (an answer rewritten in the
    kernel, say a shorter list, must not skip any check)."""
    if op in ALIGNED:
        n = len(args[ALIGNED[op]]) + len(args.get("chains") or ())
        if not (isinstance(result, list) and len(result) == n
                and all(isinstance(r, dict) for r in result)):
            fail(f"{what}: the kernel's answer is incomplete (was the grading code in the "
                 "kernel changed?)")
    elif not isinstance(result, dict):
        fail(f"{what}: the kernel's answer is not what the probe sends")
    return result


def local_ask(ns: dict) -> Callable[[dict], dict]:
    """Ask the probe about a namespace in this process (tests, without a kernel)."""
    from . import probe

    return lambda request: probe.run_isolated(ns, request)


def cell_seed(seed: int, grade_id: str) -> int:
    """Each test cell's own seed, from the submission's."""
    digest = hashlib.sha256(f"{seed}:{grade_id}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


@functools.cache
def hidden_tests(assignment: str) -> dict[str, Callable]:
    """{grade id: hidden test} of an assignment (autograder/hidden/<assignment>.py)."""
    try:
        module = importlib.import_module(f"{__package__}.hidden.{assignment}")
    except ModuleNotFoundError:
        return {}
    return dict(module.TESTS)


def verdict(assignment: str, grade_id: str, kernel: Kernel) -> Verdict:
    """Run the cell's hidden test; its verdict."""
    test = hidden_tests(assignment).get(grade_id)
    if test is None:
        return Verdict(False, f"no hidden test for {grade_id} (please tell the course staff)",
                       kernel.seed, grader_error=True)
    try:
        test(kernel)
    except GradingFailure as exc:
        lines = wrap(str(exc))
        if "NotImplementedError" in lines[0]:  # not written yet: that says it all
            lines = lines[:1]
        return Verdict(False, "\n".join(lines), kernel.seed)
    except Exception as exc:  # a bug in the hidden test: never the student's fault
        text = f"{type(exc).__name__}: {exc}"[:200]
        return Verdict(False, f"the hidden test could not run ({text}); please tell the "
                       "course staff", kernel.seed, grader_error=True)
    return Verdict(True, "", kernel.seed)


# ---- cells -------------------------------------------------------------------------------


def strip_hidden(source: str) -> str:
    """A test cell's visible part: without the lines between the hidden-test markers."""
    out, hidden = [], False
    for line in source.split("\n"):
        if BEGIN in line:
            hidden = True
        elif END in line:
            hidden = False
        elif not hidden:
            out.append(line)
    return "\n".join(out).rstrip()


def is_test_cell(cell) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell)


def record(cell, result: Verdict | None) -> None:
    """Keep the verdict in the cell (None: the cell was not reached, which scores 0)."""
    md = cell.metadata.setdefault("autograder", {})
    md["verdict"] = result.as_dict() if result is not None else None


def outputs_for(result: Verdict) -> list:
    """What the student sees under the cell: one line, or the reason in a few."""
    from nbformat.v4 import new_output

    if result.passed:
        return [new_output("stream", name="stdout", text="✓ hidden tests: passed\n")]
    lines = result.message.split("\n")
    return [new_output("error", ename="HiddenTestFailed", evalue=lines[0],
                       traceback=[f"✗ hidden tests: {lines[0]}", *("  " + ln for ln in lines[1:])])]


class SaveVerdicts(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score taken from its verdict: full
    marks when it passed, 0 otherwise (also when no verdict was recorded)."""

    def _add_score(self, cell, resources) -> None:
        if not is_test_cell(cell):
            return super()._add_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"],
                                          self.notebook_id, self.assignment_id,
                                          self.student_id)
        result = (cell.metadata.get("autograder") or {}).get("verdict") or {}
        grade.auto_score = float(grade.max_score) if result.get("passed") is True else 0.0
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()
        return None
