"""Hidden tests decide outside the student's kernel: a ``Verdict`` for every test cell.

When grading reaches a test cell, ``GuardedExecute`` (execute.py) runs the cell's visible
checks in the kernel as the student saw them, then asks this module for the cell's
verdict. The hidden test (``autograder/verdicts/hidden/<assignment>.py``, ``TESTS[grade id]``)
runs here, in the grader's process: it draws inputs from a seed that is new for every
submission, asks the probe in the kernel to build them with the student's code
(``Kernel.run``), and compares the plain values it gets back with the reference engine.
Neither the reference, nor the expected values, nor the comparison ever enter the kernel.

The cell's score is its verdict and nothing else (``SaveVerdicts``, in
preprocessors/saveverdicts.py, replaces nbgrader's ``SaveAutoGrades``, which scores a cell
by whether it raised): an error, a lost output or
an ``execute_result`` in the cell change nothing. nbgrader_config.py puts both steps in
nbgrader's own Autograde, so ``nbgrader autograde`` and formgrader's button grade the
same way as ``python -m autograder grade``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import math
import random
import re
import secrets
import textwrap
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from nbgrader import utils

from .. import markers
from . import answers
from .heard import GRADER_ERROR, Heard, without_heard

MAX_LINE = 88  # nbgrader validate cuts lines at 90 characters
MAX_MESSAGE_LINES = 12  # of a failure's message, before it is wrapped
MAX_MESSAGE_LINE = 400  # characters of one of them (a cut repr says enough)


class GradingFailure(AssertionError):
    """A hidden test that did not pass; its message says why, in a few short lines.
    ``credit`` is the share of the cell's points earned all the same (an exercise that
    asks for several functions credits each function that passes its own checks).
    ``unwritten``: True when every function the test grades is still a stub (the short
    form says it all), False when some part was written; None when not known (a test of
    one function: its message says)."""

    def __init__(self, message: str, credit: float = 0.0, unwritten: bool | None = None):
        super().__init__(message)
        self.credit = credit
        self.unwritten = unwritten


def fail(message: str) -> None:
    raise GradingFailure(message)


NOT_WRITTEN = "NotImplementedError"
ALSO_FAILING = "also failing: "
NOT_WRITTEN_YET = "not written yet: "
CREDITED = "credited: "


def is_unwritten(message: str) -> bool:
    """A part's failure that says only that its function is still the stub."""
    return NOT_WRITTEN in (str(message).splitlines() or [""])[0]


def parts_failure(failures: Sequence[tuple[str, str]], right: Sequence[str], total: int):
    """The failure of an exercise of several parts (``total``), of which ``failures``
    ((name, message) of each part that failed, in order) did not pass and ``right``
    did: every part's verdict in the message. It leads with the first part written but
    wrong (a stub's NotImplementedError says less), then names the other parts that
    fail, those not written yet and those credited, with their share of the points."""
    wrong = [(n, m) for n, m in failures if not is_unwritten(m)]
    stubs = [n for n, m in failures if is_unwritten(m)]
    lead = (wrong or list(failures))[0]
    lines = [lead[1]]
    others = [n for n, _ in wrong if n != lead[0]]
    if others:
        lines.append(ALSO_FAILING + ", ".join(others))
    stubs = [n for n in stubs if n != lead[0]]
    if stubs:
        lines.append(NOT_WRITTEN_YET + ", ".join(stubs))
    if right:
        lines.append(f"{CREDITED}{', '.join(right)} ({len(right)} of {total} shares of the points)")
    return GradingFailure(
        "\n".join(lines), credit=len(right) / total, unwritten=not wrong and not right
    )


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
    flag: str = ""  # an answer honest code never gives: why the submission is reviewed
    credit: float = 0.0  # the share of the points earned when not passed (0 to 1)
    # The message without any text the kernel sent (heard.py), for early feedback;
    # None: not known, and an early page then shows none of the message.
    plain: str | None = None

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


class Deferred(BaseException):  # not an error: no hidden test may catch it
    """A test that would send the course's code for exercises whose own checks have not
    run yet: it runs later, so that no check ever runs in a process that has held the
    course's version of what it checks (whatever order the student's cells are in)."""

    def __init__(self, targets: set[str]):
        super().__init__(", ".join(sorted(targets)))
        self.targets = targets


