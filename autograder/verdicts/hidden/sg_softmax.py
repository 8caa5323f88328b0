"""Hidden tests of 07_set_gradients' softmax and cross_entropy (exercises 1 and 2).

Both are compared with a stable reference built on refgrad, on random logits: sizes 2
to 6, magnitudes small and up to 1000 (where exp overflows and a naive softmax or
-log(softmax) fails), random labels and batch sizes. Every output's data and every
logit's gradient must agree; how the student wrote it (the max subtracted as a number
or as a Value, log-sum-exp in any arrangement) never matters. When they do not agree,
the message says what the numbers point to: an overflow, a missing mean, a flipped sign,
a log-sum-exp that carries no gradient.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .common import Kernel, RefValue, close, fail, num

OVERFLOW = "subtract the max: exp(z - max(z)) never overflows, and the sum is at least 1"
LSE = "use log-sum-exp: loss = m + log(sum(exp(z - m))) - z[y], with m = max(z)"
BROKEN = ("OverflowError", "ZeroDivisionError", "math domain", "math range", "log is only")


def vec(values: Sequence[float], width: int = 60) -> str:
    text = "[" + ", ".join(num(float(v)) for v in values) + "]"
    return text if len(text) <= width else text[: width - 4] + "...]"


def ref_softmax(zs: Sequence[RefValue]) -> list[RefValue]:
    """exp(z - m) / sum(exp(z - m)), m = max(z) as a number (the reference)."""
    m = max(z.data for z in zs)
    exps = [(z - m).exp() for z in zs]
    total = exps[0]
    for e in exps[1:]:
        total = total + e
    return [e / total for e in exps]


def ref_logsumexp(zs: Sequence[RefValue]) -> RefValue:
    m = max(z.data for z in zs)
    total = (zs[0] - m).exp()
    for z in zs[1:]:
        total = total + (z - m).exp()
    return total.log() + m


def ref_cross_entropy(batch: Sequence[Sequence[RefValue]], labels: Sequence[int]) -> RefValue:
    """The mean over the batch of logsumexp(z) - z[y] (the reference)."""
    total = ref_logsumexp(batch[0]) - batch[0][labels[0]]
    for zs, y in zip(batch[1:], labels[1:]):
        total = total + (ref_logsumexp(zs) - zs[y])
    return total / len(batch)


def plain_softmax(zs: Sequence[float]) -> list[float]:
    m = max(zs)
    exps = [math.exp(z - m) for z in zs]
    return [e / sum(exps) for e in exps]


# ---- logits --------------------------------------------------------------------------------


def logits(rng: random.Random, n: int, kind: str) -> list[float]:
    """n logits: "small" (within +-4), "large" (up to +-1000), "mixed", or "equal"."""
    if kind == "small":
        return [round(rng.uniform(-4.0, 4.0), 3) for _ in range(n)]
    if kind == "large":
        return [round(rng.choice((-1, 1)) * rng.uniform(700.0, 1000.0), 1) for _ in range(n)]
    if kind == "equal":
        return [1000.0 * rng.choice((-1, 1))] * n
    return [
        round(rng.uniform(-3.0, 3.0), 3)
        if rng.random() < 0.5
        else round(rng.choice((-1, 1)) * rng.uniform(400.0, 1000.0), 1)
        for _ in range(n)
    ]


KINDS = ("small", "small", "large", "mixed", "mixed", "equal")


# ---- exercise 1: softmax -------------------------------------------------------------------


def softmax(kernel: Kernel) -> None:
    """softmax on the visible check's logits, then random ones; its outputs, and the
    logits' gradients of a random weighted sum of them."""
    rng = kernel.rng
    rows = [[1.0, 2.0, 3.0], [1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0], [0.5]]
    for trial in range(36):
        rows.append(logits(rng, 2 + trial % 5, KINDS[trial % len(KINDS)]))
    cases = [
        {"logits": row, "weights": [round(rng.uniform(-2.0, 2.0), 3) for _ in row]} for row in rows
    ]
    results = kernel.run(
        "sg_softmax", value="Value", function="softmax", cases=cases, what="softmax"
    )
    for case, got in zip(cases, results):
        _check_softmax(case, got)


