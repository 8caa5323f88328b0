"""Hidden answers of the checkpoint quiz on networks and training (06_checkpoint_mlp)."""

from __future__ import annotations

import random

from .common import RefValue, ref_nn
from .quiz import derivative, grader, letter, number, order, tests, truth


def mlp_parameters() -> float:
    """Question 1: the parameters of MLP(2, [3, 3, 1])."""
    return len(ref_nn.MLP(2, [3, 3, 1], rng=0).parameters())


def sequential_parameters() -> float:
    """Question 2: the parameters of Sequential(Linear(3, 4), ReLU(), Linear(4, 2))."""
    layers = ref_nn.Linear(3, 4, rng=0), ref_nn.ReLU(), ref_nn.Linear(4, 2, rng=1)
    return len(ref_nn.Sequential(*layers).parameters())


def mse_gradient() -> float:
    """Question 5: preds[0].grad for the mean squared error of two predictions."""
    preds = [RefValue(0.5), RefValue(-1.0)]
    ref_nn.mse_loss(preds, [1.0, 1.0]).backward()
    return preds[0].grad


def two_steps(reset: bool) -> float:
    """Questions 9 and 10: p.data after two steps of gradient descent, lr 0.1."""
    p = RefValue(0.5)
    for _ in range(2):
        loss = (3 * p - 1) ** 2
        if reset:
            p.grad = 0.0
        loss.backward()
        p.data -= 0.1 * p.grad
    return p.data


def step_order() -> dict[str, set[str]]:
    """Question 7: a = loss.backward(), b = forward pass and loss, c = zero the gradients,
    d = update. backward needs the loss and zeroed gradients; the update needs backward."""
    return {"a": {"b", "c"}, "b": set(), "c": set(), "d": {"a"}}


def _hinge_slope(score: float, y: int) -> float:
    return -y if 1.0 - y * score > 0.0 else 0.0


def _hinge_inputs(rng: random.Random) -> tuple[float, int]:
    y = rng.choice((1, -1))
    while True:
        score = rng.uniform(-3.0, 3.0)
        if abs(1.0 - y * score) > 0.05:  # never at the kink
            return score, y


QUESTIONS = {
    "q1": number(mlp_parameters, points=1),
    "q2": number(sequential_parameters, points=1),
    "q3": truth(False),
    "q4": letter("d"),
    "q5": number(mse_gradient, points=2),
    "q6": derivative(
        "hinge_grad", _hinge_slope, _hinge_inputs, calls=[(0.5, 1), (0.5, -1)], points=2
    ),
    "q7": order(step_order, points=2),
    "q8": letter("b"),
    "q9": number(lambda: two_steps(reset=True), points=2),
    "q10": number(lambda: two_steps(reset=False), points=1),
    "q11": truth(True),
    "q12": truth(False),
    "q13": letter("a"),
    "q14": letter("c"),
    "q15": letter("b"),
}

grade = grader(QUESTIONS)
TESTS = tests("mlp_quiz", QUESTIONS, grade)
