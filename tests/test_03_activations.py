"""Lesson 03 (activations and elementary functions): the hidden tests pass correct work,
written any way, and catch the classic bugs, each in the cell that grades the broken
exercise."""

import matplotlib
import pytest
from catalogue import assert_catches, assert_passes, find, graded, hidden_message, ids
from helpers import (
    assert_blank_fails_each,
    mutate,
)

matplotlib.use("Agg")  # the notebook draws a figure; no window while testing

A = "03_activations"
TANH, RELU, EXPLOG, SIGMOID, TRIG, NEURON = (
    "act_test_tanh",
    "act_test_relu",
    "act_test_exp_log",
    "act_test_sigmoid",
    "act_test_sin_cos_sqrt",
    "act_test_neuron",
)
EXERCISES = {TANH, RELU, EXPLOG, SIGMOID, TRIG, NEURON}

NAIVE_SIGMOID = """\
    if x >= 0:
        s = 1 / (1 + math.exp(-x))
    else:
        z = math.exp(x)
        s = z / (1 + z)
"""
LOG_DOMAIN = """\
    if self.data <= 0:
        raise ValueError(f"log is only defined for positive numbers, got {self.data}")
"""
SQRT_DOMAIN = """\
    if self.data < 0:
        raise ValueError(f"sqrt is only defined for numbers >= 0, got {self.data}")
"""

