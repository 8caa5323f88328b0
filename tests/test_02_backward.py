"""Lesson 02 (backward and topological sort): the hidden tests pass correct work, written
any way, and catch the classic bugs, each in the cell that grades the broken exercise and
only there: backward() and zero_grad are graded with the course's topological_order,
grad_check with the course's backward() and numerical_grad."""

import importlib
import itertools
import random

import pytest
from catalogue import (
    assert_passes,
    assert_short,
    changed,
    changes_of,
    find,
    graded,
    hidden_message,
    ids,
)
from helpers import (
    SOURCE,
    assert_blank_fails_each,
    mutate,
    read,
    run_cells,
    verdict_of,
)

A = "02_backward"
TOPO, BACK, ZERO, NUM, CHECK, ITER = (
    "backward_test_topological_order",
    "backward_test_backward",
    "backward_test_zero_grad",
    "backward_test_numerical_grad",
    "backward_test_grad_check",
    "backward_test_topological_order_iterative",
)
EXERCISES = {TOPO, BACK, ZERO, NUM, CHECK, ITER}
NAMES = {  # the function each cell grades, which the first line of its message names
    TOPO: "topological_order",
    BACK: "backward()",
    ZERO: "zero_grad",
    NUM: "numerical_grad",
    CHECK: "grad_check",
    ITER: "topological_order_iterative",
}
DEEP_DEMO = "deep.backward()"  # the demo after exercise 6: backward() on a 10,000-deep chain
ENGINE_DEMO = "checks = {"  # the demo after exercise 5: grad_check on the whole engine

# ---- the solution's code, and what the bugs and variants replace in it --------------------

VISIT = """\
        if node not in visited:
            visited.add(node)
            for parent in node._prev:
                visit(parent)
            order.append(node)
"""
BACKWARD = """\
    self.grad = 1.0
    for node in reversed(topological_order(self)):
        node._backward()
"""
CENTRAL = """\
        down[i] -= h
        grads.append((f(*up) - f(*down)) / (2 * h))
"""
ITERATIVE = """\
    order = []
    visited = set()
    stack = [(root, False)]  # (node, are its parents done?)
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        elif node not in visited:
            visited.add(node)
            stack.append((node, True))  # comes off again once its parents are done
            for parent in node._prev:
                stack.append((parent, False))
    return order
"""
ITERATORS = """\
    order = []
    visited = {root}
    stack = [(root, iter(root._prev))]  # a node, and the parents it has yet to visit
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if parent not in visited:
                visited.add(parent)
                stack.append((parent, iter(parent._prev)))
                break
        else:  # every parent is done
            stack.pop()
            order.append(node)
    return order
"""
RETURN = """\
    return max(
        abs(v.grad - n) / max(abs(v.grad), abs(n), 1e-12) for v, n in zip(values, numerical)
    )
"""
RECURSIVE = """\
    order, visited = [], set()

    def visit(node):
        if node not in visited:
            visited.add(node)
            for parent in node._prev:
                visit(parent)
            order.append(node)

    visit(root)
    return order
"""