class Kernel:
    """What a hidden test talks to: ``run`` asks the probe in the student's kernel and
    returns its result, once it is known to be the probe's and complete; ``rng`` draws
    this submission's inputs. ``pending()`` names the exercises whose checks have not run
    yet: the course's code for those is never sent (``Deferred``). ``engine`` is given
    with every request: a problem set's course engine (``verdict`` sets it), which is no
    exercise of the set. ``student`` is the id the submission was handed in under (a quiz
    grades that id's variant); ``shown`` the id its notebook showed, when it says (an
    untrusted hint, only ever used to explain a wrong answer). ``passed()`` names the
    exercises whose tests the student's code has passed (``course``).

    ``timeout`` bounds each request; ``budget`` the whole test (every request, and the
    grader's own work on what they sent): past its ``deadline`` a request is not sent,
    and the test fails as the student's (GuardedExecute gives it what is left of the
    notebook's wall limit)."""

    def __init__(
        self,
        ask: Callable[[dict], dict],
        seed: int,
        timeout: float = 30.0,
        pending: Callable[[], set[str]] = set,
        student: str = "",
        shown: str = "",
        passed: Callable[[], set[str]] = set,
        budget: float = math.inf,
    ):
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self.student = student
        self.shown = shown
        self.ask = ask
        self.seed = seed
        self.rng = random.Random(seed)
        self.timeout = timeout
        self.pending = pending
        self.flags: list[str] = []
        self.engine: tuple[Given, ...] = ()  # a problem set's: the course's engine
        # Targets of this cell whose own part of the test is over (``shares``): the
        # course's code for them may go into the kernel for the parts that follow.
        self.done: set[str] = set()
        self.passed = passed
        self.ok: set[str] = set()  # targets of this cell whose part passed (``shares``)
        self.heard = Heard([shown] if shown else [])  # every text the kernel sent

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def course(self, *given: Given) -> tuple[Given, ...]:
        """What of the course's code for earlier exercises a test needs: none for an
        exercise the student's code has passed (its own test, or its part of this one),
        so that code built on it runs on the student's, as it does in the lab; the
        course's for the rest, so that a bug costs only the exercise that has it."""
        mine = self.passed() | self.ok
        return tuple(g for g in given if g.target not in mine)

    def run(self, op: str, *, given: Sequence[Given] = (), what: str = "your code", **args):
        """The probe's answer to ``op`` with ``args``; a timeout, crash or error becomes a
        GradingFailure that names ``what`` was running, and so does an answer that is not
        the probe's or not complete (which also flags the submission)."""
        blocked = {g.target for g in given} & self.pending() - self.done
        if blocked:
            raise Deferred(blocked)
        left = self.deadline - time.monotonic()
        if left < 0.5:  # too little for a fork to answer in
            fail(
                f"{what}: the hidden test ran out of its {self.budget:.0f} s (the time left "
                "in the notebook's limit): your code's answers took it all"
            )
        answer = self.ask(
            {
                "op": op,
                "args": args,
                "given": [g.as_dict() for g in (*self.engine, *given)],
                "timeout": round(min(self.timeout, left), 3),
                "nonce": secrets.token_hex(16),
            }
        )
        self.heard.add(answer)
        if "tampered" in answer:
            self.flags.append(answer["tampered"])
            fail(f"{what}: scored 0: {answer['tampered']}")
        if "forged" in answer:
            self.flags.append(f"{answers.NOT_THE_PROBES}: {answer['forged']}")
            fail(f"{what}: {answers.NOT_THE_PROBES} (scored 0 and flagged for review)")
        if "result" in answer:
            problem = answers.problem(op, args, answer["result"])
            if problem is None:
                return answer["result"]
            self.flags.append(f"an incomplete answer from the grading code: {problem}")
            fail(
                f"{what}: the kernel's answer is incomplete ({problem[:60]}); scored 0 and "
                "flagged for review"
            )
        if "timeout" in answer:
            fail(f"{what} did not finish within {answer['timeout']:g} s (an endless loop?)")
        if "crashed" in answer:
            fail(f"{what} stopped the test: {answer['crashed']}")
        fail(f"{what}: {answer.get('error') or 'the kernel gave no answer'}")
        return None  # not reached


def local_ask(ns: dict) -> Callable[[dict], dict]:
    """Ask the probe about a namespace in this process (tests, without a kernel), through
    the same checks as a kernel's answers."""
    from .probe import runtime

    key = secrets.token_bytes(32)

    def ask(request: dict) -> dict:
        sent = answers.request_text(key, request)
        reply = runtime.run_isolated(ns, json.loads(sent), key, sent)
        return answers.open_reply(key, request["nonce"], sent, [reply], None)

    return ask


def passed_targets(assignment: str, grade_id: str, result: Verdict, kernel: Kernel) -> set[str]:
    """The exercises a cell's verdict shows the student's code right in (for
    ``Kernel.course``): all it grades when it passed, else those of its parts that passed;
    none when the verdict is flagged."""
    if result.flag:
        return set()
    if result.passed:
        return set(exercise_targets(assignment).get(grade_id, ()))
    return set(kernel.ok)


