"""The part of a piece of the course's code that some names need, and nothing more.

A grading kernel gets the course's engine as code (sets.py, lessons.py), and that code
runs in a cell, so that all of its text is within a student cell's reach (``In``, the
history, the frames and objects it makes). It must hold what the notebook's ``engine``
cell names need and nothing else: the reference engine's module also holds the losses
lesson 5b asks for, a lesson also defines its own exercises that later lessons do not
use. ``needed`` keeps, of a module's top-level statements, those that define or change
(``Value.tanh = tanh``) one of the names asked for or one that a kept statement uses,
in their order; the rest (other functions and classes, docstrings, stray calls) goes.
This runs in the grader; only the code it keeps goes into a kernel.
"""

from __future__ import annotations

import ast

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _root(node: ast.AST) -> str | None:
    """``Value`` of ``Value.tanh`` or ``Value.x[0]``."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        return [stmt.target]
    if isinstance(stmt, ast.Delete):
        return list(stmt.targets)
    return []


def _bound(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """(names the statement binds, names whose objects it changes) at module level."""
    binds: set[str] = set()
    changes: set[str] = set()
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}, changes
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}, changes
    for target in _targets(stmt):
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                binds.add(node.id)
        if not isinstance(target, ast.Name | ast.Tuple | ast.List):
            name = _root(target)
            if name:
                changes.add(name)
    if not _targets(stmt):  # a compound statement, a call: everything it could bind or touch
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                binds.add(node.id)
            elif isinstance(node, SCOPES) and not isinstance(node, ast.Lambda):
                binds.add(node.name)
            elif isinstance(node, ast.Call):
                name = _root(node.func)
                if name:
                    changes.add(name)
                changes.update(_root(a) for a in node.args if _root(a))
    binds.discard("__all__")
    return binds, changes


def _used(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}


def needed(source: str, names: tuple[str, ...] | list[str]) -> str:
    """``source`` (a module's text) with only the top-level statements that ``names``
    need, in order; ``from __future__`` imports are kept. Raises ValueError if a name is
    defined by no statement."""
    body = ast.parse(source).body
    info = [(*_bound(s), _used(s)) for s in body]
    defined = set().union(*(b for b, _, _ in info))
    missing = [n for n in names if n not in defined]
    if missing:
        raise ValueError(f"needed: {', '.join(missing)} defined by no statement")
    want = set(names)
    keep = [
        isinstance(s, ast.ImportFrom) and s.module == "__future__" and not s.level for s in body
    ]
    grew = True
    while grew:
        grew = False
        for i, (binds, changes, used) in enumerate(info):
            if not keep[i] and (binds | changes) & want:
                keep[i] = grew = True
                want |= used & defined
    lines = source.splitlines()
    kept = ["\n".join(lines[_first_line(s) - 1 : s.end_lineno]) for s, k in zip(body, keep) if k]
    return "\n\n".join(kept) + "\n"


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def defined_names(source: str) -> set[str]:
    """The names a module's top-level statements bind (for the tests)."""
    return set().union(*(_bound(s)[0] for s in ast.parse(source).body))
