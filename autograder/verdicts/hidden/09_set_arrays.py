"""Hidden tests of 09_set_arrays, problem set 3: from scalars to arrays.

- ``count_nodes`` is compared with the number of nodes the reference network really
  has: refgrad's MLP called on input Values, or the same network with every neuron
  written as a sum of products, its graph walked from the outputs.
- ``unbroadcast`` is compared with sums computed here.
- Each ``Tensor`` operation is built by the probe on arrays drawn here, and its closure
  called once, by hand, with a random ``out.grad`` and the inputs' grads already holding
  numbers; the same computation in refgrad Values, element by element, gives what every
  grad must be (set_arrays_closures.py). ``+`` runs with the course's ``unbroadcast``
  (a ``Given``), so a slip in that exercise costs nothing here.
- ``backward()`` runs on graphs the probe makes by hand, whose closures are the probe's:
  none of the student's operations takes part.
"""

from __future__ import annotations

import math

from . import set_arrays_ref as R
from .common import Given, Kernel, Part, RefValue, fail, num, ref, ref_nn, shares, short
from .set_arrays_backward import backward
from .set_arrays_closures import (
    WRAP,
    check_closures,
    closure_case,
    common_hint,
    ignores_out_grad,
    line,
    parts,
)
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
                + line(_shape_hint(result, big, small))
            )
        if not R.same(result, want):
            where, w, g = R.first_difference(result, want)
            fail(
                f"{text}{where} should be {num(w)}, got {num(g)}\n"
                f"{R.expected_got(want, result)}"
                + line(_sum_hint(result, want, grad, small) or UNBROADCAST_STEPS)
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


# ---- exercises 3 to 5: the closures of +, @, tanh and sum -------------------------------


def _add_hint(case: dict, name: str, grad: dict) -> str:
    if name == "closure":
        error = grad.get("error", "")
        if case["expr"] in ("a + k", "a + c") and "attribute" in error:
            return WRAP
        if "non-broadcastable" in error or "shape" in error:
            return "each grad has its tensor's shape: unbroadcast(out.grad, x.data.shape)"
        return ""
    found = common_hint(case, name, grad)
    if found or "shape" not in grad:
        return found
    if tuple(grad["shape"]) == tuple(case["out_shape"]) != tuple(case[name]["shape"]):
        return "sum out.grad over the broadcast axes: unbroadcast(out.grad, shape)"
    if ignores_out_grad(case, name, grad):
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
    found = common_hint(case, name, grad)
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
    if right is not None and ignores_out_grad(case, name, grad):
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
    found = common_hint(case, name, grad)
    if found:
        return found
    x = R.from_spec(case["a"])
    preset, added = parts(case, name)
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
