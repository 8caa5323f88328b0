"""What every lesson's hidden tests share: the reference engine, random expression graphs,
and comparisons that report, in a few short lines, which expression and input differ.

A graph is a ``Program``: a list of steps, each an operator applied to earlier nodes or
plain numbers. It runs on any engine through Python's operators and method names, so a
student's engine and the reference one are built from the same program. Nothing here
looks at how a student stores parents (set, tuple, list), labels ops, or orders nodes.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import operator
import os
import random
import secrets
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_LINE = 88  # nbgrader validate cuts output lines at 90 characters

# ---- the reference engine, loaded by path under a private name -----------------------


def _load_reference():
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.normpath(os.path.join(here, "..", "..", "source", ".reference", "refgrad"))
    name = f"_refgrad_{secrets.token_hex(8)}"
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package  # only while loading, for the package's relative imports
    try:
        spec.loader.exec_module(package)
        nn = importlib.import_module(f"{name}.nn")
        return package, nn
    finally:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]


def _load_file(path: str):
    spec = importlib.util.spec_from_file_location(f"_kit_{secrets.token_hex(8)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref, ref_nn = _load_reference()
RefValue = ref.Value
# The course's own copy of the students' helper module (never the submission's copy).
kit = _load_file(
    os.path.normpath(
        os.path.join(
            os.path.dirname(os.path.abspath(__file__)),
            "..",
            "..",
            "source",
            ".shared",
            "coursekit.py",
        )
    )
)


# ---- failures --------------------------------------------------------------------------


class GradingFailure(AssertionError):
    """A failed hidden check. Shown as its message only: no traceback, no grader source."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lines = wrap(message)

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead
        return ["Hidden test failed: " + self.lines[0], *("  " + line for line in self.lines[1:])]


def wrap(message: str, width: int = MAX_LINE - 22) -> list[str]:
    lines: list[str] = []
    for paragraph in str(message).splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, width) or [""])
    return lines


def fail(message: str) -> None:
    raise GradingFailure(message)


