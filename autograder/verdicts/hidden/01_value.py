"""Hidden tests of 01_value, the Value node. Lesson 1 has no backward() yet: the probe
runs the student's ``_backward`` closures itself, outputs first, through any kind of
``_prev``. Each test grades one exercise: the operations it builds on are the course's
(``Given``), attached to the student's Value for that test only."""

from __future__ import annotations

import random
from collections.abc import Sequence

from .common import (
    REFLECTED,
    Case,
    Given,
    Kernel,
    Part,
    Program,
    RefValue,
    Step,
    check_cases,
    close,
    fail,
    num,
    random_program,
    shares,
    single,
)


def _given(name: str, body: str) -> Given:
    return Given(f"Value.{name}", name, body)


ADD = _given(
    "__add__",
    """
def __add__(self, other):
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data + other.data, (self, other), "+")

    def _backward():
        self.grad += out.grad
        other.grad += out.grad

    out._backward = _backward
    return out
""",
)
MUL = _given(
    "__mul__",
    """
def __mul__(self, other):
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data * other.data, (self, other), "*")

    def _backward():
        self.grad += other.data * out.grad
        other.grad += self.data * out.grad

    out._backward = _backward
    return out
""",
)
POW = _given(
    "__pow__",
    """
def __pow__(self, n):
    out = Value(self.data**n, (self,), f"**{n}")

    def _backward():
        self.grad += n * self.data ** (n - 1) * out.grad

    out._backward = _backward
    return out
""",
)
NEG = _given("__neg__", "def __neg__(self):\n    return self * -1\n")
SUB = _given("__sub__", "def __sub__(self, other):\n    return self + (-other)\n")
DIV = _given("__truediv__", "def __truediv__(self, other):\n    return self * other**-1\n")


def _cases(
    rng: random.Random,
    singles: list[tuple[str, tuple]],
    ops: tuple,
    graphs: int,
    numbers: str = "right",
    visible: Sequence[Case] = (),
) -> list[Case]:
    """The lesson's own examples, each op alone at random inputs (from a random
    d(loss)/d(output), to catch a missing ``* out.grad``), then random graphs: every other
    one built twice on the same inputs (the gradients must add up)."""
    cases = list(visible)
    for _ in range(12):
        for op, args in singles:
            program, leaves = single(op, args, rng)
            cases.append(Case(program, leaves, seed=rng.choice((1.0, -0.5, 2.5))))
    for g in range(graphs):
        program, leaves = random_program(
            rng,
            ops,
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((1, 2, 3, 5, 7)),
            numbers=numbers,
        )
        cases.append(Case(program, leaves, passes=1 + g % 2))
    return cases


def _visible(*examples: tuple[int, list[tuple[str, tuple]], list[float]]) -> list[Case]:
    return [
        Case(Program(n, [Step(op, args) for op, args in steps]), leaves)
        for n, steps, leaves in examples
    ]


def _part(
    kernel: Kernel,
    method: str,
    singles: list[tuple[str, tuple]],
    ops: tuple,
    graphs: int = 40,
    given: Sequence[Given] = (),
    numbers: str = "right",
    visible: Sequence[Case] = (),
) -> Part:
    """One method of an exercise: alone, then in random graphs of ``ops``, where every
    other op is given (the earlier exercises' and this one's methods already checked)."""

    def check() -> None:
        cases = _cases(kernel.rng, singles, ops, graphs, numbers, visible)
        check_cases(kernel, cases, backprop="closures", given=given, tested=(method,))

    return Part(f"`{method}`", (f"Value.{method}",), check)


def add_mul(kernel: Kernel) -> None:
    """``+`` and ``*`` between Values, with a number on the right, and a node used twice;
    each earns half the points (``*`` in graphs with the course's ``+``)."""
    add_visible = _visible((2, [("+", (0, 1))], [2.0, -3.0]))
    mul_visible = _visible(
        (2, [("*", (0, 1))], [2.0, -3.0]),
        (1, [("*", (0, 4.0))], [2.0]),
        (2, [("*", (0, 1)), ("+", (2, 0))], [2.0, 3.0]),
    )
    adds = [("+", (0, 1)), ("+", (0, 0)), ("+", (0, 2.5))]
    muls = [("*", (0, 1)), ("*", (0, 0)), ("*", (0, -1.5))]
    shares(
        kernel,
        [
            _part(kernel, "__add__", adds, ("+",), 60, visible=add_visible),
            _part(kernel, "__mul__", muls, ("+", "*"), 60, (ADD,), visible=mul_visible),
        ],
    )


