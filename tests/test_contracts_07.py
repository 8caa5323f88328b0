"""Problem set 1 (07_set_gradients): visible and hidden checks agree on what each exercise
requires (issue 42, as tests/test_contracts.py does for lessons 1 to 3).

For every graded exercise of the set, departures from its contract (edits of the
solution): each must fail the exercise's visible check, with a sentence naming what is
required, whenever its hidden test fails it: no ✓ in the notebook followed by hidden
points lost for a reason the visible check could have stated. Then the same over the
whole slip catalogue (tests/gradients_slips.py): every cell a slip's hidden test fails
has failed its visible check too, answers aside (which faulty operations, the two
predictions: their check cells only say whether an answer is well-formed).
"""

from __future__ import annotations

import pytest
from catalogue import assert_short, changed, changes_of, graded, ids
from gradients_slips import (
    ACCUMULATE,
    BUGS,
    CE,
    CHECK,
    CHECK_BODY,
    DERIVATIVE,
    EXERCISES,
    FAULTY,
    KEY,
    MUL_GRADS,
    MUL_NODE,
    PITFALLS,
    REFLECTED,
    RELATIVE,
    SLOPE,
    SOFTMAX,
    TANH_GRAD,
)

A = "07_set_gradients"

# (departure, [(old, new) in the solution cells], the exercise's test cell, words the
#  visible message must contain, words the hidden message must contain)
DEPARTURES = [
    # exercise 1: softmax
    (
        "softmax returns numbers",
        [("return [e / total for e in exps]", "return [(e / total).data for e in exps]")],
        SOFTMAX,
        "should return Values built from the logits",
        "should return Values built from the logits",
    ),
    (
        "softmax without the shift overflows",
        [("exps = [(z - m).exp() for z in logits]", "exps = [z.exp() for z in logits]")],
        SOFTMAX,
        "OverflowError",
        "OverflowError",
    ),
    (
        "softmax's denominator a plain number",
        [("    total = sum(exps)\n", "    total = sum(e.data for e in exps)\n")],
        SOFTMAX,
        "d(softmax([1, 2, 3])[2])/dz[0]",
        "with respect to logit 0",
    ),
    (
        "softmax returns a generator",
        [("return [e / total for e in exps]", "return (e / total for e in exps)")],
        SOFTMAX,
        "list of 3 Values",
        "list of Values",
    ),
    # exercise 2: cross_entropy
    (
        "cross_entropy returns a number",
        [("    return total / len(logits)", "    return (total / len(logits)).data")],
        CE,
        "should return a Value",
        "should return a Value",
    ),
    (
        "cross_entropy sums the batch",
        [("    return total / len(logits)", "    return total")],
        CE,
        "cross_entropy([[1, 2, 3], [1000, -1000, 0]], [2, 1])",
        "MEAN over the batch",
    ),
    (
        "cross_entropy takes the first sample's label for all",
        [("total = total + (logsumexp - zs[y])", "total = total + (logsumexp - zs[labels[0]])")],
        CE,
        "cross_entropy([[1, 2, 3], [1000, -1000, 0]], [2, 1])",
        "cross_entropy([[1, 2, 3], [1000, -1000, 0]], [2, 1])",
    ),
    # exercise 3: relative_error and grad_check
    (
        "relative_error divides by |b| only",
        [(RELATIVE, "return abs(a - b) / max(abs(b), 1e-12)")],
        CHECK,
        "relative_error(1.1, 1.0)",
        "not by |b|",
    ),
    (
        "relative_error's denominator without abs",
        [(RELATIVE, "return abs(a - b) / max(a, b, 1e-12)")],
        CHECK,
        "relative_error(-2.5, -0.5)",
        "SIZES",
    ),
    (
        "relative_error's guard too large for tiny numbers",
        [(RELATIVE, "return abs(a - b) / max(abs(a), abs(b), 1e-6)")],
        CHECK,
        "the 1e-12 only guards 0/0",
        "guard is for 0/0 only",
    ),
    (
        "relative_error divides 0 by 0",
        [(RELATIVE, "return abs(a - b) / max(abs(a), abs(b))")],
        CHECK,
        "ZeroDivisionError",
        "ZeroDivisionError",
    ),
    (
        "grad_check makes its Values with Value, not the engine",
        [("values = [engine(x) for x in xs]", "values = [Value(x) for x in xs]")],
        CHECK,
        "use the engine it is given",
        "use the engine it is given",
    ),
    (
        "grad_check ignores its engine everywhere",
        [
            (
                CHECK_BODY,
                CHECK_BODY.replace("engine(x)", "Value(x)").replace("map(engine,", "map(Value,"),
            )
        ],
        CHECK,
        "use the engine it is given",
        "use the engine it is given",
    ),
    (
        "grad_check nudges xs itself",
        [("up, down = list(xs), list(xs)", "up, down = xs, list(xs)")],
        CHECK,
        "changed the list xs",
        "changed the list xs",
    ),
    (
        "grad_check with its own step",
        [
            (
                CHECK_BODY,
                CHECK_BODY.replace("up[i] += h", "up[i] += 1e-6")
                .replace("down[i] -= h", "down[i] -= 1e-6")
                .replace("(2 * h)", "2e-6"),
            )
        ],
        CHECK,
        "h=0.1",
        "h=0.1",
    ),
    (
        "grad_check with one-sided differences",
        [(SLOPE, "slope = (f(*map(engine, up)).data - f(*map(engine, xs)).data) / h")],
        CHECK,
        "central difference",
        "central differences",
    ),
    (
        "grad_check returns the mean error",
        [
            (
                "worst = max(worst, relative_error(v.grad, slope))",
                "worst = worst + relative_error(v.grad, slope) / len(xs)",
            )
        ],
        CHECK,
        "the largest error",
        "LARGEST relative error",
    ),
    (
        "grad_check returns a list",
        [
            ("    worst = 0.0\n", "    worst = []\n"),
            (
                "worst = max(worst, relative_error(v.grad, slope))",
                "worst.append(relative_error(v.grad, slope))",
            ),
        ],
        CHECK,
        "should return a number",
        "should return one number",
    ),
    # exercise 4: faulty_ops (its form only: the answer is graded after submitting)
    ("faulty_ops as one string", [(KEY, 'faulty_ops = "__mul__, tanh"')], FAULTY, "list", "list"),
    (
        "faulty_ops with an operator symbol",
        [(KEY, 'faulty_ops = ["*", "tanh", "__rtruediv__"]')],
        FAULTY,
        "not one of the names in OPS",
        "not one of the names in OPS",
    ),
    (
        "faulty_ops names one twice",
        [(KEY, 'faulty_ops = ["tanh", "tanh", "__mul__"]')],
        FAULTY,
        "twice",
        "twice",
    ),
    # exercise 5: Fixed, one cell per fault
    (
        "tanh fixed but sets its gradient",
        [(TANH_GRAD, "self.grad = (1 - t**2) * out.grad")],
        DERIVATIVE,
        "+=",
        "+=",
    ),
    (
        "tanh fixed but makes a Buggy node",
        [('out = type(self)(t, (self,), "tanh")', 'out = Buggy(t, (self,), "tanh")')],
        DERIVATIVE,
        "type(self)(...)",
        "type(self)(...)",
    ),
    (
        "the product makes Buggy nodes",
        [(MUL_NODE + MUL_GRADS, MUL_NODE.replace("type(self)(", "Buggy(") + MUL_GRADS)],
        ACCUMULATE,
        "type(self)(...)",
        "type(self)(...)",
    ),
    (
        "the product fixed on one operand only",
        [
            (
                MUL_GRADS,
                "            self.grad += other.data * out.grad\n"
                "            other.grad = self.data * out.grad\n",
            )
        ],
        ACCUMULATE,
        "more than once",
        "+=",
    ),
    (
        "the reflected division the wrong way round",
        [("return self._node(other) / self", "return self / self._node(other)")],
        REFLECTED,
        "wrong value",
        "number is on the left",
    ),
    (
        "the reflected division makes Buggy nodes",
        [("return self._node(other) / self", "return Buggy(other) / self")],
        REFLECTED,
        "plain number",
        "type(self)(...)",
    ),
    # exercise 6: the measuring functions (the predictions are answers)
    (
        "train_one_weight zeroes the gradient whatever zero_grad says",
        [("        if zero_grad:\n            w.grad = 0.0\n", "        w.grad = 0.0\n")],
        PITFALLS,
        "zero_grad=False",
        "zero_grad=False",
    ),
    (
        "train_one_weight ignores lr",
        [("w.data -= lr * w.grad", "w.data -= 0.25 * w.grad")],
        PITFALLS,
        "train_one_weight(0, 2, 1, 0.1, 2, zero_grad=False)",
        "learning rate",
    ),
    (
        "relu_step_grads ignores in_place",
        [
            (
                "    if in_place:\n        h.data = max(h.data, 0.0)\n    else:\n"
                "        h = h.relu()\n",
                "    h = h.relu()\n",
            )
        ],
        PITFALLS,
        "in_place=True",
        "in_place=True",
    ),
    (
        "relu_step_grads returns [b.grad, w.grad]",
        [("return [w.grad, b.grad]", "return [b.grad, w.grad]")],
        PITFALLS,
        "relu_step_grads(0.25, -1, 1.5, 0.5, in_place=True)[0]",
        "[w.grad, b.grad]",
    ),
]


