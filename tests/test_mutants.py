"""Mutation testing of the hidden tests: every small change to a solution (an operator, a
comparison, a constant, ``+=`` for ``=``...) must fail some test cell, unless the lesson's
tests list it as equivalent, with the reason (a change no correct test can see).

Target (issue 11): at least 98 % of the mutants killed, every survivor documented.
The mutants and their fate are printed (pytest -s).
"""

from __future__ import annotations

import ast
import copy
import importlib

import nbformat
import pytest
from helpers import SOURCE, STUDENT, failing_cells, read

pytestmark = [pytest.mark.slow, pytest.mark.mutation]  # make mutation

ASSIGNMENTS = [
    "01_value",
    "02_backward",
    "03_activations",
    "04_checkpoint_engine",
    "05_mlp",
    "05_training",
    "06_checkpoint_mlp",
    "07_set_gradients",
    "08_set_training",
    "09_set_arrays",
]
LESSON_TESTS = {
    "01_value": "test_01_value",
    "02_backward": "test_02_backward",
    "03_activations": "test_03_activations",
    "05_mlp": "test_05_mlp",
    "05_training": "test_05_training",
    "04_checkpoint_engine": "test_quizzes",
    "06_checkpoint_mlp": "test_quizzes",
    "07_set_gradients": "test_07_set_gradients",
    "08_set_training": "test_08_set_training",
    "09_set_arrays": "test_09_set_arrays",
}
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def solution_lines(source: str) -> set[int]:
    """The line numbers (1-based) inside the cell's solution regions."""
    lines, inside = set(), False
    for number, line in enumerate(source.splitlines(), 1):
        if BEGIN in line:
            inside = True
        elif END in line:
            inside = False
        elif inside:
            lines.add(number)
    return lines


class Mutator(ast.NodeTransformer):
    """Applies the ``target``-th possible mutation (counting in walk order) to a tree."""

    def __init__(self, lines: set[int], target: int):
        self.lines, self.target, self.seen, self.done = lines, target, -1, None

    def _hit(self, node, what: str) -> bool:
        if getattr(node, "lineno", None) not in self.lines:
            return False
        self.seen += 1
        if self.seen == self.target:
            self.done = f"line {node.lineno}: {what}"
            return True
        return False

    def generic_visit(self, node):
        node = super().generic_visit(node)
        swap = isinstance(node, (ast.BinOp, ast.BoolOp)) and type(node.op) in SWAPS
        if swap and self._hit(node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"):
            node.op = SWAPS[type(node.op)]()
        elif (
            isinstance(node, ast.Compare)
            and type(node.ops[0]) in SWAPS
            and self._hit(
                node, f"{type(node.ops[0]).__name__} -> {SWAPS[type(node.ops[0])].__name__}"
            )
        ):
            node.ops = [SWAPS[type(node.ops[0])](), *node.ops[1:]]
        elif isinstance(node, ast.AugAssign) and self._hit(node, "+= -> ="):
            return ast.copy_location(
                ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno), node
            )
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) in (int, float)
            and not isinstance(node.value, bool)
            and self._hit(node, f"{node.value} + 1")
        ):
            node.value = node.value + 1
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, bool)
            and self._hit(node, f"{node.value} -> {not node.value}")
        ):
            node.value = not node.value
        elif (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and self._hit(node, "-x -> x")
        ):
            return node.operand
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and len(node.value) == 1
            and node.value in "abcd"
            and self._hit(node, "letter")
        ):
            node.value = "abcd"[("abcd".index(node.value) + 1) % 4]
        return node


def mutants(assignment: str):
    """(id, mutated notebook) for every mutation of every solution region."""
    nb = read(SOURCE, assignment)
    for index, cell in enumerate(nb.cells):
        lines = solution_lines(cell.source) if cell.cell_type == "code" else set()
        if not lines:
            continue
        tree = ast.parse(cell.source)
        target = 0
        while True:
            mutator = Mutator(lines, target)
            mutated = mutator.visit(copy.deepcopy(tree))
            if mutator.done is None:
                break
            ast.fix_missing_locations(mutated)
            variant = nbformat.from_dict(copy.deepcopy(nb))
            variant.cells[index].source = ast.unparse(mutated)
            gid = cell.metadata["nbgrader"]["grade_id"]
            yield f"{gid} {mutator.done}", variant
            target += 1


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_hidden_tests_kill_the_mutants(assignment):
    lesson = importlib.import_module(LESSON_TESTS[assignment])
    equivalent = getattr(lesson, "EQUIVALENT_MUTANTS", {})
    students = getattr(lesson, "MUTANT_STUDENTS", [STUDENT])  # a quiz: several variants
    killed, survivors = 0, []
    for name, nb in mutants(assignment):
        if assignment == "05_mlp":
            nb = lesson.graded_only(nb)
        if any(failing_cells(nb, assignment, first=True, student=s) for s in students):
            killed += 1
        else:
            survivors.append(name)
    total = killed + len(survivors)
    print(f"\n{assignment}: {killed}/{total} mutants killed; survivors: {survivors}")
    undocumented = [s for s in survivors if s not in equivalent]
    assert undocumented == [], undocumented  # so every killable mutant is killed
    ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in read(SOURCE, assignment).cells}
    stale = [s for s in equivalent if s.split()[0] in ids and s not in survivors]
    assert stale == [], f"documented as equivalent, but no longer a surviving mutant: {stale}"
