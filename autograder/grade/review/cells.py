"""Reading one cell's code for review/flags.py: what in it belongs to a flagged class, and where.

``flag_cell`` sets IPython's syntax aside (review/syntax.py), reviews each magic (shell
commands, ``%run``, any magic the course does not use; the body of ``%%writefile`` and of
``%%time``... is read as code too, and a file the notebook writes is remembered so that
running or importing it is flagged) and reads the Python with ``ast``:

- imports, also through ``__import__``/``importlib.import_module``; names and attributes
  resolved through every alias (``import os as o``, ``k = os.kill``, ``m = sys.modules
  ["gc"]``, ``getattr(os, "kill")``, ``vars(m)["x"]``, ``ip = get_ipython()``);
- strings built at run time from constants (``"ex" + "ec"``, ``chr`` joins, base64, hex,
  rot13, ``[::-1]``, f-strings...) are worked out (review_fold.py) and read like
  constants; code given to ``exec``/``eval``/``compile``/``run_cell`` is read as a cell,
  and running code, importing a module or looking a module's attribute up by a name
  that is not a constant is itself flagged (hidden code), worked out or not;
- an attribute assigned on anything imported (``json.dumps = f``, ``setattr(builtins,
  ...)``) patches that module; ``get_ipython()`` used for anything but the course's
  magics changes the kernel.

Code that does not parse is searched as words (syntax.text_flags). Every walk is
iterative and every name's resolution memoised: the work is linear in the cell's size.
"""

from __future__ import annotations

import ast

from .rules import (
    ATTRIBUTES,
    CODE_FILES,
    DEFINED,
    EVENT_METHODS,
    HIDDEN,
    IMPORTERS,
    INTROSPECTION,
    KERNEL,
    NAMES,
    PROCESS,
    RUNNERS,
    SHELL,
    SHELL_CALLS,
    STRINGS,
    TOO_LONG,
    dotted_kind,
    module_kind,
    show,
)
from .syntax import Magic, magic_flags, modules_of, read_cell, text_flags
from .values import MAX_PIECES, SHELLS, Memory, Names

Found = tuple[int, str, str]  # (line of the cell, what, class)
MAX_DEPTH = 3  # code in a string in code in a string...: read this deep
ATTR_CALLS = frozenset(
    {
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "builtins.getattr",
        "builtins.setattr",
        "builtins.delattr",
        "builtins.hasattr",
    }
)
OPENERS = frozenset({"open", "io.open", "builtins.open", "codecs.open", "os.open"})
BUILT = (ast.BinOp, ast.JoinedStr, ast.Call, ast.Subscript)  # may build a string
STAR = {
    "gc": INTROSPECTION,
    "sys": INTROSPECTION,
    "inspect": INTROSPECTION,
    "types": INTROSPECTION,
    "os": PROCESS,
    "builtins": KERNEL,
    "importlib": HIDDEN,
}


def flag_cell(
    source: str, memory: Memory, depth: int = 0, line0: int = 0, fixed: int | None = None
) -> list[Found]:
    """What to review in one cell's code; lines are the cell's (``line0`` + the code's),
    or ``fixed`` for code held in a string."""
    found: list[Found] = []
    if depth > MAX_DEPTH:
        return found
    if depth:
        memory.pieces -= 1
        if memory.pieces < 0:  # 2,000 %time lines or exec("...") calls: enough to look
            return [
                (
                    fixed or line0 + 1,
                    f"over {MAX_PIECES:,} pieces of code in magics and strings",
                    TOO_LONG,
                )
            ]

    def inner(code: str, first: int) -> list[Found]:  # code a magic runs
        return flag_cell(code, memory, depth + 1, first - 1, fixed)

    for reading in read_cell(source):
        for magic in reading.magics:
            found += magic_flags(magic, memory.written, fixed or line0 + magic.line, inner)
        tree = _parse(reading.python)
        if tree is None:
            found += [
                (fixed or line, what, kind)
                for line, what, kind in text_flags(reading.python, line0)
            ]
        else:
            found += _Finder(memory, depth, line0, fixed).run(tree)
    return found