# (description, old text, new text, the test cells that must fail)
BUGS = [
    (
        "tanh derivative from the input",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += (1 - self.data**2) * out.grad",
        {TANH},
    ),
    (
        "tanh derivative 1 + t**2",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += (1 + t**2) * out.grad",
        {TANH},
    ),
    (
        "tanh without * out.grad",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += 1 - t**2",
        {TANH},
    ),
    (
        "tanh from exp(2x), overflows",
        "t = math.tanh(self.data)",
        "t = (math.exp(2 * self.data) - 1) / (math.exp(2 * self.data) + 1)",
        {TANH},
    ),
    (
        "tanh slope via cosh, overflows",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += out.grad / math.cosh(self.data) ** 2",
        {TANH},
    ),
    (
        "relu passes gradient at 0 (>=)",
        "(1.0 if self.data > 0 else 0.0)",
        "(1.0 if self.data >= 0 else 0.0)",
        {RELU},
    ),
    (
        "relu gradient 1 everywhere",
        "(1.0 if self.data > 0 else 0.0) * out.grad",
        "out.grad",
        {RELU},
    ),
    (
        "relu without * out.grad",
        "(1.0 if self.data > 0 else 0.0) * out.grad",
        "(1.0 if self.data > 0 else 0.0)",
        {RELU},
    ),
    (
        "exp derivative from self.data",
        "self.grad += e * out.grad",
        "self.grad += self.data * out.grad",
        {EXPLOG},
    ),
    (
        "exp returns inf instead of raising",
        "e = math.exp(self.data)",
        "e = math.exp(self.data) if self.data < 709 else math.inf",
        {EXPLOG},
    ),
    ("log without a domain check", LOG_DOMAIN, "", {EXPLOG}),
    (
        "log domain error without the value",
        'got {self.data}")\n    out = Value(math.log',
        'got a bad number")\n    out = Value(math.log',
        {EXPLOG},
    ),
    ("log accepts 0", "if self.data <= 0:", "if self.data < 0:", {EXPLOG}),
    (
        "log derivative without * out.grad",
        "self.grad += (1 / self.data) * out.grad",
        "self.grad += 1 / self.data",
        {EXPLOG},
    ),
    (
        "log derivative 1 / out.data",
        "self.grad += (1 / self.data) * out.grad",
        "self.grad += (1 / out.data) * out.grad",
        {EXPLOG},
    ),
    (
        "naive sigmoid, overflows at -1000",
        NAIVE_SIGMOID,
        "    s = 1 / (1 + math.exp(-x))\n",
        {SIGMOID},
    ),
    (
        "sigmoid derivative s*(1+s)",
        "self.grad += s * (1 - s) * out.grad",
        "self.grad += s * (1 + s) * out.grad",
        {SIGMOID},
    ),
    (
        "sigmoid without * out.grad",
        "self.grad += s * (1 - s) * out.grad",
        "self.grad += s * (1 - s)",
        {SIGMOID},
    ),
    (
        "sigmoid slope from exp(-x), overflows",
        "self.grad += s * (1 - s) * out.grad",
        "self.grad += math.exp(-x) / (1 + math.exp(-x)) ** 2 * out.grad",
        {SIGMOID},
    ),
    (
        "cos derivative +sin",
        "self.grad += -math.sin(self.data) * out.grad",
        "self.grad += math.sin(self.data) * out.grad",
        {TRIG},
    ),
    (
        "sin derivative -cos",
        "self.grad += math.cos(self.data) * out.grad",
        "self.grad += -math.cos(self.data) * out.grad",
        {TRIG},
    ),
    (
        "sqrt derivative 1/sqrt(x)",
        "self.grad += 0.5 / r * out.grad",
        "self.grad += 1 / r * out.grad",
        {TRIG},
    ),
    ("sqrt without * out.grad", "self.grad += 0.5 / r * out.grad", "self.grad += 0.5 / r", {TRIG}),
    ("sqrt without a domain check", SQRT_DOMAIN, "", {TRIG}),
    ("neuron without the bias", "    n = b\n    for w, x", "    n = 0.0\n    for w, x", {NEURON}),
    ("neuron returns n, not tanh(n)", "return n.tanh()", "return n", {NEURON}),
    ("neuron with relu", "return n.tanh()", "return n.relu()", {NEURON}),
    ("neuron rebuilds from .data", "return n.tanh()", "return Value(n.data).tanh()", {NEURON}),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "tanh by a stable exp formula",
        "t = math.tanh(self.data)",
        """\
x = self.data
    z = math.exp(-2 * abs(x))
    t = math.copysign((1 - z) / (1 + z), x)""",
    ),
    (
        "tanh slope recomputed from x",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += (1 - math.tanh(self.data) ** 2) * out.grad",
    ),
    (
        "tanh slope from out.data",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += (1 - out.data * out.data) * out.grad",
    ),
    (
        "relu via max and out.data > 0",
        """\
    out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

    def _backward():
        self.grad += (1.0 if self.data > 0 else 0.0) * out.grad""",
        """\
    out = Value(max(0, self.data), (self,), "ReLU")

    def _backward():
        self.grad += (out.data > 0) * out.grad""",
    ),
    (
        "relu with an if in the closure",
        "self.grad += (1.0 if self.data > 0 else 0.0) * out.grad",
        "if self.data > 0:\n            self.grad += out.grad",
    ),
    ("exp slope via out.data", "self.grad += e * out.grad", "self.grad += out.data * out.grad"),
    (
        "exp slope via math.exp(x)",
        "self.grad += e * out.grad",
        "self.grad += math.exp(self.data) * out.grad",
    ),
    ("exp via math.e ** x", "e = math.exp(self.data)", "e = math.e**self.data"),
    (
        "exp with its own OverflowError",
        "e = math.exp(self.data)",
        """\
if self.data > 709.78:
        raise OverflowError(f"exp({self.data}) is too large for a float")
    e = math.exp(self.data)""",
    ),
    (
        "log domain message with repr",
        'got {self.data}")\n    out = Value(math.log',
        'not {self!r}")\n    out = Value(math.log',
    ),
    (
        "log slope via division",
        "self.grad += (1 / self.data) * out.grad",
        "self.grad += out.grad / self.data",
    ),
    ("sigmoid via the tanh identity", NAIVE_SIGMOID, "    s = 0.5 * (1 + math.tanh(x / 2))\n"),
    (
        "sigmoid via exp(-|x|)",
        NAIVE_SIGMOID,
        """\
    z = math.exp(-abs(x))
    s = 1 / (1 + z) if x >= 0 else z / (1 + z)
""",
    ),
    (
        "sigmoid slope from out.data",
        "self.grad += s * (1 - s) * out.grad",
        "self.grad += out.data * (1 - out.data) * out.grad",
    ),
    (
        "cos slope with -=",
        "self.grad += -math.sin(self.data) * out.grad",
        "self.grad -= math.sin(self.data) * out.grad",
    ),
    ("sqrt via ** 0.5", "r = math.sqrt(self.data)", "r = self.data**0.5"),
    (
        "sqrt as the node self ** 0.5",
        """\
    r = math.sqrt(self.data)
    out = Value(r, (self,), "sqrt")

    def _backward():
        self.grad += 0.5 / r * out.grad

    out._backward = _backward
    return out""",
        "    return self**0.5",
    ),
    (
        "sqrt slope via x ** -0.5",
        "self.grad += 0.5 / r * out.grad",
        "self.grad += 0.5 * self.data**-0.5 * out.grad",
    ),
    (
        "sqrt slope via out.data",
        "self.grad += 0.5 / r * out.grad",
        "self.grad += out.grad / (2 * out.data)",
    ),
    (
        "sqrt domain message with an f-string format",
        'raise ValueError(f"sqrt is only defined for numbers >= 0, got {self.data}")',
        'raise ValueError(f"cannot take sqrt({self.data:.2f})")',
    ),
    (
        "neuron with sum()",
        "    n = b\n    for w, x in zip(ws, xs):\n        n = n + w * x\n",
        "    n = sum((wi * xi for wi, xi in zip(ws, xs)), b)\n",
    ),
    (
        "neuron adding the bias last",
        "    n = b\n    for w, x in zip(ws, xs):\n        n = n + w * x\n",
        "    n = sum(x * w for x, w in zip(xs, ws)) + b\n",
    ),
    (
        "neuron starting from Value(0.0)",
        "    n = b\n    for w, x in zip(ws, xs):\n",
        "    n = Value(0.0) + b\n    for w, x in zip(ws, xs):\n",
    ),
]


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it.
EQUIVALENT_MUTANTS = {
    "act_relu line 4: Gt -> GtE": "relu's data at exactly 0 is 0 with > or >=",
    "act_sigmoid line 5: 0 + 1": "which stable formula serves 0 <= x < 1: both are exact there",
    "act_sigmoid line 5: GtE -> Gt": "which stable formula serves x = 0: both give 0.5",
}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A)


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, name, old, new, cells):
    assert_catches(mutate(solution, old, new), A, cells)


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    assert_passes(mutate(solution, old, new), A)