def _check_softmax(case: dict, got: dict) -> None:
    zs = case["logits"]
    text = f"softmax({vec(zs)})"
    if got.get("failed") == "call":
        if got["type"] == "NotImplementedError":
            fail("softmax raised NotImplementedError (not written yet)")
        fail(f"{text} raised {got['error']}" + _hint(got["error"], OVERFLOW))
    if "returned" in got:
        fail(f"{text} should return a list of Values, got {got['returned']}")
    want = ref_softmax([RefValue(z) for z in zs])
    if len(got["data"]) != len(zs):
        fail(f"{text} should return a list of {len(zs)} Values, got {len(got['data'])}")
    if not got["values"]:
        fail(
            f"{text} should return Values built from the logits, got {_items(got['data'])}"
            "\n(build each p_i with exp, + and / on the logit Values, so that gradients flow "
            "back to them)"
        )
    for i, (g, w) in enumerate(zip(got["data"], want)):
        if not close(g, w.data, rel=1e-9, abs_=1e-12):
            fail(f"{text}[{i}] should be {num(w.data)}, got {num(g)}" + _data_hint(got["data"]))
    if "failed" in got:
        fail(f"backward() through {text} raised {got['error']}\n({RAISED})")
    weights = case["weights"]
    grads = _softmax_grads(zs, weights)
    for j, (g, w) in enumerate(zip(got["grads"], grads)):
        if not close(g, w, rel=1e-7, abs_=1e-10):
            fail(
                f"{text}: the gradient of sum(c[i] * p[i]) with c = {vec(weights, 40)}\n"
                f"with respect to logit {j} should be {num(w)}, got {num(g)}"
                + _grad_hint(zs, weights, got["grads"])
            )


def _items(items: list) -> str:
    """What came back, shortly: its first items, each as num shows it."""
    return "[" + ", ".join(num(x) for x in items[:3]) + (", ...]" if len(items) > 3 else "]")


def _softmax_grads(zs: Sequence[float], weights: Sequence[float]) -> list[float]:
    """d/dz_j of sum_i c_i p_i, by the reference engine."""
    leaves = [RefValue(z) for z in zs]
    probs = ref_softmax(leaves)
    loss = probs[0] * weights[0]
    for p, c in zip(probs[1:], weights[1:]):
        loss = loss + p * c
    loss.backward()
    return [z.grad for z in leaves]


COMPARED = (
    "take m from the numbers: max(z.data for z in zs); grading runs the course's Value, "
    "which has no < or >"
)
RAISED = "call it with these logits in your notebook: it raises there too"


def _hint(error: str, hint: str) -> str:
    """What an error raised on these logits points to."""
    if any(word in error for word in BROKEN):
        return f"\n({hint})"
    if "not supported between instances" in error:
        return f"\n({COMPARED})"
    return f"\n({RAISED})"


def _data_hint(data: list) -> str:
    numbers = [d for d in data if isinstance(d, (int, float)) and not isinstance(d, bool)]
    if len(numbers) != len(data):
        return ""
    if any(math.isnan(d) or math.isinf(d) for d in numbers):
        return f"\n({OVERFLOW})"
    if not close(sum(numbers), 1.0, rel=1e-6):
        return f"\n(the outputs add up to {num(sum(numbers))}: divide each exp by their sum)"
    return "\n(p_i = exp(z_i - m) / sum_j exp(z_j - m), with m = max(z))"


def _grad_hint(zs: Sequence[float], weights: Sequence[float], got: list) -> str:
    """A denominator computed from .data passes no gradient through the sum: then each
    logit's gradient is only c_j * p_j."""
    probs = plain_softmax(zs)
    plain_sum = [c * p for c, p in zip(weights, probs)]
    if all(close(g, w, rel=1e-6, abs_=1e-9) for g, w in zip(got, plain_sum)):
        return (
            "\n(the sum in the denominator must be a Value built from the exps, so that "
            "every logit's gradient flows through it)"
        )
    return "\n(build every p_i from Value operations on the logits, so backward() reaches them)"


# ---- exercise 2: cross_entropy -------------------------------------------------------------


def cross_entropy(kernel: Kernel) -> None:
    """The mean cross-entropy of random batches: its value and every logit's gradient."""
    rng = kernel.rng
    cases = [
        {"logits": [[1.0, 2.0, 3.0]], "labels": [2]},
        {"logits": [[1.0, 2.0, 3.0], [1000.0, -1000.0, 0.0]], "labels": [2, 1]},
        {"logits": [[1000.0, -1000.0]], "labels": [1]},
        {"logits": [[-1000.0, -1000.0, -1000.0]], "labels": [0]},
        {"logits": [[800.0, -900.0, 2.5, -1.0]], "labels": [1]},
    ]
    for trial in range(40):
        size, classes = 1 + trial % 4, 2 + trial % 5
        kind = KINDS[trial % len(KINDS)]
        cases.append(
            {
                "logits": [logits(rng, classes, kind) for _ in range(size)],
                "labels": [rng.randrange(classes) for _ in range(size)],
            }
        )
    results = kernel.run(
        "sg_cross_entropy",
        value="Value",
        function="cross_entropy",
        cases=cases,
        what="cross_entropy",
    )
    for case, got in zip(cases, results):
        _check_cross_entropy(case, got)


