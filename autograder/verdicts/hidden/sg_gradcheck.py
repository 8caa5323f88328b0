"""Hidden tests of 07_set_gradients' relative_error and grad_check (exercise 3).

relative_error(a, b) = |a - b| / max(|a|, |b|, 1e-12) on chosen and random pairs.
grad_check(f, xs, engine=Value, h=1e-6) is the largest relative error between the
engine's gradients and central differences. It is run on functions the grader writes:

- smooth ones the engine gets right: the answer must be below 1e-7 (they are chosen so
  that central differences land within 1e-9 of the truth, and one-sided differences
  miss by more than 1e-6);
- ones with a leaked operand (``plain(x)``, a number the engine cannot see), where the
  answer is large and compared with the grader's own check, within 1e-5 relative;
- ones on the set's faulty engine ``Buggy`` (``engine=Buggy``; the notebook defines it
  after this exercise, so the test attaches the same class itself), compared the same
  way;
- x**3 with a large step ``h``, where the step shows in the answer.
"""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from .common import (
    Given,
    Kernel,
    Part,
    RefValue,
    close,
    fail,
    inputs_text,
    num,
    random_program,
    ref,
    shares,
)
from .gradcheck import TINY, lambda_text, leak_spots
from .gradcheck import relative_error as rel  # one definition, lesson 2's and this set's
from .needed import needed

ref_buggy = importlib.import_module(f"{ref.__name__}.buggy")  # the set's faulty engine
# The notebook defines Buggy after this exercise: its tests bring their own (the same),
# the class alone: buggy.py's notes name the faults, which a later exercise asks for.
BUGGY = Given("Buggy", "Buggy", needed(Path(ref_buggy.__file__).read_text(), ["Buggy"]))


# ---- functions as text -------------------------------------------------------------------


def make(source: str) -> Callable:
    helpers = {
        "exp": lambda v: v.exp(),
        "tanh": lambda v: v.tanh(),
        "plain": lambda v: getattr(v, "data", v),
    }
    return eval(source, helpers)


def engine_grads(source: str, xs: Sequence[float], engine=RefValue) -> list[float]:
    values = [engine(x) for x in xs]
    make(source)(*values).backward()
    return [v.grad for v in values]


def central(source: str, xs: Sequence[float], h: float, engine=RefValue) -> list[float]:
    f = make(source)
    out = []
    for i in range(len(xs)):
        up, down = list(xs), list(xs)
        up[i] += h
        down[i] -= h
        out.append((f(*map(engine, up)).data - f(*map(engine, down)).data) / (2 * h))
    return out


def one_sided(source: str, xs: Sequence[float], h: float) -> list[float]:
    f = make(source)
    base = f(*map(RefValue, xs)).data
    out = []
    for i in range(len(xs)):
        up = list(xs)
        up[i] += h
        out.append((f(*map(RefValue, up)).data - base) / h)
    return out


def expected(source: str, xs: Sequence[float], h: float = 1e-6, engine=RefValue) -> list[float]:
    """Each input's relative error, as a right grad_check works it out."""
    return [
        rel(a, b) for a, b in zip(engine_grads(source, xs, engine), central(source, xs, h, engine))
    ]


# ---- cases ---------------------------------------------------------------------------------

OPS = ("+", "*", "-", "/", "**", "tanh", "exp")


def smooth_case(rng: random.Random) -> tuple[str, list[float], str]:
    """A function the engine gets right, where the check's answer is clearly below 1e-7
    and one-sided differences clearly above it."""
    while True:
        program, leaves = random_program(
            rng, OPS, n_leaves=rng.choice((1, 2, 3)), n_steps=rng.choice((2, 3, 4, 5))
        )
        source = lambda_text(program)
        try:
            exact = engine_grads(source, leaves)
            if min(abs(g) for g in exact) < 0.05 or max(abs(g) for g in exact) > 1e3:
                continue
            if max(max(expected(source, leaves, h)) for h in (1e-5, 1e-6, 1e-7)) > 1e-9:
                continue
            if max(rel(a, b) for a, b in zip(exact, one_sided(source, leaves, 1e-6))) < 1e-6:
                continue
        except (ArithmeticError, ValueError):
            continue
        return source, leaves, program.text()


