"""What the names and expressions of a cell stand for, worked out without running it (for
review/cells.py): the dotted names a name or attribute may be (``import os as o``, ``k =
os.kill``, ``m = sys.modules["gc"]``, ``getattr(os, "kill")``, ``vars(m)["x"]``, ``ip =
get_ipython()``), and the strings built from constants.

``"ex" + "ec"``, ``"".join(chr(c) for c in [101, 120])``, ``bytes.fromhex("...")``,
``base64.b64decode("...").decode()``, ``codecs.decode("...", "rot13")``, ``"...
"[::-1]``, ``"%s%s" % ("ex", "ec")``, f-strings of constants: what they evaluate to, so
that review reads what such a string names or holds like any constant. Only pure
operations on constants are evaluated (never a call of anything else), each value is at
most ``MAX_VALUE`` long and a submission's folding has a budget of characters; names are
resolved once each and trees walked without recursion: the work stays linear in the
code's size. Anything else is ``None``: review/cells.py then flags the code that runs or
imports it as made at run time.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from .rules import IMPORTERS, SHELL, words

MAX_VALUE = 100_000  # characters (or items) of one value worked out
BUDGET = 2_000_000  # characters worked out for one submission, in all
MAX_DEPTH = 30  # nested operations followed
MAX_NAMES = 8  # what one name may stand for, at most
MAX_DOTTED = 200  # characters of a dotted name followed
MAX_PIECES = 2_000  # pieces of code in magics and strings read, per submission
SHELLS = frozenset({"get_ipython", "IPython.get_ipython", "IPython.core.getipython.get_ipython"})
PLAIN = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)  # shared
AMBIGUOUS = object()  # a name bound more than once, or not by a plain assignment
TEXT_METHODS = words("""lower upper strip lstrip rstrip replace swapcase title capitalize
casefold removeprefix removesuffix decode encode join format""")
DECODERS: dict[str, Callable] = {
    "base64.b64decode": base64.b64decode,
    "base64.standard_b64decode": base64.b64decode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "base64.b32decode": base64.b32decode,
    "base64.b16decode": base64.b16decode,
    "base64.b85decode": base64.b85decode,
    "base64.a85decode": base64.a85decode,
    "base64.decodebytes": base64.decodebytes,
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "binascii.a2b_base64": binascii.a2b_base64,
    "bytes.fromhex": bytes.fromhex,
    "bytearray.fromhex": bytes.fromhex,
    "zlib.decompress": lambda data: zlib.decompressobj().decompress(data, MAX_VALUE + 1),
}
CODECS = words("""rot13 rot_13 hex hex_codec base64 base_64 base64_codec utf-8 utf8 ascii
latin-1 latin1 utf-16 utf-32""")


class Folder:
    """Works strings out; ``resolve`` names a call's function (``b64`` -> ``base64``)."""

    def __init__(self, budget: int = BUDGET):
        self.budget = budget
        self.memo: dict[tuple[ast.AST, bool], object] = {}  # keeps its nodes alive
        self.consts: dict[str, object] = {}  # name -> the node it was bound to once
        self.resolve: Callable[[ast.AST], frozenset[str]] = lambda node: frozenset()
        self._busy: set[str] = set()

    def assign(self, name: str, node: ast.AST | None) -> None:
        """``name`` is bound to ``node`` (None: bound some other way)."""
        seen = self.consts.get(name)
        self.consts[name] = node if node is not None and seen is None else AMBIGUOUS

    def fold(self, node: ast.AST | None, names: bool = False) -> str | bytes | None:
        """The string ``node`` evaluates to, if made of constants only (and, with
        ``names``, of names bound once to such strings)."""
        value = self.value(node, names, 0, None)
        return value if isinstance(value, str | bytes) else None

    def pieces(self, node: ast.AST) -> tuple[list[str | bytes], list[ast.AST]]:
        """(the strings ``node`` builds from constants: all of it, or in ``a + b + x``
        each run of worked-out terms; the terms and inner sums of such a sum)."""
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            value = self.fold(node)
            return ([value] if value is not None and not isinstance(node, ast.Constant) else []), []
        inner: list[ast.AST] = []
        terms = _terms(node, inner)
        out: list[str | bytes] = []
        run: list = []
        first: ast.AST | None = None  # the run's first term
        for term in [*terms, None]:
            value = self.value(term, False, 1, None)
            if isinstance(value, str | bytes) and (not run or type(run[0]) is type(value)):
                first = first if run else term
                run.append(value)
                continue
            if len(run) > 1 or (run and not isinstance(first, ast.Constant)):
                out.append(run[0][:0].join(run))
            run, first = ([value], term) if isinstance(value, str | bytes) else ([], None)
        return out, [*terms, *inner]

    def value(self, node: ast.AST | None, names: bool, depth: int, env: dict | None):
        if node is None or depth > MAX_DEPTH or self.budget <= 0:
            return None
        key = (node, names)
        if env is None and key in self.memo:
            return self.memo[key]
        try:
            value = self._value(node, names, depth + 1, env)
        except (
            ValueError,
            TypeError,
            LookupError,
            ArithmeticError,
            binascii.Error,
            zlib.error,
            RecursionError,
            MemoryError,
        ):
            value = None
        if isinstance(value, str | bytes | list):
            if len(value) > MAX_VALUE:
                value = None
            else:
                self.budget -= len(value)
        elif isinstance(value, int) and abs(value) > 2**64:
            value = None
        if env is None:
            self.memo[key] = value
        return value

    def _value(self, node: ast.AST, names: bool, depth: int, env: dict | None):
        def sub(n):
            return self.value(n, names, depth, env)

        if isinstance(node, ast.Constant):
            v = node.value
            return v if isinstance(v, str | bytes | int) else None
        if isinstance(node, ast.Name):
            if env is not None and node.id in env:
                return env[node.id]
            bound = self.consts.get(node.id)
            if names and isinstance(bound, ast.AST) and node.id not in self._busy:
                self._busy.add(node.id)
                try:
                    return self.value(bound, names, depth, None)
                finally:
                    self._busy.discard(node.id)
            return None
        if isinstance(node, ast.BinOp):
            return self._binop(node, sub)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Invert):
            v = sub(node.operand)
            return (-v if isinstance(node.op, ast.USub) else ~v) if _int(v) else None
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                v = sub(part.value if isinstance(part, ast.FormattedValue) else part)
                if not isinstance(v, str | int) or getattr(part, "format_spec", None):
                    return None
                parts.append(repr(v) if getattr(part, "conversion", -1) == ord("r") else str(v))
            return "".join(parts)
        if isinstance(node, ast.List | ast.Tuple):
            values = [sub(e) for e in node.elts[: MAX_VALUE + 1]]
            return None if any(v is None for v in values) else values
        if isinstance(node, ast.Subscript):
            return self._subscript(node, sub)
        if isinstance(node, ast.Call):
            return self._call(node, sub, names, depth, env)
        if isinstance(node, ast.GeneratorExp | ast.ListComp):
            return self._comprehension(node, names, depth, env)
        return None

    def _binop(self, node: ast.BinOp, sub):
        if isinstance(node.op, ast.Add):
            values = [sub(t) for t in _terms(node)]
            if any(v is None for v in values) or len({type(v) for v in values}) > 1:
                return None
            return sum(values) if _int(values[0]) else values[0][:0].join(values)
        left, right = sub(node.left), sub(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mult):
            seq, n = (left, right) if _int(right) else (right, left)
            if _int(n) and (_int(seq) or len(seq) * max(n, 0) <= MAX_VALUE):
                return seq * n
            return None
        if isinstance(node.op, ast.Mod) and isinstance(left, str | bytes):
            if not _plain_format(left):
                return None
            return left % (tuple(right) if isinstance(right, list) else right)
        ops = {
            ast.Sub: int.__sub__,
            ast.FloorDiv: int.__floordiv__,
            ast.Mod: int.__mod__,
            ast.BitXor: int.__xor__,
            ast.BitAnd: int.__and__,
            ast.BitOr: int.__or__,
        }
        if _int(left) and _int(right):
            if isinstance(node.op, ast.LShift | ast.RShift) and 0 <= right <= 64:
                return left << right if isinstance(node.op, ast.LShift) else left >> right
            op = ops.get(type(node.op))
            return op(left, right) if op else None
        return None

    def _subscript(self, node: ast.Subscript, sub):
        base = sub(node.value)
        if not isinstance(base, str | bytes | list):
            return None
        if isinstance(node.slice, ast.Slice):
            bounds = [
                sub(b) if b is not None else None
                for b in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            given = [
                b
                for b, n in zip(
                    bounds, (node.slice.lower, node.slice.upper, node.slice.step), strict=True
                )
                if n is not None
            ]
            return base[slice(*bounds)] if all(_int(b) for b in given) else None
        index = sub(node.slice)
        return base[index] if _int(index) else None

    def _call(self, node: ast.Call, sub, names: bool, depth: int, env: dict | None):  # noqa: C901 (a branch per kind of call worked out)
        args = [sub(a) for a in node.args]
        if any(v is None for v in args) or node.keywords:
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in TEXT_METHODS:
            receiver = sub(func.value)
            if isinstance(receiver, str | bytes):
                if func.attr in ("decode", "encode") and args and args[0] not in CODECS:
                    return None
                longest = max([len(a) for a in args if isinstance(a, str | bytes | list)] + [0])
                if len(receiver) * (longest + 1) + longest > MAX_VALUE * 4 or (
                    func.attr == "format" and ":" in str(receiver)
                ):
                    return None  # too long to work out, or a format that pads
                return getattr(receiver, func.attr)(*args)
        names_of = self.resolve(func)
        if names_of & set(DECODERS) and len(args) == 1:
            data = args[0].encode("latin-1") if isinstance(args[0], str) else args[0]
            return bytes(DECODERS[sorted(names_of & set(DECODERS))[0]](data))
        coder = names_of & {"codecs.decode", "codecs.encode"}
        if coder and len(args) == 2 and args[1] in CODECS:
            run = codecs.decode if min(coder) == "codecs.decode" else codecs.encode
            return run(args[0], args[1])
        name = min(names_of) if names_of else ""
        if name == "chr" and len(args) == 1 and _int(args[0]):
            return chr(args[0])
        if name == "ord" and len(args) == 1 and isinstance(args[0], str):
            return ord(args[0])
        if name in ("str", "bytes", "bytearray") and args:
            if len(args) == 1 and isinstance(args[0], str | int) and name == "str":
                return str(args[0])
            if name != "str" and isinstance(args[0], list) and all(_int(a) for a in args[0]):
                return bytes(args[0])
            if len(args) == 2 and args[1] in CODECS:
                return str(args[0], args[1]) if name == "str" else bytes(args[0], args[1])
            return None
        if name in ("list", "tuple", "reversed") and len(args) == 1:
            items = list(args[0]) if isinstance(args[0], str | bytes | list) else None
            return items[::-1] if name == "reversed" and items is not None else items
        if name == "map" and len(args) == 1 and len(node.args) == 2:
            mapped = self.resolve(node.args[0])
            items = sub(node.args[1])
            if mapped & {"chr", "str"} and isinstance(items, list | str):
                return [chr(i) if "chr" in mapped else str(i) for i in items]
        return None

    def _comprehension(self, node, names: bool, depth: int, env: dict | None):
        """``(chr(c) for c in [101, 120])``: one loop over constants, no condition."""
        if len(node.generators) != 1:
            return None
        loop = node.generators[0]
        if loop.ifs or not isinstance(loop.target, ast.Name):
            return None
        items = self.value(loop.iter, names, depth, env)
        if not isinstance(items, str | bytes | list):
            return None
        work = len(items) * sum(1 for _ in ast.walk(node.elt))
        self.budget -= work
        if work > MAX_VALUE * 10 or self.budget <= 0:
            return None
        out = []
        for item in items:
            v = self.value(node.elt, names, depth, {**(env or {}), loop.target.id: item})
            if v is None:
                return None
            out.append(v)
        return out


@dataclass
class Memory:
    """What a submission's earlier cells tell about its later ones (import aliases, the
    modules imported, constants, the files its notebooks write) and what is left of the
    bounds on reading it."""

    aliases: dict[str, set[str]] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    folder: Folder = field(default_factory=Folder)
    left: int = 500_000  # characters of code still to be read (review.MAX_REVIEWED)
    pieces: int = MAX_PIECES  # pieces of code in magics and strings still to be read


class Names:
    """The names of one syntax tree (a cell's, or a string's run as code): walked in the
    order of the source, bound (imports, aliases, constants) into a ``Memory`` shared by a
    submission's cells, and resolved to dotted names, each node once."""

    def __init__(self, memory: Memory):
        self.m = memory
        self.parent: dict[int, ast.AST] = {}
        self.resolved: dict[int, frozenset[str]] = {}
        self.fold = memory.folder.fold

    def walk(self, tree: ast.AST) -> list[ast.AST]:
        """Every node, in the order of the source, without recursion."""
        order, stack = [], [tree]
        while stack:
            node = stack.pop()
            order.append(node)
            children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, PLAIN)]
            for child in children:
                self.parent[id(child)] = node
            stack.extend(reversed(children))
        return order

    def bind(self, node: ast.AST) -> None:
        m = self.m
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                m.aliases[local] = {alias.name if alias.asname else local}
                m.modules.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            m.modules.add(node.module.split(".")[0])
            for alias in node.names:
                if alias.name != "*":
                    m.aliases[alias.asname or alias.name] = {f"{node.module}.{alias.name}"}
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = self.resolve(node.value)
            for target in targets:
                if isinstance(target, ast.Name):
                    if names:  # k = os.kill: k may be os.kill (and what it was)
                        m.aliases[target.id] = set(
                            list(m.aliases.get(target.id, set()) | names)[:MAX_NAMES]
                        )
                    m.folder.assign(target.id, node.value)
        elif isinstance(node, ast.Name | ast.arg | ast.FunctionDef | ast.ClassDef | ast.alias):
            name = (
                node.asname or node.name.split(".")[0]
                if isinstance(node, ast.alias)
                else getattr(node, "id", None) or getattr(node, "arg", None) or node.name
            )
            parent = self.parent.get(id(node))
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) and not (
                isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr)
                and node in getattr(parent, "targets", [getattr(parent, "target", None)])
            ):
                m.folder.assign(name, None)  # bound some other way: not a constant

    def resolve(self, node: ast.AST | None, depth: int = 0) -> frozenset[str]:
        """The dotted names ``node`` may stand for (``o.kill`` -> ``os.kill``)."""
        if node is None or depth > 20:
            return frozenset()
        key = id(node)
        if key in self.resolved:
            return self.resolved[key]
        chain = []  # a.b.c...: unwound without recursion
        while isinstance(node, ast.Attribute) and id(node) not in self.resolved:
            chain.append(node)
            node = node.value
        names = self.resolved.get(id(node)) or self._resolve_one(node, depth)
        self.resolved[id(node)] = names
        for link in reversed(chain):
            names = frozenset(f"{n}.{link.attr}" for n in names if len(n) < MAX_DOTTED)
            self.resolved[id(link)] = names
        return self.resolved.get(key, names)

    def _resolve_one(self, node: ast.AST, depth: int) -> frozenset[str]:
        if isinstance(node, ast.Name):
            if node.id in self.m.aliases:
                return frozenset(self.m.aliases[node.id])
            return frozenset({"builtins" if node.id == "__builtins__" else node.id})
        if isinstance(node, ast.Call):
            funcs = self.resolve(node.func, depth + 1)
            arg0 = node.args[0] if node.args else None
            if funcs & SHELLS:
                return frozenset({SHELL})
            if funcs & IMPORTERS and isinstance(self.fold(arg0), str):
                return frozenset({self.fold(arg0)})
            if funcs & {"getattr", "builtins.getattr"} and len(node.args) > 1:
                name = self.fold(node.args[1])
                if isinstance(name, str):
                    return frozenset(f"{b}.{name}" for b in self.resolve(arg0, depth + 1))
            if funcs & {"vars", "builtins.vars"} and arg0 is not None:
                return frozenset(f"{b}.__dict__" for b in self.resolve(arg0, depth + 1))
        if isinstance(node, ast.Subscript):
            key = self.fold(node.slice)
            if isinstance(key, str):
                out = set()
                for base in self.resolve(node.value, depth + 1):
                    if base == "sys.modules":
                        out.add(key)
                    elif base.endswith(".__dict__"):
                        out.add(f"{base[:-9]}.{key}")
                    elif base == "builtins":
                        out.add(f"builtins.{key}")
                return frozenset(out)
        return frozenset()


def _plain_format(text: str | bytes) -> bool:
    """A %-format with no width or precision (``"%5000000d"`` would be long)."""
    text = text.decode("latin-1") if isinstance(text, bytes) else text
    at = text.find("%")
    while at >= 0:
        if text[at + 1 : at + 2] not in ("s", "r", "c", "d", "%"):
            return False
        at = text.find("%", at + 2)
    return True


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _terms(node: ast.BinOp, inner: list | None = None) -> list[ast.AST]:
    """The terms of ``a + b + c`` (however grouped), in order, without recursion; the
    sums inside it are added to ``inner``."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            stack += [n.right, n.left]
            if inner is not None and n is not node:
                inner.append(n)
        else:
            out.append(n)
    return out
