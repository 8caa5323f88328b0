"""Lesson 02 (backward and topological sort): the hidden tests pass correct work, written
any way, and catch the classic bugs, each in the cell that grades the broken exercise and
only there: backward() and zero_grad are graded with the course's topological_order,
grad_check with the course's backward() and numerical_grad."""

import pytest
from helpers import (
    SOURCE,
    assert_blank_fails_each,
    failing_cells,
    grade_class,
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
DEEP_DEMO = "deep.backward()"  # the demo after exercise 6: backward() on a 10,000-deep chain

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
    ("backward borrowed from coursekit", [(BACKWARD, "    run_closures(self)\n")], {BACK}),
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
    ("grad_check without abs()", [("max(abs(v.grad - n) for", "max((v.grad - n) for")], {CHECK}),
    (
        "grad_check sums instead of taking the max",
        [("return max(abs(", "return sum(abs(")],
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
        [
            (
                "            if parent not in visited:\n"
                "                visited.add(parent)\n"
                "                stack.append((parent, iter(parent._prev)))\n"
                "                break\n",
                "            stack.append((parent, iter(parent._prev)))\n            break\n",
            )
        ],
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
                "    values = [Value(x) for x in xs]",
                """\
    numeric = numerical_grad(f, xs)
    leaves = [Value(x) for x in xs]
    f(*leaves).backward()
    worst = 0.0
    for leaf, n in zip(leaves, numeric):
        worst = max(worst, abs(leaf.grad - n))
    return worst
    values = [Value(x) for x in xs]""",
            )
        ],
    ),
    (
        "topological_order_iterative with (node, done) pairs",
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
            stack.extend((parent, False) for parent in node._prev)
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


def apply(nb, changes):
    for old, new in changes:
        nb = mutate(nb, old, new)
    return nb


def cell_names(nb, failed):
    """Failed cells by grade id, and the deep-chain demo (an ungraded cell) by DEEP_DEMO."""
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    demo = next(f"cell {i}" for i in code if DEEP_DEMO in nb.cells[i].source)
    return {DEEP_DEMO if name == demo else name for name in failed}


@pytest.fixture(scope="module")
def solution():
    return read(SOURCE, A)


def test_solution_passes_every_check(solution):
    assert failing_cells(solution, A) == {}


@pytest.mark.parametrize("name, changes, cells", BUGS, ids=[b[0] for b in BUGS])
def test_hidden_tests_catch_bug(solution, name, changes, cells):
    nb = apply(solution, changes)
    failed = failing_cells(nb, A)
    assert cell_names(nb, failed) == cells, failed
    for message in failed.values():
        assert all(len(line) < 90 for line in message.splitlines()), message


def test_visited_by_data_misses_twin_nodes(solution):
    """Two different nodes with equal data: a search that remembers data, not nodes, skips
    one. Only the sort's own cell notices: the others use the course's sort."""
    nb = mutate(
        solution,
        "        if node not in visited:\n            visited.add(node)\n",
        "        if node.data not in visited:\n            visited.add(node.data)\n",
    )
    failed = failing_cells(nb, A)
    assert set(failed) == {TOPO}, failed


def test_messages_say_what_is_wrong(solution):
    def message(changes, cell):
        return failing_cells(apply(solution, changes), A)[cell]

    assert "twice" in message(BUGS[0][1], TOPO)
    assert "before its parent" in message(BUGS[1][1], TOPO)
    assert "leaves out" in message(BUGS[2][1], TOPO)
    assert "earlier call" in message(BUGS[3][1], TOPO) or "graph" in message(BUGS[3][1], TOPO)
    assert "graph_nodes" in message(BUGS[4][1], TOPO)
    assert "not add 1.0" in message(BUGS[8][1], BACK)
    assert "run_closures" in message(BUGS[9][1], BACK)
    assert "on the inner node" in message(BUGS[10][1], ZERO)
    ignores_h = next(changes for name, changes, _ in BUGS if "ignores the h" in name)
    assert "ignores h" in message(ignores_h, NUM)
    in_place = next(changes for name, changes, _ in BUGS if "in place" in name)
    assert "changed the list xs" in message(in_place, NUM)
    recursion = message(BUGS[20][1], ITER)
    assert "recursion limit" in recursion and "\n" not in recursion and len(recursion) < 90
    assert "changed the recursion limit" in message(BUGS[-1][1], ITER)


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


@pytest.mark.parametrize("name, changes", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_hidden_tests_accept_correct_variant(solution, name, changes):
    assert failing_cells(apply(solution, changes), A) == {}


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


@pytest.mark.slow
def test_nbgrader_grades_02_backward(tmp_path):
    solution = read(SOURCE, A)
    scores, full = grade_class(
        tmp_path,
        A,
        {
            "leaves_only": apply(solution, BUGS[10][1]),
            "recursive": apply(solution, BUGS[20][1]),
            "kahn": apply(solution, VARIANTS[2][1]),
        },
    )
    assert sum(full.values()) == 16
    assert scores["kahn"] == full
    assert scores["leaves_only"] == {**full, ZERO: 0.0}
    assert scores["recursive"] == {**full, ITER: 0.0}
