"""Lesson 1's solution cells written two more ways for tests/test_similarity.py, and a copy
disguised the way students disguise one.

``HONEST_A`` and ``HONEST_B`` are honest, correct solutions written independently of the
course's (``solutions/01_value``) and of each other, in styles students use: A spells every
operation out with a closure of its own, explicit ``isinstance`` checks and comments; B
builds every node through one helper that takes the local derivatives (as small engines in
tinygrad's style do) and does the hand backpropagation with loops. Each is a dict {solution
cell's grade id: the cell's whole new source}; the first cell keeps the release's given
code above the student's methods, as a student's does.

``disguise`` makes a copy meant not to look like one: every name the notebook's checks do
not call renamed, the methods of a class and the functions of a cell in another order,
docstrings rewritten, comments replaced, the layout changed (it goes through ``ast``).
"""

from __future__ import annotations

import ast
import builtins

# The release's given code at the top of lesson 1's first solution cell (the tests check it
# against notebooks/01_value).
GIVEN_HEAD = '''\
class Value:
    """One number in a computation, and how it was computed."""

    def __init__(self, data, _parents=(), _op="", label=""):
        if not isinstance(data, (int, float)):
            raise TypeError(f"Value needs an int or a float, got {data!r}")
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(dict.fromkeys(_parents))  # each parent once, in order
        self._op = _op
        self.label = label
        self._backward = lambda: None  # a leaf has no parents to pass gradient to

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"
'''

HONEST_A = {
    "value_add_mul": GIVEN_HEAD
    + """
    def __add__(self, other):
        if not isinstance(other, Value):
            other = Value(other)
        result = Value(self.data + other.data, (self, other), "+")

        def propagate():
            # d(a + b)/da = d(a + b)/db = 1
            self.grad += result.grad
            other.grad += result.grad

        result._backward = propagate
        return result

    def __mul__(self, other):
        if not isinstance(other, Value):
            other = Value(other)
        result = Value(self.data * other.data, (self, other), "*")

        def propagate():
            # each factor gets the other one's value
            self.grad += result.grad * other.data
            other.grad += result.grad * self.data

        result._backward = propagate
        return result
""",
    "value_hand_backprop": '''\
def backprop_by_hand(g):
    """Set .grad on every node of g, from L back to the inputs, with the chain rule."""
    g.L.grad = 1.0
    # L = n * n
    g.n.grad = (g.n.data + g.n.data) * g.L.grad
    # n = s + b: a sum passes its gradient on unchanged
    g.b.grad = g.n.grad
    g.s.grad = g.n.grad
    g.x2w2.grad = g.s.grad
    g.x1w1.grad = g.s.grad
    # products: the gradient times the other factor
    g.w1.grad = g.x1w1.grad * g.x1.data
    g.x1.grad = g.x1w1.grad * g.w1.data
    g.w2.grad = g.x2w2.grad * g.x2.data
    g.x2.grad = g.x2w2.grad * g.w2.data
''',
    "value_arithmetic": '''\
def __pow__(self, n):
    """self ** n, for a plain number n."""
    assert isinstance(n, (int, float)), "the exponent must be a plain number"
    result = Value(self.data ** n, (self,), "pow")

    def propagate():
        self.grad += result.grad * n * self.data ** (n - 1)

    result._backward = propagate
    return result


def __neg__(self):
    """-self"""
    return self.__mul__(-1.0)


def __sub__(self, other):
    """self - other"""
    if not isinstance(other, Value):
        other = Value(other)
    result = Value(self.data - other.data, (self, other), "-")

    def propagate():
        self.grad += result.grad
        other.grad -= result.grad

    result._backward = propagate
    return result


def __truediv__(self, other):
    """self / other"""
    if not isinstance(other, Value):
        other = Value(other)
    return self * other.__pow__(-1)


Value.__pow__ = __pow__
Value.__neg__ = __neg__
Value.__sub__ = __sub__
Value.__truediv__ = __truediv__
''',
    "value_reflected": '''\
def __radd__(self, other):
    """other + self, for a plain number other."""
    return self.__add__(other)


def __rmul__(self, other):
    """other * self"""
    return self.__mul__(other)


def __rsub__(self, other):
    """other - self"""
    return Value(other).__sub__(self)


def __rtruediv__(self, other):
    """other / self"""
    return Value(other).__truediv__(self)


Value.__radd__ = __radd__
Value.__rmul__ = __rmul__
Value.__rsub__ = __rsub__
Value.__rtruediv__ = __rtruediv__
''',
}