# (description, [(old, new), ...], the test cells that must fail)
BUGS = [
    (
        "topological_order without a visited set",
        [
            (
                VISIT,
                "        for parent in node._prev:\n            visit(parent)\n"
                "        order.append(node)\n",
            )
        ],
        {TOPO},
    ),
    (
        "topological_order appends a node before its parents",
        [
            (
                VISIT,
                VISIT.replace("            order.append(node)\n", "").replace(
                    "            for parent",
                    "            order.append(node)\n            for parent",
                ),
            )
        ],
        {TOPO},
    ),
    (
        "topological_order leaves out the leaves",
        [
            (
                "            order.append(node)\n\n    visit(root)",
                "            if node._prev:\n                order.append(node)\n\n    visit(root)",
            )
        ],
        {TOPO},
    ),
    (
        "topological_order with mutable default arguments",
        [
            (
                "def topological_order(root):",
                "def topological_order(root, order=[], visited=set()):",
            ),
            ("    order = []\n    visited = set()\n\n    def visit", "    def visit"),
        ],
        {TOPO},
    ),
    (
        "topological_order borrowed from coursekit",
        [
            (VISIT, "        pass\n"),
            ("    visit(root)\n    return order", "    return graph_nodes(root)"),
        ],
        {TOPO},
    ),
    (
        "backward in topological order, not reversed",
        [
            (
                "for node in reversed(topological_order(self)):",
                "for node in topological_order(self):",
            )
        ],
        {BACK},
    ),
    (
        "backward without the seed",
        [(BACKWARD, BACKWARD.replace("    self.grad = 1.0\n", ""))],
        {BACK},
    ),
    (
        "backward seeds after the loop",
        [(BACKWARD, BACKWARD.replace("    self.grad = 1.0\n", "") + "    self.grad = 1.0\n")],
        {BACK},
    ),
    ("backward adds the seed (+= 1.0)", [(BACKWARD, BACKWARD.replace("= 1.0", "+= 1.0"))], {BACK}),
    (
        "backward borrowed from coursekit",
        [(BACKWARD, "    run_closures(topological_order(self))\n")],
        {BACK},
    ),
    (
        "zero_grad zeroes only the leaves",
        [("        node.grad = 0.0", "        if not node._prev:\n            node.grad = 0.0")],
        {ZERO},
    ),
    (
        "zero_grad zeroes only the output",
        [("        node.grad = 0.0", "        root.grad = 0.0")],
        {ZERO},
    ),
    (
        "numerical_grad with one-sided differences",
        [(CENTRAL, "        grads.append((f(*up) - f(*down)) / h)\n")],
        {NUM},
    ),
    (
        "numerical_grad one-sided with a small h = 1e-7",
        [
            (CENTRAL, "        grads.append((f(*up) - f(*down)) / h)\n"),
            ("def numerical_grad(f, xs, h=1e-6):", "def numerical_grad(f, xs, h=1e-7):"),
        ],
        {NUM},
    ),
    (
        "numerical_grad divides by h, not 2h",
        [("(f(*up) - f(*down)) / (2 * h)", "(f(*up) - f(*down)) / h")],
        {NUM},
    ),
    (
        "numerical_grad with the sign flipped",
        [("(f(*up) - f(*down)) / (2 * h)", "(f(*down) - f(*up)) / (2 * h)")],
        {NUM},
    ),
    (
        "numerical_grad moves xs itself (no copies)",
        [("        up = list(xs)\n        down = list(xs)\n", "        up = down = xs\n")],
        {NUM},
    ),
    ("grad_check without abs()", [("abs(v.grad - n) / max(", "(v.grad - n) / max(")], {CHECK}),
    (
        "grad_check sums instead of taking the max",
        [("    return max(\n", "    return sum(\n")],
        {CHECK},
    ),
    (
        "grad_check pairs the gradients up wrongly",
        [("zip(values, numerical)", "zip(values, reversed(numerical))")],
        {CHECK},
    ),
    (
        "topological_order_iterative by recursion",
        [(ITERATIVE, RECURSIVE)],
        {ITER, DEEP_DEMO},
    ),
    (
        "topological_order_iterative without a visited set",
        [("        elif node not in visited:\n            visited.add(node)\n", "        else:\n")],
        {ITER},
    ),
    (
        "topological_order_iterative appends a node when it is pushed",
        [
            (
                ITERATIVE,
                """\
    order, visited, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node not in visited:
            visited.add(node)
            order.append(node)
            stack.extend(node._prev)
    return order
""",
            )
        ],
        {ITER},
    ),
    (
        "numerical_grad ignores the h it is given",
        [
            (
                "        up[i] += h\n        down[i] -= h\n",
                "        up[i] += 1e-6\n        down[i] -= 1e-6\n",
            ),
            (
                "        grads.append((f(*up) - f(*down)) / (2 * h))",
                "        grads.append((f(*up) - f(*down)) / (2 * 1e-6))",
            ),
        ],
        {NUM},
    ),
    (
        "numerical_grad nudges xs in place and puts it back (rounding changes it)",
        [
            (
                "        up = list(xs)\n        down = list(xs)\n        up[i] += h\n"
                "        down[i] -= h\n        grads.append((f(*up) - f(*down)) / (2 * h))\n",
                "        xs[i] += h\n        up = f(*xs)\n        xs[i] -= 2 * h\n"
                "        down = f(*xs)\n        xs[i] += h\n"
                "        grads.append((up - down) / (2 * h))\n",
            )
        ],
        {NUM},
    ),
    (
        "topological_order_iterative by recursion, with the recursion limit raised",
        [(ITERATIVE, "    import sys\n\n    sys.setrecursionlimit(100_000)\n" + RECURSIVE)],
        {ITER},
    ),
    # grad_check: the relative error, and every input's (issue 24: the hidden test once
    # saw mostly one wrong input per function, and the sum of the errors passed it)
    (
        "grad_check returns the absolute difference",
        [(RETURN, "    return max(abs(v.grad - n) for v, n in zip(values, numerical))\n")],
        {CHECK},
    ),
    (
        "grad_check divides by the engine's gradient only",
        [("max(abs(v.grad), abs(n), 1e-12)", "max(abs(v.grad), 1e-12)")],
        {CHECK},
    ),
    (
        "grad_check divides by the numerical gradient only",
        [("max(abs(v.grad), abs(n), 1e-12)", "max(abs(n), 1e-12)")],
        {CHECK},
    ),
    (
        "grad_check divides by |engine| + |numerical|",
        [("max(abs(v.grad), abs(n), 1e-12)", "max(abs(v.grad) + abs(n), 1e-12)")],
        {CHECK},
    ),
    (
        "grad_check divides by |max(engine, numerical)|",
        [("max(abs(v.grad), abs(n), 1e-12)", "max(abs(max(v.grad, n)), 1e-12)")],
        {CHECK},
    ),
    (
        "grad_check without the 1e-12 (0 / 0 where both are 0)",
        [("max(abs(v.grad), abs(n), 1e-12)", "max(abs(v.grad), abs(n))")],
        {CHECK, ENGINE_DEMO},  # 2 - a * (3 - b) does not use c
    ),
    (
        "grad_check divides by at least 1",
        [("max(abs(v.grad), abs(n), 1e-12)", "max(abs(v.grad), abs(n), 1.0)")],
        {CHECK},
    ),
    (
        "grad_check looks at the first input only",
        [
            (
                RETURN,
                "    v, n = values[0], numerical[0]\n"
                "    return abs(v.grad - n) / max(abs(v.grad), abs(n), 1e-12)\n",
            )
        ],
        {CHECK},
    ),
    (
        "grad_check keeps the last input's error (a loop that overwrites)",
        [
            (
                RETURN,
                "    for v, n in zip(values, numerical):\n"
                "        worst = abs(v.grad - n) / max(abs(v.grad), abs(n), 1e-12)\n"
                "    return worst\n",
            )
        ],
        {CHECK},
    ),
    (
        "grad_check skips the last input (range(len(xs) - 1))",
        [
            (
                RETURN,
                "    worst = 0.0\n"
                "    for i in range(len(xs) - 1):\n"
                "        a, n = values[i].grad, numerical[i]\n"
                "        worst = max(worst, abs(a - n) / max(abs(a), abs(n), 1e-12))\n"
                "    return worst\n",
            )
        ],
        {CHECK},
    ),
    (
        "grad_check skips the first input (range(1, len(xs)))",
        [
            (
                RETURN,
                "    worst = 0.0\n"
                "    for i in range(1, len(xs)):\n"
                "        a, n = values[i].grad, numerical[i]\n"
                "        worst = max(worst, abs(a - n) / max(abs(a), abs(n), 1e-12))\n"
                "    return worst\n",
            )
        ],
        {CHECK},
    ),
    (
        "grad_check returns the mean error",
        [
            (
                RETURN,
                "    errors = [abs(v.grad - n) / max(abs(v.grad), abs(n), 1e-12)\n"
                "              for v, n in zip(values, numerical)]\n"
                "    return sum(errors) / len(errors)\n",
            )
        ],
        {CHECK},
    ),
    (
        "grad_check returns the smallest error",
        [("    return max(\n", "    return min(\n")],
        {CHECK},
    ),
    (
        "grad_check returns every error (a list)",
        [
            (
                RETURN,
                "    return [\n"
                "        abs(v.grad - n) / max(abs(v.grad), abs(n), 1e-12)\n"
                "        for v, n in zip(values, numerical)\n"
                "    ]\n",
            )
        ],
        {CHECK, ENGINE_DEMO},
    ),
    (
        "grad_check divides the largest difference by the largest gradient",
        [
            (
                RETURN,
                "    worst = max(abs(v.grad - n) for v, n in zip(values, numerical))\n"
                "    size = max(max(abs(v.grad), abs(n)) for v, n in zip(values, numerical))\n"
                "    return worst / max(size, 1e-12)\n",
            )
        ],
        {CHECK},
    ),
    # topological_order_iterative: the stack of pairs
    (
        "topological_order_iterative pushes (node, True) after its parents",
        [
            (
                "            stack.append((node, True))  # comes off again once its parents are"
                " done\n"
                "            for parent in node._prev:\n"
                "                stack.append((parent, False))\n",
                "            for parent in node._prev:\n"
                "                stack.append((parent, False))\n"
                "            stack.append((node, True))\n",
            )
        ],
        {ITER},
    ),
    (
        "topological_order_iterative marks nodes visited when they are pushed",
        [
            (
                ITERATIVE,
                """\
    order, visited, stack = [], {root}, [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        else:
            stack.append((node, True))
            for parent in node._prev:
                if parent not in visited:
                    visited.add(parent)
                    stack.append((parent, False))
    return order
""",
            )
        ],
        {ITER},
    ),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "visited set of ids",
        [
            (
                VISIT,
                VISIT.replace("node not in visited", "id(node) not in visited").replace(
                    "visited.add(node)", "visited.add(id(node))"
                ),
            )
        ],
    ),
    (
        "parents in another order (another valid order)",
        [
            (
                "            for parent in node._prev:\n                visit(parent)",
                "            for parent in sorted(node._prev, key=lambda p: -p.data):\n"
                "                visit(parent)",
            )
        ],
    ),
    (
        "topological_order by Kahn's algorithm",
        [
            (VISIT, "        pass\n"),
            (
                "    visit(root)\n    return order",
                """\
    nodes, stack = {id(root): root}, [root]
    while stack:
        for parent in stack.pop()._prev:
            if id(parent) not in nodes:
                nodes[id(parent)] = parent
                stack.append(parent)
    waiting = {key: len(node._prev) for key, node in nodes.items()}
    children = {key: [] for key in nodes}
    for node in nodes.values():
        for parent in node._prev:
            children[id(parent)].append(node)
    ready = [node for node in nodes.values() if not node._prev]
    while ready:
        node = ready.pop()
        order.append(node)
        for child in children[id(node)]:
            waiting[id(child)] -= 1
            if waiting[id(child)] == 0:
                ready.append(child)
    return order""",
            ),
        ],
    ),
    (
        "topological_order with a helper that takes the list and set",
        [
            (
                "def topological_order(root):",
                """\
def _visit(node, order, seen):
    if id(node) in seen:
        return
    seen.add(id(node))
    for parent in node._prev:
        _visit(parent, order, seen)
    order.append(node)


def topological_order(root):""",
            ),
            (VISIT, "        pass\n"),
            (
                "    visit(root)\n    return order",
                "    _visit(root, order, visited)\n    return order",
            ),
        ],
    ),
    (
        "backward with slicing",
        [("reversed(topological_order(self))", "topological_order(self)[::-1]")],
    ),
    (
        "backward popping from the order",
        [
            (
                BACKWARD,
                "    self.grad = 1.0\n    order = topological_order(self)\n"
                "    while order:\n        order.pop()._backward()\n",
            )
        ],
    ),
    (
        "backward zeroing inner nodes, then adding the seed (like the reference)",
        [
            (
                BACKWARD,
                """\
    order = topological_order(self)
    for node in order:
        if node._prev:
            node.grad = 0.0
    self.grad += 1.0
    for node in reversed(order):
        node._backward()
""",
            )
        ],
    ),
    ("zero_grad with int 0", [("        node.grad = 0.0", "        node.grad = 0")]),
    (
        "zero_grad with its own walk",
        [
            (
                "    for node in topological_order(root):\n        node.grad = 0.0",
                """\
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            node.grad = 0.0
            stack.extend(node._prev)""",
            )
        ],
    ),
    (
        "numerical_grad with h = 1e-4",
        [("def numerical_grad(f, xs, h=1e-6):", "def numerical_grad(f, xs, h=1e-4):")],
    ),
    (
        "numerical_grad with h = 1e-7",
        [("def numerical_grad(f, xs, h=1e-6):", "def numerical_grad(f, xs, h=1e-7):")],
    ),
    (
        "numerical_grad by a five-point stencil",
        [
            (
                CENTRAL,
                """\
        down[i] -= h
        up2, down2 = list(xs), list(xs)
        up2[i] += 2 * h
        down2[i] -= 2 * h
        grads.append((8 * (f(*up) - f(*down)) - (f(*up2) - f(*down2))) / (12 * h))
""",
            )
        ],
    ),
    (
        "numerical_grad moving xs in place and restoring it",
        [
            (
                "    grads = []\n    for i in range(len(xs)):",
                """\
    grads = []
    for i in range(len(xs)):
        old = xs[i]
        xs[i] = old + h
        high = f(*xs)
        xs[i] = old - h
        low = f(*xs)
        xs[i] = old
        grads.append((high - low) / (2 * h))
    return grads
    for i in range(len(xs)):""",
            )
        ],
    ),
    (
        "numerical_grad as a comprehension with slices",
        [
            (
                "    grads = []\n    for i in range(len(xs)):",
                """\
    return [
        (f(*xs[:i], xs[i] + h, *xs[i + 1 :]) - f(*xs[:i], xs[i] - h, *xs[i + 1 :])) / (2 * h)
        for i in range(len(xs))
    ]
    for i in range(len(xs)):""",
            )
        ],
    ),
    (
        "grad_check with a loop, numerical gradients first",
        [
            (
                "    values = [Value(x) for x in xs]\n    f(*values).backward()",
                """\
    numeric = numerical_grad(f, xs)
    leaves = [Value(x) for x in xs]
    f(*leaves).backward()
    worst = 0.0
    for leaf, n in zip(leaves, numeric):
        worst = max(worst, abs(leaf.grad - n) / max(abs(leaf.grad), abs(n), 1e-12))
    return worst
    values = [Value(x) for x in xs]
    f(*values).backward()""",
            )
        ],
    ),
    (
        "grad_check with a relative_error helper, as problem set 1 has",
        [
            (
                "def grad_check(f, xs):",
                """\
def relative_error(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def grad_check(f, xs):""",
            ),
            (
                RETURN,
                "    errors = [relative_error(v.grad, n) for v, n in zip(values, numerical)]\n"
                "    return max(errors)\n",
            ),
        ],
    ),
    (
        "grad_check with a smaller guard, 1e-15, and the numbers swapped",
        [
            (
                "abs(v.grad - n) / max(abs(v.grad), abs(n), 1e-12)",
                "abs(n - v.grad) / max(1e-15, abs(n), abs(v.grad))",
            )
        ],
    ),
    (
        "grad_check that returns 0.0 where both gradients are 0",
        [
            (
                RETURN,
                "    worst = 0.0\n"
                "    for v, n in zip(values, numerical):\n"
                "        if v.grad != 0 or n != 0:\n"
                "            worst = max(worst, abs(v.grad - n) / max(abs(v.grad), abs(n)))\n"
                "    return worst\n",
            )
        ],
    ),
    (
        "topological_order_iterative with (node, iterator of parents) pairs",
        [(ITERATIVE, ITERATORS)],
    ),
    (
        "topological_order_iterative with pairs, visited parents not pushed",
        [
            (
                ITERATIVE,
                """\
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            stack.extend((p, False) for p in node._prev if p not in seen)
    return order
""",
            )
        ],
    ),
    (
        "topological_order_iterative: children-first search, reversed",
        [
            (
                ITERATIVE,
                """\
    # a node may go last only once all of its users are placed: count them first
    users, stack, seen = {}, [root], {id(root)}
    while stack:
        for parent in stack.pop()._prev:
            users[id(parent)] = users.get(id(parent), 0) + 1
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    backwards, ready = [], [root]
    while ready:
        node = ready.pop()
        backwards.append(node)
        for parent in node._prev:
            users[id(parent)] -= 1
            if users[id(parent)] == 0:
                ready.append(parent)
    return backwards[::-1]
""",
            )
        ],
    ),
]


