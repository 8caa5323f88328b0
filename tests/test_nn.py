"""refgrad.nn: sizes, the same numbers as torch with the same weights, errors, training.

Each torch comparison copies refgrad's weights into float64 tensors, runs the same
network and loss in both, and compares the loss and every parameter's gradient.
"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F
from refgrad import Value
from refgrad.nn import (
    MLP,
    Layer,
    Linear,
    Module,
    Neuron,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
    binary_cross_entropy_with_logits,
    make_rng,
    max_margin_loss,
    mse_loss,
)

REL = 1e-10

# The lessons' four-sample dataset.
XS = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
YS = [1.0, -1.0, -1.0, 1.0]


def tensor(data, grad: bool = False) -> torch.Tensor:
    return torch.tensor(data, dtype=torch.float64, requires_grad=grad)


def data(values) -> list[float]:
    return [v.data for v in values]


def grads(values) -> list[float]:
    return [v.grad for v in values]


def sgd(model: Module, lr: float) -> None:
    for p in model.parameters():
        p.data -= lr * p.grad


# ---- torch twins of refgrad modules ---------------------------------------------------


class TorchMLP:
    """An MLP's weights as tensors: one (W, b) per layer, ReLU between layers."""

    def __init__(self, mlp: MLP) -> None:
        self.layers = [
            (
                tensor([data(n.w) for n in layer.neurons], grad=True),
                tensor([n.b.data for n in layer.neurons], grad=True),
            )
            for layer in mlp.layers
        ]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        for i, (W, b) in enumerate(self.layers):
            x = W @ x + b
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x

    def grads(self) -> list[float]:
        """In the order of MLP.parameters(): each neuron's weights, then its bias."""
        out = []
        for W, b in self.layers:
            for row, bias in zip(W.grad.tolist(), b.grad.tolist()):
                out += [*row, bias]
        return out


class TorchLinear:
    def __init__(self, linear: Linear) -> None:
        self.W = tensor([data(row) for row in linear.weight], grad=True)
        self.b = tensor(data(linear.bias), grad=True) if linear.bias is not None else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.W, self.b)

    def grads(self) -> list[float]:
        """In the order of Linear.parameters(): every weight row, then the biases."""
        out = [g for row in self.W.grad.tolist() for g in row]
        return out + (self.b.grad.tolist() if self.b is not None else [])


# ---- sizes and shapes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,count",
    [
        (lambda: MLP(3, [4, 4, 1], rng=0), 41),
        (lambda: MLP(2, [16, 16, 1], rng=0), 337),
        (lambda: MLP(1, [1], rng=0), 2),
        (lambda: Neuron(5, rng=0), 6),
        (lambda: Layer(3, 2, rng=0), 8),
        (lambda: Linear(3, 2, rng=0), 8),
        (lambda: Linear(3, 2, bias=False, rng=0), 6),
        (lambda: Sequential(Linear(3, 4, rng=0), Tanh(), Linear(4, 2, rng=1)), 26),
        (lambda: Tanh(), 0),
    ],
)
def test_parameter_counts(make, count):
    params = make().parameters()
    assert len(params) == count
    assert len({id(p) for p in params}) == count
    assert all(isinstance(p, Value) for p in params)


def test_one_output_is_a_value_and_several_are_a_list():
    x = [1.0, -2.0, 0.5]
    assert isinstance(MLP(3, [4, 1], rng=0)(x), Value)
    assert isinstance(Layer(3, 1, rng=0)(x), Value)
    assert isinstance(Neuron(3, rng=0)(x), Value)
    many = MLP(3, [4, 2], rng=0)(x)
    assert isinstance(many, list) and len(many) == 2
    one = Linear(3, 1, rng=0)(x)  # Linear always returns a list, as torch returns a tensor
    assert isinstance(one, list) and len(one) == 1
    assert isinstance(MLP(3, [1, 1], rng=0)(x), Value)  # a hidden layer of one neuron works


def test_initial_weights():
    n = Neuron(200, rng=1)
    assert all(-1.0 <= w.data <= 1.0 for w in n.w) and n.b.data == 0.0
    assert n.nonlin
    lin = Linear(16, 200, rng=1)
    bound = 1.0 / 16**0.5
    params = data(lin.parameters())
    assert all(-bound <= w <= bound for w in params)
    assert max(params) > 0.9 * bound and min(params) < -0.9 * bound


