"""Engines in the styles students copy from tutorials and repositories, as they paste them
into the lessons' solution cells (tests/test_pasted_engines.py grades them).

Each one is written here, line by line, the way such engines are written: a Value class
pasted whole over lesson 1's stub, a recursive backward() with its own sort pasted into
lesson 2, activations by textbook formulas in lesson 3, a small nn module in lesson 5;
adapted only as the lessons ask (a ``label`` keyword, the names the later cells call).
An engine is a dict {solution cell's grade id: the cell's whole new source}: a student
pasting code over a stub replaces the entire cell.
"""

# ---- lesson 1: a Value class pasted whole over the stub ----------------------------------

# As in the lecture that builds the engine on camera: parents as a set, op labels as
# strings, tanh and exp by formula, a recursive backward() with its own sort, and only
# the reflected ops the lecture needed (__radd__, __rmul__): no __rsub__, __rtruediv__.
LECTURE_VALUE = """\
class Value:

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
        self.label = label

    def __repr__(self):
        return f"Value(data={self.data})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')

        def _backward():
            self.grad += 1.0 * out.grad
            other.grad += 1.0 * out.grad
        out._backward = _backward

        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward

        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only supporting int/float powers for now"
        out = Value(self.data**other, (self,), f'**{other}')

        def _backward():
            self.grad += other * (self.data ** (other - 1)) * out.grad
        out._backward = _backward

        return out

    def __rmul__(self, other):  # other * self
        return self * other

    def __radd__(self, other):  # other + self
        return self + other

    def __truediv__(self, other):  # self / other
        return self * other**-1

    def __neg__(self):  # -self
        return self * -1

    def __sub__(self, other):  # self - other
        return self + (-other)

    def tanh(self):
        x = self.data
        t = (math.exp(2*x) - 1)/(math.exp(2*x) + 1)
        out = Value(t, (self, ), 'tanh')

        def _backward():
            self.grad += (1 - t**2) * out.grad
        out._backward = _backward

        return out

    def exp(self):
        x = self.data
        out = Value(math.exp(x), (self, ), 'exp')

        def _backward():
            self.grad += out.data * out.grad
        out._backward = _backward

        return out

    def backward(self):

        topo = []
        visited = set()
        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)

        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
"""

# As in the small autograd repositories: grads start as the int 0, every op wraps a number
# with isinstance, relu, all four reflected ops, a recursive backward() with its own sort.
REPO_VALUE = '''\
class Value:
    """ stores a single scalar value and its gradient """

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = data
        self.grad = 0
        # internal variables used for autograd graph construction
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op # the op that produced this node, for graphviz / debugging / etc
        self.label = label

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward

        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward

        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only supporting int/float powers for now"
        out = Value(self.data**other, (self,), f'**{other}')

        def _backward():
            self.grad += (other * self.data**(other-1)) * out.grad
        out._backward = _backward

        return out

    def relu(self):
        out = Value(0 if self.data < 0 else self.data, (self,), 'ReLU')

        def _backward():
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward

        return out

    def backward(self):

        # topological order all of the children in the graph
        topo = []
        visited = set()
        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)

        # go one variable at a time and apply the chain rule to get its gradient
        self.grad = 1
        for v in reversed(topo):
            v._backward()

    def __neg__(self): # -self
        return self * -1

    def __radd__(self, other): # other + self
        return self + other

    def __sub__(self, other): # self - other
        return self + (-other)

    def __rsub__(self, other): # other - self
        return other + (-self)

    def __rmul__(self, other): # other * self
        return self * other

    def __truediv__(self, other): # self / other
        return self * other**-1

    def __rtruediv__(self, other): # other / self
        return other * self**-1

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"
'''

