"""Why a student's gradients are wrong, from what the numbers show (grader side).

``diagnose`` backpropagates the failing program again in a small model engine, once for
each classic slip in each method under test (``=`` for ``+=``, forgetting ``* out.grad``,
the second operand left without gradient, a flipped sign, the wrong formula for a
derivative...). A slip whose numbers match the student's exactly names the method at
fault and gives the hint; when none does, the message shows the numbers alone. A hint is
never chosen by which check failed, only by the evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The local derivative of each op with respect to each operand: (a, b, out) -> partials.
LOCAL: dict[str, Callable[[float, float, float], tuple[float, ...]]] = {
    "+": lambda a, b, out: (1.0, 1.0),
    "-": lambda a, b, out: (1.0, -1.0),
    "*": lambda a, b, out: (b, a),
    "/": lambda a, b, out: (1.0 / b, -a / b**2),
    "**": lambda a, n, out: (n * a ** (n - 1),),
    "neg": lambda a, b, out: (-1.0,),
    "tanh": lambda a, b, out: (1.0 - out**2,),
    "relu": lambda a, b, out: (1.0 if a > 0 else 0.0,),
    "exp": lambda a, b, out: (out,),
    "log": lambda a, b, out: (1.0 / a,),
    "sigmoid": lambda a, b, out: (out * (1.0 - out),),
    "sin": lambda a, b, out: (math.cos(a),),
    "cos": lambda a, b, out: (-math.sin(a),),
    "sqrt": lambda a, b, out: (0.5 / out,),
}
FORWARD: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, n: a**n,
    "neg": lambda a, b: -a,
    "tanh": lambda a, b: math.tanh(a),
    "relu": lambda a, b: max(a, 0.0),
    "exp": lambda a, b: math.exp(a),
    "log": lambda a, b: math.log(a),
    "sigmoid": lambda a, b: (
        1.0 / (1.0 + math.exp(-a)) if a >= 0 else math.exp(a) / (1.0 + math.exp(a))
    ),
    "sin": lambda a, b: math.sin(a),
    "cos": lambda a, b: math.cos(a),
    "sqrt": lambda a, b: math.sqrt(a),
}


@dataclass(frozen=True)
class Slip:
    """A classic mistake in one op's ``_backward``, and what to tell the student."""

    name: str
    hint: str
    local: Callable[[float, float, float], tuple[float, ...]] | None = None  # other formula


ADD_UP = "a node used more than once must add up its gradient: use += in _backward, not ="
ASSIGN = Slip("assign", ADD_UP)
ASSIGN_FIRST = Slip("assign first", ADD_UP)  # self.grad = ..., other.grad += ...
ASSIGN_SECOND = Slip("assign second", ADD_UP)
NO_OUT_GRAD = Slip("no out.grad", "the local derivative must be multiplied by out.grad")
FIRST_ONLY = Slip(
    "first only", "the second operand gets no gradient: _backward must update both operands"
)
SECOND_ONLY = Slip(
    "second only", "the first operand (self) gets no gradient: _backward must update both operands"
)
SIGN = Slip("sign", "the gradient has the wrong sign")
GENERIC = (ASSIGN, ASSIGN_FIRST, ASSIGN_SECOND, NO_OUT_GRAD, FIRST_ONLY, SECOND_ONLY, SIGN)

