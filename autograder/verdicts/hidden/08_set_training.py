"""Hidden tests of 08_set_training (problem set 2, training for real).

The set is graded on the course's engine (``ENGINE``). Optimizers run in the kernel on
Values with the grader's data and gradients, and their paths are compared here, step by
step, with the reference optimizers (refgrad/optim.py); when a path is off, the grader
replays the classic slips (no bias correction, the step climbing the gradient, the
velocity used before its update, grads that pile up, ...) and names the one that gives
exactly the student's numbers. ``fit`` trains the course page's tanh network from the
grader's weights with a plain gradient step and a loss made by the probe, so it depends
on nothing else the student wrote; its loss path must match refgrad's. The data, the
classifier and the Iris recipe are graded in set_training_data.py.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from .common import Kernel, Part, RefValue, close, fail, num, shares
from .set_training_data import classify, data, iris
from .set_training_optim import adam, not_written, sgd, vec
from .sets import course_engine

ENGINE = course_engine("Value", "Module", "MLP")

# ---- exercise 3: the course page's training loop --------------------------------------------

PAGE_XS = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
PAGE_YS = [1.0, -1.0, -1.0, 1.0]
PAGE_SIZES = [3, 4, 4, 1]


def tanh_net(sizes: Sequence[int], weights: Sequence[float]):
    """The page's network on refgrad Values: (forward function, parameters in order)."""
    it = iter(weights)
    layers = [
        [([RefValue(next(it)) for _ in range(a)], RefValue(next(it))) for _ in range(b)]
        for a, b in itertools.pairwise(sizes)
    ]

    def forward(x):
        for layer in layers:
            x = [sum((wi * xi for wi, xi in zip(w, x)), b).tanh() for w, b in layer]
        return x[0] if len(x) == 1 else x

    return forward, [p for layer in layers for w, b in layer for p in [*w, b]]


def reference_fit(run: dict) -> tuple[list[float], list[float]]:
    """The page's loop on refgrad: each step's sum of squared errors, and the weights."""
    forward, params = tanh_net(run["sizes"], run["weights"])
    losses = []
    for _ in range(run["steps"]):
        loss = sum(((forward(x) - y) ** 2 for x, y in zip(run["xs"], run["ys"])), RefValue(0.0))
        for p in params:
            p.grad = 0.0
        loss.backward()
        for p in params:
            p.data -= run["lr"] * p.grad
        losses.append(loss.data)
    return losses, [p.data for p in params]


def _weights(rng, sizes: Sequence[int]) -> list[float]:
    count = sum((a + 1) * b for a, b in itertools.pairwise(sizes))
    return [round(rng.uniform(-1.0, 1.0), 4) for _ in range(count)]


def fit_runs(rng) -> list[dict]:
    """The page's example from random weights whose reference loss falls at least 100x,
    and a smaller network on random points for a few steps."""
    while True:
        page = {
            "sizes": PAGE_SIZES,
            "weights": _weights(rng, PAGE_SIZES),
            "xs": PAGE_XS,
            "ys": PAGE_YS,
            "steps": 200,
            "lr": 0.05,
            "label": "on the page's network and data",
        }
        losses, _ = reference_fit(page)
        if losses[0] >= 100 * losses[-1]:
            break
    n = rng.randint(3, 6)
    small = {
        "sizes": [2, 3, 1],
        "weights": _weights(rng, [2, 3, 1]),
        "xs": [[round(rng.uniform(-2, 2), 3) for _ in range(2)] for _ in range(n)],
        "ys": [rng.choice((-0.5, 0.5)) for _ in range(n)],
        "steps": rng.randint(5, 12),
        "lr": rng.choice((0.1, 0.2)),
        "label": f"on a tanh MLP(2, [3, 1]) and {n} points",
    }
    return [small, page]


def fit(kernel: Kernel) -> None:
    """sse_loss against refgrad on random batches; then fit on the page's tanh network
    and on a smaller one: the loss path and the weights must match the reference's. Each
    function for its share of the points (fit is run with a loss of the probe's)."""
    rng = kernel.rng
    sse_rng, fit_rng = (random.Random(rng.random()) for _ in range(2))
    shares(
        kernel,
        [
            Part("`sse_loss`", ("sse_loss",), lambda: check_sse(kernel, sse_rng)),
            Part("`fit`", ("fit",), lambda: check_fit(kernel, fit_rng)),
        ],
    )


LOOP = "each step: preds, loss, zero_grad(), backward(), step(), then append loss.data"


def check_fit(kernel: Kernel, rng) -> None:
    runs = fit_runs(rng)
    results = kernel.run("st_fit", value="Value", function="fit", runs=runs, what="fit")
    for run, got in zip(runs, results):
        what = f"fit(model, optimizer, loss_fn, xs, ys, steps={run['steps']})"
        if "failed" in got:
            not_written(what, got)
            fail(f"{what} should return the losses, but raised {got['error']}\n({LOOP})")
        _check_fit(what, run, got)
    page = results[1]["returned"]
    if not page[0] >= 100 * page[-1]:
        fail(
            f"fit on the page's example: the loss should fall at least 100-fold, got "
            f"{num(page[0])} to {num(page[-1])}\n({LOOP})"
        )


