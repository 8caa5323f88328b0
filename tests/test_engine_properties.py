"""Property-based tests: random expression graphs, refgrad against torch and finite differences.

A hypothesis strategy writes a small random program over 2-4 leaves: each step applies
one operation (every binary op with Values or plain numbers on either side, ``**`` with
number and Value exponents, every unary function, the fused ``dot``) to earlier results,
so later steps share earlier sub-expressions. The program's output is the sum of every
result no later step used, so every step matters.

The program is then run three ways: in refgrad, in torch float64, and in refgrad again
with each leaf nudged by +-h (central finite differences). The output and every leaf's
gradient must agree.

Safe domains are chosen while the program is written, from the values refgrad computes
for it: log and sqrt only see arguments >= 0.05 (else they get ``u*u + 0.5``), divisors
are at least 0.25 away from zero, relu arguments are at least 0.05 away from its kink,
exp arguments stay below 5 and every intermediate stays within 1e3 in size.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refgrad import Value, topological_order
from refgrad.engine import dot

# derandomize: the same examples on every run and every machine, no example database.
CHECKS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

STRUCTURE_CHECKS = settings(CHECKS, max_examples=75)  # for properties that do not need many

BOUND = 1e3  # no intermediate result may be larger than this in size
KINK = 0.05  # how far relu, log and sqrt arguments stay from their edge
CONSTANTS = [-2.5, -1.0, -0.5, 0.5, 1.5, 2.0, 3.0]  # plain numbers in the programs
POWERS = [2, 3, -1, -2, 0.5, 1.5, 2.5]  # number exponents
UNARY = ["neg", "tanh", "relu", "exp", "log", "sigmoid", "sin", "cos", "sqrt"]
BINARY = ["+", "-", "*", "/"]

# ---- running a program ----------------------------------------------------------------
# A program is a list of steps; an operand is ("node", i) for the i-th result so far
# (leaves first) or ("num", c) for a plain number.
#   ("bin", op, lhs, rhs)    lhs op rhs, op in + - * /
#   ("pow", i, n)            node ** number
#   ("vpow", i, j)           node ** node (base > 0)
#   ("rpow", c, i)           number ** node (c > 0)
#   ("fn", name, i)          a unary function of a node
#   ("dot", ws, xs, bias)    dot(weights=nodes ws, inputs=operands xs, bias=operand)


class RefgradOps:
    """How a program runs in refgrad."""

    @staticmethod
    def fn(name, v):
        return -v if name == "neg" else getattr(v, name)()

    @staticmethod
    def dot(ws, xs, b):
        return dot(ws, xs, b)


class TorchOps:
    """How the same program runs in torch."""

    @staticmethod
    def fn(name, v):
        return -v if name == "neg" else getattr(torch, name)(v)

    @staticmethod
    def dot(ws, xs, b):
        total = b
        for w, x in zip(ws, xs):
            total = total + w * x
        return total


def apply_binary(op, a, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a / b


def apply_step(step, nodes, ops, used=None):
    """Append the result of one step to ``nodes``; record which nodes it read in ``used``."""

    def get(ref):
        kind, v = ref
        if kind == "num":
            return v
        if used is not None:
            used.add(v)
        return nodes[v]

    kind = step[0]
    if kind == "bin":
        out = apply_binary(step[1], get(step[2]), get(step[3]))
    elif kind == "pow":
        out = get(("node", step[1])) ** step[2]
    elif kind == "vpow":
        out = get(("node", step[1])) ** get(("node", step[2]))
    elif kind == "rpow":
        out = step[1] ** get(("node", step[2]))
    elif kind == "fn":
        out = ops.fn(step[1], get(("node", step[2])))
    else:
        _, ws, xs, bias = step
        out = ops.dot([get(("node", w)) for w in ws], [get(x) for x in xs], get(bias))
    nodes.append(out)
    return out


def run(program, leaves, ops):
    """Run ``program`` on ``leaves``: the sum of every result that no later step used."""
    nodes = list(leaves)
    used = set()
    for step in program:
        apply_step(step, nodes, ops, used)
    output = None
    for i, node in enumerate(nodes):
        if i not in used:
            output = node if output is None else output + node
    return output


# ---- writing a program ----------------------------------------------------------------


@st.composite
def programs(draw, min_steps=1, max_steps=10):  # noqa: C901 (one branch per op)
    """(leaf values, program), with every intermediate value in a safe domain."""
    n_leaves = draw(st.integers(2, 4))
    leaf_values = [
        draw(st.floats(-2.0, 2.0, allow_nan=False).filter(lambda x: abs(x) > 1e-3))
        for _ in range(n_leaves)
    ]
    values = [Value(x) for x in leaf_values]  # refgrad's results so far, to pick guards
    program = []

    def emit(step, guard=False):
        """Add ``step`` if its value is in bounds (guards always are); its index or None."""
        out = apply_step(step, values, RefgradOps)
        if not guard and not (math.isfinite(out.data) and abs(out.data) <= BOUND):
            values.pop()
            return None
        program.append(step)
        return len(values) - 1

    def node():  # an earlier result; recent ones more often, so chains grow deep
        n = len(values)
        return draw(st.one_of(st.integers(max(0, n - 3), n - 1), st.integers(0, n - 1)))

    def operand():
        if draw(st.booleans()):
            return ("node", node())
        return ("num", draw(st.sampled_from(CONSTANTS)))

    def made_positive(i):  # i*i + 0.5, or sigmoid(i) + 0.5 when i*i would be too big
        if abs(values[i].data) <= 30.0:
            inner = emit(("bin", "*", ("node", i), ("node", i)), guard=True)
        else:
            inner = emit(("fn", "sigmoid", i), guard=True)
        return emit(("bin", "+", ("node", inner), ("num", 0.5)), guard=True)

    def positive(i):  # a node whose value is >= KINK
        return i if values[i].data >= KINK else made_positive(i)

    def away_from_zero(i):  # a node whose value is at least 0.25 in size
        return i if abs(values[i].data) >= 0.25 else made_positive(i)

    n_steps = draw(st.integers(min_steps, max_steps))
    for _ in range(n_steps):
        kind = draw(
            st.sampled_from(["bin", "bin", "bin", "pow", "vpow", "rpow", "fn", "fn", "dot"])
        )
        if kind == "bin":
            op = draw(st.sampled_from(BINARY))
            lhs, rhs = operand(), operand()
            if lhs[0] == "num" and rhs[0] == "num":
                rhs = ("node", node())
            if op == "/" and rhs[0] == "node":
                rhs = ("node", away_from_zero(rhs[1]))
            emit(("bin", op, lhs, rhs))
        elif kind == "pow":
            i, n = node(), draw(st.sampled_from(POWERS))
            if not float(n).is_integer():
                i = positive(i)
            elif n < 0:
                i = away_from_zero(i)
            emit(("pow", i, n))
        elif kind == "vpow":
            base, exponent = positive(node()), node()
            if abs(values[exponent].data) <= 3.0:
                emit(("vpow", base, exponent))
        elif kind == "rpow":
            i = node()
            if abs(values[i].data) <= 5.0:
                emit(("rpow", draw(st.sampled_from([0.5, 1.5, 2.0, 3.0])), i))
        elif kind == "fn":
            name, i = draw(st.sampled_from(UNARY)), node()
            if name in ("log", "sqrt"):
                i = positive(i)
            elif name == "relu" and abs(values[i].data) < KINK:
                name = "tanh"
            elif name == "exp" and values[i].data > 5.0:
                name = "sigmoid"
            emit(("fn", name, i))
        else:
            k = draw(st.integers(1, 3))
            ws = [node() for _ in range(k)]
            xs = [operand() for _ in range(k)]
            emit(("dot", ws, xs, operand()))
    return leaf_values, program


# ---- comparing ------------------------------------------------------------------------


def refgrad_run(leaf_values, program):
    leaves = [Value(x) for x in leaf_values]
    out = run(program, leaves, RefgradOps)
    out.backward()
    return out, leaves


def torch_run(leaf_values, program):
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in leaf_values]
    out = run(program, leaves, TorchOps)
    out.backward()
    grads = [0.0 if t.grad is None else t.grad.item() for t in leaves]
    return out.item(), grads


def close(a, b, rel=1e-7, scale=1.0):
    return math.isclose(a, b, rel_tol=rel, abs_tol=rel * scale)


@CHECKS
@given(programs())
def test_random_graphs_match_torch(case):
    leaf_values, program = case
    out, leaves = refgrad_run(leaf_values, program)
    t_out, t_grads = torch_run(leaf_values, program)
    assert close(out.data, t_out), (out.data, t_out, program)
    scale = 1.0 + max(abs(g) for g in t_grads)
    for leaf, t_grad in zip(leaves, t_grads):
        assert close(leaf.grad, t_grad, scale=scale), (leaf.grad, t_grad, program)


@CHECKS
@given(programs())
def test_random_graphs_match_finite_differences(case):
    leaf_values, program = case
    _, leaves = refgrad_run(leaf_values, program)
    scale = 1.0 + max(abs(leaf.grad) for leaf in leaves)
    for i, leaf in enumerate(leaves):
        h = 1e-6 * max(1.0, abs(leaf_values[i]))

        def f(shift, i=i):
            nudged = list(leaf_values)
            nudged[i] += shift
            return run(program, [Value(x) for x in nudged], RefgradOps).data

        numeric = (f(h) - f(-h)) / (2.0 * h)
        assert close(leaf.grad, numeric, rel=1e-4, scale=scale), (leaf.grad, numeric, program)


@STRUCTURE_CHECKS
@given(programs())
def test_topological_order_lists_each_node_once_after_its_parents(case):
    leaf_values, program = case
    out, _ = refgrad_run(leaf_values, program)
    order = topological_order(out)
    assert len({id(n) for n in order}) == len(order)
    position = {id(n): k for k, n in enumerate(order)}
    for node in order:
        for parent in node._prev:
            assert position[id(parent)] < position[id(node)]
    assert order[-1] is out


@STRUCTURE_CHECKS
@given(programs())
def test_two_backward_calls_double_the_leaf_gradients(case):
    leaf_values, program = case
    out, leaves = refgrad_run(leaf_values, program)
    once = [leaf.grad for leaf in leaves]
    interior = [n.grad for n in topological_order(out) if n._backward is not None]
    out.backward()
    for leaf, g in zip(leaves, once):
        assert leaf.grad == pytest.approx(2.0 * g, rel=1e-12, abs=1e-300)
    # interior nodes start each backward from zero: the same gradient as the first call
    assert [n.grad for n in topological_order(out) if n._backward is not None] == interior
