"""Hidden answers of the checkpoint quiz on networks and training (06_checkpoint_mlp).

Its questions, and what each variant shows, are in source/06_checkpoint_mlp/questions.py;
here is only what makes an answer right (see quiz.py), and the worked answers the practice
round shows.
"""

from __future__ import annotations

import functools

from .common import RefValue, ref_nn
from .quiz import Key, choice, function, g, number, order, plus, practice_bank, tests, truth

ASSIGNMENT = "06_checkpoint_mlp"
REFERENCE = {
    "Value": RefValue,
    "MLP": functools.partial(ref_nn.MLP, rng=0),
    "Linear": functools.partial(ref_nn.Linear, rng=0),
    "ReLU": ref_nn.ReLU,
    "Sequential": ref_nn.Sequential,
}


def why_q1(v, key) -> str:
    sizes = [v.nin, *v.sizes]
    parts = [f"{sizes[i + 1]} * ({sizes[i]} + 1)" for i in range(len(sizes) - 1)]
    counts = [sizes[i + 1] * (sizes[i] + 1) for i in range(len(sizes) - 1)]
    return (
        "Each neuron has one weight per input plus a bias, so a layer of n neurons reading "
        f"m inputs has n * (m + 1): {' + '.join(parts)} = "
        f"{' + '.join(map(str, counts))} = {g(key)}."
    )


def why_q2(v, key) -> str:
    first, second = v.b * v.a + v.b, v.c * v.b + v.c
    return (
        f"Linear({v.a}, {v.b}): {v.b} * {v.a} weights + {v.b} biases = {first}. ReLU has "
        f"none. Linear({v.b}, {v.c}): {v.c} * {v.b} + {v.c} = {second}. In all {g(key)}."
    )


def why_q5(v, key) -> str:
    n, i = len(v.preds), v.i
    return (
        f"loss = sum((p - t)**2) / {n}, so dloss/dp{i} = 2 * (p{i} - t{i}) / {n} = 2 * "
        f"({g(v.preds[i])} {plus(-v.targets[i])}) / {n} = {g(key)}. Forgetting the division "
        f"by len(preds) gives {g(key * n)}."
    )


def why_q6(v, key) -> str:
    m, w = g(v.margin), "" if v.weight == 1 else f"{g(v.weight)} * "
    return (
        f"Inside relu, d({m} - y * score)/dscore = -y. relu passes that on where its input "
        f"is positive ({m} - y * score > 0) and blocks it (slope 0) where it is not: "
        f"hinge_grad(score, y) = {w}-y if {m} - y * score > 0 else 0."
    )


def _hinge_inputs(v, rng):
    """A score on either side of the kink (as often on one as on the other), never at it."""
    y = rng.choice((1, -1))
    while True:
        d = rng.uniform(-3.0, 3.0)  # margin - y * score = -d
        if abs(d) > 0.05:
            return y * (v.margin + d), y


def step_order(v) -> dict[str, set[str]]:
    """Question 7: o1 = loss.backward(), o2 = forward pass and loss, o3 = zero the
    gradients, o4 = update. backward needs the loss and zeroed gradients; the update needs
    backward."""
    by_id = {"o1": {"o2", "o3"}, "o2": set(), "o3": set(), "o4": {"o1"}}
    return {v.letter(o): {v.letter(first) for first in by_id[o]} for o in by_id}


def why_q7(v, key) -> str:
    lo, fw, zero, up = (v.letter(o) for o in ("o1", "o2", "o3", "o4"))
    return (
        f"backward() ({lo}) needs the loss ({fw}) and zeroed gradients ({zero}) before it "
        f"runs; the update ({up}) needs the new gradients, so it comes last. {fw} and {zero} "
        f"can be swapped: {[fw, zero, lo, up]} and {[zero, fw, lo, up]} both count."
    )


def two_steps_why(v, key, reset: bool) -> str:
    a, b, p, lr = v.a, v.b, v.p0, v.lr
    grad, steps = 0.0, []
    for step in (1, 2):
        new = 2 * (a * p - b) * a
        grad = new if reset else grad + new
        p -= lr * grad
        steps.append(f"step {step}: grad = {g(grad)}, p = {g(p)}")
    rule = f"dloss/dp = 2 * ({a}p {'-' if b > 0 else '+'} {abs(b)}) * {a}"
    kept = "" if reset else " Without the reset, step 2's grad adds to step 1's."
    return f"{rule}. {'; '.join(steps)}.{kept}"


