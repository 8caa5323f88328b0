"""What every assignment's hidden tests share. This runs in the grader, never in a kernel.

A graph is a ``Program``: a list of steps, each an operator applied to earlier nodes or
plain numbers. The grader draws programs and inputs, the probe builds them with the
student's engine and backpropagates (``check_cases``), and the reference engine
``refgrad`` builds them again here: every node's data and every input's gradient must
agree. Nothing here looks at how a student stores parents (set, tuple, list), labels ops,
orders nodes or which formula computes an op: only the numbers are compared.
"""

from __future__ import annotations

import importlib.util
import math
import operator
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..api import Given, GradingFailure, Kernel, fail, parts_failure
from .diagnose import diagnose

__all__ = ["Given", "GradingFailure", "Kernel", "fail"]

COURSE = Path(__file__).resolve().parents[3]


def _load(name: str, path: Path):
    """A module or package of the course by path, under a name of its own."""
    package = path.name == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)] if package else None
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


ref = _load("_course_refgrad", COURSE / "source" / ".reference" / "refgrad" / "__init__.py")
ref_nn = importlib.import_module("_course_refgrad.nn")
RefValue = ref.Value
kit = _load("_course_coursekit", COURSE / "source" / ".shared" / "coursekit.py")
quizkit = _load("_course_quizkit", COURSE / "source" / ".shared" / "quizkit.py")


# ---- numbers in messages -------------------------------------------------------------------


def num(x: object) -> str:
    """A number short enough for a message (or what came back instead of one)."""
    if isinstance(x, dict) and "repr" in x:
        return f"{x['repr']} ({x.get('type', '?')})"
    if isinstance(x, bool) or x is None:
        return repr(x)
    if isinstance(x, float) and not math.isfinite(x):
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
    if math.isinf(expected) or math.isinf(got):
        return got == expected
    return abs(got - expected) <= abs_ + rel * max(1.0, abs(expected))


def short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


# ---- programs: random expression graphs -------------------------------------------------

BINARY: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}
NUMBERS = (-2.0, -1.5, -0.5, 0.5, 1.5, 2.0, 3.0)
EXPONENTS = (2, 3, -1, 0.5, 1.5, -2)
ARITHMETIC = ("+", "*", "-", "/", "**", "neg")
METHOD = {
    "+": "__add__",
    "*": "__mul__",
    "-": "__sub__",
    "/": "__truediv__",
    "**": "__pow__",
    "neg": "__neg__",
}
REFLECTED = {"+": "__radd__", "*": "__rmul__", "-": "__rsub__", "/": "__rtruediv__"}


@dataclass(frozen=True)
class Step:
    """``op`` applied to ``args``: each an int (an earlier node) or a float (a number);
    the exponent of ``**`` is always a number, even when it is an int."""

    op: str
    args: tuple

    def is_node(self, i: int) -> bool:
        return isinstance(self.args[i], int) and not (self.op == "**" and i == 1)

    def inputs(self) -> list[int]:
        return [a for i, a in enumerate(self.args) if self.is_node(i)]

    def operands(self, values: Sequence) -> list:
        return [values[a] if self.is_node(i) else a for i, a in enumerate(self.args)]

    def method(self) -> str:
        """The Value method that computes this step (``__rsub__`` for ``2.0 - x``)."""
        if self.op in BINARY and not self.is_node(0):
            return REFLECTED[self.op]
        return METHOD.get(self.op, self.op)


@dataclass
class Program:
    n_leaves: int
    steps: list[Step]

    def run(self, leaves: Sequence) -> list:
        """Every node: the leaves, then one per step (with any engine's Values)."""
        nodes = list(leaves)
        for step in self.steps:
            nodes.append(apply(step, nodes))
        return nodes

    def text(self, index: int | None = None) -> str:
        """The expression of node ``index`` (the output by default), as Python reads it."""
        names = [f"x{i}" for i in range(self.n_leaves)]
        for step in self.steps:
            names.append(render(step, names))
        return names[-1 if index is None else index]

    def labels(self) -> list[str]:
        return [short(self.text(i), 28) for i in range(self.n_leaves + len(self.steps))]

    def spec(self, leaves: Sequence[float], **extra) -> dict:
        """The program as the probe reads it."""
        return {
            "leaves": list(leaves),
            "steps": [[s.op, list(s.args)] for s in self.steps],
            "labels": self.labels(),
            **extra,
        }

    def methods(self) -> list[str]:
        return list(dict.fromkeys(step.method() for step in self.steps))


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
        return s if s.isidentifier() or (s.endswith("()") and s.count("(") == 1) else f"({s})"

    if step.op in BINARY:
        return f"{arg(0)} {step.op} {arg(1)}"
    if step.op == "**":
        return f"{arg(0)}**{arg(1)}"
    if step.op == "neg":
        return f"-{arg(0)}"
    return f"{arg(0)}.{step.op}()"


