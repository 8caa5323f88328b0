"""Hidden answers of the two checkpoint quizzes (04_checkpoint_engine, 06_checkpoint_mlp).

Never released. The check cell of question ``q3`` of the engine quiz calls
``load_grader("quiz").grade("engine", "q3", q3)``. An answer is first checked for form
exactly as the visible check does (``coursekit.answer_problem``): a malformed one fails
with the same sentence. Then it is checked for being right:

- numbers are worked out here with the reference engine, never typed in, and count
  within ``TOL`` of the exact value (the quizzes say so);
- orders are checked against the edges of the graph, so every valid order counts;
- functions are compared with the true derivative at many random points.

A wrong answer fails with one line that does not give the right one away.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from .common import (
    MAX_LINE,
    RefValue,
    close,
    describe_error,
    fail,
    hidden_check,
    kit,
    num,
    ref,
    ref_nn,
)

TOL = 1e-3  # numbers: absolute tolerance, as stated in the quizzes
FUNCTION_TOL = 1e-6  # functions: relative tolerance against the true derivative


@dataclass(frozen=True)
class Question:
    spec: dict  # what a well-formed answer is: keywords of coursekit.answer_problem
    wrong: Callable[[object], str | None]  # why a well-formed answer is wrong, or None
    points: int


@hidden_check
def grade(quiz: str, name: str, answer: object) -> None:
    """Fail unless ``answer`` is a well-formed and right answer to question ``name``."""
    question = QUIZZES[quiz][name]
    problem, value = kit.answer_problem(name, answer, **question.spec)
    if problem is not None:
        fail(_short(problem))
    why = question.wrong(value)
    if why is not None:
        fail(_short(f"{name}: {why}"))


def _short(message: str, width: int = MAX_LINE - 2) -> str:
    """One line, short enough for a notebook."""
    message = " ".join(message.split())
    return message if len(message) <= width else message[: width - 3] + "..."


# ---- kinds of answers --------------------------------------------------------------------


def letter(key: str, points: int = 1) -> Question:
    return Question(dict(choices="abcd"), lambda a: None if a == key else _not_right(a), points)


def truth(key: bool, points: int = 1) -> Question:
    return Question(dict(kind=bool), lambda a: None if a is key else _not_right(a), points)


def line(key: int, lines: int, points: int = 1) -> Question:
    spec = dict(kind=int, choices=range(1, lines + 1))
    return Question(
        spec, lambda a: None if a == key else f"line {a} is not the buggy line.", points
    )


def number(compute: Callable[[], float], points: int) -> Question:
    def wrong(a: float) -> str | None:
        if abs(a - compute()) <= TOL:
            return None
        return f"{num(a)} is not within {TOL} of the right value."

    return Question(dict(kind=float), wrong, points)


def order(before: Callable[[], dict[str, set[str]]], points: int) -> Question:
    """Every label, each listed after all the labels ``before()[label]`` names."""

    def wrong(labels: list[str]) -> str | None:
        must_precede = before()
        done: set[str] = set()
        for label in labels:
            for first in sorted(must_precede[label] - done):
                return f"{label!r} comes before {first!r}, which must come first."
            done.add(label)
        return None

    return Question(dict(kind=list, items=sorted(before())), wrong, points)


def derivative(
    name: str,
    truth_at: Callable,
    inputs: Callable[[random.Random], tuple],
    calls: list[tuple],
    points: int,
) -> Question:
    """A student's function of plain numbers, compared with ``truth_at`` on random inputs
    (after the visible check's ``calls``, which must give numbers)."""

    def wrong(fn: Callable) -> str | None:
        rng = random.Random(name)  # the same points every time
        for _ in range(200):
            args = inputs(rng)
            where = f"{name}({', '.join(num(a) for a in args)})"
            try:
                got = fn(*args)
            except Exception as exc:
                return f"{where} raised {describe_error(exc)}"
            if not close(got, truth_at(*args), rel=FUNCTION_TOL, abs_=FUNCTION_TOL):
                return f"{where} = {num(got)} is wrong."
        return None

    return Question(dict(kind=callable, calls=calls), wrong, points)


def _not_right(answer: object) -> str:
    return f"{answer!r} is not the right answer."


# ---- quiz 04: the engine -----------------------------------------------------------------


def reused_node() -> float:
    """Question 2: a.grad for d = c * c + c with c = a * b."""
    a, b = RefValue(3.0), RefValue(-2.0)
    c = a * b
    d = c * c + c
    d.backward()
    return a.grad


def two_backward_calls() -> float:
    """Question 3: x.grad after f.backward() and then g.backward(), never reset."""
    x, y = RefValue(2.0), RefValue(5.0)
    f = x * y
    f.backward()
    g = x * x + y
    g.backward()
    return x.grad


def figure_graph():
    """The graph drawn for question 4, with the same labels."""
    x, y, z = RefValue(1.0, label="x"), RefValue(-2.0, label="y"), RefValue(0.5, label="z")
    u = x * y
    v = u + z
    w = v * x
    out = w + u
    for node, label in ((u, "u"), (v, "v"), (w, "w"), (out, "L")):
        node.label = label
    return out


def backward_order() -> dict[str, set[str]]:
    """Question 4: backward() processes a node only after every node that uses it."""
    children: dict[str, set[str]] = {}
    for node in ref.topological_order(figure_graph()):
        children.setdefault(node.label, set())
        for parent in node._prev:
            children.setdefault(parent.label, set()).add(node.label)
    return children


def tanh_chain() -> float:
    """Question 11: x.grad for y = (2 * x).tanh() at x = 0.5."""
    x = RefValue(0.5)
    (2 * x).tanh().backward()
    return x.grad


def _softplus_slope(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


ENGINE = {
    "q1": letter("b"),
    "q2": number(reused_node, points=2),
    "q3": number(two_backward_calls, points=2),
    "q4": order(backward_order, points=2),
    "q5": letter("a"),
    "q6": line(7, lines=10),
    "q7": line(6, lines=9),
    "q8": truth(True),
    "q9": truth(False),
    "q10": truth(True),
    "q11": number(tanh_chain, points=1),
    "q12": letter("c"),
    "q13": derivative(
        "softplus_grad",
        _softplus_slope,
        lambda rng: (rng.uniform(-8.0, 8.0),),
        calls=[(0.5,), (-2.0,)],
        points=2,
    ),
}


# ---- quiz 06: networks and training ------------------------------------------------------


def mlp_parameters() -> float:
    """Question 1: the parameters of MLP(2, [3, 3, 1])."""
    return len(ref_nn.MLP(2, [3, 3, 1], rng=0).parameters())


def sequential_parameters() -> float:
    """Question 2: the parameters of Sequential(Linear(3, 4), ReLU(), Linear(4, 2))."""
    layers = ref_nn.Linear(3, 4, rng=0), ref_nn.ReLU(), ref_nn.Linear(4, 2, rng=1)
    return len(ref_nn.Sequential(*layers).parameters())


def mse_gradient() -> float:
    """Question 5: preds[0].grad for the mean squared error of two predictions."""
    preds = [RefValue(0.5), RefValue(-1.0)]
    ref_nn.mse_loss(preds, [1.0, 1.0]).backward()
    return preds[0].grad


def two_steps(reset: bool) -> float:
    """Questions 9 and 10: p.data after two steps of gradient descent, lr 0.1."""
    p = RefValue(0.5)
    for _ in range(2):
        loss = (3 * p - 1) ** 2
        if reset:
            p.grad = 0.0
        loss.backward()
        p.data -= 0.1 * p.grad
    return p.data


def step_order() -> dict[str, set[str]]:
    """Question 7: a = loss.backward(), b = forward pass and loss, c = zero the gradients,
    d = update. backward needs the loss and zeroed gradients; the update needs backward."""
    return {"a": {"b", "c"}, "b": set(), "c": set(), "d": {"a"}}


def _hinge_slope(score: float, y: int) -> float:
    return -y if 1.0 - y * score > 0.0 else 0.0


def _hinge_inputs(rng: random.Random) -> tuple[float, int]:
    y = rng.choice((1, -1))
    while True:
        score = rng.uniform(-3.0, 3.0)
        if abs(1.0 - y * score) > 0.05:  # never at the kink
            return score, y


MLP = {
    "q1": number(mlp_parameters, points=1),
    "q2": number(sequential_parameters, points=1),
    "q3": truth(False),
    "q4": letter("d"),
    "q5": number(mse_gradient, points=2),
    "q6": derivative(
        "hinge_grad", _hinge_slope, _hinge_inputs, calls=[(0.5, 1), (0.5, -1)], points=2
    ),
    "q7": order(step_order, points=2),
    "q8": letter("b"),
    "q9": number(lambda: two_steps(reset=True), points=2),
    "q10": number(lambda: two_steps(reset=False), points=1),
    "q11": truth(True),
    "q12": truth(False),
    "q13": letter("a"),
    "q14": letter("c"),
    "q15": letter("b"),
}

QUIZZES = {"engine": ENGINE, "mlp": MLP}
