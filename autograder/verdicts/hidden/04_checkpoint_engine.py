"""Hidden answers of the checkpoint quiz on the engine (04_checkpoint_engine)."""

from __future__ import annotations

import math

from .common import RefValue, ref
from .quiz import derivative, grader, letter, line, number, order, tests, truth


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


QUESTIONS = {
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

grade = grader(QUESTIONS)
TESTS = tests("engine_quiz", QUESTIONS, grade)
