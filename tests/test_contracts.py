"""Visible and hidden checks agree on what an exercise requires (issue 29, class 1).

For each graded exercise of lessons 1 to 3, the ways a student can depart from its
contract (where parents are kept, what a method returns, which numbers it accepts, what a
hand-written backward pass may use...) and not from its arithmetic. Each departure must
fail the exercise's visible check, with a sentence naming what is required, exactly when
its hidden test fails it: no ✓ in the notebook followed by a hidden 0 for a reason the
visible check could have stated. (Lessons 5 and 5b keep theirs in their own test files.)
"""

from __future__ import annotations

import contextlib
import io

import nbformat
import pasted_engines as pe
import pytest
from helpers import (
    SOURCE,
    code_of,
    grade_id,
    is_demo,
    is_test_cell,
    lesson_path,
    read,
    verdict_of,
)

# (assignment, exercise's test cell, departure, [(old, new) in the solution cells],
#  words the visible and the hidden message must both contain)
DEPARTURES = [
    (
        "01_value",
        "value_test_add_mul",
        "a class pasted whole that keeps parents in _children, with its own backward()",
        [("@class", pe.CHILDREN_VALUE)],
        "_prev",
    ),
    (
        "01_value",
        "value_test_add_mul",
        "parents kept under `parents`",
        [("self._prev = tuple(dict.fromkeys(_parents))", "self.parents = set(_parents)")],
        "_prev",
    ),
    (
        "01_value",
        "value_test_add_mul",
        "the gradient kept as .gradient",
        [("self.grad = 0.0", "self.gradient = 0.0")],
        ".grad",
    ),
    (
        "01_value",
        "value_test_add_mul",
        "__add__ returns a plain number",
        [
            (
                'out = Value(self.data + other.data, (self, other), "+")',
                "return self.data + other.data",
            )
        ],
        "data",
    ),
    (
        "01_value",
        "value_test_add_mul",
        "a number on the right is not wrapped into a Value",
        [
            (
                "        other = other if isinstance(other, Value) else Value(other)\n"
                '        out = Value(self.data * other.data, (self, other), "*")',
                '        out = Value(self.data * other.data, (self, other), "*")',
            )
        ],
        "a * 4",
    ),
    (
        "01_value",
        "value_test_arithmetic",
        "** only for int exponents",
        [("if not isinstance(n, (int, float)):", "if not isinstance(n, int):")],
        "** 0.5",
    ),
    (
        "01_value",
        "value_test_arithmetic",
        "- only between Values",
        [
            ("    return self + (-other)\n", "    return Value(self.data - other.data)\n"),
        ],
        "",
    ),
    (
        "01_value",
        "value_test_hand_backprop",
        "the hand-written pass calls the nodes' closures instead of the chain rule",
        [
            (
                "    g.n.grad = 2 * g.n.data * g.L.grad\n",
                "    run_closures([g.x1w1, g.x2w2, g.s, g.n, g.L])\n    return\n",
            )
        ],
        "n.grad",
    ),
    (
        "01_value",
        "value_test_hand_backprop",
        "the hand-written pass calls backward() (a pasted class's own)",
        [("    g.n.grad = 2 * g.n.data * g.L.grad\n", "    g.L.backward()\n    return\n")],
        ".grad yourself",
    ),
]


DEPARTURES += [
    (
        "02_backward",
        "backward_test_backward",
        "backward() zeroes every gradient first (a second call does not add up)",
        [
            (
                "    self.grad = 1.0\n    for node in reversed(topological_order(self)):",
                "    for node in topological_order(self):\n        node.grad = 0.0\n"
                "    self.grad = 1.0\n    for node in reversed(topological_order(self)):",
            )
        ],
        "backward()",
    ),
    (
        "02_backward",
        "backward_test_topological_order",
        "a pasted build_topo that returns nothing",
        [("    visit(root)\n    return order\n", "    visit(root)\n")],
        "",
    ),
    (
        "02_backward",
        "backward_test_numerical_grad",
        "numerical_grad returns a generator",
        [("    return grads\n", "    return (g for g in grads)\n")],
        "",
    ),
    (
        "02_backward",
        "backward_test_grad_check",
        "grad_check returns the errors of every input, not the largest",
        [
            (
                "    return max(\n        abs(v.grad - n)",
                "    return list(\n        abs(v.grad - n)",
            )
        ],
        "",
    ),
]


