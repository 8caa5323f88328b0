"""05_mlp (a neural network on the given engine): the hidden tests pass correct work,
written any way, and catch the classic bugs, each in the cell that grades the broken
exercise and only there (layers and MLPs are graded on the course's Module and Neuron).
Its losses and training loop are lesson 5b's: tests/test_05_training.py.

Mutants run the notebook's graded cells only (the engine cell, the exercises and their
checks): the demonstrations (the tiny data set, an MLP against a Sequential) would fail on
a broken network too, and no check depends on them. The solution and the blank release
run in full.
"""

import catalogue
import matplotlib
import nbformat
import pytest
from catalogue import (
    assert_catches,
    assert_passes,
    assert_visible_and_hidden_fail,
    assert_visible_fails,
    changed,
    find,
    flat,
    graded,
    hidden_message,
    ids,
)
from helpers import (
    assert_blank_fails_each,
    grade_id,
    mutate,
)

matplotlib.use("Agg")  # the notebook draws figures; no window while testing

A = "05_mlp"
NEURON, MLP, LINEAR = "mlp_test_neuron", "mlp_test_mlp", "mlp_test_linear"
EXERCISES = {NEURON, MLP, LINEAR}

# (description, old text, new text, the test cells that must fail)
BUGS = [
    (
        "Module.parameters returns None",
        "        return []\n        ### END",
        "        pass\n        ### END",
        {NEURON},
    ),
    (
        "zero_grad resets data, not grad",
        "for p in self.parameters():\n            p.grad = 0.0",
        "for p in self.parameters():\n            p.data = 0.0",
        {NEURON},
    ),
    (
        "zero_grad zeroes a copy",
        "for p in self.parameters():\n            p.grad = 0.0",
        "for p in self.parameters():\n            g = p.grad\n            g = 0.0",
        {NEURON},
    ),
    (
        "Neuron forgets the bias in parameters()",
        "return [*self.w, self.b]",
        "return list(self.w)",
        {NEURON},
    ),
    (
        "Neuron lists the bias first",
        "return [*self.w, self.b]",
        "return [self.b, *self.w]",
        {NEURON},
    ),
    (
        "Neuron forgets the bias in its sum",
        "act = dot(self.w, x, self.b)",
        "act = dot(self.w, x)",
        {NEURON},
    ),
    (
        "Neuron ignores nonlin",
        "return act.relu() if self.nonlin else act",
        "return act.relu()",
        {NEURON},
    ),
    (
        "Neuron uses tanh",
        "return act.relu() if self.nonlin else act",
        "return act.tanh() if self.nonlin else act",
        {NEURON},
    ),
    (
        "relu on the output layer",
        "Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1)",
        "Layer(sizes[i], sizes[i + 1])",
        {MLP},
    ),
    (
        "only the first layer nonlinear",
        "Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1)",
        "Layer(sizes[i], sizes[i + 1], nonlin=i == 0)",
        {MLP},
    ),
    (
        "Layer returns a list for nout == 1",
        "return outs[0] if len(outs) == 1 else outs",
        "return outs",
        {MLP},
    ),
    (
        "Layer lists all weights, then all biases",
        "return [p for n in self.neurons for p in n.parameters()]",
        "return [w for n in self.neurons for w in n.w] + [n.b for n in self.neurons]",
        {MLP},
    ),
    (
        "Layer ignores its kwargs",
        "self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]",
        "self.neurons = [Neuron(nin) for _ in range(nout)]",
        {MLP},
    ),
    (
        "MLP forgets the last layer's parameters",
        "return [p for layer in self.layers for p in layer.parameters()]",
        "return [p for layer in self.layers[:-1] for p in layer.parameters()]",
        {MLP},
    ),
    (
        "Linear lists the biases first",
        "return [w for row in self.weight for w in row] + list(self.bias)",
        "return list(self.bias) + [w for row in self.weight for w in row]",
        {LINEAR},
    ),
    (
        "Linear lists the weights column by column",
        "return [w for row in self.weight for w in row] + list(self.bias)",
        "return [row[j] for j in range(len(self.weight[0])) for row in self.weight]"
        " + list(self.bias)",
        {LINEAR},
    ),
    (
        "Linear returns a Value for nout == 1",
        "return [dot(row, x, b) for row, b in zip(self.weight, self.bias)]",
        "outs = [dot(row, x, b) for row, b in zip(self.weight, self.bias)]\n"
        "        return outs[0] if len(outs) == 1 else outs",
        {LINEAR},
    ),
    (
        "Linear applies relu",
        "return [dot(row, x, b) for row, b in zip(self.weight, self.bias)]",
        "return [dot(row, x, b).relu() for row, b in zip(self.weight, self.bias)]",
        {LINEAR},
    ),
    (
        "Sequential keeps only the first module's parameters",
        "return [p for module in self.modules for p in module.parameters()]",
        "return self.modules[0].parameters()",
        {LINEAR},
    ),
    (
        "Sequential skips the last module",
        "for module in self.modules:\n            x = module(x)",
        "for module in self.modules[:-1]:\n            x = module(x)",
        {LINEAR},
    ),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "Module.parameters as list()",
        "        return []\n        ### END",
        "        return list()\n        ### END",
    ),
    (
        "zero_grad to int 0",
        "for p in self.parameters():\n            p.grad = 0.0",
        "for p in self.parameters():\n            p.grad = 0",
    ),
    (
        "Neuron with sum()",
        "act = dot(self.w, x, self.b)",
        "act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)",
    ),
    (
        "Neuron with a loop",
        "        act = dot(self.w, x, self.b)\n",
        "        act = self.b\n"
        "        for wi, xi in zip(self.w, x):\n"
        "            act = act + wi * xi\n",
    ),
    (
        "Neuron with sum() of a list, bias last",
        "act = dot(self.w, x, self.b)",
        "act = sum([wi * xi for wi, xi in zip(self.w, x)]) + self.b",
    ),
    ("Neuron parameters by concatenation", "return [*self.w, self.b]", "return self.w + [self.b]"),
    (
        "Neuron with an explicit if",
        "        return act.relu() if self.nonlin else act\n",
        "        if self.nonlin:\n            act = act.relu()\n        return act\n",
    ),
    (
        "Layer with a loop",
        "        outs = [n(x) for n in self.neurons]\n",
        "        outs = []\n        for n in self.neurons:\n            outs.append(n(x))\n",
    ),
    (
        "MLP layers in a loop",
        "        sizes = [nin, *nouts]\n        self.layers = [\n"
        "            Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1) "
        "for i in range(len(nouts))\n        ]\n",
        "        self.layers = []\n        for i, nout in enumerate(nouts):\n"
        "            last = i == len(nouts) - 1\n"
        "            self.layers.append(Layer(nin, nout, nonlin=not last))\n"
        "            nin = nout\n",
    ),
    (
        "MLP parameters by extend",
        "        return [p for layer in self.layers for p in layer.parameters()]\n",
        "        params = []\n        for layer in self.layers:\n"
        "            params.extend(layer.parameters())\n        return params\n",
    ),
    (
        "Linear with sums",
        "return [dot(row, x, b) for row, b in zip(self.weight, self.bias)]",
        "return [sum((w * xi for w, xi in zip(row, x)), b) "
        "for row, b in zip(self.weight, self.bias)]",
    ),
    (
        "Linear parameters by sum of lists",
        "return [w for row in self.weight for w in row] + list(self.bias)",
        "return sum(self.weight, []) + self.bias",
    ),
    ("Sequential keeps a tuple", "self.modules = list(modules)", "self.modules = modules"),
    (
        "Layer returns a tuple",
        "return outs[0] if len(outs) == 1 else outs",
        "return outs[0] if len(outs) == 1 else tuple(outs)",
    ),
    (
        "Linear returns a tuple",
        "return [dot(row, x, b) for row, b in zip(self.weight, self.bias)]",
        "return tuple(dot(row, x, b) for row, b in zip(self.weight, self.bias))",
    ),
    ("Neuron.parameters() a tuple", "return [*self.w, self.b]", "return (*self.w, self.b)"),
]


