"""Hidden tests of lesson 01, the Value node (no backward() yet: the grader runs the
students' ``_backward`` closures itself, outputs first, through any kind of ``_prev``)."""

from types import SimpleNamespace

from .common import (
    RefValue,
    close,
    compare_cases,
    compare_random_graphs,
    describe_error,
    fail,
    hidden_check,
    num,
    run_closures,
)

ARITHMETIC = ("+", "*", "-", "/", "**", "neg")


@hidden_check
def add_mul(Value) -> None:
    """``+`` and ``*`` between Values, with a number on the right, and a node used twice."""
    cases = [
        ("+", (0, 1)),
        ("*", (0, 1)),
        ("+", (0, 0)),
        ("*", (0, 0)),
        ("+", (0, 2.5)),
        ("*", (0, -1.5)),
    ]
    compare_cases(Value, cases, seed=101, backprop=run_closures)
    compare_random_graphs(Value, ("+", "*"), seed=102, graphs=120, backprop=run_closures)


@hidden_check
def arithmetic(Value) -> None:
    """``**`` with a number exponent, unary minus, ``-`` and ``/``."""
    cases = [
        ("**", (0, 2)),
        ("**", (0, 3)),
        ("**", (0, -1)),
        ("**", (0, 0.5)),
        ("**", (0, 1.5)),
        ("neg", (0,)),
        ("-", (0, 1)),
        ("-", (0, 0)),
        ("-", (0, 2.0)),
        ("/", (0, 1)),
        ("/", (0, 0)),
        ("/", (0, -2.0)),
    ]
    compare_cases(Value, cases, seed=201, backprop=run_closures)
    compare_random_graphs(Value, ARITHMETIC, seed=202, graphs=150, backprop=run_closures)


@hidden_check
def reflected(Value) -> None:
    """A plain number on the left: 2 + x, 2 * x, 2 - x, 2 / x."""
    cases = [
        ("+", (2.0, 0)),
        ("*", (-1.5, 0)),
        ("-", (2.0, 0)),
        ("-", (-0.5, 0)),
        ("/", (1.5, 0)),
        ("/", (-2.0, 0)),
    ]
    compare_cases(Value, cases, seed=301, backprop=run_closures)
    compare_random_graphs(
        Value, ARITHMETIC, seed=302, graphs=150, numbers="both", backprop=run_closures
    )


NEURON_NODES = ("L", "n", "s", "b", "x1w1", "x2w2", "x1", "w1", "x2", "w2")


def neuron(V, x1, w1, x2, w2, b):
    """The lesson's small neuron, built with any Value class: L = (x1*w1 + x2*w2 + b)**2."""
    g = SimpleNamespace(x1=V(x1), w1=V(w1), x2=V(x2), w2=V(w2), b=V(b))
    g.x1w1 = g.x1 * g.w1
    g.x2w2 = g.x2 * g.w2
    g.s = g.x1w1 + g.x2w2
    g.n = g.s + g.b
    g.L = g.n * g.n
    return g


@hidden_check
def hand_backprop(backprop_by_hand) -> None:
    """The student's hand-written chain rule, run on reference nodes at random inputs."""
    import random

    rng = random.Random(401)
    for _ in range(25):
        inputs = [round(rng.uniform(-3, 3), 2) for _ in range(5)]
        mine = neuron(RefValue, *inputs)
        truth = neuron(RefValue, *inputs)
        truth.L.backward()
        try:
            backprop_by_hand(mine)
        except Exception as exc:
            fail(f"backprop_by_hand raised {describe_error(exc)}")
        where = "at x1={}, w1={}, x2={}, w2={}, b={}".format(*map(num, inputs))
        for name in NEURON_NODES:
            got, want = getattr(mine, name).grad, getattr(truth, name).grad
            if not close(got, want):
                fail(
                    f"{name}.grad is {num(got)} but dL/d{name} = {num(want)} {where}\n"
                    "use the other nodes' .data and .grad, not numbers you worked out"
                )