def test_reprs_name_the_parts():
    assert repr(MLP(2, [3, 1], rng=0)) == (
        "MLP of [Layer of [ReLUNeuron(2), ReLUNeuron(2), ReLUNeuron(2)], "
        "Layer of [LinearNeuron(3)]]"
    )
    model = Sequential(Linear(3, 2, rng=0), Tanh())
    assert repr(model) == "Sequential(Linear(3, 2, bias=True), Tanh())"


# ---- reproducible initialisation ----------------------------------------------------


def test_same_int_seed_same_weights():
    a, b = MLP(3, [4, 4, 1], rng=42), MLP(3, [4, 4, 1], rng=42)
    assert data(a.parameters()) == data(b.parameters())
    assert data(MLP(3, [4, 4, 1], rng=43).parameters()) != data(a.parameters())
    assert data(Linear(3, 2, rng=7).parameters()) == data(Linear(3, 2, rng=7).parameters())


def test_a_random_instance_is_used_as_given():
    seeded = data(MLP(3, [4, 1], rng=9).parameters())
    assert data(MLP(3, [4, 1], rng=random.Random(9)).parameters()) == seeded
    r = random.Random(9)
    first, second = MLP(3, [4, 1], rng=r), MLP(3, [4, 1], rng=r)
    assert data(first.parameters()) == seeded
    assert data(second.parameters()) != seeded  # the generator moved on


def test_no_rng_uses_the_random_module_like_micrograd():
    state = random.getstate()
    try:
        random.seed(9)
        a = data(MLP(3, [4, 1]).parameters())
        random.seed(9)
        b = data(MLP(3, [4, 1]).parameters())
    finally:
        random.setstate(state)
    assert a == b == data(MLP(3, [4, 1], rng=9).parameters())


# ---- bad arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda: Neuron(0), "nin"),
        (lambda: MLP(0, [4, 1]), "nin"),
        (lambda: MLP(3, [4, 0, 1]), "nout"),
        (lambda: MLP(3, []), "at least one layer"),
        (lambda: Layer(3, 0), "nout"),
        (lambda: Layer(-1, 2), "nin"),
        (lambda: Linear(0, 2), "nin"),
        (lambda: Linear(3, 0), "nout"),
        (lambda: Neuron(2.5), "nin"),
        (lambda: Neuron(True), "nin"),
    ],
)
def test_bad_sizes_are_value_errors_naming_the_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("rng", ["seed", 1.5, True, [1]])
def test_bad_rng_is_a_type_error(rng):
    with pytest.raises(TypeError, match="rng"):
        make_rng(rng)
    with pytest.raises(TypeError, match="rng"):
        MLP(2, [1], rng=rng)


@pytest.mark.parametrize(
    "model",
    [
        MLP(3, [4, 1], rng=0),
        Layer(3, 2, rng=0),
        Neuron(3, rng=0),
        Linear(3, 2, rng=0),
        Sequential(Linear(3, 2, rng=0), Tanh()),
    ],
    ids=repr,
)
@pytest.mark.parametrize("x", [[1.0, 2.0], [1.0, 2.0, 3.0, 4.0]])
def test_wrong_number_of_inputs(model, x):
    with pytest.raises(ValueError, match=f"expected 3 inputs, got {len(x)}"):
        model(x)


def test_sequential_takes_modules():
    with pytest.raises(TypeError, match="Sequential takes modules"):
        Sequential(Linear(3, 2, rng=0), 3)


@pytest.mark.parametrize(
    "loss", [mse_loss, binary_cross_entropy_with_logits, max_margin_loss], ids=lambda f: f.__name__
)
def test_losses_need_as_many_targets_as_predictions(loss):
    preds = [Value(0.5), Value(-0.5)]
    with pytest.raises(ValueError, match="2 predictions but 3 targets"):
        loss(preds, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="at least one prediction"):
        loss([], [])


@pytest.mark.parametrize("y", [2.0, -0.1, float("nan")])
def test_bce_targets_must_be_probabilities(y):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        binary_cross_entropy_with_logits([Value(0.3)], [y])