def _check_fit(what: str, run: dict, got: dict) -> None:
    steps, returned = run["steps"], got["returned"]
    if not isinstance(returned, list):
        fail(
            f"{what} should return a list of {steps} losses, got {num(returned)}\n"
            "(append loss.data to a list at every step, and return the list)"
        )
    if len(returned) != steps:
        fail(
            f"{what} should return a list of {steps} losses, got {len(returned)} of them\n"
            "(one loss per step: for _ in range(steps))"
        )
    bad = [v for v in returned if not isinstance(v, (int, float)) or isinstance(v, bool)]
    if bad:
        is_value = isinstance(bad[0], dict) and bad[0].get("type") == "Value"
        kind = "a Value" if is_value else num(bad[0])
        fail(f"{what} should return numbers, got {kind}\n(append loss.data, the number)")
    if got["loss_calls"] != steps:
        fail(
            f"{what} should call loss_fn once per step ({steps} times), got "
            f"{got['loss_calls']} calls\n(compute the loss once per step, before backward(), "
            "and append that loss's .data)"
        )
    if got["sizes"] and got["sizes"][0] != len(run["xs"]):
        fail(
            f"{what} should give loss_fn one prediction per sample ({len(run['xs'])}), got "
            f"{got['sizes'][0]}\n(preds = [model(x) for x in xs]: the whole batch)"
        )
    if got["steps"] != steps:
        fail(
            f"{what} should call optimizer.step() once per step ({steps} times), got "
            f"{got['steps']} calls\n(one optimizer.step() after each loss.backward())"
        )
    want, weights = reference_fit(run)
    for k, (x, w) in enumerate(zip(returned, want)):
        if not close(x, w, 1e-6, 1e-9):
            fail(
                f"{what} {run['label']}: the loss of step {k + 1} should be {num(w)}, got "
                f"{num(x)}" + _fit_hint(returned, want, got)
            )
    for j, (x, w) in enumerate(zip(got["params"], weights)):
        if not close(x, w, 1e-6, 1e-9):
            fail(
                f"{what}: after training, parameter {j} should be {num(w)}, got {num(x)}\n({LOOP})"
            )


def _fit_hint(returned: list, want: list, got: dict) -> str:
    if all(x == returned[0] for x in returned):
        return "\n(the loss never moved: zero the grads before backward(), not after)"
    if got["zeroed"] == 0:
        return "\n(the gradients pile up: call optimizer.zero_grad() at every step)"
    if len(want) > 1 and close(returned[0], want[1]):
        return "\n(the loss recorded should be the one computed before that step's update)"
    return f"\n({LOOP})"


SSE = "\n(the sum over zip(preds, targets) of (pred - target)**2, built from the Values)"


def check_sse(kernel: Kernel, rng) -> None:
    """sse_loss(preds, targets): the sum (not the mean) of squared errors."""
    cases = [{"preds": [1.0, 3.0], "targets": [0.0, 1.0]}]
    for trial in range(12):
        n = 1 + trial % 5
        cases.append(
            {
                "preds": [round(rng.uniform(-2, 2), 3) for _ in range(n)],
                "targets": [
                    rng.choice((-1.0, 1.0, round(rng.uniform(-2, 2), 2))) for _ in range(n)
                ],
            }
        )
    results = kernel.run("loss", value="Value", function="sse_loss", cases=cases, what="sse_loss")
    for case, got in zip(cases, results):
        text = f"sse_loss({vec(case['preds'])}, {vec(case['targets'])})"
        if got.get("failed") == "call":
            not_written(text, got)
            fail(f"{text} should return a Value, but raised {got['error']}{SSE}")
        preds = [RefValue(v) for v in case["preds"]]
        want = sum(((p - t) ** 2 for p, t in zip(preds, case["targets"])), RefValue(0.0))
        if not got["is_value"]:
            fail(
                f"{text} should return a Value, got {num(got['data'])}\n(compute with the "
                "prediction Values themselves, not their .data, so backward() reaches them)"
            )
        if not close(got["data"], want.data):
            hint = SSE
            if close(got["data"] * len(preds), want.data) and len(preds) > 1:
                hint = "\n(that is the mean: the page's loss is the sum, not divided by n)"
            fail(f"{text} should be {num(want.data)}, got {num(got['data'])}{hint}")
        if "failed" in got:
            fail(f"backward() from {text} should fill the grads, but raised {got['error']}{SSE}")
        want.backward()
        for i, (g, p) in enumerate(zip(got["grads"], preds)):
            if not close(g, p.grad):
                fail(
                    f"{text}: d(loss)/d(pred {i}) should be {num(p.grad)}, got {num(g)}"
                    "\n(d/dpred of (pred - target)**2 is 2 * (pred - target): keep the square)"
                )


# What each test grades, as ``Given`` targets name it: the course's optimizers go to the
# Iris test only once these have run (verdicts.Deferred).
EXERCISES = {"training_test_sgd": ("SGD",), "training_test_adam": ("Adam",)}

TESTS = {
    "training_test_sgd": sgd,
    "training_test_adam": adam,
    "training_test_fit": fit,
    "training_test_data": data,
    "training_test_classify": classify,
    "training_test_iris": iris,
}
