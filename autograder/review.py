"""Flags for review: code a student wrote that reaches for the grader's or the kernel's
internals, or brings in another autodiff engine.

``flag_submission`` reads the notebooks of a submission folder and returns short reasons
such as ``imports torch``, ``calls gc.get_objects`` or ``uses IPython input transformers``
(``[]`` for an honest notebook). Only code the student wrote counts: a cell whose code is
the same as one of the assignment's cells as released (or as in ``source/``) is the
course's, whatever it imports.

Each code cell is read with ``ast`` after IPython's own syntax is set aside (``%magic``
and ``!shell`` lines, ``%%cell`` magics; what ``%time``/``%%timeit`` run is read too):
imports (also ``__import__("x")`` and ``importlib.import_module("x")``), dotted names
through import aliases (``import os as o; o.kill``, ``from gc import get_objects``),
attribute names wherever they appear, ``getattr(obj, "name")`` with a constant name,
string constants, and code given to ``exec``/``eval``/``compile`` as a constant. A cell
that does not parse is searched as text instead.

A flag is a reason to look, never a verdict: it changes no score and no exit code.
``grade`` keeps the reasons in each submission's record (``review``), adds
``flagged for review: ...`` to its note (class table, grades.csv) and ``export`` writes
them in the ``review`` column of grades.csv. Students do not see them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import re
from pathlib import Path

ENGINES = frozenset({"torch", "micrograd", "tensorflow", "jax", "autograd", "tinygrad",
                     "minitorch", "mxnet", "chainer", "theano", "paddle", "mlx", "keras",
                     "flax"})
def _table(*rows: tuple[str, str]) -> dict[str, str]:
    """{name: reason} from (reason, "name name ...") rows."""
    return {name: reason for reason, names in rows for name in names.split()}


MODULES = _table(  # top-level module imported -> reason
    ("imports refgrad", "refgrad"), ("imports autograder", "autograder"),
    ("imports nbgrader", "nbgrader"), ("uses ctypes", "ctypes _ctypes"), ("uses cffi", "cffi"),
    ("uses subprocess", "subprocess"), ("uses pty", "pty"), ("uses sqlite3", "sqlite3 _sqlite3"))
CALLS = _table(  # dotted name (through import aliases) -> reason
    ("calls os.kill", "os.kill os.killpg signal.pthread_kill"),
    ("runs shell commands", "os.system os.popen"),
    ("calls gc.get_objects", "gc.get_objects"), ("calls gc.get_referrers", "gc.get_referrers"),
    ("calls gc.get_referents", "gc.get_referents"),
    ("uses sys._getframe", "sys._getframe sys._current_frames"),
    ("sets a trace function", "sys.settrace sys.setprofile threading.settrace"),
    ("uses sys.modules", "sys.modules"),
    ("inspects the call stack",
     "inspect.currentframe inspect.stack inspect.getouterframes inspect.trace"))
ATTRIBUTES = _table(  # an attribute (or getattr name) anywhere -> reason
    ("uses sys._getframe", "_getframe _current_frames"),
    ("calls gc.get_objects", "get_objects"), ("calls gc.get_referrers", "get_referrers"),
    ("calls gc.get_referents", "get_referents"),
    ("inspects stack frames", "f_back f_globals f_locals f_builtins tb_frame"),
    ("uses IPython input transformers", "input_transformers_cleanup input_transformers_post "
     "input_transformer_manager ast_transformers input_splitter"),
    ("sets an IPython exception handler", "set_custom_exc"), ("sets IPython hooks", "set_hook"),
    ("mentions load_grader", "load_grader"))
EVENT_METHODS = frozenset({"register", "unregister", "callbacks", "trigger"})
STRINGS = {  # text inside a string constant -> reason
    "load_grader": "mentions load_grader",
    "refgrad": "mentions refgrad",
    **dict.fromkeys(("autograder/", "autograder.", ".reference", "kernel_startup",
                     "kernel_guard", "gradebook.db"), "mentions the grader's files"),
}
NAMES = {"load_grader": "mentions load_grader"}
PATCHED = frozenset({"builtins", "math", "cmath", "coursekit", "sys", "os", "gc", "random",
                     "IPython", "numpy", "inspect", "types", "operator", "functools"})
SHELL_MAGICS = frozenset({"system", "sx", "bash", "sh", "script", "!", "perl", "ruby"})
CODE_MAGICS = frozenset({"time", "timeit", "prun", "capture", "debug"})


# ---- what the course gave ----------------------------------------------------------------


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _released(source: str, stub: str) -> list[str]:
    """``source`` without hidden tests, and also with its solution replaced by the stub."""
    out, hidden, solution = [], False, False
    stubbed = []
    for line in source.splitlines():
        if "BEGIN HIDDEN TESTS" in line:
            hidden = True
        elif "END HIDDEN TESTS" in line:
            hidden = False
        elif hidden:
            continue
        elif "BEGIN SOLUTION" in line:
            solution = True
            indent = line[: len(line) - len(line.lstrip())]
            stubbed += [indent + s for s in stub.splitlines()]
        elif "END SOLUTION" in line:
            solution = False
        else:
            out.append(line)
            if not solution:
                stubbed.append(line)
    return ["\n".join(out), "\n".join(stubbed)]


@functools.cache
def given_code(source_folder: str) -> frozenset[str]:
    """The code cells of an assignment as the course wrote and released them."""
    import nbformat

    stub = "# YOUR CODE HERE\nraise NotImplementedError()"
    with contextlib.suppress(Exception):
        from .course import nbgrader_config

        stub = nbgrader_config().ClearSolutions.code_stub.get("python", stub)
    folder = Path(source_folder)
    released = folder.parent.parent / "notebooks" / folder.name
    given = set()
    for path in [*sorted(folder.glob("*.ipynb")), *sorted(released.glob("*.ipynb"))]:
        with contextlib.suppress(Exception):
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type == "code":
                    given.update(_norm(s) for s in [cell.source, *_released(cell.source, stub)])
    return frozenset(given)


# ---- reading code ---------------------------------------------------------------------------


MAGIC_LINE = re.compile(r"^(\s*)(?:([\w.\[\], ()*]+?)\s*=\s*)?(!|%{1,2})\s*(\S*)(.*)$")
HELP_LINE = re.compile(r"^(\s*)\?*([\w.]+)\?{1,2}\s*$")


def set_magics_aside(source: str) -> tuple[str, list[str], bool]:
    """(the cell's Python with IPython syntax replaced by ``pass``, code that magics such
    as ``%time`` run, whether it runs shell commands)."""
    lines = source.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        head = lines[first].lstrip()[2:].split()
        name = head[0] if head else ""
        body = "\n".join(lines[first + 1:])
        if name in CODE_MAGICS:
            inner, code, shell = set_magics_aside(body)
            return inner, code, shell
        return "", [], name in SHELL_MAGICS
    python, code, shell = [], [], False
    for line in lines:
        match = MAGIC_LINE.match(line)
        help_match = HELP_LINE.match(line)
        if match:
            indent, target, kind, name, rest = match.groups()
            if kind == "!" or name in SHELL_MAGICS:
                shell = True
            elif name in CODE_MAGICS:
                code.append(rest.strip())
            python.append(f"{indent}{target} = None" if target else f"{indent}pass")
        elif help_match:
            python.append(help_match.group(1) + help_match.group(2))
        else:
            python.append(line)
    return "\n".join(python), code, shell


def flag_code(source: str, aliases: dict[str, str] | None = None, depth: int = 0) -> list[str]:
    """Reasons to review one cell's code (in the order found, each once)."""
    reasons: list[str] = []
    python, inner, shell = set_magics_aside(source)
    if shell:
        reasons.append("runs shell commands")
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        reasons += flag_text(source)
    else:
        try:
            reasons += _Finder(aliases if aliases is not None else {}, depth).run(tree)
        except RecursionError:
            reasons += flag_text(source)
    if depth < 3:
        for code in inner:
            reasons += flag_code(code, aliases, depth + 1)
    return list(dict.fromkeys(reasons))