KAHN = next(changes for name, changes in VARIANTS if "Kahn" in name)


apply = changed  # a notebook with a row's changes made


def bug(name):
    """The changes of the bug called ``name`` in BUGS."""
    return changes_of(find(BUGS, name))


def cell_names(nb, failed):
    """Failed cells by grade id, and the demos (ungraded cells) by DEEP_DEMO, ENGINE_DEMO."""
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    demos = {
        next(f"cell {i}" for i in code if demo in nb.cells[i].source): demo
        for demo in (DEEP_DEMO, ENGINE_DEMO)
    }
    return {demos.get(name, name) for name in failed}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A)


@pytest.mark.parametrize("name, changes, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, name, changes, cells):
    """Each slip fails exactly its own exercise's cell, with a message whose first line
    names the function, in lines under 90."""
    nb = changed(solution, changes)
    failed = graded(nb, A)
    assert cell_names(nb, failed) == cells, failed
    for cell, message in failed.items():
        assert_short(message)
        if cell in NAMES:
            assert NAMES[cell] in message.splitlines()[0], message


GRAD_CHECK_SLIPS = [b for b in BUGS if b[0].startswith("grad_check")]
DRAWS = [  # grad_check's draws: the first on every change, the rest in the mutation lane
    pytest.param((0,), id="draw 0"),
    pytest.param((1, 2, 3, 4, 5), id="draws 1-5", marks=pytest.mark.mutation),
]


@pytest.mark.parametrize("seeds", DRAWS)
@pytest.mark.parametrize("name, changes, cells", GRAD_CHECK_SLIPS, ids=ids(GRAD_CHECK_SLIPS))
def test_grad_check_slips_are_caught_whatever_the_draw(solution, name, changes, cells, seeds):
    """grad_check's hidden test draws new functions for every submission: each slip fails
    on every draw, not only on the suite's (a slip that looks at some inputs only, or adds
    their errors up, once passed one draw in four)."""
    ns = run_cells(changed(solution, changes), A, until="backward_grad_check", tests=False)
    passed = [seed for seed in seeds if verdict_of(ns, A, CHECK, seed).passed]
    assert passed == [], f"{name} passes with the seeds {passed}"


def test_grad_check_cases_put_the_wrong_inputs_everywhere():
    """The functions grad_check is graded on: with the wrong gradient at the first input,
    in the middle, at the last, at several (each off by a different amount) and at none,
    gradients from about 1e-7 to 1e4, and an input that f does not use."""
    gc = importlib.import_module("autograder.verdicts.hidden.gradcheck")
    fixed = gc.fixed_cases()
    assert None not in fixed
    assert [c.off for c in fixed] == [[], [1], [1], [1], []]
    assert fixed[4].pairs[1] == (0.0, 0.0)  # x1 unused: 0 against 0
    sizes = []
    for seed in range(5):
        rng = random.Random(seed)
        for off in gc.OFF_PATTERNS:
            case = gc.separable_case(rng, off)
            assert case.off == list(off), (off, case.errors)
            wrong = sorted(case.errors[i] for i in off)
            assert all(b > 1.05 * a for a, b in itertools.pairwise(wrong))
            sizes += [max(abs(a), abs(b)) for a, b in case.pairs]
    assert min(sizes) < 1e-3 and max(sizes) > 1e3


def test_visited_by_data_misses_twin_nodes(solution):
    """Two different nodes with equal data: a search that remembers data, not nodes, skips
    one. Only the sort's own cell notices: the others use the course's sort."""
    nb = mutate(
        solution,
        "        if node not in visited:\n            visited.add(node)\n",
        "        if node.data not in visited:\n            visited.add(node.data)\n",
    )
    failed = graded(nb, A)
    assert set(failed) == {TOPO}, failed


def test_messages_say_what_is_wrong(solution):
    def message(changes, cell):  # the catalogue's run of the bug, read again
        return hidden_message(changed(solution, changes), A, cell)

    assert "twice" in message(bug("topological_order without a visited set"), TOPO)
    assert "before its parent" in message(
        bug("topological_order appends a node before its parents"), TOPO
    )
    assert "leaves out" in message(bug("topological_order leaves out the leaves"), TOPO)
    mutable = message(bug("topological_order with mutable default arguments"), TOPO)
    assert "earlier call" in mutable or "graph" in mutable
    assert "graph_nodes" in message(bug("topological_order borrowed from coursekit"), TOPO)
    assert "not add 1.0" in message(bug("backward adds the seed (+= 1.0)"), BACK)
    assert "run_closures" in message(bug("backward borrowed from coursekit"), BACK)
    assert "on the inner node" in message(bug("zero_grad zeroes only the leaves"), ZERO)
    assert "ignores h" in message(bug("numerical_grad ignores the h it is given"), NUM)
    in_place = bug("numerical_grad nudges xs in place and puts it back (rounding changes it)")
    assert "changed the list xs" in message(in_place, NUM)
    recursion = message(bug("topological_order_iterative by recursion"), ITER)
    assert "recursion limit" in recursion and "\n" not in recursion and len(recursion) < 90
    raised = bug("topological_order_iterative by recursion, with the recursion limit raised")
    assert "changed the recursion limit" in message(raised, ITER)


GRAD_CHECK_HINTS = [
    ("grad_check returns the absolute difference", "RELATIVE error"),
    ("grad_check divides by the engine's gradient only", "the larger of |engine| and"),
    ("grad_check divides by the numerical gradient only", "the larger of |engine| and"),
    ("grad_check divides by |engine| + |numerical|", "not the sum"),
    ("grad_check divides by |max(engine, numerical)|", "not |max(engine, numerical)|"),
    ("grad_check without the 1e-12 (0 / 0 where both are 0)", "which is never 0"),
    ("grad_check divides by at least 1", "only avoids 0/0"),
    ("grad_check looks at the first input only", "LARGEST relative error"),
    ("grad_check keeps the last input's error (a loop that overwrites)", "LARGEST"),
    ("grad_check skips the last input (range(len(xs) - 1))", "LARGEST"),
    ("grad_check skips the first input (range(1, len(xs)))", "LARGEST"),
    ("grad_check sums instead of taking the max", "LARGEST relative error"),
    ("grad_check returns the mean error", "LARGEST relative error"),
    ("grad_check returns every error (a list)", "one number"),
    ("grad_check without abs()", "never negative"),
    ("grad_check divides the largest difference by the largest gradient", "each input's"),
]


@pytest.mark.parametrize("name, hint", GRAD_CHECK_HINTS, ids=ids(GRAD_CHECK_HINTS))
def test_grad_check_messages_say_what_is_wrong(solution, name, hint):
    """grad_check's message names it, shows expected and got, where, and the slip."""
    message = hidden_message(changed(solution, bug(name)), A, CHECK)
    assert message.startswith("grad_check(f, xs) "), message
    assert "\nf = " in message and "\nat x0=" in message, message
    assert hint in message, message


def test_hidden_checks_called_directly():
    """Bugs that the visible checks cannot see, and the messages they get."""
    ns = run_cells(read(SOURCE, A), A, until="engine")

    def one_sided(f, xs, h=1e-7):  # passes x*y + x and x**3, fails steep bowls
        return [(f(*xs[:i], x + h, *xs[i + 1 :]) - f(*xs)) / h for i, x in enumerate(xs)]

    def recursive(root, order=None, seen=None):
        order, seen = ([], set()) if order is None else (order, seen)
        if root not in seen:
            seen.add(root)
            for parent in root._prev:
                recursive(parent, order, seen)
            order.append(root)
        return order

    def kahn_without_leaves(root):
        return [node for node in recursive(root) if node._prev]

    ns.update(
        numerical_grad=one_sided, topological_order=recursive, topological_order_iterative=recursive
    )
    lines = verdict_of(ns, A, NUM).message.splitlines()
    assert "numerical_grad(f, xs)[0] should be df/dx0" in lines[0]
    assert lines[1].startswith("f = ") and any(ln.startswith("at x0=") for ln in lines)
    assert all(len(line) < 90 for line in lines)
    assert verdict_of(ns, A, ITER).message == (
        "topological_order_iterative hit the recursion limit on a chain 10,000 deep: use a stack"
    )
    assert verdict_of(ns, A, TOPO).passed  # fine for lesson 2's first exercise
    ns["topological_order"] = kahn_without_leaves
    assert "leaves out x0" in verdict_of(ns, A, TOPO).message


@pytest.mark.parametrize("name, changes", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, changes):
    assert_passes(changed(solution, changes), A)


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)