DEPARTURES += [
    (
        "03_activations",
        "act_test_sin_cos_sqrt",
        "sqrt refuses 0 (x <= 0 where the domain is x >= 0)",
        [
            (
                '    if self.data < 0:\n        raise ValueError(f"sqrt',
                '    if self.data <= 0:\n        raise ValueError(f"sqrt',
            )
        ],
        "sqrt",
    ),
    (
        "03_activations",
        "act_test_exp_log",
        "log's ValueError does not name the value (math.log's own error)",
        [
            (
                '    if self.data <= 0:\n        raise ValueError(f"log is only',
                '    if False:\n        raise ValueError(f"log is only',
            )
        ],
        "name the value",
    ),
    (
        "03_activations",
        "act_test_tanh",
        "tanh returns a plain number",
        [('    out = Value(t, (self,), "tanh")\n', "    return t\n")],
        "",
    ),
]


def _departed(nb: nbformat.NotebookNode, edits: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(nb)
    for old, new in edits:
        if old == "@class":  # the class cell replaced whole, as by a paste over the stub
            (cell,) = [c for c in nb.cells if c.source.startswith("class Value")]
            cell.source = new
            continue
        hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
        assert len(hits) == 1, f"{old!r} is in {len(hits)} cells"
        hits[0].source = hits[0].source.replace(old, new, 1)
    return nb


def visible_and_hidden(nb: nbformat.NotebookNode, assignment: str, exercise: str):
    """(the visible check's failure or None, the hidden verdict) of one exercise, after
    every cell before it has run as in the notebook."""
    ns = {"__name__": "__main__"}
    with lesson_path(assignment):
        for cell in nb.cells:
            if cell.cell_type != "code" or is_demo(cell):
                continue
            failure = None
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(code_of(cell), "<cell>", "exec"), ns)
            except Exception as exc:
                failure = str(exc)
            if is_test_cell(cell) and grade_id(cell) == exercise:
                return failure, verdict_of(ns, assignment, exercise)
    raise AssertionError(f"no test cell {exercise}")


@pytest.mark.parametrize(
    "assignment, exercise, departure, edits, words", DEPARTURES, ids=[d[2] for d in DEPARTURES]
)
def test_visible_and_hidden_checks_agree(assignment, exercise, departure, edits, words):
    nb = _departed(read(SOURCE, assignment), edits)
    seen, verdict = visible_and_hidden(nb, assignment, exercise)
    assert not verdict.passed, f"the hidden test passes {departure}"
    assert seen is not None, f"the visible check passes {departure}, the hidden test fails:\n"
    assert words in seen and (words in verdict.message or not words.startswith(("_", "."))), (
        f"{departure}:\nvisible: {seen}\nhidden: {verdict.message}"
    )
    for line in seen.splitlines():
        assert len(line) < 90, line


def test_the_departures_leave_the_solution_passing():
    """The harness itself: the unchanged solution passes each exercise both ways."""
    for assignment, exercise in {(d[0], d[1]) for d in DEPARTURES}:
        seen, verdict = visible_and_hidden(read(SOURCE, assignment), assignment, exercise)
        assert seen is None and verdict.passed, (exercise, seen, verdict.message)


# ---- stubs fix no parameter name the grader does not need --------------------------------

# Parameters the hidden tests pass by name: a stub may use these outside its solution.
PASSED_BY_NAME = {"train": {"steps", "lr", "batch_size", "lr_decay", "print_every"}}


def _given_lines_using_parameters(source: str) -> list[str]:
    """The statements of a function with a solution region that stand outside it (given
    to students) and use one of the function's parameters (``self`` aside)."""
    import ast

    from autograder import markers

    lines = markers.read(source)
    solution = {i + 1 for i, line in enumerate(lines) if line.region == markers.SOLUTION}
    tree = ast.parse("\n".join(line.text for line in lines))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        if not set(range(fn.lineno, fn.end_lineno + 1)) & solution:
            continue
        arguments = fn.args
        names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
        names -= {"self", *PASSED_BY_NAME.get(fn.name, ())}
        for stmt in fn.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # the docstring
            if set(range(stmt.lineno, stmt.end_lineno + 1)) & solution:
                continue
            used = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} & names
            if used:
                found.append(f"{fn.name}: {lines[stmt.lineno - 1].text.strip()}")
    return found


def test_no_stub_line_fixes_a_parameter_name():
    """A given line of a stub that uses a parameter (``if not isinstance(n, ...)`` in
    ``__pow__(self, n)``) makes a student who pastes ``__pow__(self, other)`` rename it,
    though the grader calls the method positionally: solutions hold such lines."""
    from helpers import is_test_cell

    offending = []
    for path in sorted(SOURCE.glob("[0-9]*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            solution = cell.metadata.get("nbgrader", {}).get("solution")
            if cell.cell_type == "code" and solution and not is_test_cell(cell):
                offending += [
                    f"{path.parent.name} {line}"
                    for line in _given_lines_using_parameters(cell.source)
                ]
    assert offending == []
