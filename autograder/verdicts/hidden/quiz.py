"""How the checkpoint quizzes are graded, and their practice rounds made (never released).

A quiz's questions live in ``source/<quiz>/questions.py`` (released with the quiz): each
draws a variant (numbers, wording, option order) from a seed made of the student id and
the quiz (``quizkit.quiz_variant``). What a variant's right answer is lives only here,
in the quiz's hidden module (``04_checkpoint_engine``, ``06_checkpoint_mlp``), as a
``Key`` per question:

- numbers are worked out by running the question's own code with the reference engine
  and reading what it asks (``a.grad``), never typed in; they count within ``TOL``;
- orders are checked against the edges of the graph or the step's constraints, so every
  valid order counts;
- functions are compared with the true derivative at many random points;
- choices, true/false statements and buggy lines: which option, stem or template line is
  right is stated here, by id, and mapped to what the variant shows.

The hidden test of question ``q3`` recomputes the variant of the id the submission was
collected under (``Kernel.student``, compared as ``quizkit.quiz_id`` does: case and
spacing do not count), asks the probe for the notebook's ``q3`` and grades
it here: a malformed answer fails with the visible check's own sentence, a wrong one with
a line that does not give the right one away and, when the notebook showed another id's
variant (``Kernel.shown``), says so. ``practice_bank`` works out the practice variants'
answers and explanations, which ``generate`` keeps in the quiz notebook. Practice variants
are drawn from pools and halves of their own (``quizkit.quiz_variant``): none shows the
wording, option set, statement, listing or numbers of any student's graded variant.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..api import MAX_LINE
from .common import COURSE, Kernel, close, fail, num, quizkit

TOL = quizkit.NUMBER_TOL  # numbers: absolute tolerance, as the quizzes say
FUNCTION_TOL = quizkit.FUNCTION_TOL  # functions: relative tolerance against the true derivative
SAMPLES = 200  # random points a function answer is compared at
PRACTICE = 8  # practice variants of each question in the notebook
PRACTICE_POINTS = 40  # points a practice function answer is compared at


@dataclass(frozen=True)
class Key:
    """What makes an answer to one question right (see the module docstring). ``key``
    gives a variant's answer in the form the practice round stores; ``why`` explains it
    with the variant's own numbers. A question's points are not here: they are written
    once, in ``POINTS`` of its questions.py (``points``), and nbgrader grades each test
    cell out of the points ``generate`` wrote into it from there."""

    key: Callable  # (variant) -> the answer (numbers, letters, ...) or order constraints
    why: Callable[..., str]  # (variant, key) -> the worked answer
    truth: Callable | None = field(default=None)  # functions: (variant) -> f(*args)
    inputs: Callable | None = field(default=None)  # functions: (variant, rng) -> args


def questions_of(assignment: str):
    """The quiz's questions.py, from the course's source folder: loaded once per version
    of the file (its size and time), as grading and the tests ask for it thousands of
    times."""
    path = COURSE / "source" / assignment / "questions.py"
    try:
        stat = path.stat()
        version = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = None
    return _questions(assignment, version)


@functools.lru_cache(maxsize=64)
def _questions(assignment: str, version):
    return quizkit.load_questions(assignment, folder=COURSE / "source" / assignment)


def points(assignment: str) -> dict[str, int]:
    """{question: points}: ``POINTS`` of the quiz's questions.py, the one place a
    question's points are written."""
    return dict(questions_of(assignment).POINTS)


def variant(assignment: str, who, question: str):
    return quizkit.quiz_variant(assignment, who, question, questions_of(assignment))


# ---- kinds of keys -----------------------------------------------------------------------


def run(code: str, names: dict) -> dict:
    """Run a question's code (the course's own, never a student's) with these names."""
    namespace = dict(names)
    exec(compile(code, "<quiz question>", "exec"), namespace)
    return namespace


def number(names: dict, why: Callable) -> Key:
    """The value of what the question asks after its code, run on the reference engine."""

    def key(v) -> float:
        return float(eval(v.asks, run(v.code, names)))

    return Key(key, why)


def choice(right: str | dict[str, str], why: Callable) -> Key:
    """The option with id ``right`` (or, per stem, ``right[stem]``)."""

    def key(v) -> str:
        return v.letter(right[v.stem] if isinstance(right, dict) else right)

    return Key(key, why)


def truth(true_stems: set[str] | Callable, why: Callable) -> Key:
    """True for the stems named (or by a rule of the variant's numbers)."""

    def key(v) -> bool:
        return bool(true_stems(v) if callable(true_stems) else v.stem in true_stems)

    return Key(key, why)


def line(buggy: dict[str, int], why: Callable) -> Key:
    """The wrong line of the variant's listing: ``buggy[template]`` (1-based)."""

    def key(v) -> int:
        return buggy[v.template]

    return Key(key, why)


def order(before: Callable, why: Callable) -> Key:
    """Every item after all the items ``before(v)[item]`` names."""

    def key(v) -> dict[str, list[str]]:
        return {item: sorted(first) for item, first in before(v).items()}

    return Key(key, why)