def bug(name: str) -> tuple[str, str]:
    return find(BUGS, name)[1:3]


def hidden(solution, name: str, cell: str) -> str:
    """The message of the hidden test of ``cell`` on the bug ``name`` (the catalogue's)."""
    return hidden_message(mutate(solution, *bug(name)), A, cell)


def test_visible_messages_name_the_input(solution):
    overflow = graded(mutate(solution, *bug("tanh from exp(2x), overflows")), A, visible=True)[TANH]
    assert overflow == "(1000 * a).tanh() raised OverflowError: math range error", overflow
    sigmoid = graded(mutate(solution, *bug("naive sigmoid, overflows at -1000")), A, visible=True)[
        SIGMOID
    ]
    assert sigmoid.startswith("(-1000 * a).sigmoid() raised OverflowError"), sigmoid
    kink = graded(mutate(solution, *bug("relu passes gradient at 0 (>=)")), A, visible=True)[RELU]
    assert kink == "d(a.relu())/da at a=0: expected 0, got 1.", kink


def test_hidden_messages_name_the_problem(solution):
    """The op and what is wrong with it: the large input, the kink, the unnamed value, the
    missing out.grad, the wrong formula, the rebuilt graph."""
    overflow = hidden(solution, "tanh from exp(2x), overflows", TANH)
    assert "`tanh`:" in overflow and "raised OverflowError" in overflow, overflow
    assert "large inputs" in overflow
    kink = hidden(solution, "relu passes gradient at 0 (>=)", RELU)
    assert "at x = 0 relu has a kink" in kink, kink
    unnamed = hidden(solution, "log domain error without the value", EXPLOG)
    assert "Value(0).log() raised ValueError, but its message should name" in unnamed, unnamed
    no_grad = hidden(solution, "sigmoid without * out.grad", SIGMOID)
    assert "`sigmoid`:" in no_grad and "multiplied by out.grad" in no_grad, no_grad
    formula = hidden(solution, "tanh derivative from the input", TANH)
    assert "the OUTPUT tanh(x)" in formula, formula
    rebuilt = hidden(solution, "neuron rebuilds from .data", NEURON)
    assert "do/dx1 should be" in rebuilt, rebuilt


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


@pytest.mark.parametrize(
    "seed", [1, *(pytest.param(seed, marks=pytest.mark.mutation) for seed in range(2, 11))]
)
def test_grad_set_instead_of_added_fails_every_op_on_every_seed(solution, seed):
    """Grading draws new inputs for every submission: two students with the same bug
    (`.grad =` for `.grad +=` in every activation) must lose the same points, whatever
    the draw."""
    import copy
    import re

    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            cell.source = re.sub(r"\.grad \+=", ".grad =", cell.source)
    failed = set(graded(nb, A, seed=seed))
    assert failed == EXERCISES - {NEURON}, failed