@pytest.mark.parametrize(
    "departure, edits, cell, seen_words, hidden_words", DEPARTURES, ids=ids(DEPARTURES)
)
def test_visible_and_hidden_checks_agree(
    solution, departure, edits, cell, seen_words, hidden_words
):
    nb = changed(solution, edits)
    hidden = graded(nb, A)
    seen = graded(nb, A, visible=True)
    assert cell in hidden, f"the hidden test passes {departure}"
    assert cell in seen, f"the visible check passes {departure}, the hidden test fails:\n{hidden}"
    assert seen_words in seen[cell], f"{departure}:\nvisible: {seen[cell]}"
    assert hidden_words in " ".join(hidden[cell].split()), f"{departure}:\n{hidden[cell]}"
    assert_short(seen[cell])


def test_every_exercise_has_departures():
    assert {row[2] for row in DEPARTURES} == EXERCISES


def test_the_departures_leave_the_solution_passing(solution):
    assert graded(solution, A) == {}
    assert graded(solution, A, visible=True) == {}


def _answer_only(cell: str, message: str) -> bool:
    """A hidden failure the visible check cannot state: a wrong answer, well-formed."""
    return cell == FAULTY or message.startswith("predicted_")


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_no_visible_pass_before_a_hidden_loss(solution, name, old, new, cells):
    """Every cell a slip's hidden test fails has failed its visible check too."""
    nb = changed(solution, changes_of((name, old, new)))
    hidden = graded(nb, A)
    seen = graded(nb, A, visible=True)
    missed = {c: m for c, m in hidden.items() if c not in seen and not _answer_only(c, m)}
    assert not missed, f"{name}: visible ✓, hidden ✗:\n{missed}"
