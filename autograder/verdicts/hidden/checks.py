"""The course's library checks for hidden tests written in the notebook.

A hidden region imports them from ``gradekit`` (``from gradekit import check_op``): each
is a function here whose first argument is the run's context (verdicts/region.py
``Context``: ``kernel``, ``rng``, and ``given``, the course code given to the current
test or part); the region calls it without it. They are for checks that need more than
asserts on a few values: random expression graphs compared with the reference engine,
slips named by ``diagnose``. ``LIBRARY`` lists what ``gradekit`` exports.

What is the lesson's (which op, its examples, its edge points, the hint for a failure)
is written in the region; what every lesson shares (random inputs and graphs, the
comparison with the reference engine, the messages) is here. An expression is written
as the notebook's visible checks write it, over named inputs: ``("a * b + a", {"a": 2.0,
"b": 3.0})``; ``alone`` forms (``"a + 2.5"``, ``"2 - a"``, ``"a ** 0.5"``) are one
operation each, drawn at random inputs.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from .common import (
    ARITHMETIC,
    Case,
    GradingFailure,
    Program,
    RefValue,
    Step,
    check_cases,
    close,
    fail,
    num,
    random_program,
    single,
)

# ---- expressions as the visible checks write them -------------------------------------------

_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _number(node: ast.AST) -> int | float | None:
    """A literal number (``2``, ``-1.5``), or None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def program(expr: str, names: Sequence[str]) -> Program:
    """``expr`` over the inputs ``names`` as a Program: one step per operation, in the
    order Python evaluates them (``a * b + a``: ``*``, then ``+``). A number in ``+``,
    ``-``, ``*``, ``/`` is a float; an exponent keeps its type; ``sum([...])`` is
    ``0.0 + ...``; ``x.tanh()`` is the op ``tanh``."""
    index = {name: i for i, name in enumerate(names)}
    steps: list[Step] = []

    def add(op: str, args: tuple) -> int:
        steps.append(Step(op, args))
        return len(names) + len(steps) - 1

    def operand(node: ast.AST) -> int | float:
        value = _number(node)
        return float(value) if value is not None else visit(node)

    def visit(node: ast.AST) -> int:
        if isinstance(node, ast.Name) and node.id in index:
            return index[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            op = _BINARY[type(node.op)]
            if op == "**":
                exponent = _number(node.right)
                if exponent is None:
                    raise ValueError(f"{expr!r}: an exponent must be a number")
                return add(op, (visit(node.left), exponent))
            return add(op, (operand(node.left), operand(node.right)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return add("neg", (visit(node.operand),))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            return add(node.func.attr, (visit(node.func.value),))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "sum"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.List)
        ):
            total: int | float = 0.0
            for item in node.args[0].elts:
                total = add("+", (total, operand(item)))
            return int(total)
        raise ValueError(f"{expr!r}: cannot read {ast.unparse(node)!r} as an engine operation")

    visit(ast.parse(expr, mode="eval").body)
    return Program(len(names), steps)


def _names(expr: str) -> list[str]:
    """The inputs of an expression, in the order they appear."""
    found = [n for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)]
    found = [n for n in found if n.id != "sum"]
    return list(dict.fromkeys(n.id for n in sorted(found, key=lambda n: n.col_offset)))


def example(expr: str, inputs: dict[str, float]) -> Case:
    """The case of a visible check: ``expr`` at ``inputs``, from d(loss)/d(output) = 1."""
    return Case(program(expr, list(inputs)), [float(x) for x in inputs.values()])


def _alone(expr: str) -> Step:
    """The one operation of an ``alone`` form (its inputs drawn at random)."""
    steps = program(expr, _names(expr)).steps
    if len(steps) != 1:
        raise ValueError(f"{expr!r}: an `alone` form is one operation")
    return steps[0]


# ---- lesson 1: one method, its closures run by the probe -----------------------------------


def check_method(
    ctx,
    *,
    alone: Sequence[str],
    graphs_of: Sequence[str],
    graphs: int = 40,
    numbers: str = "right",
    examples: Sequence[tuple[str, dict]] = (),
) -> None:
    """One method of lesson 1 (no backward() yet: the probe runs the ``_backward``
    closures, outputs first), against the reference engine: the lesson's ``examples``;
    each ``alone`` form 12 times at random inputs, from a random d(loss)/d(output) (to
    catch a missing ``* out.grad``); then ``graphs`` random graphs of the ops
    ``graphs_of``, every other one built twice on the same inputs (the gradients must add
    up). ``numbers``: where plain numbers stand in the graphs ("right": x + 2.0, "both":
    2.0 - x too). The other methods are the ones given (``given``, ``part(given=...)``)."""
    rng = ctx.rng
    singles = [_alone(e) for e in alone]
    tested = tuple(dict.fromkeys(step.method() for step in singles))
    cases = [example(e, inputs) for e, inputs in examples]
    for _ in range(12):
        for step in singles:
            prog, leaves = single(step.op, step.args, rng)
            cases.append(Case(prog, leaves, seed=rng.choice((1.0, -0.5, 2.5))))
    for g in range(graphs):
        prog, leaves = random_program(
            rng,
            tuple(graphs_of),
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((1, 2, 3, 5, 7)),
            numbers=numbers,
        )
        cases.append(Case(prog, leaves, passes=1 + g % 2))
    check_cases(ctx.kernel, cases, backprop="closures", given=ctx.given, tested=tested)