def hidden_check(fn: Callable) -> Callable:
    """Mark a lesson's public check: any error it did not expect becomes a plain
    GradingFailure too, so no traceback (and no grader source) reaches a student."""

    @functools.wraps(fn)
    def check(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except GradingFailure:
            raise
        except Exception as exc:
            raise GradingFailure(f"the hidden test stopped on {describe_error(exc)}") from None

    return check


def num(x: float) -> str:
    """A number short enough for a message."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    try:
        return f"{x:.6g}"
    except (TypeError, ValueError):
        return repr(x)[:30]


def close(got: object, expected: float, rel: float = 1e-6, abs_: float = 1e-8) -> bool:
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return False
    if math.isnan(expected):
        return math.isnan(got)
    if math.isinf(expected):
        return got == expected
    return abs(got - expected) <= abs_ + rel * max(1.0, abs(expected))


def describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) < 70 else text[:67] + "..."


# ---- random expression graphs ----------------------------------------------------------

BINARY: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}
NUMBERS = (-2.0, -1.5, -0.5, 0.5, 1.5, 2.0, 3.0)
EXPONENTS = (2, 3, -1, 0.5, 1.5, -2)


@dataclass(frozen=True)
class Step:
    """``op`` applied to ``args``: each an int (an earlier node) or a float (a number);
    the exponent of ``**`` is always a number, even when it is an int."""

    op: str
    args: tuple

    def is_node(self, i: int) -> bool:
        """Whether ``args[i]`` is an index of an earlier node (not a plain number)."""
        return isinstance(self.args[i], int) and not (self.op == "**" and i == 1)

    def inputs(self) -> list[int]:
        """The indices of the earlier nodes this step reads."""
        return [a for i, a in enumerate(self.args) if self.is_node(i)]

    def operands(self, values: Sequence) -> list:
        """The args, with each node index replaced by ``values[index]``."""
        return [values[a] if self.is_node(i) else a for i, a in enumerate(self.args)]


@dataclass
class Program:
    n_leaves: int
    steps: list[Step]

    def run(self, leaves: Sequence) -> list:
        """Every node: the leaves, then one per step. Works with any engine's Values."""
        nodes = list(leaves)
        for step in self.steps:
            nodes.append(apply(step, nodes))
        return nodes

    def text(self, index: int | None = None) -> str:
        """The expression of node ``index`` (the output by default), as Python would read it."""
        names = [f"x{i}" for i in range(self.n_leaves)]
        for step in self.steps:
            names.append(render(step, names))
        return names[-1 if index is None else index]


def apply(step: Step, nodes: list):
    args = step.operands(nodes)
    if step.op in BINARY:
        return BINARY[step.op](*args)
    if step.op == "**":
        return args[0] ** args[1]
    if step.op == "neg":
        return -args[0]
    return getattr(args[0], step.op)()


def render(step: Step, names: list[str]) -> str:
    def arg(i: int) -> str:
        if not step.is_node(i):
            return num(step.args[i])
        s = names[step.args[i]]
        return s if s.isidentifier() or _is_call(s) else f"({s})"

    if step.op in BINARY:
        return f"{arg(0)} {step.op} {arg(1)}"
    if step.op == "**":
        return f"{arg(0)}**{arg(1)}"
    if step.op == "neg":
        return f"-{arg(0)}"
    return f"{arg(0)}.{step.op}()"


def _is_call(s: str) -> bool:
    return s.endswith("()") and s.count("(") == 1


def _safe(op: str, values: Sequence[float], exponent: float | None = None) -> bool:
    """Keep every step well inside its domain, so any correct formula agrees closely."""
    x = values[0]
    if op == "/":
        return abs(values[1]) >= 0.25
    if op == "**":
        if exponent is not None and not float(exponent).is_integer():
            return x >= 0.2
        return abs(x) >= 0.25  # at 0 the slope of x**n is 0, inf or undefined
    if op in ("log", "sqrt"):
        return x >= 0.2
    if op == "exp":
        return x <= 4.0
    if op == "relu":
        return abs(x) >= 1e-3
    return True


def random_program(
    rng: random.Random,
    ops: Sequence[str],
    n_leaves: int = 3,
    n_steps: int = 4,
    numbers: str = "right",
) -> tuple[Program, list[float]]:
    """A random graph over ``n_leaves`` inputs using ``ops``, and inputs it is safe at.

    Operands are drawn from all earlier nodes, so sub-expressions and inputs get reused.
    ``numbers`` says where plain numbers may stand in binary ops: "right" (x + 2.0),
    "both" (also 2.0 - x, which needs the reflected methods) or "none".
    """
    while True:
        leaves = [rng.choice((-1, 1)) * rng.uniform(0.3, 2.0) for _ in range(n_leaves)]
        values = list(leaves)
        steps: list[Step] = []
        for _ in range(n_steps * 20):
            if len(steps) == n_steps:
                break
            step = _random_step(rng, ops, len(values), numbers)
            exponent = step.args[1] if step.op == "**" else None
            if not _safe(step.op, step.operands(values), exponent):
                continue
            value = apply(step, [RefValue(v) for v in values]).data
            if not math.isfinite(value) or abs(value) > 1e4:
                continue
            steps.append(step)
            values.append(value)
        if len(steps) == n_steps:
            # The output must depend on the last step; unused leaves just get gradient 0.
            return Program(n_leaves, steps), leaves


def _random_step(rng: random.Random, ops: Sequence[str], n_nodes: int, numbers: str) -> Step:
    op = rng.choice(list(ops))
    recent = n_nodes - 1 if rng.random() < 0.6 else rng.randrange(n_nodes)
    if op in BINARY:
        other: int | float = rng.randrange(n_nodes)
        if numbers != "none" and rng.random() < 0.35:
            other = rng.choice(NUMBERS)
        args = (recent, other)
        if isinstance(other, float) and numbers == "both" and rng.random() < 0.5:
            args = (other, recent)
        elif rng.random() < 0.5:
            args = (other, recent) if isinstance(other, int) else args
        return Step(op, args)
    if op == "**":
        return Step(op, (recent, rng.choice(EXPONENTS)))
    return Step(op, (recent,))


# ---- running a student's engine ----------------------------------------------------------


def make_leaves(Value, values: Sequence[float]) -> list:
    try:
        return [Value(v) for v in values]
    except Exception as exc:
        fail(f"Value({num(values[0])}) raised {describe_error(exc)}")


def build(Value, program: Program, leaves: Sequence[float], what: str = "computing"):
    """Run the program on the student's engine: (leaf nodes, all nodes)."""
    xs = make_leaves(Value, leaves)
    nodes = list(xs)
    for i, step in enumerate(program.steps):
        try:
            nodes.append(apply(step, nodes))
        except Exception as exc:
            expr = program.text(program.n_leaves + i)
            fail(f"{what} {expr} raised {describe_error(exc)}")
    return xs, nodes


def run_closures(root, seed: float = 1.0) -> None:
    """Backpropagate by calling each node's ``_backward()``, outputs first (lesson 1).

    The same walk the students' visible checks use (coursekit.run_closures): the grader's
    own order over ``_prev``, which may be any iterable.
    """
    kit.run_closures(root, seed)


def call_backward(root, seed: float = 1.0) -> None:
    """Backpropagate with the student's own ``backward()`` (lesson 2 on); seeds 1.0."""
    root.backward()


def inputs_text(values: Sequence[float]) -> str:
    return ", ".join(f"x{i}={num(v)}" for i, v in enumerate(values))


def compare_program(
    Value,
    program: Program,
    leaves: Sequence[float],
    backprop: Callable = call_backward,
    passes: int = 1,
    seed: float = 1.0,
) -> None:
    """Build ``program`` ``passes`` times from the same inputs, backpropagate each time
    (from ``seed``: only ``run_closures`` can start anywhere but 1.0), and compare every
    node's data and every input's gradient with the reference."""
    ref_nodes = program.run([RefValue(v) for v in leaves])
    expr = program.text()
    where = f"f = {expr}\nat {inputs_text(leaves)}"
    xs = None
    for k in range(passes):
        if xs is None:
            xs, nodes = build(Value, program, leaves)
        else:
            nodes = program.run(xs)
        for i in range(program.n_leaves, len(nodes)):
            got, want = getattr(nodes[i], "data", None), ref_nodes[i].data
            if not close(got, want):
                fail(
                    f"{program.text(i)} at {inputs_text(leaves)}: "
                    f"expected data {num(want)}, got {num(got)}"
                )
        try:
            backprop(nodes[-1], seed)
        except Exception as exc:
            fail(f"backpropagating {where} raised {describe_error(exc)}")
        if k == 0:
            ref_nodes[-1].backward()
    for i, x in enumerate(xs):
        want = ref_nodes[i].grad * passes * seed
        if not close(x.grad, want):
            after = f" after {passes} backward passes" if passes > 1 else ""
            hint = " (gradients must add up: +=)" if passes > 1 else ""
            if seed != 1.0:
                after += f" with d(loss)/df = {num(seed)}"
                hint = " (is out.grad multiplied in?)"
            fail(
                f"df/dx{i}{after} is wrong{hint}\n{where}\nexpected {num(want)}, got {num(x.grad)}"
            )


def compare_random_graphs(
    Value,
    ops: Sequence[str],
    *,
    seed: int,
    graphs: int = 100,
    numbers: str = "right",
    backprop: Callable = call_backward,
    sizes: Sequence[int] = (1, 2, 3, 5, 7),
) -> None:
    """``graphs`` random graphs over ``ops``; every other one built and backpropagated twice."""
    rng = random.Random(seed)
    for g in range(graphs):
        program, leaves = random_program(
            rng, ops, n_leaves=rng.choice((1, 2, 3)), n_steps=rng.choice(sizes), numbers=numbers
        )
        compare_program(Value, program, leaves, backprop, passes=1 + g % 2)


def compare_cases(
    Value,
    cases: Sequence[tuple[str, tuple]],
    *,
    seed: int,
    rounds: int = 20,
    backprop: Callable = call_backward,
    positive: bool = False,
) -> None:
    """Single operations on random inputs: ``cases`` are (op, args) with args as in Step.

    With ``run_closures`` the output's gradient is seeded with a random number, not 1.0,
    which catches a ``_backward`` that forgets to multiply by ``out.grad``.
    """
    rng = random.Random(seed)
    for _ in range(rounds):
        for op, args in cases:
            step = Step(op, args)
            n_leaves = 1 + max(step.inputs(), default=0)
            for _try in range(100):
                lo = 0.3 if positive or (op == "**" and not float(args[1]).is_integer()) else -2.0
                leaves = [_away_from_zero(rng.uniform(lo, 2.0)) for _ in range(n_leaves)]
                exponent = args[1] if op == "**" else None
                if _safe(op, step.operands(leaves), exponent):
                    break
            g = rng.choice((1.0, -0.5, 2.5)) if backprop is run_closures else 1.0
            compare_program(Value, Program(n_leaves, [step]), leaves, backprop, seed=g)


def _away_from_zero(x: float) -> float:
    return x if abs(x) >= 0.3 else math.copysign(0.3, x) + x
