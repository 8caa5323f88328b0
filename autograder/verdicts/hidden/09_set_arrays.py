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
from .common import Given, Kernel, RefValue, fail, num, ref, ref_nn, short
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
    """The slip that explains every wrong count (a slip is the same in every case)."""
    for name, hint in COUNT_HINTS.items():
        if all(got in _slips(want, *case)[name] - {want} for want, got, case in failures):
            return f"\n({hint})"
    return ""


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
    failures, first = [], ""
    for call, got in zip(calls, results):
        nin, nouts = call["args"]
        fused = call.get("kwargs", {}).get("fused", True)
        text = f"count_nodes({nin}, {nouts}" + (f", fused={fused})" if "kwargs" in call else ")")
        if "failed" in got:
            if got["type"] == NOT_WRITTEN:
                fail("count_nodes raised NotImplementedError (not written yet)")
            fail(f"{text} raised {got['error']}")
        if got["args"][1] != nouts:
            fail(
                f"{text} changed the list nouts it was given, to {got['args'][1]}\n"
                "(make a new list instead, such as [nin, *nouts])"
            )
        key = (nin, tuple(nouts), fused)
        if key not in wanted:
            wanted[key] = nodes_of(nin, nouts, fused, rng.randrange(10**6))
        want, result = wanted[key], got["result"]
        if not _is_number(result) or result != want:
            first = first or f"{text} should be {want}, got {num(result)}"
            failures.append((want, result, (nin, nouts, fused)))
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
        if "failed" in got:
            if got["type"] == NOT_WRITTEN:
                fail("unbroadcast raised NotImplementedError (not written yet)")
            fail(f"{text} raised {got['error']}")
        want = R.unbroadcast(grad, small)
        result = got["result"]
        if "shape" not in result:
            fail(f"{text} should return an array, got {num(result)}")
        if tuple(result["shape"]) != want.shape:
            fail(
                f"{text} should have shape {R.shape_text(small)}, got "
                f"{R.shape_text(result['shape'])}" + _line(_shape_hint(result, big, small))
            )
        if not R.same(result, want):
            where, w, g = R.first_difference(result, want)
            fail(
                f"{text}{where} should be {num(w)}, got {num(g)}"
                + _line(_sum_hint(result, want, grad, small))
            )
        if got["changed"]:
            fail(
                f"{text} changed the array grad it was given: out.grad is needed again\n"
                "(for the other operand): compute new arrays, as grad.sum(...) does"
            )


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


def closure_case(rng, expr: str, a_shape, b_shape=None, k=None) -> dict:
    """A case for the probe: inputs, a random out.grad and random grads already there."""
    a = R.draw(rng, a_shape, -2.5, 2.5)
    b = R.draw(rng, b_shape) if b_shape is not None else None
    if "@" in expr:
        other = a_shape if expr == "a @ a" else b_shape
        out_shape = (a_shape[0], other[1])
    elif expr in ("a.tanh()", "a + k", "a + a"):
        out_shape = a_shape
    elif expr == "a.sum()":
        out_shape = ()
    else:
        out_shape = R.broadcast_shape(a_shape, b_shape)
    case = {
        "expr": expr,
        "a": a.spec(),
        "b": b.spec() if b is not None else None,
        "k": k,
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
    return "with " + ", ".join(parts)


def _check_closure(method: str, case: dict, got: dict, hint) -> None:
    expr, where = case["expr"], describe(case)
    if got.get("failed") == "call":
        if got["type"] == NOT_WRITTEN:
            fail(f"`{method}` raised NotImplementedError (not written yet)")
        fail(f"`{method}`: {expr} raised {got['error']}\n{where}")
    if not got["is_tensor"]:
        fail(f"`{method}`: {expr} should return a Tensor, got {R.value_text(got['data'])}")
    want_data, want_a, want_b = _reference(case)
    data = got["data"]
    if expr == "a.sum()" and "shape" in data and len(data["flat"]) == 1:
        data = {"shape": [], "flat": data["flat"]}
    if "shape" not in data or tuple(data["shape"]) != want_data.shape:
        fail(
            f"`{method}`: ({expr}).data should have shape {R.shape_text(want_data.shape)}, "
            f"got {R.got_text(data)}\n{where}"
        )
    if not R.same(data, want_data):
        at, w, g = R.first_difference(data, want_data)
        fail(f"`{method}`: ({expr}).data{at} should be {num(w)}, got {num(g)}\n{where}")
    if got["changed"]:
        fail(f"`{method}`: {expr} changed the data of its input: make a new array instead")
    if "failed" in got:
        fail(
            f"`{method}`: the closure of {expr} raised {short(got['error'], 70)}\n{where}"
            + _line(hint(case, "closure", got))
        )
    for name, want in (("a", want_a), ("b", want_b)):
        if want is None:
            continue
        grad = got[f"{name}_grad"]
        if "shape" not in grad or tuple(grad["shape"]) != want.shape:
            fail(
                f"`{method}`: {name}.grad should keep {name}'s shape "
                f"{R.shape_text(want.shape)}, got {R.got_text(grad)}\n"
                f"after the closure of {expr} {where}" + _line(hint(case, name, grad))
            )
        if not R.same(grad, want):
            at, w, g = R.first_difference(grad, want)
            fail(
                f"`{method}`: {name}.grad{at} should be {num(w)}, got {num(g)}\n"
                f"after the closure of {expr} {where}, out.grad random"
                + _line(hint(case, name, grad))
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
        if "non-broadcastable" in grad.get("error", "") or "shape" in grad.get("error", ""):
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
    """a + b for every way shapes broadcast, a + number and a + a (twice each, at random
    sizes), with the course's unbroadcast."""
    rng = kernel.rng
    cases = []
    for _ in range(2):
        n, m, d = rng.randint(2, 4), rng.randint(2, 4), rng.randint(2, 3)
        cases += [
            closure_case(rng, "a + b", (n, m), (m,)),
            closure_case(rng, "a + b", (n, m), (n, m)),
            closure_case(rng, "a + b", (n, m), (1, m)),
            closure_case(rng, "a + b", (n, 1), (1, m)),
            closure_case(rng, "a + b", (m,), (n, m)),
            closure_case(rng, "a + b", (d, n, m), (m,)),
            closure_case(rng, "a + b", (), (n, m)),
            closure_case(rng, "a + k", (n, m), k=round(rng.uniform(-3, 3), 2)),
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
    """tanh and sum on arrays of 0 to 3 dimensions."""
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
    check_closures(kernel, "Tensor.tanh", tanh_cases, _tanh_sum_hint)
    check_closures(kernel, "Tensor.sum", sum_cases, _tanh_sum_hint)


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
