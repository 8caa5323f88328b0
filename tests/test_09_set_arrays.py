"""09_set_arrays (problem set 3, from scalars to arrays): the hidden tests pass correct
work, written any way, and catch the classic slips, each in the cell that grades the
broken exercise and only there, with a message that names the function and says what
the numbers suggest. The answers of the set's probe operations are believed only when
complete."""

import matplotlib
import pytest
from catalogue import (
    assert_catches,
    assert_passes,
    assert_short,
    find,
    flat,
    graded,
    hidden_message,
    ids,
    without_demos,
)
from helpers import (
    assert_blank_fails_each,
    mutate,
    run_cells,
)

from autograder.verdicts import answers
from autograder.verdicts import api as verdicts

matplotlib.use("Agg")  # the notebook draws a figure; no window while testing

A = "09_set_arrays"
COUNT, UNB, ADD, MATMUL, TANH_SUM, BACKWARD = (
    "arrays_test_count",
    "arrays_test_unbroadcast",
    "arrays_test_add",
    "arrays_test_matmul",
    "arrays_test_tanh_sum",
    "arrays_test_backward",
)
EXERCISES = {COUNT, UNB, ADD, MATMUL, TANH_SUM, BACKWARD}
NAMES = {
    COUNT: "count_nodes",
    UNB: "unbroadcast",
    ADD: "Tensor.__add__",
    MATMUL: "Tensor.__matmul__",
    TANH_SUM: "Tensor.",
    BACKWARD: "Tensor.backward",
}

UNBROADCAST_LOOPS = """\
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
"""
TOPOLOGICAL = """\
    order, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            for parent in node._prev:
                visit(parent)
            order.append(node)

    visit(self)
"""
SEED_AND_RUN = """\
    self.grad = np.ones_like(self.data)
    for node in reversed(order):
        node._backward()
"""
BREADTH_FIRST = """\
    self.grad = np.ones_like(self.data)
    queue, seen = [self], {self}
    while queue:
        node = queue.pop(0)
        node._backward()
        for parent in node._prev:
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
"""