HONEST_B = {
    "value_add_mul": GIVEN_HEAD
    + """
    @staticmethod
    def lift(x):
        return x if isinstance(x, Value) else Value(x)

    def combine(self, data, parents, local_grads, op):
        node = Value(data, parents, op)

        def backward():
            for parent, local in zip(parents, local_grads):
                parent.grad += local * node.grad

        node._backward = backward
        return node

    def __add__(self, other):
        o = Value.lift(other)
        return self.combine(self.data + o.data, (self, o), (1.0, 1.0), "+")

    def __mul__(self, other):
        o = Value.lift(other)
        return self.combine(self.data * o.data, (self, o), (o.data, self.data), "*")
""",
    "value_hand_backprop": '''\
def backprop_by_hand(g):
    """Set .grad on every node of g, from L back to the inputs, with the chain rule."""
    g.L.grad = 1.0
    g.n.grad = 2.0 * g.n.data
    for node in (g.s, g.b):
        node.grad = g.n.grad
    for node in (g.x1w1, g.x2w2):
        node.grad = g.s.grad
    for x, w, xw in [(g.x1, g.w1, g.x1w1), (g.x2, g.w2, g.x2w2)]:
        x.grad, w.grad = w.data * xw.grad, x.data * xw.grad
''',
    "value_arithmetic": '''\
def __pow__(self, n):
    """self ** n, for a plain number n."""
    if type(n) not in (int, float):
        raise TypeError("exponent must be int or float")
    return self.combine(self.data**n, (self,), (n * self.data ** (n - 1),), "**")


def __neg__(self):
    """-self"""
    return self.combine(-self.data, (self,), (-1.0,), "neg")


def __sub__(self, other):
    """self - other"""
    o = Value.lift(other)
    return self.combine(self.data - o.data, (self, o), (1.0, -1.0), "-")


def __truediv__(self, other):
    """self / other"""
    o = Value.lift(other)
    grads = (1.0 / o.data, -self.data / o.data**2)
    return self.combine(self.data / o.data, (self, o), grads, "/")


Value.__pow__ = __pow__
Value.__neg__ = __neg__
Value.__sub__ = __sub__
Value.__truediv__ = __truediv__
''',
    "value_reflected": '''\
def __radd__(self, other):
    """other + self, for a plain number other."""
    return Value.lift(other) + self


def __rmul__(self, other):
    """other * self"""
    return Value.lift(other) * self


def __rsub__(self, other):
    """other - self"""
    return Value.lift(other) - self


def __rtruediv__(self, other):
    """other / self"""
    return Value.lift(other) / self


Value.__radd__ = __radd__
Value.__rmul__ = __rmul__
Value.__rsub__ = __rsub__
Value.__rtruediv__ = __rtruediv__
''',
}

# Names the lesson's checks and later cells call, or that Python gives a meaning to: kept.
KEPT = {"self", "Value", "label", "backprop_by_hand", "math", *dir(builtins)}
WORDS = [
    "rhs", "res", "node_out", "pass_back", "power", "graph", "lhs", "tmp", "acc", "item",
    "value", "thing", "grad_fn", "child", "parts", "factor", "total", "it", "aux", "q",
]  # fmt: skip


class _Rename(ast.NodeTransformer):
    """Every name that is not kept, and every function that is not a method of a class,
    renamed (a module-level ``__pow__`` becomes another name, its ``Value.__pow__ = ...``
    follows), consistently across the cells given to one instance."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def new(self, name: str) -> str:
        if name in KEPT:
            return name
        if name not in self.names:
            n = len(self.names)
            self.names[name] = WORDS[n] if n < len(WORDS) else f"{WORDS[n % len(WORDS)]}{n}"
        return self.names[name]

    def visit_Name(self, node):
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.new(node.arg)
        return node

    def visit_ClassDef(self, node):
        for item in node.body:  # a method keeps its name, its body is renamed
            if isinstance(item, ast.FunctionDef):
                self.function(item, rename=False)
            else:
                self.visit(item)
        node.body = _reordered(node.body)
        return node

    def visit_FunctionDef(self, node):
        return self.function(node, rename=True)

    def function(self, node, *, rename: bool):
        if rename:
            node.name = self.new(node.name)
        if ast.get_docstring(node) is not None:
            node.body[0] = ast.Expr(ast.Constant("My own version."))
        self.generic_visit(node)
        return node


def _reordered(body: list[ast.stmt]) -> list[ast.stmt]:
    """The functions (or methods) of ``body`` in reverse order, the rest where it was
    (a class's docstring first, the ``Value.x = x`` lines last)."""
    defs = [s for s in body if isinstance(s, ast.FunctionDef)]
    flipped = iter(reversed(defs))
    return [next(flipped) if isinstance(s, ast.FunctionDef) else s for s in body]


def disguise(cells: dict[str, str]) -> dict[str, str]:
    """A disguised copy of ``cells`` ({grade id: source}) that still works: see the module's
    docstring. Comments go (``ast`` drops them) and new ones come in their place."""
    rename = _Rename()
    out = {}
    for grade_id, source in cells.items():
        tree = rename.visit(ast.parse(source))
        tree.body = _reordered(tree.body)
        lines = []
        for line in ast.unparse(tree).splitlines():
            if line.lstrip().startswith("def "):
                indent = line[: len(line) - len(line.lstrip())]
                lines.append(f"{indent}# written by me, see my notes")
            lines.append(line)
        out[grade_id] = "\n".join(lines) + "\n"
    return out