# A class that keeps its parents under a name of its own, with a backward() that walks
# them: its own gradients are right, but the lessons' graph walk reads ``_prev``.
CHILDREN_VALUE = """\
class Value:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data = float(data)
        self.grad = 0.0
        self._children = tuple(_children)
        self._op = _op
        self.label = label
        self._backward = lambda: None

    def __repr__(self):
        return f"Value({self.data:.4f}, grad={self.grad:.4f})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        order, seen = [], set()

        def visit(node):
            if id(node) in seen:
                return
            seen.add(id(node))
            for child in node._children:
                visit(child)
            order.append(node)

        visit(self)
        self.grad = 1.0
        for node in reversed(order):
            node._backward()
"""

# Parents under yet another name, and no backward() (lesson 1 asks for none): even its own
# numbers are only as right as the walk that finds the nodes.
PARENTS_VALUE = '''\
class Value:
    """A scalar that remembers how it was made."""

    def __init__(self, data, parents=(), op="", label=""):
        self.data = data
        self.grad = 0.0
        self.parents = list(parents)
        self.op = op
        self.label = label
        self._backward = lambda: None

    def __repr__(self):
        return f"Value({self.data}, grad={self.grad}, op={self.op!r})"

    def __add__(self, other):
        if not isinstance(other, Value):
            other = Value(other)
        result = Value(self.data + other.data, [self, other], "+")

        def _backward():
            self.grad += result.grad
            other.grad += result.grad

        result._backward = _backward
        return result

    def __mul__(self, other):
        if not isinstance(other, Value):
            other = Value(other)
        result = Value(self.data * other.data, [self, other], "*")

        def _backward():
            self.grad += other.data * result.grad
            other.grad += self.data * result.grad

        result._backward = _backward
        return result
'''

# Parents kept as given, a tuple with repeats: a * a has _prev == (a, a). Numbers are
# wrapped by a duck-typed helper (no isinstance); an explicit _backward per op. Its
# arithmetic and reflected ops are pasted over those cells too, __pow__ with its exponent
# named ``other``.
TUPLE_VALUE = """\
def as_value(x):
    return x if hasattr(x, "data") else Value(x)


class Value:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data = data
        self.grad = 0.0
        self._prev = _children
        self._op = _op
        self.label = label
        self._backward = lambda: None

    def __repr__(self):
        return "Value(data=%s, grad=%s)" % (self.data, self.grad)

    def __add__(self, other):
        other = as_value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = as_value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out
"""

TUPLE_ARITHMETIC = """\
def __pow__(self, other):
    assert isinstance(other, (int, float)), "only int/float powers"
    out = Value(self.data ** other, (self,), f"**{other}")

    def _backward():
        self.grad += other * self.data ** (other - 1) * out.grad

    out._backward = _backward
    return out


def __neg__(self):
    out = Value(-self.data, (self,), "neg")

    def _backward():
        self.grad -= out.grad

    out._backward = _backward
    return out


def __sub__(self, other):
    other = as_value(other)
    out = Value(self.data - other.data, (self, other), "-")

    def _backward():
        self.grad += out.grad
        other.grad -= out.grad

    out._backward = _backward
    return out


def __truediv__(self, other):
    other = as_value(other)
    out = Value(self.data / other.data, (self, other), "/")

    def _backward():
        self.grad += (1 / other.data) * out.grad
        other.grad += (-self.data / other.data**2) * out.grad

    out._backward = _backward
    return out


Value.__pow__ = __pow__
Value.__neg__ = __neg__
Value.__sub__ = __sub__
Value.__truediv__ = __truediv__
"""

TUPLE_REFLECTED = """\
def __radd__(self, other):
    return as_value(other) + self


def __rmul__(self, other):
    return as_value(other) * self


def __rsub__(self, other):
    return as_value(other) - self


def __rtruediv__(self, other):
    return as_value(other) / self


Value.__radd__ = __radd__
Value.__rmul__ = __rmul__
Value.__rsub__ = __rsub__
Value.__rtruediv__ = __rtruediv__
"""

