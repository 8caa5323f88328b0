"""05_mlp (a neural network on the given engine): the hidden tests pass correct work,
written any way, and catch the classic bugs, each in the cell that grades the broken
exercise and only there (layers and MLPs are graded on the course's Module and Neuron).

Mutants run the notebook's graded cells only (the engine cell, the exercises and their
checks): grading skips the training demos too, and no check depends on them. The
solution and the blank release run in full.
"""

import matplotlib
import nbformat
import pytest
from helpers import (
    SOURCE,
    assert_blank_fails_each,
    failing_cells,
    grade_class,
    grade_id,
    mutate,
    read,
    run_cells,
    verdict_of,
)

matplotlib.use("Agg")  # the notebook draws figures; no window while testing

A = "05_mlp"
NEURON, MLP, LINEAR, MSE, BCE, MM, TRAIN = (
    "mlp_test_neuron",
    "mlp_test_mlp",
    "mlp_test_linear",
    "mlp_test_mse",
    "mlp_test_bce",
    "mlp_test_max_margin",
    "mlp_test_train",
)
EXERCISES = {NEURON, MLP, LINEAR, MSE, BCE, MM, TRAIN}

SOLUTION_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        if z.data >= 0:
            total = total + (1 - y) * z + (1 + (-z).exp()).log()
        else:
            total = total - y * z + (1 + z.exp()).log()
    return total / len(logits)
"""
NAIVE_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        s = z.sigmoid()
        total = total - (y * s.log() + (1 - y) * (1 - s).log())
    return total / len(logits)
"""
ONE_SIDED_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        total = total + (1 - y) * z + (1 + (-z).exp()).log()
    return total / len(logits)
"""
SOFTPLUS_BCE = """\
    def softplus(v):  # log(1 + e^v), computed without overflow
        return v + (1 + (-v).exp()).log() if v.data > 0 else (1 + v.exp()).log()

    total = 0.0
    for z, y in zip(logits, targets):
        total = total + y * softplus(-z) + (1 - y) * softplus(z)
    return total / len(logits)
"""
MAX_ZERO_BCE = """\
    losses = []
    for z, y in zip(logits, targets):
        if z.data > 0:
            positive, size = z, z
        else:
            positive, size = 0.0, -z
        losses.append(positive - z * y + (1 + (-size).exp()).log())
    return sum(losses) * (1.0 / len(losses))
"""
SOLUTION_BATCH = "rng.sample(everything, batch_size)"
TRAIN_LOOP = """\
    params = model.parameters()
    everything = list(range(len(xs)))
    for k in range(steps):
        batch = everything if batch_size is None else rng.sample(everything, batch_size)
        preds = [model(xs[i]) for i in batch]
        loss = loss_fn(preds, [ys[i] for i in batch])
        model.zero_grad()
        loss.backward()
        rate = lr * (1 - lr_decay * k / steps)
        for p in params:
            p.data -= rate * p.grad
        losses.append(loss.data)
        if print_every and (k % print_every == 0 or k == steps - 1):
            print(f"step {k + 1:4d}/{steps}   loss {loss.data:.4f}   lr {rate:.3f}")
"""
EPOCH_TRAIN = """\
    order = []
    for k in range(steps):
        if batch_size is None:
            batch = range(len(xs))
        else:
            if len(order) < batch_size:  # a new epoch: every sample once, shuffled
                order = list(range(len(xs)))
                rng.shuffle(order)
            batch, order = order[:batch_size], order[batch_size:]
        batch_xs = [xs[i] for i in batch]
        batch_ys = [ys[i] for i in batch]
        loss = loss_fn([model(x) for x in batch_xs], batch_ys)
        loss.backward()
        rate = lr * (1 - lr_decay * k / steps)
        for p in model.parameters():
            p.data = p.data - rate * p.grad
            p.grad = 0  # zeroed after the update, ready for the next step
        losses.append(loss.data)
        if print_every > 0 and (k % print_every == 0 or k + 1 == steps):
            print(k, loss.data)
"""
CHOICES_TRAIN = """\
    import random as r
    for k in range(steps):
        if batch_size:
            pairs = r.choices(list(zip(xs, ys)), k=batch_size)
        else:
            pairs = list(zip(xs, ys))
        for p in model.parameters():
            p.grad = 0.0
        loss = loss_fn([model(x) for x, _ in pairs], [y for _, y in pairs])
        loss.backward()
        for p in model.parameters():
            p.data -= lr * (1.0 - lr_decay * k / steps) * p.grad
        losses.append(float(loss.data))
        if print_every and (k % print_every == 0 or k + 1 == steps):
            print("step", k + 1, "of", steps, "loss", round(loss.data, 5))
