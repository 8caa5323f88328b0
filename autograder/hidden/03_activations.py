"""Hidden tests of lesson 03, activations and elementary functions.

The students get the engine of lessons 1-2 in a locked cell (closures without arguments,
their own ``backward()``) and attach tanh, relu, exp, log, sigmoid, sin, cos and sqrt to it.
Each check compares the op with the reference engine

- alone at random inputs, backpropagated from a random d(loss)/d(output), so that a
  ``_backward`` without ``* out.grad`` shows;
- at the inputs that matter for it: |x| up to 1000 for tanh and sigmoid (no overflow),
  relu at exactly 0, exp's overflow, the domains of log and sqrt;
- inside random graphs with the arithmetic, backpropagated with the student's backward().

Any correct formula passes: values are compared with a tolerance, never by how they were
computed, and random inputs stay away from kinks and domain edges.
"""

import random

from .common import (
    RefValue,
    close,
    compare_cases,
    compare_random_graphs,
    describe_error,
    fail,
    hidden_check,
    num,
    run_closures,
)

ARITHMETIC = ("+", "*", "-", "/", "**", "neg")
LARGE = "\nlarge inputs must work too: the tests use |x| up to 1000"


def _cases(Value, op: str, seed: int, positive: bool = False) -> None:
    """``x.op()`` alone at random inputs in [-2, 2] (or [0.3, 2] when ``positive``):
    first backpropagated from 1.0, which checks the local derivative, then from random
    values of d(loss)/d(output), which checks that ``* out.grad`` is there."""
    compare_cases(Value, [(op, (0,))], seed=seed, rounds=20, backprop=_from_one, positive=positive)
    compare_cases(
        Value,
        [(op, (0,))],
        seed=seed + 1000,
        rounds=20,
        backprop=run_closures,
        positive=positive,
    )


def _from_one(root, seed: float = 1.0) -> None:
    """The students' closures, outputs first, from d(loss)/d(root) = 1."""
    run_closures(root, 1.0)


def _graphs(Value, ops: tuple, seed: int) -> None:
    """The ops inside random graphs with the arithmetic, using the student's backward()."""
    compare_random_graphs(Value, (*ARITHMETIC, *ops), seed=seed, graphs=80, numbers="both")


def _at(Value, op: str, x: float, hint: str = "") -> None:
    """``Value(x).op()`` at one chosen input: its data, and its gradient after backprop."""
    ref_leaf = RefValue(x)
    ref_out = getattr(ref_leaf, op)()
    ref_out.backward()
    expr = f"Value({num(x)}).{op}()"
    try:
        leaf = Value(x)
        out = getattr(leaf, op)()
    except Exception as exc:
        fail(f"{expr} raised {describe_error(exc)}{hint}")
    got = getattr(out, "data", None)
    if not close(got, ref_out.data):
        fail(f"{expr} should have data {num(ref_out.data)}, got {num(got)}{hint}")
    try:
        run_closures(out)
    except Exception as exc:
        fail(f"backpropagating {expr} raised {describe_error(exc)}{hint}")
    if not close(leaf.grad, ref_leaf.grad):
        fail(f"the gradient of {expr} should be {num(ref_leaf.grad)}, got {num(leaf.grad)}{hint}")


def _domain(Value, op: str, x: float, rule: str) -> None:
    """``Value(x).op()`` outside the op's domain: a ValueError that names x."""
    expr = f"Value({num(x)}).{op}()"
    try:
        out = getattr(Value(x), op)()
    except ValueError as exc:
        if num(abs(x)) not in str(exc):
            fail(
                f"{expr} raised ValueError, but its message should name the value "
                f"{num(x)}; it says {str(exc)[:40]!r}"
            )
        return
    except Exception as exc:
        fail(f"{expr} should raise ValueError ({rule}), not {describe_error(exc)}")
    fail(f"{expr} should raise ValueError ({rule}), got data {num(getattr(out, 'data', out))}")


@hidden_check
def tanh(Value) -> None:
    _cases(Value, "tanh", 701)
    for x in (20.0, -20.0, 400.0, -400.0, 1000.0, -1000.0):
        _at(Value, "tanh", x, LARGE)
    _graphs(Value, ("tanh",), 702)


