"""The reference engine, op by op: values, gradients (against torch), edge cases, errors.

Random whole graphs are in test_engine_properties.py; this file pins down each operation
at the points where engines usually go wrong: domain edges, kinks, huge and tiny
numbers, bad arguments, repeated backward calls, and very deep graphs.
"""

from __future__ import annotations

import gc
import math
import re

import pytest
import torch
from refgrad import Value, topological_order, zero_grad
from refgrad.engine import dot


def t64(x: float) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


def refgrad_grads(f, *xs: float) -> tuple[float, list[float]]:
    """f(*Values).data and each input's gradient after backward."""
    vs = [Value(x) for x in xs]
    out = f(*vs)
    out.backward()
    return out.data, [v.grad for v in vs]


def torch_grads(f, *xs: float) -> tuple[float, list[float]]:
    ts = [t64(x) for x in xs]
    out = f(*ts)
    out.backward()
    return out.item(), [0.0 if t.grad is None else t.grad.item() for t in ts]


def assert_matches_torch(f, *xs: float, torch_f=None, rel: float = 1e-12) -> None:
    """The same function in refgrad and torch float64: same value, same gradients."""
    value, grads = refgrad_grads(f, *xs)
    t_value, t_grads = torch_grads(torch_f or f, *xs)
    assert value == pytest.approx(t_value, rel=rel, abs=1e-300, nan_ok=True)
    assert grads == pytest.approx(t_grads, rel=rel, abs=1e-300, nan_ok=True)


# ---- the lessons' worked examples ---------------------------------------------------


def test_lesson_example_square_of_affine():
    """f = (a*b + c)**2 at a=2, b=-3, c=10: f = 16, grads -24, 16, 8."""
    a, b, c = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c")
    f = (a * b + c) ** 2
    f.backward()
    assert f.data == 16.0
    assert (a.grad, b.grad, c.grad) == (-24.0, 16.0, 8.0)


def test_lesson_example_shared_input():
    """z = x*y + x at x=2, y=3: z = 8, dz/dx = y + 1 = 4, dz/dy = x = 2."""
    x, y = Value(2.0), Value(3.0)
    z = x * y + x
    z.backward()
    assert (z.data, x.grad, y.grad) == (8.0, 4.0, 2.0)


# ---- construction and repr -----------------------------------------------------------


@pytest.mark.parametrize("data", [3, 2.5, -0.0, True, 10**20])
def test_data_is_stored_as_float(data):
    v = Value(data)
    assert type(v.data) is float
    assert v.data == float(data)
    assert v.grad == 0.0


@pytest.mark.parametrize("bad", ["abc", None, [1], (1.0,), 1 + 2j, {"x": 1}])
def test_non_numbers_are_a_type_error_naming_the_argument(bad):
    with pytest.raises(TypeError, match=re.escape(repr(bad))):
        Value(bad)


@pytest.mark.parametrize(
    "expr",
    [
        lambda v: v + "a",
        lambda v: "a" + v,
        lambda v: v * None,
        lambda v: [1] * v,
        lambda v: v - "a",
        lambda v: "a" - v,
        lambda v: v / "a",
        lambda v: "a" / v,
        lambda v: v ** "a",
        lambda v: "a" ** v,
    ],
)
def test_arithmetic_with_a_non_number_is_a_type_error(expr):
    with pytest.raises(TypeError):
        expr(Value(2.0))


def test_repr_shows_data_grad_and_label():
    v = Value(2.5)
    assert repr(v) == "Value(data=2.5, grad=0.0)"
    w = Value(-1.0, label="w1")
    (w * 3).backward()
    text = repr(w)
    assert "data=-1.0" in text and "grad=3.0" in text and "w1" in text


def test_op_is_recorded_and_parents_kept():
    a, b = Value(1.0), Value(2.0)
    c = a * b
    assert c._op == "*"
    assert set(map(id, c._prev)) == {id(a), id(b)}
    assert a._prev == () and a._backward is None


# ---- each operation against torch --------------------------------------------------


BINARY_CASES = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b),
    ("add number", lambda a, b: a + 2.5 + b),
    ("number minus", lambda a, b: 2.0 - a * b),
    ("divide by number", lambda a, b: (a + b) / 3.0),
    ("number over", lambda a, b: 1.0 / (a * b)),
    ("number times", lambda a, b: -1.5 * a + b * 4),
    ("int powers", lambda a, b: a**2 * b**3 + a**-1),
]