def safe(op: str, values: Sequence[float], exponent: float | None = None) -> bool:
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
            if not safe(step.op, step.operands(values), exponent):
                continue
            value = apply(step, [RefValue(v) for v in values]).data
            if not math.isfinite(value) or abs(value) > 1e4:
                continue
            steps.append(step)
            values.append(value)
        if len(steps) == n_steps:
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


def single(
    op: str, args: tuple, rng: random.Random, positive: bool = False
) -> tuple[Program, list[float]]:
    """A one-step program and inputs (in [-2, 2] away from 0, or [0.3, 2]) it is safe at."""
    step = Step(op, args)
    n = 1 + max(step.inputs(), default=0)
    exponent = args[1] if op == "**" else None
    lo = 0.3 if positive or (op == "**" and not float(args[1]).is_integer()) else -2.0
    while True:
        leaves = [_away_from_zero(rng.uniform(lo, 2.0)) for _ in range(n)]
        if safe(op, step.operands(leaves), exponent):
            return Program(n, [step]), leaves


def _away_from_zero(x: float) -> float:
    return x if abs(x) >= 0.3 else math.copysign(0.3, x) + x


def inputs_text(values: Sequence[float]) -> str:
    return ", ".join(f"x{i}={num(v)}" for i, v in enumerate(values))


# ---- comparing the student's engine with the reference ----------------------------------


@dataclass
class Case:
    """A program to build with the student's engine and backpropagate, and how."""

    program: Program
    leaves: list[float]
    passes: int = 1  # built this many times on the same leaves, each one backpropagated
    repeat: int = 1  # backpropagated this many times without rebuilding (one-step only)
    seed: float = 1.0  # d(loss)/d(output) to start from (closures only)

    def spec(self) -> dict:
        return self.program.spec(
            self.leaves, passes=self.passes, repeat=self.repeat, seed=self.seed
        )

    def reference(self) -> tuple[list[float], list[float]]:
        """Every node's data, and every input's gradient after all passes."""
        nodes = self.program.run([RefValue(v) for v in self.leaves])
        nodes[-1].backward()
        factor = self.passes * self.repeat * self.seed
        return [n.data for n in nodes], [x.grad * factor for x in nodes[: len(self.leaves)]]


def check_cases(
    kernel: Kernel,
    cases: Sequence[Case],
    *,
    backprop: str = "backward",
    given: Sequence[Given] = (),
    tested: Sequence[str] = (),
    value: str = "Value",
) -> None:
    """Build and backpropagate every case with the student's engine (one request to the
    probe), and fail on the first difference from the reference. ``tested`` names the
    methods this test grades (the others are given), for the messages."""
    what = "backpropagating" if backprop == "backward" else "the _backward closures"
    results = kernel.run(
        "graphs",
        value=value,
        programs=[c.spec() for c in cases],
        backprop=backprop,
        given=given,
        what=what,
    )
    for case, result in zip(cases, results):
        compare_case(case, result, backprop, tested)