INT_OPERANDS = (2, -1, 0)  # a * 4 in the lesson, self * -1 in __neg__, 0 + ... in sum()


def check_int_operand(ctx, op: str) -> None:
    """``Value(x) op n`` for plain ints ``n`` on the right (``INT_OPERANDS``): its data,
    and x's gradient from the output's closure. The graphs of ``check_method`` hold
    floats only, and the later exercises lean on ints (``self * -1``, ``sum()``): a
    method that wraps only floats fails here, in its own exercise, and the exercises
    built on it are graded on the course's version of it."""
    method = {"+": "__add__", "*": "__mul__"}[op]
    rng = ctx.rng
    cases = [(round(rng.uniform(0.5, 2.0), 2), n) for n in INT_OPERANDS]
    steps: list = [["name", "Value"]]
    for x, n in cases:
        a = len(steps)
        steps += [
            ["call", {"r": 0}, [x], {"d": []}],  # a = Value(x)
            ["op", op, {"r": a}, n],  # out = a op n
            ["attr", {"r": a + 1}, "data"],
            ["setattr", {"r": a + 1}, "grad", 1.0],
            ["attr", {"r": a + 1}, "_backward"],
            ["call", {"r": a + 4}, [], {"d": []}],  # out._backward()
            ["attr", {"r": a}, "grad"],
        ]
    snaps = ctx.kernel.run("script", steps=steps, given=ctx.given, what=f"`{method}`")
    rule = "(wrap a plain number, int or float, in a Value: the lessons use a * 4 and self * -1)"
    for k, (x, n) in enumerate(cases):
        base = 1 + 7 * k
        expr = f"Value({num(x)}) {op} {n}"
        for i in range(base, base + 7):
            snap = snaps[i]
            if "e" in snap or "u" in snap:
                error = snaps[snap["u"]]["e"] if "u" in snap else snap["e"]
                what = expr if i <= base + 2 else f"backpropagating {expr}"
                fail(f"`{method}`: {what} (an int on the right) raised {error}\n{rule}")
        want = x + n if op == "+" else x * n
        got = snaps[base + 2].get("v")
        if not close(got, want):
            fail(
                f"`{method}`: {expr} (an int on the right) should be {num(want)}, "
                f"got {num(got)}\n{rule}"
            )
        grad, dgrad = snaps[base + 6].get("v"), 1.0 if op == "+" else float(n)
        if not close(grad, dgrad):
            fail(f"`{method}`: d({expr})/dx should be {num(dgrad)}, got {num(grad)}")


# ---- lesson 3: one elementary function ------------------------------------------------------


def _reused(op: str, x: float = 0.7) -> list[Case]:
    """x.op() + x and x.op() + x.op(): x gets gradient along two paths, so an op that sets
    its input's grad (=) instead of adding to it (+=) fails on every seed."""
    return [
        Case(Program(1, [Step(op, (0,)), Step("+", (1, 0))]), [x]),
        Case(Program(1, [Step(op, (0,)), Step(op, (0,)), Step("+", (1, 2))]), [x]),
    ]


def _one(op: str, x: float, seed: float = 1.0) -> Case:
    return Case(Program(1, [Step(op, (0,))]), [x], seed=seed)


def check_op(
    ctx,
    op: str,
    *,
    examples: Sequence[tuple[str, dict]] = (),
    at: Sequence[float] = (),
    positive: bool = False,
    hint: str = "",
) -> None:
    """``Value.op`` against the reference engine: the lesson's ``examples``, the op used
    twice on one input, alone at random inputs (from 1.0, then from random values of
    d(loss)/d(out); in [0.3, 2] if ``positive``), at the chosen points ``at`` (where
    ``hint`` is added to a failure at a large input), then in 80 random graphs with the
    arithmetic (backward())."""
    kernel, rng = ctx.kernel, ctx.rng
    cases = [*(example(e, inputs) for e, inputs in examples), *_reused(op)]
    for seed in [1.0] * 20 + [rng.choice((-0.5, 2.5, -3.0)) for _ in range(20)]:
        prog, leaves = single(op, (0,), rng, positive=positive)
        cases.append(Case(prog, leaves, seed=seed))
    try:
        check_cases(kernel, cases, backprop="closures", given=ctx.given, tested=(op,))
        points = [_one(op, x) for x in at]
        check_cases(kernel, points, backprop="closures", given=ctx.given, tested=(op,))
    except GradingFailure as exc:
        large = any(x in str(exc) for x in ("Overflow", "400", "800", "1000"))
        if hint and large:
            fail(f"{exc}\n({hint})")
        raise
    graphs = [
        Case(
            *random_program(
                rng,
                (*ARITHMETIC, op),
                n_leaves=rng.choice((1, 2, 3)),
                n_steps=rng.choice((1, 2, 3, 5, 7)),
                numbers="both",
            )
        )
        for _ in range(80)
    ]
    check_cases(kernel, graphs, backprop="backward", given=ctx.given, tested=(op,))