def graded_only(nb):
    """The notebook without its demo cells: only the engine cell (the course's lessons 1
    to 3, from the notebooks next to it) and the locked, solution and check cells."""
    nb = nbformat.from_dict(nb)
    nb.cells = [
        c
        for c in nb.cells
        if c.cell_type != "code" or grade_id(c) or "engine" in c.metadata.get("tags", [])
    ]
    return nb


def test_solution_passes_every_check(solution):
    """The whole notebook, demos included."""
    assert_passes(solution, A)


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, name, old, new, cells):
    """Each bug fails its exercise's hidden test, and its visible check too: a visible check
    may also fail for a bug in an exercise it builds on (layers use the student's Neuron)."""
    nb = graded_only(mutate(solution, old, new))
    assert_catches(nb, A, cells)
    assert_visible_fails(nb, A, cells, exactly=False)


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    """Full marks, and every visible check passes."""
    assert_passes(graded_only(mutate(solution, old, new)), A, visible=True)


# Contract departures a student can make, code pasted from elsewhere among them: what the
# hidden test of the exercise requires, the visible check must require too (both fail).
# (description, [(old text, new text), ...], the exercise's test cell)
DEPARTURES = [
    (
        "zero_grad written in Neuron, Module's left a stub",
        [
            (
                "        for p in self.parameters():\n            p.grad = 0.0\n",
                "        raise NotImplementedError()\n",
            ),
            (
                "        return [*self.w, self.b]\n",
                "        return [*self.w, self.b]\n\n    def zero_grad(self):\n"
                "        for p in self.parameters():\n            p.grad = 0.0\n",
            ),
        ],
        NEURON,
    ),
    (
        "zero_grad resets data as well",
        [("            p.grad = 0.0\n", "            p.grad = p.data = 0.0\n")],
        NEURON,
    ),
    (
        "Neuron.parameters() a generator",
        [("return [*self.w, self.b]", "return (p for p in [*self.w, self.b])")],
        NEURON,
    ),
    (
        "Neuron.parameters() grows at each call",
        [
            (
                "return [*self.w, self.b]",
                'self.__dict__.setdefault("ps", []).extend([*self.w, self.b])\n'
                "        return self.ps",
            )
        ],
        NEURON,
    ),
    (
        "Neuron returns a list of one Value",
        [
            (
                "return act.relu() if self.nonlin else act",
                "return [act.relu() if self.nonlin else act]",
            )
        ],
        NEURON,
    ),
    (
        "Neuron cuts its inputs off the graph",
        [
            (
                "act = dot(self.w, x, self.b)",
                'act = dot(self.w, [getattr(v, "data", v) for v in x], self.b)',
            )
        ],
        NEURON,
    ),
    (
        "Neuron with sigmoid",
        [
            (
                "return act.relu() if self.nonlin else act",
                "return act.sigmoid() if self.nonlin else act",
            )
        ],
        NEURON,
    ),
    (
        "Neuron never applies relu",
        [("return act.relu() if self.nonlin else act", "return act")],
        NEURON,
    ),
    (
        "Layer adds a relu of its own",
        [("outs = [n(x) for n in self.neurons]", "outs = [n(x).relu() for n in self.neurons]")],
        MLP,
    ),
    (
        "Layer.parameters() a generator",
        [
            (
                "return [p for n in self.neurons for p in n.parameters()]",
                "return (p for n in self.neurons for p in n.parameters())",
            )
        ],
        MLP,
    ),
    (
        "MLP lists the last layer first",
        [
            (
                "return [p for layer in self.layers for p in layer.parameters()]",
                "return [p for layer in self.layers[::-1] for p in layer.parameters()]",
            )
        ],
        MLP,
    ),
    (
        "MLP applies relu to a single output",
        [
            (
                "            x = layer(x)\n        return x",
                "            x = layer(x)\n        return x.relu() if isinstance(x, Value) else x",
            )
        ],
        MLP,
    ),
    (
        "MLP with every layer linear",
        [("nonlin=i != len(nouts) - 1", "nonlin=False")],
        MLP,
    ),
    (
        "Linear.parameters() a generator",
        [
            (
                "return [w for row in self.weight for w in row] + list(self.bias)",
                "yield from [w for row in self.weight for w in row] + list(self.bias)",
            )
        ],
        LINEAR,
    ),
    (
        "Sequential keeps only the Linear modules' parameters",
        [
            (
                "return [p for module in self.modules for p in module.parameters()]",
                "return [p for m in self.modules if isinstance(m, Linear) for p in m.parameters()]",
            )
        ],
        LINEAR,
    ),
]