# Op labels as an Enum, parents as a list, numbers wrapped only when they are numbers,
# grads starting as the int 0.
ENUM_VALUE = """\
from enum import Enum


class Op(Enum):
    NONE = ""
    ADD = "+"
    MUL = "*"


class Value:
    def __init__(self, data, children=(), op=Op.NONE, label=""):
        self.data = data
        self.grad = 0
        self._prev = list(children)
        self._op = op
        self.label = label
        self._backward = lambda: None

    def __repr__(self):
        op = getattr(self._op, "value", self._op)
        return f"Value(data={self.data}, grad={self.grad}, op={op!r})"

    def __add__(self, other):
        if isinstance(other, (int, float)):
            other = Value(other)
        out = Value(self.data + other.data, [self, other], Op.ADD)

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        if isinstance(other, (int, float)):
            other = Value(other)
        out = Value(self.data * other.data, [self, other], Op.MUL)

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out
"""

IN_THE_CLASS = "# {} are in my Value class above\n"


# ---- lesson 2: backward() with its own recursive sort -------------------------------------

RECURSIVE_TOPOLOGICAL_ORDER = """\
def topological_order(root):
    topo = []
    visited = set()

    def build_topo(v):
        if v not in visited:
            visited.add(v)
            for child in v._prev:
                build_topo(child)
            topo.append(v)

    build_topo(root)
    return topo
"""

RECURSIVE_BACKWARD = """\
def backward(self):
    # topological order all of the children in the graph
    topo = []
    visited = set()
    def build_topo(v):
        if v not in visited:
            visited.add(v)
            for child in v._prev:
                build_topo(child)
            topo.append(v)
    build_topo(self)

    # go one variable at a time and apply the chain rule to get its gradient
    self.grad = 1
    for v in reversed(topo):
        v._backward()


Value.backward = backward
"""


# ---- lesson 3: activations by textbook formulas --------------------------------------------

# tanh as (e^2x - 1) / (e^2x + 1): math.exp(2 * 1000) overflows.
TANH_EXP_FORMULA = """\
def tanh(self):
    x = self.data
    t = (math.exp(2*x) - 1)/(math.exp(2*x) + 1)
    out = Value(t, (self, ), 'tanh')

    def _backward():
        self.grad += (1 - t**2) * out.grad
    out._backward = _backward

    return out


Value.tanh = tanh
"""

# The same formula through e^(-2|x|), which stays in (0, 1]: no overflow anywhere.
TANH_STABLE_FORMULA = """\
def tanh(self):
    e = math.exp(-2.0 * abs(self.data))
    t = math.copysign((1.0 - e) / (1.0 + e), self.data)
    out = Value(t, (self,), "tanh")

    def _backward():
        self.grad += (1.0 - out.data**2) * out.grad

    out._backward = _backward
    return out


Value.tanh = tanh
"""

# exp as in the lecture; log never written (its stub deleted along with the rest).
EXP_ONLY = """\
def exp(self):
    x = self.data
    out = Value(math.exp(x), (self, ), 'exp')

    def _backward():
        self.grad += out.data * out.grad
    out._backward = _backward

    return out


Value.exp = exp
"""

# exp by math.e ** x (OverflowError at 1000 too); log whose ValueError does not name the
# value, as the exercise asks.
EXP_AND_TERSE_LOG = """\
def exp(self):
    out = Value(math.e ** self.data, (self,), "exp")

    def _backward():
        self.grad += out.data * out.grad

    out._backward = _backward
    return out


def log(self):
    if self.data <= 0:
        raise ValueError("math domain error")
    out = Value(math.log(self.data), (self,), "log")

    def _backward():
        self.grad += out.grad / self.data

    out._backward = _backward
    return out


Value.exp = exp
Value.log = log
"""

RELU_MAX = """\
def relu(self):
    out = Value(max(0, self.data), (self,), "ReLU")

    def _backward():
        self.grad += (out.data > 0) * out.grad

    out._backward = _backward
    return out


Value.relu = relu
"""

SUM_NEURON = """\
def neuron(xs, ws, b):
    act = sum((wi*xi for wi, xi in zip(ws, xs)), b)
    out = act.tanh()
    return out
"""