def check_raises(
    ctx, op: str, *, at: Sequence[float], error: str, rule: str, names_value: bool = True
) -> None:
    """``Value(x).op()`` at each point of ``at`` must raise ``error`` (``rule`` says why),
    with a message that names x (unless not ``names_value``)."""
    results = ctx.kernel.run(
        "graphs",
        value="Value",
        programs=[_one(op, x).spec() for x in at],
        backprop="closures",
        given=ctx.given,
        what=f"Value(x).{op}()",
    )
    for x, result in zip(at, results):
        expr = f"Value({num(x)}).{op}()"
        if result.get("failed") != "build":
            got = num(result["data"][-1]) if "data" in result else result.get("error")
            fail(f"`{op}`: {expr} should raise {error} ({rule}), got {got}")
        if result["type"] != error:
            fail(f"`{op}`: {expr} should raise {error} ({rule}), not {result['error']}")
        if names_value and num(abs(x)) not in result["message"]:
            fail(
                f"`{op}`: {expr} raised {error}, but its message should name the value "
                f"{num(x)}; it says {result['message'][:40]!r}"
            )


def check_at_zero(ctx, op: str, *, kink: str = "", defined: str = "") -> None:
    """``Value(0).op()`` is 0. With ``kink`` (the convention, in words), its gradient at
    0 and -0 is 0 too (from d(loss)/d(out) = 2); without, only its value is checked (its
    slope there may be infinite), and ``defined`` says where the op is defined."""
    points = (0.0, -0.0) if kink else (0.0,)
    results = ctx.kernel.run(
        "graphs",
        value="Value",
        programs=[_one(op, x, 2.0 if kink else 1.0).spec() for x in points],
        backprop="closures",
        given=ctx.given,
        what=f"Value(0).{op}()",
    )
    for result in results:
        if kink and "failed" in result:
            fail(f"`{op}`: Value(0).{op}() raised {result['error']}")
        if not kink and "data" not in result:
            fail(f"`{op}`: Value(0).{op}() should be 0 ({defined}), got {result.get('error')}")
        if not close(result["data"][-1], 0.0):
            fail(f"`{op}`: Value(0).{op}() should be 0, got {num(result['data'][-1])}")
        if kink and not close(result["grads"][0], 0.0):
            fail(
                f"`{op}`: at x = 0 {op} has a kink: {kink}, "
                f"got {num(result['grads'][0] / 2)} times out.grad"
            )


def check_neuron(
    ctx,
    function: str,
    *,
    example: tuple[list[float], list[float], float],
    trials: int = 32,
) -> None:
    """``function(xs, ws, b)`` = tanh(w . x + b) on leaf Values, at the lesson's
    ``example`` and at ``trials`` random points of 1 to 4 inputs: its output and every
    input's gradient after backward(), against the reference engine."""
    rng = ctx.rng
    cases = [example]
    for trial in range(trials):
        size = 1 + trial % 4
        cases.append(
            (
                [round(rng.uniform(-2.0, 2.0), 2) for _ in range(size)],
                [round(rng.uniform(-2.0, 2.0), 2) for _ in range(size)],
                round(rng.uniform(-1.5, 1.5), 2),
            )
        )
    results = ctx.kernel.run(
        "neuron",
        value="Value",
        function=function,
        given=ctx.given,
        cases=[{"xs": xs, "ws": ws, "b": b} for xs, ws, b in cases],
        what=f"{function}(xs, ws, b)",
    )
    for (xs, ws, b), got in zip(cases, results):
        where = f"with xs={xs}, ws={ws}, b={b}"
        vx, vw, vb = [RefValue(v) for v in xs], [RefValue(v) for v in ws], RefValue(b)
        o = sum((w * x for w, x in zip(vw, vx)), vb).tanh()
        o.backward()
        if got.get("failed") == "call":
            fail(f"{function} raised {got['error']}\n{where}")
        if not close(got["data"], o.data):
            fail(f"{function} should give o = {num(o.data)}, got {num(got['data'])}\n{where}")
        if "failed" in got:
            fail(f"backpropagating the {function} raised {got['error']}\n{where}")
        names = (
            [(f"x{i + 1}", v, g) for i, (v, g) in enumerate(zip(vx, got["grads"]["xs"]))]
            + [(f"w{i + 1}", v, g) for i, (v, g) in enumerate(zip(vw, got["grads"]["ws"]))]
            + [("b", vb, got["grads"]["b"])]
        )
        for name, truth, grad in names:
            if not close(grad, truth.grad):
                fail(
                    f"{function}: do/d{name} should be {num(truth.grad)}, got {num(grad)}\n{where}"
                )


LIBRARY: dict = {
    "check_method": check_method,
    "check_int_operand": check_int_operand,
    "check_op": check_op,
    "check_raises": check_raises,
    "check_at_zero": check_at_zero,
    "check_neuron": check_neuron,
}
