"""A grading kernel never holds the course's version of an exercise of the assignment it
grades, nor of a later one: not in its namespace, its history (``In``: the code of the
``engine`` cell that grading runs, verdicts/hidden/sets.py and lessons.py), the classes
that code makes, the files of its folder, nor what every request of a set attaches
(``ENGINE.given``). The exercises are read from the instructor notebooks (what each test
cell grades: verdicts/exercises.py), so a new exercise is covered without a word here.

An exercise that an earlier assignment also asks for (lesson 2's ``grad_check``, which
problem set 1 asks for again with more arguments) is that earlier lesson's as well: the
lessons after it may hold the earlier lesson's version, never the later one's text.
"""

from __future__ import annotations

import ast
import re
import textwrap

import pytest
from helpers import NOTEBOOKS, SOURCE, notebook_path

from autograder.course import assignments, kind
from autograder.verdicts import api, exercises
from autograder.verdicts.hidden.sg_gradcheck import BUGGY
from autograder.verdicts.probe import kernel_code

ASSIGNMENTS = assignments()


def targets(assignment: str) -> set[str]:
    """What the assignment's test cells grade: "mse_loss", "Value.tanh"."""
    course = exercises.read_file(notebook_path(SOURCE, assignment))
    return {t for ex in course.exercises.values() for t in ex.targets}


def solutions(assignment: str) -> dict[str, str]:
    """{target: the course's solution code} of the assignment."""
    course = exercises.read_file(notebook_path(SOURCE, assignment))
    return {t: g.source for t, g in course.code.items()}


def forbidden(assignment: str) -> tuple[set[str], dict[str, str]]:
    """(targets no kernel of ``assignment`` may hold, by name; {target: solution code}
    whose text none may hold): its own exercises and every later assignment's, less, by
    name only, those an earlier assignment asks for too."""
    i = ASSIGNMENTS.index(assignment)
    earlier = set().union(*(targets(a) for a in ASSIGNMENTS[:i]))
    names: set[str] = set(targets(assignment))
    texts: dict[str, str] = {}
    for later in ASSIGNMENTS[i:]:
        names |= targets(later) - (earlier if later != assignment else set())
        texts.update({f"{later}:{t}": code for t, code in solutions(later).items()})
    return names, texts


def forbidden_classes(assignment: str, names: set[str]) -> set[str]:
    """The classes of forbidden methods that no earlier assignment makes (``Tensor`` of
    Tensor.__add__, never ``Value``)."""
    i = ASSIGNMENTS.index(assignment)
    earlier = {t.split(".")[0] for a in ASSIGNMENTS[:i] for t in targets(a) if "." in t}
    return {t.split(".")[0] for t in names if "." in t} - earlier


def codes_in(cell: str) -> list[str]:
    """The cell's code and every piece of code inside it (the string an ``exec`` runs)."""
    found = [cell]
    for node in ast.walk(ast.parse(cell)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                ast.parse(node.value)
            except SyntaxError:
                continue
            if "\n" in node.value:
                found += codes_in(node.value)
    return found


def module_names(code: str) -> set[str]:
    """The names ``code`` binds at module level (in ``if`` and ``try`` too; never a
    method or a function's local)."""
    found: set[str] = set()

    def visit(stmts) -> None:
        for node in stmts:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update((a.asname or a.name).split(".")[0] for a in node.names)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    found.add(child.id)
                elif isinstance(child, ast.expr):
                    found.update(
                        n.id
                        for n in ast.walk(child)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                    )
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, field, []))

    visit(ast.parse(code).body)
    return found


SUBSTANCE = 3  # statements: a body as short as ``return []`` is anyone's


def bodies(code: str) -> set[str]:
    """Every function's body of some substance in ``code`` (docstring left out), as
    ``ast.dump`` says it: the same code under any name."""
    out = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            module = ast.Module(body=body, type_ignores=[])
            if sum(isinstance(n, ast.stmt) for n in ast.walk(module)) >= SUBSTANCE:
                out.add(ast.dump(module))
    return out


def kernel_pieces(assignment: str) -> list[str]:
    """The code a grading kernel of ``assignment`` gets from the course: the engine cell
    grading runs (and the code inside it), what each of its requests attaches, and the
    probe (the parts loaded in that assignment's kernel)."""
    pieces = [kernel_code(api.probe_parts(assignment))]
    engine = getattr(api.hidden_module(assignment), "ENGINE", None)
    if engine is not None:
        pieces += codes_in(engine.code)
        if engine.given is not None:
            pieces.append(engine.given.source)
    return pieces