def leaky_case(rng: random.Random) -> tuple[str, list[float], str, float]:
    """A function with an operand passed as plain(...): backward() misses a path, and the
    check's answer is its largest relative error (at least 0.01)."""
    while True:
        program, leaves = random_program(
            rng, OPS, n_leaves=rng.choice((1, 2, 3)), n_steps=rng.choice((2, 3, 4))
        )
        spots = leak_spots(program)
        if not spots:
            continue
        i, p = rng.choice(spots)
        source = lambda_text(program, (i, p))
        try:
            errors = expected(source, leaves)
            if any(1e-9 < e < 1e-3 for e in errors) or max(errors) < 0.01:
                continue
        except (ArithmeticError, ValueError):
            continue
        operand = program.text(program.steps[i].args[p])
        return source, leaves, f"{program.text()} with ({operand}).data", max(errors)


BUGGY_FUNCTIONS = (
    "lambda x0, x1: x0 * x0 + x1",
    "lambda x0, x1: x0 * x1 + x0",
    "lambda x0, x1: (x0 * x1) * x0",
    "lambda x0, x1: tanh(x0 * x1)",
    "lambda x0, x1: tanh(x0) + x1 * 2.0",
    "lambda x0, x1: x0 - x1 + x0 * x1",
    "lambda x0, x1: x0 + x1 * 3.0",
    "lambda x0, x1: x0**3 + x1",
    "lambda x0, x1: exp(x0) * x1",
    "lambda x0, x1: x0 / x1",
)


def buggy_case(rng: random.Random, source: str) -> tuple[list[float], float]:
    """Inputs for a function on Buggy, and the check's answer there."""
    while True:
        xs = [round(rng.choice((-1, 1)) * rng.uniform(0.4, 1.5), 3) for _ in range(2)]
        errors = expected(source, xs, engine=ref_buggy.Buggy)
        if all(e < 1e-9 or e > 1e-3 for e in errors):
            return xs, max(errors)


# ---- the test ----------------------------------------------------------------------------


# The course's relative_error, for grad_check's part when the student's fails its own.
REL_GIVEN = Given(
    "relative_error",
    "relative_error",
    "def relative_error(a, b):\n    return abs(a - b) / max(abs(a), abs(b), 1e-12)\n",
)
REL = "relative_error(a, b) is |a - b| / max(|a|, |b|, 1e-12)"
TINIEST = 1e-9  # the smallest magnitude a pair is drawn at (besides exact zeros)


def rel_tolerance(a: float, b: float) -> float:
    """How far a right relative_error may be from ``rel(a, b)`` (relative): the text asks
    for the 1e-12 only to keep 0/0 away, so max(|a|, |b|, 1e-12), max(|a|, |b|) + 1e-12,
    a test for 0 first, or a smaller guard, are all right, and they differ by up to
    1e-12 / max(|a|, |b|): 2e-3 at 1e-9, the smallest magnitude drawn."""
    top = max(abs(a), abs(b))
    return 1e-9 + (2e-12 / top if top else 0.0)


def rel_close(value: object, a: float, b: float) -> bool:
    return close(value, rel(a, b), rel=rel_tolerance(a, b), abs_=1e-15)


def rel_pairs(rng: random.Random) -> list[tuple[float, float]]:
    """Chosen pairs (zeros, signs, order, tiny and huge numbers), then random ones at
    magnitudes from 1e-9 to 1e12: relative_error is a ratio, right at any scale."""
    pairs = [
        (1.0, 1.1),
        (1.1, 1.0),
        (2.0, -2.0),
        (0.0, 0.0),
        (0.0, 3.0),
        (-3.0, 0.0),
        (5, 5),
        (3, 4),
        (-2.5, -0.5),
        (-0.5, -2.5),
        (1e-9, 2e-9),
        (-3e-9, 1e-9),
        (4e-9, 4e-9),
        (1e8, 1e8 + 1.0),
        (1e200, 1.5e200),
        (-3e250, 1e250),
    ]
    for _ in range(30):
        scale = 10 ** rng.uniform(math.log10(TINIEST), 12)
        a = rng.choice((-1, 1)) * rng.uniform(0.1, 1) * scale
        b = rng.choice((-1, 1)) * rng.uniform(0.1, 1) * scale
        pairs.append((a, b))
    return [p for p in pairs if max(map(abs, p)) == 0 or max(map(abs, p)) >= TINIEST]