@pytest.mark.parametrize("name,f", BINARY_CASES, ids=[c[0] for c in BINARY_CASES])
@pytest.mark.parametrize("a,b", [(1.5, -0.7), (-3.0, 2.0), (1e-3, 1e3)])
def test_binary_ops_match_torch(name, f, a, b):
    assert_matches_torch(f, a, b)


UNARY_CASES = [
    ("neg", lambda v: -v, lambda t: -t),
    ("tanh", Value.tanh, torch.tanh),
    ("relu", Value.relu, torch.relu),
    ("exp", Value.exp, torch.exp),
    ("sigmoid", Value.sigmoid, torch.sigmoid),
    ("sin", Value.sin, torch.sin),
    ("cos", Value.cos, torch.cos),
]


@pytest.mark.parametrize("name,f,tf", UNARY_CASES, ids=[c[0] for c in UNARY_CASES])
@pytest.mark.parametrize("x", [-2.3, -0.4, 0.0, 0.7, 3.1])
def test_unary_ops_match_torch(name, f, tf, x):
    assert_matches_torch(f, x, torch_f=tf)


@pytest.mark.parametrize("x", [1e-8, 0.3, 1.0, 2.0, 1e8])
def test_log_and_sqrt_match_torch(x):
    assert_matches_torch(Value.log, x, torch_f=torch.log)
    assert_matches_torch(Value.sqrt, x, torch_f=torch.sqrt)


@pytest.mark.parametrize("x,n", [(-2.0, 3), (-2.0, 2), (-2.0, -1), (-1.5, -2.0), (-0.5, 4.0)])
def test_negative_base_with_whole_number_power_matches_torch(x, n):
    assert_matches_torch(lambda v: v**n, x)


@pytest.mark.parametrize("x,n", [(0.0, 0), (0.0, 1), (0.0, 2), (0.0, 0.5), (0.0, 1.5), (4.0, 0)])
def test_powers_at_zero_match_torch(x, n):
    """0**0 = 1 with slope 0; 0**0.5 has an infinite slope there, as torch says."""
    assert_matches_torch(lambda v: v**n, x)


def test_sqrt_of_zero():
    x = Value(0.0)
    y = x.sqrt()
    y.backward()
    assert y.data == 0.0
    assert x.grad == math.inf  # torch.sqrt says inf as well
    assert_matches_torch(Value.sqrt, 0.0, torch_f=torch.sqrt)


def test_relu_at_zero_has_gradient_zero_like_torch():
    assert refgrad_grads(Value.relu, 0.0) == (0.0, [0.0])
    assert torch_grads(torch.relu, 0.0) == (0.0, [0.0])
    assert refgrad_grads(Value.relu, -0.0)[1] == [0.0]


# ---- reflected operators (the plain number on the left) ---------------------------------


@pytest.mark.parametrize(
    "f,value,grad",
    [
        (lambda x: 2 + x, 5.0, 1.0),
        (lambda x: 2 - x, -1.0, -1.0),
        (lambda x: 2 * x, 6.0, 2.0),
        (lambda x: 1 / x, 1 / 3, -1 / 9),
        (lambda x: 2**x, 8.0, 8.0 * math.log(2.0)),
        (lambda x: 0.5**x, 0.125, 0.125 * math.log(0.5)),
    ],
)
def test_reflected_ops(f, value, grad):
    x = Value(3.0)
    y = f(x)
    y.backward()
    assert y.data == pytest.approx(value, rel=1e-15)
    assert x.grad == pytest.approx(grad, rel=1e-15)
    assert_matches_torch(f, 3.0)


# ---- Value exponents -----------------------------------------------------------------


@pytest.mark.parametrize("a,b", [(2.0, 3.0), (1.7, -0.6), (0.3, 2.5), (5.0, 0.0), (1.0, 4.0)])
def test_value_exponent_gradient_for_both_sides_matches_torch(a, b):
    assert_matches_torch(lambda x, y: x**y, a, b)


def test_value_exponent_on_a_shared_node():
    assert_matches_torch(lambda x, y: (x * y) ** (x + 1.0), 1.3, 0.8)


@pytest.mark.parametrize("a", [0.0, -2.0])
def test_value_exponent_needs_a_positive_base(a):
    with pytest.raises(ValueError, match="positive base"):
        Value(a) ** Value(2.0)


# ---- domains and errors ----------------------------------------------------------------