def arithmetic(kernel: Kernel) -> None:
    """``**`` with a number exponent, unary minus, ``-`` and ``/`` (+ and * are given),
    each for its share: ``-`` is checked with the course's unary minus and ``/`` with the
    course's ``**``, whichever the student's builds on."""
    base = (ADD, MUL)
    powers = [("**", (0, 2)), ("**", (0, 3)), ("**", (0, -1)), ("**", (0, 0.5)), ("**", (0, 1.5))]
    subs = [("-", (0, 1)), ("-", (0, 0)), ("-", (0, 2.0))]
    divs = [("/", (0, 1)), ("/", (0, 0)), ("/", (0, -2.0))]
    shares(
        kernel,
        [
            _part(
                kernel,
                "__pow__",
                powers,
                ("+", "*", "**"),
                given=base,
                visible=_visible(
                    (1, [("**", (0, 3))], [2.0]),
                    (1, [("**", (0, -1))], [4.0]),
                    (1, [("**", (0, 0.5))], [4.0]),
                ),
            ),
            _part(
                kernel,
                "__neg__",
                [("neg", (0,))],
                ("+", "*", "neg"),
                given=base,
                visible=_visible((1, [("neg", (0,))], [2.0])),
            ),
            _part(
                kernel,
                "__sub__",
                subs,
                ("+", "*", "neg", "-"),
                given=(*base, NEG),
                visible=_visible((2, [("-", (0, 1))], [5.0, 3.0]), (1, [("-", (0, 2.0))], [5.0])),
            ),
            _part(
                kernel,
                "__truediv__",
                divs,
                ("+", "*", "**", "/"),
                given=(*base, POW),
                visible=_visible((2, [("/", (0, 1))], [3.0, 4.0]), (1, [("/", (0, 2.0))], [3.0])),
            ),
        ],
    )


def reflected(kernel: Kernel) -> None:
    """A plain number on the left: 2 + x, 2 * x, 2 - x, 2 / x (the rest is given), each
    for its share."""
    given = (ADD, MUL, POW, NEG, SUB, DIV)
    visible = {
        "+": _visible(
            (1, [("+", (2.0, 0))], [3.0]),
            (2, [("+", (0.0, 0)), ("+", (2, 1)), ("+", (3, 0))], [1.0, 2.0]),
        ),
        "*": _visible((1, [("*", (2.0, 0))], [3.0])),
        "-": _visible((1, [("-", (2.0, 0))], [3.0])),
        "/": _visible((1, [("/", (1.0, 0))], [4.0])),
    }
    lefts = {"+": (2.0,), "*": (-1.5,), "-": (2.0, -0.5), "/": (1.5, -2.0)}
    shares(
        kernel,
        [
            _part(
                kernel,
                REFLECTED[op],
                [(op, (number, 0)) for number in lefts[op]],
                (op, "neg", "**"),
                given=given,
                numbers="both",
                visible=visible[op],
            )
            for op in ("+", "*", "-", "/")
        ],
    )


# ---- backprop by hand ---------------------------------------------------------------------

NODES = ("L", "n", "s", "b", "x1w1", "x2w2", "x1", "w1", "x2", "w2")


def neuron_data(x1, w1, x2, w2, b) -> tuple[dict[str, float], dict[str, float]]:
    """The lesson's small neuron L = (x1*w1 + x2*w2 + b)**2: every node's data, and the
    true dL/d(node) from the reference engine."""
    v = {name: RefValue(x) for name, x in zip(("x1", "w1", "x2", "w2", "b"), (x1, w1, x2, w2, b))}
    v["x1w1"] = v["x1"] * v["w1"]
    v["x2w2"] = v["x2"] * v["w2"]
    v["s"] = v["x1w1"] + v["x2w2"]
    v["n"] = v["s"] + v["b"]
    v["L"] = v["n"] * v["n"]
    data = {name: node.data for name, node in v.items()}
    v["L"].backward()
    return data, {name: node.grad for name, node in v.items()}


def hand_backprop(kernel: Kernel) -> None:
    """The student's hand-written chain rule, on the grader's nodes at random inputs."""
    points = [(2.0, -3.0, 0.0, 1.0, 6.5)]
    points += [tuple(round(kernel.rng.uniform(-3, 3), 2) for _ in range(5)) for _ in range(25)]
    graphs = [neuron_data(*p) for p in points]
    results = kernel.run(
        "hand",
        function="backprop_by_hand",
        graphs=[data for data, _ in graphs],
        what="backprop_by_hand",
    )
    for point, (_, truth), got in zip(points, graphs, results):
        where = "at x1={}, w1={}, x2={}, w2={}, b={}".format(*map(num, point))
        if "failed" in got:
            error = got["error"]
            hint = ""
            if any(word in error for word in ("backward", "_prev", "label")):
                hint = (
                    "\n(set each .grad yourself from the nodes' .data and .grad: the "
                    "grader's nodes have nothing else)"
                )
            fail(f"backprop_by_hand raised {error} {where}{hint}")
        for name in NODES:
            if not close(got[name], truth[name]):
                fail(
                    f"backprop_by_hand: {name}.grad should be dL/d{name} = "
                    f"{num(truth[name])}, got {num(got[name])}\n{where}\n"
                    "(use the other nodes' .data and .grad, not numbers worked out once)"
                )


# What each test grades, as ``Given`` targets name it: the course's code for these is sent
# to the kernel only once the test has run (verdicts.Deferred).
EXERCISES = {
    "value_test_add_mul": ("Value.__add__", "Value.__mul__"),
    "value_test_arithmetic": (
        "Value.__pow__",
        "Value.__neg__",
        "Value.__sub__",
        "Value.__truediv__",
    ),
}

TESTS = {
    "value_test_add_mul": add_mul,
    "value_test_hand_backprop": hand_backprop,
    "value_test_arithmetic": arithmetic,
    "value_test_reflected": reflected,
}
