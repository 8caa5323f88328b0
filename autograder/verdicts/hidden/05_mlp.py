"""Hidden tests of 05_mlp, a neural network on the engine of lessons 1 to 3 (the student's
own in the lab; the course's, ``ENGINE``, when graded, with coursekit's ``dot``).

The student's modules get the weights of the reference network (refgrad.nn), copied in
``parameters()`` order, and must then agree with it: every output, and the gradient of
every parameter and input. Before that, parameters() must be a list of the module's
Values, in the lesson's order where the lesson's attributes (w, b, neurons, layers,
weight, bias) show it. A wrong output names a cause only on its evidence: every output
of that module is what the slip would give (relu where a linear output was asked, tanh
where relu is). Within an exercise each class (each of Module's two methods) earns
its share of the points (``shares``). Code built on an earlier exercise runs on the
student's version of it once that has passed its test or part (as in the lab), else on
the course's (``Given``, ``Kernel.course``): a Neuron on Module, a Layer on Neuron, an
MLP on Layer, a Sequential on Linear. So only the exercise that has a bug loses points.
The losses and the training loop are lesson 5b's (05_training.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from .common import Given, Kernel, Part, RefValue, close, fail, num, ref_nn, shares
from .lessons import lesson_engine

ENGINE = lesson_engine("05_mlp", "Value", "dot")  # the course's lessons 1 to 3, when graded

MODULE = (
    Given("Module.parameters", "parameters", "def parameters(self):\n    return []\n"),
    Given(
        "Module.zero_grad",
        "zero_grad",
        "def zero_grad(self):\n    for p in self.parameters():\n        p.grad = 0.0\n",
    ),
)
NEURON = Given(
    "Neuron",
    "Neuron",
    """
class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = dot(self.w, x, self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return [*self.w, self.b]
""",
)
LAYER = Given(
    "Layer",
    "Layer",
    """
class Layer(Module):
    def __init__(self, nin, nout, **kwargs):
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x):
        outs = [n(x) for n in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]
""",
)
LINEAR = Given(
    "Linear",
    "Linear",
    """
class Linear(Module):
    def __init__(self, nin, nout):
        bound = 1 / math.sqrt(nin)
        self.weight = [[Value(random.uniform(-bound, bound)) for _ in range(nin)]
                       for _ in range(nout)]
        self.bias = [Value(random.uniform(-bound, bound)) for _ in range(nout)]

    def __call__(self, x):
        return [dot(row, x, b) for row, b in zip(self.weight, self.bias)]

    def parameters(self):
        return [w for row in self.weight for w in row] + list(self.bias)
""",
)


def vec(values: Sequence[float]) -> str:
    return "[" + ", ".join(num(float(v)) for v in values) + "]"


# A cause of wrong outputs, named only on its evidence: what the slip would output at x
# (from the reference), and what to say when every output of a build is exactly that.
Cause = tuple[Callable[[list[float]], list[float]], str]


def _outputs(ref, x: Sequence[float]) -> list[float]:
    out = ref([RefValue(v) for v in x])
    return [out.data] if isinstance(out, RefValue) else [o.data for o in out]


def _relu(values: list[float]) -> list[float]:
    return [max(0.0, v) for v in values]


def _linear(ref) -> Callable[[list[float]], list[float]]:
    """The outputs of ``ref`` with every neuron's relu left out (nonlin=False)."""

    def outputs(x):
        neurons = _neurons(ref)
        flags = [n.nonlin for n in neurons]
        for n in neurons:
            n.nonlin = False
        try:
            return _outputs(ref, x)
        finally:
            for n, flag in zip(neurons, flags):
                n.nonlin = flag

    return outputs


def _neurons(ref) -> list:
    if hasattr(ref, "layers"):
        return [n for layer in ref.layers for n in layer.neurons]
    return list(getattr(ref, "neurons", [ref]))


RELU_OUT = "relu applied where a linear output was asked"


# ---- a module against the reference, weights copied -------------------------------------