@pytest.mark.parametrize("x", [0.0, -2.0, -1e-300])
def test_log_of_non_positive_is_a_value_error_showing_the_value(x):
    with pytest.raises(ValueError, match=re.escape(f"log({x!r})")):
        Value(x).log()


def test_sqrt_of_negative_is_a_value_error_showing_the_value():
    with pytest.raises(ValueError, match=re.escape("sqrt(-1.5)")):
        Value(-1.5).sqrt()


@pytest.mark.parametrize("n", [0.5, -0.5, 1.0000001])
def test_negative_base_with_fractional_power_is_a_value_error(n):
    with pytest.raises(ValueError, match=r"-2\.0"):
        Value(-2.0) ** n


@pytest.mark.parametrize("n", [-1, -2.0, -0.5])
def test_zero_to_a_negative_power_is_a_zero_division_error(n):
    with pytest.raises(ZeroDivisionError, match=re.escape(f"0.0 ** {float(n)!r}")):
        Value(0.0) ** n


@pytest.mark.parametrize(
    "f,shown",
    [
        (lambda: Value(1.0) / Value(0.0), "1.0 / 0.0"),
        (lambda: Value(1.5) / 0, "1.5 / 0.0"),
        (lambda: 2.0 / Value(0.0), "2.0 / 0.0"),
        (lambda: Value(0.0) / Value(-0.0), "0.0 / 0.0"),
    ],
)
def test_division_by_exactly_zero_is_a_zero_division_error(f, shown):
    with pytest.raises(ZeroDivisionError, match=re.escape(f"division by zero: {shown}")):
        f()


@pytest.mark.parametrize("d", [1e-8, -1e-8, 1e-150])
def test_division_by_nearly_zero_matches_torch(d):
    assert_matches_torch(lambda a, b: a / b, 3.0, d)
    assert_matches_torch(lambda b: 1.0 / b, d)


def test_exp_overflow_is_a_clear_overflow_error():
    with pytest.raises(OverflowError, match=r"exp\(1000\.0\)"):
        Value(1000.0).exp()
    with pytest.raises(OverflowError, match="largest float"):
        Value(710.0).exp()


@pytest.mark.parametrize("x", [709.0, 709.78, -1000.0])
def test_exp_up_to_the_largest_float(x):
    assert_matches_torch(Value.exp, x, torch_f=torch.exp)
    assert math.isfinite(Value(x).exp().data)


@pytest.mark.parametrize("x", [1000.0, -1000.0, 40.0, -40.0, 1e300])
def test_tanh_and_sigmoid_are_finite_at_large_inputs(x):
    for f, tf in [(Value.tanh, torch.tanh), (Value.sigmoid, torch.sigmoid)]:
        value, [grad] = refgrad_grads(f, x)
        assert math.isfinite(value) and math.isfinite(grad)
        assert_matches_torch(f, x, torch_f=tf)
    if abs(x) == 1000.0:
        assert refgrad_grads(Value.tanh, x) == (math.copysign(1.0, x), [0.0])
        assert refgrad_grads(Value.sigmoid, x) == (1.0 if x > 0 else 0.0, [0.0])


# ---- accumulation, zero_grad, repeated backward --------------------------------------


def _f(x, y):
    return (x * y + x.tanh()) * (y - 1.0) + (x * y) ** 2


def test_two_backward_calls_on_one_graph_accumulate_like_torch():
    x, y = Value(0.4), Value(-1.3)
    out = _f(x, y)
    out.backward()
    once = (x.grad, y.grad)
    out.backward()
    assert (x.grad, y.grad) == pytest.approx((2 * once[0], 2 * once[1]), rel=1e-15)
    tx, ty = t64(0.4), t64(-1.3)
    t_out = _f(tx, ty)
    t_out.backward(retain_graph=True)
    t_out.backward()
    assert (x.grad, y.grad) == pytest.approx((tx.grad.item(), ty.grad.item()), rel=1e-12)


def test_backward_through_two_fresh_graphs_accumulates():
    x, y = Value(0.4), Value(-1.3)
    _f(x, y).backward()
    once = (x.grad, y.grad)
    _f(x, y).backward()
    assert (x.grad, y.grad) == pytest.approx((2 * once[0], 2 * once[1]), rel=1e-15)