def compare_case(case: Case, result: dict, backprop: str, tested: Sequence[str]) -> None:
    program, leaves = case.program, case.leaves
    where = f"at {inputs_text(leaves)}"
    graded = [m for m in program.methods() if not tested or m in tested]
    blame = f"`{graded[0]}`: " if len(graded) == 1 else ""
    if "failed" in result:
        stage, step = result["failed"], result.get("step")
        if stage == "leaf":
            fail(f"Value({num(leaves[0])}) raised {result['error']}")
        if stage == "build":
            s = program.steps[step]
            fail(
                f"`{s.method()}`: {program.text(program.n_leaves + step)} raised "
                f"{result['error']}\n{where}"
            )
        missing = _missing_attribute(result["error"])
        if missing is not None:
            blame = f"{blame}{missing}\n"
        fail(
            f"{blame}{'backward()' if backprop == 'backward' else 'a _backward closure'} "
            f"raised {result['error']}\nwith f = {program.text()} {where}"
        )
    want_data, want_grads = case.reference()
    for i in range(program.n_leaves, len(want_data)):
        got = result["data"][i]
        if not close(got, want_data[i]):
            s = program.steps[i - program.n_leaves]
            if isinstance(got, dict):  # not a number: the node keeps its value elsewhere
                fail(
                    f"`{s.method()}`: {program.text(i)} gave {short(got.get('repr', '?'))}, "
                    f"whose .data is not a number\n{where}: the lessons read every "
                    "node's value from .data"
                )
            fail(
                f"`{s.method()}`: {program.text(i)} should be {num(want_data[i])}, "
                f"got {num(got)}\n{where}"
            )
    bad = [j for j, (g, w) in enumerate(zip(result["grads"], want_grads)) if not close(g, w)]
    if not bad:
        return
    j = bad[0]
    got = result["grads"][j]
    unseen = structure_problem(program, result)
    if unseen is not None:  # the graph is not what it should be: no slip to guess
        fail(f"{unseen}\nwith f = {program.text()} {where}")
    if got is None:
        fail(f"x{j} has no .grad after backpropagating: every node keeps its gradient in .grad")
    found = diagnose(
        program,
        leaves,
        result["grads"],
        passes=case.passes,
        repeat=case.repeat,
        seed=case.seed,
        methods=graded,
    )
    if found is not None:
        method, hint = found
        blame = f"`{method}`: "
    else:
        hint = ""
    how = ""
    if case.passes > 1:
        how = f" after building f {case.passes} times on the same inputs"
    elif case.repeat > 1:
        how = f" after {case.repeat} backward() calls"
    elif case.seed != 1.0:
        how = f" from d(loss)/df = {num(case.seed)}"
    fail(
        f"{blame}df/dx{j}{how} should be {num(want_grads[j])}, got {num(got)}\n"
        f"with f = {program.text()} {where}" + (f"\n({hint})" if hint else "")
    )


ATTRIBUTES = {
    "data": "every node keeps its number in .data",
    "grad": "every node keeps its gradient in .grad",
    "_prev": "every node keeps its parents in _prev",
    "_backward": "every node keeps its closure in _backward",
}


def _missing_attribute(error: str) -> str | None:
    """What a node lacks, when the error says the lessons' code could not find one of
    the attributes it reads (``AttributeError: ... has no attribute 'grad'``)."""
    if not error.startswith("AttributeError"):
        return None
    for name, rule in ATTRIBUTES.items():
        if f"attribute '{name}'" in error:
            return f"a node has no .{name}: {rule}, which the lessons' code reads"
    return None


def structure_problem(program: Program, result: dict) -> str | None:
    """What the graph walk saw that does not match the program (None if nothing): the
    output keeps no ``_prev``, or a node does not lead back to its operands through it.
    Checked before any slip is read into the gradients, which a graph walk that cannot
    reach a node gets wrong whatever the closures do."""
    reached = result.get("reached")
    if not reached:
        return None
    needed, stack = set(), [len(reached) - 1]
    while stack:  # the program nodes the output depends on
        i = stack.pop()
        if i not in needed:
            needed.add(i)
            if i >= program.n_leaves:
                stack.extend(program.steps[i - program.n_leaves].inputs())
    if all(reached[i] for i in needed):
        return None
    if result.get("prev") is None:
        return (
            "Value keeps no `_prev`, and the lessons' graph walk reads each node's "
            "parents from `_prev` (a set or a tuple of Values), so it reaches no input"
        )
    for i in sorted(needed):
        if i < program.n_leaves or not reached[i]:
            continue
        step = program.steps[i - program.n_leaves]
        lost = [j for j in step.inputs() if not reached[j]]
        if lost:
            return (
                f"`{step.method()}`: {program.text(i)} does not lead back to "
                f"{program.text(lost[0])} through `_prev`, so the graph walk never reaches "
                "it: keep every operand in the new node's `_prev`"
            )
    return "the graph walk does not reach every node through `_prev`"


# ---- an exercise of several functions -------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One function of an exercise that asks for several: its name in messages, what it
    grades as ``Given`` targets name it, and its own checks."""

    name: str
    targets: tuple[str, ...]
    check: Callable[[], None]


def shares(kernel: Kernel, parts: Sequence[Part]) -> None:
    """Run every part's checks and credit each part that passes its share of the points:
    a correct function never loses points for another. Parts run in order, and once a
    part is over the course's code for its targets may be given to the parts after it
    (``Kernel.done``): a function built on a sibling that failed is checked on the
    course's, one built on a sibling that passed on the student's (``Kernel.course``)."""
    failures: list[tuple[Part, GradingFailure]] = []
    for part in parts:
        try:
            part.check()
        except GradingFailure as exc:
            failures.append((part, exc))
        else:
            kernel.ok.update(part.targets)
        kernel.done.update(part.targets)
    if not failures:
        return
    wrong = {part.name for part, _ in failures}
    right = [part.name for part in parts if part.name not in wrong]
    raise parts_failure([(p.name, str(exc)) for p, exc in failures], right, len(parts))
