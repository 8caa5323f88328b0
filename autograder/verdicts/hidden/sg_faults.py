"""Hidden tests of 07_set_gradients' faulty engine (exercises 4 and 5): which operations
of ``Buggy`` are faulty (an answer, graded here: the key never enters the kernel), and
the student's ``class Fixed(Buggy)``, one test per fault.

Each fix is graded on graphs built with ``Fixed`` and compared with refgrad. The graphs
of one fault's test avoid the other faults, or have the course's fix attached for them
(``Given``: only the product's, to the reflected division, which may be built on it), so
that each fault costs only its own point. A message names an operation only when the
student's ``Fixed`` defines that method itself: a fault left alone is described by its
kind, never by name, so that the feedback does not answer exercise 4.
"""

from __future__ import annotations

import random

from .common import (
    Case,
    Given,
    GradingFailure,
    Kernel,
    Program,
    Step,
    check_cases,
    fail,
    random_program,
)

# The names a student may give (the notebook's OPS): the course engine's operations.
OPS = (
    "__add__",
    "__mul__",
    "__pow__",
    "__neg__",
    "__sub__",
    "__truediv__",
    "__radd__",
    "__rmul__",
    "__rsub__",
    "__rtruediv__",
    "tanh",
    "exp",
    "relu",
)
FAULTY = {"__mul__", "tanh", "__rtruediv__"}  # the key: never sent to the kernel
BUILT_ON_MUL = {"__neg__", "__sub__", "__truediv__", "__rmul__", "__rsub__"}

NOT_ANSWERED = "faulty_ops is not answered yet: replace raise NotImplementedError()"


def form_problem(value: object) -> str | None:
    """Why ``faulty_ops`` is not a well-formed answer (the visible check's sentences)."""
    if value is None:
        return NOT_ANSWERED
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(
        isinstance(v, str) for v in value
    ):
        return 'faulty_ops must be a list of method names in quotes, such as ["__add__", "exp"]'
    names = [v.strip() for v in value]
    for name in names:
        if name not in OPS:
            return f"faulty_ops: {name[:16]!r} is not one of the names in OPS: copy names from OPS"
        if names.count(name) > 1:
            return f"faulty_ops names {name!r} twice: name each faulty method once"
    if len(names) != 3:
        return f"faulty_ops should name 3 operations, got {len(names)}: name one method per fault"
    return None


def faulty(kernel: Kernel) -> None:
    """The three faulty operations, in any order."""
    value = kernel.run("sg_answers", names=["faulty_ops"], what="faulty_ops")["faulty_ops"]
    problem = form_problem(value)
    if problem is not None:
        fail(problem)
    names = {v.strip() for v in value}
    if names == FAULTY:
        return
    hint = (
        "grad_check every probe with engine=Buggy, and probes that use an input twice: "
        "each check that fails points to a fault"
    )
    if names & BUILT_ON_MUL and "__mul__" not in names:
        hint = (
            "an operation built on a faulty one shows its fault too: name the method "
            "whose own code is wrong"
        )
    fail(f"faulty_ops: these are not the three faulty operations\n({hint})")


# ---- exercise 5: the fixes ---------------------------------------------------------------

MUL_FIX = Given(
    "Fixed.__mul__",
    "__mul__",
    """
def __mul__(self, other):
    other = self._node(other)
    out = type(self)(self.data * other.data, (self, other), "*")

    def _backward():
        self.grad += other.data * out.grad
        other.grad += self.data * out.grad

    out._backward = _backward
    return out
""",
)
NOT_DEFINED = "Fixed is not defined: its cell stopped early (still NotImplementedError?)"
LEFT = {
    "tanh": "Fixed still has Buggy's wrong local derivative: override the method at fault",
    "__mul__": (
        "Fixed still has Buggy's fault that sets a gradient (=) instead of adding to it "
        "(+=): override the method at fault"
    ),
    "__rtruediv__": (
        "Fixed still lacks Buggy's missing reflected operation (a number on the left of "
        "an operator): add that method"
    ),
}


def fixed_method(kernel: Kernel, method: str, given: list[Given], used: tuple = ()) -> None:
    """Fixed is a class that defines ``method`` itself, whose nodes stay in Fixed (with
    the course's fixes ``given`` in place, as in the test's graphs), and so do those of
    every method of its own that the test's graphs use (``used``)."""
    info = kernel.run(
        "sg_overrides", cls="Fixed", base="Buggy", names=list(OPS), given=given, what="Fixed"
    )
    if not info["defined"]:
        fail(NOT_DEFINED)
    if not info["class"]:
        fail(f"Fixed should be a class, class Fixed(Buggy): ..., got {info['what']}")
    if method not in info["own"]:
        fail(LEFT[method])
    for name in dict.fromkeys((method, *used)):
        made = info["made"].get(name, "Fixed")
        if not made.startswith("raised") and made != "Fixed":
            fail(
                f"Fixed.{name} makes a {made[:20]} node: make it with type(self)(...), so "
                "that the operations after it are Fixed's too"
            )