@pytest.mark.parametrize("name, changes, cell", DEPARTURES, ids=ids(DEPARTURES))
def test_visible_and_hidden_agree_on_each_departure(solution, name, changes, cell):
    """The visible check fails the exercise (its message short), and so does its hidden
    test, on the notebook's own definitions."""
    assert_visible_and_hidden_fail(graded_only(changed(solution, changes)), A, cell)


def bug(name: str) -> tuple[str, str]:
    return find(BUGS, name)[1:3]


def broken(solution, name: str):
    """The solution with the bug or departure ``name``, as the catalogue grades it."""
    return graded_only(catalogue.broken(solution, BUGS, DEPARTURES, name=name))


MESSAGES = [
    ("relu on the output layer", "mlp", "is the last layer linear (nonlin=False)"),
    ("Layer returns a list for nout == 1", "mlp", "should return that Value itself"),
    ("Layer lists all weights, then all biases", "mlp", "neuron by neuron, each w, then b"),
    ("Neuron lists the bias first", "neuron", "should list w[0], w[1], w[2], b got b, w[0]"),
    ("Neuron forgets the bias in parameters()", "neuron", "the 3 weights and the bias"),
    ("zero_grad resets data, not grad", "neuron", "grad should be 0.0"),
    ("Linear lists the biases first", "linear", "got bias[0], bias[1], bias[2], weight[0][0]"),
    ("Linear returns a Value for nout == 1", "linear", "should return a list of 1 Value,"),
]
CELLS = {
    "neuron": NEURON,
    "mlp": MLP,
    "linear": LINEAR,
}


