"""Hidden tests of 07_set_gradients, problem set 1: gradients at work.

The set runs on the course's engine when graded (``ENGINE``): a slip in a lesson costs
nothing here. Its parts:

- sg_softmax.py: softmax and cross_entropy (exercises 1 and 2), against a stable
  reference on logits up to +-1000;
- sg_gradcheck.py: relative_error and grad_check (exercise 3);
- sg_faults.py: which operations of the given ``Buggy`` engine are faulty (exercise 4,
  an answer whose key stays here) and the student's ``Fixed`` class (exercise 5, one
  test per fault);
- below: the two in-place pitfalls (exercise 6), predicted as numbers (answers) and
  measured by two functions, which are run on the notebook's numbers and random ones.
"""

from __future__ import annotations

import random

from .common import Kernel, RefValue, close, fail, num
from .quiz import TOL
from .sets import course_engine
from .sg_faults import faulty, fix_accumulate, fix_derivative, fix_reflected
from .sg_gradcheck import grad_check
from .sg_softmax import cross_entropy, softmax

ENGINE = course_engine("Value")

# The numbers the notebook fixes for its two predictions.
FORGETFUL = {"w0": 0.0, "x": 1.0, "y": 1.0, "lr": 0.25, "steps": 3}
IN_PLACE = {"w0": 0.5, "b0": -2.0, "x": 2.0, "y": 1.0}


def ref_train(w0: float, x: float, y: float, lr: float, steps: int, zero_grad: bool) -> float:
    """Gradient descent on (w*x - y)**2 from w0, zeroing w.grad before each backward()
    or never; w after the steps."""
    w = RefValue(w0)
    for _ in range(steps):
        if zero_grad:
            w.grad = 0.0
        d = w * x - y
        (d * d).backward()
        w.data -= lr * w.grad
    return w.data


def ref_relu_step(w0: float, b0: float, x: float, y: float, in_place: bool) -> list[float]:
    """[w.grad, b.grad] of (relu(w*x + b) - y)**2, relu by h.relu() or by editing h.data."""
    w, b = RefValue(w0), RefValue(b0)
    h = w * x + b
    if in_place:
        h.data = max(h.data, 0.0)
    else:
        h = h.relu()
    d = h - y
    (d * d).backward()
    return [w.grad, b.grad]


PREDICTIONS = {
    "predicted_w": lambda: ref_train(**FORGETFUL, zero_grad=False),
    "predicted_grad": lambda: ref_relu_step(**IN_PLACE, in_place=True)[0],
}


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _args(call: dict) -> str:
    return ", ".join(f"{k}={num(v) if not isinstance(v, bool) else v}" for k, v in call.items())


def _train_calls(rng: random.Random) -> list[dict]:
    calls = []
    for trial in range(16):
        calls.append(
            {
                "w0": round(rng.uniform(-2.0, 2.0), 2),
                "x": round(rng.choice((-1, 1)) * rng.uniform(0.3, 1.5), 2),
                "y": round(rng.uniform(-2.0, 2.0), 2),
                "lr": round(rng.uniform(0.02, 0.2), 3),
                "steps": 2 + trial % 5,
                "zero_grad": trial % 2 == 0,
            }
        )
    return [*calls, {**FORGETFUL, "zero_grad": False}, {**FORGETFUL, "zero_grad": True}]


def _relu_calls(rng: random.Random) -> list[dict]:
    calls = []
    while len(calls) < 16:
        call = {
            "w0": round(rng.uniform(-2.0, 2.0), 2),
            "b0": round(rng.uniform(-2.0, 2.0), 2),
            "x": round(rng.choice((-1, 1)) * rng.uniform(0.3, 2.0), 2),
            "y": round(rng.uniform(-2.0, 2.0), 2),
            "in_place": len(calls) % 2 == 0,
        }
        if abs(call["w0"] * call["x"] + call["b0"]) >= 0.1:  # away from relu's kink
            calls.append(call)
    return [*calls, {**IN_PLACE, "in_place": True}, {**IN_PLACE, "in_place": False}]


def _run(kernel: Kernel, function: str, calls: list[dict]) -> list[dict]:
    results = kernel.run(
        "calls", function=function, calls=[{"args": list(c.values())} for c in calls], what=function
    )
    for call, got in zip(calls, results):
        if "failed" in got:
            if got["type"] == "NotImplementedError":
                fail(f"{function} raised NotImplementedError (not written yet)")
            fail(
                f"{function}({_args(call)}) raised {got['error']}\n(call it with these "
                "numbers in your notebook: it raises there too)"
            )
    return [got["result"] for got in results]


