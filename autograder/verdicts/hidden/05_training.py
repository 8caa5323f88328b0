"""Hidden tests of 05_training (lesson 5b), losses and the training loop.

The losses are compared with refgrad's on random batches (binary cross-entropy on logits
of +-1000 too): value, and the gradient of every prediction and parameter. The training
loop (training.py) runs on models and losses made by the probe, so its check depends on
nothing else the student wrote. No exercise here is built on another, so none needs the
course's version of one (``Given``).

The lesson runs on the network of lesson 5 (05_mlp), loaded by its cell tagged
``engine``, as a problem set does (sets.py): grading runs the course's engine and network
in that cell's place and in every request, so a slip in lesson 5 costs nothing here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .common import Kernel, RefValue, close, fail, num, ref_nn
from .sets import course_engine
from .training import training

ENGINE = course_engine("Value", "Module", "MLP")


def vec(values: Sequence[float]) -> str:
    return "[" + ", ".join(num(float(v)) for v in values) + "]"


# ---- exercises 1 to 3: losses -----------------------------------------------------------


BROKE = ("OverflowError", "ZeroDivisionError", "ValueError")  # exp overflow, log(0)


def _broke(got: dict) -> bool:
    """The evidence of an overflow or a log(0): such an error, or a number that is not
    finite (inf or nan) in the loss or a gradient."""
    if got.get("type") in BROKE:
        return True
    values = [got.get("data"), *(got.get("grads") or ()), *(got.get("param_grads") or ())]
    return any(isinstance(v, float) and not math.isfinite(v) for v in values)


def check_loss(
    kernel: Kernel,
    function: str,
    ref_fn,
    cases: list[dict],
    hint: str = "",
    hint_when: Callable[[dict], bool] = lambda case: False,
) -> None:
    """fn(preds, targets[, parameters, alpha]) against the reference: value, and the
    gradients of the predictions and parameters. ``hint`` is said for a case that
    ``hint_when`` picks, on the evidence of an overflow or log(0) (``_broke``)."""
    results = kernel.run("loss", value="Value", function=function, cases=cases, what=function)
    for case, got in zip(cases, results):
        text = f"{function}({vec(case['preds'])}, {vec(case['targets'])}"
        if case.get("alpha") is not None:
            text += f", parameters={vec(case['params'])}, alpha={num(case['alpha'])}"
        text += ")"
        extra = f"\n({hint})" if hint and hint_when(case) and _broke(got) else ""
        if got.get("failed") == "call":
            if got["type"] == "NotImplementedError":
                fail(f"{function} raised NotImplementedError (not written yet)")
            fail(f"{text} raised {got['error']}{extra}")
        preds = [RefValue(v) for v in case["preds"]]
        params = [RefValue(v) for v in case.get("params") or []]
        args = (params, case["alpha"]) if case.get("alpha") is not None else ()
        want = ref_fn(preds, list(case["targets"]), *args)
        if not got["is_value"]:
            fail(f"{text} should return a Value, got {num(got['data'])}")
        if not close(got["data"], want.data):
            fail(f"{text}: expected {num(want.data)}, got {num(got['data'])}{extra}")
        if "failed" in got:
            fail(f"backward() from {text} raised {got['error']}{extra}")
        want.backward()
        for i, (g, p) in enumerate(zip(got["grads"], preds)):
            if not close(g, p.grad):
                fail(f"{text}: d(loss)/d(input {i}) should be {num(p.grad)}, got {num(g)}{extra}")
        for i, (g, p) in enumerate(zip(got["param_grads"], params)):
            if not close(g, p.grad):
                fail(f"{text}: d(loss)/d(parameter {i}) should be {num(p.grad)}, got {num(g)}")


def mse(kernel: Kernel) -> None:
    """Mean squared error on random batches of 1 to 5, targets as floats or ints."""
    rng = kernel.rng
    cases = [{"preds": [1.0, 3.0], "targets": [0.0, 1.0]}, {"preds": [2.0], "targets": [2.0]}]
    for trial in range(40):
        n = 2 + trial % 4 if trial < 30 else 1
        cases.append(
            {
                "preds": [round(rng.uniform(-3.0, 3.0), 3) for _ in range(n)],
                "targets": [
                    rng.randint(-2, 2) if rng.random() < 0.3 else round(rng.uniform(-3.0, 3.0), 2)
                    for _ in range(n)
                ],
            }
        )
    check_loss(kernel, "mse_loss", ref_nn.mse_loss, cases)


LARGE_LOGITS = [
    ([1000.0], [0]),
    ([-1000.0], [1]),
    ([1000.0], [1]),
    ([-1000.0], [0]),
    ([50.0, -800.0, 3.0], [0, 0, 1]),
    ([-750.0, 710.0], [1.0, 0.0]),
]
LARGE_HINT = "logits of +-1000 must work: exp() overflows above 709, and log(0) fails"


def bce(kernel: Kernel) -> None:
    """Cross-entropy on random logits and labels, then on logits up to +-1000."""
    rng = kernel.rng
    cases = [{"preds": [0.0], "targets": [1]}, {"preds": [2.0, -1.0], "targets": [0, 1]}]
    for trial in range(40):
        n = 1 + trial % 4
        labels = [rng.randint(0, 1) for _ in range(n)]
        cases.append(
            {
                "preds": [round(rng.choice((-1, 1)) * rng.uniform(0.05, 4.0), 3) for _ in range(n)],
                "targets": [float(y) for y in labels] if trial % 5 == 4 else labels,
            }
        )
    cases += [{"preds": p, "targets": t} for p, t in LARGE_LOGITS]
    check_loss(
        kernel,
        "binary_cross_entropy_with_logits",
        ref_nn.binary_cross_entropy_with_logits,
        cases,
        LARGE_HINT,
        lambda case: max(abs(z) for z in case["preds"]) > 700,
    )


def max_margin(kernel: Kernel) -> None:
    """Max-margin on random scores and labels, with and without the L2 term."""
    rng = kernel.rng
    alphas = (0.5, 0.1, 1e-4, 0.0)
    cases = [
        {"preds": [0.5, -2.0], "targets": [1, 1], "params": [2.0], "alpha": 0.1},
        {"preds": [2.0], "targets": [1]},
        {"preds": [0.5], "targets": [-1]},
    ]
    for trial in range(40):
        n = 1 + trial % 4
        labels = [rng.choice((-1, 1)) for _ in range(n)]
        scores = []
        for y in labels:
            s = round(rng.uniform(-2.5, 2.5), 3)
            while abs(1 - y * s) < 0.01:  # keep away from relu's kink
                s = round(rng.uniform(-2.5, 2.5), 3)
            scores.append(s)
        labels = [float(y) for y in labels] if trial % 5 == 3 else labels
        cases.append(
            {
                "preds": scores,
                "targets": labels,
                "alpha": alphas[trial % 4],
                "params": [round(rng.uniform(-2.0, 2.0), 3) for _ in range(1 + trial % 3)],
            }
        )
        if trial % 8 == 0:  # parameters and alpha left at their defaults
            cases.append({"preds": scores, "targets": labels})
    check_loss(kernel, "max_margin_loss", ref_nn.max_margin_loss, cases)


TESTS = {
    "train_test_mse": mse,
    "train_test_bce": bce,
    "train_test_max_margin": max_margin,
    "train_test_loop": training,
}