# (description, old text, new text, the test cells that must fail)
BUGS = [
    (
        "count without the inputs",
        "return nin + parameters + sums + relus",
        "return parameters + sums + relus",
        {COUNT},
    ),
    ("count without the biases", "sum(n * (m + 1) for m, n", "sum(n * m for m, n", {COUNT}),
    (
        "count with weights and biases mixed up",
        "sum(n * (m + 1) for m, n",
        "sum((n + 1) * m for m, n",
        {COUNT},
    ),
    (
        "count with a relu in the last layer",
        "relus = sum(nouts[:-1])",
        "relus = sum(nouts)",
        {COUNT},
    ),
    ("count without relus", "relus = sum(nouts[:-1])", "relus = 0", {COUNT}),
    (
        "unfused count with the products only",
        "sums = sum(2 * m * n for m, n",
        "sums = sum(m * n for m, n",
        {COUNT},
    ),
    ("count ignores fused", "    if fused:\n", "    if True:\n", {COUNT}),
    (
        "count changes nouts",
        "    sizes = [nin, *nouts]\n",
        "    nouts.insert(0, nin)\n    sizes, nouts = nouts, nouts[1:]\n",
        {COUNT},
    ),
    (
        "unbroadcast without keepdims",
        "grad = grad.sum(axis=axis, keepdims=True)",
        "grad = grad.sum(axis=axis)",
        {UNB},
    ),
    (
        "unbroadcast takes the mean",
        "grad = grad.sum(axis=0)\n",
        "grad = grad.mean(axis=0)\n",
        {UNB},
    ),
    (
        "unbroadcast only drops leading axes",
        "    for axis, n in enumerate(shape):\n        if n == 1:\n"
        "            grad = grad.sum(axis=axis, keepdims=True)\n",
        "",
        {UNB},
    ),
    (
        "unbroadcast sums the last axes away",
        "grad = grad.sum(axis=0)\n",
        "grad = grad.sum(axis=-1)\n",
        {UNB},
    ),
    (
        "unbroadcast clears the grad it used",
        "    while grad.ndim > len(shape):\n",
        "    used = grad\n    grad = grad.copy()\n    used[...] = 0.0\n"
        "    while grad.ndim > len(shape):\n",
        {UNB},
    ),
    (
        "+ without unbroadcast for other",
        "other.grad += unbroadcast(out.grad, other.shape)",
        "other.grad += out.grad",
        {ADD},
    ),
    (
        "+ without unbroadcast for self",
        "self.grad += unbroadcast(out.grad, self.shape)",
        "self.grad += out.grad",
        {ADD},
    ),
    (
        "+ with = for +=",
        "self.grad += unbroadcast(out.grad, self.shape)",
        "self.grad = unbroadcast(out.grad, self.shape)",
        {ADD},
    ),
    (
        "+ grad takes the broadcast shape",
        "other.grad += unbroadcast(out.grad, other.shape)",
        "other.grad = other.grad + out.grad",
        {ADD},
    ),
    (
        "+ does not wrap numbers",
        "    other = other if isinstance(other, Tensor) else Tensor(other)\n"
        '    out = Tensor(self.data + other.data, (self, other), "+")\n',
        '    out = Tensor(self.data + other.data, (self, other), "+")\n',
        {ADD},
    ),
    (
        "+ forgets the other operand",
        "        other.grad += unbroadcast(out.grad, other.shape)\n",
        "",
        {ADD},
    ),
    (
        "+ adds in place",
        'out = Tensor(self.data + other.data, (self, other), "+")',
        'self.data += other.data\n    out = Tensor(self.data, (self, other), "+")',
        {ADD},
    ),
    (
        "@ without the transpose of B",
        "self.grad += out.grad @ other.data.T",
        "self.grad += out.grad @ other.data",
        {MATMUL},
    ),
    (
        "@ with B's gradient transposed",
        "other.grad += self.data.T @ out.grad",
        "other.grad += out.grad.T @ self.data",
        {MATMUL},
    ),
    (
        "@ without the transpose of A",
        "other.grad += self.data.T @ out.grad",
        "other.grad += self.data @ out.grad",
        {MATMUL},
    ),
    (
        "@ with = for +=",
        "other.grad += self.data.T @ out.grad",
        "other.grad = self.data.T @ out.grad",
        {MATMUL},
    ),
    (
        "@ forgets out.grad",
        "self.grad += out.grad @ other.data.T",
        "self.grad += np.ones_like(out.data) @ other.data.T",
        {MATMUL},
    ),
    (
        "@ element by element",
        'out = Tensor(self.data @ other.data, (self, other), "@")',
        'out = Tensor(self.data * other.data, (self, other), "@")',
        {MATMUL},
    ),
    (
        "tanh derivative from the input",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += (1 - self.data**2) * out.grad",
        {TANH_SUM},
    ),
    (
        "tanh without out.grad",
        "self.grad += (1 - t**2) * out.grad",
        "self.grad += 1 - t**2",
        {TANH_SUM},
    ),
    ("tanh with = for +=", "self.grad += (1 - t**2)", "self.grad = (1 - t**2)", {TANH_SUM}),
    (
        "sum without out.grad",
        "self.grad += np.ones_like(self.data) * out.grad",
        "self.grad += np.ones_like(self.data)",
        {TANH_SUM},
    ),
    (
        "sum with = for +=",
        "self.grad += np.ones_like(self.data) * out.grad",
        "self.grad = np.ones_like(self.data) * out.grad",
        {TANH_SUM},
    ),
    (
        "sum gradient from the data",
        "self.grad += np.ones_like(self.data) * out.grad",
        "self.grad += self.data * out.grad",
        {TANH_SUM},
    ),
    (
        "sum returns a plain number",
        'out = Tensor(self.data.sum(), (self,), "sum")',
        'out = Tensor(self.data.sum(), (self,), "sum")\n    return float(out.data)',
        {TANH_SUM},
    ),
    (
        "backward without a set of visited nodes",
        "        if node not in seen:\n",
        "        if True:\n",
        {BACKWARD},
    ),
    (
        "backward in topological order, not reversed",
        "for node in reversed(order):",
        "for node in order:",
        {BACKWARD},
    ),
    ("backward without the seed", "    self.grad = np.ones_like(self.data)\n", "", {BACKWARD}),
    (
        "backward seeds zeros",
        "self.grad = np.ones_like(self.data)",
        "self.grad = np.zeros_like(self.data)",
        {BACKWARD},
    ),
    (
        "backward appends before the parents",
        "            for parent in node._prev:\n                visit(parent)\n"
        "            order.append(node)\n",
        "            order.append(node)\n            for parent in node._prev:\n"
        "                visit(parent)\n",
        {BACKWARD},
    ),
    ("backward breadth-first", TOPOLOGICAL + SEED_AND_RUN, BREADTH_FIRST, {BACKWARD}),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "count with a loop over layers",
        "    sizes = [nin, *nouts]\n",
        "    total, prev = nin, nin\n"
        "    for i, n in enumerate(nouts):\n"
        "        total += n * (prev + 1) + (n if fused else 2 * n * prev)\n"
        "        total += n if i < len(nouts) - 1 else 0\n"
        "        prev = n\n"
        "    return total\n"
        "    sizes = [nin, *nouts]\n",
    ),
    (
        "count from the parameters and the neurons",
        "    sizes = [nin, *nouts]\n",
        "    weights = sum(a * b for a, b in zip([nin] + list(nouts), nouts))\n"
        "    neurons = sum(nouts)\n"
        "    ops = neurons if fused else 2 * weights\n"
        "    return float(nin + weights + neurons + ops + neurons - nouts[-1])\n"
        "    sizes = [nin, *nouts]\n",
    ),
    (
        "unbroadcast with tuples of axes",
        UNBROADCAST_LOOPS,
        "    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))\n"
        "    axes = tuple(i for i, n in enumerate(shape) if n == 1)\n"
        "    return grad.sum(axis=axes, keepdims=True) if axes else grad\n",
    ),
    (
        "unbroadcast by keepdims and reshape",
        UNBROADCAST_LOOPS,
        "    padded = (1,) * (grad.ndim - len(shape)) + tuple(shape)\n"
        "    axes = tuple(i for i, n in enumerate(padded) if n == 1)\n"
        "    return np.sum(grad, axis=axes, keepdims=True).reshape(shape)\n",
    ),
    (
        "+ with new arrays in the closure",
        "        self.grad += unbroadcast(out.grad, self.shape)\n"
        "        other.grad += unbroadcast(out.grad, other.shape)\n",
        "        self.grad = self.grad + unbroadcast(out.grad, self.data.shape)\n"
        "        other.grad = other.grad + unbroadcast(out.grad, other.data.shape)\n",
    ),
    (
        "+ with a plain number kept out of the graph",
        "    other = other if isinstance(other, Tensor) else Tensor(other)\n",
        "    if not isinstance(other, Tensor):\n"
        "        out = Tensor(self.data + other, (self,), '+')\n"
        "        out._backward = lambda: self.__dict__.update(\n"
        "            grad=self.grad + unbroadcast(out.grad, self.shape))\n"
        "        return out\n",
    ),
    (
        "@ with np.matmul and a transposed product",
        "        self.grad += out.grad @ other.data.T\n"
        "        other.grad += self.data.T @ out.grad\n",
        "        self.grad += np.matmul(out.grad, other.data.T)\n"
        "        other.grad += (out.grad.T @ self.data).T\n",
    ),
    (
        "@ with np.dot and new arrays",
        "        self.grad += out.grad @ other.data.T\n"
        "        other.grad += self.data.T @ out.grad\n",
        "        self.grad = self.grad + np.dot(out.grad, other.data.T)\n"
        "        other.grad = other.grad + np.dot(self.data.T, out.grad)\n",
    ),
    (
        "tanh from out.data, sum broadcast",
        "        self.grad += (1 - t**2) * out.grad\n",
        "        self.grad += (1 - out.data * out.data) * out.grad\n",
    ),
    (
        "sum with np.sum and out.grad broadcast",
        '    out = Tensor(self.data.sum(), (self,), "sum")\n\n    def _backward():\n'
        "        self.grad += np.ones_like(self.data) * out.grad\n",
        '    out = Tensor(np.sum(self.data), (self,), "sum")\n\n    def _backward():\n'
        "        self.grad += out.grad\n",
    ),
    (
        "backward with lesson 2's iterative sort",
        TOPOLOGICAL,
        "    order, seen, stack = [], {self}, [(self, iter(self._prev))]\n"
        "    while stack:\n"
        "        node, parents = stack[-1]\n"
        "        for parent in parents:\n"
        "            if parent not in seen:\n"
        "                seen.add(parent)\n"
        "                stack.append((parent, iter(parent._prev)))\n"
        "                break\n"
        "        else:\n"
        "            stack.pop()\n"
        "            order.append(node)\n",
    ),
    (
        "backward seeds the number 1",
        "self.grad = np.ones_like(self.data)",
        "self.grad = 1.0",
    ),
    (
        "backward by counting the uses (Kahn)",
        TOPOLOGICAL + SEED_AND_RUN,
        "    uses, stack, seen = {}, [self], {self}\n"
        "    while stack:\n"
        "        for parent in stack.pop()._prev:\n"
        "            uses[parent] = uses.get(parent, 0) + 1\n"
        "            if parent not in seen:\n"
        "                seen.add(parent)\n"
        "                stack.append(parent)\n"
        "    self.grad = np.ones(self.shape)\n"
        "    ready = [self]\n"
        "    while ready:\n"
        "        node = ready.pop()\n"
        "        node._backward()\n"
        "        for parent in node._prev:\n"
        "            uses[parent] -= 1\n"
        "            if uses[parent] == 0:\n"
        "                ready.append(parent)\n",
    ),
]

# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it.
EQUIVALENT_MUTANTS: dict[str, str] = {}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A, visible=True)


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, name, old, new, cells):
    nb = mutate(solution, old, new)
    assert_catches(nb, A, cells, names={cell: (name,) for cell, name in NAMES.items()})
    for message in graded(without_demos(nb), A, visible=True).values():
        assert_short(message)


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    assert_passes(mutate(solution, old, new), A)


def bug(name: str) -> tuple[str, str]:
    return find(BUGS, name)[1:3]


MESSAGES = [
    ("count without the inputs", COUNT, "leaves out the nin input nodes"),
    ("count with a relu in the last layer", COUNT, "the last layer is linear"),
    ("count without the biases", COUNT, "leaves out the biases"),
    ("unfused count with the products only", COUNT, "a product and an addition"),
    ("count ignores fused", COUNT, "ignores fused=False"),
    ("count changes nouts", COUNT, "changed the list nouts"),
    ("unbroadcast without keepdims", UNB, "keepdims=True"),
    ("unbroadcast takes the mean", UNB, "that is the mean"),
    ("unbroadcast clears the grad it used", UNB, "changed the array grad"),
    ("+ without unbroadcast for other", ADD, "unbroadcast(out.grad"),
    ("+ with = for +=", ADD, "+="),
    ("+ grad takes the broadcast shape", ADD, "sum out.grad over the broadcast axes"),
    ("+ does not wrap numbers", ADD, "wrap a plain number (or a numpy array) in a Tensor"),
    ("+ adds in place", ADD, "changed the data of its input"),
    ("@ without the transpose of B", MATMUL, "out.grad @ B.T"),
    ("@ with B's gradient transposed", MATMUL, "A.T @ out.grad"),
    ("@ without the transpose of A", MATMUL, "A is not transposed"),
    ("@ forgets out.grad", MATMUL, "multiply by out.grad"),
    ("tanh derivative from the input", TANH_SUM, "uses the input"),
    ("tanh without out.grad", TANH_SUM, "multiply by out.grad"),
    ("sum without out.grad", TANH_SUM, "multiply by out.grad"),
    ("sum gradient from the data", TANH_SUM, "is 1, not the element"),
    ("sum returns a plain number", TANH_SUM, "should return a Tensor"),
    ("backward without a set of visited nodes", BACKWARD, "visit each node once"),
    ("backward in topological order, not reversed", BACKWARD, "reverse topological order"),
    ("backward breadth-first", BACKWARD, "reverse topological order"),
    ("backward without the seed", BACKWARD, "ones of self's shape"),
]


