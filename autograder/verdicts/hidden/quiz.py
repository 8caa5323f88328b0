"""What the checkpoint quizzes' hidden answers are made of (never released).

Each quiz has a module named after its assignment folder (``04_checkpoint_engine``,
``06_checkpoint_mlp``) with a ``Question`` per answer cell. The hidden test of question
``q3`` asks the probe for the notebook's value of ``q3`` (for a function answer: its
results at points drawn for this submission) and grades it here, outside the kernel: the
answers never enter it. An answer is first checked for form exactly as the visible check
does (``coursekit.answer_problem``): a malformed one fails with the same sentence. Then it
is checked for being right:

- numbers are worked out with the reference engine, never typed in, and count within
  ``TOL`` of the exact value (the quizzes say so);
- orders are checked against the edges of the graph, so every valid order counts;
- functions are compared with the true derivative at many random points.

A wrong answer fails with one line that does not give the right one away.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..api import MAX_LINE
from .common import Kernel, close, fail, kit, num

TOL = 1e-3  # numbers: absolute tolerance, as stated in the quizzes
FUNCTION_TOL = 1e-6  # functions: relative tolerance against the true derivative
SAMPLES = 200  # random points a function answer is compared at


@dataclass(frozen=True)
class Question:
    spec: dict  # what a well-formed answer is: keywords of coursekit.answer_problem
    wrong: Callable[..., str | None]  # why a well-formed answer is wrong, or None
    points: int
    variable: str = ""  # the answer's name in the notebook, when it is not the question's
    sample: Callable[[random.Random], tuple] | None = field(default=None)  # functions only

    def at(self, rng: random.Random) -> list[tuple]:
        """Where a function answer is evaluated: the visible check's calls, then random."""
        return [*self.spec.get("calls", ()), *(self.sample(rng) for _ in range(SAMPLES))]


def grader(questions: dict[str, Question]) -> Callable[..., None]:
    """The ``grade(name, answer)`` of a quiz made of ``questions``."""

    def grade(name: str, answer: object, points: Sequence[tuple] | None = None) -> None:
        """Fail unless ``answer`` is a well-formed and right answer to question ``name``
        (a function answer is compared at ``points``, by default fixed random ones)."""
        question = questions[name]
        problem, value = kit.answer_problem(name, answer, **question.spec)
        if problem is not None:
            fail(_short(problem))
        if question.sample is not None:
            why = question.wrong(value, points or question.at(random.Random(name)))
        else:
            why = question.wrong(value)
        if why is not None:
            fail(_short(f"{name}: {why}"))

    return grade


def tests(prefix: str, questions: dict[str, Question], grade: Callable) -> dict:
    """{grade id: hidden test} for a quiz: each asks the probe for its answer."""

    def test_of(name: str) -> Callable[[Kernel], None]:
        question = questions[name]
        variable = question.variable or name

        def test(kernel: Kernel) -> None:
            if question.sample is not None:
                points = question.at(kernel.rng)
                results = kernel.run("function_at", name=variable, points=points, what=variable)
                grade(name, Recorded(variable, points, results), points)
            else:
                found = kernel.run("values", names=[variable], what=name)[variable]
                grade(name, decode(found))

        test.__doc__ = f"Question {name} of the quiz, graded outside the kernel."
        return test

    return {f"{prefix}_test_{name}": test_of(name) for name in questions}


class Opaque:
    """Something that came back from the kernel that is not a plain value: its repr."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def decode(value: object) -> object:
    if isinstance(value, dict):
        return Opaque("a function" if value.get("callable") else value.get("repr", "?"))
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


class Recorded:
    """A function answer as the probe saw it: its result at each point it was asked."""

    def __init__(self, name: str, points: Sequence[tuple], results: Sequence[dict]) -> None:
        self.__name__ = name
        self.answers = {tuple(p): r for p, r in zip(points, results)}

    def __call__(self, *args):
        found = self.answers.get(tuple(args))
        if found is None:
            raise LookupError(f"{self.__name__} was not asked at {args}")
        if "failed" in found:
            raise type(found.get("type", "Error"), (Exception,), {})(
                found["error"].partition(": ")[2]
            )
        return decode(found["result"])


def _short(message: str, width: int = MAX_LINE - 2) -> str:
    """One line, short enough for a notebook."""
    message = " ".join(message.split())
    return message if len(message) <= width else message[: width - 3] + "..."


# ---- kinds of answers --------------------------------------------------------------------


def letter(key: str, points: int = 1) -> Question:
    return Question(dict(choices="abcd"), lambda a: None if a == key else _not_right(a), points)


def truth(key: bool, points: int = 1) -> Question:
    return Question(dict(kind=bool), lambda a: None if a is key else _not_right(a), points)


def line(key: int, lines: int, points: int = 1) -> Question:
    spec = dict(kind=int, choices=range(1, lines + 1))
    return Question(
        spec, lambda a: None if a == key else f"line {a} is not the buggy line.", points
    )


def number(compute: Callable[[], float], points: int) -> Question:
    def wrong(a: float) -> str | None:
        if abs(a - compute()) <= TOL:
            return None
        return f"{num(a)} is not within {TOL} of the right value."

    return Question(dict(kind=float), wrong, points)


def order(before: Callable[[], dict[str, set[str]]], points: int) -> Question:
    """Every label, each listed after all the labels ``before()[label]`` names."""

    def wrong(labels: list[str]) -> str | None:
        must_precede = before()
        done: set[str] = set()
        for label in labels:
            for first in sorted(must_precede[label] - done):
                return f"{label!r} comes before {first!r}, which must come first."
            done.add(label)
        return None

    return Question(dict(kind=list, items=sorted(before())), wrong, points)


def derivative(
    name: str,
    truth_at: Callable,
    inputs: Callable[[random.Random], tuple],
    calls: list[tuple],
    points: int,
) -> Question:
    """A student's function of plain numbers, compared with ``truth_at`` at the points
    (the visible check's ``calls``, which must give numbers, then random inputs)."""

    def wrong(fn: Callable, at: Sequence[tuple]) -> str | None:
        for args in at:
            where = f"{name}({', '.join(num(a) for a in args)})"
            try:
                got = fn(*args)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                return f"{where} raised {text[:70]}"
            if not close(got, truth_at(*args), rel=FUNCTION_TOL, abs_=FUNCTION_TOL):
                return f"{where} = {num(got)} is wrong."
        return None

    return Question(dict(kind=callable, calls=calls), wrong, points, variable=name, sample=inputs)


def _not_right(answer: object) -> str:
    return f"{answer!r} is not the right answer."
