"""Lesson 01 (the Value node): the hidden tests pass correct work, written any way, and
catch the classic bugs, each in the cell that grades the broken exercise and only there
(the later exercises are graded on the course's version of the earlier ones)."""

import pytest
from catalogue import assert_catches, assert_passes, graded, ids
from helpers import (
    assert_blank_fails_each,
    mutate,
    run_cells,
    verdict_of,
)

A = "01_value"
ADD, HAND, ARITH, REFL = (
    "value_test_add_mul",
    "value_test_hand_backprop",
    "value_test_arithmetic",
    "value_test_reflected",
)

WRAP = "other = other if isinstance(other, Value) else Value(other)"
FLOATS_ONLY = "other = Value(other) if isinstance(other, float) else other"
ADD_WRAP = f'{WRAP}\n        out = Value(self.data + other.data, (self, other), "+")'
MUL_WRAP = f'{WRAP}\n        out = Value(self.data * other.data, (self, other), "*")'

# (description, old text, new text, the test cells that must fail)
BUGS = [
    (
        "= instead of += in __add__",
        "self.grad += 1.0 * out.grad",
        "self.grad = 1.0 * out.grad",
        {ADD},
    ),
    (
        "no * out.grad in __mul__",
        "self.grad += other.data * out.grad",
        "self.grad += other.data",
        {ADD},
    ),
    (
        "__mul__ gradients swapped",
        "self.grad += other.data * out.grad",
        "self.grad += self.data * out.grad",
        {ADD},
    ),
    (
        "one parent missing from _prev",
        'out = Value(self.data + other.data, (self, other), "+")',
        'out = Value(self.data + other.data, (self,), "+")',
        {ADD},
    ),
    (
        "power rule n * x**n",
        "self.grad += n * self.data ** (n - 1) * out.grad",
        "self.grad += n * self.data**n * out.grad",
        {ARITH},
    ),
    (
        "power rule without * out.grad",
        "self.grad += n * self.data ** (n - 1) * out.grad",
        "self.grad += n * self.data ** (n - 1)",
        {ARITH},
    ),
    ("__rsub__ operands swapped", "return Value(other) - self", "return self - other", {REFL}),
    ("__rtruediv__ operands swapped", "return Value(other) / self", "return self / other", {REFL}),
    (
        "hand backprop: dL/dn missing the 2",
        "g.n.grad = 2 * g.n.data * g.L.grad",
        "g.n.grad = g.n.data * g.L.grad",
        {HAND},
    ),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    ("_prev as a set", "self._prev = tuple(dict.fromkeys(_parents))", "self._prev = set(_parents)"),
    (
        "_prev as a list",
        "self._prev = tuple(dict.fromkeys(_parents))",
        "self._prev = list(_parents)",
    ),
    ("other op labels", '(self, other), "+")', '(self, other), "add")'),
    (
        "__sub__ with its own closure",
        "    return self + (-other)\n",
        """\
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data - other.data, (self, other), "-")

    def _backward():
        self.grad += out.grad
        other.grad -= out.grad

    out._backward = _backward
    return out
""",
    ),
    (
        "__truediv__ by the quotient rule",
        "    return self * other**-1\n",
        """\
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data / other.data, (self, other), "/")

    def _backward():
        self.grad += out.grad / other.data
        other.grad += -self.data / other.data**2 * out.grad

    out._backward = _backward
    return out
""",
    ),
    (
        "power rule through out.data",
        "self.grad += n * self.data ** (n - 1) * out.grad",
        "self.grad += n * out.data / self.data * out.grad",
    ),
    ("__rsub__ as -self + other", "return Value(other) - self", "return -self + other"),
    ("__rtruediv__ via **-1", "return Value(other) / self", "return self**-1 * other"),
    (
        "hand backprop in another order",
        "g.s.grad = g.n.grad\n    g.b.grad = g.n.grad",
        "g.b.grad = g.n.grad\n    g.s.grad = 1.0 * g.n.grad",
    ),
]


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it: the same
# numbers for every input, so they stay correct.
EQUIVALENT_MUTANTS = {
    "value_hand_backprop line 5: Mult -> Div": "2 * n * L.grad / L.grad: L.grad is 1.0 here",
    "value_arithmetic line 19: Mult -> Div": "self / -1 is self * -1",
}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A)


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, name, old, new, cells):
    assert_catches(mutate(solution, old, new), A, cells)


