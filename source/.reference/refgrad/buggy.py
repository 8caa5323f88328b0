"""The faulty engine of problem set 1 (07_set_gradients), for the grader.

The set gives students this class in a locked cell and asks them to find its three
planted faults with a gradient check, name them and fix them. The grader needs it to
know what a correct ``grad_check`` reports about it. The class below is the cell's text,
character for character (tests/test_07_set_gradients.py compares them); the faults are
marked only here:

- ``__mul__`` sets its operands' grads (``=``) instead of adding to them (``+=``);
- ``tanh``'s local derivative uses the input: ``1 - x**2`` instead of ``1 - t**2``;
- ``__rtruediv__`` is missing, so ``2.0 / x`` raises TypeError.
"""

import itertools
import math


class Buggy:
    """A small engine like yours, with three faults planted in it.

    Every operation makes its output with type(self)(...), so that in a subclass every
    node belongs to the subclass: that is how `class Fixed(Buggy)` can fix an operation
    just by overriding its method.
    """

    _clock = itertools.count()

    def __init__(self, data, _parents=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_parents)
        self._op = _op
        self._backward = lambda: None  # a leaf has no parents to pass gradient to
        self._made = next(Buggy._clock)  # nodes are numbered in the order they are made

    def __repr__(self):
        return f"{type(self).__name__}(data={self.data}, grad={self.grad})"

    def _node(self, other):
        """other as a node of this engine: a plain number becomes a constant leaf."""
        return other if isinstance(other, Buggy) else type(self)(other)

    def __add__(self, other):
        other = self._node(other)
        out = type(self)(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = self._node(other)
        out = type(self)(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad = other.data * out.grad
            other.grad = self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, n):
        out = type(self)(self.data**n, (self,), f"**{n}")

        def _backward():
            self.grad += out.grad * n * self.data ** (n - 1)

        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + other * -1.0

    def __truediv__(self, other):
        return self * (other**-1)

    def __radd__(self, other):
        return self.__add__(other)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __rsub__(self, other):
        return self._node(other) - self

    def tanh(self):
        out = type(self)(math.tanh(self.data), (self,), "tanh")

        def _backward():
            self.grad += (1 - self.data**2) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        e = math.exp(self.data)
        out = type(self)(e, (self,), "exp")

        def _backward():
            self.grad += out.grad * e

        out._backward = _backward
        return out

    def relu(self):
        out = type(self)(max(self.data, 0.0), (self,), "relu")

        def _backward():
            self.grad += out.grad * (1.0 if self.data > 0 else 0.0)

        out._backward = _backward
        return out

    def backward(self):
        """Set .grad of every node that self depends on to d(self)/d(node)."""
        nodes, stack = {self}, [self]
        while stack:  # every node self depends on, in no particular order
            for parent in stack.pop()._prev:
                if parent not in nodes:
                    nodes.add(parent)
                    stack.append(parent)
        self.grad = 1.0
        # A node is made after its parents, so the newest first is outputs first.
        for node in sorted(nodes, key=lambda n: n._made, reverse=True):
            node._backward()