@pytest.mark.parametrize("y", [0, 0.5, 2])
def test_max_margin_labels_must_be_plus_or_minus_one(y):
    with pytest.raises(ValueError, match=r"-1 or \+1"):
        max_margin_loss([Value(0.3), Value(0.1)], [1, y])


# ---- the same numbers as torch ------------------------------------------------------------


def test_mlp_forward_and_mse_gradients_match_torch():
    model = MLP(3, [4, 4, 1], rng=3)
    twin = TorchMLP(model)
    preds = [model(x) for x in XS]
    loss = mse_loss(preds, YS)
    loss.backward()

    t_preds = torch.stack([twin(tensor(x)) for x in XS]).squeeze(1)
    t_loss = F.mse_loss(t_preds, tensor(YS))
    t_loss.backward()
    assert data(preds) == pytest.approx(t_preds.tolist(), rel=REL)
    assert loss.data == pytest.approx(t_loss.item(), rel=REL)
    assert grads(model.parameters()) == pytest.approx(twin.grads(), rel=REL, abs=1e-15)


def test_mlp_with_several_outputs_and_value_inputs_matches_torch():
    model = MLP(3, [5, 2], rng=4)
    twin = TorchMLP(model)
    x = [Value(v) for v in (0.3, -1.2, 2.0)]
    out = model(x)
    loss = out[0] * out[1] + out[1]
    loss.backward()

    tx = tensor([0.3, -1.2, 2.0], grad=True)
    t_out = twin(tx)
    t_loss = t_out[0] * t_out[1] + t_out[1]
    t_loss.backward()
    assert loss.data == pytest.approx(t_loss.item(), rel=REL)
    assert grads(model.parameters()) == pytest.approx(twin.grads(), rel=REL, abs=1e-15)
    assert grads(x) == pytest.approx(tx.grad.tolist(), rel=REL, abs=1e-15)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_tanh_sequential_matches_torch(bias):
    first, second = Linear(3, 4, bias=bias, rng=5), Linear(4, 2, rng=6)
    model = Sequential(first, Tanh(), second)
    t_first, t_second = TorchLinear(first), TorchLinear(second)
    targets = [[0.5, -0.5], [1.0, 0.0], [-1.0, 2.0], [0.0, 0.25]]

    preds = [p for x in XS for p in model(x)]
    loss = mse_loss(preds, [t for row in targets for t in row])
    loss.backward()

    t_preds = t_second(torch.tanh(t_first(tensor(XS))))
    t_loss = F.mse_loss(t_preds, tensor(targets))
    t_loss.backward()
    assert data(preds) == pytest.approx(t_preds.flatten().tolist(), rel=REL)
    assert loss.data == pytest.approx(t_loss.item(), rel=REL)
    assert grads(first.parameters()) == pytest.approx(t_first.grads(), rel=REL, abs=1e-15)
    assert grads(second.parameters()) == pytest.approx(t_second.grads(), rel=REL, abs=1e-15)


def test_relu_and_sigmoid_modules_match_torch():
    first, second = Linear(3, 5, rng=8), Linear(5, 3, rng=9)
    model = Sequential(first, ReLU(), second, Sigmoid())
    t_first, t_second = TorchLinear(first), TorchLinear(second)
    outs = [p for x in XS for p in model(x)]
    loss = sum(outs, Value(0.0))
    loss.backward()
    t_loss = torch.sigmoid(t_second(torch.relu(t_first(tensor(XS))))).sum()
    t_loss.backward()
    assert loss.data == pytest.approx(t_loss.item(), rel=REL)
    assert grads(first.parameters()) == pytest.approx(t_first.grads(), rel=REL, abs=1e-15)
    assert grads(second.parameters()) == pytest.approx(t_second.grads(), rel=REL, abs=1e-15)


def test_activation_modules_take_one_value_or_a_list():
    x = Value(0.5)
    assert Tanh()(x).data == pytest.approx(torch.tanh(tensor(0.5)).item(), rel=1e-15)
    assert data(ReLU()([Value(-1.0), Value(2.0)])) == [0.0, 2.0]
    assert Sigmoid()(Value(0.0)).data == 0.5


LOGITS = [0.3, -1.7, 1000.0, -1000.0, 0.0, 25.0]


