"""Hidden tests of 02_backward's numerical_grad and grad_check (their exercises 4 and 5):
smooth functions with steep bowls for central differences, and functions with leaked
operands for grad_check, which returns the largest relative error. Registered in
02_backward.py's TESTS; problem set 1 (sg_gradcheck.py) shares relative_error, the
functions as text and the leaks."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from .backward_givens import BACKWARD, NUMERICAL_GRAD, TOPOLOGICAL_ORDER
from .common import (
    Kernel,
    Program,
    RefValue,
    Step,
    close,
    fail,
    inputs_text,
    num,
    random_program,
    render,
    short,
)

# ---- exercise 4: numerical_grad -------------------------------------------------------------


def smooth_function(rng: random.Random, n: int) -> tuple[str, list[float], str]:
    """(lambda text, a point, the text for messages) over n inputs: steep bowls
    k*(xi - ci)**2 plus smooth coupling terms, at a point just off the bowls' bottoms.
    f'' is huge there and f' moderate, so one-sided differences are off by about h*k (at
    least 2e-4 for h = 1e-7), while central differences are exact on the bowls and within
    1e-7 on the rest for any h from 1e-3 down to 1e-8."""
    ks = [rng.randrange(2000, 20000) for _ in range(n)]
    cs = [round(rng.uniform(-1.5, 1.5), 2) for _ in range(n)]
    xs = [round(c + rng.choice((-1, 1)) * rng.uniform(0.002, 0.02), 4) for c in cs]
    kinds = {
        "sin": "sin(x{a}*x{b})",
        "prod": "x{a}*x{b}",
        "exp": "exp(x{a}/2)",
        "cube": "x{a}**3",
        "cos": "cos(x{a} + x{b})",
    }
    bowls = [
        f"{k}*(x{i} {'-' if c >= 0 else '+'} {abs(c)!r})**2" for i, (k, c) in enumerate(zip(ks, cs))
    ]
    terms = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(sorted(kinds))
        scale = round(rng.uniform(-2, 2), 1)
        terms.append(f"{scale!r}*" + kinds[kind].format(a=rng.randrange(n), b=rng.randrange(n)))
    args = ", ".join(f"x{i}" for i in range(n))
    source = f"lambda {args}: " + " + ".join(bowls + terms)
    text = (" + ".join(bowls) + "\n    + " + " + ".join(terms)).replace("+ -", "- ")
    return source, xs, text


def truth(source: str, xs: list[float]) -> list[float]:
    """The exact partial derivatives of the grader's function at xs (reference engine)."""
    import math

    helpers = {
        "sin": lambda v: v.sin(),
        "cos": lambda v: v.cos(),
        "exp": lambda v: v.exp(),
        "plain": lambda v: v.data,
        "math": math,
    }
    vs = [RefValue(x) for x in xs]
    eval(source, helpers)(*vs).backward()
    return [v.grad for v in vs]


def numerical_grad(kernel: Kernel) -> None:
    """Central differences within 1e-5 + 1e-7*|df/dx| of the true partials, with the step
    h it is given, and without changing the list xs it is given."""
    rng = kernel.rng
    cases = [smooth_function(rng, 1 + k % 3) for k in range(40)]  # each input of three
    calls = [{"args": [{"lambda": source}, xs]} for source, xs, _ in cases]
    x0 = round(rng.uniform(0.3, 1.2), 3)
    for h in (0.5, 0.25):  # large steps: any finite difference shows them in its result
        calls.append({"args": [{"lambda": "lambda x: sin(x)"}, [x0]], "kwargs": {"h": h}})
    results = kernel.run(
        "calls", function="numerical_grad", calls=calls, what="numerical_grad(f, xs)"
    )
    for (source, xs, text), got in zip(cases, results):
        where = f"f = {text}\nat {inputs_text(xs)}"
        if "failed" in got:
            fail(f"numerical_grad(f, xs) raised {got['error']}\n{where}")
        value = got["result"]
        if not isinstance(value, list) or len(value) != len(xs):
            fail(
                f"numerical_grad(f, xs) should return a list of {len(xs)} numbers, got "
                f"{num(value) if not isinstance(value, list) else len(value)}\n{where}"
            )
        if got["args"][1] != xs:
            fail(
                f"numerical_grad changed the list xs it was given (from {xs} to "
                f"{got['args'][1]}): nudge copies of it\n{where}"
            )
        for i, (g, want) in enumerate(zip(value, truth(source, xs))):
            if not close(g, want, rel=1e-7, abs_=1e-5):
                fail(
                    f"numerical_grad(f, xs)[{i}] should be df/dx{i} = {want:.10g}, got "
                    f"{num(g)}\n{where}\n(central differences: (f(x+h) - f(x-h)) / (2h))"
                )
    _uses_h(x0, results[-2:])