@hidden_check
def relu(Value) -> None:
    _cases(Value, "relu", 711)
    for x in (0.0, -0.0):
        leaf = Value(x)
        try:
            out = leaf.relu()
            run_closures(out)
        except Exception as exc:
            fail(f"Value(0).relu() raised {describe_error(exc)}")
        if not close(getattr(out, "data", None), 0.0):
            fail(f"Value(0).relu() should have data 0, got {num(getattr(out, 'data', None))}")
        if not close(leaf.grad, 0.0):
            fail(
                "at x = 0 relu has a kink: by convention its gradient is 0 "
                f"(as in PyTorch), got {num(leaf.grad)}"
            )
    for x in (1000.0, -1000.0, 1e-6, -1e-6):
        _at(Value, "relu", x)
    _graphs(Value, ("relu",), 712)


@hidden_check
def exp_log(Value) -> None:
    _cases(Value, "exp", 721)
    _cases(Value, "log", 722, positive=True)
    for x in (-1000.0, -30.0, 30.0, 300.0):
        _at(Value, "exp", x)
    try:
        out = Value(1000.0).exp()
    except OverflowError:
        pass
    except Exception as exc:
        fail(f"Value(1000).exp() should raise OverflowError, not {describe_error(exc)}")
    else:
        fail(
            "Value(1000).exp() should raise OverflowError (e**1000 is too large for a "
            f"float), got data {num(getattr(out, 'data', out))}"
        )
    for x in (1e-6, 1e6):
        _at(Value, "log", x)
    for x in (0.0, -2.5, -4.0):
        _domain(Value, "log", x, "log needs x > 0")
    _graphs(Value, ("exp", "log"), 723)


@hidden_check
def sigmoid(Value) -> None:
    _cases(Value, "sigmoid", 731)
    for x in (40.0, -40.0, 800.0, -800.0, 1000.0, -1000.0):
        _at(Value, "sigmoid", x, LARGE)
    _graphs(Value, ("sigmoid",), 732)


@hidden_check
def sin_cos_sqrt(Value) -> None:
    _cases(Value, "sin", 741)
    _cases(Value, "cos", 742)
    _cases(Value, "sqrt", 743, positive=True)
    for x in (-7.0, 10.0):
        _at(Value, "sin", x)
        _at(Value, "cos", x)
    for x in (1e-4, 1e6):
        _at(Value, "sqrt", x)
    for x in (-2.5, -4.0):
        _domain(Value, "sqrt", x, "sqrt needs x >= 0")
    _graphs(Value, ("sin", "cos", "sqrt"), 744)


def _true_neuron(xs, ws, b):
    return sum((w * x for w, x in zip(ws, xs)), b).tanh()


def _build_neuron(neuron_fn, V, xs, ws, b):
    """The student's neuron on leaves of class V: (leaves by name, output)."""
    leaves = {f"x{i + 1}": V(x) for i, x in enumerate(xs)}
    leaves.update({f"w{i + 1}": V(w) for i, w in enumerate(ws)})
    leaves["b"] = V(b)
    size = len(xs)
    out = neuron_fn(
        [leaves[f"x{i + 1}"] for i in range(size)],
        [leaves[f"w{i + 1}"] for i in range(size)],
        leaves["b"],
    )
    return leaves, out


@hidden_check
def neuron(neuron_fn, Value) -> None:
    """The neuron on 1 to 4 inputs. It is built from the reference engine's Values when the
    student's code allows it, so that only the neuron is graded here, not their tanh."""
    rng = random.Random(751)
    for trial in range(32):
        size = 1 + trial % 4
        xs = [round(rng.uniform(-2.0, 2.0), 2) for _ in range(size)]
        ws = [round(rng.uniform(-2.0, 2.0), 2) for _ in range(size)]
        b = round(rng.uniform(-1.5, 1.5), 2)
        where = f"xs={xs}, ws={ws}, b={b}"
        truth, want = _build_neuron(_true_neuron, RefValue, xs, ws, b)
        want.backward()
        try:
            leaves, out = _build_neuron(neuron_fn, RefValue, xs, ws, b)
        except Exception:
            try:
                leaves, out = _build_neuron(neuron_fn, Value, xs, ws, b)
            except Exception as exc:
                fail(f"neuron raised {describe_error(exc)}\nwith {where}")
        got = getattr(out, "data", None)
        if not close(got, want.data):
            fail(f"neuron should give o = {num(want.data)}, got {num(got)}\nwith {where}")
        try:
            out.backward()
        except Exception as exc:
            fail(f"backpropagating the neuron raised {describe_error(exc)}\nwith {where}")
        for name, leaf in leaves.items():
            if not close(leaf.grad, truth[name].grad):
                fail(
                    f"do/d{name} should be {num(truth[name].grad)}, got {num(leaf.grad)}\n"
                    f"with {where}"
                )
