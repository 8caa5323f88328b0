"""Hidden test of 05_training's train() (lesson 5b, exercise 4): the update rule, zeroing,
learning-rate decay, mini-batches, printing, and learning XOR-like points. Every run uses
a model and a loss made by the probe (autograder/verdicts/probe/nn.py), never the
student's modules or losses, so a bug elsewhere in the lesson costs nothing here.
Registered in 05_training.py's TESTS."""

from __future__ import annotations

import re

from .common import Kernel, Part, close, fail, num, shares

# ---- exercise 7: the training loop -------------------------------------------------------

XOR_POINTS = [(-1.0, -1.0, -1.0), (-1.0, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, -1.0)]
# The exercise's shares of the points, as its text names the parts of the loop: a wrong
# or missing part costs its own share only (issue 42).
UPDATES = "`train`'s updates"  # zero, backward, update at the step's rate; the losses
BATCHES = "`train`'s mini-batches"
PROGRESS = "`train`'s progress lines"


def training(kernel: Kernel) -> None:
    """The update rule, zeroing, decay, mini-batches, and learning on a small problem, all
    on models and losses made by the probe (one parameter p with model(x) = p * x[0], or a
    linear model on x0, x1 and x0*x1). Three shares of the points: the updates (with the
    losses returned), the mini-batches and the progress lines."""
    rng = kernel.rng
    steps, lr, decay = rng.randint(6, 10), rng.choice((0.2, 0.3, 0.4)), rng.choice((0.25, 0.5))
    every = rng.randint(2, 4)  # and a number of steps whose last one is not a multiple
    printed_steps = rng.choice([n for n in range(7, 14) if (n - 1) % every])
    xor_xs, xor_ys = [], []
    for cx, cy, label in XOR_POINTS:
        for _ in range(5):
            xor_xs.append(
                [round(cx + rng.uniform(-0.4, 0.4), 3), round(cy + rng.uniform(-0.4, 0.4), 3)]
            )
            xor_ys.append(label)
    shift = {"model": "shift", "loss": "squared", "xs": [[1.0], [3.0]], "ys": [2.0, 4.0]}
    runs = [
        {**shift, "kwargs": {"steps": 3, "lr": 0.25}},
        {**shift, "loss": "mean", "kwargs": {"steps": 2, "lr": 0.5, "lr_decay": 0.5}},
        {
            "model": "scale",
            "p0": 0.0,
            "loss": "mean",
            "xs": [[1.0]] * 6,
            "ys": [0.0] * 6,
            "kwargs": {"steps": steps, "lr": lr, "lr_decay": decay},
        },
        {
            "model": "scale",
            "p0": 1.0,
            "loss": "mean",
            "xs": [[float(i + 1)] for i in range(12)],
            "ys": [float(i) for i in range(12)],
            "kwargs": {"steps": 40, "lr": 0.0, "batch_size": 4},
        },
        {
            "model": "features",
            "seed": rng.randrange(10**6),
            "loss": "hinge",
            "xs": xor_xs,
            "ys": xor_ys,
            "kwargs": {"steps": 60, "lr": 0.2},
        },
        {
            "model": "features",
            "seed": rng.randrange(10**6),
            "loss": "hinge",
            "xs": xor_xs,
            "ys": xor_ys,
            "kwargs": {"steps": 100, "lr": 0.2, "batch_size": 5, "lr_decay": 0.5},
        },
        {
            "model": "scale",
            "p0": 0.0,
            "loss": "mean",
            "xs": [[1.0]] * 3,
            "ys": [0.0] * 3,
            "kwargs": {"steps": printed_steps, "lr": 0.1, "print_every": every},
        },
    ]
    results = kernel.run("train", value="Value", function="train", runs=runs, what="train")
    updated: list[bool] = []  # whether the updates passed: learning with batches needs them

    def updates() -> None:
        for i in (0, 1, 2, 4):
            _ran(runs[i], results[i])
        _update_rule(results[2], steps, lr, decay)  # first: its failures say why
        _visible(results[0], results[1])
        _learns(runs[4], results[4], len(xor_ys))
        updated.append(True)

    def batches() -> None:
        for i in (3, 5):
            _ran(runs[i], results[i])
        _batches(results[3])
        if updated:  # else the updates' own share says what is wrong
            _learns(runs[5], results[5], len(xor_ys))

    def progress() -> None:
        _ran(runs[6], results[6])
        quiet = results[2].get("printed", []) if "failed" not in results[2] else []
        _printed(quiet, results[6]["printed"], **runs[6]["kwargs"])

    shares(
        kernel,
        [
            Part(UPDATES, ("train.updates",), updates),
            Part(BATCHES, ("train.batches",), batches),
            Part(PROGRESS, ("train.progress",), progress),
        ],
    )


def _ran(run: dict, got: dict) -> None:
    """One run finished, returned a loss per step and called loss_fn at every step."""
    args = ", ".join(f"{k}={v}" for k, v in run["kwargs"].items())
    what = f"train(model, xs, ys, loss_fn, {args})"
    if "failed" in got:
        fail(f"{what} raised {got['error']}")
    _losses(got["returned"], run["kwargs"]["steps"], what)
    if len(got["sizes"]) < run["kwargs"]["steps"]:
        fail(f"{what} called loss_fn {len(got['sizes'])} times: once per step expected")


