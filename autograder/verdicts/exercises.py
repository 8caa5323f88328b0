"""An assignment's exercises as its instructor notebook declares them.

An exercise is its cells: one or more solution cells (nbgrader ``solution``: the stub the
student fills), then a test cell (nbgrader ``grade``) whose visible part checks it in the
kernel and whose hidden region (between nbgrader's hidden-tests markers) is its hidden test. This
module reads, from the instructor notebook only (never from a submission):

- each test cell's hidden region, by grade id;
- what each test grades (its *targets*): the functions and methods its solution cells
  define with a solution region inside (``__add__`` in ``class Value`` is
  ``Value.__add__``; ``def tanh(self)`` followed by ``Value.tanh = tanh`` is
  ``Value.tanh``; a plain ``def grad_check`` is ``grad_check``);
- the course's version of each target (the solution, markers dropped), which a later
  test can ask for (``gradekit.given``) so that a bug costs only the exercise that has
  it;
- what each name its cells bind means to a hidden region: the exercise's, a module, or
  neither (region_names.py).

It runs in the grader and at ``generate`` (content/checks.py), on the same reading.
"""

from __future__ import annotations

import ast
import functools
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from .. import markers, region_names
from ..region_names import NotebookNames
from .api import Given


@dataclass
class Exercise:
    grade_id: str  # its test cell's
    index: int  # the test cell's position in the notebook
    points: float
    hidden: str  # the hidden region's code (markers left out)
    targets: tuple[str, ...]  # what its solution cells define: "Value.__add__", "grad_check"
    solution_cells: tuple[int, ...] = ()


@dataclass
class CourseNotebook:
    """The exercises of one instructor notebook and the course's code for each target."""

    path: str
    exercises: dict[str, Exercise] = field(default_factory=dict)
    code: dict[str, Given] = field(default_factory=dict)  # target -> the course's version
    # What each name of its cells means to a hidden region (region_names.py).
    names: NotebookNames = field(default_factory=NotebookNames)

    def given(self, target: str) -> Given:
        if target not in self.code:
            known = ", ".join(sorted(self.code)) or "none"
            raise KeyError(f"{target} is defined by no solution cell (known: {known})")
        return self.code[target]


def _nbgrader(cell: dict) -> dict:
    md = cell.get("metadata", {}).get("nbgrader", {})
    return md if isinstance(md, dict) else {}


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def is_test_cell(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and bool(_nbgrader(cell).get("grade"))


def is_solution_cell(cell: dict) -> bool:
    md = _nbgrader(cell)
    return cell.get("cell_type") == "code" and bool(md.get("solution")) and not md.get("grade")


def _marked_lines(source: str) -> set[int]:
    """1-based numbers of the lines inside or marking a solution region."""
    return {n for n, line in enumerate(markers.read(source), 1) if line.region == markers.SOLUTION}


def definitions(source: str) -> dict[str, tuple[str, str]]:
    """{target: (name, code)} of what a solution cell defines with a solution region
    inside: methods of its classes and its functions (attached to a class when the cell
    assigns ``Class.name = name``). The code is the course's solution."""
    solved = markers.solved(source)
    marked = _marked_lines(source)
    try:
        tree = ast.parse(source)
        solved_tree = ast.parse(solved)
    except SyntaxError:
        return {}
    attached = {}
    for node in solved_tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and isinstance(node.value, ast.Name)
        ):
            target = node.targets[0]
            attached[node.value.id] = f"{target.value.id}.{target.attr}"

    def has_solution(node) -> bool:
        return any(node.lineno <= n <= node.end_lineno for n in marked)

    # Solution markers are whole lines: the solved text has the same definitions in the
    # same order, so the k-th definition of one is the k-th of the other.
    def defs(body):
        return [n for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef)]

    found: dict[str, tuple[str, str]] = {}
    for raw, done in zip(defs(tree.body), defs(solved_tree.body)):
        if isinstance(raw, ast.FunctionDef) and has_solution(raw):
            code = textwrap.dedent(ast.get_source_segment(solved, done) or "")
            found[attached.get(raw.name, raw.name)] = (raw.name, code)
        elif isinstance(raw, ast.ClassDef):
            methods = zip(defs(raw.body), defs(done.body))
            for m_raw, m_done in methods:
                if isinstance(m_raw, ast.FunctionDef) and has_solution(m_raw):
                    code = textwrap.dedent(_segment(solved, m_done))
                    found[f"{raw.name}.{m_raw.name}"] = (m_raw.name, code)
    return found


def _segment(source: str, node: ast.AST) -> str:
    """A node's lines, whole (so that an indented method dedents cleanly)."""
    lines = source.splitlines()
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(lines[start - 1 : node.end_lineno]) + "\n"


def read(nb: dict, path: str = "") -> CourseNotebook:
    """The exercises of an instructor notebook (a dict as JSON has it)."""
    course = CourseNotebook(path, names=region_names.read(nb.get("cells", [])))
    pending_solutions: list[int] = []
    pending_targets: list[str] = []
    for index, cell in enumerate(nb.get("cells", [])):
        if is_solution_cell(cell):
            pending_solutions.append(index)
            for target, (name, code) in definitions(_source(cell)).items():
                course.code[target] = Given(target, name, code)
                pending_targets.append(target)
        elif is_test_cell(cell):
            md = _nbgrader(cell)
            gid = str(md.get("grade_id", ""))
            course.exercises[gid] = Exercise(
                grade_id=gid,
                index=index,
                points=float(md.get("points", 0) or 0),
                hidden=markers.inside(_source(cell), markers.HIDDEN),
                targets=tuple(dict.fromkeys(pending_targets)),
                solution_cells=tuple(pending_solutions),
            )
            pending_solutions, pending_targets = [], []
    return course


@functools.cache
def _read_file(path: str, mtime: float) -> CourseNotebook:
    return read(json.loads(Path(path).read_text(encoding="utf-8")), path)


def read_file(path: Path) -> CourseNotebook:
    """``read`` of an instructor notebook on disk (cached until the file changes)."""
    return _read_file(str(path), path.stat().st_mtime)


def instructor_notebook(config, assignment: str, notebook: str) -> CourseNotebook | None:
    """The instructor notebook of a notebook being graded, from the course's source folder
    as nbgrader's configuration names it (never from the submission); None if there is
    none."""
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    path = Path(coursedir.root) / coursedir.source_directory / assignment / f"{notebook}.ipynb"
    try:
        return read_file(path)
    except (OSError, ValueError):
        return None


is_pointer = markers.is_pointer
