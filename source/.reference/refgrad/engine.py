"""A scalar reverse-mode automatic differentiation engine: the course's reference.

Read it as the lessons' engine, tidied. Each operation computes its value, makes one
output node that remembers its parents, and gives that node a small closure
``_backward(g)`` whose body is the operation's local derivative: ``g`` is
d(loss)/d(output), and the closure adds d(loss)/d(parent) to each parent's ``grad``.

One difference from the lessons, on purpose: the closure is handed ``out.grad`` as
its argument instead of reading it from ``out``. A closure that mentions ``out``
makes a reference cycle (out -> closure -> out), and then only Python's garbage
collector can free the graph, which makes training several times slower. Without
the cycle, reference counting frees each graph the moment it is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from numbers import Real

__all__ = ["Value", "dot", "topological_order", "zero_grad"]

# exp() of anything above this is larger than the largest float.
EXP_LIMIT = math.log(1.7976931348623157e308)


def _as_float(data: object, what: str = "Value(data)") -> float:
    """Return ``data`` as a float, or raise a TypeError that names it."""
    if isinstance(data, Real):
        return float(data)
    raise TypeError(f"{what} must be an int or a float, got {data!r} ({type(data).__name__})")


def _as_value(other: object) -> Value:
    """Wrap a plain number so it can take part in a graph (as a constant leaf)."""
    if isinstance(other, Value):
        return other
    return Value(_as_float(other, "the other operand"))


class Value:
    """One scalar in a computation graph: its value and d(output)/d(this value)."""

    __slots__ = ("data", "grad", "_prev", "_op", "_backward", "label")

    def __init__(
        self,
        data: float,
        _prev: tuple[Value, ...] = (),
        _op: str = "",
        label: str = "",
    ) -> None:
        self.data = data if type(data) is float else _as_float(data)
        self.grad = 0.0
        self._prev = _prev  # the Values this one was computed from
        self._op = _op  # which operation made it, for drawings and repr
        self._backward: Callable[[float], None] | None = None  # None for leaves
        self.label = label

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data!r}, grad={self.grad!r}{name})"

    # ---- arithmetic ------------------------------------------------------------------

    def __add__(self, other: Value | float) -> Value:
        other = _as_value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward(g: float) -> None:  # d(a+b)/da = 1, d(a+b)/db = 1
            self.grad += g
            other.grad += g

        out._backward = _backward
        return out

    def __mul__(self, other: Value | float) -> Value:
        other = _as_value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward(g: float) -> None:  # d(a*b)/da = b, d(a*b)/db = a
            self.grad += other.data * g
            other.grad += self.data * g

        out._backward = _backward
        return out

    def __sub__(self, other: Value | float) -> Value:
        other = _as_value(other)
        out = Value(self.data - other.data, (self, other), "-")

        def _backward(g: float) -> None:  # d(a-b)/da = 1, d(a-b)/db = -1
            self.grad += g
            other.grad -= g

        out._backward = _backward
        return out

    def __truediv__(self, other: Value | float) -> Value:
        other = _as_value(other)
        if other.data == 0.0:
            raise ZeroDivisionError(f"division by zero: {self.data!r} / 0.0")
        out = Value(self.data / other.data, (self, other), "/")

        def _backward(g: float) -> None:  # d(a/b)/da = 1/b, d(a/b)/db = -a/b**2
            self.grad += g / other.data
            other.grad -= g * self.data / (other.data * other.data)

        out._backward = _backward
        return out

    def __neg__(self) -> Value:
        out = Value(-self.data, (self,), "neg")

        def _backward(g: float) -> None:  # d(-a)/da = -1
            self.grad -= g

        out._backward = _backward
        return out

    def __pow__(self, exponent: Value | float) -> Value:
        if isinstance(exponent, Value):
            return self._pow_value(exponent)
        n = _as_float(exponent, "the exponent")
        x = self.data
        if x < 0.0 and not n.is_integer():
            raise ValueError(f"{x!r} ** {n!r}: a negative base needs a whole-number exponent")
        if x == 0.0 and n < 0.0:
            raise ZeroDivisionError(f"0.0 ** {n!r}: zero cannot be raised to a negative power")
        try:
            power = x**n
        except OverflowError:
            raise OverflowError(f"{x!r} ** {n!r} is larger than the largest float") from None
        out = Value(power, (self,), f"**{exponent}")
        slope = _power_rule(x, n)

        def _backward(g: float) -> None:  # d(x**n)/dx = n * x**(n-1)
            self.grad += slope * g

        out._backward = _backward
        return out

    def _pow_value(self, exponent: Value) -> Value:
        """``a ** b`` where b is a Value too: both get a gradient (needs a > 0)."""
        a, b = self.data, exponent.data
        if a <= 0.0:
            raise ValueError(
                f"{a!r} ** Value: a Value exponent needs a positive base "
                "(use a plain number as the exponent instead)"
            )
        power = a**b
        out = Value(power, (self, exponent), "**")

        def _backward(g: float) -> None:  # d(a**b)/da = b * a**(b-1), d(a**b)/db = a**b * ln a
            self.grad += b * a ** (b - 1.0) * g
            exponent.grad += power * math.log(a) * g

        out._backward = _backward
        return out

    # Python calls these when the plain number is on the left: 2 + x, 2 * x, 2 - x, ...
    def __radd__(self, other: float) -> Value:
        return _as_value(other) + self

    def __rmul__(self, other: float) -> Value:
        return _as_value(other) * self

    def __rsub__(self, other: float) -> Value:
        return _as_value(other) - self

    def __rtruediv__(self, other: float) -> Value:
        return _as_value(other) / self

    def __rpow__(self, other: float) -> Value:
        return _as_value(other) ** self

    # ---- elementary functions ----------------------------------------------------------

    def tanh(self) -> Value:
        t = math.tanh(self.data)  # math.tanh is exact and never overflows
        out = Value(t, (self,), "tanh")

        def _backward(g: float) -> None:  # d tanh(x)/dx = 1 - tanh(x)**2
            self.grad += (1.0 - t * t) * g

        out._backward = _backward
        return out

    def relu(self) -> Value:
        positive = self.data > 0.0
        out = Value(self.data if positive else 0.0, (self,), "relu")

        def _backward(g: float) -> None:  # d relu(x)/dx = 1 if x > 0 else 0 (0 at x = 0)
            if positive:
                self.grad += g

        out._backward = _backward
        return out

    def exp(self) -> Value:
        if self.data > EXP_LIMIT:
            raise OverflowError(f"exp({self.data!r}) is larger than the largest float")
        e = math.exp(self.data)
        out = Value(e, (self,), "exp")

        def _backward(g: float) -> None:  # d exp(x)/dx = exp(x)
            self.grad += e * g

        out._backward = _backward
        return out

    def log(self) -> Value:
        x = self.data
        if x <= 0.0:
            raise ValueError(f"log({x!r}): log is only defined for positive numbers")
        out = Value(math.log(x), (self,), "log")

        def _backward(g: float) -> None:  # d log(x)/dx = 1/x
            self.grad += g / x

        out._backward = _backward
        return out

    def sigmoid(self) -> Value:
        x = self.data
        if x >= 0.0:  # two forms of 1/(1+e^-x), so that exp never sees a large argument
            s = 1.0 / (1.0 + math.exp(-x))
        else:
            z = math.exp(x)
            s = z / (1.0 + z)
        out = Value(s, (self,), "sigmoid")

        def _backward(g: float) -> None:  # d sigmoid(x)/dx = sigmoid(x) * (1 - sigmoid(x))
            self.grad += s * (1.0 - s) * g

        out._backward = _backward
        return out

    def sin(self) -> Value:
        x = self.data
        out = Value(math.sin(x), (self,), "sin")

        def _backward(g: float) -> None:  # d sin(x)/dx = cos(x)
            self.grad += math.cos(x) * g

        out._backward = _backward
        return out

    def cos(self) -> Value:
        x = self.data
        out = Value(math.cos(x), (self,), "cos")

        def _backward(g: float) -> None:  # d cos(x)/dx = -sin(x)
            self.grad -= math.sin(x) * g

        out._backward = _backward
        return out

    def sqrt(self) -> Value:
        x = self.data
        if x < 0.0:
            raise ValueError(f"sqrt({x!r}): sqrt is only defined for numbers >= 0")
        r = math.sqrt(x)
        out = Value(r, (self,), "sqrt")
        slope = 0.5 / r if r > 0.0 else math.inf

        def _backward(g: float) -> None:  # d sqrt(x)/dx = 1 / (2 sqrt(x))
            self.grad += slope * g

        out._backward = _backward
        return out

    # ---- backpropagation -----------------------------------------------------------

    def backward(self) -> None:
        """Add d(self)/d(node) to ``node.grad`` for every node that self depends on.

        Leaves accumulate across calls (call ``zero_grad`` between training steps).
        Interior nodes start each call from zero, so calling backward twice on the same
        graph adds the same amount to the leaves twice, as PyTorch does.
        """
        order = topological_order(self)
        for node in order:
            if node._backward is not None:
                node.grad = 0.0
        self.grad += 1.0  # d(self)/d(self) = 1
        for node in reversed(order):  # every node's grad is complete before it is used
            if node._backward is not None:
                node._backward(node.grad)


def dot(
    weights: Sequence[Value], inputs: Sequence[Value | float], bias: Value | float = 0.0
) -> Value:
    """``w . x + b`` as one node, the way a tensor library fuses a neuron.

    The same value and gradients as ``b + w[0]*x[0] + w[1]*x[1] + ...``, but one node
    instead of 2n: a network's forward and backward passes get about ten times faster.
    """
    if len(weights) != len(inputs):
        raise ValueError(f"dot: {len(weights)} weights but {len(inputs)} inputs")
    ws = tuple(weights)
    xs = tuple(map(_as_value, inputs))
    b = _as_value(bias)
    total = b.data
    for w, x in zip(ws, xs):
        total += w.data * x.data
    out = Value(total, (*ws, *xs, b), "dot")

    def _backward(g: float) -> None:  # d(w.x+b)/dw_i = x_i, d/dx_i = w_i, d/db = 1
        for w, x in zip(ws, xs):
            w.grad += x.data * g
            x.grad += w.data * g
        b.grad += g

    out._backward = _backward
    return out


def _power_rule(x: float, n: float) -> float:
    """n * x**(n-1), the slope of x**n, with its limits at x = 0 spelled out."""
    if n == 0.0:
        return 0.0
    if x == 0.0 and n < 1.0:
        return math.inf  # x**n for 0 < n < 1 is vertical at 0 (torch says inf too)
    return n * x ** (n - 1.0)


def topological_order(root: Value) -> list[Value]:
    """Every node that ``root`` depends on, each one after all of its parents.

    Depth-first search with an explicit stack instead of recursion, so a chain a
    million nodes deep works. A node is pushed twice: once to visit its parents,
    and once more, under them, to be emitted when they are all done.
    """
    order: list[Value] = []
    seen: set[Value] = set()
    stack: list[tuple[Value, bool]] = [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            for parent in node._prev:
                if parent not in seen:
                    stack.append((parent, False))
    return order


def zero_grad(values: Value | Iterable[Value]) -> None:
    """Set grad to 0.0 on a list of parameters, or on every node of a graph."""
    nodes = topological_order(values) if isinstance(values, Value) else values
    for node in nodes:
        node.grad = 0.0
