"""Hidden tests of 02_backward: topological sort, backward(), zero_grad, numerical
gradients, grad_check and the iterative sort (numerical_grad and grad_check are graded in
gradcheck.py).

The students start from their own lesson-1 engine (the cell tagged ``engine``); grading
runs the course's lesson 1 there (``ENGINE``: closures without arguments, ``_prev =
set(children)``), and the students write the rest. Each test grades one exercise: what it
builds on is the course's own version (``Given``), attached for that test only, so a
broken sort costs the sort's points and not those of backward() or grad_check.

An order passes when it is *a* topological order: every node of the graph exactly once,
each after all of its parents. Which of the many valid orders a student produces, and how
(recursion, a stack of pairs, a stack of iterators, Kahn's algorithm), never matters.
"""

from __future__ import annotations

import random

from .backward_givens import TOPOLOGICAL_ORDER
from .common import (
    ARITHMETIC,
    Case,
    Kernel,
    Program,
    RefValue,
    Step,
    close,
    fail,
    inputs_text,
    num,
    random_program,
    short,
)
from .gradcheck import grad_check, numerical_grad
from .lessons import lesson_engine

ENGINE = lesson_engine("02_backward", "Value")  # the course's lesson 1, when graded
DEEP = 10_000  # deeper than Python's default recursion limit (1000) by ten times


# ---- graphs to sort -------------------------------------------------------------------------


def special_programs() -> list[tuple[Program, list[float]]]:
    """Small graphs that catch the classic slips of a graph search."""
    chain = [Step("+", (0, 1))] + [Step("+", (7 + i, i + 1)) for i in range(1, 7)]
    return [
        (Program(1, []), [1.5]),  # a lone leaf: the order is just [x0]
        (Program(1, [Step("*", (0, 0)), Step("+", (1, 0))]), [2.0]),  # x0 used thrice
        # twins: two different nodes with the same data (x0 + 1 twice), multiplied
        (Program(1, [Step("+", (0, 1.0)), Step("+", (0, 1.0)), Step("*", (1, 2))]), [0.5]),
        # a diamond: a = x0 * x1 feeds two nodes, which meet again
        (
            Program(
                2, [Step("*", (0, 1)), Step("+", (2, 0)), Step("*", (2, 1)), Step("-", (3, 4))]
            ),
            [1.5, -0.5],
        ),
        # one node reused by every later step
        (
            Program(
                2,
                [
                    Step("+", (0, 1)),
                    Step("*", (2, 2)),
                    Step("+", (3, 2)),
                    Step("*", (4, 2)),
                    Step("/", (5, 2)),
                ],
            ),
            [0.7, 0.6],
        ),
        (Program(8, chain), [0.5 * (i + 1) for i in range(8)]),  # a wide sum of leaves
        # the lesson's examples: (a * b + c) ** 2 and x * x + x
        (Program(3, [Step("*", (0, 1)), Step("+", (3, 2)), Step("**", (4, 2))]), [2.0, -3.0, 10.0]),
    ]


def programs(rng: random.Random, count: int) -> list[tuple[Program, list[float]]]:
    out = special_programs()
    for _ in range(count):
        out.append(
            random_program(
                rng,
                ARITHMETIC,
                n_leaves=rng.choice((1, 2, 3)),
                n_steps=rng.choice((1, 2, 3, 5, 7, 10, 14)),
                numbers="both",
            )
        )
    return out


def deep_program(kind: str, n: int) -> Program:
    """v = x + x + ... + x (``chain``, n steps) or v = 0.5*v + 0.5*v, n times over
    (``diamonds``, 3n steps): deeper than any recursion limit the probe allows."""
    if kind == "chain":
        return Program(1, [Step("+", (k, 0)) for k in range(n)])
    steps = []
    for k in range(n):
        v = 3 * k
        steps += [Step("*", (v, 0.5)), Step("*", (v, 0.5)), Step("+", (v + 1, v + 2))]
    return Program(1, steps)


def needed(program: Program) -> set[int]:
    """The program's nodes its output depends on (itself included): what any order of
    the output's graph must hold, whatever the student's ``_prev`` says."""
    last = program.n_leaves + len(program.steps) - 1
    out = {last}
    for i in range(last, program.n_leaves - 1, -1):
        if i in out:
            out.update(program.steps[i - program.n_leaves].inputs())
    return out