def _uses_h(x0: float, results: list[dict]) -> None:
    """numerical_grad(sin, [x0], h) for h = 0.5 and 0.25: near cos(x0), but not the same
    for both steps (a step as large as 0.5 shows in every finite-difference formula)."""
    import math

    what = f"numerical_grad(f, [{x0}], h=...) for f(x) = sin(x)"
    values = []
    for h, got in zip((0.5, 0.25), results):
        if "failed" in got:
            fail(f"{what.replace('...', str(h))} raised {got['error']}")
        value = got["result"][0] if isinstance(got["result"], list) and got["result"] else None
        if not isinstance(value, (int, float)) or abs(value - math.cos(x0)) > 0.1:
            fail(
                f"{what.replace('...', str(h))} should be near cos({x0}) = "
                f"{math.cos(x0):.6g}, got {num(value)}"
            )
        values.append(value)
    if values[0] == values[1]:
        fail(
            f"{what} gave {values[0]:.10g} for both h=0.5 and h=0.25\n(it ignores h: use "
            "the h it is given)"
        )


# ---- exercise 5: grad_check -----------------------------------------------------------------

TINY = 1e-12  # keeps the relative error of two zeros from being 0/0
H = 1e-6  # the step of the course's numerical_grad, which grad_check is given
RIGHT, OFF = 1e-9, 1e-3  # an input's relative error: clearly right below, clearly off above
SCALES = (1e-4, 0.01, 1.0, 100.0, 1000.0)  # gradients of very different sizes


def relative_error(a: float, b: float) -> float:
    """|a - b| / max(|a|, |b|, 1e-12): the difference as a fraction of the larger number.
    The one definition of lesson 2's grad_check and problem set 1's relative_error."""
    return abs(a - b) / max(abs(a), abs(b), TINY)


def lambda_text(program: Program, *leaks: tuple[int, int]) -> str:
    """The program as a lambda over x0, x1...; each leak ``(step, position)`` passes that
    operand as plain(...), a number, so backward() misses a path. A function such as
    ``tanh`` is written as a call of that name."""
    names = [f"x{i}" for i in range(program.n_leaves)]
    for i, step in enumerate(program.steps):
        args = [f"({names[a]})" if step.is_node(p) else repr(a) for p, a in enumerate(step.args)]
        for p in (p for j, p in leaks if j == i):
            args[p] = f"plain{args[p]}"
        if step.op in ("+", "-", "*", "/"):
            names.append(f"{args[0]} {step.op} {args[1]}")
        elif step.op == "**":
            names.append(f"{args[0]}**{args[1]}")
        elif step.op == "neg":
            names.append(f"-{args[0]}")
        else:
            names.append(f"{step.op}{args[0]}")
    return f"lambda {', '.join(f'x{i}' for i in range(program.n_leaves))}: {names[-1]}"


def leaked_text(program: Program, leaks: list[tuple[int, int]], index: int | None = None) -> str:
    """The program (node ``index``, the output by default) as students read it, each
    leaked operand shown as (...).data."""
    names = [f"x{i}" for i in range(program.n_leaves)]
    for i, step in enumerate(program.steps):
        shown, args = list(names), list(step.args)
        for p in (p for j, p in leaks if j == i):  # the operand under a name of its own
            name = names[args[p]]
            shown.append((name if name.isidentifier() else f"({name})") + ".data")
            args[p] = len(shown) - 1
        names.append(render(Step(step.op, tuple(args)), shown))
    return names[-1 if index is None else index]


def leak_spots(program: Program) -> list[tuple[int, int]]:
    """(step, position) of every node operand of a two-input step: where passing the
    operand as a number makes backward() miss a path."""
    return [
        (i, p)
        for i, s in enumerate(program.steps)
        for p in range(len(s.args))
        if s.is_node(p) and len(s.inputs()) == 2
    ]