def cell_seed(seed: int, grade_id: str) -> int:
    """Each test cell's own seed, from the submission's."""
    digest = hashlib.sha256(f"{seed}:{grade_id}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


@functools.cache
def _hidden(assignment: str):
    try:
        return importlib.import_module(f"{__package__}.hidden.{assignment}")
    except ModuleNotFoundError:
        return None


def hidden_module(assignment: str):
    """The assignment's hidden module (autograder/verdicts/hidden/<assignment>.py), or None."""
    return _hidden(assignment)


def hidden_tests(assignment: str) -> dict[str, Callable]:
    """{grade id: hidden test} of an assignment (autograder/verdicts/hidden/<assignment>.py)."""
    module = _hidden(assignment)
    return dict(module.TESTS) if module else {}


def exercise_targets(assignment: str) -> dict[str, tuple[str, ...]]:
    """{grade id: what its test grades, as ``Given`` targets name it} (``EXERCISES`` of
    the assignment's hidden module: only tests whose exercises are given to others)."""
    module = _hidden(assignment)
    return dict(getattr(module, "EXERCISES", {})) if module else {}


@functools.cache
def probe_parts(assignment: str) -> tuple[str, ...]:
    """The probe's files a kernel grading ``assignment`` loads: the common ones, and a
    problem set's part only where the assignment's hidden tests name one of its
    operations (in their module or the hidden modules it draws on), so that no kernel
    holds operations it is not graded with (probe.SET_PARTS)."""
    import inspect

    from .probe import PARTS, SET_PARTS

    module = _hidden(assignment)
    seen: dict[str, types.ModuleType] = {}
    frontier = [module] if module is not None else []
    while frontier:
        found = frontier.pop()
        if found.__name__ in seen or not found.__name__.startswith(f"{__package__}.hidden"):
            continue
        seen[found.__name__] = found
        for value in vars(found).values():
            owner = value if isinstance(value, types.ModuleType) else inspect.getmodule(value)
            if owner is not None:
                frontier.append(owner)
    sources = "".join(inspect.getsource(m) for m in seen.values())
    return tuple(
        part
        for part in PARTS
        if part not in SET_PARTS or re.search(rf"[\"']{SET_PARTS[part]}\w+[\"']", sources)
    )


def practice_round(assignment: str) -> dict | None:
    """A quiz's practice round, as the quiz notebook keeps it (``practice_round()`` of its
    hidden module: the practice variants' answers and worked explanations); None for
    assignments without one."""
    module = _hidden(assignment)
    make = getattr(module, "practice_round", None)
    return make() if make is not None else None


def engine_code(assignment: str) -> str | None:
    """What grading runs in place of the cell tagged ``engine`` of a problem set or a
    lesson that starts from earlier ones: the course's engine (``ENGINE`` of the
    assignment's hidden module; None for an assignment without one)."""
    module = _hidden(assignment)
    engine = getattr(module, "ENGINE", None)
    return engine.code if engine is not None else None


def engine_lessons(assignment: str) -> tuple[str, ...]:
    """The lessons whose instructor notebooks the course's engine of ``assignment`` is
    read from (its grading needs their source folders: worker/material.py)."""
    engine = getattr(_hidden(assignment), "ENGINE", None)
    return tuple(engine.lessons) if engine is not None else ()


def solution_code(source: str) -> str:
    """A code cell of an instructor notebook as the course's solution runs it: without
    hidden tests and solution markers (for the course's engine, hidden/lessons.py)."""
    return markers.solved(source)


def verdict(assignment: str, grade_id: str, kernel: Kernel) -> Verdict:
    """Run the cell's hidden test; its verdict. A problem set's requests all carry its
    course engine (``ENGINE.given``; a lesson's kernel holds the course's engine itself)."""
    test = hidden_tests(assignment).get(grade_id)
    engine = getattr(_hidden(assignment), "ENGINE", None)
    kernel.engine = (engine.given,) if engine is not None and engine.given else ()
    if test is None:
        return Verdict(
            False,
            f"no hidden test for {grade_id} (please tell the course staff)",
            kernel.seed,
            grader_error=True,
        )
    try:
        test(kernel)
    except Deferred:
        raise
    except GradingFailure as exc:
        return failed_verdict(exc, kernel)
    except Exception as exc:  # a bug in the hidden test: never the student's fault
        text = f"{type(exc).__name__}: {exc}"[:200]
        return Verdict(
            False,
            f"the hidden test could not run ({text}): a course content error, not yours; "
            "please tell the course staff",
            kernel.seed,
            grader_error=True,
            plain=GRADER_ERROR,
        )
    return Verdict(True, "", kernel.seed, flag="; ".join(dict.fromkeys(kernel.flags)))


def failed_verdict(exc: GradingFailure, kernel: Kernel) -> Verdict:
    """The verdict of a hidden test that did not pass: its message, its share of the
    points (none when the submission is flagged)."""
    text = capped(str(exc))
    lines = wrap(text)
    plain = wrap(without_heard(text, kernel.heard.texts)) if kernel.heard.complete else None
    if _unwritten(exc):
        lines, plain = lines[:1], plain and plain[:1]  # not written yet: that says it all
    flag = "; ".join(dict.fromkeys(kernel.flags))
    credit = 0.0 if flag else min(max(float(exc.credit), 0.0), 1.0)
    return Verdict(
        False,
        "\n".join(lines),
        kernel.seed,
        flag=flag,
        credit=credit,
        plain=None if plain is None else "\n".join(plain),
    )


def capped(message: str) -> str:
    """A failure's message as a student reads it, whatever text it carries: at most
    ``MAX_MESSAGE_LINES`` lines of at most ``MAX_MESSAGE_LINE`` characters, cut before
    anything else (wrapping, the early page's scrub) works on it."""
    lines = message[: MAX_MESSAGE_LINES * (MAX_MESSAGE_LINE + 1)].splitlines()
    return "\n".join(
        ln if len(ln) <= MAX_MESSAGE_LINE else ln[: MAX_MESSAGE_LINE - 3] + "..."
        for ln in lines[:MAX_MESSAGE_LINES]
    )


def _unwritten(exc: GradingFailure) -> bool:
    """Whether a failure says only that the cell is not written yet: every part a stub,
    or (a test of one function) a first line that says NotImplementedError and no line
    about other parts. Anything else shows every line: every part's verdict."""
    unwritten = getattr(exc, "unwritten", None)
    if unwritten is not None:
        return bool(unwritten)
    lines = str(exc).splitlines()
    about_parts = (ALSO_FAILING, NOT_WRITTEN_YET, CREDITED)
    return is_unwritten(str(exc)) and not any(ln.startswith(about_parts) for ln in lines)


# ---- cells -------------------------------------------------------------------------------


def is_test_cell(cell) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell)