def _train_hint(call: dict, got: float) -> str:
    other = ref_train(**{**call, "zero_grad": not call["zero_grad"]})
    if close(got, other):
        if call["zero_grad"]:
            return "with zero_grad=True, set w.grad = 0.0 before each backward()"
        return "with zero_grad=False, never reset w.grad: its gradients add up"
    flipped = {**call, "lr": -call["lr"]}
    if close(got, ref_train(**flipped)):
        return "each step goes against the gradient: w.data -= lr * w.grad"
    guesses = [
        ({"x": 1.0}, "use the x it is given: d = w * x - y"),
        ({"y": 1.0}, "use the y it is given: d = w * x - y"),
        ({"lr": 0.25}, "use the learning rate lr it is given"),
        ({"steps": 3}, "take the number of steps it is given"),
        ({"steps": call["steps"] - 1}, "take exactly `steps` steps"),
        ({"steps": call["steps"] + 1}, "take exactly `steps` steps"),
    ]
    for change, hint in guesses:
        if close(got, ref_train(**{**call, **change})):
            return hint
    return "each step: d = w * x - y, loss = d * d, backward(), then w.data -= lr * w.grad"


def _relu_hint(call: dict, got: object) -> str:
    if not isinstance(got, list) or len(got) != 2 or not all(map(_is_number, got)):
        return "it should return the list [w.grad, b.grad]"
    other = ref_relu_step(**{**call, "in_place": not call["in_place"]})
    if all(close(g, w) for g, w in zip(got, other)):
        if call["in_place"]:
            return "with in_place=True, apply relu by editing h.data, not with h.relu()"
        return "with in_place=False, apply relu with h.relu()"
    want = ref_relu_step(**call)
    if close(got[0], want[1]) and close(got[1], want[0]):
        return "return them in the order [w.grad, b.grad]"
    for name in ("x", "y"):
        if all(close(g, w) for g, w in zip(got, ref_relu_step(**{**call, name: 1.0}))):
            return f"use the {name} it is given"
    return "h = w * x + b, the relu, d = h - y, loss = d * d, then backward()"


def pitfalls(kernel: Kernel) -> None:
    """The two measuring functions on random numbers, then on the notebook's; then the
    predictions, which must be within TOL of what the loops give."""
    rng = kernel.rng
    calls = _train_calls(rng)
    for call, got in zip(calls, _run(kernel, "train_one_weight", calls)):
        want = ref_train(**call)
        if not close(got, want):
            hint = _train_hint(call, got) if _is_number(got) else "it should return w.data"
            fail(
                f"train_one_weight({_args(call)}) should give w = {num(want)}, got {num(got)}"
                + (f"\n({hint})" if hint else "")
            )
    calls = _relu_calls(rng)
    for call, got in zip(calls, _run(kernel, "relu_step_grads", calls)):
        want = ref_relu_step(**call)
        right = isinstance(got, list) and len(got) == 2
        if not (right and all(close(g, w) for g, w in zip(got, want))):
            hint = _relu_hint(call, got)
            fail(
                f"relu_step_grads({_args(call)}) should give [w.grad, b.grad] = "
                f"[{num(want[0])}, {num(want[1])}], got {num(got) if not right else got}"
                + (f"\n({hint})" if hint else "")
            )
    answers = kernel.run("sg_answers", names=list(PREDICTIONS), what="the predictions")
    for name, compute in PREDICTIONS.items():
        value = answers[name]
        if value is None:
            fail(f"{name} is not answered yet: replace raise NotImplementedError()")
        if not _is_number(value):
            fail(f"{name} must be a number such as 1.5 (no quotes), got {num(value)}")
        if abs(value - compute()) > TOL:
            fail(
                f"{name} = {num(value)} is not within {TOL} of what the code does: compare "
                "it with your measurement, and see why"
            )


# What each test grades, as ``Given`` targets name it (verdicts.Deferred).
EXERCISES = {
    "grads_test_grad_check": ("relative_error",),
    "grads_test_fix_derivative": ("Fixed.tanh",),
    "grads_test_fix_accumulate": ("Fixed.__mul__",),
    "grads_test_fix_reflected": ("Fixed.__rtruediv__",),
}

TESTS = {
    "grads_test_softmax": softmax,
    "grads_test_cross_entropy": cross_entropy,
    "grads_test_grad_check": grad_check,
    "grads_test_faulty": faulty,
    "grads_test_fix_derivative": fix_derivative,
    "grads_test_fix_accumulate": fix_accumulate,
    "grads_test_fix_reflected": fix_reflected,
    "grads_test_pitfalls": pitfalls,
}