def why_q16(v, key) -> str:
    weights = v.nin * v.nout
    if v.bias:
        return (
            f"Linear lists its {weights} weights first, row by row, then its {v.nout} biases: "
            f"bias[{v.i}] comes after all the weights, at {weights} + {v.i} = {g(key)}."
        )
    return (
        f"Linear lists its weights row by row, each row {v.nin} long, then the biases: "
        f"weight[{v.i}][{v.j}] is at {v.i} * {v.nin} + {v.j} = {g(key)}."
    )


def why_torch(v, key) -> str:
    if v.stem == "s1":
        return (
            f"({key}) optimizer.step(): an optimizer such as torch.optim.SGD(params, lr=0.1) "
            "holds the parameters, and its step() applies the update."
        )
    if v.stem == "s3":
        return (
            f"({key}) loss.backward(), as in our engine: PyTorch's autograd adds the "
            "gradient of the loss to the .grad of every tensor that requires it."
        )
    return (
        f"({key}) optimizer.zero_grad() sets the grads of the parameters it holds to zero "
        "(or None), as our model.zero_grad() does."
    )


KEYS: dict[str, Key] = {
    "q1": number(REFERENCE, why_q1),
    "q2": number(REFERENCE, why_q2),
    "q3": truth(
        {"s2", "s4"},
        lambda v, k: (
            f"{k}. Each call builds new nodes on top, but the leaves are the very "
            "Values stored in the model. That is why an update of p.data shows in the next "
            "call, and why their grads keep adding up until something zeroes them."
        ),
    ),
    "q4": choice(
        "o4",
        lambda v, k: (
            f"({k}) parameters(): zero_grad() and the update loop only walk "
            "model.parameters(). Gradients come from the loss's backward(), and the learning "
            "rate belongs to the training loop."
        ),
    ),
    "q5": number(REFERENCE, why_q5),
    "q6": function(
        lambda v: lambda score, y: -v.weight * y if v.margin - y * score > 0 else 0.0,
        _hinge_inputs,
        why_q6,
    ),
    "q7": order(step_order, why_q7),
    "q8": choice(
        "o2",
        lambda v, k: (
            f"({k}) p.data -= lr * p.grad: p.grad = dloss/dp points uphill, so a "
            "small step against it lowers the loss. += climbs; changing p.grad moves nothing; "
            "= forgets p's value."
        ),
    ),
    "q9": number(REFERENCE, lambda v, k: two_steps_why(v, k, reset=True)),
    "q10": number(REFERENCE, lambda v, k: two_steps_why(v, k, reset=False)),
    "q11": truth(
        {"s1", "s3"},
        lambda v, k: (
            f"{k}. backward() adds to .grad by design (+=), across calls too; "
            "zero_grad() starts each step from 0, so p.grad is the gradient of this step's "
            "loss only."
        ),
    ),
    "q12": truth(
        {"s2", "s4"},
        lambda v, k: (
            f"{k}. Zeroing between backward() and the update erases the gradients "
            "the update needs, and nothing moves. zero_grad() belongs anywhere before "
            "backward(): at the start of each step, say."
        ),
    ),
    "q13": choice(
        "o1",
        lambda v, k: (
            f"({k}) lower the learning rate: steps that are too large overshoot "
            "the minimum, each time by more, so the loss jumps and grows. A larger rate or "
            "stale gradients make it worse, and more epochs only continue the climb."
        ),
    ),
    "q14": choice({"s1": "o3", "s2": "o2", "s3": "o1"}, why_torch),
    "q15": choice(
        "o2",
        lambda v, k: (
            f"({k}) ({v.nout}, {v.nin}): one row of weights per output, each row "
            "as long as the input, (out_features, in_features), the layout of our Linear's "
            "weight."
        ),
    ),
    "q16": number(REFERENCE, lambda v, k: why_q16(v, k)),
    "q17": choice(
        "o2",
        lambda v, k: (
            f"({k}) raise the learning rate: smooth but tiny steps mean each step "
            "is too short; a larger rate takes longer steps (watch that the loss does not start "
            "to jump). zero_grad() has nothing to do with the step's length."
        ),
    ),
}

TESTS = tests(ASSIGNMENT, "mlp_quiz", KEYS)


def practice_round() -> dict:
    """The practice round kept in the quiz notebook (see quiz.practice_bank)."""
    return practice_bank(ASSIGNMENT, KEYS)