def relative_error(kernel: Kernel) -> None:
    """relative_error on chosen pairs (zeros, signs, order, scale) and random ones."""
    pairs = rel_pairs(kernel.rng)
    results = kernel.run(
        "calls",
        function="relative_error",
        calls=[{"args": [a, b]} for a, b in pairs],
        what="relative_error",
    )
    for (a, b), got in zip(pairs, results):
        what = f"relative_error({num(a)}, {num(b)})"
        if "failed" in got:
            if got["type"] == "NotImplementedError":
                fail("relative_error raised NotImplementedError (not written yet)")
            hint = "divide by max(|a|, |b|, 1e-12), which is never 0" if a == b == 0 else REL
            fail(f"{what} should be {num(rel(a, b))}, raised {got['error']}\n({hint})")
        value = got["result"]
        if not _is_number(value):
            fail(f"{what} should be the number {num(rel(a, b))}, got {num(value)}\n({REL})")
        if not rel_close(value, a, b):
            fail(
                f"{what} should be {num(rel(a, b))}, got {num(value)}\n("
                + _rel_hint(pairs, results)
                + ")"
            )


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


REL_GUESSES = [
    (lambda a, b: abs(a - b), "divide the difference by max(|a|, |b|, 1e-12)"),
    (
        lambda a, b: (a - b) / max(abs(a), abs(b), TINY),
        "take the absolute difference |a - b|",
    ),
    (
        lambda a, b: abs(a - b) / max(abs(b), TINY),
        "divide by the larger of |a| and |b|, not by |b|",
    ),
    (
        lambda a, b: abs(a - b) / max(abs(a), TINY),
        "divide by the larger of |a| and |b|, not by |a|",
    ),
    (
        lambda a, b: abs(a - b) / max(abs(a) + abs(b), TINY),
        "divide by max(|a|, |b|), not |a| + |b|",
    ),
    (
        lambda a, b: abs(a - b) / max(a, b, TINY),
        "divide by the larger of the SIZES |a| and |b|: max(abs(a), abs(b), 1e-12)",
    ),
]


def _rel_hint(pairs: list, results: list) -> str:
    """The slip that explains every answer relative_error gave, if one does; else what
    the wrong answers have in common (small numbers only: too large a guard)."""
    answers = [got.get("result") for got in results]
    shown = [(p, v) for p, v in zip(pairs, answers) if not p[0] == p[1] == 0]
    for guess, hint in REL_GUESSES:
        if all(close(v, guess(a, b), rel=1e-9, abs_=1e-15) for (a, b), v in shown):
            return hint
    wrong = [(a, b) for (a, b), v in shown if not rel_close(v, a, b)]
    if wrong and all(max(abs(a), abs(b)) < 1e-3 for a, b in wrong):
        return (
            "right for ordinary numbers, wrong for tiny ones: the guard is for 0/0 only, "
            "so keep it at 1e-12"
        )
    return REL


def grad_check(kernel: Kernel) -> None:
    """relative_error and grad_check, each for its share of the points: grad_check is
    checked with the course's relative_error in place when the student's fails."""
    shares(
        kernel,
        [
            Part("`relative_error`", ("relative_error",), lambda: relative_error(kernel)),
            Part("`grad_check`", ("grad_check",), lambda: check_grad_check(kernel)),
        ],
    )


def check_grad_check(kernel: Kernel) -> None:
    """grad_check on functions the engine gets right, functions with a leaked operand,
    the faulty engine, and a large h."""
    rng = kernel.rng
    right = [smooth_case(rng) for _ in range(12)]
    leaky = [leaky_case(rng) for _ in range(10)]
    buggy = [(s, *buggy_case(rng, s)) for s in BUGGY_FUNCTIONS]
    x0 = round(rng.uniform(0.5, 1.5), 3)
    steps = [(h, rel(3 * x0 * x0, 3 * x0 * x0 + h * h)) for h in (0.1, 0.05)]
    calls = [{"lambda": s, "xs": xs} for s, xs, _ in right]
    calls += [{"lambda": s, "xs": xs, "engine": "Value"} for s, xs, _, _ in leaky]
    calls += [{"lambda": s, "xs": xs, "engine": "Buggy"} for s, xs, _ in buggy]
    calls += [{"lambda": "lambda x0: x0**3", "xs": [x0], "h": h} for h, _ in steps]
    given = [BUGGY, *kernel.course(REL_GIVEN)]
    results = kernel.run(
        "sg_grad_check", function="grad_check", calls=calls, given=given, what="grad_check"
    )
    for call, got in zip(calls, results):
        _returns_a_number(call, got)
    for (source, xs, text), got in zip(right, results):
        _below(got["result"], source, xs, text)
    at = len(right)
    for (source, xs, text, want), got in zip(leaky, results[at:]):
        _compare(got["result"], want, source, xs, f"f = {text}", "Value")
    at += len(leaky)
    for (source, xs, want), got in zip(buggy, results[at:]):
        _compare(got["result"], want, source, xs, f"f = {source.split(': ', 1)[1]}", "Buggy")
    at += len(buggy)
    for (h, want), got in zip(steps, results[at:]):
        if not close(got["result"], want, rel=1e-5, abs_=1e-12):
            hint = (
                "use the step h it is given"
                if got["result"] < 1e-6
                else ("central differences: (f(x + h) - f(x - h)) / (2h), with the h it is given")
            )
            fail(
                f"grad_check(lambda x: x**3, [{x0}], h={h}) should be {num(want)}, got "
                f"{num(got['result'])}: with so large a step, (f(x+h) - f(x-h)) / (2h) = "
                f"3x**2 + h**2\n({hint})"
            )