def test_hard_coded_hand_backprop_fails_hidden_test_only(solution):
    numbers = """    g.n.grad, g.s.grad, g.b.grad = 1.0, 1.0, 1.0
    g.x1w1.grad, g.x2w2.grad = 1.0, 1.0
    g.x1.grad, g.w1.grad, g.x2.grad, g.w2.grad = -3.0, 2.0, 1.0, 0.0
"""
    cell = next(c for c in solution.cells if "def backprop_by_hand" in c.source)
    body = cell.source[cell.source.index("    ### BEGIN SOLUTION") :]
    failed = graded(mutate(solution, body, numbers), A)
    assert set(failed) == {HAND}
    assert failed[HAND].startswith("backprop_by_hand: ") and ".grad should be" in failed[HAND]


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    assert_passes(mutate(solution, old, new), A)


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, {ADD, HAND, ARITH, REFL})


# An exercise of several methods credits each its share (issue 29, class 4): (bug, old,
# new, exercise, share earned, the method the message names first). A method built on a
# broken sibling (``-`` on unary minus, ``/`` on ``**``) is checked on the course's.
SIBLINGS = [
    ("unary minus", "    return self * -1\n", "    return self * 1\n", ARITH, 0.75, "__neg__"),
    (
        "power rule",
        "self.grad += n * self.data ** (n - 1) * out.grad",
        "self.grad += n * self.data**n * out.grad",
        ARITH,
        0.75,
        "__pow__",
    ),
    ("no __mul__ gradient", "other.grad += self.data * out.grad", "pass", ADD, 0.5, "__mul__"),
    (
        "__radd__ and __rtruediv__ missing",
        "Value.__radd__ = __radd__\nValue.__rmul__ = __rmul__\nValue.__rsub__ = __rsub__\n"
        "Value.__rtruediv__ = __rtruediv__",
        "Value.__rmul__ = __rmul__\nValue.__rsub__ = __rsub__",
        REFL,
        0.5,
        "__radd__",
    ),
]


@pytest.mark.parametrize("name, old, new, cell, share, method", SIBLINGS, ids=ids(SIBLINGS))
def test_a_correct_method_keeps_its_share(solution, name, old, new, cell, share, method):
    failed = graded(mutate(solution, old, new), A)
    assert {c for c in failed if not c.startswith("cell ")} == {cell}, failed  # demos aside
    verdict = verdict_of(run_cells(mutate(solution, old, new), A, tests=False), A, cell)
    assert not verdict.passed and verdict.credit == pytest.approx(share), verdict
    assert verdict.message.startswith(f"`{method}`"), verdict.message
    assert "credited:" in verdict.message, verdict.message


# A slip in exercise 1's + or * with a plain number (an int, as the lesson's later code
# uses: self * -1, sum()) costs exercise 1's share, and only that: the hidden tests of
# the exercises built on them run on the course's + and *. Their visible checks run on
# the student's code and fail too: each says where it comes from (issue 42).
NUMBER_SLIPS = [
    ("__add__ without wrapping", ADD_WRAP, ADD_WRAP.split("\n")[1].strip(), "__add__"),
    ("__add__ wraps only floats", ADD_WRAP, ADD_WRAP.replace(WRAP, FLOATS_ONLY), "__add__"),
    ("__add__ wraps 0.0", ADD_WRAP, ADD_WRAP.replace("Value(other)", "Value(0.0)"), "__add__"),
    ("__mul__ wraps only floats", MUL_WRAP, MUL_WRAP.replace(WRAP, FLOATS_ONLY), "__mul__"),
]


@pytest.mark.parametrize("name, old, new, method", NUMBER_SLIPS, ids=ids(NUMBER_SLIPS))
def test_a_plain_number_slip_points_back_to_exercise_1(solution, name, old, new, method):
    nb = mutate(solution, old, new)
    seen = graded(nb, A, visible=True)
    for cell in (ADD, ARITH, REFL):
        assert cell in seen, seen
        assert f"comes from {method}, lesson 1's exercise 1" in seen[cell], seen[cell]
    failed = graded(nb, A)
    assert {c for c in failed if not c.startswith("cell ")} == {ADD}, failed  # demos aside
    assert f"`{method}`" in failed[ADD], failed[ADD]
