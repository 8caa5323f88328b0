"""Hidden tests of 03_activations: tanh, relu, exp, log, sigmoid, sin, cos, sqrt, and one
neuron.

The students start from their own engine of lessons 1-2 (the cell tagged ``engine``);
grading runs the course's lessons 1 and 2 there (``ENGINE``: arithmetic, backward()), and
the students attach the functions to it. Each check compares the op with the reference engine

- alone at random inputs, backpropagated from a random d(loss)/d(output) too, so that a
  ``_backward`` without ``* out.grad`` shows;
- at the inputs that matter for it: |x| up to 1000 for tanh and sigmoid (no overflow),
  relu at exactly 0, exp's overflow, the domains of log and sqrt, sqrt(0);
- inside random graphs with the arithmetic, backpropagated with backward().

Any correct formula passes: values are compared with a tolerance, never by how they were
computed, and random inputs stay away from kinks and domain edges.
"""

from __future__ import annotations

from .common import (
    ARITHMETIC,
    Case,
    Given,
    GradingFailure,
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
from .lessons import lesson_engine

# The course's lessons 1 and 2, when graded (the cell tagged engine).
ENGINE = lesson_engine("03_activations", "Value", "numerical_grad", "grad_check")

LARGE = "large inputs must work too: the tests use |x| up to 1000"
TANH = Given(
    "Value.tanh",
    "tanh",
    """
def tanh(self):
    t = math.tanh(self.data)
    out = Value(t, (self,), "tanh")

    def _backward():
        self.grad += (1 - t**2) * out.grad

    out._backward = _backward
    return out
""",
)


def one(op: str, x: float, seed: float = 1.0) -> Case:
    return Case(Program(1, [Step(op, (0,))]), [x], seed=seed)


def inside(op: str, x: float, k: float) -> Case:
    """(k * x).op(), as in the visible checks."""
    return Case(Program(1, [Step("*", (k, 0)), Step(op, (1,))]), [x])


def outside(op: str, x: float, k: float) -> Case:
    """k * x.op(), as in the visible checks."""
    return Case(Program(1, [Step(op, (0,)), Step("*", (k, 1))]), [x])


def reused(op: str, x: float = 0.7) -> list[Case]:
    """x.op() + x and x.op() + x.op(): x gets gradient along two paths, so an op that sets
    its input's grad (=) instead of adding to it (+=) fails on every seed."""
    return [
        Case(Program(1, [Step(op, (0,)), Step("+", (1, 0))]), [x]),
        Case(Program(1, [Step(op, (0,)), Step(op, (0,)), Step("+", (1, 2))]), [x]),
    ]


def check_op(
    kernel: Kernel,
    op: str,
    visible: list[Case],
    points: list[float] = (),
    positive: bool = False,
    hint: str = "",
) -> None:
    """``op`` alone at random inputs (from 1.0, then from random values of d(loss)/d(out)),
    at chosen ``points`` (where ``hint`` is added to a failure), then in random graphs
    with the arithmetic (backward())."""
    rng = kernel.rng
    cases = [*visible, *reused(op)]
    for seed in [1.0] * 20 + [rng.choice((-0.5, 2.5, -3.0)) for _ in range(20)]:
        program, leaves = single(op, (0,), rng, positive=positive)
        cases.append(Case(program, leaves, seed=seed))
    try:
        check_cases(kernel, cases, backprop="closures", tested=(op,))
        check_cases(kernel, [one(op, x) for x in points], backprop="closures", tested=(op,))
    except GradingFailure as exc:
        large = any(x in str(exc) for x in ("Overflow", "400", "800", "1000"))
        if hint and large:
            fail(f"{exc}\n({hint})")
        raise
    graphs = [
        Case(
            *random_program(
                rng,
                (*ARITHMETIC, op),
                n_leaves=rng.choice((1, 2, 3)),
                n_steps=rng.choice((1, 2, 3, 5, 7)),
                numbers="both",
            )
        )
        for _ in range(80)
    ]
    check_cases(kernel, graphs, backprop="backward", tested=(op,))


def check_raises(
    kernel: Kernel, op: str, points: list[float], error: str, rule: str, names_value: bool = True
) -> None:
    """``Value(x).op()`` at each point must raise ``error`` (whose message names x)."""
    results = kernel.run(
        "graphs",
        value="Value",
        programs=[one(op, x).spec() for x in points],
        backprop="closures",
        what=f"Value(x).{op}()",
    )
    for x, result in zip(points, results):
        expr = f"Value({num(x)}).{op}()"
        if result.get("failed") != "build":
            got = num(result["data"][-1]) if "data" in result else result.get("error")
            fail(f"`{op}`: {expr} should raise {error} ({rule}), got {got}")
        if result["type"] != error:
            fail(f"`{op}`: {expr} should raise {error} ({rule}), not {result['error']}")
        if names_value and num(abs(x)) not in result["message"]:
            fail(
                f"`{op}`: {expr} raised {error}, but its message should name the value "
                f"{num(x)}; it says {result['message'][:40]!r}"
            )


def tanh(kernel: Kernel) -> None:
    visible = [
        one("tanh", 0.5),
        one("tanh", -2.0),
        outside("tanh", 0.5, 3.0),
        inside("tanh", 1.0, 1000.0),
    ]
    check_op(kernel, "tanh", visible, [20.0, -20.0, 400.0, -400.0, 1000.0, -1000.0], hint=LARGE)


def relu(kernel: Kernel) -> None:
    visible = [one("relu", 1.5), one("relu", -2.0), one("relu", 0.0), outside("relu", 0.5, -3.0)]
    results = kernel.run(
        "graphs",
        value="Value",
        programs=[one("relu", x, 2.0).spec() for x in (0.0, -0.0)],
        backprop="closures",
        what="Value(0).relu()",
    )
    for result in results:
        if "failed" in result:
            fail(f"`relu`: Value(0).relu() raised {result['error']}")
        if not close(result["data"][-1], 0.0):
            fail(f"`relu`: Value(0).relu() should be 0, got {num(result['data'][-1])}")
        if not close(result["grads"][0], 0.0):
            fail(
                "`relu`: at x = 0 relu has a kink: by convention its gradient should be 0 there "
                f"(as in PyTorch), got {num(result['grads'][0] / 2)} times out.grad"
            )
    check_op(kernel, "relu", visible, [1000.0, -1000.0, 1e-6, -1e-6])


def exp_log(kernel: Kernel) -> None:
    """exp and log, each for half the points: each alone, at its edges, in graphs."""

    def exp() -> None:
        visible = [one("exp", 1.0), outside("exp", 0.0, 2.0)]
        check_op(kernel, "exp", visible, [-1000.0, -30.0, 30.0, 300.0])
        check_raises(
            kernel,
            "exp",
            [1000.0],
            "OverflowError",
            "e**1000 is too large for a float",
            names_value=False,
        )

    def log() -> None:
        check_op(kernel, "log", [one("log", 2.0)], [1e-6, 1e6], positive=True)
        check_raises(kernel, "log", [0.0, -2.5, -4.0, -2.0], "ValueError", "log needs x > 0")

    shares(kernel, [Part("`exp`", ("Value.exp",), exp), Part("`log`", ("Value.log",), log)])


def sigmoid(kernel: Kernel) -> None:
    visible = [
        one("sigmoid", 0.0),
        one("sigmoid", 2.0),
        outside("sigmoid", 0.0, 4.0),
        inside("sigmoid", 1.0, -1000.0),
        inside("sigmoid", 1.0, 1000.0),
    ]
    check_op(kernel, "sigmoid", visible, [40.0, -40.0, 800.0, -800.0, 1000.0, -1000.0], hint=LARGE)


def sin_cos_sqrt(kernel: Kernel) -> None:
    """sin, cos and sqrt, each for a third of the points."""

    def sqrt() -> None:
        check_op(kernel, "sqrt", [one("sqrt", 4.0)], [1e-4, 1e6], positive=True)
        results = kernel.run(
            "graphs",
            value="Value",
            programs=[one("sqrt", 0.0).spec()],
            backprop="closures",
            what="Value(0).sqrt()",
        )
        result = results[0]  # only its data: the slope of sqrt at 0 is infinite
        if "data" not in result:
            fail(
                f"`sqrt`: Value(0).sqrt() should be 0 (sqrt is defined for x >= 0), got "
                f"{result.get('error')}"
            )
        if not close(result["data"][-1], 0.0):
            fail(f"`sqrt`: Value(0).sqrt() should be 0, got {num(result['data'][-1])}")
        check_raises(kernel, "sqrt", [-2.5, -4.0, -1.0], "ValueError", "sqrt needs x >= 0")

    shares(
        kernel,
        [
            Part(
                "`sin`",
                ("Value.sin",),
                lambda: check_op(kernel, "sin", [one("sin", 0.5)], [-7.0, 10.0]),
            ),
            Part(
                "`cos`",
                ("Value.cos",),
                lambda: check_op(kernel, "cos", [one("cos", 0.5)], [-7.0, 10.0]),
            ),
            Part("`sqrt`", ("Value.sqrt",), sqrt),
        ],
    )


# ---- the neuron ----------------------------------------------------------------------------


def neuron(kernel: Kernel) -> None:
    """The neuron on 1 to 4 inputs, with the course's tanh (only the neuron is graded)."""
    rng = kernel.rng
    cases = [([2.0, 0.0], [-3.0, 1.0], 6.8813735870195432)]
    for trial in range(32):
        size = 1 + trial % 4
        cases.append(
            (
                [round(rng.uniform(-2.0, 2.0), 2) for _ in range(size)],
                [round(rng.uniform(-2.0, 2.0), 2) for _ in range(size)],
                round(rng.uniform(-1.5, 1.5), 2),
            )
        )
    results = kernel.run(
        "neuron",
        value="Value",
        function="neuron",
        given=[TANH],
        cases=[{"xs": xs, "ws": ws, "b": b} for xs, ws, b in cases],
        what="neuron(xs, ws, b)",
    )
    for (xs, ws, b), got in zip(cases, results):
        where = f"with xs={xs}, ws={ws}, b={b}"
        vx, vw, vb = [RefValue(v) for v in xs], [RefValue(v) for v in ws], RefValue(b)
        o = sum((w * x for w, x in zip(vw, vx)), vb).tanh()
        o.backward()
        if got.get("failed") == "call":
            fail(f"neuron raised {got['error']}\n{where}")
        if not close(got["data"], o.data):
            fail(f"neuron should give o = {num(o.data)}, got {num(got['data'])}\n{where}")
        if "failed" in got:
            fail(f"backpropagating the neuron raised {got['error']}\n{where}")
        names = (
            [(f"x{i + 1}", v, g) for i, (v, g) in enumerate(zip(vx, got["grads"]["xs"]))]
            + [(f"w{i + 1}", v, g) for i, (v, g) in enumerate(zip(vw, got["grads"]["ws"]))]
            + [("b", vb, got["grads"]["b"])]
        )
        for name, truth, grad in names:
            if not close(grad, truth.grad):
                fail(f"neuron: do/d{name} should be {num(truth.grad)}, got {num(grad)}\n{where}")


# What each test grades, as ``Given`` targets name it: the course's code for these is sent
# to the kernel only once the test has run (verdicts.Deferred).
EXERCISES = {"act_test_tanh": ("Value.tanh",)}

TESTS = {
    "act_test_tanh": tanh,
    "act_test_relu": relu,
    "act_test_exp_log": exp_log,
    "act_test_sigmoid": sigmoid,
    "act_test_sin_cos_sqrt": sin_cos_sqrt,
    "act_test_neuron": neuron,
}