def namespaces(assignment: str, monkeypatch) -> list[dict]:
    """The namespaces the engine cell's code makes: the cell's, and the course code's
    inside it (what a cell that runs ``In``'s text again would get)."""
    code = api.engine_code(assignment)
    if code is None:
        return []
    monkeypatch.syspath_prepend(str(SOURCE / assignment))  # coursekit, as in a kernel there
    found = []
    for piece in codes_in(code):
        ns: dict = {}
        exec(compile(piece, "<kernel>", "exec"), ns)
        found.append(ns)
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_name_or_class_attribute_of_the_kernel_is_a_forbidden_exercise(assignment, monkeypatch):
    names, _ = forbidden(assignment)
    classes = forbidden_classes(assignment, names)
    for ns in namespaces(assignment, monkeypatch):
        held = {n for n in ns if not n.startswith("__")}
        assert not held & names, (assignment, held & names)
        assert not held & classes, (assignment, held & classes)
        for target in (t for t in names if "." in t):
            cls, attr = target.split(".", 1)
            if isinstance(ns.get(cls), type):
                mro = [k for k in ns[cls].__mro__ if k is not object]
                assert not any(attr in vars(k) for k in mro), (assignment, target)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_code_the_kernel_gets_defines_or_repeats_a_forbidden_exercise(assignment):
    names, texts = forbidden(assignment)
    functions = {t for t in names if "." not in t}
    pieces = kernel_pieces(assignment)
    seen = set().union(*(bodies(p) for p in pieces))
    for piece in pieces:
        held = module_names(piece)
        assert not held & functions, (assignment, held & functions)
        assert not held & forbidden_classes(assignment, names), assignment
    for key, code in texts.items():
        repeated = bodies(textwrap.dedent(code)) & seen
        assert not repeated, (assignment, key)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_file_of_the_kernels_folder_defines_a_forbidden_exercise(assignment):
    """The kernel's folder is the released folder's files, notebooks left out
    (kernel/bwrap.py ``NOT_COPIED``): coursekit.py, a set's data, a quiz's questions."""
    names, _ = forbidden(assignment)
    functions = {t for t in names if "." not in t}
    folder = NOTEBOOKS / assignment
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".ipynb"):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for name in functions:
            assert not re.search(rf"\bdef {re.escape(name)}\s*\(", text), (path, name)


def test_the_set_faults_engine_goes_without_its_notes():
    """Problem set 1's grad_check test attaches the faulty engine before the faults are
    checked: only the class the notebook shows, never the notes that name the faults."""
    assert BUGGY.source.lstrip().startswith(("import ", "class Buggy"))
    assert "planted faults with a gradient check, name them" not in BUGGY.source
    assert "instead of" not in BUGGY.source.split("class Buggy", 1)[0]


def test_the_lessons_engines_hold_only_the_names_their_notebooks_load(monkeypatch):
    """Lesson 1's backprop_by_hand or lesson 2's numerical_grad are not lesson 5's."""
    ns = namespaces("05_mlp", monkeypatch)[-1]
    held = {n for n in ns if not n.startswith("__")}
    assert "Value" in held and not held & {"backprop_by_hand", "numerical_grad", "neuron"}
    ns = namespaces("05_training", monkeypatch)[-1]
    held = {n for n in ns if not n.startswith("__")}
    assert {"Value", "Module", "Neuron", "Layer", "MLP"} <= held
    assert not held & {"Linear", "Sequential", "zero_grad", "mse_loss"}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_probe_holds_no_later_set_s_operations(assignment):
    """A problem set's probe operations (the Iris recipe's cross-entropy among them) are
    loaded only in the kernels whose hidden tests use them: no kernel of an earlier
    assignment holds a later set's code, in any name."""
    from autograder.verdicts.probe import SET_PARTS

    parts = api.probe_parts(assignment)
    for part, prefix in SET_PARTS.items():
        owner = next(a for a in ASSIGNMENTS if a.endswith(part.removesuffix(".py")))
        if assignment < owner:
            assert part not in parts
            assert f"def {prefix}" not in kernel_code(parts)
    if kind(assignment) == "set":  # its own set's operations, at least
        own = next(p for p in SET_PARTS if assignment.endswith(p.removesuffix(".py")))
        assert own in parts