"""


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
    ("MSE without the square", "sum((p - t) ** 2 for p, t", "sum((p - t) for p, t", {MSE}),
    (
        "MSE without the mean",
        "for p, t in zip(preds, targets)) / len(preds)",
        "for p, t in zip(preds, targets))",
        {MSE},
    ),
    (
        "MSE target minus prediction cubed",
        "sum((p - t) ** 2 for p, t",
        "sum((t - p) ** 3 for p, t",
        {MSE},
    ),
    (
        "BCE computed naively",
        SOLUTION_BCE,
        NAIVE_BCE,
        {BCE},
    ),
    (
        "BCE safe for z >= 0 only",
        SOLUTION_BCE,
        ONE_SIDED_BCE,
        {BCE},
    ),
    ("BCE without the mean", "    return total / len(logits)", "    return total", {BCE}),
    (
        "BCE with the label's sign flipped",
        "total = total - y * z + (1 + z.exp()).log()",
        "total = total + y * z + (1 + z.exp()).log()",
        {BCE},
    ),
    (
        "max-margin without L2",
        "penalty = alpha * sum(p * p for p in parameters)",
        "penalty = 0.0",
        {MM},
    ),
    (
        "max-margin with L2 on p, not p**2",
        "penalty = alpha * sum(p * p for p in parameters)",
        "penalty = alpha * sum(parameters)",
        {MM},
    ),
    ("max-margin with the wrong sign", "(1 - y * s).relu()", "(1 + y * s).relu()", {MM}),
    ("max-margin without relu", "(1 - y * s).relu()", "(1 - y * s)", {MM}),
    (
        "max-margin without the mean",
        "for s, y in zip(scores, ys)) / len(scores)",
        "for s, y in zip(scores, ys))",
        {MM},
    ),
    ("training without zero_grad", "        model.zero_grad()\n", "", {TRAIN}),
    (
        "zero_grad between backward and update",
        "        model.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        model.zero_grad()\n",
        {TRAIN},
    ),
    ("update with += instead of -=", "p.data -= rate * p.grad", "p.data += rate * p.grad", {TRAIN}),
    (
        "train prints nothing (print_every ignored)",
        "        if print_every and (k % print_every == 0 or k == steps - 1):\n",
        "        if False:\n",
        {TRAIN},
    ),
    ("learning rate never decays", "rate = lr * (1 - lr_decay * k / steps)", "rate = lr", {TRAIN}),
    (
        "learning rate grows",
        "rate = lr * (1 - lr_decay * k / steps)",
        "rate = lr * (1 + lr_decay * k / steps)",
        {TRAIN},
    ),
    (
        "batch_size ignored",
        "batch = everything if batch_size is None else " + SOLUTION_BATCH,
        "batch = everything",
        {TRAIN},
    ),
    ("the same batch at every step", SOLUTION_BATCH, "everything[:batch_size]", {TRAIN}),
    (
        "ys not taken from the batch",
        "loss = loss_fn(preds, [ys[i] for i in batch])",
        "loss = loss_fn(preds, ys[: len(batch)])",
        {TRAIN},
    ),
    ("losses as Values", "losses.append(loss.data)", "losses.append(loss)", {TRAIN}),
    (
        "loss recorded after the update",
        "        losses.append(loss.data)\n",
        "        after = [model(xs[i]) for i in batch]\n"
        "        losses.append(loss_fn(after, [ys[i] for i in batch]).data)\n",
        {TRAIN},
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
        "MSE with a loop",
        "    return sum((p - t) ** 2 for p, t in zip(preds, targets)) / len(preds)\n",
        "    total = 0\n    for p, t in zip(preds, targets):\n        d = p - t\n"
        "        total = total + d * d\n    return total * (1 / len(preds))\n",
    ),
    (
        "BCE through softplus",
        SOLUTION_BCE,
        SOFTPLUS_BCE,
    ),
    (
        "BCE as max(z, 0) - z*y + log(1 + exp(-|z|))",
        SOLUTION_BCE,
        MAX_ZERO_BCE,
    ),
    (
        "max-margin with a loop and p**2",
        "    data_loss = sum((1 - y * s).relu() for s, y in zip(scores, ys)) / len(scores)\n"
        "    penalty = alpha * sum(p * p for p in parameters)\n    return data_loss + penalty\n",
        "    loss = 0.0\n    for s, y in zip(scores, ys):\n"
        "        loss = loss + (-s * y + 1).relu() / len(scores)\n"
        "    for p in parameters:\n        loss = loss + alpha * p**2\n    return loss\n",
    ),
    ("train: shuffled epochs, zero_grad after the update", TRAIN_LOOP, EPOCH_TRAIN),
    ("train: random.choices with replacement", TRAIN_LOOP, CHOICES_TRAIN),
    (
        "train: parameters fetched at every step",
        "        for p in params:\n",
        "        for p in model.parameters():\n",
    ),
]


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it.
EQUIVALENT_MUTANTS = {
    "mlp_bce line 6: 0 + 1": "which stable formula serves 0 <= z < 1: both are exact there",
    "mlp_bce line 6: GtE -> Gt": "which stable formula serves z = 0: both give log 2",
}


@pytest.fixture(scope="module")
def solution():
    return read(SOURCE, A)


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


def failures(nb) -> dict[str, list[str]]:
    """{grade id of failed cell: its message as a student sees it, line by line}."""
    return {cell: message.splitlines() for cell, message in failing_cells(nb, A).items()}


def test_solution_passes_every_check(solution):
    """The whole notebook, demos included."""
    assert failing_cells(solution, A) == {}


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=[b[0] for b in BUGS])
def test_hidden_tests_catch_bug(solution, name, old, new, cells):
    failed = failures(graded_only(mutate(solution, old, new)))
    assert set(failed) == cells, failed
    for lines in failed.values():
        assert all(len(line) < 90 for line in lines), lines


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    assert failures(graded_only(mutate(solution, old, new))) == {}


def bug(name: str) -> tuple[str, str]:
    (found,) = [b for b in BUGS if b[0] == name]
    return found[1], found[2]


def hidden_message(nb, cell: str) -> str:
    """The message of the hidden test of ``cell`` on the notebook's work."""
    result = verdict_of(run_cells(graded_only(nb), A, tests=False), A, cell)
    assert not result.passed
    assert all(len(line) < 90 for line in result.message.splitlines()), result.message
    return result.message