def test_backward_on_a_leaf_accumulates_one_each_time():
    x = Value(3.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


def test_zero_grad_on_a_graph_and_on_a_parameter_list():
    x, y = Value(0.4), Value(-1.3)
    out = _f(x, y)
    out.backward()
    nodes = topological_order(out)
    assert any(n.grad != 0.0 for n in nodes)
    zero_grad(out)
    assert all(n.grad == 0.0 for n in nodes)

    out.backward()
    zero_grad([x, y])
    assert (x.grad, y.grad) == (0.0, 0.0)
    assert out.grad == 1.0  # only the listed values were reset
    zero_grad(iter([out]))  # any iterable works
    assert out.grad == 0.0


def test_interior_gradients_are_recomputed_not_accumulated():
    x = Value(2.0)
    h = x * 3.0
    out = h * h
    out.backward()
    out.backward()
    assert h.grad == 2 * h.data  # d(h*h)/dh, once: interior nodes start from zero
    assert out.grad == 1.0
    assert x.grad == 2 * (2 * h.data * 3.0)


# ---- shared nodes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "f,grad",
    [
        (lambda x: x + x, 2.0),
        (lambda x: x * x, 6.0),
        (lambda x: x - x, 0.0),
        (lambda x: x / x, 0.0),
        (lambda x: x**x, 27.0 * (math.log(3.0) + 1.0)),
    ],
)
def test_a_value_used_twice_gets_both_contributions(f, grad):
    x = Value(3.0)
    f(x).backward()
    assert x.grad == pytest.approx(grad, rel=1e-15)
    assert_matches_torch(f, 3.0)


def test_a_value_used_several_times_in_one_dot():
    """dot([x, x], [x, 2], x) = x*x + 2x + x: slope 2x + 3."""
    x = Value(3.0)
    dot([x, x], [x, 2.0], x).backward()
    assert x.grad == 2 * 3.0 + 3.0


def test_diamond():
    """x feeds a and b, which both feed c: dc/dx = 2*b + a*1 for a = 2x, b = x + 1."""
    x = Value(1.5)
    a = x * 2.0
    b = x + 1.0
    c = a * b
    c.backward()
    assert c.data == 7.5
    assert x.grad == 2 * b.data + a.data
    assert (a.grad, b.grad) == (b.data, a.data)
    assert_matches_torch(lambda v: (v * 2.0) * (v + 1.0), 1.5)


def test_wide_fan_out():
    x = Value(0.5)
    total = sum((x * float(k) for k in range(1000)), Value(0.0))
    total.backward()
    assert x.grad == sum(range(1000))


# ---- dot ------------------------------------------------------------------------------


def test_dot_matches_the_same_sum_written_out():
    ws = [Value(w) for w in (0.5, -1.25, 2.0)]
    xs = [Value(1.5), 3.0, Value(-2.0)]  # inputs may be plain numbers
    b = Value(0.25)
    out = dot(ws, xs, b)
    out.backward()
    assert out.data == 0.5 * 1.5 - 1.25 * 3.0 + 2.0 * -2.0 + 0.25
    assert [w.grad for w in ws] == [1.5, 3.0, -2.0]
    assert (xs[0].grad, xs[2].grad, b.grad) == (0.5, 2.0, 1.0)
    assert out._op == "dot"


def test_dot_needs_as_many_weights_as_inputs():
    with pytest.raises(ValueError, match="2 weights but 3 inputs"):
        dot([Value(1.0), Value(2.0)], [1.0, 2.0, 3.0])


# ---- order and depth --------------------------------------------------------------------


def test_topological_order_puts_each_node_once_after_its_parents():
    x, y = Value(1.0), Value(2.0)
    a = x * y
    b = a + x
    c = a * b
    d = c + c.tanh() + b
    order = topological_order(d)
    assert len(order) == len({id(n) for n in order})
    position = {id(n): i for i, n in enumerate(order)}
    reachable = {id(n) for n in (x, y, a, b, c, d)}
    assert reachable <= set(position)
    for node in order:
        for parent in node._prev:
            assert position[id(parent)] < position[id(node)]
    assert order[-1] is d
    assert topological_order(x) == [x]


def test_a_million_node_chain_backwards_without_recursion_error():
    # The chain holds no reference cycles, so the garbage collector has nothing to find;
    # switched off, it stops rescanning millions of live objects and the test runs 3x faster.
    gc.disable()
    try:
        x = Value(0.5)
        y = x
        for _ in range(1_000_000):  # one node each
            y = -y
        assert len(topological_order(y)) == 1_000_001
        y.backward()
        assert (y.data, x.grad) == (0.5, 1.0)
        del y  # dropping the chain must not overflow the C stack either
    finally:
        gc.enable()