POWER = "the power rule: d(x**n)/dx = n * x**(n - 1)"
SLIPS: dict[str, tuple[Slip, ...]] = {
    "*": (
        Slip(
            "own data",
            "each operand's local derivative is the OTHER operand's data",
            lambda a, b, out: (a, b),
        ),
    ),
    "-": (Slip("plus", "d(a - b)/db is -1", lambda a, b, out: (1.0, 1.0)),),
    "/": (
        Slip("quotient sign", "d(a / b)/db = -a / b**2", lambda a, b, out: (1 / b, a / b**2)),
        Slip("quotient square", "d(a / b)/db = -a / b**2", lambda a, b, out: (1 / b, -a / b)),
    ),
    "**": (
        Slip("n x^n", POWER, lambda a, n, out: (n * a**n,)),
        Slip("x^(n-1)", POWER, lambda a, n, out: (a ** (n - 1),)),
        Slip("(n-1) x^(n-1)", POWER, lambda a, n, out: ((n - 1) * a ** (n - 1),)),
        Slip("n x", POWER, lambda a, n, out: (n * a,)),
    ),
    "tanh": (
        Slip("1 - t", "tanh'(x) = 1 - t**2, where t = tanh(x)", lambda a, b, out: (1 - out,)),
        Slip(
            "1 - x^2",
            "tanh'(x) = 1 - t**2 with t the OUTPUT tanh(x), not x",
            lambda a, b, out: (1 - a**2,),
        ),
        Slip("t^2", "tanh'(x) = 1 - t**2, where t = tanh(x)", lambda a, b, out: (out**2,)),
    ),
    "relu": (
        Slip(
            "1 at 0",
            "relu's gradient at exactly 0 is 0 by convention (x > 0)",
            lambda a, b, out: (1.0 if a >= 0 else 0.0,),
        ),
        Slip("out", "relu's local derivative is 1 or 0, not the output", lambda a, b, out: (out,)),
        Slip("always 1", "relu's local derivative is 0 where x < 0", lambda a, b, out: (1.0,)),
    ),
    "exp": (Slip("x", "exp's derivative is exp(x), the output", lambda a, b, out: (a,)),),
    "log": (
        Slip("x", "log's derivative is 1/x", lambda a, b, out: (a,)),
        Slip(
            "1/out",
            "log's derivative is 1/x, with x the INPUT",
            lambda a, b, out: (1 / out if out else math.inf,),
        ),
    ),
    "sigmoid": (
        Slip("s", "sigmoid'(x) = s * (1 - s), where s = sigmoid(x)", lambda a, b, out: (out,)),
        Slip(
            "1 - s", "sigmoid'(x) = s * (1 - s), where s = sigmoid(x)", lambda a, b, out: (1 - out,)
        ),
        Slip(
            "s(1+s)",
            "sigmoid'(x) = s * (1 - s), where s = sigmoid(x)",
            lambda a, b, out: (out * (1 + out),),
        ),
    ),
    "sin": (
        Slip("-cos", "sin's derivative is +cos(x)", lambda a, b, out: (-math.cos(a),)),
        Slip("sin", "sin's derivative is cos(x)", lambda a, b, out: (math.sin(a),)),
    ),
    "cos": (
        Slip("sin", "cos's derivative is -sin(x)", lambda a, b, out: (math.sin(a),)),
        Slip("-cos", "cos's derivative is -sin(x)", lambda a, b, out: (-math.cos(a),)),
    ),
    "sqrt": (
        Slip("1/(2x)", "sqrt's derivative is 1 / (2 * sqrt(x))", lambda a, b, out: (0.5 / a,)),
        Slip("r/2", "sqrt's derivative is 1 / (2 * sqrt(x))", lambda a, b, out: (0.5 * out,)),
        Slip("1/r", "sqrt's derivative is 1 / (2 * sqrt(x))", lambda a, b, out: (1 / out,)),
    ),
}


def diagnose(
    program,
    leaves: Sequence[float],
    got: Sequence,
    *,
    passes: int = 1,
    repeat: int = 1,
    seed: float = 1.0,
    methods: Sequence[str] = (),
) -> tuple[str, str] | None:
    """(method, hint) of the one slip that explains the student's input gradients
    ``got``, among the slips of ``methods`` (the methods this test grades)."""
    if not all(isinstance(g, (int, float)) and not isinstance(g, bool) for g in got):
        return None
    right = _grads(program, leaves, passes, repeat, seed, None, None)
    if right is None:
        return None
    for method in methods:
        ops = {s.op for s in program.steps if s.method() == method}
        for op in ops:
            for slip in (*GENERIC, *SLIPS.get(op, ())):
                if slip in (FIRST_ONLY, SECOND_ONLY, ASSIGN_FIRST, ASSIGN_SECOND) and op not in (
                    "+",
                    "-",
                    "*",
                    "/",
                ):
                    continue
                predicted = _grads(program, leaves, passes, repeat, seed, method, slip)
                if predicted is None or _same(predicted, right):
                    continue
                if _same(predicted, got):
                    return method, slip.hint
    return None


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(abs(x - y) <= 1e-8 + 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b))


def _grads(program, leaves, passes, repeat, seed, method, slip) -> list[float] | None:
    """The inputs' gradients in the model engine, with ``slip`` in ``method``'s steps."""
    try:
        total = [0.0] * len(leaves)
        for _ in range(passes):
            data = list(leaves)
            for step in program.steps:
                a, b = [*step.operands(data), 0.0][:2]
                data.append(FORWARD[step.op](a, b))
            grad = [0.0] * len(data)
            grad[: len(leaves)] = total
            for _ in range(repeat):
                grad[-1] = seed
                for k in range(len(program.steps) - 1, -1, -1):
                    _backward(
                        program.steps[k],
                        len(leaves) + k,
                        data,
                        grad,
                        slip if program.steps[k].method() == method else None,
                    )
            total = grad[: len(leaves)]
        return total
    except (ArithmeticError, ValueError, KeyError):  # KeyError: an op the tables lack
        return None  # no slip is claimed for what the tables do not know


def _backward(step, out: int, data: list, grad: list, slip: Slip | None) -> None:
    a, b = [*step.operands(data), 0.0][:2]
    local = (slip.local if slip is not None and slip.local else LOCAL[step.op])(a, b, data[out])
    g = 1.0 if slip is NO_OUT_GRAD else grad[out]
    if slip is SIGN:
        g = -g
    for position, partial in enumerate(local):
        if not step.is_node(position):
            continue
        if (slip is FIRST_ONLY and position == 1) or (slip is SECOND_ONLY and position == 0):
            continue
        target = step.args[position]
        if (
            slip is ASSIGN
            or (slip is ASSIGN_FIRST and position == 0)
            or (slip is ASSIGN_SECOND and position == 1)
        ):
            grad[target] = partial * g
        else:
            grad[target] += partial * g
