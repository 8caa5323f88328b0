"""Set 09's visible checks and hidden tests agree on what each exercise requires (issue 42).

For every exercise of problem set 3, ways a student's code departs from the set's text:
where a closure adds (``=`` for ``+=``), which operand is unbroadcast, what ``+`` accepts
(a plain number, an int, a numpy array, a 0-d array), which parents an operation keeps,
what shape ``sum`` returns, which shapes a gradient meets. Each departure fails the
exercise's visible check, with a sentence naming what is required, exactly when its
hidden test fails it: no ✓ in the notebook followed by hidden points lost for a reason the
visible check could have stated, and no ✗ for what grading accepts. Some rows are slips the
hidden tests used to miss (class 2 of issue 42): an operand the text promises but no test
sent, a contract sentence no test checked.

Each notebook is graded once per session (tests/catalogue.py), and tests/test_messages_09.py
reads the same runs.
"""

from __future__ import annotations

import pytest
import test_09_set_arrays as t09
from catalogue import assert_short, changed, graded, ids, solution

A = t09.A
COUNT, UNB, ADD, MATMUL, TANH_SUM, BACKWARD = (
    t09.COUNT,
    t09.UNB,
    t09.ADD,
    t09.MATMUL,
    t09.TANH_SUM,
    t09.BACKWARD,
)

ADD_GRADS = (
    "        self.grad += unbroadcast(out.grad, self.shape)\n"
    "        other.grad += unbroadcast(out.grad, other.shape)\n"
)
WRAP = "    other = other if isinstance(other, Tensor) else Tensor(other)\n"
SUM_GRAD = "self.grad += np.ones_like(self.data) * out.grad"