def central(source: str, xs: list[float], h: float = H) -> list[float]:
    """The course's numerical_grad of the function on plain numbers (plain(x) is x)."""
    f = eval(source, {"plain": lambda v: getattr(v, "data", v)})
    out = []
    for i in range(len(xs)):
        up, down = list(xs), list(xs)
        up[i] += h
        down[i] -= h
        out.append((f(*up) - f(*down)) / (2 * h))
    return out


@dataclass
class CheckCase:
    """A function for grad_check, the point, the function as messages show it, and per
    input the engine's gradient and the numerical one, as a right grad_check sees them."""

    source: str
    xs: list[float]
    text: str
    pairs: list[tuple[float, float]]

    @property
    def errors(self) -> list[float]:
        return [relative_error(a, b) for a, b in self.pairs]

    @property
    def expected(self) -> float:
        return max(self.errors)

    @property
    def off(self) -> list[int]:
        """The inputs whose engine gradient is wrong."""
        return [i for i, e in enumerate(self.errors) if e > OFF]


def check_case(source: str, xs: list[float], text: str, off: set[int] | None = None):
    """The CheckCase, if every input's relative error is clearly right (below 1e-9 for
    any step from 1e-5 to 1e-7) or clearly off (above 1e-3), and, with ``off``, exactly
    the inputs in ``off`` are off; else None. Every input f uses must have a gradient
    (engine or numerical) well above rounding: two gradients that are both rounding
    noise, or both 0 by cancellation in one engine, have no steady relative error."""
    try:
        engine = truth(source, xs)
        pairs = list(zip(engine, central(source, xs)))
        others = [central(source, xs, h) for h in (1e-5, 1e-7)]
    except (ArithmeticError, ValueError, TypeError):
        return None
    body = source.split(":", 1)[1]
    size = max(max(abs(a), abs(b)) for a, b in pairs)
    for i, (a, b) in enumerate(pairs):
        if re.search(rf"\bx{i}\b", body) and max(abs(a), abs(b)) <= max(1e-12, 1e-9 * size):
            return None
    case = CheckCase(source, list(xs), text, pairs)
    for i, e in enumerate(case.errors):
        steady = e < RIGHT and all(relative_error(engine[i], n[i]) < 10 * RIGHT for n in others)
        if not (steady or e > OFF) or (off is not None and (e > OFF) != (i in off)):
            return None
    return case


def fixed_cases() -> list[CheckCase]:
    """The lesson's examples, a path missed each way (the engine's gradient too small,
    then too large), a tiny gradient, and an input f does not use (0 against 0)."""
    cases = [
        ("lambda x0, x1: x0 * x1 + x0", [2.0, 3.0], "x0*x1 + x0"),
        ("lambda x0, x1: x0 * plain(x1) + x1", [2.0, 3.0], "x0 * x1.data + x1"),
        ("lambda x0, x1: x0 * x1 - plain(x1)", [2.0, 3.0], "x0*x1 - x1.data"),
        ("lambda x0, x1: 1e-07 * (x0 * plain(x1) + x1)", [2.0, 3.0], "1e-07 * (x0*x1.data + x1)"),
        ("lambda x0, x1, x2: 3.0 * x0 * x2 + x2", [1.5, -2.0, 0.5], "3*x0*x2 + x2 (no x1)"),
    ]
    return [check_case(*c) for c in cases]