def _below(value: float, source: str, xs: list, text: str) -> None:
    """A function the engine gets right: the check must say so (below 1e-7)."""
    if 0 <= value < 1e-7:
        return
    hint = ""
    sided = max(rel(a, b) for a, b in zip(engine_grads(source, xs), one_sided(source, xs, 1e-6)))
    if close(value, sided, rel=0.05):
        hint = "\n(central differences: (f(x + h) - f(x - h)) / (2h))"
    elif close(value, 0.5, rel=1e-3):
        hint = "\n(the numerical slope divides by 2 * h: the step from x - h to x + h)"
    else:
        hint = f"\n({CHECK_RECIPE})"
    fail(
        f"grad_check(f, xs) should be below 1e-7 (the engine is right here), got "
        f"{num(value)}\nwith f = {text}\nat {inputs_text(xs)}{hint}"
    )


CHECK_RECIPE = (
    "engine(x) for each input, backward(), then for each input i the central difference "
    "of f, and relative_error of the two"
)


def _returns_a_number(call: dict, got: dict) -> None:
    what = "grad_check(f, xs" + (f", engine={call['engine']}" if call.get("engine") else "")
    what += f", h={call['h']})" if call.get("h") else ")"
    where = f"with f = {call['lambda']}\nat {inputs_text(call['xs'])}"
    if "failed" in got:
        if got["type"] == "NotImplementedError":
            fail("grad_check raised NotImplementedError (not written yet)")
        fail(
            f"{what} raised {got['error']}\n{where}\n(f takes one {call.get('engine') or 'Value'}"
            " per input: call f(*values) with values made by engine(x))"
        )
    value = got["result"]
    if isinstance(value, list):
        fail(
            f"{what} should return one number, the LARGEST relative error, got a list\n{where}"
            "\n(return the max of the inputs' relative errors)"
        )
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        fail(f"{what} should return a number, got {num(value)}\n{where}")
    if got["xs"] != call["xs"]:
        fail(f"{what} changed the list xs it was given: nudge copies of it\n{where}")


def _compare(value: float, want: float, source: str, xs: list, text: str, engine: str) -> None:
    """The check's answer where it is large (within 1e-5 relative), or below 1e-7 where
    the engine is right for this function."""
    if close(value, want, rel=1e-5, abs_=1e-9) or (want < 1e-7 and 0 <= value < 1e-7):
        return
    hint = ""
    engine_class = ref_buggy.Buggy if engine == "Buggy" else RefValue
    errors = expected(source, xs, engine=engine_class)
    grads = engine_grads(source, xs, engine_class)
    numeric = central(source, xs, 1e-6, engine_class)
    if engine == "Buggy" and value < 1e-7:
        hint = "(use the engine it is given: engine(x) for each input, on both sides)"
    elif close(value, max(abs(a - b) for a, b in zip(grads, numeric)), rel=1e-4):
        hint = "(the RELATIVE error: relative_error(engine, numerical))"
    elif close(value, min(errors), rel=1e-4) or close(value, sum(errors) / len(errors), rel=1e-4):
        hint = "(the LARGEST relative error over the inputs)"
    if not hint:
        hint = f"({CHECK_RECIPE})"
    should = "below 1e-7 (the engine is right here)" if want < 1e-7 else num(want)
    fail(
        f"grad_check(f, xs, engine={engine}) should be {should}, got {num(value)}\n"
        f"with {text}\nat {inputs_text(xs)}" + (f"\n{hint}" if hint else "")
    )