# (departure, [(old, new) in the solution cells], the exercise's test cell, words both
#  messages contain, or None where both must pass: grading accepts it)
DEPARTURES = [
    # ---- exercise 1: count_nodes
    (
        "count returns a 0-d array",
        [
            (
                "return nin + parameters + sums + relus",
                "return np.array(nin + parameters + sums + relus)",
            )
        ],
        COUNT,
        "the number 22",
    ),
    (
        "count's fused defaults to False",
        [("def count_nodes(nin, nouts, fused=True):", "def count_nodes(nin, nouts, fused=False):")],
        COUNT,
        "fused should be True when it is not given",
    ),
    (
        "count empties nouts once it has counted",
        [
            (
                "    return nin + parameters + sums + relus\n",
                "    total = nin + parameters + sums + relus\n"
                "    nouts.clear()\n"
                "    return total\n",
            )
        ],
        COUNT,
        "changed",
    ),
    (
        "count returns a float",
        [
            (
                "return nin + parameters + sums + relus",
                "return float(nin + parameters + sums + relus)",
            )
        ],
        COUNT,
        None,
    ),
    # ---- exercise 2: unbroadcast
    (
        "unbroadcast sums one leading axis only",
        [("while grad.ndim > len(shape):", "if grad.ndim > len(shape):")],
        UNB,
        "shape ()",
    ),
    (
        "unbroadcast sums leading axes before aligning the 1s",
        [
            (
                "    while grad.ndim > len(shape):\n        grad = grad.sum(axis=0)\n"
                "    for axis, n in enumerate(shape):\n        if n == 1:\n"
                "            grad = grad.sum(axis=axis, keepdims=True)\n",
                "    for axis, n in enumerate(shape):\n        if n == 1:\n"
                "            grad = grad.sum(axis=axis, keepdims=True)\n"
                "    while grad.ndim > len(shape):\n        grad = grad.sum(axis=0)\n",
            )
        ],
        UNB,
        "should",
    ),
    (
        "unbroadcast returns a list",
        [("    return grad\n", "    return grad.tolist()\n")],
        UNB,
        None,
    ),
    # ---- exercise 3: +
    (
        "+ unbroadcasts other only",
        [(ADD_GRADS, ADD_GRADS.replace("unbroadcast(out.grad, self.shape)", "out.grad"))],
        ADD,
        "unbroadcast(out.grad",
    ),
    (
        "+ sets self.grad with =",
        [("self.grad += unbroadcast(", "self.grad = unbroadcast(")],
        ADD,
        "+=",
    ),
    (
        "+ wraps floats only",
        [(WRAP, "    other = Tensor(other) if isinstance(other, float) else other\n")],
        ADD,
        "in a Tensor first",
    ),
    (
        "+ wraps numbers, not numpy arrays",
        [(WRAP, "    other = Tensor(other) if isinstance(other, (int, float)) else other\n")],
        ADD,
        "in a Tensor",
    ),
    (
        "+ keeps no parents",
        [('Tensor(self.data + other.data, (self, other), "+")', "Tensor(self.data + other.data)")],
        ADD,
        "_prev",
    ),
    (
        "+ adds into self.data",
        [
            (
                'out = Tensor(self.data + other.data, (self, other), "+")',
                'self.data += other.data\n    out = Tensor(self.data, (self, other), "+")',
            )
        ],
        ADD,
        "changed the data",
    ),
    (
        "+ keeps a number out of the graph, without unbroadcast",
        [
            (
                WRAP,
                "    if not isinstance(other, Tensor):\n"
                "        out = Tensor(self.data + other, (self,), '+')\n"
                "        out._backward = lambda: self.__dict__.update(grad=self.grad + out.grad)\n"
                "        return out\n",
            )
        ],
        ADD,
        "unbroadcast",
    ),
    (
        "+ keeps a number out of the graph, with unbroadcast",
        [
            (
                WRAP,
                "    if not isinstance(other, Tensor):\n"
                "        out = Tensor(self.data + other, (self,), '+')\n"
                "        out._backward = lambda: self.__dict__.update(\n"
                "            grad=self.grad + unbroadcast(out.grad, self.shape))\n"
                "        return out\n",
            )
        ],
        ADD,
        None,
    ),
    # ---- exercise 4: @
    (
        "@ sets A's grad with =",
        [("self.grad += out.grad @ other.data.T", "self.grad = out.grad @ other.data.T")],
        MATMUL,
        "+=",
    ),
    (
        "@ sets B's grad with =",
        [("other.grad += self.data.T @ out.grad", "other.grad = self.data.T @ out.grad")],
        MATMUL,
        "+=",
    ),
    (
        "@ keeps no parents",
        [('Tensor(self.data @ other.data, (self, other), "@")', "Tensor(self.data @ other.data)")],
        MATMUL,
        "_prev",
    ),
    (
        "@ transposes out.grad for A",
        [("self.grad += out.grad @ other.data.T", "self.grad += out.grad.T @ other.data.T")],
        MATMUL,
        "out.grad @ B.T",
    ),
    # ---- exercise 5: tanh and sum
    (
        "tanh sets the grad with =",
        [("self.grad += (1 - t**2)", "self.grad = (1 - t**2)")],
        TANH_SUM,
        "+=",
    ),
    (
        "tanh keeps its output in self.data",
        [("    t = np.tanh(self.data)\n", "    self.data = t = np.tanh(self.data)\n")],
        TANH_SUM,
        "changed the data",
    ),
    (
        "tanh keeps no parents",
        [('Tensor(t, (self,), "tanh")', "Tensor(t)")],
        TANH_SUM,
        "_prev",
    ),
    ("sum sets the grad with =", [(SUM_GRAD, SUM_GRAD.replace("+=", "="))], TANH_SUM, "+="),
    (
        "sum's gradient of the transposed shape",
        [(SUM_GRAD, "self.grad += np.ones_like(self.data.T) * out.grad")],
        TANH_SUM,
        "gains out.grad",
    ),
    (
        "sum's gradient as long as the first axis",
        [(SUM_GRAD, "self.grad += np.ones(len(self.data)) * out.grad")],
        TANH_SUM,
        "gains out.grad",
    ),
    (
        "sum keeps the dimensions",
        [("Tensor(self.data.sum(), (self,)", "Tensor(self.data.sum(keepdims=True), (self,)")],
        TANH_SUM,
        "shape ()",
    ),
    (
        "sum keeps no parents",
        [('Tensor(self.data.sum(), (self,), "sum")', "Tensor(self.data.sum())")],
        TANH_SUM,
        "_prev",
    ),
    # ---- exercise 6: backward
    (
        "backward seeds the gradient of one element",
        [
            (
                "self.grad = np.ones_like(self.data)",
                "self.grad = np.zeros_like(self.data)\n    self.grad.flat[0] = 1.0",
            )
        ],
        BACKWARD,
        "should",
    ),
    (
        "backward seeds ones of shape (1,)",
        [("self.grad = np.ones_like(self.data)", "self.grad = np.ones(1)")],
        BACKWARD,
        None,
    ),
]


def departed(name: str):
    """The solution with the departure ``name``."""
    (row,) = [row for row in DEPARTURES if row[0] == name]
    return changed(solution(A), row[1])


@pytest.mark.parametrize("name, changes, cell, words", DEPARTURES, ids=ids(DEPARTURES))
def test_visible_and_hidden_checks_agree(name, changes, cell, words):
    nb = changed(solution(A), changes)
    seen, hidden = graded(nb, A, visible=True), graded(nb, A)
    if words is None:
        assert cell not in seen and cell not in hidden, (seen.get(cell), hidden.get(cell))
        return
    assert cell in hidden, f"the hidden test passes {name}"
    assert cell in seen, f"the visible check passes {name}, the hidden test fails:\n{hidden[cell]}"
    assert words in seen[cell] and words in hidden[cell], (
        f"{name}:\nvisible: {seen[cell]}\nhidden: {hidden[cell]}"
    )
    assert_short(seen[cell])
    assert_short(hidden[cell])


@pytest.mark.parametrize("name, old, new, cells", t09.BUGS, ids=ids(t09.BUGS))
def test_every_slip_the_hidden_tests_catch_fails_its_visible_check(name, old, new, cells):
    """The lesson's catalogue of slips (each fails its hidden test, test_09_set_arrays):
    each fails its visible check too."""
    seen = graded(changed(solution(A), [(old, new)]), A, visible=True)
    assert set(cells) <= set(seen), f"the visible check passes {name}"


def test_every_exercise_has_departures():
    assert {row[2] for row in DEPARTURES} == t09.EXERCISES
