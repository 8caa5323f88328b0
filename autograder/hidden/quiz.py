"""What the checkpoint quizzes' hidden answers are made of (never released).

Each quiz has a module named after its assignment folder (``04_checkpoint_engine``,
``06_checkpoint_mlp``) with a ``Question`` per answer cell; the check cell of question
``q3`` calls ``load_grader("04_checkpoint_engine").grade("q3", q3)``. An answer is first
checked for form exactly as the visible check does (``coursekit.answer_problem``): a
malformed one fails with the same sentence. Then it is checked for being right:

- numbers are worked out with the reference engine, never typed in, and count within
  ``TOL`` of the exact value (the quizzes say so);
- orders are checked against the edges of the graph, so every valid order counts;
- functions are compared with the true derivative at many random points.

A wrong answer fails with one line that does not give the right one away.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .common import (
    MAX_LINE,
    close,
    describe_error,
    fail,
    hidden_check,
    kit,
    num,
)

TOL = 1e-3  # numbers: absolute tolerance, as stated in the quizzes
FUNCTION_TOL = 1e-6  # functions: relative tolerance against the true derivative


@dataclass(frozen=True)
class Question:
    spec: dict  # what a well-formed answer is: keywords of coursekit.answer_problem
    wrong: Callable[[object], str | None]  # why a well-formed answer is wrong, or None
    points: int


def grader(questions: dict[str, Question]) -> Callable[[str, object], None]:
    """The ``grade(name, answer)`` of a quiz made of ``questions``."""

    @hidden_check
    def grade(name: str, answer: object) -> None:
        """Fail unless ``answer`` is a well-formed and right answer to question ``name``."""
        question = questions[name]
        problem, value = kit.answer_problem(name, answer, **question.spec)
        if problem is not None:
            fail(_short(problem))
        why = question.wrong(value)
        if why is not None:
            fail(_short(f"{name}: {why}"))

    return grade


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
    """A student's function of plain numbers, compared with ``truth_at`` on random inputs
    (after the visible check's ``calls``, which must give numbers)."""

    def wrong(fn: Callable) -> str | None:
        rng = random.Random(name)  # the same points every time
        for _ in range(200):
            args = inputs(rng)
            where = f"{name}({', '.join(num(a) for a in args)})"
            try:
                got = fn(*args)
            except Exception as exc:
                return f"{where} raised {describe_error(exc)}"
            if not close(got, truth_at(*args), rel=FUNCTION_TOL, abs_=FUNCTION_TOL):
                return f"{where} = {num(got)} is wrong."
        return None

    return Question(dict(kind=callable, calls=calls), wrong, points)


def _not_right(answer: object) -> str:
    return f"{answer!r} is not the right answer."
