"""Hidden tests of lesson 02, backward and topological sort.

The students get the lesson-1 engine in a locked cell (closures without arguments,
``_prev = set(children)``, no backward) and write: ``topological_order`` (recursive DFS),
``backward``, ``zero_grad``, ``numerical_grad`` (central differences), ``grad_check`` and
``topological_order_iterative`` (an explicit stack; a chain 10,000 deep).

An order passes when it is *a* topological order: every node of the graph exactly once,
each after all of its parents. Which of the many valid orders a student produces, and how
(recursion, a stack of pairs, a stack of iterators, Kahn's algorithm), never matters.
"""

from __future__ import annotations

import math
import operator
import random
import sys

from .common import (
    BINARY,
    Program,
    RefValue,
    Step,
    build,
    call_backward,
    close,
    compare_program,
    compare_random_graphs,
    describe_error,
    fail,
    hidden_check,
    inputs_text,
    kit,
    num,
    random_program,
)

ARITHMETIC = ("+", "*", "-", "/", "**", "neg")
DEEP = 10_000  # deeper than Python's default recursion limit (1000) by ten times
BORROWED = ("graph_nodes", "run_closures")  # coursekit's walks: not the student's own


# ---- graphs to sort ----------------------------------------------------------------------


def _special_programs() -> list[tuple[Program, list[float]]]:
    """Small graphs that catch the classic slips of a graph search."""
    return [
        # a lone leaf: the order is just [x0]
        (Program(1, []), [1.5]),
        # x0 used as both parents of one node, then again
        (Program(1, [Step("*", (0, 0)), Step("+", (1, 0))]), [2.0]),
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
        # a wide sum of distinct leaves
        (
            Program(
                8,
                [Step("+", (i, i + 1)) if i == 0 else Step("+", (7 + i, i + 1)) for i in range(7)],
            ),
            [0.5 * (i + 1) for i in range(8)],
        ),
    ]


def _programs(seed: int, count: int) -> list[tuple[Program, list[float]]]:
    rng = random.Random(seed)
    programs = _special_programs()
    for _ in range(count):
        programs.append(
            random_program(
                rng,
                ARITHMETIC,
                n_leaves=rng.choice((1, 2, 3)),
                n_steps=rng.choice((1, 2, 3, 5, 7, 10, 14)),
                numbers="both",
            )
        )
    return programs