MESSAGES = [
    ("relu on the output layer", "mlp", "is the last layer linear?"),
    ("Layer returns a list for nout == 1", "mlp", "should return that Value itself"),
    ("Layer lists all weights, then all biases", "mlp", "neuron by neuron, each w, then b"),
    ("Neuron lists the bias first", "neuron", "should list w[0], w[1], w[2], b got b, w[0]"),
    ("Neuron forgets the bias in parameters()", "neuron", "the 3 weights and the bias"),
    ("zero_grad resets data, not grad", "neuron", "grad should be 0.0"),
    ("Linear lists the biases first", "linear", "got bias[0], bias[1], bias[2], weight[0][0]"),
    ("Linear returns a Value for nout == 1", "linear", "should return a list of 1 Value,"),
    ("training without zero_grad", "training", "zero them before backward"),
    ("update with += instead of -=", "training", "climbs the gradient"),
    ("learning rate never decays", "training", "lr * (1 - lr_decay * k / steps)"),
    ("batch_size ignored", "training", "should use 4 samples"),
    ("the same batch at every step", "training", "new random batch"),
    ("ys not taken from the batch", "training", "another sample's y"),
    ("losses as Values", "training", "plain numbers (loss.data)"),
    ("BCE safe for z >= 0 only", "bce", "OverflowError"),
    ("max-margin without L2", "max_margin", "alpha="),
    ("MSE without the mean", "mse", "mse_loss(["),
]
CELLS = {
    "neuron": NEURON,
    "mlp": MLP,
    "linear": LINEAR,
    "mse": MSE,
    "bce": BCE,
    "max_margin": MM,
    "training": TRAIN,
}


@pytest.mark.parametrize("name, check, words", MESSAGES, ids=[m[0] for m in MESSAGES])
def test_hidden_messages_say_what_is_wrong(solution, name, check, words):
    message = hidden_message(mutate(solution, *bug(name)), CELLS[check])
    assert words in " ".join(message.split()), message


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


@pytest.mark.slow
def test_nbgrader_grades_05_mlp(tmp_path):
    solution = read(SOURCE, A)
    (softplus,) = [v for v in VARIANTS if v[0] == "BCE through softplus"]
    scores, full = grade_class(
        tmp_path,
        A,
        {
            "plus_update": mutate(solution, *bug("update with += instead of -=")),
            "softplus": mutate(solution, *softplus[1:3]),
        },
    )
    assert sum(full.values()) == 20
    assert scores["softplus"] == full
    assert scores["plus_update"] == {**full, TRAIN: 0.0}
