"""Neural networks made of Values, named and called the way PyTorch names them.

``Neuron``, ``Layer`` and ``MLP`` follow micrograd: a neuron computes
``relu(w . x + b)`` (or just ``w . x + b`` when ``nonlin=False``), and an MLP with one
output returns a single Value. ``Linear``, ``Sequential`` and the activation modules are
the next step, the way ``torch.nn`` builds networks out of small parts.

Every constructor that draws random weights takes ``rng``: an int seed, a
``random.Random``, or None for the ``random`` module itself (so ``random.seed(...)``
makes a run repeatable, as in micrograd).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from numbers import Real

from .engine import Value, dot

__all__ = [
    "MLP",
    "Layer",
    "Linear",
    "Module",
    "Neuron",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "binary_cross_entropy_with_logits",
    "make_rng",
    "max_margin_loss",
    "mse_loss",
]

RandomSource = int | random.Random | None


def make_rng(rng: RandomSource) -> random.Random:
    """Turn a seed, a Random, or None (the global ``random`` module) into a generator."""
    if rng is None:
        return random._inst  # the generator behind random.uniform and random.seed
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, int) and not isinstance(rng, bool):
        return random.Random(rng)
    raise TypeError(f"rng must be an int seed, a random.Random or None, got {rng!r}")


class Module:
    """Something with parameters: ``parameters()`` lists them, ``zero_grad()`` resets them."""

    def parameters(self) -> list[Value]:
        return []

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    """One unit: ``relu(w . x + b)``, or ``w . x + b`` when ``nonlin`` is False."""

    def __init__(self, nin: int, nonlin: bool = True, rng: RandomSource = None) -> None:
        _check_size("nin", nin)
        r = make_rng(rng)
        self.w = [Value(r.uniform(-1.0, 1.0)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x: Sequence[Value | float]) -> Value:
        _check_inputs(x, len(self.w))
        act = dot(self.w, x, self.b)
        return act.relu() if self.nonlin else act

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        kind = "ReLU" if self.nonlin else "Linear"
        return f"{kind}Neuron({len(self.w)})"


class Layer(Module):
    """``nout`` neurons that all read the same inputs."""

    def __init__(self, nin: int, nout: int, rng: RandomSource = None, **kwargs: bool) -> None:
        _check_size("nout", nout)
        r = make_rng(rng)
        self.neurons = [Neuron(nin, rng=r, **kwargs) for _ in range(nout)]

    def __call__(self, x: Sequence[Value | float]) -> Value | list[Value]:
        x = _as_values(x)
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """Layers of sizes ``nouts``; ReLU after every layer but the last."""

    def __init__(self, nin: int, nouts: Sequence[int], rng: RandomSource = None) -> None:
        if not nouts:
            raise ValueError("MLP needs at least one layer size in nouts, got none")
        r = make_rng(rng)
        sizes = [nin, *nouts]
        last = len(nouts) - 1
        self.layers = [
            Layer(sizes[i], sizes[i + 1], rng=r, nonlin=i != last) for i in range(len(nouts))
        ]

    def __call__(self, x: Sequence[Value | float]) -> Value | list[Value]:
        for layer in self.layers:
            x = layer(x)
            if isinstance(x, Value):
                x = [x]
        return x[0] if len(x) == 1 else x

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"


class Linear(Module):
    """``y = W x + b`` with ``nout`` outputs, always returned as a list (as torch does).

    Weights start uniform in +-1/sqrt(nin), torch.nn.Linear's default range.
    """

    def __init__(self, nin: int, nout: int, bias: bool = True, rng: RandomSource = None) -> None:
        _check_size("nin", nin)
        _check_size("nout", nout)
        r = make_rng(rng)
        bound = 1.0 / math.sqrt(nin)
        self.weight = [[Value(r.uniform(-bound, bound)) for _ in range(nin)] for _ in range(nout)]
        self.bias = [Value(r.uniform(-bound, bound)) for _ in range(nout)] if bias else None

    def __call__(self, x: Sequence[Value | float]) -> list[Value]:
        _check_inputs(x, len(self.weight[0]))
        x = _as_values(x)
        biases = self.bias if self.bias is not None else [0.0] * len(self.weight)
        return [dot(row, x, b) for row, b in zip(self.weight, biases)]

    def parameters(self) -> list[Value]:
        weights = [w for row in self.weight for w in row]
        return weights + (self.bias if self.bias is not None else [])

    def __repr__(self) -> str:
        return f"Linear({len(self.weight[0])}, {len(self.weight)}, bias={self.bias is not None})"


class Sequential(Module):
    """Modules applied one after another; the output of one is the input of the next."""

    def __init__(self, *modules: Module) -> None:
        for m in modules:
            if not callable(m):
                raise TypeError(f"Sequential takes modules, got {m!r}")
        self.modules = list(modules)

    def __call__(self, x):
        for m in self.modules:
            x = m(x)
        return x

    def parameters(self) -> list[Value]:
        return [p for m in self.modules for p in m.parameters()]

    def __repr__(self) -> str:
        return f"Sequential({', '.join(repr(m) for m in self.modules)})"


class _Elementwise(Module):
    """An activation applied to one Value or to each Value of a list."""

    fn = ""

    def __call__(self, x: Value | Sequence[Value]) -> Value | list[Value]:
        if isinstance(x, Value):
            return getattr(x, self.fn)()
        return [getattr(v, self.fn)() for v in x]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Tanh(_Elementwise):
    fn = "tanh"


class ReLU(_Elementwise):
    fn = "relu"


class Sigmoid(_Elementwise):
    fn = "sigmoid"


# ---- losses -------------------------------------------------------------------------


def mse_loss(preds: Value | Sequence[Value], targets: float | Sequence[float]) -> Value:
    """Mean of (prediction - target)**2."""
    preds, targets = _pair_up(preds, targets)
    return sum(((p - t) ** 2 for p, t in zip(preds, targets)), Value(0.0)) / len(preds)


def binary_cross_entropy_with_logits(
    logits: Value | Sequence[Value], targets: float | Sequence[float]
) -> Value:
    """Mean of -[y log sigmoid(z) + (1-y) log(1 - sigmoid(z))], for targets y in [0, 1].

    Written as max(z, 0) - z*y + log(1 + exp(-|z|)), so that exp never sees a large
    argument: a logit of 1000 gives a finite loss and gradient.
    """
    logits, targets = _pair_up(logits, targets)
    total = Value(0.0)
    for z, y in zip(logits, targets):
        if not 0.0 <= y <= 1.0:
            raise ValueError(f"binary cross-entropy targets must be in [0, 1], got {y!r}")
        if z.data >= 0.0:
            total = total + z - z * y + (1.0 + (-z).exp()).log()
        else:
            total = total - z * y + (1.0 + z.exp()).log()
    return total / len(logits)


def max_margin_loss(
    scores: Value | Sequence[Value],
    targets: float | Sequence[float],
    parameters: Iterable[Value] = (),
    alpha: float = 0.0,
) -> Value:
    """Mean of relu(1 - y * score) for labels y in {-1, +1}, plus alpha * sum(p**2).

    The second term is L2 regularisation over ``parameters`` (micrograd's demo uses 1e-4).
    """
    scores, targets = _pair_up(scores, targets)
    for y in targets:
        if y not in (-1, 1):
            raise ValueError(f"max-margin labels must be -1 or +1, got {y!r}")
    data_loss = sum(((1.0 - y * s).relu() for s, y in zip(scores, targets)), Value(0.0))
    loss = data_loss / len(scores)
    if alpha:
        loss = loss + alpha * sum((p * p for p in parameters), Value(0.0))
    return loss


# ---- argument checks ----------------------------------------------------------------


def _check_size(name: str, n: object) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{name} must be a positive whole number, got {n!r}")


def _check_inputs(x: Sequence[Value | float], nin: int) -> None:
    if len(x) != nin:
        raise ValueError(f"expected {nin} inputs, got {len(x)}")


def _as_values(x: Sequence[Value | float]) -> list[Value]:
    """Wrap plain numbers in Values once per layer, not once per neuron (dot would)."""
    return [xi if isinstance(xi, Value) else Value(xi) for xi in x]


def _pair_up(preds, targets) -> tuple[list[Value], list[float]]:
    """Accept one prediction or a list; check the two lists have the same length."""
    preds = [preds] if isinstance(preds, Value) else list(preds)
    targets = [targets] if isinstance(targets, Real) else list(targets)
    if len(preds) != len(targets):
        raise ValueError(f"got {len(preds)} predictions but {len(targets)} targets")
    if not preds:
        raise ValueError("a loss needs at least one prediction, got none")
    return preds, [float(t) for t in targets]