def record(cell, result: Verdict | None) -> None:
    """Keep the verdict in the cell (None: the cell was not reached, which scores 0)."""
    md = cell.metadata.setdefault("autograder", {})
    md["verdict"] = result.as_dict() if result is not None else None


def outputs_for(result: Verdict, shown: Sequence = ()) -> list:
    """What the student sees under the cell: one line, or the reason in a few; and, when
    the cell's visible check failed (an error among ``shown``, its outputs so far) while
    the hidden tests gave points, a note that says why the two differ (``visible_note``)."""
    from nbformat.v4 import new_output

    if result.passed:
        out = [new_output("stream", name="stdout", text="✓ hidden tests: passed\n")]
    else:
        lines = result.message.split("\n")
        out = [
            new_output(
                "error",
                ename="HiddenTestFailed",
                evalue=lines[0],
                traceback=[f"✗ hidden tests: {lines[0]}", *("  " + ln for ln in lines[1:])],
            )
        ]
    note = visible_note(result, shown)
    if note:
        out.append(new_output("stream", name="stdout", text=note + "\n"))
    return out


VISIBLE_STOPPED = (
    "The visible check above failed: it runs your notebook as it is, and stops at its "
    "first failure. The hidden tests grade this exercise's own code, each part on its "
    "own, on fresh inputs and on the course's version of what it builds on:"
)


def visible_note(result: Verdict, shown: Sequence = ()) -> str:
    """Why a cell shows a failed visible check above hidden tests that gave points ("" if
    they agree): which parts earned what, in lines under 90. Only the grader's words."""
    visible_failed = any(o.get("output_type") == "error" for o in shown)
    if not visible_failed or result.flag or result.grader_error:
        return ""
    if result.passed:
        return "\n".join(wrap(f"{VISIBLE_STOPPED} they passed, for full points."))
    lines = result.message.splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith(CREDITED)), None)
    if at is None or result.credit <= 0:
        return ""
    credited = " ".join(lines[at:])[len(CREDITED) :]
    return "\n".join(
        wrap(
            f"{VISIBLE_STOPPED} credited {credited}; the other parts fail, as the hidden "
            "tests' lines above say."
        )
    )