def _short(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _labelled(Value, program: Program, leaves: list[float]):
    """The program built with the student's engine; each node labelled with its expression."""
    _, nodes = build(Value, program, leaves)
    for i, node in enumerate(nodes):
        node.label = _short(program.text(i))
    return nodes


def _name(node) -> str:
    label = getattr(node, "label", "") or ""
    if label:
        return label
    return f"a node with data {num(getattr(node, 'data', float('nan')))}"


def order_problem(root, order) -> str | None:
    """Why ``order`` is not a topological order of ``root``'s graph (None when it is):
    a short reason, a newline, and the details (every line well under 90 characters)."""
    if not isinstance(order, (list, tuple)):
        return f"not a list\nit returned {_short(type(order).__name__)}, not a list of nodes"
    nodes = kit.graph_nodes(root)
    in_graph = {id(n) for n in nodes}
    where: dict[int, int] = {}
    for i, node in enumerate(order):
        if id(node) in where:
            return f"a node twice\n{_name(node)} is in it twice (keep a set of visited nodes)"
        if id(node) not in in_graph:
            return (
                f"a stranger\nit holds {_name(node)}, which is not in the graph of f\n"
                "(a list left over from an earlier call?)"
            )
        where[id(node)] = i
    for node in nodes:
        if id(node) not in where:
            return f"a node is missing\nit leaves out {_name(node)}"
    for node in nodes:
        for parent in node._prev:
            if where[id(parent)] > where[id(node)]:
                return (
                    f"a node before its parent\n{_name(node)} comes before its parent "
                    f"{_name(parent)}"
                )
    return None


def _with(first: str, error: BaseException) -> str:
    """``first`` and the error, on one line if they fit."""
    text = describe_error(error)
    return f"{first} {text}" if len(first) + len(text) < 88 else f"{first}\n{text}"


def _borrows(fn) -> str | None:
    """The coursekit walk that ``fn`` (or a function defined inside it) calls, if any."""
    if getattr(fn, "__module__", None) == "coursekit":
        return fn.__name__
    code = getattr(fn, "__code__", None)
    stack = [code] if code is not None else []
    while stack:
        code = stack.pop()
        for name in BORROWED:
            if name in code.co_names:
                return name
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return None


def _own_work(fn, what: str) -> None:
    helper = _borrows(fn)
    if helper:
        fail(f"{what} calls coursekit's {helper}: write the graph walk yourself")


def _check_orders(topo, Value, what: str, seed: int, count: int) -> None:
    _own_work(topo, what)
    for program, leaves in _programs(seed, count):
        nodes = _labelled(Value, program, leaves)
        where = f"f = {_short(program.text(), 84)}\nat {inputs_text(leaves)}"
        try:
            order = topo(nodes[-1])
        except Exception as exc:
            fail(_with(f"{what}(f) raised", exc) + f"\n{where}")
        problem = order_problem(nodes[-1], order)
        if problem:
            fail(f"{what}(f) is not a valid order: {problem}\n{where}")


# ---- exercise 1: topological_order -------------------------------------------------------


@hidden_check
def topological_order(topo, Value) -> None:
    """Valid orders on random graphs (shared nodes, twins with equal data, diamonds)."""
    _check_orders(topo, Value, "topological_order", seed=1201, count=150)


# ---- exercise 2: backward ----------------------------------------------------------------


def _same_graph_twice(Value) -> None:
    """One operation whose parents are leaves, backpropagated twice without zeroing: each
    leaf gets dy/dx twice. This holds only when backward() *sets* the output's grad to 1."""
    rng = random.Random(1203)
    cases = [("*", (0, 1)), ("+", (0, 1)), ("*", (0, 0)), ("**", (0, 3)), ("neg", (0,))]
    for op, args in cases * 4:
        step = Step(op, args)
        n = 1 + max(step.inputs())
        leaves = [rng.choice((-1, 1)) * rng.uniform(0.5, 2.0) for _ in range(n)]
        program = Program(n, [step])
        truth = program.run([RefValue(v) for v in leaves])
        truth[-1].backward()
        xs, nodes = build(Value, program, leaves)
        where = f"y = {program.text()} at {inputs_text(leaves)}"
        for _ in range(2):
            try:
                nodes[-1].backward()
            except Exception as exc:
                fail(_with("y.backward() raised", exc) + f"\n{where}")
        for i, x in enumerate(xs):
            want = 2 * truth[i].grad
            if not close(x.grad, want):
                fail(
                    f"y.backward() twice should add dy/dx{i} twice: "
                    f"expected {num(want)}, got {num(x.grad)}\n{where}\n"
                    "(backward() sets self.grad = 1.0; it does not add 1.0 to it)"
                )


@hidden_check
def backward(Value) -> None:
    """The student's backward() against the reference on special and random graphs, built
    twice from the same inputs every other time (the leaves' gradients must add up)."""
    _own_work(Value.backward, "backward()")
    for k, (program, leaves) in enumerate(_special_programs()[1:]):
        compare_program(Value, program, leaves, call_backward, passes=1 + k % 2)
    compare_random_graphs(Value, ARITHMETIC, seed=1202, graphs=150, numbers="both")
    _same_graph_twice(Value)


# ---- exercise 3: zero_grad ---------------------------------------------------------------


@hidden_check
def zero_grad(zero_grad, Value) -> None:
    """Every node of the graph (leaves, inner nodes, the output) ends with grad 0."""
    for program, leaves in _programs(1301, 60):
        nodes = _labelled(Value, program, leaves)
        root = nodes[-1]
        graph = kit.graph_nodes(root)
        for i, node in enumerate(graph):  # a gradient on every node, none of them 0
            node.grad = 1.0 + i
        data = [node.data for node in graph]
        where = f"f = {_short(program.text(), 84)}\nat {inputs_text(leaves)}"
        try:
            zero_grad(root)
        except Exception as exc:
            fail(_with("zero_grad(f) raised", exc) + f"\n{where}")
        for node, before in zip(graph, data):
            if node.data != before:
                fail(f"zero_grad(f) changed the data of {_name(node)}\n{where}")
            if node.grad != 0:
                kind = "the leaf" if not node._prev else "the inner node"
                if node is root:
                    kind = "the output"
                fail(f"zero_grad(f) left grad {num(node.grad)} on {kind} {_name(node)}\n{where}")


# ---- exercise 4: numerical_grad ------------------------------------------------------------


def _sin(v):
    return v.sin() if isinstance(v, RefValue) else math.sin(v)


def _cos(v):
    return v.cos() if isinstance(v, RefValue) else math.cos(v)


def _exp(v):
    return v.exp() if isinstance(v, RefValue) else math.exp(v)


def _smooth_function(rng: random.Random):
    """f(x0, ...) = sum of steep bowls k*(xi - ci)**2 plus smooth coupling terms, and a point
    just off the bowls' bottoms: f'' is huge there, f' moderate. One-sided differences are
    then off by h*k (at least 2e-4 for h = 1e-7), while central differences are exact on the
    bowls and within 1e-7 on the rest for any h from 1e-3 down to 1e-8."""
    n = rng.choice((1, 2, 3))
    ks = [rng.randrange(2000, 20000) for _ in range(n)]
    cs = [round(rng.uniform(-1.5, 1.5), 2) for _ in range(n)]
    xs = [round(c + rng.choice((-1, 1)) * rng.uniform(0.002, 0.02), 4) for c in cs]
    kinds = {
        "sin": (lambda a, b: _sin(a * b), "sin(x{a}*x{b})"),
        "prod": (operator.mul, "x{a}*x{b}"),
        "exp": (lambda a, b: _exp(0.5 * a), "exp(x{a}/2)"),
        "cube": (lambda a, b: a**3, "x{a}**3"),
        "cos": (lambda a, b: _cos(a + b), "cos(x{a} + x{b})"),
    }
    terms = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(sorted(kinds))
        terms.append(
            (kinds[kind][0], rng.randrange(n), rng.randrange(n), round(rng.uniform(-2, 2), 1), kind)
        )

    def f(*v):
        total = 0.0
        for k, c, x in zip(ks, cs, v):
            total = total + k * (x - c) ** 2
        for fn, a, b, s, _ in terms:
            total = total + s * fn(v[a], v[b])
        return total

    bowls = [
        f"{k}*(x{i} {'-' if c >= 0 else '+'} {abs(c):g})**2" for i, (k, c) in enumerate(zip(ks, cs))
    ]
    rest = [f"{s:g}*" + kinds[kind][1].format(a=a, b=b) for _, a, b, s, kind in terms]
    text = " + ".join(bowls) + "\n    + " + " + ".join(rest)  # two lines, each under 80
    return f, xs, text.replace("+ -", "- ")


def _truth(f, xs: list[float]) -> list[float]:
    vs = [RefValue(x) for x in xs]
    f(*vs).backward()
    return [v.grad for v in vs]


def _digits(x: object) -> str:
    return f"{x:.10g}" if isinstance(x, float) else num(x)


@hidden_check
def numerical_grad(numerical_grad) -> None:
    """Central differences, within 1e-5 + 1e-7*|df/dx| of the true partials."""
    rng = random.Random(1401)
    for _ in range(40):
        f, xs, text = _smooth_function(rng)
        where = f"f = {text}\nat {inputs_text(xs)}"
        try:
            got = numerical_grad(f, list(xs))
        except Exception as exc:
            fail(_with("numerical_grad(f, xs) raised", exc) + f"\n{where}")
        if not isinstance(got, (list, tuple)) or len(got) != len(xs):
            fail(f"numerical_grad(f, xs) should return a list of {len(xs)} numbers\n{where}")
        for i, (g, want) in enumerate(zip(got, _truth(f, xs))):
            if not close(g, want, rel=1e-7, abs_=1e-5):
                fail(
                    f"numerical_grad(f, xs)[{i}] is off: df/dx{i} = {_digits(want)}, "
                    f"got {_digits(g)}\n{where}"
                )


# ---- exercise 5: grad_check ----------------------------------------------------------------


def _plain(v):
    """What ``v.data`` slips do: a plain number that the engine cannot trace back."""
    return getattr(v, "data", v)


def _apply(op: str, args: list):
    if op in BINARY:
        return BINARY[op](*args)
    if op == "**":
        return args[0] ** args[1]
    return -args[0]


def _as_function(program: Program, leak: tuple[int, int] | None = None):
    """The program as f(*xs), for floats and Values alike; ``leak = (step, position)``
    passes that operand as a plain number, so backprop misses a path."""

    def f(*xs):
        nodes = list(xs)
        for i, step in enumerate(program.steps):
            args = step.operands(nodes)
            if leak is not None and i == leak[0]:
                args[leak[1]] = _plain(args[leak[1]])
            nodes.append(_apply(step.op, args))
        return nodes[-1]

    return f


def _steady(f, xs: list[float], truth: list[float]) -> bool:
    """Central differences with any h from 1e-4 to 1e-7 land within 1e-7 of the truth."""
    for h in (1e-4, 1e-5, 1e-6, 1e-7):
        for i in range(len(xs)):
            up, down = list(xs), list(xs)
            up[i] += h
            down[i] -= h
            try:
                slope = (f(*up) - f(*down)) / (2 * h)
            except (ZeroDivisionError, ValueError, OverflowError):
                return False
            if not close(slope, truth[i], rel=1e-8, abs_=1e-7):
                return False
    return True


def _grad_check_cases(seed: int, count: int):
    """(f, xs, text, expected result): half of them correct, half with a leaked operand."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        program, leaves = random_program(
            rng,
            ("+", "*", "-", "/", "**"),
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((2, 3, 4, 5)),
            numbers="both",
        )
        f = _as_function(program)
        truth = _truth(f, leaves)
        if not _steady(f, leaves, truth):
            continue
        text = program.text()
        if len(cases) % 2 == 0:
            cases.append((f, leaves, _short(text, 84), 0.0))
            continue
        spots = [
            (i, p)
            for i, s in enumerate(program.steps)
            for p in range(len(s.args))
            if s.is_node(p) and len(s.inputs()) == 2
        ]
        if not spots:
            continue
        i, p = rng.choice(spots)
        leaky = _as_function(program, (i, p))
        engine = _truth(leaky, leaves)
        expected = max(abs(a - b) for a, b in zip(engine, truth))
        if expected < 0.05:
            continue
        operand = program.text(program.steps[i].args[p])
        cases.append(
            (
                leaky,
                leaves,
                f"{_short(text, 84)}\nwith ({_short(operand)}).data in step {i + 1}",
                expected,
            )
        )
    return cases


@hidden_check
def grad_check(grad_check) -> None:
    """About 0 for functions the engine gets right; the largest |engine - numerical| when
    an operand is passed as .data (so that backward() misses a path)."""
    for f, xs, text, expected in _grad_check_cases(1501, 30):
        where = f"f = {text}\nat {inputs_text(xs)}"
        try:
            got = grad_check(f, list(xs))
        except Exception as exc:
            fail(_with("grad_check(f, xs) raised", exc) + f"\n{where}")
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            fail(f"grad_check(f, xs) should return a number, got {_short(repr(got))}\n{where}")
        if expected == 0.0 and not abs(got) < 1e-5:
            fail(
                f"grad_check(f, xs) should be about 0 (the engine is right here), "
                f"got {num(got)}\n{where}"
            )
        if expected and not close(got, expected, rel=1e-5, abs_=1e-5):
            fail(
                "grad_check(f, xs) should be the largest |engine - numerical| = "
                f"{num(expected)}, got {num(got)}\n{where}"
            )


# ---- exercise 6: topological_order_iterative ---------------------------------------------


def _deep_graphs(Value):
    """A chain DEEP additions long (v = v + x), and one of diamonds (v = v*0.5 + v*0.5)."""
    x = Value(1.0)
    x.label = "x"
    v = x
    for _ in range(DEEP):
        v = v + x
    yield v, f"a chain {DEEP:,} deep", f"v = x + x + ... + x ({DEEP + 1:,} terms)"
    v = Value(1.0)
    v.label = "x"
    for _ in range(DEEP // 6):
        v = v * 0.5 + v * 0.5
    yield v, f"a graph {DEEP // 3:,} deep", f"v = 0.5*v + 0.5*v, {DEEP // 6:,} times over"


def _call_depth(fn, arg):
    """``fn(arg)``, and the deepest nesting of Python calls it made (1: no inner calls).

    A recursive search nests one call per node of a chain, whatever the recursion limit
    (which a student may have raised); a loop with a stack nests a few at most."""
    depth = deepest = 0

    def profile(frame, event, _arg):
        nonlocal depth, deepest
        if event == "call":
            depth += 1
            deepest = max(deepest, depth)
        elif event == "return":
            depth -= 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        return fn(arg), deepest
    finally:
        sys.setprofile(previous)


@hidden_check
def topological_order_iterative(topo, Value) -> None:
    """Valid orders on random graphs, and on graphs ten times deeper than Python's default
    recursion limit, found without nesting a call per node."""
    _check_orders(topo, Value, "topological_order_iterative", seed=1601, count=100)
    for root, deep, text in _deep_graphs(Value):
        try:
            order, nesting = _call_depth(topo, root)
        except RecursionError:
            fail(f"recursion limit hit on {deep}: use your own stack")
        except Exception as exc:
            fail(_with("topological_order_iterative(v) raised", exc) + f"\non {deep}, {text}")
        if nesting > 200:
            fail(f"recursed {nesting:,} calls deep on {deep}: use a stack")
        problem = order_problem(root, order)
        if problem:
            fail(f"topological_order_iterative(v) is not a valid order: {problem}\non {text}")
