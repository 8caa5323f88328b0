"""Hidden tests of 09_set_arrays, problem set 3: from scalars to arrays.

- ``count_nodes`` is compared with the number of nodes the reference network really
  has: refgrad's MLP called on input Values, or the same network with every neuron
  written as a sum of products, its graph walked from the outputs.
- ``unbroadcast`` is compared with sums computed here.
- Each ``Tensor`` operation is built by the probe on arrays drawn here, and its closure
  called once, by hand, with a random ``out.grad`` and the inputs' grads already holding
  numbers; the same computation in refgrad Values, element by element, gives what every
  grad must be. ``+`` runs with the course's ``unbroadcast`` (a ``Given``), so a slip in
  that exercise costs nothing here.
- ``backward()`` runs on graphs the probe makes by hand, whose closures are the probe's:
  none of the student's operations takes part.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import set_arrays_ref as R
from .common import Given, Kernel, Part, RefValue, fail, num, ref, ref_nn, shares, short
from .set_arrays_backward import backward
from .sets import course_engine

ENGINE = course_engine("Value", "MLP")

UNBROADCAST = Given(
    "unbroadcast",
    "unbroadcast",
    """
import numpy as np


def unbroadcast(grad, shape):
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
""",
)

NOT_WRITTEN = "NotImplementedError"


# ---- exercise 1: count_nodes ------------------------------------------------------------


def nodes_of(nin: int, nouts: list[int], fused: bool, seed: int) -> int:
    """The nodes of the graph of refgrad's MLP(nin, nouts) on nin input Values (every
    node any output depends on); with ``fused`` False, each neuron is the sum of products
    b + w0*x0 + w1*x1 + ... instead of one dot node."""
    model = ref_nn.MLP(nin, nouts, rng=seed)
    xs = [RefValue(0.5 + 0.1 * i) for i in range(nin)]
    if fused:
        outs = model(xs)
    else:
        h = xs
        for layer in model.layers:
            h = [_unfused(neuron, h) for neuron in layer.neurons]
        outs = h
    outs = outs if isinstance(outs, list) else [outs]
    seen: set[int] = set()
    for out in outs:
        seen.update(id(node) for node in ref.topological_order(out))
    return len(seen)


def _unfused(neuron, xs):
    act = neuron.b
    for w, x in zip(neuron.w, xs):
        act = act + w * x
    return act.relu() if neuron.nonlin else act


def _count_parts(nin: int, nouts: list[int], fused: bool) -> dict[str, int]:
    """The parts of the count, to name what a wrong count leaves out."""
    sizes = [nin, *nouts]
    pairs = list(zip(sizes, nouts))
    return {
        "inputs": nin,
        "parameters": sum(n * (m + 1) for m, n in pairs),
        "biases": sum(nouts),
        "weights": sum(n * m for m, n in pairs),
        "relus": sum(nouts[:-1]),
        "last": nouts[-1],
        "neurons": sum(nouts),
        "products": sum(n * m for m, n in pairs) if not fused else 0,
    }


COUNT_HINTS = {
    "products": "a sum of products makes two nodes per input: a product and an addition",
    "ignores": "ignores fused=False: then each neuron is a sum of products",
    "inputs": "leaves out the nin input nodes: they are in the graph too",
    "parameters": "leaves out the parameters: every weight and bias is a node",
    "biases": "leaves out the biases: each neuron has one",
    "weights": "leaves out the weights",
    "relus": "leaves out the relu nodes of the hidden layers",
    "last_relu": "counts a relu in the last layer: the last layer is linear",
    "dots": "leaves out the dot node of each neuron",
    "off_by_one": "off by one",
}


def _slips(want: int, nin: int, nouts: list[int], fused: bool) -> dict[str, set[int]]:
    """What count_nodes gives with each slip of COUNT_HINTS (empty: not that case's)."""
    p = _count_parts(nin, nouts, fused)
    return {
        "products": {want - p["products"]} if not fused else set(),
        "ignores": {want - 2 * p["weights"] + p["neurons"]} if not fused else set(),
        "inputs": {want - p["inputs"]},
        "parameters": {want - p["parameters"]},
        "biases": {want - p["biases"]},
        "weights": {want - p["weights"]},
        "relus": {want - p["relus"]},
        "last_relu": {want + p["last"]},
        "dots": {want - p["neurons"]} if fused else set(),
        "off_by_one": {want - 1, want + 1},
    }


def _count_hint(failures: list[tuple]) -> str:
    """The slip that explains every wrong count (a slip is the same in every case), or
    else the parts of the first wrong count."""
    for name, hint in COUNT_HINTS.items():
        if all(got in _slips(want, *case)[name] - {want} for want, got, case in failures):
            return f"\n({hint})"
    return f"\n({_breakdown(*failures[0][2])})"


def _breakdown(nin: int, nouts: list[int], fused: bool) -> str:
    """The parts of a count, as a hint: 2 inputs + 13 parameters + ..."""
    p = _count_parts(nin, nouts, fused)
    sums = f"{p['neurons']} dot nodes" if fused else f"{2 * p['weights']} products and additions"
    total = p["inputs"] + p["parameters"] + p["relus"]
    total += p["neurons"] if fused else 2 * p["weights"]
    return (
        f"{p['inputs']} inputs + {p['parameters']} parameters + {sums}"
        f" + {p['relus']} relus = {total}"
    )


def count(kernel: Kernel) -> None:
    """count_nodes on the worked examples, random widths and a large network, with
    fused left out, True and False."""
    rng = kernel.rng
    shapes: list[tuple[int, list[int]]] = [(2, [3, 1]), (3, [4, 4, 1]), (1, [1]), (2, [16, 16, 1])]
    for _ in range(8):
        depth = rng.randint(1, 4)
        widths = [rng.randint(1, 8) for _ in range(depth - 1)] + [rng.randint(1, 3)]
        shapes.append((rng.randint(1, 6), widths))
    shapes.append((rng.choice((64, 100, 784)), [rng.choice((32, 128)), rng.choice((16, 64)), 10]))
    calls = []
    for nin, nouts in shapes:
        calls += [
            {"args": [nin, list(nouts)]},
            {"args": [nin, list(nouts)], "kwargs": {"fused": True}},
            {"args": [nin, list(nouts)], "kwargs": {"fused": False}},
        ]
    results = kernel.run("calls", function="count_nodes", calls=calls, what="count_nodes")
    wanted: dict[tuple, int] = {}
    failures, first, unfused_default = [], "", True
    for call, got in zip(calls, results):
        nin, nouts = call["args"]
        fused = call.get("kwargs", {}).get("fused", True)
        text = f"count_nodes({nin}, {nouts}" + (f", fused={fused})" if "kwargs" in call else ")")
        key = (nin, tuple(nouts), fused)
        if key not in wanted:
            wanted[key] = nodes_of(nin, nouts, fused, rng.randrange(10**6))
        want = wanted[key]
        if "failed" in got:
            if got["type"] == NOT_WRITTEN:
                fail("count_nodes raised NotImplementedError (not written yet)")
            fail(
                f"{text} should return {want},\ngot {short(got['error'], 84)}\n"
                f"(compute it from nin and nouts alone: {_breakdown(nin, nouts, fused)})"
            )
        if got["args"][1] != nouts:
            fail(
                f"{text} changed the list nouts it was given:\n"
                f"it should stay {nouts}, got {got['args'][1]}\n"
                "(make a new list instead, such as [nin, *nouts])"
            )
        result = got["result"]
        if not _is_number(result):
            fail(
                f"{text} should be the number {want}, got {num(result)}\n"
                "(return a plain int: a count is a whole number, not an array)"
            )
        if result != want:
            first = first or f"{text} should be {want}, got {num(result)}"
            failures.append((want, result, (nin, nouts, fused)))
            unfused = _count_parts(nin, nouts, False)
            unfused_default &= (
                "kwargs" not in call
                and result == want + 2 * unfused["weights"] - unfused["neurons"]
            )
    if failures and unfused_default:
        fail(
            first
            + "\n(fused should be True when it is not given: def count_nodes(..., fused=True))"
        )
    if failures:
        fail(first + _count_hint(failures))


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ---- exercise 2: unbroadcast --------------------------------------------------------------

UNBROADCAST_SHAPES = [
    ((3, 4), (4,)),
    ((3, 4), (1, 4)),
    ((3, 4), (3, 1)),
    ((3, 4), ()),
    ((3, 4), (3, 4)),
    ((2, 3, 4), (3, 4)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (2, 1, 4)),
    ((2, 3, 4), (1, 4)),
    ((2, 3, 4), (1, 1, 1)),
    ((2, 3, 4), (3, 1)),
    ((5,), (1,)),
    ((5,), ()),
    ((), ()),
    ((2, 3), (1, 1)),
]


def _resized(rng, shape: R.Shape) -> R.Shape:
    """The same pattern of axes, with other lengths (a length of 1 stays 1)."""
    return tuple(n if n == 1 else rng.randint(2, 5) for n in shape)


def unbroadcast_test(kernel: Kernel) -> None:
    """unbroadcast on every way a shape broadcasts, at the listed and at random sizes."""
    rng = kernel.rng
    pairs = list(UNBROADCAST_SHAPES)
    for big, small in UNBROADCAST_SHAPES:
        new_big = _resized(rng, big)
        tail = new_big[len(new_big) - len(small) :] if small else ()
        pairs.append((new_big, tuple(1 if n == 1 else t for n, t in zip(small, tail))))
    grads = [R.draw(rng, big) for big, _ in pairs]
    cases = [{"grad": g.spec(), "shape": list(small)} for g, (_, small) in zip(grads, pairs)]
    results = kernel.run("sa_unbroadcast", function="unbroadcast", cases=cases, what="unbroadcast")
    for grad, (big, small), got in zip(grads, pairs, results):
        text = f"unbroadcast(grad of shape {R.shape_text(big)}, {R.shape_text(small)})"
        want = R.unbroadcast(grad, small)
        if "failed" in got:
            if got["type"] == NOT_WRITTEN:
                fail("unbroadcast raised NotImplementedError (not written yet)")
            fail(
                f"{text} should be {R.array_text(want)},\n"
                f"got {short(got['error'], 84)}\n({UNBROADCAST_STEPS})"
            )
        result = got["result"]
        if "shape" not in result:
            fail(
                f"{text} should return an array, {R.array_text(want)},\n"
                f"got {num(result)}\n(return the summed array: grad.sum(...) makes one)"
            )
        if tuple(result["shape"]) != want.shape:
            fail(
                f"{text} should have shape {R.shape_text(small)}, got "
                f"{R.shape_text(result['shape'])}\n{R.expected_got(want, result)}"
                + _line(_shape_hint(result, big, small))
            )
        if not R.same(result, want):
            where, w, g = R.first_difference(result, want)
            fail(
                f"{text}{where} should be {num(w)}, got {num(g)}\n"
                f"{R.expected_got(want, result)}"
                + _line(_sum_hint(result, want, grad, small) or UNBROADCAST_STEPS)
            )
        if got["changed"]:
            fail(
                f"{text} changed the array grad it was given:\n"
                "it should stay as it was, got it changed in place\n"
                "(out.grad is needed again, for the other operand: compute new arrays,\n"
                "as grad.sum(...) does)"
            )


UNBROADCAST_STEPS = "sum axis 0 while grad has more axes, then keepdims=True where shape has 1"


def _shape_hint(result: dict, big: R.Shape, small: R.Shape) -> str:
    shape = tuple(result["shape"])
    if shape == big:
        return "nothing was summed: sum over every axis that broadcasting added or stretched"
    if shape == tuple(n for n in small if n != 1) or len(shape) < len(small):
        return "keep the axes of length 1 (sum with keepdims=True)"
    return "sum the extra leading axes away, then the axes where shape has a 1"


def _sum_hint(result: dict, want: R.Arr, grad: R.Arr, small: R.Shape) -> str:
    copies = math.prod(grad.shape) // max(1, math.prod(small))
    if copies > 1 and R.same(result, R.Arr(want.shape, [w / copies for w in want.flat])):
        return "that is the mean: a broadcast element's gradient is the SUM of its copies'"
    return ""


def _line(text: str) -> str:
    return f"\n({text})" if text else ""


# ---- exercises 3 to 5: the closures of +, @, tanh and sum -------------------------------


def _reference(case: dict) -> tuple[R.Arr, R.Arr, R.Arr | None]:
    """out's data, a's grad and b's grad after the closure, from refgrad Values: the
    presets plus d(sum of out.grad * out)/d(input)."""
    a = R.from_spec(case["a"]).values()
    b = R.from_spec(case["b"]).values() if case.get("b") is not None else None
    expr = case["expr"]
    if expr in ("a.tanh()", "a.sum()"):
        out = R.tanh(a) if expr == "a.tanh()" else R.Arr((), [R.total(a)])
    else:
        other = {"a + b": b, "a + a": a, "a @ b": b, "a @ a": a}.get(expr)
        if expr == "a + k":
            other = R.Arr((), [RefValue(case["k"])])
        if expr == "a + c":
            other = R.from_spec(case["c"]).values()
        out = R.matmul(a, other) if "@" in expr else R.add(a, other)
    up = case["upstream"]
    ups = R.from_spec(up).flat if isinstance(up, dict) else [up]
    loss = R.total(R.Arr((len(out.flat),), [g * o for g, o in zip(ups, out.flat)]))
    loss.backward()
    a_grad = R.combine((1.0, R.from_spec(case["preset_a"])), (1.0, a.grads()))
    b_grad = None
    if b is not None:
        b_grad = R.combine((1.0, R.from_spec(case["preset_b"])), (1.0, b.grads()))
    return out.data(), a_grad, b_grad


def closure_case(rng, expr: str, a_shape, b_shape=None, k=None, dtype=None) -> dict:
    """A case for the probe: inputs, a random out.grad and random grads already there.
    For ``a + c``, ``b_shape`` is the shape of the numpy array c, of ``dtype`` (float
    unless "int")."""
    a = R.draw(rng, a_shape, -2.5, 2.5)
    c = None
    if expr == "a + c":
        c = R.draw(rng, b_shape)
        if dtype == "int":
            c = R.Arr(c.shape, [float(rng.choice((-3, -2, -1, 1, 2, 3))) for _ in c.flat])
        b_shape = None
    b = R.draw(rng, b_shape) if b_shape is not None else None
    if "@" in expr:
        other = a_shape if expr == "a @ a" else b_shape
        out_shape = (a_shape[0], other[1])
    elif expr in ("a.tanh()", "a + k", "a + a"):
        out_shape = a_shape
    elif expr == "a.sum()":
        out_shape = ()
    else:
        out_shape = R.broadcast_shape(a_shape, (b or c).shape)
    case = {
        "expr": expr,
        "a": a.spec(),
        "b": b.spec() if b is not None else None,
        "k": k,
        "c": c.spec() if c is not None else None,
        "dtype": dtype,
        "out_shape": list(out_shape),
        "preset_a": R.draw(rng, a_shape).spec(),
        "preset_b": R.draw(rng, b_shape).spec() if b is not None else None,
    }
    if expr == "a.sum()":
        case["upstream"] = rng.choice((-1, 1)) * round(rng.uniform(0.5, 3.0), 3)
    else:
        case["upstream"] = R.draw(rng, out_shape).spec()
    return case


def check_closures(
    kernel: Kernel,
    method: str,
    cases: list[dict],
    hint: Callable[[dict, str, dict], str],
    given: tuple[Given, ...] = (),
) -> None:
    """Every case's output and grads against the reference; ``hint(case, name, got)``
    says what a wrong grad suggests."""
    results = kernel.run("sa_closure", tensor="Tensor", cases=cases, given=given, what=method)
    for case, got in zip(cases, results):
        _check_closure(method, case, got, hint)


def describe(case: dict) -> str:
    """The case's inputs, for a message."""
    parts = [f"a of shape {R.shape_text(case['a']['shape'])}"]
    if case.get("b") is not None:
        parts.append(f"b of shape {R.shape_text(case['b']['shape'])}")
    if case.get("k") is not None:
        parts.append(f"k = {num(case['k'])}")
    if case.get("c") is not None:
        kind = "of ints " if case.get("dtype") == "int" else ""
        parts.append(f"c a numpy array {kind}of shape {R.shape_text(case['c']['shape'])}")
    return "with " + ", ".join(parts)


# What each operation's output is, and what each closure adds: the hint when nothing
# more particular explains a wrong answer.
FORWARD = {
    "Tensor.__add__": "out's data is self.data + other.data, broadcast by numpy",
    "Tensor.__matmul__": "out's data is self.data @ other.data, of shape (n, m)",
    "Tensor.tanh": "out's data is np.tanh(self.data), of self's shape",
    "Tensor.sum": "out's data is self.data.sum(), a single number of shape ()",
}
BACKWARD = {
    "Tensor.__add__": "each input's grad gains out.grad, unbroadcast to its own shape",
    "Tensor.__matmul__": "a.grad gains out.grad @ B.T, b.grad gains A.T @ out.grad",
    "Tensor.tanh": "self.grad gains (1 - t**2) * out.grad, where t is the output",
    "Tensor.sum": "every element of self.grad gains out.grad: np.ones_like(self.data) * out.grad",
}
WRAP = "wrap a plain number (or a numpy array) in a Tensor first: Tensor(other)"


def _call_hint(method: str, case: dict) -> str:
    if case["expr"] in ("a + k", "a + c"):
        return WRAP
    return FORWARD[method]


def _data_hint(method: str, case: dict, data: dict) -> str:
    if case["expr"] == "a @ b" and "shape" in data:
        a, b = R.from_spec(case["a"]), R.from_spec(case["b"])
        if a.shape == b.shape and R.same(
            data, R.Arr(a.shape, [x * y for x, y in zip(a.flat, b.flat)])
        ):
            return "that is the product element by element (*): use @"
    if case["expr"] == "a.sum()" and "shape" in data and len(data["flat"]) == 1:
        return "a single number of shape (): self.data.sum(), without keepdims"
    return FORWARD[method]


def _check_closure(method: str, case: dict, got: dict, hint) -> None:
    expr, where = case["expr"], describe(case)
    want_data, want_a, want_b = _reference(case)
    if got.get("failed") == "call":
        if got["type"] == NOT_WRITTEN:
            fail(f"`{method}` raised NotImplementedError (not written yet)")
        fail(
            f"`{method}`: {expr} should be a Tensor of shape {R.shape_text(want_data.shape)},\n"
            f"got {short(got['error'], 84)}\n{where}" + _line(_call_hint(method, case))
        )
    if not got["is_tensor"]:
        fail(
            f"`{method}`: {expr} should return a Tensor, got {R.value_text(got['data'])}\n"
            f"{where}\n(return out, the new Tensor whose closure you set)"
        )
    data = got["data"]
    if "shape" not in data or tuple(data["shape"]) != want_data.shape:
        fail(
            f"`{method}`: ({expr}).data should have shape {R.shape_text(want_data.shape)}, "
            f"got {R.got_text(data)}\n{R.expected_got(want_data, data)}\n{where}"
            + _line(_data_hint(method, case, data))
        )
    if not R.same(data, want_data):
        at, w, g = R.first_difference(data, want_data)
        fail(
            f"`{method}`: ({expr}).data{at} should be {num(w)}, got {num(g)}\n"
            f"{R.expected_got(want_data, data)}\n{where}" + _line(_data_hint(method, case, data))
        )
    if got["changed"]:
        fail(
            f"`{method}`: {expr} changed the data of its input:\n"
            f"it should stay as it was, got it changed in place\n{where}\n"
            "(make a new array for out's data, and leave self.data as it is)"
        )
    held = [name for name, there in zip("ab", got["prev"]) if there]
    needed = ["a", "b"] if expr in ("a + b", "a @ b") else ["a"]
    if any(name not in held for name in needed):
        parents = "(self, other)" if "+" in expr or "@" in expr else "(self,)"
        fail(
            f"`{method}`: ({expr})._prev should hold {' and '.join(needed)}, "
            f"got {' and '.join(held) or 'neither'}\n{where}\n"
            f"(make out as Tensor(data, {parents}, op): backward() walks _prev)"
        )
    if "failed" in got:
        fail(
            f"`{method}`: the closure of {expr} should add to the inputs' grads,\n"
            f"got {short(got['error'], 84)}\n{where}"
            + _line(hint(case, "closure", got) or BACKWARD[method])
        )
    for name, want in (("a", want_a), ("b", want_b)):
        if want is None:
            continue
        grad = got[f"{name}_grad"]
        if "shape" not in grad or tuple(grad["shape"]) != want.shape:
            fail(
                f"`{method}`: {name}.grad should keep {name}'s shape "
                f"{R.shape_text(want.shape)}, got {R.got_text(grad)}\n"
                f"{R.expected_got(want, grad)}\n"
                f"after the closure of {expr}, {where}"
                + _line(hint(case, name, grad) or BACKWARD[method])
            )
        if not R.same(grad, want):
            at, w, g = R.first_difference(grad, want)
            fail(
                f"`{method}`: {name}.grad{at} should be {num(w)}, got {num(g)}\n"
                f"{R.expected_got(want, grad)}\n"
                f"after the closure of {expr}, out.grad random,\n{where}"
                + _line(hint(case, name, grad) or BACKWARD[method])
            )


def _parts(case: dict, name: str) -> tuple[R.Arr, R.Arr]:
    """(what the grad held before, what the closure should add) for input ``name``."""
    _, want_a, want_b = _reference(case)
    preset = R.from_spec(case[f"preset_{name}"])
    want = want_a if name == "a" else want_b
    return preset, R.combine((1.0, want), (-1.0, preset))


def _common_hint(case: dict, name: str, grad: dict) -> str:
    """Slips every closure can make: ``=`` for ``+=``, the wrong sign."""
    if name not in ("a", "b") or "shape" not in grad:
        return ""
    preset, added = _parts(case, name)
    if R.same(grad, added):
        if case["expr"] in ("a + a", "a @ a"):
            return "a is used twice: use += so that its two gradients add up"
        return "= where += belongs: the grad that was already there is lost"
    if R.same(grad, R.combine((1.0, preset), (-1.0, added))):
        return "the closure's sign is flipped"
    if R.same(grad, preset):
        return "the closure added nothing to this grad"
    return ""


def _ones_like_up(case: dict) -> dict:
    """The case with out.grad all ones: what a closure that ignores out.grad adds."""
    up = case["upstream"]
    ones = R.Arr(tuple(up["shape"]), [1.0] * len(up["flat"])) if isinstance(up, dict) else None
    return {**case, "upstream": ones.spec() if ones else 1.0}


def _ignores_out_grad(case: dict, name: str, grad: dict) -> bool:
    preset, _ = _parts(case, name)
    _, added = _parts(_ones_like_up(case), name)
    return R.same(grad, R.combine((1.0, preset), (1.0, added)))


def _add_hint(case: dict, name: str, grad: dict) -> str:
    if name == "closure":
        error = grad.get("error", "")
        if case["expr"] in ("a + k", "a + c") and "attribute" in error:
            return WRAP
        if "non-broadcastable" in error or "shape" in error:
            return "each grad has its tensor's shape: unbroadcast(out.grad, x.data.shape)"
        return ""
    found = _common_hint(case, name, grad)
    if found or "shape" not in grad:
        return found
    if tuple(grad["shape"]) == tuple(case["out_shape"]) != tuple(case[name]["shape"]):
        return "sum out.grad over the broadcast axes: unbroadcast(out.grad, shape)"
    if _ignores_out_grad(case, name, grad):
        return "the gradient of a + b is out.grad itself: pass out.grad on"
    return ""


def add_test(kernel: Kernel) -> None:
    """a + b for every way shapes broadcast (either side, rows and columns, axes of length
    1, a 0-d Tensor), a + a plain number (float or int) and a + a numpy array (of floats
    or ints, 0-d, smaller or larger than a), and a + a: twice each, at random sizes, with
    the course's unbroadcast."""
    rng = kernel.rng
    cases = []
    for _ in range(2):
        n, m, d = rng.randint(2, 4), rng.randint(2, 4), rng.randint(2, 3)
        cases += [
            closure_case(rng, "a + b", (n, m), (m,)),
            closure_case(rng, "a + b", (n, m), (n, m)),
            closure_case(rng, "a + b", (n, m), (1, m)),
            closure_case(rng, "a + b", (n, m), (n, 1)),
            closure_case(rng, "a + b", (n, 1), (1, m)),
            closure_case(rng, "a + b", (m,), (n, m)),
            closure_case(rng, "a + b", (d, n, m), (m,)),
            closure_case(rng, "a + b", (), (n, m)),
            closure_case(rng, "a + b", (n, m), ()),
            closure_case(rng, "a + k", (n, m), k=round(rng.uniform(-3, 3), 2)),
            closure_case(rng, "a + k", (n, m), k=rng.choice((-2, 1, 2, 3))),
            closure_case(rng, "a + c", (n, m), (m,)),
            closure_case(rng, "a + c", (n, m), ()),
            closure_case(rng, "a + c", (m,), (n, m)),
            closure_case(rng, "a + c", (n, m), (n, m), dtype="int"),
            closure_case(rng, "a + a", (n, m)),
        ]
    check_closures(kernel, "Tensor.__add__", cases, _add_hint, given=(UNBROADCAST,))


def _matmul_hint(case: dict, name: str, grad: dict) -> str:
    if name == "closure":
        return "a.grad = out.grad @ B.T has a's shape, b.grad = A.T @ out.grad has b's"
    found = _common_hint(case, name, grad)
    if found or "shape" not in grad or case["expr"] != "a @ b":
        return found
    a, b = R.from_spec(case["a"]), R.from_spec(case["b"])
    up, preset = R.from_spec(case["upstream"]), R.from_spec(case[f"preset_{name}"])
    right = (
        R.plain_matmul(up, R.transpose(b)) if name == "a" else R.plain_matmul(R.transpose(a), up)
    )
    wrong = {
        "a": [
            (R.plain_matmul(up, b), "B is not transposed: a.grad = out.grad @ B.T"),
            (R.plain_matmul(b, R.transpose(up)), "that is the transpose of out.grad @ B.T"),
            (R.plain_matmul(R.transpose(up), b), "a.grad = out.grad @ B.T"),
        ],
        "b": [
            (R.plain_matmul(a, up), "A is not transposed: b.grad = A.T @ out.grad"),
            (R.plain_matmul(R.transpose(up), a), "that is the transpose of A.T @ out.grad"),
            (R.plain_matmul(up, R.transpose(a)), "b.grad = A.T @ out.grad"),
        ],
    }[name]
    for candidate, hint in wrong:
        fits = candidate is not None and candidate.shape == preset.shape
        if fits and R.same(grad, R.combine((1.0, preset), (1.0, candidate))):
            return hint
    if tuple(grad["shape"]) == tuple(reversed(preset.shape)) != preset.shape:
        return "that looks transposed: each grad has the shape of its own matrix"
    if right is not None and _ignores_out_grad(case, name, grad):
        return "multiply by out.grad: it carries everything after this node"
    return ""


def matmul_test(kernel: Kernel) -> None:
    """A @ B for random shapes, square ones (where a missing transpose shows only in the
    numbers), a row times a column, a column times a row, and A @ A."""
    rng = kernel.rng
    cases = []
    for _ in range(2):
        n, k, m, s = rng.randint(2, 5), rng.randint(2, 5), rng.randint(2, 5), rng.randint(2, 4)
        while k in (n, m):
            k = rng.randint(2, 6)
        cases += [
            closure_case(rng, "a @ b", (s, s), (s, s)),
            closure_case(rng, "a @ b", (n, k), (k, m)),
            closure_case(rng, "a @ b", (1, k), (k, 1)),
            closure_case(rng, "a @ b", (n, 1), (1, m)),
            closure_case(rng, "a @ b", (n, k), (k, k)),
            closure_case(rng, "a @ a", (s, s)),
        ]
    check_closures(kernel, "Tensor.__matmul__", cases, _matmul_hint)


def _tanh_sum_hint(case: dict, name: str, grad: dict) -> str:
    if name == "closure" or "shape" not in grad:
        return ""
    found = _common_hint(case, name, grad)
    if found:
        return found
    x = R.from_spec(case["a"])
    preset, added = _parts(case, name)
    if case["expr"] == "a.tanh()":
        up = R.from_spec(case["upstream"]).flat
        t = [math.tanh(v) for v in x.flat]
        wrong = [
            (
                [(1 - v * v) * g for v, g in zip(x.flat, up)],
                "1 - x**2 uses the input x: use the output, 1 - t**2",
            ),
            ([(1 + s * s) * g for s, g in zip(t, up)], "the derivative is 1 - t**2, not 1 + t**2"),
            ([1 - s * s for s in t], "multiply by out.grad: it carries everything after"),
        ]
    else:
        g = case["upstream"]
        wrong = [
            ([1.0] * len(x.flat), f"multiply by out.grad (here {num(g)})"),
            ([g * v for v in x.flat], "d(sum)/d(each element) is 1, not the element"),
        ]
    for values, hint in wrong:
        if R.same(grad, R.combine((1.0, preset), (1.0, R.Arr(x.shape, values)))):
            return hint
    if case["expr"] == "a.sum()" and R.same(grad, R.combine((1.0, added))):
        return "= where += belongs: the grad that was already there is lost"
    return ""


def tanh_sum_test(kernel: Kernel) -> None:
    """tanh and sum on arrays of 0 to 3 dimensions: a share of the points each."""
    rng = kernel.rng
    shapes = [(), (5,), (3, 4), (2, 3, 2), (1,), (4, 1)]
    cases = []
    for shape in shapes:
        cases.append(closure_case(rng, "a.tanh()", shape))
        cases.append(closure_case(rng, "a.sum()", shape))
    for _ in range(3):
        shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
        cases += [closure_case(rng, "a.tanh()", shape), closure_case(rng, "a.sum()", shape)]
    tanh_cases = [c for c in cases if c["expr"] == "a.tanh()"]
    sum_cases = [c for c in cases if c["expr"] == "a.sum()"]
    shares(
        kernel,
        [
            Part(
                "`Tensor.tanh`",
                ("Tensor.tanh",),
                lambda: check_closures(kernel, "Tensor.tanh", tanh_cases, _tanh_sum_hint),
            ),
            Part(
                "`Tensor.sum`",
                ("Tensor.sum",),
                lambda: check_closures(kernel, "Tensor.sum", sum_cases, _tanh_sum_hint),
            ),
        ],
    )


# What each test grades, as ``Given`` targets name it: the course's code for these is sent
# to the kernel only once the test has run (verdicts.Deferred).
EXERCISES = {"arrays_test_unbroadcast": ("unbroadcast",)}

TESTS = {
    "arrays_test_count": count,
    "arrays_test_unbroadcast": unbroadcast_test,
    "arrays_test_add": add_test,
    "arrays_test_matmul": matmul_test,
    "arrays_test_tanh_sum": tanh_sum_test,
    "arrays_test_backward": backward,
}