def separable_case(rng: random.Random, off: tuple[int, ...]) -> CheckCase:
    """f = s0*T0(x0) + s1*T1(x1) + s2*T2(x2): a small random function of each input,
    times scales from 1e-4 to 1000, where exactly the inputs in ``off`` have a wrong
    gradient (their term reads one operand's .data), each by a different amount."""
    while True:
        steps: list[Step] = []
        leaks: list[tuple[int, int]] = []
        ends, leaves = [], []
        for i, scale in enumerate(rng.sample(SCALES, 3)):
            term, (x,) = random_program(
                rng, ("+", "*", "-", "/", "**"), n_leaves=1, n_steps=rng.choice((2, 3))
            )
            start = len(steps)
            for s in term.steps:
                moved = [
                    (i if a == 0 else 3 + start + a - 1) if s.is_node(p) else a
                    for p, a in enumerate(s.args)
                ]
                steps.append(Step(s.op, tuple(moved)))
            spots = leak_spots(term)
            if i in off and spots:
                j, p = rng.choice(spots)
                leaks.append((start + j, p))
            if scale != 1.0:
                steps.append(Step("*", (scale, 3 + len(steps) - 1)))
            ends.append(3 + len(steps) - 1)
            leaves.append(round(x, 4))
        steps.append(Step("+", (ends[0], ends[1])))
        steps.append(Step("+", (3 + len(steps) - 1, ends[2])))
        program = Program(3, steps)
        terms = [leaked_text(program, leaks, e) for e in ends]
        if max(map(len, terms)) > 80:
            continue
        text = "\n    + ".join(terms)
        case = check_case(lambda_text(program, *leaks), leaves, text, set(off))
        if case is not None and _distinct([case.errors[i] for i in off]):
            return case


def _distinct(errors: list[float]) -> bool:
    """No two within 5 % of each other (so that any one of them is not the largest)."""
    ranked = sorted(errors)
    return all(b > 1.05 * a for a, b in itertools.pairwise(ranked))


def random_case(rng: random.Random, leaky: bool) -> CheckCase:
    """A random graph over one to three inputs, sometimes scaled by 1e-4 to 1000, either
    right or with one operand passed as .data."""
    while True:
        program, leaves = random_program(
            rng,
            ("+", "*", "-", "/", "**"),
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((2, 3, 4, 5)),
            numbers="both",
        )
        scale = rng.choice(SCALES)
        if scale != 1.0 and rng.random() < 0.5:
            last = program.n_leaves + len(program.steps) - 1
            program.steps.append(Step("*", (scale, last)))
        leaks = [rng.choice(leak_spots(program))] if leaky and leak_spots(program) else []
        if leaky and not leaks:
            continue
        text = short(leaked_text(program, leaks), 84)
        case = check_case(lambda_text(program, *leaks), leaves, text)
        if case is not None and (case.expected > 0.01 if leaky else not case.off):
            return case


# Which inputs of a three-input function have a wrong gradient: the first, the one in the
# middle, the last, several, or none. A check that looks at only some of the inputs, or
# adds them up, or picks one, fails on one of these.
OFF_PATTERNS = ((0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2), ())


def grad_check(kernel: Kernel) -> None:
    """The largest relative error |engine - numerical| / max(|engine|, |numerical|, 1e-12)
    over the inputs: below 1e-7 for functions the engine gets right, and the grader's own
    value where operands are passed as .data (so that backward() misses a path), with the
    wrong inputs first, in the middle, last and several, and gradients from about 1e-7 to
    1e5. backward(), the sort and numerical_grad are the course's."""
    rng = kernel.rng
    cases = fixed_cases()
    cases += [separable_case(rng, off) for off in OFF_PATTERNS]
    cases += [random_case(rng, leaky=k % 2 == 1) for k in range(16)]
    results = kernel.run(
        "calls",
        function="grad_check",
        what="grad_check(f, xs)",
        calls=[{"args": [{"lambda": c.source}, c.xs]} for c in cases],
        given=[TOPOLOGICAL_ORDER, BACKWARD, NUMERICAL_GRAD],
    )
    answers = [
        (case, got["result"])
        for case, got in zip(cases, results)
        if isinstance(got.get("result"), (int, float)) and not isinstance(got["result"], bool)
    ]
    for case, got in zip(cases, results):
        _check_grad_check(case, got, answers)