@pytest.mark.parametrize("name, check, words", MESSAGES, ids=ids(MESSAGES))
def test_hidden_messages_say_what_is_wrong(solution, name, check, words):
    message = hidden_message(broken(solution, name), A, CELLS[check])
    assert words in flat(message), message


TANH = "tanh where relu is asked"
RELU_LINEAR = "relu applied where a linear output was asked"
KWARGS = "are keyword arguments passed on?"
LAST = "is the last layer linear (nonlin=False), with no relu after it?"
NO_RELU = "no relu between layers"
UNSHAPED = "no relu where it is asked"
# Each hint is said on its evidence, by the visible check and the hidden test alike, and
# stays silent for another bug with the same symptom (a wrong output in the same check):
# (bug or departure, its cell, words its messages say, words they must not say)
HINTS = [
    ("Neuron uses tanh", NEURON, [TANH], [RELU_LINEAR, UNSHAPED]),
    ("Neuron with sigmoid", NEURON, [], [TANH, RELU_LINEAR, UNSHAPED]),
    ("Neuron forgets the bias in its sum", NEURON, [], [TANH, RELU_LINEAR, UNSHAPED]),
    ("Neuron ignores nonlin", NEURON, [RELU_LINEAR], [TANH, UNSHAPED]),
    ("Neuron never applies relu", NEURON, [UNSHAPED], [TANH, RELU_LINEAR]),
    ("Layer ignores its kwargs", MLP, [RELU_LINEAR, KWARGS, "adds no relu"], ["w, then b"]),
    ("Layer adds a relu of its own", MLP, [RELU_LINEAR, "adds no relu"], ["w, then b"]),
    ("Layer lists all weights, then all biases", MLP, ["w, then b"], [RELU_LINEAR]),
    ("relu on the output layer", MLP, [RELU_LINEAR, LAST], [KWARGS, NO_RELU]),
    ("MLP applies relu to a single output", MLP, [RELU_LINEAR, LAST], [KWARGS, NO_RELU]),
    ("MLP with every layer linear", MLP, [NO_RELU], [RELU_LINEAR]),
    ("only the first layer nonlinear", MLP, [], [RELU_LINEAR, NO_RELU, KWARGS]),
    ("Linear applies relu", LINEAR, [RELU_LINEAR, "a Linear has no activation"], []),
    ("Linear lists the biases first", LINEAR, [], [RELU_LINEAR]),
]


@pytest.mark.parametrize("name, cell, said, unsaid", HINTS, ids=ids(HINTS))
def test_hints_stand_on_their_evidence(solution, name, cell, said, unsaid):
    nb = broken(solution, name)
    for message in (graded(nb, A, visible=True)[cell], hidden_message(nb, A, cell)):
        text = flat(message)
        assert all(words in text for words in said), message
        assert not any(words in text for words in unsaid), message


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


def _pasted(nb: nbformat.NotebookNode, cells: dict[str, str]) -> nbformat.NotebookNode:
    """``nb`` with whole solution cells replaced, as a student pasting code does."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and grade_id(cell) in cells:
            cell.source = cells[grade_id(cell)]
    return nb