def check_fix(
    kernel: Kernel, method: str, cases: list[Case], given: list[Given], tested: tuple
) -> None:
    """Fixed defines ``method``; then every case, built with Fixed (the other faults
    fixed by the course's code), agrees with refgrad. Cases with a seed other than 1
    run the closures from that d(loss)/d(output), the others backward()."""
    used = tuple(dict.fromkeys(m for case in cases for m in case.program.methods()))
    fixed_method(kernel, method, given, used)
    seeded = [c for c in cases if c.seed != 1.0]
    try:
        if seeded:
            check_cases(
                kernel, seeded, backprop="closures", given=given, tested=tested, value="Fixed"
            )
        plain = [c for c in cases if c.seed == 1.0]
        check_cases(kernel, plain, given=given, tested=tested, value="Fixed")
    except GradingFailure as exc:
        text = str(exc)
        if not any(line.startswith("(") for line in text.splitlines()):
            text += f"\n({_fix_hint(text, method)})"
        fail(f"Fixed: {text}")


FIX_HINTS = {
    "tanh": "d tanh(x)/dx = 1 - t**2 with t = tanh(x), added to self.grad with +=",
    "__mul__": "d(a * b)/da = b and d(a * b)/db = a, each added with += to its grad",
    "__rtruediv__": "other / self: the number is on the left, self on the right",
}


def _fix_hint(message: str, method: str) -> str:
    """What to look at when the numbers point to no known slip."""
    if "raised" in message and "Buggy" in message:
        return (
            "a node of the wrong class: make nodes with type(self)(...), and numbers into "
            "nodes with self._node(other)"
        )
    if "raised" in message:
        return "build this expression with Fixed Values in your notebook: it fails there too"
    if f"`{method}`" in message:
        return FIX_HINTS[method]
    return "the method named above gets this wrong: check its value and its _backward"


def _programs(
    rng: random.Random, ops: tuple, count: int, needs: tuple, avoid: tuple = ()
) -> list[Case]:
    """``count`` random graphs of ``ops`` that use one of the methods ``needs`` and none
    of ``avoid``."""
    out = []
    while len(out) < count:
        program, leaves = random_program(
            rng,
            ops,
            n_leaves=rng.choice((1, 2, 3)),
            n_steps=rng.choice((1, 2, 3, 5, 7)),
            numbers="both",
        )
        methods = set(program.methods())
        if methods & set(needs) and not methods & set(avoid):
            out.append(Case(program, leaves))
    return out


def _at(rng: random.Random, n: int) -> list[float]:
    return [round(rng.choice((-1, 1)) * rng.uniform(0.3, 2.0), 3) for _ in range(n)]


def fix_derivative(kernel: Kernel) -> None:
    """tanh alone (from random d(loss)/d(out) too), reused, and inside random graphs of
    +, ** and tanh (none of them faulty in Buggy)."""
    rng = kernel.rng
    cases = [
        Case(Program(1, [Step("tanh", (0,))]), _at(rng, 1), seed=rng.choice((1.0, -2.5, 0.5)))
        for _ in range(10)
    ]
    cases += [
        Case(Program(1, [Step("tanh", (0,)), Step("+", (1, 0))]), _at(rng, 1)),
        Case(Program(1, [Step("tanh", (0,)), Step("tanh", (0,)), Step("+", (1, 2))]), [0.7]),
        Case(Program(2, [Step("+", (0, 1)), Step("tanh", (2,)), Step("tanh", (3,))]), _at(rng, 2)),
    ]
    cases += _programs(rng, ("+", "**", "tanh"), 50, needs=("tanh",))
    check_fix(kernel, "tanh", cases, [], ("tanh",))


def fix_accumulate(kernel: Kernel) -> None:
    """Products whose operands are used more than once, and random graphs of the
    arithmetic (- and / are built on *), never a number divided by a node."""
    rng = kernel.rng
    cases = [
        Case(Program(1, [Step("*", (0, 0))]), _at(rng, 1)),
        Case(Program(2, [Step("*", (0, 1)), Step("+", (2, 0))]), _at(rng, 2)),
        Case(Program(2, [Step("*", (0, 1)), Step("*", (2, 0))]), _at(rng, 2)),
        Case(Program(2, [Step("+", (0, 1)), Step("*", (0, 2))]), _at(rng, 2)),
        Case(Program(1, [Step("*", (2.0, 0)), Step("*", (1, 0))]), _at(rng, 1)),
        Case(Program(2, [Step("-", (0, 1)), Step("*", (2, 1))]), _at(rng, 2)),
    ]
    cases += _programs(
        rng,
        ("+", "*", "-", "neg", "/", "**"),
        60,
        needs=("__mul__", "__rmul__"),
        avoid=("__rtruediv__",),
    )
    check_fix(kernel, "__mul__", cases, [], ("__mul__", "__rmul__"))


def fix_reflected(kernel: Kernel) -> None:
    """A number divided by a node, alone and in random graphs."""
    rng = kernel.rng
    cases = [Case(Program(1, [Step("/", (c, 0))]), _at(rng, 1)) for c in (2.0, -1.5, 0.5, 3.0)]
    cases += [
        Case(Program(1, [Step("/", (2.0, 0)), Step("+", (1, 0))]), _at(rng, 1)),
        Case(Program(2, [Step("*", (0, 1)), Step("/", (1.5, 2))]), _at(rng, 2)),
    ]
    cases += _programs(rng, ("+", "*", "-", "/"), 50, needs=("__rtruediv__",))
    check_fix(kernel, "__rtruediv__", cases, [MUL_FIX], ("__rtruediv__",))