def order_problem(entry: dict, program: Program, named: bool = True) -> str | None:
    """Why the probe's order is not a topological order (None when it is): of the
    program the grader built, first, then of the graph found through ``_prev``. A short
    reason, then details, every line well under 90 characters."""
    nodes = entry["nodes"]

    def name(position: int) -> str:
        index, data, _ = nodes[position]
        if named and index is not None:
            return short(program.text(index), 30)
        return f"the node with data {num(data)}"

    if "returned" in entry:
        return f"not a list\nit returned a {short(entry['returned'], 30)}, not a list of nodes"
    order = entry["order"]
    if -1 in order:
        return (
            f"a stranger\nit holds a node with data {entry['strangers'][0]}, which is not "
            "in the graph of f\n(a list left over from an earlier call?)"
        )
    seen: set[int] = set()
    for position in order:
        if position in seen:
            return f"a node twice\n{name(position)} is in it twice (keep a set of visited nodes)"
        seen.add(position)
    at = entry["program"]
    must = sorted(needed(program))
    missing = [i for i in must if at[i] not in seen]
    built = set(at)
    missing += [p for p in range(len(nodes)) if p not in seen and p not in built]
    if missing:
        first = missing[0]
        return f"a node is missing\nit leaves out {name(at[first] if first in must else first)}"
    where = {p: i for i, p in enumerate(order)}
    edges = [
        (at[i], at[j])
        for j in must
        if j >= program.n_leaves
        for i in program.steps[j - program.n_leaves].inputs()
    ]
    edges += [
        (parent, position)
        for position, (_, _, parents) in enumerate(nodes)
        for parent in parents
        if parent in where and position in where
    ]
    for parent, child in edges:
        if where[parent] > where[child]:
            return f"a node before its parent\n{name(child)} comes before its parent {name(parent)}"
    return None


def check_orders(kernel: Kernel, function: str, count: int, deep: list = ()) -> None:
    """``function``'s orders of ``count`` random graphs, then (once those are valid) of the
    ``deep`` ones, in a request of their own: a sort that repeats nodes (no visited set)
    does exponential work on the deep diamonds, and would spend the whole timeout there
    before the random graphs could say what is wrong."""
    cases = [
        (program, leaves, f"f = {short(program.text(), 84)}\nat {inputs_text(leaves)}")
        for program, leaves in programs(kernel.rng, count)
    ]
    _check_sorted(kernel, function, cases, named=True)
    if deep:
        cases = [
            (
                deep_program(kind, n),
                [1.0],
                f"on a chain {n:,} deep: v = x + x + ... + x"
                if kind == "chain"
                else f"on a graph {2 * n:,} deep: v = 0.5*v + 0.5*v, {n:,} times over",
            )
            for kind, n in deep
        ]
        _check_sorted(kernel, function, cases, named=False)


def _check_sorted(kernel: Kernel, function: str, cases: list, named: bool) -> None:
    """Fail on the first of ``cases`` (program, leaves, where) that ``function`` does not
    sort; ``named``: the random graphs, whose nodes messages name by their code."""
    specs = [
        program.spec(leaves)
        if named
        else {
            "leaves": leaves,
            "steps": [[s.op, list(s.args)] for s in program.steps],
            "deep": True,
        }
        for program, leaves, _ in cases
    ]
    results = kernel.run(
        "order", value="Value", function=function, what=f"{function}(f)", programs=specs
    )
    for (program, _, where), entry in zip(cases, results):
        if entry.get("borrowed"):
            fail(
                f"{function} calls coursekit's {_walk(entry['borrowed'])}: write the graph "
                "walk yourself"
            )
        if "failed" in entry:
            fail(f"{function}(f) raised {entry['error']}\n{where}")
        deep_text = where.split(":")[0].removeprefix("on ")
        if entry.get("recursion"):
            fail(f"{function} hit the recursion limit on {deep_text}: use a stack")
        if entry.get("limit"):
            fail(f"{function} changed the recursion limit on {deep_text}: use a stack instead")
        problem = order_problem(entry, program, named=named)
        if problem:
            fail(f"{function}(f) is not a valid order: {problem}\n{where}")


def _walk(borrowed: list[str]) -> str:
    """The one of coursekit's walks to name: run_closures, the closer to a backward(), if it
    was called."""
    return "run_closures" if "run_closures" in borrowed else borrowed[0]


# ---- exercise 1: topological_order ----------------------------------------------------------


def topological_order(kernel: Kernel) -> None:
    """Valid orders on special and random graphs (shared nodes, twins, diamonds)."""
    check_orders(kernel, "topological_order", 150)


# ---- exercise 2: backward -------------------------------------------------------------------


def backward(kernel: Kernel) -> None:
    """backward() against the reference on special and random graphs (every other one built
    twice from the same inputs: the inputs' gradients must add up), and on one-step graphs
    backpropagated twice (each input gets dy/dx twice: backward() *sets* self.grad = 1).
    The topological sort is the course's."""
    rng = kernel.rng
    cases = [
        Case(program, leaves, passes=1 + k % 2)
        for k, (program, leaves) in enumerate(special_programs()[1:])
    ]
    for g in range(150):
        program, leaves = random_program(
            rng,
            ARITHMETIC,
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((1, 2, 3, 5, 7)),
            numbers="both",
        )
        cases.append(Case(program, leaves, passes=1 + g % 2))
    for op, args in [
        ("*", (0, 1)),
        ("+", (0, 1)),
        ("*", (0, 0)),
        ("**", (0, 3)),
        ("neg", (0,)),
    ] * 4:
        step = Step(op, args)
        n = 1 + max(step.inputs())
        leaves = [rng.choice((-1, 1)) * rng.uniform(0.5, 2.0) for _ in range(n)]
        cases.append(Case(Program(n, [step]), leaves, repeat=2))
    results = kernel.run(
        "graphs",
        value="Value",
        programs=[c.spec() for c in cases],
        given=[TOPOLOGICAL_ORDER],
        watch=True,
        what="backward()",
    )
    if results and results[0].get("borrowed"):
        fail(
            f"backward() calls coursekit's {_walk(results[0]['borrowed'])}: walk the graph "
            "in your own topological order"
        )
    for case, result in zip(cases, results):
        _check_backward(case, result)