def learn(source: str, memory: Memory) -> None:
    """The aliases a course cell defines (``import numpy as np``), flagging nothing."""
    for reading in read_cell(source):
        tree = _parse(reading.python)
        if tree is not None:
            finder = _Finder(memory, 0, 0, None)
            for node in finder.walk(tree):
                finder.bind(node)


def _parse(python: str) -> ast.AST | None:
    try:
        return compile(
            python,
            "<cell>",
            "exec",
            ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


class _Finder(Names):
    """One cell's (or string's) syntax tree, read in two iterative passes: names bound
    (values.Names), then what is flagged."""

    def __init__(self, memory: Memory, depth: int, line0: int, fixed: int | None):
        super().__init__(memory)
        self.depth, self.line0, self.fixed = depth, line0, fixed
        self.found: list[Found] = []
        self.ends: list[tuple[int, int, int]] = []  # where each flagged piece of code ends
        self.in_sum: set[int] = set()  # the terms and inner sums of a + b + c

    def run(self, tree: ast.AST) -> list[Found]:
        folder, outer = self.m.folder, self.m.folder.resolve
        folder.resolve = self.resolve  # calls in strings built at run time: b64decode...
        try:
            nodes = self.walk(tree)
            for node in nodes:
                self.bind(node)
            for node in nodes:
                self.visit(node)
        finally:
            folder.resolve = outer
        order = sorted(range(len(self.found)), key=lambda i: self.ends[i])
        return [self.found[i] for i in order]

    def flag(self, node: ast.AST, what: str, kind: str | None) -> None:
        if kind:
            line = self.fixed or self.line0 + getattr(node, "lineno", 1)
            self.found.append((line, what, kind))
            self.ends.append(
                (line, getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
            )

    # ---- what is flagged ------------------------------------------------------------------

    def visit(self, node: ast.AST) -> None:  # noqa: C901 (one branch per node kind)
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.imported(node, alias.name)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            self.imported(node, node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    self.flag(
                        node,
                        f"imports * from {show(node.module or '', 20)}",
                        STAR.get((node.module or "").split(".")[0]),
                    )
                else:
                    full = f"{node.module}.{alias.name}"
                    self.flag(
                        node,
                        f"imports {show(full)}",
                        dotted_kind(full)
                        or ATTRIBUTES.get(alias.name)
                        or (module_kind(full) if not module_kind(node.module or "") else None),
                    )
        elif isinstance(node, ast.Attribute):
            self.attribute(node, node.attr, self.resolve(node))
        elif isinstance(node, ast.Subscript) and self.resolve(node):  # sys.modules["gc"]...
            names = self.resolve(node)
            self.attribute(node, min(names).rsplit(".", 1)[-1], names)
        elif isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.flag(node, f"defines {node.name}", DEFINED.get(node.name))
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            self.text(node, node.value)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            for target in getattr(node, "targets", None) or [node.target]:
                self.patched(node, target)
        if isinstance(node, BUILT) and id(node) not in self.in_sum:
            parent = self.parent.get(id(node))
            if not (isinstance(parent, BUILT) and isinstance(self.fold(parent), str | bytes)):
                texts, terms = self.m.folder.pieces(node)
                self.in_sum.update(map(id, terms))  # a + b + c: read once, from the top
                for text in texts:
                    self.text(node, text, built=True)

    def imported(self, node: ast.AST, module: str) -> None:
        kind = module_kind(module)
        if kind:
            self.flag(node, f"imports {show(module)}", kind)
        if module.split(".")[0] in self.m.written:
            self.flag(node, f"imports {show(module, 16)}, written by the notebook", HIDDEN)

    def called(self, node: ast.AST) -> bool:
        parent = self.parent.get(id(node))
        return isinstance(parent, ast.Call) and parent.func is node

    def attribute(self, node: ast.AST, attr: str, names: frozenset[str]) -> None:
        verb = "calls" if self.called(node) else "uses"
        flagged = False
        for name in sorted(names):
            if name.startswith(SHELL + "."):
                method = name[len(SHELL) + 1 :].split(".")[0]
                if method in ATTRIBUTES:
                    self.flag(node, f"uses {method}", ATTRIBUTES[method])
                elif method not in SHELL_CALLS:
                    self.flag(node, f"uses get_ipython().{show(method, 20)}", KERNEL)
                elif not (self.called(node) and name == f"{SHELL}.{method}"):
                    self.flag(node, f"uses get_ipython().{method} as a value", HIDDEN)
                flagged = True
            elif dotted_kind(name):
                self.flag(node, f"{verb} {show(name)}", dotted_kind(name))
                flagged = True
            elif name.endswith(".__dict__") and name.split(".")[0] in self.m.modules:
                self.flag(node, f"uses {show(name)}", INTROSPECTION)
            elif (
                name.split(".")[0] in self.m.modules
                and module_kind(name)
                and not module_kind(name.split(".")[0])
            ):
                self.flag(node, f"{verb} {show(name)}", module_kind(name))  # importlib.util.x
                flagged = True
        if not flagged:
            self.flag(node, f"uses {show(attr)}", ATTRIBUTES.get(attr))
        value = getattr(node, "value", None)
        if attr in EVENT_METHODS and (
            (isinstance(value, ast.Attribute) and value.attr == "events")
            or any(n.endswith(".events") for n in self.resolve(value))
        ):
            self.flag(node, "registers IPython events", KERNEL)

    def name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.flag(node, f"assigns {node.id}", NAMES.get(node.id))
            return
        self.flag(node, f"uses {node.id}", NAMES.get(node.id))
        names = self.resolve(node)
        if not self.called(node):
            if names & (RUNNERS | IMPORTERS):
                self.flag(node, f"uses {show(node.id)} as a value", HIDDEN)
            if names & SHELLS:
                self.flag(node, "uses get_ipython", KERNEL)
        if node.id in self.m.aliases:
            for name in sorted(names):
                self.flag(
                    node,
                    f"{'calls' if self.called(node) else 'uses'} {show(name)}",
                    dotted_kind(name),
                )

    def text(self, node: ast.AST, value: str | bytes, built: bool = False) -> None:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for snippet, kind in STRINGS.items():
            if snippet in text:
                self.flag(node, f"mentions {snippet}", kind)
        parent = self.parent.get(id(node))
        if not (
            (isinstance(parent, ast.Call) and self.resolve(parent.func) & ATTR_CALLS)
            or (isinstance(parent, ast.Subscript) and self.resolve(parent))
        ):
            self.flag(node, f"mentions {show(text)}", ATTRIBUTES.get(text))
        if built:
            kind = dotted_kind(text) or module_kind(text) if text.isascii() else None
            self.flag(node, f"builds the name {show(text, 20)}", kind)

    def patched(self, node: ast.AST, target: ast.AST) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self.patched(node, element)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            for name in sorted(self.resolve(target.value)):
                root = name.split(".")[0]
                if name.startswith("os.environ"):
                    self.flag(node, "changes os.environ", PROCESS)
                elif isinstance(target, ast.Subscript) and not (
                    name.endswith(".__dict__") or name == "builtins"
                ):
                    continue  # plt.rcParams["x"] = ...: an item, not the module
                elif root in self.m.modules or root in ("builtins", SHELL):
                    what = "get_ipython()" if root == SHELL else show(root)
                    self.flag(node, f"patches {what}", KERNEL)

    def call(self, node: ast.Call) -> None:
        funcs = self.resolve(node.func)
        args = list(node.args) + [k.value for k in node.keywords]
        arg0, arg1 = [*args, None, None][:2]
        name = (
            node.func.attr
            if isinstance(node.func, ast.Attribute)
            else min(funcs).split(".")[-1]
            if funcs
            else ""
        )
        if funcs & RUNNERS or any(f.startswith(SHELL + ".run_cell") for f in funcs):
            self.runner(node, name, arg0)
        elif funcs & IMPORTERS and arg0 is not None:
            module = self.fold(arg0)
            if isinstance(module, str):
                self.imported(node, module)
            if not isinstance(arg0, ast.Constant):
                self.flag(node, f"calls {name} with a name made at run time", HIDDEN)
        elif funcs & ATTR_CALLS and arg1 is not None:
            self.by_name(node, name, arg0, arg1)
        elif any(f.startswith(SHELL + ".") for f in funcs):
            methods = sorted(
                f[len(SHELL) + 1 :].split(".")[0] for f in funcs if f.startswith(SHELL + ".")
            )
            self.shell(node, methods[0], arg0, arg1)
        elif funcs & OPENERS or name in ("write_text", "write_bytes"):
            target = arg0 if funcs & OPENERS else getattr(node.func, "value", None)
            if isinstance(target, ast.Call) and target.args:
                target = target.args[0]
            mode = "w" if not funcs & OPENERS else "r" if arg1 is None else self.fold(arg1)
            path = self.m.folder.fold(target, names=True)
            fd = self.m.folder.value(target, True, 0, None) if funcs & OPENERS else None
            if isinstance(fd, int) and not isinstance(fd, bool):
                self.flag(node, f"opens file descriptor {fd}", PROCESS)
            if (
                isinstance(path, str)
                and path.endswith(CODE_FILES)
                and (not isinstance(mode, str) or set(mode) & set("wax+"))
            ):
                self.m.written.update(modules_of(path))
                self.flag(node, f"writes {show(path)}", HIDDEN)

    def runner(self, node: ast.Call, name: str, arg: ast.AST | None) -> None:
        """exec/eval/compile/run_cell: code in a constant is read; any other is flagged."""
        if arg is None:
            return
        if isinstance(arg, ast.Call) and self.resolve(arg.func) & RUNNERS:
            return  # exec(compile(...)): the compile is reviewed
        code = self.m.folder.fold(arg, names=True)
        if not isinstance(arg, ast.Constant):
            self.flag(node, f"calls {name} on code made at run time", HIDDEN)
        if isinstance(code, bytes):
            code = code.decode("utf-8", "replace")
        if isinstance(code, str):
            line = self.fixed or self.line0 + getattr(node, "lineno", 1)
            for _, what, kind in flag_cell(code, self.m, self.depth + 1, 0, line):
                self.flag(node, what, kind)

    def by_name(self, node: ast.Call, func: str, obj: ast.AST | None, name: ast.AST) -> None:
        """getattr(obj, name) and friends: as ``obj.name`` when the name is known."""
        attr = self.fold(name)
        bases = self.resolve(obj)
        modules = [b for b in bases if b.split(".")[0] in self.m.modules | {"builtins", SHELL}]
        if isinstance(attr, str):
            self.attribute(node, attr, frozenset(f"{b}.{attr}" for b in bases))
            if {attr, f"builtins.{attr}"} & (RUNNERS | IMPORTERS):
                self.flag(node, f"looks {show(attr)} up by name", HIDDEN)
            if attr in EVENT_METHODS and any(b.endswith(".events") for b in bases):
                self.flag(node, "registers IPython events", KERNEL)
        elif modules:
            self.flag(
                node, f"calls {func} on {show(modules[0], 12)} with a name made at run time", HIDDEN
            )
        if func in ("setattr", "delattr") and modules:
            root = modules[0].split(".")[0]
            self.flag(node, f"patches {'get_ipython()' if root == SHELL else show(root)}", KERNEL)

    def shell(
        self, node: ast.Call, method: str, arg0: ast.AST | None, arg1: ast.AST | None
    ) -> None:
        """get_ipython().run_line_magic(...) and the like, written out."""
        if method in ("system", "getoutput"):
            self.flag(node, "runs shell commands", PROCESS)
        elif method in ("run_line_magic", "run_cell_magic"):
            magic, args = self.fold(arg0), self.fold(arg1)
            if not isinstance(magic, str) or not isinstance(args, str):
                self.flag(node, f"calls {method} with a magic made at run time", HIDDEN)
                return
            line = self.fixed or self.line0 + getattr(node, "lineno", 1)
            body = self.fold(node.args[2]) if len(node.args) > 2 else ""
            escape = "%%" if method == "run_cell_magic" else "%"

            def inner(code: str, first: int) -> list[Found]:
                return flag_cell(code, self.m, self.depth + 1, 0, line)

            for _, what, kind in magic_flags(
                Magic(line, escape, magic, args, str(body), line), self.m.written, line, inner
            ):
                self.flag(node, what, kind)