def check_module(
    kernel: Kernel,
    build: str,
    ref,
    nin: int,
    *,
    rounds: int = 4,
    given: Sequence[Given] = (),
    layout: list[str] | None = None,
    layout_labels: Sequence[str] = (),
    order_text: str = "",
    causes: Sequence[Cause] = (),
    zero_grad: bool = False,
    count_text: str = "",
) -> None:
    """Build ``build`` with the student's classes; copy ``ref``'s (randomized) weights into
    it in parameters() order; compare outputs, and gradients from each output. A wrong
    output names each of ``causes`` that gives every output of the build exactly."""
    rng = kernel.rng
    ref_params = ref.parameters()
    weights = [round(rng.uniform(-1.0, 1.0), 4) for _ in ref_params]
    for q, w in zip(ref_params, weights):
        q.data = w
    runs = []
    for r in range(rounds):
        x = [round(rng.uniform(-2.0, 2.0), 3) for _ in range(nin)]
        first = ref([RefValue(v) for v in x])
        n_out = 1 if isinstance(first, RefValue) else len(first)
        runs += [
            {"x": x, "as_values": r % 2 == 0, "backward_from": i} for i in range(min(n_out, 3))
        ]
    info = kernel.run(
        "module",
        value="Value",
        build=build,
        weights=weights,
        runs=runs,
        layout=layout,
        zero_grad=zero_grad,
        given=given,
        what=build,
    )
    params_text = f"{build}.parameters()"
    if "count" not in info or not info["listed"]:
        got = info.get("parameters") or "something else (a list has len and indexes)"
        fail(f"{params_text} should return a list, got {got}")
    if info["not_values"]:
        fail(f"{params_text} should hold only Values, got {info['not_values'][0]}")
    if not info["unique"]:
        fail(f"{params_text} lists the same Value twice")
    if info["count"] != len(ref_params):
        detail = f" ({count_text})" if count_text else ""
        fail(f"{params_text} should give {len(ref_params)} Values{detail}, got {info['count']}")
    if info["again"] != info["count"]:
        fail(
            f"{params_text} should give the same {info['count']} Values each time, got "
            f"{info['again']} when called again: build the list afresh on each call"
        )
    order = info.get("layout")
    if layout_labels and isinstance(order, list) and order != list(range(len(order))):
        fail(_order_message(params_text, order_text, layout_labels, order))
    if len(info.get("runs") or ()) != len(runs):
        fail(
            f"{build}: the kernel's answer is incomplete (was the grading code in the kernel "
            "changed?)"
        )
    for run, got in zip(runs, info["runs"]):
        _check_shape(build, ref, run, got)
    named = [
        text
        for alternative, text in causes
        if all(
            len(got["data"]) == len(want) and all(close(o, w) for o, w in zip(got["data"], want))
            for got, want in ((got, alternative(run["x"])) for run, got in zip(runs, info["runs"]))
        )
    ]
    for run, got in zip(runs, info["runs"]):
        _compare_run(build, ref, run, got, named)
    if zero_grad:
        if "zero_grad_failed" in info:
            fail(f"{build}.zero_grad() raised {info['zero_grad_failed']}")
        if any(g != 0.0 for g in info["zeroed"]):
            fail(
                f"after {build}.zero_grad() every parameter's grad should be 0.0, got "
                f"{vec(info['zeroed'][:4])}..."
            )


def _order_message(params_text: str, order_text: str, labels: Sequence[str], order) -> str:
    """What parameters() should list and what it lists, from the first difference on."""
    start = next(k for k, p in enumerate(order) if p != k)
    want = _labels(labels, range(start, len(order)))
    since = f"from parameters()[{start}] on: " if start else ""
    got = _labels(labels, order[start:])
    if order_text:
        return f"{params_text} should list {order_text}\n{since}{want}\ngot {got}"
    return f"{params_text} should list {since}{want}\ngot {got}"