# ---- lesson 5: a small nn module -------------------------------------------------------

REPO_MODULE_NEURON = """\
class Module:

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0

    def parameters(self):
        return []

class Neuron(Module):

    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1,1)) for _ in range(nin)]
        self.b = Value(0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi*xi for wi,xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]

    def __repr__(self):
        return f"{'ReLU' if self.nonlin else 'Linear'}Neuron({len(self.w)})"
"""

REPO_LAYER_MLP = """\
class Layer(Module):

    def __init__(self, nin, nout, **kwargs):
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self):
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"

class MLP(Module):

    def __init__(self, nin, nouts):
        sz = [nin] + nouts
        self.layers = [Layer(sz[i], sz[i+1], nonlin=i!=len(nouts)-1) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self):
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
"""

# A Layer that takes keyword arguments and drops them: every neuron is relu, the MLP's
# last layer too.
KWARGS_DROPPED_LAYER_MLP = """\
class Layer(Module):
    def __init__(self, nin, nout, **kwargs):
        self.neurons = [Neuron(nin) for _ in range(nout)]

    def __call__(self, x):
        outs = [neuron(x) for neuron in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        params = []
        for neuron in self.neurons:
            params.extend(neuron.parameters())
        return params


class MLP(Module):
    def __init__(self, nin, nouts):
        sizes = [nin] + list(nouts)
        self.layers = []
        for i in range(len(nouts)):
            last = i == len(nouts) - 1
            self.layers.append(Layer(sizes[i], sizes[i + 1], nonlin=not last))

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
"""

# A Layer as in the lecture, with no keyword arguments at all, under the lessons' MLP.
NO_KWARGS_LAYER_MLP = """\
class Layer(Module):
    def __init__(self, nin, nout):
        self.neurons = [Neuron(nin) for _ in range(nout)]

    def __call__(self, x):
        outs = [n(x) for n in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for neuron in self.neurons for p in neuron.parameters()]


class MLP(Module):
    def __init__(self, nin, nouts):
        sz = [nin] + nouts
        self.layers = [
            Layer(sz[i], sz[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
"""

# The lecture's neuron squashes with tanh; here relu is asked.
TANH_MODULE_NEURON = """\
class Module:
    def parameters(self):
        return []

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(random.uniform(-1, 1))
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        out = act.tanh() if self.nonlin else act
        return out

    def parameters(self):
        return self.w + [self.b]
"""


# In PyTorch's style: Module.__call__ runs forward(), and each module calls forward() of
# the modules inside it. A Layer that calls forward() on its neurons works on its own
# Neuron only: the course's has no forward().
FORWARD_MODULE_NEURON = """\
class Module:
    def __call__(self, *args):
        return self.forward(*args)

    def parameters(self):
        return []

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def forward(self, x):
        act = dot(self.w, x, self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return [*self.w, self.b]
"""

FORWARD_LAYER_MLP = """\
class Layer(Module):
    def __init__(self, nin, nout, **kwargs):
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def forward(self, x):
        outs = [neuron.forward(x) for neuron in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for neuron in self.neurons for p in neuron.parameters()]


class MLP(Module):
    def __init__(self, nin, nouts):
        sizes = [nin] + list(nouts)
        self.layers = [
            Layer(sizes[i], sizes[i + 1], nonlin=i < len(nouts) - 1) for i in range(len(nouts))
        ]

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
"""

FORWARD_LINEAR_SEQUENTIAL = """\
class Linear(Module):
    def __init__(self, nin, nout):
        bound = 1 / math.sqrt(nin)
        self.weight = [[Value(random.uniform(-bound, bound)) for _ in range(nin)]
                       for _ in range(nout)]
        self.bias = [Value(random.uniform(-bound, bound)) for _ in range(nout)]

    def forward(self, x):
        return [dot(row, x, b) for row, b in zip(self.weight, self.bias)]

    def parameters(self):
        return [w for row in self.weight for w in row] + list(self.bias)


class Sequential(Module):
    def __init__(self, *layers):
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
"""