def _learns(run: dict, got: dict, n: int) -> None:
    """Trained on the XOR-like points, the loss falls below half and every point is right."""
    losses = got["returned"]
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    if not last < 0.5 * first or got["right"] < n:
        args = ", ".join(f"{k}={v}" for k, v in run["kwargs"].items())
        fail(
            f"train(model, xs, ys, hinge, {args}) on {n} XOR-like points: the loss went "
            f"from {num(first)} to {num(last)} (mean of 5 steps) and {got['right']} of "
            f"{n} points are right; expected less than half the loss and all {n}"
        )


def _losses(result, steps: int, what: str) -> None:
    if not isinstance(result, list) or len(result) != steps:
        fail(f"{what} should return a list of {steps} losses, got {num(result)}")
    for v in result:
        if isinstance(v, dict) and v.get("type") == "Value":
            fail(f"{what} should return plain numbers (loss.data), got a Value")
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            fail(f"{what} should return a list of numbers, got one {num(v)}")


def _visible(first: dict, second: dict) -> None:
    """The check cell's model c + x[0]: with the squared error c goes 0.5, 0.75, 0.875;
    with the mean of the predictions (gradient 1) and a decaying rate, 0 to -0.875."""
    for k, want in enumerate([1.0, 0.25, 0.0625]):
        if not close(first["returned"][k], want):
            fail(
                f"train(shift, ..., steps=3, lr=0.25): the loss at step {k} should be "
                f"{num(want)}, got {num(first['returned'][k])}"
            )
    if not close(first["params"][0], 0.875):
        fail(
            f"train(shift, ..., steps=3, lr=0.25) should take c from 0 to 0.875, got "
            f"{num(first['params'][0])}"
        )
    if not close(second["params"][0], -0.875):
        fail(
            "train(shift, ..., steps=2, lr=0.5, lr_decay=0.5) on a loss of gradient 1 uses\n"
            f"the rates 0.5 and 0.375: c should go from 0 to -0.875, got {num(second['params'][0])}"
        )


def _update_rule(got: dict, steps: int, lr: float, decay: float) -> None:
    """One parameter and a loss whose gradient is always 1: the parameter's path is known."""
    what = f"train(model, xs, ys, loss_fn, steps={steps}, lr={lr}, lr_decay={decay})"
    wrong = next((n for n in got["sizes"] if n != 6), None)
    if wrong is not None:
        fail(
            f"{what} (batch_size=None): each step's loss should use all 6 samples; loss_fn "
            f"got {wrong} predictions"
        )
    rates = [lr * (1 - decay * k / steps) for k in range(steps)]
    want, p = -sum(rates), got["params"][0]
    if not close(p, want):
        hint = ""
        if close(p, -sum(r * (k + 1) for k, r in enumerate(rates))):
            hint = "\n(the gradients pile up from step to step: zero them before backward)"
        elif close(p, sum(rates)):
            hint = "\n(each step climbs the gradient: p.data -= rate * p.grad)"
        elif close(p, -lr * steps):
            hint = "\n(the rate never decays: at step k use lr * (1 - lr_decay * k / steps))"
        fail(
            f"{what} on a model whose loss always has gradient 1: its parameter should go "
            f"from 0 to {num(want)}, got {num(p)}{hint}"
        )
    p = 0.0
    for k, (loss, rate) in enumerate(zip(got["returned"], rates)):
        if not close(loss, p):
            fail(
                f"{what}: the loss returned for step {k} should be {num(p)}, got {num(loss)} "
                "(the loss of that step's batch, before its update)"
            )
        p -= rate


def _printed(quiet: list[str], lines: list[str], steps: int, lr: float, print_every: int) -> None:
    """With print_every=0 nothing is printed; otherwise one line at each step k with
    k % print_every == 0 and at the last step, naming the step (counted from 1 or 0)."""
    if quiet:
        fail(f"train(..., print_every=0) should print nothing, got {quiet[0][:40]!r}")
    what = f"train(..., steps={steps}, print_every={print_every})"
    ks = [k for k in range(steps) if k % print_every == 0 or k == steps - 1]
    if len(lines) != len(ks):
        fail(
            f"{what} should print {len(ks)} lines (steps {', '.join(str(k + 1) for k in ks)}), "
            f"got {len(lines)}"
        )
    for base in (1, 0):
        if all(re.search(rf"\b{k + base}\b", line) for k, line in zip(ks, lines)):
            return
    fail(
        f"{what} should print steps {', '.join(str(k + 1) for k in ks)}; got the lines "
        f"{lines[0][:30]!r}, ..."
    )


def _batches(got: dict) -> None:
    """Random batches of the right size, each x paired with its own y, every sample used."""
    what = "train(..., steps=40, lr=0, batch_size=4)"
    wrong = next((size for size in got["sizes"] if size != 4), None)
    if wrong is not None:
        fail(f"{what}: every step's loss should use 4 samples; loss_fn got {wrong} predictions")
    if got["mismatched"]:
        fail(
            "train should pass loss_fn the ys of the same samples as the xs: got a batch "
            "that paired an x with another sample's y"
        )
    if got["used"] < 12:
        fail(
            f"{what} should use all 12 samples over 40 steps, got {got['used']} of them: "
            "draw a new random batch at every step"
        )