def _check_grad_check(case: CheckCase, got: dict, answers: list) -> None:
    where = f"f = {case.text}\nat {inputs_text(case.xs)}"
    if "failed" in got:
        hint = ""
        if got.get("type") == "ZeroDivisionError":
            hint = "\n(divide by max(|engine|, |numerical|, 1e-12), which is never 0)"
        fail(f"grad_check(f, xs) raised {got['error']}\n{where}{hint}")
    value = got["result"]
    if isinstance(value, list):
        fail(
            "grad_check(f, xs) should return one number, the LARGEST relative error, got "
            f"a list\n{where}"
        )
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        fail(f"grad_check(f, xs) should return a number, got {num(value)}\n{where}")
    if not case.off:
        if 0 <= value < 1e-7:
            return
        hint = _slip(case, value, answers)
        fail(
            f"grad_check(f, xs) should be below 1e-7 (the engine is right here), got "
            f"{num(value)}\n{where}" + (f"\n({hint})" if hint else "")
        )
    if close(value, case.expected, rel=1e-5, abs_=1e-9):
        return
    worst = case.errors.index(case.expected)
    hint = _slip(case, value, answers)
    fail(
        f"grad_check(f, xs) should be {num(case.expected)} (x{worst}'s relative error), got "
        f"{num(value)}\n{where}" + (f"\n({hint})" if hint else "")
    )


RELATIVE = "the RELATIVE error: |engine - numerical| / max(|engine|, |numerical|, 1e-12)"
LARGEST = "the LARGEST relative error over all the inputs"
ONE_SIDE = "divide by the larger of |engine| and |numerical|, whichever it is"


def _over(a: float, b: float, size: float) -> float:
    """|a - b| / size, the size kept off 0 as the slips keep it."""
    return abs(a - b) / max(size, TINY)


# What a slip returns, from the (engine, numerical) pairs, and what to tell the student.
SLIPS: list[tuple[Callable[[list[tuple[float, float]]], float], str]] = [
    (lambda ps: max(abs(a - b) for a, b in ps), RELATIVE),
    (lambda ps: max(_over(a, b, abs(a)) for a, b in ps), ONE_SIDE),
    (lambda ps: max(_over(a, b, abs(b)) for a, b in ps), ONE_SIDE),
    (
        lambda ps: max(_over(a, b, abs(a) + abs(b)) for a, b in ps),
        "divide by the larger, not the sum",
    ),
    (
        lambda ps: max(_over(a, b, abs(max(a, b))) for a, b in ps),
        "max(|engine|, |numerical|), not |max(engine, numerical)|",
    ),
    (
        lambda ps: max(_over(a, b, max(abs(a), abs(b), 1.0)) for a, b in ps),
        "the 1e-12 only avoids 0/0: do not divide by 1 or more",
    ),
    (lambda ps: relative_error(*ps[0]), LARGEST),
    (lambda ps: relative_error(*ps[-1]), LARGEST),
    (lambda ps: max((relative_error(a, b) for a, b in ps[1:]), default=0.0), LARGEST),
    (lambda ps: max((relative_error(a, b) for a, b in ps[:-1]), default=0.0), LARGEST),
    (lambda ps: sum(relative_error(a, b) for a, b in ps), LARGEST),
    (lambda ps: sum(relative_error(a, b) for a, b in ps) / len(ps), LARGEST),
    (lambda ps: min(relative_error(a, b) for a, b in ps), LARGEST),
    (
        lambda ps: max(abs(a - b) for a, b in ps) / max(max(abs(a), abs(b)) for a, b in ps),
        "each input's relative error first, then the largest of them",
    ),
    (
        lambda ps: max((a - b) / max(abs(a), abs(b), TINY) for a, b in ps),
        "abs(...): a relative error is never negative",
    ),
    (
        lambda ps: max((b - a) / max(abs(a), abs(b), TINY) for a, b in ps),
        "abs(...): a relative error is never negative",
    ),
]


def _slip(case: CheckCase, value: float, answers: list[tuple[CheckCase, float]]) -> str:
    """The hint for the slip that explains every answer grad_check gave, else for one that
    explains this ``value`` ('' if none does). On a single function two slips can give
    the same number (the absolute difference and dividing by 1, when the gradients are
    small); over all of them, only the slip that was made fits."""
    if value < 0:
        return "abs(...): a relative error is never negative"
    for slip, hint in SLIPS:
        if all(_fits(slip, c, v) for c, v in answers):
            return hint
    for slip, hint in SLIPS:
        if _fits(slip, case, value) and not _fits(slip, case, case.expected):
            return hint
    return ""


def _fits(slip: Callable, case: CheckCase, value: float) -> bool:
    try:
        guess = slip(case.pairs)
    except (ArithmeticError, ValueError):
        return False
    return math.isclose(value, guess, rel_tol=1e-4, abs_tol=1e-8)