@pytest.mark.parametrize("name, cell, words", MESSAGES, ids=ids(MESSAGES))
def test_hidden_messages_say_what_is_wrong(solution, name, cell, words):
    message = hidden_message(mutate(solution, *bug(name)), A, cell)
    assert words in flat(message), message


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(seed, marks=pytest.mark.mutation) for seed in range(1, 6))]
)
def test_the_slips_are_caught_on_every_seed(solution, seed):
    """A sample of slips whose evidence depends on the drawn shapes and numbers; a broken
    unbroadcast costs its own exercise only (+ runs on the course's)."""
    for name in (
        "@ without the transpose of B",
        "backward breadth-first",
        "count without relus",
        "unbroadcast takes the mean",
    ):
        (_, old, new, cells) = next(b for b in BUGS if b[0] == name)
        assert set(graded(mutate(solution, old, new), A, seed=seed)) == cells, name


# ---- trust: the set's operations -----------------------------------------------------------

ARRAY = {"shape": [2], "flat": [1.0, 2.0]}
CLOSURE_CASE = {"expr": "a + b", "a": ARRAY, "b": ARRAY, "out_shape": [2]}
CLOSURE_OK = {
    "is_tensor": True,
    "data": ARRAY,
    "changed": False,
    "prev": [True, True],
    "a_grad": ARRAY,
    "b_grad": ARRAY,
}
GOOD = {
    "sa_unbroadcast": (
        {"cases": [{"grad": ARRAY, "shape": []}]},
        [{"result": {"shape": [], "flat": [3.0]}, "changed": False}],
    ),
    "sa_closure": (
        {"cases": [CLOSURE_CASE]},
        [CLOSURE_OK],
    ),
    "sa_backward": (
        {"graphs": [{"leaves": [ARRAY], "nodes": [{"kind": "lin", "parents": [[0, 2.0]]}]}]},
        [{"grads": [ARRAY], "ran": [1]}],
    ),
}
BAD = [
    ("sa_unbroadcast", [{"result": {"shape": [2], "flat": [3.0]}, "changed": False}]),
    ("sa_unbroadcast", [{"result": {"shape": [], "flat": [3.0]}}]),
    ("sa_unbroadcast", []),
    ("sa_closure", [{"is_tensor": True, "data": ARRAY, "changed": False, "a_grad": ARRAY}]),
    ("sa_closure", [{"is_tensor": True, "data": ARRAY, "changed": False}]),
    ("sa_closure", [{"is_tensor": True, "data": ARRAY, "changed": 0, "a_grad": ARRAY}]),
    ("sa_closure", [{**CLOSURE_OK, "data": {"shape": [3], "flat": [1.0, 2.0, 3.0]}}]),
    ("sa_closure", [{**CLOSURE_OK, "b_grad": {"shape": [1], "flat": []}}]),
    ("sa_closure", [{k: v for k, v in CLOSURE_OK.items() if k != "prev"}]),
    ("sa_closure", [{**CLOSURE_OK, "prev": [True, 1]}]),
    ("sa_backward", [{"grads": [], "ran": [1]}]),
    ("sa_backward", [{"grads": [ARRAY], "ran": [0]}]),
    ("sa_backward", [{"grads": [ARRAY]}]),
    ("sa_backward", [{"grads": [{"shape": [2], "flat": [1.0, "2"]}], "ran": []}]),
]