class _Finder(ast.NodeVisitor):
    def __init__(self, aliases: dict[str, str], depth: int):
        self.aliases = aliases  # local name -> dotted module path (shared across cells)
        self.depth = depth
        self.found: list[tuple[tuple[int, int], str]] = []
        self.where = (0, 0)

    def run(self, tree: ast.AST) -> list[str]:
        self.visit(tree)
        return [reason for _, reason in sorted(self.found, key=lambda f: f[0])]

    def visit(self, node):
        if hasattr(node, "end_lineno"):  # reasons in the order their code ends
            self.where = (node.end_lineno or 0, node.end_col_offset or 0)
        return super().visit(node)

    def flag(self, reason: str | None) -> None:
        if reason:
            self.found.append((self.where, reason))

    def imported(self, module: str) -> None:
        top = module.split(".")[0]
        if top in ENGINES:
            self.flag(f"imports {top}")
        self.flag(MODULES.get(top))
        if "inputtransformer" in module or "inputsplitter" in module:
            self.flag("uses IPython input transformers")

    def dotted(self, name: str) -> None:
        self.flag(CALLS.get(name))
        for prefix in CALLS:  # sys.modules["x"], os.kill.__call__ ...
            if name.startswith(prefix + "."):
                self.flag(CALLS[prefix])

    def visit_Import(self, node):
        for alias in node.names:
            self.imported(alias.name)
            local = alias.asname or alias.name.split(".")[0]
            self.aliases[local] = alias.name if alias.asname else local
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level == 0:
            self.imported(module)
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            self.flag(ATTRIBUTES.get(alias.name))
            self.dotted(full)
            if module.split(".")[0] in ("", "IPython") and "transformer" in alias.name.lower():
                self.flag("uses IPython input transformers")
            self.aliases[alias.asname or alias.name] = full
        self.generic_visit(node)

    def resolve(self, node) -> str | None:
        """``a.b.c`` with ``a`` replaced by what it was imported as."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def visit_Attribute(self, node):
        self.flag(ATTRIBUTES.get(node.attr))
        if node.attr in EVENT_METHODS and isinstance(node.value, ast.Attribute) and (
                node.value.attr == "events"):
            self.flag("registers IPython events")
        name = self.resolve(node)
        if name:
            self.dotted(name)
        self.generic_visit(node)

    def visit_Name(self, node):
        self.flag(NAMES.get(node.id))
        self.dotted(self.aliases.get(node.id, node.id))
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            for text, reason in STRINGS.items():
                if text in node.value:
                    self.flag(reason)
            self.flag(ATTRIBUTES.get(node.value))

    def visit_Assign(self, node):
        for target in node.targets:
            self.patched(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self.patched(node.target)
        self.generic_visit(node)

    def patched(self, target) -> None:
        if isinstance(target, ast.Attribute):
            name = self.resolve(target)
            if name and name.split(".")[0] in PATCHED and isinstance(target.value, ast.Name) and (
                    target.value.id in self.aliases or target.value.id == "builtins"):
                self.flag(f"patches {name.split('.')[0]}")
        elif isinstance(target, ast.Name) and target.id in ("__builtins__", "load_grader"):
            self.flag("patches builtins" if target.id == "__builtins__"
                      else "mentions load_grader")

    def visit_Call(self, node):
        func = self.resolve(node.func) or ""
        first = node.args[0] if node.args else None
        second = node.args[1] if len(node.args) > 1 else None
        text = first.value if isinstance(first, ast.Constant) and isinstance(
            first.value, str) else None
        if func in ("__import__", "importlib.import_module", "importlib.__import__",
                    "builtins.__import__") and text:
            self.imported(text)
        elif func in ("exec", "eval", "compile", "builtins.exec", "builtins.eval") and text:
            if self.depth < 3:
                for reason in flag_code(text, self.aliases, self.depth + 1):
                    self.flag(reason)
        elif func in ("getattr", "setattr", "hasattr", "delattr", "builtins.getattr") and (
                isinstance(second, ast.Constant) and isinstance(second.value, str)):
            self.flag(ATTRIBUTES.get(second.value))
            base = self.resolve(first) if first is not None else None
            if base:
                self.dotted(f"{base}.{second.value}")
            if second.value in EVENT_METHODS and isinstance(first, ast.Attribute) and (
                    first.attr == "events"):
                self.flag("registers IPython events")
        self.generic_visit(node)


WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOTTED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
IMPORT = re.compile(r"(?:^|[\s;])(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def flag_text(text: str) -> list[str]:
    """Reasons found by searching ``text`` (for code that does not parse)."""
    reasons = []
    for module in IMPORT.findall(text):
        if module in ENGINES:
            reasons.append(f"imports {module}")
        if module in MODULES:
            reasons.append(MODULES[module])
    words = set(WORD.findall(text))
    for module in ("ctypes", "subprocess", "sqlite3"):
        if module in words:
            reasons.append(MODULES[module])
    for a, b in DOTTED.findall(text):
        if f"{a}.{b}" in CALLS:
            reasons.append(CALLS[f"{a}.{b}"])
        if b in EVENT_METHODS and a == "events":
            reasons.append("registers IPython events")
    for word in sorted(words & set(ATTRIBUTES)):
        reasons.append(ATTRIBUTES[word])
    for snippet, reason in STRINGS.items():
        if snippet in text:
            reasons.append(reason)
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("!") or re.match(r"%%?(system|sx|bash|sh|script)\b", stripped):
            reasons.append("runs shell commands")
    return list(dict.fromkeys(reasons))


# ---- a submission ---------------------------------------------------------------------------


def flag_notebook(nb, given: frozenset[str] = frozenset()) -> list[str]:
    """Reasons to review the student-written code cells of notebook ``nb``."""
    reasons: list[str] = []
    aliases: dict[str, str] = {}
    for cell in nb.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if _norm(source) in given:
            _learn_imports(source, aliases)
            continue
        reasons += flag_code(source, aliases)
    return list(dict.fromkeys(reasons))


def _learn_imports(source: str, aliases: dict[str, str]) -> None:
    """The import aliases a course cell defines (``import numpy as np``), flagging nothing."""
    with contextlib.suppress(Exception):
        _Finder(aliases, 0).run(ast.parse(set_magics_aside(source)[0]))


def flag_submission(folder: Path, source_folder: Path,
                    files: list[str] | None = None) -> list[str]:
    """Reasons to review the notebooks of a submission folder: ``files`` (the notebooks
    that were graded), or every notebook at its top level. Never raises."""
    reasons: list[str] = []
    try:
        given = given_code(str(source_folder))
        paths = ([folder / f for f in files] if files is not None
                 else sorted(folder.glob("*.ipynb")))
        for path in paths:
            if path.is_file() and not path.is_symlink():
                reasons += flag_notebook(_read(path), given)
    except Exception as exc:  # a flag is a hint: never a reason to fail grading
        reasons.append(f"could not be checked ({type(exc).__name__})")
    return list(dict.fromkeys(reasons))


def _read(path: Path) -> dict:
    """A notebook's cells, read leniently (any nbformat, damaged structure): ``{}`` if the
    file is not a notebook (grading says so; there is nothing to review)."""
    from .submission import MAX_NOTEBOOK_BYTES

    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return {}
    try:
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    cells = data.get("cells")
    if cells is None:  # nbformat 3
        cells = [c for ws in data.get("worksheets") or [] if isinstance(ws, dict)
                 for c in ws.get("cells") or []]
        cells = [{**c, "source": c.get("input", "")} for c in cells if isinstance(c, dict)]
    return {"cells": cells if isinstance(cells, list) else []}


def review_note(reasons: list[str]) -> str:
    return f"flagged for review: {', '.join(reasons)}" if reasons else ""