def _labels(labels: Sequence[str], positions) -> str:
    """The names of the parameters at ``positions`` (the first five), for a message."""
    shown = [labels[p] if 0 <= p < len(labels) else "?" for p in list(positions)[:5]]
    return ", ".join(shown) + (", ..." if len(list(positions)) > 5 else "")


def _check_shape(build: str, ref, run: dict, got: dict) -> None:
    x = run["x"]
    where = f"{build}(x) at x={vec(x)}"
    if "failed" in got and got["failed"] == "call":
        fail(f"{where} raised {got['error']}")
    want = _outputs(ref, x)
    single = isinstance(ref([RefValue(v) for v in x]), RefValue)
    shape = got["shape"]
    if single and shape != "value":
        fail(
            f"{where} returned {'a list' if isinstance(shape, int) else shape}; with a "
            "single output it should return that Value itself, not a list"
        )
    if not single and shape != len(want):
        fail(
            f"{where} should return a list of {len(want)} Value{'s' * (len(want) > 1)}, got "
            f"{'a Value' if shape == 'value' else shape}"
        )


def _compare_run(build: str, ref, run: dict, got: dict, named: Sequence[str]) -> None:
    x, i = run["x"], run["backward_from"]
    ref_xs = [RefValue(v) for v in x]
    raw = ref(ref_xs)
    want = [raw] if isinstance(raw, RefValue) else raw
    for k, (o, w) in enumerate(zip(got["data"], want)):
        if not close(o, w.data):
            label = f"output {k} of {build}" if len(want) > 1 else build
            hint = "".join(f"\n({text})" for text in named)
            fail(f"{label} at x={vec(x)}: expected {num(w.data)}, got {num(o)}{hint}")
    out = f"output {i} of {build}" if len(want) > 1 else build
    if "failed" in got:
        fail(f"backward() from {out} raised {got['error']}")
    for q in ref.parameters():
        q.grad = 0.0
    want[i].backward()
    for j, (g, q) in enumerate(zip(got["grads"], ref.parameters())):
        if not close(g, q.grad):
            fail(
                f"{out} at x={vec(x)}: d(out)/d(parameters()[{j}]) should be {num(q.grad)}, "
                f"got {num(g)}"
            )
    for j, (g, v) in enumerate(zip(got.get("x_grads") or [], ref_xs)):
        if not close(g, v.grad):
            fail(f"{out} at x={vec(x)}: d(out)/dx[{j}] should be {num(v.grad)}, got {num(g)}")


# ---- exercise 1: Module and Neuron ------------------------------------------------------


def neuron(kernel: Kernel) -> None:
    """Module's parameters(), its zero_grad(), then neurons of several sizes, relu or
    linear: each of the three for its share of the points."""
    answers: list[dict] = []

    def base() -> dict:  # one run of the kernel for both of Module's methods
        if not answers:
            answers.append(kernel.run("module_base", value="Value", module="Module", what="Module"))
        return answers[0]

    shares(
        kernel,
        [
            Part("`Module.parameters`", ("Module.parameters",), lambda: _module_parameters(base())),
            Part("`Module.zero_grad`", ("Module.zero_grad",), lambda: _module_zero_grad(base())),
            Part("`Neuron`", ("Neuron",), lambda: _neuron_builds(kernel)),
        ],
    )


def _module_parameters(base: dict) -> None:
    if "parameters_failed" in base:
        fail(f"Module().parameters() raised {base['parameters_failed']}")
    if base["parameters"] != []:
        fail(f"Module().parameters() should be an empty list, got {num(base['parameters'])}")


def _module_zero_grad(base: dict) -> None:
    if "zero_grad_failed" in base:
        fail(f"zero_grad() raised {base['zero_grad_failed']}")
    if base["grads"] != [0.0, 0.0]:
        fail(
            "after zero_grad() every parameter's grad should be 0.0; a module with grads 3 "
            f"and -0.5: got {num(base['grads'][0])} and {num(base['grads'][1])}"
        )
    if base["data"] != [1.5, -2.0]:
        fail("zero_grad() should change only the grads: it changed a parameter's data")