def _ce_text(case: dict) -> str:
    rows = case["logits"]
    shown = ", ".join(vec(row, 36) for row in rows[:2]) + (", ..." if len(rows) > 2 else "")
    return f"cross_entropy([{shown}], {case['labels']})"


def _check_cross_entropy(case: dict, got: dict) -> None:
    text = _ce_text(case)
    if got.get("failed") == "call":
        if got["type"] == "NotImplementedError":
            fail("cross_entropy raised NotImplementedError (not written yet)")
        fail(f"{text}\nraised {got['error']}" + _hint(got["error"], LSE))
    batch = [[RefValue(z) for z in row] for row in case["logits"]]
    want = ref_cross_entropy(batch, case["labels"])
    if not got["is_value"]:
        fail(
            f"{text} should return a Value, got {num(got['data'])}\n(build the loss from "
            "the logit Values, so that backward() reaches them)"
        )
    if not close(got["data"], want.data, rel=1e-9, abs_=1e-9):
        fail(
            f"{text}\nshould be {num(want.data)}, got {num(got['data'])}"
            + _ce_data_hint(case, got["data"], want.data)
        )
    if "failed" in got:
        fail(f"backward() from {text}\nraised {got['error']}\n({RAISED})")
    want.backward()
    for i, (row, ref_row) in enumerate(zip(got["grads"], batch)):
        for j, (g, z) in enumerate(zip(row, ref_row)):
            if not close(g, z.grad, rel=1e-7, abs_=1e-10):
                fail(
                    f"{text}\nd(loss)/d(logits[{i}][{j}]) should be {num(z.grad)}, got "
                    f"{num(g)}" + _ce_grad_hint(case, got["grads"], batch)
                )


def _per_sample(case: dict, labels: Sequence[int] | None = None) -> list[float]:
    """Each sample's loss logsumexp(z) - z[y], as numbers."""
    labels = case["labels"] if labels is None else labels
    out = []
    for row, y in zip(case["logits"], labels):
        m = max(row)
        out.append(m + math.log(sum(math.exp(z - m) for z in row)) - row[y])
    return out


def _ce_data_hint(case: dict, got: object, want: float) -> str:
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return ""
    if math.isnan(got) or math.isinf(got):
        return f"\n({LSE})"
    n = len(case["labels"])
    losses = _per_sample(case)
    shifted = [
        loss - max(row) for loss, row in zip(losses, case["logits"])
    ]  # the max not added back
    candidates = [
        (n > 1 and close(got, sum(losses), rel=1e-9), "the loss is the MEAN over the batch"),
        (close(got, -want, rel=1e-9), "the sign is flipped: the loss is -log p[y]"),
        (
            close(got, sum(shifted) / n, rel=1e-9),
            "add the max back: logsumexp(z) = m + log(sum(exp(z - m)))",
        ),
    ]
    classes = len(case["logits"][0])
    if classes != n and close(got * classes / n, want, rel=1e-9):
        candidates.append((True, "divide by the batch size len(logits), not the classes"))
    for label_shift in (1, -1):
        other = [(y + label_shift) % classes for y in case["labels"]]
        if close(got, sum(_per_sample(case, other)) / n, rel=1e-9):
            candidates.append((True, "take the logit of each sample's own label: z[y]"))
    for matched, hint in candidates:
        if matched:
            return f"\n({hint})"
    return "\n(each sample's loss is m + log(sum(exp(z - m))) - z[y]; the mean over the batch)"


def _ce_grad_hint(case: dict, got: list, batch) -> str:
    n = len(case["labels"])
    onehot = [
        [1.0 if j == y else 0.0 for j in range(len(row))] for row, y in zip(batch, case["labels"])
    ]
    probs = [plain_softmax(row) for row in case["logits"]]
    right = [[(p - t) / n for p, t in zip(pr, oh)] for pr, oh in zip(probs, onehot)]
    guesses = [
        (
            [[-t / n for t in oh] for oh in onehot],
            "the log-sum-exp term passes no gradient: "
            "build it from Values (its gradient is the softmax)",
        ),
        (
            [[p / n for p in pr] for pr in probs],
            "the -z[y] term passes no gradient: subtract the logit Value itself",
        ),
        (
            [[-g for g in row] for row in right],
            "the sign is flipped: the gradient is (softmax(z) - onehot(y)) / N",
        ),
        ([[g * n for g in row] for row in right], "the loss is the MEAN over the batch"),
    ]
    for guess, hint in guesses:
        if n == 1 and "MEAN" in hint:
            continue
        if all(
            close(g, w, rel=1e-6, abs_=1e-9)
            for row, wrow in zip(got, guess)
            for g, w in zip(row, wrow)
        ):
            return f"\n({hint})"
    return "\n(d(loss)/dz = (softmax(z) - onehot(y)) / N: build the loss from the logit Values)"
