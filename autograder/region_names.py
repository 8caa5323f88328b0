"""What each free name of a hidden region stands for, read from the instructor notebook.

A test cell's hidden region runs in the grader (verdicts/region.py), never in the
student's kernel. A name it reads and never binds itself is, by what the instructor
notebook's cells do with it (never by what a submission does):

- the exercise's (``EXERCISE``): bound (not imported) by a solution cell or the cell
  tagged ``engine``, or a class or data that another cell of the notebook gives (a setup
  cell: not a test cell, not a demonstration). It stands for the student's object: a
  stand-in whose steps the student's kernel replays;
- a module (``MODULE``): a name a cell imports from a module outside the course kit
  (``import numpy as np``, ``from math import exp``), or a standard module's own name
  (``math``) that no cell binds otherwise. The grader imports it itself: the student's
  notebook cannot change what ``math.exp`` or ``np.allclose`` is;
- anything else is refused (``REFUSED``): a helper of the kit (``check``, ``expect``:
  imported from coursekit), a function a setup cell defines (``check_order``), a name
  only the visible checks bind, or a name no cell binds. In the student's kernel each
  of those is whatever the student's notebook made it, so a region that used one would
  let a blank notebook that rebinds it pass. ``generate`` refuses such a region in one
  line naming the name and the cell (content/checks.py); grading calls it a course
  content error.
"""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass, field

from . import markers
from .course import KITS

EXERCISE, MODULE, REFUSED = "exercise", "module", "refused"
ENGINE_TAG = "engine"
SKIP_TAGS = {"demo", "practice"}  # demonstrations: grading does not run them
KIT_MODULES = {k.removesuffix(".py") for k in KITS}


@dataclass(frozen=True)
class Meaning:
    kind: str  # EXERCISE, MODULE or REFUSED
    module: str = ""  # MODULE: what to import
    attribute: str = ""  # MODULE: ``from module import attribute``
    why: str = ""  # REFUSED: what the name is, for the one-line message


@dataclass
class NotebookNames:
    """Each name an instructor notebook's cells bind, and what it means to a region."""

    meanings: dict[str, Meaning] = field(default_factory=dict)

    def meaning(self, name: str) -> Meaning:
        found = self.meanings.get(name)
        if found is not None:
            return found
        if name in sys.stdlib_module_names:
            return Meaning(MODULE, name)
        return Meaning(REFUSED, why="which no cell of the notebook binds")


def exercise_names(*names: str) -> NotebookNames:
    """Names that are the exercise's and nothing else (tests build regions with it)."""
    return NotebookNames({n: Meaning(EXERCISE) for n in names})


# ---- reading the notebook -------------------------------------------------------------------


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _kind(cell: dict) -> str | None:
    """ "solution", "engine", "test", "setup"; None for cells grading does not run."""
    if cell.get("cell_type") != "code":
        return None
    md = cell.get("metadata", {})
    nbg = md.get("nbgrader", {}) if isinstance(md.get("nbgrader"), dict) else {}
    tags = set(md.get("tags", []) or [])
    if nbg.get("grade"):
        return "test"
    if nbg.get("solution"):
        return "solution"
    if tags & SKIP_TAGS:
        return None
    return "engine" if ENGINE_TAG in tags else "setup"


def _code(cell: dict, kind: str) -> str:
    source = _source(cell)
    source = markers.visible(source) if kind == "test" else markers.solved(source)
    return "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))


_NEW_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def bindings(tree: ast.Module) -> list[tuple[str, str, tuple[str, str]]]:
    """(name, how, (module, attribute)) of each name a module's top level binds: how is
    "def", "class", "import" (with what it imports) or "data"."""
    found: list[tuple[str, str, tuple[str, str]]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((node.name, "def", ("", "")))
            return
        if isinstance(node, ast.ClassDef):
            found.append((node.name, "class", ("", "")))
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found.append((alias.asname, "import", (alias.name, "")))
                else:
                    top = alias.name.split(".")[0]
                    found.append((top, "import", (top, "")))
            return
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                found.append((alias.asname or alias.name, "import", (module, alias.name)))
            return
        if isinstance(node, _NEW_SCOPES):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.append((node.id, "data", ("", "")))
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in tree.body:
        visit(statement)
    return found


def read(cells: list) -> NotebookNames:
    """What each name bound by an instructor notebook's cells means to a region."""
    exercise: set[str] = set()
    modules: dict[str, Meaning] = {}
    refused: dict[str, Meaning] = {}
    for index, cell in enumerate(cells):
        kind = _kind(cell) if isinstance(cell, dict) else None
        if kind is None:
            continue
        try:
            tree = ast.parse(_code(cell, kind))
        except SyntaxError:
            continue
        where = f"cell {index + 1}"
        for name, how, (module, attribute) in bindings(tree):
            if how == "import":
                top = module.split(".")[0]
                if top in KIT_MODULES or not top:
                    refused.setdefault(
                        name, Meaning(REFUSED, why=f"a kit helper (imported in {where})")
                    )
                else:
                    modules.setdefault(name, Meaning(MODULE, module, attribute))
            elif kind in ("solution", "engine") or (kind == "setup" and how != "def"):
                exercise.add(name)
            elif kind == "setup":
                refused.setdefault(
                    name, Meaning(REFUSED, why=f"a helper function of the notebook's {where}")
                )
            else:
                refused.setdefault(
                    name, Meaning(REFUSED, why=f"bound only by the visible checks of {where}")
                )
    meanings = {**refused, **modules, **{n: Meaning(EXERCISE) for n in exercise}}
    return NotebookNames(meanings)


# ---- a region's free names ----------------------------------------------------------------------


def free_names(tree: ast.AST) -> dict[str, int]:
    """{name: first line} of the names a region reads and never binds, builtins aside."""
    loaded: dict[str, int] = {}
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded[node.id] = min(loaded.get(node.id, node.lineno), node.lineno)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return {
        n: line
        for n, line in sorted(loaded.items(), key=lambda item: item[1])
        if n not in bound and not hasattr(builtins, n)
    }


def refusals(tree: ast.AST, names: NotebookNames) -> list[tuple[str, int, str]]:
    """(name, line, why) of each free name of a region that is neither the exercise's
    nor a module."""
    found = []
    for name, line in free_names(tree).items():
        meaning = names.meaning(name)
        if meaning.kind == REFUSED:
            found.append((name, line, meaning.why))
    return found