def _neuron_builds(kernel: Kernel) -> None:
    for nin, nonlin in [(3, True), (1, True), (2, False), (5, True), (4, False), (16, True)]:
        build = f"Neuron({nin})" if nonlin else f"Neuron({nin}, nonlin=False)"
        ref = ref_nn.Neuron(nin, nonlin=nonlin, rng=kernel.rng.randrange(10**6))
        check_module(
            kernel,
            build,
            ref,
            nin,
            rounds=6,
            given=kernel.course(*MODULE),
            layout=["m.w", "m.b"],
            layout_labels=[f"w[{j}]" for j in range(nin)] + ["b"],
            zero_grad=True,
            causes=_neuron_causes(ref, nonlin),
            count_text=f"the {nin} weight{'s' * (nin > 1)} and the bias",
        )


def _neuron_causes(ref, nonlin: bool) -> list[Cause]:
    """relu where nonlin=False asks for none; tanh, or nothing, where relu is asked."""
    act = _linear(ref)
    if not nonlin:
        return [(lambda x: _relu(act(x)), f"{RELU_OUT} (nonlin=False)")]
    return [
        (lambda x: [math.tanh(a) for a in act(x)], "tanh where relu is asked"),
        (act, "no relu where it is asked: Neuron(nin) has nonlin=True"),
    ]


# ---- exercise 2: Layer and MLP ----------------------------------------------------------

LAYER_RELU = (
    f"{RELU_OUT}: are keyword arguments passed on?\n"
    "Layer(nin, nout, nonlin=False) makes Neuron(nin, nonlin=False) and adds no relu"
)
MLP_RELU = f"{RELU_OUT}: is the last layer\nlinear (nonlin=False), with no relu after it?"
MLP_LINEAR = "no relu between layers: every layer but the last should use relu"


def mlp(kernel: Kernel) -> None:
    """Layers, then MLPs, each for half the points."""
    shares(
        kernel,
        [
            Part("`Layer`", ("Layer",), lambda: _layers(kernel)),
            Part("`MLP`", ("MLP",), lambda: _mlps(kernel)),
        ],
    )


def _layers(kernel: Kernel) -> None:
    """One output: a Value; several: a list."""
    for nin, nout, nonlin in [
        (3, 4, True),
        (3, 1, True),
        (2, 3, False),
        (4, 1, False),
        (5, 2, True),
    ]:
        build = f"Layer({nin}, {nout})" if nonlin else f"Layer({nin}, {nout}, nonlin=False)"
        ref = ref_nn.Layer(nin, nout, rng=kernel.rng.randrange(10**6), nonlin=nonlin)
        check_module(
            kernel,
            build,
            ref,
            nin,
            given=kernel.course(*MODULE, NEURON),
            layout=["[[n.w, n.b] for n in m.neurons]"],
            layout_labels=_neuron_labels(ref, ""),
            order_text=ORDER_TEXT,
            causes=[] if nonlin else [(lambda x, r=ref: _relu(_outputs(r, x)), LAYER_RELU)],
        )


def _mlps(kernel: Kernel) -> None:
    """MLPs of several shapes."""
    for nin, nouts in [
        (3, [4, 4, 1]),
        (2, [16, 16, 1]),
        (3, [4, 2]),
        (2, [3]),
        (1, [5, 1]),
        (4, [6, 3, 1]),
    ]:
        ref = ref_nn.MLP(nin, nouts, rng=kernel.rng.randrange(10**6))
        causes = [(lambda x, r=ref: _relu(_outputs(r, x)), MLP_RELU)]
        if len(nouts) > 1:
            causes.append((_linear(ref), MLP_LINEAR))
        check_module(
            kernel,
            f"MLP({nin}, {nouts})",
            ref,
            nin,
            rounds=6,
            given=kernel.course(*MODULE, NEURON, LAYER),
            layout=["[[[n.w, n.b] for n in l.neurons] for l in m.layers]"],
            layout_labels=[
                label
                for i, layer in enumerate(ref.layers)
                for label in _neuron_labels(layer, f"l{i}.")
            ],
            order_text="layers in order, each neuron's w, then b",
            causes=causes,
        )