@pytest.mark.parametrize("op", sorted(GOOD))
def test_a_complete_answer_of_each_operation_is_believed(op):
    args, result = GOOD[op]
    assert answers.problem(op, args, result) is None


@pytest.mark.parametrize("op, result", BAD, ids=[f"{op}-{i}" for i, (op, _) in enumerate(BAD)])
def test_an_incomplete_answer_is_wrong_never_agreement(op, result):
    args, _ = GOOD[op]
    assert answers.problem(op, args, result) is not None


def test_every_honest_answer_has_its_operations_shape(solution):
    """The probe's own answers on the solution pass the shape checks, with no flag."""
    ns = run_cells(solution, A, tests=False)
    for cell in sorted(EXERCISES):
        kernel = verdicts.Kernel(verdicts.local_ask(ns), verdicts.cell_seed(7, cell), 30)
        result = verdicts.verdict(A, cell, kernel)
        assert result.passed and not result.flag, (cell, result)


def test_every_given_is_claimed_by_its_exercise():
    import importlib

    module = importlib.import_module(f"autograder.verdicts.hidden.{A}")
    given = {g.target for g in vars(module).values() if isinstance(g, verdicts.Given)}
    claimed = {t for targets in module.EXERCISES.values() for t in targets}
    assert given and given <= claimed
    assert set(module.EXERCISES) <= set(module.TESTS)