# A tutorial's Linear that squashes its outputs, under a right Sequential.
RELU_LINEAR_SEQUENTIAL = """\
class Linear(Module):
    def __init__(self, nin, nout):
        bound = 1 / math.sqrt(nin)
        self.weight = [[Value(random.uniform(-bound, bound)) for _ in range(nin)]
                       for _ in range(nout)]
        self.bias = [Value(random.uniform(-bound, bound)) for _ in range(nout)]

    def __call__(self, x):
        return [dot(row, x, b).relu() for row, b in zip(self.weight, self.bias)]

    def parameters(self):
        return [w for row in self.weight for w in row] + list(self.bias)


class Sequential(Module):
    def __init__(self, *modules):
        self.modules = list(modules)

    def __call__(self, x):
        for module in self.modules:
            x = module(x)
        return x

    def parameters(self):
        return [p for module in self.modules for p in module.parameters()]
"""

# A tutorial's Module without zero_grad(): its training loop zeroes the grads itself.
MLP_ZERO_GRAD_MODULE_NEURON = """\
class Module:
    def parameters(self):
        return []


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]
"""


# ---- lesson 1: a __pow__ body pasted into the stub -----------------------------------------

POW_OTHER_BODY = """\
    out = Value(self.data ** other, (self,), f"**{other}")

    def _backward():
        self.grad += other * self.data ** (other - 1) * out.grad

    out._backward = _backward
    return out
"""


def pow_named_other(source: str) -> str:
    """Lesson 1's arithmetic cell with the student's ``__pow__(self, other)``: the def line
    renamed to match the body pasted into the stub's solution region, the rest of the
    stub (its docstring, any check it makes) left as it is."""
    import re

    source, renamed = re.subn(r"def __pow__\(self, \w+\):", "def __pow__(self, other):", source)
    assert renamed == 1, "lesson 1's arithmetic cell has no __pow__(self, ...)"
    begin, end = "### BEGIN SOLUTION\n", "    ### END SOLUTION"
    start = source.index(begin) + len(begin)
    return source[:start] + POW_OTHER_BODY + source[source.index(end, start) :]


# ---- a cell started: one function written, the others still the stub ----------------------

# The lecture's Neuron (tanh) pasted under the stub's Module, whose parameters() and
# zero_grad() still raise NotImplementedError.
STUB_MODULE_TANH_NEURON = """\
class Module:
    \"\"\"Something with parameters: the base class of every model in this lesson.\"\"\"

    def parameters(self):
        \"\"\"A list of every parameter (Value) of this module, in a fixed order.\"\"\"
        # YOUR CODE HERE
        raise NotImplementedError()

    def zero_grad(self):
        \"\"\"Set the grad of every parameter to 0.0.\"\"\"
        # YOUR CODE HERE
        raise NotImplementedError()


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(random.uniform(-1, 1))
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        out = act.tanh() if self.nonlin else act
        return out

    def parameters(self):
        return self.w + [self.b]
"""

# Lesson 1's reflected operations begun with __rsub__, written as a - b is (self first),
# the other three still the stub's.
RSUB_FIRST_REFLECTED = """\
def __radd__(self, other):
    \"\"\"other + self, for a plain number other.\"\"\"
    # YOUR CODE HERE
    raise NotImplementedError()


def __rmul__(self, other):
    \"\"\"other * self\"\"\"
    # YOUR CODE HERE
    raise NotImplementedError()


def __rsub__(self, other):
    \"\"\"other - self\"\"\"
    return self - other


def __rtruediv__(self, other):
    \"\"\"other / self\"\"\"
    # YOUR CODE HERE
    raise NotImplementedError()


Value.__radd__ = __radd__
Value.__rmul__ = __rmul__
Value.__rsub__ = __rsub__
Value.__rtruediv__ = __rtruediv__
"""