ORDER_TEXT = "neuron by neuron, each w, then b"


def _neuron_labels(layer, prefix: str) -> list[str]:
    """n0.w[0], n0.w[1], ..., n0.b, n1.w[0], ...: a layer's parameters, in order."""
    return [
        f"{prefix}n{i}.{name}"
        for i, n in enumerate(layer.neurons)
        for name in [*(f"w[{j}]" for j in range(len(n.w))), "b"]
    ]


# ---- exercise 3: Linear and Sequential --------------------------------------------------

SEQUENTIALS = [
    ("Sequential(Linear(3, 4), ReLU(), Linear(4, 2))", ["L(3, 4)", "R()", "L(4, 2)"], 3),
    ("Sequential(Linear(2, 5), Tanh(), Linear(5, 1))", ["L(2, 5)", "T()", "L(5, 1)"], 2),
    ("Sequential(Linear(2, 3))", ["L(2, 3)"], 2),
    (
        "Sequential(Linear(2, 4), ReLU(), Linear(4, 4), Tanh(), Linear(4, 1))",
        ["L(2, 4)", "R()", "L(4, 4)", "T()", "L(4, 1)"],
        2,
    ),
    ("Sequential(Sequential(Linear(2, 3), ReLU()), Linear(3, 2))", None, 2),
]


LINEAR_RELU = f"{RELU_OUT}: a Linear has no activation; ReLU() is a module of its own"


def linear(kernel: Kernel) -> None:
    """Linear layers, then Sequentials, each for half the points."""
    shares(
        kernel,
        [
            Part("`Linear`", ("Linear",), lambda: _linears(kernel)),
            Part("`Sequential`", ("Sequential",), lambda: _sequentials(kernel)),
        ],
    )


def _linears(kernel: Kernel) -> None:
    """Always a list out; weights row by row, then biases."""
    for nin, nout in [(2, 3), (3, 1), (1, 4), (5, 2)]:
        ref = ref_nn.Linear(nin, nout, rng=kernel.rng.randrange(10**6))
        check_module(
            kernel,
            f"Linear({nin}, {nout})",
            ref,
            nin,
            given=kernel.course(*MODULE),
            count_text=f"{nout * nin} weights and {nout} biases",
            layout=["m.weight", "m.bias"],
            layout_labels=[f"weight[{r}][{c}]" for r in range(nout) for c in range(nin)]
            + [f"bias[{i}]" for i in range(nout)],
            causes=[(lambda x, r=ref: _relu(_outputs(r, x)), LINEAR_RELU)],
        )


def _sequentials(kernel: Kernel) -> None:
    """Sequentials of Linears and the given activations, nested too."""
    for build, parts, nin in SEQUENTIALS:
        r = random.Random(kernel.rng.randrange(10**6))
        made = {
            "L": lambda a, b, r=r: ref_nn.Linear(a, b, rng=r),
            "R": ref_nn.ReLU,
            "T": ref_nn.Tanh,
        }
        if parts is None:
            inner = ref_nn.Sequential(made["L"](2, 3), ref_nn.ReLU())
            ref = ref_nn.Sequential(inner, made["L"](3, 2))
        else:
            ref = ref_nn.Sequential(*(eval(p, made) for p in parts))
        check_module(kernel, build, ref, nin, given=kernel.course(*MODULE, LINEAR))


# What each test grades, as ``Given`` targets name it: the course's code for these is sent
# to the kernel only once the test has run (verdicts.Deferred).
EXERCISES = {
    "mlp_test_neuron": ("Module.parameters", "Module.zero_grad", "Neuron"),
    "mlp_test_mlp": ("Layer", "MLP"),
    "mlp_test_linear": ("Linear", "Sequential"),
}

TESTS = {
    "mlp_test_neuron": neuron,
    "mlp_test_mlp": mlp,
    "mlp_test_linear": linear,
}