def function(truth_at: Callable, inputs: Callable, why: Callable) -> Key:
    """A student's function of plain numbers, compared with ``truth_at(v)`` at the visible
    check's calls, then at random ``inputs(v, rng)``."""

    def key(v) -> list:
        rng = random.Random(v.seed)
        f = truth_at(v)
        return [[list(args), f(*args)] for args in points_for(v, inputs, rng, PRACTICE_POINTS)]

    return Key(key, why, truth=truth_at, inputs=inputs)


def points_for(v, inputs: Callable, rng: random.Random, n: int = SAMPLES) -> list[tuple]:
    return [*v.calls, *(tuple(inputs(v, rng)) for _ in range(n))]


# ---- grading -----------------------------------------------------------------------------


def wrong(v, answer, key: Key) -> str | None:
    """Why a well-formed ``answer`` to variant ``v`` is wrong (None if it is right)."""
    if v.kind == "function":
        f = key.truth(v)
        at = getattr(answer, "at", None) or points_for(v, key.inputs, random.Random(v.seed))
        for args in at:
            where = f"{v.name}({', '.join(num(a) for a in args)})"
            try:
                got = answer(*args)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                return f"{where} raised {text[:70]}"
            if not close(got, f(*args), rel=FUNCTION_TOL, abs_=FUNCTION_TOL):
                return f"{where} = {num(got)} is wrong."
        return None
    expected = key.key(v)
    if quizkit.is_right(v, answer, expected):
        return None
    if v.kind == "number":
        return f"{num(answer)} is not within {TOL} of the right value."
    if v.kind == "order":
        done: set[str] = set()
        for label in answer:
            for first in sorted(set(expected[label]) - done):
                return f"{label!r} comes before {first!r}, which must come first."
            done.add(label)
    if v.kind == "line":
        return f"line {answer} is not the wrong line."
    return f"{answer!r} is not the right answer."


def grade(assignment: str, keys: dict[str, Key], name: str, answer, student: str, shown=""):
    """Fail unless ``answer`` is a well-formed and right answer to question ``name`` as the
    student with id ``student`` sees it; ``shown``: the id the notebook showed, if known."""
    student, shown = quizkit.quiz_id(student), quizkit.quiz_id(shown)  # as variants are drawn
    v = variant(assignment, student, name)
    problem, value = quizkit.answer_problem(v.name, answer, **v.spec())
    if problem is None:
        if v.kind == "function":
            value = answer  # a Recorded function: the probe's results at the grader's points
        why = wrong(v, value, keys[name])
        if why is None:
            return
        problem = f"{name}: {why}"
    lines = [_short(problem)]
    if shown and shown != student:
        lines.append(
            f"This notebook showed the variant of id {shown!r}, but it was handed in as "
            f"{student!r}: answers count for the variant of {student!r} only (its numbers "
            "and options differ)."
        )
    fail("\n".join(lines))


def tests(assignment: str, prefix: str, keys: dict[str, Key]) -> dict:
    """{grade id: hidden test} for a quiz: each asks the probe for its answer."""

    def test_of(name: str) -> Callable[[Kernel], None]:
        def test(kernel: Kernel) -> None:
            v = variant(assignment, kernel.student, name)
            if v.kind == "function":
                points = points_for(v, keys[name].inputs, kernel.rng)
                results = kernel.run("function_at", name=v.name, points=points, what=v.name)
                answer = Recorded(v.name, points, results)
            else:
                answer = decode(kernel.run("values", names=[v.name], what=name)[v.name])
            grade(assignment, keys, name, answer, kernel.student, kernel.shown)

        test.__doc__ = f"Question {name} of the quiz, graded outside the kernel."
        return test

    return {f"{prefix}_test_{name}": test_of(name) for name in keys}


def practice_bank(assignment: str, keys: dict[str, Key], n: int = PRACTICE) -> dict:
    """The practice round kept in the quiz notebook: for each question, ``n`` practice
    variants' answers and worked explanations, encoded (quizkit reads them back)."""
    bank = {}
    for name, key in keys.items():
        entries = []
        for i in range(n):
            v = variant(assignment, ("practice", i), name)
            answer = key.key(v)
            entries.append(
                {"key": quizkit.encode(answer), "why": quizkit.encode(key.why(v, answer))}
            )
        bank[name] = entries
    return {"assignment": assignment, "questions": bank}


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
        self.at = [tuple(p) for p in points]
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


# ---- for explanations --------------------------------------------------------------------


def g(x: float) -> str:
    """A number as an explanation writes it."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def affine(a: float, b: float) -> str:
    """``a*x + b`` as the question writes it: "x", "-x", "2x - 0.5", "3x" (no "+ -", no
    "+ 0", no "1x")."""
    head = "x" if a == 1 else "-x" if a == -1 else f"{g(a)}x"
    return f"{head} {plus(b)}" if b else head


def plus(b: float) -> str:
    """ "+ b" added to a sum as the text writes it: "+ 2", "- 9" (not "+ -9")."""
    return f"+ {g(b)}" if b >= 0 else f"- {g(-b)}"


def squared(x: float) -> str:
    """x**2 as Python reads it: "(-0.25)**2", since -0.25**2 is -(0.25**2)."""
    return f"({g(x)})**2" if x < 0 else f"{g(x)}**2"


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