@pytest.mark.parametrize(
    "targets",
    [[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0, 0.5, 1.0], [0.2, 0.9, 0.7, 0.1, 0, 1]],
)
def test_bce_with_logits_matches_torch_even_at_huge_logits(targets):
    zs = [Value(z) for z in LOGITS]
    loss = binary_cross_entropy_with_logits(zs, targets)
    loss.backward()
    tz = tensor(LOGITS, grad=True)
    t_loss = F.binary_cross_entropy_with_logits(tz, tensor([float(t) for t in targets]))
    t_loss.backward()
    assert loss.data == pytest.approx(t_loss.item(), rel=REL)
    assert grads(zs) == pytest.approx(tz.grad.tolist(), rel=REL, abs=1e-15)
    assert all(g == g and abs(g) < 1.0 for g in grads(zs))  # finite, no nan


def test_bce_of_one_logit_and_one_target():
    z = Value(-2.0)
    loss = binary_cross_entropy_with_logits(z, 1.0)
    assert loss.data == pytest.approx(F.softplus(tensor(2.0)).item(), rel=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 1e-4, 0.5])
def test_max_margin_loss_with_l2_matches_torch(alpha):
    model = MLP(3, [4, 1], rng=11)
    twin = TorchMLP(model)
    labels = [1, -1, -1, 1]
    scores = [model(x) for x in XS]
    loss = max_margin_loss(scores, labels, model.parameters(), alpha=alpha)
    loss.backward()

    t_scores = torch.stack([twin(tensor(x)) for x in XS]).squeeze(1)
    t_loss = torch.relu(1.0 - tensor(labels) * t_scores).mean()
    t_loss = t_loss + alpha * sum((p * p).sum() for layer in twin.layers for p in layer)
    t_loss.backward()
    assert loss.data == pytest.approx(t_loss.item(), rel=REL)
    assert grads(model.parameters()) == pytest.approx(twin.grads(), rel=REL, abs=1e-15)


def test_mse_of_one_prediction_and_a_number():
    loss = mse_loss(Value(3.0), 1)
    loss.backward()
    assert loss.data == 4.0


def test_module_zero_grad():
    model = MLP(3, [4, 4, 1], rng=0)
    mse_loss([model(x) for x in XS], YS).backward()
    assert any(g != 0.0 for g in grads(model.parameters()))
    model.zero_grad()
    assert all(g == 0.0 for g in grads(model.parameters()))


# ---- training ---------------------------------------------------------------------------


def test_the_lessons_four_samples_are_learned():
    """MLP(3, [4, 4, 1]) with ReLU hidden layers, plain SGD on the mean squared error."""
    model = MLP(3, [4, 4, 1], rng=2)  # seeds that leave every hidden ReLU dead do exist
    for _ in range(300):
        loss = mse_loss([model(x) for x in XS], YS)
        model.zero_grad()
        loss.backward()
        sgd(model, 0.05)
    preds = [model(x) for x in XS]
    assert mse_loss(preds, YS).data < 1e-3
    assert 4 * mse_loss(preds, YS).data < 1e-2  # the lessons' sum of squares, too
    assert [p.data > 0 for p in preds] == [y > 0 for y in YS]


XOR_X = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]


def test_xor_with_an_mlp():
    model = MLP(2, [8, 1], rng=0)
    targets = [-1.0, 1.0, 1.0, -1.0]
    for _ in range(300):
        loss = mse_loss([model(x) for x in XOR_X], targets)
        model.zero_grad()
        loss.backward()
        sgd(model, 0.1)
    assert mse_loss([model(x) for x in XOR_X], targets).data < 1e-3


def test_xor_with_linear_tanh_and_cross_entropy():
    model = Sequential(Linear(2, 4, rng=0), Tanh(), Linear(4, 1, rng=1))
    targets = [0.0, 1.0, 1.0, 0.0]
    for _ in range(500):
        loss = binary_cross_entropy_with_logits([model(x)[0] for x in XOR_X], targets)
        model.zero_grad()
        loss.backward()
        sgd(model, 1.0)
    logits = [model(x)[0] for x in XOR_X]
    assert binary_cross_entropy_with_logits(logits, targets).data < 0.02
    assert [z.data > 0 for z in logits] == [t > 0.5 for t in targets]