def _check_backward(case: Case, result: dict) -> None:
    program, leaves = case.program, case.leaves
    where = f"with f = {short(program.text(), 60)} at {inputs_text(leaves)}"
    if "failed" in result:
        fail(f"backward() raised {result['error']}\n{where}")
    _, want = case.reference()
    got = result["grads"]
    bad = [j for j, (g, w) in enumerate(zip(got, want)) if not close(g, w)]
    if not bad:
        return
    j = bad[0]
    hint = ""
    numbers = [g for g in got if isinstance(g, (int, float))]
    if numbers and not any(numbers) and any(want):
        hint = "no input got any gradient: does backward() set self.grad = 1.0 first?"
    elif case.repeat > 1 and close(got[j], want[j] * 1.5):
        hint = "backward() sets self.grad = 1.0; it does not add 1.0 to it"
    elif _forward_order(case) is not None and all(
        close(g, w) for g, w in zip(got, _forward_order(case))
    ):
        hint = "the closures must run in REVERSED topological order, outputs first"
    how = (
        " after two backward() calls"
        if case.repeat > 1
        else (" after building f twice on the same inputs" if case.passes > 1 else "")
    )
    fail(
        f"backward(): df/dx{j}{how} should be {num(want[j])}, got {num(got[j])}\n{where}"
        + (f"\n({hint})" if hint else "")
    )


def _forward_order(case: Case) -> list[float] | None:
    """The inputs' gradients when the closures run parents first (the order not reversed)."""
    try:
        nodes = case.program.run([RefValue(v) for v in case.leaves])
    except (ArithmeticError, ValueError):
        return None
    from .common import ref

    root = nodes[-1]
    root.grad = 1.0
    for node in ref.topological_order(root):
        if node._backward is not None:
            node._backward(node.grad)
    return [x.grad * case.passes for x in nodes[: len(case.leaves)]]


# ---- exercise 3: zero_grad ------------------------------------------------------------------


def zero_grad(kernel: Kernel) -> None:
    """Every node of the graph (leaves, inner nodes, the output) ends with grad 0 and its
    data unchanged. The topological sort is the course's."""
    cases = programs(kernel.rng, 60)
    results = kernel.run(
        "zero_grad",
        value="Value",
        function="zero_grad",
        programs=[p.spec(leaves) for p, leaves in cases],
        given=[TOPOLOGICAL_ORDER],
        what="zero_grad(f)",
    )
    for (program, leaves), entry in zip(cases, results):
        where = f"f = {short(program.text(), 84)}\nat {inputs_text(leaves)}"
        if "failed" in entry:
            fail(f"zero_grad(f) raised {entry['error']}\n{where}")
        must = needed(program)  # the program's nodes the output depends on, and the rest
        for node in entry["nodes"]:
            if node["index"] is not None and node["index"] not in must:
                continue
            name = (
                short(program.text(node["index"]), 30)
                if node["index"] is not None
                else f"the node with data {num(node['data'])}"
            )
            if node["after"] != node["data"]:
                fail(f"zero_grad(f) changed the data of {name}: it should only set grads\n{where}")
            if node["grad"] != 0:
                kind = (
                    "the output"
                    if node["root"]
                    else ("the leaf" if node["leaf"] else "the inner node")
                )
                fail(
                    f"zero_grad(f) should leave grad 0 on {kind} {name}, got "
                    f"{num(node['grad'])}\n{where}"
                )


# ---- exercise 6: topological_order_iterative ------------------------------------------------


def topological_order_iterative(kernel: Kernel) -> None:
    """Valid orders on random graphs, and on graphs ten times deeper than Python's default
    recursion limit, sorted under a recursion limit a few hundred calls deep (which the
    sort must leave as it is): a search that nests a call per node fails."""
    check_orders(
        kernel, "topological_order_iterative", 100, deep=[("chain", DEEP), ("diamonds", DEEP // 6)]
    )


# What each test grades, as ``Given`` targets name it: the course's code for these is sent
# to the kernel only once the test has run (verdicts.Deferred).
EXERCISES = {
    "backward_test_topological_order": ("topological_order",),
    "backward_test_backward": ("Value.backward",),
    "backward_test_numerical_grad": ("numerical_grad",),
}

TESTS = {
    "backward_test_topological_order": topological_order,
    "backward_test_backward": backward,
    "backward_test_zero_grad": zero_grad,
    "backward_test_numerical_grad": numerical_grad,
    "backward_test_grad_check": grad_check,
    "backward_test_topological_order_iterative": topological_order_iterative,
}
