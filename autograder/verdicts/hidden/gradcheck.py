"""Hidden tests of 02_backward's numerical_grad and grad_check (their exercises 4 and 5):
smooth functions with steep bowls for central differences, and functions with a leaked
operand for grad_check. Registered in 02_backward.py's TESTS."""

from __future__ import annotations

import random

from .backward_givens import BACKWARD, NUMERICAL_GRAD, TOPOLOGICAL_ORDER
from .common import (
    Kernel,
    Program,
    RefValue,
    close,
    fail,
    inputs_text,
    num,
    random_program,
    short,
)

# ---- exercise 4: numerical_grad -------------------------------------------------------------


def smooth_function(rng: random.Random) -> tuple[str, list[float], str]:
    """(lambda text, a point, the text for messages): steep bowls k*(xi - ci)**2 plus
    smooth coupling terms, at a point just off the bowls' bottoms. f'' is huge there and
    f' moderate, so one-sided differences are off by about h*k (at least 2e-4 for
    h = 1e-7), while central differences are exact on the bowls and within 1e-7 on the
    rest for any h from 1e-3 down to 1e-8."""
    n = rng.choice((1, 2, 3))
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
    cases = [smooth_function(rng) for _ in range(40)]
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


def lambda_text(program: Program, leak: tuple[int, int] | None = None) -> str:
    """The program as a lambda over x0, x1...; ``leak = (step, position)`` passes that
    operand as plain(...), a number, so backward() misses a path. A function such as
    ``tanh`` is written as a call of that name."""
    names = [f"x{i}" for i in range(program.n_leaves)]
    for i, step in enumerate(program.steps):
        args = [f"({names[a]})" if step.is_node(p) else repr(a) for p, a in enumerate(step.args)]
        if leak is not None and leak[0] == i:
            args[leak[1]] = f"plain{args[leak[1]]}"
        if step.op in ("+", "-", "*", "/"):
            names.append(f"{args[0]} {step.op} {args[1]}")
        elif step.op == "**":
            names.append(f"{args[0]}**{args[1]}")
        elif step.op == "neg":
            names.append(f"-{args[0]}")
        else:
            names.append(f"{step.op}{args[0]}")
    return f"lambda {', '.join(f'x{i}' for i in range(program.n_leaves))}: {names[-1]}"


def leak_spots(program: Program) -> list[tuple[int, int]]:
    """(step, position) of every node operand of a two-input step: where passing the
    operand as a number makes backward() miss a path."""
    return [
        (i, p)
        for i, s in enumerate(program.steps)
        for p in range(len(s.args))
        if s.is_node(p) and len(s.inputs()) == 2
    ]


def _steady(source: str, xs: list[float], exact: list[float]) -> bool:
    """Central differences with any h from 1e-4 to 1e-7 land within 1e-7 of the truth."""
    f = eval(source, {"plain": lambda v: getattr(v, "data", v)})
    for h in (1e-4, 1e-5, 1e-6, 1e-7):
        for i in range(len(xs)):
            up, down = list(xs), list(xs)
            up[i] += h
            down[i] -= h
            try:
                slope = (f(*up) - f(*down)) / (2 * h)
            except (ZeroDivisionError, ValueError, OverflowError):
                return False
            if not close(slope, exact[i], rel=1e-8, abs_=1e-7):
                return False
    return True


def grad_check_cases(rng: random.Random, count: int) -> list[tuple[str, list[float], str, float]]:
    """(lambda text, xs, text for messages, expected result): half of them right, half with
    a leaked operand."""
    cases: list[tuple[str, list[float], str, float]] = []
    while len(cases) < count:
        program, leaves = random_program(
            rng,
            ("+", "*", "-", "/", "**"),
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((2, 3, 4, 5)),
            numbers="both",
        )
        source = lambda_text(program)
        exact = truth(source, leaves)
        if not _steady(source, leaves, exact):
            continue
        if len(cases) % 2 == 0:
            cases.append((source, leaves, short(program.text(), 84), 0.0))
            continue
        spots = leak_spots(program)
        if not spots:
            continue
        i, p = rng.choice(spots)
        leaky = lambda_text(program, (i, p))
        engine = truth(leaky, leaves)
        expected = max(abs(a - b) for a, b in zip(engine, exact))
        if expected < 0.05:
            continue
        operand = program.text(program.steps[i].args[p])
        cases.append(
            (
                leaky,
                leaves,
                f"{short(program.text(), 84)}\nwith ({short(operand, 28)}).data in step {i + 1}",
                expected,
            )
        )
    return cases


def grad_check(kernel: Kernel) -> None:
    """About 0 for functions the engine gets right; the largest |engine - numerical| when
    an operand is passed as .data (so that backward() misses a path). backward(), the
    sort and numerical_grad are the course's."""
    cases = grad_check_cases(kernel.rng, 30)
    cases.insert(0, ("lambda x, y: x * y + x", [2.0, 3.0], "x*y + x", 0.0))
    cases.insert(1, ("lambda x, y: x * plain(y) + y", [2.0, 3.0], "x * y.data + y", 2.0))
    results = kernel.run(
        "calls",
        function="grad_check",
        what="grad_check(f, xs)",
        calls=[{"args": [{"lambda": s}, xs]} for s, xs, _, _ in cases],
        given=[TOPOLOGICAL_ORDER, BACKWARD, NUMERICAL_GRAD],
    )
    for (_, xs, text, expected), got in zip(cases, results):
        where = f"f = {text}\nat {inputs_text(xs)}"
        if "failed" in got:
            fail(f"grad_check(f, xs) raised {got['error']}\n{where}")
        value = got["result"]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            fail(f"grad_check(f, xs) should return a number, got {num(value)}\n{where}")
        if expected == 0.0 and not abs(value) < 1e-5:
            fail(
                f"grad_check(f, xs) should be about 0 (the engine is right here), got "
                f"{num(value)}\n{where}"
            )
        if expected and not close(value, expected, rel=1e-5, abs_=1e-5):
            hint = ""
            if close(-value, expected, rel=1e-5, abs_=1e-5):
                hint = "\n(the largest ABSOLUTE difference: abs(...), never negative)"
            fail(
                "grad_check(f, xs) should be the largest |engine - numerical| = "
                f"{num(expected)}, got {num(value)}\n{where}{hint}"
            )
