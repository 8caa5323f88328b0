"""The course's own solutions to 02_backward's topological_order, backward() and
numerical_grad, attached (``Given``) to the tests of exercises built on them, so that a
bug costs the points of the exercise that has it and not of the ones after it."""

from .common import Given

TOPOLOGICAL_ORDER = Given(
    "topological_order",
    "topological_order",
    """
def topological_order(root):
    order, visited = [], set()

    def visit(node):
        if node not in visited:
            visited.add(node)
            for parent in node._prev:
                visit(parent)
            order.append(node)

    visit(root)
    return order
""",
)
BACKWARD = Given(
    "Value.backward",
    "backward",
    """
def backward(self):
    self.grad = 1.0
    for node in reversed(topological_order(self)):
        node._backward()
""",
)
NUMERICAL_GRAD = Given(
    "numerical_grad",
    "numerical_grad",
    """
def numerical_grad(f, xs, h=1e-6):
    grads = []
    for i in range(len(xs)):
        up, down = list(xs), list(xs)
        up[i] += h
        down[i] -= h
        grads.append((f(*up) - f(*down)) / (2 * h))
    return grads
""",
)
