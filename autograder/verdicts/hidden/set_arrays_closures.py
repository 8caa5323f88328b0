"""The closures of 09_set_arrays' Tensor operations (exercises 3 to 5), graded one at a
time: the probe builds an operation on arrays drawn here and calls its closure once, by
hand, with a random ``out.grad`` and the inputs' grads already holding numbers; the same
computation in refgrad Values, element by element, gives what every grad must be. A
failure names the operation, shows what was expected and what came back (a few numbers
of each array and its shape) and ends with a hint: the hint function's, or what the
operation's output is and what its closure adds.
"""

from __future__ import annotations

from collections.abc import Callable

from . import set_arrays_ref as R
from .common import Given, Kernel, RefValue, fail, num, short

NOT_WRITTEN = "NotImplementedError"


def line(text: str) -> str:
    """A hint on a line of its own, in parentheses (nothing for no hint)."""
    return f"\n({text})" if text else ""


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
            f"got {short(got['error'], 84)}\n{where}" + line(_call_hint(method, case))
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
            + line(_data_hint(method, case, data))
        )
    if not R.same(data, want_data):
        at, w, g = R.first_difference(data, want_data)
        fail(
            f"`{method}`: ({expr}).data{at} should be {num(w)}, got {num(g)}\n"
            f"{R.expected_got(want_data, data)}\n{where}" + line(_data_hint(method, case, data))
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
            + line(hint(case, "closure", got) or BACKWARD[method])
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
                + line(hint(case, name, grad) or BACKWARD[method])
            )
        if not R.same(grad, want):
            at, w, g = R.first_difference(grad, want)
            fail(
                f"`{method}`: {name}.grad{at} should be {num(w)}, got {num(g)}\n"
                f"{R.expected_got(want, grad)}\n"
                f"after the closure of {expr}, out.grad random,\n{where}"
                + line(hint(case, name, grad) or BACKWARD[method])
            )


def parts(case: dict, name: str) -> tuple[R.Arr, R.Arr]:
    """(what the grad held before, what the closure should add) for input ``name``."""
    _, want_a, want_b = _reference(case)
    preset = R.from_spec(case[f"preset_{name}"])
    want = want_a if name == "a" else want_b
    return preset, R.combine((1.0, want), (-1.0, preset))


def common_hint(case: dict, name: str, grad: dict) -> str:
    """Slips every closure can make: ``=`` for ``+=``, the wrong sign."""
    if name not in ("a", "b") or "shape" not in grad:
        return ""
    preset, added = parts(case, name)
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


def ignores_out_grad(case: dict, name: str, grad: dict) -> bool:
    preset, _ = parts(case, name)
    _, added = parts(_ones_like_up(case), name)
    return R.same(grad, R.combine((1.0, preset), (1.0, added)))
